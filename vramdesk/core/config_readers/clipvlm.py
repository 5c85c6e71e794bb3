"""Readers of the LLaVA-style vision-language models: a ViT tower (CLIP, SigLIP, Pixtral, InternViT, Idefics3's
SigLIP) and a projector around a text model vramdesk already reads (``text_config``: Llama, Mistral, Qwen2 / 3,
Granite, Gemma 1 / 2, Cohere 2). Towers and projectors are named by :mod:`vramdesk.core.vision_towers_clip`.

Published configs are written by ``save_pretrained`` as their difference from the sub-config classes' defaults
(``PretrainedConfig.to_diff_dict``): llava-hf/llava-1.5-7b-hf's ``text_config`` names no width, depth or head
count (LlamaConfig's), its ``vision_config`` no channel count. :data:`TEXT_DEFAULTS` and :data:`VISION_DEFAULTS`
hold those classes' ``__init__`` defaults (transformers 5.24's configuration_<type>.py) for the fields they leave
out. The tied head follows the outer config when it sets ``tie_word_embeddings`` (transformers 5 ties on the outer
config; LlavaConfig also takes a text config's ``true``), else the text config's own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..architecture import Architecture, VisionSpec
from ..families import Family, family_for_model_type
from ..messages import Message
from .decoders import _gemma, _llama_like
from .fields import _Cfg
from .modern import _cohere

TEXT_AS_LLAMA = Message(
    "config.vlm.text_as_llama",
    "{model_type}: its text model '{text_type}' is read as a Llama-style decoder inside it (RMSNorm, gated MLP, "
    "rotary); check the parameter total against the checkpoint",
)
NO_SUB_CONFIGS = Message(
    "config.vlm.no_sub_configs",
    "{model_type}: the config has no {missing} (the original repository's layout, not transformers'): read as its "
    "text model alone; the vision tower and projector are not counted",
)
_FIELD_TEXT_CONFIG = "text_config"
_FIELD_VISION_CONFIG = "vision_config"

#: the text sub-config classes' defaults for the fields that size the model (configuration_<type>.py)
TEXT_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "llama": {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "tie_word_embeddings": False,
    },
    "mistral": {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
    },
    "qwen2": {
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "tie_word_embeddings": False,
    },
    "gemma": {
        "vocab_size": 256000,
        "hidden_size": 3072,
        "intermediate_size": 24576,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "head_dim": 256,
        "tie_word_embeddings": True,
    },
    "gemma2": {
        "vocab_size": 256000,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "sliding_window": 4096,
        "tie_word_embeddings": True,
    },
}

#: the vision sub-config classes' defaults (configuration_clip.py CLIPVisionConfig, configuration_siglip.py
#: SiglipVisionConfig, configuration_pixtral.py, configuration_internvl.py InternVLVisionConfig,
#: configuration_idefics3.py Idefics3VisionConfig)
VISION_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "clip_vision_model": {
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "image_size": 224,
        "patch_size": 32,
    },
    "siglip_vision_model": {
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "image_size": 224,
        "patch_size": 16,
        "vision_use_head": True,
    },
    "pixtral": {
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "image_size": 1024,
        "patch_size": 16,
    },
    "internvl_vision": {
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "image_size": 448,
        "patch_size": 14,
    },
    "idefics3_vision": {
        "hidden_size": 1152,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 16,
        "image_size": 224,
        "patch_size": 32,
    },
}
VISION_DEFAULTS = {**VISION_DEFAULTS, "smolvlm_vision": VISION_DEFAULTS["idefics3_vision"]}

#: text readers by the text family's reader; their families' records use Llama's module names, which the VLM's
#: record prefixes
_TEXT_READERS: Mapping[str, Callable[[_Cfg, Mapping[str, Any], str, Family], Architecture]] = {
    "llama": _llama_like,
    "gemma": _gemma,
    "cohere": _cohere,
}


def _square(v: Any) -> Any:
    """InternVL's ``image_size`` / ``patch_size`` are [h, w] pairs; the towers are square."""
    return v[0] if isinstance(v, list) and v else v


def _vision_cfg(c: _Cfg, outer: Mapping[str, Any], default_type: str) -> _Cfg:
    vc = outer[_FIELD_VISION_CONFIG]
    kind = str(vc.get("model_type") or default_type)
    merged = {**VISION_DEFAULTS.get(kind, VISION_DEFAULTS[default_type]), **vc}
    for key in ("image_size", "patch_size"):
        merged[key] = _square(merged.get(key))
    return _Cfg(merged, f"{c.model_type} vision_config")


def _text(c: _Cfg, outer: Mapping[str, Any], fam: Family, default_text: str) -> Architecture:
    """The text model of ``text_config`` read by its own family's reader under the VLM's record ``fam`` (whose
    tensor names are the text family's, prefixed), with its class defaults filled in."""
    text_type = str(c.d.get("model_type") or default_text).lower().removesuffix("_text")
    if family_for_model_type(text_type) is fam:
        # a text_config that names the outer model type: the outer class's default text model
        text_type = default_text
    merged = {**TEXT_DEFAULTS.get(text_type, {}), **c.d}
    outer_tie = outer.get("tie_word_embeddings")
    if isinstance(outer_tie, bool):
        # LlavaConfig.__post_init__ (and its kin): an outer False takes the text config's own True (read from the
        # text config as published: fields._text_and_outer has already put the outer value in ``c``)
        raw = outer.get("text_config")
        text_tie = isinstance(raw, Mapping) and raw.get("tie_word_embeddings") is True
        merged["tie_word_embeddings"] = outer_tie or text_tie
    text_fam = family_for_model_type(text_type)
    reader = _TEXT_READERS.get(text_fam.reader) if text_fam is not None else None
    arch = (reader or _llama_like)(_Cfg(merged, c.model_type), outer, text_type, fam)
    if reader is None:
        note = TEXT_AS_LLAMA(model_type=c.model_type, text_type=text_type)
        arch = arch.model_copy(update={"warnings": (*arch.warnings, note)})
    filled = [key for key in TEXT_DEFAULTS.get(text_type, {}) if key not in c.d]
    if filled:
        sources = {**arch.sources, "text class defaults": f"{text_type}: {', '.join(filled)}"}
        arch = arch.model_copy(update={"sources": sources})
    return arch


def _feature_layers(outer: Mapping[str, Any]) -> int:
    """How many tower layers the projector reads side by side (``vision_feature_layer``: one index or a list)."""
    layers = outer.get("vision_feature_layer")
    return len(layers) if isinstance(layers, list) else 1


def _spec(
    kind: str, v: _Cfg, details: dict[str, int | float | str], *, heads_key: str = "num_attention_heads"
) -> VisionSpec:
    return VisionSpec(
        kind=kind,
        depth=v.int("num_hidden_layers"),
        hidden=v.int("hidden_size"),
        intermediate=v.int("intermediate_size"),
        num_heads=v.int(heads_key),
        patch_size=v.int("patch_size"),
        details={"image_size": v.int("image_size"), "num_channels": v.int("num_channels", default=3), **details},
    )


def _llava_tower(c: _Cfg, outer: Mapping[str, Any], base: str, text_hidden: int) -> VisionSpec:
    """LLaVA / LLaVA-NeXT (-Video) / LLaVA-OneVision / VipLLaVA / Video-LLaVA: a CLIP or SigLIP tower under
    ``vision_tower.vision_model`` (Video-LLaVA: ``image_tower`` and ``video_tower``) and the two-layer MLP."""
    v = _vision_cfg(c, outer, "clip_vision_model")
    siglip = str(v.get("model_type")) == "siglip_vision_model"
    width = v.int("hidden_size") * _feature_layers(outer)
    projector = {"vipllava": "vipllava", "llava": "llava", "video_llava": "llava"}.get(base, "llava_next")
    prefix = "image_tower,video_tower" if base == "video_llava" else "vision_tower"
    prefix = ",".join(f"{p}.vision_model" for p in prefix.split(","))
    details: dict[str, int | float | str] = {
        "prefix": prefix,
        "projector": projector,
        "proj_in": width,
        "text_hidden": text_hidden,
        "proj_bias": int(_Cfg(outer, c.model_type).bool("multimodal_projector_bias", True)),
        "head": int(siglip and v.bool("vision_use_head", True)),
    }
    return _spec("siglip" if siglip else "clip", v, details)


def _mistral3_tower(c: _Cfg, outer: Mapping[str, Any], base: str, text_hidden: int) -> VisionSpec:
    """Mistral 3 (Mistral Small 3.1 / 3.2): the Pixtral tower and Mistral3MultiModalProjector."""
    v = _vision_cfg(c, outer, "pixtral")
    o = _Cfg(outer, c.model_type)
    hidden, heads = v.int("hidden_size"), v.int("num_attention_heads")
    details: dict[str, int | float | str] = {
        "prefix": "vision_tower",
        "projector": "mistral3",
        "head_dim": v.int("head_dim", default=hidden // heads),
        "spatial_merge_size": o.int("spatial_merge_size", default=2),
        "proj_in": hidden * _feature_layers(outer),
        "text_hidden": text_hidden,
        "proj_bias": int(o.bool("multimodal_projector_bias", False)),
    }
    return _spec("pixtral", v, details)


def _internvl_tower(c: _Cfg, outer: Mapping[str, Any], base: str, text_hidden: int) -> VisionSpec:
    """InternVL 2.5 / 3 / 3.5 (the -hf checkpoints): InternViT and the projector over ``1 / downsample_ratio``²
    pixel-shuffled patches."""
    v = _vision_cfg(c, outer, "internvl_vision")
    ratio = outer.get("downsample_ratio", 0.5)
    shuffle = int(1 / ratio) ** 2 if isinstance(ratio, int | float) and 0 < ratio <= 1 else 4
    details: dict[str, int | float | str] = {
        "prefix": "vision_tower",
        "projector": "internvl",
        "proj_in": v.int("hidden_size") * shuffle,
        "text_hidden": text_hidden,
        "attention_bias": int(v.bool("attention_bias", False)),
        "qk_norm": int(v.bool("use_qk_norm", False)),
        "norm_type": str(v.get("norm_type", "layer_norm")),
        "mask_token": int(v.bool("use_mask_token", False)),
        "position_table": int(v.bool("use_absolute_position_embeddings", True)),
        "mean_pooling": int(v.bool("use_mean_pooling", True)),
    }
    return _spec("intern_vit", v, details)


def _paligemma_tower(c: _Cfg, outer: Mapping[str, Any], base: str, text_hidden: int) -> VisionSpec:
    """PaliGemma 1 / 2: a SigLIP tower and one linear to ``projection_dim`` (the text width)."""
    v = _vision_cfg(c, outer, "siglip_vision_model")
    out = v.int("projection_dim", default=_Cfg(outer, c.model_type).int("projection_dim", default=text_hidden))
    details: dict[str, int | float | str] = {
        "prefix": "vision_tower.vision_model",
        "projector": "paligemma",
        "text_hidden": out,
        "head": int(v.bool("vision_use_head", True)),
    }
    return _spec("siglip", v, details)


def _idefics3_tower(c: _Cfg, outer: Mapping[str, Any], base: str, text_hidden: int) -> VisionSpec:
    """Idefics3 / SmolVLM: Idefics3VisionTransformer (SigLIP's, no head) under ``model.vision_model`` and the
    connector over ``scale_factor``² pixel-shuffled patches."""
    v = _vision_cfg(c, outer, "idefics3_vision")
    scale = _Cfg(outer, c.model_type).int("scale_factor", default=2)
    details: dict[str, int | float | str] = {
        "prefix": "model.vision_model",
        "projector": "idefics3",
        "proj_in": v.int("hidden_size") * scale * scale,
        "text_hidden": text_hidden,
        "head": 0,
    }
    return _spec("siglip", v, details)


#: model type -> (its class's default text model, the tower reader)
_VLMS: Mapping[str, tuple[str, Callable[[_Cfg, Mapping[str, Any], str, int], VisionSpec]]] = {
    **dict.fromkeys(
        ("llava", "llava_next", "llava_next_video", "llava_onevision", "vipllava", "video_llava"),
        ("llama", _llava_tower),
    ),
    "mistral3": ("mistral", _mistral3_tower),
    "internvl": ("qwen2", _internvl_tower),
    "paligemma": ("gemma", _paligemma_tower),
    "idefics3": ("llama", _idefics3_tower),
    "smolvlm": ("llama", _idefics3_tower),
}


def _clip_vlm(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """A LLaVA-style model: its text model (:func:`_text`) and its tower and projector."""
    default_text, tower = _VLMS[base]
    missing = [key for key in (_FIELD_TEXT_CONFIG, _FIELD_VISION_CONFIG) if not isinstance(outer.get(key), Mapping)]
    if _FIELD_TEXT_CONFIG in missing:
        # the flat config of the original LLaVA repository (liuhaotian/llava-v1.5-7b): its Llama fields on top
        arch = _llama_like(c, outer, default_text, fam)
        note = NO_SUB_CONFIGS(model_type=c.model_type, missing=", ".join(missing))
        return arch.model_copy(update={"warnings": (*arch.warnings, note)})
    arch = _text(c, outer, fam, default_text)
    if missing:
        note = NO_SUB_CONFIGS(model_type=c.model_type, missing=missing[0])
        return arch.model_copy(update={"warnings": (*arch.warnings, note)})
    return arch.model_copy(update={"vision": tower(c, outer, base, arch.hidden)})
