"""Readers of the vision-language families with towers of their own (:mod:`vramdesk.core.vision_towers_own`):
Qwen2-VL, GLM-4.1V / GLM-4.5V / GLM-4.6V, Kimi K2.5 (MoonViT), MiniMax-M3 and Qwen's omni thinkers. The text model
is read as the decoder it is (Qwen2; GLM-4's four norms; GLM-4.5's MoE; DeepSeek-V3), the tower from
``vision_config`` with the defaults of transformers' vision sub-config class for the fields a saved config leaves
out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import (
    Architecture,
    AttentionKind,
    ConfigError,
    DsaIndexerSpec,
    LayerSpec,
    MoeSpec,
    VisionSpec,
)
from ..families import Family
from ..messages import Message
from .decoders import TOP_K_ABOVE_EXPERTS, _deepseek, _llama_like
from .fields import NOT_LIST, _Cfg, _common, _heads
from .modern import _exaone4, _glm4_moe

PER_LAYER_COUNT = Message(
    "config.per_layer.count", "{model_type}: '{key}' has {entries} entries but num_hidden_layers is {layers}"
)
PER_LAYER_UNKNOWN = Message("config.per_layer.unknown", "{model_type}: unknown entry {value!r} in '{key}'")
NOT_OBJECT_FIELD = Message("config.not_object_field", "{model_type}: field '{key}' must be an object")
MTP_NOT_COUNTED = Message(
    "config.mtp_not_counted",
    "{model_type}: the checkpoint's {layers} multi-token-prediction layer(s) (`mtp.*`, which transformers does not "
    "load) are not counted",
)
NOT_A_PAIR = Message("config.not_a_pair", "{model_type}: field '{key}' must be a list of two integers, got {value!r}")
NOT_A_RATIO = Message("config.not_a_ratio", "{model_type}: field '{key}' must be a positive number, got {value!r}")


def _vision_config(c: _Cfg, outer: Mapping[str, Any]) -> _Cfg | None:
    vc = outer.get("vision_config")
    return _Cfg(vc, f"{c.model_type} vision_config") if isinstance(vc, Mapping) else None


def _ratio(v: _Cfg, key: str, default: float) -> float:
    """A positive number such as ``mlp_ratio`` (saved as 4 or 4.0)."""
    value = v.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1_024:
        raise ConfigError(NOT_A_RATIO(model_type=v.model_type, key=key, value=value))
    return float(value)


def _qwen2_vl_tower(c: _Cfg, outer: Mapping[str, Any]) -> VisionSpec | None:
    """Qwen2-VL's ``vision_config`` (Qwen2VLVisionConfig): the tower is ``embed_dim`` wide (default 1280) with an
    MLP of ``embed_dim x mlp_ratio`` (4); its ``hidden_size`` (3584) is the merger's output, the text width. The
    published configs spell the channels ``in_chans``."""
    v = _vision_config(c, outer)
    if v is None:
        return None
    width = v.int("embed_dim", default=1280)
    return VisionSpec(
        kind="qwen2_vl",
        depth=v.int("depth", default=32),
        hidden=width,
        intermediate=int(width * _ratio(v, "mlp_ratio", 4.0)),
        num_heads=v.int("num_heads", default=16),
        patch_size=v.int("patch_size", default=14),
        details={
            "in_channels": v.int("in_channels", "in_chans", default=3),
            "temporal_patch_size": v.int("temporal_patch_size", default=2),
            "spatial_merge_size": v.int("spatial_merge_size", default=2),
            "out_hidden_size": v.int("hidden_size", default=3584),
        },
    )


def _qwen2_vl(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Qwen2-VL: a Qwen2 text model (q/k/v biases) under the checkpoints' ``model.layers`` and Qwen2-VL's tower;
    the text fields sit at the top of the original configs and under ``text_config`` in transformers 5's."""
    arch = _llama_like(c, outer, "qwen2", fam)
    return arch.model_copy(update={"vision": _qwen2_vl_tower(c, outer)})


def _glm4v_tower(c: _Cfg, outer: Mapping[str, Any], hidden: int) -> VisionSpec | None:
    """GLM-4.1V's ``vision_config`` (Glm4vVisionConfig defaults: depth 24, width 1536, 12 heads, merger MLP
    13,696, image 336, patch 14, output the text width)."""
    v = _vision_config(c, outer)
    if v is None:
        return None
    return VisionSpec(
        kind="glm4v",
        depth=v.int("depth", default=24),
        hidden=v.int("hidden_size", default=1536),
        intermediate=v.int("intermediate_size", default=13696),
        num_heads=v.int("num_heads", default=12),
        patch_size=v.int("patch_size", default=14),
        details={
            "image_size": v.int("image_size", default=336),
            "in_channels": v.int("in_channels", default=3),
            "temporal_patch_size": v.int("temporal_patch_size", default=2),
            "spatial_merge_size": v.int("spatial_merge_size", default=2),
            "out_hidden_size": v.int("out_hidden_size", default=hidden),
            "attention_bias": int(v.bool("attention_bias", default=False)),
        },
    )


def _glm4v(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GLM-4.1V-Thinking / GLM-4.6V-Flash (``glm4v``, ``glm46v``, ``glmga``: Glm46V's and GlmGa's text and
    vision sub-configs are Glm4v's): GLM-4's text layers (Glm4vTextDecoderLayer: four RMSNorms, gate and up
    fused, q/k/v biases always, none on o_proj) under ``model.language_model`` and the GLM-4V tower."""
    arch = _llama_like(c, outer, base, fam)
    update = {"norms_per_layer": 4, "qkv_bias": True, "o_bias": False, "vision": _glm4v_tower(c, outer, arch.hidden)}
    return arch.model_copy(update=update)


def _glm4v_moe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """GLM-4.5V / GLM-4.6V (``glm4v_moe``): GLM-4.5's MoE text model (Glm4vMoeTextModel: dense layers before
    ``first_k_dense_replace``, a sigmoid router with its e_score_correction_bias, shared experts) without MTP
    layers (Glm4vMoeTextConfig has none), and the GLM-4V tower. Without ``head_dim`` the heads are
    ``hidden_size // num_attention_heads`` wide, as Glm4vMoeTextAttention takes them."""
    cfg = c
    if not c.has("head_dim"):
        heads = c.int("num_attention_heads")
        cfg = _Cfg({**c.d, "head_dim": c.int("hidden_size") // heads}, c.model_type)
    if not cfg.has("num_nextn_predict_layers"):
        cfg = _Cfg({**cfg.d, "num_nextn_predict_layers": 0}, c.model_type)
    arch = _glm4_moe(cfg, outer, base, fam)
    return arch.model_copy(update={"vision": _glm4v_tower(c, outer, arch.hidden)})


def _pair(v: _Cfg, key: str, default: tuple[int, int]) -> tuple[int, int]:
    """A two-integer field such as ``merge_kernel_size`` ([2, 2]); errors name ``key[0]`` / ``key[1]``."""
    value = v.get(key, list(default))
    if not (isinstance(value, list | tuple) and len(value) == 2):
        raise ConfigError(NOT_A_PAIR(model_type=v.model_type, key=key, value=value))
    both = _Cfg({f"{key}[0]": value[0], f"{key}[1]": value[1]}, v.model_type)
    return both.int(f"{key}[0]"), both.int(f"{key}[1]")


def _moonvit_tower(c: _Cfg, outer: Mapping[str, Any], hidden: int) -> VisionSpec | None:
    """Kimi K2.5's ``vision_config``: transformers 5's Kimi_K25VisionConfig names (``hidden_size``,
    ``num_hidden_layers``, ``pos_emb_height`` ...) or the published remote-code ones (``vt_hidden_size``,
    ``vt_num_hidden_layers``, ``init_pos_emb_height`` ..., moonshotai/Kimi-K2.5's config.json); defaults are
    Kimi_K25VisionConfig's. The projector's LayerNorm is ``projection_hidden_size`` wide (outer config, default
    1152; the remote code's ``mm_hidden_size``)."""
    v = _vision_config(c, outer)
    if v is None:
        return None
    merge_h, merge_w = _pair(v, "merge_kernel_size", (2, 2))
    width = v.int("hidden_size", "vt_hidden_size", default=1152)
    proj = _Cfg(outer, c.model_type).int("projection_hidden_size", default=v.int("mm_hidden_size", default=1152))
    return VisionSpec(
        kind="moonvit",
        depth=v.int("num_hidden_layers", "vt_num_hidden_layers", default=27),
        hidden=width,
        intermediate=v.int("intermediate_size", "vt_intermediate_size", default=4304),
        num_heads=v.int("num_attention_heads", "vt_num_attention_heads", default=16),
        patch_size=v.int("patch_size", default=14),
        details={
            "pos_h": v.int("pos_emb_height", "init_pos_emb_height", default=64),
            "pos_w": v.int("pos_emb_width", "init_pos_emb_width", default=64),
            "merge_h": merge_h,
            "merge_w": merge_w,
            "projection_hidden_size": proj,
            "text_hidden": hidden,
        },
    )


def _kimi_k25(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Kimi K2.5 / K2.6 (``kimi_k25``): a DeepSeek-V3 text model (``text_config``, model_type ``kimi_k2`` or
    ``deepseek_v3``) under the checkpoints' ``language_model.`` prefix and the MoonViT tower with its projector."""
    arch = _deepseek(c, outer, "deepseek_v3", fam)
    return arch.model_copy(update={"vision": _moonvit_tower(c, outer, arch.hidden)})


def _per_layer(c: _Cfg, key: str, n_layers: int, names: Mapping[Any, str]) -> list[str] | None:
    """A per-layer list (``layer_types``, ``mlp_layer_types``, a 0 / 1 ``..._freq`` list) as the names ``names``
    maps its entries to; None when the config has none."""
    values = c.get(key)
    if values is None:
        return None
    if not isinstance(values, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key=key))
    if len(values) != n_layers:
        raise ConfigError(PER_LAYER_COUNT(model_type=c.model_type, key=key, entries=len(values), layers=n_layers))
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, str | int) or value not in names:
            raise ConfigError(PER_LAYER_UNKNOWN(model_type=c.model_type, key=key, value=value))
        out.append(names[value])
    return out


#: MiniMaxM3VLTextConfig's heads
_M3_HEADS = {"num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128}


def _minimax_m3_layers(c: _Cfg, n_layers: int) -> tuple[list[str], list[str]]:
    """(attention, MLP) kind of each MiniMax-M3 layer as MiniMaxM3VLTextConfig.__post_init__ reads them:
    ``layer_types`` ("full_attention" / "minimax_m3_sparse"), else the remote-code configs'
    ``sparse_attention_config.sparse_attention_freq`` (1: sparse), else all full; ``mlp_layer_types`` ("sparse" /
    "dense"), else ``moe_layer_freq`` (1: MoE), else all MoE."""
    sparse = c.get("sparse_attention_config") or {}
    if not isinstance(sparse, Mapping):
        raise ConfigError(NOT_OBJECT_FIELD(model_type=c.model_type, key="sparse_attention_config"))
    flags = {0: "full", 1: "sparse"}
    attn = _per_layer(c, "layer_types", n_layers, {"full_attention": "full", "minimax_m3_sparse": "sparse"})
    if attn is None:
        freq = _Cfg(sparse, f"{c.model_type} sparse_attention_config")
        attn = _per_layer(freq, "sparse_attention_freq", n_layers, flags) or ["full"] * n_layers
    mlp = _per_layer(c, "mlp_layer_types", n_layers, {"sparse": "moe", "dense": "dense"})
    if mlp is None:
        mlp = _per_layer(c, "moe_layer_freq", n_layers, {0: "dense", 1: "moe"}) or ["moe"] * n_layers
    return attn, mlp


def _minimax_m3(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """MiniMax-M3 (``minimax_m3`` remote code, ``minimax_m3_vl`` and its text model; MiniMaxM3VLTextConfig's
    defaults and its reading of the remote-code fields): per-head q/k RMSNorms on every layer and a Lightning
    Indexer (``index_n_heads`` query heads and one key of ``index_head_dim``; the remote code's
    ``sparse_attention_config.sparse_num_index_heads`` / ``sparse_index_dim``) on the sparse ones; MoE layers of
    ``num_local_experts`` experts of ``intermediate_size`` with one shared expert of ``shared_intermediate_size``
    and a sigmoid router keeping an e_score_correction_bias; dense layers of ``dense_intermediate_size``. The
    checkpoints' ``mtp.*`` modules, which transformers does not load, are not counted (a warning says so)."""
    hidden = c.int("hidden_size", default=6144)
    n_layers = c.int("num_hidden_layers", default=60)
    n_heads, n_kv, head_dim = _heads(_Cfg({**_M3_HEADS, **c.d}, c.model_type), hidden)
    sparse = _Cfg(c.get("sparse_attention_config") or {}, f"{c.model_type} sparse_attention_config")
    attn, mlp = _minimax_m3_layers(c, n_layers)
    blocks = c.int("index_topk_blocks", default=0) or sparse.int("sparse_topk_blocks", default=16)
    block_size = c.int("index_block_size", default=0) or sparse.int("sparse_block_size", default=128)
    indexer = DsaIndexerSpec(
        n_heads=c.int("index_n_heads", default=0) or sparse.int("sparse_num_index_heads", default=4),
        head_dim=c.int("index_head_dim", default=0) or sparse.int("sparse_index_dim", default=128),
        topk=blocks * block_size,
    )
    n_exp = c.int("num_local_experts", default=128)
    top_k = c.int("num_experts_per_tok", default=4)
    if top_k > n_exp:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=n_exp))
    moe = MoeSpec(
        num_experts=n_exp,
        top_k=top_k,
        expert_intermediate=c.int("intermediate_size", default=3072),
        shared_intermediate=c.int("shared_intermediate_size", default=3072),
        router_correction_bias=True,
    )
    dense = c.int("dense_intermediate_size", default=12288)
    layers = tuple(
        LayerSpec(
            index=i,
            attention=AttentionKind.FULL,
            n_heads=n_heads,
            n_kv_heads=n_kv,
            head_dim=head_dim,
            v_head_dim=head_dim,
            indexer=indexer if attn[i] == "sparse" else None,
            mlp=mlp[i],
            intermediate=dense if mlp[i] == "dense" else 0,
            moe=moe if mlp[i] == "moe" else None,
        )
        for i in range(n_layers)
    )
    mtp = c.int("num_nextn_predict_layers", default=0, min_value=0)
    return Architecture(
        model_type=c.model_type,
        hidden=hidden,
        vocab=c.int("vocab_size", default=200064),
        layers=layers,
        tie_embeddings=c.bool("tie_word_embeddings", default=fam.tied_by_default),
        qk_norm="head",
        vision=_minimax_m3_vl_tower(c, outer, hidden),
        warnings=(MTP_NOT_COUNTED(model_type=c.model_type, layers=mtp),) if mtp else (),
        sources={
            "attention kinds": "layer_types / sparse_attention_config.sparse_attention_freq (sparse: an indexer)",
            "MoE layers": "mlp_layer_types / moe_layer_freq",
        },
        **_common(c, outer, fam),
    )


def _minimax_m3_vl_tower(c: _Cfg, outer: Mapping[str, Any], hidden: int) -> VisionSpec | None:
    """MiniMax-M3's ``vision_config`` (MiniMaxM3VLVisionConfig defaults: 32 layers, width 1280, MLP 5120, 16
    heads, patch 14) and the outer ``projector_hidden_size`` (6144)."""
    v = _vision_config(c, outer)
    if v is None:
        return None
    return VisionSpec(
        kind="minimax_m3_vl",
        depth=v.int("num_hidden_layers", default=32),
        hidden=v.int("hidden_size", default=1280),
        intermediate=v.int("intermediate_size", default=5120),
        num_heads=v.int("num_attention_heads", default=16),
        patch_size=v.int("patch_size", default=14),
        details={
            "in_channels": v.int("num_channels", default=3),
            "temporal_patch_size": v.int("temporal_patch_size", default=2),
            "spatial_merge_size": v.int("spatial_merge_size", default=2),
            "projector_hidden_size": _Cfg(outer, c.model_type).int("projector_hidden_size", default=6144),
            "text_hidden": hidden,
        },
    )


def _audio_details(c: _Cfg, outer: Mapping[str, Any], hidden: int, downsample: bool) -> dict[str, int | float | str]:
    """The omni thinkers' ``audio_config`` (Qwen2_5OmniAudioEncoderConfig / Qwen3OmniMoeAudioEncoderConfig
    defaults: 32 layers of 1280 with an MLP of 5120, 128 mel bins, 480 downsampling channels in Qwen3-Omni's)."""
    ac = outer.get("audio_config")
    a = _Cfg(ac if isinstance(ac, Mapping) else {}, f"{c.model_type} audio_config")
    details: dict[str, int | float | str] = {
        "audio_layers": a.int("encoder_layers", default=32),
        "audio_width": a.int("d_model", default=1280),
        "audio_ffn": a.int("encoder_ffn_dim", default=5120),
        "audio_mel_bins": a.int("num_mel_bins", default=128),
        "audio_output_dim": a.int("output_dim", default=hidden),
    }
    if downsample:
        details["audio_downsample"] = a.int("downsample_hidden_size", default=480)
    return details


def _qwen2_5_omni(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Qwen2.5-Omni's thinker (``qwen2_5_omni_thinker``): a Qwen2 text model (q/k/v biases) under the thinker's
    ``model.``, the Qwen2.5-Omni vision tower (Qwen2_5OmniVisionEncoderConfig defaults: depth 32, width 1280,
    MLP 3420, 16 heads, patch 14) and its audio encoder, both counted as the ``vision`` part."""
    arch = _llama_like(c, outer, "qwen2", fam)
    v = _vision_config(c, outer) or _Cfg({}, f"{c.model_type} vision_config")
    vision = VisionSpec(
        kind="qwen2_5_omni",
        depth=v.int("depth", default=32),
        hidden=v.int("hidden_size", default=1280),
        intermediate=v.int("intermediate_size", default=3420),
        num_heads=v.int("num_heads", default=16),
        patch_size=v.int("patch_size", default=14),
        details={
            "in_channels": v.int("in_channels", "in_chans", default=3),
            "temporal_patch_size": v.int("temporal_patch_size", default=2),
            "spatial_merge_size": v.int("spatial_merge_size", default=2),
            "out_hidden_size": v.int("out_hidden_size", default=arch.hidden),
            **_audio_details(c, outer, arch.hidden, downsample=False),
        },
    )
    return arch.model_copy(update={"vision": vision})


def _qwen3_omni_moe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Qwen3-Omni-MoE's thinker (``qwen3_omni_moe_thinker``): a Qwen3-MoE text model (per-head q/k norms; heads
    ``hidden_size // num_attention_heads`` wide without ``head_dim``, as Qwen3OmniMoeThinkerTextAttention takes
    them; one nn.Linear per expert in the checkpoints), the Qwen3-Omni vision tower (Qwen3-VL's with its own
    merger names) and the audio encoder, both counted as the ``vision`` part."""
    cfg = c
    if not c.has("head_dim"):
        cfg = _Cfg({**c.d, "head_dim": c.int("hidden_size") // c.int("num_attention_heads")}, c.model_type)
    arch = _llama_like(cfg, outer, "qwen3_moe", fam)
    v = _vision_config(c, outer) or _Cfg({}, f"{c.model_type} vision_config")
    deepstack = v.get("deepstack_visual_indexes", [8, 16, 24])
    vision = VisionSpec(
        kind="qwen3_omni",
        depth=v.int("depth", default=27),
        hidden=v.int("hidden_size", default=1152),
        intermediate=v.int("intermediate_size", default=4304),
        num_heads=v.int("num_heads", default=16),
        patch_size=v.int("patch_size", default=16),
        details={
            "in_channels": v.int("in_channels", default=3),
            "temporal_patch_size": v.int("temporal_patch_size", default=2),
            "spatial_merge_size": v.int("spatial_merge_size", default=2),
            "num_position_embeddings": v.int("num_position_embeddings", default=2304),
            "out_hidden_size": v.int("out_hidden_size", default=arch.hidden),
            "deepstack": len(deepstack) if isinstance(deepstack, list) else 0,
            **_audio_details(c, outer, arch.hidden, downsample=True),
        },
    )
    return arch.model_copy(update={"vision": vision})


def _persimmon(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Persimmon (modeling_persimmon.py) and Fuyu's text model: q, k and v fused in query_key_value and the
    output ``dense``, both with biases; LayerNorms (weight and bias) over each head of q and k when
    ``qk_layernorm`` (default true); a plain relu^2 MLP with biases; LayerNorms; every head its own K and V. Fuyu
    (``fuyu``) adds ``vision_embed_tokens``, one linear with a bias from a ``patch_size^2 x num_channels`` patch to
    the text width: its whole tower."""
    arch = _llama_like(c, outer, "persimmon", fam)
    update: dict[str, Any] = {
        "qkv_bias": True,
        "o_bias": True,
        "mlp_bias": True,
        "qk_norm": "head_ln" if c.bool("qk_layernorm", default=True) else "none",
    }
    if base == "fuyu":
        o = _Cfg(outer, c.model_type)
        update["vision"] = VisionSpec(
            kind="fuyu",
            depth=0,
            hidden=arch.hidden,
            intermediate=0,
            num_heads=0,
            patch_size=o.int("patch_size", default=30),
            details={"num_channels": o.int("num_channels", default=3)},
        )
    return arch.model_copy(update=update)


def _exaone4_5(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """EXAONE 4.5 (``exaone4_5``): an EXAONE 4.0 text model (``text_config``, per-head q/k norms, sliding layers)
    and a Qwen2.5-VL-style tower whose attention has its own KV heads (Exaone4_5_VisionAttention: qkv of
    ``num_heads + 2 x num_key_value_heads`` heads of ``hidden_size / num_heads``). Defaults are
    Exaone4_5_VisionConfig's (depth 32, width 3584, MLP 3420, 16 heads, 8 KV heads, patch 14)."""
    arch = _exaone4(c, outer, "exaone4", fam)
    v = _vision_config(c, outer) or _Cfg({}, f"{c.model_type} vision_config")
    heads = v.int("num_heads", default=16)
    vision = VisionSpec(
        kind="exaone4_5",
        depth=v.int("depth", default=32),
        hidden=v.int("hidden_size", default=3584),
        intermediate=v.int("intermediate_size", default=3420),
        num_heads=heads,
        patch_size=v.int("patch_size", default=14),
        details={
            "num_key_value_heads": v.int("num_key_value_heads", default=heads),
            "in_channels": v.int("in_channels", default=3),
            "temporal_patch_size": v.int("temporal_patch_size", default=2),
            "spatial_merge_size": v.int("spatial_merge_size", default=2),
            "out_hidden_size": v.int("out_hidden_size", default=arch.hidden),
        },
    )
    return arch.model_copy(update={"vision": vision})
