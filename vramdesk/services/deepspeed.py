"""Read a DeepSpeed JSON config into scenario options, so a plan uses the file the job will launch with.

Only the keys that change memory are mapped; every other known key is accepted and ignored; an unknown key
is an error that names it (a typo such as ``"zero_optimisation"`` would otherwise silently plan ZeRO-0).
Values ``"auto"`` (filled in by the HF Trainer integration) keep the scenario's own setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vramdesk.core import jsonsafe
from vramdesk.core.messages import Message, Text, free, join
from vramdesk.core.scenario import Scenario
from vramdesk.validation_text import error_message

MAX_BYTES = 1024 * 1024

NOT_WHOLE = Message("deepspeed.not_whole", "'{key}' must be a non-negative whole number or \"auto\", got {value!r}")
NOT_OBJECT = Message("deepspeed.not_object", "'{key}' must be an object")
ENABLED_BAD = Message("deepspeed.enabled_bad", "'{key}.enabled' must be true, false or \"auto\", got {value!r}")
NOT_A_CONFIG = Message("deepspeed.not_a_config", "a DeepSpeed config must be a JSON object")
UNKNOWN_KEYS = Message("deepspeed.unknown_keys", "unknown key(s): {keys}")
UNKNOWN_ZERO_KEYS = Message("deepspeed.unknown_zero_keys", "unknown key(s) in zero_optimization: {keys}")
STAGE_RANGE = Message("deepspeed.stage_range", "'{key}' must be 0-3, got {stage}")
DEVICE_BAD = Message("deepspeed.device_bad", "'{key}' must be none, cpu or nvme, got {value!r}")
NEEDS_STAGE = Message("deepspeed.needs_stage", "'{key}' needs stage {stage}")
BOTH_HALF = Message("deepspeed.both_half", "'bf16' and 'fp16' are both enabled; DeepSpeed refuses that: enable one")
AT_LEAST = Message("deepspeed.at_least", "'{key}' must be at least {least}, got {value}")
UNKNOWN_OPTIMIZER = Message(
    "deepspeed.unknown_optimizer", "optimizer type '{type}' is not one vramdesk models (known: {known})"
)
PLAN_REFUSED = Message("deepspeed.plan_refused", "the file's settings do not fit this plan: {problems}")
FIELD_PROBLEM = Message("deepspeed.field_problem", "'{key}': {problem}")
NO_SUCH_FILE = Message("deepspeed.no_such_file", "{path}: no such file")
TOO_LARGE = Message("deepspeed.too_large", "{path}: too large for a DeepSpeed config")
NOT_JSON = Message("deepspeed.not_json", "{path}: not valid JSON ({problem})")
FILE_FAILED = Message("deepspeed.file_failed", "{path}: {problem}")
#: notes: what the file sets that the plan follows differently, or not at all
HPZ = Message(
    "deepspeed.note.hpz",
    "zero_hpz_partition_size {size} (ZeRO++ hpZ) is not modelled: it keeps a second copy of the weights sharded "
    "over {size} GPUs, about 2 B per parameter / {size} more on each GPU",
)
MICS = Message(
    "deepspeed.note.mics",
    "mics_shard_size {size} (MiCS) is not modelled: the model states are sharded over groups of {size} GPUs, not "
    "over all of them, so each GPU holds more than this plan shows",
)
QUANTIZED = Message("deepspeed.note.quantized", "{key} (ZeRO++) is not modelled: it changes only communication buffers")
TUNED = Message(
    "deepspeed.note.tuned",
    "{key} read but not modelled: the plan keeps two layers gathered at a time (the lm_head at the loss)",
)
TUNED_BOTH = Message(
    "deepspeed.note.tuned_both",
    "{key} and {key2} read but not modelled: the plan keeps two layers gathered at a time (the lm_head at the loss)",
)
NVME = Message("deepspeed.note.nvme", "{key} to NVMe: planned as host offload (the NVMe swap buffers live in host RAM)")
NO_HALF = Message(
    "deepspeed.note.no_half",
    "no bf16 / fp16 section: DeepSpeed on its own trains such a config in fp32; planned in the plan's precision, "
    "as the HF Trainer and accelerate add the section from their own mixed-precision flag",
)
CHECKPOINTING = Message(
    "deepspeed.note.checkpointing",
    "DeepSpeed activation checkpointing options are planned as plain gradient checkpointing",
)
#: the summary of a plan (describe_plan)
SUMMARY_ZERO = Message("deepspeed.summary.zero", "ZeRO-{stage}")
SUMMARY_NO_ZERO = Message("deepspeed.summary.no_zero", "no ZeRO stage")
SUMMARY_OFFLOAD = {
    "optimizer": Message("deepspeed.summary.offload_optimizer", "optimizer offload"),
    "params": Message("deepspeed.summary.offload_params", "parameter and optimizer offload"),
}
SUMMARY_PRECISION = Message("deepspeed.summary.precision", "{precision}")
SUMMARY_OPTIMIZER = Message("deepspeed.summary.optimizer", "optimizer {optimizer}")
SUMMARY_MICRO_BATCH = Message("deepspeed.summary.micro_batch", "micro-batch {n}")
SUMMARY_GRAD_ACCUM = Message("deepspeed.summary.grad_accum", "gradient accumulation {n}")
SUMMARY_BUCKET = Message("deepspeed.summary.bucket", "reduce_bucket_size {n:,}")


class DeepSpeedConfigError(ValueError):
    """A DeepSpeed config that cannot be used; the message names the file and the key (a
    :class:`~vramdesk.core.messages.Text`, ``args[0]``)."""


_TOP_KEYS = {
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "gradient_clipping",
    "optimizer",
    "scheduler",
    "fp16",
    "bf16",
    "amp",
    "zero_optimization",
    "activation_checkpointing",
    "steps_per_print",
    "wall_clock_breakdown",
    "zero_allow_untested_optimizer",
    "prescale_gradients",
    "gradient_predivide_factor",
    "communication_data_type",
    "flops_profiler",
    "tensorboard",
    "wandb",
    "csv_monitor",
    "comms_logger",
    "dump_state",
    "checkpoint",
    "data_types",
    "memory_breakdown",
    "zero_force_ds_cpu_optimizer",
    "sparse_gradients",
    "aio",
    "elasticity",
    "compression_training",
    "data_efficiency",
    "curriculum_learning",
    "autotuning",
    "pipeline",
    "seq_parallel_communication_data_type",
    "torch_autocast",
    "nebula",
    "monitor_config",
    "train_batch_size_per_gpu",
}
_ZERO_KEYS = {
    "stage",
    "offload_optimizer",
    "offload_param",
    "overlap_comm",
    "contiguous_gradients",
    "reduce_scatter",
    "reduce_bucket_size",
    "allgather_partitions",
    "allgather_bucket_size",
    "sub_group_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
    "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save",
    "round_robin_gradients",
    "zero_hpz_partition_size",
    "zero_quantized_weights",
    "zero_quantized_gradients",
    "mics_shard_size",
    "mics_hierarchical_params_gather",
    "memory_efficient_linear",
    "cpu_offload",
    "cpu_offload_params",
    "cpu_offload_use_pin_memory",
    "elastic_checkpoint",
    "ignore_unused_parameters",
    "legacy_stage1",
    "load_from_fp32_weights",
    "use_multi_rank_bucket_allreduce",
    "module_granularity_threshold",
    "use_all_reduce_for_fetch_params",
    "log_trace_cache_warnings",
    "stage3_module_granularity_threshold",
}
_OPTIMIZERS = {
    "adamw": "adamw",
    "adam": "adamw",
    "fusedadam": "adamw-fused",
    "cpuadam": "adamw",
    "deepspeedcpuadam": "adamw",
    "lion": "lion",
    "sgd": "sgd",
    "adafactor": "adafactor",
}


@dataclass(frozen=True)
class DeepSpeedPlan:
    """Scenario options from the file (long option names with '_'), plus what it said about buffers."""

    options: dict[str, Any]
    buckets: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # (Texts)


def _is_auto(v: object) -> bool:
    return isinstance(v, str) and v.strip().lower() == "auto"


def _int(v: object, where: str) -> int | None:
    if v is None or _is_auto(v):
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or int(v) != v or v < 0:
        raise DeepSpeedConfigError(NOT_WHOLE(key=where, value=v))
    return int(v)


def _enabled(section: object, where: str) -> bool | None:
    """True / False as the section says; None for "auto" (the HF integration decides) or no section."""
    if section is None:
        return None
    if not isinstance(section, Mapping):
        raise DeepSpeedConfigError(NOT_OBJECT(key=where))
    v = section.get("enabled", False)
    if _is_auto(v):
        return None
    if not isinstance(v, bool):
        raise DeepSpeedConfigError(ENABLED_BAD(key=where, value=v))
    return v


def _unmodelled(zero: Mapping[str, Any]) -> list[Text]:
    """Settings that change memory but that the plan does not follow, each said (silence would understate)."""
    notes = []
    hpz = _int(zero.get("zero_hpz_partition_size"), "zero_optimization.zero_hpz_partition_size")
    if hpz and hpz > 1:
        notes.append(HPZ(size=hpz))
    mics = zero.get("mics_shard_size")  # (-1, DeepSpeed's default, is off)
    if isinstance(mics, int) and not isinstance(mics, bool) and mics > 0:
        notes.append(MICS(size=mics))
    for key in ("zero_quantized_weights", "zero_quantized_gradients"):
        if zero.get(key) is True:
            notes.append(QUANTIZED(key=key))
    tuned = [k for k in ("stage3_max_live_parameters", "stage3_prefetch_bucket_size") if k in zero]
    if tuned and not all(_is_auto(zero[k]) for k in tuned):
        notes.append(TUNED_BOTH(key=tuned[0], key2=tuned[1]) if len(tuned) == 2 else TUNED(key=tuned[0]))
    return notes


def parse_deepspeed(data: Mapping[str, Any]) -> DeepSpeedPlan:
    if not isinstance(data, Mapping):
        raise DeepSpeedConfigError(NOT_A_CONFIG())
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise DeepSpeedConfigError(UNKNOWN_KEYS(keys=", ".join(unknown)))
    opts: dict[str, Any] = {"mode": "finetune"}
    notes: list[Text] = []
    zero = data.get("zero_optimization")
    zero = {} if zero is None else zero
    if not isinstance(zero, Mapping):
        raise DeepSpeedConfigError(NOT_OBJECT(key="zero_optimization"))
    bad = sorted(set(zero) - _ZERO_KEYS)
    if bad:
        raise DeepSpeedConfigError(UNKNOWN_ZERO_KEYS(keys=", ".join(bad)))
    stage = _int(zero.get("stage", 0), "zero_optimization.stage")
    if stage is not None:
        if stage > 3:
            raise DeepSpeedConfigError(STAGE_RANGE(key="zero_optimization.stage", stage=stage))
        opts["zero"] = stage
    offload = "none"
    for key, value in (("offload_optimizer", "optimizer"), ("offload_param", "params")):
        section = zero.get(key)
        if section is None:
            continue
        if not isinstance(section, Mapping):
            raise DeepSpeedConfigError(NOT_OBJECT(key=f"zero_optimization.{key}"))
        device = str(section.get("device", "none")).lower()
        if device not in ("none", "cpu", "nvme", "auto"):
            raise DeepSpeedConfigError(DEVICE_BAD(key=f"zero_optimization.{key}.device", value=device))
        if device in ("cpu", "nvme"):
            offload = value if value == "params" or offload == "none" else offload
            if device == "nvme":
                notes.append(NVME(key=key))
    if offload == "params" and stage != 3:
        raise DeepSpeedConfigError(NEEDS_STAGE(key="zero_optimization.offload_param", stage=3))
    opts["offload"] = offload
    buckets = {}
    for key in (
        "reduce_bucket_size",
        "allgather_bucket_size",
        "stage3_prefetch_bucket_size",
        "stage3_max_live_parameters",
    ):
        v = _int(zero.get(key), f"zero_optimization.{key}")
        if v is not None:
            buckets[key] = v
    notes += _unmodelled(zero)
    if "reduce_bucket_size" in buckets:
        opts["zero_bucket"] = buckets["reduce_bucket_size"]
    overlap = zero.get("overlap_comm")
    if isinstance(overlap, bool):
        opts["zero_overlap_comm"] = overlap
    # precision: a section enabled wins; "auto" (HF fills it in from its own --bf16 / --fp16) keeps the plan's;
    # only sections that are there and all explicitly off mean fp32
    half = {name: _enabled(data.get(name), name) for name in ("bf16", "fp16") if data.get(name) is not None}
    if half.get("bf16") and half.get("fp16"):
        raise DeepSpeedConfigError(BOTH_HALF())
    if not half:
        notes.append(NO_HALF())
    if half.get("bf16"):
        opts["precision"] = "amp-bf16"
    elif half.get("fp16"):
        opts["precision"] = "amp-fp16"
    elif half and all(v is False for v in half.values()):
        opts["precision"] = "fp32"
    for key, option in (
        ("train_micro_batch_size_per_gpu", "micro_batch"),
        ("gradient_accumulation_steps", "grad_accum"),
    ):
        v = _int(data.get(key), key)
        if v == 0:
            raise DeepSpeedConfigError(AT_LEAST(key=key, least=1, value=0))
        if v:
            opts[option] = v
    opt = data.get("optimizer")
    if isinstance(opt, Mapping) and isinstance(opt.get("type"), str):
        name = opt["type"].replace("_", "").replace("-", "").lower()
        if name not in _OPTIMIZERS:
            raise DeepSpeedConfigError(UNKNOWN_OPTIMIZER(type=opt["type"], known=", ".join(sorted(_OPTIMIZERS))))
        opts["optimizer"] = _OPTIMIZERS[name]
    ac = data.get("activation_checkpointing")
    if (isinstance(ac, Mapping) and ac.get("partition_activations")) or (
        isinstance(ac, Mapping) and ac.get("cpu_checkpointing")
    ):
        notes.append(CHECKPOINTING())
        opts["grad_checkpointing"] = True
    return DeepSpeedPlan(options=opts, buckets=buckets, notes=tuple(notes))


#: the plan's options by the scenario section they belong to
_WORKLOAD_OPTIONS = ("precision", "micro_batch", "grad_accum", "optimizer", "grad_checkpointing")
_PARALLEL_OPTIONS = ("zero", "offload", "zero_bucket", "zero_overlap_comm")


#: the file's key for each scenario field it sets (to name it when the plan refuses the value)
_FILE_KEYS = {
    "micro_batch": "train_micro_batch_size_per_gpu",
    "grad_accum": "gradient_accumulation_steps",
    "zero_bucket": "zero_optimization.reduce_bucket_size",
    "zero": "zero_optimization.stage",
}


def apply_deepspeed(scenario: Scenario, plan: DeepSpeedPlan) -> Scenario:
    """``scenario`` planned with the file: its ZeRO stage (FSDP off), offload, buckets, precision, micro-batch,
    accumulation, optimizer and checkpointing; the rest (model, GPUs, method, lengths) stays. A DeepSpeed file
    describes training, so an inference scenario becomes a fine-tuning one with the defaults for what the file
    leaves out."""
    data = scenario.model_dump(mode="json")
    work = data["workload"] if data["workload"].get("kind") == "finetune" else {"kind": "finetune"}
    par = dict(data.get("parallelism") or {})
    for key in _WORKLOAD_OPTIONS:
        if key in plan.options:
            work[key] = plan.options[key]
    for key in _PARALLEL_OPTIONS:
        if key in plan.options:
            par[key] = plan.options[key]
    if plan.options.get("zero"):
        par["fsdp"] = False  # the job shards with DeepSpeed, not torch FSDP (the two cannot run together)
    data["workload"], data["parallelism"] = work, par
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        problems = []
        for e in err.errors():
            field_name = str(e["loc"][-1]) if e["loc"] else ""
            where = _FILE_KEYS.get(field_name, field_name)
            msg = _validation_message(e)
            problems.append(FIELD_PROBLEM(key=where, problem=msg) if where else msg)
        raise DeepSpeedConfigError(PLAN_REFUSED(problems=join("; ", *problems))) from err


def _validation_message(e: Any) -> str:
    """pydantic's message of one error without its "Value error, ", with its id where it has one."""
    message = error_message(e)
    return message if isinstance(message, Text) else free(message)


def describe_plan(plan: DeepSpeedPlan) -> str:
    """What the file set, in the words of the form (for a status line)."""
    o = plan.options
    parts = [SUMMARY_ZERO(stage=o["zero"]) if "zero" in o else SUMMARY_NO_ZERO()]
    if o.get("offload", "none") in SUMMARY_OFFLOAD:
        parts.append(SUMMARY_OFFLOAD[o["offload"]]())
    if "precision" in o:
        parts.append(SUMMARY_PRECISION(precision=o["precision"]))
    if "optimizer" in o:
        parts.append(SUMMARY_OPTIMIZER(optimizer=o["optimizer"]))
    if "micro_batch" in o:
        parts.append(SUMMARY_MICRO_BATCH(n=o["micro_batch"]))
    if "grad_accum" in o:
        parts.append(SUMMARY_GRAD_ACCUM(n=o["grad_accum"]))
    if "zero_bucket" in o:
        parts.append(SUMMARY_BUCKET(n=o["zero_bucket"]))
    return join(", ", *parts)


#: keys only a DeepSpeed config has at its top level (a model's config.json or a scenario has none of them)
_SIGNATURE = {
    "zero_optimization",
    "train_micro_batch_size_per_gpu",
    "train_batch_size",
    "zero_allow_untested_optimizer",
}


def looks_like_deepspeed(path: Path) -> bool:
    """Whether ``path`` is a DeepSpeed config rather than a model config or a scenario (for a dropped file)."""
    try:
        if Path(path).stat().st_size > MAX_BYTES:
            return False
        data = jsonsafe.loads(Path(path).read_bytes(), source=str(path))
    except (OSError, jsonsafe.JsonError):
        return False
    return isinstance(data, dict) and bool(_SIGNATURE & set(data)) and "model_type" not in data


def read_deepspeed(path: Path) -> DeepSpeedPlan:
    path = Path(path)
    if not path.is_file():
        raise DeepSpeedConfigError(NO_SUCH_FILE(path=str(path)))
    if path.stat().st_size > MAX_BYTES:
        raise DeepSpeedConfigError(TOO_LARGE(path=str(path)))
    try:
        data = jsonsafe.loads(path.read_bytes(), source=str(path))
    except jsonsafe.JsonError as err:  # NaN, Infinity, deep nesting, non-UTF-8 too: one line, not a traceback
        raise DeepSpeedConfigError(NOT_JSON(path=str(path), problem=free(err.problem))) from err
    try:
        return parse_deepspeed(data)
    except DeepSpeedConfigError as err:
        raise DeepSpeedConfigError(FILE_FAILED(path=str(path), problem=err.args[0])) from err
