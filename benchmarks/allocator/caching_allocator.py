"""The pure-Python model of PyTorch's CUDA caching allocator, for replaying recorded allocation traces (research
command line). The model itself ships with vramdesk (``vramdesk/tracing/allocator.py``: the sources read and the
rules modelled; ``vramdesk/tracing/replay.py``: ``replay``, ``min_capacity``, ``read_trace``); this script
re-exports it for the benchmarks and tests that load it by path.

Command line: ``python benchmarks/allocator/caching_allocator.py TRACE.jsonl.gz [--capacity-gib 80] ...``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's vramdesk when run as a script

from vramdesk.tracing.alloc_rules import (
    GIB,
    KIB,
    MIB,
    TRACE_FORMAT,
    OutOfMemory,
    Stats,
    TraceError,
    format_size,
    get_allocation_size,
    round_size,
)
from vramdesk.tracing.allocator import CachingAllocator
from vramdesk.tracing.replay import ReplayResult, min_capacity, read_trace, replay

__all__ = [
    "GIB",
    "KIB",
    "MIB",
    "TRACE_FORMAT",
    "CachingAllocator",
    "OutOfMemory",
    "ReplayResult",
    "Stats",
    "TraceError",
    "format_size",
    "get_allocation_size",
    "main",
    "min_capacity",
    "read_trace",
    "replay",
    "round_size",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Replay a vramdesk allocation trace through the caching-allocator model.")
    ap.add_argument("trace", type=Path)
    ap.add_argument("--capacity-gib", type=float, help="device memory (default: unlimited)")
    ap.add_argument("--context-mib", type=float, default=0.0, help="memory outside the allocator (CUDA context)")
    ap.add_argument("--max-split-size-mb", type=int, help="PYTORCH_CUDA_ALLOC_CONF max_split_size_mb")
    ap.add_argument("--expandable-segments", action="store_true")
    ap.add_argument("--min-capacity", action="store_true", help="also search the smallest capacity that fits")
    args = ap.parse_args(argv)
    header, events = read_trace(args.trace)
    kw: dict[str, Any] = {
        "max_split_size": args.max_split_size_mb * MIB if args.max_split_size_mb else None,
        "expandable_segments": args.expandable_segments,
        "context_bytes": int(args.context_mib * MIB),
    }
    cap = int(args.capacity_gib * GIB) if args.capacity_gib else None
    res = replay(events, capacity=cap, **kw)
    print(f"{args.trace.name}: {len(events)} events ({header.get('format')})")
    print(f"  peak allocated {res.peak_allocated / GIB:.3f} GiB, peak reserved {res.peak_reserved / GIB:.3f} GiB")
    print(f"  fragmentation at peak {res.fragmentation:.1%}, retries {res.stats.num_alloc_retries}")
    for name, (pa, pr) in res.phases.items():
        print(f"  {name:24} allocated {pa / GIB:8.3f}  reserved {pr / GIB:8.3f}")
    if res.oom:
        print(f"  OOM at event {res.oom[1]}: {res.oom[0]}")
    if args.min_capacity:
        print(f"  smallest capacity: {min_capacity(events, **kw) / GIB:.3f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
