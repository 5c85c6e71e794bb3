"""LoRA adapters: which linear weights a target list selects, and how many parameters the adapters add.

Targets are short role names (``q``, ``k``, ``v``, ``o``, ``gate``, ``up``, ``down``, ``all-linear``) or module names
as peft matches them (the last part of the module's name); experts stored as one fused parameter count as
transformers 5 / peft 0.21 adapt them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .inventory import Tensor
from .messages import Message

if TYPE_CHECKING:
    from .facts import ModelFacts


class LoraTargetError(ValueError):
    """A LoRA target the model does not have: ``args[0]`` is the message's :class:`~vramdesk.core.messages.Text`."""


#: ``{targets}``, ``{short_names}``, ``{modules}``: names as typed or as the model has them, joined with ", "
TARGETS_NOT_FOUND = Message(
    "lora.targets_not_found",
    "LoRA target(s) {targets} not found in {model} ({model_type}); known short names: {short_names} or all-linear; "
    "module names in this model: {modules}",
)


#: LoRA target short names -> module name endings in the inventory
TARGETS: dict[str, tuple[str, ...]] = {
    "q": ("q_proj", "q_a_proj", "q_b_proj", "c_attn", "query_key_value", "qkv_proj", "in_proj_qkvz"),
    "k": ("k_proj", "kv_a_proj_with_mqa", "c_attn", "query_key_value", "qkv_proj", "in_proj_qkvz"),
    "v": ("v_proj", "kv_b_proj", "c_attn", "query_key_value", "qkv_proj", "in_proj_qkvz"),
    "o": ("o_proj", "dense", "c_proj", "out_proj"),
    "gate": ("gate_proj", "w1", "gate_up_proj"),
    "up": ("up_proj", "w3", "gate_up_proj", "c_fc", "dense_h_to_4h", "fc1"),
    "down": ("down_proj", "w2", "dense_4h_to_h", "fc2", "c_proj"),
}
LINEAR_ROLES = frozenset({"attn", "mlp", "expert", "shared_expert", "linear_attn", "router"})


def matches(tensor: Tensor, targets: tuple[str, ...]) -> bool:
    if tensor.role not in LINEAR_ROLES or len(tensor.shape) < 2 or tensor.part != "text":
        return False
    if "all-linear" in targets:
        return True
    stem = tensor.name.removesuffix(".weight").rsplit(".", 1)[-1]
    return any(stem in TARGETS.get(t, (t,)) for t in targets)


def check_targets(facts: ModelFacts, targets: tuple[str, ...]) -> None:
    """Refuse a target the model does not have: :class:`LoraTargetError` naming it and the model's own module
    names (the fine-tuning plan's check, ``training_plan.check_plan``, asks before anything is selected)."""
    unknown = [name for name in targets if name != "all-linear" and not any(matches(t, (name,)) for t in facts.tensors)]
    if unknown:
        modules = sorted(
            {t.name.removesuffix(".weight").rsplit(".", 1)[-1] for t in facts.tensors if matches(t, ("all-linear",))}
        )
        raise LoraTargetError(
            TARGETS_NOT_FOUND(
                targets=", ".join(sorted(set(unknown))),
                model=facts.model_id,
                model_type=facts.arch.model_type,
                short_names=", ".join(TARGETS),
                modules=", ".join(modules),
            )
        )


def lora_targets(facts: ModelFacts, targets: tuple[str, ...]) -> list[Tensor]:
    """Linear weights the adapters wrap: short role names (q, k, ..., all-linear) or module names as peft matches
    them (the last part of the module's name: ``c_attn``, ``q_proj``); :func:`check_targets` refuses a target the
    model does not have."""
    return [t for t in facts.tensors if matches(t, targets)]


def lora_parameters(chosen: Sequence[Tensor], rank: int) -> int:
    total = 0
    for t in chosen:
        experts = t.shape[0] if len(t.shape) == 3 else 1
        out_f, in_f = t.shape[-2], t.shape[-1]
        if experts > 1:
            # experts stored as one (E, out, in) parameter (transformers 5): peft's ParamWrapper gives each
            # parameter A (in x r E) and B (r E x out), and the fused gate_up_proj rank 2r (its rank_pattern), so
            # the split gate and up matrices each count r E (in + 2 out); a fused gate_up (E, 2I, in) 2 r E (in + out)
            stem = t.name.removesuffix(".weight").rsplit(".", 1)[-1]
            if stem in ("gate_proj", "up_proj"):
                out_f *= 2
            elif stem == "gate_up_proj":
                rank_here = 2 * rank
                total += experts * rank_here * (in_f + out_f)
                continue
        total += experts * rank * (in_f + out_f)
    return total
