"""State-space models and recurrent hybrids (Mamba, Jamba, Bamba, Falcon-H1, Granite 4.0-H, LFM2, Kimi Linear): their
family records (:class:`~.family_record.Family`), gathered by :mod:`.families`."""

from __future__ import annotations

from dataclasses import replace

from .family_record import Family

# State-space models and their hybrids (config_readers/ssm.py). Tensor names from transformers 5.24's
# models/<type>/modeling_<type>.py / modular_<type>.py and, where transformers 5 renames at load time, the
# checkpoints' names its conversion_mapping.py converts from

#: Mamba (modeling_mamba.py: MambaModel.embeddings, layers.{i}.norm and .mixer (MambaMixer), norm_f, under the
#: checkpoints' backbone.; MambaConfig ties the head) and Falcon-Mamba (modular_falcon_mamba.py: Mamba's modules,
#: weightless B / C / dt RMSNorms; FalconMambaConfig ties the head)
MAMBA = Family(
    name="mamba",
    reader="mamba",
    model_types=("mamba", "falcon_mamba"),
    tied_by_default=True,
    layers="backbone.layers",
    embed="backbone.embeddings",
    final_norm="backbone.norm_f",
    single_norm="norm",
)

#: Mamba-2 (modeling_mamba2.py: Mamba's backbone names, Mamba2Mixer as ``mixer``; Mamba2Config does not tie the head)
MAMBA2 = replace(MAMBA, name="mamba2", reader="mamba2", model_types=("mamba2",), tied_by_default=False)

#: Jamba (modeling_jamba.py: JambaAttentionDecoderLayer / JambaMambaDecoderLayer: input_layernorm, self_attn or
#: mamba (JambaMambaMixer), pre_ff_layernorm, feed_forward: JambaMLP or JambaSparseMoeBlock with router and
#: experts, stored per expert as experts.{e}.gate_proj / up_proj / down_proj (conversion_mapping.py "jamba");
#: final_layernorm)
JAMBA = Family(
    name="jamba",
    reader="jamba",
    model_types=("jamba",),
    final_norm="model.final_layernorm",
    layer_norms=("input_layernorm", "pre_ff_layernorm"),
    mlp_prefix="feed_forward.",
    router="feed_forward.router",
    experts="feed_forward.experts",
    mamba_mixer="mamba",
)

#: Bamba (modeling_bamba.py: BambaDecoderLayer: input_layernorm, mamba (BambaMixer, Mamba-2) or self_attn,
#: pre_ff_layernorm, feed_forward: a gated MLP; final_layernorm): Jamba's names
BAMBA = replace(JAMBA, name="bamba", reader="bamba", model_types=("bamba",))

#: Falcon-H1 (modeling_falcon_h1.py: FalconH1DecoderLayer: input_layernorm, then self_attn and mamba
#: (FalconH1Mixer) side by side, pre_ff_layernorm, feed_forward; final_layernorm): Jamba's names
FALCON_H1 = replace(JAMBA, name="falcon_h1", reader="falcon_h1", model_types=("falcon_h1",))

#: Granite 4.0-H (modeling_granitemoehybrid.py: GraniteMoeHybridDecoderLayer: input_layernorm, mamba or self_attn,
#: post_attention_layernorm, block_sparse_moe (checkpoints: router.layer, fused input_linear / output_linear, the
#: names conversion_mapping.py's "granitemoe" renames) and shared_mlp (input_linear = gate and up, output_linear))
GRANITEMOEHYBRID = Family(
    name="granitemoehybrid",
    reader="granitemoehybrid",
    model_types=("granitemoehybrid",),
    mlp="fused",
    mlp_names=("input_linear", "output_linear"),
    mlp_prefix="shared_mlp.",
    router="block_sparse_moe.router.layer",
    experts="block_sparse_moe",
    fused_experts=True,
    expert_names=("input_linear.weight", "output_linear.weight"),
    shared_expert="shared_mlp",
    mamba_mixer="mamba",
)

# Recurrent hybrids (config_readers/recurrent.py, inventory_recurrent.py): tensor names from transformers 5.24's
# models/<type>/modeling_<type>.py and the checkpoints' names its conversion_mapping.py renames from

#: LFM2 / LFM2.5 (modeling_lfm2.py: Lfm2DecoderLayer = operator_norm -> Lfm2Attention (q/k/v_proj, out_proj,
#: per-head RMSNorms q_layernorm / k_layernorm) or Lfm2ShortConv (``conv``: in_proj 3 x hidden, a depthwise
#: conv.conv of conv_L_cache taps, out_proj; biases from conv_bias), then ffn_norm -> Lfm2MLP feed_forward.w1 (gate) /
#: w3 (up) / w2 (down)); the final norm is called model.embedding_norm; tied embeddings
LFM2 = Family(
    name="lfm2",
    reader="lfm2",
    model_types=("lfm2",),
    tied_by_default=True,
    final_norm="model.embedding_norm",
    layer_norms=("operator_norm", "ffn_norm"),
    o_proj="out_proj",
    mlp_names=("w1", "w3", "w2"),
    mlp_prefix="feed_forward.",
    qk_norms=("q_layernorm", "k_layernorm"),
    state_mixer="conv",
)

#: Kimi Linear (modeling_kimi_linear.py, the checkpoints' names before conversion_mapping.py's renames): Kimi Delta
#: Attention layers (self_attn.q/k/v_proj, q/k/v_conv1d, f_a_proj / f_b_proj / dt_bias / A_log (the forget gate),
#: b_proj, g_a_proj / g_b_proj, o_norm, o_proj) and every fourth layer DeepSeek's MLA without rotary on the nope part;
#: a dense first layer, then block_sparse_moe: a sigmoid router ``gate`` with e_score_correction_bias, experts.{e}.w1
#: / w3 / w2 and shared_experts (gate_proj / up_proj / down_proj)
KIMI_LINEAR = Family(
    name="kimi_linear",
    reader="kimi_linear",
    model_types=("kimi_linear",),
    router="block_sparse_moe.gate",
    experts="block_sparse_moe.experts",
    expert_names=("w1", "w3", "w2"),
    shared_expert="block_sparse_moe.shared_experts",
)
