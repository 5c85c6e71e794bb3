"""Optimizer memory: the states an optimizer keeps per trainable parameter and the temporaries of its step.

Each figure follows the implementation's own code (PyTorch's foreach / fused / for-loop AdamW and foreach SGD,
bitsandbytes' 8-bit and paged AdamW, transformers' Adafactor, Lion here; GaLore and APOLLO in
:mod:`.projected`, Adam-mini in :mod:`.adam_mini`, torchao's low-bit AdamW in :mod:`.torchao`, LOMO and AdaLomo
in :mod:`.fused`), checked on traced steps where it could be.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from ..inventory import Tensor
from ..messages import Message, text
from .adam_mini import adam_mini_bytes
from .fused import IN_BACKWARD, fused_bytes
from .projected import FAMILY, projected_bytes
from .shared import bnb_8bit_state_bytes
from .torchao import LAYOUT, torchao_bytes

__all__ = ["IN_BACKWARD", "NEEDS_FULL", "optimizer_bytes"]

#: optimizers that partition or project a full model's tensors by name and shape (not adapters)
NEEDS_FULL = (*FAMILY, "adam-mini")

_OPT_STATES = {
    "adamw": 2.0,
    "adamw-fused": 2.0,
    "adamw-8bit": 2.0,
    "paged-adamw-8bit": 2.0,
    "paged-adamw-32bit": 2.0,
    "adamw-forloop": 2.0,
    "adamw-torch2.0": 2.0,
    "sgd": 1.0,
    "lion": 1.0,
    "adafactor": 0.0,
}


#: what the states are (``{name}``: the optimizer's option value, as typed)
STATES = Message("optimizer.states", "{name}: {states:g} state(s) x {bytes} B per trainable parameter")
STATES_8BIT = text("optimizer.states.adamw_8bit", "bitsandbytes 8-bit AdamW: 2 states x 1 B + block absmax")
STATES_ADAFACTOR = text("optimizer.states.adafactor", "Adafactor: factored row + column second moments (fp32)")
STATES_PAGED_32BIT = text(
    "optimizer.states.paged_adamw_32bit",
    "bitsandbytes paged AdamW: 2 fp32 states in paged memory (on the GPU unless it runs short)",
)
TEMP_FUSED_PER_TENSOR = text("optimizer.temp.fused_per_tensor", "fused per-tensor step: none")
TEMP_ADAFACTOR = Message(
    "optimizer.temp.adafactor", "per-parameter fp32 update of the largest tensor ({copies} x 4 B per element)"
)
TEMP_ADAMW_FOREACH = text(
    "optimizer.temp.adamw_foreach",
    "foreach AdamW (PyTorch's CUDA default): sqrt of all second moments at once, one state-sized copy",
)
TEMP_ADAMW_TORCH20 = text(
    "optimizer.temp.adamw_torch20",
    "foreach AdamW of PyTorch 2.0 and older: the sqrt of all second moments and sqrt + eps held together, "
    "two state-sized copies",
)
TEMP_ADAMW_FUSED = text("optimizer.temp.adamw_fused", "fused AdamW: no step temporaries")
TEMP_ADAMW_FORLOOP = text(
    "optimizer.temp.adamw_forloop", "for-loop AdamW: the sqrt of the largest tensor's second moment"
)
TEMP_SGD = text("optimizer.temp.sgd", "foreach SGD with momentum: in place, no temporaries")
TEMP_FOREACH = text("optimizer.temp.foreach", "foreach update: one parameter-sized temporary")


def optimizer_bytes(
    name: str,
    trainable: int,
    state_bytes: int,
    largest: int,
    matrices: Sequence[tuple[int, ...]],
    tensors: Sequence[Tensor] = (),
    projection: tuple[int, int] = (128, 200),
) -> tuple[int, int, str, str]:
    """(state bytes, step temporary bytes, state explain, temporary explain). ``tensors``: the trained tensors by
    name (a full fine-tune's; GaLore, APOLLO and Adam-mini need them); ``projection``: GaLore / APOLLO's rank and
    update_proj_gap."""
    if name in FAMILY:
        return projected_bytes(name, projection[0], projection[1], state_bytes, tensors)
    if name == "adam-mini":
        return adam_mini_bytes(state_bytes, tensors)
    if name in LAYOUT:
        sizes = [t.numel for t in tensors] or [prod(m) for m in matrices]
        rest = trainable - sum(sizes)
        return torchao_bytes(name, state_bytes, sizes + ([rest] if rest > 0 else []))
    if name in IN_BACKWARD:
        return fused_bytes(name, trainable, state_bytes, largest, matrices)
    if name in ("adamw-8bit", "paged-adamw-8bit"):
        # bitsandbytes blockwise 8-bit states (2 x 1 B) + fp32 absmax per 2048 elements, fused per-tensor kernels
        states = bnb_8bit_state_bytes(trainable)
        return states, 0, STATES_8BIT, TEMP_FUSED_PER_TENSOR
    if name == "adafactor":
        factored = sum((shape[-2] + shape[-1]) * (shape[0] if len(shape) == 3 else 1) for shape in matrices)
        states = 4 * factored + 4 * max(0, trainable - sum(prod(s) for s in matrices))
        # transformers' Adafactor steps one parameter at a time in fp32: the gradient's and the parameter's fp32
        # copies (none for fp32 parameters), grad^2 + eps and the factored estimate (traced, bf16: 16 B x the largest)
        copies = 2 if state_bytes >= 4 else 4
        return states, copies * largest * 4, STATES_ADAFACTOR, TEMP_ADAFACTOR(copies=copies)
    n_states = _OPT_STATES.get(name, 2.0)
    states = round(n_states * trainable * state_bytes)
    explain = STATES(name=name, states=n_states, bytes=state_bytes)
    if name == "adamw":
        return states, trainable * state_bytes, explain, TEMP_ADAMW_FOREACH
    if name == "adamw-torch2.0":
        # PyTorch <= 2.0's _multi_tensor_adamw: denom = _foreach_add(_foreach_sqrt(exp_avg_sqs), eps) holds two
        # state-sized lists at once; 2.1 made the add in place (pytorch/pytorch#104898)
        return states, 2 * trainable * state_bytes, explain, TEMP_ADAMW_TORCH20
    if name == "adamw-fused":
        return states, 0, explain, TEMP_ADAMW_FUSED
    if name == "adamw-forloop":
        # foreach=False: one parameter at a time, so the sqrt temporary is one tensor's worth
        return states, largest * state_bytes, explain, TEMP_ADAMW_FORLOOP
    if name == "paged-adamw-32bit":
        # bitsandbytes keeps the fp32 states in CUDA unified (paged) memory and updates with a fused kernel; the
        # pages live on the GPU unless memory runs short, when the driver moves them to CPU memory
        states = round(2 * trainable * 4)
        return states, 0, STATES_PAGED_32BIT, TEMP_FUSED_PER_TENSOR
    if name == "sgd":
        # foreach SGD with momentum updates the buffers and the parameters in place (traced: no temporaries);
        # weight decay would add a gradient-sized copy
        return states, 0, explain, TEMP_SGD
    # lion (foreach): one parameter-sized temporary
    return states, trainable * state_bytes, explain, TEMP_FOREACH
