"""Mixture-of-experts decoders (ERNIE 4.5 MoE, EXAONE MoE, HY-V3, Solar Open, Laguna, AFMoE, MiniMax-Text-01, JetMoE)
and DeepSeek-style MLA decoders (DeepSeek-V2, GLM-4.7-Flash, MiniCPM3, Sarvam MLA, A.X-K1): their family records
(:class:`~.family_record.Family`), gathered by :mod:`.families`."""

from __future__ import annotations

from dataclasses import replace

from .families_base import DEEPSEEK_V3, GLM4_MOE, MIXTRAL
from .family_record import Family

# MoE decoders of config_readers/moe2.py: tensor names from transformers 5.24's
# src/transformers/models/<family>/modeling_<family>.py and, where transformers 5 renames modules at load time, the
# checkpoints' names its conversion_mapping.py maps from ("qwen2_moe": one nn.Linear per expert,
# mlp.experts.{e}.gate_proj / up_proj / down_proj; "mixtral": block_sparse_moe.experts.{e}.w1 / w3 / w2)

#: ERNIE 4.5 MoE (modeling_ernie4_5_moe.py): Llama's attention and MLP (biases from use_bias, also on lm_head), dense
#: layers outside moe_layer_start_index .. moe_layer_end_index; Ernie4_5_MoeSparseMoeBlock: a softmax router
#: mlp.gate, routed experts, moe_num_shared_experts fused into mlp.shared_experts, and the router's correction bias
#: mlp.moe_statics.e_score_correction_bias as the checkpoints store it (conversion_mapping.py moves it under the
#: gate); tied embeddings by default
ERNIE4_5_MOE = Family(
    name="ernie4_5_moe",
    reader="ernie4_5_moe",
    model_types=("ernie4_5_moe",),
    tied_by_default=True,
    shared_expert="mlp.shared_experts",
    correction_bias="mlp.moe_statics.e_score_correction_bias",
)

#: EXAONE MoE (modeling_exaone_moe.py): EXAONE 4.0's per-head q_norm / k_norm with its norms before attention and
#: MLP, mlp_layer_types dense / sparse, a sigmoid router mlp.gate whose e_score_correction_bias the checkpoints keep
#: beside it (mlp.e_score_correction_bias), num_shared_experts fused into mlp.shared_experts
EXAONE_MOE = Family(
    name="exaone_moe",
    reader="exaone_moe",
    model_types=("exaone_moe",),
    shared_expert="mlp.shared_experts",
    correction_bias="mlp.e_score_correction_bias",
)

#: Hunyuan HY-V3 (modeling_hy_v3.py, the checkpoints' names from conversion_mapping.py's "hy_v3" renames): per-head
#: q/k norms, q/k/v/o biases from attention_bias, MLP biases from mlp_bias (the shared MLP's too), the router
#: mlp.router.gate, its correction bias mlp.expert_bias and the shared experts mlp.shared_mlp
HY_V3 = Family(
    name="hy_v3",
    reader="hy_v3",
    model_types=("hy_v3",),
    router="mlp.router.gate",
    shared_expert="mlp.shared_mlp",
    correction_bias="mlp.expert_bias",
)

#: Solar Open (modeling_solar_open.py): every layer MoE, GLM-4.5's router with its correction bias under mlp.gate,
#: n_shared_experts fused into mlp.shared_experts, no q/k norms
SOLAR_OPEN = Family(
    name="solar_open", reader="solar_open", model_types=("solar_open",), shared_expert="mlp.shared_experts"
)

#: Laguna (modeling_laguna.py, the checkpoints' names from conversion_mapping.py's "laguna" renames): per-layer query
#: heads (num_attention_heads_per_layer), per-head q/k norms, a g_proj gate on the attention output (one per head
#: when gating is true or "per-head", else one per query element), the router mlp.gate with its correction bias
#: stored as mlp.experts.e_score_correction_bias, the shared expert mlp.shared_expert
LAGUNA = Family(
    name="laguna",
    reader="laguna",
    model_types=("laguna",),
    shared_expert="mlp.shared_expert",
    correction_bias="mlp.experts.e_score_correction_bias",
)

#: AFMoE (modeling_afmoe.py): four norms a layer (input_layernorm, post_attention_layernorm, pre_mlp_layernorm,
#: post_mlp_layernorm), per-head q/k norms and a gate_proj gate (one per query element) on the attention output,
#: num_dense_layers dense layers first, a sigmoid router mlp.router.gate with its mlp.expert_bias, num_shared_experts
#: fused into mlp.shared_experts
AFMOE = Family(
    name="afmoe",
    reader="afmoe",
    model_types=("afmoe",),
    sandwich_norms=("input_layernorm", "post_attention_layernorm", "pre_mlp_layernorm", "post_mlp_layernorm"),
    router="mlp.router.gate",
    shared_expert="mlp.shared_experts",
    correction_bias="mlp.expert_bias",
    attn_gate="gate_proj",
)

#: MiniMax-Text-01 (modeling_minimax.py): Mixtral's MoE under the checkpoints' block_sparse_moe names on every layer;
#: softmax-attention layers are Llama's, lightning-attention layers (MiniMaxLightningAttention) hold qkv_proj,
#: out_proj, an output_gate and an RMSNorm ``norm`` over all heads' width (inventory_moe2.py)
MINIMAX = replace(MIXTRAL, name="minimax", reader="minimax", model_types=("minimax",))

#: JetMoE (modeling_jetmoe.py): the attention module self_attention holds kv_proj and the attention experts
#: (inventory_moe2.moa_attention); the MLP is GraniteMoE-like, stacked experts mlp.input_linear (E, 2I, H) and
#: mlp.output_linear (E, H, I) with the router mlp.router.layer, and an output bias mlp.bias; tied embeddings
JETMOE = Family(
    name="jetmoe",
    reader="jetmoe",
    model_types=("jetmoe",),
    tied_by_default=True,
    attn="self_attention",
    router="mlp.router.layer",
    experts="mlp",
    fused_experts=True,
    expert_names=("input_linear.weight", "output_linear.weight"),
)

# DeepSeek-style MLA decoders (config_readers/mlamoe.py); tensor names from transformers 5.24's
# models/<family>/modeling_<family>.py and the checkpoints' names before its conversion_mapping.py renames them

#: DeepSeek-V2 / V2-Lite (modeling_deepseek_v2.py: DeepseekV2Attention = DeepSeek-V3's MLA modules, DeepseekV2Moe:
#: a softmax router mlp.gate without a correction bias, experts stored one nn.Linear each, n_shared_experts fused
#: into mlp.shared_experts; every layer from first_k_dense_replace on is MoE); no MTP layers
DEEPSEEK_V2 = replace(DEEPSEEK_V3, name="deepseek_v2", reader="deepseek_v2", model_types=("deepseek_v2",))

#: GLM-4.7-Flash (modeling_glm4_moe_lite.py: DeepSeek-V3's MLA attention and MoE, a sigmoid router with an
#: e_score_correction_bias; mlp_layer_types says which layers are sparse; the MTP layer is model.layers.47 in
#: DeepSeek-V3's numbering, which Glm4MoeLitePreTrainedModel ignores on load) with GLM-4.5's MTP layout
GLM4_MOE_LITE = replace(GLM4_MOE, name="glm4_moe_lite", reader="glm4_moe_lite", model_types=("glm4_moe_lite",))

#: MiniCPM3 (modeling_minicpm3.py: MiniCPM3Attention = DeepSeek-V2's MLA modules, a dense gated MLP, tied
#: embeddings by default; scale_emb / scale_depth scale activations and store no tensor)
MINICPM3 = Family(name="minicpm3", reader="minicpm3", model_types=("minicpm3",), tied_by_default=True)

#: Sarvam's MLA model (configuration_sarvam_mla.py: model_type sarvam_mla, built by DeepseekV3ForCausalLM): read
#: as DeepSeek-V3
SARVAM_MLA = replace(DEEPSEEK_V3, name="sarvam_mla", model_types=("sarvam_mla",))

#: A.X-K1 (modular_axk1.py: DeepSeek-V3 with a post_mlp_layernorm after the MoE block, always a q latent, the
#: dense / sparse layers from mlp_layer_types)
AXK1 = replace(DEEPSEEK_V3, name="axk1", reader="axk1", model_types=("axk1",), moe_output_norm="post_mlp_layernorm")
