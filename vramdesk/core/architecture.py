"""config.json -> Architecture: a per-layer table the rest of the estimator can trust.

Never guess from the parameter total. Every family-specific rule below names the config field it reads;
the quirks are those of ``shared/research/anchors-mission.md`` §5: explicit ``head_dim``, GQA/MQA, tied
embeddings, sliding windows (``use_sliding_window``, ``layer_types``, Gemma patterns), gpt-oss alternation,
Llama 4 chunked attention and NoPE layers, MLA (``kv_lora_rank`` + ``qk_rope_head_dim``), Gated DeltaNet
hybrids (``layer_types`` / ``full_attention_interval``, ``linear_*``), MoE fields under their several
names, MTP layers, vision towers, nested ``text_config`` and renamed keys (``dtype``/``torch_dtype``,
``rope_parameters``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ConfigError(ValueError):
    """A config that cannot be estimated; the message names the model type and the field."""


class AttentionKind(StrEnum):
    FULL = "full"
    SLIDING = "sliding"
    CHUNKED = "chunked"
    MLA = "mla"
    LINEAR = "linear"
    NONE = "none"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class MlaSpec(_Frozen):
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


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
    linear: LinearAttnSpec | None = None
    attn_output_gate: bool = False
    #: "dense" MLP or "moe"
    mlp: str = "dense"
    intermediate: int = 0
    moe: MoeSpec | None = None


class VisionSpec(_Frozen):
    kind: str
    depth: int
    hidden: int
    intermediate: int
    num_heads: int
    patch_size: int
    #: parameters of the whole tower incl. projector, computed by the inventory
    details: dict[str, int | float | str] = Field(default_factory=dict)


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
    warnings: tuple[str, ...] = ()
    #: config fields that decided something, for "where does this come from"
    sources: dict[str, str] = Field(default_factory=dict)

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def is_moe(self) -> bool:
        return any(layer.moe is not None for layer in self.layers)

    def count(self, kind: AttentionKind) -> int:
        return sum(1 for layer in self.layers if layer.attention == kind)

    @property
    def attention_summary(self) -> str:
        parts = []
        for kind in AttentionKind:
            n = self.count(kind)
            if n:
                parts.append(f"{n} {kind.value}")
        return ", ".join(parts)


# ----------------------------------------------------------------------------------------------
# helpers


_DTYPE_ALIASES = {
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "fp16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "fp32": "fp32",
    "float": "fp32",
}

#: model types read as plain decoder-only "llama-like" stacks (RMSNorm, gated MLP, rotary)
_LLAMA_LIKE = {
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "olmo2",
    "phi3",
    "granite",
    "internlm2",
    "yi",
    "smollm3",
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "cohere",
    "starcoder2",
    "deepseek",
    "exaone",
    "glm",
    "hunyuan",
}


#: Physical bounds on config.json numbers: (largest accepted, why). Each is far above every real model (the
#: largest value in the bundled catalog is in the comment) and far below what makes an estimate absurd or slow:
#: ``num_hidden_layers: 2147483648`` built a layer table until the process was killed at 22 GB.
_LAYERS = (1_024, "no real model has that many layers")  # Llama 3.1 405B: 126
_WIDTH = (131_072, "no real model is that wide")  # hidden sizes; Llama 3.1 405B: 16,384
_FFN = (1_048_576, "no real model has an MLP that wide")  # Llama 3.1 405B: 53,248
_HEADS = (8_192, "no real model has that many heads")  # DeepSeek-R1, Falcon-40B: 128
_HEAD_DIM = (8_192, "no real model has heads that wide")  # Gemma, Qwen3.5: 256
_RANK = (65_536, "no real model has a rank that large")  # MLA ranks; DeepSeek-R1 q_lora_rank: 1,536
_EXPERTS = (16_384, "no real model has that many experts")  # Qwen3.5-397B: 512
_TOKENS = (2**27, "no real model has a context that long")  # 134M tokens; Llama 4 Scout: 10,485,760
_SMALL = (1_024, "no real model has a value that large")  # patterns, steps, kernels, channels: <= 6
_CONFIG_BOUNDS: dict[str, tuple[int, str]] = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "depth", "max_window_layers", "first_k_dense_replace"), _LAYERS),
    **dict.fromkeys(("num_nextn_predict_layers", "mtp_num_hidden_layers"), _LAYERS),
    **dict.fromkeys(("hidden_size", "n_embd", "n_embed", "out_hidden_size", "vision_output_dim"), _WIDTH),
    **dict.fromkeys(("projector_input_dim", "projector_output_dim"), _WIDTH),
    **dict.fromkeys(("intermediate_size", "intermediate_size_mlp", "moe_intermediate_size", "n_inner"), _FFN),
    **dict.fromkeys(("shared_expert_intermediate_size", "ffn_hidden_size"), _FFN),
    **dict.fromkeys(("num_attention_heads", "n_head", "num_heads", "num_key_value_heads", "num_kv_heads"), _HEADS),
    **dict.fromkeys(("n_head_kv", "linear_num_key_heads", "linear_num_value_heads"), _HEADS),
    **dict.fromkeys(("head_dim", "kv_channels", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"), _HEAD_DIM),
    **dict.fromkeys(("linear_key_head_dim", "linear_value_head_dim"), _HEAD_DIM),
    **dict.fromkeys(("q_lora_rank", "kv_lora_rank"), _RANK),
    # Gemma 3 and Llama 4: 262,144 and 202,048 tokens; 16x the largest real vocabulary
    "vocab_size": (4_194_304, "no real model has a vocabulary that large"),
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts", "n_shared_experts"), _EXPERTS),
    **dict.fromkeys(("num_experts_per_tok", "experts_per_token", "num_experts_per_token"), _EXPERTS),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "seq_length", "num_position_embeddings"), _TOKENS),
    **dict.fromkeys(("sliding_window", "attention_chunk_size", "mm_tokens_per_image"), _TOKENS),
    "image_size": (1_048_576, "no real vision tower takes images that large"),  # Llama 4: 336
    **dict.fromkeys(("patch_size", "in_channels", "num_channels", "temporal_patch_size"), _SMALL),
    **dict.fromkeys(("spatial_merge_size", "linear_conv_kernel_dim", "sliding_window_pattern"), _SMALL),
    **dict.fromkeys(("full_attention_interval", "decoder_sparse_step", "moe_layer_freq"), _SMALL),
    **dict.fromkeys(("interleave_moe_layer_step", "num_ln_in_parallel_attn"), _SMALL),
}
#: a field read as an integer that the table does not name
_OTHER_BOUND = (1_048_576, "no real model has a value that large")


def _check_bound(model_type: str, key: str, v: int) -> int:
    limit, why = _CONFIG_BOUNDS.get(key, _OTHER_BOUND)
    if v > limit:
        raise ConfigError(f"{model_type}: field '{key}' = {v} is above {limit:,} ({why})")
    return v


def _lenient_int(c: _Cfg, key: str) -> Any:
    """A field the normaliser reads leniently (a non-integer means "not set"), bounded when it is an integer."""
    v = c.d.get(key)
    if isinstance(v, int) and not isinstance(v, bool):
        _check_bound(c.model_type, key, v)
    return v


def _finite(value: Any, where: str) -> None:
    """Refuse NaN and infinities anywhere in a config (a GGUF's float metadata, a dict built by hand): they
    would turn into exceptions or nonsense far from the field that holds them."""
    stack = [(value, where)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            raise ConfigError(f"config field {path} = {node} is not a finite number")
        if isinstance(node, Mapping) and path.count(".") < 8:
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in node.items())
        elif isinstance(node, list | tuple) and path.count(".") < 8:
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))


class _Cfg:
    """Typed access to a config dict that names the field and the model type in every error."""

    def __init__(self, data: Mapping[str, Any], model_type: str) -> None:
        self.d = data
        self.model_type = model_type

    def has(self, key: str) -> bool:
        return self.d.get(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        v = self.d.get(key)
        return default if v is None else v

    def int(self, *keys: str, default: int | None = None, min_value: int = 1) -> int:
        for key in keys:
            v = self.d.get(key)
            if v is None:
                continue
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or (isinstance(v, float) and not math.isfinite(v))  # int(nan) / int(inf) raise
                or int(v) != v
            ):
                raise ConfigError(f"{self.model_type}: field '{key}' must be an integer, got {v!r}")
            if int(v) < min_value:
                raise ConfigError(f"{self.model_type}: field '{key}' must be >= {min_value}, got {v}")
            return _check_bound(self.model_type, key, int(v))
        if default is not None:
            return default
        names = "' or '".join(keys)
        raise ConfigError(f"{self.model_type}: config is missing the field '{names}'")

    def bool(self, key: str, default: bool) -> bool:
        v = self.d.get(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise ConfigError(f"{self.model_type}: field '{key}' must be true or false, got {v!r}")
        return v


def _dtype(cfg: Mapping[str, Any], outer: Mapping[str, Any]) -> str:
    for src in (cfg, outer):
        for key in ("dtype", "torch_dtype"):
            v = src.get(key)
            if isinstance(v, str):
                name = v.removeprefix("torch.").lower()
                if name in _DTYPE_ALIASES:
                    return _DTYPE_ALIASES[name]
    return "bf16"


def _text_and_outer(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    if not isinstance(config, Mapping):
        raise ConfigError("config must be a JSON object")
    outer = dict(config)
    text = outer.get("text_config")
    if isinstance(text, Mapping):
        merged = dict(text)
        for key in ("tie_word_embeddings", "quantization_config", "torch_dtype", "dtype"):
            if key not in merged and key in outer:
                merged[key] = outer[key]
        return merged, outer
    return outer, outer


def _model_type(text: Mapping[str, Any], outer: Mapping[str, Any]) -> str:
    mt = outer.get("model_type") or text.get("model_type")
    if not isinstance(mt, str) or not mt:
        archs = outer.get("architectures")
        if isinstance(archs, list) and archs and isinstance(archs[0], str):
            return archs[0]
        raise ConfigError("config has no 'model_type' (and no 'architectures') field")
    return mt


def _heads(c: _Cfg, hidden: int, *, head_keys: tuple[str, ...] = ("num_attention_heads",)) -> tuple[int, int, int]:
    n_heads = c.int(*head_keys)
    n_kv = c.int("num_key_value_heads", "num_kv_heads", default=n_heads)
    if n_heads % n_kv:
        raise ConfigError(
            f"{c.model_type}: num_attention_heads ({n_heads}) is not a multiple of num_key_value_heads ({n_kv})"
        )
    if c.has("head_dim"):
        head_dim = c.int("head_dim")
    else:
        if hidden % n_heads:
            raise ConfigError(
                f"{c.model_type}: hidden_size ({hidden}) is not divisible by num_attention_heads ({n_heads}) "
                "and no 'head_dim' is given"
            )
        head_dim = hidden // n_heads
    return n_heads, n_kv, head_dim


def _layer_types(c: _Cfg, n_layers: int) -> list[str] | None:
    lt = c.get("layer_types")
    if lt is None:
        return None
    if not isinstance(lt, list) or not all(isinstance(x, str) for x in lt):
        raise ConfigError(f"{c.model_type}: field 'layer_types' must be a list of strings")
    if len(lt) != n_layers:
        raise ConfigError(f"{c.model_type}: 'layer_types' has {len(lt)} entries but num_hidden_layers is {n_layers}")
    return list(lt)


def _kind_from_type(c: _Cfg, name: str) -> AttentionKind:
    table = {
        "full_attention": AttentionKind.FULL,
        "attention": AttentionKind.FULL,
        "global": AttentionKind.FULL,
        "sliding_attention": AttentionKind.SLIDING,
        "local": AttentionKind.SLIDING,
        "chunked_attention": AttentionKind.CHUNKED,
        "linear_attention": AttentionKind.LINEAR,
    }
    if name not in table:
        raise ConfigError(f"{c.model_type}: unknown entry '{name}' in 'layer_types'")
    return table[name]


# ----------------------------------------------------------------------------------------------
# the normaliser


def normalize(config: Mapping[str, Any]) -> Architecture:
    """Read a Hugging Face ``config.json`` dict into an :class:`Architecture`.

    Raises :class:`ConfigError` naming the model type and the field when something needed is missing or
    impossible. Unknown model types with the standard decoder fields go through the generic path and carry
    a warning.
    """
    text, outer = _text_and_outer(config)
    _finite(outer, "")
    model_type = _model_type(text, outer)
    mt = model_type.lower()
    base = mt.removesuffix("_text")
    builders = {
        "gpt_bigcode": _gpt_bigcode,
        "gpt_neox": _gpt_neox,
        "falcon": _falcon,
        "bloom": _bloom,
        "phi": _phi,
        "deepseek_v3": _deepseek,
        "deepseek_v2": _deepseek,
        "kimi_k2": _deepseek,
        "gpt_oss": _gpt_oss,
        "llama4": _llama4,
        "qwen3_next": _qwen_hybrid,
        "qwen3_5": _qwen_hybrid,
        "qwen3_5_moe": _qwen_hybrid,
        "gemma": _gemma,
        "gemma2": _gemma,
        "gemma3": _gemma,
        "qwen": _qwen_v1,
    }
    c = _Cfg(text, model_type)
    if base in builders:
        arch = builders[base](c, outer, base)
    elif base in _LLAMA_LIKE:
        arch = _llama_like(c, outer, base)
    else:
        try:
            arch = _llama_like(c, outer, base)
        except ConfigError as err:
            raise ConfigError(
                f"unsupported model_type '{model_type}': not a known architecture, and the generic decoder "
                f"path needs hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and "
                f"vocab_size ({err})"
            ) from err
        arch = arch.model_copy(
            update={
                "warnings": (
                    *arch.warnings,
                    f"model_type '{model_type}' is not one vramdesk knows: estimated as a generic Llama-style "
                    "decoder (RMSNorm, gated MLP, rotary); check the parameter total against the checkpoint",
                )
            }
        )
    return arch


def _common(c: _Cfg, outer: Mapping[str, Any]) -> dict[str, Any]:
    qc = c.get("quantization_config") or outer.get("quantization_config") or outer.get("compression_config")
    if qc is not None and not isinstance(qc, Mapping):
        raise ConfigError(f"{c.model_type}: field 'quantization_config' must be an object")
    maxpos = (
        _lenient_int(c, "max_position_embeddings") or _lenient_int(c, "n_positions") or _lenient_int(c, "seq_length")
    )
    return {
        "dtype": _dtype(c.d, outer),
        "quantization_config": dict(qc) if qc is not None else None,
        "max_position": int(maxpos) if isinstance(maxpos, int) and maxpos > 0 else None,
    }


def _moe_llama_like(c: _Cfg, base: str, hidden: int, n_layers: int) -> list[MoeSpec | None]:
    """Expert layout of Mixtral / Qwen2-MoE / Qwen3-MoE style configs."""
    n_exp = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts")
    if not n_exp:
        return [None] * n_layers
    n_exp = c.int("num_local_experts", "num_experts", "n_routed_experts")
    top_k = c.int("num_experts_per_tok", "experts_per_token", "num_experts_per_token")
    if top_k > n_exp:
        raise ConfigError(f"{c.model_type}: num_experts_per_tok ({top_k}) exceeds the number of experts ({n_exp})")
    inter = c.int("moe_intermediate_size", "intermediate_size")
    shared = c.int("shared_expert_intermediate_size", default=0, min_value=0)
    step = c.int("decoder_sparse_step", default=1)
    mlp_only = c.get("mlp_only_layers", [])
    if not isinstance(mlp_only, list):
        raise ConfigError(f"{c.model_type}: field 'mlp_only_layers' must be a list")
    out: list[MoeSpec | None] = []
    for i in range(n_layers):
        sparse = i not in mlp_only and (i + 1) % step == 0
        out.append(
            MoeSpec(
                num_experts=n_exp,
                top_k=top_k,
                expert_intermediate=inter,
                shared_intermediate=shared,
                shared_gate=shared > 0,
            )
            if sparse
            else None
        )
    return out


def _llama_like(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    vocab = c.int("vocab_size")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    inter = c.int("intermediate_size", default=0, min_value=0)
    moes = _moe_llama_like(c, base, hidden, n_layers)
    if inter == 0 and any(m is None for m in moes):
        raise ConfigError(f"{c.model_type}: config is missing the field 'intermediate_size'")
    sources: dict[str, str] = {}
    # sliding windows: Mistral (all layers when set), Qwen2 (only when use_sliding_window, and only layers
    # from max_window_layers on), Phi-3 (all layers), layer_types when given
    window = _lenient_int(c, "sliding_window")
    kinds = [AttentionKind.FULL] * n_layers
    types = _layer_types(c, n_layers)
    if types is not None:
        kinds = [_kind_from_type(c, t) for t in types]
        sources["attention kinds"] = "layer_types"
    elif isinstance(window, int) and window > 0:
        use = c.bool("use_sliding_window", default=base not in {"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"})
        if use:
            first = c.int("max_window_layers", default=0, min_value=0) if base.startswith("qwen") else 0
            kinds = [AttentionKind.SLIDING if i >= first else AttentionKind.FULL for i in range(n_layers)]
            sources["attention kinds"] = "sliding_window (+ use_sliding_window / max_window_layers)"
        else:
            sources["attention kinds"] = "use_sliding_window = false: sliding_window ignored"
    has_window = any(k == AttentionKind.SLIDING for k in kinds)
    if has_window and not (isinstance(window, int) and window > 0):
        raise ConfigError(f"{c.model_type}: layer_types has sliding layers but 'sliding_window' is missing")
    layers = tuple(
        LayerSpec(
            index=i,
            attention=kinds[i],
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            window=int(window) if kinds[i] == AttentionKind.SLIDING else None,
            mlp="moe" if moes[i] is not None else "dense",
            intermediate=inter if moes[i] is None else 0,
            moe=moes[i],
        )
        for i in range(n_layers)
    )
    qk_norm = "head" if base in {"qwen3", "qwen3_moe"} else "full" if base == "olmo2" else "none"
    attention_bias = c.bool("attention_bias", default=base in {"qwen2", "qwen2_moe"})
    return Architecture(
        model_type=c.model_type,
        family="llama",
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=False),
        qkv_bias=attention_bias,
        o_bias=attention_bias and base not in {"qwen2", "qwen2_moe"},
        qk_norm=qk_norm,
        mlp_bias=c.bool("mlp_bias", default=False),
        sources=sources,
        **_common(c, outer),
    )


def _gemma(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    vocab = c.int("vocab_size")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    inter = c.int("intermediate_size")
    types = _layer_types(c, n_layers)
    window = _lenient_int(c, "sliding_window")
    if types is not None:
        kinds = [_kind_from_type(c, t) for t in types]
        src = "layer_types"
    elif base == "gemma2":
        kinds = [AttentionKind.SLIDING if i % 2 == 0 else AttentionKind.FULL for i in range(n_layers)]
        src = "Gemma 2: even layers sliding, odd layers global"
    elif base == "gemma3":
        pattern = c.int("sliding_window_pattern", default=6)
        kinds = [AttentionKind.FULL if (i + 1) % pattern == 0 else AttentionKind.SLIDING for i in range(n_layers)]
        src = f"sliding_window_pattern {pattern}: every {pattern}th layer global"
    else:
        kinds = [AttentionKind.FULL] * n_layers
        src = "Gemma 1: all layers global"
    if any(k == AttentionKind.SLIDING for k in kinds) and not (isinstance(window, int) and window > 0):
        raise ConfigError(f"{c.model_type}: config is missing the field 'sliding_window'")
    layers = tuple(
        LayerSpec(
            index=i,
            attention=kinds[i],
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            window=int(window) if kinds[i] == AttentionKind.SLIDING else None,
            intermediate=inter,
        )
        for i in range(n_layers)
    )
    vision = None
    vc = outer.get("vision_config")
    if isinstance(vc, Mapping) and outer is not c.d:
        v = _Cfg(vc, f"{c.model_type} vision_config")
        vision = VisionSpec(
            kind="siglip",
            depth=v.int("num_hidden_layers"),
            hidden=v.int("hidden_size"),
            intermediate=v.int("intermediate_size"),
            num_heads=v.int("num_attention_heads"),
            patch_size=v.int("patch_size"),
            details={
                "image_size": v.int("image_size", default=896),
                "mm_tokens_per_image": _Cfg(outer, c.model_type).int("mm_tokens_per_image", default=256, min_value=0),
                "text_hidden": hidden,
            },
        )
    return Architecture(
        model_type=c.model_type,
        family="gemma",
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=True),
        qkv_bias=c.bool("attention_bias", default=False),
        o_bias=c.bool("attention_bias", default=False),
        qk_norm="head" if base == "gemma3" else "none",
        norms_per_layer=2 if base == "gemma" else 4,
        attn_softcap=bool(c.get("attn_logit_softcapping")),
        logit_softcap=bool(c.get("final_logit_softcapping")),
        vision=vision,
        sources={"attention kinds": src},
        **_common(c, outer),
    )


def _gpt_oss(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    vocab = c.int("vocab_size")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    n_exp = c.int("num_local_experts", "num_experts")
    top_k = c.int("num_experts_per_tok", "experts_per_token")
    inter = c.int("intermediate_size")
    window = c.int("sliding_window")
    types = _layer_types(c, n_layers)
    kinds = (
        [_kind_from_type(c, t) for t in types]
        if types is not None
        else [AttentionKind.SLIDING if i % 2 == 0 else AttentionKind.FULL for i in range(n_layers)]
    )
    moe = MoeSpec(num_experts=n_exp, top_k=top_k, expert_intermediate=inter, router_bias=True, expert_bias=True)
    layers = tuple(
        LayerSpec(
            index=i,
            attention=kinds[i],
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            window=window if kinds[i] == AttentionKind.SLIDING else None,
            mlp="moe",
            moe=moe,
        )
        for i in range(n_layers)
    )
    return Architecture(
        model_type=c.model_type,
        family="gpt_oss",
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=False),
        qkv_bias=c.bool("attention_bias", default=True),
        o_bias=c.bool("attention_bias", default=True),
        attention_sinks=True,
        sources={"attention kinds": "layer_types" if types else "alternating sliding/full from layer 0"},
        **_common(c, outer),
    )


def _llama4(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    vocab = c.int("vocab_size")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    n_exp = c.int("num_local_experts")
    top_k = c.int("num_experts_per_tok")
    inter = c.int("intermediate_size")
    inter_mlp = c.int("intermediate_size_mlp", default=inter)
    step = c.int("interleave_moe_layer_step", default=1)
    chunk = _lenient_int(c, "attention_chunk_size")
    no_rope = c.get("no_rope_layers") or []
    if not isinstance(no_rope, list):
        raise ConfigError(f"{c.model_type}: field 'no_rope_layers' must be a list")
    if not no_rope:
        # transformers' default: every 4th layer is a global NoPE layer, the others use RoPE + chunked attention
        no_rope = [int((i + 1) % 4 != 0) for i in range(n_layers)]
    if len(no_rope) != n_layers:
        raise ConfigError(f"{c.model_type}: 'no_rope_layers' has {len(no_rope)} entries, expected {n_layers}")
    moe = MoeSpec(num_experts=n_exp, top_k=top_k, expert_intermediate=inter, shared_intermediate=inter)
    layers = []
    for i in range(n_layers):
        use_rope = bool(no_rope[i])
        kind = AttentionKind.CHUNKED if (use_rope and isinstance(chunk, int) and chunk > 0) else AttentionKind.FULL
        is_moe = (i + 1) % step == 0
        layers.append(
            LayerSpec(
                index=i,
                attention=kind,
                n_heads=n_heads,
                n_kv_heads=n_kv,
                head_dim=head_dim,
                v_head_dim=head_dim,
                window=int(chunk) if kind == AttentionKind.CHUNKED else None,
                mlp="moe" if is_moe else "dense",
                intermediate=0 if is_moe else inter_mlp,
                moe=moe if is_moe else None,
            )
        )
    vision = None
    vc = outer.get("vision_config")
    if isinstance(vc, Mapping) and outer is not c.d:
        v = _Cfg(vc, "llama4 vision_config")
        vision = VisionSpec(
            kind="llama4",
            depth=v.int("num_hidden_layers"),
            hidden=v.int("hidden_size"),
            intermediate=v.int("intermediate_size"),
            num_heads=v.int("num_attention_heads"),
            patch_size=v.int("patch_size"),
            details={
                "image_size": v.int("image_size"),
                "num_channels": v.int("num_channels", default=3),
                "projector_input_dim": v.int("projector_input_dim"),
                "projector_output_dim": v.int("projector_output_dim"),
                "vision_output_dim": v.int("vision_output_dim"),
                "text_hidden": hidden,
            },
        )
    return Architecture(
        model_type=c.model_type,
        family="llama4",
        hidden=hidden,
        vocab=vocab,
        layers=tuple(layers),
        tie_embeddings=c.bool("tie_word_embeddings", default=False),
        qkv_bias=c.bool("attention_bias", default=False),
        o_bias=c.bool("attention_bias", default=False),
        vision=vision,
        sources={"attention kinds": "no_rope_layers (RoPE layers use attention_chunk_size)"},
        **_common(c, outer),
    )


def _deepseek(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    vocab = c.int("vocab_size")
    n_heads = c.int("num_attention_heads")
    q_lora = c.get("q_lora_rank")
    mla = MlaSpec(
        q_lora_rank=c.int("q_lora_rank") if q_lora is not None else None,
        kv_lora_rank=c.int("kv_lora_rank"),
        qk_nope_head_dim=c.int("qk_nope_head_dim"),
        qk_rope_head_dim=c.int("qk_rope_head_dim"),
        v_head_dim=c.int("v_head_dim"),
    )
    inter = c.int("intermediate_size")
    n_exp = c.int("n_routed_experts", default=0, min_value=0)
    first_dense = c.int("first_k_dense_replace", default=0, min_value=0)
    freq = c.int("moe_layer_freq", default=1)
    moe = None
    if n_exp:
        moe = MoeSpec(
            num_experts=n_exp,
            top_k=c.int("num_experts_per_tok"),
            expert_intermediate=c.int("moe_intermediate_size"),
            shared_intermediate=c.int("n_shared_experts", default=0, min_value=0) * c.int("moe_intermediate_size"),
            router_correction_bias=c.get("topk_method") == "noaux_tc",
        )
    layers = []
    for i in range(n_layers):
        is_moe = moe is not None and i >= first_dense and i % freq == 0
        layers.append(
            LayerSpec(
                index=i,
                attention=AttentionKind.MLA,
                n_heads=n_heads,
                n_kv_heads=n_heads,
                head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim,
                v_head_dim=mla.v_head_dim,
                mla=mla,
                mlp="moe" if is_moe else "dense",
                intermediate=0 if is_moe else inter,
                moe=moe if is_moe else None,
            )
        )
    mtp = c.int("num_nextn_predict_layers", default=0, min_value=0)
    return Architecture(
        model_type=c.model_type,
        family="deepseek_v3",
        hidden=hidden,
        vocab=vocab,
        layers=tuple(layers),
        tie_embeddings=c.bool("tie_word_embeddings", default=False),
        mtp_layers=mtp,
        mtp_own_embeddings=True,
        sources={"attention kinds": "kv_lora_rank / qk_rope_head_dim (MLA)", "mtp": "num_nextn_predict_layers"},
        **_common(c, outer),
    )


def _qwen_hybrid(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    vocab = c.int("vocab_size")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    types = _layer_types(c, n_layers)
    if types is not None:
        kinds = [_kind_from_type(c, t) for t in types]
        src = "layer_types"
    else:
        interval = c.int("full_attention_interval")
        kinds = [AttentionKind.FULL if (i + 1) % interval == 0 else AttentionKind.LINEAR for i in range(n_layers)]
        src = f"full_attention_interval {interval}"
    state_dtype = _DTYPE_ALIASES.get(str(c.get("mamba_ssm_dtype", "float32")).lower(), "fp32")
    lin = LinearAttnSpec(
        num_k_heads=c.int("linear_num_key_heads"),
        num_v_heads=c.int("linear_num_value_heads"),
        k_head_dim=c.int("linear_key_head_dim"),
        v_head_dim=c.int("linear_value_head_dim"),
        conv_kernel=c.int("linear_conv_kernel_dim"),
        state_dtype=state_dtype,
    )
    if lin.num_v_heads % lin.num_k_heads:
        raise ConfigError(
            f"{c.model_type}: linear_num_value_heads ({lin.num_v_heads}) is not a multiple of "
            f"linear_num_key_heads ({lin.num_k_heads})"
        )
    moes = _moe_llama_like(c, base, hidden, n_layers)
    inter = c.int("intermediate_size", default=0, min_value=0)
    gate = base == "qwen3_next" or c.bool("attn_output_gate", default=True)
    layers = tuple(
        LayerSpec(
            index=i,
            attention=kinds[i],
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            linear=lin if kinds[i] == AttentionKind.LINEAR else None,
            attn_output_gate=gate,
            mlp="moe" if moes[i] is not None else "dense",
            intermediate=inter if moes[i] is None else 0,
            moe=moes[i],
        )
        for i in range(n_layers)
    )
    # Qwen3-Next checkpoints carry one MTP layer although their config has no field for it
    mtp = c.int(
        "mtp_num_hidden_layers", "num_nextn_predict_layers", default=1 if base == "qwen3_next" else 0, min_value=0
    )
    vision = None
    vc = outer.get("vision_config")
    if isinstance(vc, Mapping) and outer is not c.d:
        v = _Cfg(vc, f"{c.model_type} vision_config")
        deepstack = v.get("deepstack_visual_indexes", [])
        vision = VisionSpec(
            kind="qwen3_vl",
            depth=v.int("depth"),
            hidden=v.int("hidden_size"),
            intermediate=v.int("intermediate_size"),
            num_heads=v.int("num_heads"),
            patch_size=v.int("patch_size"),
            details={
                "in_channels": v.int("in_channels", default=3),
                "temporal_patch_size": v.int("temporal_patch_size", default=2),
                "spatial_merge_size": v.int("spatial_merge_size", default=2),
                "num_position_embeddings": v.int("num_position_embeddings", default=0, min_value=0),
                "out_hidden_size": v.int("out_hidden_size", default=hidden),
                "deepstack": len(deepstack) if isinstance(deepstack, list) else 0,
            },
        )
    return Architecture(
        model_type=c.model_type,
        family="qwen_hybrid",
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=False),
        qkv_bias=c.bool("attention_bias", default=False),
        o_bias=c.bool("attention_bias", default=False),
        qk_norm="head",
        mtp_layers=mtp,
        vision=vision,
        sources={
            "attention kinds": src,
            "mtp": "mtp_num_hidden_layers" if c.has("mtp_num_hidden_layers") else "Qwen3-Next checkpoints: 1",
        },
        **_common(c, outer),
    )


def _simple_stack(
    c: _Cfg,
    outer: Mapping[str, Any],
    *,
    family: str,
    hidden: int,
    n_layers: int,
    vocab: int,
    n_heads: int,
    n_kv: int,
    head_dim: int,
    inter: int,
    **kw: Any,
) -> Architecture:
    layers = tuple(
        LayerSpec(
            index=i,
            attention=AttentionKind.FULL,
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            intermediate=inter,
        )
        for i in range(n_layers)
    )
    return Architecture(
        model_type=c.model_type,
        family=family,
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        **kw,
        **_common(c, outer),
    )


def _qwen_v1(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    """Qwen (v1, 2023; remote code ``QWenLMHeadModel``): fused c_attn with a bias, w1/w2/c_proj MLP whose
    config ``intermediate_size`` is twice the width of each branch, no other biases (``no_bias``), RMSNorm;
    the dtype comes from the bf16/fp16/fp32 flags (all false: bf16, as the checkpoints are stored)."""
    hidden = c.int("hidden_size")
    n_heads = c.int("num_attention_heads")
    head_dim = c.int("kv_channels", default=hidden // n_heads)
    inter = c.int("intermediate_size")
    if inter % 2:
        raise ConfigError(f"{c.model_type}: intermediate_size ({inter}) must be even (two MLP branches of half width)")
    biased = not c.bool("no_bias", default=True)
    arch = _simple_stack(
        c,
        outer,
        family="qwen",
        hidden=hidden,
        n_layers=c.int("num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_heads,
        head_dim=head_dim,
        inter=inter // 2,
        tie_embeddings=c.bool("tie_word_embeddings", default=False),
        qkv_bias=True,
        o_bias=biased,
        mlp_bias=biased,
        logits_fp32=False,
        sources={"MLP width": "intermediate_size / 2 (w1 and w2 each)", "loss": "modeling_qwen.py: 16-bit logits"},
    )
    flags = [name for name in ("fp32", "fp16", "bf16") if c.get(name) is True]
    return arch.model_copy(update={"dtype": flags[0]}) if flags else arch


def _gpt_bigcode(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("n_embd", "hidden_size")
    n_heads = c.int("n_head", "num_attention_heads")
    if hidden % n_heads:
        raise ConfigError(f"{c.model_type}: n_embd ({hidden}) is not divisible by n_head ({n_heads})")
    mq = c.bool("multi_query", default=True)
    return _simple_stack(
        c,
        outer,
        family="gpt_bigcode",
        hidden=hidden,
        n_layers=c.int("n_layer", "num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=1 if mq else n_heads,
        head_dim=hidden // n_heads,
        inter=c.int("n_inner", default=4 * hidden),
        tie_embeddings=c.bool("tie_word_embeddings", default=True),
        qkv_bias=True,
        o_bias=True,
        mlp_gated=False,
        mlp_bias=True,
        norm="layer",
        learned_positions=c.int("n_positions", "max_position_embeddings"),
    )


def _gpt_neox(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size")
    n_heads, _, head_dim = _heads(c, hidden)
    return _simple_stack(
        c,
        outer,
        family="gpt_neox",
        hidden=hidden,
        n_layers=c.int("num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_heads,
        head_dim=head_dim,
        inter=c.int("intermediate_size", default=4 * hidden),
        tie_embeddings=c.bool("tie_word_embeddings", default=False),
        qkv_bias=c.bool("attention_bias", default=True),
        o_bias=c.bool("attention_bias", default=True),
        mlp_gated=False,
        mlp_bias=True,
        norm="layer",
    )


def _falcon(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size")
    n_heads = c.int("num_attention_heads", "n_head")
    if hidden % n_heads:
        raise ConfigError(f"{c.model_type}: hidden_size ({hidden}) is not divisible by num_attention_heads ({n_heads})")
    new_arch = c.bool("new_decoder_architecture", default=False)
    if new_arch:
        n_kv = c.int("num_kv_heads", "n_head_kv", default=n_heads)
    elif c.bool("multi_query", default=True):
        n_kv = 1
    else:
        n_kv = n_heads
    parallel = c.bool("parallel_attn", default=True)
    norms = 2 if new_arch and c.int("num_ln_in_parallel_attn", default=2) == 2 else (1 if parallel else 2)
    bias = c.bool("bias", default=False)
    return _simple_stack(
        c,
        outer,
        family="falcon",
        hidden=hidden,
        n_layers=c.int("num_hidden_layers", "n_layer"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_kv,
        head_dim=hidden // n_heads,
        inter=c.int("ffn_hidden_size", default=4 * hidden),
        tie_embeddings=c.bool("tie_word_embeddings", default=True),
        qkv_bias=bias,
        o_bias=bias,
        mlp_gated=False,
        mlp_bias=bias,
        norm="layer",
        norms_per_layer=norms,
    )


def _bloom(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size", "n_embed")
    n_heads = c.int("n_head", "num_attention_heads")
    if hidden % n_heads:
        raise ConfigError(f"{c.model_type}: hidden_size ({hidden}) is not divisible by n_head ({n_heads})")
    return _simple_stack(
        c,
        outer,
        family="bloom",
        hidden=hidden,
        n_layers=c.int("n_layer", "num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_heads,
        head_dim=hidden // n_heads,
        inter=4 * hidden,
        tie_embeddings=c.bool("tie_word_embeddings", default=True),
        qkv_bias=True,
        o_bias=True,
        mlp_gated=False,
        mlp_bias=True,
        norm="layer",
        embedding_norm=True,
    )


def _phi(c: _Cfg, outer: Mapping[str, Any], base: str) -> Architecture:
    hidden = c.int("hidden_size")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    return _simple_stack(
        c,
        outer,
        family="phi",
        hidden=hidden,
        n_layers=c.int("num_hidden_layers"),
        vocab=c.int("vocab_size"),
        n_heads=n_heads,
        n_kv=n_kv,
        head_dim=head_dim,
        inter=c.int("intermediate_size"),
        tie_embeddings=c.bool("tie_word_embeddings", default=False),
        qkv_bias=True,
        o_bias=True,
        mlp_gated=False,
        mlp_bias=True,
        norm="layer",
        norms_per_layer=1,
        lm_head_bias=True,
        qk_norm="head_ln" if c.bool("qk_layernorm", default=False) else "none",
    )
