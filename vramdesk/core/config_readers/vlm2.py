"""Readers of the vision-language models on SigLIP / SigLIP 2 / Idefics-style towers (ShieldGemma 2, Idefics2,
LFM2-VL, Command A Vision): their text model by its own family's reader, with the sub-config classes' defaults
(transformers 5.24's configuration_<type>.py) for the fields ``save_pretrained`` leaves out, and the tower of
:mod:`vramdesk.core.vision_towers_vlm2` (ShieldGemma 2: Gemma 3's, read by Gemma's reader).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture
from ..families import Family
from .clipvlm import NO_SUB_CONFIGS, VISION_DEFAULTS, _spec, _text
from .decoders import _gemma
from .fields import NESTED_TEXT_DEFAULTS, _Cfg
from .recurrent import _lfm2

#: the text sub-config classes' defaults the classes above take (Lfm2Config, Cohere2Config)
TEXT_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "lfm2": {
        "vocab_size": 65536,
        "hidden_size": 2560,
        "intermediate_size": 12288,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 128_000,
        "tie_word_embeddings": True,
    },
    "cohere2": {
        "vocab_size": 256000,
        "hidden_size": 8192,
        "intermediate_size": 22528,
        "num_hidden_layers": 40,
        "num_attention_heads": 64,
        "max_position_embeddings": 8192,
        "sliding_window": 4096,
        "tie_word_embeddings": True,
    },
}

#: the vision sub-configs' defaults: Idefics2VisionConfig, Siglip2VisionConfig, and SiglipVisionConfig with
#: Cohere2VisionConfig's init_kwargs
VISION: Mapping[str, Mapping[str, Any]] = {
    "idefics2": {
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "image_size": 224,
        "patch_size": 32,
    },
    "lfm2_vl": {
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "patch_size": 16,
        "num_patches": 256,
        "vision_use_head": True,
    },
    "cohere2_vision": {
        **VISION_DEFAULTS["siglip_vision_model"],
        "hidden_size": 1152,
        "intermediate_size": 3072,
        "image_size": 512,
        "num_hidden_layers": 27,
        "num_attention_heads": 12,
    },
    "shieldgemma2": VISION_DEFAULTS["siglip_vision_model"],
}

#: Idefics2PerceiverConfig's defaults (its hidden_size is the text model's: Idefics2Config.__post_init__)
_PERCEIVER = {"resampler_n_latents": 64, "resampler_depth": 3, "resampler_n_heads": 16, "resampler_head_dim": 96}
_PERCEIVER_KV = 4


def _sub(c: _Cfg, outer: Mapping[str, Any], key: str, defaults: Mapping[str, Any]) -> _Cfg:
    raw = outer.get(key)
    return _Cfg({**defaults, **(raw if isinstance(raw, Mapping) else {})}, f"{c.model_type} {key}")


def _missing(c: _Cfg, outer: Mapping[str, Any], arch: Architecture) -> Architecture | None:
    """The text model alone, with a warning, when the config has no vision_config (a text-only export)."""
    if isinstance(outer.get("vision_config"), Mapping):
        return None
    note = NO_SUB_CONFIGS(model_type=c.model_type, missing="vision_config")
    return arch.model_copy(update={"warnings": (*arch.warnings, note)})


def _shieldgemma2(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """ShieldGemma 2: Gemma 3 (Gemma3TextConfig's defaults for the text fields, SiglipVisionConfig's for the tower:
    ShieldGemma2Config's sub-configs); the head tied when either config ties it (ShieldGemma2Config.__post_init__)."""
    text = {**NESTED_TEXT_DEFAULTS["gemma3"], **{k: v for k, v in c.d.items() if v is not None}}
    raw = outer.get("text_config")
    text_tie = raw.get("tie_word_embeddings", True) if isinstance(raw, Mapping) else True
    text["tie_word_embeddings"] = outer.get("tie_word_embeddings") is True or text_tie is True
    full = dict(outer)
    if isinstance(outer.get("vision_config"), Mapping):
        full["vision_config"] = _sub(c, outer, "vision_config", VISION["shieldgemma2"]).d
    arch = _gemma(_Cfg(text, c.model_type), full, "gemma3", fam)
    return _missing(c, outer, arch) or arch


def _idefics2(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Idefics2: Mistral (Idefics2Config's default text model), the Idefics2 tower and the perceiver connector."""
    arch = _text(c, outer, fam, "mistral")
    text_only = _missing(c, outer, arch)
    if text_only is not None:
        return text_only
    v = _sub(c, outer, "vision_config", VISION["idefics2"])
    r = _sub(c, outer, "perceiver_config", _PERCEIVER)
    heads = r.int("resampler_n_heads")
    details: dict[str, int | float | str] = {
        "prefix": "model.vision_model",
        "text_hidden": arch.hidden,
        # Idefics2Connector's modality projection is as wide as the text model's MLP
        "text_intermediate": arch.layers[0].intermediate,
        "resampler_n_latents": r.int("resampler_n_latents"),
        "resampler_depth": r.int("resampler_depth", min_value=0),
        "resampler_n_heads": heads,
        "resampler_head_dim": r.int("resampler_head_dim"),
        "resampler_kv_heads": r.int("num_key_value_heads", default=_PERCEIVER_KV),
    }
    return arch.model_copy(update={"vision": _spec("idefics2", v, details)})


def _lfm2_vl(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """LFM2-VL: LFM2 (Lfm2Config's defaults), the SigLIP 2 NaFlex tower and the two-layer projector over
    ``downsample_factor``² unshuffled patches."""
    text = _Cfg({**TEXT_DEFAULTS["lfm2"], **{k: v for k, v in c.d.items() if v is not None}}, c.model_type)
    arch = _lfm2(text, outer, "lfm2", fam)
    text_only = _missing(c, outer, arch)
    if text_only is not None:
        return text_only
    v = _sub(c, outer, "vision_config", VISION["lfm2_vl"])
    o = _Cfg(outer, c.model_type)
    factor = o.int("downsample_factor", default=2)
    details: dict[str, int | float | str] = {
        "prefix": "model.vision_tower.vision_model",
        "text_hidden": arch.hidden,
        "num_patches": v.int("num_patches"),
        "head": int(v.bool("vision_use_head", True)),
        "proj_in": v.int("hidden_size") * factor * factor,
        "proj_hidden": o.int("projector_hidden_size", default=2560),
        "proj_bias": int(o.bool("projector_bias", True)),
        "proj_layernorm": int(o.bool("projector_use_layernorm", True)),
    }
    # a NaFlex tower has no fixed image size: the position table's square stands in for it
    side = int(v.int("num_patches") ** 0.5) * v.int("patch_size")
    v = _Cfg({"image_size": side, **v.d}, v.model_type)
    return arch.model_copy(update={"vision": _spec("lfm2_vl", v, details)})


def _cohere2_vision(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Command A Vision: Cohere 2 (Cohere2Config's defaults), the SigLIP tower and the SwiGLU projector over
    ``downsample_factor``² unshuffled patches."""
    text = _Cfg({**TEXT_DEFAULTS["cohere2"], **{k: v for k, v in c.d.items() if v is not None}}, c.model_type)
    arch = _text(text, outer, fam, "cohere2")
    text_only = _missing(c, outer, arch)
    if text_only is not None:
        return text_only
    v = _sub(c, outer, "vision_config", VISION["cohere2_vision"])
    o = _Cfg(outer, c.model_type)
    factor = o.int("downsample_factor", default=2)
    details: dict[str, int | float | str] = {
        "prefix": "model.vision_tower.vision_model",
        "text_hidden": arch.hidden,
        "head": int(v.bool("vision_use_head", True)),
        "proj_in": v.int("hidden_size") * factor * factor,
        "proj_hidden": o.int("alignment_intermediate_size", default=36864),
    }
    return arch.model_copy(update={"vision": _spec("cohere2_vision", v, details)})
