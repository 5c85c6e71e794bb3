"""Vision towers of the third round's multimodal MoE models: ERNIE 4.5 VL's. Each builder names the tensors as the
published checkpoints store them (transformers 5's conversion_mapping.py says where it renames them at load time)
and is registered in :data:`vramdesk.core.vision_inventory.TOWERS` under its ``VisionSpec.kind``."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .architecture import VisionSpec
from .tensor_builder import Builder, vit_blocks

_PART = "vision"


def ernie4_5_vl_tower(b: Builder, v: VisionSpec) -> None:
    """ERNIE 4.5 VL's tower (modeling_ernie4_5_vl_moe.py Ernie4_5_VLMoeVisionTransformerPretrainedModel, under the
    checkpoints' ``vision_model.``; transformers 5 maps it to ``model.vision_tower``): a bias-free linear patch
    embedding over channels x patch x patch, blocks of two LayerNorms, a fused qkv and proj with biases and an
    fc1 / fc2 MLP with biases, the final LayerNorm ``ln``; then the resampler (Ernie4_5_VLMoeVariableResolution
    ResamplerModel, ``model.resampler_model.``) over ``spatial_merge_size``^2 merged patches: spatial_linear and
    temporal_linear (linear, GELU, linear, LayerNorm: the checkpoints' Sequential indices 0, 2, 3; the temporal
    one reads ``temporal_merge_size`` frames), ``mlp`` out to the text width with a bias and the RMSNorm
    ``after_norm``."""
    d = v.details
    h, inter = v.hidden, v.intermediate
    ch, merge, frames = int(d["in_channels"]), int(d["spatial_merge_size"]), int(d["temporal_merge_size"])
    b.add("vision_model.patch_embed.proj.weight", (h, ch * v.patch_size * v.patch_size), "vision_other", None, _PART)
    vit_blocks(b, "vision_model.blocks", v.depth, h, inter, _PART)
    b.norm("vision_model.ln", h, None, _PART, True)
    r, merged = "model.resampler_model", h * merge * merge
    for name, width_in in (("spatial_linear", merged), ("temporal_linear", merged * frames)):
        b.linear(f"{r}.{name}.0", merged, width_in, "vision", None, _PART, True)
        b.linear(f"{r}.{name}.2", merged, merged, "vision", None, _PART, True)
        b.norm(f"{r}.{name}.3", merged, None, _PART, True)
    out = int(d["out_hidden_size"])
    b.linear(f"{r}.mlp", out, merged, "vision", None, _PART, True)
    b.norm(f"{r}.after_norm", out, None, _PART, False)


#: VisionSpec.kind -> builder, merged into :data:`vramdesk.core.vision_inventory.TOWERS`
MOE3_TOWERS: Mapping[str, Callable[[Builder, VisionSpec], None]] = {"ernie4_5_vl": ernie4_5_vl_tower}
