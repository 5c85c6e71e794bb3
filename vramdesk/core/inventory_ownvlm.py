"""Decoder tensors of the vision-language families with towers of their own that the shared inventory does not
lay out: MiniMax-M3's Lightning Indexer on its sparse-attention layers (an indexer beside ordinary attention,
not on an MLA layer as DeepSeek Sparse Attention's)."""

from __future__ import annotations

from .architecture import LayerSpec
from .tensor_builder import Builder


def attention_indexer(b: Builder, spec: LayerSpec, a: str, hidden: int, part: str) -> None:
    """MiniMax-M3's indexer (modeling_minimax_m3_vl.py MiniMaxM3VLIndexer) under the layer's attention ``a``,
    named as the checkpoints store it (transformers 5 renames ``index_q_proj`` to ``indexer.q_proj`` at load
    time): q_proj to ``n_heads`` query heads, k_proj to one shared key, an RMSNorm over each, no biases."""
    assert spec.indexer is not None
    x, i = spec.indexer, spec.index
    b.linear(f"{a}.index_q_proj", x.n_heads * x.head_dim, hidden, "attn", i, part)
    b.linear(f"{a}.index_k_proj", x.head_dim, hidden, "attn", i, part)
    b.norm(f"{a}.index_q_norm", x.head_dim, i, part, False)
    b.norm(f"{a}.index_k_norm", x.head_dim, i, part, False)
