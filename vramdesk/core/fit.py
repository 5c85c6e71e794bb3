"""Fit verdict: an estimate's per-GPU device bytes against a GPU's memory (total, and free when detected)."""

from __future__ import annotations

from . import constants as K
from .gpu import GIB, GpuSpec
from .messages import Message, Text, free, join
from .result import Fit

#: what a verdict compares with (``Fit.basis``)
TOTAL = Message("fit.basis.total", "total")()
FREE = Message("fit.basis.free", "free")()
BUDGET = Message("fit.basis.budget", "budget")()
#: vLLM's budget (``EngineRun.fit_budget_label``)
BUDGET_LABEL = Message("fit.basis.gpu_memory_utilization", "within gpu_memory_utilization {utilization}")
_BASES = {str(t): t for t in (TOTAL, FREE, BUDGET)}

SPARE = Message("fit.spare", "needs {need:.2f} GiB of {available:.2f} GiB {basis}; {spare:.2f} GiB to spare")
TIGHT = Message(
    "fit.tight",
    "needs {need:.2f} GiB of {available:.2f} GiB {basis}: less than the {headroom:.2f} GiB headroom left for the "
    "display, other processes and allocator spikes",
)
SHORT = Message(
    "fit.short",
    "needs {need:.2f} GiB per GPU but the {gpu} has {available:.2f} GiB {basis}: short by {short:.2f} GiB",
)
CACHE_ONLY = Message(
    "fit.cache_only",
    "needs {live:.2f} GiB of {available:.2f} GiB {basis} for live tensors, {need:.2f} GiB with PyTorch's cache of "
    "free blocks: the allocator gives cached blocks back before it runs out, so this runs unless fragmentation "
    "takes more than the {left:.2f} GiB left; expandable_segments:True lowers that risk",
)
NEEDS_PER_GPU = Message("fit.needs_per_gpu", "needs {need:.2f} GiB per GPU")
NOTHING_FREE_ON_GPU = Message("fit.nothing_free.gpu", "no free memory on GPU {index} (the {gpu})")
NOTHING_FREE = Message("fit.nothing_free", "no free memory on the {gpu}")
HELD = Message("fit.nothing_free.held", "{message}: other processes hold {used:.2f} GiB")
#: the biggest holder as the services word it ("process 4242 python3 holds 22.00 GiB", a Text of theirs)
HELD_BY = Message("fit.nothing_free.held_by", "{message} ({processes})")


def basis_text(label: str) -> Text:
    """A basis word as its :class:`Text` ("total", "free", "budget" or an engine's label kept as it came)."""
    if isinstance(label, Text):
        return label
    return _BASES.get(label) or free(label)


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
    refusal: Text | None = None,
) -> Fit:
    """``required_bytes`` is what the busiest GPU needs (device level, as nvidia-smi shows it).

    ``budget_bytes`` caps what the engine will use (vLLM: gpu_memory_utilization x total); the headroom then
    applies inside that budget, which already leaves the rest of the GPU free.

    ``allocated_bytes``: the part of ``required_bytes`` that live tensors hold (the rest is PyTorch's cache of free
    blocks). When only the cache overflows the card, the run is "tight", not "does not fit": the caching allocator
    frees its cached blocks and retries before it reports out of memory, so it succeeds unless the blocks it cannot
    give back (split ones) leave too little.

    ``refusal``: the engine's own start-up check failed (vLLM: no room for one request of max_model_len); the verdict
    is "does not fit" with that reason, whatever the bytes say.
    """
    available = gpu.memory_bytes if gpu.free_bytes is None else max(0, min(gpu.memory_bytes, gpu.free_bytes))
    where: Text = FREE if gpu.free_bytes is not None else TOTAL
    room = (
        headroom(gpu.memory_bytes) if headroom_fraction is None else max(0, int(gpu.memory_bytes * headroom_fraction))
    )
    if budget_bytes is not None and budget_bytes < available:
        available, where = budget_bytes, basis_text(budget_label) if budget_label else BUDGET
        room = max(K.FIT_HEADROOM_MIN // 4, int(budget_bytes * 0.02))
    # nothing free (another job fills the GPU): the formula's limit is -inf, JSON needs a finite number
    margin = (available - required_bytes) / available if available > 0 else (-1.0 if required_bytes > 0 else 0.0)
    cache_only = required_bytes > available and allocated_bytes is not None and allocated_bytes <= available
    need, avail = required_bytes / GIB, available / GIB
    msg: Text
    if available == 0 and where == "free":
        v = "does not fit"
        msg = join("; ", _nothing_free(gpu), NEEDS_PER_GPU(need=need))
    elif refusal is not None:
        v = "does not fit"
        msg = refusal
    elif cache_only and allocated_bytes is not None:
        v = "tight"
        msg = CACHE_ONLY(
            live=allocated_bytes / GIB, available=avail, basis=where, need=need,
            left=(available - allocated_bytes) / GIB,
        )  # fmt: skip
    elif required_bytes > available:
        v = "does not fit"
        msg = SHORT(need=need, gpu=gpu.name, available=avail, basis=where, short=(required_bytes - available) / GIB)
    elif required_bytes > available - room:
        v = "tight"
        msg = TIGHT(need=need, available=avail, basis=where, headroom=room / GIB)
    else:
        v = "fits"
        msg = SPARE(need=need, available=avail, basis=where, spare=(available - required_bytes) / GIB)
    if gpu.free_note:  # the detected figures did not add up: say what the verdict planned with
        msg = join("; ", msg, free(gpu.free_note))
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


def _nothing_free(gpu: GpuSpec) -> Text:
    """Why nothing fits: "no free memory on GPU 0 (the RTX 4090): other processes hold 23.70 GiB (process 4242 ...)"."""
    msg = (
        NOTHING_FREE_ON_GPU(index=gpu.device_index, gpu=gpu.name)
        if gpu.device_index is not None
        else NOTHING_FREE(gpu=gpu.name)
    )
    if gpu.used_bytes:
        msg = HELD(message=msg, used=gpu.used_bytes / GIB)
    if gpu.held_by:
        msg = HELD_BY(message=msg, processes=free(gpu.held_by))
    return msg
