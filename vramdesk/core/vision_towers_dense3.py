"""Apertus 1.5's media tokenizers (modeling_apertus1p5.py, modeling_wavtokenizer.py in transformers 5.24): the
image tokenizer (EMU3.5's VQ encoder, encode-only) and the audio tokenizer (WavTokenizer's SEANet encoder), both
under ``model.`` beside the text model. Registered in :data:`vramdesk.core.vision_inventory.TOWERS` as
"apertus1p5"; the list-valued config fields travel in ``VisionSpec.details`` as comma-separated integers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .architecture import VisionSpec
from .tensor_builder import Builder

_PART = "vision"


def ints(text: int | float | str) -> list[int]:
    """A comma-separated list of integers as :func:`apertus1p5_details` wrote it."""
    return [int(x) for x in str(text).split(",") if x]


def _conv2d(b: Builder, p: str, out_c: int, in_c: int, k: int) -> None:
    b.add(f"{p}.weight", (out_c, in_c, k, k), "vision", None, _PART)
    b.add(f"{p}.bias", (out_c,), "bias", None, _PART)


def _resnet(b: Builder, p: str, in_c: int, out_c: int) -> None:
    """Apertus1p5VisionTokenizerResnetBlock: GroupNorm, 3x3 conv, GroupNorm, 3x3 conv; a 1x1 nin_shortcut where
    the width changes."""
    b.norm(f"{p}.norm1", in_c, None, _PART, True)
    _conv2d(b, f"{p}.conv1", out_c, in_c, 3)
    b.norm(f"{p}.norm2", out_c, None, _PART, True)
    _conv2d(b, f"{p}.conv2", out_c, out_c, 3)
    if in_c != out_c:
        _conv2d(b, f"{p}.nin_shortcut", out_c, in_c, 1)


def _attn(b: Builder, p: str, c: int) -> None:
    """Apertus1p5VisionTokenizerAttnBlock: GroupNorm and 1x1 q, k, v, proj_out."""
    b.norm(f"{p}.norm", c, None, _PART, True)
    for name in ("q", "k", "v", "proj_out"):
        _conv2d(b, f"{p}.{name}", c, c, 1)


def _image_tokenizer(b: Builder, d: Mapping[str, int | float | str]) -> None:
    """conv_in; a stage per channel multiplier (num_res_blocks resnet blocks, attention at the attn_resolutions,
    a stride-2 downsample but in the last); mid (resnet, attention, resnet); norm_out, conv_out; quant_conv and
    the codebook (quantize.embedding, codebook_size x embed_dim)."""
    p = "model.vision_tokenizer"
    base, mults = int(d["base_channels"]), ints(d["channel_multiplier"])
    attn_at, resolution = ints(d["attn_resolutions"]), int(d["resolution"])
    _conv2d(b, f"{p}.encoder.conv_in", base, int(d["in_channels"]), 3)
    for s, mult in enumerate(mults):
        in_c, out_c = base * (mults[s - 1] if s else 1), base * mult
        for i in range(int(d["num_res_blocks"])):
            layer = f"{p}.encoder.stages.{s}.layers.{i}"
            _resnet(b, f"{layer}.resnet", in_c if i == 0 else out_c, out_c)
            if resolution // 2**s in attn_at:
                _attn(b, f"{layer}.attention", out_c)
        if s < len(mults) - 1:
            _conv2d(b, f"{p}.encoder.stages.{s}.downsample.conv", out_c, out_c, 3)
    top, latent, embed = base * mults[-1], int(d["latent_channels"]), int(d["embed_dim"])
    _resnet(b, f"{p}.encoder.mid.block_1", top, top)
    _attn(b, f"{p}.encoder.mid.attn_1", top)
    _resnet(b, f"{p}.encoder.mid.block_2", top, top)
    b.norm(f"{p}.encoder.norm_out", top, None, _PART, True)
    _conv2d(b, f"{p}.encoder.conv_out", latent, top, 3)
    _conv2d(b, f"{p}.quant_conv", embed, latent, 1)
    b.add(f"{p}.quantize.embedding.weight", (int(d["codebook_size"]), embed), "vision", None, _PART)


def _conv1d(b: Builder, p: str, out_c: int, in_c: int, k: int, norm: str) -> None:
    """WavTokenizerConv1d: nn.Conv1d with a bias; weight_norm stores the weight as its magnitude (original0) and
    direction (original1), time_group_norm adds a GroupNorm(1, out)."""
    if norm == "weight_norm":
        b.add(f"{p}.conv.parametrizations.weight.original0", (out_c, 1, 1), "vision", None, _PART)
        b.add(f"{p}.conv.parametrizations.weight.original1", (out_c, in_c, k), "vision", None, _PART)
    else:
        b.add(f"{p}.conv.weight", (out_c, in_c, k), "vision", None, _PART)
    b.add(f"{p}.conv.bias", (out_c,), "bias", None, _PART)
    if norm == "time_group_norm":
        b.norm(f"{p}.norm", out_c, None, _PART, True)


def _audio_tokenizer(b: Builder, d: Mapping[str, int | float | str]) -> None:
    """WavTokenizerEncoder.layers: a conv; per reversed upsampling ratio, num_residual_layers SEANet blocks
    (ELU, conv to dim // compress, ELU, 1x1 conv back, a 1x1 shortcut conv with use_conv_shortcut), an ELU and a
    stride-ratio conv doubling the width; an LSTM (num_lstm_layers, input = hidden = the width); an ELU and the
    last conv to hidden_size. ELUs are modules without parameters that take their own index."""
    p, norm = "model.audio_tokenizer.encoder.layers", str(d["norm_type"])
    width = int(d["num_filters"])
    _conv1d(b, f"{p}.0", width, int(d["audio_channels"]), int(d["kernel_size"]), norm)
    idx = 1
    for ratio in reversed(ints(d["upsampling_ratios"])):
        for _ in range(int(d["num_residual_layers"])):
            hidden = width // int(d["compress"])
            _conv1d(b, f"{p}.{idx}.block.1", hidden, width, int(d["residual_kernel_size"]), norm)
            _conv1d(b, f"{p}.{idx}.block.3", width, hidden, 1, norm)
            if int(d["use_conv_shortcut"]):
                _conv1d(b, f"{p}.{idx}.shortcut", width, width, 1, norm)
            idx += 1
        _conv1d(b, f"{p}.{idx + 1}", 2 * width, width, 2 * ratio, norm)
        idx += 2
        width *= 2
    for layer in range(int(d["num_lstm_layers"])):
        for kind in ("ih", "hh"):
            b.add(f"{p}.{idx}.lstm.weight_{kind}_l{layer}", (4 * width, width), "vision", None, _PART)
            b.add(f"{p}.{idx}.lstm.bias_{kind}_l{layer}", (4 * width,), "bias", None, _PART)
    _conv1d(b, f"{p}.{idx + 2}", int(d["hidden_size"]), width, int(d["last_kernel_size"]), norm)


def apertus1p5_tokenizers(b: Builder, v: VisionSpec) -> None:
    """The image tokenizer, then the audio tokenizer where the config has one (``details["audio"]``)."""
    _image_tokenizer(b, v.details)
    if int(v.details.get("audio", 0)):
        _audio_tokenizer(b, {k.removeprefix("audio_"): val for k, val in v.details.items()})


#: ``VisionSpec.kind`` -> the builder of its tensors
DENSE3_TOWERS: Mapping[str, Callable[[Builder, VisionSpec], None]] = {"apertus1p5": apertus1p5_tokenizers}
