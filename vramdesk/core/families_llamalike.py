"""Decoders that store Llama's module names with a twist of their own (HyperCLOVA X, OLMo 1, Seed-OSS, FlexOlmo,
DiffLlama, Flint, Kolibri1, Command A MoE, Mellum, the Granite SWA models, Granite MoE Shared, CWM, ERNIE 4.5,
Helium, InternLM3, IQuest-Coder, Ministral 3, VaultGemma, Sarvam-MoE, MiMo-V2-Flash, Beam, Lara Mini): their family
records, gathered by :mod:`.families`.

Until these records the generic Llama path read them (with a warning). Names and shapes from transformers 5.24's
``models/<type>/modeling_<type>.py``, checked against the model it builds from each config class's defaults
(``benchmarks/data/transformers_families.jsonl``); the checkpoints' names where ``conversion_mapping.py`` renames
them at load time (its qwen2_moe pattern fuses per-expert ``mlp.experts.{e}.gate_proj`` ... tensors, which the
inventory records stacked under those names).
"""

from __future__ import annotations

from dataclasses import replace

from .families_base import GLM4_MOE, GRANITEMOE
from .family_record import Family

# -- dense decoders with Llama's names (config_readers/llamalike.py fills each config class's own defaults)

#: InternLM3 (InternLM3Config(LlamaConfig), LlamaForCausalLM): head_dim 128 by default; its remote-code configs
#: spell attention_bias and mlp_bias as qkv_bias and bias (the config class's attribute_map)
INTERNLM3 = Family(name="internlm3", reader="internlm3", model_types=("internlm3",))

#: IQuest-Coder (IQuestCoderConfig(LlamaConfig), LlamaForCausalLM): Llama with head_dim 128 by default
IQUESTCODER = Family(name="iquestcoder", reader="iquestcoder", model_types=("iquestcoder",))

#: Ministral 3 (modeling_ministral3.py): Mistral's modules without biases, head_dim 128 by default; a sliding
#: window on every layer when sliding_window is set (default none)
MINISTRAL3 = Family(name="ministral3", reader="ministral3", model_types=("ministral3",))

#: Code World Model (modeling_cwm.py): Llama's modules, head_dim 128 by default; without layer_types every fourth
#: layer from layer 0 is global and the others slide over sliding_window (CwmConfig)
CWM = Family(name="cwm", reader="cwm", model_types=("cwm",))

#: Helium (modeling_helium.py): q/k/v biases from attention_bias, never one on o_proj
HELIUM = Family(name="helium", reader="helium", model_types=("helium",))

#: ERNIE 4.5 dense (modeling_ernie4_5.py): every projection (q/k/v/o, gate/up/down) has a bias when use_bias; tied
#: embeddings by default
ERNIE4_5 = Family(name="ernie4_5", reader="ernie4_5", model_types=("ernie4_5",), tied_by_default=True)

#: Seed-OSS (modeling_seed_oss.py): q/k/v biases from attention_bias (default true), o_proj's from
#: attention_out_bias (default false)
SEED_OSS = Family(name="seed_oss", reader="seed_oss", model_types=("seed_oss",))

#: HyperCLOVA X (modeling_hyperclovax.py): Granite's multipliers (no tensors) and, with use_post_norm (default
#: true), an RMSNorm after attention (post_norm1) and after the MLP (post_norm2) beside Llama's two
HYPERCLOVAX = Family(
    name="hyperclovax",
    reader="hyperclovax",
    model_types=("hyperclovax",),
    sandwich_norms=("input_layernorm", "post_norm1", "post_attention_layernorm", "post_norm2"),
)

#: OLMo 1 (modeling_olmo.py: OlmoLayerNorm is F.layer_norm without weight or bias): no norm stores a tensor
OLMO = Family(name="olmo", reader="olmo", model_types=("olmo",), norm="layer", weightless_norms=True)

#: DiffLlama (modeling_diffllama.py): Llama's projections and the differential attention's lambda_q1 / lambda_k1 /
#: lambda_q2 / lambda_k2 (head_dim each, the extras); its groupnorm has no affine weights
DIFFLLAMA = Family(name="diffllama", reader="diffllama", model_types=("diffllama",), extras="diffllama")

#: VaultGemma (modeling_vaultgemma.py): Gemma 2's attention and soft-capping with two norms a layer,
#: input_layernorm and pre_feedforward_layernorm; tied embeddings
VAULTGEMMA = Family(
    name="vaultgemma",
    reader="vaultgemma",
    model_types=("vaultgemma",),
    tied_by_default=True,
    layer_norms=("input_layernorm", "pre_feedforward_layernorm"),
)

# -- Granite with sliding windows and attention sinks; Granite MoE with a shared MLP

#: Granite SWA (modeling_granite_swa.py): Granite's modules with a self_attn.sinks logit per head; without
#: layer_types every fourth layer from layer 0 is global (GraniteSWAConfig); tied embeddings by default
GRANITE_SWA = Family(name="granite_swa", reader="granite_swa", model_types=("granite_swa",), tied_by_default=True)

#: Granite MoE SWA (modeling_granitemoe_swa.py, no conversion mapping): the sinks and layer kinds of Granite SWA;
#: block_sparse_moe.router, stacked block_sparse_moe.experts.gate_up_proj / down_proj and, when
#: shared_intermediate_size, a shared_mlp.input_linear (gate and up) / output_linear
GRANITEMOE_SWA = Family(
    name="granitemoe_swa",
    reader="granitemoe_swa",
    model_types=("granitemoe_swa",),
    mlp="fused",
    mlp_names=("input_linear", "output_linear"),
    router="block_sparse_moe.router",
    experts="block_sparse_moe.experts",
    fused_experts=True,
    expert_names=("gate_up_proj", "down_proj"),
    shared_expert="shared_mlp",
)

#: Granite MoE Shared (modeling_granitemoeshared.py; the checkpoints keep Granite MoE's names, which its
#: conversion mapping renames): Granite MoE's experts and router with a shared_mlp.input_linear / output_linear of
#: shared_intermediate_size beside them
GRANITEMOESHARED = replace(
    GRANITEMOE,
    name="granitemoeshared",
    reader="granitemoeshared",
    model_types=("granitemoeshared",),
    mlp="fused",
    mlp_names=("input_linear", "output_linear"),
    shared_expert="shared_mlp",
)

# -- MoE decoders with Qwen-MoE-style per-expert checkpoints

#: FlexOlmo (modeling_flex_olmo.py): OLMo 2's norms after attention and after the MoE block and its q_norm / k_norm
#: over the whole q and k projections; every layer MoE (num_experts of intermediate_size, router mlp.gate)
FLEX_OLMO = Family(
    name="flex_olmo",
    reader="flex_olmo",
    model_types=("flex_olmo",),
    layer_norms=("post_attention_layernorm", "post_feedforward_layernorm"),
)

#: Mellum (modeling_mellum.py): per-head q_norm / k_norm; MoE layers from mlp_layer_types (default all sparse),
#: experts of moe_intermediate_size, no shared expert; layer kinds from layer_types (default all global)
MELLUM = Family(name="mellum", reader="mellum", model_types=("mellum",))

#: Flint (modeling_flint.py): per-head q_norm / k_norm and a sink per head (self_attn.softmax_offset in the
#: checkpoints, renamed sinks by its conversion mapping); MoE layers but mlp_only_layers (default [0, 1]) with an
#: ungated shared_expert; layer kinds default to global on layers 0, 1, every 4th from 1 and the last
FLINT = Family(name="flint", reader="flint", model_types=("flint",), sinks="softmax_offset")

#: Kolibri1 (modeling_kolibri1.py): per-head q_norm / k_norm, four norms a layer (post_attn_norm and post_ffn_norm in
#: the checkpoints, renamed post_self_attn_layernorm / post_mlp_layernorm), every layer MoE with an ungated
#: mlp.shared_experts; without layer_types every fifth layer is global
KOLIBRI1 = Family(
    name="kolibri1",
    reader="kolibri1",
    model_types=("kolibri1",),
    sandwich_norms=("input_layernorm", "post_attn_norm", "post_attention_layernorm", "post_ffn_norm"),
    shared_expert="mlp.shared_experts",
)

#: Command A MoE (modeling_cohere2_moe.py): Command R7B's one weight-only norm a layer feeding attention and MLP in
#: parallel, tied embeddings; experts of intermediate_size on the sparse layers of mlp_layer_types, dense layers of
#: prefix_dense_intermediate_size, num_shared_experts x intermediate_size fused into an ungated mlp.shared_experts
COHERE2_MOE = Family(
    name="cohere2_moe",
    reader="cohere2_moe",
    model_types=("cohere2_moe",),
    tied_by_default=True,
    shared_expert="mlp.shared_experts",
)

#: Sarvam-MoE (modular_sarvam_moe.py: SarvamMoEConfig(Glm4MoeConfig), Glm4MoeForCausalLM): GLM-4.5's MoE layout
#: with per-head q/k norms; the checkpoints' names (its conversion mapping renames them): model.word_embeddings,
#: q, k and v fused as attention.query_key_value, attention.dense, attention.query_layernorm / key_layernorm and the
#: router's mlp.gate.expert_bias
SARVAM_MOE = replace(
    GLM4_MOE,
    name="sarvam_moe",
    reader="sarvam_moe",
    model_types=("sarvam_moe",),
    embed="model.word_embeddings",
    attn="attention",
    qkv_proj="query_key_value",
    o_proj="dense",
    qk_norms=("query_layernorm", "key_layernorm"),
    correction_bias="mlp.gate.expert_bias",
)

#: MiMo-V2-Flash (modeling_mimo_v2_flash.py): sliding layers with twice the KV heads and a sink per head
#: (self_attn.attention_sink_bias in the checkpoints, renamed sinks), values narrower than the keys (v_head_dim),
#: a dense first layer, then routed experts with DeepSeek-V3's e_score_correction_bias under mlp.gate
MIMO_V2_FLASH = Family(
    name="mimo_v2_flash",
    reader="mimo_v2_flash",
    model_types=("mimo_v2_flash",),
    sinks="attention_sink_bias",
    sinks_on_sliding_only=True,
)

#: Beam (modeling_beam.py): Gemma 2's four norms a layer, per-head q/k norms, a sigmoid gate on the attention output
#: (self_attn.gate_proj, one row per query element, and gate_bias, one per head: the extras), dense layers, then
#: routed experts with an e_score_correction_bias under mlp.gate
BEAM = Family(name="beam", reader="beam", model_types=("beam",), attn_gate="gate_proj", extras="beam")

#: Lara Mini (modeling_lara_mini.py: Qwen3.5's Gated DeltaNet layers between global and sliding attention layers,
#: per-head q/k norms, no output gate, routed experts beside an ungated shared_expert; tied embeddings): the
#: checkpoints stack each DeltaNet layer's q, k, v, z, b and a projections in one linear_attn.in_proj and call its
#: norm out_norm (its conversion mapping splits and renames them, and leaves the experts stacked as the model holds
#: them: mlp.experts.gate_up_proj / down_proj)
LARA_MINI = Family(
    name="lara_mini",
    reader="lara_mini",
    model_types=("lara_mini",),
    tied_by_default=True,
    fused_experts=True,
    expert_names=("gate_up_proj", "down_proj"),
    linear_in_proj=("in_proj",),
    linear_norm="out_norm",
)
