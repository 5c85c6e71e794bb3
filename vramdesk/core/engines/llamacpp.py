"""llama.cpp: layers offloaded to the GPU (n_gpu_layers), one cell pool for all sequences, ggml's compute buffer,
the --split-mode layer / row splits over GPUs, and llama.cpp's KV rule."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from .. import constants as K
from ..architecture import Architecture, AttentionKind, LayerSpec, RecurrentState
from ..families import family_of
from ..gpu import GIB, MIB
from ..kv import KvPlan, plan_kv
from ..kv_layers import KvOptions, pad
from ..llamacpp_fit import Layout, fitted_run
from ..memo import derived
from ..messages import Explanation, Message, Text, join, later
from ..parallel import split_layers
from ..result import Component, EngineInfo, Phase
from ..scenario import InferenceWorkload
from .base import Context, Engine, EngineRun

WEIGHTS = Message(
    "llamacpp.weights",
    "{label}: {layers} of {total} layers on the GPU; token embeddings in host memory ({embeddings:.2f} GiB)",
)
WEIGHTS_OUTPUT = Message(
    "llamacpp.weights.output",
    "{label}: {layers} of {total} layers on the GPU + output layer; token embeddings in host memory "
    "({embeddings:.2f} GiB)",
)
COMPUTE_FLASH = Message(
    "llamacpp.compute.flash",
    "ggml graph for n_ubatch {ubatch}: the larger of the F32 output logits (ubatch x vocab {vocab}) and flash "
    "attention: F32 FFN intermediates of one ubatch; buffers are reused across the graph, so the larger term "
    "dominates",
)
COMPUTE_NO_FLASH = Message(
    "llamacpp.compute.no_flash",
    "ggml graph for n_ubatch {ubatch}: the larger of the F32 output logits (ubatch x vocab {vocab}) and no flash "
    "attention: F32 KQ scores of one ubatch over the whole context; buffers are reused across the graph, so the "
    "larger term dominates",
)
COMPUTE_STAGED_OUTPUT = Message(
    "llamacpp.compute.staged.output",
    "ggml graph for n_ubatch {ubatch}: the output layer stays in host memory, and ggml's CUDA backend runs its "
    "matrix product on the GPU (batches of 32 tokens or more) with a copy of the weight in the compute buffer: "
    "{weight_mib:,.2f} MiB, plus the F32 logits (ubatch x vocab {vocab}) and the layer's input",
)
COMPUTE_STAGED_LAYER = Message(
    "llamacpp.compute.staged.layer",
    "ggml graph for n_ubatch {ubatch}: layers in host memory have their matrix products run on the GPU (batches "
    "of 32 tokens or more) by ggml's CUDA backend, one weight at a time copied into the compute buffer: the "
    "largest, {weight_mib:,.2f} MiB, plus one layer's F32 activations",
)
COMPUTE_STAGED_EXPERTS = Message(
    "llamacpp.compute.staged.experts",
    "ggml graph for n_ubatch {ubatch}: the MoE experts kept in host memory have their products run on the GPU "
    "(batches of 32 tokens or more) by ggml's CUDA backend, one layer's expert tensor at a time copied into the "
    "compute buffer (only the experts the batch routes to cross PCIe, but the whole tensor is reserved): the "
    "largest, {weight_mib:,.2f} MiB, plus one layer's F32 activations",
)
CPU_MOE = Message(
    "llamacpp.weights.cpu_moe",
    "the MoE experts of the first {layers} layers in host memory (--n-cpu-moe {layers}): {gib:.2f} GiB",
)
CPU_MOE_ALL = Message(
    "llamacpp.weights.cpu_moe.all", "the MoE experts of all {layers} layers in host memory (--cpu-moe): {gib:.2f} GiB"
)
CPU_MOE_FIT = Message(
    "llamacpp.weights.cpu_moe.fit", "the MoE experts of {layers} layers in host memory (--fit): {gib:.2f} GiB"
)
CPU_MOE_HERE = Message(
    "llamacpp.weights.cpu_moe.here", "the MoE experts of {layers} of these layers in host memory: {gib:.2f} GiB"
)
NO_EXPERTS = Message(
    "llamacpp.cpu_moe.no_experts",
    "--n-cpu-moe {value}: {model_type} is a dense model, it has no MoE expert tensors to keep in host memory",
)
ROW_SPLIT = Message(
    "llamacpp.split.row",
    "{label}: split by rows over {gpus} GPUs (--split-mode row), 1/{gpus} of every offloaded matrix on GPU {index}",
)
ROW_SCRATCH = Message(
    "llamacpp.split.row_scratch",
    "a copy of the F32 ubatch input and this GPU's slice of the matmul output (n_ubatch {ubatch} x (hidden {hidden} "
    "+ {intermediate}) x 4 B)",
)
GPU_LAYERS = Message("llamacpp.split.layers", "GPU {index}: layers {first}-{last}")
GPU_EMPTY = Message("llamacpp.split.empty", "GPU {index}: no layers")
GPU_OUTPUT_ONLY = Message("llamacpp.split.output_only", "GPU {index}: the output layer")
GPU_LAYERS_OUTPUT = Message("llamacpp.split.layers.output", "GPU {index}: layers {first}-{last} + output layer")
KV_CELLS = Message("llamacpp.kv", "n_ctx {cells} cells: {plan}")
RECURRENT_STATE = Message("llamacpp.recurrent_state", "F32 conv + delta-rule state: {bytes:,} B per sequence")
CONTEXT = Message("llamacpp.cuda_context", "CUDA context and cuBLAS handle of a ggml-cuda process")
NOT_GGUF = Message("llamacpp.not_gguf", "llama.cpp runs GGUF files; {label} was priced as stored")
NO_SWA = Message(
    "llamacpp.no_swa",
    "llama.cpp keeps the KV of {model_type}'s sliding-window layers whole (its sliding window is disabled in "
    "llama.cpp): the cache grows with the whole context",
)
RESERVED = Message("llamacpp.reserved", "ggml allocates fixed buffers: reserved = allocated")


def cpu_moe_layers(experts_per_layer: dict[int, int], n_cpu_moe: int, on_gpu: set[int]) -> set[int]:
    """The offloaded layers whose routed experts --n-cpu-moe keeps in host memory: the MoE layers among the first
    ``n_cpu_moe`` (common/arg.cpp pushes one buffer override per layer i < N, pattern
    ``blk\\.i\\.ffn_(up|down|gate|gate_up)_(ch|)exps``, to the CPU buffer type; a layer left on the CPU by -ngl
    keeps its experts there anyway)."""
    return {i for i in on_gpu if i < n_cpu_moe and experts_per_layer.get(i)}


def _host_experts_explain(ctx: Context, host_experts: set[int]) -> Text:
    n = ctx.work.llamacpp.n_cpu_moe
    gib = sum(ctx.weights.experts_per_layer[i] for i in host_experts) / GIB
    if not n:  # (the layers --fit chose)
        return CPU_MOE_FIT(layers=len(host_experts), gib=gib)
    if n >= ctx.arch.n_layers:
        return CPU_MOE_ALL(layers=ctx.arch.n_layers, gib=gib)
    return CPU_MOE(layers=n, gib=gib)


def _gpu_weights(
    ctx: Context, on_gpu: set[int], gpu_layers: int, output_on_gpu: bool, host_experts: set[int]
) -> tuple[Component, int, int]:
    """The weights of the offloaded layers (and of the output layer) less the experts kept in host memory: the
    component, its bytes and the bytes left in host memory."""
    arch = ctx.arch
    n_layers = arch.n_layers
    w = ctx.weights
    if len(on_gpu) == n_layers:
        gpu_w = derived(w, "all layers' bytes", lambda: sum(w.per_layer.values()))
    else:
        gpu_w = sum(b_ for i, b_ in w.per_layer.items() if i in on_gpu)
    gpu_w -= sum(w.experts_per_layer[i] for i in host_experts)
    if output_on_gpu:
        gpu_w += w.head + w.other
    if arch.tie_embeddings and output_on_gpu:
        gpu_w += w.embedding  # tied output: the token embedding matrix doubles as the output layer
    host_w = w.total - gpu_w
    if arch.tie_embeddings and output_on_gpu:
        host_w += w.embedding
    explain: Explanation = (WEIGHTS_OUTPUT if output_on_gpu else WEIGHTS).later(
        label=ctx.weights_label, layers=gpu_layers, total=n_layers, embeddings=w.embedding / GIB
    )
    if host_experts:
        explain = later(join, "; ", explain, _host_experts_explain(ctx, host_experts))
    weights = Component(name="weights", bytes=gpu_w, category="weights", explain=explain)
    return weights, gpu_w, host_w


def kv_for(ctx: Context, layers: tuple[LayerSpec, ...] | None) -> KvPlan:
    """The KV plan of ``layers`` (None = every layer) for the llama.cpp run ``ctx`` describes."""
    work = ctx.work
    opts = work.llamacpp
    return plan_kv(
        ctx.arch,
        ENGINE,
        tokens=ctx.input_len + work.output_len,
        seqs=work.batch,
        kv_bits=ctx.kv_bits,
        compute_bytes=4,
        n_ubatch=opts.n_ubatch,
        # (llama.cpp keeps Phi-3 / Phi-4's sliding-window layers whole: the family's quirk)
        swa_full=opts.swa_full or not family_of(ctx.arch).gguf_sliding_window,
        layers=layers,
    )


@dataclass(frozen=True, slots=True)
class _ComputeBuffer:
    component: Component
    #: the ubatch, the widest FFN intermediate, the output logits' and one layer's buffer bytes
    ub: int
    inter: int
    logits: int
    layer_buf: int
    #: the compute buffer of the first GPU while it runs a product whose weight is in host memory (0: none)
    staged: int
    #: the explanation of a compute buffer that stages nothing (the other GPUs of a layer split)
    unstaged_explain: Explanation


def _staged(
    ctx: Context,
    ub: int,
    host_layers: set[int],
    output_on_gpu: bool,
    layer_buf: int,
    host_experts: set[int],
    ffn_buf: int,
) -> tuple[int, Text]:
    """What the first GPU's compute buffer holds while ggml's CUDA backend runs a matrix product whose weight
    stays in host memory (a ubatch of at least 32 tokens): the output layer's weight copy, its logits and input;
    or the largest weight of a layer left in host memory (or of the experts --n-cpu-moe keeps there) and one
    layer's activations. (0, "") when no weight is staged. Measured against public logs: Pythia-2.8B -ngl 10 logs
    203.99 MiB = 100.74 (output weight) + 98.25 (logits) + 5.00 (input); a 0-layer Qwen3-235B logs 742 MiB for a
    630 MiB expert tensor.

    Host experts: ggml-backend.cpp, ggml_backend_sched_backend_id_from_cur, gives an op whose weight is in a host
    buffer to the first backend whose offload_op accepts it (CUDA: batch >= 32), and ggml_backend_sched_split_graph
    starts a new split at each such weight, so that one weight copy at a time lives in the compute buffer. The copy
    is a tensor of the weight's full shape (tensor_copy); ggml_backend_sched_compute_splits fills only the rows of
    the experts the batch routes to when the op is MUL_MAT_ID, which saves PCIe time, not memory: the whole expert
    tensor is reserved. Its split holds the FFN's F32 tensors of the ubatch (``ffn_buf``), not attention's: without
    flash attention the KQ scores are freed by then (a 2-GPU Qwen3-30B-A3B run with every expert in host memory
    logs the same 1080 MiB on both GPUs, the KQ term)."""
    if ub < K.GGML_OFFLOAD_MIN_BATCH:
        return 0, Text("")
    arch, w = ctx.arch, ctx.weights
    inputs = ub * arch.hidden * 4
    output = 0
    if not output_on_gpu:
        head = w.head or (w.embedding if arch.tie_embeddings else 0)
        output = head + ub * arch.vocab * 4 + inputs if head else 0
    largest = max((w.largest_in_layer.get(i, 0) for i in host_layers), default=0)
    layer = largest + layer_buf + inputs if largest else 0
    expert = max((w.largest_expert_in_layer.get(i, 0) for i in host_experts), default=0)
    staged_layer = COMPUTE_STAGED_LAYER
    if expert and expert + ffn_buf + inputs > layer:
        layer, largest, staged_layer = expert + ffn_buf + inputs, expert, COMPUTE_STAGED_EXPERTS
    if output >= layer and output:
        return output, COMPUTE_STAGED_OUTPUT(
            ubatch=ub, weight_mib=(output - ub * arch.vocab * 4 - inputs) / MIB, vocab=arch.vocab
        )
    if layer:
        return layer, staged_layer(ubatch=ub, weight_mib=largest / MIB)
    return 0, Text("")


def _widest(arch: Architecture) -> tuple[int, int]:
    """The widest FFN a token goes through (an expert's width x top-k for MoE layers) and the most heads."""
    inter = max(
        (layer.intermediate or (layer.moe.expert_intermediate * layer.moe.top_k if layer.moe else 0))
        for layer in arch.layers
    )
    return inter, max(layer.n_heads for layer in arch.layers)


def _compute_buffer(
    ctx: Context, n_ctx: int, output_on_gpu: bool, host_layers: set[int], host_experts: set[int]
) -> _ComputeBuffer:
    arch, work = ctx.arch, ctx.work
    opts = work.llamacpp
    b, s_in = work.batch, ctx.input_len
    ub = min(opts.n_ubatch, max(1, s_in * b))
    inter, heads = derived(arch, "llama.cpp widest FFN and heads", lambda: _widest(arch))
    logits = ub * arch.vocab * 4 if output_on_gpu else 0
    ffn_buf = ub * (3 * inter + 6 * arch.hidden) * 4
    # flash attention: the FFN's F32 intermediates; without: the KQ scores of one ubatch over the whole context
    layer_buf = ffn_buf if opts.flash_attn else ub * heads * n_ctx * 4 + ub * 6 * arch.hidden * 4
    compute = max(logits, layer_buf) + ub * arch.hidden * 4
    explain: Explanation = (COMPUTE_FLASH if opts.flash_attn else COMPUTE_NO_FLASH).later(ubatch=ub, vocab=arch.vocab)
    unstaged = explain
    staged, staged_explain = _staged(ctx, ub, host_layers, output_on_gpu, layer_buf, host_experts, ffn_buf)
    if staged > compute:
        compute, explain = staged, staged_explain
    component = Component(name="compute buffer", bytes=compute, category="activations", explain=explain)
    return _ComputeBuffer(component, ub, inter, logits, layer_buf, staged, unstaged)


def _row_split(
    ctx: Context, weights: Component, comps: list[Component], gpu_w: int, n_split: int, buf: _ComputeBuffer
) -> list[list[Phase]]:
    """--split-mode row: every matrix of the offloaded layers (and the output layer) is split by rows over
    the GPUs; the KV cache, the recurrent state and the compute buffer stay on the main GPU; each other
    GPU keeps a scratch copy of the ubatch input and its slice of the matmul output"""
    arch = ctx.arch
    ub, inter = buf.ub, buf.inter
    per_gpu_phases: list[list[Phase]] = []
    share = gpu_w / n_split
    scratch = ub * (arch.hidden + inter) * 4
    for g in range(n_split):
        main = g == 0
        w_comp = weights.model_copy(
            update={
                "bytes": round(share),
                "explain": ROW_SPLIT(label=ctx.weights_label, gpus=n_split, index=g),
            }
        )
        if main:
            g_comps = [w_comp, *comps[1:]]
        else:
            g_comps = [
                w_comp,
                Component(
                    name="row-split scratch",
                    bytes=scratch,
                    category="activations",
                    explain=ROW_SCRATCH(ubatch=ub, hidden=arch.hidden, intermediate=inter),
                ),
            ]
        per_gpu_phases.append(
            [Phase(name="load", components=(w_comp,)), Phase(name="generate", components=tuple(g_comps))]
        )
    return per_gpu_phases


def _layer_split(
    ctx: Context,
    comps: list[Component],
    on_gpu: set[int],
    output_on_gpu: bool,
    n_split: int,
    buf: _ComputeBuffer,
    host_experts: set[int],
    counts: tuple[int, ...] | None = None,
) -> list[list[Phase]]:
    """--split-mode layer (the default): the offloaded layers are divided between the GPUs in order (each less
    the experts kept in host memory), the output layer and the logits buffer go with the last one; every GPU has
    its own compute buffer. ``counts``: each GPU's layers (--fit's tensor split; the output layer is the last of
    the last GPU's); None = as even as can be"""
    arch, w = ctx.arch, ctx.weights
    weights, kv = comps[0], comps[1]
    ub, logits, layer_buf = buf.ub, buf.logits, buf.layer_buf
    per_gpu_phases: list[list[Phase]] = []
    offloaded = sorted(on_gpu)
    parts = split_layers(len(offloaded), n_split) if counts is None else _shares(counts, len(offloaded))
    last_g = n_split - 1 if counts is None else max(g for g, c in enumerate(counts) if c)
    for g, part in enumerate(parts):
        idx = {offloaded[i] for i in part}
        last = g == last_g
        if not idx and not (last and output_on_gpu):
            per_gpu_phases.append(_empty_gpu(g, comps, buf))
            continue
        w_g = sum(b_ for i, b_ in w.per_layer.items() if i in idx)
        w_g -= sum(w.experts_per_layer[i] for i in host_experts & idx)  # (kept in host memory)
        if last and output_on_gpu:
            w_g += w.head + w.other + (w.embedding if arch.tie_embeddings else 0)
        p_g = kv_for(ctx, tuple(layer for layer in arch.layers if layer.index in idx))
        c_g = max(logits if last else 0, layer_buf) + ub * arch.hidden * 4
        if g == 0:  # the scheduler runs products whose weights are in host memory on the first GPU
            c_g = max(c_g, buf.staged)
        here = host_experts & idx
        moe_gib = sum(w.experts_per_layer[i] for i in here) / GIB
        moe_here = [CPU_MOE_HERE(layers=len(here), gib=moe_gib)] if here else []
        if idx:
            top = GPU_LAYERS_OUTPUT if last and output_on_gpu else GPU_LAYERS
            where = top(index=g, first=min(idx), last=max(idx))
        else:  # (--fit's last GPU may hold the output layer alone)
            where = GPU_OUTPUT_ONLY(index=g)
        g_comps = [
            weights.model_copy(update={"bytes": w_g, "explain": join("; ", ctx.weights_label, where, *moe_here)}),
            kv.model_copy(update={"bytes": p_g.kv_bytes, "explain": join("; ", p_g.explain, where)}),
        ]
        if p_g.state_bytes:
            g_comps.append(comps[2].model_copy(update={"bytes": p_g.state_bytes}))
        staging = g == 0 and buf.staged >= c_g
        g_comps.append(
            comps[-1].model_copy(
                update={"bytes": c_g, "explain": comps[-1].explain if staging else buf.unstaged_explain}
            )
        )
        per_gpu_phases.append(
            [Phase(name="load", components=(g_comps[0],)), Phase(name="generate", components=tuple(g_comps))]
        )
    return per_gpu_phases


def _shares(counts: tuple[int, ...], n_offloaded: int) -> list[range]:
    """Each GPU's range of the offloaded repeating layers from its layer count (the output layer, counted last,
    has no range)."""
    out, start = [], 0
    for c in counts:
        out.append(range(min(start, n_offloaded), min(start + c, n_offloaded)))
        start += c
    return out


def _empty_gpu(g: int, comps: list[Component], buf: _ComputeBuffer) -> list[Phase]:
    """A GPU --fit gives no layers: nothing but, on the first GPU, the products whose weights are in host memory."""
    where = GPU_EMPTY(index=g)
    compute = buf.staged if g == 0 else 0
    g_comps = [
        comps[0].model_copy(update={"bytes": 0, "explain": where}),
        comps[1].model_copy(update={"bytes": 0, "explain": where}),
        comps[-1].model_copy(update={"bytes": compute, "explain": comps[-1].explain if compute else where}),
    ]
    return [Phase(name="load", components=(g_comps[0],)), Phase(name="generate", components=tuple(g_comps))]


#: the CUDA context and cuBLAS handle of a ggml-cuda process (the same component for every plan)
_CONTEXT = Component(name="CUDA context", bytes=K.LLAMACPP_CONTEXT, category="overhead", explain=CONTEXT())


def llamacpp_run(ctx: Context, layout: Layout | None = None) -> EngineRun:
    """The llama.cpp run of ``ctx``; ``layout``: where --fit puts the layers and the experts (None: the plan's own
    -ngl, --n-cpu-moe and even split)."""
    arch, work = ctx.arch, ctx.work
    opts = work.llamacpp
    b, s_in, s_out = work.batch, ctx.input_len, work.output_len
    seq_len = s_in + s_out
    n_layers = arch.n_layers
    counts = None if layout is None else layout.counts
    ngl = n_layers + 1 if opts.n_gpu_layers is None else min(opts.n_gpu_layers, n_layers + 1)
    gpu_layers = min(ngl, n_layers)
    # llama.cpp offloads the last n_gpu_layers repeating layers; the output layer goes to the GPU only when
    # n_gpu_layers exceeds the layer count; token embeddings stay in host memory
    output_on_gpu = ngl > n_layers
    if counts is not None:
        # (the llama.cpp of --fit offloads the last ngl of the n_layer + 1 layers: the output layer first)
        ngl = min(sum(counts), n_layers + 1)
        gpu_layers, output_on_gpu = max(0, ngl - 1), ngl > 0
    on_gpu = set(range(n_layers - gpu_layers, n_layers))
    host_experts = cpu_moe_layers(ctx.weights.experts_per_layer, opts.n_cpu_moe, on_gpu)
    if layout is not None and layout.host_experts is not None:
        host_experts = {i for i in layout.host_experts & on_gpu if ctx.weights.experts_per_layer.get(i)}
    weights, gpu_w, host_w = _gpu_weights(ctx, on_gpu, gpu_layers, output_on_gpu, host_experts)
    plan_all = kv_for(ctx, None)
    # (every layer offloaded: the model's plan, whose layout is kept per model)
    plan = plan_all if gpu_layers == n_layers else kv_for(ctx, tuple(x for x in arch.layers if x.index in on_gpu))
    kv = Component(
        name="KV cache",
        bytes=plan.kv_bytes,
        category="kv_cache",
        explain=later(join, "; ", KV_CELLS.later(cells=seq_len * b, plan=plan.explain), ctx.kv_label),
    )
    comps = [weights, kv]
    if plan.state_bytes:
        comps.append(
            Component(
                name="recurrent state",
                bytes=plan.state_bytes,
                category="state",
                explain=RECURRENT_STATE(bytes=plan.state_bytes_per_sequence),
            )
        )
    n_ctx = plan_all.kv_bytes and seq_len * b
    buf = _compute_buffer(ctx, n_ctx, output_on_gpu, set(range(n_layers)) - on_gpu, host_experts)
    ub = buf.ub
    comps.append(buf.component)
    host_kv = plan_all.kv_bytes - plan.kv_bytes + plan_all.state_bytes - plan.state_bytes
    host = host_w + host_kv + (0 if output_on_gpu else ub * arch.vocab * 4)
    context = _CONTEXT
    phases = [Phase(name="load", components=(weights,)), Phase(name="generate", components=tuple(comps))]
    per_gpu_phases: list[list[Phase]] = []
    n_split = min(max(1, ctx.gpu_count), max(1, gpu_layers))
    if counts is not None and ngl:
        n_split = len(counts)
    if n_split > 1 and opts.split_mode == "row":
        # --split-mode row spreads the matrices over every GPU (see _row_split)
        n_split = max(1, ctx.gpu_count)
        per_gpu_phases = _row_split(ctx, weights, comps, gpu_w, n_split, buf)
        phases = per_gpu_phases[0]
    elif n_split > 1:
        per_gpu_phases = _layer_split(ctx, comps, on_gpu, output_on_gpu, n_split, buf, host_experts, counts)
        phases = per_gpu_phases[0]
    info = EngineInfo(
        engine="llamacpp",
        kv_bytes_per_token=plan_all.bytes_per_token_growing,
        state_bytes_per_sequence=plan_all.state_bytes_per_sequence,
        gpu_layers=gpu_layers,
        total_layers=n_layers,
    )
    warnings: list[Text] = []
    if ctx.weight_kind != "gguf":
        warnings.append(NOT_GGUF(label=ctx.weights_label))
    sliding = derived(arch, "sliding layers", lambda: any(x.attention == AttentionKind.SLIDING for x in arch.layers))
    if sliding and not opts.swa_full and not family_of(arch).gguf_sliding_window:
        warnings.append(NO_SWA(model_type=arch.model_type))
    return EngineRun(
        phases=phases,
        device_extra=[context],
        reserved_slack=0,
        reserved_explain=RESERVED(),
        host_bytes=host,
        info=info,
        gpu_count=max(1, n_split),
        per_gpu_phases=per_gpu_phases,
        per_gpu_slack=[0] * len(per_gpu_phases),
        warnings=warnings,
    )


class LlamacppEngine(Engine):
    """llama.cpp: GGUF files, n_gpu_layers offloaded to the GPU, one KV cell pool for all sequences."""

    name = "llamacpp"
    display_name = "llama.cpp"
    # llama.cpp keeps the vision tower of a multimodal checkpoint in mmproj
    loads_vision = False
    runs_gguf = True
    # ggml's default cache type: F16 K and V (--cache-type-k / -v f16)
    auto_kv_dtype = "fp16"
    serves_across_machines = False
    grows_by_tensor_parallel = False
    reads_tp = False
    may_leave_gpus_empty = False
    streams_offloaded_weights = False
    offloads_gpu_layers = True
    has_pool_budget = False
    step_overhead_per_layer_s = 0.0
    form_group = "llamacpp"
    options_section = "llamacpp"
    level_labels = ("ggml's buffers", "ggml's buffers: nothing is cached")
    lighter_weights = (("q8_0", 1.0, 0.0), ("q6_k", 2.0, 0.0), ("q5_k_m", 2.0, 0.0), ("q4_k_m", 3.0, 0.0))
    lighter_kv: tuple[tuple[str, float], ...] = (("q8_0", 1.0), ("q4_0", 3.0))
    # one latent per token (V is a view of K)
    expands_mla = False

    def full_tokens(self, tokens: int, seqs: int, opts: KvOptions) -> int:
        # llama.cpp: one cell pool for all sequences
        total = pad(tokens * seqs, 256)
        return ceil(total / seqs)

    def sliding_tokens(self, window: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        # llama.cpp: one cell pool for all sequences
        total = pad(tokens * seqs, 256)
        if not opts.swa_full:
            total = min(total, pad(window * seqs + opts.n_ubatch, 256))
        return ceil(total / seqs)

    def chunked_tokens(self, chunk: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        # the chunked SWA type: kept as a sliding window of the chunk size
        return self.sliding_tokens(chunk, tokens, seqs, opts)

    def linear_state_bytes(self, linear: RecurrentState, compute_bytes: int) -> int:
        # llama-memory-recurrent.cpp: r (n_embd_r = (d_conv - 1) x conv_dim) and s (n_embd_s) rows, both F32
        lin = linear
        return 4 * ((lin.conv_kernel - 1) * lin.conv_dim + lin.recurrent_elements)

    def run(self, ctx: Context) -> EngineRun:
        # (--fit: the layers llama.cpp places itself for the GPUs' free memory)
        return fitted_run(ctx, llamacpp_run)

    def tp_problem(self, arch: Architecture, tp: int) -> Text | None:
        # llama.cpp has no tensor parallel: parallelism.tp is not read (its multi-GPU split is --split-mode)
        return None

    def options_problem(self, arch: Architecture, work: InferenceWorkload) -> Text | None:
        n = work.llamacpp.n_cpu_moe
        if n and not arch.is_moe:
            return NO_EXPERTS(value=n, model_type=arch.model_type)
        return None

    def prefill_chunk(self, work: InferenceWorkload, input_len: int) -> int:
        # the prompt is processed n_ubatch tokens at a time
        return work.llamacpp.n_ubatch


ENGINE = LlamacppEngine()
