"""``vramdesk compare A.json B.json ...``: saved scenarios side by side (verdicts, totals, components, inputs).

md / csv / json are written here; png / svg / pdf / html need Qt, which :mod:`vramdesk.ui.compare_export` runs
in a child process, so that the command line itself never imports Qt.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from vramdesk.cli_common import ERRORS, CliError, estimate_and_speed, read_scenario_file, run_child, write_or_print

if TYPE_CHECKING:
    from vramdesk.report.comparison import CompareItem

#: the formats `compare` writes (as ui.compare_export.COMPARE_FORMATS; the pictures need -o)
FORMATS = ("md", "csv", "json", "html", "png", "svg", "pdf")
PICTURES = ("png", "svg", "pdf")
#: what a suffix of -o says when --format is not given (a suffix that names no format: Markdown, as before)
_SUFFIXES = {"htm": "html", "markdown": "md"}


def add_compare_parser(sub: Any) -> None:
    cmp = sub.add_parser("compare", help="side-by-side comparison of saved scenario files")
    cmp.add_argument("files", nargs="+", metavar="SCENARIO.json", help="two or more scenario files")
    cmp.add_argument(
        "--format", choices=FORMATS, default=None, help="[md, or what the suffix of -o names: cmp.png is png]"
    )
    cmp.add_argument("-o", "--output", metavar="OUT", default=None, help="write to a file instead of stdout")
    cmp.add_argument("--unit", choices=["GiB", "GB"], default="GiB", help="memory figures in GiB or GB [GiB]")
    cmp.add_argument(
        "--only-differences", action="store_true", help="leave out the inputs and components every plan shares"
    )


def output_format(fmt: str | None, output: str | None) -> str:
    """``--format``, else what the suffix of ``-o`` names, else md."""
    if fmt:
        return fmt
    suffix = Path(output).suffix.lower().lstrip(".") if output else ""
    suffix = _SUFFIXES.get(suffix, suffix)
    return suffix if suffix in FORMATS else "md"


def compare_files(files: Sequence[str | Path]) -> list[CompareItem]:
    """A column per scenario file, named by the scenario (else the file); a plan that cannot be estimated is a
    column with the reason. A file that cannot be read raises (one of :data:`ERRORS`)."""
    from vramdesk.report.comparison import CompareItem

    items: list[CompareItem] = []
    seen: dict[str, int] = {}
    for f in files:
        scenario = read_scenario_file(Path(f))
        label = scenario.name or Path(f).name.removesuffix(".json").removesuffix(".vramdesk")
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label} ({seen[label]})"
        try:
            est, perf = estimate_and_speed(scenario)
            items.append(CompareItem(label, scenario, est, perf))
        except ERRORS as err:
            items.append(CompareItem(label, scenario, error=str(err)))
    return items


def render_in_child(ns: argparse.Namespace, fmt: str, output: Path) -> None:
    """png / svg / pdf / html: vramdesk.ui.compare_export renders them in a child process."""
    cmd = [sys.executable, "-m", "vramdesk.ui.compare_export", *ns.files, "--format", fmt, "-o", str(output)]
    cmd += ["--unit", ns.unit] + (["--only-differences"] if ns.only_differences else [])
    run_child(cmd, fmt, output)


def _html(ns: argparse.Namespace, text: str, out: TextIO) -> None:
    """The HTML document with its chart (rendered in a child process); without the chart where Qt cannot run."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="vramdesk-compare-") as tmp:
        target = Path(ns.output) if ns.output else Path(tmp) / "comparison.html"
        try:
            render_in_child(ns, "html", target)
        except CliError:
            write_or_print(text, ns.output, out, ns.files)  # no Qt here: the same document without the chart
            return
        if not ns.output:
            out.write(target.read_text(encoding="utf-8"))


def run_compare(ns: argparse.Namespace, out: TextIO) -> int:
    """`vramdesk compare A.json B.json ...`: verdicts, totals, components and inputs side by side."""
    from vramdesk.report.comparison import (
        build_comparison,
        comparison_csv,
        comparison_html,
        comparison_json,
        comparison_markdown,
    )
    from vramdesk.report.tables import json_text

    if len(ns.files) < 2:
        print("vramdesk: error: compare needs at least two scenario files", file=sys.stderr)
        return 2
    fmt = output_format(ns.format, ns.output)
    items: list[CompareItem] = []
    try:
        if fmt in PICTURES and not ns.output:
            raise CliError(f"a {fmt} comparison is written to a file: give -o OUT.{fmt}")
        if ns.output:  # say so before estimating anything
            from vramdesk.safety import check_output

            check_output(ns.output, ns.files)
        items = compare_files(ns.files)
        cmp = build_comparison(items)
        diff = ns.only_differences
        if fmt in PICTURES:
            render_in_child(ns, fmt, Path(ns.output))
        elif fmt == "html":
            _html(ns, comparison_html(cmp, unit=ns.unit, only_differences=diff), out)
        elif fmt == "json":
            write_or_print(json_text(comparison_json(cmp, ns.unit, diff)), ns.output, out, ns.files)
        elif fmt == "csv":
            write_or_print(comparison_csv(cmp, diff), ns.output, out, ns.files)
        else:
            write_or_print(comparison_markdown(cmp, ns.unit, diff), ns.output, out, ns.files)
    except ERRORS as err:
        print(f"vramdesk: error: {err}", file=sys.stderr)
        return 2
    failed = [i for i in items if i.error]
    for i in failed:
        print(f"vramdesk: error: {i.label}: {i.error}", file=sys.stderr)
    return 1 if failed else 0
