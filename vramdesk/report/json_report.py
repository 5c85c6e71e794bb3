"""Estimate -> the JSON object of the command-line contract (bytes are integers)."""

from __future__ import annotations

from typing import Any

from vramdesk.core.performance import Performance
from vramdesk.core.result import Component, Estimate
from vramdesk.core.scenario import Scenario


def _component(c: Component) -> dict[str, Any]:
    return {"name": c.name, "bytes": c.bytes, "category": c.category, "explain": c.explain}


def estimate_to_dict(
    est: Estimate, scenario: Scenario | None = None, performance: Performance | None = None
) -> dict[str, Any]:
    """``performance``: the speed estimate when a GPU is given (``None`` otherwise, as the contract says)."""
    out: dict[str, Any] = {
        "model": est.model_id,
        "params": {
            "total": est.params.total,
            "active": est.params.active,
            "trainable": est.params.trainable,
            "checkpoint_total": est.params.checkpoint_total,
            "parts": dict(est.params.parts),
            "notes": list(est.params.notes),
        },
        "components": [_component(c) for c in est.components],
        "peak_phase": est.peak_phase,
        "phases": [
            {"name": p.name, "allocated_bytes": p.allocated_bytes, "components": [_component(c) for c in p.components]}
            for p in est.phases
        ],
        "peak_allocated_bytes": est.peak_allocated_bytes,
        "peak_reserved_bytes": est.peak_reserved_bytes,
        "device_bytes": est.device_bytes,
        "device_overheads": [_component(c) for c in est.device_overheads],
        "per_gpu": [g.model_dump() for g in est.per_gpu],
        "host_bytes": est.host_bytes,
        "engine": est.engine.model_dump(),
        "fit": est.fit.model_dump() if est.fit else None,
        "performance": performance.model_dump(mode="json") if performance is not None else None,
        "warnings": list(est.warnings),
        "constants": dict(est.constants),
    }
    if scenario is not None:
        out["scenario"] = scenario.model_dump(mode="json")
    return out
