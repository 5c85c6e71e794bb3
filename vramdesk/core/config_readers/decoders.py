"""Readers of the decoder families: Llama-like stacks (with Mixtral / Qwen-MoE experts), Gemma 1-3, gpt-oss,
Llama 4, DeepSeek-V2 / V3 (MLA) and the Qwen3-Next / Qwen3.5 Gated DeltaNet hybrids.

Each reader names the config fields it reads; the quirks are those of ``shared/research/anchors-mission.md`` §5.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import (
    Architecture,
    AttentionKind,
    ConfigError,
    LayerSpec,
    LinearAttnSpec,
    MlaSpec,
    MoeSpec,
    VisionSpec,
)
from ..families import Family
from ..messages import Message
from .fields import (
    _DTYPE_ALIASES,
    MISSING_FIELD,
    NOT_LIST,
    _Cfg,
    _common,
    _heads,
    _kind_from_type,
    _layer_types,
    _lenient_int,
)
from .mla import dsa_indexers
from .tower_presence import missing_tower
from .vision import qwen3_vl_tower

TOP_K_ABOVE_EXPERTS = Message(
    "config.top_k_above_experts",
    "{model_type}: num_experts_per_tok ({top_k}) exceeds the number of experts ({experts})",
)
NO_SLIDING_WINDOW = Message(
    "config.sliding_window_missing", "{model_type}: layer_types has sliding layers but 'sliding_window' is missing"
)
NO_ROPE_COUNT = Message(
    "config.no_rope_layers.count", "{model_type}: 'no_rope_layers' has {entries} entries, expected {layers}"
)
LINEAR_HEADS_NOT_MULTIPLE = Message(
    "config.linear_heads_not_multiple",
    "{model_type}: linear_num_value_heads ({v_heads}) is not a multiple of linear_num_key_heads ({k_heads})",
)


def _moe_llama_like(c: _Cfg, base: str, hidden: int, n_layers: int) -> list[MoeSpec | None]:
    """Expert layout of Mixtral / Qwen2-MoE / Qwen3-MoE style configs."""
    n_exp = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts")
    if not n_exp:
        return [None] * n_layers
    n_exp = c.int("num_local_experts", "num_experts", "n_routed_experts")
    top_k = c.int("num_experts_per_tok", "experts_per_token", "num_experts_per_token")
    if top_k > n_exp:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=n_exp))
    inter = c.int("moe_intermediate_size", "intermediate_size")
    shared = c.int("shared_expert_intermediate_size", default=0, min_value=0)
    step = c.int("decoder_sparse_step", default=1)
    mlp_only = c.get("mlp_only_layers", [])
    if not isinstance(mlp_only, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key="mlp_only_layers"))
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


def _llama_like(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Llama-style decoders (and unknown model types): RMSNorm, gated MLP, rotary; GQA from
    ``num_key_value_heads``, sliding windows from ``layer_types`` or ``sliding_window``, Qwen2 q/k/v biases, Qwen3 /
    OLMo 2 q/k norms, Mixtral / Qwen-MoE experts."""
    hidden = c.int("hidden_size")
    n_layers = c.int("num_hidden_layers")
    vocab = c.int("vocab_size")
    n_heads, n_kv, head_dim = _heads(c, hidden)
    inter = c.int("intermediate_size", default=0, min_value=0)
    moes = _moe_llama_like(c, base, hidden, n_layers)
    if inter == 0 and any(m is None for m in moes):
        raise ConfigError(MISSING_FIELD(model_type=c.model_type, names="intermediate_size"))
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
        raise ConfigError(NO_SLIDING_WINDOW(model_type=c.model_type))
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
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=attention_bias,
        o_bias=attention_bias and base not in {"qwen2", "qwen2_moe"},
        qk_norm=qk_norm,
        mlp_bias=c.bool("mlp_bias", default=False),
        sources=sources,
        **_common(c, outer, fam),
    )


def _gemma(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Gemma 1 / 2 / 3: sliding layers from ``layer_types`` or the Gemma 2 / 3 patterns, four norms per layer
    after Gemma 1, soft-capping, Gemma 3 q/k norms, a SigLIP vision tower when a nested config has one."""
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
        raise ConfigError(MISSING_FIELD(model_type=c.model_type, names="sliding_window"))
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
                # SiglipVisionConfig's default tower has its pooling head; Gemma 3's published configs say false
                "head": int(v.bool("vision_use_head", True)),
                "num_channels": v.int("num_channels", default=3),
                "prefix": "vision_tower.vision_model",
                "projector": "gemma3",
            },
        )
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=c.bool("attention_bias", default=False),
        o_bias=c.bool("attention_bias", default=False),
        qk_norm="head" if base == "gemma3" else "none",
        norms_per_layer=2 if base == "gemma" else 4,
        attn_softcap=bool(c.get("attn_logit_softcapping")),
        logit_softcap=bool(c.get("final_logit_softcapping")),
        vision=vision,
        sources={"attention kinds": src},
        **_common(c, outer, fam),
    )


def _gpt_oss(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """gpt-oss: every layer MoE (router and expert biases), sliding and full layers alternating from layer 0
    unless ``layer_types`` says otherwise, attention sinks."""
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
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=c.bool("attention_bias", default=True),
        o_bias=c.bool("attention_bias", default=True),
        attention_sinks=True,
        sources={"attention kinds": "layer_types" if types else "alternating sliding/full from layer 0"},
        **_common(c, outer, fam),
    )


def _llama4(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Llama 4: chunked attention on RoPE layers, global NoPE layers (``no_rope_layers``), MoE every
    ``interleave_moe_layer_step`` layers with one shared expert, and its vision tower."""
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
        raise ConfigError(NOT_LIST(model_type=c.model_type, key="no_rope_layers"))
    if not no_rope:
        # transformers' default: every 4th layer is a global NoPE layer, the others use RoPE + chunked attention
        no_rope = [int((i + 1) % 4 != 0) for i in range(n_layers)]
    if len(no_rope) != n_layers:
        raise ConfigError(NO_ROPE_COUNT(model_type=c.model_type, entries=len(no_rope), layers=n_layers))
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
        hidden=hidden,
        vocab=vocab,
        layers=tuple(layers),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=c.bool("attention_bias", default=False),
        o_bias=c.bool("attention_bias", default=False),
        vision=vision,
        warnings=missing_tower(outer, c.model_type),
        sources={"attention kinds": "no_rope_layers (RoPE layers use attention_chunk_size)"},
        **_common(c, outer, fam),
    )


def _deepseek(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """DeepSeek-V2 / V3 and Kimi K2: MLA on every layer, dense layers before ``first_k_dense_replace``,
    fused shared experts, MTP layers from ``num_nextn_predict_layers``; DeepSeek-V3.2 and GLM-5 add DeepSeek
    Sparse Attention's indexer (``index_n_heads``, :func:`.mla.dsa_indexers`)."""
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
    indexers, indexer_src = dsa_indexers(c, n_layers)
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
                indexer=indexers[i],
                mlp="moe" if is_moe else "dense",
                intermediate=0 if is_moe else inter,
                moe=moe if is_moe else None,
            )
        )
    mtp = c.int("num_nextn_predict_layers", default=0, min_value=0)
    sources = {"attention kinds": "kv_lora_rank / qk_rope_head_dim (MLA)", "mtp": "num_nextn_predict_layers"}
    if indexer_src is not None:
        sources["sparse attention indexers"] = f"index_n_heads / index_head_dim / index_topk; layers: {indexer_src}"
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=vocab,
        layers=tuple(layers),
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        mtp_layers=mtp,
        # GLM-5's MTP layer shares the model's embedding and head: its Hub total (753,864,139,008) is 2 x vocab x
        # hidden below DeepSeek's layout with copies of both
        mtp_own_embeddings=base != "glm_moe_dsa",
        sources=sources,
        **_common(c, outer, fam),
    )


def _qwen_hybrid(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Qwen3-Next / Qwen3.5: Gated DeltaNet layers between full-attention ones (``layer_types`` or
    ``full_attention_interval``), gated attention output, MTP layers and the Qwen3-VL vision tower."""
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
            LINEAR_HEADS_NOT_MULTIPLE(model_type=c.model_type, v_heads=lin.num_v_heads, k_heads=lin.num_k_heads)
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
    vision = qwen3_vl_tower(c, outer, hidden) if outer is not c.d else None
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=vocab,
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qkv_bias=c.bool("attention_bias", default=False),
        o_bias=c.bool("attention_bias", default=False),
        qk_norm="head",
        mtp_layers=mtp,
        vision=vision,
        sources={
            "attention kinds": src,
            "mtp": "mtp_num_hidden_layers" if c.has("mtp_num_hidden_layers") else "Qwen3-Next checkpoints: 1",
        },
        **_common(c, outer, fam),
    )
