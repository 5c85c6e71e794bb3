"""Readers of the state-space models and their hybrids: Mamba and Falcon-Mamba (Mamba-1 mixers), Mamba-2, Jamba
(Mamba-1 and attention layers, MoE every other layer), Bamba and Granite 4.0-H (Mamba-2 and attention layers),
Falcon-H1 (attention and Mamba-2 side by side in every layer).

Fields and defaults from transformers 5.24's ``configuration_<type>.py``; layouts from ``modeling_<type>.py``.
A layer whose one mixer is Mamba is ``AttentionKind.LINEAR`` with its :class:`~vramdesk.core.architecture.Mamba1Spec`
or :class:`~vramdesk.core.architecture.Mamba2Spec`; a Falcon-H1 layer is ``FULL`` with its Mamba-2 mixer beside.
Pure SSM layers carry the mixer's channels as their "heads" (what tensor parallelism splits): Mamba-1's
intermediate channels, Mamba-2's heads.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import ceil
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, LayerSpec, Mamba1Spec, Mamba2Spec, MoeSpec
from ..families import Family
from ..messages import Message
from .decoders import TOP_K_ABOVE_EXPERTS
from .fields import NOT_LIST, _Cfg, _common, _heads

MAMBA_HEADS = Message(
    "config.mamba_heads",
    "{model_type}: {heads_key} ({heads}) x {head_dim_key} ({head_dim}) is not the Mamba width {width}",
)
LAYER_KIND_UNKNOWN = Message(
    "config.ssm_layer_kind.unknown",
    "{model_type}: unknown layer '{name}' in '{key}' (known: 'mamba' or 'linear_attention', 'attention' or "
    "'full_attention')",
)
LAYER_KIND_COUNT = Message(
    "config.ssm_layer_kind.count", "{model_type}: '{key}' has {entries} layers but num_hidden_layers is {layers}"
)
ATTN_INDEX = Message(
    "config.ssm_attention_index",
    "{model_type}: attn_layer_indices names layer {index}, but the model has {layers} layers",
)


def _dt_rank(c: _Cfg, key: str, hidden: int) -> int:
    """Mamba-1's dt rank: an integer, or "auto" = ceil(hidden / 16) (MambaConfig, JambaConfig)."""
    if c.get(key, "auto") == "auto":
        return ceil(hidden / 16)
    return c.int(key)


def _mamba2_spec(c: _Cfg, width: int, keys: tuple[str, ...], **extra: Any) -> Mamba2Spec:
    """A Mamba-2 mixer from ``keys`` = (heads, head_dim, state, groups, kernel, conv bias, proj bias), its
    intermediate ``width`` checked against heads x head_dim (head_dim "auto": width / heads, Granite 4.0-H)."""
    k_heads, k_dim, k_state, k_groups, k_kernel, k_conv_bias, k_proj_bias = keys
    heads = c.int(k_heads)
    head_dim = width // heads if c.get(k_dim, "auto") == "auto" else c.int(k_dim)
    if heads * head_dim != width:
        raise ConfigError(
            MAMBA_HEADS(
                model_type=c.model_type,
                heads_key=k_heads,
                heads=heads,
                head_dim_key=k_dim,
                head_dim=head_dim,
                width=width,
            )
        )
    return Mamba2Spec(
        num_heads=heads,
        head_dim=head_dim,
        state_size=c.int(k_state),
        n_groups=c.int(k_groups, default=1),
        conv_kernel=c.int(k_kernel, default=4),
        conv_bias=c.bool(k_conv_bias, default=True),
        proj_bias=c.bool(k_proj_bias, default=False),
        **extra,
    )


def _ssm_only(
    c: _Cfg, outer: Mapping[str, Any], fam: Family, mixer: Mamba1Spec | Mamba2Spec, channels: tuple[int, int]
) -> Architecture:
    """A stack of one norm and one Mamba mixer per layer, a final norm and the head (Mamba, Mamba-2)."""
    heads, head_dim = channels
    layers = tuple(
        LayerSpec(
            index=i,
            attention=AttentionKind.LINEAR,
            n_heads=heads,
            n_kv_heads=heads,
            head_dim=head_dim,
            v_head_dim=head_dim,
            mamba=mixer if isinstance(mixer, Mamba2Spec) else None,
            mamba1=mixer if isinstance(mixer, Mamba1Spec) else None,
            mlp="none",
        )
        for i in range(c.int("num_hidden_layers"))
    )
    return Architecture(
        model_type=c.model_type,
        hidden=c.int("hidden_size"),
        vocab=c.int("vocab_size"),
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        norms_per_layer=1,
        sources={"layer kinds": "every layer one Mamba mixer"},
        **_common(c, outer, fam),
    )


def _mamba(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Mamba and Falcon-Mamba (MambaConfig, FalconMambaConfig): intermediate_size (expand x hidden), state_size,
    time_step_rank, conv_kernel, use_bias (in_proj / out_proj), use_conv_bias."""
    hidden = c.int("hidden_size")
    width = c.int("intermediate_size", default=c.int("expand", default=2) * hidden)
    mixer = Mamba1Spec(
        intermediate=width,
        state_size=c.int("state_size", default=16),
        dt_rank=_dt_rank(c, "time_step_rank", hidden),
        conv_kernel=c.int("conv_kernel", default=4),
        conv_bias=c.bool("use_conv_bias", default=True),
        proj_bias=c.bool("use_bias", default=False),
    )
    return _ssm_only(c, outer, fam, mixer, (width, 1))


def _mamba2(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Mamba-2 (Mamba2Config; Mamba-Codestral): num_heads x head_dim = expand x hidden, n_groups, state_size,
    conv_kernel, use_bias, use_conv_bias; the gated RMSNorm before out_proj."""
    width = c.int("expand", default=2) * c.int("hidden_size")
    keys = ("num_heads", "head_dim", "state_size", "n_groups", "conv_kernel", "use_conv_bias", "use_bias")
    mixer = _mamba2_spec(c, width, keys)
    return _ssm_only(c, outer, fam, mixer, (mixer.num_heads, mixer.head_dim))


def _hybrid_layers(
    c: _Cfg,
    kinds: list[str],
    mixer: Mamba1Spec | Mamba2Spec,
    mlps: list[MoeSpec | None],
    inter: int,
) -> tuple[LayerSpec, ...]:
    """One LayerSpec per layer: attention ("attention") or the Mamba mixer ("mamba"), then its MLP or MoE block."""
    hidden = c.int("hidden_size")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    return tuple(
        LayerSpec(
            index=i,
            attention=AttentionKind.FULL if kind == "attention" else AttentionKind.LINEAR,
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            mamba=mixer if kind == "mamba" and isinstance(mixer, Mamba2Spec) else None,
            mamba1=mixer if kind == "mamba" and isinstance(mixer, Mamba1Spec) else None,
            mlp="moe" if moe is not None else "dense",
            intermediate=0 if moe is not None else inter,
            moe=moe,
        )
        for i, (kind, moe) in enumerate(zip(kinds, mlps, strict=True))
    )


def _hybrid(
    c: _Cfg, outer: Mapping[str, Any], fam: Family, layers: tuple[LayerSpec, ...], sources: dict[str, str]
) -> Architecture:
    return Architecture(
        model_type=c.model_type,
        hidden=c.int("hidden_size"),
        vocab=c.int("vocab_size"),
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=c.bool("attention_bias", default=False),
        o_bias=c.bool("attention_bias", default=False),
        mlp_bias=c.bool("mlp_bias", default=False),
        sources=sources,
        **_common(c, outer, fam),
    )


def _jamba(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Jamba (JambaConfig): attention where i % attn_layer_period == attn_layer_offset, else a Mamba-1 mixer with
    dt / B / C RMSNorms; a MoE block (router, num_experts per-expert gate / up / down) where i % expert_layer_period
    == expert_layer_offset, else a dense MLP of intermediate_size."""
    hidden = c.int("hidden_size")
    n = c.int("num_hidden_layers")
    mixer = Mamba1Spec(
        intermediate=c.int("mamba_expand", default=2) * hidden,
        state_size=c.int("mamba_d_state", default=16),
        dt_rank=_dt_rank(c, "mamba_dt_rank", hidden),
        conv_kernel=c.int("mamba_d_conv", default=4),
        conv_bias=c.bool("mamba_conv_bias", default=True),
        proj_bias=c.bool("mamba_proj_bias", default=False),
        inner_norms=True,
    )
    a_period, a_offset = c.int("attn_layer_period", default=8), c.int("attn_layer_offset", default=4, min_value=0)
    e_period, e_offset = c.int("expert_layer_period", default=2), c.int("expert_layer_offset", default=1, min_value=0)
    kinds = ["attention" if i % a_period == a_offset else "mamba" for i in range(n)]
    inter = c.int("intermediate_size")
    experts = c.int("num_experts", default=16)
    top_k = c.int("num_experts_per_tok", default=2)
    if top_k > experts:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=experts))
    moe = MoeSpec(num_experts=experts, top_k=top_k, expert_intermediate=inter) if experts > 1 else None
    mlps = [moe if i % e_period == e_offset else None for i in range(n)]
    layers = _hybrid_layers(c, kinds, mixer, mlps, inter)
    sources = {"layer kinds": "attn_layer_period / attn_layer_offset", "MoE layers": "expert_layer_period / _offset"}
    return _hybrid(c, outer, fam, layers, sources)


def _bamba(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Bamba (BambaConfig): attention on attn_layer_indices, a Mamba-2 mixer (mamba_n_heads x mamba_d_head =
    mamba_expand x hidden) on the other layers; a dense MLP in every layer."""
    n = c.int("num_hidden_layers")
    width = c.int("mamba_expand", default=2) * c.int("hidden_size")
    keys = ("mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_n_groups", "mamba_d_conv")
    mixer = _mamba2_spec(c, width, (*keys, "mamba_conv_bias", "mamba_proj_bias"))
    raw = c.get("attn_layer_indices", [])
    if not isinstance(raw, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key="attn_layer_indices"))
    for index in raw:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise ConfigError(ATTN_INDEX(model_type=c.model_type, index=index, layers=n))
    kinds = ["attention" if i in raw else "mamba" for i in range(n)]
    layers = _hybrid_layers(c, kinds, mixer, [None] * n, c.int("intermediate_size"))
    return _hybrid(c, outer, fam, layers, {"layer kinds": "attn_layer_indices"})


def _falcon_h1(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Falcon-H1 (FalconH1Config): every layer runs attention and a Mamba-2 mixer in parallel on one input norm
    (mamba_d_ssm wide, else mamba_expand x hidden; its gated RMSNorm only with mamba_rms_norm), then a dense MLP."""
    hidden = c.int("hidden_size")
    width = c.int("mamba_d_ssm", default=c.int("mamba_expand", default=2) * hidden)
    keys = ("mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_n_groups", "mamba_d_conv")
    mixer = _mamba2_spec(
        c, width, (*keys, "mamba_conv_bias", "mamba_proj_bias"), gated_norm=c.bool("mamba_rms_norm", default=False)
    )
    n_heads, n_kv, head_dim = _heads(c, hidden)
    inter = c.int("intermediate_size")
    layers = tuple(
        LayerSpec(
            index=i,
            attention=AttentionKind.FULL,
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            mamba=mixer,
            intermediate=inter,
        )
        for i in range(c.int("num_hidden_layers"))
    )
    return _hybrid(c, outer, fam, layers, {"layer kinds": "every layer attention beside a Mamba-2 mixer"})


#: Granite 4.0-H's layer kinds as its configs spell them (``layer_types``, formerly ``layers_block_type``)
_GRANITE_KINDS = {
    "mamba": "mamba",
    "linear_attention": "mamba",
    "attention": "attention",
    "full_attention": "attention",
}


def _granite_kinds(c: _Cfg, n: int) -> tuple[list[str], str]:
    key = "layer_types" if c.has("layer_types") else "layers_block_type"
    raw = c.get(key, ["mamba"] * n)
    if not isinstance(raw, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key=key))
    if len(raw) != n:
        raise ConfigError(LAYER_KIND_COUNT(model_type=c.model_type, key=key, entries=len(raw), layers=n))
    kinds = []
    for name in raw:
        if not isinstance(name, str) or name not in _GRANITE_KINDS:
            raise ConfigError(LAYER_KIND_UNKNOWN(model_type=c.model_type, name=name, key=key))
        kinds.append(_GRANITE_KINDS[name])
    return kinds, key


def _granitemoehybrid(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Granite 4.0-H (GraniteMoeHybridConfig): a Mamba-2 mixer or attention per layer from layer_types, then a MoE
    block (num_local_experts, fused input_linear / output_linear) beside the shared_mlp of shared_intermediate_size,
    or the shared_mlp alone when num_local_experts is 0 (Granite 4.0-H-Micro); the multipliers store no tensor."""
    n = c.int("num_hidden_layers")
    kinds, key = _granite_kinds(c, n)
    width = c.int("mamba_expand", default=2) * c.int("hidden_size")
    keys = ("mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_n_groups", "mamba_d_conv")
    mixer = _mamba2_spec(c, width, (*keys, "mamba_conv_bias", "mamba_proj_bias"))
    shared = c.int("shared_intermediate_size", default=0, min_value=0)
    experts = c.int("num_local_experts", default=0, min_value=0)
    moe = None
    if experts:
        top_k = c.int("num_experts_per_tok")
        if top_k > experts:
            raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=experts))
        inter = c.int("intermediate_size")
        moe = MoeSpec(num_experts=experts, top_k=top_k, expert_intermediate=inter, shared_intermediate=shared)
    layers = _hybrid_layers(c, kinds, mixer, [moe] * n, shared)
    return _hybrid(c, outer, fam, layers, {"layer kinds": key})
