"""One layer's forward transient for the constant-state mixers of :class:`~vramdesk.core.architecture.StateSpec`
(LFM2's short convolution, Kimi Delta Attention): the activations a forward over ``n`` tokens holds at once, beside
:mod:`.base`'s attention, Gated DeltaNet and Mamba-2 rules."""

from __future__ import annotations

from ..architecture import StateSpec
from ..messages import Explanation, Message

SHORT_CONV = Message(
    "engine.transient.short_conv",
    "gated short convolution: n x (in_proj 3 x {width} + B*x, conv and C*y {width} each + 2 x hidden {hidden}) x {c} B",
)
KDA = Message(
    "engine.transient.kda",
    "Kimi Delta Attention: n x (q/k/v and their convolution 6 x {width} + gates 2 x {width} + 2 x hidden {hidden}) x "
    "{c} B + fp32 q/k/v/gate of the chunked delta rule 4 x {width} x 4 B",
)


def state_mixer_transient(state: StateSpec, n: int, hidden: int, c: int) -> tuple[int, Explanation] | None:
    """Bytes one layer's mixer holds for ``n`` tokens at ``c`` bytes an element, with the words that say so; None
    for a mixer whose forward holds what softmax attention's does (lightning attention's q, k, v and output: the
    attention rule prices it)."""
    w = state.width
    if state.kind == "lightning":
        return None
    if state.kind == "kda":
        # KimiLinearDeltaAttention: q, k, v concatenated, their causal conv, the forget gate and output gate at the
        # full width, then chunk_kimi_delta_attention casts q, k, v and g to fp32
        return n * ((8 * w + 2 * hidden) * c + 4 * w * 4), KDA.later(width=w, hidden=hidden, c=c)
    # Lfm2ShortConv: in_proj's B, C and x, B*x, its conv, C*conv and out_proj's output with the residual
    return n * (6 * w + 2 * hidden) * c, SHORT_CONV.later(width=w, hidden=hidden, c=c)
