"""DeepSeek-style large MoE decoders of the second round (DeepSeek-V4): their family records, gathered by
:mod:`.families`."""

from __future__ import annotations

from .family_record import Family, MtpNames

#: DeepSeek-V4 Flash / Pro (modeling_deepseek_v4.py; the checkpoints keep DeepSeek's own names, which transformers 5's
#: deepseek_v4 conversion mapping renames at load time: attn. -> self_attn., ffn. -> mlp., wq_a -> q_a_proj, q_norm ->
#: q_a_norm, wkv -> kv_proj, wo_a / wo_b -> o_a_proj / o_b_proj, attn_sink -> sinks, compressor.ape / wkv / wgate /
#: norm -> position_bias / kv_proj / gate_proj / kv_norm, indexer.compressor. -> compressor.indexer., attn_norm /
#: ffn_norm -> input_layernorm / post_attention_layernorm, hc_attn_* / hc_ffn_* -> attn_hc.* / ffn_hc.*, gate.bias ->
#: gate.e_score_correction_bias, experts.{e}.w1 / w3 / w2 merged into gate_up_proj and down_proj, embed / head / norm
#: at the top). The NVFP4 checkpoints' quantization_config ignores "*.attn.*", "*.ffn.shared_experts.*", "head" and
#: "mtp.*" by these names. Its MTP block is mtp.{k} with e_proj / h_proj, enorm / hnorm, norm and an hc_head of its
#: own (the names the GGUF converters of DeepSeek-V4-Flash read back).
DEEPSEEK_V4 = Family(
    name="deepseek_v4",
    reader="deepseek_v4",
    model_types=("deepseek_v4",),
    layers="layers",
    embed="embed",
    final_norm="norm",
    lm_head="head",
    layer_norms=("attn_norm", "ffn_norm"),
    attn="attn",
    mlp_names=("w1", "w3", "w2"),
    router="ffn.gate",
    experts="ffn.experts",
    expert_names=("w1", "w3", "w2"),
    shared_expert="ffn.shared_experts",
    correction_bias="ffn.gate.bias",
    mtp=MtpNames(
        layer="mtp.{k}",
        proj="{p}.e_proj",
        embed_norm="{p}.enorm",
        hidden_norm="{p}.hnorm",
        final_norm="{p}.norm",
        split_proj=("{p}.e_proj", "{p}.h_proj"),
    ),
    extras="deepseek_v4",
)
