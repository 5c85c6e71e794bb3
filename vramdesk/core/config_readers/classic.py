"""Readers of the GPT-2-era decoders transformers still ships: GPT-2 (and DistilGPT2), GPT-J, CodeGen and OPT.

Each reads the config fields its ``modeling_<family>.py`` reads (the tensor names are in the family records of
:mod:`vramdesk.core.families`); the layouts are uniform stacks, built by ``legacy._simple_stack``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, ConfigError
from ..families import Family
from ..messages import Message
from .fields import _Cfg
from .legacy import _gpt_bigcode, _mha_width, _simple_stack

#: OPTConfig.layer_norm_elementwise_affine false: LayerNorms without weights, which no published OPT has
OPT_NORMS_WITHOUT_WEIGHTS = Message(
    "config.opt_norms_without_weights",
    "{model_type}: layer_norm_elementwise_affine false (LayerNorms without weights) is not supported",
)

#: OPTLearnedPositionalEmbedding: "if padding_idx is specified then offset the embedding ids by 2"
_OPT_POSITION_OFFSET = 2


def _gpt2(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GPT-2 (GPT2Config: n_embd, n_layer, n_head, n_inner = None for 4 x n_embd, n_positions): GPT-BigCode's
    stack with a key and a value per head (GPT-2 has no ``multi_query``; GPT-BigCode's reader defaults it on)."""
    return _gpt_bigcode(_Cfg({**c.d, "multi_query": False}, c.model_type), outer, base, fam)


def _gptj(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GPT-J and CodeGen (GPTJConfig / CodeGenConfig): multi-head attention without biases, rotary over
    ``rotary_dim`` (no parameters), one ln_1 for attention and MLP in parallel, MLP of n_inner (None: 4 x n_embd)
    with biases, an untied lm_head with a bias."""
    hidden, n_heads = _mha_width(c, ("n_embd", "hidden_size"), ("n_head", "num_attention_heads"))
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
        inter=c.int("n_inner", default=4 * hidden),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        mlp_bias=True,
        norms_per_layer=1,
        lm_head_bias=True,
        sources={"rotary": f"rotary_dim = {c.int('rotary_dim', default=hidden // n_heads)} of each head"},
    )


def _opt(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """OPT (OPTConfig): multi-head attention and an fc1 / fc2 MLP of ``ffn_dim``, biases from ``enable_bias``,
    learned positions with 2 extra rows, a ``word_embed_proj_dim``-wide embedding, and no final norm when the
    layers normalise after attention (``do_layer_norm_before`` false: OPT-350m) or ``_remove_final_layer_norm``."""
    hidden, n_heads = _mha_width(c, ("hidden_size",), ("num_attention_heads",))
    if not c.bool("layer_norm_elementwise_affine", default=True):
        raise ConfigError(OPT_NORMS_WITHOUT_WEIGHTS(model_type=c.model_type))
    bias = c.bool("enable_bias", default=True)
    width = c.int("word_embed_proj_dim", default=hidden)
    pre_norm = c.bool("do_layer_norm_before", default=True)
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
        inter=c.int("ffn_dim"),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bias,
        learned_positions=c.int("max_position_embeddings") + _OPT_POSITION_OFFSET,
        embed_width=0 if width == hidden else width,
        final_norm=pre_norm and not c.bool("_remove_final_layer_norm", default=False),
    )
