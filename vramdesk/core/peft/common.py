"""What every PEFT method other than LoRA shares: the method sets, :class:`MethodParams` / :class:`MethodSaved`,
the refusal every method with default targets makes, and peft's matching of target names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..inventory import Tensor
from ..lora import LINEAR_ROLES
from ..messages import Message

if TYPE_CHECKING:
    from ..facts import ModelFacts


class MethodError(ValueError):
    """A method the model cannot take as planned: ``args[0]`` is the message's Text."""


#: the prompt-learning methods: virtual tokens, no module of the model wrapped
PROMPT_METHODS = ("prompt-tuning", "p-tuning", "prefix-tuning")
#: the methods whose base is frozen (everything but a full fine-tune)
ADAPTER_METHODS = frozenset({"lora", "qlora", "ia3", "ln-tuning", "vera", *PROMPT_METHODS})
#: the methods whose adapters are LoRA's (rank, targets, dropout, bias, DoRA, modules_to_save)
LORA_METHODS = ("lora", "qlora")

#: the methods' names as peft writes them (its PeftType), in messages
METHOD_NAMES = {
    "ia3": "IA3",
    "ln-tuning": "LN_TUNING",
    "vera": "VERA",
    "prompt-tuning": "PROMPT_TUNING",
    "p-tuning": "P_TUNING",
    "prefix-tuning": "PREFIX_TUNING",
}

#: ``{method}``: the method's name (METHOD_NAMES); ``{known}``: the model types it has targets for, joined with ", "
NO_DEFAULT_TARGETS = Message(
    "peft.no_default_targets",
    "{method} has no default target modules for {model} (model type {model_type}); peft knows them for: {known}",
)
NOT_ON_QUANTISED = Message(
    "peft.not_on_quantised",
    "{method} is estimated over a 16-bit or fp32 base, but the weights are {weights}: leave the weights on auto "
    "(or bf16), or train LoRA / QLoRA on this quantised base",
)


def frozen_base(method: str) -> bool:
    """Whether the method trains something over a frozen base (adapters), rather than every weight."""
    return method in ADAPTER_METHODS


@dataclass(frozen=True)
class MethodSaved:
    """What a method's own operations keep for backward, beside the frozen layers' rule."""

    #: per decoder layer: bytes per token kept from the forward to the layer's backward
    per_token: Mapping[int, float] = field(default_factory=dict)
    #: bytes per token of the largest short-lived tensors of one wrapped module's backward (in the recomputed or
    #: first layer's backward, next to that layer's activations)
    backward_per_token: float = 0.0
    #: bytes per token kept outside the decoder layers (a trained final norm's), never recomputed
    outside_per_token: float = 0.0
    #: the activations' explanation clause ("" for none)
    text: str = ""


@dataclass(frozen=True)
class MethodParams:
    """What a method other than LoRA trains, and what its layers save."""

    #: the base weights the method wraps
    adapted: tuple[Tensor, ...]
    #: parameters the optimizer updates, as peft's print_trainable_parameters counts them
    trainable: int
    #: the shapes of the trained tensors (Adafactor factors those with two dimensions): as many per adapted
    #: weight, in ``adapted``'s order (VeRA: two vectors each), or those of a prompt encoder
    shapes: tuple[tuple[int, ...], ...]
    #: what its own operations keep for backward
    saved: MethodSaved
    #: the weights' explanation
    weights_text: str
    #: bytes of one trained parameter where the method fixes it (prompt encoders stay fp32); None: the adapter
    #: dtype's
    param_bytes: int | None = None
    #: the trained tensors are copies of base modules in the base's own dtype (peft casts no adapter dtype for
    #: them: LN tuning's ``_cast_adapter_dtype`` does nothing)
    base_dtype: bool = False
    #: frozen tensors the method adds beside its trained ones (VeRA's shared projections), bytes
    buffer_bytes: int = 0

    @property
    def largest(self) -> int:
        """Elements of the largest trained tensor (per-tensor optimizer temporaries)."""
        return max((numel(s) for s in self.shapes), default=0)

    def params_from_first_layer(self) -> int:
        """Trained parameters whose gradients the backward makes at the first decoder layer or after it: that
        layer's (one tensor per wrapped weight, in ``shapes``'s order), or all of a prompt encoder's, which feeds
        the first layer."""
        if not self.adapted:
            return self.trainable
        per, rest = divmod(len(self.shapes), len(self.adapted))
        assert per and not rest, "shapes: the same number per adapted weight"
        return sum(numel(s) for i, s in enumerate(self.shapes) if self.adapted[i // per].layer == 0)


def scaling_backward_bytes(adapter_bytes: int, output_bytes: int) -> int:
    """Bytes per element alive in the backward of a trained vector scaling a frozen tensor (IA3, VeRA's lambda_b):
    the incoming gradient cast to the vector's dtype (when the two differ), its product with the kept tensor (summed
    into the vector's gradient) and its product with the vector (the rest of the path's gradient), together
    (traced, tiny Llama and Qwen3, fp32 vectors on bf16: 12 B)."""
    return 2 * adapter_bytes + (adapter_bytes if adapter_bytes != output_bytes else 0)


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def module_name(t: Tensor) -> str:
    """The module a tensor belongs to (its name less ``.weight`` / ``.bias``)."""
    return t.name.removesuffix(".weight").removesuffix(".bias")


def peft_matches(t: Tensor, targets: Sequence[str]) -> bool:
    """peft's ``check_target_module_exists`` for a list: the module's name is a target or ends with "." + it."""
    name = module_name(t)
    return any(name == key or name.endswith("." + key) for key in targets)


def text_linears(facts: ModelFacts) -> list[Tensor]:
    """The text model's linear weights as peft's layers wrap them: nn.Linear modules, not experts stored as one
    (E, out, in) parameter (IA3 has no ParamWrapper: Mixtral's w2 is left alone, as peft leaves it)."""
    return [
        t
        for t in facts.tensors
        if t.part == "text" and t.role in LINEAR_ROLES and len(t.shape) == 2 and t.name.endswith(".weight")
    ]


def no_default_targets(method: str, facts: ModelFacts, known: Mapping[str, object]) -> MethodError:
    """The refusal of a model type the method has no default targets for (or whose targets the model lacks)."""
    return MethodError(
        NO_DEFAULT_TARGETS(
            method=METHOD_NAMES[method],
            model=facts.model_id,
            model_type=facts.arch.model_type,
            known=", ".join(sorted(known)),
        )
    )
