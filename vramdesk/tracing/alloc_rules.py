"""The caching allocator's constants, size rules and statistics (``c10/cuda/CUDACachingAllocator.cpp``; see
:mod:`vramdesk.tracing.allocator` for the sources and what is modelled). Standard library only."""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

K_MIN_BLOCK_SIZE = 512  # all sizes are rounded to at least 512 bytes
K_SMALL_SIZE = MIB  # largest "small" allocation is 1 MiB
K_SMALL_BUFFER = 2 * MIB  # "small" allocations are packed in 2 MiB segments
K_LARGE_BUFFER = 20 * MIB  # 1-10 MiB allocations get 20 MiB segments; also the oversize rounding limit
K_MIN_LARGE_ALLOC = 10 * MIB  # allocations below this (and above 1 MiB) use a kLargeBuffer segment
K_ROUND_LARGE = 2 * MIB  # larger allocations are rounded up to 2 MiB
SIZE_MAX = (1 << 64) - 1  # max_split_size when unset (std::numeric_limits<size_t>::max())
_ONE_EIB = 1 << 60  # torch refuses any single request this large up front
_UNBOUNDED_ADDRESS_SPACE = 16 << 40  # expandable-segment address space when no capacity is given
_FIRST_ADDRESS = 1 << 40

TRACE_FORMAT = "vramdesk-alloc-trace/1"


class OutOfMemory(Exception):  # noqa: N818 - the name others call
    """The simulated ``torch.OutOfMemoryError``: the device malloc failed even after freeing the cache."""

    def __init__(
        self,
        message: str,
        *,
        requested: int = 0,
        alloc_size: int = 0,
        capacity: int | None = None,
        free: int = 0,
        allocated: int = 0,
        reserved: int = 0,
    ) -> None:
        super().__init__(message)
        self.requested = requested
        self.alloc_size = alloc_size
        self.capacity = capacity
        self.free = free
        self.allocated = allocated
        self.reserved = reserved


class TraceError(ValueError):
    """A malformed trace or event stream (bad header, unknown event, free of an id that is not live)."""


def format_size(nbytes: int) -> str:
    """Bytes as torch's OOM message prints them (``c10::CachingAllocator::format_size``)."""
    if nbytes <= KIB:
        return f"{nbytes} bytes"
    if nbytes <= MIB:
        return f"{nbytes / KIB:.2f} KiB"
    if nbytes <= GIB:
        return f"{nbytes / MIB:.2f} MiB"
    return f"{nbytes / GIB:.2f} GiB"


def _roundup_power2_next_division(size: int, divisions: int) -> int:
    if size & (size - 1) == 0:
        return size
    power2_floor = 1 << (size.bit_length() - 1)
    step = power2_floor >> (divisions.bit_length() - 1)
    if step == 0:
        return power2_floor << 1
    floor = size & ~(step - 1)
    return size if floor == size else floor + step


def round_size(nbytes: int, roundup_power2_divisions: int | None = None) -> int:
    """The block size a request of ``nbytes`` gets (``DeviceCachingAllocator::round_size``)."""
    if nbytes < K_MIN_BLOCK_SIZE:
        return K_MIN_BLOCK_SIZE
    divisions = roundup_power2_divisions or 0
    if divisions > 1 and nbytes > K_MIN_BLOCK_SIZE * divisions:
        return _roundup_power2_next_division(nbytes, divisions)
    return -(-nbytes // K_MIN_BLOCK_SIZE) * K_MIN_BLOCK_SIZE


def get_allocation_size(size: int) -> int:
    """The segment size cudaMalloc'd for a rounded request no cached block can serve."""
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return -(-size // K_ROUND_LARGE) * K_ROUND_LARGE


@dataclass
class Stats:
    """Byte counts as ``torch.cuda.memory_stats()`` keeps them (aggregate pool, single device)."""

    allocated: int = 0  # allocated_bytes.all.current
    reserved: int = 0  # reserved_bytes.all.current
    peak_allocated: int = 0  # allocated_bytes.all.peak (torch.cuda.max_memory_allocated)
    peak_reserved: int = 0  # reserved_bytes.all.peak (torch.cuda.max_memory_reserved)
    segments: int = 0  # cudaMalloc segments + mapped ranges of expandable segments
    num_alloc_retries: int = 0
    num_ooms: int = 0
    requested: int = 0  # requested_bytes.all.current: unrounded sizes of live allocations
    peak_requested: int = 0
    num_device_alloc: int = 0  # cudaMalloc calls + page-range maps
    num_device_free: int = 0  # cudaFree calls + page-range unmaps
