"""A pure-Python model of PyTorch's CUDA caching allocator, for replaying recorded allocation traces.

Replays an ordered stream of tensor-storage allocations and frees (recorded from a training step, see
``vramdesk.tracing.child``) through the block/segment rules of ``DeviceCachingAllocator`` in
``c10/cuda/CUDACachingAllocator.cpp`` and reports what ``torch.cuda.max_memory_allocated`` /
``max_memory_reserved`` would show, the fragmentation (reserved but unallocated bytes), and whether, and at what
device capacity, the run would stop with "CUDA out of memory". Standard library only (no torch, no numpy).

Source read (rules carried over, no code copied), repository ``pytorch/pytorch``, path
``c10/cuda/CUDACachingAllocator.cpp``:

* commit ``eb42ad6eca0ce61e7c581212b4bf32f991425571`` -- 2.2/2.3-era code (``c10::optional``, the OOM text says
  "total capacity", ``ExpandableSegment(device, stream, page_size, peers)``);
* commit ``001074d25084fdb87a799823e395a50f5ec044d3`` -- later (about 2.5-era: expandable segments shareable over
  IPC, trace ring buffer). The rules modelled here are the same in both.
  https://github.com/pytorch/pytorch/blob/eb42ad6eca0ce61e7c581212b4bf32f991425571/c10/cuda/CUDACachingAllocator.cpp
  https://github.com/pytorch/pytorch/blob/001074d25084fdb87a799823e395a50f5ec044d3/c10/cuda/CUDACachingAllocator.cpp
  (Commit dates and release tags could not be checked here; the eras come from the features each file has. A
  2.1 copy was not among the stored versions searched; 2.1's OOM message, spelled "total capacty" in user
  reports, has the same structure, and expandable segments first shipped in 2.1.) The 2.1–2.4 defaults (no
  ``max_split_size``, no power-of-two rounding, no GC, ``expandable_segments`` off) are what matters most.

What changed elsewhere, not modelled: in 2.2/2.3-era code ``roundup_power2_divisions:1`` left sizes above 512 B
unrounded (``divisions > 0`` test); later code only uses power-of-two rounding for ``divisions > 1`` (followed
here; the default of 0 divisions behaves the same in both). Later versions make the 20 MiB constant configurable
twice over: ``max_non_split_rounding_mb`` (how far above an oversize request a cached oversize block may be,
``kLargeBuffer`` here) and, in the newest ``AcceleratorAllocatorConfig``, ``large_segment_size`` (the segment made
for 1–10 MiB requests, 20 MiB by default). Both are fixed here at their default, 20 MiB, the only value before
the options existed.

Rules modelled (names as in the C++):

* ``round_size``: below ``kMinBlockSize`` (512 B) -> 512 B; with ``roundup_power2_divisions`` d > 1 and
  size > 512·d -> the next of d equal steps between powers of two; otherwise up to a multiple of 512 B.
* pools: rounded size <= ``kSmallSize`` (1 MiB) -> small pool, else large pool; free blocks of each pool are kept
  sorted by (size, address) -- the (stream, size, address) order of the C++ with one stream.
* ``get_allocation_size`` (the cudaMalloc size when no cached block fits): <= 1 MiB -> ``kSmallBuffer`` 2 MiB;
  < ``kMinLargeAlloc`` 10 MiB -> ``kLargeBuffer`` 20 MiB; else rounded up to ``kRoundLarge`` 2 MiB.
* ``get_free_block``: best fit = the first free block with size >= request (ties: lower address). With
  ``max_split_size``: a request below it never takes a block at or above it; a request at or above it takes a
  block only if that block is < request + 20 MiB. Either refusal ends the search (no further block is tried).
* ``should_split``: small pool (or expandable segments): split if remainder >= 512 B; large pool: split only if
  the request is below ``max_split_size`` and the remainder is > 1 MiB. An unsplit block counts whole as allocated.
* ``free_block`` / ``try_merge_blocks``: a freed block merges with free neighbours of the same segment.
* ``malloc`` when nothing cached fits: [GC if enabled] -> ``alloc_block`` (device malloc) -> if that fails,
  ``release_available_cached_blocks`` (only with ``max_split_size``: free one cached oversize block big enough, or
  the largest oversize ones until enough) and try again -> ``release_cached_blocks`` (free every cached segment
  that is wholly free; unmap free pages of expandable segments), ``num_alloc_retries += 1``, try once more ->
  ``OutOfMemory`` (``num_ooms += 1``).
* allocated = sum of live blocks' sizes (after rounding, including unsplit slack); reserved = sum of cudaMalloc
  segment sizes + mapped pages of expandable segments. A device malloc fails when reserved + its size would exceed
  ``capacity - context_bytes`` (the device's own 2 MiB granularity is implied: every segment and page is a
  multiple of 2 MiB).
* ``garbage_collection_threshold``: torch runs it only after ``set_per_process_memory_fraction``; here it is active
  when both it and ``capacity`` are given, ``capacity - context_bytes`` standing for the allowed maximum (then, as
  in torch, a device malloc is also refused when reserved + the request's segment size exceeds it). Before each
  device malloc, if reserved > threshold·allowed, wholly free large-pool segments at least as "old" as the average
  (counted in ``get_free_block`` calls since they were cached) are freed, repeatedly, until enough is reclaimed.
* ``expandable_segments`` (Note [Expandable Segments] in the C++): one virtual address range per pool
  (1⅛ × device memory, or 16 TiB without a capacity) is mapped on demand in pages of 2 MiB (small pool) or
  20 MiB (large pool). A request that fits no free block maps pages at the lowest address where free + unmapped
  space is enough (normally the end of the segment, extending the free tail block), so blocks tile one growing
  segment instead of many. Best fit counts a free block followed by unmapped space as its size plus that space.
  Blocks split whenever the remainder is >= 512 B. ``empty_cache`` and the OOM retry unmap every wholly free page
  (splitting off the partial pages of a free block), and drop a segment once nothing in it is mapped. Reserved
  grows by whole pages. With ``max_split_size`` also set, ``release_available_cached_blocks`` is skipped (torch
  would assert there, since its oversize blocks are then in expandable segments).

Not modelled: more than one stream (no ``record_stream``, no cross-stream event deferral -- frees are immediate),
CUDA graphs / private pools / ``MemPool``, free-memory callbacks, IPC, allocations made outside the caching
allocator (cuBLAS/cuDNN/NCCL workspaces that bypass it, the CUDA context: pass them as ``context_bytes``), the
driver's choice of addresses (segments get increasing addresses, which only matters for ties between free blocks
of equal size), and switching ``expandable_segments`` on or off mid-run. ``Stats.segments`` counts cudaMalloc
segments, and for expandable segments the contiguous mapped ranges (what ``torch.cuda.memory_snapshot`` lists;
torch's own ``segment`` stat does not count them).

Speed (measured with CPython 3.11.7 on this project's 2-core AMD EPYC build VM): a synthetic 200,000-event trace
(100,000 allocations of 512 B to 256 MiB, up to 3,000 live, and their frees) replays in 0.27 s (0.29 s with
expandable segments); with up to 30,000 live tensors 0.40 s (0.53 s). ``min_capacity`` on the first (a dozen
replays) takes about 2.2 s.

Command line: ``python benchmarks/allocator/caching_allocator.py TRACE.jsonl.gz [--capacity-gib 80] ...``;
:mod:`vramdesk.tracing.replay` replays a stream, :mod:`vramdesk.tracing.alloc_rules` holds the size rules.
"""

from __future__ import annotations

import bisect
from typing import Any

from vramdesk.tracing.alloc_rules import (
    _FIRST_ADDRESS,
    _ONE_EIB,
    _UNBOUNDED_ADDRESS_SPACE,
    K_LARGE_BUFFER,
    K_MIN_BLOCK_SIZE,
    K_SMALL_BUFFER,
    K_SMALL_SIZE,
    SIZE_MAX,
    OutOfMemory,
    Stats,
    format_size,
    get_allocation_size,
    round_size,
)


class _Segment:
    """One expandable segment: a reserved virtual range whose pages are mapped on demand."""

    __slots__ = ("base", "mapped", "max_pages", "page")

    def __init__(self, base: int, page: int, max_pages: int) -> None:
        self.base = base
        self.page = page
        self.max_pages = max_pages
        self.mapped: list[bool] = []  # per page, trimmed of unmapped pages at the end (handles_ in the C++)

    @property
    def size(self) -> int:
        return self.page * self.max_pages

    def ranges(self) -> int:
        runs, prev = 0, False
        for m in self.mapped:
            if m and not prev:
                runs += 1
            prev = m
        return runs


class _Block:
    __slots__ = ("addr", "allocated", "gc_base", "mapped", "next", "prev", "requested", "seg", "size", "small")

    def __init__(self, addr: int, size: int, small: bool, seg: _Segment | None = None, mapped: bool = True) -> None:
        self.addr = addr
        self.size = size
        self.small = small
        self.seg = seg
        self.mapped = mapped
        self.allocated = False
        self.requested = 0
        self.prev: _Block | None = None
        self.next: _Block | None = None
        self.gc_base = 0

    def is_split(self) -> bool:
        return self.prev is not None or self.next is not None

    def splice(self, before: _Block | None, after: _Block | None) -> None:
        if before is not None:
            before.next = self
        self.prev = before
        if after is not None:
            after.prev = self
        self.next = after


class _Pool:
    """Free mapped blocks sorted by (size, address), and unmapped expandable ranges sorted by address."""

    __slots__ = ("free", "gc_calls", "keys", "small", "unmapped", "unmapped_addrs")

    def __init__(self, small: bool) -> None:
        self.small = small
        self.keys: list[tuple[int, int]] = []
        self.free: dict[int, _Block] = {}
        self.unmapped_addrs: list[int] = []
        self.unmapped: dict[int, _Block] = {}
        self.gc_calls = 0  # get_free_blocks_call_count

    def insert(self, b: _Block) -> None:
        bisect.insort(self.keys, (b.size, b.addr))
        self.free[b.addr] = b
        b.gc_base = self.gc_calls

    def remove(self, b: _Block) -> None:
        key = (b.size, b.addr)
        i = bisect.bisect_left(self.keys, key)
        if i == len(self.keys) or self.keys[i] != key:
            raise AssertionError(f"block {key} is not in the free pool")
        del self.keys[i]
        del self.free[b.addr]

    def insert_unmapped(self, b: _Block) -> None:
        bisect.insort(self.unmapped_addrs, b.addr)
        self.unmapped[b.addr] = b

    def remove_unmapped(self, b: _Block) -> None:
        i = bisect.bisect_left(self.unmapped_addrs, b.addr)
        if i == len(self.unmapped_addrs) or self.unmapped_addrs[i] != b.addr:
            raise AssertionError(f"unmapped block at {b.addr:#x} is not in the pool")
        del self.unmapped_addrs[i]
        del self.unmapped[b.addr]


class CachingAllocator:
    """``DeviceCachingAllocator`` for one device and one stream.

    ``capacity`` is the device's total memory in bytes (None: unlimited); ``context_bytes`` of it are taken by
    things outside the allocator (CUDA context, libraries), so device mallocs fail once reserved would pass
    ``capacity - context_bytes``. ``max_split_size`` (bytes, > 20 MiB as torch requires of ``max_split_size_mb``),
    ``expandable_segments``, ``roundup_power2_divisions`` (a power of two, for every size range) and
    ``garbage_collection_threshold`` (0 < t < 1) mirror the ``PYTORCH_CUDA_ALLOC_CONF`` options.
    ``malloc`` returns the block's (simulated) address as its handle; 0 for a zero-byte request, as torch does.
    """

    def __init__(
        self,
        capacity: int | None = None,
        *,
        max_split_size: int | None = None,
        expandable_segments: bool = False,
        roundup_power2_divisions: int | None = None,
        garbage_collection_threshold: float | None = None,
        context_bytes: int = 0,
    ) -> None:
        if capacity is not None and capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        if context_bytes < 0:
            raise ValueError(f"context_bytes must be >= 0, got {context_bytes}")
        if max_split_size is not None and max_split_size <= K_LARGE_BUFFER:
            raise ValueError(f"max_split_size must be > {K_LARGE_BUFFER} bytes (20 MiB), got {max_split_size}")
        if roundup_power2_divisions is not None and (
            roundup_power2_divisions < 0 or roundup_power2_divisions & (roundup_power2_divisions - 1)
        ):
            raise ValueError(f"roundup_power2_divisions must be a power of two, got {roundup_power2_divisions}")
        if garbage_collection_threshold is not None and not 0.0 < garbage_collection_threshold < 1.0:
            raise ValueError(f"garbage_collection_threshold must be in (0, 1), got {garbage_collection_threshold}")
        self.capacity = capacity
        self.context_bytes = context_bytes
        self.max_split_size = max_split_size
        self.expandable_segments = expandable_segments
        self.roundup_power2_divisions = roundup_power2_divisions
        self.garbage_collection_threshold = garbage_collection_threshold
        self._limit: int | None = None if capacity is None else capacity - context_bytes
        self._mss = SIZE_MAX if max_split_size is None else max_split_size
        self._gc = garbage_collection_threshold is not None and self._limit is not None
        self._small = _Pool(True)
        self._large = _Pool(False)
        self._live: dict[int, _Block] = {}
        self._es: list[_Segment] = []
        self._next_va = _FIRST_ADDRESS
        self._allocated = 0
        self._reserved = 0
        self._peak_allocated = 0
        self._peak_reserved = 0
        self._requested = 0
        self._peak_requested = 0
        self._nsegments = 0  # cudaMalloc segments
        self._retries = 0
        self._ooms = 0
        self._device_alloc = 0
        self._device_free = 0

    # -- public API -------------------------------------------------------------------------------------------

    def malloc(self, nbytes: int) -> int:
        """Allocate ``nbytes`` (unrounded); returns a handle for ``free``. Raises ``OutOfMemory``."""
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative size ({nbytes})")
        if nbytes == 0:
            return 0
        if nbytes >= _ONE_EIB:
            raise OutOfMemory(
                "CUDA out of memory. Tried to allocate more than 1EB memory.",
                requested=nbytes,
                capacity=self.capacity,
                allocated=self._allocated,
                reserved=self._reserved,
            )
        size = round_size(nbytes, self.roundup_power2_divisions)
        pool = self._small if size <= K_SMALL_SIZE else self._large
        alloc_size = get_allocation_size(size)
        block = self._get_free_block(pool, size)
        if block is None:
            if self._gc:
                self._garbage_collect_cached_blocks()
            block = self._alloc_block(pool, size, alloc_size, False)
            if block is None and self._release_available_cached_blocks(pool, size):
                block = self._alloc_block(pool, size, alloc_size, False)
            if block is None:
                self._release_cached_blocks()
                block = self._alloc_block(pool, size, alloc_size, True)
            if block is None:
                self._ooms += 1
                raise self._oom(nbytes, alloc_size)
        return self._alloc_found_block(pool, block, size, nbytes)

    def free(self, handle: int) -> None:
        """Return a block to the cache (no device free happens here)."""
        if handle == 0:
            return
        block = self._live.pop(handle, None)
        if block is None:
            raise ValueError(f"invalid device pointer: {handle:#x} (not allocated, or already freed)")
        block.allocated = False
        self._allocated -= block.size
        self._requested -= block.requested
        self._free_block(block)

    def empty_cache(self) -> None:
        """``torch.cuda.empty_cache()``: free wholly free segments, unmap free pages of expandable ones."""
        self._release_cached_blocks()

    def reset_peak(self) -> None:
        """``torch.cuda.reset_peak_memory_stats()``: peaks restart from the current values."""
        self._peak_allocated = self._allocated
        self._peak_reserved = self._reserved
        self._peak_requested = self._requested

    @property
    def stats(self) -> Stats:
        return Stats(
            allocated=self._allocated,
            reserved=self._reserved,
            peak_allocated=self._peak_allocated,
            peak_reserved=self._peak_reserved,
            segments=self._nsegments + sum(s.ranges() for s in self._es),
            num_alloc_retries=self._retries,
            num_ooms=self._ooms,
            requested=self._requested,
            peak_requested=self._peak_requested,
            num_device_alloc=self._device_alloc,
            num_device_free=self._device_free,
        )

    def block_size(self, handle: int) -> int:
        """The size of the live block behind ``handle`` (what it counts in ``allocated``)."""
        return self._live[handle].size if handle else 0

    def snapshot(self) -> list[dict[str, Any]]:
        """Segments like ``torch.cuda.memory_snapshot()``: address, sizes, pool, blocks (size, state)."""
        blocks = [*self._live.values(), *self._small.free.values(), *self._large.free.values()]
        out: list[dict[str, Any]] = []
        for head in blocks:
            if head.prev is not None and head.prev.mapped:
                continue
            seg: dict[str, Any] = {
                "address": head.addr,
                "total_size": 0,
                "allocated_size": 0,
                "is_large": not head.small,
                "is_expandable": head.seg is not None,
                "blocks": [],
            }
            b: _Block | None = head
            while b is not None and b.mapped:
                seg["blocks"].append({"size": b.size, "allocated": b.allocated, "requested_size": b.requested})
                seg["total_size"] += b.size
                if b.allocated:
                    seg["allocated_size"] += b.size
                b = b.next
            out.append(seg)
        out.sort(key=lambda s: s["address"])
        return out

    def check_invariants(self) -> None:
        """Raise AssertionError if the block lists, pools and counters disagree (for tests)."""
        assert self._allocated == sum(b.size for b in self._live.values()), "allocated != sum of live blocks"
        assert self._requested == sum(b.requested for b in self._live.values()), "requested mismatch"
        assert all(b.allocated and b.mapped for b in self._live.values())
        heads: list[_Block] = []
        for pool in (self._small, self._large):
            assert pool.keys == sorted(pool.keys), "free pool out of order"
            assert len(pool.keys) == len(pool.free)
            for size, addr in pool.keys:
                fb = pool.free[addr]
                assert (fb.size, fb.addr) == (size, addr) and not fb.allocated and fb.mapped and fb.small == pool.small
            assert pool.unmapped_addrs == sorted(pool.unmapped)
            for addr, ub in pool.unmapped.items():
                assert ub.addr == addr and not ub.mapped and ub.seg is not None
            heads += [hb for hb in [*pool.free.values(), *pool.unmapped.values()] if hb.prev is None]
        heads += [lb for lb in self._live.values() if lb.prev is None]
        malloc_bytes = 0
        malloc_segments = 0
        mapped_bytes = 0
        for head in heads:
            b: _Block | None = head
            if head.seg is None:
                malloc_segments += 1
            else:
                assert head.addr == head.seg.base, "expandable segment head not at its base"
            total = 0
            while b is not None:
                nxt = b.next
                total += b.size
                if b.seg is None:
                    malloc_bytes += b.size
                elif b.mapped:
                    mapped_bytes += b.size
                if nxt is not None:
                    assert nxt.prev is b, "broken prev/next links"
                    assert b.addr + b.size == nxt.addr, "blocks of a segment are not contiguous"
                    assert nxt.seg is b.seg
                    both_free = not b.allocated and not nxt.allocated
                    assert not (both_free and b.mapped == nxt.mapped), "adjacent free blocks were not merged"
                b = nxt
            if head.seg is not None:
                assert total == head.seg.size, "expandable segment blocks do not cover its address space"
        assert malloc_segments == self._nsegments, "segment count mismatch"
        pages = sum(sum(s.mapped) * s.page for s in self._es)
        assert mapped_bytes == pages, "mapped blocks disagree with mapped pages"
        assert self._reserved == malloc_bytes + mapped_bytes, "reserved != segments + mapped pages"
        if self._limit is not None:
            assert self._reserved <= self._limit, "reserved beyond capacity"

    # -- internals (names follow DeviceCachingAllocator) ------------------------------------------------------

    def _pool_of(self, b: _Block) -> _Pool:
        return self._small if b.small else self._large

    def _reserve_va(self, size: int) -> int:
        addr = self._next_va
        self._next_va += -(-size // K_LARGE_BUFFER) * K_LARGE_BUFFER + K_LARGE_BUFFER  # aligned, with a gap
        return addr

    def _oom(self, nbytes: int, alloc_size: int) -> OutOfMemory:
        total = self.capacity if self.capacity is not None else 0
        free = max(0, total - self.context_bytes - self._reserved)
        allocated, reserved = self._allocated, self._reserved
        msg = (
            f"CUDA out of memory. Tried to allocate {format_size(alloc_size)}. GPU 0 has a total capacity of "
            f"{format_size(total)} of which {format_size(free)} is free. Of the allocated memory "
            f"{format_size(allocated)} is allocated by PyTorch, and {format_size(reserved - allocated)} is reserved "
            "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
        )
        return OutOfMemory(
            msg,
            requested=nbytes,
            alloc_size=alloc_size,
            capacity=self.capacity,
            free=free,
            allocated=allocated,
            reserved=reserved,
        )

    @staticmethod
    def _expandable_size(b: _Block) -> int:
        n = b.next
        return b.size + (n.size if n is not None and not n.mapped else 0)

    def _get_free_block(self, pool: _Pool, size: int) -> _Block | None:
        if self._gc:
            pool.gc_calls += 1
        keys = pool.keys
        i = bisect.bisect_left(keys, (size, 0))
        n = len(keys)
        if i == n:
            return None
        block = pool.free[keys[i][1]]
        if block.seg is not None:
            # best fit counts the unmapped space after a block as part of it
            j = i + 1
            while block.seg is not None and j < n:
                nxt = pool.free[keys[j][1]]
                if self._expandable_size(nxt) >= self._expandable_size(block):
                    break
                block, i = nxt, j
                j += 1
        mss = self._mss
        if size < mss and block.size >= mss:
            return None  # do not return an oversize block for a smaller request
        if size >= mss and block.size >= size + K_LARGE_BUFFER:
            return None  # an oversize block may be rounded up, but only within 20 MiB
        del keys[i]
        del pool.free[block.addr]
        return block

    def _should_split(self, block: _Block, size: int) -> bool:
        remaining = block.size - size
        if block.small or self.expandable_segments:
            return remaining >= K_MIN_BLOCK_SIZE
        return size < self._mss and remaining > K_SMALL_SIZE

    def _alloc_found_block(self, pool: _Pool, block: _Block, size: int, nbytes: int) -> int:
        if self._should_split(block, size):
            remaining = block
            block = _Block(remaining.addr, size, remaining.small, remaining.seg)
            block.splice(remaining.prev, remaining)
            remaining.addr += size
            remaining.size -= size
            pool.insert(remaining)
        block.allocated = True
        block.requested = nbytes
        self._live[block.addr] = block
        self._allocated += block.size
        self._peak_allocated = max(self._peak_allocated, self._allocated)
        self._requested += nbytes
        self._peak_requested = max(self._peak_requested, self._requested)
        return block.addr

    def _try_merge_blocks(self, dst: _Block, src: _Block | None, pool: _Pool) -> int:
        if src is None or src.allocated or src.mapped != dst.mapped:
            return 0
        if src.mapped:
            pool.remove(src)
        else:
            pool.remove_unmapped(src)
        if dst.prev is src:  # [src dst]
            dst.addr = src.addr
            dst.prev = src.prev
            if dst.prev is not None:
                dst.prev.next = dst
        else:  # [dst src]
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size
        return src.size

    def _free_block(self, block: _Block) -> None:
        pool = self._pool_of(block)
        self._try_merge_blocks(block, block.prev, pool)
        self._try_merge_blocks(block, block.next, pool)
        pool.insert(block)

    def _grow_reserved(self, nbytes: int) -> None:
        self._reserved += nbytes
        self._peak_reserved = max(self._peak_reserved, self._reserved)
        self._device_alloc += 1

    def _alloc_block(self, pool: _Pool, size: int, alloc_size: int, is_retry: bool) -> _Block | None:
        if is_retry:
            self._retries += 1
        limit = self._limit
        if self._gc and limit is not None and self._reserved + alloc_size > limit:
            return None  # the set_per_process_memory_fraction check (torch tests the segment size here)
        if self.expandable_segments:
            return self._try_allocate_expandable_block(pool, size)
        if limit is not None and self._reserved + alloc_size > limit:
            return None  # cudaMalloc fails
        block = _Block(self._reserve_va(alloc_size), alloc_size, pool.small)
        self._nsegments += 1
        self._grow_reserved(alloc_size)
        return block

    def _release_block(self, block: _Block) -> None:
        if block.seg is not None or block.is_split():
            raise AssertionError("only a whole cudaMalloc segment can be released")
        self._pool_of(block).remove(block)
        self._reserved -= block.size
        self._nsegments -= 1
        self._device_free += 1

    def _release_available_cached_blocks(self, pool: _Pool, size: int) -> bool:
        if self.max_split_size is None or self.expandable_segments:
            return False
        mss = self._mss
        key = max(size, mss)
        keys = pool.keys
        i = bisect.bisect_left(keys, (key, 0))
        if i < len(keys):
            self._release_block(pool.free[keys[i][1]])
            return True
        # no single block is large enough: free oversize blocks, largest first, until enough
        released = 0
        i -= 1
        while released < key and i >= 0:
            block = pool.free[keys[i][1]]
            if block.size < mss:
                break
            released += block.size
            self._release_block(block)
            i -= 1
        return released >= key

    def _release_cached_blocks(self) -> None:
        self._release_blocks(self._large)
        self._release_blocks(self._small)

    def _release_blocks(self, pool: _Pool) -> None:
        to_unmap: list[_Block] = []
        for _, addr in list(pool.keys):
            block = pool.free[addr]
            if block.seg is not None:
                to_unmap.append(block)
            elif block.prev is None and block.next is None:
                self._release_block(block)
        for block in to_unmap:
            self._unmap_block(block)
            if block.prev is None and block.next is None:
                self._release_expandable_segment(block)

    def _garbage_collect_cached_blocks(self) -> None:
        assert self.garbage_collection_threshold is not None and self._limit is not None
        threshold = int(self.garbage_collection_threshold * self._limit)
        if self._reserved <= threshold:
            return
        target = self._reserved - threshold
        pool = self._large
        ages = [pool.gc_calls - b.gc_base for b in pool.free.values() if b.seg is None and not b.is_split()]
        count, total_age = len(ages), sum(ages)
        reclaimed = 0
        freed = True
        while reclaimed < target and freed and count > 0:
            age_threshold = total_age / count
            freed = False
            for _, addr in list(pool.keys):
                block = pool.free.get(addr)
                if block is None or block.seg is not None or block.is_split():
                    continue
                age = pool.gc_calls - block.gc_base
                if age >= age_threshold:
                    freed = True
                    reclaimed += block.size
                    total_age -= age
                    count -= 1
                    self._release_block(block)

    # -- expandable segments ----------------------------------------------------------------------------------

    def _find_expandable_block(self, pool: _Pool, size: int) -> _Block:
        for addr in pool.unmapped_addrs:
            c = pool.unmapped[addr]
            if c.prev is not None and not c.prev.allocated:
                c = c.prev  # a free block right before the unmapped range can be used too
            room = 0
            b: _Block | None = c
            while room < size and b is not None and not b.allocated:
                room += b.size
                b = b.next
            if room >= size:
                return c
        page = K_SMALL_BUFFER if pool.small else K_LARGE_BUFFER
        total = self.capacity if self.capacity is not None else _UNBOUNDED_ADDRESS_SPACE
        max_pages = max(1, -(-(total + total // 8) // page))
        seg = _Segment(0, page, max_pages)
        seg.base = self._reserve_va(seg.size)
        self._es.append(seg)
        candidate = _Block(seg.base, seg.size, pool.small, seg, mapped=False)
        pool.insert_unmapped(candidate)
        return candidate

    def _map_block(self, to_map: _Block, size: int) -> bool:
        seg = to_map.seg
        assert seg is not None and not to_map.mapped and size <= to_map.size
        page = seg.page
        offset = to_map.addr - seg.base
        begin = offset // page
        end = -(-(offset + size) // page)
        assert begin * page == offset, "unmapped block not page aligned"
        mapped = (end - begin) * page
        if mapped == 0:
            return False
        if self._limit is not None and self._reserved + mapped > self._limit:
            return False  # cuMemCreate fails; pages created so far are released again
        pages = seg.mapped
        if len(pages) < end:
            pages.extend([False] * (end - len(pages)))
        for i in range(begin, end):
            assert not pages[i], "page mapped twice"
            pages[i] = True
        pool = self._pool_of(to_map)
        pool.remove_unmapped(to_map)
        to_map.mapped = True
        if mapped < to_map.size:
            rest = _Block(to_map.addr + mapped, to_map.size - mapped, to_map.small, seg, mapped=False)
            rest.splice(to_map, to_map.next)
            pool.insert_unmapped(rest)
            to_map.size = mapped
        self._try_merge_blocks(to_map, to_map.prev, pool)
        self._try_merge_blocks(to_map, to_map.next, pool)
        pool.insert(to_map)
        self._grow_reserved(mapped)
        return True

    def _try_allocate_expandable_block(self, pool: _Pool, size: int) -> _Block | None:
        candidate = self._find_expandable_block(pool, size)
        if not candidate.mapped and not self._map_block(candidate, min(candidate.size, size)):
            return None
        while candidate.size < size:
            nxt = candidate.next  # free -> unmapped -> ...: map some of the unmapped range and merge
            assert nxt is not None and not nxt.mapped
            if not self._map_block(nxt, min(size - candidate.size, nxt.size)):
                return None
            candidate = nxt
        pool.remove(candidate)
        return candidate

    def _unmap_block(self, block: _Block) -> None:
        seg = block.seg
        assert seg is not None
        page = seg.page
        offset = block.addr - seg.base
        begin = -(-offset // page)
        end = (offset + block.size) // page
        if begin >= end:
            return  # no wholly free page
        pages = seg.mapped
        for i in range(begin, end):
            assert pages[i], "unmapping a page that is not mapped"
            pages[i] = False
        while pages and not pages[-1]:
            pages.pop()
        start = seg.base + begin * page
        unmapped = (end - begin) * page
        pool = self._pool_of(block)
        pool.remove(block)
        before = start - block.addr
        if before > 0:
            head = _Block(block.addr, before, block.small, seg)
            head.splice(block.prev, block)
            pool.insert(head)
        after = block.size - before - unmapped
        if after > 0:
            tail = _Block(start + unmapped, after, block.small, seg)
            tail.splice(block, block.next)
            pool.insert(tail)
        block.addr = start
        block.size = unmapped
        block.mapped = False
        self._try_merge_blocks(block, block.prev, pool)
        self._try_merge_blocks(block, block.next, pool)
        pool.insert_unmapped(block)
        self._reserved -= unmapped
        self._device_free += 1

    def _release_expandable_segment(self, block: _Block) -> None:
        seg = block.seg
        assert seg is not None and block.size == seg.size and not block.mapped
        self._pool_of(block).remove_unmapped(block)
        self._es.remove(seg)


# -- trace replay -----------------------------------------------------------------------------------------------
