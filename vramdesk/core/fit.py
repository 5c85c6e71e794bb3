"""Fit verdict: an estimate's per-GPU device bytes against a GPU's memory (total, and free when detected)."""

from __future__ import annotations

from . import constants as K
from .gpu import GIB, GpuSpec
from .result import Fit


def headroom(memory_bytes: int) -> int:
    return max(K.FIT_HEADROOM_MIN, int(memory_bytes * K.FIT_HEADROOM_FRACTION))


def verdict(
    required_bytes: int,
    gpu: GpuSpec,
    gpu_count: int = 1,
    *,
    budget_bytes: int | None = None,
    budget_label: str = "",
    headroom_fraction: float | None = None,
    allocated_bytes: int | None = None,
) -> Fit:
    """``required_bytes`` is what the busiest GPU needs (device level, as nvidia-smi shows it).

    ``budget_bytes`` caps what the engine will use (vLLM: gpu_memory_utilization x total); the headroom then
    applies inside that budget, which already leaves the rest of the GPU free.

    ``allocated_bytes``: the part of ``required_bytes`` that live tensors hold (the rest is PyTorch's cache of free
    blocks). When only the cache overflows the card, the run is "tight", not "does not fit": the caching allocator
    frees its cached blocks and retries before it reports out of memory, so it succeeds unless the blocks it cannot
    give back (split ones) leave too little.
    """
    available = gpu.memory_bytes if gpu.free_bytes is None else max(0, min(gpu.memory_bytes, gpu.free_bytes))
    where = "free" if gpu.free_bytes is not None else "total"
    room = (
        headroom(gpu.memory_bytes) if headroom_fraction is None else max(0, int(gpu.memory_bytes * headroom_fraction))
    )
    if budget_bytes is not None and budget_bytes < available:
        available, where = budget_bytes, budget_label or "budget"
        room = max(K.FIT_HEADROOM_MIN // 4, int(budget_bytes * 0.02))
    # nothing free (another job fills the GPU): the formula's limit is -inf, JSON needs a finite number
    margin = (available - required_bytes) / available if available > 0 else (-1.0 if required_bytes > 0 else 0.0)
    cache_only = required_bytes > available and allocated_bytes is not None and allocated_bytes <= available
    if available == 0 and where == "free":
        v = "does not fit"
        msg = _nothing_free(gpu) + f"; needs {required_bytes / GIB:.2f} GiB per GPU"
    elif cache_only and allocated_bytes is not None:
        v = "tight"
        msg = (
            f"needs {allocated_bytes / GIB:.2f} GiB of {available / GIB:.2f} GiB {where} for live tensors, "
            f"{required_bytes / GIB:.2f} GiB with PyTorch's cache of free blocks: the allocator gives cached blocks "
            f"back before it runs out, so this runs unless fragmentation takes more than the "
            f"{(available - allocated_bytes) / GIB:.2f} GiB left; expandable_segments:True lowers that risk"
        )
    elif required_bytes > available:
        v = "does not fit"
        msg = (
            f"needs {required_bytes / GIB:.2f} GiB per GPU but the {gpu.name} has {available / GIB:.2f} GiB {where}: "
            f"short by {(required_bytes - available) / GIB:.2f} GiB"
        )
    elif required_bytes > available - room:
        v = "tight"
        msg = (
            f"needs {required_bytes / GIB:.2f} GiB of {available / GIB:.2f} GiB {where}: less than the "
            f"{room / GIB:.2f} GiB headroom left for the display, other processes and allocator spikes"
        )
    else:
        v = "fits"
        msg = (
            f"needs {required_bytes / GIB:.2f} GiB of {available / GIB:.2f} GiB {where}; "
            f"{(available - required_bytes) / GIB:.2f} GiB to spare"
        )
    if gpu.free_note:  # the detected figures did not add up: say what the verdict planned with
        msg += f"; {gpu.free_note}"
    return Fit(
        gpu=gpu.name,
        gpu_count=gpu_count,
        memory_bytes=gpu.memory_bytes,
        free_bytes=gpu.free_bytes,
        required_bytes=required_bytes,
        headroom_bytes=room,
        verdict=v,
        margin_fraction=round(margin, 4),
        message=msg,
        available_bytes=available,
        basis=where,
        short_bytes=0 if cache_only else max(0, required_bytes - available),
        live_bytes=allocated_bytes if cache_only else None,
    )


def _nothing_free(gpu: GpuSpec) -> str:
    """Why nothing fits: "no free memory on GPU 0 (the RTX 4090): other processes hold 23.70 GiB (process 4242 ...)"."""
    where = f"GPU {gpu.device_index} (the {gpu.name})" if gpu.device_index is not None else f"the {gpu.name}"
    msg = f"no free memory on {where}"
    if gpu.used_bytes:
        msg += f": other processes hold {gpu.used_bytes / GIB:.2f} GiB"
    if gpu.held_by:
        msg += f" ({gpu.held_by})"
    return msg
