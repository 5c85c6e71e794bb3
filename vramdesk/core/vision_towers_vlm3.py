"""Vision towers of DeepSeek-VL (a SigLIP tower and its aligner), DeepSeek-VL hybrid (SigLIP beside a SAM ViT-B
with its necks) and Janus / Janus-Pro (its own SigLIP-like ViT, and for image generation a VQ-GAN with its
aligner and head), named as the published checkpoints store them (deepseek-community/*, saved by transformers 4:
SiglipVisionModel still held its ``vision_model`` inside, which transformers 5's CLIPVisionModel prefix change
removes at load time). Registered in :data:`vramdesk.core.vision_inventory.TOWERS` by ``VisionSpec.kind``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .architecture import VisionSpec
from .tensor_builder import Builder
from .vision_towers_clip import siglip_tower

_PART = "vision"


def _int(v: VisionSpec, key: str) -> int:
    return int(v.details[key])


def _ints(v: VisionSpec, key: str) -> list[int]:
    """A list detail, stored as ``"1,1,2,2,4"``."""
    text = str(v.details[key])
    return [int(x) for x in text.split(",")] if text else []


def _patches(v: VisionSpec) -> int:
    return (_int(v, "image_size") // v.patch_size) ** 2


def _conv(b: Builder, p: str, out_c: int, in_c: int, k: int, bias: bool = True) -> None:
    b.add(f"{p}.weight", (out_c, in_c, k, k), "vision_other", None, _PART)
    if bias:
        b.add(f"{p}.bias", (out_c,), "bias", None, _PART)


def deepseek_vl_tower(b: Builder, v: VisionSpec) -> None:
    """DeepSeek-VL (modeling_deepseek_vl.py): the SigLIP tower under ``model.vision_model.vision_model`` and
    DeepseekVLAligner: linear1 (tower -> text width) and linear2 (text -> text), with biases."""
    siglip_tower(b, v)
    text = _int(v, "text_hidden")
    b.linear("model.aligner.linear1", text, v.hidden, "vision", None, _PART, True)
    b.linear("model.aligner.linear2", text, text, "vision", None, _PART, True)


def _sam_neck(b: Builder, p: str, hidden: int, out_c: int) -> None:
    """DeepseekVLSamVisionNeck / SamVisionNeck: a 1x1 and a 3x3 convolution without bias, each followed by a
    channels-first LayerNorm."""
    _conv(b, f"{p}.conv1", out_c, hidden, 1, False)
    b.norm(f"{p}.layer_norm1", out_c, None, _PART, True)
    _conv(b, f"{p}.conv2", out_c, out_c, 3, False)
    b.norm(f"{p}.layer_norm2", out_c, None, _PART, True)


def _sam_encoder(b: Builder, v: VisionSpec) -> None:
    """SamVisionEncoder (modeling_sam.py) under ``model.high_res_vision_model.vision_encoder``: a biased patch
    convolution, an absolute position grid (``use_abs_pos``), layers of two LayerNorms, a fused qkv (bias:
    ``qkv_bias``) and proj with a bias, relative position tables (``use_rel_pos``: 2 x size - 1 rows of the head
    width, the window's size on windowed layers, the patch grid's on ``global_attn_indexes``), an lin1 / lin2 MLP
    of ``mlp_dim``, then its neck."""
    p = "model.high_res_vision_model.vision_encoder"
    h, patch, grid = _int(v, "sam_hidden"), _int(v, "sam_patch"), _int(v, "sam_image") // _int(v, "sam_patch")
    mlp, window, head_dim = _int(v, "sam_mlp"), _int(v, "sam_window"), h // _int(v, "sam_heads")
    global_layers = set(_ints(v, "sam_global"))
    _conv(b, f"{p}.patch_embed.projection", h, _int(v, "num_channels"), patch)
    if _int(v, "sam_abs_pos"):
        b.add(f"{p}.pos_embed", (1, grid, grid, h), "vision_other", None, _PART)
    for i in range(_int(v, "sam_depth")):
        layer = f"{p}.layers.{i}"
        b.norm(f"{layer}.layer_norm1", h, None, _PART, True)
        if _int(v, "sam_rel_pos"):
            size = grid if i in global_layers else window
            b.add(f"{layer}.attn.rel_pos_h", (2 * size - 1, head_dim), "vision_other", None, _PART)
            b.add(f"{layer}.attn.rel_pos_w", (2 * size - 1, head_dim), "vision_other", None, _PART)
        b.linear(f"{layer}.attn.qkv", 3 * h, h, "vision", None, _PART, bool(_int(v, "sam_qkv_bias")))
        b.linear(f"{layer}.attn.proj", h, h, "vision", None, _PART, True)
        b.norm(f"{layer}.layer_norm2", h, None, _PART, True)
        b.linear(f"{layer}.mlp.lin1", mlp, h, "vision", None, _PART, True)
        b.linear(f"{layer}.mlp.lin2", h, mlp, "vision", None, _PART, True)
    _sam_neck(b, f"{p}.neck", h, _int(v, "sam_out"))


def deepseek_vl_hybrid_tower(b: Builder, v: VisionSpec) -> None:
    """DeepSeek-VL hybrid (modeling_deepseek_vl_hybrid.py): the SigLIP tower, the SAM encoder, a second neck
    ``high_res_vision_neck`` over the SAM layer at ``global_attn_indexes[0]``, ``high_res_vision_proj`` (two
    stride-2 3x3 convolutions without bias, to 2x then 4x ``output_channels``), the scalar
    ``high_res_vision_alpha`` and DeepseekVLHybridAligner: vision_proj and high_res_vision_proj to half the text
    width each, then proj (text -> text), with biases."""
    siglip_tower(b, v)
    _sam_encoder(b, v)
    h, out_c, text = _int(v, "sam_hidden"), _int(v, "sam_out"), _int(v, "text_hidden")
    _sam_neck(b, "model.high_res_vision_neck", h, out_c)
    _conv(b, "model.high_res_vision_proj.conv1", 2 * out_c, out_c, 3, False)
    _conv(b, "model.high_res_vision_proj.conv2", 4 * out_c, 2 * out_c, 3, False)
    b.add("model.high_res_vision_alpha", (1,), "vision_other", None, _PART)
    b.linear("model.aligner.vision_proj", text // 2, v.hidden, "vision", None, _PART, True)
    b.linear("model.aligner.high_res_vision_proj", text // 2, 4 * out_c, "vision", None, _PART, True)
    b.linear("model.aligner.proj", text, text, "vision", None, _PART, True)


def _janus_vit(b: Builder, v: VisionSpec) -> None:
    """JanusVisionModel (modeling_janus.py) under ``model.vision_model``: a biased patch convolution, a position
    table of one row per patch, layers of two LayerNorms, q/k/v (bias: ``attention_bias``) and a biased
    projection_layer, LayerNorm q_norm / k_norm with ``use_qk_norm``, an fc1 / fc2 MLP of ``hidden x mlp_ratio``
    with biases; post_layernorm. Then JanusVisionAlignerMLP: fc1 to ``projection_dim`` and ``depth - 1``
    hidden_layers, with biases."""
    p = "model.vision_model"
    h, inter = v.hidden, v.intermediate
    qkv_bias = bool(_int(v, "attention_bias"))
    _conv(b, f"{p}.embeddings.patch_embedding", h, _int(v, "num_channels"), v.patch_size)
    b.add(f"{p}.embeddings.position_embedding.weight", (_patches(v), h), "vision_other", None, _PART)
    for i in range(v.depth):
        layer = f"{p}.encoder.layers.{i}"
        b.norm(f"{layer}.layer_norm1", h, None, _PART, True)
        for n in ("q_proj", "k_proj", "v_proj"):
            b.linear(f"{layer}.self_attn.{n}", h, h, "vision", None, _PART, qkv_bias)
        b.linear(f"{layer}.self_attn.projection_layer", h, h, "vision", None, _PART, True)
        if _int(v, "qk_norm"):
            b.norm(f"{layer}.self_attn.q_norm", h, None, _PART, True)
            b.norm(f"{layer}.self_attn.k_norm", h, None, _PART, True)
        b.norm(f"{layer}.layer_norm2", h, None, _PART, True)
        b.linear(f"{layer}.mlp.fc1", inter, h, "vision", None, _PART, True)
        b.linear(f"{layer}.mlp.fc2", h, inter, "vision", None, _PART, True)
    b.norm(f"{p}.post_layernorm", h, None, _PART, True)
    _janus_mlp(b, "model.aligner", h, _int(v, "projection_dim"), _int(v, "aligner_depth"))


def _janus_mlp(b: Builder, p: str, in_f: int, width: int, depth: int) -> None:
    """JanusVisionAlignerMLP / JanusVQVAEAlignerMLP: fc1 and ``depth - 1`` hidden_layers, with biases."""
    b.linear(f"{p}.fc1", width, in_f, "vision", None, _PART, True)
    for i in range(depth - 1):
        b.linear(f"{p}.hidden_layers.{i}", width, width, "vision", None, _PART, True)


def _resnet(b: Builder, p: str, in_c: int, out_c: int) -> None:
    """JanusVQVAEResnetBlock: GroupNorm, 3x3 conv, GroupNorm, 3x3 conv, and a 1x1 nin_shortcut when the width
    changes; every convolution with a bias."""
    b.norm(f"{p}.norm1", in_c, None, _PART, True)
    _conv(b, f"{p}.conv1", out_c, in_c, 3)
    b.norm(f"{p}.norm2", out_c, None, _PART, True)
    _conv(b, f"{p}.conv2", out_c, out_c, 3)
    if in_c != out_c:
        _conv(b, f"{p}.nin_shortcut", out_c, in_c, 1)


def _attn_block(b: Builder, p: str, c: int) -> None:
    """JanusVQVAEAttnBlock: a GroupNorm and 1x1 q / k / v / proj_out convolutions."""
    b.norm(f"{p}.norm", c, None, _PART, True)
    for n in ("q", "k", "v", "proj_out"):
        _conv(b, f"{p}.{n}", c, c, 1)


def _mid(b: Builder, p: str, c: int) -> None:
    _resnet(b, f"{p}.block_1", c, c)
    _attn_block(b, f"{p}.attn_1", c)
    _resnet(b, f"{p}.block_2", c, c)


def _vq_encoder(b: Builder, v: VisionSpec, p: str) -> int:
    """JanusVQVAEEncoder: conv_in, per level ``num_res_blocks`` resnet blocks (attention blocks on the last
    level) and a stride-2 downsample conv but on the last, the mid block, norm_out and conv_out to the latent (twice
    it with ``double_latent``). Returns its output width."""
    base, mult, blocks = _int(v, "vq_base_channels"), _ints(v, "vq_channel_multiplier"), _int(v, "vq_res_blocks")
    _conv(b, f"{p}.conv_in", base, _int(v, "vq_in_channels"), 3)
    c_in = base
    for level, m in enumerate(mult):
        for k in range(blocks):
            _resnet(b, f"{p}.down.{level}.block.{k}", c_in, base * m)
            c_in = base * m
            if level == len(mult) - 1:
                _attn_block(b, f"{p}.down.{level}.attn.{k}", c_in)
        if level != len(mult) - 1:
            _conv(b, f"{p}.down.{level}.downsample.conv", c_in, c_in, 3)
    _mid(b, f"{p}.mid", c_in)
    b.norm(f"{p}.norm_out", c_in, None, _PART, True)
    latent = _int(v, "vq_latent_channels")
    _conv(b, f"{p}.conv_out", 2 * latent if _int(v, "vq_double_latent") else latent, c_in, 3)
    return latent


def _vq_decoder(b: Builder, v: VisionSpec, p: str) -> None:
    """JanusVQVAEDecoder: conv_in from the latent, the mid block, per level from the widest ``num_res_blocks + 1``
    resnet blocks (attention blocks on the widest) and an upsample conv but on the last, norm_out, conv_out."""
    base, mult, blocks = _int(v, "vq_base_channels"), _ints(v, "vq_channel_multiplier"), _int(v, "vq_res_blocks")
    c_in = base * mult[-1]
    _conv(b, f"{p}.conv_in", c_in, _int(v, "vq_latent_channels"), 3)
    _mid(b, f"{p}.mid", c_in)
    for k_up, level in enumerate(reversed(range(len(mult)))):
        for k in range(blocks + 1):
            _resnet(b, f"{p}.up.{k_up}.block.{k}", c_in, base * mult[level])
            c_in = base * mult[level]
            if level == len(mult) - 1:
                _attn_block(b, f"{p}.up.{k_up}.attn.{k}", c_in)
        if level != 0:
            _conv(b, f"{p}.up.{k_up}.upsample.conv", c_in, c_in, 3)
    b.norm(f"{p}.norm_out", c_in, None, _PART, True)
    _conv(b, f"{p}.conv_out", _int(v, "vq_out_channels"), c_in, 3)


def janus_tower(b: Builder, v: VisionSpec) -> None:
    """Janus / Janus-Pro (modeling_janus.py JanusModel): the understanding tower and its aligner
    (:func:`_janus_vit`), and what image generation adds: JanusVQVAE (encoder, ``quantize`` codebook of
    ``num_embeddings x embed_dim``, 1x1 quant_conv / post_quant_conv, decoder), ``generation_embeddings`` (a
    second codebook-sized table), ``generation_aligner`` (fc1 from ``embed_dim`` and ``num_hidden_layers - 1``
    hidden_layers of ``projection_dim``) and ``generation_head`` (proj_out from ``image_token_embed_dim``,
    vision_head to the codebook). All of it is loaded with the model, so all of it is counted."""
    _janus_vit(b, v)
    p = "model.vqmodel"
    latent = _vq_encoder(b, v, f"{p}.encoder")
    codes, dim, width = _int(v, "vq_num_embeddings"), _int(v, "vq_embed_dim"), _int(v, "vq_projection_dim")
    b.add(f"{p}.quantize.embedding.weight", (codes, dim), "vision_other", None, _PART)
    _conv(b, f"{p}.quant_conv", dim, latent, 1)
    _conv(b, f"{p}.post_quant_conv", latent, dim, 1)
    _vq_decoder(b, v, f"{p}.decoder")
    b.add("model.generation_embeddings.weight", (codes, dim), "vision_other", None, _PART)
    _janus_mlp(b, "model.generation_aligner", dim, width, _int(v, "vq_hidden_layers"))
    b.linear("model.generation_head.proj_out", width, _int(v, "vq_image_token_embed_dim"), "vision", None, _PART, True)
    b.linear("model.generation_head.vision_head", codes, width, "vision", None, _PART, True)


#: VisionSpec.kind -> builder, merged into :data:`vramdesk.core.vision_inventory.TOWERS`
VLM3_TOWERS: Mapping[str, Callable[[Builder, VisionSpec], None]] = {
    "deepseek_vl": deepseek_vl_tower,
    "deepseek_vl_hybrid": deepseek_vl_hybrid_tower,
    "janus": janus_tower,
}
