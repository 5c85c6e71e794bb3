"""A chart as a report shows it: a title, a subtitle, the chart, its legend and units, and a source line.

:class:`Figure` wraps any chart widget (the breakdown, the phase timeline, the comparison) with the texts of a
:class:`vramdesk.report.captions.Caption`, so a picture pasted into a document still says what it shows.
:func:`export_figure` writes one as PNG (raster, ``scale`` x), SVG (``QSvgGenerator``: text stays text) or PDF
(vector, one A4 landscape page), the format taken from the file's suffix. The writers below take any widget
(the comparison's chart too).

Build the figure, and the chart in it, inside :func:`vramdesk.ui.theme.printing` so it is drawn in the print
palette whatever the window's theme: the figure sets a Qt palette of its own from it, so even the labels that
only inherit a colour (a chart's heading) do not take the application's dark palette onto white paper.

Vector output: ``QWidget.render`` into a ``QSvgGenerator`` or ``QPdfWriter`` keeps pyqtgraph's items as paths
and text, except what Qt caches as pixmaps: a ``QGraphicsView``'s background cache (one raster image the size of
the plot) and the style's button pixmaps. :func:`vector_ready` turns the cache off while a figure is drawn, and a
figure holds no buttons (:meth:`vramdesk.ui.charts.BreakdownChart.hide_controls`).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QPoint, QPointF, QRect, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFontMetricsF,
    QGuiApplication,
    QImage,
    QImageWriter,
    QPageLayout,
    QPageSize,
    QPainter,
    QPaintEvent,
    QPalette,
    QPdfWriter,
)
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from vramdesk import __version__
from vramdesk.report.captions import Caption

from . import theme
from .core_text import localize

#: the formats :func:`export_figure` writes
FIGURE_FORMATS = ("png", "svg", "pdf")
#: a figure's size in logical pixels unless told otherwise (2400 x 1280 px as a 2x PNG)
FIGURE_SIZE = (1200, 640)
PNG_SCALE = 2.0


def qt_palette(p: theme.Palette) -> QPalette:
    """A Qt palette from one of :mod:`vramdesk.ui.theme`'s: what a figure's children inherit."""
    pal = QPalette()
    for role, color in (
        (QPalette.ColorRole.Window, p.background),
        (QPalette.ColorRole.Base, p.background),
        (QPalette.ColorRole.AlternateBase, p.panel),
        (QPalette.ColorRole.Button, p.panel),
        (QPalette.ColorRole.WindowText, p.text),
        (QPalette.ColorRole.Text, p.text),
        (QPalette.ColorRole.ButtonText, p.text),
        (QPalette.ColorRole.PlaceholderText, p.muted),
        (QPalette.ColorRole.Mid, p.border),
    ):
        pal.setColor(role, QColor(color))
    return pal


class FigureLegend(QWidget):
    """A coloured square and a name per entry, wrapped to the width. Painted with ``drawText``, one call per
    name, so that each entry is one ``<text>`` of an SVG (a rich-text label splits and pads them)."""

    SQUARE = 11
    GAP = 6
    SPACING = 22

    def __init__(self, palette: theme.Palette, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text = QColor(palette.text)
        self.entries: list[tuple[str, str]] = []
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def set_entries(self, items: list[tuple[str, str]]) -> None:
        self.entries = list(items)
        self.updateGeometry()
        self.update()

    def _line_height(self) -> float:
        return max(float(self.SQUARE), QFontMetricsF(self.font()).height()) + 4

    def _placed(self, width: int) -> list[tuple[float, int, str, str]]:
        """(x, row, name, colour) of each entry in a legend ``width`` wide."""
        metrics = QFontMetricsF(self.font())
        out: list[tuple[float, int, str, str]] = []
        x, row = 0.0, 0
        for name, color in self.entries:
            w = self.SQUARE + self.GAP + metrics.horizontalAdvance(name)
            if x > 0 and x + w > width:
                x, row = 0.0, row + 1
            out.append((x, row, name, color))
            x += w + self.SPACING
        return out

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        placed = self._placed(width)
        rows = placed[-1][1] + 1 if placed else 0
        return round(rows * self._line_height())

    def sizeHint(self) -> QSize:
        width = max(200, self.width())
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.heightForWidth(max(200, self.width())))

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        try:
            metrics = QFontMetricsF(self.font())
            line = self._line_height()
            for x, row, name, color in self._placed(self.width()):
                top = row * line + (line - self.SQUARE) / 2
                painter.fillRect(QRectF(x, top, self.SQUARE, self.SQUARE), QColor(color))
                painter.setPen(self._text)
                baseline = row * line + (line + metrics.ascent() - metrics.descent()) / 2
                painter.drawText(QPointF(x + self.SQUARE + self.GAP, baseline), name)
        finally:
            painter.end()


class Figure(QWidget):
    """Title, subtitle, ``body`` (a chart), legend, units and source line, on the palette's background."""

    def __init__(
        self,
        caption: Caption,
        body: QWidget,
        *,
        legend: list[tuple[str, str]] | None = None,
        units: str = "",
        parent: QWidget | None = None,
        size: tuple[int, int] = FIGURE_SIZE,
    ) -> None:
        super().__init__(parent)
        p = theme.current()
        self.palette_name = p.name
        self.background = p.background
        self.setAutoFillBackground(True)
        self.setPalette(qt_palette(p))
        self.caption = caption
        self.title = QLabel(localize(caption.title), self)
        self.title.setStyleSheet(f"color: {p.text}; font-size: 15pt; font-weight: bold;")
        self.subtitle = QLabel(localize(caption.subtitle), self)
        self.subtitle.setWordWrap(True)
        self.subtitle.setStyleSheet(f"color: {p.muted}; font-size: 10pt;")
        self.body = body
        body.setParent(self)
        self.legend = FigureLegend(p, self)
        self.legend.set_entries(legend or [])
        self.legend.setVisible(bool(legend))
        self.units = QLabel(units, self)
        self.source = QLabel(localize(caption.source), self)
        self.source.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        for label in (self.units, self.source):
            label.setStyleSheet(f"color: {p.muted}; font-size: 8pt;")
        foot = QHBoxLayout()
        foot.setContentsMargins(0, 2, 0, 0)
        foot.addWidget(self.units, 1)
        foot.addWidget(self.source)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 10)
        layout.setSpacing(4)
        layout.addWidget(self.title)
        layout.addWidget(self.subtitle)
        layout.addWidget(body, 1)
        layout.addSpacing(4)
        layout.addWidget(self.legend)
        layout.addLayout(foot)
        self.resize(*size)

    def lay_out(self) -> None:
        """Show it off screen and let the layout settle, so that rendering sees the final geometry."""
        self.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        self.show()
        layout = self.layout()
        if layout is not None:
            layout.invalidate()
            layout.activate()
        QGuiApplication.processEvents()

    def texts(self) -> list[str]:
        """What the figure says in words (for tests and alt texts)."""
        words = [self.title.text(), self.subtitle.text(), *(n for n, _ in self.legend.entries)]
        return [*words, *(t for t in (self.units.text(), self.source.text()) if t)]


def background_of(widget: QWidget) -> QColor:
    """What a picture of ``widget`` is painted on: a figure's own background, else the window's palette's."""
    if isinstance(widget, Figure):
        return QColor(widget.background)
    return QColor(theme.current().background)


@contextmanager
def vector_ready(widget: QWidget) -> Iterator[None]:
    """No pixmap cache in the pyqtgraph views of ``widget`` while it is drawn (a vector file would get each plot's
    background as one raster image); the caches are back afterwards."""
    views = [v for v in widget.findChildren(pg.GraphicsView) if isinstance(v, pg.GraphicsView)]
    if isinstance(widget, pg.GraphicsView):
        views.append(widget)
    before = [v.cacheMode() for v in views]
    for v in views:
        v.setCacheMode(pg.QtWidgets.QGraphicsView.CacheModeFlag.CacheNone)
        v.resetCachedContent()
    try:
        yield
    finally:
        for v, mode in zip(views, before, strict=True):
            v.setCacheMode(mode)


def _render(widget: QWidget, painter: QPainter) -> None:
    # QWidget's render, not a subclass's: pyqtgraph's GraphicsView (the comparison chart) overrides render()
    # with QGraphicsView's scene-rendering signature, which takes no target point
    with vector_ready(widget):
        QWidget.render(widget, painter, QPoint(0, 0))


def render_image(widget: QWidget, scale: float = PNG_SCALE) -> QImage:
    """``widget`` rendered at ``scale`` x its logical size (device pixel ratio ``scale``)."""
    size = widget.size()
    image = QImage(QSize(round(size.width() * scale), round(size.height() * scale)), QImage.Format.Format_ARGB32)
    image.setDevicePixelRatio(scale)
    image.fill(background_of(widget))
    painter = QPainter(image)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
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


def image_data_uri(image: QImage) -> str:
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    QImageWriter(buf, QByteArray(b"png")).write(image)
    buf.close()
    return "data:image/png;base64," + base64.b64encode(bytes(data.data())).decode("ascii")


def export_svg_widget(widget: QWidget, path: Path, title: str) -> Path:
    """``widget`` drawn into an SVG file: labels and chart texts stay ``<text>`` elements, plots stay paths."""
    size = widget.size()
    gen = QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(QSize(size.width(), size.height()))
    gen.setViewBox(QRect(0, 0, size.width(), size.height()))
    # the widget's own resolution: fonts in points come out the size the layout measured them at
    gen.setResolution(widget.logicalDpiX())
    gen.setTitle(title)
    gen.setDescription(f"vramdesk {__version__}")
    painter = QPainter()
    if not painter.begin(gen):
        raise OSError(f"{path}: cannot write the SVG file")
    try:
        painter.fillRect(QRect(0, 0, size.width(), size.height()), background_of(widget))
        _render(widget, painter)
    finally:
        painter.end()
    if not Path(path).is_file() or Path(path).stat().st_size == 0:
        raise OSError(f"{path}: cannot write the SVG file")
    return Path(path)


def pdf_writer(path: Path, title: str, *, landscape: bool) -> QPdfWriter:
    """An A4 PDF writer at 300 dpi with 12 mm margins; ``title`` is the document's title."""
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
    writer = pdf_writer(path, title, landscape=True)
    painter = QPainter()
    if not painter.begin(writer):
        raise OSError(f"{path}: cannot write the PDF file")
    try:
        page = writer.pageLayout().paintRectPixels(writer.resolution())
        s = min(page.width() / max(1, widget.width()), page.height() / max(1, widget.height()))
        painter.scale(s, s)
        painter.fillRect(QRect(0, 0, widget.width(), widget.height()), background_of(widget))
        _render(widget, painter)
    finally:
        painter.end()
    return Path(path)


def figure_format(path: Path) -> str:
    """png / svg / pdf from ``path``'s suffix (ValueError naming the file otherwise)."""
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"{path}: a figure is written as {', '.join(FIGURE_FORMATS)}, not {fmt or 'no suffix'!r}")
    return fmt


def export_figure(figure: Figure, path: Path, *, scale: float = PNG_SCALE, fmt: str | None = None) -> Path:
    """Write ``figure`` to ``path`` as PNG, SVG or PDF (``fmt``, else by the suffix)."""
    fmt = fmt or figure_format(path)
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"{path}: a figure is written as {', '.join(FIGURE_FORMATS)}, not {fmt!r}")
    figure.lay_out()
    title = figure.title.text()
    if fmt == "png":
        return export_png(figure, path, scale)
    if fmt == "svg":
        return export_svg_widget(figure, path, title)
    return export_pdf(figure, path, title)


__all__ = [
    "FIGURE_FORMATS",
    "Figure",
    "FigureLegend",
    "export_figure",
    "export_png",
    "export_svg_widget",
    "figure_format",
    "image_data_uri",
    "render_image",
]
