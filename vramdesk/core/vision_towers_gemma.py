"""Gemma 4's own vision tower (transformers 5.24 modeling_gemma4.py: Gemma4VisionModel and Gemma4MultimodalEmbedder),
named as gemma-4-31B-it's safetensors store it.

Gemma4VisionPatchEmbedder: ``input_proj`` (no bias) from 3 x patch x patch pixels and a two-axis learned
``position_embedding_table`` (2, position_embedding_size, hidden); Gemma4VisionEncoderLayer: q / k / v / o
projections wrapped as ``Gemma4ClippableLinear`` (``{name}.linear.weight``, no bias), per-head q_norm / k_norm
(v_norm has no weight), a gated MLP of the same wrapped linears and Gemma's four sandwich norms; ``std_bias`` /
``std_scale`` (persistent buffers the checkpoint stores) when ``standardize``; the pooler has no weights.
Gemma4MultimodalEmbedder: ``embed_vision.embedding_projection`` to the text width (its pre-projection norm has no
weight). The clipping bounds ``use_clipped_linears`` adds are four scalar buffers per linear, not counted.
"""

from __future__ import annotations

from .architecture import VisionSpec
from .families import GEMMA_SANDWICH_NORMS
from .tensor_builder import Builder


def gemma4_tower(b: Builder, v: VisionSpec) -> None:
    """Append Gemma 4's vision tower and projector."""
    part = "vision"
    d = v.details
    h, inter, p = v.hidden, v.intermediate, v.patch_size
    hd, kv = int(d["head_dim"]), int(d["kv_heads"])
    t = "model.vision_tower"
    b.add(f"{t}.patch_embedder.input_proj.weight", (h, 3 * p * p), "vision", None, part)
    table = (2, int(d["position_embedding_size"]), h)
    b.add(f"{t}.patch_embedder.position_embedding_table", table, "vision_other", None, part)
    for i in range(v.depth):
        x = f"{t}.encoder.layers.{i}"
        shapes = {
            "self_attn.q_proj": (v.num_heads * hd, h),
            "self_attn.k_proj": (kv * hd, h),
            "self_attn.v_proj": (kv * hd, h),
            "self_attn.o_proj": (h, v.num_heads * hd),
            "mlp.gate_proj": (inter, h),
            "mlp.up_proj": (inter, h),
            "mlp.down_proj": (h, inter),
        }
        for name, (out_f, in_f) in shapes.items():
            b.linear(f"{x}.{name}.linear", out_f, in_f, "vision", None, part)
        b.norm(f"{x}.self_attn.q_norm", hd, None, part, False)
        b.norm(f"{x}.self_attn.k_norm", hd, None, part, False)
        for n in GEMMA_SANDWICH_NORMS:
            b.norm(f"{x}.{n}", h, None, part, False)
    if int(d["standardize"]):
        b.add(f"{t}.std_bias", (h,), "vision_other", None, part)
        b.add(f"{t}.std_scale", (h,), "vision_other", None, part)
    b.linear("model.embed_vision.embedding_projection", int(d["text_hidden"]), h, "vision", None, part)
