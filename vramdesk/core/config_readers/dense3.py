"""Readers of the third round's dense decoders: Doge, NanoChat, Apertus 1.5.

Each reads the fields its ``modeling_<family>.py`` / ``configuration_<family>.py`` in transformers 5.24 reads; the
tensor names are in the family records of :mod:`vramdesk.core.families_dense3`, the tensors no record field
describes in :mod:`vramdesk.core.inventory_dense3`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, ConfigError, VisionSpec
from ..families import Family
from ..messages import Message
from .decoders import TOP_K_ABOVE_EXPERTS, _llama_like
from .dense2 import _apertus
from .fields import NOT_LIST, _Cfg
from .ownvlm import NOT_OBJECT_FIELD
from .unknown import _EXPERT_COUNTS

APERTUS1P5_HEAD_ROWS = Message(
    "config.apertus1p5.output_vocab_size",
    "{model_type}: output_vocab_size ({rows}) exceeds vocab_size ({vocab})",
)


def _doge(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Doge (DogeConfig): Llama's fields (attention_bias on q / k / v / o and dt_proj, mlp_bias, sliding_window as
    Mistral's) with per-head q/k RMSNorms. ``is_moe`` (default false) makes each MLP a CDMoE: the dense MLP stays
    as the shared expert, ``num_experts`` (16384) single-neuron experts of which ``num_experts_per_tok`` (64) serve
    a token are the extras; without it the config's num_experts means nothing (DogeMLP reads none of it).
    keep_window_size is a dynamic mask over cached keys: every engine keeps them all. vLLM and llama.cpp do not run
    Doge."""
    is_moe = c.bool("is_moe", default=False)
    details: dict[str, int | float | str] = {}
    if is_moe:
        experts = c.int("num_experts", default=16384)
        top_k = c.int("num_experts_per_tok", default=64)
        if top_k > experts:
            raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=experts))
        details = {"experts": experts, "top_k": top_k}
    # the experts are not Mixtral's: the Llama-like reader must not see their count
    dense = _Cfg({k: v for k, v in c.d.items() if k not in _EXPERT_COUNTS}, c.model_type)
    arch = _llama_like(dense, outer, base, fam)
    note = f"CDMoE: {details['experts']} single-neuron experts, {details['top_k']} a token" if is_moe else "dense MLP"
    return arch.model_copy(update={"qk_norm": "head", "details": details, "sources": {**arch.sources, "is_moe": note}})


def _nanochat(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """NanoChat (NanoChatConfig): Llama's fields, an fc1 -> ReLU^2 -> fc2 MLP, weightless RMSNorms (the record's
    ``weightless_norms``; its per-head q/k norms store nothing either), the logits soft-capped by
    ``final_logit_softcapping`` (default 15)."""
    arch = _llama_like(c, outer, base, fam)
    cap = c.get("final_logit_softcapping", 15.0)
    return arch.model_copy(update={"qk_norm": "none", "logit_softcap": bool(cap)})


def _apertus1p5(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Apertus 1.5 (Apertus1p5TextConfig): Apertus's text model with its head pruned to ``output_vocab_size`` rows
    (the released checkpoints keep only the text tokens' rows; None: the whole vocabulary). A text-only config
    (apertus1p5_text, no ``text_config``) is laid out as Apertus (``Architecture.family`` "apertus"); the multimodal
    one keeps it under model.language_model beside its image (VQ) and audio (WavTokenizer) encoders."""
    arch = _apertus(c, outer, base, fam)
    head = c.get("output_vocab_size")
    if head is not None:
        head = c.int("output_vocab_size")
        if head > arch.vocab:
            raise ConfigError(APERTUS1P5_HEAD_ROWS(model_type=c.model_type, rows=head, vocab=arch.vocab))
        # the config's own __post_init__: a head as wide as the vocabulary is not pruned
        arch = arch.model_copy(update={"head_vocab": 0 if head == arch.vocab else head})
    if "text_config" not in outer:
        return arch.model_copy(update={"family": "apertus"})
    return arch.model_copy(update={"vision": _apertus1p5_tokenizers(c.model_type, outer)})


def _sub(model_type: str, outer: Mapping[str, Any], key: str) -> _Cfg:
    sub = outer.get(key) or {}
    if not isinstance(sub, Mapping):
        raise ConfigError(NOT_OBJECT_FIELD(model_type=model_type, key=key))
    return _Cfg(sub, model_type)


def _int_list(c: _Cfg, key: str, default: tuple[int, ...]) -> str:
    """A list of positive integers as ``VisionSpec.details`` carries it (comma-separated)."""
    value = c.get(key, list(default))
    if not isinstance(value, list | tuple) or not value or not all(isinstance(x, int) and x > 0 for x in value):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key=key))
    return ",".join(str(x) for x in value)


def _apertus1p5_tokenizers(model_type: str, outer: Mapping[str, Any]) -> VisionSpec:
    """The image tokenizer (vision_config: Apertus1p5VisionTokenizerConfig's fields and defaults) and the audio
    tokenizer (audio_config: WavTokenizerConfig's), which the model keeps in fp32 (``.to(dtype=torch.float32)``);
    the tower builder is :func:`vramdesk.core.vision_towers_dense3.apertus1p5_tokenizers`."""
    v = _sub(model_type, outer, "vision_config")
    details: dict[str, int | float | str] = {
        "base_channels": v.int("base_channels", default=256),
        "in_channels": v.int("in_channels", default=3),
        "latent_channels": v.int("latent_channels", default=256),
        "embed_dim": v.int("embed_dim", default=256),
        "codebook_size": v.int("codebook_size", default=131072),
        "num_res_blocks": v.int("num_res_blocks", default=4),
        "resolution": v.int("resolution", default=256),
        "channel_multiplier": _int_list(v, "channel_multiplier", (1, 1, 2, 2, 4)),
        "attn_resolutions": _int_list(v, "attn_resolutions", (16,)),
        "audio": int("audio_config" in outer),
    }
    if "audio_config" in outer:
        a = _sub(model_type, outer, "audio_config")
        details |= {
            "audio_audio_channels": a.int("audio_channels", default=1),
            "audio_num_filters": a.int("num_filters", default=32),
            "audio_kernel_size": a.int("kernel_size", default=7),
            "audio_last_kernel_size": a.int("last_kernel_size", default=7),
            "audio_residual_kernel_size": a.int("residual_kernel_size", default=3),
            "audio_compress": a.int("compress", default=2),
            "audio_num_residual_layers": a.int("num_residual_layers", default=1),
            "audio_num_lstm_layers": a.int("num_lstm_layers", default=2),
            "audio_hidden_size": a.int("hidden_size", default=512),
            "audio_use_conv_shortcut": int(a.bool("use_conv_shortcut", default=True)),
            "audio_norm_type": str(a.get("norm_type", "weight_norm")),
            "audio_upsampling_ratios": _int_list(a, "upsampling_ratios", (6, 5, 5, 4)),
        }
    mults = details["channel_multiplier"]
    return VisionSpec(
        kind="apertus1p5",
        depth=len(str(mults).split(",")),
        hidden=int(details["base_channels"]),
        intermediate=0,
        num_heads=0,
        patch_size=v.int("spatial_scale_factor", default=16),
        details=details,
    )
