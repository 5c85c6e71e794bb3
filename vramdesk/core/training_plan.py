"""Whether a fine-tuning plan can run at all: :func:`check_plan` refuses an impossible one before its memory is
worked out, with a message that names both sides and what to change.

The scenario's own validators (``core/scenario.py``) refuse what its fields decide on their own when it is built
(``modules_to_save`` names, ``mean_seq_len`` above ``seq_len``, adapter options on a full fine-tune, tp x pp above
the GPUs); the rules here need the model, or the method, its frozen base and the parallelism together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .architecture import AttentionKind
from .dtype_names import FormatError
from .lora import LoraTargetError, check_targets
from .messages import Message, error_text, free
from .peft.common import ADAPTER_METHODS, LORA_METHODS, METHOD_NAMES, NOT_ON_QUANTISED, MethodError
from .peft.methods import check_method
from .scenario import FinetuneWorkload, Parallelism
from .trainers import trainer_problem
from .weight_format import WeightFormat, parse_weight_format

if TYPE_CHECKING:
    from .facts import ModelFacts


#: weight-format kinds peft trains adapters on as stored (its GPTQ, AWQ and bitsandbytes LoRA layers); other
#: quantised checkpoints (FP8, MXFP4, ...) load dequantised for training
TRAINABLE_BASES = frozenset({"gptq", "awq", "bnb4", "int8"})


class TrainingError(ValueError):
    """Options that cannot go together, named on both sides: ``args[0]`` is the message's
    :class:`~vramdesk.core.messages.Text` (its id and values): one of the refusals below, or the LoRA target's or
    the weight format's own message passed on (a plain string where that layer has no id for it yet)."""


QLORA_UNQUANTISED = Message(
    "training.qlora_unquantised",
    "QLoRA trains adapters on a quantised base, but the weights are {weights}: that is LoRA (--method lora), or "
    "keep QLoRA with a 4-bit base (--weights nf4, or leave the weights on auto)",
)
FULL_QUANTISED = Message(
    "training.full_quantised",
    "a full fine-tune trains every weight in 16 or 32 bits, but the weights are {weights}: fine-tune adapters on "
    "this base (LoRA), or plan the full fine-tune of the dequantised model with weights bf16",
)
QLORA_FP32 = Message(
    "training.qlora_fp32",
    "QLoRA keeps the base in 4 bits and computes in 16 bits: --precision fp32 does not apply",
)
NO_VISION_TOWER = Message("training.no_vision_tower", "{model} has no vision tower to train (vision_tower=trained)")
UNKNOWN_METHOD = Message("training.unknown_method", "unknown method {method}")
#: ``{options}``: the options set, joined with ", "
LORA_OPTIONS = Message(
    "training.lora_options_elsewhere",
    "--method {method} does not take {options}: those are LoRA's options (a trained vision tower: LoRA or a full "
    "fine-tune)",
)
TP_KV_HEADS = Message("training.tp_kv_heads", "tensor parallel {tp} does not divide the {kv_heads} KV heads of {model}")
FSDP_AND_ZERO = Message(
    "training.fsdp_and_zero",
    "FSDP and DeepSpeed ZeRO-{zero} both shard the model and cannot run together; choose one (--fsdp or --zero)",
)
OFFLOAD_OPTIMIZER = Message(
    "training.offload_optimizer",
    "CPU offload of the optimizer is a DeepSpeed ZeRO (or FSDP) feature: add ZeRO-2 (--zero 2; one GPU is enough) "
    "or FSDP (--fsdp)",
)
OFFLOAD_PARAMS = Message(
    "training.offload_params",
    "CPU offload of the parameters needs DeepSpeed ZeRO-3 (offload_param) or FSDP: use --zero 3 or --fsdp",
)
OFFLOAD_PARAMS_NOT_ZERO = Message(
    "training.offload_params.not_zero",
    "CPU offload of the parameters needs DeepSpeed ZeRO-3 (offload_param) or FSDP: use --zero 3 or --fsdp, not "
    "ZeRO-{zero}",
)
ZERO_WITH_PP = Message(
    "training.zero_with_pp",
    "ZeRO-{zero} shards gradients across data-parallel ranks, which DeepSpeed does not combine with pipeline "
    "parallel (--pp); use ZeRO-1",
)


def check_plan(
    facts: ModelFacts, work: FinetuneWorkload, par: Parallelism, base: str | WeightFormat = "auto", gpus: int = 1
) -> None:
    """Refuse a fine-tuning plan that cannot run, with :class:`TrainingError` (or the weight format's own
    :class:`~vramdesk.core.dtype_names.FormatError` for a base it cannot store); return None when it can.

    ``base``: the frozen base's storage for LoRA / QLoRA, as :func:`~vramdesk.core.training.training_phases` takes
    it ("auto", a weight-format name, or the checkpoint's own quantised format). The rules run in the order the
    estimate has always applied them, so that a plan breaking two of them is told about the same one: the base
    against the method, then the method against the model, then the parallelism, then the trainer (``gpus``: the
    GPUs of the whole run)."""
    _check_base(facts, work, base)
    _check_method(facts, work, base)
    _check_parallelism(facts, par)
    quantised = work.method == "qlora" or _quantised(base)
    problem = trainer_problem(
        work.trainer,
        work.method,
        fsdp=par.fsdp,
        fsdp_version=par.fsdp_version,
        zero=par.zero,
        gpus=gpus,
        quantised=quantised,
    )
    if problem is not None:
        raise TrainingError(problem)


def _quantised(base: str | WeightFormat) -> bool:
    return base.kind != "float" if isinstance(base, WeightFormat) else base not in ("auto", "bf16", "fp16", "fp32")


def _label(facts: ModelFacts, base: str | WeightFormat) -> str:
    """The base's name in a message: a weight name resolved as the estimate resolves it, against the checkpoint's
    16-bit dtype (``estimate.resolve_format``)."""
    if isinstance(base, WeightFormat):
        return base.label
    dtype = facts.arch.dtype
    try:
        return parse_weight_format(base, base_dtype=dtype if dtype in ("bf16", "fp16") else "bf16").label
    except FormatError as err:
        raise TrainingError(error_text(err)) from err


def _check_base(facts: ModelFacts, work: FinetuneWorkload, base: str | WeightFormat) -> None:
    """The method against the storage of its base."""
    quantised = _quantised(base)
    if work.method == "qlora" and not quantised and base != "auto":
        raise TrainingError(QLORA_UNQUANTISED(weights=str(base)))
    if work.method == "full" and quantised:
        raise TrainingError(FULL_QUANTISED(weights=free(_label(facts, base))))
    if work.method == "qlora" and work.precision in ("fp32",):
        raise TrainingError(QLORA_FP32())
    if work.method in METHOD_NAMES and quantised:
        # (peft has quantised layers for some of its methods; the estimate models them over a float base)
        raise TrainingError(NOT_ON_QUANTISED(method=METHOD_NAMES[work.method], weights=free(_label(facts, base))))


def _check_method(facts: ModelFacts, work: FinetuneWorkload, base: str | WeightFormat) -> None:
    """What the method trains against what the model has: a vision tower, the LoRA targets, a base that its format
    can store."""
    if work.vision_tower == "trained" and not any(t.part == "vision" for t in facts.tensors):
        raise TrainingError(NO_VISION_TOWER(model=facts.model_id))
    if work.method not in ADAPTER_METHODS | {"full"}:
        # (a Literal: only a workload built without validation gets here)
        raise TrainingError(UNKNOWN_METHOD(method=work.method))
    if work.method == "full":
        return
    try:
        if work.method in LORA_METHODS:
            check_targets(facts, work.lora_targets)
        else:
            _no_lora_options(work)
            check_method(facts, work)
    except (LoraTargetError, MethodError) as err:
        raise TrainingError(error_text(err)) from err
    if base == "auto":
        # (the 16-bit, fp32 or NF4 base the method picks stores every tensor)
        return
    try:
        fmt = base if isinstance(base, WeightFormat) else parse_weight_format(base, base_dtype="bf16")
    except FormatError as err:
        raise TrainingError(error_text(err)) from err
    # a format that cannot store one of the text model's tensors (a GGUF type whose blocks do not divide a row,
    # an AWQ GEMV group size without a layout) says so when it prices them: the frozen base's bytes, which
    # what_trains reads back from the same cache on the model's facts
    facts.weights(fmt, frozenset({"text"}))


def _no_lora_options(work: FinetuneWorkload) -> None:
    """Refuse LoRA's own options on another method (LoRA's targets and rank are simply not read)."""
    given = [
        name
        for name, on in (
            ("lora_dropout", work.lora_dropout > 0),
            ("lora_bias", work.lora_bias != "none"),
            ("dora", work.dora),
            ("vision_tower=trained", work.vision_tower == "trained"),
        )
        if on
    ]
    if given:
        raise MethodError(LORA_OPTIONS(options=", ".join(given), method=work.method))


def _check_parallelism(facts: ModelFacts, par: Parallelism) -> None:
    """Tensor parallel against the model; the sharding, offload and pipeline options against each other."""
    arch = facts.arch
    tp, pp = par.tp, par.pp
    if tp > 1 and arch.layers[0].n_kv_heads % tp and arch.layers[0].attention != AttentionKind.MLA:
        raise TrainingError(TP_KV_HEADS(tp=tp, kv_heads=arch.layers[0].n_kv_heads, model=facts.model_id))
    if par.fsdp and par.zero:
        # (refused here, not by the scenario: a plan saved with both still opens, and says what to change)
        raise TrainingError(FSDP_AND_ZERO(zero=par.zero))
    if par.offload == "optimizer" and not (par.zero or par.fsdp):
        # DeepSpeed's offload_optimizer (ZeRO-Offload, one GPU is enough) or FSDP's CPU offload move the states;
        # plain PyTorch has nothing that does
        raise TrainingError(OFFLOAD_OPTIMIZER())
    if par.offload == "params" and not (par.zero == 3 or par.fsdp):
        raise TrainingError(OFFLOAD_PARAMS_NOT_ZERO(zero=par.zero) if par.zero else OFFLOAD_PARAMS())
    if pp > 1 and (par.zero >= 2):
        raise TrainingError(ZERO_WITH_PP(zero=par.zero))
