"""A sweep's grid (:func:`vramdesk.core.sweep.sweep`) as a table: CSV (one row per cell, bytes as whole numbers)
and a JSON document (the base plan, the axes, each cell with its values by axis)."""

from __future__ import annotations

from typing import Any

from vramdesk.core.gpu import GIB
from vramdesk.core.scenario import Scenario
from vramdesk.core.sweep import SweepResult

from .tables import write_rows

#: the columns after the axes' (``gpu`` is left out when it is an axis)
COLUMNS = (
    "gpu",
    "gpu_memory_bytes",
    "required_bytes",
    "required_gib",
    "device_bytes",
    "peak_allocated_bytes",
    "verdict",
    "margin",
    "error",
)


def _gib(n: int | None) -> str:
    return "" if n is None else f"{n / GIB:.3f}"


def sweep_rows(result: SweepResult) -> tuple[list[str], list[list[str]]]:
    """The header and one row per cell: the axes' values, bytes as whole numbers, GiB, the verdict, the error."""
    names = [a.name for a in result.axes]
    extra = [c for c in COLUMNS if c not in names]
    rows = []
    for c in result.cells:
        fields: dict[str, str] = {
            "gpu": c.gpu,
            "gpu_memory_bytes": str(c.memory_bytes),
            "required_bytes": "" if c.required_bytes is None else str(c.required_bytes),
            "required_gib": _gib(c.required_bytes),
            "device_bytes": "" if c.device_bytes is None else str(c.device_bytes),
            "peak_allocated_bytes": "" if c.peak_allocated_bytes is None else str(c.peak_allocated_bytes),
            "verdict": c.verdict or "error",
            "margin": "" if c.margin_fraction is None else f"{c.margin_fraction:.4f}",
            "error": " ".join(str(c.error).split()) if c.error else "",
        }
        rows.append([_text(v) for v in c.values] + [fields[k] for k in extra])
    return names + extra, rows


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def sweep_csv(result: SweepResult) -> str:
    """The grid as CSV: a header, then one row per cell in the sweep's order (no cell a spreadsheet would run as a
    formula: :func:`vramdesk.report.tables.csv_cell`)."""
    header, rows = sweep_rows(result)
    return write_rows([header, *rows])


def sweep_doc(result: SweepResult, scenario: Scenario) -> dict[str, Any]:
    """The grid as a JSON document: the base plan, the axes, and each cell with its values by axis."""
    cells = []
    for c in result.cells:
        cells.append(
            {
                "index": list(c.index),
                "values": {a.name: v for a, v in zip(result.axes, c.values, strict=True)},
                "gpu": c.gpu,
                "gpu_memory_bytes": c.memory_bytes,
                "required_bytes": c.required_bytes,
                "required_gib": None if c.required_bytes is None else round(c.required_bytes / GIB, 3),
                "device_bytes": c.device_bytes,
                "peak_allocated_bytes": c.peak_allocated_bytes,
                "verdict": c.verdict,
                "margin": c.margin_fraction,
                "error": " ".join(str(c.error).split()) if c.error else None,
            }
        )
    return {
        "model": scenario.model.id,
        "scenario": scenario.model_dump(mode="json"),
        "axes": [{"name": a.name, "values": list(a.values)} for a in result.axes],
        "shape": list(result.shape),
        "cells": cells,
    }


__all__ = ["COLUMNS", "sweep_csv", "sweep_doc", "sweep_rows"]
