"""VeRA (``peft/tuners/vera``): one pair of frozen random projections shared by every adapted layer, ``vera_A``
(r, largest in) and ``vera_B`` (largest out, r), fp32 buffers (``_kaiming_init``); each adapted linear trains two
vectors, ``lambda_d`` (r) and ``lambda_b`` (out), and adds ``lambda_b * (B @ (lambda_d * (A @ x)))`` to the frozen
output, computed in the vectors' dtype (the input is cast to it). Targets are peft's defaults for the model type
(``TRANSFORMERS_MODELS_TO_VERA_TARGET_MODULES_MAPPING``); the rank is VeraConfig's ``r`` (256 by default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..messages import Message
from .common import (
    MethodParams,
    MethodSaved,
    module_name,
    no_default_targets,
    peft_matches,
    scaling_backward_bytes,
    text_linears,
)

if TYPE_CHECKING:
    from ..facts import ModelFacts
    from ..inventory import Tensor

#: peft 0.21 ``TRANSFORMERS_MODELS_TO_VERA_TARGET_MODULES_MAPPING`` (decoder models vramdesk reads)
VERA_TARGETS: dict[str, tuple[str, ...]] = {
    "gpt2": ("c_attn",),
    "bloom": ("query_key_value",),
    "opt": ("q_proj", "v_proj"),
    "gptj": ("q_proj", "v_proj"),
    "gpt_neox": ("query_key_value",),
    "gpt_neo": ("q_proj", "v_proj"),
    "llama": ("q_proj", "v_proj"),
    "mistral": ("q_proj", "v_proj"),
    "mixtral": ("q_proj", "v_proj"),
    "falcon": ("query_key_value",),
    "phi": ("q_proj", "v_proj"),
    "gemma": ("q_proj", "v_proj"),
    "gemma2": ("q_proj", "v_proj"),
    "gemma3_text": ("q_proj", "v_proj"),
    "qwen2": ("q_proj", "v_proj"),
    "qwen3": ("q_proj", "v_proj"),
}

VERA_WEIGHTS = Message(
    "peft.vera.weights",
    "{trainable:,} VeRA scaling parameters (lambda_d of rank {rank} and lambda_b per output, {modules} adapted "
    "modules) and the shared frozen projections A and B in fp32 ({projection:,} elements)",
)
VERA_SAVED = Message(
    "peft.vera.saved",
    "VeRA: each adapted module keeps A x (rank {rank}) and B (lambda_d A x) (its output width) in {bytes} B per "
    "element for the vectors' gradients; the backward of lambda_b holds {backward_bytes} B per output element for "
    "a moment",
)


def _targets(facts: ModelFacts) -> list[Tensor]:
    targets = VERA_TARGETS.get(facts.arch.model_type, ())
    return [t for t in text_linears(facts) if peft_matches(t, targets)]


def check_vera(facts: ModelFacts) -> None:
    """Refuse a model type without VeRA defaults, or one whose linear layers have none of them."""
    if not _targets(facts):
        raise no_default_targets("vera", facts, VERA_TARGETS)


def vera_params(facts: ModelFacts, rank: int, adapter_bytes: int, output_bytes: int) -> MethodParams:
    """``adapter_bytes``: of one element of the vectors (and of what the adapter path computes in);
    ``output_bytes``: of one element of a frozen linear's output."""
    chosen = _targets(facts)
    shapes: list[tuple[int, ...]] = []
    saved: dict[int, float] = {}
    widest_out = widest_in = 0
    for t in chosen:
        out_f, in_f = t.shape[-2], t.shape[-1]
        widest_out, widest_in = max(widest_out, out_f), max(widest_in, in_f)
        # lambda_d, then lambda_b: the order VeraLayer.update_layer makes them
        shapes += [(rank,), (out_f,)]
        if t.layer is not None:
            # each product keeps its other factor: A x (rank) for lambda_d, B (...) (out) for lambda_b
            saved[t.layer] = saved.get(t.layer, 0.0) + adapter_bytes * (rank + out_f)
    backward_b = scaling_backward_bytes(adapter_bytes, output_bytes)
    trainable = sum(s[0] for s in shapes)
    projection = rank * (widest_in + widest_out)
    return MethodParams(
        adapted=tuple(chosen),
        trainable=trainable,
        shapes=tuple(shapes),
        saved=MethodSaved(
            per_token=saved,
            backward_per_token=float(backward_b * widest_out),
            text=VERA_SAVED(rank=rank, bytes=adapter_bytes, backward_bytes=backward_b),
        ),
        weights_text=VERA_WEIGHTS(
            trainable=trainable, rank=rank, modules=len({module_name(t) for t in chosen}), projection=projection
        ),
        buffer_bytes=4 * projection,
    )
