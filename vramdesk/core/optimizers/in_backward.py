"""The optimizer stepped in the backward, one parameter at a time: what is alive when a parameter's hook runs."""

from __future__ import annotations

from ..inventory import Tensor
from ..messages import Message
from . import optimizer_bytes
from .fused import IN_BACKWARD, fused_bytes

ONE_GRADIENT = Message(
    "optimizer.in_backward.gradients",
    "stepped in the backward: the gradients of {count} parameter(s) at a time, the largest tensor's size",
)
IN_BACKWARD_SHARDED = Message(
    "optimizer.in_backward.sharded",
    "{optimizer} in the backward is modelled on one GPU or data parallel only: DeepSpeed ZeRO and FSDP run "
    "their own optimizer step",
)


def in_backward_step(
    name: str, largest: int, state_bytes: int, tensor: Tensor | None, projection: tuple[int, int]
) -> tuple[int, int]:
    """(gradients alive at once, bytes of one parameter's step temporaries) when each parameter is stepped in the
    backward. torchtune's ``register_optim_in_bwd_hooks`` (and HF Trainer's layer-wise GaLore) step a parameter's
    own optimizer in ``register_post_accumulate_grad_hook`` and zero its gradient: one gradient at a time, and a
    one-tensor step. LOMO's ``p.register_hook`` runs while the next gradient is being made, on the gradient
    accumulated before it: two at a time."""
    shapes = [tensor.shape] if tensor is not None and len(tensor.shape) >= 2 else []
    if name in IN_BACKWARD:
        return 2, fused_bytes(name, largest, state_bytes, largest, shapes)[1]
    one = [tensor] if tensor is not None else []
    return 1, optimizer_bytes(name, largest, state_bytes, largest, shapes, one, projection)[1]
