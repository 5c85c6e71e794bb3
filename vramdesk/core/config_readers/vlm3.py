"""Readers of DeepSeek-VL (``deepseek_vl``), DeepSeek-VL hybrid (``deepseek_vl_hybrid``) and Janus / Janus-Pro
(``janus``): a Llama text model (``text_config``, read by :func:`.clipvlm._text` with LlamaConfig's defaults) and
towers of their own (:mod:`vramdesk.core.vision_towers_vlm3`). The sub-configs a saved config leaves out are built
from their classes' defaults (configuration_siglip.py, configuration_sam.py SamVisionConfig, configuration_janus.py
JanusVisionConfig / JanusVQVAEConfig), as transformers builds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, ConfigError, VisionSpec
from ..families import Family
from ..messages import Message
from .clipvlm import _spec, _text, _vision_cfg
from .fields import _Cfg
from .ownvlm import NOT_OBJECT_FIELD, _ratio

NOT_INT_LIST = Message("config.not_int_list", "{model_type}: field '{key}' must be a list of integers, got {value!r}")


def _sub(c: _Cfg, outer: Mapping[str, Any], key: str) -> dict[str, Any]:
    """A sub-config (``vision_config`` ...), empty when absent: its class's defaults then stand."""
    sub = outer.get(key)
    if sub is None:
        return {}
    if not isinstance(sub, Mapping):
        raise ConfigError(NOT_OBJECT_FIELD(model_type=c.model_type, key=key))
    return dict(sub)


def _int_list(v: _Cfg, key: str, default: tuple[int, ...], min_value: int = 1) -> str:
    """A list of integers (``channel_multiplier``, ``global_attn_indexes``) as the tower details hold it
    (``"1,1,2,2,4"``); errors name ``key[i]``."""
    value = v.get(key, list(default))
    if not isinstance(value, list | tuple) or not value:
        raise ConfigError(NOT_INT_LIST(model_type=v.model_type, key=key, value=value))
    each = _Cfg({f"{key}[{i}]": x for i, x in enumerate(value)}, v.model_type)
    return ",".join(str(each.int(f"{key}[{i}]", min_value=min_value)) for i in range(len(value)))


def _llama_text(c: _Cfg, outer: Mapping[str, Any], fam: Family) -> Architecture:
    """The Llama text model. The head is tied by the outer config's ``tie_word_embeddings`` (default true in
    DeepseekVLConfig, DeepseekVLHybridConfig and JanusConfig): transformers 5 reads the model's own config
    (``PreTrainedModel.get_expanded_tied_weights_keys``), not the text sub-config's."""
    arch = _text(c, outer, fam, "llama")
    tie = _Cfg(outer, c.model_type).bool("tie_word_embeddings", default=True)
    return arch.model_copy(update={"tie_embeddings": tie})


def _siglip(c: _Cfg, outer: Mapping[str, Any], kind: str, details: dict[str, int | float | str]) -> VisionSpec:
    """The SigLIP tower of ``vision_config`` (SiglipVisionConfig's defaults) under the checkpoints'
    ``model.vision_model.vision_model``."""
    v = _vision_cfg(c, {"vision_config": _sub(c, outer, "vision_config")}, "siglip_vision_model")
    head = int(v.bool("vision_use_head", True))
    return _spec(kind, v, {"prefix": "model.vision_model.vision_model", "head": head, **details})


def _deepseek_vl(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """DeepSeek-VL (``deepseek_vl``, deepseek-community/deepseek-vl-1.3b-*): SigLIP, the two-linear aligner and
    Llama."""
    arch = _llama_text(c, outer, fam)
    return arch.model_copy(update={"vision": _siglip(c, outer, "deepseek_vl", {"text_hidden": arch.hidden})})


def _sam_details(c: _Cfg, outer: Mapping[str, Any]) -> dict[str, int | float | str]:
    """``high_res_vision_config`` with SamVisionConfig's defaults (ViT-B: 12 layers of 768, 12 heads, 1024-pixel
    images in 16-pixel patches, windows of 14 but on layers 2, 5, 8 and 11, a 256-channel neck; ``mlp_dim``
    defaults to ``hidden_size x mlp_ratio``)."""
    s = _Cfg(_sub(c, outer, "high_res_vision_config"), f"{c.model_type} high_res_vision_config")
    hidden = s.int("hidden_size", default=768)
    return {
        "sam_hidden": hidden,
        "sam_depth": s.int("num_hidden_layers", default=12),
        "sam_heads": s.int("num_attention_heads", default=12),
        "sam_image": s.int("image_size", default=1024),
        "sam_patch": s.int("patch_size", default=16),
        "sam_window": s.int("window_size", default=14),
        "sam_global": _int_list(s, "global_attn_indexes", (2, 5, 8, 11), min_value=0),
        "sam_out": s.int("output_channels", default=256),
        "sam_mlp": s.int("mlp_dim", default=int(hidden * _ratio(s, "mlp_ratio", 4.0))),
        "sam_qkv_bias": int(s.bool("qkv_bias", True)),
        "sam_abs_pos": int(s.bool("use_abs_pos", True)),
        "sam_rel_pos": int(s.bool("use_rel_pos", True)),
    }


def _deepseek_vl_hybrid(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """DeepSeek-VL hybrid (``deepseek_vl_hybrid``, deepseek-community/deepseek-vl-7b-*): SigLIP at low resolution,
    SAM ViT-B at high resolution with its necks, the aligner that joins them, and Llama."""
    arch = _llama_text(c, outer, fam)
    details = {"text_hidden": arch.hidden, **_sam_details(c, outer)}
    return arch.model_copy(update={"vision": _siglip(c, outer, "deepseek_vl_hybrid", details)})


def _janus_vq(c: _Cfg, outer: Mapping[str, Any]) -> dict[str, int | float | str]:
    """``vq_config`` with JanusVQVAEConfig's defaults (a 16,384 x 8 codebook, 128 base channels multiplied by
    1, 1, 2, 2, 4, two resnet blocks per level, a 256-channel latent, 2048-wide generation aligner and head)."""
    q = _Cfg(_sub(c, outer, "vq_config"), f"{c.model_type} vq_config")
    return {
        "vq_embed_dim": q.int("embed_dim", default=8),
        "vq_num_embeddings": q.int("num_embeddings", default=16384),
        "vq_double_latent": int(q.bool("double_latent", False)),
        "vq_latent_channels": q.int("latent_channels", default=256),
        "vq_in_channels": q.int("in_channels", default=3),
        "vq_out_channels": q.int("out_channels", default=3),
        "vq_base_channels": q.int("base_channels", default=128),
        "vq_channel_multiplier": _int_list(q, "channel_multiplier", (1, 1, 2, 2, 4)),
        "vq_res_blocks": q.int("num_res_blocks", default=2),
        "vq_projection_dim": q.int("projection_dim", default=2048),
        "vq_hidden_layers": q.int("num_hidden_layers", default=2),
        "vq_image_token_embed_dim": q.int("image_token_embed_dim", default=2048),
    }


def _janus(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Janus / Janus-Pro (``janus``): Llama, the understanding tower (``vision_config``, JanusVisionConfig's
    defaults: 24 layers of 1024, 16 heads, 384-pixel images in 16-pixel patches, MLP ``hidden x mlp_ratio``, an
    aligner of ``depth`` linears to ``projection_dim``) and the generation VQ-GAN (:func:`_janus_vq`)."""
    arch = _llama_text(c, outer, fam)
    v = _Cfg(_sub(c, outer, "vision_config"), f"{c.model_type} vision_config")
    hidden = v.int("hidden_size", default=1024)
    vision = VisionSpec(
        kind="janus",
        depth=v.int("num_hidden_layers", default=24),
        hidden=hidden,
        intermediate=int(hidden * _ratio(v, "mlp_ratio", 4.0)),
        num_heads=v.int("num_attention_heads", default=16),
        patch_size=v.int("patch_size", default=16),
        details={
            "image_size": v.int("image_size", default=384),
            "num_channels": v.int("num_channels", default=3),
            "attention_bias": int(v.bool("attention_bias", True)),
            "qk_norm": int(v.bool("use_qk_norm", False)),
            "projection_dim": v.int("projection_dim", default=2048),
            "aligner_depth": v.int("depth", default=2),
            **_janus_vq(c, outer),
        },
    )
    return arch.model_copy(update={"vision": vision})
