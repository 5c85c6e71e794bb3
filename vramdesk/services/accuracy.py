"""How close the estimate came to measured runs it was not fitted to, per mode and memory level.

``resources/accuracy.json`` is written by ``benchmarks/accuracy.py --update-baseline`` (and CI fails when it no
longer matches the benchmark), so what the window shows is what the benchmark measured.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from .catalog import resources_dir

LEVELS = ("allocated", "reserved", "device")


@dataclass(frozen=True)
class MeasuredSet:
    """One set of measured runs: its name, how many comparisons, median and 90th percentile of |error| in %."""

    name: str
    runs: int
    median: float
    p90: float


@cache
def _table() -> dict[str, dict[str, tuple[MeasuredSet, ...]]]:
    try:
        data = json.loads((resources_dir() / "accuracy.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):  # an install without the file shows no accuracy lines, nothing breaks
        return {}
    return {
        key: {
            level: tuple(MeasuredSet(str(e["set"]), int(e["n"]), float(e["median"]), float(e["p90"])) for e in sets)
            for level, sets in levels.items()
        }
        for key, levels in data.items()
        if not key.startswith("_")
    }


def measured_accuracy(mode: str, engine: str, level: str) -> tuple[MeasuredSet, ...]:
    """The sets measured at ``level`` for a fine-tuning plan (any engine) or an inference plan on ``engine``;
    empty where none was (vLLM and llama.cpp have no held-out runs yet)."""
    key = "finetune" if mode == "finetune" else f"inference/{engine}"
    return _table().get(key, {}).get(level, ())


def accuracy_rows(mode: str, engine: str) -> tuple[tuple[str, str, int, float, float], ...]:
    """Every level's sets for a report: (level, set, comparisons, median %, p90 %)."""
    return tuple(
        (level, m.name, m.runs, m.median, m.p90) for level in LEVELS for m in measured_accuracy(mode, engine, level)
    )
