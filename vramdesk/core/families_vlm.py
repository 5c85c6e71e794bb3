"""Vision-language models on CLIP / SigLIP / Pixtral / InternViT towers (LLaVA and its kin, Idefics3 / SmolVLM): their
family records (:class:`~.family_record.Family`), gathered by :mod:`.families`."""

from __future__ import annotations

from dataclasses import replace

from .families_base import LLAMA

# LLaVA-style vision-language models (config_readers/clipvlm.py; towers and projectors in vision_towers_clip.py): the
# text model is the text_config's own family read by its reader, stored under the published checkpoints' names,
# which transformers 5 renames at load time (conversion_mapping.py "llava" / "llava_next": ^language_model.model ->
# model.language_model, ^language_model.lm_head -> lm_head); Llama's, Gemma's and Cohere's records share the module
# names these prefix

#: LLaVA, LLaVA-NeXT (-Video), LLaVA-OneVision, VipLLaVA, Video-LLaVA, Mistral 3, InternVL (-hf), PaliGemma 1 / 2
LLAVA_VLM = replace(
    LLAMA,
    name="llava",
    reader="llava",
    model_types=(
        "llava",
        "llava_next",
        "llava_next_video",
        "llava_onevision",
        "vipllava",
        "video_llava",
        "mistral3",
        "internvl",
        "paligemma",
    ),
    layers="language_model.model.layers",
    embed="language_model.model.embed_tokens",
    final_norm="language_model.model.norm",
    lm_head="language_model.lm_head",
)

#: Idefics3 and SmolVLM (modeling_idefics3.py, modeling_smolvlm.py): Idefics3Model's text_model and vision_model under
#: model., the connector beside them and lm_head outside, as HuggingFaceTB/SmolVLM-Instruct's checkpoint stores them
IDEFICS3_VLM = replace(
    LLAMA,
    name="idefics3",
    reader="idefics3",
    model_types=("idefics3", "smolvlm"),
    layers="model.text_model.layers",
    embed="model.text_model.embed_tokens",
    final_norm="model.text_model.norm",
)
