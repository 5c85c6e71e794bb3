"""An unknown model type read from its checkpoint's tensor names: the layers, MLPs and experts the headers hold
(:mod:`vramdesk.core.header_inventory`), the KV cache from the config's standard fields.

The config gives what names cannot: attention heads and head width (``num_attention_heads``, ``head_dim``),
``num_key_value_heads``, ``sliding_window`` / ``layer_types`` and the experts each token uses; the headers give
the rest, and fill in the width, vocabulary, KV heads or layer count when the config leaves them out. What neither
says is named in the estimate's warning; a :class:`ConfigError` names why when not even this reads the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, LayerSpec, MlaSpec, MoeSpec
from ..families import LLAMA
from ..header_inventory import HeaderInventory, Placed
from ..messages import Message, Text, join
from .decoders import NO_SLIDING_WINDOW
from .fields import _Cfg, _common, _kind_from_type, _layer_types, _lenient_int

#: ``Architecture.sources`` key of an architecture read this way
FROM_HEADERS = "tensor inventory"

INFERRED = Message(
    "config.inferred_from_tensors",
    "approximate: unknown architecture '{model_type}', inferred from tensor names ({tensors:,} tensors, {layers} "
    "decoder layers, {attention} with attention); not inferred: {missing}",
)
INFERRED_ALL = Message(
    "config.inferred_from_tensors.all",
    "approximate: unknown architecture '{model_type}', inferred from tensor names ({tensors:,} tensors, {layers} "
    "decoder layers, {attention} with attention); every tensor placed",
)
NOT_PLACED = Message(
    "config.inferred.unplaced", "the role of {count:,} tensor(s) ({prefixes}), priced at the checkpoint's dtype"
)
NOT_RECURRENT = Message(
    "config.inferred.recurrent", "the recurrent state of {layers} layers without attention (left out of the KV cache)"
)
NOT_TOP_K = Message(
    "config.inferred.top_k", "experts per token (no num_experts_per_tok in the config): all {experts} counted active"
)
NOT_MLA = Message(
    "config.inferred.mla",
    "MLA's compressed KV (the tensors have kv_a_proj_with_mqa, the config lacks kv_lora_rank, qk_nope_head_dim, "
    "qk_rope_head_dim or v_head_dim): the KV cache counts {kv_heads} KV heads of width {head_dim}",
)
NOT_WINDOW = Message(
    "config.inferred.window",
    "which layers slide (sliding_window {window} without layer_types or sliding_window_pattern): every layer "
    "counted as full attention",
)
NOT_CHUNK = Message(
    "config.inferred.chunk", "the attention chunk size of {layers} chunked layers: counted as full attention"
)
NO_LAYERS = Message(
    "config.headers.no_layers",
    "none of its {tensors:,} tensor names lies in a decoder layer (layers.N, h.N, blocks.N or blk.N)",
)
NO_HEADS = Message(
    "config.headers.no_heads",
    "the KV cache cannot be inferred: the config gives neither num_attention_heads nor head_dim",
)
NO_EMBEDDING = Message(
    "config.headers.no_embedding",
    "no token embedding among the tensors, and the config gives no {field}",
)
LAYERS_MISSING = Message(
    "config.headers.layers_missing", "the config has {config} layers but the tensors only {tensors}"
)
BAD_WIDTH = Message(
    "config.headers.bad_width",
    "the attention projections of layer {layer} ({rows} rows) are not a multiple of head_dim {head_dim}",
)

_TOP_K_KEYS = ("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_top_k", "top_k")


#: the expert counts the Llama-like reader reads (``decoders._moe_llama_like``)
_EXPERT_COUNTS = ("num_local_experts", "num_experts", "n_routed_experts")
#: above this many experts a config without a width of the experts' own is refused by the generic path: it would
#: give each expert the dense intermediate_size (the largest published MoE, DeepSeek-V3 / Kimi K2, has 384 experts;
#: Doge's single-neuron CDMoE 16384)
GENERIC_MAX_UNSIZED_EXPERTS = 1024

GENERIC_EXPERTS_UNSIZED = Message(
    "config.generic.experts_unsized",
    "{model_type}: {key} is {experts} but the config has no moe_intermediate_size: the generic decoder path would "
    "make every expert intermediate_size ({inter}) wide; set moe_intermediate_size, or is_moe false for a dense model",
)


def generic_config(c: _Cfg) -> _Cfg:
    """The config the generic Llama-style path reads for a model type no family claims (the guard against a config
    whose expert fields it would misread: Doge's ``"is_moe": false`` beside ``"num_experts": 16384``): without its
    expert counts when it says ``"is_moe": false``; refused (:data:`GENERIC_EXPERTS_UNSIZED`) when it has more than
    :data:`GENERIC_MAX_UNSIZED_EXPERTS` experts and no ``moe_intermediate_size``."""
    if c.get("is_moe") is False:
        return _Cfg({k: v for k, v in c.d.items() if k not in _EXPERT_COUNTS}, c.model_type)
    key = next((k for k in _EXPERT_COUNTS if c.get(k)), None)
    if key is not None and not c.has("moe_intermediate_size"):
        experts = c.int(key)
        if experts > GENERIC_MAX_UNSIZED_EXPERTS:
            inter = c.get("intermediate_size")
            raise ConfigError(GENERIC_EXPERTS_UNSIZED(model_type=c.model_type, key=key, experts=experts, inter=inter))
    return c


def _other_dim(shape: tuple[int, ...], hidden: int) -> int:
    """The width of a matrix that is not the model's (an (out, in) matrix or GPT-2's transposed Conv1D; the last
    two dimensions of a stacked expert tensor)."""
    a, b = shape[-2:] if len(shape) >= 2 else (shape[0], shape[0])
    return b if a == hidden else a


def _rows(inv: HeaderInventory, layer: int, role: str, hidden: int) -> int:
    t = inv.first(role, layer)
    return _other_dim(t.shape, hidden) if t is not None and len(t.shape) >= 2 else 0


def _width(c: _Cfg, inv: HeaderInventory, keys: tuple[str, ...], embed: Placed | None, axis: int, field: str) -> int:
    if any(c.has(k) for k in keys):
        return c.int(*keys)
    if embed is None or len(embed.shape) != 2:
        raise ConfigError(NO_EMBEDDING(field=field))
    return embed.shape[axis]


def _heads(c: _Cfg, inv: HeaderInventory, hidden: int, layer: int) -> tuple[int, int, int]:
    """(heads, KV heads, head width): the config's fields, else the widths of the projections."""
    head_keys = ("num_attention_heads", "n_head", "num_heads")
    heads = c.int(*head_keys) if any(c.has(k) for k in head_keys) else 0
    head_dim = c.int("head_dim") if c.has("head_dim") else (hidden // heads if heads and hidden % heads == 0 else 0)
    if not head_dim:
        raise ConfigError(NO_HEADS())
    q_rows = _rows(inv, layer, "q", hidden)
    k_rows = _rows(inv, layer, "k", hidden)
    qkv_rows = _rows(inv, layer, "qkv", hidden)
    if not heads:
        rows = q_rows or (qkv_rows // 3 if qkv_rows else 0)
        if not rows or rows % head_dim:
            raise ConfigError(BAD_WIDTH(layer=layer, rows=rows, head_dim=head_dim) if rows else NO_HEADS())
        heads = rows // head_dim
    kv_keys = ("num_key_value_heads", "num_kv_heads", "n_head_kv")
    if any(c.has(k) for k in kv_keys):
        return heads, c.int(*kv_keys), head_dim
    if c.get("multi_query") is True:
        return heads, 1, head_dim
    kv_rows = k_rows or ((qkv_rows - heads * head_dim) // 2 if qkv_rows > heads * head_dim else 0)
    if kv_rows and kv_rows % head_dim:
        raise ConfigError(BAD_WIDTH(layer=layer, rows=kv_rows, head_dim=head_dim))
    return heads, (kv_rows // head_dim if kv_rows else heads), head_dim


_MLA_KEYS = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def _mla(c: _Cfg, inv: HeaderInventory, layers: list[int]) -> MlaSpec | None:
    """MLA's geometry from DeepSeek's config fields, when the attention layers hold MLA's KV compression."""
    if not layers or "kv_a" not in inv.roles(layers[0]) or not all(c.has(k) for k in _MLA_KEYS):
        return None
    return MlaSpec(
        q_lora_rank=c.int("q_lora_rank") if c.has("q_lora_rank") else None,
        kv_lora_rank=c.int("kv_lora_rank"),
        qk_nope_head_dim=c.int("qk_nope_head_dim"),
        qk_rope_head_dim=c.int("qk_rope_head_dim"),
        v_head_dim=c.int("v_head_dim"),
    )


def _moe(c: _Cfg, inv: HeaderInventory, layer: int, hidden: int, missing: dict[str, Text]) -> MoeSpec | None:
    experts = [t for t in inv.in_layer(layer) if t.role.startswith("expert_") and not t.bias and len(t.shape) == 3]
    if not experts:
        return None
    n = experts[0].shape[0]
    inter = next((_other_dim(t.shape, hidden) for t in experts if t.role in ("expert_up", "expert_down")), 0)
    if not inter:
        inter = _other_dim(experts[0].shape, hidden) // 2  # gate and up fused
    shared_t = inv.first("shared_up", layer) or inv.first("shared_down", layer) or inv.first("shared_gate", layer)
    shared = _other_dim(shared_t.shape, hidden) if shared_t is not None else 0
    if not shared and inv.first("shared_gate_up", layer) is not None:
        shared = _rows(inv, layer, "shared_gate_up", hidden) // 2
    if any(c.has(k) for k in _TOP_K_KEYS):
        top_k = min(n, c.int(*_TOP_K_KEYS))
    else:
        top_k = n
        missing["top_k"] = NOT_TOP_K(experts=n)
    router_bias = any(t.role == "router" and t.bias for t in inv.in_layer(layer))
    return MoeSpec(
        num_experts=n, top_k=top_k, expert_intermediate=inter, shared_intermediate=shared, router_bias=router_bias
    )


def _mlp(c: _Cfg, inv: HeaderInventory, layer: int, hidden: int, missing: dict[str, Text]) -> dict[str, Any]:
    moe = _moe(c, inv, layer, hidden, missing)
    if moe is not None:
        return {"mlp": "moe", "moe": moe, "intermediate": 0}
    inter = _rows(inv, layer, "up", hidden) or _rows(inv, layer, "gate", hidden) or _rows(inv, layer, "down", hidden)
    if not inter and inv.first("gate_up", layer) is not None:
        inter = _rows(inv, layer, "gate_up", hidden) // 2
    return {"mlp": "dense" if inter else "none", "intermediate": inter}


def _kinds(
    c: _Cfg, inv: HeaderInventory, n_layers: int, sources: dict[str, str], missing: dict[str, Text]
) -> list[AttentionKind]:
    """Each layer's attention: none where the layer holds no attention projections, else what ``layer_types``,
    ``sliding_window_pattern`` (every Nth layer global) or ``use_sliding_window`` says. A ``sliding_window`` alone
    does not say which layers slide (Mistral's every layer, Gemma 2's every other one): full attention, the larger
    KV cache, and the warning says so."""
    with_attention = set(inv.attention_layers)
    types = _layer_types(c, n_layers)
    window = _lenient_int(c, "sliding_window")
    windowed = isinstance(window, int) and window > 0
    wanted = [AttentionKind.FULL] * n_layers
    if types is not None:
        sources["attention kinds"] = "layer_types, for the layers whose tensors hold attention"
        wanted = [_kind_from_type(c, t) for t in types]
    elif windowed and c.has("sliding_window_pattern"):
        every = c.int("sliding_window_pattern")
        sources["attention kinds"] = f"sliding_window_pattern {every}: every {every}th layer global"
        wanted = [AttentionKind.FULL if (i + 1) % every == 0 else AttentionKind.SLIDING for i in range(n_layers)]
    elif windowed and c.bool("use_sliding_window", default=False):
        sources["attention kinds"] = "use_sliding_window: every layer with attention"
        wanted = [AttentionKind.SLIDING] * n_layers
    elif windowed:
        missing["window"] = NOT_WINDOW(window=window)
    none = AttentionKind.NONE
    kinds = [k if i in with_attention and k != AttentionKind.LINEAR else none for i, k in enumerate(wanted)]
    if AttentionKind.SLIDING in kinds and not windowed:
        raise ConfigError(NO_SLIDING_WINDOW(model_type=c.model_type))
    return kinds


def _flags(inv: HeaderInventory, hidden: int) -> dict[str, Any]:
    """Architecture fields the tensors show: biases, norm kind, tied head, learned positions."""
    biased = {t.role for t in inv.tensors if t.bias and t.layer is not None}
    norm_biases = any(t.role in ("norm", "final_norm") and t.name.endswith(".bias") for t in inv.tensors)
    first_norms = sum(1 for t in inv.in_layer(0) if t.role == "norm" and t.shape == (hidden,) and "bias" not in t.name)
    positions = inv.first("positions")
    return {
        "qkv_bias": bool(biased & {"q", "k", "v", "qkv"}),
        "o_bias": "o" in biased,
        "mlp_bias": bool(biased & {"gate", "up", "down", "gate_up"}),
        "norm": "layer" if norm_biases else "rms",
        "norms_per_layer": first_norms if first_norms in (1, 2, 4) else 2,
        "mlp_gated": any(t.role in ("gate", "gate_up", "expert_gate", "expert_gate_up") for t in inv.tensors),
        "tie_embeddings": inv.first("lm_head") is None,
        "lm_head_bias": any(t.role == "lm_head" and t.bias for t in inv.tensors),
        "learned_positions": positions.shape[0] if positions is not None and len(positions.shape) == 2 else 0,
        "final_norm": inv.first("final_norm") is not None,
    }


_HEADER_DTYPES = {"BF16": "bf16", "F16": "fp16", "F32": "fp32"}


def _dtype(c: _Cfg, outer: Mapping[str, Any], inv: HeaderInventory, common: dict[str, Any]) -> str:
    if any(isinstance(src.get(k), str) for src in (c.d, outer) for k in ("dtype", "torch_dtype")):
        return str(common["dtype"])
    floats = {_HEADER_DTYPES[d]: n for d, n in inv.dtypes.items() if d in _HEADER_DTYPES}
    return max(floats, key=lambda d: floats[d]) if floats else str(common["dtype"])


def from_headers(c: _Cfg, outer: Mapping[str, Any], inv: HeaderInventory) -> Architecture:
    """An :class:`Architecture` of an unknown model type from its tensor inventory and the config's standard
    fields, with the warning that says so and what could not be inferred."""
    if inv.n_layers == 0:
        raise ConfigError(NO_LAYERS(tensors=inv.stored))
    embed = inv.first("embedding")
    hidden = _width(c, inv, ("hidden_size", "n_embd", "d_model"), embed, 1, "hidden_size")
    vocab = _width(c, inv, ("vocab_size",), embed, 0, "vocab_size")
    layer_keys = ("num_hidden_layers", "n_layer", "num_layers")
    n_layers = c.int(*layer_keys) if any(c.has(k) for k in layer_keys) else inv.n_layers
    if n_layers > inv.n_layers:
        raise ConfigError(LAYERS_MISSING(config=n_layers, tensors=inv.n_layers))
    sources = {FROM_HEADERS: f"{inv.stored:,} tensors of the checkpoint's headers, under {inv.layer_prefix}"}
    missing: dict[str, Text] = {}
    kinds = _kinds(c, inv, n_layers, sources, missing)
    attention = [i for i, k in enumerate(kinds) if k != AttentionKind.NONE]
    mla = _mla(c, inv, attention)
    if mla is not None:
        heads = (c.int("num_attention_heads"),) * 2 + (mla.qk_nope_head_dim + mla.qk_rope_head_dim,)
        kinds = [AttentionKind.MLA if k != AttentionKind.NONE else k for k in kinds]
        sources["MLA"] = "kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim"
    elif attention and "kv_a" in inv.roles(attention[0]):
        heads = _heads(c, inv, hidden, attention[0])
        missing["mla"] = NOT_MLA(kv_heads=heads[1], head_dim=heads[2])
    else:
        heads = _heads(c, inv, hidden, attention[0]) if attention else (1, 1, 1)
    window = _lenient_int(c, "sliding_window")
    layers = []
    for i in range(n_layers):
        kind = kinds[i]
        if kind == AttentionKind.CHUNKED:
            kind = AttentionKind.FULL
            missing["chunk"] = NOT_CHUNK(layers=kinds.count(AttentionKind.CHUNKED))
        layers.append(
            LayerSpec(
                index=i,
                attention=kind,
                n_heads=heads[0],
                n_kv_heads=heads[1],
                head_dim=heads[2],
                v_head_dim=mla.v_head_dim if mla is not None and kind == AttentionKind.MLA else heads[2],
                mla=mla if kind == AttentionKind.MLA else None,
                window=int(window) if kind == AttentionKind.SLIDING and isinstance(window, int) else None,
                **_mlp(c, inv, i, hidden, missing),
            )
        )
    recurrent = [i for i in range(n_layers) if kinds[i] == AttentionKind.NONE and "mixer" in inv.roles(i)]
    if recurrent:
        missing["recurrent"] = NOT_RECURRENT(layers=len(recurrent))
    unplaced = inv.unplaced_by_prefix()
    if unplaced:
        shown = ", ".join(f"{p} x{n}" for p, n in list(unplaced.items())[:4]) + (", ..." if len(unplaced) > 4 else "")
        missing["unplaced"] = NOT_PLACED(count=sum(unplaced.values()), prefixes=shown)
    counts = {"model_type": c.model_type, "tensors": inv.stored, "layers": n_layers, "attention": len(attention)}
    warning = INFERRED(**counts, missing=join("; ", *missing.values())) if missing else INFERRED_ALL(**counts)
    common = _common(c, outer, LLAMA)
    dtype = _dtype(c, outer, inv, common)
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=vocab,
        layers=tuple(layers),
        **{**common, **_flags(inv, hidden), "dtype": dtype},
        mtp_layers=inv.n_layers - n_layers + inv.mtp_layers,
        warnings=(warning,),
        sources=sources,
    )


__all__ = ["FROM_HEADERS", "from_headers"]
