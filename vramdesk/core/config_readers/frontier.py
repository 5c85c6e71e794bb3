"""Readers of recent decoder families whose layouts a Llama-style reading gets wrong: OLMo 3, Phi-MoE, MiniMax-M2 and
the DeciLM-style Llama-Nemotron models (``nemotron-nas``: each layer its own KV heads and MLP width, some layers with
no attention or no MLP at all).

Each reads a Llama-style config with :func:`.decoders._llama_like` where the layout allows it and then states what
the family's modeling code changes (tensor names and sources in the records of :mod:`vramdesk.core.families`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, LayerSpec
from ..families import Family
from ..messages import Message
from .decoders import _llama_like
from .fields import MISSING_FIELD, NOT_DIVISIBLE, NOT_LIST, _Cfg, _common, _heads
from .modern import _pattern_types, _with_layer_types

LIGHTNING_LAYERS = Message(
    "config.lightning_attention_unsupported",
    "{model_type}: 'attn_type_list' has {n} lightning-attention layers (type 0), which are not supported yet",
)
BLOCK_COUNT = Message(
    "config.block_configs.count",
    "{model_type}: 'block_configs' has {entries} entries but num_hidden_layers is {layers}",
)
BLOCK_UNSUPPORTED = Message(
    "config.block_configs.unsupported", "{model_type}: block_configs[{index}] uses {what}, which is not supported yet"
)
BLOCK_NOT_OBJECT = Message(
    "config.block_configs.not_object", "{model_type}: block_configs[{index}].{part} must be an object"
)
BAD_FFN_MULT = Message(
    "config.block_configs.ffn_mult",
    "{model_type}: block_configs[{index}].ffn.ffn_mult must be a positive number, got {value!r}",
)


def _olmo3(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """OLMo 3: OLMo 2's layers (q/k norms over the whole projections) with sliding layers from ``layer_types``; a
    config without it gets ``Olmo3Config``'s: three sliding layers, then one global."""
    cfg = c
    src = "layer_types"
    if c.get("layer_types") is None:
        cfg = _with_layer_types(c, _pattern_types(c, 4, c.int("num_hidden_layers")))
        src = "Olmo3Config's default: every fourth layer global"
    arch = _llama_like(cfg, outer, base, fam)
    return arch.model_copy(update={"qk_norm": "full", "sources": {**arch.sources, "attention kinds": src}})


def _phimoe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Phi-MoE: Mixtral's config and experts, q/k/v/o biases from ``attention_bias``, a biased lm_head from
    ``lm_head_bias`` (both default false, ``PhimoeConfig``); LayerNorms from the record; a sliding window on every layer
    when ``sliding_window`` is set, as Mistral's."""
    arch = _llama_like(c, outer, base, fam)
    return arch.model_copy(update={"lm_head_bias": c.bool("lm_head_bias", default=False)})


def _minimax_m2(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """MiniMax-M2: Mixtral's config fields (``num_local_experts`` experts of ``intermediate_size``), every layer full
    attention (``attn_type_list`` all 1: MiniMax-Text-01's lightning layers, type 0, are refused), q/k norms over the
    whole projections when ``use_qk_norm`` (default true), the router's correction bias when ``use_routing_bias``
    (default true); ``rotary_dim`` rotates part of each head and stores nothing. The MTP modules the config names
    (``use_mtp``) are not in the published checkpoints' tensors."""
    types = c.get("attn_type_list", [])
    if not isinstance(types, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key="attn_type_list"))
    lightning = sum(1 for t in types if t == 0)
    if lightning:
        raise ConfigError(LIGHTNING_LAYERS(model_type=c.model_type, n=lightning))
    arch = _llama_like(c, outer, base, fam)
    if c.bool("use_routing_bias", default=True):
        layers = tuple(
            spec
            if spec.moe is None
            else spec.model_copy(update={"moe": spec.moe.model_copy(update={"router_correction_bias": True})})
            for spec in arch.layers
        )
        arch = arch.model_copy(update={"layers": layers})
    qk_norm = "full" if c.bool("use_qk_norm", default=True) else "none"
    return arch.model_copy(update={"qk_norm": qk_norm})


def _ffn_width(c: _Cfg, ffn: _Cfg, index: int, hidden: int) -> int:
    """DeciLM's ``_ffn_mult_to_intermediate_size``: int(2 x ffn_mult x hidden / 3) rounded up to a multiple of 256; an
    explicit ``intermediate_size`` where a block gives one instead."""
    if ffn.has("intermediate_size"):
        return ffn.int("intermediate_size")
    mult = ffn.get("ffn_mult")
    if mult is None:
        raise ConfigError(MISSING_FIELD(model_type=ffn.model_type, names="ffn_mult"))
    if isinstance(mult, bool) or not isinstance(mult, int | float) or not math.isfinite(mult) or mult <= 0:
        raise ConfigError(BAD_FFN_MULT(model_type=c.model_type, index=index, value=mult))
    width = int(2 * mult * hidden / 3)
    return -(-width // 256) * 256


def _block(c: _Cfg, blocks: list[Any], index: int, name: str) -> _Cfg:
    """``block_configs[index][name]`` (the attention or ffn part) as a typed config."""
    block = blocks[index]
    part = block.get(name) if isinstance(block, Mapping) else None
    if not isinstance(part, Mapping):
        raise ConfigError(BLOCK_NOT_OBJECT(model_type=c.model_type, index=index, part=name))
    return _Cfg(part, f"{c.model_type} block_configs[{index}].{name}")


def _nemotron_nas(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Llama-Nemotron (DeciLM): ``block_configs`` gives each layer's attention (no_op: none; else GQA with
    num_attention_heads / n_heads_in_group KV heads) and FFN (no_op: none; else a gated MLP of
    ``_ffn_mult_to_intermediate_size(ffn_mult)``); the top-level ``num_key_value_heads`` and ``intermediate_size`` are
    null. Blocks that replace attention or the FFN with one linear layer, or window attention, are refused."""
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    blocks = c.get("block_configs")
    if blocks is None:
        raise ConfigError(MISSING_FIELD(model_type=c.model_type, names="block_configs"))
    if not isinstance(blocks, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key="block_configs"))
    if len(blocks) != n_layers:
        raise ConfigError(BLOCK_COUNT(model_type=c.model_type, entries=len(blocks), layers=n_layers))
    n_heads, _, head_dim = _heads(_Cfg({**c.d, "num_key_value_heads": None}, c.model_type), hidden)
    layers = []
    for i in range(n_layers):
        attn, ffn = _block(c, blocks, i, "attention"), _block(c, blocks, i, "ffn")
        for part, key in ((attn, "replace_with_linear"), (ffn, "replace_with_linear"), (attn, "window_length")):
            if part.get(key) not in (None, False):
                what = f"{part.model_type.rsplit('.', 1)[1]}.{key}"
                raise ConfigError(BLOCK_UNSUPPORTED(model_type=c.model_type, index=i, what=what))
        no_attn, no_ffn = attn.bool("no_op", default=False), ffn.bool("no_op", default=False)
        group = 1 if no_attn else attn.int("n_heads_in_group")
        if n_heads % group:
            raise ConfigError(
                NOT_DIVISIBLE(
                    model_type=attn.model_type,
                    field="num_attention_heads",
                    value=n_heads,
                    by="n_heads_in_group",
                    divisor=group,
                )
            )
        n_kv = n_heads // group
        layers.append(
            LayerSpec(
                index=i,
                attention=AttentionKind.NONE if no_attn else AttentionKind.FULL,
                n_heads=n_heads,
                n_kv_heads=n_kv,
                head_dim=head_dim,
                v_head_dim=head_dim,
                mlp="none" if no_ffn else "dense",
                intermediate=0 if no_ffn else _ffn_width(c, ffn, i, hidden),
            )
        )
    bias = c.bool("attention_bias", default=False)
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=c.int("vocab_size"),
        layers=tuple(layers),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=c.bool("mlp_bias", default=False),
        sources={"layer kinds": "block_configs (attention / ffn no_op, n_heads_in_group, ffn_mult)"},
        **_common(c, outer, fam),
    )
