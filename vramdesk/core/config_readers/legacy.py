"""Readers of the uniform stacks (every layer full attention, one MLP width): Qwen v1 and the GPT-2-era
families, GPT-BigCode (StarCoder), GPT-NeoX (Pythia), Falcon, BLOOM and Phi-1 / Phi-2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, LayerSpec
from ..families import Family
from ..messages import Message
from .fields import NOT_DIVISIBLE, _Cfg, _common, _heads

ODD_INTERMEDIATE = Message(
    "config.intermediate_size_odd",
    "{model_type}: intermediate_size ({inter}) must be even (two MLP branches of half width)",
)


def _mha_width(c: _Cfg, hidden_keys: tuple[str, ...], head_keys: tuple[str, ...]) -> tuple[int, int]:
    """(width, heads) of a multi-head stack read from the first of each set of field names the config has; refused
    when the heads do not split the width (the message names the first spelling of each)."""
    hidden = c.int(*hidden_keys)
    n_heads = c.int(*head_keys)
    if hidden % n_heads:
        raise ConfigError(
            NOT_DIVISIBLE(model_type=c.model_type, field=hidden_keys[0], value=hidden, by=head_keys[0], divisor=n_heads)
        )
    return hidden, n_heads


def _simple_stack(
    c: _Cfg,
    outer: Mapping[str, Any],
    fam: Family,
    *,
    hidden: int,
    n_layers: int,
    vocab: int,
    n_heads: int,
    n_kv: int,
    head_dim: int,
    inter: int,
    **kw: Any,
) -> Architecture:
    """A stack of identical full-attention layers with one MLP width; ``kw`` = the family's other fields."""
    layers = tuple(
        LayerSpec(
            index=i,
            attention=AttentionKind.FULL,
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            intermediate=inter,
        )
        for i in range(n_layers)
    )
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        **kw,
        **_common(c, outer, fam),
    )


def _qwen_v1(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Qwen (v1, 2023; remote code ``QWenLMHeadModel``): fused c_attn with a bias, w1/w2/c_proj MLP whose
    config ``intermediate_size`` is twice the width of each branch, no other biases (``no_bias``), RMSNorm;
    the dtype comes from the bf16/fp16/fp32 flags (all false: bf16, as the checkpoints are stored)."""
    hidden = c.int("hidden_size")
    n_heads = c.int("num_attention_heads")
    head_dim = c.int("kv_channels", default=hidden // n_heads)
    inter = c.int("intermediate_size")
    if inter % 2:
        raise ConfigError(ODD_INTERMEDIATE(model_type=c.model_type, inter=inter))
    biased = not c.bool("no_bias", default=True)
    arch = _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=c.int("num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_heads,
        head_dim=head_dim,
        inter=inter // 2,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=True,
        o_bias=biased,
        mlp_bias=biased,
        logits_fp32=False,
        sources={"MLP width": "intermediate_size / 2 (w1 and w2 each)", "loss": "modeling_qwen.py: 16-bit logits"},
    )
    flags = [name for name in ("fp32", "fp16", "bf16") if c.get(name) is True]
    return arch.model_copy(update={"dtype": flags[0]}) if flags else arch


def _gpt_bigcode(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GPT-BigCode (StarCoder / SantaCoder): MQA unless ``multi_query`` is false, learned positions."""
    hidden, n_heads = _mha_width(c, ("n_embd", "hidden_size"), ("n_head", "num_attention_heads"))
    mq = c.bool("multi_query", default=True)
    return _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=c.int("n_layer", "num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=1 if mq else n_heads,
        head_dim=hidden // n_heads,
        inter=c.int("n_inner", default=4 * hidden),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        learned_positions=c.int("n_positions", "max_position_embeddings"),
    )


def _gpt_neox(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GPT-NeoX (Pythia): attention biases unless ``attention_bias`` is false, MLP biases, MLP 4x wide by
    default."""
    hidden = c.int("hidden_size")
    n_heads, _, head_dim = _heads(c, hidden)
    return _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=c.int("num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_heads,
        head_dim=head_dim,
        inter=c.int("intermediate_size", default=4 * hidden),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=c.bool("attention_bias", default=True),
        o_bias=c.bool("attention_bias", default=True),
        mlp_bias=True,
    )


def _falcon(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Falcon: MQA, GQA (``new_decoder_architecture``) or MHA; one norm for parallel attention and MLP, two
    for the new decoder architecture (``num_ln_in_parallel_attn``); biases from ``bias``."""
    hidden, n_heads = _mha_width(c, ("hidden_size",), ("num_attention_heads", "n_head"))
    new_arch = c.bool("new_decoder_architecture", default=False)
    if new_arch:
        n_kv = c.int("num_kv_heads", "n_head_kv", default=n_heads)
    elif c.bool("multi_query", default=True):
        n_kv = 1
    else:
        n_kv = n_heads
    parallel = c.bool("parallel_attn", default=True)
    norms = 2 if new_arch and c.int("num_ln_in_parallel_attn", default=2) == 2 else (1 if parallel else 2)
    bias = c.bool("bias", default=False)
    return _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=c.int("num_hidden_layers", "n_layer"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_kv,
        head_dim=hidden // n_heads,
        inter=c.int("ffn_hidden_size", default=4 * hidden),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        norms_per_layer=norms,
    )


def _bloom(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """BLOOM: MHA, MLP 4x wide, biases everywhere, a LayerNorm after the embedding."""
    hidden, n_heads = _mha_width(c, ("hidden_size", "n_embed"), ("n_head", "num_attention_heads"))
    return _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=c.int("n_layer", "num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_heads,
        head_dim=hidden // n_heads,
        inter=4 * hidden,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        embedding_norm=True,
    )


def _phi(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Phi-1 / Phi-2: one LayerNorm per layer (parallel attention and MLP), biases, lm_head bias, optional
    q/k LayerNorms (``qk_layernorm``)."""
    hidden = c.int("hidden_size")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    return _simple_stack(
        c,
        outer,
        fam,
        hidden=hidden,
        n_layers=c.int("num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_kv,
        head_dim=head_dim,
        inter=c.int("intermediate_size"),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=True,
        o_bias=True,
        mlp_bias=True,
        norms_per_layer=1,
        lm_head_bias=True,
        qk_norm="head_ln" if c.bool("qk_layernorm", default=False) else "none",
    )
