"""torchao's low-bit AdamW (torchao 0.18, ``torchao/optim/adam.py`` ``_AdamBase._new_buffer`` and the
``OptimState*.zeros`` of ``subclass_8bit.py`` / ``subclass_4bit.py`` / ``subclass_fp8.py``): both moments of every
tensor of at least 4,096 elements whose size the block divides are stored quantised with an fp32 scale per block;
the rest are ``zeros_like(p)``."""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message, text

TORCHAO_STATES = Message(
    "optimizer.states.torchao",
    "torchao {name}: 2 states x {bits} bits + an fp32 scale per {block} elements for {quantised:,} parameters, "
    "{plain:,} parameters with full-precision states",
)
TORCHAO_TEMP = text(
    "optimizer.temp.torchao",
    "one parameter at a time, in a compiled kernel: the fp32 moments of the largest tensor before they are "
    "quantised (not traced)",
)

#: value -> (label, bits per state element, block size, fp32 entries of the quantisation map per state)
LAYOUT = {
    "adamw-torchao-8bit": ("AdamW8bit", 8, 256, 256),
    "adamw-torchao-4bit": ("AdamW4bit", 4, 128, 16),
    "adamw-torchao-fp8": ("AdamWFp8", 8, 256, 0),
}


def torchao_bytes(name: str, state_bytes: int, sizes: Sequence[int]) -> tuple[int, int, str, str]:
    """(state bytes, step temporary bytes, their explanations); ``sizes``: elements of each trained tensor."""
    label, bits, block, qmap = LAYOUT[name]
    quantised = [n for n in sizes if n >= 4096 and n % block == 0]
    plain = sum(sizes) - sum(quantised)
    # codes (uint8, two 4-bit codes a byte for AdamW4bit), scale = zeros(numel // block_size) fp32, qmap fp32
    per_state = sum(n * bits // 8 + 4 * (n // block) + 4 * qmap for n in quantised)
    states = 2 * per_state + 2 * plain * state_bytes
    # single_param_adam (torch.compile, fullgraph): exp_avg_f32 and exp_avg_sq_f32 feed both the quantising copy_
    # (a block-wise absmax) and the update, so the compiled graph keeps both in fp32 for the tensor being stepped
    temp = 2 * 4 * max(sizes, default=0)
    explain = TORCHAO_STATES(name=label, bits=bits, block=block, quantised=sum(quantised), plain=plain)
    return states, temp, explain, TORCHAO_TEMP
