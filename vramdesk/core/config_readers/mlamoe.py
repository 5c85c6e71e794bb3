"""DeepSeek-style MLA decoders beyond DeepSeek-V3: DeepSeek-V2 / V2-Lite, GLM-4.7-Flash (``glm4_moe_lite``),
MiniCPM3 and SK Telecom's A.X-K1 (``axk1``).

Every one of them is DeepSeek-V3's layer (transformers' ``DeepseekV3Attention``: q_a_proj / q_a_layernorm /
q_b_proj or one q_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; q_a_proj, kv_a_proj_with_mqa and
o_proj carry biases when ``attention_bias``) over DeepSeek-V3's MoE (a router ``mlp.gate``, routed experts and
``n_shared_experts`` fused into ``mlp.shared_experts``), so :func:`.decoders._deepseek` reads the geometry; what
differs per family is read here (the installed transformers 5.24 sources are the reference):

* which layers are MoE: ``mlp_layer_types`` ("dense" / "sparse", GLM-4.7-Flash and A.X-K1) or
  ``first_k_dense_replace``, whose default is each config class's (DeepseekV2Config 0; Glm4MoeLiteConfig and
  AXK1Config: the first layer dense);
* the router's score-correction bias: Glm4MoeLiteTopkRouter and AXK1TopkRouter always hold an
  ``e_score_correction_bias``, DeepseekV2TopkRouter never (greedy / group-limited softmax routing);
* DeepSeek-V2's ``num_experts_per_tok``, which DeepseekV2Config leaves None (its defaults build a model that cannot
  route): every published DeepSeek-V2 and V2-Lite config routes 6 experts a token, which is assumed with a warning;
* MiniCPM3 (modeling_minicpm3.py): dense MLA layers only, ``v_head_dim`` defaulting to hidden / heads and tied
  embeddings (MiniCPM3Config).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, ConfigError, LayerSpec
from ..families import Family
from ..messages import Message
from .decoders import _deepseek
from .fields import NOT_LIST, _Cfg

TOP_K_ASSUMED = Message(
    "config.mla.top_k_assumed",
    "{model_type}: the config has no num_experts_per_tok; {top_k} experts a token assumed, as every published "
    "DeepSeek-V2 config routes",
)
MLP_TYPE_UNKNOWN = Message(
    "config.mlp_layer_types.unknown",
    "{model_type}: unknown entry '{name}' in 'mlp_layer_types' (known: 'dense', 'sparse')",
)
MLP_TYPES_COUNT = Message(
    "config.mlp_layer_types.count",
    "{model_type}: 'mlp_layer_types' has {entries} entries but num_hidden_layers is {layers}",
)

#: DeepSeek-V2 and V2-Lite (deepseek-ai/DeepSeek-V2, DeepSeek-V2-Lite config.json): num_experts_per_tok 6
_V2_TOP_K = 6

#: per model type: the config class's first_k_dense_replace default and whether its router always holds an
#: e_score_correction_bias
_RULES: Mapping[str, tuple[int, bool]] = {
    "deepseek_v2": (0, False),
    "glm4_moe_lite": (1, True),
    "axk1": (1, True),
    "minicpm3": (0, False),
}


def _mlp_layer_types(c: _Cfg, n_layers: int) -> list[bool] | None:
    """Per layer, whether ``mlp_layer_types`` makes it sparse (MoE); None when the config has no such list."""
    raw = c.get("mlp_layer_types")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key="mlp_layer_types"))
    if len(raw) != n_layers:
        raise ConfigError(MLP_TYPES_COUNT(model_type=c.model_type, entries=len(raw), layers=n_layers))
    for name in raw:
        if name not in ("dense", "sparse"):
            raise ConfigError(MLP_TYPE_UNKNOWN(model_type=c.model_type, name=name))
    return [name == "sparse" for name in raw]


def _mla_moe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """DeepSeek-V2, GLM-4.7-Flash, MiniCPM3 and A.X-K1: :func:`.decoders._deepseek` over the config with each
    class's defaults filled in, then the MoE layers from ``mlp_layer_types``, the router bias and the attention
    biases (``attention_bias``)."""
    first_dense, correction_bias = _RULES[base]
    n_layers = c.int("num_hidden_layers")
    fill: dict[str, Any] = {}
    notes = []
    sparse = _mlp_layer_types(c, n_layers)
    if sparse is not None:
        # every layer MoE first; the dense ones are set below
        fill["first_k_dense_replace"] = 0
        fill["moe_layer_freq"] = 1
    elif not c.has("first_k_dense_replace"):
        fill["first_k_dense_replace"] = first_dense
    if not c.has("v_head_dim"):
        # MiniCPM3Config: hidden_size // num_attention_heads
        fill["v_head_dim"] = c.int("hidden_size") // c.int("num_attention_heads")
    if c.int("n_routed_experts", default=0, min_value=0) and not c.has("num_experts_per_tok") and base == "deepseek_v2":
        fill["num_experts_per_tok"] = _V2_TOP_K
        notes.append(TOP_K_ASSUMED(model_type=c.model_type, top_k=_V2_TOP_K))
    arch = _deepseek(_Cfg({**c.d, **fill}, c.model_type), outer, base, fam)
    inter = c.int("intermediate_size")
    layers: list[LayerSpec] = []
    for spec in arch.layers:
        moe = spec.moe
        if moe is not None and correction_bias:
            moe = moe.model_copy(update={"router_correction_bias": True})
        if sparse is not None and moe is not None and not sparse[spec.index]:
            layers.append(spec.model_copy(update={"mlp": "dense", "moe": None, "intermediate": inter}))
        else:
            layers.append(spec.model_copy(update={"moe": moe}))
    bias = c.bool("attention_bias", default=False)
    sources = dict(arch.sources)
    if sparse is not None:
        sources["moe layers"] = "mlp_layer_types"
    return arch.model_copy(
        update={
            "layers": tuple(layers),
            "qkv_bias": bias,
            "o_bias": bias,
            "warnings": (*arch.warnings, *notes),
            "sources": sources,
        }
    )
