"""Vision towers read from a multimodal config's ``vision_config``: the Qwen3-VL tower (Qwen3-VL, Qwen3.5) and the
Qwen2.5-VL tower. Module layouts: transformers' ``modeling_qwen3_vl.py`` (``Qwen3VLVisionModel``) and
``modeling_qwen2_5_vl.py`` (``Qwen2_5_VisionTransformerPretrainedModel``); :mod:`vramdesk.core.inventory` names
their tensors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import VisionSpec
from .fields import _Cfg


def qwen3_vl_tower(c: _Cfg, outer: Mapping[str, Any], hidden: int) -> VisionSpec | None:
    """The Qwen3-VL vision tower of ``outer``'s ``vision_config`` (Qwen3-VL, Qwen3.5): a Conv3d patch embedding
    with a bias, a learned ``num_position_embeddings`` table, LayerNorm blocks with a fused qkv and an
    fc1 / fc2 MLP, the patch merger and one deepstack merger per ``deepstack_visual_indexes`` entry; None when the
    config has no vision_config."""
    vc = outer.get("vision_config")
    if not isinstance(vc, Mapping):
        return None
    v = _Cfg(vc, f"{c.model_type} vision_config")
    deepstack = v.get("deepstack_visual_indexes", [])
    return VisionSpec(
        kind="qwen3_vl",
        depth=v.int("depth"),
        hidden=v.int("hidden_size"),
        intermediate=v.int("intermediate_size"),
        num_heads=v.int("num_heads"),
        patch_size=v.int("patch_size"),
        details={
            "in_channels": v.int("in_channels", default=3),
            "temporal_patch_size": v.int("temporal_patch_size", default=2),
            "spatial_merge_size": v.int("spatial_merge_size", default=2),
            "num_position_embeddings": v.int("num_position_embeddings", default=0, min_value=0),
            "out_hidden_size": v.int("out_hidden_size", default=hidden),
            "deepstack": len(deepstack) if isinstance(deepstack, list) else 0,
        },
    )


def qwen2_5_vl_tower(c: _Cfg, outer: Mapping[str, Any], hidden: int) -> VisionSpec | None:
    """The Qwen2.5-VL vision tower: a Conv3d patch embedding without bias (rotary positions, no table), RMSNorm
    blocks with a fused qkv and a gated MLP with biases, and the merger (RMSNorm ``ln_q``, two linears). Saved
    configs spell the channels ``in_chans`` (Qwen2_5_VLVisionConfig's ``in_channels``, default 3)."""
    vc = outer.get("vision_config")
    if not isinstance(vc, Mapping):
        return None
    v = _Cfg(vc, f"{c.model_type} vision_config")
    return VisionSpec(
        kind="qwen2_5_vl",
        depth=v.int("depth"),
        hidden=v.int("hidden_size"),
        intermediate=v.int("intermediate_size"),
        num_heads=v.int("num_heads"),
        patch_size=v.int("patch_size"),
        details={
            "in_channels": v.int("in_channels", "in_chans", default=3),
            "temporal_patch_size": v.int("temporal_patch_size", default=2),
            "spatial_merge_size": v.int("spatial_merge_size", default=2),
            "out_hidden_size": v.int("out_hidden_size", default=hidden),
        },
    )
