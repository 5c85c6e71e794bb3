"""A chart as a report shows it: a title, a subtitle, the chart, its legend and units, and a source line.

:class:`Figure` wraps any chart widget (the breakdown, the phase timeline, the comparison) with the texts of a
:class:`vramdesk.report.captions.Caption`, so a picture pasted into a document still says what it shows.
:func:`export_figure` writes one as PNG (raster, ``scale`` x), SVG (``QSvgGenerator``: text stays text) or PDF
(vector, one A4 landscape page), the format taken from the file's suffix.

Build the figure, and the chart in it, inside :func:`vramdesk.ui.theme.printing` so it is drawn in the print
palette whatever the window's theme.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from vramdesk import __version__
from vramdesk.report.captions import Caption

from . import theme
from .core_text import localize
from .widgets import Legend

#: the formats :func:`export_figure` writes
FIGURE_FORMATS = ("png", "svg", "pdf")


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
        size: tuple[int, int] = (1200, 640),
    ) -> None:
        super().__init__(parent)
        p = theme.current()
        self.palette_name = p.name
        self.setAutoFillBackground(True)
        pal = self.palette()
        pal.setColor(self.backgroundRole(), QColor(p.background))
        self.setPalette(pal)
        self.caption = caption
        self.title = QLabel(localize(caption.title), self)
        self.title.setStyleSheet(f"color: {p.text}; font-size: 15pt; font-weight: bold;")
        self.subtitle = QLabel(localize(caption.subtitle), self)
        self.subtitle.setWordWrap(True)
        self.subtitle.setStyleSheet(f"color: {p.muted}; font-size: 10pt;")
        self.body = body
        body.setParent(self)
        self.legend = Legend(self)
        self.legend.setStyleSheet(f"color: {p.text};")
        self.legend.set_entries(legend or [])
        self.legend.setVisible(bool(legend))
        foot = " · ".join(x for x in (units, localize(caption.source)) if x)
        self.source = QLabel(foot, self)
        self.source.setStyleSheet(f"color: {p.muted}; font-size: 8pt;")
        self.source.setAlignment(Qt.AlignmentFlag.AlignRight)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 10)
        layout.setSpacing(4)
        layout.addWidget(self.title)
        layout.addWidget(self.subtitle)
        layout.addWidget(body, 1)
        layout.addWidget(self.legend)
        layout.addWidget(self.source)
        self.resize(*size)

    def lay_out(self) -> None:
        """Show it off screen and let the layout settle, so that rendering sees the final geometry."""
        self.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        self.show()
        layout = self.layout()
        if layout is not None:
            layout.activate()
        QGuiApplication.processEvents()

    def texts(self) -> list[str]:
        """What the figure says in words (for tests and alt texts)."""
        return [self.title.text(), self.subtitle.text(), *(n for n, _ in self.legend.entries), self.source.text()]


def export_svg_widget(widget: QWidget, path: Path, title: str) -> Path:
    """``widget`` drawn into an SVG file: labels and chart texts stay ``<text>`` elements."""
    size = widget.size()
    gen = QSvgGenerator()
    gen.setFileName(str(path))
    gen.setSize(QSize(size.width(), size.height()))
    gen.setViewBox(QRect(0, 0, size.width(), size.height()))
    gen.setTitle(title)
    gen.setDescription(f"vramdesk {__version__}")
    painter = QPainter()
    if not painter.begin(gen):
        raise OSError(f"{path}: cannot write the SVG file")
    try:
        painter.fillRect(QRect(0, 0, size.width(), size.height()), QColor(theme.current().background))
        # QWidget's render, not a subclass's: pyqtgraph's GraphicsView overrides render() with another signature
        QWidget.render(widget, painter, QPoint(0, 0))
    finally:
        painter.end()
    if not Path(path).is_file() or Path(path).stat().st_size == 0:
        raise OSError(f"{path}: cannot write the SVG file")
    return Path(path)


def export_figure(figure: Figure, path: Path, *, scale: float = 2.0) -> Path:
    """Write ``figure`` to ``path`` as PNG, SVG or PDF (by the suffix)."""
    from .export import export_pdf, export_png

    fmt = Path(path).suffix.lower().lstrip(".")
    figure.lay_out()
    if fmt == "png":
        return export_png(figure, path, scale)
    if fmt == "svg":
        return export_svg_widget(figure, path, figure.title.text())
    if fmt == "pdf":
        return export_pdf(figure, path, figure.title.text())
    raise ValueError(f"{path}: a figure is written as {', '.join(FIGURE_FORMATS)}, not {fmt or 'no suffix'!r}")


__all__ = ["FIGURE_FORMATS", "Figure", "export_figure", "export_svg_widget"]
