"""Tensors of attention modules of MoE families that are not Llama's: JetMoE's mixture of attention heads
(``JetMoeAttention``), which :func:`.inventory.build_inventory` names through :func:`moa_attention` (MiniMax-Text-01's
lightning attention is a constant-state mixer: :mod:`.inventory_recurrent`)."""

from __future__ import annotations

from .architecture import Architecture, LayerSpec
from .families import Family
from .tensor_builder import Builder


def moa_attention(b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """JetMoE's attention: kv_proj (K and V of all KV heads, stacked), and the attention experts: a router
    ``experts.router.layer``, query projections ``experts.input_linear`` (E, KV heads x head_dim, H) and output
    projections ``experts.output_linear`` (E, H, KV heads x head_dim) stacked, and the output bias ``experts.bias``;
    JetMoeMoE's output bias ``mlp.bias`` beside the MLP's experts is named here too (the MLP builder has no place
    for it)."""
    assert spec.moa is not None
    e, frac = spec.moa.num_experts, spec.moa.top_k / spec.moa.num_experts
    h, i, a = arch.hidden, spec.index, f"{p}.{fam.attn}"
    width = spec.n_kv_heads * spec.head_dim
    b.linear(f"{a}.kv_proj", 2 * width, h, "attn", i, part)
    b.linear(f"{a}.experts.router.layer", e, h, "router", i, part)
    b.add(f"{a}.experts.input_linear.weight", (e, width, h), "attn", i, part, frac)
    b.add(f"{a}.experts.output_linear.weight", (e, h, width), "attn", i, part, frac)
    b.add(f"{a}.experts.bias", (h,), "bias", i, part)
    if spec.moe is not None:
        b.add(f"{p}.mlp.bias", (h,), "bias", i, part)
