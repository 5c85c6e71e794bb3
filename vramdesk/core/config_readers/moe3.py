"""Readers of the MoE and multimodal families of the third round: ERNIE 4.5 VL MoE, whose MoE layers hold two sets of
routed experts (text and vision) beside shared experts.

Each reader names the config fields it reads and the defaults of its ``<Family>Config`` in transformers 5.24
(``src/transformers/models/<family>/configuration_<family>.py``); the tensor names are the records' in
:mod:`vramdesk.core.families_moe3`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, ConfigError, MoeSpec, VisionSpec
from ..families import Family
from .decoders import TOP_K_ABOVE_EXPERTS
from .fields import _Cfg
from .moe2 import _decoder, _sparse_layers
from .ownvlm import _pair, _ratio, _vision_config


def _either_pair(c: _Cfg, key: str, default: tuple[int, int]) -> tuple[int, int]:
    """A field that is one integer for both expert sets (transformers' ``moe_num_experts``) or a [text, vision]
    pair (the original release's ``moe_num_experts`` / ``moe_intermediate_size``)."""
    value = c.get(key)
    if value is None or isinstance(value, list | tuple):
        return _pair(c, key, default)
    n = c.int(key)
    return n, n


def _first(c: _Cfg, key: str, default: int, min_value: int) -> int:
    """The text experts' entry of an index the original release gives per expert set ([text, vision])."""
    value = c.get(key)
    if isinstance(value, list | tuple) and value:
        return _Cfg({f"{key}[0]": value[0]}, c.model_type).int(f"{key}[0]", min_value=min_value)
    return c.int(key, default=default, min_value=min_value)


def _ernie_sparse(c: _Cfg, n_layers: int) -> tuple[list[bool], str]:
    """The MoE layers: ``mlp_layer_types`` (Ernie4_5_VLMoeTextConfig: layer 0 dense, the rest sparse), else the
    original release's ``moe_layer_start_index`` .. ``moe_layer_end_index`` every ``moe_layer_interval`` (its
    text experts' entries where they are [text, vision] pairs; an end past the last layer or -1 is the last)."""
    if c.has("mlp_layer_types") or not c.has("moe_layer_start_index"):
        return _sparse_layers(c, n_layers, 1)
    start = _first(c, "moe_layer_start_index", 1, 0)
    end = _first(c, "moe_layer_end_index", n_layers - 1, -1)
    end = n_layers - 1 if end == -1 or end >= n_layers else end
    step = c.int("moe_layer_interval", default=1)
    where = f"moe_layer_start_index {start} .. moe_layer_end_index {end}, every {step}"
    return [(i + 1) % step == 0 and start <= i <= end for i in range(n_layers)], where


def _ernie_vl_tower(c: _Cfg, outer: Mapping[str, Any], hidden: int) -> VisionSpec | None:
    """The ``vision_config`` (Ernie4_5_VLMoeVisionConfig: depth 32, 1280 wide, 16 heads, MLP 4 x 1280, patch 14,
    3 channels, spatial merge 2, temporal merge 2; the original release spells the width ``embed_dim``, the MLP
    ``mlp_ratio``, and puts the resampler's merges at the top as ``spatial_conv_size`` / ``temporal_conv_size``);
    the resampler writes the text width."""
    v = _vision_config(c, outer)
    if v is None:
        return None
    width = v.int("hidden_size", "embed_dim", default=1280)
    inter = v.int("intermediate_size") if v.has("intermediate_size") else int(width * _ratio(v, "mlp_ratio", 4.0))
    top = _Cfg(outer, c.model_type)
    return VisionSpec(
        kind="ernie4_5_vl",
        depth=v.int("depth", default=32),
        hidden=width,
        intermediate=inter,
        num_heads=v.int("num_heads", default=16),
        patch_size=v.int("patch_size", default=14),
        details={
            "in_channels": v.int("in_channels", "in_chans", default=3),
            "spatial_merge_size": v.int("spatial_merge_size", default=top.int("spatial_conv_size", default=2)),
            "temporal_merge_size": v.int("temporal_merge_size", default=top.int("temporal_conv_size", default=2)),
            "out_hidden_size": hidden,
        },
    )


def _ernie4_5_vl_moe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """ERNIE 4.5 VL MoE (Ernie4_5_VLMoeTextConfig / Ernie4_5_VLMoeMoeBlock): ERNIE 4.5's GQA layers (biases from
    ``use_bias``), the MoE layers of :func:`_ernie_sparse`; each holds ``moe_num_experts`` text experts of
    ``moe_intermediate_size[0]`` and as many vision experts of ``moe_intermediate_size[1]`` (defaults 64, [1536,
    512]), each set with its own router and correction bias, ``moe_k`` (6) of a set routed a token, and
    ``moe_num_shared_experts`` (2) x ``moe_intermediate_size[0]`` shared; lm_head never has a bias; tied embeddings
    by default."""
    n_layers = c.int("num_hidden_layers")
    sparse, where = _ernie_sparse(c, n_layers)
    n_text, n_vision = _either_pair(c, "moe_num_experts", (64, 64))
    i_text, i_vision = _either_pair(c, "moe_intermediate_size", (1536, 512))
    k = c.int("moe_k", default=6)
    if k > min(n_text, n_vision):
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=k, experts=min(n_text, n_vision)))
    shared = c.int("moe_num_shared_experts", default=2, min_value=0) * i_text
    text = MoeSpec(
        num_experts=n_text, top_k=k, expert_intermediate=i_text, shared_intermediate=shared, router_correction_bias=True
    )
    vision = MoeSpec(num_experts=n_vision, top_k=k, expert_intermediate=i_vision, router_correction_bias=True)
    bias = c.bool("use_bias", default=False)
    arch = _decoder(
        c,
        outer,
        fam,
        text,
        sparse,
        sources={"moe layers": where, "vision experts": "moe_intermediate_size[1]"},
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
    )
    layers = tuple(s.model_copy(update={"vision_moe": vision}) if s.moe is not None else s for s in arch.layers)
    return arch.model_copy(update={"layers": layers, "vision": _ernie_vl_tower(c, outer, arch.hidden)})
