"""LN tuning (``peft/tuners/ln_tuning``): every targeted norm module is wrapped in an ``LNTuningLayer`` that keeps
a ``deepcopy`` of it, trainable, next to the frozen original, and runs the copy; the targets are peft's defaults for
the model type (``TRANSFORMERS_MODELS_TO_LNTUNING_TARGET_MODULES_MAPPING``). The copies stay in the base's dtype:
LN tuning's ``_cast_adapter_dtype`` casts nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..messages import Message
from .common import MethodParams, MethodSaved, no_default_targets, peft_matches

if TYPE_CHECKING:
    from ..facts import ModelFacts
    from ..inventory import Tensor

#: peft 0.21 ``TRANSFORMERS_MODELS_TO_LNTUNING_TARGET_MODULES_MAPPING`` (decoder models vramdesk reads)
LN_TUNING_TARGETS: dict[str, tuple[str, ...]] = {
    "llama": ("input_layernorm", "post_attention_layernorm", "norm"),
    "bloom": ("input_layernorm", "post_attention_layernorm", "ln_f"),
    "gpt2": ("ln_1", "ln_2", "ln_f"),
    "gptj": ("ln_1", "ln_f"),
    "falcon": ("input_layernorm", "post_attention_layernorm", "ln_f"),
    "mistral": ("input_layernorm", "post_attention_layernorm", "norm"),
    "phi": ("input_layernorm", "final_layernorm"),
    "gemma": ("input_layernorm", "post_attention_layernorm", "norm"),
    "gemma2": (
        "input_layernorm",
        "post_attention_layernorm",
        "pre_feedforward_layernorm",
        "post_feedforward_layernorm",
        "norm",
    ),
    "gemma3_text": (
        "input_layernorm",
        "post_attention_layernorm",
        "pre_feedforward_layernorm",
        "post_feedforward_layernorm",
        "norm",
    ),
    "qwen2": ("post_attention_layernorm",),
    "qwen3": ("post_attention_layernorm",),
}
#: Gemma's RMSNorm scales in fp32, ``output * (1 + weight.float())``, and keeps that fp32 output for the weight's
#: gradient; Llama's ``weight * x.to(input_dtype)`` keeps the normalised input in the stream's dtype
FP32_SCALED_NORMS = frozenset({"gemma", "gemma2", "gemma3_text"})

LN_WEIGHTS = Message(
    "peft.ln_tuning.weights",
    "{trainable:,} parameters in trainable copies of {modules} norm modules ({targets}), beside the frozen "
    "originals, in the base dtype",
)
LN_SAVED = Message(
    "peft.ln_tuning.saved",
    "LN tuning: each trained RMSNorm keeps its normalised input in {bytes} B per element for its weight's gradient",
)
LN_LAYER_NORM_SAVED = Message(
    "peft.ln_tuning.layer_norm_saved",
    "LN tuning: a trained LayerNorm keeps nothing more than a frozen one (layer_norm saves its input either way)",
)


def _targets(facts: ModelFacts) -> list[Tensor]:
    targets = LN_TUNING_TARGETS.get(facts.arch.model_type, ())
    return [t for t in facts.tensors if t.part == "text" and t.role == "norm" and peft_matches(t, targets)]


def check_ln_tuning(facts: ModelFacts) -> None:
    """Refuse a model type without LN tuning defaults, or one that has none of their norms."""
    if not _targets(facts):
        raise no_default_targets("ln-tuning", facts, LN_TUNING_TARGETS)


def ln_tuning_params(facts: ModelFacts, stream_bytes: int) -> MethodParams:
    """The trainable norm copies; ``stream_bytes``: bytes of one element of the residual stream (the norms' input
    dtype)."""
    chosen = _targets(facts)
    arch = facts.arch
    if arch.norm == "layer":
        # (native_layer_norm saves its input, mean, rstd, weight and bias whether the weight trains or not)
        kept, text = 0, LN_LAYER_NORM_SAVED()
    else:
        kept = 4 if arch.model_type in FP32_SCALED_NORMS else stream_bytes
        text = LN_SAVED(bytes=kept)
    per_token: dict[int, float] = {}
    outside = 0.0
    for t in chosen:
        if not t.name.endswith(".weight"):
            continue
        if t.layer is None:
            outside += kept * t.shape[-1]
        else:
            per_token[t.layer] = per_token.get(t.layer, 0.0) + kept * t.shape[-1]
    trainable = sum(t.numel for t in chosen)
    modules = {t.name.removesuffix(".weight").removesuffix(".bias") for t in chosen}
    return MethodParams(
        adapted=tuple(chosen),
        trainable=trainable,
        shapes=tuple(t.shape for t in chosen),
        saved=MethodSaved(per_token=per_token, outside_per_token=outside, text=text),
        weights_text=LN_WEIGHTS(
            trainable=trainable, modules=len(modules), targets=", ".join(LN_TUNING_TARGETS[arch.model_type])
        ),
        base_dtype=True,
    )
