"""Readers of MoE decoders with GQA attention and DeepSeek-style experts (dense layers first, routed experts with a
router correction bias, shared experts fused into one MLP): ERNIE 4.5 MoE, EXAONE MoE, Hunyuan HY-V3, Solar Open,
Laguna and AFMoE; MiniMax-Text-01, whose lightning-attention layers hold a per-sequence state instead of KV; and
JetMoE, whose attention is a mixture of query experts over one shared K and V.

Each reader names the config fields it reads and the defaults of its ``<Family>Config`` in transformers 5.24
(``src/transformers/models/<family>/configuration_<family>.py``); the tensor names are the records' in
:mod:`vramdesk.core.families`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, LayerSpec, MoaSpec, MoeSpec, StateSpec
from ..families import Family
from ..messages import Message
from .decoders import NO_SLIDING_WINDOW, TOP_K_ABOVE_EXPERTS
from .fields import (
    HEADS_NOT_MULTIPLE,
    NOT_LIST,
    _Cfg,
    _common,
    _kind_from_type,
    _layer_types,
    _lenient_int,
)
from .mlamoe import _mlp_layer_types

HEADS_PER_LAYER_COUNT = Message(
    "config.heads_per_layer.count",
    "{model_type}: 'num_attention_heads_per_layer' has {entries} entries but num_hidden_layers is {layers}",
)
ATTN_TYPE_UNKNOWN = Message(
    "config.attn_type_list.unknown",
    "{model_type}: 'attn_type_list' entries are 0 (lightning attention) or 1 (softmax attention), got {value!r}",
)


def floor_heads(c: _Cfg, hidden: int) -> tuple[int, int, int]:
    """(heads, KV heads, head width) as these families' attention modules take them: ``head_dim`` when the config
    sets it, else ``hidden_size // num_attention_heads`` rounded down (``getattr(config, "head_dim", hidden_size //
    num_attention_heads)``: Glm4MoeConfig's defaults, 4096 wide with 96 heads, make 42-wide heads)."""
    n_heads = c.int("num_attention_heads")
    n_kv = c.int("num_key_value_heads", default=n_heads)
    if n_heads % n_kv:
        raise ConfigError(HEADS_NOT_MULTIPLE(model_type=c.model_type, heads=n_heads, kv_heads=n_kv))
    head_dim = c.int("head_dim") if c.has("head_dim") else hidden // n_heads
    return n_heads, n_kv, max(head_dim, 1)


def _sparse_layers(c: _Cfg, n_layers: int, first_dense: int) -> tuple[list[bool], str]:
    """Which layers are MoE: ``mlp_layer_types`` ("dense" / "sparse") when the config has it, else every layer from
    ``first_dense`` on."""
    sparse = _mlp_layer_types(c, n_layers)
    if sparse is None:
        return [i >= first_dense for i in range(n_layers)], f"dense layers before {first_dense}"
    return sparse, "mlp_layer_types"


def _kinds(c: _Cfg, n_layers: int) -> tuple[list[AttentionKind], int | None]:
    """Each layer's attention kind from ``layer_types`` (every layer full without it) and the sliding window."""
    types = _layer_types(c, n_layers)
    kinds = [_kind_from_type(c, t) for t in types] if types is not None else [AttentionKind.FULL] * n_layers
    window = _lenient_int(c, "sliding_window")
    has_window = isinstance(window, int) and window > 0
    if AttentionKind.SLIDING in kinds and not has_window:
        raise ConfigError(NO_SLIDING_WINDOW(model_type=c.model_type))
    return kinds, int(window) if has_window else None


def _routed(c: _Cfg, experts: str, top_k: str, shared: int, *, correction: bool) -> MoeSpec:
    """The MoE block: ``experts`` experts of ``moe_intermediate_size``, ``top_k`` routed a token, a shared MLP of
    ``shared`` width."""
    n_exp = c.int(experts)
    k = c.int(top_k)
    if k > n_exp:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=k, experts=n_exp))
    return MoeSpec(
        num_experts=n_exp,
        top_k=k,
        expert_intermediate=c.int("moe_intermediate_size"),
        shared_intermediate=shared,
        router_correction_bias=correction,
    )


def _decoder(
    c: _Cfg,
    outer: Mapping[str, Any],
    fam: Family,
    moe: MoeSpec,
    sparse: Sequence[bool],
    *,
    heads: Sequence[int] | None = None,
    attn_gate: Sequence[int] | None = None,
    sources: Mapping[str, str],
    **arch: Any,
) -> Architecture:
    """A GQA decoder whose ``sparse`` layers are ``moe`` and the others dense MLPs of ``intermediate_size``; per-layer
    query heads and attention gates where given; ``arch``: the Architecture fields the family sets."""
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    n_heads, n_kv, head_dim = floor_heads(c, hidden)
    kinds, window = _kinds(c, n_layers)
    inter = c.int("intermediate_size") if not all(sparse) else 0
    layers = tuple(
        LayerSpec(
            index=i,
            attention=kinds[i],
            n_heads=heads[i] if heads is not None else n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            window=window if kinds[i] == AttentionKind.SLIDING else None,
            mlp="moe" if sparse[i] else "dense",
            intermediate=0 if sparse[i] else inter,
            moe=moe if sparse[i] else None,
            attn_gate=attn_gate[i] if attn_gate is not None else 0,
        )
        for i in range(n_layers)
    )
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=c.int("vocab_size"),
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        sources={**({"attention kinds": "layer_types"} if c.has("layer_types") else {}), **sources},
        **arch,
        **_common(c, outer, fam),
    )


def _ernie4_5_moe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """ERNIE 4.5 MoE: layer i is MoE when (i + 1) % ``moe_layer_interval`` == 0 and ``moe_layer_start_index`` <= i <=
    ``moe_layer_end_index`` (-1: the last layer); ``moe_num_experts`` experts, ``moe_k`` routed,
    ``moe_num_shared_experts`` x ``moe_intermediate_size`` shared; the router always keeps a correction bias
    (Ernie4_5_MoeStatics); ``use_bias`` puts biases on q/k/v/o, the dense MLPs and lm_head."""
    n_layers = c.int("num_hidden_layers")
    start = c.int("moe_layer_start_index", default=1, min_value=0)
    end = c.int("moe_layer_end_index", default=n_layers - 1, min_value=-1)
    end = n_layers - 1 if end == -1 else end
    step = c.int("moe_layer_interval", default=1)
    sparse = [(i + 1) % step == 0 and start <= i <= end for i in range(n_layers)]
    shared = c.int("moe_num_shared_experts", default=2, min_value=0) * c.int("moe_intermediate_size")
    moe = _routed(c, "moe_num_experts", "moe_k", shared, correction=True)
    bias = c.bool("use_bias", default=False)
    where = f"moe_layer_start_index {start} .. moe_layer_end_index {end}, every {step}"
    return _decoder(
        c,
        outer,
        fam,
        moe,
        sparse,
        sources={"moe layers": where},
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        lm_head_bias=bias,
    )


def _exaone_moe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """EXAONE MoE: per-head q/k norms, sliding layers from ``layer_types``, MoE layers from ``mlp_layer_types`` (else
    after ``first_k_dense_replace``, 1), ``num_experts`` experts with ``num_shared_experts`` x
    ``moe_intermediate_size`` shared (ExaoneMoeConfig)."""
    sparse, where = _sparse_layers(
        c, c.int("num_hidden_layers"), c.int("first_k_dense_replace", default=1, min_value=0)
    )
    shared = c.int("num_shared_experts", default=1, min_value=0) * c.int("moe_intermediate_size")
    moe = _routed(c, "num_experts", "num_experts_per_tok", shared, correction=True)
    return _decoder(c, outer, fam, moe, sparse, sources={"moe layers": where}, qk_norm="head")


def _hy_v3(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """HY-V3: per-head q/k norms, q/k/v/o biases from ``attention_bias``, MLP biases from ``mlp_bias``, MoE layers from
    ``mlp_layer_types`` (else all but layer 0), ``num_experts`` experts and ``num_shared_experts`` x
    ``moe_intermediate_size`` shared (HYV3Config)."""
    sparse, where = _sparse_layers(
        c, c.int("num_hidden_layers"), c.int("first_k_dense_replace", default=1, min_value=0)
    )
    shared = c.int("num_shared_experts", default=1, min_value=0) * c.int("moe_intermediate_size")
    moe = _routed(c, "num_experts", "num_experts_per_tok", shared, correction=True)
    bias = c.bool("attention_bias", default=False)
    return _decoder(
        c,
        outer,
        fam,
        moe,
        sparse,
        sources={"moe layers": where},
        qk_norm="head",
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=c.bool("mlp_bias", default=False),
    )


def _solar_open(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Solar Open: every layer MoE (SolarOpenDecoderLayer), ``n_routed_experts`` experts with ``n_shared_experts`` x
    ``moe_intermediate_size`` shared, q/k/v biases from ``attention_bias`` (none on o_proj)."""
    n_layers = c.int("num_hidden_layers")
    shared = c.int("n_shared_experts", default=1, min_value=0) * c.int("moe_intermediate_size")
    moe = _routed(c, "n_routed_experts", "num_experts_per_tok", shared, correction=True)
    bias = c.bool("attention_bias", default=False)
    return _decoder(c, outer, fam, moe, [True] * n_layers, sources={"moe layers": "every layer"}, qkv_bias=bias)


def _laguna(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Laguna: each layer's query heads from ``num_attention_heads_per_layer``, per-head q/k norms, an output gate of
    one row per head (``gating`` true or "per-head") or per query element, MoE layers from ``mlp_layer_types``,
    ``num_experts`` experts and one shared expert of ``shared_expert_intermediate_size`` (LagunaConfig)."""
    n_layers = c.int("num_hidden_layers")
    per_layer = c.get("num_attention_heads_per_layer")
    if per_layer is None:
        heads = [c.int("num_attention_heads")] * n_layers
    elif not isinstance(per_layer, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key="num_attention_heads_per_layer"))
    elif len(per_layer) != n_layers:
        raise ConfigError(HEADS_PER_LAYER_COUNT(model_type=c.model_type, entries=len(per_layer), layers=n_layers))
    else:
        heads = [_Cfg({"num_attention_heads": n}, c.model_type).int("num_attention_heads") for n in per_layer]
    _, _, head_dim = floor_heads(c, c.int("hidden_size"))
    gating = c.get("gating", True)
    per_head = gating is True or gating == "per-head"
    gates = [n if per_head else n * head_dim for n in heads]
    sparse, where = _sparse_layers(c, n_layers, 1)
    shared = c.int("shared_expert_intermediate_size", default=0, min_value=0)
    moe = _routed(c, "num_experts", "num_experts_per_tok", shared, correction=True)
    bias = c.bool("attention_bias", default=False)
    return _decoder(
        c,
        outer,
        fam,
        moe,
        sparse,
        heads=heads,
        attn_gate=gates,
        sources={"moe layers": where, "attention gate": f"gating = {gating!r}"},
        qk_norm="head",
        qkv_bias=bias,
        o_bias=bias,
    )


def _afmoe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """AFMoE: four norms a layer, per-head q/k norms, a per-element gate on the attention output, sliding layers from
    ``layer_types``, ``num_dense_layers`` dense layers first, ``num_experts`` experts with ``num_shared_experts`` x
    ``moe_intermediate_size`` shared (AfmoeConfig)."""
    n_layers = c.int("num_hidden_layers")
    first = c.int("num_dense_layers", default=1, min_value=0)
    shared = c.int("num_shared_experts", default=2, min_value=0) * c.int("moe_intermediate_size")
    moe = _routed(c, "num_experts", "num_experts_per_tok", shared, correction=True)
    n_heads, _, head_dim = floor_heads(c, c.int("hidden_size"))
    bias = c.bool("attention_bias", default=False)
    return _decoder(
        c,
        outer,
        fam,
        moe,
        [i >= first for i in range(n_layers)],
        attn_gate=[n_heads * head_dim] * n_layers,
        sources={"moe layers": f"num_dense_layers = {first}"},
        qk_norm="head",
        qkv_bias=bias,
        o_bias=bias,
        norms_per_layer=4,
    )


def _minimax_layer_types(c: _Cfg, n_layers: int) -> tuple[_Cfg, str]:
    """``c`` with ``layer_types`` spelled out: from the config, from the original release's ``attn_type_list`` (0:
    lightning, 1: softmax), else MiniMaxConfig's default (even layers softmax, odd layers lightning)."""
    if c.has("layer_types"):
        return c, "layer_types"
    raw = c.get("attn_type_list")
    if raw is not None:
        if not isinstance(raw, list):
            raise ConfigError(NOT_LIST(model_type=c.model_type, key="attn_type_list"))
        names = {0: "linear_attention", 1: "full_attention"}
        for t in raw:
            if isinstance(t, bool) or not isinstance(t, int) or t not in names:
                raise ConfigError(ATTN_TYPE_UNKNOWN(model_type=c.model_type, value=t))
        types, src = [names[t] for t in raw], "attn_type_list (0 lightning, 1 softmax)"
    else:
        types = ["full_attention" if (i + 1) % 2 else "linear_attention" for i in range(n_layers)]
        src = "MiniMaxConfig's default: odd layers lightning"
    return _Cfg({**c.d, "layer_types": types}, c.model_type), src


def _lightning(heads: int, head_dim: int) -> StateSpec:
    """MiniMax-Text-01's lightning attention (transformers' ``MiniMaxLightningAttention``, vLLM's
    ``MiniMaxText01LinearAttention``) as a constant-state mixer: each head's K^T V, a head_dim x head_dim matrix
    decayed per head, and no conv window. transformers' ``MiniMaxCache.linear_cache`` holds it in the values' dtype;
    vLLM's ``linear_attention_state_shape`` in ``mamba_cache_dtype`` ("auto": the model's dtype)."""
    width = heads * head_dim
    return StateSpec(
        kind="lightning",
        conv_kernel=1,
        conv_dim=0,
        recurrent_elements=heads * head_dim * head_dim,
        heads=heads,
        head_dim=head_dim,
        width=width,
        state_dtype=None,
    )


def _minimax(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """MiniMax-Text-01: Mixtral's experts (``num_local_experts`` of ``intermediate_size``) on every layer; softmax
    layers with GQA, lightning layers (``linear_attention``) with ``num_attention_heads`` heads of K^T V state;
    ``head_dim`` null means hidden / heads; the alpha / beta residual factors store nothing."""
    n_layers = c.int("num_hidden_layers")
    cfg, src = _minimax_layer_types(c, n_layers)
    moe = MoeSpec(
        num_experts=c.int("num_local_experts"),
        top_k=c.int("num_experts_per_tok"),
        expert_intermediate=c.int("intermediate_size"),
    )
    if moe.top_k > moe.num_experts:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=moe.top_k, experts=moe.num_experts))
    arch = _decoder(cfg, outer, fam, moe, [True] * n_layers, sources={"attention kinds": src})
    layers = tuple(
        spec.model_copy(update={"state": _lightning(spec.n_heads, spec.head_dim)})
        if spec.attention == AttentionKind.LINEAR
        else spec
        for spec in arch.layers
    )
    return arch.model_copy(update={"layers": layers})


def _jetmoe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """JetMoE: every layer has ``num_local_experts`` attention experts and as many MLP experts (``intermediate_size``
    wide), ``num_experts_per_tok`` of each routed a token; K and V have ``num_key_value_heads`` heads of
    ``kv_channels``, and each routed attention expert brings that many query heads (JetMoeConfig: 8 experts, top 2,
    16 KV heads of 128; ``num_attention_heads`` = top_k x KV heads sizes nothing of its own); tied embeddings."""
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    n_exp = c.int("num_local_experts")
    top_k = c.int("num_experts_per_tok")
    if top_k > n_exp:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=n_exp))
    n_kv = c.int("num_key_value_heads")
    head_dim = c.int("kv_channels")
    moe = MoeSpec(num_experts=n_exp, top_k=top_k, expert_intermediate=c.int("intermediate_size"))
    moa = MoaSpec(num_experts=n_exp, top_k=top_k)
    layers = tuple(
        LayerSpec(
            index=i,
            attention=AttentionKind.FULL,
            n_heads=top_k * n_kv,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            mlp="moe",
            moe=moe,
            moa=moa,
        )
        for i in range(n_layers)
    )
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=c.int("vocab_size"),
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        sources={"attention": "num_experts_per_tok x num_key_value_heads query heads of kv_channels"},
        **_common(c, outer, fam),
    )
