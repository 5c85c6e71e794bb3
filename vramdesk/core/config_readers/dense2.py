"""Readers of dense decoders outside the Llama mould: GPT-Neo (local and global layers), MPT (ALiBi), XGLM and
BioGPT (fairseq's layer), StableLM, BitNet, Arcee and Apertus (Llama's config with their own MLPs and norms), the
ModernBERT decoder and Mistral Small 4 (DeepSeek-V3's MLA layout).

Each reads the fields its ``modeling_<family>.py`` / ``configuration_<family>.py`` in transformers 5.24 reads; the
tensor names are in the family records of :mod:`vramdesk.core.families`, the tensors no record field describes in
:mod:`vramdesk.core.inventory_dense2`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, ConfigError
from ..families import Family
from ..messages import Message
from .classic import _gpt2
from .decoders import _llama_like
from .fields import NOT_LIST, _Cfg
from .legacy import _mha_width, _simple_stack

GPT_NEO_LAYERS_COUNT = Message(
    "config.gpt_neo.attention_layers_count",
    "{model_type}: attention_types describe {entries} layers but num_layers is {layers}",
)
GPT_NEO_LAYER_UNKNOWN = Message(
    "config.gpt_neo.attention_layer_unknown",
    "{model_type}: attention_types entry {name!r} is neither 'global' nor 'local'",
)
MPT_ATTN_CONFIG = Message("config.mpt.attn_config", "{model_type}: field 'attn_config' must be an object")
MPT_ATTN_TYPE = Message(
    "config.mpt.attn_type",
    "{model_type}: attn_config.attn_type {value!r} is not multihead_attention, multiquery_attention or "
    "grouped_query_attention",
)

#: BioGptLearnedPositionalEmbedding: "if padding_idx is specified then offset the embedding ids by 2"
_BIOGPT_POSITION_OFFSET = 2


def _gpt_neo_kinds(c: _Cfg, n_layers: int) -> list[str]:
    """GPTNeoConfig.attention_layers: ``attention_types`` ([[["global", "local"], 12]]: the pair 12 times)
    expanded, one "global" or "local" a layer."""
    spec = c.get("attention_types", [[["global", "local"], n_layers // 2]])
    kinds: list[str] = []
    if not isinstance(spec, list) or not all(
        isinstance(item, list) and len(item) == 2 and isinstance(item[0], list) and isinstance(item[1], int)
        for item in spec
    ):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key="attention_types"))
    # (the count is checked before the pairs are spelled out: a huge repeat count is refused, not allocated)
    total = sum(len(names) * times for names, times in spec)
    if total != n_layers:
        raise ConfigError(GPT_NEO_LAYERS_COUNT(model_type=c.model_type, entries=total, layers=n_layers))
    for names, times in spec:
        kinds.extend(list(names) * times)
    for name in kinds:
        if name not in ("global", "local"):
            raise ConfigError(GPT_NEO_LAYER_UNKNOWN(model_type=c.model_type, name=name))
    if len(kinds) != n_layers:
        raise ConfigError(GPT_NEO_LAYERS_COUNT(model_type=c.model_type, entries=len(kinds), layers=n_layers))
    return kinds


def _gpt_neo(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GPT-Neo (GPTNeoConfig: hidden_size, num_layers, num_heads, intermediate_size None for 4 x hidden,
    max_position_embeddings learned positions). Its local layers mask attention to the last ``window_size``
    tokens but keep every token's keys and values: the cache transformers builds (``DynamicCache(config=...)``)
    finds no ``sliding_window`` in GPTNeoConfig, so every layer is cached as a full one; vLLM and llama.cpp do not
    run GPT-Neo."""
    hidden, n_heads = _mha_width(c, ("hidden_size", "n_embd"), ("num_heads", "num_attention_heads"))
    n_layers = c.int("num_layers", "num_hidden_layers")
    kinds = _gpt_neo_kinds(c, n_layers)
    local = kinds.count("local")
    window = c.int("window_size", default=256)
    return _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=n_layers,
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_heads,
        head_dim=hidden // n_heads,
        inter=c.int("intermediate_size", default=4 * hidden),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        o_bias=True,
        mlp_bias=True,
        learned_positions=c.int("max_position_embeddings"),
        sources={
            "attention kinds": f"attention_types: {local} local layers (window_size {window}) mask attention and "
            "cache every token, as transformers' GPT-Neo does"
        },
    )


def _mpt(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """MPT (MptConfig and MosaicML's remote configuration_mpt.py: d_model, n_layers, n_heads, expansion_ratio,
    max_seq_len, ``attn_config`` with attn_type / kv_n_heads / alibi): ALiBi, so no position table (a learned one,
    max_seq_len rows, only with ``learned_pos_emb`` and alibi off, as llm-foundry builds it); no biases and weight-only
    LayerNorms with ``no_bias`` (default true, every published MPT)."""
    hidden, n_heads = _mha_width(c, ("d_model", "hidden_size"), ("n_heads", "num_attention_heads"))
    attn = c.get("attn_config", {})
    if not isinstance(attn, Mapping):
        raise ConfigError(MPT_ATTN_CONFIG(model_type=c.model_type))
    a = _Cfg(attn, c.model_type)
    kind = a.get("attn_type", "multihead_attention")
    if kind == "multihead_attention":
        n_kv = n_heads
    elif kind == "multiquery_attention":
        n_kv = 1
    elif kind == "grouped_query_attention":
        n_kv = a.int("kv_n_heads", default=n_heads)
    else:
        raise ConfigError(MPT_ATTN_TYPE(model_type=c.model_type, value=kind))
    bias = not c.bool("no_bias", default=True)
    alibi = a.bool("alibi", default=True)
    positions = c.int("max_seq_len", default=2048) if c.bool("learned_pos_emb", default=True) and not alibi else 0
    arch = _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=c.int("n_layers", "num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_kv,
        head_dim=hidden // n_heads,
        inter=c.int("expansion_ratio", default=4) * hidden,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        learned_positions=positions,
        sources={"positions": "attn_config.alibi: ALiBi, no position table" if alibi else "learned_pos_emb"},
    )
    max_pos = c.int("max_seq_len", default=2048)
    return arch.model_copy(update={"norm": "layer" if bias else "rms", "max_position": max_pos})


def _fairseq(c: _Cfg, outer: Mapping[str, Any], fam: Family, hidden_keys: tuple[str, ...], **kw: Any) -> Architecture:
    """XGLM's and BioGPT's layer: multi-head attention and fc1 / fc2 with biases, LayerNorms, a tied head."""
    hidden, n_heads = _mha_width(c, hidden_keys, ("attention_heads", "num_attention_heads"))
    return _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=c.int("num_layers", "num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_heads,
        head_dim=hidden // n_heads,
        inter=c.int("ffn_dim", "intermediate_size"),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        **kw,
    )


def _xglm(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """XGLM (XGLMConfig: d_model, num_layers, attention_heads, ffn_dim): sinusoidal positions, no table."""
    return _fairseq(c, outer, fam, ("d_model", "hidden_size"), sources={"positions": "sinusoidal: no table"})


def _biogpt(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """BioGPT (BioGptConfig: hidden_size, num_hidden_layers, num_attention_heads, intermediate_size): learned
    positions, max_position_embeddings + 2 rows."""
    positions = c.int("max_position_embeddings", default=1024) + _BIOGPT_POSITION_OFFSET
    return _fairseq(c, outer, fam, ("hidden_size",), learned_positions=positions)


def _stablelm(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """StableLM (StableLmConfig): Llama's fields; q/k/v biases from ``use_qkv_bias`` and none on o_proj, one
    input_layernorm a layer with ``use_parallel_residual``, per-head q/k LayerNorms with ``qk_layernorm``."""
    arch = _llama_like(c, outer, base, fam)
    return arch.model_copy(
        update={
            "qkv_bias": c.bool("use_qkv_bias", default=False),
            "o_bias": False,
            "norms_per_layer": 1 if c.bool("use_parallel_residual", default=False) else 2,
            "qk_norm": "per_head_ln" if c.bool("qk_layernorm", default=False) else "none",
        }
    )


def _llama_config(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """BitNet and Arcee: Llama's config fields as they are (their records name what their modules change)."""
    return _llama_like(c, outer, base, fam)


def _apertus(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Apertus (ApertusConfig): Llama's fields, per-head q/k norms, the xIELU activation (``hidden_act``, default
    "xielu") with its two learned scalars per layer."""
    arch = _llama_like(c, outer, base, fam)
    act = str(c.get("hidden_act", "xielu"))
    return arch.model_copy(update={"qk_norm": "head", "details": {"activation": act}})


def _modernbert_decoder(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """ModernBERT decoder (ModernBertDecoderConfig): sliding layers from ``layer_types`` (else every
    ``global_attn_every_n_layers``-th layer global, from layer 0) over ``local_attention // 2`` tokens (the config
    overwrites ``sliding_window`` with it); biases from attention_bias, mlp_bias, norm_bias, classifier_bias (the
    head's dense) and decoder_bias (the output layer)."""
    n_layers = c.int("num_hidden_layers")
    every = c.int("global_attn_every_n_layers", default=3)
    types = c.get("layer_types") or [
        "full_attention" if i % every == 0 else "sliding_attention" for i in range(n_layers)
    ]
    local = c.int("local_attention", default=128)
    cfg = _Cfg({**c.d, "layer_types": types, "sliding_window": local // 2}, c.model_type)
    arch = _llama_like(cfg, outer, base, fam)
    norm_bias = c.bool("norm_bias", default=False)
    return arch.model_copy(
        update={
            "norm": "layer" if norm_bias else "rms",
            "norms_per_layer": 1,
            "lm_head_bias": c.bool("decoder_bias", default=True),
            "details": {"head_bias": int(c.bool("classifier_bias", default=False))},
            "sources": {**arch.sources, "sliding window": f"local_attention {local} // 2"},
        }
    )


def _openai_gpt(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GPT-1 (OpenAIGPTConfig: n_embd, n_layer, n_head, n_positions; its MLP is 4 x n_embd): GPT-2's stack without
    the final norm (each layer normalises after attention and after the MLP)."""
    arch = _gpt2(_Cfg({**c.d, "n_inner": None}, c.model_type), outer, base, fam)
    return arch.model_copy(update={"final_norm": False})


def _gpt_neox_japanese(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GPT-NeoX-Japanese (GPTNeoXJapaneseConfig): an MLP of hidden_size x intermediate_multiple_size (default 4),
    no biases on the projections (the last layer's dense_bias is the record's extra tensor)."""
    hidden, n_heads = _mha_width(c, ("hidden_size",), ("num_attention_heads",))
    return _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=c.int("num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_heads,
        head_dim=hidden // n_heads,
        inter=hidden * c.int("intermediate_multiple_size", default=4),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
    )


def _jais2(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Jais 2 (Jais2Config): Llama's fields with attention_bias (q/k/v and o) and mlp_bias true by default."""
    arch = _llama_like(c, outer, base, fam)
    attn = c.bool("attention_bias", default=True)
    return arch.model_copy(update={"qkv_bias": attn, "o_bias": attn, "mlp_bias": c.bool("mlp_bias", default=True)})
