"""DeepSeek-V4 (Flash / Pro): hyper-connected MoE decoders whose attention is a sliding window over one shared
K = V head, with a compressor on most layers (installed transformers 5.24's configuration_deepseek_v4.py and
modeling_deepseek_v4.py are the reference).

What :class:`DeepseekV4Config` derives, and so what is read here:

* ``layer_types``: one of "sliding_attention", "compressed_sparse_attention" (CSA) and
  "heavily_compressed_attention" (HCA) per layer; else the published configs' ``compress_ratios`` (0, the CSA rate
  or the HCA rate per layer; entries past ``num_hidden_layers`` are the MTP layers'); else two HCA layers and then
  CSA / HCA in turn;
* ``compress_rates`` {CSA: 4, HCA: 128}, or the older top-level ``compress_rate_csa`` / ``compress_rate_hca``;
* ``mlp_layer_types``: "hash_moe" (a router whose experts a frozen ``tid2eid`` table picks by token id: no score
  correction bias) or "moe"; else the first ``num_hash_layers`` (default 3) hash-routed;
* every layer MoE: ``n_routed_experts`` of ``moe_intermediate_size`` and ``n_shared_experts`` fused into one shared
  MLP; ``hc_mult`` residual streams, mixed by two hyper-connections a layer and one head before the norm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import (
    Architecture,
    AttentionKind,
    CompressedAttnSpec,
    ConfigError,
    DsaIndexerSpec,
    LayerSpec,
    MoeSpec,
)
from ..families import Family
from .decoders import TOP_K_ABOVE_EXPERTS
from .fields import LAYER_TYPES_NOT_STRINGS, NOT_LIST, _Cfg, _common
from .ownvlm import NOT_OBJECT_FIELD, PER_LAYER_COUNT, PER_LAYER_UNKNOWN

_SLIDING, _CSA, _HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
#: DeepseekV4Config.default_compress_rates and default_num_hash_layers
_DEFAULT_RATES = {_CSA: 4, _HCA: 128}
_DEFAULT_HASH_LAYERS = 3


def _rates(c: _Cfg) -> dict[str, int]:
    """Tokens per compressed entry of CSA and HCA layers: ``compress_rates``, the older scalar fields over it."""
    raw = c.get("compress_rates", {})
    if not isinstance(raw, Mapping):
        raise ConfigError(NOT_OBJECT_FIELD(model_type=c.model_type, key="compress_rates"))
    rates = dict(_DEFAULT_RATES)
    for kind in raw:
        if kind not in rates:
            raise ConfigError(PER_LAYER_UNKNOWN(model_type=c.model_type, value=kind, key="compress_rates"))
        rates[kind] = _Cfg(raw, c.model_type).int(kind)
    for kind, legacy in ((_CSA, "compress_rate_csa"), (_HCA, "compress_rate_hca")):
        if c.has(legacy):
            rates[kind] = c.int(legacy)
    return rates


def _per_layer(c: _Cfg, key: str, known: tuple[Any, ...], n: int) -> list[Any] | None:
    """A per-layer list (at least ``n`` entries, each one of ``known``); None when the config has none."""
    raw = c.get(key)
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key=key))
    if len(raw) < n:
        raise ConfigError(PER_LAYER_COUNT(model_type=c.model_type, key=key, entries=len(raw), layers=n))
    for value in raw:
        if isinstance(value, bool) or value not in known:
            raise ConfigError(PER_LAYER_UNKNOWN(model_type=c.model_type, value=value, key=key))
    return list(raw)


def _layer_kinds(c: _Cfg, n: int, rates: Mapping[str, int]) -> tuple[list[str], str]:
    """Every layer's attention kind, the MTP layers' after the decoder's, and the field that said so."""
    types = c.get("layer_types")
    if types is not None and not (isinstance(types, list) and all(isinstance(t, str) for t in types)):
        raise ConfigError(LAYER_TYPES_NOT_STRINGS(model_type=c.model_type))
    kinds = _per_layer(c, "layer_types", (_SLIDING, _CSA, _HCA), n)
    if kinds is not None:
        return kinds, "layer_types"
    by_rate = {0: _SLIDING, rates[_CSA]: _CSA, rates[_HCA]: _HCA}
    ratios = _per_layer(c, "compress_ratios", tuple(by_rate), n)
    if ratios is not None:
        return [by_rate[r] for r in ratios], "compress_ratios"
    return [_HCA] * min(n, 2) + [_CSA if i % 2 else _HCA for i in range(max(n - 2, 0))], "DeepseekV4Config's default"


def _hash_layers(c: _Cfg, n: int) -> list[bool]:
    """Per layer, whether its router picks experts by token id (``mlp_layer_types`` "hash_moe")."""
    types = _per_layer(c, "mlp_layer_types", ("hash_moe", "moe"), n)
    if types is not None:
        return [t == "hash_moe" for t in types[:n]]
    n_hash = c.int("num_hash_layers", default=_DEFAULT_HASH_LAYERS, min_value=0)
    return [i < n_hash for i in range(n)]


def _deepseek_v4(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """DeepSeek-V4: each layer a :class:`CompressedAttnSpec` attention (SLIDING over ``sliding_window`` tokens of
    one ``head_dim`` K = V head) and a MoE block; ``hc_mult`` kept in ``details`` for the hyper-connections."""
    hidden = c.int("hidden_size")
    n = c.int("num_hidden_layers")
    vocab = c.int("vocab_size")
    n_heads = c.int("num_attention_heads")
    n_kv = c.int("num_key_value_heads", default=1)
    head_dim = c.int("head_dim", default=512)
    window = c.int("sliding_window", default=128)
    q_lora, o_groups = c.int("q_lora_rank", default=1024), c.int("o_groups", default=8)
    o_lora = c.int("o_lora_rank", default=1024)
    rates = _rates(c)
    kinds, kinds_src = _layer_kinds(c, n, rates)
    hashed = _hash_layers(c, n)
    n_exp, top_k = c.int("n_routed_experts", default=256), c.int("num_experts_per_tok", default=6)
    if top_k > n_exp:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=n_exp))
    inter = c.int("moe_intermediate_size", default=2048)
    shared = c.int("n_shared_experts", default=1, min_value=0) * inter
    indexer = DsaIndexerSpec(
        n_heads=c.int("index_n_heads", default=64),
        head_dim=c.int("index_head_dim", default=128),
        topk=c.int("index_topk", default=512),
    )
    hc_mult = c.int("hc_mult", default=4)

    def layer(i: int, kind: str, hash_routed: bool) -> LayerSpec:
        moe = MoeSpec(
            num_experts=n_exp,
            top_k=top_k,
            expert_intermediate=inter,
            shared_intermediate=shared,
            router_correction_bias=not hash_routed,
        )
        attn = CompressedAttnSpec(
            q_lora_rank=q_lora,
            o_groups=o_groups,
            o_lora_rank=o_lora,
            compress_rate=rates.get(kind, 0),
            overlap=kind == _CSA,
        )
        return LayerSpec(
            index=i,
            attention=AttentionKind.SLIDING,
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=0,
            window=window,
            indexer=indexer if kind == _CSA else None,
            mlp="moe",
            moe=moe,
            compressed=attn,
        )

    layers = tuple(layer(i, kinds[i], hashed[i]) for i in range(n))
    mtp = c.int("num_nextn_predict_layers", default=1, min_value=0)
    # the MTP layer's own attention kind where compress_ratios goes on past the decoder (every published config: 0)
    mtp_layer = layer(n, kinds[n], False) if mtp and len(kinds) > n else None
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        attention_sinks=True,
        mtp_layers=mtp,
        mtp_layer=mtp_layer,
        details={"hc_mult": hc_mult},
        sources={
            "attention kinds": f"{kinds_src} (compress_rates {rates[_CSA]} / {rates[_HCA]}); sliding_window {window}",
            "hash-routed layers": "mlp_layer_types" if c.has("mlp_layer_types") else "num_hash_layers",
            "mtp": "num_nextn_predict_layers",
        },
        **_common(c, outer, fam),
    )
