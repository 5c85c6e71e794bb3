"""transformers (``generate()`` with a DynamicCache): the phases of each GPU of a ``device_map`` split, the
PyTorch caching allocator's slack, and transformers' KV rule."""

from __future__ import annotations

from dataclasses import replace
from math import ceil
from typing import TYPE_CHECKING

from .. import constants as K
from ..architecture import Architecture, AttentionKind, LayerSpec, RecurrentState
from ..attention_impl import effective_attention
from ..gpu import GIB, MIB, GpuSpec
from ..kv import KvPlan, plan_kv
from ..kv_layers import KvOptions
from ..memo import derived
from ..messages import Explanation, Message, Text, join, later
from ..parallel import place_weights
from ..result import Component, EngineInfo, Phase
from ..scenario import InferenceWorkload
from .base import Context, Engine, EngineRun, max_layer_transient, torch_context, weights_component

if TYPE_CHECKING:
    from collections.abc import Sequence

WORKSPACE_HOPPER = Message(
    "transformers.workspace.hopper",
    "PyTorch's cuBLAS workspace for one stream, {mib:.3f} MiB (sm90+: :4096:8:16:8); allocated through the caching "
    "allocator, so inside max_memory_allocated",
)
WORKSPACE = Message(
    "transformers.workspace",
    "PyTorch's cuBLAS workspace for one stream, {mib:.3f} MiB (default :4096:2:16:8); allocated through the caching "
    "allocator, so inside max_memory_allocated",
)
GPTQ_SCRATCH = Message(
    "transformers.gptq_scratch",
    "exllama v2 kernels allocate a dequantisation buffer for the largest matrix ({dequant:,} B fp16) and a {tokens} x "
    "{widest} fp16 state buffer when the model is loaded",
)
DEVICE_MAP_LAYERS = Message(
    "transformers.device_map.layers", "device_map='auto' over {gpus} GPU(s): this GPU holds layers {first}-{last}"
)
DEVICE_MAP_NO_LAYERS = Message(
    "transformers.device_map.no_layers", "device_map='auto' over {gpus} GPU(s): this GPU holds no layers"
)
PLUS_EMBEDDINGS = Message("transformers.device_map.plus_embeddings", "{where} + embeddings")
PLUS_HEAD = Message("transformers.device_map.plus_lm_head", "{where} + lm_head")
GPU_SHARE = Message("transformers.gpu_share", "this GPU's share, {part:.2f} GiB of {total:.2f} GiB: {weights}")
QUANTISE_ON_LOAD = Message(
    "transformers.quantise_on_load",
    "bitsandbytes quantises while loading: the largest 16-bit matrix sits on the GPU before it is converted",
)
LINEAR_STATE = Message("transformers.linear_state", "constant per sequence: {bytes:,} B x {seqs}")
PREFILL_LAYER = Message("transformers.prefill.layer", "one layer's intermediates at {tokens} prompt tokens: {layer}")
ALL_LOGITS = Message(
    "transformers.prefill.all_logits",
    "logits for every prompt position (transformers < 4.45): batch {batch} x {tokens} x vocab {vocab} x ({c} + 4 "
    "fp32) B",
)
LAST_LOGITS = Message(
    "transformers.prefill.last_logits",
    "last-position logits only (generate() since transformers 4.45): batch {batch} x vocab {vocab} x ({c} + 4 fp32) "
    "B, plus the final hidden states",
)
AWQ_DEQUANT = Message(
    "transformers.prefill.awq",
    "AWQ GEMM kernels dequantise a whole matrix to fp16 when batch x tokens >= 1024: {bytes:,} B on top of the "
    "layer's intermediates",
)
BNB4_DEQUANT = Message(
    "transformers.prefill.bnb4",
    "bitsandbytes 4-bit dequantises each matrix to 16 bits for multi-token matmuls: the largest ({bytes:,} B) on top "
    "of the layer's intermediates",
)
PREFILL = Message(
    "transformers.prefill",
    "{what} (the larger of the layer transient and the logits; activations of earlier layers are freed in inference)",
)
OFFLOADED_LAYER = Message(
    "transformers.offloaded_layer",
    "accelerate moves each CPU- or disk-offloaded module to this GPU for its forward: the largest is {bytes:,} B",
)
DECODE_STEP = Message(
    "transformers.decode_step",
    "one decode step: logits batch {batch} x vocab {vocab} x ({c} + 4 + 4) B (16-bit, fp32 copy, sampling scores) + "
    "torch.cat of the largest layer's K or V at {tokens} tokens ({bytes:,} B)",
)
DYNAMIC_CACHE = Message("transformers.kv.dynamic_cache", "{kv} (DynamicCache grows with every token)")
OLD_TUPLES = Message(
    "transformers.decode.old_tuples",
    "transformers <= 4.35: each decode step builds new key/value tuples with torch.cat while generate() still "
    "holds the previous step's ({tokens} tokens), so two caches exist at the end of the step",
)
ROTARY_TABLES = Message(
    "transformers.rotary_tables",
    "transformers < 4.45: each of {layers} attention layers keeps its own rotary cos/sin tables for "
    "{positions} positions x head dim {head_dim} x {c} B",
)
TP_AS_DEVICE_MAP = Message(
    "transformers.tp_as_device_map", "transformers: tensor parallelism is estimated as a device_map split of the layers"
)
SPILLED = Message(
    "transformers.spilled",
    "device_map: {cpu:.2f} GiB of weights in CPU memory (max_memory per GPU {cap:.2f} GiB); they cross PCIe for every "
    "forward, so generation is far slower",
)
SPILLED_TO_DISK = Message(
    "transformers.spilled.disk",
    "device_map: {cpu:.2f} GiB of weights in CPU memory and {disk:.2f} GiB on disk (max_memory per GPU {cap:.2f} "
    "GiB); they cross PCIe and are read from disk for every forward, so generation is far slower",
)
NO_FLASH_SINKS = Message(
    "transformers.flash_attention_sinks",
    "flash-attention 2 does not support attention sinks: transformers uses eager or kernels attention for gpt-oss",
)
RESERVED_SLACK = Message(
    "transformers.reserved_slack",
    "caching allocator: 2 MiB rounding of ~{blocks} large blocks ({rounding:.0f} MiB), one layer's K/V left cached "
    "by the growing cache ({fragment:.0f} MiB), segment rounding of the transient ({segments:.0f} MiB)",
)


def _workspace(gpu: GpuSpec | None) -> Component:
    """cuBLAS's workspace (one component per GPU, kept with it)."""
    if gpu is None:
        return _NO_GPU_WORKSPACE
    return derived(gpu, "cuBLAS workspace", lambda: _cublas_workspace(gpu))


def _cublas_workspace(gpu: GpuSpec | None) -> Component:
    hopper = gpu is not None and gpu.sm_major >= 9
    size = K.CUBLAS_WORKSPACE_HOPPER if hopper else K.CUBLAS_WORKSPACE_PRE_HOPPER
    return Component(
        name="cuBLAS workspace",
        bytes=size,
        category="overhead",
        explain=(WORKSPACE_HOPPER if hopper else WORKSPACE).later(mib=size / MIB),
    )


_NO_GPU_WORKSPACE = _cublas_workspace(None)

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
            explain=GPTQ_SCRATCH.later(
                dequant=ctx.weights.largest_dequant, tokens=EXLLAMA_MAX_INPUT_LEN, widest=widest
            ),
        )
    ]


def _gpu_weights(ctx: Context, layers: Sequence[int], first: bool, head_here: bool, where: Text) -> Component:
    """The weights one GPU of a device_map split holds: its layers, the embeddings on the first, the lm_head."""
    w = ctx.weights
    part = sum(w.per_layer.get(i, 0) for i in layers)
    part += (w.embedding + w.other) if first else 0
    part += w.head if head_here else 0
    note = PLUS_EMBEDDINGS(where=where) if first else where
    weights = weights_component(ctx, 1.0, PLUS_HEAD(where=note) if head_here else note)
    # (the text starts with the whole model's parameters: say first that this is one GPU's part of them)
    share = GPU_SHARE(part=part / GIB, total=w.total / GIB, weights=weights.explain)
    return weights.model_copy(update={"bytes": part, "explain": share})


def _load_components(ctx: Context, weights: Component, ws: Component, kernel: list[Component]) -> list[Component]:
    load = [weights, ws, *kernel]
    if ctx.on_the_fly:
        load.append(
            Component(
                name="quantisation on load",
                bytes=ctx.weights.largest_dequant,
                category="activations",
                explain=QUANTISE_ON_LOAD.later(),
            )
        )
    return load


def _linear_state(plan: KvPlan, b: int) -> list[Component]:
    state = []
    if plan.state_bytes:
        state.append(
            Component(
                name="linear-attention state",
                bytes=plan.state_bytes,
                category="state",
                explain=LINEAR_STATE.later(bytes=plan.state_bytes_per_sequence, seqs=b),
            )
        )
    return state


def _prefill_transient(ctx: Context, sub: Architecture, last: bool) -> Component:
    """The larger of one layer's intermediates over the prompt, the logits (on the last GPU) and the dequantised
    matrix of AWQ / bitsandbytes kernels."""
    arch, work = ctx.arch, ctx.work
    b, s_in = work.batch, ctx.input_len
    c = ctx.compute_bytes
    w = ctx.weights
    n = b * s_in
    layer_b, layer_text = max_layer_transient(sub, n, b, s_in, c, work.attention)
    transients: list[tuple[int, Explanation, str]] = [
        (layer_b, PREFILL_LAYER.later(tokens=n, layer=layer_text), "activations")
    ]
    if last:
        if work.full_prompt_logits or work.transformers_version in PER_LAYER_ROTARY:
            logits_b = b * s_in * arch.vocab * (c + 4)
            logits_text: Explanation = ALL_LOGITS.later(batch=b, tokens=s_in, vocab=arch.vocab, c=c)
        else:
            logits_b = b * arch.vocab * (c + 4) + n * arch.hidden * c
            logits_text = LAST_LOGITS.later(batch=b, vocab=arch.vocab, c=c)
        transients.append((logits_b, logits_text, "logits"))
    if ctx.weight_kind == "awq" and n >= 1024:
        transients.append((layer_b + w.largest_dequant, AWQ_DEQUANT.later(bytes=w.largest_dequant), "activations"))
    if ctx.weight_kind == "bnb4" and n > 1:
        transients.append((layer_b + w.largest_dequant, BNB4_DEQUANT.later(bytes=w.largest_dequant), "activations"))
    best = max(transients, key=lambda t: t[0])
    return Component(
        name="prefill activations" if best[2] == "activations" else "logits",
        bytes=best[0],
        category="activations" if best[2] == "activations" else "logits",
        explain=PREFILL.later(what=best[1]),
    )


def _offloaded_layer(transit: int) -> list[Component]:
    moving: list[Component] = []
    if transit:
        moving.append(
            Component(
                name="offloaded layer",
                bytes=transit,
                category="weights",
                explain=OFFLOADED_LAYER.later(bytes=transit),
            )
        )
    return moving


#: the releases whose attention layers each keep rotary cos/sin tables and whose generate() computes the logits of
#: every prompt position (modeling_llama.py LlamaRotaryEmbedding._set_cos_sin_cache at max_position_embeddings
#: in every LlamaAttention, until the rotary module moved to the model in 4.45)
PER_LAYER_ROTARY = frozenset({"<=4.35", "4.36-4.44"})


def _rotary_tables(ctx: Context, specs: Sequence[LayerSpec]) -> list[Component]:
    """Per-layer rotary cos/sin tables of transformers < 4.45 (buffers in the load dtype, 2 x max_position x
    head_dim each); none for newer releases, or without rotary attention layers."""
    if ctx.work.transformers_version not in PER_LAYER_ROTARY or not ctx.arch.max_position:
        return []
    rotary = [sp for sp in specs if sp.attention in (AttentionKind.FULL, AttentionKind.SLIDING)]
    if not rotary:
        return []
    c, positions = ctx.compute_bytes, ctx.arch.max_position
    head_dim = max(sp.head_dim for sp in rotary)
    total = sum(2 * positions * sp.head_dim * c for sp in rotary)
    return [
        Component(
            name="rotary tables",
            bytes=total,
            category="activations",
            explain=ROTARY_TABLES.later(layers=len(rotary), positions=positions, head_dim=head_dim, c=c),
        )
    ]


def _old_tuples(ctx: Context, kv_before: KvPlan) -> list[Component]:
    """transformers <= 4.35: the previous step's key/value tuples, alive until generate() takes the new ones."""
    if ctx.work.transformers_version != "<=4.35":
        return []
    tokens = ctx.input_len + ctx.work.output_len - 1
    return [
        Component(
            name="previous KV tuples",
            bytes=kv_before.kv_bytes,
            category="kv_cache",
            explain=OLD_TUPLES.later(tokens=tokens),
        )
    ]


def _decode_transient(ctx: Context, kv_end: KvPlan, last: bool) -> Component:
    arch, c = ctx.arch, ctx.compute_bytes
    b = ctx.work.batch
    total_tokens = ctx.input_len + ctx.work.output_len
    logits_step = b * arch.vocab * (c + 4 + 4) if last else 0
    decode_tr = logits_step + kv_end.largest_layer_bytes // 2
    return Component(
        name="decode step",
        bytes=decode_tr,
        category="activations",
        explain=DECODE_STEP.later(
            batch=b, vocab=arch.vocab, c=c, tokens=total_tokens, bytes=kv_end.largest_layer_bytes // 2
        ),
    )


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
) -> tuple[list[Phase], KvPlan]:
    """Phases of one GPU holding ``layers`` (GPU 0 also the embedding, the last one the head and the logits).

    ``offloaded``: layers stored in CPU memory or on disk that run on this GPU (their KV cache lives here);
    ``transit``: the largest offloaded module, on this GPU while it runs; ``head_weights``: whether this GPU
    stores the lm_head (default: ``last``)."""
    arch, work = ctx.arch, ctx.work
    b, s_in, s_out = work.batch, ctx.input_len, work.output_len
    c = ctx.compute_bytes
    total_tokens = s_in + s_out
    head_here = last if head_weights is None else head_weights
    split = n_gpus > 1 or bool(offloaded) or not (first and head_here)
    # (one GPU that runs every layer: the model's own layers, whose KV layout and transients are kept per model)
    specs = tuple(arch.layers[i] for i in sorted({*layers, *offloaded})) if split else arch.layers
    where: Text | None = None
    if split:
        where = (
            DEVICE_MAP_LAYERS(gpus=n_gpus, first=layers[0], last=layers[-1])
            if layers
            else DEVICE_MAP_NO_LAYERS(gpus=n_gpus)
        )
    weights = weights_component(ctx) if where is None else _gpu_weights(ctx, layers, first, head_here, where)
    ws = _workspace(ctx.gpu)
    kernel = _gptq_scratch(ctx)
    load = _load_components(ctx, weights, ws, kernel)
    own = specs if split else None
    kv_pre = plan_kv(arch, ENGINE, tokens=s_in, seqs=b, kv_bits=ctx.kv_bits, compute_bytes=c, layers=own)
    kv_end = plan_kv(arch, ENGINE, tokens=total_tokens, seqs=b, kv_bits=ctx.kv_bits, compute_bytes=c, layers=own)

    def kv_component(plan_bytes: int, explain: Explanation) -> Component:
        parts = [explain, DYNAMIC_CACHE.later(kv=ctx.kv_label)]
        return Component(
            name="KV cache",
            bytes=plan_bytes,
            category="kv_cache",
            explain=later(join, "; ", *parts, where) if where is not None else later(join, "; ", *parts),
        )

    state = _linear_state(kv_end, b)
    sub = arch.model_copy(update={"layers": specs}) if split and specs else arch
    prefill_transient = _prefill_transient(ctx, sub, last)
    moving = [*_offloaded_layer(transit), *_rotary_tables(ctx, specs)]
    prefill = [
        weights,
        kv_component(kv_pre.kv_bytes, kv_pre.explain),
        *state,
        prefill_transient,
        ws,
        *kernel,
        *moving,
    ]
    decode_transient = _decode_transient(ctx, kv_end, last)
    old_tuples: list[Component] = []
    if work.transformers_version == "<=4.35" and s_out > 0:
        kv_prev = plan_kv(
            arch, ENGINE, tokens=total_tokens - 1, seqs=b, kv_bits=ctx.kv_bits, compute_bytes=c, layers=own
        )
        old_tuples = _old_tuples(ctx, kv_prev)
    decode = [
        weights,
        kv_component(kv_end.kv_bytes, kv_end.explain),
        *old_tuples,
        *state,
        decode_transient,
        ws,
        *kernel,
        *moving,
    ]

    phases = [
        Phase(name="load", components=(*load, *_rotary_tables(ctx, specs))),
        Phase(name="prefill", components=tuple(prefill)),
    ]
    if s_out > 0:
        phases.append(Phase(name="decode", components=tuple(decode)))
    return phases, kv_end


#: the releases whose multi-head latent attention caches the expanded keys and values of every head; from 5.15
#: (transformers PR 47761) DeepseekV2/V3Attention and their copies cache the compressed latent and expand it after
#: the cache read, the sparse-attention models (DeepseekV32Attention, GlmMoeDsaAttention) from 5.18 and Kimi Linear's
#: MLA layers from 5.17 (read in the published wheels' modeling_<type>.py: "Cache read / write is performed while
#: latent KV is still compressed")
_MLA_EXPANDED = frozenset({"<=4.35", "4.36-4.44", ">=4.45", "5.0-5.14"})


def _mla_latent_arch(arch: Architecture, version: str) -> Architecture:
    """``arch`` with its MLA layers caching the latent where the release ``version`` does (the others unchanged);
    kept per model and release (an estimate asks again at every setting change)."""
    if version in _MLA_EXPANDED:
        return arch
    # (the memo keeps None for "unchanged": a value holding ``arch`` itself would keep it alive for ever)
    latent = derived(arch, ("latent MLA cache", version), lambda: _with_latent_mla(arch, version))
    return arch if latent is None else latent


def _with_latent_mla(arch: Architecture, version: str) -> Architecture | None:
    if not any(layer.mla is not None for layer in arch.layers):
        return None
    late = arch.model_type == "kimi_linear" or any(layer.indexer is not None for layer in arch.layers)
    if version == "5.15-5.17" and late:
        return None  # (Kimi Linear caches the latent from 5.17: the band counts the expanded K and V, the larger)
    layers = tuple(
        lay.model_copy(update={"mla": lay.mla.model_copy(update={"latent_cache": True})})
        if lay.mla is not None
        else lay
        for lay in arch.layers
    )
    return arch.model_copy(update={"layers": layers})


def transformers_run(ctx: Context) -> EngineRun:
    warnings: list[Text] = []
    # (the attention transformers runs: "sdpa" is eager where the model's implementation has no SDPA path)
    attention, note = effective_attention(ctx.arch.model_type, ctx.work.attention)
    if note is not None:
        ctx = replace(ctx, work=ctx.work.model_copy(update={"attention": attention}))
        warnings.append(note)
    latent = _mla_latent_arch(ctx.arch, ctx.work.transformers_version)
    if latent is not ctx.arch:
        ctx = replace(ctx, arch=latent)
    arch, work = ctx.arch, ctx.work
    c = ctx.compute_bytes
    n_gpus = max(1, ctx.gpu_count)
    if ctx.tp > 1:
        warnings.append(TP_AS_DEVICE_MAP())
    cap = None if work.max_memory_gib is None else int(work.max_memory_gib * GIB)
    cpu_cap = None if work.cpu_memory_gib is None else int(work.cpu_memory_gib * GIB)
    place = place_weights(ctx.weights, arch.n_layers, n_gpus, cap, cpu_cap)
    off_layers = (*place.cpu.layers, *place.disk.layers)
    head_off = place.cpu.head or place.disk.head
    per_gpu: list[list[Phase]] = []
    slacks: list[int] = []
    slack_text: Text | None = None
    n_used = len(place.gpus)
    whole: KvPlan | None = None
    for g, slot in enumerate(place.gpus):
        # offloaded modules run on the first GPU (accelerate's execution device for them)
        main = g == 0
        phases, kv_end = _transformers_gpu(
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
        slack, text = _torch_reserved_slack(ctx, peak, kv_end.largest_layer_bytes, max(1, len(slot.layers)))
        if n_used == 1 and not off_layers:
            whole = kv_end  # one GPU runs every layer: its plan is the model's
        per_gpu.append(phases)
        slacks.append(slack)
        slack_text = slack_text or text
    if place.spilled:
        cpu, per_gpu_cap = place.cpu_bytes / GIB, (cap or 0) / GIB
        warnings.append(
            SPILLED_TO_DISK(cpu=cpu, disk=place.disk_bytes / GIB, cap=per_gpu_cap)
            if place.disk_bytes
            else SPILLED(cpu=cpu, cap=per_gpu_cap)
        )
    context = torch_context(ctx.gpu)
    if work.attention == "flash" and arch.attention_sinks:
        warnings.append(NO_FLASH_SINKS())
    kv_all = whole or plan_kv(
        arch,
        ENGINE,
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
        reserved_explain=slack_text if slack_text is not None else join(""),
        host_bytes=place.cpu_bytes,
        info=info,
        warnings=warnings,
        gpu_count=len(per_gpu),
        per_gpu_phases=per_gpu,
        per_gpu_slack=slacks,
    )


def _torch_reserved_slack(ctx: Context, peak: Phase, largest_layer: int, n_layers: int) -> tuple[int, Text]:
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
    return total, RESERVED_SLACK(blocks=n_big, rounding=rounding / MIB, fragment=frag / MIB, segments=seg / MIB)


class TransformersEngine(Engine):
    """transformers ``generate()``: a DynamicCache that grows with every token, device_map='auto' over GPUs."""

    name = "transformers"
    display_name = "transformers"
    # transformers and vLLM load the vision tower of a multimodal checkpoint
    loads_vision = True
    runs_gguf = False
    auto_kv_dtype = None
    serves_across_machines = False
    grows_by_tensor_parallel = False
    reads_tp = True
    may_leave_gpus_empty = True
    # device_map spilled weights to CPU memory: accelerate copies each offloaded layer to the GPU for every
    # forward
    streams_offloaded_weights = True
    offloads_gpu_layers = False
    has_pool_budget = False
    # eager launches: transformers' Python loop over the layers
    step_overhead_per_layer_s = 150e-6
    form_group = "device_map"
    options_section = None
    level_labels = ("torch.cuda.max_memory_allocated", "torch.cuda.max_memory_reserved")
    lighter_weights = (("int8", 1.0, 0.0), ("nf4", 3.0, 1.0))
    lighter_kv = (("int8", 1.0),)
    # transformers' DeepseekV3 attention caches K (nope+rope) and V per head
    expands_mla = True

    def full_tokens(self, tokens: int, seqs: int, opts: KvOptions) -> int:
        return tokens

    def sliding_tokens(self, window: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        return min(tokens, window)

    def chunked_tokens(self, chunk: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        return min(tokens, chunk)

    def linear_state_bytes(self, linear: RecurrentState, compute_bytes: int) -> int:
        # the conv state keeps conv_kernel columns in the model's dtype (Qwen3NextDynamicCache, Mamba2Cache)
        lin = linear
        state_bytes = lin.transformers_state_element_bytes(compute_bytes)
        conv_len = lin.conv_kernel
        return conv_len * lin.conv_dim * compute_bytes + lin.recurrent_elements * state_bytes

    def run(self, ctx: Context) -> EngineRun:
        return transformers_run(ctx)

    def tp_problem(self, arch: Architecture, tp: int) -> Text | None:
        # tensor parallel is estimated as a device_map split of the layers (transformers_run warns)
        return None

    def prefill_chunk(self, work: InferenceWorkload, input_len: int) -> int:
        # generate() runs the whole prompt in one forward
        return input_len


ENGINE = TransformersEngine()
