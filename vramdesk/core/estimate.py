"""estimate(scenario, model, gpu) -> Estimate: the one entry point of the estimator core."""

from __future__ import annotations

from . import constants as K
from .architecture import Architecture
from .dtype_names import DTYPE_BYTES, FormatError, kv_bits
from .engines import Context, Engine, EngineRun, engine, torch_context
from .facts import ModelFacts
from .fit import verdict
from .gpu import MIB, GpuSpec
from .memo import derived
from .messages import Message, Text, error_text, free, join
from .quant_config import format_from_quantization_config
from .result import Component, EngineInfo, Estimate, Fit, GpuShare, Params, Phase
from .scenario import FinetuneWorkload, InferenceWorkload, Scenario
from .training import TrainingRun, training_phases
from .training_plan import TRAINABLE_BASES, TrainingError
from .weight_format import WeightFormat, parse_weight_format
from .weights import WeightBytes, stored_weight_bytes


class EstimateError(ValueError):
    """A scenario that cannot be estimated, with the reason in words."""


TOO_LARGE = Message(
    "estimate.too_large",
    "this plan needs {eib:,.3g} EiB on one GPU or machine, above the 1 EiB any estimate may reach: the batch, the "
    "lengths or the model's sizes are far outside anything real",
)
FORMAT_ERROR = Message("estimate.format_error", "{model_type}: {error}")
KV_AUTO = Message("estimate.kv_dtype.auto", "KV dtype auto -> {dtype}")
KV_DTYPE = Message("estimate.kv_dtype", "KV dtype {dtype}")
MTP_NOTE = Message(
    "estimate.note.mtp",
    "the checkpoint also stores {params:,} parameters of {layers} MTP layer(s), which plain decoding does not load "
    "(speculative decoding does)",
)
VISION_LOADED = Message("estimate.note.vision.loaded", "vision tower and projector: {params:,} parameters (loaded)")
VISION_NOT_LOADED = Message(
    "estimate.note.vision.not_loaded", "vision tower and projector: {params:,} parameters (not loaded by this engine)"
)
STORED_DTYPES = Message("estimate.stored_dtypes", "the checkpoint's stored dtypes ({source})")
STORED_DTYPES_HEADERS = Message("estimate.stored_dtypes.headers", "the checkpoint's stored dtypes (headers)")
ONE_MACHINE = Message(
    "estimate.one_machine_engine",
    "{engine} serves on one machine: tp {tp} x pp {pp} needs {gpus} GPUs, more than its {available}; vLLM spreads "
    "pipeline stages over machines",
)
ACROSS_MACHINES = Message(
    "estimate.across_machines",
    "served across machines: tp {tp} x pp {pp} = {gpus} GPUs on {machines} machines of {per}",
)
INFERENCE_ONE_MACHINE = Message(
    "estimate.inference_one_machine",
    "inference is planned on one machine: its {gpus} GPU(s); the {machines} machines apply to fine-tuning",
)
TOO_LONG = Message(
    "estimate.too_long",
    "input + output = {tokens:,} tokens exceeds the model's max_position_embeddings ({max_position:,})",
)
GGUF_DEQUANTISED = Message(
    "estimate.gguf_dequantised",
    "{engine} dequantises GGUF files on load; the weights are priced as the GGUF stores them",
)
EMPTY_GPUS = Message(
    "estimate.empty_gpus", "{gpus} GPUs but only {used} get layers: the others hold nothing of this model"
)
NCCL_BUFFERS = Message("estimate.nccl_buffers", "NCCL communicator buffers per process (0.5-1.6 GiB reported)")
DEQUANTISED_FOR_TRAINING = Message(
    "estimate.dequantised_for_training",
    "the checkpoint's weights ({label}) cannot be trained as stored: training loads them dequantised to 16 bits, as "
    "priced here",
)
TRAINING_WORKSPACES = Message(
    "estimate.training_workspaces",
    "PyTorch's cuBLAS workspaces of the forward and the backward thread, {mib:.3f} MiB each, inside "
    "max_memory_allocated",
)

#: most bytes one GPU (or one machine's host memory) may need in an estimate: 1 EiB. Real plans stay below a few
#: TiB; past this only inputs at their absurd limits multiply out (65,536 sequences x 16M tokens x a huge model)
MAX_PLAN_BYTES = 2**60


def _bounded(est: Estimate) -> Estimate:
    """Refuse an estimate that is arithmetic on absurd inputs rather than an answer (see MAX_PLAN_BYTES)."""
    worst = max([est.host_bytes, est.device_bytes, *(g.device_bytes for g in est.per_gpu)])
    if worst > MAX_PLAN_BYTES:
        raise EstimateError(TOO_LARGE(eib=worst / 2**60))
    return est


def _float_dtype(arch: Architecture) -> str:
    return arch.dtype if arch.dtype in ("bf16", "fp16", "fp32") else "bf16"


def resolve_format(scenario: Scenario, arch: Architecture) -> tuple[WeightFormat, bool]:
    """The weight format and whether it is produced on load (bitsandbytes from a 16-bit checkpoint); kept per
    model and weights setting (an invalid one is refused every time)."""
    weights = scenario.weights
    return derived(arch, ("weight format", weights), lambda: _resolve_format(weights, arch))


def _resolve_format(weights: str, arch: Architecture) -> tuple[WeightFormat, bool]:
    base = _float_dtype(arch)
    qc = arch.quantization_config
    if weights == "auto":
        if qc:
            try:
                return format_from_quantization_config(qc, base_dtype=base if base != "fp32" else "bf16"), False
            except FormatError as err:
                raise EstimateError(FORMAT_ERROR(model_type=arch.model_type, error=free(error_text(err)))) from err
        return parse_weight_format(base), False
    try:
        compute = base if base in ("bf16", "fp16") else "bf16"
        fmt = parse_weight_format(weights, base_dtype=compute)
    except FormatError as err:
        raise EstimateError(error_text(err)) from err
    return fmt, fmt.kind in ("bnb4", "int8") and not qc


def _compute_bytes(fmt: WeightFormat) -> int:
    return 4 if fmt.kind == "float" and fmt.base_dtype == "fp32" else 2


def _kv(work: InferenceWorkload, fmt: WeightFormat, arch: Architecture) -> tuple[float, Text]:
    """The KV cache's bits per element and its label (kept per weight format, KV setting and engine)."""
    kv_dtype, engine_name = work.kv_dtype, work.engine
    return derived(fmt, ("kv cache", kv_dtype, engine_name), lambda: _kv_bits(kv_dtype, engine_name, fmt))


def _kv_bits(kv_dtype: str, engine_name: str, fmt: WeightFormat) -> tuple[float, Text]:
    name: str = kv_dtype
    if name == "auto":
        if (auto := engine(engine_name).auto_kv_dtype) is not None:
            name = auto
        else:
            name = (
                "fp32"
                if _compute_bytes(fmt) == 4
                else (fmt.base_dtype if fmt.base_dtype in ("bf16", "fp16") else "bf16")
            )
        label = KV_AUTO(dtype=name)
    else:
        label = KV_DTYPE(dtype=name)
    try:
        return kv_bits(name), label
    except FormatError as err:
        raise EstimateError(error_text(err)) from err


def _params(facts: ModelFacts, parts: frozenset[str]) -> Params:
    """The parameter counts of the parts loaded (kept per model: a frozen value every estimate may share)."""
    return derived(facts, ("params", parts), lambda: _count_params(facts, parts))


def _count_params(facts: ModelFacts, parts: frozenset[str]) -> Params:
    c = facts.counts
    loaded = c.text + (c.vision if "vision" in parts else 0)
    ckpt = facts.stored_total if facts.stored_total is not None else c.checkpoint
    notes: list[str] = list(facts.notes)
    if c.mtp:
        notes.append(MTP_NOTE(params=c.mtp, layers=facts.arch.mtp_layers))
    if c.vision:
        notes.append((VISION_LOADED if "vision" in parts else VISION_NOT_LOADED)(params=c.vision))
    emb = next((t.numel for t in facts.tensors if t.role == "embedding" and t.part == "text"), 0)
    parts_out = {
        "text": c.text,
        "vision": c.vision,
        "mtp": c.mtp,
        "embeddings_and_head": c.embeddings,
        "active_without_input_embedding": c.active - emb,
    }
    if ckpt != c.checkpoint:
        parts_out["stored_extra"] = ckpt - c.checkpoint
    return Params(
        total=loaded,
        active=c.active + (c.vision if "vision" in parts else 0),
        trainable=0,
        checkpoint_total=ckpt,
        parts=parts_out,
        notes=tuple(notes),
    )


def estimate(
    scenario: Scenario, facts: ModelFacts, gpu: GpuSpec | None = None, *, headroom_fraction: float | None = None
) -> Estimate:
    """One estimate. ``headroom_fraction`` overrides the verdict's safety margin (share of the GPU's memory)."""
    return _bounded(_estimate(scenario, facts, gpu, headroom_fraction))


def _inference_weights(
    scenario: Scenario, facts: ModelFacts, fmt: WeightFormat, parts: frozenset[str]
) -> tuple[WeightBytes, Text, str, bool]:
    """The weights an inference plan loads (the checkpoint's stored tensors when the weights are "auto" and its
    headers are known, else the format's rule), with their label, the kind the engine sees and whether they are the
    checkpoint's stored tensors."""
    weights_label: Text = free(fmt.label)
    stored_kind = fmt.kind
    stored = scenario.weights == "auto" and facts.checkpoint is not None
    if stored and facts.checkpoint is not None:
        # the checkpoint's own tensors: exact bytes from its headers, not a formula
        key = ("stored", parts)
        wb = facts._cache.get(key) or stored_weight_bytes(facts.checkpoint, parts)
        facts._cache[key] = wb
        weights_label = (
            STORED_DTYPES(source=free(facts.checkpoint_source)) if facts.checkpoint_source else STORED_DTYPES_HEADERS()
        )
        if any(
            t.stored_dtype and t.stored_dtype.upper().startswith(("Q", "IQ", "TQ", "MXFP4")) for t in facts.checkpoint
        ):
            stored_kind = "gguf"
    else:
        wb = facts.weights(fmt, parts)
    return wb, weights_label, stored_kind, stored


def _inference_warnings(
    scenario: Scenario, work: InferenceWorkload, arch: Architecture, eng: Engine, fmt: WeightFormat, input_len: int
) -> list[str]:
    """The warnings of an inference plan's layout, length and format; raises :class:`EstimateError` for a layout
    the engine cannot serve."""
    warnings = list(arch.warnings)
    spread = scenario.parallelism.tp * scenario.parallelism.pp
    if spread > scenario.hardware.gpu_count and not eng.serves_across_machines:
        raise EstimateError(
            ONE_MACHINE(
                engine=work.engine,
                tp=scenario.parallelism.tp,
                pp=scenario.parallelism.pp,
                gpus=spread,
                available=scenario.hardware.gpu_count,
            )
        )
    if scenario.hardware.nodes > 1 and spread > scenario.hardware.gpu_count:
        # vLLM runs tensor parallel inside a machine and pipeline stages across machines (Ray); the scenario
        # allows tp x pp up to every machine's GPUs
        per = scenario.hardware.gpu_count
        warnings.append(
            ACROSS_MACHINES(
                tp=scenario.parallelism.tp, pp=scenario.parallelism.pp, gpus=spread, machines=-(-spread // per), per=per
            )
        )
    elif scenario.hardware.nodes > 1:
        warnings.append(INFERENCE_ONE_MACHINE(gpus=scenario.hardware.gpu_count, machines=scenario.hardware.nodes))
    total_len = input_len + work.output_len
    if arch.max_position and total_len > arch.max_position:
        warnings.append(TOO_LONG(tokens=total_len, max_position=arch.max_position))
    if fmt.kind == "gguf" and not eng.runs_gguf:
        warnings.append(GGUF_DEQUANTISED(engine=work.engine))
    return warnings


def _inference_shares(
    run: EngineRun,
    gpu: GpuSpec | None,
    gpu_count: int,
    headroom_fraction: float | None,
    peak: Phase,
    reserved: int,
    extra: int,
) -> tuple[GpuShare, ...]:
    """What each GPU holds: its own peak when the engine splits the model unevenly (each with its verdict), else
    one share of ``peak`` (GPU 0's) per GPU the engine uses."""
    allocated = peak.allocated_bytes
    if run.per_gpu_phases:
        shares = []
        for i, (phases, slack) in enumerate(zip(run.per_gpu_phases, run.per_gpu_slack, strict=True)):
            own = peak if phases is run.phases else max(phases, key=lambda p: p.allocated_bytes)
            a = allocated if phases is run.phases else own.allocated_bytes
            shares.append(
                GpuShare(
                    index=i,
                    peak_allocated_bytes=a,
                    peak_reserved_bytes=a + slack,
                    device_bytes=a + slack + extra,
                    components=own.components,
                    fit=verdict(a + slack + extra, gpu, gpu_count, headroom_fraction=headroom_fraction)
                    if gpu is not None
                    else None,
                )
            )
        return tuple(shares)
    device = reserved + extra
    return tuple(
        GpuShare(index=i, peak_allocated_bytes=allocated, peak_reserved_bytes=reserved, device_bytes=device)
        for i in range(max(1, run.gpu_count))
    )


def _estimate(
    scenario: Scenario, facts: ModelFacts, gpu: GpuSpec | None = None, headroom_fraction: float | None = None
) -> Estimate:
    work = scenario.workload
    if not isinstance(work, InferenceWorkload):
        return _estimate_training(scenario, work, facts, gpu, headroom_fraction)
    arch, eng = facts.arch, engine(work.engine)
    fmt, on_the_fly = resolve_format(scenario, arch)
    # transformers and vLLM load the vision tower of a multimodal checkpoint; llama.cpp keeps it in mmproj
    parts = frozenset({"text", "vision"} if eng.loads_vision else {"text"})
    wb, weights_label, stored_kind, stored = _inference_weights(scenario, facts, fmt, parts)
    kvb, kv_label = _kv(work, fmt, arch)
    input_len = work.input_len or min(arch.max_position or 4096, 4096)
    warnings = _inference_warnings(scenario, work, arch, eng, fmt, input_len)
    gpu_count = scenario.hardware.gpu_count
    ctx = Context(
        arch=arch,
        weights=wb,
        weights_label=weights_label,
        on_the_fly=on_the_fly,
        compute_bytes=_compute_bytes(fmt),
        kv_bits=kvb,
        kv_label=kv_label,
        work=work,
        input_len=input_len,
        gpu=gpu,
        gpu_count=gpu_count,
        tp=scenario.parallelism.tp,
        pp=scenario.parallelism.pp,
        weight_kind=stored_kind,
        weights_stored=stored,
        weight_bits=fmt.bits,
    )
    problem = eng.tp_problem(facts.arch, scenario.parallelism.tp) or eng.options_problem(facts.arch, work)
    if problem:
        raise EstimateError(problem)
    run: EngineRun = eng.run(ctx)
    warnings.extend(run.warnings)
    peak: Phase = max(run.phases, key=lambda p: p.allocated_bytes)
    allocated = peak.allocated_bytes
    reserved = allocated + run.reserved_slack
    extra = sum(c.bytes for c in run.device_extra)
    device = reserved + extra
    per_gpu = _inference_shares(run, gpu, gpu_count, headroom_fraction, peak, reserved, extra)
    if gpu_count > len(per_gpu) and eng.may_leave_gpus_empty:
        warnings.append(EMPTY_GPUS(gpus=gpu_count, used=len(per_gpu)))
    # the verdict is decided by the busiest GPU
    required = run.fit_required if run.fit_required is not None else max(g.device_bytes for g in per_gpu)
    only = per_gpu[0].fit if len(per_gpu) == 1 else None
    if only is not None and run.fit_budget is None and run.fit_refusal is None and required == only.required_bytes:
        fit: Fit | None = only  # (one GPU, judged on the same figure: its share's verdict is the plan's)
    elif gpu is not None:
        fit = verdict(
            required,
            gpu,
            gpu_count,
            budget_bytes=run.fit_budget,
            budget_label=run.fit_budget_label,
            headroom_fraction=headroom_fraction,
            refusal=run.fit_refusal,
        )
    else:
        fit = None
    if fit is not None and not run.per_gpu_phases:
        per_gpu = tuple(g.model_copy(update={"fit": fit}) for g in per_gpu)
    constants = dict(K.SOURCES)
    constants["reserved"] = run.reserved_explain
    return Estimate(
        model_id=facts.model_id,
        params=_params(facts, parts),
        peak_phase=peak.name,
        phases=tuple(run.phases),
        components=peak.components,
        peak_allocated_bytes=allocated,
        peak_reserved_bytes=reserved,
        device_bytes=device,
        device_overheads=tuple(run.device_extra),
        per_gpu=per_gpu,
        host_bytes=run.host_bytes,
        engine=run.info,
        warnings=tuple(dict.fromkeys(warnings)),
        fit=fit,
        constants=constants,
    )


__all__ = ["DTYPE_BYTES", "Component", "EstimateError", "estimate"]


def _estimate_training(
    scenario: Scenario,
    work: FinetuneWorkload,
    facts: ModelFacts,
    gpu: GpuSpec | None,
    headroom_fraction: float | None = None,
) -> Estimate:
    base, dequantised = _training_base(scenario, facts)
    try:
        total_gpus = scenario.hardware.gpu_count * scenario.hardware.nodes
        # (training_phases refuses a plan that cannot run first: training_plan.check_plan)
        run = training_phases(facts, work, scenario.parallelism, total_gpus, base, scenario.hardware.gpu_count)
    except (TrainingError, FormatError) as err:
        # (a refusal's message Text, id and values kept, so that the window translates it by its id)
        raise EstimateError(error_text(err)) from err
    ws = _cublas_workspaces(gpu)
    stage_phases = [_with_workspaces(st, ws) for st in run.stages] or [_with_workspaces(run.phases, ws)]
    phases = stage_phases[0]
    peak, allocated, reserved = _training_levels(phases, work, facts, run)
    extras = [torch_context(gpu)]
    if run.gpus > 1:
        extras.append(
            Component(
                name="NCCL buffers",
                bytes=K.NCCL_PER_PROCESS,
                category="overhead",
                explain=NCCL_BUFFERS(),
            )
        )
    extra_bytes = sum(c.bytes for c in extras)
    device = reserved + extra_bytes
    per_gpu = _training_shares(stage_phases, work, facts, run, gpu, extra_bytes, headroom_fraction)
    busiest = max(per_gpu, key=lambda g: g.device_bytes)
    fit = busiest.fit
    c = facts.counts
    params = Params(
        total=c.text,
        active=c.active,
        trainable=run.trainable,
        checkpoint_total=facts.stored_total or c.checkpoint,
        parts={"text": c.text, "vision": c.vision, "mtp": c.mtp},
        notes=facts.notes,
    )
    constants = dict(K.SOURCES)
    fragmentation = K.SOURCES_TRAINING_EXPANDABLE if work.expandable_segments else K.SOURCES_TRAINING
    constants["training fragmentation"] = (
        join("; ", fragmentation, run.step_segments_text) if run.step_segments_text else fragmentation
    )
    return Estimate(
        model_id=facts.model_id,
        params=params,
        peak_phase=peak.name,
        phases=phases,
        components=peak.components,
        peak_allocated_bytes=allocated,
        peak_reserved_bytes=reserved,
        device_bytes=device,
        device_overheads=tuple(extras),
        per_gpu=per_gpu,
        # every rank offloads its own share: one machine holds those of all its GPUs (DeepSpeed's estimators
        # count CPU memory per node the same way)
        host_bytes=run.host_bytes * scenario.hardware.gpu_count,
        engine=EngineInfo(engine="training", kv_bytes_per_token=0.0),
        warnings=(
            *([DEQUANTISED_FOR_TRAINING(label=free(dequantised))] if dequantised else []),
            *run.warnings,
        ),
        fit=fit,
        constants=constants,
    )


def _training_base(scenario: Scenario, facts: ModelFacts) -> tuple[str | WeightFormat, str]:
    """(the frozen base adapters train on: the scenario's weights, or a quantised checkpoint's own format; the
    label of a checkpoint format that training loads dequantised, else "")."""
    base: str | WeightFormat = scenario.weights
    dequantised = ""
    if facts.arch.quantization_config and scenario.weights == "auto":
        stored = resolve_format(scenario, facts.arch)[0]
        if stored.kind in TRAINABLE_BASES:
            # adapters train on the base as stored: peft has LoRA layers for GPTQ, AWQ and bitsandbytes modules
            base = stored
        else:
            # FP8 / MXFP4 / ... kernels have no backward: training loads them dequantised (dequantize=True)
            dequantised = stored.label
    return base, dequantised


def _cublas_workspaces(gpu: GpuSpec | None) -> Component:
    hopper = gpu is not None and gpu.sm_major >= 9
    ws_size = K.CUBLAS_WORKSPACE_HOPPER if hopper else K.CUBLAS_WORKSPACE_PRE_HOPPER
    # PyTorch keys its cuBLAS workspaces by (handle, stream) and hands each thread its own handle: the forward
    # runs on the Python thread and the backward on the autograd engine's device thread, so a training step
    # holds two (an H200 run of twelve traced steps: max_memory_allocated 64-68 MiB above the traced tensors).
    return Component(
        name="cuBLAS workspace",
        bytes=K.CUBLAS_WORKSPACES_TRAINING * ws_size,
        category="overhead",
        explain=TRAINING_WORKSPACES(mib=ws_size / MIB),
    )


def _with_workspaces(ph: list[Phase], ws: Component) -> tuple[Phase, ...]:
    return tuple(Phase(name=p.name, components=(*p.components, ws)) for p in ph)


def _training_levels(
    ph: tuple[Phase, ...], work: FinetuneWorkload, facts: ModelFacts, run: TrainingRun
) -> tuple[Phase, int, int]:
    """(the peak phase, its allocated bytes, the reserved peak) of one GPU's phases."""
    top = max(ph, key=lambda p: p.allocated_bytes)
    slack = _reserve_slack(ph, work, facts)
    # what the forward and backward reserved stays cached through the step; the step's temporaries that fit
    # none of those blocks come on top (training.step_new_segments)
    activation_peak = max((p.allocated_bytes for p in ph if p.name != "optimizer step"), default=0)
    reserved = max(top.allocated_bytes, activation_peak + run.step_segments) + slack + run.loading_cache
    return top, top.allocated_bytes, reserved


def _reserve_slack(ph: tuple[Phase, ...], work: FinetuneWorkload, facts: ModelFacts) -> int:
    """Cached but unusable blocks at the reserved peak (see K.TRAIN_RESERVE_LOSS_HEAD): the pool grows in the
    activation phases and is not given back, so it counts even when the optimizer step is the peak."""
    regime = "full" if work.method == "full" else "adapters"
    by_name = {p.name: p for p in ph}

    def part(name: str, category: str) -> int:
        p = by_name.get(name)
        return sum(c.bytes for c in p.components if c.category == category) if p else 0

    loss_head = part("loss + start of backward", "logits")
    if work.expandable_segments:
        return int(K.TRAIN_RESERVE_EXPANDABLE_LOSS_HEAD * loss_head)
    resident = part("loss + start of backward", "activations")
    if "backward (recompute)" in by_name:
        layer = max(0, part("backward (recompute)", "activations") - resident)
    else:
        layer = resident // max(1, facts.arch.n_layers)
    slack = K.TRAIN_RESERVE_LOSS_HEAD[regime] * loss_head + K.TRAIN_RESERVE_LAYER[regime] * layer
    if work.mean_seq_len is not None and regime == "adapters":
        scale, offset = K.TRAIN_RESERVE_VARYING
        slack = max(slack, (scale * work.seq_len / work.mean_seq_len - offset) * loss_head)
    return int(slack)


def _training_shares(
    stage_phases: list[tuple[Phase, ...]],
    work: FinetuneWorkload,
    facts: ModelFacts,
    run: TrainingRun,
    gpu: GpuSpec | None,
    extra_bytes: int,
    headroom_fraction: float | None,
) -> tuple[GpuShare, ...]:
    """Every GPU's share and verdict."""
    # GPUs are numbered stage by stage: each pipeline stage has gpus / pp GPUs that hold the same share. The
    # share (and its verdict) is worked out once per stage and copied per GPU: the cost of a plan of thousands
    # of GPUs is that of its stages, plus one cheap copy per GPU
    per_stage = max(1, run.gpus // len(stage_phases))
    stage_shares = []
    for st in stage_phases:
        top, a, r = _training_levels(st, work, facts, run)
        stage_shares.append(
            GpuShare(
                index=0,
                peak_allocated_bytes=a,
                peak_reserved_bytes=r,
                device_bytes=r + extra_bytes,
                components=top.components if run.stages else (),
                fit=verdict(
                    r + extra_bytes,
                    gpu,
                    run.gpus,
                    headroom_fraction=headroom_fraction,
                    allocated_bytes=a + extra_bytes,
                )
                if gpu is not None
                else None,
            )
        )
    return tuple(
        stage_shares[min(i // per_stage, len(stage_shares) - 1)].model_copy(update={"index": i})
        for i in range(run.gpus)
    )
