"""A multimodal config that names its conditional-generation class but carries no ``vision_config``: its
checkpoint holds a vision tower and projector the config cannot size. Public copies of configs made for text-only
tools drop the sub-config (ai-dynamo/aiconfigurator's Llama-4-Scout copy has no vision_config; the Hub's file
has one); the estimate then counts the text model only and says so, rather than quietly short of the checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..messages import Message, MessageText

NO_VISION_CONFIG = Message(
    "config.vision_config_missing",
    "{model_type}: the config names {architecture} but has no vision_config: the vision tower and projector its "
    "checkpoint stores are not counted",
)


def missing_tower(outer: Mapping[str, Any], model_type: str) -> tuple[MessageText, ...]:
    """The warning for a config whose ``architectures`` names a ``...ForConditionalGeneration`` class with no
    ``vision_config`` beside it; () otherwise."""
    if isinstance(outer.get("vision_config"), Mapping):
        return ()
    archs = outer.get("architectures")
    name = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    if not name.endswith("ForConditionalGeneration"):
        return ()
    return (NO_VISION_CONFIG(model_type=model_type, architecture=name),)
