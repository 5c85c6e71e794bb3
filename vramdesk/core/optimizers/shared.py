"""Layouts more than one optimizer family uses."""

from __future__ import annotations

from math import ceil


def bnb_8bit_state_bytes(elements: int) -> int:
    """bitsandbytes' block-wise 8-bit Adam states of ``elements``: two 1-byte states and an fp32 absmax per
    2,048-element block of each."""
    return elements * 2 + ceil(elements / 2048) * 4 * 2
