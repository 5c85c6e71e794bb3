"""Readers of decoders that store Llama's names with a twist of their own (records in
:mod:`vramdesk.core.families_llamalike`): each reads the config with :func:`.decoders._llama_like` (or the Gemma,
GLM-4.5 or Qwen3.5 reader) after filling in what its config class defaults to, then states what its modeling code
changes.

The defaults are transformers 5.24's ``configuration_<type>.py``: a field a published config leaves out is the
class's default, not Llama's (Seed-OSS's q/k/v biases, InternLM3's 128-wide heads, CWM's and Granite SWA's layer
kinds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..architecture import Architecture, AttentionKind, ConfigError, MoeSpec
from ..families import Family
from .decoders import TOP_K_ABOVE_EXPERTS, _gemma, _llama_like, _qwen_hybrid
from .fields import NOT_LIST, _Cfg
from .mlamoe import _mlp_layer_types
from .modern import _glm4_moe, _pattern_types

#: a layer-kind rule: (layer index, layer count) -> the layer is global
_KindRule = Callable[[int, int], bool]


def _absent(c: _Cfg, **defaults: Any) -> _Cfg:
    """``c`` with the config class's defaults for the fields it leaves out (a field set to null keeps its null: the
    classes then derive it, head_dim from hidden_size / num_attention_heads)."""
    return _Cfg({**defaults, **c.d}, c.model_type)


def _types_by(c: _Cfg, full: _KindRule) -> tuple[_Cfg, str | None]:
    """``c`` with ``layer_types`` spelled out by the config class's rule (``full(i, n)``: layer i is global) when it
    has none; and the source to name for it."""
    if c.get("layer_types") is not None:
        return c, None
    n = c.int("num_hidden_layers")
    types = ["full_attention" if full(i, n) else "sliding_attention" for i in range(n)]
    return _Cfg({**c.d, "layer_types": types}, c.model_type), "the config class's default layer_types"


def _noted(arch: Architecture, source: str | None, **update: Any) -> Architecture:
    sources = {**arch.sources, "attention kinds": source} if source else arch.sources
    return arch.model_copy(update={**update, "sources": sources})


def _moe(c: _Cfg, experts: tuple[str, ...], inter: tuple[str, ...], shared: int) -> MoeSpec:
    """The MoE block: ``experts`` experts of ``inter`` width, ``num_experts_per_tok`` routed a token, an ungated shared
    MLP of ``shared`` width."""
    n_exp = c.int(*experts)
    top_k = c.int("num_experts_per_tok")
    if top_k > n_exp:
        raise ConfigError(TOP_K_ABOVE_EXPERTS(model_type=c.model_type, top_k=top_k, experts=n_exp))
    return MoeSpec(num_experts=n_exp, top_k=top_k, expert_intermediate=c.int(*inter), shared_intermediate=shared)


def _with_moe(arch: Architecture, moe: MoeSpec, sparse: Sequence[bool], dense: int) -> Architecture:
    """``arch`` with ``moe`` on its ``sparse`` layers and dense MLPs of ``dense`` width on the others."""
    layers = tuple(
        spec.model_copy(
            update={
                "mlp": "moe" if sparse[spec.index] else "dense",
                "moe": moe if sparse[spec.index] else None,
                "intermediate": 0 if sparse[spec.index] else dense,
            }
        )
        for spec in arch.layers
    )
    return arch.model_copy(update={"layers": layers})


def _sparse(c: _Cfg, default: Sequence[bool]) -> list[bool]:
    """Which layers are MoE: ``mlp_layer_types`` when the config has it, else the class's default."""
    sparse = _mlp_layer_types(c, c.int("num_hidden_layers"))
    return list(default) if sparse is None else sparse


# -- dense decoders


def _head128(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """IQuest-Coder and Ministral 3: Llama's reading with the class's head_dim default, 128."""
    return _llama_like(_absent(c, head_dim=128), outer, base, fam)


def _internlm3(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """InternLM3: head_dim 128 by default; ``qkv_bias`` and ``bias`` (its remote-code configs' names) are
    ``attention_bias`` (q/k/v and o, as in Llama) and ``mlp_bias``."""
    aliases = {new: c.d[old] for old, new in (("qkv_bias", "attention_bias"), ("bias", "mlp_bias")) if old in c.d}
    return _llama_like(_absent(_Cfg({**aliases, **c.d}, c.model_type), head_dim=128), outer, base, fam)


def _cwm(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """CWM: head_dim 128 and sliding_window 8192 by default; without ``layer_types``, layer i is global when
    i % 4 == 0 (CwmConfig)."""
    cfg, src = _types_by(_absent(c, head_dim=128, sliding_window=8192), lambda i, n: i % 4 == 0)
    return _noted(_llama_like(cfg, outer, base, fam), src)


def _helium(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Helium: head_dim 128 by default, q/k/v biases from ``attention_bias``, none on o_proj."""
    return _llama_like(_absent(c, head_dim=128), outer, base, fam).model_copy(update={"o_bias": False})


def _ernie4_5(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """ERNIE 4.5: head_dim 128 by default; ``use_bias`` (default false) puts a bias on every projection."""
    bias = c.bool("use_bias", default=False)
    arch = _llama_like(_absent(c, head_dim=128), outer, base, fam)
    return arch.model_copy(update={"qkv_bias": bias, "o_bias": bias, "mlp_bias": bias})


def _seed_oss(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Seed-OSS: head_dim 128 and q/k/v biases (``attention_bias``) by default, o_proj's from
    ``attention_out_bias`` (default false)."""
    arch = _llama_like(_absent(c, head_dim=128, attention_bias=True), outer, base, fam)
    return arch.model_copy(update={"o_bias": c.bool("attention_out_bias", default=False)})


def _hyperclovax(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """HyperCLOVA X: Llama's fields; four norms a layer with ``use_post_norm`` (default true)."""
    arch = _llama_like(c, outer, base, fam)
    return arch.model_copy(update={"norms_per_layer": 4 if c.bool("use_post_norm", default=True) else 2})


def _vaultgemma(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """VaultGemma: Gemma 2's reading (sliding even layers without ``layer_types``, soft-capping) with two norms a
    layer."""
    arch = _gemma(_absent(c, head_dim=256, sliding_window=4096), outer, "gemma2", fam)
    return arch.model_copy(update={"norms_per_layer": 2})


# -- Granite SWA / MoE SWA / MoE Shared


def _granite(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Granite SWA, Granite MoE SWA and Granite MoE Shared: Granite's fields (multipliers store nothing);
    ``num_local_experts`` experts of ``intermediate_size`` on every layer of the MoE models, with a shared MLP of
    ``shared_intermediate_size`` (default 0: none); the SWA models' sinks, ``sliding_window`` 128 and, without
    ``layer_types``, a global layer where i % 4 == 0."""
    src = None
    cfg = c
    swa = base.endswith("_swa")
    if swa:
        cfg, src = _types_by(_absent(c, sliding_window=128), lambda i, n: i % 4 == 0)
    arch = _llama_like(cfg, outer, base, fam)
    if base != "granite_swa":
        shared = c.int("shared_intermediate_size", default=0, min_value=0)
        moe = _moe(c, ("num_local_experts",), ("intermediate_size",), shared)
        arch = _with_moe(arch, moe, [True] * arch.n_layers, 0)
    return _noted(arch, src, attention_sinks=swa)


# -- MoE decoders


def _flex_olmo(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """FlexOlmo: ``num_experts`` experts of ``intermediate_size`` on every layer, no shared expert; q/k norms over
    the whole projections."""
    arch = _llama_like(c, outer, base, fam)
    moe = _moe(c, ("num_experts",), ("intermediate_size",), 0)
    return _with_moe(arch, moe, [True] * arch.n_layers, 0).model_copy(update={"qk_norm": "full"})


def _mellum(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Mellum: layer kinds from ``layer_types`` (default every layer global, whatever ``sliding_window`` says), MoE
    layers from ``mlp_layer_types`` (default all), ``num_local_experts`` of ``moe_intermediate_size``; per-head q/k
    norms. The MTP layers the config can name (``num_nextn_predict_layers``) are not counted."""
    cfg, src = _types_by(c, lambda i, n: True)
    arch = _llama_like(_absent(cfg, head_dim=128, sliding_window=1024), outer, base, fam)
    moe = _moe(c, ("num_local_experts",), ("moe_intermediate_size",), 0)
    sparse = _sparse(c, [True] * arch.n_layers)
    dense = c.int("intermediate_size") if not all(sparse) else 0
    return _noted(_with_moe(arch, moe, sparse, dense), src, qk_norm="head")


def _flint_full(i: int, n: int) -> bool:
    """FlintConfig's default layer kinds: global on the first two layers, where i % 4 == 1 and on the last."""
    return i < 2 or i % 4 == 1 or i == n - 1


def _flint(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Flint: ``num_experts`` experts of ``moe_intermediate_size`` on every layer but ``mlp_only_layers`` (default
    [0, 1]) and every ``decoder_sparse_step``-th, an ungated shared expert of ``shared_expert_intermediate_size``;
    per-head q/k norms, a sink per head; layer kinds from ``layer_types`` or the class's rule."""
    cfg, src = _types_by(_absent(c, head_dim=128, sliding_window=513), _flint_full)
    arch = _llama_like(cfg, outer, base, fam)
    only = c.get("mlp_only_layers", [0, 1])
    if not isinstance(only, list):
        raise ConfigError(NOT_LIST(model_type=c.model_type, key="mlp_only_layers"))
    step = c.int("decoder_sparse_step", default=1)
    sparse = [i not in only and (i + 1) % step == 0 for i in range(arch.n_layers)]
    shared = c.int("shared_expert_intermediate_size", default=0, min_value=0)
    moe = _moe(c, ("num_experts",), ("moe_intermediate_size",), shared)
    dense = c.int("intermediate_size") if not all(sparse) else 0
    return _noted(_with_moe(arch, moe, sparse, dense), src, qk_norm="head", attention_sinks=True)


def _kolibri1(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Kolibri1: every layer MoE, ``num_local_experts`` of ``moe_intermediate_size`` and an ungated shared MLP of
    ``shared_expert_intermediate_size`` (default 512); per-head q/k norms, four norms a layer; without
    ``layer_types`` every fifth layer global."""
    cfg, src = _types_by(_absent(c, head_dim=128, sliding_window=513), lambda i, n: (i + 1) % 5 == 0)
    arch = _llama_like(cfg, outer, base, fam)
    shared = c.int("shared_expert_intermediate_size", default=512, min_value=0)
    moe = _moe(c, ("num_local_experts",), ("moe_intermediate_size",), shared)
    arch = _with_moe(arch, moe, [True] * arch.n_layers, 0)
    return _noted(arch, src, qk_norm="head", norms_per_layer=4)


def _cohere2_moe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Command A MoE: ``first_k_dense_replace`` dense layers (``prefix_dense_intermediate_size``) unless
    ``mlp_layer_types`` says which, then ``num_experts`` experts of ``intermediate_size`` with
    ``num_shared_experts`` x ``intermediate_size`` shared; layer kinds from ``layer_types``, else
    ``prefix_dense_sliding_window_pattern`` (1) over the dense prefix and ``sliding_window_pattern`` (4) after it;
    one norm a layer, q/k/v/o biases from ``attention_bias``."""
    n = c.int("num_hidden_layers")
    first = c.int("first_k_dense_replace", default=0, min_value=0)
    prefix, rest = c.int("prefix_dense_sliding_window_pattern", default=1), c.int("sliding_window_pattern", default=4)
    types = _pattern_types(c, prefix, first)[:first] + _pattern_types(c, rest, max(n - first, 0))
    cfg, src = c, None
    if c.get("layer_types") is None:
        cfg, src = _Cfg({**c.d, "layer_types": types[:n]}, c.model_type), "the config class's default layer_types"
    sparse = _sparse(c, [i >= first for i in range(n)])
    dense = c.int("prefix_dense_intermediate_size") if not all(sparse) else 0
    arch = _llama_like(_absent(cfg, head_dim=128, sliding_window=4096), outer, base, fam)
    inter = c.int("intermediate_size")
    moe = _moe(c, ("num_experts",), ("intermediate_size",), c.int("num_shared_experts", default=0, min_value=0) * inter)
    return _noted(_with_moe(arch, moe, sparse, dense), src, norms_per_layer=1)


def _sarvam_moe(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Sarvam-MoE: GLM-4.5's reading (``_glm4_moe``) with SarvamMoEConfig's defaults (head_dim 64, per-head q/k
    norms, one shared expert, one dense layer first, no MTP layer) and the original sarvamai configs' names
    (its attribute_map: num_experts, num_shared_experts, use_qkv_bias, num_mtp_layers)."""
    names = (
        ("num_experts", "n_routed_experts"),
        ("num_shared_experts", "n_shared_experts"),
        ("use_qkv_bias", "attention_bias"),
        ("num_mtp_layers", "num_nextn_predict_layers"),
    )
    aliases = {new: c.d[old] for old, new in names if old in c.d}
    cfg = _absent(
        _Cfg({**aliases, **c.d}, c.model_type),
        head_dim=64,
        use_qk_norm=True,
        n_shared_experts=1,
        first_k_dense_replace=1,
        num_nextn_predict_layers=0,
    )
    return _glm4_moe(cfg, outer, base, fam)


def _mimo_v2_flash(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """MiMo-V2-Flash: head_dim 192 and v_head_dim 128 by default; sliding layers (layer_types, else global on layer 0
    and every sixth) have twice ``num_key_value_heads`` and a sink per head, over ``sliding_window`` (the Hub
    configs' ``sliding_window_size`` + 1); MoE layers from ``mlp_layer_types`` (default: all but the first),
    ``n_routed_experts`` of ``moe_intermediate_size`` with a routing correction bias, no shared expert."""
    cfg = c
    if c.has("sliding_window_size"):
        # MiMoV2FlashConfig: the window then is sliding_window_size + 1, whatever sliding_window says
        cfg = _Cfg({**c.d, "sliding_window": c.int("sliding_window_size") + 1}, c.model_type)
    cfg, src = _types_by(_absent(cfg, head_dim=192, sliding_window=129), lambda i, n: i == 0 or (i + 1) % 6 == 0)
    arch = _llama_like(cfg, outer, base, fam)
    v_head = c.int("v_head_dim", default=128)
    layers = tuple(
        spec.model_copy(
            update={
                "v_head_dim": v_head,
                "n_kv_heads": spec.n_kv_heads * (2 if spec.attention == AttentionKind.SLIDING else 1),
            }
        )
        for spec in arch.layers
    )
    arch = arch.model_copy(update={"layers": layers})
    moe = _moe(c, ("n_routed_experts",), ("moe_intermediate_size",), 0).model_copy(
        update={"router_correction_bias": True}
    )
    sparse = _sparse(c, [i > 0 for i in range(arch.n_layers)])
    dense = c.int("intermediate_size") if not all(sparse) else 0
    return _noted(_with_moe(arch, moe, sparse, dense), src, attention_sinks=True)


def _beam_full(i: int, n: int) -> bool:
    """BeamConfig's default layer kinds: every sixth layer global, and the last."""
    return (i + 1) % 6 == 0 or i == n - 1


def _beam(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Beam: head_dim 128 by default; four norms a layer, per-head q/k norms, an output gate of num_attention_heads x
    head_dim rows; layer kinds from ``layer_types`` or the class's rule; MoE layers from ``mlp_layer_types`` (default:
    all but the first three), ``num_experts`` of ``moe_intermediate_size`` with a routing correction bias;
    ``final_logit_softcapping``."""
    cfg, src = _types_by(_absent(c, head_dim=128, sliding_window=512), _beam_full)
    arch = _llama_like(cfg, outer, base, fam)
    layers = tuple(spec.model_copy(update={"attn_gate": spec.n_heads * spec.head_dim}) for spec in arch.layers)
    moe = _moe(c, ("num_experts",), ("moe_intermediate_size",), 0).model_copy(update={"router_correction_bias": True})
    sparse = _sparse(c, [i >= 3 for i in range(arch.n_layers)])
    dense = c.int("intermediate_size") if not all(sparse) else 0
    arch = _with_moe(arch.model_copy(update={"layers": layers}), moe, sparse, dense)
    softcap = bool(c.get("final_logit_softcapping", 30.0))
    return _noted(arch, src, qk_norm="head", norms_per_layer=4, logit_softcap=softcap)


def _lara_kind(i: int, n: int) -> str:
    """LaraMiniConfig's released layer pattern, period 5."""
    return ("linear_attention", "sliding_attention", "linear_attention", "full_attention", "sliding_attention")[i % 5]


def _lara_mini(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Lara Mini: Qwen3.5's reading (``_qwen_hybrid``: Gated DeltaNet, per-head q/k norms, ``num_experts`` of
    ``moe_intermediate_size`` with a shared expert) with LaraMiniConfig's defaults, sliding layers over
    ``sliding_window`` (512), no attention output gate and an ungated shared expert."""
    cfg = _absent(
        c,
        head_dim=128,
        linear_conv_kernel_dim=4,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
        linear_num_key_heads=8,
        linear_num_value_heads=16,
        sliding_window=512,
    )
    src = None
    if c.get("layer_types") is None:
        n = c.int("num_hidden_layers")
        cfg = _Cfg({**cfg.d, "layer_types": [_lara_kind(i, n) for i in range(n)]}, c.model_type)
        src = "the config class's default layer_types"
    arch = _qwen_hybrid(cfg, outer, base, fam)
    window = cfg.int("sliding_window")
    layers = tuple(
        spec.model_copy(
            update={
                "attn_output_gate": False,
                "window": window if spec.attention == AttentionKind.SLIDING else None,
                "moe": spec.moe.model_copy(update={"shared_gate": False}) if spec.moe is not None else None,
            }
        )
        for spec in arch.layers
    )
    return _noted(arch.model_copy(update={"layers": layers}), src)
