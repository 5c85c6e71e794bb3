"""Gemma 4, Gemma 4 Unified and Gemma 3n: their family records (:class:`~.family_record.Family`), gathered by
:mod:`.families`."""

from __future__ import annotations

from dataclasses import replace

from .family_record import Family

# Gemma 4 / Gemma 4 Unified / Gemma 3n (config_readers/gemma4.py, inventory_gemma4.py): tensor names from
# transformers 5.24's modeling_gemma4.py, modeling_gemma4_unified*.py and modeling_gemma3n.py, checked against
# gemma-4-31B-it's safetensors listing (model.language_model.layers.{i}...)

#: Gemma 4 and Gemma 4 Unified as multimodal checkpoints store them (Gemma4ForConditionalGeneration: the text model
#: under model.language_model, the tower under model.vision_tower, its projector model.embed_vision); tied
#: embeddings; MoE layers (26B-A4B) keep their dense MLP under mlp (the table's shared expert), the router
#: router.proj and the experts stacked and gate-and-up fused (experts.gate_up_proj (E, 2I, H), experts.down_proj)
GEMMA4 = Family(
    name="gemma4",
    reader="gemma4",
    model_types=("gemma4", "gemma4_unified", "gemma4_unified_assistant", "gemma3n"),
    tied_by_default=True,
    layers="model.language_model.layers",
    embed="model.language_model.embed_tokens",
    final_norm="model.language_model.norm",
    router="router.proj",
    experts="experts",
    fused_experts=True,
    expert_names=("gate_up_proj", "down_proj"),
    shared_expert="mlp",
)

#: a text-only Gemma 4 / Gemma 3n checkpoint (Gemma4ForCausalLM, Gemma3nForCausalLM, the Gemma 4 assistant's
#: model): the text model's modules under model.; read by the Gemma 4 reader, which picks it for an un-nested config
GEMMA4_TEXT = replace(
    GEMMA4,
    name="gemma4_text",
    reader="gemma4_text",
    model_types=(),
    layers="model.layers",
    embed="model.embed_tokens",
    final_norm="model.norm",
)
