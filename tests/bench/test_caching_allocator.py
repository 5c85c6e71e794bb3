"""The pure-Python CUDA caching-allocator model (benchmarks/allocator/caching_allocator.py) against the rules of
c10/cuda/CUDACachingAllocator.cpp: rounding, segment sizes, best fit, splitting, merging, cache release, OOM,
max_split_size, garbage collection, expandable segments, and trace replay."""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "allocator" / "caching_allocator.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vramdesk_bench_caching_allocator", _PATH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up here
    spec.loader.exec_module(mod)
    return mod


ca = _load()
MIB = 1 << 20


def _alloc(**kw: Any) -> Any:
    return ca.CachingAllocator(**kw)


# -- sizes ---------------------------------------------------------------------------------------------------


def test_round_size_512_bytes_and_power2_divisions() -> None:
    assert ca.round_size(1) == 512
    assert ca.round_size(512) == 512
    assert ca.round_size(513) == 1024
    assert ca.round_size(1000) == 1024
    assert ca.round_size(5 * MIB + 1) == 5 * MIB + 512
    # roundup_power2_divisions=4: steps of 1 MiB between 4 and 8 MiB
    assert ca.round_size(5 * MIB + 1, 4) == 6 * MIB
    assert ca.round_size(4 * MIB, 4) == 4 * MIB  # powers of two stay
    assert ca.round_size(1200, 4) == 1536  # not above 512 * divisions: plain 512-B rounding


def test_segment_size_rules() -> None:
    assert ca.get_allocation_size(512) == 2 * MIB
    assert ca.get_allocation_size(MIB) == 2 * MIB  # kSmallSize is still small
    assert ca.get_allocation_size(MIB + 512) == 20 * MIB
    assert ca.get_allocation_size(10 * MIB - 512) == 20 * MIB
    assert ca.get_allocation_size(10 * MIB) == 10 * MIB
    assert ca.get_allocation_size(10 * MIB + 512) == 12 * MIB
    a = _alloc()
    a.malloc(10 * MIB + 1)
    st = a.stats
    assert (st.reserved, st.segments) == (12 * MIB, 1)
    assert st.allocated == 10 * MIB + 512  # the 2 MiB - 512 B remainder (> 1 MiB) was split off
    a.check_invariants()


# -- small pool ----------------------------------------------------------------------------------------------


def test_small_allocations_share_a_2mib_segment() -> None:
    a = _alloc()
    h1 = a.malloc(1000)
    a.malloc(4096)
    a.malloc(MIB)  # 1 MiB is still the small pool and still fits
    st = a.stats
    assert (st.reserved, st.segments, st.allocated) == (2 * MIB, 1, 1024 + 4096 + MIB)
    assert st.requested == 1000 + 4096 + MIB
    a.malloc(MIB)  # < 1 MiB left in the segment: a second 2 MiB segment
    assert (a.stats.reserved, a.stats.segments) == (4 * MIB, 2)
    a.free(h1)
    assert a.malloc(600) == h1  # best fit: the freed 1024-B block
    a.check_invariants()


def test_small_pool_splits_down_to_512_bytes() -> None:
    a = _alloc()
    a.malloc(MIB)
    a.malloc(MIB - 1024)
    a.malloc(512)
    a.malloc(512)  # exact fit
    st = a.stats
    assert (st.reserved, st.segments, st.allocated) == (2 * MIB, 1, 2 * MIB)
    a.check_invariants()


# -- large pool ----------------------------------------------------------------------------------------------


def test_5mib_requests_share_a_20mib_segment() -> None:
    a = _alloc()
    h1 = a.malloc(5 * MIB)
    assert (a.stats.reserved, a.stats.allocated) == (20 * MIB, 5 * MIB)
    h2 = a.malloc(5 * MIB)
    st = a.stats
    assert (st.reserved, st.segments, st.allocated) == (20 * MIB, 1, 10 * MIB)
    assert h2 == h1 + 5 * MIB  # carved from the remainder, right after the first
    a.check_invariants()


def test_no_split_when_large_remainder_is_at_most_1mib() -> None:
    a = _alloc()
    a.free(a.malloc(12 * MIB))
    h = a.malloc(11 * MIB)  # remainder exactly 1 MiB: not split
    assert a.block_size(h) == 12 * MIB
    assert (a.stats.allocated, a.stats.reserved) == (12 * MIB, 12 * MIB)
    a.free(h)
    h = a.malloc(11 * MIB - 512)  # remainder 1 MiB + 512 B: split
    assert a.block_size(h) == 11 * MIB - 512
    assert a.stats.allocated == 11 * MIB - 512
    a.check_invariants()


def test_freed_neighbours_merge_into_one_block() -> None:
    a = _alloc()
    h1, h2, h3 = (a.malloc(3 * MIB) for _ in range(3))
    a.free(h1)
    a.free(h3)
    blocks = [(b["size"], b["allocated"]) for b in a.snapshot()[0]["blocks"]]
    assert blocks == [(3 * MIB, False), (3 * MIB, True), (14 * MIB, False)]
    a.free(h2)
    (seg,) = a.snapshot()
    assert [(b["size"], b["allocated"]) for b in seg["blocks"]] == [(20 * MIB, False)]
    assert a.malloc(18 * MIB) == h1  # the merged block serves a request none of the pieces could
    assert a.stats.reserved == 20 * MIB
    a.check_invariants()


def test_best_fit_between_free_blocks() -> None:
    a = _alloc()
    x, y, z = a.malloc(40 * MIB), a.malloc(30 * MIB), a.malloc(50 * MIB)
    for h in (x, y, z):
        a.free(h)
    assert a.malloc(25 * MIB) == y  # smallest free block that fits, not the first or largest
    assert a.stats.reserved == 120 * MIB
    b1, b2 = a.malloc(60 * MIB), a.malloc(60 * MIB)
    a.free(b2)
    a.free(b1)
    assert a.malloc(60 * MIB) == min(b1, b2)  # equal sizes: the lower address
    a.check_invariants()


def _fragmentation_events() -> list[list[Any]]:
    """A big transient freed, a small long-lived tensor lands in its segment, the next big transient."""
    return [
        ["p", "forward"],
        ["a", 1, 100 * MIB, "big"],
        ["f", 1],
        ["a", 2, 2 * MIB, "small-long-lived"],
        ["p", "backward"],
        ["a", 3, 100 * MIB, "big"],
        ["f", 3],
    ]


def test_classic_fragmentation_grows_reserved_not_allocated() -> None:
    a = _alloc()
    a.free(a.malloc(100 * MIB))
    small = a.malloc(2 * MIB)
    assert a.stats.reserved == 100 * MIB  # the small tensor took the start of the cached segment
    a.malloc(100 * MIB)  # 98 MiB left there is too little: a second segment
    st = a.stats
    assert (st.allocated, st.reserved, st.segments) == (102 * MIB, 200 * MIB, 2)
    assert st.peak_allocated == 102 * MIB
    a.empty_cache()
    assert a.stats.reserved == 200 * MIB  # both segments are in use
    assert small == a.snapshot()[0]["address"]
    a.check_invariants()


# -- out of memory -------------------------------------------------------------------------------------------


def test_oom_frees_cached_segments_and_retries_then_fails_clearly() -> None:
    a = _alloc(capacity=100 * MIB)
    a.free(a.malloc(60 * MIB))
    a.malloc(80 * MIB)  # 60 + 80 > 100: the cached 60 MiB segment is freed and the malloc retried
    st = a.stats
    assert (st.reserved, st.segments, st.num_alloc_retries, st.num_ooms) == (80 * MIB, 1, 1, 0)
    with pytest.raises(ca.OutOfMemory) as exc:
        a.malloc(30 * MIB)
    msg = str(exc.value)
    assert msg.startswith("CUDA out of memory. Tried to allocate 30.00 MiB.")
    assert "total capacity of 100.00 MiB of which 20.00 MiB is free" in msg
    assert "80.00 MiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated" in msg
    assert (exc.value.allocated, exc.value.reserved) == (80 * MIB, 80 * MIB)
    st = a.stats
    assert (st.num_ooms, st.num_alloc_retries, st.allocated) == (1, 2, 80 * MIB)
    a.check_invariants()


def test_context_bytes_take_capacity_from_the_allocator() -> None:
    a = _alloc(capacity=100 * MIB, context_bytes=30 * MIB)
    with pytest.raises(ca.OutOfMemory, match=r"of which 70\.00 MiB is free"):
        a.malloc(80 * MIB)
    assert a.stats.reserved == 0


def test_empty_cache_releases_only_wholly_free_segments() -> None:
    a = _alloc()
    a.malloc(5 * MIB)  # 20 MiB segment, 15 MiB of it free but split off a live block
    a.free(a.malloc(30 * MIB))
    a.free(a.malloc(4096))
    assert a.stats.reserved == (20 + 30 + 2) * MIB
    a.empty_cache()
    st = a.stats
    assert (st.reserved, st.segments, st.allocated) == (20 * MIB, 1, 5 * MIB)
    a.check_invariants()


# -- max_split_size ------------------------------------------------------------------------------------------


def test_max_split_size_keeps_oversize_blocks_whole() -> None:
    plain = _alloc()
    big = plain.malloc(100 * MIB)
    plain.free(big)
    assert plain.malloc(30 * MIB) == big  # default: the cached block is split

    a = _alloc(max_split_size=64 * MIB)
    big = a.malloc(100 * MIB)
    a.free(big)
    assert a.malloc(30 * MIB) != big  # a small request never takes an oversize block
    assert a.stats.reserved == 130 * MIB
    h = a.malloc(90 * MIB)  # oversize request: the 100 MiB block is within 20 MiB, used whole
    assert h == big and a.block_size(h) == 100 * MIB
    assert a.stats.allocated == 130 * MIB
    a.free(h)
    a.malloc(70 * MIB)  # 100 >= 70 + 20: too wasteful, a new segment
    assert a.stats.reserved == 200 * MIB
    a.check_invariants()
    with pytest.raises(ValueError, match="max_split_size"):
        _alloc(max_split_size=20 * MIB)


def test_max_split_size_frees_one_oversize_block_without_a_retry() -> None:
    a = _alloc(capacity=200 * MIB, max_split_size=64 * MIB)
    a.free(a.malloc(150 * MIB))
    a.malloc(120 * MIB)  # the cached 150 MiB block is too big to reuse and blocks the malloc
    st = a.stats
    assert (st.reserved, st.segments, st.num_alloc_retries) == (120 * MIB, 1, 0)
    a.check_invariants()


# -- garbage collection --------------------------------------------------------------------------------------


def test_garbage_collection_frees_old_cached_segments_first() -> None:
    def run(**kw: Any) -> Any:
        a = _alloc(capacity=100 * MIB, **kw)
        a.free(a.malloc(30 * MIB))  # older
        a.free(a.malloc(40 * MIB))  # younger
        a.malloc(50 * MIB)
        a.check_invariants()
        return a.stats

    with_gc = run(garbage_collection_threshold=0.5)
    assert (with_gc.reserved, with_gc.num_alloc_retries) == (90 * MIB, 0)  # only the 30 MiB one went
    without = run()
    assert (without.reserved, without.num_alloc_retries) == (50 * MIB, 1)  # OOM path freed everything


# -- expandable segments -------------------------------------------------------------------------------------


def test_expandable_segments_keep_reserved_near_allocated() -> None:
    a = _alloc(expandable_segments=True)
    a.free(a.malloc(100 * MIB))
    assert a.stats.reserved == 100 * MIB
    small = a.malloc(2 * MIB)
    big = a.malloc(100 * MIB)  # maps one more 20 MiB page after the free 98 MiB tail
    st = a.stats
    assert (st.allocated, st.reserved, st.segments) == (102 * MIB, 120 * MIB, 1)
    a.check_invariants()
    a.free(big)
    a.empty_cache()  # unmaps every wholly free 20 MiB page; the first page holds the small tensor
    assert a.stats.reserved == 20 * MIB
    a.free(small)
    a.empty_cache()
    assert (a.stats.reserved, a.stats.segments) == (0, 0)
    a.check_invariants()


def test_expandable_best_fit_counts_unmapped_space_after_the_tail() -> None:
    a = _alloc(expandable_segments=True)
    first = a.malloc(30 * MIB)
    a.malloc(20 * MIB)
    a.malloc(25 * MIB)  # one segment: [30][20][25][5 free tail][unmapped...]
    assert a.stats.reserved == 80 * MIB
    a.free(first)  # a 30 MiB hole before live blocks
    # the 5 MiB tail is the smallest block that fits, but it can grow without limit: the hole is the better fit
    assert a.malloc(4 * MIB) == first
    assert a.stats.reserved == 80 * MIB
    a.check_invariants()


def test_expandable_page_sizes() -> None:
    a = _alloc(expandable_segments=True)
    a.malloc(4096)
    assert a.stats.reserved == 2 * MIB  # small pool: 2 MiB pages
    a.malloc(MIB)
    a.malloc(MIB)
    assert (a.stats.reserved, a.stats.segments) == (4 * MIB, 1)  # grown in place: still one mapped range
    a.malloc(25 * MIB)
    assert a.stats.reserved == 4 * MIB + 40 * MIB  # large pool: 20 MiB pages
    a.check_invariants()


def test_expandable_oom_unmaps_free_pages_and_retries() -> None:
    a = _alloc(capacity=100 * MIB, expandable_segments=True)
    small = [a.malloc(MIB) for _ in range(20)]
    for h in small:
        a.free(h)
    assert a.stats.reserved == 20 * MIB  # free, still mapped
    a.malloc(90 * MIB)  # needs five 20 MiB pages: only after the small pool's pages are unmapped
    st = a.stats
    assert (st.reserved, st.num_alloc_retries, st.allocated) == (100 * MIB, 1, 90 * MIB)
    a.check_invariants()


# -- invariants under random use -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"expandable_segments": True},
        {"max_split_size": 96 * MIB, "capacity": 2 << 30},
        {"roundup_power2_divisions": 4, "capacity": 1 << 30},
        {"garbage_collection_threshold": 0.5, "capacity": 1 << 30},
        {"expandable_segments": True, "capacity": 1 << 30},
    ],
)
def test_random_use_keeps_invariants_and_releases_everything(kw: dict[str, Any]) -> None:
    rng = random.Random(7)
    a = _alloc(**kw)
    live: list[int] = []
    for step in range(1500):
        if live and rng.random() < 0.47:
            a.free(live.pop(rng.randrange(len(live))))
        else:
            n = rng.choice([rng.randint(1, MIB), rng.randint(MIB, 12 * MIB), rng.randint(12 * MIB, 150 * MIB)])
            try:
                live.append(a.malloc(n))
            except ca.OutOfMemory:
                for _ in range(len(live) // 2):
                    a.free(live.pop(rng.randrange(len(live))))
        if step % 50 == 0:
            a.check_invariants()
    for h in live:
        a.free(h)
    a.empty_cache()
    a.check_invariants()
    assert (a.stats.allocated, a.stats.reserved, a.stats.segments) == (0, 0, 0)


def test_free_of_unknown_handle_and_reset_peak() -> None:
    a = _alloc()
    h = a.malloc(30 * MIB)
    a.free(h)
    with pytest.raises(ValueError, match="invalid device pointer"):
        a.free(h)
    assert a.malloc(0) == 0 and a.stats.allocated == 0  # zero bytes: no block, as in torch
    a.free(0)
    assert a.stats.peak_allocated == 30 * MIB
    a.reset_peak()
    assert (a.stats.peak_allocated, a.stats.peak_reserved) == (0, 30 * MIB)


# -- replay --------------------------------------------------------------------------------------------------


def test_replay_hand_written_trace_with_phases() -> None:
    events = [
        ["a", "w", 10 * MIB, "weights"],
        ["p", "forward"],
        ["a", 1, 5 * MIB, "act"],
        ["a", 2, 0, "empty"],
        ["a", 3, 3000, "small"],
        ["p", "backward"],
        ["f", 1],
        ["f", 2],
        ["a", 4, 30 * MIB, "grad"],
        ["f", 4],
        ["f", 3],
        ["p", "forward"],
    ]
    r = ca.replay(events)
    assert r.oom is None and r.events == len(events)
    assert r.peak_allocated == 10 * MIB + 30 * MIB + 3072
    assert r.peak_reserved == (10 + 20 + 2 + 30) * MIB
    # "forward" recurs: its second marker sees 62 MiB reserved (the cache kept from "backward")
    assert r.phases["forward"] == (15 * MIB + 3072, 62 * MIB)
    assert ca.replay(events[:-1]).phases["forward"] == (15 * MIB + 3072, 32 * MIB)
    assert r.phases["backward"] == (10 * MIB + 30 * MIB + 3072, 62 * MIB)
    assert r.stats.allocated == 10 * MIB
    assert r.fragmentation == pytest.approx(1 - (40 * MIB + 3072) / (62 * MIB))

    with pytest.raises(ca.TraceError, match=r"event 1: free of unknown id 9"):
        ca.replay([["a", 1, 100, "x"], ["f", 9]])
    with pytest.raises(ca.TraceError, match="event 0: unknown event kind 'z'"):
        ca.replay([["z", 1]])
    with pytest.raises(ca.TraceError, match="allocated again"):
        ca.replay([["a", 1, 100, "x"], ["a", 1, 100, "x"]])


def test_replay_reports_oom_and_event_index() -> None:
    r = ca.replay(_fragmentation_events(), capacity=150 * MIB)
    assert r.oom is not None
    msg, index = r.oom
    assert index == 5 and msg.startswith("CUDA out of memory. Tried to allocate 100.00 MiB.")
    assert r.stats.num_ooms == 1 and r.events == 5
    fine = ca.replay(_fragmentation_events(), capacity=150 * MIB, expandable_segments=True)
    assert fine.oom is None and fine.peak_reserved == 120 * MIB


def _write_trace(path: Path, events: list[list[Any]], header: dict[str, Any] | None = None) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(header or {"format": "vramdesk-alloc-trace/1", "settings": {}}) + "\n")
        for ev in events:
            fh.write(json.dumps(ev) + "\n")


def test_read_trace(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    _write_trace(path, _fragmentation_events())
    header, events = ca.read_trace(path)
    assert header["format"] == "vramdesk-alloc-trace/1"
    assert events == _fragmentation_events()
    r = ca.replay(events)
    assert (r.peak_allocated, r.peak_reserved) == (102 * MIB, 200 * MIB)

    bad = tmp_path / "bad.jsonl.gz"
    _write_trace(bad, [["a", 1, 100, "x"], ["f", 1], ["f", 7]])
    with pytest.raises(ca.TraceError, match=r"bad\.jsonl\.gz:4: free of unknown id 7"):
        ca.read_trace(bad)
    other = tmp_path / "other.jsonl.gz"
    _write_trace(other, [], header={"format": "something-else"})
    with pytest.raises(ca.TraceError, match="not a vramdesk-alloc-trace/1 trace"):
        ca.read_trace(other)


def test_min_capacity_is_a_boundary() -> None:
    events = _fragmentation_events()
    need = ca.min_capacity(events)
    assert need == 200 * MIB  # the fragmentation costs a whole second segment
    assert ca.replay(events, capacity=need).oom is None
    assert ca.replay(events, capacity=need - 2 * MIB).oom is not None
    assert ca.min_capacity(events, expandable_segments=True) == 120 * MIB
    with_context = ca.min_capacity(events, context_bytes=500 * MIB)
    assert with_context == 700 * MIB
    assert ca.replay(events, capacity=with_context, context_bytes=500 * MIB).oom is None


def _synthetic_events(n_alloc: int, seed: int = 0) -> list[list[Any]]:
    rng = random.Random(seed)
    events: list[list[Any]] = []
    live: list[int] = []
    nid = 0
    while nid < n_alloc:
        if nid % 5000 == 0:
            events.append(["p", ("forward", "backward", "optimizer")[(nid // 5000) % 3]])
        if live and (rng.random() < 0.5 or len(live) > 3000):
            events.append(["f", live.pop(rng.randrange(len(live)) if rng.random() < 0.3 else -1)])
        else:
            r = rng.random()
            hi = MIB if r < 0.5 else 12 * MIB if r < 0.85 else 256 * MIB
            n = rng.randint(hi // 12 if hi > MIB else 1, hi)
            events.append(["a", nid, n, "op"])
            live.append(nid)
            nid += 1
    events += [["f", i] for i in reversed(live)]
    return events


def test_min_capacity_on_a_random_trace() -> None:
    events = _synthetic_events(3000, seed=3)
    free_run = ca.replay(events)
    need = ca.min_capacity(events)
    assert free_run.peak_allocated <= need <= free_run.peak_reserved + 2 * MIB
    assert ca.replay(events, capacity=need).oom is None
    assert ca.replay(events, capacity=need - 2 * MIB).oom is not None


def test_replay_of_200k_events_ends_with_nothing_allocated() -> None:
    # (its speed is a figure in the module docstring, measured by hand; timed unit tests are not used here)
    events = _synthetic_events(100_000)
    assert len(events) >= 200_000
    r = ca.replay(events)
    assert r.oom is None and r.stats.allocated == 0
    assert r.peak_reserved >= r.peak_allocated > 0


def test_command_line_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl.gz"
    _write_trace(path, _fragmentation_events())
    assert ca.main([str(path), "--capacity-gib", "0.146", "--min-capacity"]) == 0
    out = capsys.readouterr().out
    assert "peak allocated 0.098 GiB, peak reserved 0.098 GiB" in out  # stopped at the OOM
    assert "OOM at event 5: CUDA out of memory. Tried to allocate 100.00 MiB." in out
    assert "smallest capacity: 0.195 GiB" in out
