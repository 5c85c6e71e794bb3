"""config.json fields read safely: the typed ``_Cfg`` reader, the physical bounds on every number, and the
steps every family's reader shares (dtype, nested ``text_config``, heads, ``layer_types``, the common fields).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..architecture import AttentionKind, ConfigError
from ..families import Family
from ..messages import Message, Text, text

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

#: Physical bounds on config.json numbers: (largest accepted, why). Each is far above every real model (the
#: largest value in the bundled catalog is in the comment) and far below what makes an estimate absurd or slow:
#: ``num_hidden_layers: 2147483648`` built a layer table until the process was killed at 22 GB.
_LARGE_VALUE = text("config.bound.value", "no real model has a value that large")
_LAYERS = (1_024, text("config.bound.layers", "no real model has that many layers"))  # Llama 3.1 405B: 126
_WIDTH = (131_072, text("config.bound.width", "no real model is that wide"))  # hidden sizes; Llama 3.1 405B: 16,384
_FFN = (1_048_576, text("config.bound.mlp", "no real model has an MLP that wide"))  # Llama 3.1 405B: 53,248
_HEADS = (8_192, text("config.bound.heads", "no real model has that many heads"))  # DeepSeek-R1, Falcon-40B: 128
_HEAD_DIM = (8_192, text("config.bound.head_dim", "no real model has heads that wide"))  # Gemma, Qwen3.5: 256
#: MLA ranks; DeepSeek-R1 q_lora_rank: 1,536
_RANK = (65_536, text("config.bound.rank", "no real model has a rank that large"))
_EXPERTS = (16_384, text("config.bound.experts", "no real model has that many experts"))  # Qwen3.5-397B: 512
#: 134M tokens; Llama 4 Scout: 10,485,760
_TOKENS = (2**27, text("config.bound.context", "no real model has a context that long"))
_SMALL = (1_024, _LARGE_VALUE)  # patterns, steps, kernels, channels: <= 6
_CONFIG_BOUNDS: dict[str, tuple[int, Text]] = {
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
    "vocab_size": (4_194_304, text("config.bound.vocabulary", "no real model has a vocabulary that large")),
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts", "n_shared_experts"), _EXPERTS),
    **dict.fromkeys(("num_experts_per_tok", "experts_per_token", "num_experts_per_token"), _EXPERTS),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "seq_length", "num_position_embeddings"), _TOKENS),
    **dict.fromkeys(("sliding_window", "attention_chunk_size", "mm_tokens_per_image"), _TOKENS),
    # Llama 4: 336
    "image_size": (1_048_576, text("config.bound.image", "no real vision tower takes images that large")),
    **dict.fromkeys(("patch_size", "in_channels", "num_channels", "temporal_patch_size"), _SMALL),
    **dict.fromkeys(("spatial_merge_size", "linear_conv_kernel_dim", "sliding_window_pattern"), _SMALL),
    **dict.fromkeys(("full_attention_interval", "decoder_sparse_step", "moe_layer_freq"), _SMALL),
    **dict.fromkeys(("interleave_moe_layer_step", "num_ln_in_parallel_attn"), _SMALL),
}
#: a field read as an integer that the table does not name
_OTHER_BOUND = (1_048_576, _LARGE_VALUE)

ABOVE_BOUND = Message("config.above_bound", "{model_type}: field '{key}' = {value} is above {limit:,} ({why})")
NOT_FINITE = Message("config.not_finite", "config field {path} = {value} is not a finite number")
NOT_INTEGER = Message("config.not_integer", "{model_type}: field '{key}' must be an integer, got {value!r}")
BELOW_MIN = Message("config.below_minimum", "{model_type}: field '{key}' must be >= {min_value}, got {value}")
#: one field, or any of several ("'num_attention_heads' or 'n_head'")
MISSING_FIELD = Message("config.missing_field", "{model_type}: config is missing the field '{names}'")
FIELD_OR = Message("config.missing_field.or", "{first}' or '{rest}")
NOT_BOOL = Message("config.not_bool", "{model_type}: field '{key}' must be true or false, got {value!r}")
NOT_LIST = Message("config.not_list", "{model_type}: field '{key}' must be a list")
NOT_OBJECT = Message("config.not_object", "config must be a JSON object")
NO_MODEL_TYPE = Message("config.no_model_type", "config has no 'model_type' (and no 'architectures') field")
HEADS_NOT_MULTIPLE = Message(
    "config.heads_not_multiple",
    "{model_type}: num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv_heads})",
)
#: ``hidden_size (4096) is not divisible by n_head (48)``: the fields as the config names them
NOT_DIVISIBLE = Message("config.not_divisible", "{model_type}: {field} ({value}) is not divisible by {by} ({divisor})")
NO_HEAD_DIM = Message(
    "config.not_divisible.no_head_dim",
    "{model_type}: hidden_size ({hidden}) is not divisible by num_attention_heads ({heads}) and no 'head_dim' is given",
)
LAYER_TYPES_NOT_STRINGS = Message(
    "config.layer_types.not_strings", "{model_type}: field 'layer_types' must be a list of strings"
)
LAYER_TYPES_COUNT = Message(
    "config.layer_types.count", "{model_type}: 'layer_types' has {entries} entries but num_hidden_layers is {layers}"
)
LAYER_TYPES_UNKNOWN = Message("config.layer_types.unknown", "{model_type}: unknown entry '{name}' in 'layer_types'")
QUANT_NOT_OBJECT = Message(
    "config.quantization_config.not_object", "{model_type}: field 'quantization_config' must be an object"
)


def _either(keys: tuple[str, ...]) -> str:
    """``'a' or 'b'`` inside the quotes of :data:`MISSING_FIELD` (one key: the key itself)."""
    if len(keys) == 1:
        return keys[0]
    return FIELD_OR(first=keys[0], rest=_either(keys[1:]))


def _check_bound(model_type: str, key: str, v: int) -> int:
    """The integer ``v`` of ``key``, refused above its physical bound (:data:`_CONFIG_BOUNDS`)."""
    limit, why = _CONFIG_BOUNDS.get(key, _OTHER_BOUND)
    if v > limit:
        raise ConfigError(ABOVE_BOUND(model_type=model_type, key=key, value=v, limit=limit, why=why))
    return v


def _lenient_int(c: _Cfg, key: str) -> Any:
    """A field the normaliser reads leniently (a non-integer means "not set"), bounded when it is an integer."""
    v = c.d.get(key)
    if isinstance(v, int) and not isinstance(v, bool):
        _check_bound(c.model_type, key, v)
    return v


#: fields whose published value is an unbounded limit (+inf): Mamba-2's dt clamp, ``time_step_limit``, defaults
#: to (0.0, inf) in transformers' Mamba2Config and NemotronHConfig, and saved configs write it as ``Infinity``;
#: it sizes nothing
_UNBOUNDED_LIMITS = frozenset({"time_step_limit"})


def _finite(value: Any, where: str) -> None:
    """Refuse NaN and infinities anywhere in a config (a GGUF's float metadata, a dict built by hand): they
    would turn into exceptions or nonsense far from the field that holds them. A +inf limit in one of
    :data:`_UNBOUNDED_LIMITS` is what real configs hold, and passes."""
    stack = [(value, where)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            field = path.rsplit(".", 1)[-1].split("[", 1)[0]
            if not (node == math.inf and field in _UNBOUNDED_LIMITS):
                raise ConfigError(NOT_FINITE(path=path, value=node))
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
                raise ConfigError(NOT_INTEGER(model_type=self.model_type, key=key, value=v))
            if int(v) < min_value:
                raise ConfigError(BELOW_MIN(model_type=self.model_type, key=key, min_value=min_value, value=v))
            return _check_bound(self.model_type, key, int(v))
        if default is not None:
            return default
        raise ConfigError(MISSING_FIELD(model_type=self.model_type, names=_either(keys)))

    def bool(self, key: str, default: bool) -> bool:
        v = self.d.get(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise ConfigError(NOT_BOOL(model_type=self.model_type, key=key, value=v))
        return v


def _dtype(cfg: Mapping[str, Any], outer: Mapping[str, Any]) -> str:
    """The checkpoint dtype (``dtype`` or ``torch_dtype``, in the text config or the outer one); bf16 if neither."""
    for src in (cfg, outer):
        for key in ("dtype", "torch_dtype"):
            v = src.get(key)
            if isinstance(v, str):
                name = v.removeprefix("torch.").lower()
                if name in _DTYPE_ALIASES:
                    return _DTYPE_ALIASES[name]
    return "bf16"


#: what a multimodal config's text sub-config class fills in for a field its nested ``text_config`` leaves out,
#: by the outer ``model_type``. ``save_pretrained`` writes a sub-config as its difference from the sub-config
#: class's defaults (``PretrainedConfig.to_diff_dict``), so google/gemma-3-4b-it's text_config names five fields
#: and its vocabulary, heads and head width are Gemma3TextConfig's. Values: the ``__init__`` defaults of
#: ``Gemma3TextConfig`` (src/transformers/models/gemma3/configuration_gemma3.py), the sub-config
#: ``Gemma3Config.sub_configs["text_config"]`` instantiates.
NESTED_TEXT_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "gemma3": {
        "vocab_size": 262_208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131_072,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
    },
}

#: the fields a nested ``text_config`` takes from the outer config when it has none of its own
_INHERITED = ("tie_word_embeddings", "quantization_config", "torch_dtype", "dtype")


def _inherited(outer: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`_INHERITED` fields the outer config sets."""
    return {key: outer[key] for key in _INHERITED if key in outer}


def _nested_defaults(outer: Mapping[str, Any], text: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of :data:`NESTED_TEXT_DEFAULTS` a nested ``text_config`` (with what it inherits) leaves out."""
    defaults = NESTED_TEXT_DEFAULTS.get(str(outer.get("model_type", "")).lower(), {})
    return {key: value for key, value in defaults.items() if text.get(key) is None}


def _text_and_outer(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(text config, outer config): the nested ``text_config`` of a multimodal model, with the outer
    fields it inherits and its sub-config class's defaults (:data:`NESTED_TEXT_DEFAULTS`) for the fields it
    leaves out, or the config itself twice. The outer ``tie_word_embeddings``, where set, wins over the nested
    one: transformers 5 ties the head by the model's own config (``PreTrainedModel.get_expanded_tied_weights_keys``
    reads ``self.config``), so Qwen3VLMoeConfig's False beside its text sub-config's default True unties it."""
    if not isinstance(config, Mapping):
        raise ConfigError(NOT_OBJECT())
    outer = dict(config)
    text = outer.get("text_config")
    if isinstance(text, Mapping):
        merged = {**_inherited(outer), **text}
        if outer.get("tie_word_embeddings") is not None:
            merged["tie_word_embeddings"] = outer["tie_word_embeddings"]
        merged.update(_nested_defaults(outer, merged))
        return merged, outer
    return outer, outer


def _model_type(text: Mapping[str, Any], outer: Mapping[str, Any]) -> str:
    """The ``model_type`` (outer first), else the first ``architectures`` entry."""
    mt = outer.get("model_type") or text.get("model_type")
    if not isinstance(mt, str) or not mt:
        archs = outer.get("architectures")
        if isinstance(archs, list) and archs and isinstance(archs[0], str):
            return archs[0]
        raise ConfigError(NO_MODEL_TYPE())
    return mt


def _heads(c: _Cfg, hidden: int, *, head_keys: tuple[str, ...] = ("num_attention_heads",)) -> tuple[int, int, int]:
    """(attention heads, KV heads, head width): GQA / MQA from ``num_key_value_heads``, an explicit
    ``head_dim`` or hidden / heads."""
    n_heads = c.int(*head_keys)
    n_kv = c.int("num_key_value_heads", "num_kv_heads", default=n_heads)
    if n_heads % n_kv:
        raise ConfigError(HEADS_NOT_MULTIPLE(model_type=c.model_type, heads=n_heads, kv_heads=n_kv))
    if c.has("head_dim"):
        head_dim = c.int("head_dim")
    else:
        if hidden % n_heads:
            raise ConfigError(NO_HEAD_DIM(model_type=c.model_type, hidden=hidden, heads=n_heads))
        head_dim = hidden // n_heads
    return n_heads, n_kv, head_dim


def _layer_types(c: _Cfg, n_layers: int) -> list[str] | None:
    """The ``layer_types`` list, checked to hold one string per layer; None when absent."""
    lt = c.get("layer_types")
    if lt is None:
        return None
    if not isinstance(lt, list) or not all(isinstance(x, str) for x in lt):
        raise ConfigError(LAYER_TYPES_NOT_STRINGS(model_type=c.model_type))
    if len(lt) != n_layers:
        raise ConfigError(LAYER_TYPES_COUNT(model_type=c.model_type, entries=len(lt), layers=n_layers))
    return list(lt)


def _kind_from_type(c: _Cfg, name: str) -> AttentionKind:
    """The attention kind of one ``layer_types`` entry."""
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
        raise ConfigError(LAYER_TYPES_UNKNOWN(model_type=c.model_type, name=name))
    return table[name]


def _common(c: _Cfg, outer: Mapping[str, Any], fam: Family) -> dict[str, Any]:
    """The fields every reader fills alike: what its family record fixes (``Architecture.family``, norm kind,
    gated MLP or not), dtype, quantisation config and context length."""
    qc = c.get("quantization_config") or outer.get("quantization_config") or outer.get("compression_config")
    if qc is not None and not isinstance(qc, Mapping):
        raise ConfigError(QUANT_NOT_OBJECT(model_type=c.model_type))
    maxpos = (
        _lenient_int(c, "max_position_embeddings") or _lenient_int(c, "n_positions") or _lenient_int(c, "seq_length")
    )
    return {
        "family": fam.reader,
        "norm": fam.norm,
        "mlp_gated": fam.mlp != "plain",
        "dtype": _dtype(c.d, outer),
        "quantization_config": dict(qc) if qc is not None else None,
        "max_position": int(maxpos) if isinstance(maxpos, int) and maxpos > 0 else None,
    }
