"""The tensors of a Zamba / Zamba2 hybrid layer's call of a shared transformer block (``LayerSpec.shared``), named
as the checkpoints store them (transformers 5.24's modeling_zamba.py / modeling_zamba2.py).

:mod:`.inventory` calls :func:`shared_block_call` for such a layer: it appends the block's weights when the layer
owns them (its first caller; the other callers' copies are tied to them and not stored), the layer's adapters inside
the block (Zamba2), and the layer's own ``linear``; the layer's Mamba decoder (``mamba_decoder``: input_layernorm and
the mixer) is then built by the generic path from the spec and prefix it returns.
"""

from __future__ import annotations

from .architecture import Architecture, AttentionKind, LayerSpec, SharedBlockSpec
from .families import Family
from .tensor_builder import Builder


def _block(b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, s: SharedBlockSpec, a: str) -> None:
    """ZambaAttentionDecoderLayer / Zamba2AttentionDecoderLayer: input_layernorm over the concatenated input,
    self_attn (q / k / v from attention_hidden_size, o_proj to the hidden size; no biases), pre_ff_layernorm and
    feed_forward (Zamba: gate, up, down; Zamba2: the fused gate_up_proj and down_proj, biases add_bias_linear)."""
    h, i, part = arch.hidden, s.owner, "text"
    q_out, kv_out = spec.n_heads * spec.head_dim, spec.n_kv_heads * spec.head_dim
    attn_norm, mlp_norm = fam.layer_norms
    b.norm(f"{a}.{attn_norm}", s.input_width, i, part, False)
    b.linear(f"{a}.{fam.attn}.q_proj", q_out, s.input_width, "attn", i, part)
    b.linear(f"{a}.{fam.attn}.k_proj", kv_out, s.input_width, "attn", i, part)
    b.linear(f"{a}.{fam.attn}.v_proj", kv_out, s.input_width, "attn", i, part)
    b.linear(f"{a}.{fam.attn}.{fam.o_proj}", h, q_out, "attn", i, part)
    b.norm(f"{a}.{mlp_norm}", h, i, part, False)
    *ins, down = fam.mlp_names
    width = 2 * spec.intermediate if fam.mlp == "fused" else spec.intermediate
    for name in ins:
        b.linear(f"{a}.{fam.mlp_prefix}{name}", width, h, "mlp", i, part, arch.mlp_bias)
    b.linear(f"{a}.{fam.mlp_prefix}{down}", h, spec.intermediate, "mlp", i, part, arch.mlp_bias)


def _adapters(b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, s: SharedBlockSpec, a: str) -> None:
    """Zamba2's per-call low-rank adapters, in slot ``invocation`` of the owner block's lists: gate_up_proj's
    (hidden -> rank -> 2 x intermediate) and, with use_shared_attention_adapter, q / k / v's (attention_hidden_size
    -> rank -> attention_hidden_size); no biases."""
    r, k, i = s.adapter_rank, s.invocation, spec.index
    gate_up = fam.mlp_names[0]
    adapter = f"{a}.{fam.mlp_prefix}{gate_up}_adapter_list.{k}"
    b.linear(f"{adapter}.0", r, arch.hidden, "mlp", i, "text")
    b.linear(f"{adapter}.1", 2 * spec.intermediate, r, "mlp", i, "text")
    if s.attn_adapters:
        for n in ("q", "k", "v"):
            adapter = f"{a}.{fam.attn}.linear_{n}_adapter_list.{k}"
            b.linear(f"{adapter}.0", r, s.input_width, "attn", i, "text")
            b.linear(f"{adapter}.1", s.input_width, r, "attn", i, "text")


def shared_block_call(
    b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str
) -> tuple[LayerSpec, str]:
    """Append a hybrid layer's shared-block tensors and its ``linear``; return its Mamba decoder layer (the mixer,
    no attention, no MLP) and that layer's prefix for the generic builder."""
    s = spec.shared
    assert s is not None
    a = f"{fam.layers}.{s.owner}.{fam.shared_block}"
    if s.owner == spec.index:
        _block(b, arch, fam, spec, s, a)
    if s.adapter_rank:
        _adapters(b, arch, fam, spec, s, a)
    b.linear(f"{p}.linear", arch.hidden, arch.hidden, "attn", spec.index, part)
    mamba = spec.model_copy(
        update={"attention": AttentionKind.LINEAR, "mlp": "none", "intermediate": 0, "shared": None}
    )
    return mamba, f"{p}.mamba_decoder"
