"""The tensors of the constant-state mixers (:class:`~vramdesk.core.architecture.StateSpec`), one builder per
``kind`` in :data:`MIXERS`: LFM2's gated short convolution and Kimi Delta Attention. Names are the checkpoints'
(transformers 5.24's modeling files, before its ``conversion_mapping.py`` renames); :mod:`.inventory` calls
:func:`state_mixer` for a layer whose ``state`` is set."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .architecture import Architecture, LayerSpec, StateSpec
from .families import Family
from .tensor_builder import Builder as _Builder


def _short_conv(b: _Builder, arch: Architecture, s: StateSpec, a: str, i: int, part: str) -> None:
    """Lfm2ShortConv: in_proj to B, C and x (3 x width), a depthwise conv1d of ``conv_kernel`` taps over B*x and
    out_proj; all three with a bias when conv_bias."""
    h, w, bias = arch.hidden, s.width, s.bias
    b.linear(f"{a}.in_proj", 3 * w, h, "linear_attn", i, part, bias)
    b.add(f"{a}.conv.weight", (w, 1, s.conv_kernel), "conv", i, part)
    if bias:
        b.add(f"{a}.conv.bias", (w,), "bias", i, part)
    b.linear(f"{a}.out_proj", h, w, "linear_attn", i, part, bias)


def _kda(b: _Builder, arch: Architecture, s: StateSpec, a: str, i: int, part: str) -> None:
    """KimiLinearDeltaAttention as the checkpoints store it: q/k/v_proj, one depthwise conv per projection
    (q_conv1d, k_conv1d, v_conv1d; transformers stacks them into conv1d at load), the low-rank forget gate f_a_proj
    -> f_b_proj with dt_bias (per channel) and A_log (per head), b_proj (beta, per head), the low-rank output gate
    g_a_proj -> g_b_proj, o_norm (gated RMSNorm over one head) and o_proj; no biases."""
    h, w, d = arch.hidden, s.width, s.head_dim
    for n in ("q", "k", "v"):
        b.linear(f"{a}.{n}_proj", w, h, "linear_attn", i, part)
    for n in ("q", "k", "v"):
        b.add(f"{a}.{n}_conv1d.weight", (w, 1, s.conv_kernel), "conv", i, part)
    b.linear(f"{a}.f_a_proj", d, h, "linear_attn", i, part)
    b.linear(f"{a}.f_b_proj", w, d, "linear_attn", i, part)
    b.add(f"{a}.dt_bias", (w,), "state_param", i, part)
    b.add(f"{a}.A_log", (1, 1, s.heads, 1), "state_param", i, part)
    b.linear(f"{a}.b_proj", s.heads, h, "linear_attn", i, part)
    b.linear(f"{a}.g_a_proj", d, h, "linear_attn", i, part)
    b.linear(f"{a}.g_b_proj", w, d, "linear_attn", i, part)
    b.add(f"{a}.o_norm.weight", (d,), "norm", i, part)
    b.linear(f"{a}.o_proj", h, w, "linear_attn", i, part)


def _lightning(b: _Builder, arch: Architecture, s: StateSpec, a: str, i: int, part: str) -> None:
    """MiniMaxLightningAttention: q, k and v in one qkv_proj (heads x 3 x head_dim rows), out_proj, the sigmoid
    output_gate over all heads' width and the RMSNorm ``norm`` over that width; no biases."""
    h, w = arch.hidden, s.width
    b.norm(f"{a}.norm", w, i, part, False)
    b.linear(f"{a}.qkv_proj", 3 * w, h, "linear_attn", i, part)
    b.linear(f"{a}.out_proj", h, w, "linear_attn", i, part)
    b.linear(f"{a}.output_gate", w, h, "linear_attn", i, part)


#: StateSpec.kind -> the builder of its mixer's tensors (under the layer's ``Family.state_mixer`` prefix)
MIXERS: Mapping[str, Callable[[_Builder, Architecture, StateSpec, str, int, str], None]] = {
    "short_conv": _short_conv,
    "kda": _kda,
    "lightning": _lightning,
}


def state_mixer(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, a: str, part: str) -> None:
    """Append the tensors of layer ``spec``'s constant-state mixer, named under ``a``."""
    assert spec.state is not None
    build = MIXERS.get(spec.state.kind)
    if build is None:
        raise ValueError(f"no tensor inventory for a state mixer of kind {spec.state.kind!r}")
    build(b, arch, spec.state, a, spec.index, part)
