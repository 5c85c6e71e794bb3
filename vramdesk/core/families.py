"""Model families as data: what each family's configs are called and how its checkpoints are laid out.

One frozen :class:`Family` per family the normaliser knows. It holds what used to be spelled as comparisons of
family names: the config ``model_type`` values its reader reads, the constants that reader applies (norm kind,
MLP kind, the tied-embedding default), the tensor names of its checkpoints (Hugging Face module paths, matched
against ``modules_to_not_convert``-style skip lists and LoRA targets) and the facts llama-quantize keys on.

* :mod:`.config_readers` picks a config's reader with :func:`family_for_model_type`;
* :mod:`.inventory` names and shapes the tensors of an :class:`~.architecture.Architecture` from
  :func:`family_of`;
* :func:`.facts.gguf_model_info` takes llama.cpp's view of the model from the same record.

A *variant* is a record read by another family's reader (``reader`` differs from ``name``): Phi-3, Mixtral and
OLMo 2 are read as Llama (``Architecture.family`` says "llama", which the model browser shows) but store some
tensors under their own names.
"""

from __future__ import annotations

from collections.abc import Mapping

from .architecture import Architecture
from .families_base import (
    BLOOM,
    CODEGEN,
    COHERE,
    DEEPSEEK_DSA,
    DEEPSEEK_V3,
    EXAONE4,
    FALCON,
    GEMMA,
    GLM4,
    GLM4_MOE,
    GPT2,
    GPT_BIGCODE,
    GPT_NEOX,
    GPT_OSS,
    GPTJ,
    GRANITEMOE,
    LLAMA,
    LLAMA4,
    MINIMAX_M2,
    MIXTRAL,
    NEMOTRON_H,
    NEMOTRON_NAS,
    OLMO2,
    OLMO3,
    OLMOE,
    OPT,
    PHI,
    PHI3,
    PHIMOE,
    QWEN,
    QWEN2_5_VL,
    QWEN3_VL,
    QWEN_HYBRID,
    STARCODER2,
)
from .families_dense import (
    APERTUS,
    ARCEE,
    BIOGPT,
    BITNET,
    GPT_NEO,
    GPT_NEOX_JAPANESE,
    GPT_SW3,
    JAIS2,
    MISTRAL4,
    MODERNBERT_DECODER,
    MPT,
    OPENAI_GPT,
    STABLELM,
    XGLM,
)
from .families_dense3 import APERTUS1P5, DOGE, NANOCHAT
from .families_gemma import GEMMA4, GEMMA4_TEXT
from .families_hybrid import BAMBA, FALCON_H1, GRANITEMOEHYBRID, JAMBA, KIMI_LINEAR, LFM2, MAMBA, MAMBA2
from .families_mla2 import DEEPSEEK_V4
from .families_moe import (
    AFMOE,
    AXK1,
    DEEPSEEK_V2,
    ERNIE4_5_MOE,
    EXAONE_MOE,
    GLM4_MOE_LITE,
    HY_V3,
    JETMOE,
    LAGUNA,
    MINICPM3,
    MINIMAX,
    SARVAM_MLA,
    SOLAR_OPEN,
)
from .families_moe3 import ERNIE4_5_VL_MOE
from .families_ssm2 import ZAMBA, ZAMBA2
from .families_vlm import IDEFICS3_VLM, LLAVA_VLM
from .families_vlm2 import COHERE2_VISION, IDEFICS2_VLM, LFM2_VL, SHIELDGEMMA2
from .families_vlm3 import DEEPSEEK_VL, DEEPSEEK_VL_HYBRID, JANUS
from .families_vlm_own import (
    EXAONE4_5,
    FUYU,
    GLM4V,
    GLM4V_MOE,
    KIMI_K25,
    MINIMAX_M3,
    MINIMAX_M3_VL,
    PERSIMMON,
    QWEN2_5_OMNI,
    QWEN2_VL,
    QWEN3_OMNI_MOE,
    YOUTU,
)
from .family_record import GEMMA_SANDWICH_NORMS, Family, MlpKind, MtpNames

#: every family, by name
FAMILIES: Mapping[str, Family] = {
    fam.name: fam
    for fam in (
        LLAMA,
        PHI3,
        MIXTRAL,
        OLMO2,
        GEMMA,
        GPT_OSS,
        LLAMA4,
        DEEPSEEK_V3,
        QWEN_HYBRID,
        QWEN,
        GPT_BIGCODE,
        GPT_NEOX,
        FALCON,
        BLOOM,
        PHI,
        GPT2,
        GPTJ,
        CODEGEN,
        OPT,
        GLM4,
        GLM4_MOE,
        OLMOE,
        GRANITEMOE,
        EXAONE4,
        COHERE,
        STARCODER2,
        QWEN3_VL,
        QWEN2_5_VL,
        NEMOTRON_H,
        DEEPSEEK_DSA,
        OLMO3,
        PHIMOE,
        MINIMAX_M2,
        NEMOTRON_NAS,
        MAMBA,
        MAMBA2,
        JAMBA,
        BAMBA,
        FALCON_H1,
        GRANITEMOEHYBRID,
        LFM2,
        KIMI_LINEAR,
        GPT_SW3,
        GPT_NEO,
        MPT,
        STABLELM,
        BITNET,
        ARCEE,
        APERTUS,
        XGLM,
        BIOGPT,
        MODERNBERT_DECODER,
        MISTRAL4,
        OPENAI_GPT,
        GPT_NEOX_JAPANESE,
        JAIS2,
        LLAVA_VLM,
        IDEFICS3_VLM,
        ERNIE4_5_MOE,
        EXAONE_MOE,
        HY_V3,
        SOLAR_OPEN,
        LAGUNA,
        AFMOE,
        MINIMAX,
        JETMOE,
        DEEPSEEK_V2,
        GLM4_MOE_LITE,
        MINICPM3,
        SARVAM_MLA,
        AXK1,
        GEMMA4,
        GEMMA4_TEXT,
        QWEN2_VL,
        GLM4V,
        GLM4V_MOE,
        KIMI_K25,
        MINIMAX_M3,
        MINIMAX_M3_VL,
        QWEN2_5_OMNI,
        QWEN3_OMNI_MOE,
        PERSIMMON,
        FUYU,
        EXAONE4_5,
        YOUTU,
        DEEPSEEK_VL,
        DEEPSEEK_VL_HYBRID,
        JANUS,
        SHIELDGEMMA2,
        IDEFICS2_VLM,
        LFM2_VL,
        COHERE2_VISION,
        ZAMBA,
        ZAMBA2,
        DOGE,
        NANOCHAT,
        APERTUS1P5,
        ERNIE4_5_VL_MOE,
        DEEPSEEK_V4,
    )
}


def _by_model_type() -> dict[str, Family]:
    out: dict[str, Family] = {}
    for fam in FAMILIES.values():
        for mt in fam.model_types:
            if mt in out:
                raise ValueError(f"model_type '{mt}' is claimed by the families {out[mt].name} and {fam.name}")
            out[mt] = fam
    return out


_BY_MODEL_TYPE = _by_model_type()
#: variants by model type as the config spells it
_VARIANTS = {mt: fam for fam in FAMILIES.values() if fam.reader != fam.name for mt in fam.model_types}


def family_for_model_type(base: str) -> Family | None:
    """The record whose reader reads configs of this ``model_type`` (lower case, ``_text`` removed); None for
    a model type no family claims (the normaliser then tries the generic Llama path)."""
    return _BY_MODEL_TYPE.get(base)


def family_of(arch: Architecture) -> Family:
    """The record whose tensor names and quirks ``arch`` has: a variant when the config's ``model_type``, as the
    config spells it, is the variant's (the inventory has always matched it so: ``PHI3`` gets Llama's names),
    else the family its reader named in ``Architecture.family``."""
    variant = _VARIANTS.get(arch.model_type)
    if variant is not None and variant.reader == arch.family:
        return variant
    fam = FAMILIES.get(arch.family)
    if fam is None:
        raise ValueError(f"{arch.model_type}: no family record for '{arch.family}' (known: {', '.join(FAMILIES)})")
    return fam


__all__ = [
    "AFMOE",
    "APERTUS",
    "APERTUS1P5",
    "ARCEE",
    "AXK1",
    "BAMBA",
    "BIOGPT",
    "BITNET",
    "BLOOM",
    "CODEGEN",
    "COHERE",
    "COHERE2_VISION",
    "DEEPSEEK_DSA",
    "DEEPSEEK_V2",
    "DEEPSEEK_V3",
    "DEEPSEEK_V4",
    "DEEPSEEK_VL",
    "DEEPSEEK_VL_HYBRID",
    "DOGE",
    "ERNIE4_5_MOE",
    "ERNIE4_5_VL_MOE",
    "EXAONE4",
    "EXAONE4_5",
    "EXAONE_MOE",
    "FALCON",
    "FALCON_H1",
    "FAMILIES",
    "FUYU",
    "GEMMA",
    "GEMMA4",
    "GEMMA4_TEXT",
    "GEMMA_SANDWICH_NORMS",
    "GLM4",
    "GLM4V",
    "GLM4V_MOE",
    "GLM4_MOE",
    "GLM4_MOE_LITE",
    "GPT2",
    "GPTJ",
    "GPT_BIGCODE",
    "GPT_NEO",
    "GPT_NEOX",
    "GPT_NEOX_JAPANESE",
    "GPT_OSS",
    "GPT_SW3",
    "GRANITEMOE",
    "GRANITEMOEHYBRID",
    "HY_V3",
    "IDEFICS2_VLM",
    "IDEFICS3_VLM",
    "JAIS2",
    "JAMBA",
    "JANUS",
    "JETMOE",
    "KIMI_K25",
    "KIMI_LINEAR",
    "LAGUNA",
    "LFM2",
    "LFM2_VL",
    "LLAMA",
    "LLAMA4",
    "LLAVA_VLM",
    "MAMBA",
    "MAMBA2",
    "MINICPM3",
    "MINIMAX",
    "MINIMAX_M2",
    "MINIMAX_M3",
    "MINIMAX_M3_VL",
    "MISTRAL4",
    "MIXTRAL",
    "MODERNBERT_DECODER",
    "MPT",
    "NANOCHAT",
    "NEMOTRON_H",
    "NEMOTRON_NAS",
    "OLMO2",
    "OLMO3",
    "OLMOE",
    "OPENAI_GPT",
    "OPT",
    "PERSIMMON",
    "PHI",
    "PHI3",
    "PHIMOE",
    "QWEN",
    "QWEN2_5_OMNI",
    "QWEN2_5_VL",
    "QWEN2_VL",
    "QWEN3_OMNI_MOE",
    "QWEN3_VL",
    "QWEN_HYBRID",
    "SARVAM_MLA",
    "SHIELDGEMMA2",
    "SOLAR_OPEN",
    "STABLELM",
    "STARCODER2",
    "XGLM",
    "YOUTU",
    "ZAMBA",
    "ZAMBA2",
    "Family",
    "MlpKind",
    "MtpNames",
    "family_for_model_type",
    "family_of",
]
