"""Readers of the recurrent hybrids whose mixers keep a constant state per sequence
(:class:`~vramdesk.core.architecture.StateSpec`): LFM2 / LFM2.5 and LFM2-VL's text model (gated short convolutions
beside attention layers) and Kimi Linear (Kimi Delta Attention beside MLA, DeepSeek-style MoE).

Their mixer layers are ``AttentionKind.LINEAR`` with a ``state``: no per-token KV, a conv window (and, for KDA, a
recurrent state) per sequence. Field names and defaults from transformers 5.24's ``configuration_<type>.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, LayerSpec, MlaSpec, MoeSpec, StateSpec
from ..families import Family
from ..messages import Message
from .decoders import TOP_K_ABOVE_EXPERTS
from .fields import NOT_LIST, _Cfg, _common, _heads

LAYER_KIND = Message("config.recurrent.layer_kind", "{model_type}: unknown entry '{name}' in '{key}' (known: {known})")
KIND_LIST = Message("config.recurrent.kind_list", "{model_type}: field '{key}' must be a list of strings")
KIND_COUNT = Message(
    "config.recurrent.kind_count", "{model_type}: '{key}' has {entries} entries but num_hidden_layers is {layers}"
)
LAYER_INDEX = Message(
    "config.recurrent.layer_index", "{model_type}: '{key}' names layer {index}, but the model has {layers} layers"
)
LAYER_UNSET = Message(
    "config.recurrent.layer_unset", "{model_type}: '{key}' leaves layer {index} without a kind (1-based numbers)"
)
FFN_MULTIPLIER = Message(
    "config.recurrent.ffn_multiplier",
    "{model_type}: block_ffn_dim_multiplier must be a positive number, got {value!r}",
)

#: LFM2's layer_types entries (``short_conv`` in some ports' configs) -> attention or the short convolution
_LFM2_KINDS = {"full_attention": "attention", "attention": "attention", "conv": "conv", "short_conv": "conv"}


def _kinds(c: _Cfg, key: str, table: Mapping[str, str], n_layers: int) -> list[str]:
    """The list ``key`` (``layer_types``, ``mlp_layer_types``; checked: one known string per layer) through
    ``table``."""
    names = c.get(key, [])
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        raise ConfigError(KIND_LIST(model_type=c.model_type, key=key))
    if len(names) != n_layers:
        raise ConfigError(KIND_COUNT(model_type=c.model_type, key=key, entries=len(names), layers=n_layers))
    for name in names:
        if name not in table:
            known = ", ".join(sorted(table))
            raise ConfigError(LAYER_KIND(model_type=c.model_type, name=name, key=key, known=known))
    return [table[name] for name in names]


def _indices(c: _Cfg, raw: Any, key: str, n_layers: int, base: int) -> list[int]:
    """A list of layer numbers (``base`` 0 or 1), checked against the layer count; zero-based."""
    if not isinstance(raw, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in raw):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key=key))
    for x in raw:
        if not base <= x < n_layers + base:
            raise ConfigError(LAYER_INDEX(model_type=c.model_type, key=key, index=x, layers=n_layers))
    return [x - base for x in raw]


def _lfm2_ffn(c: _Cfg) -> tuple[int, str]:
    """Lfm2MLP's width: block_ff_dim (the original configs) or intermediate_size; with block_auto_adjust_ff_dim
    (Lfm2Config's default) two thirds of it, and with a block_ffn_dim_multiplier that times the multiplier,
    rounded up to block_multiple_of."""
    ff = c.int("block_ff_dim", "intermediate_size")
    if not c.bool("block_auto_adjust_ff_dim", default=True):
        return ff, "block_ff_dim / intermediate_size"
    ff = int(2 * ff / 3)
    mult = c.get("block_ffn_dim_multiplier")
    if mult is None:
        return ff, "2/3 of block_ff_dim / intermediate_size (block_auto_adjust_ff_dim)"
    if not isinstance(mult, int | float) or isinstance(mult, bool) or mult <= 0:
        raise ConfigError(FFN_MULTIPLIER(model_type=c.model_type, value=mult))
    multiple = c.int("block_multiple_of", default=256)
    ff = int(mult * ff)
    ff = multiple * ((ff + multiple - 1) // multiple)
    return ff, "2/3 of block_ff_dim x block_ffn_dim_multiplier, rounded up to block_multiple_of"


def _lfm2(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """LFM2 / LFM2.5 (and LFM2-VL's text model): attention layers (GQA, per-head q/k RMSNorms) where
    ``layer_types`` (or the original configs' ``full_attn_idxs``) says, gated short convolutions of conv_L_cache
    taps elsewhere; every layer one SwiGLU MLP."""
    hidden = c.int("hidden_size", "block_dim")
    n_layers = c.int("num_hidden_layers")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    if c.has("layer_types"):
        kinds, src = _kinds(c, "layer_types", _LFM2_KINDS, n_layers), "layer_types"
    elif c.has("full_attn_idxs"):
        attn = set(_indices(c, c.get("full_attn_idxs"), "full_attn_idxs", n_layers, 0))
        kinds, src = ["attention" if i in attn else "conv" for i in range(n_layers)], "full_attn_idxs"
    else:
        kinds, src = ["attention"] * n_layers, "Lfm2Config's default: every layer attention"
    ffn, ffn_src = _lfm2_ffn(c)
    conv = StateSpec(
        kind="short_conv",
        conv_kernel=c.int("conv_L_cache", default=3),
        conv_dim=hidden,
        width=hidden,
        bias=c.bool("conv_bias", default=False),
        state_dtype=None,
    )
    layers = tuple(
        LayerSpec(
            index=i,
            attention=AttentionKind.FULL if kind == "attention" else AttentionKind.LINEAR,
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            state=None if kind == "attention" else conv,
            intermediate=ffn,
        )
        for i, kind in enumerate(kinds)
    )
    tied = c.bool("tie_word_embeddings", default=c.bool("tie_embedding", default=fam.tied_by_default))
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=c.int("vocab_size"),
        layers=layers,
        tie_embeddings=tied,
        qk_norm="head",
        sources={"layer kinds": src, "MLP width": ffn_src, "conv state": "conv_L_cache x hidden_size"},
        **_common(c, outer, fam),
    )


def _kimi_kinds(c: _Cfg, n_layers: int) -> tuple[list[str], str]:
    """Each layer's mixer: ``layer_types``, else the checkpoints' linear_attn_config full_attn_layers / kda_layers
    (1-based), else KimiLinearConfig's default (every fourth layer after the first MLA)."""
    if c.has("layer_types"):
        table = {"full_attention": "mla", "linear_attention": "kda"}
        return _kinds(c, "layer_types", table, n_layers), "layer_types"
    lac = c.get("linear_attn_config", {})
    if isinstance(lac, Mapping) and "full_attn_layers" in lac and "kda_layers" in lac:
        kinds: list[str | None] = [None] * n_layers
        for key, kind in (("full_attn_layers", "mla"), ("kda_layers", "kda")):
            for i in _indices(c, lac[key], f"linear_attn_config.{key}", n_layers, 1):
                kinds[i] = kind
        for i, given in enumerate(kinds):
            if given is None:
                raise ConfigError(LAYER_UNSET(model_type=c.model_type, key="linear_attn_config", index=i + 1))
        return [k for k in kinds if k is not None], "linear_attn_config.full_attn_layers / kda_layers"
    kinds_default = ["mla" if i and i % 4 == 0 else "kda" for i in range(n_layers)]
    return kinds_default, "KimiLinearConfig's default: every fourth layer MLA"


def _kda(c: _Cfg) -> StateSpec:
    """KimiLinearDeltaAttention's geometry from linear_attn_config (head_dim, num_heads, short_conv_kernel_size) or
    KimiLinearConfig's linear_head_dim / linear_num_heads / linear_conv_kernel_dim."""
    lac = c.get("linear_attn_config", {})
    sub = _Cfg(lac if isinstance(lac, Mapping) else {}, c.model_type)
    d = sub.int("head_dim", default=c.int("linear_head_dim", default=128))
    heads = sub.int("num_heads", default=c.int("linear_num_heads", default=32))
    kernel = sub.int("short_conv_kernel_size", default=c.int("linear_conv_kernel_dim", default=4))
    return StateSpec(
        kind="kda",
        conv_kernel=kernel,
        conv_dim=3 * heads * d,
        recurrent_elements=heads * d * d,
        heads=heads,
        head_dim=d,
        width=heads * d,
        state_dtype="fp32",
    )


def _kimi_moe(c: _Cfg) -> MoeSpec:
    """KimiLinearMoE: a sigmoid router with e_score_correction_bias, the routed experts and num_shared_experts
    fused into one shared MLP."""
    n_exp = c.int("num_experts", "num_local_experts")
    top_k = c.int("num_experts_per_token", "num_experts_per_tok")
    if top_k > n_exp:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=n_exp))
    inter = c.int("moe_intermediate_size")
    return MoeSpec(
        num_experts=n_exp,
        top_k=top_k,
        expert_intermediate=inter,
        shared_intermediate=c.int("num_shared_experts", default=1, min_value=0) * inter,
        router_correction_bias=True,
    )


def _kimi_linear(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Kimi Linear: KDA and MLA layers (:func:`_kimi_kinds`), a dense MLP before first_k_dense_replace (or where
    mlp_layer_types says "dense"), MoE after."""
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    kinds, src = _kimi_kinds(c, n_layers)
    n_heads = c.int("num_attention_heads")
    q_lora = c.get("q_lora_rank")
    mla = MlaSpec(
        q_lora_rank=c.int("q_lora_rank") if q_lora is not None else None,
        kv_lora_rank=c.int("kv_lora_rank"),
        qk_nope_head_dim=c.int("qk_nope_head_dim"),
        qk_rope_head_dim=c.int("qk_rope_head_dim"),
        v_head_dim=c.int("v_head_dim"),
    )
    kda = _kda(c) if "kda" in kinds else None
    if c.has("mlp_layer_types"):
        mlp_kinds = _kinds(c, "mlp_layer_types", {"dense": "dense", "sparse": "moe"}, n_layers)
    else:
        first_dense = c.int("first_k_dense_replace", default=1, min_value=0)
        mlp_kinds = ["dense" if i < first_dense else "moe" for i in range(n_layers)]
    moe = _kimi_moe(c) if "moe" in mlp_kinds else None
    inter = c.int("intermediate_size") if "dense" in mlp_kinds else 0
    layers = []
    for i, (kind, mlp) in enumerate(zip(kinds, mlp_kinds, strict=True)):
        is_kda = kind == "kda"
        layers.append(
            LayerSpec(
                index=i,
                attention=AttentionKind.LINEAR if is_kda else AttentionKind.MLA,
                n_heads=kda.heads if is_kda and kda else n_heads,
                n_kv_heads=kda.heads if is_kda and kda else n_heads,
                head_dim=kda.head_dim if is_kda and kda else mla.qk_nope_head_dim + mla.qk_rope_head_dim,
                v_head_dim=kda.head_dim if is_kda and kda else mla.v_head_dim,
                mla=None if is_kda else mla,
                state=kda if is_kda else None,
                mlp=mlp,
                intermediate=inter if mlp == "dense" else 0,
                moe=moe if mlp == "moe" else None,
            )
        )
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=c.int("vocab_size"),
        layers=tuple(layers),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        sources={
            "layer kinds": src,
            "recurrent state": "linear_attn_config num_heads x head_dim^2 (fp32), q/k/v conv windows",
        },
        **_common(c, outer, fam),
    )
