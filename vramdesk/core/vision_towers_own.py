"""Vision towers of the vision-language models whose towers are their own (not SigLIP / CLIP): Qwen2-VL's,
GLM-4.1V / GLM-4.5V's, Kimi K2.5's MoonViT, MiniMax-M3's, Fuyu's patch projection, EXAONE 4.5's and (from
:mod:`.vision_towers_omni`) Qwen's omni thinkers'. Each builder names the tensors as the published checkpoints
store them (transformers' module paths; ``_checkpoint_conversion_mapping`` / conversion_mapping.py says where
transformers 5 renames them at load time) and is registered in :data:`vramdesk.core.vision_inventory.TOWERS`
under its ``VisionSpec.kind``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .architecture import VisionSpec
from .tensor_builder import Builder, vit_blocks
from .vision_towers_omni import qwen2_5_omni_towers, qwen3_omni_towers

_PART = "vision"


def qwen2_vl_tower(b: Builder, v: VisionSpec) -> None:
    """Qwen2-VL's tower (modeling_qwen2_vl.py Qwen2VisionTransformerPretrainedModel): a Conv3d patch embedding
    without bias, blocks of two LayerNorms (weight and bias), a fused qkv and proj with biases and an fc1 / fc2
    MLP of ``embed_dim x mlp_ratio`` with biases (VisionMlp), then PatchMerger: LayerNorm ``ln_q`` over the tower
    width and mlp.0 / mlp.2 over the merged patches, out to the text width. The checkpoints keep the original
    ``visual.`` prefix (transformers 5 maps it to ``model.visual``)."""
    d = v.details
    h, inter = v.hidden, v.intermediate
    ch, tp, merge = int(d["in_channels"]), int(d["temporal_patch_size"]), int(d["spatial_merge_size"])
    b.add("visual.patch_embed.proj.weight", (h, ch, tp, v.patch_size, v.patch_size), "vision_other", None, _PART)
    vit_blocks(b, "visual.blocks", v.depth, h, inter, _PART)
    merged = h * merge * merge
    b.norm("visual.merger.ln_q", h, None, _PART, True)
    b.linear("visual.merger.mlp.0", merged, merged, "vision", None, _PART, True)
    b.linear("visual.merger.mlp.2", int(d["out_hidden_size"]), merged, "vision", None, _PART, True)


def glm4v_tower(b: Builder, v: VisionSpec) -> None:
    """GLM-4.1V / GLM-4.5V / GLM-4.6V's tower (modeling_glm4v.py Glm4vVisionModel; Glm4vMoe's is the same): a
    learned position table of ``(image_size / patch_size)^2`` rows, a Conv3d patch embedding with a bias, blocks of
    two RMSNorms, a fused qkv (bias: ``attention_bias``) and proj without bias and a gated MLP as wide as the
    output (Glm4VisionMlp: ``out_hidden_size``, no biases); then post_layernorm, the Conv2d ``downsample`` over
    ``spatial_merge_size`` patches into the output width (with a bias), and Glm4vVisionPatchMerger: proj, a
    LayerNorm post_projection_norm and a gated MLP of ``intermediate_size``, no biases. ``post_conv_layernorm`` is
    built too. Names under ``model.visual.`` as the checkpoints store them."""
    d = v.details
    h, out, inter = v.hidden, int(d["out_hidden_size"]), v.intermediate
    ch, tp, merge = int(d["in_channels"]), int(d["temporal_patch_size"]), int(d["spatial_merge_size"])
    qkv_bias = bool(d["attention_bias"])
    pre = "model.visual"
    n_pos = (int(d["image_size"]) // v.patch_size) ** 2
    b.add(f"{pre}.embeddings.position_embedding.weight", (n_pos, h), "vision_other", None, _PART)
    b.add(f"{pre}.patch_embed.proj.weight", (h, ch, tp, v.patch_size, v.patch_size), "vision_other", None, _PART)
    b.add(f"{pre}.patch_embed.proj.bias", (h,), "bias", None, _PART)
    vit_blocks(
        b,
        f"{pre}.blocks",
        v.depth,
        h,
        out,
        _PART,
        mlp=("gate_proj", "up_proj", "down_proj"),
        norm_bias=False,
        qkv_bias=qkv_bias,
        proj_bias=False,
        mlp_bias=False,
    )
    b.norm(f"{pre}.post_conv_layernorm", h, None, _PART, False)
    b.norm(f"{pre}.post_layernorm", h, None, _PART, False)
    b.add(f"{pre}.downsample.weight", (out, h, merge, merge), "vision_other", None, _PART)
    b.add(f"{pre}.downsample.bias", (out,), "bias", None, _PART)
    m = f"{pre}.merger"
    b.linear(f"{m}.proj", out, out, "vision", None, _PART)
    b.norm(f"{m}.post_projection_norm", out, None, _PART, True)
    b.linear(f"{m}.gate_proj", inter, out, "vision", None, _PART)
    b.linear(f"{m}.up_proj", inter, out, "vision", None, _PART)
    b.linear(f"{m}.down_proj", out, inter, "vision", None, _PART)


def moonvit_tower(b: Builder, v: VisionSpec) -> None:
    """Kimi K2.5's MoonViT (modeling_kimi_k25.py Kimi_K25VisionModel and Kimi_K25MultimodalProjection), named as
    the remote-code checkpoints store it (transformers 5's kimi_k25 conversion mapping renames it at load time):
    a Conv2d patch embedding with a bias, a learned (height, width, width) position grid ``pos_emb`` (the time
    axis is a sinusoidal table, not stored), blocks of two LayerNorms ``norm0`` / ``norm1``, a fused ``wqkv`` and
    ``wo`` with biases and an ``fc0`` / ``fc1`` MLP with biases, a final LayerNorm; then ``mm_projector``: a
    LayerNorm ``pre_norm`` over ``projection_hidden_size`` and ``proj.0`` / ``proj.2`` with biases over the
    merged patches, out to the text width."""
    d = v.details
    h, inter = v.hidden, v.intermediate
    merged = h * int(d["merge_h"]) * int(d["merge_w"])
    b.add("vision_tower.patch_embed.proj.weight", (h, 3, v.patch_size, v.patch_size), "vision_other", None, _PART)
    b.add("vision_tower.patch_embed.proj.bias", (h,), "bias", None, _PART)
    b.add("vision_tower.patch_embed.pos_emb.weight", (int(d["pos_h"]), int(d["pos_w"]), h), "vision_other", None, _PART)
    for i in range(v.depth):
        p = f"vision_tower.encoder.blocks.{i}"
        b.norm(f"{p}.norm0", h, None, _PART, True)
        b.norm(f"{p}.norm1", h, None, _PART, True)
        b.linear(f"{p}.wqkv", 3 * h, h, "vision", None, _PART, True)
        b.linear(f"{p}.wo", h, h, "vision", None, _PART, True)
        b.linear(f"{p}.mlp.fc0", inter, h, "vision", None, _PART, True)
        b.linear(f"{p}.mlp.fc1", h, inter, "vision", None, _PART, True)
    b.norm("vision_tower.encoder.final_layernorm", h, None, _PART, True)
    b.norm("mm_projector.pre_norm", int(d["projection_hidden_size"]), None, _PART, True)
    b.linear("mm_projector.proj.0", merged, merged, "vision", None, _PART, True)
    b.linear("mm_projector.proj.2", int(d["text_hidden"]), merged, "vision", None, _PART, True)


def minimax_m3_vl_tower(b: Builder, v: VisionSpec) -> None:
    """MiniMax-M3's tower (modeling_minimax_m3_vl.py MiniMaxM3VLVisionModel and MiniMaxM3VLMultiModalProjector),
    named as the checkpoints store it (transformers 5's minimax_m3_vl conversion mapping renames it at load time):
    a Conv3d patch embedding without bias, a LayerNorm ``pre_layrnorm``, CLIP-style encoder layers (q/k/v/out_proj
    and fc1 / fc2 with biases, two LayerNorms) and no post-norm; then the projector: linear_1 / linear_2 per
    patch into the text width, and ``patch_merge_mlp`` linear_1 / linear_2 over ``spatial_merge_size^2`` merged
    text-width patches; every projection with a bias."""
    d = v.details
    h, inter = v.hidden, v.intermediate
    ch, tp, merge = int(d["in_channels"]), int(d["temporal_patch_size"]), int(d["spatial_merge_size"])
    text, proj = int(d["text_hidden"]), int(d["projector_hidden_size"])
    t = "vision_tower.vision_model"
    b.add(
        f"{t}.embeddings.patch_embedding.weight", (h, ch, tp, v.patch_size, v.patch_size), "vision_other", None, _PART
    )
    b.norm(f"{t}.pre_layrnorm", h, None, _PART, True)
    for i in range(v.depth):
        p = f"{t}.encoder.layers.{i}"
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            b.linear(f"{p}.self_attn.{n}", h, h, "vision", None, _PART, True)
        b.norm(f"{p}.layer_norm1", h, None, _PART, True)
        b.norm(f"{p}.layer_norm2", h, None, _PART, True)
        b.linear(f"{p}.mlp.fc1", inter, h, "vision", None, _PART, True)
        b.linear(f"{p}.mlp.fc2", h, inter, "vision", None, _PART, True)
    b.linear("multi_modal_projector.linear_1", proj, h, "vision", None, _PART, True)
    b.linear("multi_modal_projector.linear_2", text, proj, "vision", None, _PART, True)
    b.linear("patch_merge_mlp.linear_1", proj, text * merge * merge, "vision", None, _PART, True)
    b.linear("patch_merge_mlp.linear_2", text, proj, "vision", None, _PART, True)


def fuyu_tower(b: Builder, v: VisionSpec) -> None:
    """Fuyu's image input (modeling_fuyu.py FuyuModel.vision_embed_tokens): one linear with a bias from a flattened
    patch of ``patch_size^2 x num_channels`` values to the text width; no encoder. The checkpoints (saved before
    transformers' VLM refactor) call it ``vision_embed_tokens``."""
    b.linear(
        "vision_embed_tokens", v.hidden, v.patch_size**2 * int(v.details["num_channels"]), "vision", None, _PART, True
    )


def exaone4_5_tower(b: Builder, v: VisionSpec) -> None:
    """EXAONE 4.5's tower (modeling_exaone4_5.py Exaone4_5_VisionModel), under ``model.visual.`` as its checkpoints
    (saved by transformers 5) store it: Qwen2.5-VL's layout (a Conv3d without bias, RMSNorm blocks, a gated MLP with
    biases, the ln_q / mlp.0 / mlp.2 merger) with grouped-query attention in the tower: qkv has ``num_heads`` query
    and twice ``num_key_value_heads`` key / value heads of ``hidden_size / num_heads``, with a bias."""
    d = v.details
    h, inter = v.hidden, v.intermediate
    ch, tp, merge = int(d["in_channels"]), int(d["temporal_patch_size"]), int(d["spatial_merge_size"])
    qkv = h + 2 * int(d["num_key_value_heads"]) * (h // v.num_heads)
    pre = "model.visual"
    b.add(f"{pre}.patch_embed.proj.weight", (h, ch, tp, v.patch_size, v.patch_size), "vision_other", None, _PART)
    for i in range(v.depth):
        p = f"{pre}.blocks.{i}"
        for norm in ("norm1", "norm2"):
            b.norm(f"{p}.{norm}", h, None, _PART, False)
        b.linear(f"{p}.attn.qkv", qkv, h, "vision", None, _PART, True)
        b.linear(f"{p}.attn.proj", h, h, "vision", None, _PART, True)
        for name, out_f, in_f in (("gate_proj", inter, h), ("up_proj", inter, h), ("down_proj", h, inter)):
            b.linear(f"{p}.mlp.{name}", out_f, in_f, "vision", None, _PART, True)
    merged = h * merge * merge
    b.norm(f"{pre}.merger.ln_q", h, None, _PART, False)
    b.linear(f"{pre}.merger.mlp.0", merged, merged, "vision", None, _PART, True)
    b.linear(f"{pre}.merger.mlp.2", int(d["out_hidden_size"]), merged, "vision", None, _PART, True)


#: VisionSpec.kind -> builder, merged into :data:`vramdesk.core.vision_inventory.TOWERS`
OWN_TOWERS: Mapping[str, Callable[[Builder, VisionSpec], None]] = {
    "qwen2_vl": qwen2_vl_tower,
    "glm4v": glm4v_tower,
    "moonvit": moonvit_tower,
    "minimax_m3_vl": minimax_m3_vl_tower,
    "qwen2_5_omni": qwen2_5_omni_towers,
    "qwen3_omni": qwen3_omni_towers,
    "fuyu": fuyu_tower,
    "exaone4_5": exaone4_5_tower,
}
