"""transformers (``generate()`` with a DynamicCache): the phases of each GPU of a ``device_map`` split, the
PyTorch caching allocator's slack, and transformers' KV rule."""

from __future__ import annotations

from math import ceil
from typing import TYPE_CHECKING

from .. import constants as K
from ..architecture import Architecture, LinearAttnSpec
from ..gpu import GIB, MIB, GpuSpec
from ..kv import KvPlan, plan_kv
from ..kv_layers import KvOptions
from ..parallel import place_weights
from ..result import Component, EngineInfo, Phase
from ..scenario import InferenceWorkload
from .base import Context, Engine, EngineRun, fmt_gib, max_layer_transient, torch_context, weights_component

if TYPE_CHECKING:
    from collections.abc import Sequence


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


def _gpu_weights(ctx: Context, layers: Sequence[int], first: bool, head_here: bool, where: str) -> Component:
    """The weights one GPU of a device_map split holds: its layers, the embeddings on the first, the lm_head."""
    w = ctx.weights
    part = sum(w.per_layer.get(i, 0) for i in layers)
    part += (w.embedding + w.other) if first else 0
    part += w.head if head_here else 0
    weights = weights_component(
        ctx, 1.0, where + (" + embeddings" if first else "") + (" + lm_head" if head_here else "")
    )
    # (the text starts with the whole model's parameters: say first that this is one GPU's part of them)
    share = f"this GPU's share, {part / GIB:.2f} GiB of {w.total / GIB:.2f} GiB: "
    return weights.model_copy(update={"bytes": part, "explain": share + weights.explain})


def _load_components(ctx: Context, weights: Component, ws: Component, kernel: list[Component]) -> list[Component]:
    load = [weights, ws, *kernel]
    if ctx.on_the_fly:
        load.append(
            Component(
                name="quantisation on load",
                bytes=ctx.weights.largest_dequant,
                category="activations",
                explain="bitsandbytes quantises while loading: the largest 16-bit matrix sits on the GPU before it is "
                "converted",
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
                explain=f"constant per sequence: {plan.state_bytes_per_sequence:,} B x {b}",
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
    return Component(
        name="prefill activations" if best[2] == "activations" else "logits",
        bytes=best[0],
        category="activations" if best[2] == "activations" else "logits",
        explain=f"{best[1]} (the larger of the layer transient and the logits; "
        "activations of earlier layers are freed in inference)",
    )


def _offloaded_layer(transit: int) -> list[Component]:
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
    return moving


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
        explain=(
            f"one decode step: logits batch {b} x vocab {arch.vocab} x ({c} + 4 + 4) B (16-bit, fp32 copy, "
            f"sampling scores) + torch.cat of the largest layer's K or V at {total_tokens} tokens "
            f"({kv_end.largest_layer_bytes // 2:,} B)"
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
) -> tuple[list[Phase], int]:
    """Phases of one GPU holding ``layers`` (GPU 0 also the embedding, the last one the head and the logits).

    ``offloaded``: layers stored in CPU memory or on disk that run on this GPU (their KV cache lives here);
    ``transit``: the largest offloaded module, on this GPU while it runs; ``head_weights``: whether this GPU
    stores the lm_head (default: ``last``)."""
    arch, work = ctx.arch, ctx.work
    b, s_in, s_out = work.batch, ctx.input_len, work.output_len
    c = ctx.compute_bytes
    total_tokens = s_in + s_out
    head_here = last if head_weights is None else head_weights
    run_layers = sorted({*layers, *offloaded})
    specs = tuple(arch.layers[i] for i in run_layers)
    split = n_gpus > 1 or bool(offloaded) or not (first and head_here)
    span = f"layers {layers[0]}-{layers[-1]}" if layers else "no layers"
    where = "" if not split else f"device_map='auto' over {n_gpus} GPU(s): this GPU holds {span}"
    weights = weights_component(ctx) if not split else _gpu_weights(ctx, layers, first, head_here, where)
    ws = _workspace(ctx.gpu)
    kernel = _gptq_scratch(ctx)
    load = _load_components(ctx, weights, ws, kernel)
    kv_pre = plan_kv(arch, ENGINE, tokens=s_in, seqs=b, kv_bits=ctx.kv_bits, compute_bytes=c, layers=specs)
    kv_end = plan_kv(arch, ENGINE, tokens=total_tokens, seqs=b, kv_bits=ctx.kv_bits, compute_bytes=c, layers=specs)

    def kv_component(plan_bytes: int, explain: str) -> Component:
        return Component(
            name="KV cache",
            bytes=plan_bytes,
            category="kv_cache",
            explain=f"{explain}; {ctx.kv_label} (DynamicCache grows with every token)"
            + (f"; {where}" if where else ""),
        )

    state = _linear_state(kv_end, b)
    sub = arch.model_copy(update={"layers": specs}) if split and specs else arch
    prefill_transient = _prefill_transient(ctx, sub, last)
    moving = _offloaded_layer(transit)
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
            f"device_map: {fmt_gib(place.cpu_bytes)} of weights in CPU memory"
            + (f" and {fmt_gib(place.disk_bytes)} on disk" if place.disk_bytes else "")
            + " (max_memory per GPU "
            + fmt_gib(cap or 0)
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

    def linear_state_bytes(self, linear: LinearAttnSpec, compute_bytes: int) -> int:
        lin = linear
        state_bytes = 4 if lin.state_dtype == "fp32" else 2
        conv_len = lin.conv_kernel
        return conv_len * lin.conv_dim * compute_bytes + lin.recurrent_elements * state_bytes

    def run(self, ctx: Context) -> EngineRun:
        return transformers_run(ctx)

    def tp_problem(self, arch: Architecture, tp: int) -> str | None:
        # tensor parallel is estimated as a device_map split of the layers (transformers_run warns)
        return None

    def prefill_chunk(self, work: InferenceWorkload, input_len: int) -> int:
        # generate() runs the whole prompt in one forward
        return input_len


ENGINE = TransformersEngine()
