"""Vision-language models on SigLIP / SigLIP 2 / Idefics-style towers around a text model vramdesk reads (ShieldGemma 2,
Idefics2, LFM2-VL, Command A Vision): their family records, gathered by :mod:`.families`. Readers in
config_readers/vlm2.py, towers and connectors in vision_towers_vlm2.py."""

from __future__ import annotations

from dataclasses import replace

from .families_base import COHERE, GEMMA
from .families_hybrid import LFM2
from .families_vlm import IDEFICS3_VLM

#: ShieldGemma 2 (modeling_shieldgemma2.py: ShieldGemma2ForImageClassification wraps Gemma3ForConditionalGeneration
#: under model.; transformers 5's shieldgemma2 conversion mapping adds that prefix at load time): Gemma 3's text
#: layers under the checkpoint's language_model.model and language_model.lm_head, the SigLIP tower under
#: vision_tower.vision_model, Gemma 3's projector
SHIELDGEMMA2 = replace(
    GEMMA,
    name="shieldgemma2",
    reader="shieldgemma2",
    model_types=("shieldgemma2",),
    layers="language_model.model.layers",
    embed="language_model.model.embed_tokens",
    final_norm="language_model.model.norm",
    lm_head="language_model.lm_head",
)

#: Idefics2 (modeling_idefics2.py, no conversion mapping): Idefics2Model's text_model (Mistral), vision_model and
#: connector (modality projection + perceiver resampler) under model., lm_head outside: Idefics3's layout
IDEFICS2_VLM = replace(IDEFICS3_VLM, name="idefics2", reader="idefics2", model_types=("idefics2",))

#: LFM2-VL (modeling_lfm2_vl.py, no conversion mapping: the checkpoints store transformers 5's names): LFM2's text
#: layers under model.language_model, the SigLIP 2 NaFlex tower under model.vision_tower.vision_model (the
#: CLIPVisionModel mapping removes vision_model at load time), model.multi_modal_projector
LFM2_VL = replace(
    LFM2,
    name="lfm2_vl",
    reader="lfm2_vl",
    model_types=("lfm2_vl",),
    layers="model.language_model.layers",
    embed="model.language_model.embed_tokens",
    final_norm="model.language_model.embedding_norm",
)

#: Command A Vision (modeling_cohere2_vision.py, no conversion mapping): Cohere 2's text layers under
#: model.language_model, the SigLIP tower under model.vision_tower.vision_model, model.multi_modal_projector
COHERE2_VISION = replace(
    COHERE,
    name="cohere2_vision",
    reader="cohere2_vision",
    model_types=("cohere2_vision",),
    layers="model.language_model.layers",
    embed="model.language_model.embed_tokens",
    final_norm="model.language_model.norm",
)
