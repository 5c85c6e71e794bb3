"""Replaying an allocation event stream through the caching-allocator model (:mod:`vramdesk.tracing.allocator`):
per-phase allocated / reserved peaks, the out-of-memory point, the smallest capacity that fits, and reading a
``vramdesk-alloc-trace/1`` file. Standard library only."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from vramdesk.tracing.alloc_rules import (
    MIB,
    TRACE_FORMAT,
    OutOfMemory,
    Stats,
    TraceError,
)
from vramdesk.tracing.allocator import CachingAllocator


@dataclass
class ReplayResult:
    """What a replay saw. ``phases`` maps a phase name to its (peak allocated, peak reserved), the state at the
    phase marker included (a name that recurs keeps the maximum over its occurrences). ``oom`` is None, or the
    OutOfMemory message and the index of the event that failed (the replay stops there)."""

    peak_allocated: int
    peak_reserved: int
    stats: Stats
    phases: dict[str, tuple[int, int]] = field(default_factory=dict)
    oom: tuple[str, int] | None = None
    events: int = 0  # events applied (the failing one not counted)

    @property
    def fragmentation(self) -> float:
        """Share of the peak reservation that never held a tensor at the allocated peak: 1 - alloc/reserved."""
        return 1.0 - self.peak_allocated / self.peak_reserved if self.peak_reserved else 0.0


_NO_HANDLE = -1


def replay(
    events: Iterable[Sequence[Any]],
    *,
    capacity: int | None = None,
    max_split_size: int | None = None,
    expandable_segments: bool = False,
    context_bytes: int = 0,
    roundup_power2_divisions: int | None = None,
    garbage_collection_threshold: float | None = None,
) -> ReplayResult:
    """Run trace events (``["a", id, nbytes, op]``, ``["f", id]``, ``["p", name]``) through a fresh allocator.

    ``capacity`` is the device's memory, ``context_bytes`` of which the allocator cannot use (see
    ``CachingAllocator``). An out-of-memory ends the replay and is reported in ``oom``; malformed events raise
    ``TraceError`` naming the event's index."""
    alloc = CachingAllocator(
        capacity,
        max_split_size=max_split_size,
        expandable_segments=expandable_segments,
        roundup_power2_divisions=roundup_power2_divisions,
        garbage_collection_threshold=garbage_collection_threshold,
        context_bytes=context_bytes,
    )
    handles: dict[Any, int] = {}
    phases: dict[str, list[int]] = {}
    current: list[int] | None = None
    oom: tuple[str, int] | None = None
    applied = 0
    malloc = alloc.malloc
    for index, ev in enumerate(events):
        try:
            kind = ev[0]
            if kind == "a":
                key, nbytes = ev[1], ev[2]
                if not isinstance(nbytes, int) or nbytes < 0:
                    raise TraceError(f"event {index}: allocation size must be a non-negative integer, got {nbytes!r}")
                if handles.get(key, _NO_HANDLE) != _NO_HANDLE:
                    raise TraceError(f"event {index}: id {key!r} allocated again before it was freed")
                try:
                    handles[key] = malloc(nbytes)
                except OutOfMemory as exc:
                    oom = (str(exc), index)
                    break
                if current is not None:
                    current[0] = max(current[0], alloc._allocated)
                    current[1] = max(current[1], alloc._reserved)
            elif kind == "f":
                key = ev[1]
                handle = handles.pop(key, _NO_HANDLE)
                if handle == _NO_HANDLE:
                    raise TraceError(f"event {index}: free of unknown id {key!r} (never allocated, or already freed)")
                alloc.free(handle)
            elif kind == "p":
                name = str(ev[1])
                current = phases.setdefault(name, [0, 0])
                current[0] = max(current[0], alloc._allocated)
                current[1] = max(current[1], alloc._reserved)
            else:
                raise TraceError(f"event {index}: unknown event kind {kind!r} in {ev!r}")
        except (IndexError, TypeError, KeyError) as exc:
            raise TraceError(f"event {index}: malformed event {ev!r} ({exc})") from exc
        applied += 1
    st = alloc.stats
    return ReplayResult(
        peak_allocated=st.peak_allocated,
        peak_reserved=st.peak_reserved,
        stats=st,
        phases={k: (v[0], v[1]) for k, v in phases.items()},
        oom=oom,
        events=applied,
    )


def min_capacity(events: Iterable[Sequence[Any]], *, granularity: int = 2 * MIB, **kw: Any) -> int:
    """The smallest device capacity, a multiple of ``granularity``, at which ``replay`` does not run out of memory.

    Binary search between the peak allocated and the peak reserved of an unlimited replay (``kw`` goes to
    ``replay``; ``context_bytes`` is included in the capacity). Success need not be monotonic in the capacity
    (a tighter device frees its cache at other moments), so what is guaranteed is a boundary: the result succeeds
    and the result minus ``granularity`` fails."""
    if "capacity" in kw:
        raise TypeError("min_capacity() searches the capacity; do not pass one")
    if granularity <= 0:
        raise ValueError(f"granularity must be > 0, got {granularity}")
    evs = events if isinstance(events, list) else list(events)
    free_run = replay(evs, **kw)
    if free_run.peak_reserved == 0:
        return 0
    context = int(kw.get("context_bytes", 0))
    lo = -(-(free_run.peak_allocated + context) // granularity) - 1  # lo * granularity < what is needed: fails
    hi = -(-(free_run.peak_reserved + context) // granularity)  # enough for the unlimited run's reservation
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if replay(evs, capacity=mid * granularity, **kw).oom is None:
            hi = mid
        else:
            lo = mid
    return hi * granularity


def _open_text(p: Path) -> IO[str]:
    with p.open("rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
    return gzip.open(p, "rt", encoding="utf-8") if gz else p.open(encoding="utf-8")


def read_trace(path: str | Path) -> tuple[dict[str, Any], list[list[Any]]]:
    """Read a ``vramdesk-alloc-trace/1`` file (gzip JSON lines; plain text is accepted too).

    Returns the header object and the events. Raises ``TraceError`` naming the file and line for a bad header,
    a malformed event, an id allocated twice while live, or a free of an id that is not live."""
    p = Path(path)
    with _open_text(p) as fh:
        first = fh.readline()
        if not first.strip():
            raise TraceError(f"{p}:1: empty trace, expected a header line")
        try:
            header = json.loads(first)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{p}:1: header is not JSON ({exc})") from exc
        if not isinstance(header, dict) or header.get("format") != TRACE_FORMAT:
            got = header.get("format") if isinstance(header, dict) else header
            raise TraceError(f"{p}:1: not a {TRACE_FORMAT} trace (format {got!r})")
        events: list[list[Any]] = []
        live: set[Any] = set()
        for lineno, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TraceError(f"{p}:{lineno}: not JSON ({exc})") from exc
            kind = ev[0] if isinstance(ev, list) and ev else None
            try:
                if kind == "a" and len(ev) >= 3:
                    key, nbytes = ev[1], ev[2]
                    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
                        raise TraceError(f"{p}:{lineno}: allocation size must be a non-negative integer: {line!r}")
                    if key in live:
                        raise TraceError(f"{p}:{lineno}: id {key!r} allocated again before it was freed")
                    live.add(key)
                elif kind == "f" and len(ev) >= 2:
                    if ev[1] not in live:
                        raise TraceError(
                            f"{p}:{lineno}: free of unknown id {ev[1]!r} (never allocated, or already freed)"
                        )
                    live.discard(ev[1])
                elif kind != "p" or len(ev) < 2:
                    raise TraceError(f"{p}:{lineno}: unknown or malformed event {line.strip()!r}")
            except TypeError as exc:  # an unhashable id
                raise TraceError(f"{p}:{lineno}: bad id in {line.strip()!r} ({exc})") from exc
            events.append(ev)
    return header, events
