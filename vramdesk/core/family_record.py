"""The record of one model family (:class:`Family`) and the pieces its fields are made of (MLP kinds, MTP names,
Gemma's sandwich norms). The records themselves are in :mod:`.families` and the modules it gathers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

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
    #: the joining projection split in two, one over the embedding and one over the hidden state (DeepSeek-V4's
    #: e_proj and h_proj, hidden x hidden each); None: one ``proj`` over both (hidden x 2 hidden)
    split_proj: tuple[str, str] | None = None


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

    # -- shared transformer blocks (LayerSpec.shared: Zamba / Zamba2, config_readers/ssm2.py)
    #: the shared block under its owner layer (Zamba: ``shared_transf``)
    shared_block: str = "shared_transformer"
    # -- dense3
    #: the model's norms have no weight (NanoChat's ``F.rms_norm(x, (dim,))``, HRM-Text's, OLMo 1's parameter-free
    #: OlmoLayerNorm): no norm tensors in its layers or after them
    weightless_norms: bool = False
    # -- llamalike
    #: the per-head attention-sink logits under the attention module (``Architecture.attention_sinks``) as the
    #: checkpoints name them (gpt-oss's ``sinks``; Flint's ``softmax_offset``, MiMo-V2-Flash's
    #: ``attention_sink_bias``, which transformers 5 renames to ``sinks`` at load time)
    sinks: str = "sinks"
    #: only the sliding-window layers have sinks (MiMo-V2-Flash: ``add_swa_attention_sink_bias``)
    sinks_on_sliding_only: bool = False
    #: a Gated DeltaNet layer's input projections as the checkpoints store them: Qwen3-Next's in_proj_qkvz and
    #: in_proj_ba; one name: all of q, k, v, z, b and a stacked in one matrix (Lara Mini's in_proj)
    linear_in_proj: tuple[str, ...] = ("in_proj_qkvz", "in_proj_ba")
    #: a Gated DeltaNet layer's gated output RMSNorm (Lara Mini's checkpoints: out_norm)
    linear_norm: str = "norm"

    def __post_init__(self) -> None:
        if len(self.mlp_names) != _MLP_NAMES_PER_KIND[self.mlp]:
            raise ValueError(f"family {self.name}: a {self.mlp} MLP names {_MLP_NAMES_PER_KIND[self.mlp]} projections")
        # per-expert layers: gate, up and down; or up and down where the experts are plain MLPs like the dense one
        per_expert = (3, 2) if self.mlp == "plain" else (3,)
        if len(self.expert_names) not in ((2,) if self.fused_experts else per_expert):
            raise ValueError(
                f"family {self.name}: fused experts name 2 tensors, per-expert layers 3 (2 for plain MLP experts)"
            )
