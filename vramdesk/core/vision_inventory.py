"""Vision towers and projectors -> tensors: one builder per ``VisionSpec.kind``, named as the model's checkpoint
names them (transformers' module paths). A tower family of its own goes in a module of its own, registered in
:data:`TOWERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .architecture import VisionSpec
from .tensor_builder import Builder as _Builder
from .tensor_builder import vit_blocks
from .vision_towers_clip import CLIP_TOWERS
from .vision_towers_dense3 import DENSE3_TOWERS
from .vision_towers_gemma import gemma4_tower
from .vision_towers_moe3 import MOE3_TOWERS
from .vision_towers_own import OWN_TOWERS
from .vision_towers_vlm2 import VLM2_TOWERS
from .vision_towers_vlm3 import VLM3_TOWERS

#: a gated MLP's projections
_GATED = ("gate_proj", "up_proj", "down_proj")


def _qwen3_vl_tower(b: _Builder, v: VisionSpec) -> None:
    """Qwen3-VL's tower (modeling_qwen3_vl.py): Conv3d patch embedding with a bias, a learned position table,
    LayerNorm blocks with a fused qkv and an fc1 / fc2 MLP, the patch merger and the deepstack mergers."""
    part = "vision"
    d = v.details
    h, inter = v.hidden, v.intermediate
    ch, tp, merge = int(d["in_channels"]), int(d["temporal_patch_size"]), int(d["spatial_merge_size"])
    b.add("visual.patch_embed.proj.weight", (h, ch, tp, v.patch_size, v.patch_size), "vision_other", None, part)
    b.add("visual.patch_embed.proj.bias", (h,), "bias", None, part)
    if int(d["num_position_embeddings"]):
        b.add("visual.pos_embed.weight", (int(d["num_position_embeddings"]), h), "vision_other", None, part)
    vit_blocks(b, "visual.blocks", v.depth, h, inter, part, mlp=("linear_fc1", "linear_fc2"))
    merged = h * merge * merge
    mergers = ["visual.merger"] + [f"visual.deepstack_merger_list.{k}" for k in range(int(d["deepstack"]))]
    for k, m in enumerate(mergers):
        # the main merger normalises before the spatial shuffle, deepstack mergers after it
        b.norm(f"{m}.norm", h if k == 0 else merged, None, part, True)
        b.linear(f"{m}.linear_fc1", merged, merged, "vision", None, part, True)
        b.linear(f"{m}.linear_fc2", int(d["out_hidden_size"]), merged, "vision", None, part, True)


def _llama4_tower(b: _Builder, v: VisionSpec) -> None:
    """Llama 4's tower (modeling_llama4.py Llama4VisionModel) with its vision adapter and projector."""
    part = "vision"
    d = v.details
    h, inter = v.hidden, v.intermediate
    ch, img = int(d["num_channels"]), int(d["image_size"])
    n_pos = (img // v.patch_size) ** 2 + 1
    b.add("vision_model.patch_embedding.linear.weight", (h, ch * v.patch_size**2), "vision", None, part)
    b.add("vision_model.class_embedding", (h,), "vision_other", None, part)
    b.add("vision_model.positional_embedding_vlm", (n_pos, h), "vision_other", None, part)
    b.norm("vision_model.layernorm_pre", h, None, part, True)
    b.norm("vision_model.layernorm_post", h, None, part, True)
    for i in range(v.depth):
        p = f"vision_model.model.layers.{i}"
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            b.linear(f"{p}.self_attn.{n}", h, h, "vision", None, part, True)
        b.linear(f"{p}.mlp.fc1", inter, h, "vision", None, part, True)
        b.linear(f"{p}.mlp.fc2", h, inter, "vision", None, part, True)
        b.norm(f"{p}.input_layernorm", h, None, part, True)
        b.norm(f"{p}.post_attention_layernorm", h, None, part, True)
    pin, pout = int(d["projector_input_dim"]), int(d["projector_output_dim"])
    b.linear("vision_model.vision_adapter.mlp.fc1", pin, inter, "vision", None, part)
    b.linear("vision_model.vision_adapter.mlp.fc2", pout, pout, "vision", None, part)
    b.linear("multi_modal_projector.linear_1", int(d["text_hidden"]), int(d["vision_output_dim"]), "vision", None, part)


def _qwen2_5_vl_tower(b: _Builder, v: VisionSpec) -> None:
    """Qwen2.5-VL's tower (modeling_qwen2_5_vl.py): Conv3d patch embedding without bias, blocks of two RMSNorms
    (weight only), a fused qkv and proj with biases and a gated MLP with biases (Qwen2_5_VLMLP(bias=True)), then
    Qwen2_5_VLPatchMerger: RMSNorm ln_q over the tower width and mlp.0 / mlp.2 over the merged patches."""
    part = "vision"
    d = v.details
    h, inter = v.hidden, v.intermediate
    ch, tp, merge = int(d["in_channels"]), int(d["temporal_patch_size"]), int(d["spatial_merge_size"])
    b.add("visual.patch_embed.proj.weight", (h, ch, tp, v.patch_size, v.patch_size), "vision_other", None, part)
    vit_blocks(b, "visual.blocks", v.depth, h, inter, part, mlp=_GATED, norm_bias=False)
    merged = h * merge * merge
    b.norm("visual.merger.ln_q", h, None, part, False)
    b.linear("visual.merger.mlp.0", merged, merged, "vision", None, part, True)
    b.linear("visual.merger.mlp.2", int(d["out_hidden_size"]), merged, "vision", None, part, True)


#: VisionSpec.kind -> the builder that names its tensors
TOWERS: Mapping[str, Callable[[_Builder, VisionSpec], None]] = {
    "qwen3_vl": _qwen3_vl_tower,
    "qwen2_5_vl": _qwen2_5_vl_tower,
    "llama4": _llama4_tower,
    # CLIP, SigLIP (Gemma 3, LLaVA-OneVision, PaliGemma, Idefics3), Pixtral and InternViT (vision_towers_clip.py)
    **CLIP_TOWERS,
    "gemma4": gemma4_tower,
    **OWN_TOWERS,
    **VLM3_TOWERS,
    **VLM2_TOWERS,
    **DENSE3_TOWERS,
    **MOE3_TOWERS,
}


def vision_tower(b: _Builder, v: VisionSpec) -> None:
    """Append the tensors of ``v``'s tower and projector to ``b``."""
    build = TOWERS.get(v.kind)
    if build is None:
        raise ValueError(f"no tensor inventory for a vision tower of kind {v.kind!r}")
    build(b, v)
