"""Model families as data: what each family's configs are called and how its checkpoints are laid out.

One frozen :class:`Family` per family the normaliser knows. It holds what used to be spelled as comparisons of
family names: the config ``model_type`` values its reader reads, the constants that reader applies (norm kind,
MLP kind, the tied-embedding default), the tensor names of its checkpoints (Hugging Face module paths, matched
against ``modules_to_not_convert``-style skip lists and LoRA targets) and the facts llama-quantize keys on.

* :mod:`.config_readers` picks a config's reader with :func:`family_for_model_type`;
* :mod:`.inventory` names and shapes the tensors of an :class:`~.architecture.Architecture` from
  :func:`family_of`;
* :func:`.facts.gguf_model_info` takes llama.cpp's view of the model from the same record.

A *variant* is a record read by another family's reader (``reader`` differs from ``name``): Phi-3, Mixtral and
OLMo 2 are read as Llama (``Architecture.family`` says "llama", which the model browser shows) but store some
tensors under their own names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from .architecture import Architecture

#: how an MLP stores its projections: "gated" = gate, up and down (SwiGLU / GeGLU; Qwen v1's w1, w2, c_proj);
#: "plain" = up and down around an activation (GPT-2, NeoX, Falcon, BLOOM, Phi-1/2); "fused" = gate and up
#: stacked in one matrix twice as wide, then down (Phi-3's gate_up_proj)
MlpKind = Literal["gated", "plain", "fused"]

#: Gemma 2 / 3 layers normalise both the input and the output of attention and of the MLP
GEMMA_SANDWICH_NORMS = (
    "input_layernorm",
    "post_attention_layernorm",
    "pre_feedforward_layernorm",
    "post_feedforward_layernorm",
)

#: how many projections an MLP of each kind names (the last is the down projection)
_MLP_NAMES_PER_KIND: Mapping[MlpKind, int] = {"gated": 3, "plain": 2, "fused": 2}


@dataclass(frozen=True, slots=True)
class MtpNames:
    """Tensor names of the multi-token-prediction layers a checkpoint carries. Templates: ``{idx}`` = the MTP
    layer's number after the decoder layers, ``{k}`` = its number among the MTP layers, ``{p}`` = its prefix."""

    #: the layer's prefix (its attention, MLP and norms are named as in a decoder layer under it)
    layer: str = "mtp.layers.{k}"
    #: the projection that joins the embedding and the hidden state (kept unquantised in FP8 checkpoints)
    proj: str = "mtp.fc"
    embed_norm: str = "mtp.pre_fc_norm_embedding"
    hidden_norm: str = "mtp.pre_fc_norm_hidden"
    final_norm: str = "mtp.norm"


#: Qwen3-Next / Qwen3.5: the MTP block lives under ``mtp.`` beside the decoder
QWEN_MTP = MtpNames()
#: DeepSeek-V3: the MTP layers continue the decoder's numbering (layer 61 of 61 + 1)
DEEPSEEK_MTP = MtpNames(
    layer="model.layers.{idx}",
    proj="{p}.eh_proj",
    embed_norm="{p}.enorm",
    hidden_norm="{p}.hnorm",
    final_norm="{p}.shared_head.norm",
)


@dataclass(frozen=True, slots=True)
class Family:
    """One family: the configs it reads and the names, layout and quirks of its checkpoints.

    Changing any field of a record changes what the core makes of that family's models
    (``tests/core/test_families.py`` checks it): a field no code reads would be a quirk that changes nothing.
    """

    #: the record's key in :data:`FAMILIES`
    name: str
    #: the reader that reads its configs (a key of ``config_readers._READERS``) and what ``Architecture.family``
    #: says; equal to ``name`` except for variants
    reader: str
    #: config ``model_type`` values it reads (lower case, without a ``_text`` suffix)
    model_types: tuple[str, ...]

    # -- constants its reader applies (Architecture.norm, .mlp_gated and the tie_word_embeddings default)
    #: "rms" (RMSNorm, weight only) or "layer" (LayerNorm, weight and bias)
    norm: Literal["rms", "layer"] = "rms"
    #: the dense MLP's layout (:data:`MlpKind`); Architecture.mlp_gated is False for "plain"
    mlp: MlpKind = "gated"
    #: the input embedding doubles as the output head when the config has no ``tie_word_embeddings``
    tied_by_default: bool = False

    # -- tensor names: embedding, decoder layers, final norm and head
    layers: str = "model.layers"
    embed: str = "model.embed_tokens"
    final_norm: str = "model.norm"
    lm_head: str = "lm_head"
    #: the two norms of a layer with two (one-norm layers have ``input_layernorm``, four-norm Gemma 2 / 3 layers
    #: their sandwich norms)
    layer_norms: tuple[str, str] = ("input_layernorm", "post_attention_layernorm")
    #: the four norms of a four-norm layer (``Architecture.norms_per_layer`` = 4), in the order: before
    #: attention, after attention, before the MLP, after the MLP
    sandwich_norms: tuple[str, str, str, str] = GEMMA_SANDWICH_NORMS

    # -- attention (MLA and linear-attention layers have names of their own, DeepSeek's and Qwen3-Next's)
    #: the attention module under each layer
    attn: str = "self_attn"
    #: the one projection holding q, k and v stacked; None: separate q_proj, k_proj and v_proj
    qkv_proj: str | None = None
    o_proj: str = "o_proj"

    # -- dense MLP under ``{layer}.mlp``: the input projections (as many as ``mlp`` needs), then the output one
    mlp_names: tuple[str, ...] = ("gate_proj", "up_proj", "down_proj")

    # -- mixture of experts, under each layer: the router, the routed experts and the shared expert (gate, up, down)
    router: str = "mlp.gate"
    experts: str = "mlp.experts"
    #: the experts are two stacked parameters, gate and up fused: (E, 2I, H) and (E, H, I), with ``{name}_bias``
    #: biases (transformers' GptOssExperts, Llama4TextExperts); otherwise one nn.Linear per expert for each of
    #: gate, up and down, recorded stacked as ``{name}.weight``
    fused_experts: bool = False
    #: the experts' tensors: gate_up and down when fused, else gate, up and down
    expert_names: tuple[str, ...] = ("gate_proj", "up_proj", "down_proj")
    shared_expert: str = "mlp.shared_expert"
    #: the router's score-correction bias (``MoeSpec.router_correction_bias``) as a tensor of its own under the layer
    #: (MiniMax-M2's ``block_sparse_moe.e_score_correction_bias``); None: under the router, as DeepSeek-V3 stores it
    correction_bias: str | None = None
    #: names of the MTP layers, when the config has some (``Architecture.mtp_layers``)
    mtp: MtpNames = QWEN_MTP

    # -- llama.cpp
    #: llama.cpp's name for the architecture where it changes llama-quantize's rules (only Falcon's does, for its
    #: output / tied token_embd, ffn_down and attn_output types); None: the config's model_type stands in
    gguf_arch: str | None = None
    #: llama.cpp types a dense 80-layer model of this architecture LLM_TYPE_70B (Llama 2 / 3 70B, Qwen2 72B),
    #: which bumps attn_v from Q3_K / Q4_K to Q5_K
    gguf_70b_at_80_layers: bool = False
    #: llama.cpp honours the config's sliding window; False: it keeps every layer's KV whole (Phi-3 / Phi-4:
    #: "Phi SWA is currently disabled", llama-model.cpp since ggml-org/llama.cpp#13676)
    gguf_sliding_window: bool = True

    # -- GPT-2-era layouts (GPT-2, GPT-J, OPT, CodeGen)
    #: the learned position-embedding table (``Architecture.learned_positions`` rows)
    positions: str = "transformer.wpe"
    #: the one norm of a layer whose attention and MLP read the same normalised input (``norms_per_layer`` 1)
    single_norm: str = "input_layernorm"
    #: what comes between a layer's prefix and its MLP projections ("mlp." = ``{layer}.mlp.fc1``; OPT's fc1 / fc2
    #: sit on the layer itself)
    mlp_prefix: str = "mlp."
    #: the projections into and out of the decoder when the token embedding is narrower than it
    #: (``Architecture.embed_width``: OPT-350m's project_in / project_out); None: the family has none
    embed_projections: tuple[str, str] | None = None

    # -- Mamba-2 hybrids (config_readers/hybrid.py)
    #: the Mamba-2 mixer under each of its layers (in_proj, conv1d, dt_bias, A_log, D, norm, out_proj under it)
    mamba_mixer: str = "mixer"

    # -- recurrent hybrids (config_readers/recurrent.py)
    #: the per-head q / k RMSNorms of an attention layer (``Architecture.qk_norm`` "head"; LFM2's q_layernorm /
    #: k_layernorm)
    qk_norms: tuple[str, str] = ("q_norm", "k_norm")
    #: the constant-state mixer under each of its layers (LFM2's ``conv``; Kimi Delta Attention sits at ``attn``)
    state_mixer: str = "self_attn"

    #: the key of ``inventory_dense2.EXTRAS``: the builder of the tensors no other field describes (BitNet's
    #: sub-norms, ModernBERT's prediction head); None: none
    extras: str | None = None

    # -- gated attention output (LayerSpec.attn_gate)
    #: the separate projection under the attention module whose sigmoid gates its output (Laguna's g_proj, AFMoE's
    #: gate_proj)
    attn_gate: str = "g_proj"

    # -- mla
    #: an RMSNorm over the MoE block's output, under the layer (A.X-K1's post_mlp_layernorm: the checkpoints store
    #: it at the decoder-layer level, transformers renames it to mlp.post_mlp_layernorm); None: the family has none
    moe_output_norm: str | None = None

    def __post_init__(self) -> None:
        if len(self.mlp_names) != _MLP_NAMES_PER_KIND[self.mlp]:
            raise ValueError(f"family {self.name}: a {self.mlp} MLP names {_MLP_NAMES_PER_KIND[self.mlp]} projections")
        # per-expert layers: gate, up and down; or up and down where the experts are plain MLPs like the dense one
        per_expert = (3, 2) if self.mlp == "plain" else (3,)
        if len(self.expert_names) not in ((2,) if self.fused_experts else per_expert):
            raise ValueError(
                f"family {self.name}: fused experts name 2 tensors, per-expert layers 3 (2 for plain MLP experts)"
            )


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

# --- ssm ---
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

# --- recurrent ---
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

# --- dense2 --- (config_readers/dense2.py, inventory_dense2.py; names from transformers 5.24's modeling_<family>.py)

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

# --- clipvlm ---
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

# --- moe2 ---
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

# --- mla ---
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

# --- gemma ---
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

#: every family, by name
FAMILIES: Mapping[str, Family] = {
    fam.name: fam
    for fam in (
        LLAMA,
        PHI3,
        MIXTRAL,
        OLMO2,
        GEMMA,
        GPT_OSS,
        LLAMA4,
        DEEPSEEK_V3,
        QWEN_HYBRID,
        QWEN,
        GPT_BIGCODE,
        GPT_NEOX,
        FALCON,
        BLOOM,
        PHI,
        GPT2,
        GPTJ,
        CODEGEN,
        OPT,
        GLM4,
        GLM4_MOE,
        OLMOE,
        GRANITEMOE,
        EXAONE4,
        COHERE,
        STARCODER2,
        QWEN3_VL,
        QWEN2_5_VL,
        NEMOTRON_H,
        DEEPSEEK_DSA,
        OLMO3,
        PHIMOE,
        MINIMAX_M2,
        NEMOTRON_NAS,
        # --- ssm ---
        MAMBA,
        MAMBA2,
        JAMBA,
        BAMBA,
        FALCON_H1,
        GRANITEMOEHYBRID,
        # --- recurrent ---
        LFM2,
        KIMI_LINEAR,
        # --- dense2 ---
        GPT_SW3,
        GPT_NEO,
        MPT,
        STABLELM,
        BITNET,
        ARCEE,
        APERTUS,
        XGLM,
        BIOGPT,
        MODERNBERT_DECODER,
        MISTRAL4,
        OPENAI_GPT,
        GPT_NEOX_JAPANESE,
        JAIS2,
        # --- clipvlm ---
        LLAVA_VLM,
        IDEFICS3_VLM,
        # --- moe2 ---
        ERNIE4_5_MOE,
        EXAONE_MOE,
        HY_V3,
        SOLAR_OPEN,
        LAGUNA,
        AFMOE,
        MINIMAX,
        JETMOE,
        # --- mla ---
        DEEPSEEK_V2,
        GLM4_MOE_LITE,
        MINICPM3,
        SARVAM_MLA,
        AXK1,
        # --- gemma ---
        GEMMA4,
        GEMMA4_TEXT,
    )
}


def _by_model_type() -> dict[str, Family]:
    out: dict[str, Family] = {}
    for fam in FAMILIES.values():
        for mt in fam.model_types:
            if mt in out:
                raise ValueError(f"model_type '{mt}' is claimed by the families {out[mt].name} and {fam.name}")
            out[mt] = fam
    return out


_BY_MODEL_TYPE = _by_model_type()
#: variants by model type as the config spells it
_VARIANTS = {mt: fam for fam in FAMILIES.values() if fam.reader != fam.name for mt in fam.model_types}


def family_for_model_type(base: str) -> Family | None:
    """The record whose reader reads configs of this ``model_type`` (lower case, ``_text`` removed); None for
    a model type no family claims (the normaliser then tries the generic Llama path)."""
    return _BY_MODEL_TYPE.get(base)


def family_of(arch: Architecture) -> Family:
    """The record whose tensor names and quirks ``arch`` has: a variant when the config's ``model_type``, as the
    config spells it, is the variant's (the inventory has always matched it so: ``PHI3`` gets Llama's names),
    else the family its reader named in ``Architecture.family``."""
    variant = _VARIANTS.get(arch.model_type)
    if variant is not None and variant.reader == arch.family:
        return variant
    fam = FAMILIES.get(arch.family)
    if fam is None:
        raise ValueError(f"{arch.model_type}: no family record for '{arch.family}' (known: {', '.join(FAMILIES)})")
    return fam
