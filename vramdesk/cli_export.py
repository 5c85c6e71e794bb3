"""``vramdesk export SCENARIO.json --format F -o OUT``: one scenario's chart, report or breakdown in a file.

csv / md / json are written here; png / svg / pdf / html need Qt, which :mod:`vramdesk.ui.export` runs in a child
process, so that the command line itself never imports Qt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from vramdesk.cli_common import ERRORS, CliError, estimate_and_speed, read_scenario_file
from vramdesk.core.performance import Performance
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.report.tables import ReportData

EXPORT_FORMATS = ("png", "svg", "pdf", "csv", "md", "html", "json")


def add_export_parser(sub: Any) -> None:
    exp = sub.add_parser("export", help="write one scenario's chart, report or breakdown to a file")
    exp.add_argument("scenario", metavar="SCENARIO.json")
    exp.add_argument("--format", required=True, choices=EXPORT_FORMATS)
    exp.add_argument("-o", "--output", required=True, metavar="OUT")


def report_data(est: Estimate, scenario: Scenario, perf: Performance | None) -> ReportData:
    """The report of one estimate, with how close each level came to measured runs for this kind of plan."""
    from vramdesk.services.accuracy import accuracy_rows

    return ReportData(est, scenario, perf, accuracy=accuracy_rows(scenario.workload.kind, est.engine.engine))


def render_in_child(scenario_path: Path, fmt: str, output: Path) -> None:
    """png / svg / pdf / html need Qt: vramdesk.ui.export renders them in a child process, so that this
    process (the command line) never imports Qt."""
    import os
    import subprocess

    env = dict(os.environ)
    env["QT_QPA_PLATFORM"] = "offscreen"
    cmd = [sys.executable, "-m", "vramdesk.ui.export", str(scenario_path), "--format", fmt, "-o", str(output)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        reason = lines[-1].removeprefix("vramdesk: error: ") if lines else f"exit status {proc.returncode}"
        raise CliError(f"cannot render {fmt}: {reason}")
    if not output.is_file():
        raise CliError(f"cannot render {fmt}: {output} was not written")


def run_export(ns: argparse.Namespace) -> int:
    """`vramdesk export SCENARIO.json --format F -o OUT`."""
    from vramdesk.fsutil import atomic_write_text
    from vramdesk.report.tables import breakdown_csv, json_text, report_html, report_json, report_markdown
    from vramdesk.safety import check_output

    src, output = Path(ns.scenario), Path(ns.output)
    try:
        # `export s.json -o s.json` would replace the scenario with its report (also through a link)
        check_output(ns.output, [src])
        scenario = read_scenario_file(src)
        est, perf = estimate_and_speed(scenario)  # errors show here, before any rendering
        if output.is_dir():
            raise CliError(f"{output}: is a folder")
        if not output.parent.is_dir():
            raise CliError(f"{output}: the folder {output.parent} does not exist")
        if ns.format == "csv":
            atomic_write_text(output, breakdown_csv(est))
        elif ns.format == "md":
            atomic_write_text(output, report_markdown(report_data(est, scenario, perf)))
        elif ns.format == "json":
            atomic_write_text(output, json_text(report_json(est, scenario, perf)))
        else:
            try:
                render_in_child(src, ns.format, output)
            except CliError:
                if ns.format != "html":
                    raise
                # no Qt here: the same report without the chart
                atomic_write_text(output, report_html(report_data(est, scenario, perf)))
    except ERRORS as err:
        print(f"vramdesk: error: {err}", file=sys.stderr)
        return 2
    return 0
