"""The report of one estimate as a PDF (A4 pages with a running footer) or a standalone HTML file, the chart's
figure embedded as an image.

The PDF: the HTML report (:func:`vramdesk.report.tables.report_html`) laid out by a ``QTextDocument`` the
printable area's width, cut into pages where no line, table row or heading is split (:func:`page_starts`), each
page drawn onto a ``QPdfWriter`` with "name · page i of n" under it; the document's title is the plan's name.
The report's text is English, as the command line's reports are; it is drawn in the print palette whatever the
window's theme.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRectF, QSizeF, Qt, QUrl
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QImage,
    QPageLayout,
    QPainter,
    QTextCursor,
    QTextDocument,
)

from vramdesk.report.tables import ReportData, report_html

from . import theme
from .figure import image_data_uri, pdf_writer, qt_palette

CHART_URL = "vramdesk-chart.png"
#: the running footer's height and font size, in points
FOOTER_PT = 16.0
FOOTER_FONT_PT = 7.5


def report_document(data: ReportData, chart: QImage | None, width: float = 720) -> QTextDocument:
    """The HTML report in a QTextDocument, the chart registered as an image resource."""
    doc = QTextDocument()
    doc.setDocumentMargin(0)
    if chart is not None:
        doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(CHART_URL), chart)
    doc.setHtml(report_html(data, CHART_URL if chart is not None else None, int(width)))
    return doc


def _lines(doc: QTextDocument) -> list[tuple[float, float, float, bool]]:
    """(top, bottom, where a page may start above it, in a heading) of every line of ``doc``, top to bottom: a
    line in a table row may only start a page with its whole row."""
    layout = doc.documentLayout()
    rows: dict[tuple[int, int], float] = {}
    found: list[tuple[float, float, tuple[int, int] | None, bool]] = []
    block = doc.begin()
    while block.isValid():
        text = block.layout()
        top = layout.blockBoundingRect(block).y()
        table = QTextCursor(block).currentTable()
        row = (table.firstPosition(), table.cellAt(block.position()).row()) if table is not None else None
        heading = block.blockFormat().headingLevel() > 0
        for i in range(text.lineCount()):
            line = text.lineAt(i)
            y = top + line.y()
            found.append((y, y + line.height(), row, heading))
            if row is not None:
                rows[row] = min(rows.get(row, y), y)
        block = block.next()
    out = [(y, bottom, y if row is None else rows[row], heading) for y, bottom, row, heading in found]
    return sorted(out)


def page_starts(doc: QTextDocument, height: float) -> list[float]:
    """Where each page of ``doc`` (laid out as one long page) starts, ``height`` a page: a page ends at its
    height, or above a line that would straddle its end, above the whole table row of such a line, and above a
    heading that would be left alone at the foot of the page."""
    lines = _lines(doc)
    starts = [0.0]
    for n, (_top, bottom, anchor, _heading) in enumerate(lines):
        while bottom > starts[-1] + height + 0.5:
            end = starts[-1] + height
            start = anchor if starts[-1] < anchor < end else end
            before = [t for t, b, _a, h in lines[:n] if h and starts[-1] < t and b <= start]
            if before and start - before[-1] < height / 4:  # the heading of what moves: with it
                start = before[-1]
            starts.append(start)
    return starts


def footer_text(data: ReportData, page: int, pages: int) -> str:
    return f"vramdesk report: {data.title} · page {page} of {pages}"


def export_report_pdf(data: ReportData, path: Path, chart: QImage | None = None) -> Path:
    """The report (summary, breakdown, phases, inputs, notes, constants; the chart on top) as A4 pages; the PDF's
    title is the plan's name."""
    writer = pdf_writer(path, data.title, landscape=False)
    area = writer.pageLayout().paintRect(QPageLayout.Unit.Point)
    # the document is laid out in points (one unit = 1/72 inch), the page's body above the footer
    body = QSizeF(area.width(), area.height() - FOOTER_PT)
    doc = report_document(data, chart, body.width() - 4)
    # one long page, cut into pages here: Qt's own pagination lets the first line after a table straddle two pages
    # (it showed cut on one and again on the next), splits table rows and leaves headings at the foot of a page
    doc.setTextWidth(body.width())
    starts = page_starts(doc, body.height())
    pages = len(starts)
    scale = writer.pageLayout().paintRectPixels(writer.resolution()).width() / area.width()
    context = QAbstractTextDocumentLayout.PaintContext()
    context.palette = qt_palette(theme.PRINT)
    font = QFont(doc.defaultFont())
    font.setPixelSize(round(FOOTER_FONT_PT))
    painter = QPainter()
    if not painter.begin(writer):
        raise OSError(f"{path}: cannot write the PDF file")
    try:
        for page, top in enumerate(starts):
            if page:
                writer.newPage()
            painter.save()
            painter.scale(scale, scale)
            end = starts[page + 1] if page + 1 < pages else top + body.height()
            visible = QRectF(0, top, body.width(), min(body.height(), end - top))
            painter.save()
            painter.translate(0, -top)
            painter.setClipRect(visible)
            context.clip = visible
            doc.documentLayout().draw(painter, context)
            painter.restore()
            painter.setFont(font)
            painter.setPen(QColor(theme.PRINT.muted))
            foot = QRectF(0, body.height(), body.width(), FOOTER_PT)
            align = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignBottom
            painter.drawText(foot, int(align), footer_text(data, page + 1, pages))
            painter.restore()
    finally:
        painter.end()
    if not Path(path).is_file():
        raise OSError(f"{path}: cannot write the PDF file")
    return Path(path)


def export_report_html(data: ReportData, path: Path, chart: QImage | None = None) -> Path:
    """The report as one standalone HTML file (the chart as a data: URI)."""
    from vramdesk.fsutil import atomic_write_text

    atomic_write_text(Path(path), report_html(data, image_data_uri(chart) if chart is not None else None))
    return Path(path)


__all__ = ["CHART_URL", "export_report_html", "export_report_pdf", "footer_text", "report_document"]
