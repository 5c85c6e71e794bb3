"""``vramdesk export SOURCE -o OUT``: one plan's chart, report or breakdown in a file, the format taken from OUT's
suffix (or ``--format``); SOURCE is a saved scenario or a model with the options ``estimate`` takes.

csv / md / json are written here; png / svg / pdf / html need Qt, which :mod:`vramdesk.ui.export` runs in a child
process (given the scenario as a temporary file, removed afterwards), so that the command line itself never
imports Qt. What was written is said in one line on stdout ("wrote plan.png (PNG chart, 2400 x 1280 px,
184 KB)"); errors are one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vramdesk.cli_common import ERRORS, CliError, estimate_and_speed, read_scenario_file, run_child
from vramdesk.core.performance import Performance
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.report.tables import ReportData

#: what ``--format`` takes: pdf is the report (chart, tables, notes), chart-pdf the chart alone
EXPORT_FORMATS = ("png", "svg", "pdf", "chart-pdf", "csv", "md", "html", "json")
#: the format each suffix of -o means when --format is not given
SUFFIX_FORMATS = {
    ".png": "png",
    ".svg": "svg",
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".md": "md",
    ".csv": "csv",
    ".json": "json",
}
#: the formats the child process renders (with Qt)
PICTURE_FORMATS = ("png", "svg", "pdf", "chart-pdf", "html")
CHARTS = ("both", "breakdown", "phase")
#: how each format is named in the line that says what was written
KINDS = {
    "png": "PNG chart",
    "svg": "SVG chart",
    "pdf": "PDF report",
    "chart-pdf": "PDF chart",
    "html": "HTML report",
    "md": "Markdown report",
    "csv": "CSV breakdown",
    "json": "JSON report",
}

#: a function that builds a scenario from SOURCE and option values (``vramdesk.cli.scenario_from``)
ScenarioFrom = Callable[[str, dict[str, Any]], Scenario]


def add_export_parser(sub: Any, estimate_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``export`` command; ``estimate_options`` adds the options ``estimate`` takes (the option table's)."""
    exp = sub.add_parser(
        "export",
        help="write one plan's chart, report or breakdown to a file (the format from its suffix)",
        description="SOURCE is a scenario file, or a model (repo id, config.json, folder, .gguf) planned with the "
        "options below. The format comes from OUT's suffix: .png .svg (the chart), .pdf .html .md (the report), "
        ".csv .json (the breakdown / the estimate). Without --gpu the plan has no GPU (no verdict).",
    )
    exp.add_argument("source", metavar="SOURCE", help="scenario .json, repo id, config.json, model folder or .gguf")
    exp.add_argument("-o", "--output", required=True, metavar="OUT", help="the file to write")
    exp.add_argument(
        "--format", choices=EXPORT_FORMATS, default=None, help="instead of OUT's suffix (chart-pdf: the chart alone)"
    )
    exp.add_argument(
        "--chart", choices=CHARTS, default="both", help="what a picture shows: both charts, or one of them [both]"
    )
    exp.add_argument(
        "--breakdown", choices=("bar", "pie"), default="bar", help="the breakdown as a stacked bar or a pie [bar]"
    )
    exp.add_argument(
        "--screen-theme",
        choices=("light", "dark"),
        default=None,
        help="draw the chart in the window's light or dark theme instead of the print theme (dark text on white)",
    )
    estimate_options(exp)


def output_format(output: Path, given: str | None) -> str:
    """``--format`` when given, else the format OUT's suffix names (CliError saying what is wrong otherwise)."""
    if given:
        return given
    suffixes = " ".join(SUFFIX_FORMATS)
    suffix = output.suffix.lower()
    if not suffix:
        raise CliError(f"{output}: no suffix to tell the format from; name it {suffixes}, or give --format")
    if suffix not in SUFFIX_FORMATS:
        raise CliError(f"{output}: unknown suffix '{output.suffix}'; use {suffixes}, or give --format")
    return SUFFIX_FORMATS[suffix]


def report_data(est: Estimate, scenario: Scenario, perf: Performance | None) -> ReportData:
    """The report of one estimate, with how close each level came to measured runs for this kind of plan."""
    from vramdesk.services.accuracy import accuracy_rows

    return ReportData(est, scenario, perf, accuracy=accuracy_rows(scenario.workload.kind, est.engine.engine))


def source_scenario(source: str, opts: Mapping[str, Any], scenario_from: ScenarioFrom) -> Scenario:
    """The plan SOURCE names: a scenario file as saved (a newer one read as far as it can be), or with options
    applied; a model planned with the options (as ``estimate`` does). An unnamed plan gets its generated name."""
    from vramdesk.core.plan_name import plan_name
    from vramdesk.storage.scenarios import is_scenario_file

    path = Path(source)
    if not opts and path.is_file() and is_scenario_file(path):
        scenario = read_scenario_file(path)
    else:
        scenario = scenario_from(source, dict(opts))
    return scenario if scenario.name else scenario.model_copy(update={"name": plan_name(scenario)})


def child_command(scenario_path: Path, fmt: str, output: Path, ns: argparse.Namespace) -> list[str]:
    cmd = [sys.executable, "-m", "vramdesk.ui.export", str(scenario_path), "--format", fmt, "-o", str(output)]
    cmd += ["--chart", ns.chart, "--breakdown", ns.breakdown]
    if ns.screen_theme:
        cmd += ["--screen-theme", ns.screen_theme]
    return cmd


def render_in_child(scenario: Scenario, fmt: str, output: Path, ns: argparse.Namespace) -> None:
    """png / svg / pdf / html: vramdesk.ui.export renders them in a child process. The scenario goes to it as a
    file in a fresh temporary folder, removed afterwards whatever happens."""
    import tempfile

    from vramdesk.storage.scenarios import save_scenario

    with tempfile.TemporaryDirectory(prefix="vramdesk-export-") as folder:
        path = Path(folder) / "scenario.json"
        save_scenario(scenario, path)
        run_child(child_command(path, fmt, output, ns), fmt, output)


def size_text(n: int) -> str:
    """A file's size as a file manager says it: 512 B, 184 KB, 2.4 MB (1 KB = 1024 bytes)."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


def png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG's header (None when it is no PNG)."""
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def pdf_pages(data: bytes) -> int:
    """The page objects of a PDF (what Qt's writer makes: no object streams)."""
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", data))


def written_line(path: Path, fmt: str, *, note: str = "") -> str:
    """``wrote plan.png (PNG chart, 2400 x 1280 px, 184 KB)``: what, how big, one line."""
    data = path.read_bytes()
    facts = [KINDS[fmt] + note]
    if fmt == "png" and (size := png_size(data)) is not None:
        facts.append(f"{size[0]} x {size[1]} px")
    elif fmt in ("pdf", "chart-pdf"):
        n = pdf_pages(data)
        facts.append(f"{n} page{'s' if n != 1 else ''}")
    elif fmt == "csv":
        n = max(0, data.count(b"\n") - 1)
        facts.append(f"{n} row{'s' if n != 1 else ''}")
    facts.append(size_text(len(data)))
    return f"wrote {path} ({', '.join(facts)})"


def _inputs(source: str, opts: Mapping[str, Any]) -> list[Path]:
    """The files the output must never replace: SOURCE when it is a file, a --deepspeed config."""
    files = [Path(source)] if Path(source).is_file() else []
    if opts.get("deepspeed"):
        files.append(Path(str(opts["deepspeed"])))
    return files


def _write(ns: argparse.Namespace, fmt: str, scenario: Scenario, est: Estimate, perf: Performance | None) -> str:
    """Write OUT in ``fmt``; what the written line adds to the format's name (a report without its chart)."""
    from vramdesk.fsutil import atomic_write_text
    from vramdesk.report.tables import breakdown_csv, json_text, report_html, report_json, report_markdown

    output = Path(ns.output)
    if fmt == "csv":
        atomic_write_text(output, breakdown_csv(est))
    elif fmt == "md":
        atomic_write_text(output, report_markdown(report_data(est, scenario, perf)))
    elif fmt == "json":
        atomic_write_text(output, json_text(report_json(est, scenario, perf)))
    else:
        try:
            render_in_child(scenario, fmt, output, ns)
        except CliError as err:
            if fmt != "html":
                raise
            # no Qt here: the same report without the chart
            print(f"vramdesk: note: the HTML report has no chart ({err})", file=sys.stderr)
            atomic_write_text(output, report_html(report_data(est, scenario, perf)))
            return " without the chart"
    return ""


def run_export(ns: argparse.Namespace, scenario_from: ScenarioFrom, opts: Mapping[str, Any]) -> int:
    """`vramdesk export SOURCE -o OUT [--format F] [estimate options]`; ``opts``: the estimate options given."""
    from vramdesk.safety import check_output

    output = Path(ns.output)
    try:
        fmt = output_format(output, ns.format)
        # `export s.json -o s.json` would replace the scenario with its report (also through a link)
        check_output(ns.output, _inputs(ns.source, opts))
        if output.is_dir():
            raise CliError(f"{output}: is a folder")
        if not output.parent.is_dir():
            raise CliError(f"{output}: the folder {output.parent} does not exist")
        scenario = source_scenario(ns.source, opts, scenario_from)
        est, perf = estimate_and_speed(scenario)  # errors show here, before any rendering
        note = _write(ns, fmt, scenario, est, perf)
        print(written_line(output, fmt, note=note))
    except ERRORS as err:
        print(f"vramdesk: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    return 0
