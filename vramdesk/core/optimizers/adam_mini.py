"""Adam-mini (the adam-mini package, 1.1.1, ``adam_mini/adam_mini.py`` ``Adam_mini.step``): Adam's first moment
for every parameter, and one second-moment value per block of its partition instead of one per element."""

from __future__ import annotations

from collections.abc import Sequence

from ..inventory import Tensor
from ..messages import Message

ADAM_MINI_STATES = Message(
    "optimizer.states.adam_mini",
    "Adam-mini: a first moment per trainable parameter x {bytes} B and {blocks:,} second-moment values (one per "
    "head, output row or norm), full Adam states for {biases:,} bias parameters",
)
ADAM_MINI_TEMP = Message(
    "optimizer.temp.adam_mini",
    "one parameter at a time: its update and the update's negation ({copies} x the largest tensor)",
)

# the name sets of Adam_mini.__init__ (matched in the lower-cased parameter name)
_WQK = ("k_proj", "q_proj", "wq", "wk", "query", "key")
_ROWS = (
    "embed",
    "embd",
    "wte",
    "lm_head",
    "output",
    "final_layer",
    "v_proj",
    "wv",
    "value",
    "feed_forward",
    "linear",
    "mlp",
    "o_proj",
    "wo",
    "attn.proj",
)


def second_moments(t: Tensor) -> int:
    """Second-moment values ``Adam_mini.step`` keeps for one trained tensor (a bias: one per element)."""
    name = t.name.lower()
    if "bias" in name:
        return t.numel
    if len(t.shape) >= 2 and any(k in name for k in _WQK + _ROWS):
        # vmean = zeros_like(m[0:rows, 0:1]): one per output row; queries and keys have one per head of
        # dim x dim / n_heads elements, fewer than their rows (counted as rows here: at most a few thousand values)
        return t.shape[0]
    return 1  # the other blocks (norms): vmean = zeros_like(torch.sum(p * p)), one value


def adam_mini_bytes(state_bytes: int, tensors: Sequence[Tensor]) -> tuple[int, int, str, str]:
    """(state bytes, step temporary bytes, their explanations) over every trained tensor; the states are
    ``zeros_like(p)`` in the parameters' dtype."""
    biases = sum(t.numel for t in tensors if "bias" in t.name.lower())
    blocks = sum(second_moments(t) for t in tensors if "bias" not in t.name.lower())
    first = sum(t.numel for t in tensors)
    states = (first + blocks + biases) * state_bytes
    # update = (m * stepsize).view(p.size()) and p.add_(-update): two tensors of the parameter's size
    largest = max((t.numel for t in tensors), default=0)
    return (
        states,
        2 * largest * state_bytes,
        ADAM_MINI_STATES(bytes=state_bytes, blocks=blocks, biases=biases),
        ADAM_MINI_TEMP(copies=2),
    )
