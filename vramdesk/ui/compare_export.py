"""The comparison written to a file in any of seven formats, from the window or the command line.

* png / svg / pdf: a :class:`~vramdesk.ui.figure.Figure` of the comparison chart (title "Comparison of N plans",
  the plans' names, the legend, the unit and the source line), built in the print palette. PDF is this figure as
  one vector page, the form a report or a slide takes a figure in (the numbers are in the html / md / csv files).
* html: the comparison document (verdict first), the figure embedded as a data: URI.
* md / csv / json: :mod:`vramdesk.report.comparison`'s writers.

``python -m vramdesk.ui.compare_export A.json B.json ... --format F -o OUT`` is what ``vramdesk compare`` runs
for png / svg / pdf / html, so that the command line itself never imports Qt.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from vramdesk.core.scenario import Scenario
from vramdesk.report.captions import comparison_caption
from vramdesk.report.comparison import (
    UNITS,
    CompareItem,
    Comparison,
    comparison_csv,
    comparison_html,
    comparison_json,
    comparison_markdown,
)

from . import theme
from .compare_chart import CompareChart
from .export import image_data_uri, render_image
from .figure import Figure, export_figure
from .presenter import unit_name

#: what a comparison is written as (the first three are pictures)
COMPARE_FORMATS = ("png", "svg", "pdf", "html", "md", "csv", "json")
#: other suffixes that name a format
SUFFIXES = {"htm": "html", "markdown": "md"}


def format_of(path: Path) -> str | None:
    """The format a file's suffix names (``.PNG`` -> png, ``.htm`` -> html), or None."""
    suffix = Path(path).suffix.lower().lstrip(".")
    suffix = SUFFIXES.get(suffix, suffix)
    return suffix if suffix in COMPARE_FORMATS else None


def compare_item(label: str, scenario: Scenario) -> CompareItem:
    """Estimate ``scenario`` for a comparison column, as the window does (an error column when it cannot be
    estimated)."""
    from .export import speed_of
    from .presenter import evaluate_scenario

    ev = evaluate_scenario(scenario)
    if ev.view is None:
        return CompareItem(label, scenario, error=ev.error or "cannot estimate")
    return CompareItem(label, scenario, ev.view.estimate, speed_of(ev.view, scenario))


def file_items(files: Sequence[Path]) -> list[CompareItem]:
    """A column per scenario file, named by the scenario (else the file), as ``vramdesk compare`` names them; a
    file that cannot be read raises :class:`~vramdesk.storage.scenarios.ScenarioFileError` (or OSError)."""
    from vramdesk.storage.library import read_entry

    items: list[CompareItem] = []
    seen: dict[str, int] = {}
    for f in files:
        scenario = read_entry(Path(f)).scenario
        label = scenario.name or Path(f).name.removesuffix(".json").removesuffix(".vramdesk")
        seen[label] = seen.get(label, 0) + 1
        items.append(compare_item(label if seen[label] == 1 else f"{label} ({seen[label]})", scenario))
    return items


def comparison_figure(items: Sequence[CompareItem]) -> Figure:
    """The chart of ``items`` with its caption, legend and unit, in the print palette."""
    with theme.printing():
        chart = CompareChart()
        chart.show_items(items)
        caption = comparison_caption([i.label for i in items])
        return Figure(caption, chart, legend=chart.legend_entries(), units=unit_name())


def export_comparison(
    cmp: Comparison,
    items: Sequence[CompareItem],
    path: Path,
    *,
    fmt: str | None = None,
    unit: str = "GiB",
    only_differences: bool = False,
    inputs: Sequence[Path] = (),
    what: str = "the input scenario",
    advice: str = "choose another -o",
) -> Path:
    """Write ``cmp`` (whose columns are ``items``) to ``path`` in ``fmt`` (else the one its suffix names); never
    over one of ``inputs`` (:class:`vramdesk.safety.OutputIsInputError`)."""
    from vramdesk.fsutil import atomic_write_text
    from vramdesk.report.tables import json_text
    from vramdesk.safety import check_output

    path = Path(path)
    check_output(path, inputs, what=what, advice=advice)
    fmt = fmt or format_of(path)
    if fmt not in COMPARE_FORMATS:
        raise ValueError(f"{path}: a comparison is written as {', '.join(COMPARE_FORMATS)}, not {fmt or 'this'!r}")
    if fmt == "md":
        atomic_write_text(path, comparison_markdown(cmp, unit, only_differences))
        return path
    if fmt == "csv":
        atomic_write_text(path, comparison_csv(cmp, only_differences))
        return path
    if fmt == "json":
        atomic_write_text(path, json_text(comparison_json(cmp, unit, only_differences)))
        return path
    figure = comparison_figure(items)
    try:
        if fmt != "html":
            return export_figure(figure, path)
        figure.lay_out()
        chart = image_data_uri(render_image(figure))
        atomic_write_text(path, comparison_html(cmp, chart, unit, only_differences))
        return path
    finally:
        figure.close()
        figure.deleteLater()


def main(argv: list[str] | None = None) -> int:
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    parser = argparse.ArgumentParser(prog="python -m vramdesk.ui.compare_export")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--format", required=True, choices=COMPARE_FORMATS)
    parser.add_argument("-o", "--output", required=True, type=Path)
    parser.add_argument("--unit", choices=list(UNITS), default="GiB")
    parser.add_argument("--only-differences", action="store_true")
    ns = parser.parse_args(argv)
    from vramdesk.report.comparison import build_comparison
    from vramdesk.safety import check_output
    from vramdesk.storage.scenarios import ScenarioFileError

    from .presenter import set_unit
    from .qtapp import ensure_app

    try:
        check_output(ns.output, ns.files)  # before Qt starts and the estimates run
        ensure_app()
        set_unit(ns.unit)
        items = file_items(ns.files)
        cmp = build_comparison(items)
        export_comparison(
            cmp, items, ns.output, fmt=ns.format, unit=ns.unit, only_differences=ns.only_differences, inputs=ns.files
        )
    except (ScenarioFileError, ValueError, LookupError, OSError) as err:
        print(f"vramdesk: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
