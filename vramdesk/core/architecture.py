"""The normalised architecture: a per-layer table the rest of the estimator can trust.

:class:`Architecture` and its :class:`LayerSpec` rows (with their MLA, MoE, linear-attention and vision parts)
are what :func:`vramdesk.core.config_readers.normalize` reads a config.json into; :class:`ConfigError` is what it
raises for a config that cannot be estimated.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from .memo import derived
from .messages import Message, MessageText, Text, join


class ConfigError(ValueError):
    """A config that cannot be estimated; the message names the model type and the field."""


class AttentionKind(StrEnum):
    FULL = "full"
    SLIDING = "sliding"
    CHUNKED = "chunked"
    MLA = "mla"
    LINEAR = "linear"
    NONE = "none"


#: "36 full, 12 sliding": one part per attention kind (:attr:`Architecture.attention_summary`)
_KIND_COUNT = {
    AttentionKind.FULL: Message("arch.attention.full", "{n} full"),
    AttentionKind.SLIDING: Message("arch.attention.sliding", "{n} sliding"),
    AttentionKind.CHUNKED: Message("arch.attention.chunked", "{n} chunked"),
    AttentionKind.MLA: Message("arch.attention.mla", "{n} mla"),
    AttentionKind.LINEAR: Message("arch.attention.linear", "{n} linear"),
    AttentionKind.NONE: Message("arch.attention.none", "{n} none"),
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class MlaSpec(_Frozen):
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    #: transformers caches this layer's latent, not the expanded K and V (from 5.15 for DeepSeek-style layers: set per
    #: release by the transformers engine; vLLM and llama.cpp always cache the latent)
    latent_cache: bool = False


class DsaIndexerSpec(_Frozen):
    """DeepSeek Sparse Attention's lightning indexer on an MLA layer (transformers' ``DeepseekV32Indexer``): it
    scores every cached token with ``n_heads`` small query heads over one shared key of ``head_dim`` and keeps the
    ``topk`` best for the layer's attention; its keys are cached per token beside the MLA latent."""

    n_heads: int
    head_dim: int
    topk: int


class LinearAttnSpec(_Frozen):
    """Gated DeltaNet (Qwen3-Next / Qwen3.5) geometry."""

    num_k_heads: int
    num_v_heads: int
    k_head_dim: int
    v_head_dim: int
    conv_kernel: int
    #: dtype of the recurrent state in transformers / vLLM (``mamba_ssm_dtype``)
    state_dtype: str = "fp32"

    @property
    def key_dim(self) -> int:
        return self.num_k_heads * self.k_head_dim

    @property
    def value_dim(self) -> int:
        return self.num_v_heads * self.v_head_dim

    @property
    def conv_dim(self) -> int:
        return 2 * self.key_dim + self.value_dim

    @property
    def recurrent_elements(self) -> int:
        return self.num_v_heads * self.k_head_dim * self.v_head_dim

    def state_element_bytes(self, compute_bytes: int) -> int:
        """Bytes of one recurrent-state element in vLLM and llama.cpp's peers (``mamba_ssm_dtype``)."""
        return 4 if self.state_dtype == "fp32" else 2

    def transformers_state_element_bytes(self, compute_bytes: int) -> int:
        """Bytes of one recurrent-state element in transformers' cache (the same ``mamba_ssm_dtype``)."""
        return self.state_element_bytes(compute_bytes)


class Mamba2Spec(_Frozen):
    """A Mamba-2 mixer (transformers' ``Mamba2Mixer`` and its copies in Nemotron-H, Bamba, Falcon-H1): ``in_proj``
    makes the gate z (intermediate), x, B and C (conv_dim = intermediate + 2 x n_groups x state_size) and dt (one
    per head); the depthwise conv1d runs over x, B and C; the state is heads x head_dim x state_size."""

    num_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int
    conv_bias: bool = True
    proj_bias: bool = False
    #: dtype of the SSM state in vLLM (``mamba_ssm_cache_dtype``); None: the model's dtype ("auto")
    state_dtype: str | None = None
    #: the gated RMSNorm over the intermediate width (``norm``); Falcon-H1 has one only with ``mamba_rms_norm``
    gated_norm: bool = True

    @property
    def intermediate(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        return self.intermediate + 2 * self.n_groups * self.state_size

    @property
    def in_proj_width(self) -> int:
        return self.intermediate + self.conv_dim + self.num_heads

    @property
    def recurrent_elements(self) -> int:
        return self.num_heads * self.head_dim * self.state_size

    def state_element_bytes(self, compute_bytes: int) -> int:
        """vLLM's ``MambaStateDtypeCalculator.mamba2_state_dtype``: ``mamba_ssm_cache_dtype``, else the model's."""
        if self.state_dtype is None:
            return compute_bytes
        return 4 if self.state_dtype == "fp32" else 2

    def transformers_state_element_bytes(self, compute_bytes: int) -> int:
        """transformers' Mamba-2 caches (``Mamba2Cache``, ``NemotronHHybridDynamicCache``, ``HybridMambaAttention
        DynamicCache``) allocate the SSM state in the dtype of the input embeddings."""
        return compute_bytes


class RecurrentState(Protocol):
    """What the engines' state rules read of a layer with a constant per-sequence state (Gated DeltaNet or
    Mamba-2): the conv window's width and length and the recurrent state's elements and dtype."""

    @property
    def conv_kernel(self) -> int: ...

    @property
    def conv_dim(self) -> int: ...

    @property
    def recurrent_elements(self) -> int: ...

    def state_element_bytes(self, compute_bytes: int) -> int: ...

    def transformers_state_element_bytes(self, compute_bytes: int) -> int: ...


class MoeSpec(_Frozen):
    num_experts: int
    top_k: int
    expert_intermediate: int
    shared_intermediate: int = 0
    #: DeepSeek: n_shared_experts x moe_intermediate_size is fused into one MLP
    shared_gate: bool = False
    router_bias: bool = False
    #: DeepSeek-V3 e_score_correction_bias
    router_correction_bias: bool = False
    expert_bias: bool = False
    #: latent MoE (Nemotron 3 Super / Ultra: NemotronHMoE.fc1_latent_proj / fc2_latent_proj): the routed experts
    #: read and write this width, projected down from and back up to the hidden size; 0: the hidden size
    latent: int = 0


class MoaSpec(_Frozen):
    """JetMoE's mixture of attention heads (transformers' ``JetMoeMoA``): ``num_experts`` query / output projection
    pairs, ``top_k`` routed a token, each expert's queries attending over the layer's one shared K and V
    (``kv_proj``): ``n_heads`` = top_k x KV heads."""

    num_experts: int
    top_k: int


class StateSpec(_Frozen):
    """A mixer with a constant per-sequence state that is neither Gated DeltaNet nor Mamba-2 (``kind``): LFM2's
    gated short convolution ("short_conv": a conv window and no recurrent state) and Kimi Delta Attention ("kda":
    Gated DeltaNet's q / k / v conv windows and a heads x head_dim x head_dim state). What the engines' state rules
    read (:class:`RecurrentState`): the conv window, ``conv_dim`` channels of ``conv_kernel`` columns (transformers
    keeps all of them, vLLM and llama.cpp ``conv_kernel - 1``), and the recurrent state's elements; ``heads``,
    ``head_dim`` and ``width`` are the widths the inventory names the mixer's tensors from."""

    kind: str
    conv_kernel: int
    conv_dim: int
    recurrent_elements: int = 0
    heads: int = 0
    head_dim: int = 0
    width: int = 0
    #: the mixer's projections and conv have biases (LFM2's conv_bias)
    bias: bool = False
    #: dtype of the recurrent state in vLLM (and transformers' cache); None: the model's dtype
    state_dtype: str | None = "fp32"

    def state_element_bytes(self, compute_bytes: int) -> int:
        """Bytes of one recurrent-state element in vLLM (KDA: ``kda_state_dtype``'s float32)."""
        if self.state_dtype is None:
            return compute_bytes
        return 4 if self.state_dtype == "fp32" else 2

    def transformers_state_element_bytes(self, compute_bytes: int) -> int:
        """Bytes of one recurrent-state element in transformers' cache (KimiLinearDeltaAttention stores its state
        ``.to(torch.float32)``)."""
        return self.state_element_bytes(compute_bytes)


class Mamba1Spec(_Frozen):
    """A Mamba-1 mixer (transformers' ``MambaMixer``, ``FalconMambaMixer``, ``JambaMambaMixer``, ``ZambaMambaMixer``):
    ``in_proj`` makes x and the gate z (2 x intermediate); the depthwise conv1d runs over x; ``x_proj`` makes dt
    (dt_rank wide), B and C (state_size each); ``dt_proj`` widens dt back to the intermediate width; ``A_log``
    (intermediate x state_size) and ``D``; ``out_proj``. The state is intermediate x state_size."""

    intermediate: int
    state_size: int
    dt_rank: int
    conv_kernel: int
    conv_bias: bool = True
    proj_bias: bool = False
    #: Jamba's RMSNorms over dt, B and C (``dt_layernorm``, ``b_layernorm``, ``c_layernorm``; Falcon-Mamba's are
    #: weightless)
    inner_norms: bool = False
    #: dtype of the SSM state in vLLM (``mamba_ssm_cache_dtype``); None: the model's dtype ("auto")
    state_dtype: str | None = None
    #: Zamba's ``n_mamba_heads``: x_proj and dt_proj are one stacked parameter per head (``x_proj_weight``,
    #: ``dt_proj_weight``, ``dt_proj_bias``), A_log and D are (heads, head_dim, ...); 1: Mamba's nn.Linear layout
    heads: int = 1

    @property
    def conv_dim(self) -> int:
        return self.intermediate

    @property
    def in_proj_width(self) -> int:
        return 2 * self.intermediate

    @property
    def recurrent_elements(self) -> int:
        return self.intermediate * self.state_size

    def state_element_bytes(self, compute_bytes: int) -> int:
        """vLLM's ``MambaStateDtypeCalculator.mamba1_state_dtype``: ``mamba_ssm_cache_dtype``, else the model's."""
        if self.state_dtype is None:
            return compute_bytes
        return 4 if self.state_dtype == "fp32" else 2

    def transformers_state_element_bytes(self, compute_bytes: int) -> int:
        """transformers' ``mamba_selective_scan`` returns its last state in fp32 on every path (the mamba_ssm
        kernel's fp32 scan buffer, the torch loop's fp32 ``discrete_A * state + deltaB_u``), and the cache's
        ``LinearAttentionLayer`` allocates ``zeros_like`` it."""
        return 4


class SharedBlockSpec(_Frozen):
    """One invocation of a Zamba / Zamba2 shared transformer block in a hybrid layer (transformers'
    ``ZambaHybridLayer`` / ``Zamba2HybridLayer``): the block (attention over the hidden state concatenated with the
    token embedding, then an MLP) is one set of weights for all the layers that call it, stored under the first
    caller's ``shared_transformer`` (Zamba: ``shared_transf``); each caller has its own ``linear`` and Mamba
    decoder, its own KV cache and, in Zamba2, its own low-rank adapters inside the block."""

    #: which of the ``num_mem_blocks`` shared blocks this layer calls
    block: int
    #: the layer whose checkpoint names hold that block's weights (its first caller)
    owner: int
    #: this layer's number among the hybrid layers: its adapters' slot in the block's adapter lists
    invocation: int
    #: the attention's input width (``attention_hidden_size``: twice the hidden size)
    input_width: int
    #: Zamba2's ``adapter_rank`` for the MLP's gate_up adapters; 0: no adapters (Zamba)
    adapter_rank: int = 0
    #: Zamba2's ``use_shared_attention_adapter``: q / k / v adapters of the same rank
    attn_adapters: bool = False


class CompressedAttnSpec(_Frozen):
    """DeepSeek-V4's attention (transformers' ``DeepseekV4Attention``): one shared K = V head of ``head_dim``
    over a sliding window of recent tokens, and on compressed layers a compressor that pools every
    ``compress_rate`` tokens into one more entry of the same width (``DeepseekV4HCACompressor``; the CSA layers'
    ``DeepseekV4CSACompressor`` projects two overlapping series, twice as wide, and runs DeepSeek Sparse
    Attention's indexer, ``LayerSpec.indexer``, over a compressed key series of its own). Queries come through a
    ``q_lora_rank`` latent; the output through ``o_groups`` grouped projections of ``o_lora_rank`` each, then one
    back to the hidden size; one learned sink per head."""

    q_lora_rank: int
    o_groups: int
    o_lora_rank: int
    #: tokens pooled into one compressed entry; 0: a sliding-window layer without a compressor
    compress_rate: int = 0
    #: the compressor projects two overlapping series (CSA: 2 x head_dim wide, with the indexer)
    overlap: bool = False


class LayerSpec(_Frozen):
    index: int
    attention: AttentionKind
    n_heads: int
    n_kv_heads: int
    head_dim: int
    v_head_dim: int
    #: sliding window or attention chunk size (tokens)
    window: int | None = None
    mla: MlaSpec | None = None
    #: DeepSeek Sparse Attention's indexer on an MLA layer (DeepSeek-V3.2, GLM-5); None on GLM-5.2's "shared"
    #: layers, which reuse the previous indexer's choice
    indexer: DsaIndexerSpec | None = None
    linear: LinearAttnSpec | None = None
    #: a Mamba-2 mixer in place of attention (``attention`` is LINEAR), or beside it (FULL: Falcon-H1's parallel
    #: attention and Mamba-2 heads)
    mamba: Mamba2Spec | None = None
    attn_output_gate: bool = False
    #: "dense" MLP, "moe", or "none" (a Nemotron-H layer whose one mixer is attention or Mamba)
    mlp: str = "dense"
    intermediate: int = 0
    moe: MoeSpec | None = None
    #: rows of a separate sigmoid gate on the attention output, a projection of the layer's input (Laguna's g_proj:
    #: one per head; AFMoE's gate_proj: one per query element); 0: none
    attn_gate: int = 0
    #: JetMoE's attention experts in place of q_proj / o_proj
    moa: MoaSpec | None = None
    #: a constant-state mixer of another kind in place of attention (``attention`` is LINEAR): LFM2's short
    #: convolution, Kimi Delta Attention, MiniMax-Text-01's lightning attention
    state: StateSpec | None = None
    #: a Mamba-1 mixer in place of attention (``attention`` LINEAR), or beside it (``attention`` FULL: a Zamba
    #: hybrid layer's shared attention block)
    mamba1: Mamba1Spec | None = None
    #: the layer reuses the keys and values of the last earlier layer of its kind (Gemma 3n / Gemma 4
    #: ``num_kv_shared_layers``): it has no k / v projections and no cache of its own in any engine
    kv_shared: bool = False
    #: the values are the keys' projection (Gemma 4 ``attention_k_eq_v`` on global layers): no v_proj; the caches
    #: still hold K and V apart
    k_eq_v: bool = False
    #: a Zamba / Zamba2 hybrid layer's call of a shared transformer block (``attention`` FULL, its Mamba mixer in
    #: ``mamba`` / ``mamba1``): the block's weights are counted at its owner only
    shared: SharedBlockSpec | None = None
    #: a second set of routed experts that only image and video tokens go through, beside ``moe`` (ERNIE 4.5 VL's
    #: vision experts: their own router, ``moe_intermediate_size[1]`` wide); text tokens never touch them
    vision_moe: MoeSpec | None = None
    #: DeepSeek-V4's sliding-window attention with its compressor (``attention`` SLIDING, one K = V head,
    #: ``v_head_dim`` 0)
    compressed: CompressedAttnSpec | None = None


class VisionSpec(_Frozen):
    kind: str
    depth: int
    hidden: int
    intermediate: int
    num_heads: int
    patch_size: int
    #: parameters of the whole tower incl. projector, computed by the inventory
    details: dict[str, int | float | str] = Field(default_factory=dict)


class GemmaNSpec(_Frozen):
    """What Gemma 3n and Gemma 4 add around the attention / MLP table (transformers' modeling_gemma3n.py and
    modeling_gemma4.py): per-layer input embeddings (PLE), Gemma 3n's AltUp and Laurel blocks, Gemma 4's layer
    scalars. Its MoE layers (a dense MLP beside routed experts) are the table's shared expert and experts."""

    #: ``hidden_size_per_layer_input``: each layer's slice of the packed per-layer embedding; 0: no PLE
    per_layer_input: int = 0
    #: ``vocab_size_per_layer_input``: the rows of ``embed_tokens_per_layer``
    per_layer_vocab: int = 0
    #: ``altup_num_inputs`` (Gemma 3n): the parallel streams AltUp predicts and corrects; 0: no AltUp
    altup_inputs: int = 0
    #: ``laurel_rank`` (Gemma 3n): the width of the low-rank residual block; 0: none
    laurel_rank: int = 0
    #: Gemma 4 layers store a one-element ``layer_scalar`` (a persistent buffer the checkpoints hold)
    layer_scalar: bool = False
    #: ``backbone_hidden_size`` of a Gemma 4 assistant (draft) model: its pre_projection reads the target's
    #: embedding and last hidden state, its post_projection writes the target's width; 0: not an assistant
    backbone_hidden: int = 0
    #: ``num_centroids`` of an assistant's ordered-embedding head (``use_ordered_embeddings``); 0: none
    centroids: int = 0


class Architecture(_Frozen):
    model_type: str
    #: inventory builder to use ("llama", "gemma", "gpt_oss", "deepseek_v3", "qwen3_next", "gpt_neox", ...)
    family: str
    hidden: int
    vocab: int
    layers: tuple[LayerSpec, ...]
    tie_embeddings: bool
    #: checkpoint dtype (normalised: bf16 / fp16 / fp32)
    dtype: str
    max_position: int | None
    #: attention projections have biases: q/k/v and output
    qkv_bias: bool = False
    o_bias: bool = False
    #: per-head q/k RMSNorm weights (Qwen3, Gemma3, OLMo2 uses full-width q/k norms)
    qk_norm: str = "none"  # "none" | "head" | "full"
    mlp_gated: bool = True
    mlp_bias: bool = False
    #: "rms" (weight only) or "layer" (weight + bias)
    norm: str = "rms"
    norms_per_layer: int = 2
    learned_positions: int = 0
    embedding_norm: bool = False
    #: the token embedding's width when it is not ``hidden`` (OPT-350m's word_embed_proj_dim: projections into
    #: and out of the decoder); 0: ``hidden``
    embed_width: int = 0
    #: a norm after the last layer (OPT without do_layer_norm_before has none)
    final_norm: bool = True
    lm_head_bias: bool = False
    attention_sinks: bool = False
    #: Gemma 2 soft-caps attention scores and the final logits with tanh (attn_logit_softcapping,
    #: final_logit_softcapping): eager attention and the loss head keep the tanh output for backward
    attn_softcap: bool = False
    logit_softcap: bool = False
    #: the model's own loss casts the logits to fp32 before the cross-entropy (every transformers class since
    #: its shared loss function). False for remote code that keeps them in the compute dtype (Qwen v1's
    #: modeling_qwen.py): without autocast (DeepSpeed) its loss head is 16-bit
    logits_fp32: bool = True
    #: MTP / next-n prediction layers present in the checkpoint (not used by plain decoding)
    mtp_layers: int = 0
    #: MTP layers carry their own embedding and head copies (DeepSeek-V3 checkpoints)
    mtp_own_embeddings: bool = False
    vision: VisionSpec | None = None
    quantization_config: dict[str, Any] | None = None
    warnings: tuple[MessageText, ...] = ()
    #: config fields that decided something, for "where does this come from"
    sources: dict[str, str] = Field(default_factory=dict)
    #: facts of one family that only its extra tensors read (``Family.extras``, :mod:`.inventory_dense2`: Apertus's
    #: activation, the bias of ModernBERT's head)
    details: dict[str, int | float | str] = Field(default_factory=dict)
    #: Gemma 3n / Gemma 4 parts outside the layer table (:class:`GemmaNSpec`); None for every other family
    gemma_n: GemmaNSpec | None = None
    #: rows of the output head when it is pruned below the input vocabulary (Apertus 1.5's ``output_vocab_size``:
    #: the text tokens only, the media codes are inputs); 0: ``vocab``
    head_vocab: int = 0
    #: the layer the MTP layers repeat when it is none of the decoder's (DeepSeek-V4: the config's compress ratio
    #: after the decoder's, a sliding-window layer); None: the last attention layer's (:mod:`.inventory`)
    mtp_layer: LayerSpec | None = None

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def is_moe(self) -> bool:
        return derived(self, "is_moe", lambda: any(layer.moe is not None for layer in self.layers))

    def count(self, kind: AttentionKind) -> int:
        return sum(1 for layer in self.layers if layer.attention == kind)

    @property
    def attention_summary(self) -> Text:
        parts = []
        for kind in AttentionKind:
            n = self.count(kind)
            if n:
                parts.append(_KIND_COUNT[kind](n=n))
        return join(", ", *parts)
