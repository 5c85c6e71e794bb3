"""config.json -> Architecture: a per-layer table the rest of the estimator can trust.

Never guess from the parameter total. Every family-specific rule in the readers names the config field it reads;
the quirks are those of ``shared/research/anchors-mission.md`` §5: explicit ``head_dim``, GQA/MQA, tied
embeddings, sliding windows (``use_sliding_window``, ``layer_types``, Gemma patterns), gpt-oss alternation,
Llama 4 chunked attention and NoPE layers, MLA (``kv_lora_rank`` + ``qk_rope_head_dim``), Gated DeltaNet
hybrids (``layer_types`` / ``full_attention_interval``, ``linear_*``), MoE fields under their several
names, MTP layers, vision towers, nested ``text_config`` and renamed keys (``dtype``/``torch_dtype``,
``rope_parameters``).

Which reader reads a config is data: the ``model_types`` of the family records in :mod:`vramdesk.core.families`;
each record's ``reader`` is a key of ``_READERS``. ``fields`` holds the typed reader and the bounds, ``decoders``
and ``legacy`` the per-family readers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..architecture import Architecture, ConfigError
from ..families import LLAMA, Family, family_for_model_type
from ..header_inventory import HeaderInventory
from ..messages import Message, error_text
from .classic import _gpt2, _gptj, _opt
from .clipvlm import _clip_vlm
from .decoders import _deepseek, _gemma, _gpt_oss, _llama4, _llama_like, _qwen_hybrid
from .dense2 import (
    _apertus,
    _biogpt,
    _gpt_neo,
    _gpt_neox_japanese,
    _jais2,
    _llama_config,
    _modernbert_decoder,
    _mpt,
    _openai_gpt,
    _stablelm,
    _xglm,
)
from .dense3 import _apertus1p5, _doge, _nanochat
from .fields import _Cfg, _finite, _inherited, _model_type, _nested_defaults, _text_and_outer
from .frontier import _minimax_m2, _nemotron_nas, _olmo3, _phimoe
from .gemma4 import _gemma4
from .hybrid import _nemotron_h
from .legacy import _bloom, _falcon, _gpt_bigcode, _gpt_neox, _phi, _qwen_v1
from .llamalike import (
    _beam,
    _cohere2_moe,
    _cwm,
    _ernie4_5,
    _flex_olmo,
    _flint,
    _granite,
    _head128,
    _helium,
    _hyperclovax,
    _internlm3,
    _kolibri1,
    _lara_mini,
    _mellum,
    _mimo_v2_flash,
    _sarvam_moe,
    _seed_oss,
    _vaultgemma,
)
from .mla2 import _deepseek_v4
from .mlamoe import _mla_moe
from .modern import _cohere, _exaone4, _glm4, _glm4_moe, _olmoe, _starcoder2
from .moe2 import _afmoe, _ernie4_5_moe, _exaone_moe, _hy_v3, _jetmoe, _laguna, _minimax, _solar_open
from .moe3 import _ernie4_5_vl_moe
from .multimodal import _qwen2_5_vl, _qwen3_vl
from .ownvlm import (
    _exaone4_5,
    _glm4v,
    _glm4v_moe,
    _kimi_k25,
    _minimax_m3,
    _persimmon,
    _qwen2_5_omni,
    _qwen2_vl,
    _qwen3_omni_moe,
)
from .recurrent import _kimi_linear, _lfm2
from .ssm import _bamba, _falcon_h1, _granitemoehybrid, _jamba, _mamba, _mamba2
from .ssm2 import _zamba, _zamba2
from .unknown import from_headers, generic_config
from .vlm2 import _cohere2_vision, _idefics2, _lfm2_vl, _shieldgemma2
from .vlm3 import _deepseek_vl, _deepseek_vl_hybrid, _janus

UNSUPPORTED_MODEL_TYPE = Message(
    "config.unsupported_model_type",
    "unsupported model_type '{model_type}': not a known architecture, and the generic decoder path needs "
    "hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and vocab_size ({error})",
)
UNSUPPORTED_WITH_HEADERS = Message(
    "config.unsupported_model_type.headers",
    "unsupported model_type '{model_type}': not a known architecture; its tensor names do not describe it "
    "({headers}), and the generic decoder path needs hidden_size, num_hidden_layers, num_attention_heads, "
    "intermediate_size and vocab_size ({error})",
)
HEADERS_UNUSED = Message("config.headers_unused", "the checkpoint's tensor names were not used: {reason}")
GENERIC_DECODER = Message(
    "config.generic_decoder",
    "model_type '{model_type}' is not one vramdesk knows: estimated as a generic Llama-style decoder (RMSNorm, "
    "gated MLP, rotary); check the parameter total against the checkpoint",
)

#: a family's reader: (config, outer config, model_type lower-cased without "_text", the family record)
Reader = Callable[[_Cfg, Mapping[str, Any], str, Family], Architecture]

#: family record's ``reader`` -> the function that reads its configs
_READERS: dict[str, Reader] = {
    "llama": _llama_like,
    "gemma": _gemma,
    "gpt_oss": _gpt_oss,
    "llama4": _llama4,
    "deepseek_v3": _deepseek,
    "qwen_hybrid": _qwen_hybrid,
    "qwen": _qwen_v1,
    "gpt_bigcode": _gpt_bigcode,
    "gpt_neox": _gpt_neox,
    "falcon": _falcon,
    "bloom": _bloom,
    "phi": _phi,
    # GPT-2-era families (classic.py); CodeGen's layout is GPT-J's
    "gpt2": _gpt2,
    "gptj": _gptj,
    "codegen": _gptj,
    "opt": _opt,
    # current decoders with layouts of their own (modern.py)
    "glm4": _glm4,
    "glm4_moe": _glm4_moe,
    "olmoe": _olmoe,
    "exaone4": _exaone4,
    "cohere": _cohere,
    "starcoder2": _starcoder2,
    # vision-language models whose text model is a known decoder (multimodal.py)
    "qwen3_vl": _qwen3_vl,
    "qwen2_5_vl": _qwen2_5_vl,
    # Mamba-2 hybrids (hybrid.py)
    "nemotron_h": _nemotron_h,
    # DeepSeek's MLA reader with DeepSeek Sparse Attention indexers (mla.py)
    "deepseek_dsa": _deepseek,
    # recent decoders with layouts of their own (frontier.py)
    "olmo3": _olmo3,
    "phimoe": _phimoe,
    "minimax_m2": _minimax_m2,
    "nemotron_nas": _nemotron_nas,
    # LLaVA-style vision-language models (clipvlm.py)
    "llava": _clip_vlm,
    "idefics3": _clip_vlm,
    # --- dense2: dense decoders outside the Llama mould (dense2.py)
    "gpt_sw3": _gpt2,
    "gpt_neo": _gpt_neo,
    "mpt": _mpt,
    "stablelm": _stablelm,
    "bitnet": _llama_config,
    "arcee": _llama_config,
    "apertus": _apertus,
    "xglm": _xglm,
    "biogpt": _biogpt,
    "modernbert_decoder": _modernbert_decoder,
    "mistral4": _deepseek,
    "openai_gpt": _openai_gpt,
    "gpt_neox_japanese": _gpt_neox_japanese,
    "jais2": _jais2,
    # DeepSeek-style MLA decoders (mlamoe.py)
    "deepseek_v2": _mla_moe,
    "glm4_moe_lite": _mla_moe,
    "minicpm3": _mla_moe,
    "axk1": _mla_moe,
    # --- moe2: MoE decoders with GQA attention and DeepSeek-style experts; MiniMax-Text-01 (moe2.py)
    "ernie4_5_moe": _ernie4_5_moe,
    "exaone_moe": _exaone_moe,
    "hy_v3": _hy_v3,
    "solar_open": _solar_open,
    "laguna": _laguna,
    "afmoe": _afmoe,
    "minimax": _minimax,
    "jetmoe": _jetmoe,
    # recurrent hybrids: short convolutions, Kimi Delta Attention (recurrent.py)
    "lfm2": _lfm2,
    "kimi_linear": _kimi_linear,
    # state-space models and their hybrids (ssm.py)
    "mamba": _mamba,
    "mamba2": _mamba2,
    "jamba": _jamba,
    "bamba": _bamba,
    "falcon_h1": _falcon_h1,
    "granitemoehybrid": _granitemoehybrid,
    # Gemma 4, Gemma 4 Unified and Gemma 3n (gemma4.py); text-only checkpoints are named as gemma4_text
    "gemma4": _gemma4,
    "gemma4_text": _gemma4,
    # vision-language models with towers of their own (ownvlm.py)
    "qwen2_vl": _qwen2_vl,
    "glm4v": _glm4v,
    "glm4v_moe": _glm4v_moe,
    "kimi_k25": _kimi_k25,
    "minimax_m3": _minimax_m3,
    "qwen2_5_omni": _qwen2_5_omni,
    "qwen3_omni_moe": _qwen3_omni_moe,
    "persimmon": _persimmon,
    "exaone4_5": _exaone4_5,
    "youtu": _deepseek,
    # --- vlm3: DeepSeek-VL, DeepSeek-VL hybrid, Janus (vlm3.py)
    "deepseek_vl": _deepseek_vl,
    "deepseek_vl_hybrid": _deepseek_vl_hybrid,
    "janus": _janus,
    # --- vlm2: SigLIP / SigLIP 2 / Idefics-style vision-language models (vlm2.py)
    "shieldgemma2": _shieldgemma2,
    "idefics2": _idefics2,
    "lfm2_vl": _lfm2_vl,
    "cohere2_vision": _cohere2_vision,
    # recurrent hybrids of the second round (ssm2.py)
    "zamba": _zamba,
    "zamba2": _zamba2,
    # --- dense3: Doge, NanoChat, Apertus 1.5 (dense3.py)
    "doge": _doge,
    "nanochat": _nanochat,
    "apertus1p5": _apertus1p5,
    # MoE and multimodal families of the third round (moe3.py)
    "ernie4_5_vl_moe": _ernie4_5_vl_moe,
    # DeepSeek-V4 (mla2.py)
    "deepseek_v4": _deepseek_v4,
    # --- llamalike: decoders with Llama's names and a twist of their own (llamalike.py)
    "internlm3": _internlm3,
    "iquestcoder": _head128,
    "ministral3": _head128,
    "cwm": _cwm,
    "helium": _helium,
    "ernie4_5": _ernie4_5,
    "seed_oss": _seed_oss,
    "hyperclovax": _hyperclovax,
    # OLMo 1 and DiffLlama: Llama's fields; their records name the parameter-free norms and the lambdas
    "olmo": _llama_config,
    "diffllama": _llama_config,
    "vaultgemma": _vaultgemma,
    "granite_swa": _granite,
    "granitemoe_swa": _granite,
    "granitemoeshared": _granite,
    "flex_olmo": _flex_olmo,
    "mellum": _mellum,
    "flint": _flint,
    "kolibri1": _kolibri1,
    "cohere2_moe": _cohere2_moe,
    "sarvam_moe": _sarvam_moe,
    "mimo_v2_flash": _mimo_v2_flash,
    "beam": _beam,
    "lara_mini": _lara_mini,
}


def normalize(config: Mapping[str, Any], headers: HeaderInventory | None = None) -> Architecture:
    """Read a Hugging Face ``config.json`` dict into an :class:`Architecture`.

    Raises :class:`ConfigError` naming the model type and the field when something needed is missing or
    impossible. An unknown model type is read from its checkpoint's tensor names when ``headers`` is given (the
    inventory :func:`~vramdesk.core.header_inventory.read_inventory` made of its header entries; :mod:`.unknown`),
    else, or when its names say too little, through the generic path if the config has the standard decoder
    fields; both carry a warning.
    """
    text, outer = _text_and_outer(config)
    _finite(outer, "")
    model_type = _model_type(text, outer)
    mt = model_type.lower()
    base = mt.removesuffix("_text")
    c = _Cfg(text, model_type)
    fam = family_for_model_type(base)
    arch = _READERS[fam.reader](c, outer, base, fam) if fam is not None else _unknown(c, outer, base, headers)
    if text is not outer:
        filled = _nested_defaults(outer, {**_inherited(outer), **outer["text_config"]})
        if filled:
            sources = {**arch.sources, "text_config defaults": f"{model_type}'s text sub-config: {', '.join(filled)}"}
            arch = arch.model_copy(update={"sources": sources})
    return arch


def _unknown(c: _Cfg, outer: Mapping[str, Any], base: str, headers: HeaderInventory | None) -> Architecture:
    """A model type no family record names: from its tensor names when the headers are known, else (or when the
    names say too little) as a generic Llama-style decoder; refused, with both reasons, when neither reads it."""
    unused = None
    if headers is not None:
        try:
            return from_headers(c, outer, headers)
        except ConfigError as err:
            unused = error_text(err)
    generic = generic_config(c)
    try:
        arch = _llama_like(generic, outer, base, LLAMA)
    except ConfigError as err:
        if unused is not None:
            problem = UNSUPPORTED_WITH_HEADERS(model_type=c.model_type, headers=unused, error=error_text(err))
            raise ConfigError(problem) from err
        raise ConfigError(UNSUPPORTED_MODEL_TYPE(model_type=c.model_type, error=error_text(err))) from err
    notes = (GENERIC_DECODER(model_type=c.model_type),) + ((HEADERS_UNUSED(reason=unused),) if unused else ())
    return arch.model_copy(update={"warnings": (*arch.warnings, *notes)})
