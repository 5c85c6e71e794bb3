"""Inference as phases, per engine: load -> prefill -> decode. The peak is the maximum over phases.

Each engine function returns an :class:`EngineRun` for GPU 0 (the busiest one): the phases with their
components (what ``torch.cuda.max_memory_allocated`` would see), the device-level extras (CUDA context,
non-torch memory), reserved-pool slack, host memory and engine-specific answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil
from typing import TYPE_CHECKING

from . import constants as K
from .architecture import Architecture, AttentionKind, LayerSpec
from .gpu import GIB, MIB, GpuSpec
from .kv import KvPlan, plan_kv
from .parallel import place_weights, split_layers
from .result import Component, EngineInfo, Phase
from .scenario import InferenceWorkload
from .weights import WeightBytes

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass
class Context:
    arch: Architecture
    weights: WeightBytes
    weights_label: str
    on_the_fly: bool
    compute_bytes: int
    kv_bits: float
    kv_label: str
    work: InferenceWorkload
    input_len: int
    gpu: GpuSpec | None
    gpu_count: int
    tp: int
    weight_kind: str
    pp: int = 1
    weight_bits: int | None = None


@dataclass
class EngineRun:
    phases: list[Phase]
    #: beyond the allocator: CUDA context, non-torch memory (GPU 0)
    device_extra: list[Component]
    #: reserved-minus-allocated slack at the peak (allocator rounding, fragmentation)
    reserved_slack: int
    reserved_explain: str
    host_bytes: int
    info: EngineInfo
    warnings: list[str] = field(default_factory=list)
    #: fraction of the model GPU 0 holds when it is split over several GPUs (for per-GPU figures)
    gpu_count: int = 1
    #: phases of every GPU when the model is split (GPU 0 first); empty = all GPUs alike
    per_gpu_phases: list[list[Phase]] = field(default_factory=list)
    per_gpu_slack: list[int] = field(default_factory=list)
    #: engines with a fixed budget (vLLM): the least memory the requests need, and the budget it must fit
    fit_required: int | None = None
    fit_budget: int | None = None
    fit_budget_label: str = ""


def torch_context(gpu: GpuSpec | None) -> Component:
    """The CUDA context of a PyTorch process: outside the caching allocator, inside nvidia-smi's figure."""
    if gpu is not None and gpu.sm_major >= 9:
        return Component(
            name="CUDA context",
            bytes=K.CUDA_CONTEXT_TORCH_HOPPER,
            category="overhead",
            explain="CUDA driver context and lazily loaded kernels of torch/cuBLAS: outside torch's allocator, "
            "visible in nvidia-smi (760 MiB measured on an H200 with torch 2.11 / CUDA 13)",
        )
    return Component(
        name="CUDA context",
        bytes=K.CUDA_CONTEXT_TORCH,
        category="overhead",
        explain="CUDA driver context and lazily loaded kernels of torch/cuBLAS: outside torch's "
        "allocator, visible in nvidia-smi (0.3-0.8 GiB reported; 500 MiB used)",
    )


def _fmt_gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


def _workspace(gpu: GpuSpec | None) -> Component:
    hopper = gpu is not None and gpu.sm_major >= 9
    size = K.CUBLAS_WORKSPACE_HOPPER if hopper else K.CUBLAS_WORKSPACE_PRE_HOPPER
    return Component(
        name="cuBLAS workspace",
        bytes=size,
        category="overhead",
        explain=(
            f"PyTorch's cuBLAS workspace for one stream, {size / MIB:.3f} MiB "
            f"({'sm90+: :4096:8:16:8' if hopper else 'default :4096:2:16:8'}); allocated through the caching "
            "allocator, so inside max_memory_allocated"
        ),
    )


def _weights_component(ctx: Context, share: float = 1.0, note: str = "") -> Component:
    w = ctx.weights
    return Component(
        name="weights",
        bytes=round(w.total * share),
        category="weights",
        explain=(
            f"{w.params:,} parameters in {ctx.weights_label}: {w.bits_per_param:.3f} bits per parameter on "
            f"average, summed tensor by tensor over the inventory ({w.quantized_params:,} quantised)"
            + (f"; {note}" if note else "")
        ),
    )


def _dense_layer_transient(arch: Architecture, layer: LayerSpec, n: int, c: int, *, moe_loop: bool) -> tuple[int, str]:
    """Bytes alive inside one decoder layer's MLP during a forward of ``n`` tokens (beyond weights and cache)."""
    h = arch.hidden
    if layer.moe is None:
        width = layer.intermediate
        if arch.mlp_gated:
            b = n * (3 * width + 3 * h) * c
            return b, f"gated MLP: n x (3 x intermediate {width} + 3 x hidden {h}) x {c} B"
        b = n * (2 * width + 3 * h) * c
        return b, f"MLP: n x (2 x intermediate {width} + 3 x hidden {h}) x {c} B"
    moe = layer.moe
    routed = ceil(n * moe.top_k / moe.num_experts)
    expert = routed * (3 * moe.expert_intermediate + 2 * h) * c
    shared = n * (3 * moe.shared_intermediate + 2 * h) * c if moe.shared_intermediate else 0
    b = n * h * c * 2 + n * moe.num_experts * 4 + max(expert, shared)
    return b, (
        f"MoE (expert loop, balanced routing): router logits n x {moe.num_experts} x 4 B + accumulator "
        f"n x hidden + the larger of one expert's {routed} tokens x (3 x {moe.expert_intermediate} + 2 x {h}) "
        f"and the shared expert"
    )


def _attention_transient(
    arch: Architecture, layer: LayerSpec, n: int, seqs: int, s: int, c: int, attention: str
) -> tuple[int, str]:
    h = arch.hidden
    if layer.attention == AttentionKind.LINEAR and layer.linear is not None:
        lin = layer.linear
        proj = 2 * lin.key_dim + 2 * lin.value_dim + 2 * lin.num_v_heads
        b = n * (proj * c + (2 * lin.key_dim + 2 * lin.value_dim) * 4 + 2 * h * c)
        return b, "Gated DeltaNet: projections + fp32 q/k/v/output of the chunked delta rule"
    q_w = layer.n_heads * layer.head_dim
    if layer.attention == AttentionKind.MLA:
        kv_w = layer.n_heads * (layer.head_dim + layer.v_head_dim)
    else:
        kv_w = layer.n_kv_heads * (layer.head_dim + layer.v_head_dim)
    b = n * (3 * q_w + 2 * kv_w + 2 * h) * c
    text = "attention: q, k, v before and after RoPE and the output, n x (3 q + 2 kv + 2 hidden) widths"
    if attention == "eager":
        kept = min(s, layer.window or s)
        scores = round(K.EAGER_SCORES_BYTES * seqs * layer.n_heads * s * kept)
        b += scores
        text += f"; eager scores {K.EAGER_SCORES_BYTES} B x heads {layer.n_heads} x s x kept keys"
    return b, text


def _max_layer_transient(arch: Architecture, n: int, seqs: int, s: int, c: int, attention: str) -> tuple[int, str]:
    best, text = 0, ""
    seen: set[tuple[object, ...]] = set()
    for layer in arch.layers:
        key = (layer.attention, layer.mlp, layer.intermediate, layer.window, layer.moe)
        if key in seen:
            continue
        seen.add(key)
        m, mt = _dense_layer_transient(arch, layer, n, c, moe_loop=True)
        a, at = _attention_transient(arch, layer, n, seqs, s, c, attention)
        if m > best:
            best, text = m, mt
        if a > best:
            best, text = a, at
    return best, text


#: exllama v2 kernels (the default for 4-bit GPTQ in transformers through AutoGPTQ / optimum) size their
#: scratch for this many input tokens per matmul
EXLLAMA_MAX_INPUT_LEN = 2048


def _gptq_scratch(ctx: Context) -> list[Component]:
    """Persistent scratch of the exllama v2 4-bit GPTQ kernels: one dequantised fp16 matrix (the largest layer)
    plus a ``max_input_len x max(in, out)`` fp16 state buffer, allocated once after loading."""
    if ctx.weight_kind != "gptq" or ctx.weight_bits != 4:
        return []
    arch = ctx.arch
    widest = max(
        [arch.hidden]
        + [layer.intermediate for layer in ctx.arch.layers]
        + [layer.n_heads * layer.head_dim for layer in arch.layers]
    )
    state = EXLLAMA_MAX_INPUT_LEN * widest * 2
    size = ctx.weights.largest_dequant + state
    return [
        Component(
            name="GPTQ kernel scratch",
            bytes=size,
            category="overhead",
            explain=(
                f"exllama v2 kernels allocate a dequantisation buffer for the largest matrix "
                f"({ctx.weights.largest_dequant:,} B fp16) and a {EXLLAMA_MAX_INPUT_LEN} x {widest} fp16 state "
                "buffer when the model is loaded"
            ),
        )
    ]


def _transformers_gpu(
    ctx: Context,
    layers: Sequence[int],
    first: bool,
    last: bool,
    n_gpus: int,
    *,
    head_weights: bool | None = None,
    offloaded: Sequence[int] = (),
    transit: int = 0,
) -> tuple[list[Phase], int]:
    """Phases of one GPU holding ``layers`` (GPU 0 also the embedding, the last one the head and the logits).

    ``offloaded``: layers stored in CPU memory or on disk that run on this GPU (their KV cache lives here);
    ``transit``: the largest offloaded module, on this GPU while it runs; ``head_weights``: whether this GPU
    stores the lm_head (default: ``last``)."""
    arch, work = ctx.arch, ctx.work
    b, s_in, s_out = work.batch, ctx.input_len, work.output_len
    c = ctx.compute_bytes
    total_tokens = s_in + s_out
    w = ctx.weights
    head_here = last if head_weights is None else head_weights
    run_layers = sorted({*layers, *offloaded})
    specs = tuple(arch.layers[i] for i in run_layers)
    split = n_gpus > 1 or bool(offloaded) or not (first and head_here)
    span = f"layers {layers[0]}-{layers[-1]}" if layers else "no layers"
    where = "" if not split else f"device_map='auto' over {n_gpus} GPU(s): this GPU holds {span}"
    if not split:
        weights = _weights_component(ctx)
    else:
        part = sum(w.per_layer.get(i, 0) for i in layers)
        part += (w.embedding + w.other) if first else 0
        part += w.head if head_here else 0
        weights = _weights_component(
            ctx, 1.0, where + (" + embeddings" if first else "") + (" + lm_head" if head_here else "")
        )
        # (the text starts with the whole model's parameters: say first that this is one GPU's part of them)
        share = f"this GPU's share, {part / GIB:.2f} GiB of {w.total / GIB:.2f} GiB: "
        weights = weights.model_copy(update={"bytes": part, "explain": share + weights.explain})
    ws = _workspace(ctx.gpu)
    kernel = _gptq_scratch(ctx)
    load = [weights, ws, *kernel]
    if ctx.on_the_fly:
        load.append(
            Component(
                name="quantisation on load",
                bytes=w.largest_dequant,
                category="activations",
                explain="bitsandbytes quantises while loading: the largest 16-bit matrix sits on the GPU before it is "
                "converted",
            )
        )
    kv_pre = plan_kv(arch, "transformers", tokens=s_in, seqs=b, kv_bits=ctx.kv_bits, compute_bytes=c, layers=specs)
    kv_end = plan_kv(
        arch, "transformers", tokens=total_tokens, seqs=b, kv_bits=ctx.kv_bits, compute_bytes=c, layers=specs
    )

    def kv_component(plan_bytes: int, explain: str) -> Component:
        return Component(
            name="KV cache",
            bytes=plan_bytes,
            category="kv_cache",
            explain=f"{explain}; {ctx.kv_label} (DynamicCache grows with every token)"
            + (f"; {where}" if where else ""),
        )

    state = []
    if kv_end.state_bytes:
        state.append(
            Component(
                name="linear-attention state",
                bytes=kv_end.state_bytes,
                category="state",
                explain=f"constant per sequence: {kv_end.state_bytes_per_sequence:,} B x {b}",
            )
        )

    n = b * s_in
    sub = arch.model_copy(update={"layers": specs}) if split and specs else arch
    layer_b, layer_text = _max_layer_transient(sub, n, b, s_in, c, work.attention)
    transients = [(layer_b, f"one layer's intermediates at {n} prompt tokens: {layer_text}", "activations")]
    if last:
        if work.full_prompt_logits:
            logits_b = b * s_in * arch.vocab * (c + 4)
            logits_text = (
                f"logits for every prompt position (transformers < 4.45): batch {b} x {s_in} x vocab "
                f"{arch.vocab} x ({c} + 4 fp32) B"
            )
        else:
            logits_b = b * arch.vocab * (c + 4) + n * arch.hidden * c
            logits_text = (
                f"last-position logits only (generate() since transformers 4.45): batch {b} x vocab "
                f"{arch.vocab} x ({c} + 4 fp32) B, plus the final hidden states"
            )
        transients.append((logits_b, logits_text, "logits"))
    if ctx.weight_kind == "awq" and n >= 1024:
        transients.append(
            (
                layer_b + w.largest_dequant,
                "AWQ GEMM kernels dequantise a whole matrix to fp16 when batch x tokens >= 1024: "
                f"{w.largest_dequant:,} B on top of the layer's intermediates",
                "activations",
            )
        )
    if ctx.weight_kind == "bnb4" and n > 1:
        transients.append(
            (
                layer_b + w.largest_dequant,
                "bitsandbytes 4-bit dequantises each matrix to 16 bits for multi-token matmuls: the largest "
                f"({w.largest_dequant:,} B) on top of the layer's intermediates",
                "activations",
            )
        )
    best = max(transients, key=lambda t: t[0])
    prefill_transient = Component(
        name="prefill activations" if best[2] == "activations" else "logits",
        bytes=best[0],
        category="activations" if best[2] == "activations" else "logits",
        explain=f"{best[1]} (the larger of the layer transient and the logits; "
        "activations of earlier layers are freed in inference)",
    )
    moving: list[Component] = []
    if transit:
        moving.append(
            Component(
                name="offloaded layer",
                bytes=transit,
                category="weights",
                explain=f"accelerate moves each CPU- or disk-offloaded module to this GPU for its forward: the "
                f"largest is {transit:,} B",
            )
        )
    prefill = [
        weights,
        kv_component(kv_pre.kv_bytes, kv_pre.explain),
        *state,
        prefill_transient,
        ws,
        *kernel,
        *moving,
    ]

    logits_step = b * arch.vocab * (c + 4 + 4) if last else 0
    decode_tr = logits_step + kv_end.largest_layer_bytes // 2
    decode_transient = Component(
        name="decode step",
        bytes=decode_tr,
        category="activations",
        explain=(
            f"one decode step: logits batch {b} x vocab {arch.vocab} x ({c} + 4 + 4) B (16-bit, fp32 copy, "
            f"sampling scores) + torch.cat of the largest layer's K or V at {total_tokens} tokens "
            f"({kv_end.largest_layer_bytes // 2:,} B)"
        ),
    )
    decode = [weights, kv_component(kv_end.kv_bytes, kv_end.explain), *state, decode_transient, ws, *kernel, *moving]

    phases = [Phase(name="load", components=tuple(load)), Phase(name="prefill", components=tuple(prefill))]
    if s_out > 0:
        phases.append(Phase(name="decode", components=tuple(decode)))
    return phases, kv_end.largest_layer_bytes


def transformers_run(ctx: Context) -> EngineRun:
    arch, work = ctx.arch, ctx.work
    c = ctx.compute_bytes
    warnings: list[str] = []
    n_gpus = max(1, ctx.gpu_count)
    if ctx.tp > 1:
        warnings.append("transformers: tensor parallelism is estimated as a device_map split of the layers")
    cap = None if work.max_memory_gib is None else int(work.max_memory_gib * GIB)
    cpu_cap = None if work.cpu_memory_gib is None else int(work.cpu_memory_gib * GIB)
    place = place_weights(ctx.weights, arch.n_layers, n_gpus, cap, cpu_cap)
    off_layers = (*place.cpu.layers, *place.disk.layers)
    head_off = place.cpu.head or place.disk.head
    per_gpu: list[list[Phase]] = []
    slacks: list[int] = []
    slack_text = ""
    n_used = len(place.gpus)
    for g, slot in enumerate(place.gpus):
        # offloaded modules run on the first GPU (accelerate's execution device for them)
        main = g == 0
        phases, largest = _transformers_gpu(
            ctx,
            slot.layers,
            slot.embed,
            slot.head or (main and head_off),
            n_used,
            head_weights=slot.head,
            offloaded=off_layers if main else (),
            transit=place.largest_offloaded if main else 0,
        )
        peak = max(phases, key=lambda p: p.allocated_bytes)
        slack, text = _torch_reserved_slack(ctx, peak, largest, max(1, len(slot.layers)))
        per_gpu.append(phases)
        slacks.append(slack)
        slack_text = slack_text or text
    if place.spilled:
        warnings.append(
            f"device_map: {_fmt_gib(place.cpu_bytes)} of weights in CPU memory"
            + (f" and {_fmt_gib(place.disk_bytes)} on disk" if place.disk_bytes else "")
            + " (max_memory per GPU "
            + _fmt_gib(cap or 0)
            + "); they cross PCIe"
            + (" and are read from disk" if place.disk_bytes else "")
            + " for every forward, so generation is far slower"
        )
    context = torch_context(ctx.gpu)
    if work.attention == "flash" and arch.attention_sinks:
        warnings.append(
            "flash-attention 2 does not support attention sinks: transformers uses eager or kernels "
            "attention for gpt-oss"
        )
    kv_all = plan_kv(
        arch,
        "transformers",
        tokens=ctx.input_len + work.output_len,
        seqs=work.batch,
        kv_bits=ctx.kv_bits,
        compute_bytes=c,
    )
    info = EngineInfo(
        engine="transformers",
        kv_bytes_per_token=kv_all.bytes_per_token_growing,
        state_bytes_per_sequence=kv_all.state_bytes_per_sequence,
    )
    return EngineRun(
        phases=per_gpu[0],
        device_extra=[context],
        reserved_slack=slacks[0],
        reserved_explain=slack_text,
        host_bytes=place.cpu_bytes,
        info=info,
        warnings=warnings,
        gpu_count=len(per_gpu),
        per_gpu_phases=per_gpu,
        per_gpu_slack=slacks,
    )


def _torch_reserved_slack(ctx: Context, peak: Phase, largest_layer: int, n_layers: int) -> tuple[int, str]:
    """max_memory_reserved - max_memory_allocated for a transformers process (PyTorch caching allocator)."""
    # every large block is rounded to 2 MiB: on average 1 MiB per tensor >= 1 MiB; weights are ~7 tensors/layer
    n_big = 7 * n_layers + 2
    rounding = n_big * K.ALLOC_ROUND_LARGE // 2
    # DynamicCache grows by concatenation: freed smaller K/V blocks can rarely serve the next, larger request,
    # so about one layer's K+V stays cached but unused; transients get their own 20 MiB-granular segments
    frag = largest_layer
    transient = max((c.bytes for c in peak.components if c.category in ("activations", "logits")), default=0)
    seg = (ceil(transient / K.ALLOC_LARGE_SEGMENT) * K.ALLOC_LARGE_SEGMENT - transient) if transient else 0
    total = rounding + frag + seg
    return total, (
        f"caching allocator: 2 MiB rounding of ~{n_big} large blocks ({rounding / MIB:.0f} MiB), one layer's "
        f"K/V left cached by the growing cache ({frag / MIB:.0f} MiB), segment rounding of the transient "
        f"({seg / MIB:.0f} MiB)"
    )


# ---------------------------------------------------------------------------------------------- vLLM


def vllm_tp_problem(arch: Architecture, tp: int) -> str | None:
    """Why vLLM refuses tensor parallel ``tp`` for this model (its config checks), or None: the attention heads
    must split evenly, and the KV heads either split evenly or divide ``tp`` (each rank then keeps a copy)."""
    if tp <= 1 or not arch.layers:
        return None
    layer = arch.layers[0]
    if layer.n_heads % tp:
        return f"vLLM: tensor parallel {tp} does not divide the {layer.n_heads} attention heads"
    kv = layer.n_kv_heads
    if layer.attention != AttentionKind.MLA and kv and (kv % tp if kv >= tp else tp % kv):
        return f"vLLM: tensor parallel {tp} and the {kv} KV heads: one must divide the other"
    return None


def vllm_kv_share(arch: Architecture, tp: int) -> float:
    """The fraction of a layer's KV one tensor-parallel rank holds: 1/tp while the KV heads split, else one head
    (vLLM replicates KV heads when there are fewer than ranks); MLA's latent is whole on every rank."""
    shares = [
        max(1, layer.n_kv_heads // tp) / layer.n_kv_heads
        for layer in arch.layers
        if layer.attention != AttentionKind.MLA and layer.n_kv_heads
    ]
    return max(shares, default=1.0)


def vllm_run(ctx: Context) -> EngineRun:
    arch, work = ctx.arch, ctx.work
    opts = work.vllm
    c = ctx.compute_bytes
    tp = max(1, ctx.tp)
    pp = max(1, ctx.pp)
    b, s_in, s_out = work.batch, ctx.input_len, work.output_len
    seq_len = s_in + s_out
    batched = opts.max_num_batched_tokens or max(8192, 0)
    warnings: list[str] = []
    # tensor parallel shards every layer; pipeline parallel gives each stage 1/pp of the layers
    w_share = 1.0 / (tp * pp)
    weights = _weights_component(
        ctx, w_share, "" if tp * pp == 1 else f"tensor parallel {tp} x pipeline parallel {pp}: one GPU's shard"
    )
    # profile run: one forward of max_num_batched_tokens tokens (split over sequences) + the sampler for
    # max_num_seqs sequences; activations are sharded by TP for the MLP/attention widths
    layer_b, layer_text = _max_layer_transient(arch, batched, 1, min(batched, seq_len), c, "flash")
    layer_b = round(layer_b / tp)
    sampler = opts.max_num_seqs * arch.vocab * 4 * 2
    act = layer_b + sampler + batched * arch.hidden * c * 2
    activations = Component(
        name="profile-run activations",
        bytes=act,
        category="activations",
        explain=(
            f"vLLM profiles one step of max_num_batched_tokens {batched}: {layer_text} (/ TP {tp}), plus "
            f"fp32 logits and sampler buffers for max_num_seqs {opts.max_num_seqs} x vocab {arch.vocab}"
        ),
    )
    graphs = (
        []
        if opts.enforce_eager
        else [
            Component(
                name="CUDA graphs",
                bytes=K.VLLM_CUDA_GRAPHS,
                category="overhead",
                explain="CUDA-graph capture pool (enforce_eager=False); vLLM budgets it inside gpu_memory_utilization",
            )
        ]
    )
    kv_bits = ctx.kv_bits
    kv_layers = arch.layers
    plan = plan_kv(
        arch,
        "vllm",
        tokens=seq_len,
        seqs=b,
        kv_bits=kv_bits,
        compute_bytes=c,
        block_size=opts.block_size,
        batched_tokens=batched,
        layers=kv_layers,
    )
    kv_div = 1 / vllm_kv_share(arch, tp) * pp
    need_kv = round((plan.kv_bytes + plan.state_bytes) / kv_div)
    non_torch = K.VLLM_NON_TORCH + (K.VLLM_NON_TORCH_TP_EXTRA if tp > 1 else 0)
    non_torch_c = Component(
        name="non-torch memory",
        bytes=non_torch,
        category="overhead",
        explain="CUDA context, cuBLAS/NCCL handles"
        + (" and custom all-reduce buffers" if tp > 1 else "")
        + " (vLLM counts it inside gpu_memory_utilization)",
    )
    fixed = weights.bytes + act + sum(g.bytes for g in graphs) + non_torch
    per_tok = plan.bytes_per_token_all_layers / kv_div
    info_kwargs: dict[str, int | None] = {}
    if ctx.gpu is not None:
        pool = int(opts.gpu_memory_utilization * ctx.gpu.memory_bytes)
        kv_pool = max(0, pool - fixed)
        capacity = int(kv_pool // per_tok) if per_tok else None
        per_seq = (need_kv / b) if b else 0
        max_seqs = int(kv_pool // per_seq) if per_seq else opts.max_num_seqs
        info_kwargs = {
            "pool_bytes": pool,
            "kv_capacity_tokens": capacity,
            "max_concurrent_sequences": min(max_seqs, opts.max_num_seqs),
        }
        kv = Component(
            name="KV cache pool",
            bytes=kv_pool,
            category="pool",
            explain=(
                f"gpu_memory_utilization {opts.gpu_memory_utilization} x {_fmt_gib(ctx.gpu.memory_bytes)} = "
                f"{_fmt_gib(pool)}, minus weights, profile activations, graphs and non-torch memory; holds "
                f"{capacity:,} tokens at {per_tok:,.0f} B/token (every layer counted, as vLLM reports it); your "
                f"{b} x {seq_len} tokens need {_fmt_gib(need_kv)}: {plan.explain}"
            ),
        )
        if need_kv > kv_pool:
            warnings.append(
                f"vLLM: the KV pool ({_fmt_gib(kv_pool)}) is smaller than {b} sequences of {seq_len} tokens need "
                f"({_fmt_gib(need_kv)}); vLLM will queue requests or refuse max_model_len {seq_len}"
            )
    else:
        kv = Component(
            name="KV cache",
            bytes=need_kv,
            category="kv_cache",
            explain=f"paged KV for {b} x {seq_len} tokens in {opts.block_size}-token blocks: {plan.explain}; "
            "no GPU chosen, so no pool size: this is the minimum the requests need",
        )
        warnings.append("vLLM pre-allocates gpu_memory_utilization x the GPU's memory: choose a GPU to see the pool")
    serving = [weights, activations, *graphs, kv]
    phases = [
        Phase(name="load", components=(weights,)),
        Phase(name="profile", components=(weights, activations)),
        Phase(name="serving", components=tuple(serving)),
    ]
    info = EngineInfo(
        engine="vllm", kv_bytes_per_token=per_tok, state_bytes_per_sequence=plan.state_bytes_per_sequence, **info_kwargs
    )
    return EngineRun(
        phases=phases,
        device_extra=[non_torch_c],
        reserved_slack=0,
        reserved_explain="vLLM allocates its KV pool in one piece: reserved = allocated",
        host_bytes=0,
        info=info,
        warnings=warnings,
        gpu_count=tp * pp,
        fit_required=fixed + need_kv,
        fit_budget=info_kwargs.get("pool_bytes"),
        fit_budget_label=f"within gpu_memory_utilization {opts.gpu_memory_utilization}",
    )


# ---------------------------------------------------------------------------------------------- llama.cpp


def llamacpp_run(ctx: Context) -> EngineRun:
    arch, work = ctx.arch, ctx.work
    opts = work.llamacpp
    b, s_in, s_out = work.batch, ctx.input_len, work.output_len
    seq_len = s_in + s_out
    n_layers = arch.n_layers
    ngl = n_layers + 1 if opts.n_gpu_layers is None else min(opts.n_gpu_layers, n_layers + 1)
    gpu_layers = min(ngl, n_layers)
    # llama.cpp offloads the last n_gpu_layers repeating layers; the output layer goes to the GPU only when
    # n_gpu_layers exceeds the layer count; token embeddings stay in host memory
    on_gpu = set(range(n_layers - gpu_layers, n_layers))
    w = ctx.weights
    gpu_w = sum(b_ for i, b_ in w.per_layer.items() if i in on_gpu)
    output_on_gpu = ngl > n_layers
    if output_on_gpu:
        gpu_w += w.head + w.other
    if arch.tie_embeddings and output_on_gpu:
        gpu_w += w.embedding  # tied output: the token embedding matrix doubles as the output layer
    host_w = w.total - gpu_w
    if arch.tie_embeddings and output_on_gpu:
        host_w += w.embedding
    weights = Component(
        name="weights",
        bytes=gpu_w,
        category="weights",
        explain=(
            f"{ctx.weights_label}: {gpu_layers} of {n_layers} layers on the GPU"
            + (" + output layer" if output_on_gpu else "")
            + f"; token embeddings in host memory ({_fmt_gib(w.embedding)})"
        ),
    )

    def kv_for(layers: tuple[LayerSpec, ...] | None) -> KvPlan:
        return plan_kv(
            arch,
            "llamacpp",
            tokens=seq_len,
            seqs=b,
            kv_bits=ctx.kv_bits,
            compute_bytes=4,
            n_ubatch=opts.n_ubatch,
            swa_full=opts.swa_full,
            layers=layers,
        )

    plan = kv_for(tuple(layer for layer in arch.layers if layer.index in on_gpu))
    plan_all = kv_for(None)
    kv = Component(
        name="KV cache",
        bytes=plan.kv_bytes,
        category="kv_cache",
        explain=f"n_ctx {seq_len * b} cells: {plan.explain}; {ctx.kv_label}",
    )
    comps = [weights, kv]
    if plan.state_bytes:
        comps.append(
            Component(
                name="recurrent state",
                bytes=plan.state_bytes,
                category="state",
                explain=f"F32 conv + delta-rule state: {plan.state_bytes_per_sequence:,} B per sequence",
            )
        )
    ub = min(opts.n_ubatch, max(1, s_in * b))
    n_ctx = plan_all.kv_bytes and seq_len * b
    inter = max(
        (layer.intermediate or (layer.moe.expert_intermediate * layer.moe.top_k if layer.moe else 0))
        for layer in arch.layers
    )
    heads = max(layer.n_heads for layer in arch.layers)
    logits = ub * arch.vocab * 4 if output_on_gpu else 0
    if opts.flash_attn:
        layer_buf = ub * (3 * inter + 6 * arch.hidden) * 4
        what = "flash attention: F32 FFN intermediates of one ubatch"
    else:
        layer_buf = ub * heads * n_ctx * 4 + ub * 6 * arch.hidden * 4
        what = "no flash attention: F32 KQ scores of one ubatch over the whole context"
    compute = max(logits, layer_buf) + ub * arch.hidden * 4
    comps.append(
        Component(
            name="compute buffer",
            bytes=compute,
            category="activations",
            explain=(
                f"ggml graph for n_ubatch {ub}: the larger of the F32 output logits (ubatch x vocab {arch.vocab}) and "
                f"{what}; buffers are reused across the graph, so the larger term dominates"
            ),
        )
    )
    host_kv = plan_all.kv_bytes - plan.kv_bytes + plan_all.state_bytes - plan.state_bytes
    host = host_w + host_kv + (0 if output_on_gpu else ub * arch.vocab * 4)
    context = Component(
        name="CUDA context",
        bytes=K.LLAMACPP_CONTEXT,
        category="overhead",
        explain="CUDA context and cuBLAS handle of a ggml-cuda process",
    )
    phases = [Phase(name="load", components=(weights,)), Phase(name="generate", components=tuple(comps))]
    per_gpu_phases: list[list[Phase]] = []
    n_split = min(max(1, ctx.gpu_count), max(1, gpu_layers))
    if n_split > 1 and opts.split_mode == "row":
        # --split-mode row: every matrix of the offloaded layers (and the output layer) is split by rows over
        # the GPUs; the KV cache, the recurrent state and the compute buffer stay on the main GPU; each other
        # GPU keeps a scratch copy of the ubatch input and its slice of the matmul output
        n_split = max(1, ctx.gpu_count)
        share = gpu_w / n_split
        scratch = ub * (arch.hidden + inter) * 4
        for g in range(n_split):
            main = g == 0
            w_comp = weights.model_copy(
                update={
                    "bytes": round(share),
                    "explain": f"{ctx.weights_label}: split by rows over {n_split} GPUs (--split-mode row), 1/"
                    f"{n_split} of every offloaded matrix on GPU {g}",
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
                        explain=f"a copy of the F32 ubatch input and this GPU's slice of the matmul output "
                        f"(n_ubatch {ub} x (hidden {arch.hidden} + {inter}) x 4 B)",
                    ),
                ]
            per_gpu_phases.append(
                [Phase(name="load", components=(w_comp,)), Phase(name="generate", components=tuple(g_comps))]
            )
        phases = per_gpu_phases[0]
    elif n_split > 1:
        # --split-mode layer (the default): the offloaded layers are divided between the GPUs in order, the
        # output layer and the logits buffer go with the last one; every GPU has its own compute buffer
        offloaded = sorted(on_gpu)
        for g, part in enumerate(split_layers(len(offloaded), n_split)):
            idx = {offloaded[i] for i in part}
            last = g == n_split - 1
            w_g = sum(b_ for i, b_ in w.per_layer.items() if i in idx)
            if last and output_on_gpu:
                w_g += w.head + w.other + (w.embedding if arch.tie_embeddings else 0)
            p_g = kv_for(tuple(layer for layer in arch.layers if layer.index in idx))
            c_g = max(logits if last else 0, layer_buf) + ub * arch.hidden * 4
            where = f"GPU {g}: layers {min(idx)}-{max(idx)}" + (" + output layer" if last and output_on_gpu else "")
            g_comps = [
                weights.model_copy(update={"bytes": w_g, "explain": f"{ctx.weights_label}; {where}"}),
                kv.model_copy(update={"bytes": p_g.kv_bytes, "explain": f"{p_g.explain}; {where}"}),
            ]
            if p_g.state_bytes:
                g_comps.append(comps[2].model_copy(update={"bytes": p_g.state_bytes}))
            g_comps.append(comps[-1].model_copy(update={"bytes": c_g}))
            per_gpu_phases.append(
                [Phase(name="load", components=(g_comps[0],)), Phase(name="generate", components=tuple(g_comps))]
            )
        phases = per_gpu_phases[0]
    info = EngineInfo(
        engine="llamacpp",
        kv_bytes_per_token=plan_all.bytes_per_token_growing,
        state_bytes_per_sequence=plan_all.state_bytes_per_sequence,
        gpu_layers=gpu_layers,
        total_layers=n_layers,
    )
    warnings = []
    if ctx.weight_kind != "gguf":
        warnings.append(f"llama.cpp runs GGUF files; {ctx.weights_label} was priced as stored")
    return EngineRun(
        phases=phases,
        device_extra=[context],
        reserved_slack=0,
        reserved_explain="ggml allocates fixed buffers: reserved = allocated",
        host_bytes=host,
        info=info,
        gpu_count=max(1, n_split),
        per_gpu_phases=per_gpu_phases,
        per_gpu_slack=[0] * len(per_gpu_phases),
        warnings=warnings,
    )
