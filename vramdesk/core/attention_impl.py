"""The attention transformers really runs for a model: a plan's "sdpa" is transformers' default, and a model whose
transformers implementation has no SDPA path runs eager attention instead (``from_pretrained`` without
``attn_implementation`` picks SDPA only where the model class sets ``_supports_sdpa``). Eager attention keeps every
head's scores and probabilities for backward and materialises them in the forward: at long context far more than
SDPA's kernels.
"""

from __future__ import annotations

from .messages import Message, Text

#: model types whose causal-LM class in transformers 5.24 sets no ``_supports_sdpa`` (read from the installed
#: package: ``getattr(cls, "_supports_sdpa", False)`` over MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), those with attention
NO_SDPA = frozenset(
    {
        "bloom",
        "deepseek_v4",
        "flint",
        "gemma2",
        "gpt_neo",
        "gpt_neox_japanese",
        "gpt_oss",
        "granite_swa",
        "granitemoe_swa",
        "hy_v4",
        "mimo_v2_flash",
        "mpt",
        "vaultgemma",
        "xglm",
    }
)

EAGER_FALLBACK = Message(
    "attention.eager_fallback",
    "transformers has no SDPA attention for {model_type}: it runs eager attention, which keeps every head's "
    "scores and probabilities (counted here)",
)


def effective_attention(model_type: str, requested: str) -> tuple[str, Text | None]:
    """The attention transformers runs for ``requested`` ("sdpa" = its default), and the note that says why when it
    is not the one asked for."""
    if requested == "sdpa" and model_type in NO_SDPA:
        return "eager", EAGER_FALLBACK(model_type=model_type)
    return requested, None
