"""Readers of current decoder families whose layouts differ from Llama's (transformers' ``modeling_<family>.py``):
GLM-4, GLM-4.5 (MoE and MTP), OLMoE, EXAONE 4.0, Command R / R7B and StarCoder2.

Most read a Llama-style config with :func:`.decoders._llama_like` and then state what their modeling code changes;
GLM-4.5's MoE layout (dense layers first, shared experts, MTP layers) has a reader of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, LayerSpec, MoeSpec
from ..families import Family
from ..messages import Message
from .decoders import TOP_K_ABOVE_EXPERTS, _llama_like
from .fields import _Cfg, _common, _lenient_int
from .moe2 import floor_heads

PATTERN_UNKNOWN = Message(
    "config.sliding_window_pattern.unknown",
    "{model_type}: 'sliding_window_pattern' must be a positive number or a string of L (sliding) and G (global) "
    "layers, got {value!r}",
)


def _with_layer_types(c: _Cfg, types: list[str]) -> _Cfg:
    """``c`` with a ``layer_types`` list spelled out (the Llama reader takes sliding layers from it)."""
    return _Cfg({**c.d, "layer_types": types}, c.model_type)


def _pattern_types(c: _Cfg, pattern: Any, n_layers: int) -> list[str]:
    """``layer_types`` from a ``sliding_window_pattern``: a number p (every p-th layer global, the others sliding)
    or a string such as "LLLG" repeated from layer 0 (L sliding, G global)."""
    if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
        return ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n_layers)]
    if isinstance(pattern, str) and pattern and set(pattern.upper()) <= {"L", "G"}:
        kinds = {"L": "sliding_attention", "G": "full_attention"}
        return [kinds[pattern[i % len(pattern)].upper()] for i in range(n_layers)]
    raise ConfigError(PATTERN_UNKNOWN(model_type=c.model_type, value=pattern))


def _glm4(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GLM-4-0414 / GLM-Z1: Llama's config, four norms a layer, q/k/v biases from ``attention_bias`` and none on
    o_proj (``Glm4Attention``); ``partial_rotary_factor`` rotates part of each head and stores nothing."""
    arch = _llama_like(c, outer, base, fam)
    bias = c.bool("attention_bias", default=False)
    return arch.model_copy(update={"norms_per_layer": 4, "qkv_bias": bias, "o_bias": False})


def _glm4_moe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GLM-4.5 / 4.6: dense layers before ``first_k_dense_replace`` (``intermediate_size``), then MoE layers of
    ``n_routed_experts`` experts of ``moe_intermediate_size``, ``num_experts_per_tok`` routed a token, and
    ``n_shared_experts`` fused into one shared MLP; the router keeps an ``e_score_correction_bias``; q/k/v biases
    from ``attention_bias``, per-head q/k norms from ``use_qk_norm``; ``num_nextn_predict_layers`` MTP layers.
    Defaults are ``Glm4MoeConfig``'s."""
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    vocab = c.int("vocab_size")
    # Glm4MoeAttention: getattr(config, "head_dim", hidden_size // num_attention_heads), rounded down
    n_heads, n_kv, head_dim = floor_heads(c, hidden)
    inter = c.int("intermediate_size")
    n_exp = c.int("n_routed_experts", "num_local_experts")
    top_k = c.int("num_experts_per_tok")
    if top_k > n_exp:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=n_exp))
    expert = c.int("moe_intermediate_size")
    moe = MoeSpec(
        num_experts=n_exp,
        top_k=top_k,
        expert_intermediate=expert,
        shared_intermediate=c.int("n_shared_experts", default=1, min_value=0) * expert,
        router_correction_bias=True,
    )
    first_dense = c.int("first_k_dense_replace", default=1, min_value=0)
    layers = tuple(
        LayerSpec(
            index=i,
            attention=AttentionKind.FULL,
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            mlp="dense" if i < first_dense else "moe",
            intermediate=inter if i < first_dense else 0,
            moe=None if i < first_dense else moe,
        )
        for i in range(n_layers)
    )
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=c.bool("attention_bias", default=False),
        qk_norm="head" if c.bool("use_qk_norm", default=False) else "none",
        mtp_layers=c.int("num_nextn_predict_layers", default=1, min_value=0),
        mtp_own_embeddings=True,
        sources={
            "dense layers": f"first_k_dense_replace = {first_dense}",
            "mtp": "num_nextn_predict_layers",
        },
        **_common(c, outer, fam),
    )


def _olmoe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """OLMoE: Llama's config and MoE fields (``num_experts``, ``intermediate_size`` per expert); q_norm and k_norm
    span the whole q and k projections (``OlmoeAttention``)."""
    return _llama_like(c, outer, base, fam).model_copy(update={"qk_norm": "full"})


def _exaone4(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """EXAONE 4.0: per-head q/k norms; sliding layers from ``layer_types``, else from ``sliding_window_pattern``
    (default 4) when a ``sliding_window`` is set, else every layer global (``Exaone4Config``)."""
    cfg = c
    src = "layer_types"
    if c.get("layer_types") is None:
        n_layers = c.int("num_hidden_layers")
        if _lenient_int(c, "sliding_window"):
            pattern = c.get("sliding_window_pattern", 4)
            cfg = _with_layer_types(c, _pattern_types(c, pattern, n_layers))
            src = f"sliding_window_pattern {pattern}"
        else:
            cfg = _with_layer_types(c, ["full_attention"] * n_layers)
            src = "no sliding_window: every layer global"
    arch = _llama_like(cfg, outer, base, fam)
    return arch.model_copy(update={"qk_norm": "head", "sources": {**arch.sources, "attention kinds": src}})


def _cohere(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Command R / R+ (cohere) and R7B (cohere2): one norm a layer for attention and MLP side by side, q/k norms
    when ``use_qk_norm``; Cohere2's sliding layers from ``layer_types`` or ``sliding_window_pattern`` (default 4,
    ``Cohere2Config``)."""
    cfg = c
    src = None
    if base == "cohere2" and c.get("layer_types") is None:
        pattern = c.get("sliding_window_pattern", 4)
        cfg = _with_layer_types(c, _pattern_types(c, pattern, c.int("num_hidden_layers")))
        src = f"sliding_window_pattern {pattern}"
    arch = _llama_like(cfg, outer, base, fam)
    sources = {**arch.sources, "attention kinds": src} if src else arch.sources
    qk_norm = "full" if c.bool("use_qk_norm", default=False) else "none"
    return arch.model_copy(update={"norms_per_layer": 1, "qk_norm": qk_norm, "sources": sources})


def _starcoder2(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """StarCoder2: Llama's config fields; every projection has a bias when ``use_bias`` (default true)."""
    arch = _llama_like(c, outer, base, fam)
    bias = c.bool("use_bias", default=True)
    return arch.model_copy(update={"qkv_bias": bias, "o_bias": bias, "mlp_bias": bias})
