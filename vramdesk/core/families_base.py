"""The families vramdesk has read since its first releases: Llama and the models that store its names, Gemma, gpt-oss,
Llama 4, DeepSeek-V3, the Qwen hybrids, the GPT-2-era families, GLM-4, OLMoE, Granite MoE, EXAONE 4, Command R,
StarCoder2, the Qwen vision-language models, Nemotron-H and -NAS, MiniMax-M2. One :class:`~.family_record.Family`
per family; :mod:`.families` gathers them with the newer ones."""

from __future__ import annotations

from dataclasses import replace

from .family_record import DEEPSEEK_MTP, Family

#: model types read as plain decoder-only "llama-like" stacks (RMSNorm, gated MLP, rotary); so are the variants
#: below, and model types no record claims (with a warning)
LLAMA = Family(
    name="llama",
    reader="llama",
    model_types=(
        "llama",
        "mistral",
        "qwen2",
        "qwen3",
        # Granite 3.x (modeling_granite.py): Llama's modules with attention_bias / mlp_bias; its embedding,
        # residual, attention and logits multipliers scale activations and store no tensor
        "granite",
        "internlm2",
        "yi",
        # SmolLM3 (modeling_smollm3.py): its NoPE layers (no_rope_layers) only skip the rotary step
        "smollm3",
        "qwen2_moe",
        "qwen3_moe",
        "deepseek",
        "exaone",
        "glm",
        "hunyuan",
    ),
    gguf_70b_at_80_layers=True,
)

#: Phi-3 stores (and peft adapts) q, k and v as one qkv_proj, and gate and up stacked as one gate_up_proj
PHI3 = replace(
    LLAMA,
    name="phi3",
    model_types=("phi3",),
    qkv_proj="qkv_proj",
    mlp="fused",
    mlp_names=("gate_up_proj", "down_proj"),
    gguf_sliding_window=False,
)

#: Mixtral keeps the original release's names: block_sparse_moe.gate and experts w1 (gate), w3 (up), w2 (down)
MIXTRAL = replace(
    LLAMA,
    name="mixtral",
    model_types=("mixtral",),
    router="block_sparse_moe.gate",
    experts="block_sparse_moe.experts",
    expert_names=("w1", "w3", "w2"),
)

#: OLMo 2 normalises the outputs of attention and MLP, not their inputs
OLMO2 = replace(
    LLAMA,
    name="olmo2",
    model_types=("olmo2",),
    layer_norms=("post_attention_layernorm", "post_feedforward_layernorm"),
)

#: Gemma 1 / 2 / 3: tied embeddings
GEMMA = Family(name="gemma", reader="gemma", model_types=("gemma", "gemma2", "gemma3"), tied_by_default=True)

#: gpt-oss: router under mlp.router, experts stored fused with biases
GPT_OSS = Family(
    name="gpt_oss",
    reader="gpt_oss",
    model_types=("gpt_oss",),
    router="mlp.router",
    fused_experts=True,
    expert_names=("gate_up_proj", "down_proj"),
)

#: Llama 4: the MoE block is feed_forward (router, fused experts and one shared expert)
LLAMA4 = Family(
    name="llama4",
    reader="llama4",
    model_types=("llama4",),
    router="feed_forward.router",
    experts="feed_forward.experts",
    fused_experts=True,
    expert_names=("gate_up_proj", "down_proj"),
    shared_expert="feed_forward.shared_expert",
)

#: DeepSeek-V2 / V3 and Kimi K2: MLA, n_shared_experts fused into mlp.shared_experts, MTP in the layer numbering
DEEPSEEK_V3 = Family(
    name="deepseek_v3",
    reader="deepseek_v3",
    model_types=("deepseek_v3", "kimi_k2"),
    shared_expert="mlp.shared_experts",
    mtp=DEEPSEEK_MTP,
)

#: Qwen3-Next and Qwen3.5: Gated DeltaNet hybrids with an MTP block under mtp.
QWEN_HYBRID = Family(name="qwen_hybrid", reader="qwen_hybrid", model_types=("qwen3_next", "qwen3_5", "qwen3_5_moe"))

#: Qwen v1 (remote code): GPT-2 module names, fused c_attn, w1 / w2 / c_proj gated MLP, RMSNorm
QWEN = Family(
    name="qwen",
    reader="qwen",
    model_types=("qwen",),
    layers="transformer.h",
    embed="transformer.wte",
    final_norm="transformer.ln_f",
    layer_norms=("ln_1", "ln_2"),
    attn="attn",
    qkv_proj="c_attn",
    o_proj="c_proj",
    mlp_names=("w1", "w2", "c_proj"),
)

#: StarCoder / SantaCoder: GPT-2 module names and LayerNorm, plain MLP, tied embeddings
GPT_BIGCODE = Family(
    name="gpt_bigcode",
    reader="gpt_bigcode",
    model_types=("gpt_bigcode",),
    norm="layer",
    mlp="plain",
    tied_by_default=True,
    layers="transformer.h",
    embed="transformer.wte",
    final_norm="transformer.ln_f",
    layer_norms=("ln_1", "ln_2"),
    attn="attn",
    qkv_proj="c_attn",
    o_proj="c_proj",
    mlp_names=("c_fc", "c_proj"),
)

#: Pythia / GPT-NeoX: its own prefix, an untied head called embed_out
GPT_NEOX = Family(
    name="gpt_neox",
    reader="gpt_neox",
    model_types=("gpt_neox",),
    norm="layer",
    mlp="plain",
    layers="gpt_neox.layers",
    embed="gpt_neox.embed_in",
    final_norm="gpt_neox.final_layer_norm",
    lm_head="embed_out",
    attn="attention",
    qkv_proj="query_key_value",
    o_proj="dense",
    mlp_names=("dense_h_to_4h", "dense_4h_to_h"),
)

#: BLOOM: fused query_key_value, plain MLP, tied embeddings
BLOOM = Family(
    name="bloom",
    reader="bloom",
    model_types=("bloom",),
    norm="layer",
    mlp="plain",
    tied_by_default=True,
    layers="transformer.h",
    embed="transformer.word_embeddings",
    final_norm="transformer.ln_f",
    attn="self_attention",
    qkv_proj="query_key_value",
    o_proj="dense",
    mlp_names=("dense_h_to_4h", "dense_4h_to_h"),
)

#: Falcon: BLOOM's names; new_decoder_architecture layers have ln_attn and ln_mlp; llama-quantize has rules of its own
FALCON = replace(
    BLOOM,
    name="falcon",
    reader="falcon",
    model_types=("falcon",),
    layer_norms=("ln_attn", "ln_mlp"),
    gguf_arch="falcon",
)

#: Phi-1 / Phi-2: Llama prefixes, LayerNorm, fc1 / fc2 MLP, output projection called dense
PHI = Family(
    name="phi",
    reader="phi",
    model_types=("phi",),
    norm="layer",
    mlp="plain",
    final_norm="model.final_layernorm",
    o_proj="dense",
    mlp_names=("fc1", "fc2"),
)

# -- GPT-2-era families (config_readers/classic.py). Tensor names, biases and norms from transformers'
# src/transformers/models/<family>/modeling_<family>.py (huggingface/transformers as stored in the code index).

#: GPT-2 / DistilGPT2 (modeling_gpt2.py): GPT-BigCode's names (GPT2Model wte, wpe, h.{i}.ln_1 / attn.c_attn /
#: attn.c_proj / ln_2 / mlp.c_fc / mlp.c_proj, ln_f; Conv1D with biases; LayerNorm; lm_head tied to wte), but
#: every head has its own keys and values
GPT2 = replace(GPT_BIGCODE, name="gpt2", reader="gpt2", model_types=("gpt2",))

#: GPT-J (modeling_gptj.py): GPTJBlock has one ln_1 feeding attention and MLP in parallel; q/k/v/out_proj
#: without bias, mlp.fc_in / fc_out with bias; rotary over rotary_dim (no position table); GPTJForCausalLM's
#: lm_head is nn.Linear(n_embd, vocab_size) with a bias, untied (GPTJConfig tie_word_embeddings=False)
GPTJ = Family(
    name="gptj",
    reader="gptj",
    model_types=("gptj",),
    norm="layer",
    mlp="plain",
    layers="transformer.h",
    embed="transformer.wte",
    final_norm="transformer.ln_f",
    attn="attn",
    o_proj="out_proj",
    mlp_names=("fc_in", "fc_out"),
    single_norm="ln_1",
)

#: CodeGen (modeling_codegen.py): GPT-J's block ("Copied from GPTJBlock") with q, k and v fused in one
#: qkv_proj without bias; lm_head nn.Linear(n_embd, vocab_size) with a bias
CODEGEN = replace(GPTJ, name="codegen", reader="codegen", model_types=("codegen",), qkv_proj="qkv_proj")

#: OPT (modeling_opt.py): OPTForCausalLM.model.decoder: embed_tokens (vocab, word_embed_proj_dim),
#: embed_positions (OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows), project_in / project_out
#: without bias when word_embed_proj_dim != hidden_size, layers.{i}.self_attn.{q,k,v,out}_proj and fc1 / fc2
#: (bias = enable_bias) beside self_attn_layer_norm and final_layer_norm, a final_layer_norm only when
#: do_layer_norm_before; lm_head nn.Linear(word_embed_proj_dim, vocab_size, bias=False), tied
OPT = Family(
    name="opt",
    reader="opt",
    model_types=("opt",),
    norm="layer",
    mlp="plain",
    tied_by_default=True,
    layers="model.decoder.layers",
    embed="model.decoder.embed_tokens",
    final_norm="model.decoder.final_layer_norm",
    layer_norms=("self_attn_layer_norm", "final_layer_norm"),
    o_proj="out_proj",
    mlp_names=("fc1", "fc2"),
    positions="model.decoder.embed_positions",
    mlp_prefix="",
    embed_projections=("model.decoder.project_in", "model.decoder.project_out"),
)

# -- current decoder families with their own layouts (tensor names from transformers' modeling_<family>.py)

#: GLM-4-0414 / GLM-Z1 (modeling_glm4.py: Glm4DecoderLayer, Glm4MLP = Phi3MLP): four RMSNorms a layer, input_layernorm
#: -> attention -> post_self_attn_layernorm, then post_attention_layernorm -> MLP -> post_mlp_layernorm; gate and up
#: fused as gate_up_proj; q/k/v biases (attention_bias), none on o_proj; partial_rotary_factor stores no tensor
GLM4 = Family(
    name="glm4",
    reader="glm4",
    model_types=("glm4",),
    mlp="fused",
    mlp_names=("gate_up_proj", "down_proj"),
    sandwich_norms=("input_layernorm", "post_self_attn_layernorm", "post_attention_layernorm", "post_mlp_layernorm"),
)

#: GLM-4.5 / GLM-4.5-Air / GLM-4.6 (modeling_glm4_moe.py): Llama's attention (q/k/v biases, optional per-head q/k
#: norms), dense layers before first_k_dense_replace, then a sigmoid router mlp.gate with e_score_correction_bias,
#: routed experts and n_shared_experts fused into mlp.shared_experts; checkpoints store one nn.Linear per expert
#: (mlp.experts.{e}.gate_proj ...) and the MTP layers in DeepSeek-V3's numbering, with their own embed_tokens and
#: shared_head.head (GLM-4.5-Air: model.layers.46.*)
GLM4_MOE = Family(
    name="glm4_moe",
    reader="glm4_moe",
    model_types=("glm4_moe",),
    shared_expert="mlp.shared_experts",
    mtp=DEEPSEEK_MTP,
)

#: OLMoE (modeling_olmoe.py): Llama's modules with q_norm / k_norm over the whole q and k projections (as OLMo 2),
#: every layer MoE with a router mlp.gate and 64 experts stored per expert
OLMOE = Family(name="olmoe", reader="olmoe", model_types=("olmoe",))

#: Granite 3.x MoE (modeling_granitemoe.py, the checkpoints' names): the experts are one stacked, gate-and-up-fused
#: block_sparse_moe.input_linear (E, 2I, H) and block_sparse_moe.output_linear (E, H, I), the router
#: block_sparse_moe.router.layer; no shared expert; the multipliers store no tensor
GRANITEMOE = replace(
    LLAMA,
    name="granitemoe",
    model_types=("granitemoe",),
    router="block_sparse_moe.router.layer",
    experts="block_sparse_moe",
    fused_experts=True,
    expert_names=("input_linear.weight", "output_linear.weight"),
)

#: EXAONE 4.0 (modeling_exaone4.py): per-head q_norm / k_norm, norms after attention and after the MLP (OLMo 2's
#: places), sliding layers from layer_types or sliding_window_pattern ("LLLG": three sliding, one global)
EXAONE4 = Family(
    name="exaone4",
    reader="exaone4",
    model_types=("exaone4",),
    layer_norms=("post_attention_layernorm", "post_feedforward_layernorm"),
)

#: Command R / R+ and Command R7B / A (modeling_cohere.py, modeling_cohere2.py): one LayerNorm with a weight and no
#: bias feeds attention and MLP in parallel (input_layernorm), tied embeddings; Command R+'s q/k norms (use_qk_norm)
#: are (heads, head_dim) per projection; Cohere2's sliding layers from layer_types or sliding_window_pattern (4)
COHERE = Family(name="cohere", reader="cohere", model_types=("cohere", "cohere2"), tied_by_default=True)

#: StarCoder2 (modeling_starcoder2.py): LayerNorms with biases, a plain c_fc -> c_proj MLP, q/k/v/o and MLP biases
#: from use_bias, tied embeddings, a sliding window on every layer when sliding_window is set
STARCODER2 = Family(
    name="starcoder2",
    reader="starcoder2",
    model_types=("starcoder2",),
    norm="layer",
    mlp="plain",
    tied_by_default=True,
    mlp_names=("c_fc", "c_proj"),
)

# -- vision-language models whose text model is a known decoder (config_readers/multimodal.py); their towers are
# VisionSpec kinds named by inventory._vision

#: Qwen3-VL / Qwen3-VL-MoE (modeling_qwen3_vl.py, modeling_qwen3_vl_moe.py): Qwen3VLModel holds the text model as
#: model.language_model (embed_tokens, layers.{i} with Qwen3's per-head q_norm / k_norm, norm) beside model.visual;
#: Qwen3VLMoeTextExperts stores the experts as two stacked parameters, gate_up_proj (E, 2I, H) and down_proj
#: (E, H, I), with the router mlp.gate
QWEN3_VL = Family(
    name="qwen3_vl",
    reader="qwen3_vl",
    model_types=("qwen3_vl", "qwen3_vl_moe"),
    layers="model.language_model.layers",
    embed="model.language_model.embed_tokens",
    final_norm="model.language_model.norm",
    fused_experts=True,
    expert_names=("gate_up_proj", "down_proj"),
)

#: Qwen2.5-VL (modeling_qwen2_5_vl.py): Qwen2's text modules (q/k/v biases, none on o_proj) under the original
#: checkpoints' model.layers, and the Qwen2.5-VL tower under visual.
QWEN2_5_VL = Family(name="qwen2_5_vl", reader="qwen2_5_vl", model_types=("qwen2_5_vl",))

# -- Mamba-2 hybrids (config_readers/hybrid.py): tensor names from the Hub checkpoints (backbone.*) and transformers'
# src/transformers/models/<family>/modeling_<family>.py / modular_<family>.py (huggingface/transformers as stored in
# the code index)

#: Nemotron-H, Nemotron-Nano-v2 and Nemotron 3 (modular_nemotron_h.py: NemotronHBlock = one RMSNorm ``norm`` and one
#: ``mixer``: NemotronHMamba2Mixer (Zamba2MambaMixer's in_proj / conv1d / dt_bias / A_log / D / gated norm / out_proj),
#: NemotronHAttention (JambaAttention: q/k/v/o_proj, no rotary, no q/k norm), NemotronHMLP (up_proj and down_proj
#: around relu2, no gate) or NemotronHMoE (DeepSeek-V3's sigmoid router ``gate`` with e_score_correction_bias,
#: plain up/down experts, one plain ``shared_experts`` MLP)); NemotronHModel.embeddings and norm_f under the
#: checkpoints' ``backbone.`` prefix, an untied lm_head
NEMOTRON_H = Family(
    name="nemotron_h",
    reader="nemotron_h",
    model_types=("nemotron_h",),
    mlp="plain",
    layers="backbone.layers",
    embed="backbone.embeddings",
    final_norm="backbone.norm_f",
    attn="mixer",
    mlp_names=("up_proj", "down_proj"),
    router="mixer.gate",
    experts="mixer.experts",
    expert_names=("up_proj", "down_proj"),
    shared_expert="mixer.shared_experts",
    single_norm="norm",
    mlp_prefix="mixer.",
)

# -- MLA families with DeepSeek Sparse Attention and latent-MoE layouts (config_readers/mla.py; tensor names from
# transformers' modular_deepseek_v32.py / modular_glm_moe_dsa.py, huggingface/transformers as stored in the code index)

#: DeepSeek-V3.2 (DeepseekV32Model = DeepseekV3Model with a DeepseekV32Indexer ``self_attn.indexer`` on every layer:
#: wq_b, wk, k_norm (LayerNorm), weights_proj) and GLM-5 / 5.1 / 5.2 (GlmMoeDsaModel: the same modules, an indexer
#: only on the layers ``indexer_types`` calls "full"; GLM-4.5's per-expert checkpoints): DeepSeek-V3's names, MTP
#: layers in the decoder's numbering (DeepseekV32PreTrainedModel ignores model.layers.61, GLM-5 model.layers.78)
DEEPSEEK_DSA = replace(
    DEEPSEEK_V3, name="deepseek_dsa", reader="deepseek_dsa", model_types=("deepseek_v32", "glm_moe_dsa")
)

# -- frontier decoders (config_readers/frontier.py): tensor names from transformers'
# src/transformers/models/<family>/modeling_<family>.py / modular_<family>.py as stored in the code index, or from the
# remote code the checkpoints ship with

#: OLMo 3 (modular_olmo3.py: Olmo3Attention / Olmo3DecoderLayer = OLMo 2's, "except: sliding window attention is used
#: for 3 out of 4 layers"): OLMo 2's q_norm / k_norm over the whole q and k projections and its norms after attention
#: and after the MLP; sliding layers from layer_types (Olmo3Config's default: every fourth layer global)
OLMO3 = replace(OLMO2, name="olmo3", reader="olmo3", model_types=("olmo3",))

#: Phi-3.5-MoE / Phi-mini-MoE / Phi-tiny-MoE (modeling_phimoe.py: PhimoeDecoderLayer, the checkpoints' names):
#: Mixtral's block_sparse_moe.gate and experts.{e}.w1 / w3 / w2, Llama's attention with biases on q/k/v/o
#: (attention_bias), nn.LayerNorm (weight and bias) for input_layernorm, post_attention_layernorm and model.norm;
#: PhimoeForCausalLM's lm_head has a bias when lm_head_bias
PHIMOE = replace(MIXTRAL, name="phimoe", reader="phimoe", model_types=("phimoe",), norm="layer")

#: MiniMax-M2 / M2.1 / M2.5 / M2.7 (modular_minimax_m2.py: MixtralDecoderLayer with MiniMaxM2Attention =
#: FlexOlmoAttention, q_norm / k_norm over all heads' width; MiniMaxM2SparseMoeBlock: a sigmoid router with an
#: e_score_correction_bias beside it); the checkpoints keep the original names (the MiniMax-M2 safetensors keys
#: quoted by llama.cpp's and transformers' GGUF maps, find_string "block_sparse_moe.e_score_correction_bias"):
#: block_sparse_moe.gate, block_sparse_moe.e_score_correction_bias, block_sparse_moe.experts.{e}.w1 / w3 / w2
MINIMAX_M2 = replace(
    MIXTRAL,
    name="minimax_m2",
    reader="minimax_m2",
    model_types=("minimax_m2",),
    correction_bias="block_sparse_moe.e_score_correction_bias",
)

#: Llama-3.1/3.3-Nemotron Super / Ultra / Nano (DeciLM, ``nemotron-nas``; the checkpoints' modeling_decilm.py as
#: NeMo Automodel's port quotes it: a layer whose attention is no_op has neither input_layernorm nor self_attn, one
#: whose FFN is no_op neither post_attention_layernorm nor mlp); Llama's names otherwise, each layer its own KV heads
#: (num_attention_heads / n_heads_in_group) and MLP width (_ffn_mult_to_intermediate_size)
NEMOTRON_NAS = replace(LLAMA, name="nemotron_nas", reader="nemotron_nas", model_types=("nemotron-nas",))
