"""Readers of Gemma 4 (``gemma4`` / ``gemma4_text``, Gemma 4 Unified and its assistant) and Gemma 3n's text model.

What they read, as transformers 5.24 reads it (``configuration_gemma4.py``, ``configuration_gemma4_unified.py``,
``configuration_gemma4_unified_assistant.py``, ``configuration_gemma3n.py``):

* ``layer_types`` (default: every sixth layer global; the last layer is always global);
* the global layers' geometry: ``per_layer_config`` overrides as ``save_pretrained`` writes them
  (``{"05": {"head_dim": 512}}``), else ``global_head_dim`` (default 512) and, where ``attention_k_eq_v``, the
  ``num_global_key_value_heads`` and no v_proj;
* ``num_kv_shared_layers``: the last layers reuse the KV of the last earlier layer of their kind
  (``kv_sharing_modes``): no k / v projections, no cache; an assistant shares every layer's;
  ``use_double_wide_mlp`` doubles their MLP;
* ``enable_moe_block``: every layer runs its dense MLP and ``num_experts`` routed experts (``top_k_experts`` of
  ``moe_intermediate_size``) side by side;
* per-layer input embeddings (``hidden_size_per_layer_input``, ``vocab_size_per_layer_input``), Gemma 3n's AltUp
  (``altup_num_inputs``) and Laurel (``laurel_rank``) blocks and per-layer ``intermediate_size`` lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, GemmaNSpec, LayerSpec, MoeSpec, VisionSpec
from ..families import GEMMA4_TEXT, Family
from ..messages import Message, MessageText
from .fields import MISSING_FIELD, _Cfg, _common, _heads, _kind_from_type, _layer_types

PER_LAYER_CONFIG_BAD = Message(
    "config.gemma4.per_layer_config",
    "{model_type}: 'per_layer_config' entry '{key}' must map a layer index below {layers} to an object",
)
PER_LAYER_CONFIG_FIELD = Message(
    "config.gemma4.per_layer_config.field",
    "{model_type}: 'per_layer_config' overrides '{field}' for layer {layer}, which vramdesk does not read "
    "(it reads head_dim and num_key_value_heads)",
)
KV_SHARED_TOO_MANY = Message(
    "config.gemma4.kv_shared_layers",
    "{model_type}: num_kv_shared_layers ({shared}) exceeds num_hidden_layers ({layers})",
)
KV_SHARED_NO_SOURCE = Message(
    "config.gemma4.kv_shared_source",
    "{model_type}: the KV-shared layers include a layer type no earlier layer produces KV for",
)
INTERMEDIATE_COUNT = Message(
    "config.gemma4.intermediate_count",
    "{model_type}: 'intermediate_size' lists {entries} widths, expected one per layer ({layers})",
)
#: the warning for a config whose towers the estimate leaves out, by (vision tower, audio tower)
TOWERS_NOT_COUNTED = {
    (True, False): Message(
        "config.gemma4.vision_not_counted",
        "{model_type}: its vision tower is not counted (only the text model's parameters and KV are estimated)",
    ),
    (False, True): Message(
        "config.gemma4.audio_not_counted",
        "{model_type}: its audio tower is not counted (only the text model's parameters and KV are estimated)",
    ),
    (True, True): Message(
        "config.gemma4.towers_not_counted",
        "{model_type}: its vision and audio towers are not counted (only the text model's parameters and KV are "
        "estimated)",
    ),
}

#: the override fields of ``per_layer_config`` the reader applies (and so may accept)
_OVERRIDES = ("head_dim", "num_key_value_heads")


def _overrides(c: _Cfg, n_layers: int) -> dict[int, Mapping[str, Any]] | None:
    """``per_layer_config`` as {layer: overrides}; None when the config has none."""
    raw = c.get("per_layer_config")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(PER_LAYER_CONFIG_BAD(model_type=c.model_type, key="per_layer_config", layers=n_layers))
    out: dict[int, Mapping[str, Any]] = {}
    for key, value in raw.items():
        idx = int(key) if str(key).isascii() and str(key).isdigit() else -1
        if not 0 <= idx < n_layers or not isinstance(value, Mapping):
            raise ConfigError(PER_LAYER_CONFIG_BAD(model_type=c.model_type, key=key, layers=n_layers))
        for field in value:
            if field not in _OVERRIDES:
                raise ConfigError(PER_LAYER_CONFIG_FIELD(model_type=c.model_type, field=field, layer=idx))
        out[idx] = value
    return out


def _kinds(c: _Cfg, n_layers: int) -> list[AttentionKind]:
    """``layer_types`` or Gemma 4's default (five sliding, one global); the last layer global, as transformers
    forces it."""
    types = _layer_types(c, n_layers)
    if types is None:
        types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n_layers)]
    kinds = [_kind_from_type(c, t) for t in types]
    kinds[-1] = AttentionKind.FULL
    return kinds


def _kv_shared(c: _Cfg, kinds: list[AttentionKind], shared: int) -> list[bool]:
    """Which layers reuse an earlier layer's KV (``kv_sharing_modes`` "reuse"): the last ``shared`` layers, each
    reading the last earlier layer of its kind (all of them in an assistant, which reads its target's)."""
    n = len(kinds)
    if shared > n:
        raise ConfigError(KV_SHARED_TOO_MANY(model_type=c.model_type, shared=shared, layers=n))
    first = n - shared
    if 0 < shared < n and not set(kinds[first:]) <= set(kinds[:first]):
        raise ConfigError(KV_SHARED_NO_SOURCE(model_type=c.model_type))
    return [i >= first for i in range(n)]


def _intermediates(c: _Cfg, n_layers: int) -> list[int]:
    """``intermediate_size``: one width, or Gemma 3n's list of one per layer."""
    v = c.get("intermediate_size")
    if isinstance(v, list):
        if len(v) != n_layers:
            raise ConfigError(INTERMEDIATE_COUNT(model_type=c.model_type, entries=len(v), layers=n_layers))
        return [_Cfg({"intermediate_size": x}, c.model_type).int("intermediate_size") for x in v]
    return [c.int("intermediate_size")] * n_layers


def _moe(c: _Cfg, base: str) -> MoeSpec | None:
    """Gemma 4's MoE block: routed experts beside the dense MLP (the table's shared expert, named ``mlp``)."""
    if base != "gemma4" or not c.bool("enable_moe_block", default=False):
        return None
    for key in ("num_experts", "top_k_experts", "moe_intermediate_size"):
        if not c.has(key):
            raise ConfigError(MISSING_FIELD(model_type=c.model_type, names=key))
    return MoeSpec(
        num_experts=c.int("num_experts"),
        top_k=c.int("top_k_experts"),
        expert_intermediate=c.int("moe_intermediate_size"),
        shared_intermediate=c.int("intermediate_size"),
    )


def _layers(c: _Cfg, outer: Mapping[str, Any], base: str, hidden: int) -> tuple[LayerSpec, ...]:
    n_layers = c.int("num_hidden_layers")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    kinds = _kinds(c, n_layers)
    window = c.int("sliding_window", default=1024 if base.startswith("gemma4_unified") else 512)
    if c.get("use_bidirectional_attention") == "all":
        # Gemma4TextConfig.__post_init__: exclusive bounds for flash attention
        window = window // 2 + 1
    assistant = base == "gemma4_unified_assistant"
    shared = c.int("num_kv_shared_layers", default=0, min_value=0) or (n_layers if assistant else 0)
    kv_shared = _kv_shared(c, kinds, shared)
    k_eq_v = base != "gemma3n" and c.bool("attention_k_eq_v", default=False)
    overrides = _overrides(c, n_layers)
    if overrides is None and base != "gemma3n":
        glob: dict[str, Any] = {"head_dim": c.int("global_head_dim", default=512)}
        if k_eq_v and c.has("num_global_key_value_heads"):
            glob["num_key_value_heads"] = c.int("num_global_key_value_heads")
        overrides = {i: glob for i, k in enumerate(kinds) if k == AttentionKind.FULL}
    inters = _intermediates(c, n_layers)
    double = c.bool("use_double_wide_mlp", default=False)
    moe = _moe(c, base)
    out = []
    for i, kind in enumerate(kinds):
        o = _Cfg((overrides or {}).get(i, {}), c.model_type)
        hd = o.int("head_dim", default=head_dim)
        kv = o.int("num_key_value_heads", default=n_kv)
        inter = inters[i] * (2 if double and kv_shared[i] else 1)
        out.append(
            LayerSpec(
                index=i,
                attention=kind,
                n_heads=n_heads,
                n_kv_heads=kv,
                head_dim=hd,
                v_head_dim=hd,
                window=window if kind == AttentionKind.SLIDING else None,
                mlp="moe" if moe is not None else "dense",
                intermediate=0 if moe is not None else inter,
                moe=moe,
                kv_shared=kv_shared[i],
                k_eq_v=k_eq_v and kind == AttentionKind.FULL,
            )
        )
    return tuple(out)


def _extras(c: _Cfg, outer: Mapping[str, Any], base: str) -> GemmaNSpec:
    ple = 0 if base.startswith("gemma4_unified") else c.int("hidden_size_per_layer_input", default=256, min_value=0)
    o = _Cfg(outer, c.model_type)
    assistant = base == "gemma4_unified_assistant"
    return GemmaNSpec(
        per_layer_input=ple,
        per_layer_vocab=c.int("vocab_size_per_layer_input", default=262_144) if ple else 0,
        altup_inputs=c.int("altup_num_inputs", default=4) if base == "gemma3n" else 0,
        laurel_rank=c.int("laurel_rank", default=64) if base == "gemma3n" else 0,
        layer_scalar=base != "gemma3n",
        backbone_hidden=o.int("backbone_hidden_size", default=3840) if assistant else 0,
        centroids=o.int("num_centroids", default=2048) if assistant and o.bool("use_ordered_embeddings", False) else 0,
    )


def _vision(c: _Cfg, outer: Mapping[str, Any], base: str, hidden: int) -> VisionSpec | None:
    """Gemma 4's own vision tower (Gemma4VisionModel) from ``vision_config``; None without one."""
    vc = outer.get("vision_config")
    if base != "gemma4" or not isinstance(vc, Mapping) or outer is c.d:
        return None
    v = _Cfg(vc, f"{c.model_type} vision_config")
    heads = v.int("num_attention_heads", default=12)
    return VisionSpec(
        kind="gemma4",
        depth=v.int("num_hidden_layers", default=16),
        hidden=v.int("hidden_size", default=768),
        intermediate=v.int("intermediate_size", default=3072),
        num_heads=heads,
        patch_size=v.int("patch_size", default=16),
        details={
            "head_dim": v.int("head_dim", default=64),
            "kv_heads": v.int("num_key_value_heads", default=heads),
            "position_embedding_size": v.int("position_embedding_size", default=10 * 1024),
            "standardize": int(v.bool("standardize", default=False)),
            "text_hidden": hidden,
        },
    )


def _uncounted(c: _Cfg, outer: Mapping[str, Any], base: str) -> tuple[MessageText, ...]:
    """A warning naming the towers a config has that the estimate leaves out (Gemma 3n's MobileNet-v5 vision
    tower and its audio encoder, Gemma 4's audio tower, Gemma 4 Unified's vision embedder)."""
    if outer is c.d:
        return ()
    vision = isinstance(outer.get("vision_config"), Mapping) and base != "gemma4"
    audio = isinstance(outer.get("audio_config"), Mapping)
    if not (vision or audio):
        return ()
    return (TOWERS_NOT_COUNTED[vision, audio](model_type=c.model_type),)


def _gemma4(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Gemma 4, Gemma 4 Unified (and its assistant) and Gemma 3n: per-layer head widths and KV heads, shared-KV
    layers, MoE beside the dense MLP, per-layer input embeddings, AltUp and Laurel, Gemma 4's vision tower. A
    text-only config (``Gemma4ForCausalLM``; the assistant's model) names its tensors ``model.*``, a multimodal
    one ``model.language_model.*``."""
    hidden = c.int("hidden_size")
    if outer is c.d or base == "gemma4_unified_assistant":
        fam = GEMMA4_TEXT
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=c.int("vocab_size"),
        layers=_layers(c, outer, base, hidden),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=c.bool("attention_bias", default=False),
        o_bias=c.bool("attention_bias", default=False),
        qk_norm="head",
        norms_per_layer=4,
        logit_softcap=bool(c.get("final_logit_softcapping")),
        vision=_vision(c, outer, base, hidden),
        gemma_n=_extras(c, outer, base),
        warnings=_uncounted(c, outer, base),
        sources={"attention kinds": "layer_types (last layer global)", "KV sharing": "num_kv_shared_layers"},
        **_common(c, outer, fam),
    )
