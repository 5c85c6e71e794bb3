"""Vision-language models with towers vramdesk names in :mod:`.vision_towers_vlm3` (DeepSeek-VL, DeepSeek-VL
hybrid, Janus / Janus-Pro): their family records, gathered by :mod:`.families`."""

from __future__ import annotations

from dataclasses import replace

from .families_base import LLAMA

#: DeepSeek-VL (modeling_deepseek_vl.py; config_readers/vlm3.py): LlamaModel under model.language_model and lm_head
#: beside model, as deepseek-community/deepseek-vl-1.3b-* store them (saved after transformers' VLM refactor, no
#: conversion mapping for the text model)
DEEPSEEK_VL = replace(
    LLAMA,
    name="deepseek_vl",
    reader="deepseek_vl",
    model_types=("deepseek_vl",),
    layers="model.language_model.layers",
    embed="model.language_model.embed_tokens",
    final_norm="model.language_model.norm",
)

#: DeepSeek-VL hybrid (modeling_deepseek_vl_hybrid.py): DeepSeek-VL's text names; SigLIP and SAM towers
DEEPSEEK_VL_HYBRID = replace(
    DEEPSEEK_VL, name="deepseek_vl_hybrid", reader="deepseek_vl_hybrid", model_types=("deepseek_vl_hybrid",)
)

#: Janus / Janus-Pro (modeling_janus.py): DeepSeek-VL's text names; the understanding tower and the VQ-GAN
JANUS = replace(DEEPSEEK_VL, name="janus", reader="janus", model_types=("janus",))
