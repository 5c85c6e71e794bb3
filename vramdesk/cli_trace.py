"""``vramdesk trace PLAN --python PATH [--json] [-o FILE]``: one inference request or training step of the plan
run by the real transformers / peft code in the user's own Python on fake tensors (no weights), its allocations
replayed through the caching-allocator model, and printed phase by phase next to the estimate
(:mod:`vramdesk.services.trace`); ``-o FILE.json`` writes the measurement file (:mod:`vramdesk.storage.measurement`).
Errors are one line on stderr, exit status 2."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from vramdesk.cli_common import ERRORS, CliError
from vramdesk.core.gpu import MIB
from vramdesk.core.messages import Text
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services import trace as tr
from vramdesk.storage.measurement import (
    EstimateFigures,
    Measurement,
    ModelIdentity,
    PhaseFigures,
    config_hash,
    public_plan,
    write_measurement,
)

ScenarioFrom = Callable[[str, dict[str, Any]], Scenario]


def _estimate(scenario: Scenario, config: dict[str, Any]) -> tuple[Estimate | None, Text | None]:
    from vramdesk.core.architecture import ConfigError
    from vramdesk.core.estimate import EstimateError, estimate
    from vramdesk.core.facts import model_facts
    from vramdesk.error_words import said
    from vramdesk.services.resolve import ResolveError, resolve_gpu

    try:
        return estimate(scenario, model_facts(config, scenario.model.id), resolve_gpu(scenario.hardware.gpu)), None
    except (ConfigError, EstimateError, ResolveError) as err:
        return None, tr.NO_ESTIMATE_NOTE(reason=said(err))


def _pct(row_diff: float | None) -> str:
    return "-" if row_diff is None else f"{100 * row_diff:+.1f} %"


def _mib(n: int | None) -> str:
    return "-" if n is None else f"{n / MIB:,.1f}"


def render(report: tr.TraceReport, out: TextIO) -> None:
    """The comparison as text: phases, components, peaks, notes (MiB)."""
    vers = ", ".join(f"{k} {v}" for k, v in report.versions.items())
    print(
        f"traced {report.model_type} ({report.params:,} parameters, {report.trainable:,} trainable) with {vers}",
        file=out,
    )
    print(f"{'phase':26} {'traced alloc':>13} {'reserved':>10} {'estimate':>10} {'diff':>8}  why (MiB)", file=out)
    for p in report.phases:
        print(
            f"{p.name:26} {_mib(p.allocated):>13} {_mib(p.reserved):>10} {_mib(p.estimate):>10} {_pct(p.diff):>8}  "
            f"{p.why}",
            file=out,
        )
    for c in report.components:
        diff = None if c.estimate is None or not c.traced else c.estimate / c.traced - 1
        print(f"  {c.name:24} {_mib(c.traced):>13} {'':>10} {_mib(c.estimate):>10} {_pct(diff):>8}", file=out)
    peak_diff = None if report.estimate_reserved is None else report.estimate_reserved / report.peak_reserved - 1
    print(
        f"{'peak reserved':26} {_mib(report.peak_reserved):>13} {'':>10} {_mib(report.estimate_reserved):>10} "
        f"{_pct(peak_diff):>8}  {tr.reserved_words(report)}",
        file=out,
    )
    for note in report.notes:
        print(f"note: {note}", file=out)


def report_doc(report: tr.TraceReport) -> dict[str, Any]:
    return {
        "model_type": report.model_type,
        "versions": report.versions,
        "params": report.params,
        "trainable": report.trainable,
        "phases": [
            {
                "name": p.name,
                "allocated_bytes": p.allocated,
                "reserved_bytes": p.reserved,
                "estimate_allocated_bytes": p.estimate,
                "diff": p.diff,
                "why": str(p.why),
            }
            for p in report.phases
        ],
        "components": [
            {"name": c.name, "traced_bytes": c.traced, "estimate_bytes": c.estimate} for c in report.components
        ],
        "peak_allocated_bytes": report.peak_allocated,
        "peak_reserved_bytes": report.peak_reserved,
        "estimate_peak_allocated_bytes": report.estimate_allocated,
        "estimate_peak_reserved_bytes": report.estimate_reserved,
        "notes": [str(n) for n in report.notes],
    }


def measurement(report: tr.TraceReport, scenario: Scenario, config: dict[str, Any]) -> Measurement:
    est = None
    if report.estimate_allocated is not None and report.estimate_reserved is not None:
        phases = tuple(
            PhaseFigures(name=p.name, allocated_bytes=p.estimate) for p in report.phases if p.estimate is not None
        )
        est = EstimateFigures(
            peak_allocated_bytes=report.estimate_allocated, peak_reserved_bytes=report.estimate_reserved, phases=phases
        )
    return Measurement(
        kind="trace",
        plan=public_plan(scenario),
        model=ModelIdentity(model_type=report.model_type, config_sha256=config_hash(config)),
        versions=report.versions,
        phases=tuple(
            PhaseFigures(name=p.name, allocated_bytes=p.allocated, reserved_bytes=p.reserved) for p in report.phases
        ),
        peak_allocated_bytes=report.peak_allocated,
        peak_reserved_bytes=report.peak_reserved,
        estimate=est,
    )


def run_trace(ns: argparse.Namespace, out: TextIO, scenario_from: ScenarioFrom, opts: Mapping[str, Any]) -> int:
    """`vramdesk trace PLAN --python PATH [--json] [-o FILE]`; ``opts``: the estimate options given."""
    from vramdesk.safety import check_output

    try:
        if ns.output:
            if Path(ns.output).suffix.lower() != ".json":
                raise CliError(f"{ns.output}: the measurement file is JSON; give a .json name")
            check_output(ns.output, [ns.model] if Path(ns.model).is_file() else [])
        scenario = scenario_from(ns.model, dict(opts))
        config = tr.model_config(scenario.model.id)
        request = tr.trace_request(scenario, config, ns.decode_steps)
        compared = tr.compared_scenario(scenario, request)
        est, why_not = _estimate(compared, config)
        answer = tr.run_child(ns.python, request, ns.timeout)
        notes = [why_not] if why_not else []
        if request["plan"]["mode"] == "inference":
            notes.append(tr.DECODE_NOTE(steps=request["plan"]["decode_steps"]))
        report = tr.compare(answer, est, request["plan"], notes)
        if ns.json:
            out.write(json.dumps(report_doc(report), indent=2, allow_nan=False) + "\n")
        else:
            render(report, out)
        if ns.output:
            write_measurement(Path(ns.output), measurement(report, compared, config))
            if not ns.json:
                print(f"wrote {ns.output} (measurement, {len(report.phases)} phases)", file=out)
    except (*ERRORS, tr.TraceRunError) as err:
        print(f"vramdesk: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    return 0


__all__ = ["measurement", "render", "report_doc", "run_trace"]
