"""The tensors of the third round's dense families that no field of their record describes (``Family.extras``, as
:mod:`.inventory_dense2` keeps them): Doge's dynamic-mask parameters, residual scales and CDMoE experts.

Names and shapes from transformers 5.24's ``modeling_doge.py`` (checked against the model it builds from its own
default config, ``benchmarks/data/transformers_families.jsonl``, and from one with ``is_moe``).
"""

from __future__ import annotations

from collections.abc import Mapping
from math import isqrt

from .architecture import Architecture, LayerSpec
from .families import Family
from .inventory_dense2 import Extras
from .tensor_builder import Builder as _Builder


def _doge_layer(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """DogeAttention's dynamic mask: ``A`` (one per KV head) and ``dt_proj`` (values -> one logit per KV head,
    attention_bias); DogeDecoderLayer's ``input_residual`` and ``post_attention_residual`` (hidden wide). With
    ``is_moe`` the MLP is DogeCDMoE: its gate / up / down are the record's dense MLP (the shared expert), beside
    them ``router_gate`` (2 x floor(sqrt(num_experts)) product keys, no bias) and the experts, one neuron each:
    ``down_embed`` (reads the hidden state) and ``up_embed`` (writes it), nn.Embedding(num_experts, hidden), of which
    a token uses num_experts_per_tok rows."""
    a = f"{p}.{fam.attn}"
    kv = spec.n_kv_heads * spec.v_head_dim
    b.add(f"{a}.A", (spec.n_kv_heads,), "state_param", spec.index, part)
    b.linear(f"{a}.dt_proj", spec.n_kv_heads, kv, "attn", spec.index, part, arch.qkv_bias)
    for name in ("input_residual", "post_attention_residual"):
        b.add(f"{p}.{name}", (arch.hidden,), "state_param", spec.index, part)
    experts = int(arch.details.get("experts", 0))
    if experts:
        frac = int(arch.details["top_k"]) / experts
        b.linear(f"{p}.{fam.mlp_prefix}router_gate", 2 * isqrt(experts), arch.hidden, "router", spec.index, part)
        for name in ("down_embed", "up_embed"):
            b.add(f"{p}.{fam.mlp_prefix}{name}.weight", (experts, arch.hidden), "expert", spec.index, part, frac)


#: ``Family.extras`` -> the builder of that family's extra tensors
DENSE3_EXTRAS: Mapping[str, Extras] = {"doge": Extras(_doge_layer)}
