"""What a fine-tuning method trains and how the model is stored for it: the precision's bytes per parameter, the
trained parameters (every one in a full fine-tune; adapters, trained copies and biases with LoRA / QLoRA), the
frozen base's format, and what the trained layers keep of their inputs and weights for backward.

:func:`what_trains` answers all of it as one :class:`Trained` record, read by the phases
(:mod:`vramdesk.core.training`) and the activations (:mod:`vramdesk.core.training_activations`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .inventory import Tensor
from .lora import LINEAR_ROLES, lora_parameters, lora_targets
from .messages import Message, free, join, text
from .optimizers import optimizer_bytes
from .optimizers.blockwise import BADAM_MASTER, BlockPlan, block_plan
from .parallel import with_note
from .peft.common import LORA_METHODS, MethodParams, MethodSaved, frozen_base
from .peft.methods import method_params
from .scenario import FinetuneWorkload, Parallelism
from .trainers import profile
from .weight_format import WeightFormat, parse_weight_format

if TYPE_CHECKING:
    from .facts import ModelFacts


PURE = Message("training.precision.pure", "pure {dtype}: parameters, gradients and optimizer states in {dtype}")
FP32 = text("training.precision.fp32", "fp32 everywhere")
#: ``{name}``: the precision's option value (amp-bf16, amp-fp16)
AMP = Message(
    "training.precision.amp", "{name}: fp32 parameters (master weights), fp32 gradients and states, autocast to 16 bits"
)
FULL_WEIGHTS = Message("training.weights.full", "{params:,} parameters x {bytes} B ({precision})")
#: ``{format}``: the frozen base's weight-format label (weight_format's, as it gives it)
FROZEN_BASE = Message(
    "training.weights.frozen_base",
    "frozen base {params:,} params in {format} + {trainable:,} LoRA parameters (rank {rank}, {matrices} target "
    "matrices) in {adapter}",
)
#: a method other than LoRA: ``{what}`` is the method's own account of what it trains
FROZEN_BASE_METHOD = Message(
    "training.weights.frozen_base.method", "frozen base {params:,} params in {format} + {what} in {adapter}"
)
ADAPTER_DEEPSPEED = text("training.adapter_dtype.deepspeed", "16-bit (DeepSpeed) with fp32 master weights")
ADAPTER_FP32 = text("training.adapter_dtype.fp32", "fp32")
ADAPTER_BASE_FP32 = text("training.adapter_dtype.base_fp32", "the base dtype (fp32)")
ADAPTER_BASE_16BIT = text("training.adapter_dtype.base_16bit", "the base dtype (16-bit)")
KBIT_CAST = Message(
    "training.weights.kbit_cast", "{params:,} unquantised parameters cast to fp32 by prepare_model_for_kbit_training"
)
TRAINED_COPIES = Message("training.weights.trained_copies", "trained copies of {copies}")
#: one modules_to_save copy: ``{name}`` is the module's name in the checkpoint
TRAINED_COPY = Message("training.weights.trained_copy", "{name} ({params:,} parameters)")
#: the trainable copy of a tied lm_head (it has no tensor of its own to name)
TIED_HEAD = text("training.weights.tied_head", "lm_head (tied)")
BIASES = Message("training.weights.biases", "{params:,} bias parameters trained (lora_bias={lora_bias})")


@dataclass(frozen=True)
class Precision:
    weights: int  # bytes per trainable parameter stored
    grads: int
    state: int  # bytes per optimizer state element
    activ_scale: float  # activations relative to the bf16 rule
    amp: bool
    label: str


def precision(name: str) -> Precision:
    if name in ("bf16", "fp16"):
        return Precision(2, 2, 2, 1.0, False, PURE(dtype=name))
    if name == "fp32":
        return Precision(4, 4, 4, 2.0, False, FP32)
    return Precision(4, 4, 4, 1.15, True, AMP(name=name))


@dataclass(frozen=True)
class TrainedParams:
    """Which parameters train, and the shapes the optimizer sees."""

    #: parameters the optimizer updates (adapters, DoRA magnitudes; every parameter in a full fine-tune)
    trainable: int
    #: the linear weights the adapters wrap (none in a full fine-tune)
    adapted_weights: tuple[Tensor, ...]
    #: modules_to_save copies: (name, parameters)
    saved_copies: tuple[tuple[str, int], ...]
    #: parameters of those copies
    saved_copy_params: int
    #: trained bias parameters (lora_bias)
    bias_params: int
    #: shapes of the trained matrices (Adafactor factors them)
    matrix_shapes: tuple[tuple[int, ...], ...]
    #: elements of the largest trained tensor (per-parameter optimizer temporaries)
    largest_tensor_elements: int
    #: trained linear parameters whose inputs a full fine-tune keeps (0 with adapters)
    linear_params: int


@dataclass(frozen=True)
class TrainedStorage:
    """Bytes of the weights, gradients and optimizer states of what trains."""

    #: the frozen base (or the whole model) as stored
    base_weight_bytes: int
    #: adapters and trained copies of modules_to_save
    adapter_weight_bytes: int
    #: gradient bytes of everything trained
    gradient_bytes: int
    #: bytes per optimizer state element
    state_element_bytes: int
    #: bytes per adapter parameter (0 in a full fine-tune)
    adapter_param_bytes: int
    #: bytes per other trained parameter: the modules_to_save copies and the biases
    other_param_bytes: int
    #: optimizer states of those copies and biases
    other_state_bytes: int
    #: their optimizer step temporaries
    other_step_temp_bytes: int
    #: what the weights are, for the explanation
    weights_explain: str


@dataclass(frozen=True)
class FrozenBase:
    """How the frozen base is stored for adapters ("float" in a full fine-tune, which has none)."""

    #: the frozen base format's kind ("float" unless quantised)
    kind: str = "float"
    #: a quantised frozen base is gathered (FSDP / ZeRO-3) as stored; None for a float one
    gather_format: WeightFormat | None = None
    #: LoRA under AMP on an fp32 base
    fp32_under_amp: bool = False
    #: elements of the largest GPTQ matrix (0 without a GPTQ base)
    gptq_largest_matrix: int = 0
    #: its bits
    gptq_bits: int = 0


@dataclass(frozen=True)
class BackwardKeeps:
    """What the trained layers keep of their inputs and weights for backward, besides the general rule."""

    #: bytes per element of the residual stream (the embedding output dtype)
    residual_bytes: int
    #: adapters keep fp32 copies of their inputs
    fp32_adapter_inputs: bool
    #: LoRA on a frozen 16-bit base: bytes per element of each adapter's saved input (0: the general rule)
    adapter_input_bytes: int
    #: per layer, bytes of 16-bit copies of frozen weights its backward keeps
    frozen_weight_bytes: Mapping[int, int]
    #: a method other than LoRA: what its own operations keep
    method_saved: MethodSaved = field(default_factory=MethodSaved)


@dataclass(frozen=True)
class Trained:
    """What a fine-tuning method trains and how the model is stored for it (full fine-tuning or adapters)."""

    params: TrainedParams
    storage: TrainedStorage
    base: FrozenBase
    backward: BackwardKeeps
    #: what a method other than LoRA trains (None for LoRA / QLoRA and a full fine-tune)
    method: MethodParams | None = None
    #: a block-wise full fine-tune (LISA, BAdam): what trains in one interval (None: everything)
    block: BlockPlan | None = None


def what_trains(
    facts: ModelFacts,
    work: FinetuneWorkload,
    par: Parallelism,
    base_weights: str | WeightFormat,
    deepspeed: bool,
    tensors: tuple[list[Tensor], list[Tensor]],
) -> Trained:
    """The trained parameters, their bytes and the frozen base's storage for full fine-tuning or adapters.
    ``tensors``: the text model's tensors (the vision tower's too when it trains in full) and the vision tower's.
    The plan has passed :func:`~vramdesk.core.training_plan.check_plan` (the LoRA targets, the base's name)."""
    prec = precision(work.precision)
    # DeepSpeed casts the module to 16 bits; FSDP's mixed precision gathers 16-bit parameters for the forward:
    # either way the embedding's output, and so the residual stream, is 16-bit (autocast over fp32 weights only
    # without them). Checked on the CPU with FSDP2 (benchmarks/allocator/fsdp_mixed_precision.py): AMP under
    # FSDP saved what pure bf16 saved within 2 %, AMP without FSDP 26 % more
    residual_b = 4 if work.precision == "fp32" or (prec.amp and not (deepspeed or par.fsdp)) else 2
    if frozen_base(work.method):
        return _adapters_train(facts, work, par, base_weights, deepspeed, tensors, residual_b)
    text_tensors = tensors[0]
    all_params = sum(t.numel for t in text_tensors)
    # block-wise training: the gradients and the step of the active layers only; the weights stay whole
    block = None if work.block_training == "off" else block_plan(work.block_training, work.active_layers, text_tensors)
    trained = list(block.active) if block else text_tensors
    trained_params = sum(t.numel for t in trained)
    weights_explain = FULL_WEIGHTS(params=all_params, bytes=prec.weights, precision=prec.label)
    if block and block.master_bytes:
        weights_explain = join(" + ", weights_explain, BADAM_MASTER(params=block.active_params))
    return Trained(
        params=TrainedParams(
            trainable=trained_params,
            adapted_weights=(),
            saved_copies=(),
            saved_copy_params=0,
            bias_params=0,
            matrix_shapes=tuple(t.shape for t in trained if len(t.shape) >= 2),
            largest_tensor_elements=max(t.numel for t in trained),
            linear_params=sum(t.numel for t in text_tensors if t.role in LINEAR_ROLES and len(t.shape) >= 2),
        ),
        storage=TrainedStorage(
            base_weight_bytes=all_params * prec.weights,
            adapter_weight_bytes=block.master_bytes if block else 0,
            gradient_bytes=trained_params * prec.grads,
            state_element_bytes=prec.state,
            adapter_param_bytes=0,
            other_param_bytes=0,
            other_state_bytes=0,
            other_step_temp_bytes=0,
            weights_explain=weights_explain,
        ),
        base=FrozenBase(),
        backward=BackwardKeeps(
            residual_bytes=residual_b, fp32_adapter_inputs=False, adapter_input_bytes=0, frozen_weight_bytes={}
        ),
        block=block,
    )


@dataclass(frozen=True)
class _StoredBase:
    """The frozen base of adapters as training loads it."""

    fmt: WeightFormat
    total_bytes: int
    #: bytes of one unquantised base parameter (embeddings, norms, lm_head, biases) as training sees it
    float_bytes: int
    #: prepare_model_for_kbit_training cast the unquantised parameters (and so the residual stream) to fp32
    kbit_cast: bool
    #: what that cast adds (a clause of the weights' explanation), else ""
    kbit_note: str


def _stored_base(
    facts: ModelFacts,
    work: FinetuneWorkload,
    par: Parallelism,
    base_weights: str | WeightFormat,
    deepspeed: bool,
    amp_fp32: bool,
) -> _StoredBase:
    base_fmt = "nf4-dq" if work.method == "qlora" else ("fp32" if work.precision == "fp32" or amp_fp32 else "bf16")
    if isinstance(base_weights, WeightFormat):
        fmt = base_weights
    else:
        # (check_plan has parsed a named base)
        fmt = parse_weight_format(base_fmt if base_weights == "auto" else base_weights, base_dtype="bf16")
    base = facts.weights(fmt, frozenset({"text"}))
    base_bytes = base.total
    quantised = fmt.kind not in ("float",)
    base_float = 4 if work.precision == "fp32" or (amp_fp32 and not quantised) else 2
    if quantised and fmt.kind != "gptq" and not deepspeed and not par.fsdp:
        # peft's prepare_model_for_kbit_training (the usual QLoRA recipe) casts every parameter that is not
        # quantised (embeddings, lm_head, norms, biases) from 16 to 32 bits; it skips GPTQ models, and TRL
        # never calls it for sharded QLoRA (FSDP / ZeRO-3: the 4-bit weights must keep one storage dtype)
        unquantised = base.params - base.quantized_params
        base_bytes += 2 * unquantised
        return _StoredBase(fmt, base_bytes, 4, True, KBIT_CAST(params=unquantised))
    return _StoredBase(fmt, base_bytes, base_float, False, "")


def _frozen_weights_kept(
    fmt: WeightFormat, text_tensors: list[Tensor], amp_fp32: bool, par: Parallelism
) -> tuple[dict[int, int], int, int]:
    """(per layer, bytes of 16-bit copies of frozen weights its backward keeps; the largest GPTQ matrix's elements
    and its bits, 0 and 0 without a GPTQ base)."""
    frozen_kept: dict[int, int] = {}
    gptq_largest = gptq_bits = 0
    if fmt.kind == "gptq":
        # auto_gptq's QuantLinear (the torch path peft trains through: exllama off, and its CUDA kernel only
        # below 128 rows) unpacks the 4-bit weight to int32, then int8, scales it to a 16-bit matrix and
        # multiplies; autograd keeps that matrix, not the input, for the input's gradient. Checked with
        # auto_gptq 0.7.1's qlinear_cuda_old on the CPU: the saved tensor is the (in, out) fp16 weight, and the
        # unpacking peaks at about 5 B per weight element
        gptq_bits = fmt.bits or 4
        for t in text_tensors:
            if t.layer is not None and fmt.is_quantized(t.name, t.role, shape=t.shape):
                frozen_kept[t.layer] = frozen_kept.get(t.layer, 0) + 2 * t.numel
                gptq_largest = max(gptq_largest, t.shape[-2] * t.shape[-1])
    if amp_fp32 and fmt.kind == "float" and not par.fsdp:
        # autocast casts each frozen fp32 weight to 16 bits for its matmul (not cached: it needs no grad) and
        # autograd keeps that copy, not the input, for the input's gradient; peft leaves the adapters' inputs
        # in the compute dtype under autocast (traced: Qwen2.5-1.5B LoRA, AMP)
        for t in text_tensors:
            if t.layer is not None and t.role in LINEAR_ROLES and len(t.shape) >= 2:
                frozen_kept[t.layer] = frozen_kept.get(t.layer, 0) + 2 * t.numel
    return frozen_kept, gptq_largest, gptq_bits


def _adapter_inputs(
    work: FinetuneWorkload, par: Parallelism, fmt: WeightFormat, amp_fp32: bool, a_b: int
) -> tuple[bool, int]:
    """(whether the adapters keep fp32 copies of their inputs; with LoRA on a frozen 16-bit base, the bytes per
    element of each adapter's saved input, else 0)."""
    quantised = fmt.kind not in ("float",)
    lora_fp32_inputs = a_b == 4 and work.precision != "fp32"
    if amp_fp32 and not quantised and not par.fsdp:
        # (autocast: the adapters' inputs stay in the compute dtype, see _frozen_weights_kept)
        lora_fp32_inputs = False
    if amp_fp32 and par.fsdp:
        # FSDP's mixed precision (what accelerate sets for AMP) casts every unit, the adapters' too, to 16 bits
        # for the forward: the adapters see their inputs as they are
        lora_fp32_inputs = False
    # (a trainer that wraps with use_orig_params=False keeps frozen weights in flat parameters without grad)
    fsdp1 = par.fsdp and par.fsdp_version == 1 and not profile(work.trainer).fsdp_frozen_flat_params
    frozen_rule = work.precision in ("bf16", "fp16") or (amp_fp32 and not quantised)
    if (not quantised or fmt.kind == "gptq") and frozen_rule and not fsdp1:
        # (under FSDP1 with use_orig_params, as accelerate wraps PEFT models, a frozen weight is a view of a
        # flat parameter that requires grad, so frozen linears keep their inputs as in a full fine-tune: the
        # general rule applies. Checked on CPU with two gloo ranks and torch 2.13: +78 % saved activations
        # in a LoRA block; FSDP2's fully_shard keeps the frozen weights frozen and matches plain LoRA byte
        # for byte, so it takes this rule)
        return lora_fp32_inputs, 4 if lora_fp32_inputs else 2
    return lora_fp32_inputs, 0


def _adapters_train(
    facts: ModelFacts,
    work: FinetuneWorkload,
    par: Parallelism,
    base_weights: str | WeightFormat,
    deepspeed: bool,
    tensors: tuple[list[Tensor], list[Tensor]],
    residual_b: int,
) -> Trained:
    """Adapters (LoRA / QLoRA, or another peft method), trained copies and biases over a frozen base."""
    text_tensors, vision_tensors = tensors
    # AMP keeps the parameters in fp32 and lets autocast make 16-bit copies (DeepSpeed casts the module instead)
    amp_fp32 = precision(work.precision).amp and not deepspeed
    stored = _stored_base(facts, work, par, base_weights, deepspeed, amp_fp32)
    fmt = stored.fmt
    quantised = fmt.kind not in ("float",)
    # adapters: fp32 (peft >= 0.12 autocast_adapter_dtype, and always on a quantised base whose weight is not
    # a float tensor), else the base's dtype; DeepSpeed makes them 16-bit with fp32 master copies
    if deepspeed:
        a_b, state_b, adapter_label = 2, 4, ADAPTER_DEEPSPEED
    elif work.adapter_dtype == "fp32" or quantised:
        a_b, state_b, adapter_label = 4, 4, ADAPTER_FP32
    else:
        a_b = state_b = stored.float_bytes
        adapter_label = ADAPTER_BASE_FP32 if a_b == 4 else ADAPTER_BASE_16BIT
    frozen_kept, gptq_largest, gptq_bits = _frozen_weights_kept(fmt, text_tensors, amp_fp32, par)
    lora_fp32_inputs, adapter_copy_b = _adapter_inputs(work, par, fmt, amp_fp32, a_b)
    all_params = sum(t.numel for t in text_tensors)
    method: MethodParams | None = None
    if work.method in LORA_METHODS:
        chosen, trainable, matrices, largest = _lora_adapters(facts, work, vision_tensors)
        what = FROZEN_BASE(
            params=all_params,
            format=free(fmt.label),
            trainable=trainable,
            rank=work.lora_rank,
            matrices=len(chosen),
            adapter=adapter_label,
        )
    else:
        # (the frozen linears' outputs are in the compute dtype: 16-bit, or fp32 in an fp32 run)
        method = method_params(facts, work, a_b, 4 if work.precision == "fp32" else 2, residual_b)
        if method.param_bytes is not None and not deepspeed:
            a_b = state_b = method.param_bytes
            adapter_label = ADAPTER_FP32
        elif method.base_dtype and not deepspeed:
            a_b = state_b = stored.float_bytes
            adapter_label = ADAPTER_BASE_FP32 if a_b == 4 else ADAPTER_BASE_16BIT
        chosen, trainable, largest = list(method.adapted), method.trainable, method.largest
        # (Adafactor factors the tensors of two dimensions; the vectors keep a full second moment)
        matrices = [shape for shape in method.shapes if len(shape) >= 2]
        # (its own operations' saved tensors replace LoRA's input copies: BackwardKeeps.method_saved)
        lora_fp32_inputs = False
        what = FROZEN_BASE_METHOD(
            params=all_params, format=free(fmt.label), what=method.weights_text, adapter=adapter_label
        )
    saved, bias_params = _saved_modules(facts, work, chosen)
    saved_params = sum(n for _, n in saved)
    e_b = 2 if deepspeed else stored.float_bytes
    w_explain = with_note(
        what,
        stored.kbit_note,
        TRAINED_COPIES(copies=join(", ", *(TRAINED_COPY(name=name, params=n) for name, n in saved))) if saved else "",
        BIASES(params=bias_params, lora_bias=work.lora_bias) if bias_params else "",
    )
    extra_states = extra_temp = 0
    if saved_params + bias_params and not deepspeed:
        extra_states, extra_temp, _, _ = optimizer_bytes(
            work.optimizer,
            saved_params + bias_params,
            e_b,
            max((n for _, n in saved), default=bias_params),
            [],
        )
    return Trained(
        params=TrainedParams(
            trainable=trainable,
            adapted_weights=tuple(chosen),
            saved_copies=tuple(saved),
            saved_copy_params=saved_params,
            bias_params=bias_params,
            matrix_shapes=tuple(matrices),
            largest_tensor_elements=largest,
            linear_params=0,
        ),
        storage=TrainedStorage(
            base_weight_bytes=stored.total_bytes,
            # (+ the trainable copies of modules_to_save, and the frozen tensors a method adds)
            adapter_weight_bytes=trainable * a_b + saved_params * e_b + (method.buffer_bytes if method else 0),
            gradient_bytes=trainable * a_b + (saved_params + bias_params) * e_b,
            state_element_bytes=state_b,
            adapter_param_bytes=a_b,
            other_param_bytes=e_b,
            other_state_bytes=extra_states,
            other_step_temp_bytes=extra_temp,
            weights_explain=w_explain,
        ),
        base=FrozenBase(
            kind=fmt.kind,
            gather_format=fmt if quantised else None,
            fp32_under_amp=amp_fp32,
            gptq_largest_matrix=gptq_largest,
            gptq_bits=gptq_bits,
        ),
        backward=BackwardKeeps(
            # the fp32 embedding of prepare_model_for_kbit_training makes the residual stream fp32
            residual_bytes=4 if stored.kbit_cast else residual_b,
            fp32_adapter_inputs=lora_fp32_inputs,
            adapter_input_bytes=adapter_copy_b,
            frozen_weight_bytes=frozen_kept,
            method_saved=method.saved if method else MethodSaved(),
        ),
        method=method,
    )


def _lora_adapters(
    facts: ModelFacts, work: FinetuneWorkload, vision_tensors: list[Tensor]
) -> tuple[list[Tensor], int, list[tuple[int, ...]], int]:
    """LoRA's adapted weights, its trainable parameters (DoRA's magnitudes too), the trained matrices' shapes and
    the largest one's elements."""
    chosen = lora_targets(facts, work.lora_targets)
    if work.vision_tower == "trained":
        # peft's target names reach the vision tower's linear layers too; all-linear adapts all of them
        chosen = chosen + [t for t in vision_tensors if t.role == "vision" and len(t.shape) == 2]
    trainable = lora_parameters(chosen, work.lora_rank)
    if work.dora:
        # DoRA adds one trainable magnitude per output feature of every adapted matrix
        trainable += sum((t.shape[0] if len(t.shape) == 3 else 1) * t.shape[-2] for t in chosen)
    matrices: list[tuple[int, ...]] = []
    for t in chosen:
        matrices += [(work.lora_rank, t.shape[-1]), (t.shape[-2], work.lora_rank)]
    return chosen, trainable, matrices, max((work.lora_rank * t.shape[-1] for t in chosen), default=0)


def _saved_modules(
    facts: ModelFacts, work: FinetuneWorkload, chosen: list[Tensor]
) -> tuple[list[tuple[str, int]], int]:
    """(modules peft trains in full as copies: (name, parameters)), trainable bias parameters)."""
    text = [t for t in facts.tensors if t.part == "text"]
    vocab = facts.arch.vocab
    embed = [t for t in text if t.role == "embedding" and t.shape and t.shape[0] == vocab]
    saved: list[tuple[str, int]] = []
    for kind in work.modules_to_save:
        if kind == "embed":
            saved += [(t.name, t.numel) for t in embed]
        else:
            head = [t for t in text if t.role == "lm_head"]
            # a tied lm_head shares the embedding matrix; modules_to_save copies it into its own trainable matrix
            saved += [(t.name, t.numel) for t in head] or [(TIED_HEAD, t.numel) for t in embed[:1]]
    biases = [t for t in text if t.role == "bias"]
    if work.lora_bias == "lora_only":
        adapted = {t.name.removesuffix(".weight") for t in chosen}
        biases = [t for t in biases if t.name.removesuffix(".bias") in adapted]
    bias_params = sum(t.numel for t in biases) if work.lora_bias != "none" else 0
    return saved, bias_params
