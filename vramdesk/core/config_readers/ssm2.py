"""Readers of the second round's recurrent hybrids: Zamba (Mamba-1 layers, one shared transformer block called
every few layers) and Zamba2 (Mamba-2 layers, ``num_mem_blocks`` shared blocks called in turn, low-rank adapters
per call).

A Zamba hybrid layer is ``AttentionKind.FULL`` with its Mamba mixer beside (its own KV cache per call of the shared
block, and the mixer's state) and a :class:`~vramdesk.core.architecture.SharedBlockSpec` that says which block it
calls and which layer stores that block's weights. Fields and defaults from transformers 5.24's
``configuration_<type>.py`` (whose ``__post_init__`` derives attention_hidden_size, attention_head_dim and
mamba_headdim from the hidden size, whatever the config stores).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import (
    Architecture,
    AttentionKind,
    ConfigError,
    LayerSpec,
    Mamba1Spec,
    Mamba2Spec,
    SharedBlockSpec,
)
from ..families import Family
from ..messages import Message
from .fields import NOT_DIVISIBLE, _Cfg, _common
from .recurrent import _kinds
from .ssm import _dt_rank

NO_HYBRID = Message(
    "config.zamba.no_hybrid", "{model_type}: '{key}' has no 'hybrid' layer (the shared attention block)"
)

#: layers_block_type entries (transformers remaps the legacy "mamba" to "linear_attention")
_ZAMBA_KINDS = {"mamba": "mamba", "linear_attention": "mamba", "hybrid": "hybrid"}


def _zamba_default_kinds(c: _Cfg, n: int) -> list[str]:
    """ZambaConfig's default: two Mamba layers, a hybrid one, then hybrid where i % attn_layer_period ==
    attn_layer_offset over the remaining layers."""
    period = c.int("attn_layer_period", default=6)
    offset = c.int("attn_layer_offset", default=4, min_value=0)
    rest = ["hybrid" if i % period == offset else "mamba" for i in range(max(n - 3, 0))]
    return ["mamba", "mamba", "hybrid", *rest][:n]


def _zamba2_default_kinds(n: int) -> list[str]:
    """Zamba2Config's default (the Zamba2-2.7B pattern; 54 layers): a hybrid layer after every five Mamba layers,
    then after four, three and two."""
    kinds = ["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"] + ["mamba"] * 3 + ["hybrid"]
    kinds += ["mamba"] * 2
    return (kinds + ["mamba"] * max(n - len(kinds), 0))[:n]


def _layer_kinds(c: _Cfg, n: int, default: list[str]) -> tuple[list[str], str]:
    """Each layer's kind from layers_block_type (Zamba2's alias layer_types), else the config class's default."""
    key = "layer_types" if c.has("layer_types") and not c.has("layers_block_type") else "layers_block_type"
    if not c.has(key):
        kinds, src = default, f"{c.model_type}'s default layer pattern"
    else:
        kinds, src = _kinds(c, key, _ZAMBA_KINDS, n), key
    if "hybrid" not in kinds:
        raise ConfigError(NO_HYBRID(model_type=c.model_type, key=key))
    return kinds, src


def _attention_width(c: _Cfg, hidden: int, heads: int, *, stored: bool) -> tuple[int, int]:
    """(attention_hidden_size, attention_head_dim): twice the hidden size, split over the heads (Zamba keeps what
    its config stores; Zamba2Config always derives them)."""
    width = c.int("attention_hidden_size", default=2 * hidden) if stored else 2 * hidden
    if (2 * hidden) % heads:
        raise ConfigError(
            NOT_DIVISIBLE(model_type=c.model_type, field="2 x hidden_size", value=2 * hidden, by="heads", divisor=heads)
        )
    head_dim = c.int("attention_head_dim", default=2 * hidden // heads) if stored else 2 * hidden // heads
    return width, head_dim


def _layers(
    c: _Cfg,
    kinds: list[str],
    mixer: Mamba1Spec | Mamba2Spec,
    blocks: int,
    shared: dict[str, Any],
) -> tuple[LayerSpec, ...]:
    """One LayerSpec per layer: a Mamba layer (LINEAR, no MLP) or a hybrid layer (FULL attention and the MLP of
    shared block ``k % blocks`` at its k-th call, its Mamba mixer beside)."""
    hidden = c.int("hidden_size")
    heads = c.int("num_attention_heads")
    kv = c.int("num_key_value_heads", default=heads)
    width, head_dim = _attention_width(c, hidden, heads, stored=shared.pop("stored"))
    inter = shared.pop("intermediate")
    owners: dict[int, int] = {}
    layers = []
    calls = 0
    for i, kind in enumerate(kinds):
        call = None
        if kind == "hybrid":
            block = calls % blocks
            owner = owners.setdefault(block, i)
            call = SharedBlockSpec(block=block, owner=owner, invocation=calls, input_width=width, **shared)
            calls += 1
        layers.append(
            LayerSpec(
                index=i,
                attention=AttentionKind.FULL if call else AttentionKind.LINEAR,
                n_heads=heads,
                n_kv_heads=kv,
                head_dim=head_dim,
                v_head_dim=head_dim,
                mamba=mixer if isinstance(mixer, Mamba2Spec) else None,
                mamba1=mixer if isinstance(mixer, Mamba1Spec) else None,
                mlp="dense" if call else "none",
                intermediate=inter if call else 0,
                shared=call,
            )
        )
    return tuple(layers)


def _arch(
    c: _Cfg, outer: Mapping[str, Any], fam: Family, layers: tuple[LayerSpec, ...], sources: dict[str, str]
) -> Architecture:
    return Architecture(
        model_type=c.model_type,
        hidden=c.int("hidden_size"),
        vocab=c.int("vocab_size"),
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        mlp_bias=fam.name == "zamba2" and c.bool("add_bias_linear", default=False),
        norms_per_layer=1,
        sources=sources,
        **_common(c, outer, fam),
    )


def _zamba(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Zamba (ZambaConfig): layers_block_type ("mamba" / "hybrid"), a ZambaMambaMixer of n_mamba_heads heads
    (mamba_expand x hidden wide, mamba_d_state, mamba_dt_rank, mamba_d_conv, mamba_conv_bias, mamba_proj_bias) in
    every layer; one shared block of num_attention_heads x attention_head_dim attention and a gated MLP of
    intermediate_size."""
    hidden = c.int("hidden_size")
    n = c.int("num_hidden_layers")
    kinds, src = _layer_kinds(c, n, _zamba_default_kinds(c, n))
    width = c.int("mamba_expand", default=2) * hidden
    heads = c.int("n_mamba_heads", default=1)
    if width % heads:
        raise ConfigError(
            NOT_DIVISIBLE(model_type=c.model_type, field="mamba width", value=width, by="n_mamba_heads", divisor=heads)
        )
    mixer = Mamba1Spec(
        intermediate=width,
        state_size=c.int("mamba_d_state", default=16),
        dt_rank=_dt_rank(c, "mamba_dt_rank", hidden),
        conv_kernel=c.int("mamba_d_conv", default=4),
        conv_bias=c.bool("mamba_conv_bias", default=True),
        proj_bias=c.bool("mamba_proj_bias", default=False),
        heads=heads,
    )
    shared = {"stored": True, "intermediate": c.int("intermediate_size")}
    layers = _layers(c, kinds, mixer, 1, shared)
    return _arch(c, outer, fam, layers, {"layer kinds": src, "shared block": "one, tied to the first hybrid layer"})


def _zamba2(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Zamba2 (Zamba2Config): layers_block_type, a Mamba-2 mixer in every layer (n_mamba_heads heads of
    mamba_expand x hidden / n_mamba_heads: the config class derives mamba_headdim, whatever the config stores;
    mamba_ngroups, mamba_d_state, mamba_d_conv; in_proj / out_proj biases add_bias_linear); num_mem_blocks shared
    blocks (attention, a fused gate_up MLP of intermediate_size, 4 x hidden by default) with adapter_rank adapters
    per call on the MLP and, with use_shared_attention_adapter, on q / k / v."""
    n = c.int("num_hidden_layers")
    kinds, src = _layer_kinds(c, n, _zamba2_default_kinds(n))
    width = c.int("mamba_expand", default=2) * c.int("hidden_size")
    heads = c.int("n_mamba_heads", default=8)
    if width % heads:
        raise ConfigError(
            NOT_DIVISIBLE(model_type=c.model_type, field="mamba width", value=width, by="n_mamba_heads", divisor=heads)
        )
    mixer = Mamba2Spec(
        num_heads=heads,
        head_dim=width // heads,
        state_size=c.int("mamba_d_state", default=64),
        n_groups=c.int("mamba_ngroups", default=1),
        conv_kernel=c.int("mamba_d_conv", default=4),
        # Zamba2MambaMixer's conv1d always has a bias (``bias=True``), whatever use_conv_bias says
        conv_bias=True,
        proj_bias=c.bool("add_bias_linear", default=False),
    )
    rank = c.int("adapter_rank", default=128)
    shared = {
        "stored": False,
        "intermediate": c.int("intermediate_size", default=4 * c.int("hidden_size")),
        "adapter_rank": rank,
        "attn_adapters": c.bool("use_shared_attention_adapter", default=False),
    }
    blocks = c.int("num_mem_blocks", default=1)
    layers = _layers(c, kinds, mixer, blocks, shared)
    sources = {"layer kinds": src, "shared blocks": "num_mem_blocks, called in turn by the hybrid layers"}
    return _arch(c, outer, fam, layers, sources)
