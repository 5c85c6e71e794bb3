"""The towers of Qwen's omni thinkers (Qwen2.5-Omni, Qwen3-Omni-MoE): a vision tower and a Whisper-style audio
encoder, named as a thinker checkpoint stores them (``visual.``, ``audio_tower.``; the full omni checkpoints put
``thinker.`` before them, which transformers 5's ``PrefixChange`` removes). The audio encoder is counted in the
``vision`` part: the inventory has no part for audio, and it is, like the vision tower, an encoder beside the
text model that decoding does not run. Registered in :data:`vramdesk.core.vision_inventory.TOWERS` through
:data:`vramdesk.core.vision_towers_own.OWN_TOWERS`.
"""

from __future__ import annotations

from .architecture import VisionSpec
from .tensor_builder import Builder, vit_blocks

_PART = "vision"


def _audio_layers(b: Builder, d: dict[str, int | float | str], k_bias: bool) -> None:
    """The encoder layers (Qwen2_5OmniAudioEncoderLayer = Whisper's: q/k/v/out_proj, k_proj without a bias in
    Qwen2.5-Omni's and with one in Qwen3-Omni's, fc1 / fc2, two LayerNorms) and ln_post."""
    w, ffn = int(d["audio_width"]), int(d["audio_ffn"])
    for i in range(int(d["audio_layers"])):
        p = f"audio_tower.layers.{i}"
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            b.linear(f"{p}.self_attn.{n}", w, w, "vision", None, _PART, n != "k_proj" or k_bias)
        b.norm(f"{p}.self_attn_layer_norm", w, None, _PART, True)
        b.linear(f"{p}.fc1", ffn, w, "vision", None, _PART, True)
        b.linear(f"{p}.fc2", w, ffn, "vision", None, _PART, True)
        b.norm(f"{p}.final_layer_norm", w, None, _PART, True)
    b.norm("audio_tower.ln_post", w, None, _PART, True)


def qwen2_5_omni_towers(b: Builder, v: VisionSpec) -> None:
    """Qwen2.5-Omni's thinker (modeling_qwen2_5_omni.py): Qwen2_5OmniVisionEncoder = Qwen2.5-VL's tower with q, k
    and v as three projections (``attn.q`` / ``attn.k`` / ``attn.v``, with biases), and Qwen2_5OmniAudioEncoder:
    conv1 / conv2 (kernel 3, biases), ``audio_bos_eos_token`` (2 x output width), the layers, ln_post and ``proj``
    to the text width; its sinusoidal position table is a buffer the checkpoint does not store."""
    d = v.details
    h, inter = v.hidden, v.intermediate
    ch, tp, merge = int(d["in_channels"]), int(d["temporal_patch_size"]), int(d["spatial_merge_size"])
    b.add("visual.patch_embed.proj.weight", (h, ch, tp, v.patch_size, v.patch_size), "vision_other", None, _PART)
    for i in range(v.depth):
        p = f"visual.blocks.{i}"
        b.norm(f"{p}.norm1", h, None, _PART, False)
        b.norm(f"{p}.norm2", h, None, _PART, False)
        for n in ("q", "k", "v", "proj"):
            b.linear(f"{p}.attn.{n}", h, h, "vision", None, _PART, True)
        b.linear(f"{p}.mlp.gate_proj", inter, h, "vision", None, _PART, True)
        b.linear(f"{p}.mlp.up_proj", inter, h, "vision", None, _PART, True)
        b.linear(f"{p}.mlp.down_proj", h, inter, "vision", None, _PART, True)
    merged = h * merge * merge
    b.norm("visual.merger.ln_q", h, None, _PART, False)
    b.linear("visual.merger.mlp.0", merged, merged, "vision", None, _PART, True)
    b.linear("visual.merger.mlp.2", int(d["out_hidden_size"]), merged, "vision", None, _PART, True)
    w, mel, out = int(d["audio_width"]), int(d["audio_mel_bins"]), int(d["audio_output_dim"])
    b.add("audio_tower.conv1.weight", (w, mel, 3), "vision_other", None, _PART)
    b.add("audio_tower.conv1.bias", (w,), "bias", None, _PART)
    b.add("audio_tower.conv2.weight", (w, w, 3), "vision_other", None, _PART)
    b.add("audio_tower.conv2.bias", (w,), "bias", None, _PART)
    b.add("audio_tower.audio_bos_eos_token.weight", (2, out), "vision_other", None, _PART)
    _audio_layers(b, d, k_bias=False)
    b.linear("audio_tower.proj", out, w, "vision", None, _PART, True)


def qwen3_omni_towers(b: Builder, v: VisionSpec) -> None:
    """Qwen3-Omni-MoE's thinker (modeling_qwen3_omni_moe.py): Qwen3-VL's tower (Conv3d with a bias, a learned
    position table, LayerNorm blocks with a fused qkv and linear_fc1 / linear_fc2) whose mergers are
    Qwen3OmniMoeVisionPatchMerger (``ln_q``, ``mlp.0``, ``mlp.2``; the deepstack ones in ``merger_list``
    normalise after the spatial shuffle), and Qwen3OmniMoeAudioEncoder: three stride-2 Conv2d (3 x 3, biases) of
    ``downsample_hidden_size`` channels, ``conv_out`` (no bias) from the downsampled mel bins, the layers, ln_post
    and proj1 / proj2 to the text width."""
    d = v.details
    h, inter = v.hidden, v.intermediate
    ch, tp, merge = int(d["in_channels"]), int(d["temporal_patch_size"]), int(d["spatial_merge_size"])
    b.add("visual.patch_embed.proj.weight", (h, ch, tp, v.patch_size, v.patch_size), "vision_other", None, _PART)
    b.add("visual.patch_embed.proj.bias", (h,), "bias", None, _PART)
    b.add("visual.pos_embed.weight", (int(d["num_position_embeddings"]), h), "vision_other", None, _PART)
    vit_blocks(b, "visual.blocks", v.depth, h, inter, _PART, mlp=("linear_fc1", "linear_fc2"))
    merged = h * merge * merge
    mergers = ["visual.merger"] + [f"visual.merger_list.{k}" for k in range(int(d["deepstack"]))]
    for k, m in enumerate(mergers):
        b.norm(f"{m}.ln_q", h if k == 0 else merged, None, _PART, True)
        b.linear(f"{m}.mlp.0", merged, merged, "vision", None, _PART, True)
        b.linear(f"{m}.mlp.2", int(d["out_hidden_size"]), merged, "vision", None, _PART, True)
    w, mel, out, ds = (int(d[k]) for k in ("audio_width", "audio_mel_bins", "audio_output_dim", "audio_downsample"))
    b.add("audio_tower.conv2d1.weight", (ds, 1, 3, 3), "vision_other", None, _PART)
    b.add("audio_tower.conv2d1.bias", (ds,), "bias", None, _PART)
    for n in ("conv2d2", "conv2d3"):
        b.add(f"audio_tower.{n}.weight", (ds, ds, 3, 3), "vision_other", None, _PART)
        b.add(f"audio_tower.{n}.bias", (ds,), "bias", None, _PART)
    # three stride-2 convolutions with padding 1 halve the mel bins, rounding up, three times
    bins = (((mel + 1) // 2 + 1) // 2 + 1) // 2
    b.linear("audio_tower.conv_out", w, ds * bins, "vision", None, _PART)
    _audio_layers(b, d, k_bias=True)
    b.linear("audio_tower.proj1", w, w, "vision", None, _PART, True)
    b.linear("audio_tower.proj2", out, w, "vision", None, _PART, True)
