"""DeepSeek-V4's decoder tensors that the shared inventory does not lay out (modeling_deepseek_v4.py, named as the
checkpoints store them: see ``families_mla2.DEEPSEEK_V4``): its attention with the compressor and the CSA layers'
indexer, and the hyper-connections around every attention and MoE block and before the head."""

from __future__ import annotations

from .architecture import Architecture, LayerSpec
from .families import Family
from .tensor_builder import Builder


def compressed_attention(b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """DeepseekV4Attention under ``{p}.attn``: wq_a, its q_norm and wq_b (the queries through the q latent), wkv to
    the one K = V head and its kv_norm, the grouped output projection wo_a (o_groups blocks of heads x head_dim /
    o_groups -> o_lora_rank, stored as one matrix) and wo_b, a sink per head (fp32), no biases. On compressed layers
    the compressor: wkv and wgate (twice as wide on CSA layers: two overlapping series), ape (a position bias per
    pooled token, fp32) and norm; on CSA layers its indexer: a compressor of its own at index_head_dim, wq_b from
    the q latent to the indexer heads and weights_proj (a weight per indexer head)."""
    assert spec.compressed is not None
    x, h, i = spec.compressed, arch.hidden, spec.index
    hd = spec.head_dim
    a = f"{p}.{fam.attn}"
    b.add(f"{a}.attn_sink", (spec.n_heads,), "state_param", i, part)
    b.linear(f"{a}.wq_a", x.q_lora_rank, h, "attn", i, part)
    b.norm(f"{a}.q_norm", x.q_lora_rank, i, part, False)
    b.linear(f"{a}.wq_b", spec.n_heads * hd, x.q_lora_rank, "attn", i, part)
    b.linear(f"{a}.wkv", spec.n_kv_heads * hd, h, "attn", i, part)
    b.norm(f"{a}.kv_norm", hd, i, part, False)
    b.linear(f"{a}.wo_a", x.o_groups * x.o_lora_rank, spec.n_heads * hd // x.o_groups, "attn", i, part)
    b.linear(f"{a}.wo_b", h, x.o_groups * x.o_lora_rank, "attn", i, part)
    if not x.compress_rate:
        return
    series = 2 if x.overlap else 1
    _compressor(b, f"{a}.compressor", x.compress_rate, hd, series, h, i, part)
    if spec.indexer is not None:
        k = spec.indexer
        _compressor(b, f"{a}.indexer.compressor", x.compress_rate, k.head_dim, series, h, i, part)
        b.linear(f"{a}.indexer.wq_b", k.n_heads * k.head_dim, x.q_lora_rank, "attn", i, part)
        b.linear(f"{a}.indexer.weights_proj", k.n_heads, h, "router", i, part)


def _compressor(b: Builder, c: str, rate: int, width: int, series: int, h: int, i: int, part: str) -> None:
    """DeepseekV4HCACompressor / CSACompressor (and the indexer's): ``series`` pooled series of ``width``."""
    b.add(f"{c}.ape", (rate, series * width), "state_param", i, part)
    b.linear(f"{c}.wkv", series * width, h, "attn", i, part)
    b.linear(f"{c}.wgate", series * width, h, "attn", i, part)
    b.norm(f"{c}.norm", width, i, part, False)


def _hyper_connection(
    b: Builder, prefix: str, arch: Architecture, rows: int, scales: int, i: int | None, part: str
) -> None:
    """fn (``rows`` mixing weights from the hc_mult x hidden streams), base and ``scales`` scales."""
    m = int(arch.details.get("hc_mult", 1))
    b.add(f"{prefix}_fn", (rows, m * arch.hidden), "state_param", i, part)
    b.add(f"{prefix}_base", (rows,), "state_param", i, part)
    b.add(f"{prefix}_scale", (scales,), "state_param", i, part)


def hyper_connections(b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """DeepseekV4HyperConnection before attention (hc_attn) and before the MoE block (hc_ffn): fn maps the
    hc_mult x hidden streams to (2 + hc_mult) x hc_mult mixing weights, with base and three scales (fp32)."""
    m = int(arch.details.get("hc_mult", 1))
    for name in ("hc_attn", "hc_ffn"):
        _hyper_connection(b, f"{p}.{name}", arch, (2 + m) * m, 3, spec.index, part)


def hyper_head(b: Builder, arch: Architecture, fam: Family) -> None:
    """DeepseekV4HyperHead, which folds the streams into one before the final norm: hc_head_fn (hc_mult x
    hc_mult x hidden), hc_head_base and one hc_head_scale; each MTP layer has one of its own."""
    m = int(arch.details.get("hc_mult", 1))
    _hyper_connection(b, "hc_head", arch, m, 1, None, "text")
    for k in range(arch.mtp_layers):
        idx = arch.n_layers + k
        p = fam.mtp.layer.format(idx=idx, k=k)
        _hyper_connection(b, f"{p}.hc_head", arch, m, 1, idx, "mtp")
