"""Dense decoders outside the Llama mould (GPT-SW3, GPT-Neo, MPT, StableLM, BitNet, ModernBERT decoder, Mistral 4,
Arcee, Apertus, XGLM, BioGPT, GPT-1, GPT-NeoX-Japanese, Jais 2): their family records
(:class:`~.family_record.Family`), gathered by :mod:`.families`."""

from __future__ import annotations

from dataclasses import replace

from .families_base import DEEPSEEK_V3, GPT2, GPT_NEOX
from .family_record import Family

#: GPT-SW3: the auto classes map "gpt-sw3" to GPT2Config and GPT2LMHeadModel
GPT_SW3 = replace(GPT2, name="gpt_sw3", reader="gpt_sw3", model_types=("gpt-sw3",))

#: GPT-Neo: GPT-2's names, attention attn.attention.q/k/v_proj (no bias) and out_proj (bias), nn.Linear c_fc / c_proj
GPT_NEO = replace(
    GPT2,
    name="gpt_neo",
    reader="gpt_neo",
    model_types=("gpt_neo",),
    attn="attn.attention",
    qkv_proj=None,
    o_proj="out_proj",
)

#: MPT: transformer.wte, blocks.{i}.norm_1 / attn.Wqkv / attn.out_proj / norm_2 / ffn.*, norm_f; ALiBi; the LayerNorms
#: lose their bias with no_bias (weight only: "rms" as counted)
MPT = Family(
    name="mpt",
    reader="mpt",
    model_types=("mpt",),
    mlp="plain",
    tied_by_default=True,
    layers="transformer.blocks",
    embed="transformer.wte",
    final_norm="transformer.norm_f",
    layer_norms=("norm_1", "norm_2"),
    attn="attn",
    qkv_proj="Wqkv",
    o_proj="out_proj",
    mlp_names=("up_proj", "down_proj"),
    mlp_prefix="ffn.",
)

#: StableLM: Llama's names with nn.LayerNorm, per-head q/k LayerNorms with qk_layernorm (the extras)
STABLELM = Family(name="stablelm", reader="stablelm", model_types=("stablelm",), norm="layer", extras="stablelm")

#: BitNet b1.58: Llama's modules and the sub-norms before o_proj and down_proj (the extras)
BITNET = Family(name="bitnet", reader="bitnet", model_types=("bitnet",), extras="bitnet")

#: Arcee AFM: Llama with a plain up_proj -> ReLU^2 -> down_proj MLP
ARCEE = Family(name="arcee", reader="arcee", model_types=("arcee",), mlp="plain", mlp_names=("up_proj", "down_proj"))

#: Apertus: per-head q/k norms, a plain up -> xIELU (learned scalars: the extras) -> down MLP, norms of its own names
APERTUS = Family(
    name="apertus",
    reader="apertus",
    model_types=("apertus",),
    mlp="plain",
    mlp_names=("up_proj", "down_proj"),
    layer_norms=("attention_layernorm", "feedforward_layernorm"),
    extras="apertus",
)

#: XGLM: fairseq's layer (self_attn_layer_norm, fc1 / fc2 on the layer, final_layer_norm), sinusoidal positions
XGLM = Family(
    name="xglm",
    reader="xglm",
    model_types=("xglm",),
    norm="layer",
    mlp="plain",
    tied_by_default=True,
    final_norm="model.layer_norm",
    layer_norms=("self_attn_layer_norm", "final_layer_norm"),
    o_proj="out_proj",
    mlp_names=("fc1", "fc2"),
    mlp_prefix="",
)

#: BioGPT: XGLM's layer under biogpt., learned positions, the head output_projection
BIOGPT = replace(
    XGLM,
    name="biogpt",
    reader="biogpt",
    model_types=("biogpt",),
    layers="biogpt.layers",
    embed="biogpt.embed_tokens",
    final_norm="biogpt.layer_norm",
    lm_head="output_projection",
    positions="biogpt.embed_positions",
)

#: ModernBERT decoder: attn.Wo, mlp.Wi (gate and up) / mlp.Wo, the output layer ``decoder``; one norm a layer here
#: (mlp_norm): the extras add attn_norm (nn.Identity in layer 0), the embeddings' norm and the prediction head
MODERNBERT_DECODER = Family(
    name="modernbert_decoder",
    reader="modernbert_decoder",
    model_types=("modernbert-decoder",),
    mlp="fused",
    tied_by_default=True,
    embed="model.embeddings.tok_embeddings",
    final_norm="model.final_norm",
    lm_head="decoder",
    attn="attn",
    o_proj="Wo",
    mlp_names=("Wi", "Wo"),
    single_norm="mlp_norm",
    extras="modernbert_decoder",
)

#: Mistral Small 4: DeepSeek-V3's MLA / MoE layout; no conversion mapping: experts stored stacked as Mistral4Experts
MISTRAL4 = replace(
    DEEPSEEK_V3,
    name="mistral4",
    reader="mistral4",
    model_types=("mistral4",),
    fused_experts=True,
    expert_names=("gate_up_proj", "down_proj"),
)

#: GPT-1 (OpenAIGPTLMHeadModel): GPT-2's layer, tokens_embed / positions_embed, no final norm
OPENAI_GPT = replace(
    GPT2,
    name="openai_gpt",
    reader="openai_gpt",
    model_types=("openai-gpt",),
    embed="transformer.tokens_embed",
    positions="transformer.positions_embed",
)

#: GPT-NeoX-Japanese: GPT-NeoX's names, no biases but the last layer's attention.dense_bias (the extras)
GPT_NEOX_JAPANESE = replace(
    GPT_NEOX,
    name="gpt_neox_japanese",
    reader="gpt_neox_japanese",
    model_types=("gpt_neox_japanese",),
    tied_by_default=True,
    layers="gpt_neox_japanese.layers",
    embed="gpt_neox_japanese.embed_in",
    final_norm="gpt_neox_japanese.final_layer_norm",
    extras="gpt_neox_japanese",
)

#: Jais 2: Llama's names with nn.LayerNorm and a plain up_proj -> ReLU^2 -> down_proj MLP
JAIS2 = replace(ARCEE, name="jais2", reader="jais2", model_types=("jais2",), norm="layer")
