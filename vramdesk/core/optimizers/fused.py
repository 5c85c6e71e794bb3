"""Optimizers fused into the backward (the lomo-optim package, 0.1.1): LOMO (``lomo_optim/lomo.py``
``Lomo.fuse_update``) and AdaLomo (``lomo_optim/adalomo.py`` ``AdaLomo.fuse_update``). A hook on each parameter
updates the parameter whose gradient has just been accumulated and frees that gradient, so no full set of
gradients ever exists; LOMO keeps no state, AdaLomo Adafactor-like factored second moments in fp32."""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from ..messages import Message, text

LOMO_STATES = text("optimizer.states.lomo", "LOMO: no optimizer state (SGD fused into the backward)")
ADALOMO_STATES = text(
    "optimizer.states.adalomo",
    "AdaLomo: factored row + column second moments in fp32 (one value per element of vectors)",
)
FUSED_TEMP = Message(
    "optimizer.temp.lomo",
    "in the backward, one parameter at a time: {copies} fp32 copies of the largest tensor (its gradient, its "
    "update, the parameter)",
)

IN_BACKWARD = ("lomo", "adalomo")


def fused_bytes(
    name: str, trainable: int, state_bytes: int, largest: int, matrices: Sequence[tuple[int, ...]]
) -> tuple[int, int, str, str]:
    """(state bytes, temporary bytes of one parameter's update in the backward, their explanations)."""
    fp32 = state_bytes >= 4
    if name == "lomo":
        # grad_fp32 = p.grad.to(torch.float32) and p_fp32 = p.data.to(torch.float32): copies unless already fp32
        copies = 0 if fp32 else 2
        return 0, copies * 4 * largest, LOMO_STATES, FUSED_TEMP(copies=copies)
    # exp_avg_sq_row (shape[0]) and exp_avg_sq_col (shape[1]) for matrices, exp_avg_sq (shape[0]) for vectors
    factored = sum(shape[-2] + shape[-1] for shape in matrices)
    states = 4 * (factored + max(0, trainable - sum(prod(s) for s in matrices)))
    # grad_fp32, update = grad_fp32 ** 2 + eps then _approx_sq_grad (the old one alive while the new is made),
    # p_fp32: three fp32 tensors of the parameter's size at once (grad_fp32 is the gradient itself in fp32)
    copies = 2 if fp32 else 3
    return states, copies * 4 * largest, ADALOMO_STATES, FUSED_TEMP(copies=copies)
