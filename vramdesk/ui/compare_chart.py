"""The comparison's chart: one stacked bar per plan (its components at the peak), the plan's name under it
(wrapped on two lines, elided past that, the full names in the tooltip), what it needs on the device and its
verdict above it, and the GPU's memory as a dashed tick across the bar."""

from __future__ import annotations

import html
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QWidget

from vramdesk.report.comparison import CompareItem

from . import theme
from .compare_table import verdict_color
from .core_text import localize_name
from .i18n import tr
from .presenter import unit_bytes, unit_name

#: lines a plan's name may take under its bar
NAME_LINES = 2


def wrap_name(text: str, metrics: QFontMetrics, width: float, lines: int = NAME_LINES) -> str:
    """``text`` on at most ``lines`` lines of ``width`` pixels: broken at a space or after a - _ / where it can
    (anywhere in a name without them, as Chinese is), the last line elided with "…"."""
    out: list[str] = []
    rest = " ".join(text.split())
    while rest and len(out) < lines - 1 and metrics.horizontalAdvance(rest) > width:
        cut = len(rest)
        while cut > 1 and metrics.horizontalAdvance(rest[:cut]) > width:
            cut -= 1
        # at the last space, or after the last - _ / (a model id, a file name), where there is one
        breaks = [rest.rfind(" ", 0, cut + 1), *(rest.rfind(c, 0, cut - 1) + 1 for c in "-_/")]
        if max(breaks) > 0:
            cut = max(breaks)
        out.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        out.append(metrics.elidedText(rest, Qt.TextElideMode.ElideRight, max(1, int(width))))
    return "\n".join(out)


class CompareChart(pg.PlotWidget):  # type: ignore[misc]
    """One stacked bar per configuration (components at the peak), the GPU's memory as a tick across each."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent, background=theme.current().background)
        p = theme.current()
        item = self.getPlotItem()
        item.setMenuEnabled(False)
        item.hideButtons()
        item.setMouseEnabled(x=False, y=False)
        for side in ("left", "bottom"):
            axis = item.getAxis(side)
            axis.setTextPen(pg.mkPen(p.text))
            axis.setPen(pg.mkPen(p.muted))
        self.setLabel("left", unit_name())
        self.setMinimumHeight(200)
        #: component name -> height per column in the window's unit (what is drawn, in stacking order)
        self.stacks: dict[str, list[float]] = {}
        #: component name -> colour (the legend's entries)
        self.colors: dict[str, str] = {}
        #: the plans' names, in the order of the bars
        self.labels: list[str] = []
        #: the texts above the bars (device total and verdict)
        self.bar_texts: list[str] = []
        self._items: list[pg.GraphicsObject] = []

    def legend_entries(self) -> list[tuple[str, str]]:
        """The components' colours and the GPU's memory tick, for a legend."""
        entries = [(localize_name(n), c) for n, c in self.colors.items()]
        if self.labels:
            entries.append((tr("GPU memory (dashed line)"), theme.GPU_LINE))
        return entries

    def show_items(self, items: Sequence[CompareItem]) -> None:
        for it in self._items:
            self.removeItem(it)
        self._items = []
        cats: dict[str, str] = {}
        for i in items:
            if i.est is not None:
                for c in i.est.components:
                    cats.setdefault(c.name, c.category)
        self.colors = theme.component_colors(list(cats.items()))
        unit = unit_bytes()
        if self.getPlotItem().getAxis("left").labelText != unit_name():
            self.setLabel("left", unit_name())
        self.stacks = {
            n: [
                next((c.bytes for c in i.est.components if c.name == n), 0) / unit if i.est is not None else 0.0
                for i in items
            ]
            for n in cats
        }
        self.labels = [i.label for i in items]
        xs = list(range(len(items)))
        bottoms = [0.0] * len(items)
        for name, heights in self.stacks.items():
            bar = pg.BarGraphItem(
                x=xs, height=heights, y0=list(bottoms), width=0.6, brush=QColor(self.colors[name]), pen=pg.mkPen(None)
            )
            bar.setToolTip(localize_name(name))
            self._add(bar)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        top = max(bottoms, default=1.0)
        self.bar_texts = []
        for x, i in enumerate(items):
            top = max(top, self._mark(x, i, bottoms[x]))
        self._set_ticks()
        self.setToolTip("\n".join(self.labels))
        self.setRange(xRange=(-0.6, max(0, len(items) - 1) + 0.6), yRange=(0, top * 1.25 or 1), padding=0)

    def _add(self, item: pg.GraphicsObject) -> None:
        self.addItem(item)
        self._items.append(item)

    def _mark(self, x: int, item: CompareItem, bottom: float) -> float:
        """The device total and verdict above bar ``x``, the GPU's memory across it; returns the highest point."""
        est = item.est
        if est is None:
            self.bar_texts.append("")
            return 0.0
        verdict = est.fit.verdict if est.fit else None
        color = verdict_color(verdict)
        text = f"{est.device_bytes / unit_bytes():.2f}"
        if verdict is not None:
            text += f"\n{localize_name(verdict)}"
        self.bar_texts.append(text)
        lines = "<br>".join(html.escape(line) for line in text.split("\n"))
        style = f"text-align: center; color: {color}; font-weight: bold"
        # on the background's colour, above the GPU's line: a total close to the GPU's memory stays readable
        back = QColor(theme.current().background)
        back.setAlpha(225)
        label = pg.TextItem(html=f'<div style="{style}">{lines}</div>', anchor=(0.5, 1.0), fill=pg.mkBrush(back))
        label.setZValue(10)
        label.setTextWidth(label.textItem.document().idealWidth())  # (the lines centre within this width)
        label.setPos(x, bottom)
        self._add(label)
        if est.fit is None:
            return bottom
        mem = est.fit.memory_bytes / unit_bytes()
        pen = pg.mkPen(theme.GPU_LINE, width=2, style=Qt.PenStyle.DashLine)
        self._add(pg.PlotDataItem([x - 0.38, x + 0.38], [mem, mem], pen=pen))
        return max(bottom, mem)

    def tick_texts(self) -> list[str]:
        """The names under the bars as drawn (wrapped to the width each bar has)."""
        n = max(1, len(self.labels))
        axis = self.getPlotItem().getAxis("bottom")
        metrics = QFontMetrics(axis.style.get("tickFont") or axis.font())
        view = self.getPlotItem().getViewBox().width()
        width = (view if view > 50 else self.width() * 0.85) / n - 10
        return [wrap_name(label, metrics, max(60.0, width)) for label in self.labels]

    def _set_ticks(self) -> None:
        axis = self.getPlotItem().getAxis("bottom")
        texts = self.tick_texts()
        axis.setTicks([list(enumerate(texts))])
        # room for every line from the start: pyqtgraph leaves out a name taller than the axis, and grows the
        # axis only at a later paint
        metrics = QFontMetrics(axis.style.get("tickFont") or axis.font())
        lines = max((t.count("\n") + 1 for t in texts), default=1)
        axis.setHeight(lines * metrics.lineSpacing() + 2 * metrics.descent() + 16)

    def resizeEvent(self, ev: QResizeEvent | None) -> None:
        super().resizeEvent(ev)
        if getattr(self, "labels", None):  # (pyqtgraph calls this from its constructor, before ours has run)
            self._set_ticks()


__all__ = ["CompareChart", "wrap_name"]
