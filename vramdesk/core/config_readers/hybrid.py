"""Readers of the Mamba-2 hybrids: Nemotron-H / Nemotron-Nano-v2 / Nemotron 3, whose ``hybrid_override_pattern``
(or ``layers_block_type``) gives each layer one mixer: a Mamba-2 mixer, attention, a plain MLP or a MoE block.

Mamba layers are ``AttentionKind.LINEAR`` with a :class:`~vramdesk.core.architecture.Mamba2Spec` (no KV, a constant
conv + SSM state per sequence); MLP and MoE layers have no attention (``AttentionKind.NONE``); attention and
Mamba layers have no MLP (``mlp`` "none").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, LayerSpec, Mamba2Spec, MoeSpec
from ..families import Family
from ..messages import Message
from .decoders import TOP_K_ABOVE_EXPERTS
from .fields import _DTYPE_ALIASES, MISSING_FIELD, NO_HEAD_DIM, NOT_LIST, _Cfg, _common, _either

PATTERN_UNKNOWN = Message(
    "config.hybrid_pattern.unknown",
    "{model_type}: unknown layer '{name}' in '{key}' (known: M or 'mamba' / 'linear_attention', * or 'attention' / "
    "'full_attention', - or 'mlp', E or 'moe')",
)
PATTERN_COUNT = Message(
    "config.hybrid_pattern.count", "{model_type}: '{key}' has {entries} layers but num_hidden_layers is {layers}"
)
MAMBA_WIDTH = Message(
    "config.mamba_heads_width",
    "{model_type}: mamba_num_heads ({heads}) x mamba_head_dim ({head_dim}) is not divisible by n_groups ({groups})",
)

#: ``hybrid_override_pattern`` characters and ``layers_block_type`` names -> the layer's one mixer
_BLOCKS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
#: transformers 5's ``layers_block_type`` names (NemotronHConfig's "linear_attention", "full_attention") -> the
#: older ones
_BLOCK_NAMES = {"linear_attention": "mamba", "full_attention": "attention"}


def _blocks(c: _Cfg) -> tuple[list[str], str]:
    """Each layer's mixer ("mamba", "attention", "mlp", "moe") and the field that said so."""
    if c.has("layers_block_type"):
        key, raw = "layers_block_type", c.get("layers_block_type")
        if not isinstance(raw, list):
            raise ConfigError(NOT_LIST(model_type=c.model_type, key=key))
        names = [_BLOCK_NAMES.get(str(x), str(x)) for x in raw]
    else:
        key = "hybrid_override_pattern"
        names = [_BLOCKS.get(ch, ch) for ch in str(c.get(key, ""))]
        if not names:
            # a checkpoint's config always spells its layers (NemotronHConfig's default pattern is a 4-layer toy)
            raise ConfigError(MISSING_FIELD(model_type=c.model_type, names=_either((key, "layers_block_type"))))
    known = set(_BLOCKS.values())
    for name in names:
        if name not in known:
            raise ConfigError(PATTERN_UNKNOWN(model_type=c.model_type, name=name, key=key))
    if c.has("num_hidden_layers") and c.int("num_hidden_layers") != len(names):
        raise ConfigError(
            PATTERN_COUNT(model_type=c.model_type, key=key, entries=len(names), layers=c.int("num_hidden_layers"))
        )
    return names, key


def _mamba(c: _Cfg) -> Mamba2Spec:
    """NemotronHMamba2Mixer's geometry: the Hub configs' names (mamba_num_heads, n_groups, conv_kernel,
    use_conv_bias, mamba_proj_bias) or NemotronHConfig's (mamba_n_groups, mamba_d_conv, mamba_conv_bias)."""
    dtype = str(c.get("mamba_ssm_cache_dtype", "float32")).removeprefix("torch.").lower()
    spec = Mamba2Spec(
        num_heads=c.int("mamba_num_heads"),
        head_dim=c.int("mamba_head_dim"),
        state_size=c.int("ssm_state_size"),
        n_groups=c.int("n_groups", "mamba_n_groups", default=1),
        conv_kernel=c.int("conv_kernel", "mamba_d_conv", default=4),
        conv_bias=c.bool("use_conv_bias", default=c.bool("mamba_conv_bias", default=True)),
        proj_bias=c.bool("mamba_proj_bias", default=c.bool("use_bias", default=False)),
        # NemotronHConfig's default "float32"; vLLM takes it over as mamba_ssm_cache_dtype
        state_dtype=_DTYPE_ALIASES.get(dtype, "fp32"),
    )
    if spec.intermediate % spec.n_groups:
        raise ConfigError(
            MAMBA_WIDTH(model_type=c.model_type, heads=spec.num_heads, head_dim=spec.head_dim, groups=spec.n_groups)
        )
    return spec


def _moe(c: _Cfg) -> MoeSpec:
    """NemotronHMoE: DeepSeek-V3's sigmoid router with e_score_correction_bias, plain routed experts and one plain
    shared MLP of moe_shared_expert_intermediate_size (n_shared_experts of them fused); Nemotron 3 Super / Ultra's
    routed experts work at moe_latent_size between fc1_latent_proj and fc2_latent_proj (the router and the shared
    expert read the hidden state)."""
    n_exp = c.int("n_routed_experts")
    top_k = c.int("num_experts_per_tok")
    if top_k > n_exp:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=n_exp))
    shared = c.int("n_shared_experts", default=1, min_value=0) * c.int(
        "moe_shared_expert_intermediate_size", default=0, min_value=0
    )
    return MoeSpec(
        num_experts=n_exp,
        top_k=top_k,
        expert_intermediate=c.int("moe_intermediate_size"),
        shared_intermediate=shared,
        router_correction_bias=True,
        latent=c.int("moe_latent_size", default=0, min_value=0),
    )


def _nemotron_h(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Nemotron-H (8B / 47B / 56B), Nemotron-Nano-v2 (9B / 12B) and Nemotron 3 Nano: one mixer per layer from the
    pattern, one RMSNorm before it; attention without rotary or q/k norms (head_dim or attention_head_dim)."""
    hidden = c.int("hidden_size")
    blocks, key = _blocks(c)
    n_heads = c.int("num_attention_heads")
    n_kv = c.int("num_key_value_heads", default=n_heads)
    if c.has("head_dim") or c.has("attention_head_dim"):
        head_dim = c.int("head_dim", "attention_head_dim")
    elif hidden % n_heads:
        raise ConfigError(NO_HEAD_DIM(model_type=c.model_type, hidden=hidden, heads=n_heads))
    else:
        head_dim = hidden // n_heads
    mamba = _mamba(c) if "mamba" in blocks else None
    moe = _moe(c) if "moe" in blocks else None
    inter = c.int("intermediate_size") if "mlp" in blocks else 0
    kinds = {"mamba": AttentionKind.LINEAR, "attention": AttentionKind.FULL}
    layers = tuple(
        LayerSpec(
            index=i,
            attention=kinds.get(block, AttentionKind.NONE),
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            mamba=mamba if block == "mamba" else None,
            mlp={"mlp": "dense", "moe": "moe"}.get(block, "none"),
            intermediate=inter if block == "mlp" else 0,
            moe=moe if block == "moe" else None,
        )
        for i, block in enumerate(blocks)
    )
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=c.int("vocab_size"),
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=c.bool("attention_bias", default=False),
        o_bias=c.bool("attention_bias", default=False),
        mlp_bias=c.bool("mlp_bias", default=False),
        norms_per_layer=1,
        sources={"layer kinds": key, "recurrent state": "mamba_ssm_cache_dtype (vLLM's SSM state)"},
        **_common(c, outer, fam),
    )
