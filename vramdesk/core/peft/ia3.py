"""IA3 (``peft/tuners/ia3``): a learned vector scales the output of the attention targets (``ia3_l`` of shape
(out, 1)) and the input of the feed-forward ones ((1, in)); targets and feed-forward modules are peft's defaults
for the model type (``TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING`` and ``..._FEEDFORWARD_MODULES_MAPPING``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..messages import Message
from .common import (
    MethodParams,
    MethodSaved,
    no_default_targets,
    numel,
    peft_matches,
    scaling_backward_bytes,
    text_linears,
)

if TYPE_CHECKING:
    from ..facts import ModelFacts

#: peft 0.21 ``TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING`` (decoder models vramdesk reads)
IA3_TARGETS: dict[str, tuple[str, ...]] = {
    "gpt2": ("c_attn", "mlp.c_proj"),
    "bloom": ("query_key_value", "mlp.dense_4h_to_h"),
    "opt": ("q_proj", "k_proj", "fc2"),
    "gptj": ("q_proj", "v_proj", "fc_out"),
    "gpt_neox": ("query_key_value", "dense_4h_to_h"),
    "gpt_neo": ("q_proj", "v_proj", "c_proj"),
    "gpt_bigcode": ("c_attn", "mlp.c_proj"),
    "llama": ("k_proj", "v_proj", "down_proj"),
    "llama4": ("q_proj", "v_proj", "down_proj"),
    "mistral": ("k_proj", "v_proj", "down_proj"),
    "mixtral": ("k_proj", "v_proj", "w2"),
    "falcon": ("query_key_value", "dense_4h_to_h"),
    "phi": ("q_proj", "v_proj", "fc2"),
    "gemma": ("q_proj", "v_proj", "down_proj"),
    "gemma2": ("q_proj", "v_proj", "down_proj"),
    "gemma3_text": ("q_proj", "v_proj", "down_proj"),
    "qwen2": ("q_proj", "v_proj", "down_proj"),
    "qwen3": ("q_proj", "v_proj", "down_proj"),
}
#: peft 0.21 ``TRANSFORMERS_MODELS_TO_IA3_FEEDFORWARD_MODULES_MAPPING``: the targets scaled at their input
IA3_FEEDFORWARD: dict[str, tuple[str, ...]] = {
    "gpt2": ("mlp.c_proj",),
    "bloom": ("mlp.dense_4h_to_h",),
    "opt": ("fc2",),
    "gptj": ("fc_out",),
    "gpt_neox": ("dense_4h_to_h",),
    "gpt_neo": ("c_proj",),
    "gpt_bigcode": ("mlp.c_proj",),
    "llama": ("down_proj",),
    "llama4": ("down_proj",),
    "mistral": ("down_proj",),
    "mixtral": ("w2",),
    "falcon": ("dense_4h_to_h",),
    "phi": ("fc2",),
    "gemma": ("down_proj",),
    "gemma2": ("down_proj",),
    "gemma3_text": ("down_proj",),
    "qwen2": ("down_proj",),
    "qwen3": ("down_proj",),
}

IA3_WEIGHTS = Message(
    "peft.ia3.weights",
    "{trainable:,} IA3 scaling parameters ({matrices} scaled modules, {feedforward} of them at their input)",
)
IA3_SAVED = Message(
    "peft.ia3.saved",
    "IA3: each scaled attention output kept in {out_bytes} B, each feed-forward input in {in_bytes} B, for the "
    "vectors' gradients; the backward of a scaling holds {backward_bytes} B per scaled element for a moment",
)


def check_ia3(facts: ModelFacts) -> None:
    """Refuse a model type without IA3 defaults, or one whose linear layers have none of them."""
    model_type = facts.arch.model_type
    if model_type not in IA3_TARGETS or not any(peft_matches(t, IA3_TARGETS[model_type]) for t in text_linears(facts)):
        raise no_default_targets("ia3", facts, IA3_TARGETS)


def ia3_params(facts: ModelFacts, adapter_bytes: int, output_bytes: int) -> MethodParams:
    model_type = facts.arch.model_type
    targets, feedforward = IA3_TARGETS[model_type], IA3_FEEDFORWARD[model_type]
    chosen = [t for t in text_linears(facts) if peft_matches(t, targets)]
    shapes: list[tuple[int, ...]] = []
    saved: dict[int, float] = {}
    widest = n_ff = 0
    for t in chosen:
        out_f, in_f = t.shape[-2], t.shape[-1]
        if peft_matches(t, feedforward):
            # (1, in): x.to(ia3 dtype) * ia3 keeps the cast input for the vector's gradient (layer.py forward)
            shapes.append((1, in_f))
            add, width = adapter_bytes * in_f, in_f
            n_ff += 1
        else:
            # (out, 1): base(x) * ia3 keeps the frozen linear's output, in its dtype, for the vector's gradient
            shapes.append((out_f, 1))
            add, width = output_bytes * out_f, out_f
        widest = max(widest, width)
        if t.layer is not None:
            saved[t.layer] = saved.get(t.layer, 0.0) + add
    backward_b = scaling_backward_bytes(adapter_bytes, output_bytes)
    trainable = sum(numel(s) for s in shapes)
    return MethodParams(
        adapted=tuple(chosen),
        trainable=trainable,
        shapes=tuple(shapes),
        saved=MethodSaved(
            per_token=saved,
            backward_per_token=float(backward_b * widest),
            text=IA3_SAVED(out_bytes=output_bytes, in_bytes=adapter_bytes, backward_bytes=backward_b),
        ),
        weights_text=IA3_WEIGHTS(trainable=trainable, matrices=len(chosen), feedforward=n_ff),
    )
