"""Chart and report export: the figures of an estimate as PNG (high-DPI), SVG or PDF, the PDF and HTML reports,
the Markdown / CSV / JSON writers, the clipboard, and the headless renderer ``vramdesk export`` runs.

Every picture is a :class:`vramdesk.ui.figure.Figure` (title = the plan's name, subtitle, legend, unit, source
line) of one of :data:`vramdesk.ui.estimate_figure.CHARTS` (both charts, the breakdown as a pie or a stacked
bar, the phases), built inside :func:`vramdesk.ui.theme.printing`: dark text on white whatever the window's
theme, unless ``keep_screen`` asks for the window's palette. The reports embed the same figure, always in the
print palette (they are white pages).

* PNG: the figure at 2 x its logical size. SVG: ``QSvgGenerator`` (text stays text, plots stay paths).
  PDF of the chart: one vector A4 landscape page. PDF report: :mod:`vramdesk.ui.report_export` (paginated).

``python -m vramdesk.ui.export SCENARIO.json --format F -o OUT [--chart C] [--breakdown pie|bar]
[--screen-theme]`` is what ``vramdesk export`` runs for the formats that need Qt, so that the command line itself
never imports Qt; on success it prints nothing (the command line says what was written).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QMimeData
from PySide6.QtGui import QGuiApplication, QImage

from vramdesk.core.performance import Performance
from vramdesk.core.scenario import Scenario
from vramdesk.report.tables import ReportData
from vramdesk.services.accuracy import accuracy_rows

from . import theme
from .estimate_figure import CHARTS, MODES, REPORT_SIZE, estimate_figure
from .figure import PNG_SCALE, export_figure, export_pdf, export_png, image_data_uri, render_image
from .presenter import EstimateView
from .report_export import export_report_html, export_report_pdf

#: what the headless renderer writes (pdf: the report; chart-pdf: the chart alone)
FORMATS = ("png", "svg", "chart-pdf", "pdf", "html")
#: the report's figure: 3 x, so that it stays sharp when the PDF is zoomed
REPORT_SCALE = 3.0


# ---------------------------------------------------------------------------------------------- clipboard


def copy_image(image: QImage) -> None:
    QGuiApplication.clipboard().setImage(image)


def copy_text(text: str, *, markdown: bool = False) -> None:
    mime = QMimeData()
    mime.setText(text)
    if markdown:
        mime.setData("text/markdown", text.encode("utf-8"))
    QGuiApplication.clipboard().setMimeData(mime)


# ---------------------------------------------------------------------------------------------- headless


def prepare(scenario: Scenario) -> tuple[EstimateView, Performance | None]:
    """Estimate ``scenario`` the way the window does (raises ValueError with the reason when it cannot)."""
    from .presenter import evaluate_scenario

    ev = evaluate_scenario(scenario)
    if ev.view is None:
        raise ValueError(ev.error or "cannot estimate this scenario")
    return ev.view, speed_of(ev.view, scenario)


#: what :func:`export_view` writes: pictures (png, svg, chart-pdf), the report (pdf, html, md), the data (csv, json)
VIEW_FORMATS = ("png", "svg", "chart-pdf", "pdf", "html", "md", "csv", "json")


def speed_of(view: EstimateView, scenario: Scenario) -> Performance | None:
    """The speed estimate when the scenario names a catalog GPU with figures (None otherwise)."""
    from vramdesk.core.performance import PerformanceError, performance
    from vramdesk.services.resolve import ResolveError, resolve_gpu, resolve_model

    try:
        gpu = resolve_gpu(scenario.hardware.gpu)
        if gpu is None:
            return None
        return performance(view.estimate, scenario, resolve_model(scenario.model.id), gpu)
    except (PerformanceError, ResolveError, LookupError, ValueError, OSError):
        return None


def export_view(
    view: EstimateView,
    scenario: Scenario,
    fmt: str,
    out: Path,
    *,
    mode: str = "bar",
    perf: Performance | None = None,
    chart: str = "both",
    keep_screen: bool = False,
    inputs: Sequence[Path] = (),
    advice: str = "choose another file",
) -> Path:
    """Write one estimate in ``fmt`` (see :data:`VIEW_FORMATS`) to ``out``; never over one of ``inputs`` (the
    scenario file or library entry it came from: :class:`vramdesk.safety.OutputIsInputError`).

    Pictures show ``chart`` (see :data:`vramdesk.ui.estimate_figure.CHARTS`; the breakdown as ``mode``, pie or
    bar) in the print palette, or in the window's with ``keep_screen``; the reports embed both charts, printed."""
    from vramdesk.fsutil import atomic_write_text
    from vramdesk.report.tables import breakdown_csv, json_text, report_json, report_markdown
    from vramdesk.safety import check_output

    out = Path(out)
    if fmt not in VIEW_FORMATS:
        raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(VIEW_FORMATS)}")
    check_output(out, inputs, advice=advice)
    rows = accuracy_rows(scenario.workload.kind, view.estimate.engine.engine)
    data = ReportData(view.estimate, scenario, perf, accuracy=rows)
    if fmt == "md":
        atomic_write_text(out, report_markdown(data))
        return out
    if fmt == "csv":
        atomic_write_text(out, breakdown_csv(view.estimate))
        return out
    if fmt == "json":
        atomic_write_text(out, json_text(report_json(view.estimate, scenario, perf, created=data.created)))
        return out
    report = fmt in ("pdf", "html")
    fig = estimate_figure(
        view,
        scenario,
        chart="both" if report else chart,
        mode=mode,
        created=data.created,
        keep_screen=False if report else keep_screen,
        size=REPORT_SIZE if report else None,
    )
    try:
        if fmt == "png":
            return export_figure(fig, out, fmt="png")
        if fmt == "svg":
            return export_figure(fig, out, fmt="svg")
        if fmt == "chart-pdf":
            return export_figure(fig, out, fmt="pdf")
        if fmt == "html":
            return export_report_html(data, out, render_image(fig, PNG_SCALE))
        return export_report_pdf(data, out, render_image(fig, REPORT_SCALE))
    finally:
        fig.close()
        fig.deleteLater()


def chart_image(
    view: EstimateView,
    mode: str = "bar",
    scale: float = PNG_SCALE,
    *,
    scenario: Scenario | None = None,
    chart: str = "both",
    keep_screen: bool = False,
) -> QImage:
    """The figure of ``view`` as an image (what the clipboard gets), captioned from ``scenario`` (else from a
    scenario of the view's model alone)."""
    if scenario is None:
        from vramdesk.core.scenario import ModelRef

        scenario = Scenario(model=ModelRef(id=view.model_id))
    fig = estimate_figure(view, scenario, chart=chart, mode=mode, keep_screen=keep_screen)
    try:
        return render_image(fig, scale)
    finally:
        fig.close()
        fig.deleteLater()


def export_scenario(
    scenario: Scenario,
    fmt: str,
    out: Path,
    *,
    chart: str = "both",
    mode: str = "bar",
    screen: theme.Palette | None = None,
    inputs: Sequence[Path] = (),
) -> Path:
    """What ``vramdesk export`` does for the formats that need Qt (:data:`FORMATS`): pictures in the print palette,
    or in ``screen`` (a window's palette: there is no screen here to take one from); ``inputs``: the files the
    output must not replace."""
    from vramdesk.safety import check_output

    check_output(out, inputs)  # before Qt starts and the estimate runs
    from .qtapp import ensure_app

    ensure_app()
    if screen is not None:
        theme.use_palette(screen)
    view, perf = prepare(scenario)
    return export_view(
        view,
        scenario,
        fmt,
        out,
        perf=perf,
        chart=chart,
        mode=mode,
        keep_screen=screen is not None,
        inputs=inputs,
        advice="choose another -o",
    )


def main(argv: list[str] | None = None) -> int:
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    parser = argparse.ArgumentParser(prog="python -m vramdesk.ui.export")
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--format", required=True, choices=FORMATS)
    parser.add_argument("-o", "--output", required=True, type=Path)
    parser.add_argument("--chart", choices=CHARTS, default="both")
    parser.add_argument("--breakdown", choices=MODES, default="bar", help="the breakdown as a pie or a stacked bar")
    parser.add_argument(
        "--screen-theme", choices=("light", "dark"), default=None, help="the window's palette, not the print one"
    )
    ns = parser.parse_args(argv)
    from vramdesk.storage.scenarios import ScenarioFileError, load_scenario

    try:
        scenario = load_scenario(ns.scenario)
        export_scenario(
            scenario,
            ns.format,
            ns.output,
            chart=ns.chart,
            mode=ns.breakdown,
            screen=None if ns.screen_theme is None else theme.DARK if ns.screen_theme == "dark" else theme.LIGHT,
            inputs=[ns.scenario],
        )
    except (ScenarioFileError, ValueError, LookupError, OSError) as err:
        print(f"vramdesk: error: {err}", file=sys.stderr)
        return 2
    return 0


__all__ = [
    "FORMATS",
    "VIEW_FORMATS",
    "chart_image",
    "copy_image",
    "copy_text",
    "export_pdf",
    "export_png",
    "export_scenario",
    "export_view",
    "image_data_uri",
    "main",
    "prepare",
    "render_image",
    "speed_of",
]


if __name__ == "__main__":
    sys.exit(main())
