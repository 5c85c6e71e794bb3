"""The ViT towers of the LLaVA-style vision-language models and their projectors, named as the published
checkpoints name them (the layout transformers' ``conversion_mapping.py`` renames from at load time:
``vision_tower.vision_model.*``, ``multi_modal_projector.*``, ``image_newline``).

Towers (``VisionSpec.kind``), from transformers 5.24's modeling code:

* ``clip``: CLIPVisionTransformer (modeling_clip.py): a class embedding, a patch convolution without bias, a
  position table of one row per patch plus the class token, ``pre_layrnorm`` (so spelt), LayerNorm encoder
  layers with biased q/k/v/out projections and an fc1 / fc2 MLP, ``post_layernorm``;
* ``siglip``: SiglipVisionTransformer (modeling_siglip.py; Idefics3VisionTransformer is the same without a head):
  a biased patch convolution, a position table of one row per patch, the CLIP encoder, ``post_layernorm`` and,
  with ``vision_use_head``, the attention-pooling head (probe, nn.MultiheadAttention, LayerNorm, MLP);
* ``pixtral``: PixtralTransformer (modeling_pixtral.py): a patch convolution without bias, RMSNorm ``ln_pre``,
  RMSNorm layers with bias-free attention and a gated MLP, rotary positions (no table), no final norm;
* ``intern_vit``: InternVLVisionModel (modeling_internvl.py): a class token, a biased patch projection, a position
  table, layers with layer-scale vectors ``lambda_1`` / ``lambda_2``, optional q/k RMSNorms and biases.

Projectors (``details["projector"]``): LLaVA's two-layer MLP (``llava``; ``llava_next`` adds ``image_newline``;
``vipllava`` a LayerNorm before it), Mistral 3's RMSNorm + patch merger + MLP, InternVL's LayerNorm + MLP over
the pixel-shuffled patches, PaliGemma's one linear, Gemma 3's RMSNorm + projection matrix, Idefics3's pixel-shuffle
connector.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .architecture import VisionSpec
from .tensor_builder import Builder

_PART = "vision"


def _detail_int(v: VisionSpec, key: str) -> int:
    return int(v.details[key])


def _prefixes(v: VisionSpec) -> list[str]:
    """The tower's module prefix, or several (Video-LLaVA's ``image_tower`` and ``video_tower``: two copies)."""
    return str(v.details["prefix"]).split(",")


def _patches(v: VisionSpec) -> int:
    return (_detail_int(v, "image_size") // v.patch_size) ** 2


def clip_encoder(b: Builder, p: str, v: VisionSpec) -> None:
    """CLIP's / SigLIP's / Idefics3's encoder layers under ``p`` (``{p}.layers.{i}``)."""
    h, inter = v.hidden, v.intermediate
    for i in range(v.depth):
        layer = f"{p}.layers.{i}"
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            b.linear(f"{layer}.self_attn.{n}", h, h, "vision", None, _PART, True)
        b.linear(f"{layer}.mlp.fc1", inter, h, "vision", None, _PART, True)
        b.linear(f"{layer}.mlp.fc2", h, inter, "vision", None, _PART, True)
        b.norm(f"{layer}.layer_norm1", h, None, _PART, True)
        b.norm(f"{layer}.layer_norm2", h, None, _PART, True)


def _clip(b: Builder, v: VisionSpec) -> None:
    h, ch = v.hidden, _detail_int(v, "num_channels")
    for p in _prefixes(v):
        b.add(f"{p}.embeddings.class_embedding", (h,), "vision_other", None, _PART)
        b.add(
            f"{p}.embeddings.patch_embedding.weight", (h, ch, v.patch_size, v.patch_size), "vision_other", None, _PART
        )
        b.add(f"{p}.embeddings.position_embedding.weight", (_patches(v) + 1, h), "vision_other", None, _PART)
        b.norm(f"{p}.pre_layrnorm", h, None, _PART, True)
        clip_encoder(b, f"{p}.encoder", v)
        b.norm(f"{p}.post_layernorm", h, None, _PART, True)
    _projector(b, v)


def siglip_patch_embedding(b: Builder, p: str, v: VisionSpec) -> None:
    """SiglipVisionEmbeddings under ``p``: a biased patch convolution and a position table of one row per patch."""
    h, ch = v.hidden, _detail_int(v, "num_channels")
    b.add(f"{p}.embeddings.patch_embedding.weight", (h, ch, v.patch_size, v.patch_size), "vision_other", None, _PART)
    b.add(f"{p}.embeddings.patch_embedding.bias", (h,), "bias", None, _PART)
    b.add(f"{p}.embeddings.position_embedding.weight", (_patches(v), h), "vision_other", None, _PART)


def siglip_encoder(b: Builder, p: str, v: VisionSpec) -> None:
    """What follows SigLIP's (and SigLIP 2's) embeddings under ``p``: the encoder, ``post_layernorm`` and, with
    ``details["head"]``, the attention-pooling head."""
    h, inter = v.hidden, v.intermediate
    clip_encoder(b, f"{p}.encoder", v)
    b.norm(f"{p}.post_layernorm", h, None, _PART, True)
    if int(v.details.get("head", 0)):
        # SiglipMultiheadAttentionPoolingHead: a learned probe, nn.MultiheadAttention (packed in_proj), a
        # LayerNorm and the encoder's MLP
        b.add(f"{p}.head.probe", (1, 1, h), "vision_other", None, _PART)
        b.add(f"{p}.head.attention.in_proj_weight", (3 * h, h), "vision", None, _PART)
        b.add(f"{p}.head.attention.in_proj_bias", (3 * h,), "bias", None, _PART)
        b.linear(f"{p}.head.attention.out_proj", h, h, "vision", None, _PART, True)
        b.norm(f"{p}.head.layernorm", h, None, _PART, True)
        b.linear(f"{p}.head.mlp.fc1", inter, h, "vision", None, _PART, True)
        b.linear(f"{p}.head.mlp.fc2", h, inter, "vision", None, _PART, True)


def siglip_tower(b: Builder, v: VisionSpec) -> None:
    """SigLIP's tower alone, under each of ``details["prefix"]`` (its head with ``details["head"]``)."""
    for p in _prefixes(v):
        siglip_patch_embedding(b, p, v)
        siglip_encoder(b, p, v)


def _siglip(b: Builder, v: VisionSpec) -> None:
    siglip_tower(b, v)
    _projector(b, v)


def _pixtral(b: Builder, v: VisionSpec) -> None:
    h, inter, ch = v.hidden, v.intermediate, _detail_int(v, "num_channels")
    heads_width = v.num_heads * _detail_int(v, "head_dim")
    for p in _prefixes(v):
        b.add(f"{p}.patch_conv.weight", (h, ch, v.patch_size, v.patch_size), "vision_other", None, _PART)
        b.norm(f"{p}.ln_pre", h, None, _PART, False)
        for i in range(v.depth):
            layer = f"{p}.transformer.layers.{i}"
            for n in ("q_proj", "k_proj", "v_proj"):
                b.linear(f"{layer}.attention.{n}", heads_width, h, "vision", None, _PART)
            b.linear(f"{layer}.attention.o_proj", h, heads_width, "vision", None, _PART)
            b.linear(f"{layer}.feed_forward.gate_proj", inter, h, "vision", None, _PART)
            b.linear(f"{layer}.feed_forward.up_proj", inter, h, "vision", None, _PART)
            b.linear(f"{layer}.feed_forward.down_proj", h, inter, "vision", None, _PART)
            b.norm(f"{layer}.attention_norm", h, None, _PART, False)
            b.norm(f"{layer}.ffn_norm", h, None, _PART, False)
    _projector(b, v)


def _intern_vit(b: Builder, v: VisionSpec) -> None:
    h, inter, ch = v.hidden, v.intermediate, _detail_int(v, "num_channels")
    qkv_bias, qk_norm = bool(int(v.details["attention_bias"])), bool(int(v.details["qk_norm"]))
    layer_norm = str(v.details["norm_type"]) == "layer_norm"
    for p in _prefixes(v):
        b.add(f"{p}.embeddings.cls_token", (1, 1, h), "vision_other", None, _PART)
        if int(v.details["mask_token"]):
            b.add(f"{p}.embeddings.mask_token", (1, 1, h), "vision_other", None, _PART)
        if int(v.details["position_table"]):
            b.add(f"{p}.embeddings.position_embeddings", (1, _patches(v) + 1, h), "vision_other", None, _PART)
        b.add(
            f"{p}.embeddings.patch_embeddings.projection.weight",
            (h, ch, v.patch_size, v.patch_size),
            "vision_other",
            None,
            _PART,
        )
        b.add(f"{p}.embeddings.patch_embeddings.projection.bias", (h,), "bias", None, _PART)
        for i in range(v.depth):
            layer = f"{p}.encoder.layer.{i}"
            b.add(f"{layer}.lambda_1", (h,), "vision_other", None, _PART)
            b.add(f"{layer}.lambda_2", (h,), "vision_other", None, _PART)
            for n in ("q_proj", "k_proj", "v_proj"):
                b.linear(f"{layer}.attention.{n}", h, h, "vision", None, _PART, qkv_bias)
            if qk_norm:
                b.norm(f"{layer}.attention.q_norm", h, None, _PART, False)
                b.norm(f"{layer}.attention.k_norm", h, None, _PART, False)
            b.linear(f"{layer}.attention.projection_layer", h, h, "vision", None, _PART, True)
            b.linear(f"{layer}.mlp.fc1", inter, h, "vision", None, _PART, True)
            b.linear(f"{layer}.mlp.fc2", h, inter, "vision", None, _PART, True)
            b.norm(f"{layer}.layernorm_before", h, None, _PART, layer_norm)
            b.norm(f"{layer}.layernorm_after", h, None, _PART, layer_norm)
        if not int(v.details["mean_pooling"]):
            b.norm(f"{p}.layernorm", h, None, _PART, layer_norm)
    _projector(b, v)


# -- projectors: (builder, tower spec); ``proj_in`` = the width the projector reads, ``text_hidden`` its output


def _mlp2(b: Builder, p: str, v: VisionSpec, bias: bool) -> None:
    """linear_1 (proj_in -> text) and linear_2 (text -> text) around an activation."""
    text, width = _detail_int(v, "text_hidden"), _detail_int(v, "proj_in")
    b.linear(f"{p}.linear_1", text, width, "vision", None, _PART, bias)
    b.linear(f"{p}.linear_2", text, text, "vision", None, _PART, bias)


def _llava(b: Builder, v: VisionSpec) -> None:
    _mlp2(b, "multi_modal_projector", v, bool(int(v.details["proj_bias"])))


def _llava_next(b: Builder, v: VisionSpec) -> None:
    _llava(b, v)
    # the learned vector LLaVA-NeXT puts after each row of an image's tiles (a parameter of the model itself)
    b.add("image_newline", (_detail_int(v, "text_hidden"),), "vision_other", None, _PART)


def _vipllava(b: Builder, v: VisionSpec) -> None:
    b.norm("multi_modal_projector.projector_layernorm", _detail_int(v, "proj_in"), None, _PART, True)
    _mlp2(b, "multi_modal_projector", v, True)


def _mistral3(b: Builder, v: VisionSpec) -> None:
    h, merge = v.hidden, _detail_int(v, "spatial_merge_size")
    b.norm("multi_modal_projector.norm", h, None, _PART, False)
    b.linear("multi_modal_projector.patch_merger.merging_layer", h, h * merge * merge, "vision", None, _PART)
    _mlp2(b, "multi_modal_projector", v, bool(int(v.details["proj_bias"])))


def _internvl(b: Builder, v: VisionSpec) -> None:
    b.norm("multi_modal_projector.layer_norm", _detail_int(v, "proj_in"), None, _PART, True)
    _mlp2(b, "multi_modal_projector", v, True)


def _paligemma(b: Builder, v: VisionSpec) -> None:
    b.linear("multi_modal_projector.linear", _detail_int(v, "text_hidden"), v.hidden, "vision", None, _PART, True)


def _gemma3(b: Builder, v: VisionSpec) -> None:
    # Gemma3MultiModalProjector: an RMSNorm over the tower width and one (vision, text) matrix, no bias
    b.add("multi_modal_projector.mm_soft_emb_norm.weight", (v.hidden,), "norm", None, _PART)
    b.add(
        "multi_modal_projector.mm_input_projection_weight",
        (v.hidden, _detail_int(v, "text_hidden")),
        "vision",
        None,
        _PART,
    )


def _idefics3(b: Builder, v: VisionSpec) -> None:
    # Idefics3Connector: pixel shuffle (scale_factor**2 patches side by side) and one bias-free projection
    b.linear(
        "model.connector.modality_projection.proj",
        _detail_int(v, "text_hidden"),
        _detail_int(v, "proj_in"),
        "vision",
        None,
        _PART,
    )


_PROJECTORS: Mapping[str, Callable[[Builder, VisionSpec], None]] = {
    "llava": _llava,
    "llava_next": _llava_next,
    "vipllava": _vipllava,
    "mistral3": _mistral3,
    "internvl": _internvl,
    "paligemma": _paligemma,
    "gemma3": _gemma3,
    "idefics3": _idefics3,
}


def _projector(b: Builder, v: VisionSpec) -> None:
    _PROJECTORS[str(v.details["projector"])](b, v)


#: the towers of this module by ``VisionSpec.kind`` (registered in :data:`.vision_inventory.TOWERS`)
CLIP_TOWERS: Mapping[str, Callable[[Builder, VisionSpec], None]] = {
    "clip": _clip,
    "siglip": _siglip,
    "pixtral": _pixtral,
    "intern_vit": _intern_vit,
}
