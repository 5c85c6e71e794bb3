"""Vision-language and omni models with towers of their own (Qwen2-VL, GLM-4.xV, Kimi K2.5, MiniMax-M3, the Qwen
Omni thinkers, Fuyu and its Persimmon, EXAONE 4.5) and Youtu-LLM: their family records, gathered by :mod:`.families`."""

from __future__ import annotations

from dataclasses import replace

from .families_base import DEEPSEEK_V3, EXAONE4, GLM4, GLM4_MOE
from .family_record import DEEPSEEK_MTP, Family

# vision-language models with towers of their own (config_readers/ownvlm.py; towers in vision_towers_own.py)

#: Qwen2-VL (modeling_qwen2_vl.py): Qwen2's text modules under the original checkpoints' model.layers (transformers
#: 5 maps them to model.language_model) and the Qwen2-VL tower under visual.
QWEN2_VL = Family(name="qwen2_vl", reader="qwen2_vl", model_types=("qwen2_vl",))

#: GLM-4.1V-Thinking / GLM-4.6V-Flash (modeling_glm4v.py; Glm46V and GlmGa take Glm4v's sub-configs): GLM-4's text
#: layers (four RMSNorms, gate_up_proj) under model.language_model, the tower under model.visual, as the
#: checkpoints store them (released after transformers' VLM refactor)
GLM4V = replace(
    GLM4,
    name="glm4v",
    reader="glm4v",
    model_types=("glm4v", "glm46v", "glmga"),
    layers="model.language_model.layers",
    embed="model.language_model.embed_tokens",
    final_norm="model.language_model.norm",
)

#: GLM-4.5V / GLM-4.6V (modeling_glm4v_moe.py): GLM-4.5's MoE text model under model.language_model, one
#: nn.Linear per expert in the checkpoints (mlp.experts.{e}.gate_proj ..., the zai-org Megatron converter's
#: names), the router's e_score_correction_bias under mlp.gate
GLM4V_MOE = replace(
    GLM4_MOE,
    name="glm4v_moe",
    reader="glm4v_moe",
    model_types=("glm4v_moe",),
    layers="model.language_model.layers",
    embed="model.language_model.embed_tokens",
    final_norm="model.language_model.norm",
)

#: Kimi K2.5 / K2.6 (modeling_kimi_k25.py; the remote-code checkpoints' names, which transformers 5's kimi_k25
#: conversion mapping renames at load time): DeepSeek-V3's text modules under language_model.model and
#: language_model.lm_head, MoonViT under vision_tower. and its projector under mm_projector.
KIMI_K25 = replace(
    DEEPSEEK_V3,
    name="kimi_k25",
    reader="kimi_k25",
    model_types=("kimi_k25",),
    layers="language_model.model.layers",
    embed="language_model.model.embed_tokens",
    final_norm="language_model.model.norm",
    lm_head="language_model.lm_head",
    mtp=replace(DEEPSEEK_MTP, layer="language_model.model.layers.{idx}"),
)

#: MiniMax-M3 (modeling_minimax_m3_vl.py; the checkpoints' names, which transformers 5's minimax_m3_vl conversion
#: mapping renames at load time): the text model under model. (the remote-code minimax_m3 and the standalone
#: minimax_m3_vl_text), per-head q_norm / k_norm, the indexer's index_q_proj / index_k_proj / index_q_norm /
#: index_k_norm on sparse layers, dense layers' mlp.gate_proj / up_proj / down_proj, and on MoE layers
#: block_sparse_moe.gate, its e_score_correction_bias, experts.{e}.w1 / w3 / w2 and shared_experts (gate, up, down)
MINIMAX_M3 = Family(
    name="minimax_m3",
    reader="minimax_m3",
    model_types=("minimax_m3",),
    router="block_sparse_moe.gate",
    experts="block_sparse_moe.experts",
    expert_names=("w1", "w3", "w2"),
    shared_expert="block_sparse_moe.shared_experts",
    correction_bias="block_sparse_moe.e_score_correction_bias",
)

#: MiniMax-M3 with its tower (minimax_m3_vl): the text model under language_model.model and language_model.lm_head
MINIMAX_M3_VL = replace(
    MINIMAX_M3,
    name="minimax_m3_vl",
    model_types=("minimax_m3_vl",),
    layers="language_model.model.layers",
    embed="language_model.model.embed_tokens",
    final_norm="language_model.model.norm",
    lm_head="language_model.lm_head",
)

#: Qwen2.5-Omni's thinker (modeling_qwen2_5_omni.py Qwen2_5OmniThinkerForConditionalGeneration): Qwen2's text
#: modules under model. (the thinker checkpoint's names; the full omni checkpoint puts thinker. before them), the
#: towers under visual. and audio_tower.
QWEN2_5_OMNI = Family(name="qwen2_5_omni", reader="qwen2_5_omni", model_types=("qwen2_5_omni_thinker",))

#: Qwen3-Omni-MoE's thinker (modeling_qwen3_omni_moe.py): Qwen3-MoE's text modules under model., one nn.Linear per
#: expert (mlp.experts.{e}.gate_proj ...: transformers 5 fuses them at load time, its qwen2_moe mapping)
QWEN3_OMNI_MOE = Family(name="qwen3_omni_moe", reader="qwen3_omni_moe", model_types=("qwen3_omni_moe_thinker",))

#: Persimmon (modeling_persimmon.py): q, k and v fused in self_attn.query_key_value, the output self_attn.dense,
#: per-head q_layernorm / k_layernorm, mlp.dense_h_to_4h / dense_4h_to_h, LayerNorms, model.final_layernorm
PERSIMMON = Family(
    name="persimmon",
    reader="persimmon",
    model_types=("persimmon",),
    norm="layer",
    mlp="plain",
    final_norm="model.final_layernorm",
    qkv_proj="query_key_value",
    o_proj="dense",
    mlp_names=("dense_h_to_4h", "dense_4h_to_h"),
)

#: Fuyu (modeling_fuyu.py): Persimmon under the original checkpoints' language_model.model and language_model.lm_head
#: (transformers 5's fuyu conversion mapping moves them at load time) beside vision_embed_tokens
FUYU = replace(
    PERSIMMON,
    name="fuyu",
    model_types=("fuyu",),
    layers="language_model.model.layers",
    embed="language_model.model.embed_tokens",
    final_norm="language_model.model.final_layernorm",
    lm_head="language_model.lm_head",
)

#: EXAONE 4.5 (modeling_exaone4_5.py, no conversion mapping: the checkpoints store transformers 5's names): EXAONE
#: 4.0's text layers under model.language_model, the tower under model.visual
EXAONE4_5 = replace(
    EXAONE4,
    name="exaone4_5",
    reader="exaone4_5",
    model_types=("exaone4_5",),
    layers="model.language_model.layers",
    embed="model.language_model.embed_tokens",
    final_norm="model.language_model.norm",
)

#: Youtu-LLM (modeling_youtu.py: DeepseekV3's MLA attention and dense Llama MLPs on every layer, tied embeddings):
#: DeepSeek-V3's names, read by DeepSeek's reader
YOUTU = replace(DEEPSEEK_V3, name="youtu", reader="youtu", model_types=("youtu",), tied_by_default=True)
