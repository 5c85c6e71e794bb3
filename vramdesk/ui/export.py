"""Chart and report export: PNG (high-DPI), SVG, vector PDF of the charts, the PDF report, the clipboard.

* PNG: the charts panel rendered into a QImage at ``scale`` x its size (2 = a crisp picture on a
  high-DPI screen or in a printed document).
* SVG: pyqtgraph's SVGExporter of one plot. pyqtgraph 0.14.0 cannot parse the closing ``Z`` that
  QSvgGenerator writes since Qt 6.11 (``shared/research/ecosystem.md`` §2; pyqtgraph #3495, fixed upstream
  by PR #3458, not released): :func:`patch_svg_exporter` strips the ``Z`` before pyqtgraph's coordinate
  pass and puts it back afterwards.
* PDF of the charts: ``QWidget.render`` onto a scaled ``QPdfWriter`` painter (vector, text embedded).
  Rendering the pyqtgraph *scene* straight into a 300-dpi device garbles its text; widgets render right.
* PDF report: the HTML report (:mod:`vramdesk.report.tables`) in a ``QTextDocument`` printed to a
  ``QPdfWriter`` (paginated), with the charts embedded as a 3x image.

``python -m vramdesk.ui.export SCENARIO.json --format png|svg|pdf -o OUT`` is what ``vramdesk export``
runs for the picture formats, so that the command line itself never imports Qt.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QMimeData, QPoint, QSize, QSizeF, QUrl
from PySide6.QtGui import (
    QColor,
    QGuiApplication,
    QImage,
    QImageWriter,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QTextDocument,
)
from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout, QWidget

from vramdesk import __version__
from vramdesk.core.performance import Performance
from vramdesk.core.scenario import Scenario
from vramdesk.report.tables import ReportData, report_html
from vramdesk.services.accuracy import accuracy_rows

from . import theme
from .charts import BreakdownChart, PhaseChart
from .presenter import EstimateView
from .widgets import Legend

PNG_SCALE = 2.0
PANEL_SIZE = (1200, 520)
FORMATS = ("png", "svg", "pdf", "html")

_patched: dict[str, bool] = {}


def patch_svg_exporter() -> None:
    """Make pyqtgraph's SVGExporter accept the closed paths (``... Z``) Qt >= 6.11 writes. Idempotent."""
    if _patched.get("svg"):
        return
    module = importlib.import_module("pyqtgraph.exporters.SVGExporter")  # the module, not the class
    original: Callable[..., Any] = getattr(module, "correctCoordinates")  # noqa: B009

    def corrected(node: Any, defs: Any, item: Any, options: Any) -> Any:
        closed = []
        for path in node.getElementsByTagName("path"):
            d = path.getAttribute("d")
            if "Z" in d or "z" in d:
                path.setAttribute("d", " ".join(t for t in d.replace("z", "Z").split() if t != "Z"))
                closed.append(path)
        result = original(node, defs, item, options)
        for path in closed:
            path.setAttribute("d", path.getAttribute("d").strip() + " Z")
        return result

    module.correctCoordinates = corrected  # type: ignore[attr-defined]
    _patched["svg"] = True


class ChartPanel(QWidget):
    """The two charts of one estimate side by side with their legend: what PNG and PDF exports show."""

    def __init__(self, parent: QWidget | None = None, *, mode: str = "bar") -> None:
        super().__init__(parent)
        self.setObjectName("results")
        self.setAutoFillBackground(True)
        pal = self.palette()
        pal.setColor(self.backgroundRole(), QColor(theme.current().background))
        self.setPalette(pal)
        self.breakdown = BreakdownChart(self)
        self.breakdown.set_mode(mode)
        for button in self.breakdown.mode_buttons.values():
            button.setVisible(False)  # a picture has nothing to click
        self.phase_chart = PhaseChart(self)
        self.legend = Legend(self)
        row = QHBoxLayout()
        row.addWidget(self.breakdown, 5)
        row.addWidget(self.phase_chart, 6)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addLayout(row, 1)
        layout.addWidget(self.legend)
        self.resize(*PANEL_SIZE)

    def show_view(self, view: EstimateView) -> None:
        self.breakdown.show_view(view)
        self.phase_chart.show_view(view)
        self.legend.set_entries([(name, view.colors[name]) for name in view.colors])
        self._lay_out()

    def _lay_out(self) -> None:
        layout = self.layout()
        if layout is not None:
            layout.activate()
        QGuiApplication.processEvents()


def render_image(widget: QWidget, scale: float = PNG_SCALE) -> QImage:
    """``widget`` rendered at ``scale`` x its logical size (device pixel ratio ``scale``)."""
    size = widget.size()
    image = QImage(QSize(round(size.width() * scale), round(size.height() * scale)), QImage.Format.Format_ARGB32)
    image.setDevicePixelRatio(scale)
    image.fill(QColor(theme.current().background))
    painter = QPainter(image)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        # QWidget's render, not a subclass's: pyqtgraph's GraphicsView (the comparison chart) overrides render()
        # with QGraphicsView's scene-rendering signature, which takes no target point
        QWidget.render(widget, painter, QPoint(0, 0))
    finally:
        painter.end()
    return image


def export_png(widget: QWidget, path: Path, scale: float = PNG_SCALE) -> Path:
    image = render_image(widget, scale)
    writer = QImageWriter(str(path), QByteArray(b"png"))
    if not writer.write(image):
        raise OSError(f"{path}: cannot write the PNG file ({writer.errorString()})")
    return Path(path)


def export_svg(plot: pg.PlotWidget, path: Path) -> Path:
    """One plot (pyqtgraph's SVGExporter, patched for Qt >= 6.11) as an SVG file."""
    patch_svg_exporter()
    from pyqtgraph.exporters import SVGExporter

    exporter = SVGExporter(plot.getPlotItem())
    data = exporter.export(toBytes=True)
    if not isinstance(data, (bytes, bytearray)):
        raise OSError(f"{path}: the SVG exporter returned nothing")
    try:
        Path(path).write_bytes(bytes(data))
    except OSError as err:
        raise OSError(f"{path}: cannot write the SVG file ({err.strerror or err})") from err
    return Path(path)


def _pdf_writer(path: Path, title: str, *, landscape: bool) -> QPdfWriter:
    writer = QPdfWriter(str(path))
    writer.setTitle(title)
    writer.setCreator(f"vramdesk {__version__}")
    writer.setResolution(300)
    orientation = QPageLayout.Orientation.Landscape if landscape else QPageLayout.Orientation.Portrait
    writer.setPageLayout(
        QPageLayout(
            QPageSize(QPageSize.PageSizeId.A4), orientation, QMarginsF(12, 12, 12, 12), QPageLayout.Unit.Millimeter
        )
    )
    return writer


def export_pdf(widget: QWidget, path: Path, title: str = "vramdesk chart") -> Path:
    """``widget`` as one vector page (A4 landscape), scaled to fit the printable area."""
    writer = _pdf_writer(path, title, landscape=True)
    painter = QPainter()
    if not painter.begin(writer):
        raise OSError(f"{path}: cannot write the PDF file")
    try:
        page = writer.pageLayout().paintRectPixels(writer.resolution())
        s = min(page.width() / max(1, widget.width()), page.height() / max(1, widget.height()))
        painter.scale(s, s)
        # QWidget's render, not a subclass's: pyqtgraph's GraphicsView (the comparison chart) overrides render()
        # with QGraphicsView's scene-rendering signature, which takes no target point
        QWidget.render(widget, painter, QPoint(0, 0))
    finally:
        painter.end()
    return Path(path)


def image_data_uri(image: QImage) -> str:
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    QImageWriter(buf, QByteArray(b"png")).write(image)
    buf.close()
    return "data:image/png;base64," + base64.b64encode(bytes(data.data())).decode("ascii")


CHART_URL = "vramdesk-chart.png"


def report_document(data: ReportData, chart: QImage | None, width: float = 720) -> QTextDocument:
    """The HTML report in a QTextDocument, the chart registered as an image resource."""
    doc = QTextDocument()
    doc.setDocumentMargin(0)
    if chart is not None:
        doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(CHART_URL), chart)
    doc.setHtml(report_html(data, CHART_URL if chart is not None else None, int(width)))
    return doc


def export_report_pdf(data: ReportData, path: Path, chart: QImage | None = None) -> Path:
    """The report (summary, breakdown, phases, inputs, notes, constants; the chart on top) as A4 pages."""
    writer = _pdf_writer(path, f"vramdesk report: {data.title}", landscape=False)
    rect = writer.pageLayout().paintRect(QPageLayout.Unit.Point)
    doc = report_document(data, chart, rect.width() - 4)
    doc.setPageSize(QSizeF(rect.width(), rect.height()))
    doc.print_(writer)
    if not Path(path).is_file():
        raise OSError(f"{path}: cannot write the PDF file")
    return Path(path)


def export_report_html(data: ReportData, path: Path, chart: QImage | None = None) -> Path:
    from vramdesk.fsutil import atomic_write_text

    atomic_write_text(Path(path), report_html(data, image_data_uri(chart) if chart is not None else None))
    return Path(path)


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
    from vramdesk.core.performance import PerformanceError, performance
    from vramdesk.services.resolve import resolve_gpu, resolve_model

    from .presenter import evaluate_scenario

    ev = evaluate_scenario(scenario)
    if ev.view is None:
        raise ValueError(ev.error or "cannot estimate this scenario")
    perf = None
    gpu = resolve_gpu(scenario.hardware.gpu)
    if gpu is not None:
        try:
            perf = performance(ev.view.estimate, scenario, resolve_model(scenario.model.id), gpu)
        except PerformanceError:
            perf = None
    return ev.view, perf


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
    chart: str = "breakdown",
    inputs: Sequence[Path] = (),
    advice: str = "choose another file",
) -> Path:
    """Write one estimate in ``fmt`` (see :data:`VIEW_FORMATS`) to ``out``; never over one of ``inputs`` (the
    scenario file or library entry it came from: :class:`vramdesk.safety.OutputIsInputError`)."""
    from PySide6.QtCore import Qt

    from vramdesk.fsutil import atomic_write_text
    from vramdesk.report.tables import breakdown_csv, json_text, report_json, report_markdown
    from vramdesk.safety import check_output

    out = Path(out)
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
    if fmt not in VIEW_FORMATS:
        raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(VIEW_FORMATS)}")
    panel = ChartPanel(mode=mode)
    panel.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    panel.show()
    try:
        panel.show_view(view)
        if fmt == "png":
            return export_png(panel, out)
        if fmt == "svg":
            if chart == "phase":
                return export_svg(panel.phase_chart.plot, out)
            b = panel.breakdown
            return export_svg(b.pie_plot if b.mode == "pie" else b.bar_plot, out)
        if fmt == "chart-pdf":
            return export_pdf(panel, out, f"vramdesk: {data.title}")
        if fmt == "html":
            return export_report_html(data, out, render_image(panel, PNG_SCALE))
        return export_report_pdf(data, out, render_image(panel, 3.0))
    finally:
        panel.close()
        panel.deleteLater()


def chart_image(view: EstimateView, mode: str = "bar", scale: float = PNG_SCALE) -> QImage:
    """The charts panel of ``view`` as an image (what the clipboard gets)."""
    from PySide6.QtCore import Qt

    panel = ChartPanel(mode=mode)
    panel.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    panel.show()
    try:
        panel.show_view(view)
        return render_image(panel, scale)
    finally:
        panel.close()
        panel.deleteLater()


def export_scenario(
    scenario: Scenario, fmt: str, out: Path, *, chart: str = "breakdown", inputs: Sequence[Path] = ()
) -> Path:
    """What ``vramdesk export`` does for png / svg / pdf / html (pdf and html: the report with the chart);
    ``inputs``: the scenario file, which the output must not replace."""
    from vramdesk.safety import check_output

    check_output(out, inputs)  # before Qt starts and the estimate runs
    from .qtapp import ensure_app

    ensure_app()
    view, perf = prepare(scenario)
    return export_view(view, scenario, fmt, out, perf=perf, chart=chart, inputs=inputs, advice="choose another -o")


def main(argv: list[str] | None = None) -> int:
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    parser = argparse.ArgumentParser(prog="python -m vramdesk.ui.export")
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--format", required=True, choices=FORMATS)
    parser.add_argument("-o", "--output", required=True, type=Path)
    parser.add_argument("--chart", choices=["breakdown", "phase"], default="breakdown")
    ns = parser.parse_args(argv)
    from vramdesk.storage.scenarios import ScenarioFileError, load_scenario

    try:
        scenario = load_scenario(ns.scenario)
        export_scenario(scenario, ns.format, ns.output, chart=ns.chart, inputs=[ns.scenario])
    except (ScenarioFileError, ValueError, LookupError, OSError) as err:
        print(f"vramdesk: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
