"""The SigLIP-family towers and connectors of Idefics2, LFM2-VL and Command A Vision, named as their checkpoints name
them (transformers 5.24's modeling_idefics2.py, modeling_lfm2_vl.py, modeling_siglip2.py,
modeling_cohere2_vision.py). ``VisionSpec.kind`` is the model's; ``details["prefix"]`` the tower's module path.

* ``idefics2``: Idefics2VisionTransformer (SigLIP's without a head) and Idefics2Connector: a bias-free gated MLP
  from the tower width to the text width (``modality_projection``, the text model's intermediate width) and the
  perceiver resampler (``resampler_n_latents`` learned latents, ``resampler_depth`` layers of RMSNorms, GQA
  attention of ``resampler_n_heads`` x ``resampler_head_dim`` and a 4x gated MLP, a final RMSNorm);
* ``lfm2_vl``: Siglip2VisionTransformer (a biased linear patch embedding over channels x patch², a position table
  of ``num_patches`` rows, SigLIP's encoder and optional head) and Lfm2VlMultiModalProjector (optional LayerNorm
  over the pixel-unshuffled width, linear_1, linear_2);
* ``cohere2_vision``: the SigLIP tower and Cohere2VisionMultiModalProjector: linear_1 to
  ``alignment_intermediate_size``, a SwiGLU that halves it, linear_2 to the text width (both biased).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .architecture import VisionSpec
from .tensor_builder import Builder
from .vision_towers_clip import siglip_encoder, siglip_patch_embedding

_PART = "vision"


def _d(v: VisionSpec, key: str) -> int:
    return int(v.details[key])


def _gated(b: Builder, p: str, inter: int, width: int, out: int) -> None:
    """Idefics2MLP: gate_proj and up_proj (width -> inter), down_proj (inter -> out), no biases."""
    b.linear(f"{p}.gate_proj", inter, width, "vision", None, _PART)
    b.linear(f"{p}.up_proj", inter, width, "vision", None, _PART)
    b.linear(f"{p}.down_proj", out, inter, "vision", None, _PART)


def _idefics2(b: Builder, v: VisionSpec) -> None:
    p = str(v.details["prefix"])
    siglip_patch_embedding(b, p, v)
    siglip_encoder(b, p, v)
    text = _d(v, "text_hidden")
    _gated(b, "model.connector.modality_projection", _d(v, "text_intermediate"), v.hidden, text)
    r = "model.connector.perceiver_resampler"
    b.add(f"{r}.latents", (_d(v, "resampler_n_latents"), text), "vision_other", None, _PART)
    q_width = _d(v, "resampler_n_heads") * _d(v, "resampler_head_dim")
    kv_width = _d(v, "resampler_kv_heads") * _d(v, "resampler_head_dim")
    for i in range(_d(v, "resampler_depth")):
        layer = f"{r}.layers.{i}"
        b.norm(f"{layer}.input_latents_norm", text, None, _PART, False)
        b.norm(f"{layer}.input_context_norm", text, None, _PART, False)
        b.linear(f"{layer}.self_attn.q_proj", q_width, text, "vision", None, _PART)
        b.linear(f"{layer}.self_attn.k_proj", kv_width, text, "vision", None, _PART)
        b.linear(f"{layer}.self_attn.v_proj", kv_width, text, "vision", None, _PART)
        b.linear(f"{layer}.self_attn.o_proj", text, q_width, "vision", None, _PART)
        b.norm(f"{layer}.post_attention_layernorm", text, None, _PART, False)
        _gated(b, f"{layer}.mlp", 4 * text, text, text)
    b.norm(f"{r}.norm", text, None, _PART, False)


def _lfm2_vl(b: Builder, v: VisionSpec) -> None:
    p, h = str(v.details["prefix"]), v.hidden
    # Siglip2VisionEmbeddings: a linear over the flattened patch, a table of num_patches positions (resized to
    # each image's grid at run time)
    b.linear(f"{p}.embeddings.patch_embedding", h, _d(v, "num_channels") * v.patch_size**2, "vision", None, _PART, True)
    b.add(f"{p}.embeddings.position_embedding.weight", (_d(v, "num_patches"), h), "vision_other", None, _PART)
    siglip_encoder(b, p, v)
    width, inner, bias = _d(v, "proj_in"), _d(v, "proj_hidden"), bool(_d(v, "proj_bias"))
    if _d(v, "proj_layernorm"):
        b.norm("model.multi_modal_projector.layer_norm", width, None, _PART, True)
    b.linear("model.multi_modal_projector.linear_1", inner, width, "vision", None, _PART, bias)
    b.linear("model.multi_modal_projector.linear_2", _d(v, "text_hidden"), inner, "vision", None, _PART, bias)


def _cohere2_vision(b: Builder, v: VisionSpec) -> None:
    p = str(v.details["prefix"])
    siglip_patch_embedding(b, p, v)
    siglip_encoder(b, p, v)
    inner = _d(v, "proj_hidden")
    b.linear("model.multi_modal_projector.linear_1", inner, _d(v, "proj_in"), "vision", None, _PART, True)
    b.linear("model.multi_modal_projector.linear_2", _d(v, "text_hidden"), inner // 2, "vision", None, _PART, True)


#: the towers of this module by ``VisionSpec.kind`` (registered in :data:`.vision_inventory.TOWERS`)
VLM2_TOWERS: Mapping[str, Callable[[Builder, VisionSpec], None]] = {
    "idefics2": _idefics2,
    "lfm2_vl": _lfm2_vl,
    "cohere2_vision": _cohere2_vision,
}
