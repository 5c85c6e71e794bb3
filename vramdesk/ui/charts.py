"""Charts of one estimate (pyqtgraph): the breakdown at the peak as a pie or a stacked bar, and the phases.

pyqtgraph has no pie item, so :class:`PieItem` draws one with ``QPainter.drawPie``. A ViewBox has y
pointing up, which mirrors Qt's angles: there a start of -90 x 16 and positive spans run clockwise from
12 o'clock (``shared/research/ecosystem.md`` §1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from . import theme
from .core_text import localize, localize_name
from .i18n import tr
from .presenter import EstimateView, gpu_groups, pie_angles, unit_bytes, unit_name

#: Qt angle (1/16 degree) where the first slice starts: 12 o'clock inside a y-up ViewBox
PIE_START = -90 * 16
FULL_CIRCLE = 360 * 16
#: inner radius of the ring, as a fraction of the outer one (0 = a full pie)
HOLE = 0.52
#: short labels for long phase names, on the axis and in the breakdown's title (the full name is in the tooltips)
SHORT_PHASE_NAMES = {
    "loss + start of backward": "loss",
    "backward (recompute)": "recompute",
    "backward (first layer)": "layer 1",
    "backward (end)": "backward",
    "optimizer step": "optimizer",
}


def _phase_label(name: str) -> str:
    """A phase's axis label: short in English, the (short) translation otherwise."""
    return localize_name(SHORT_PHASE_NAMES.get(name, name))


#: slices smaller than this share get no percentage label
LABEL_MIN_SHARE = 0.06


@dataclass(frozen=True)
class PieSlice:
    label: str
    value: int
    color: str
    #: 1/16 degree, relative to :data:`PIE_START`; spans add up to 5760 exactly
    start: int
    span: int
    #: where the number comes from (a second paragraph of the tooltip), in the window's language
    note: str = ""

    @property
    def degrees(self) -> float:
        return self.span / 16


class PieItem(pg.GraphicsObject):  # type: ignore[misc]
    """A pie (a ring with a hole) centred on (0, 0) with radius ``radius`` in view coordinates."""

    def __init__(self, radius: float = 1.0, hole: float = HOLE) -> None:
        super().__init__()
        self._radius = radius
        self._hole = hole
        # the palette it is built in, not the one in use when it paints: an export built for print is painted
        # after the window's (dark) palette is back
        self._background = theme.current().background
        self._slices: tuple[PieSlice, ...] = ()
        self.setAcceptHoverEvents(True)

    def slice_at(self, point: QPointF) -> int | None:
        """The index of the slice under ``point`` (item coordinates), None in the hole or outside."""
        r = math.hypot(point.x(), point.y())
        if r > self._radius or r < self._radius * self._hole:
            return None
        qt_deg = math.degrees(math.atan2(-point.y(), point.x()))  # drawPie: angle t at (r cos t, -r sin t)
        rel = (round(qt_deg * 16) - PIE_START) % FULL_CIRCLE
        for i, s in enumerate(self._slices):
            if s.span > 0 and s.start <= rel < s.start + s.span:
                return i
        return None

    def tooltip_for(self, index: int | None) -> str:
        if index is None or not 0 <= index < len(self._slices):
            return ""
        s = self._slices[index]
        total = sum(x.value for x in self._slices) or 1
        head = (
            f"{s.label}: {s.value / unit_bytes():.2f} {unit_name()} "
            f"({s.value:,} {tr('bytes')}, {s.value / total * 100:.1f}%)"
        )
        return f"{head}\n{s.note}" if s.note else head

    def hoverEvent(self, ev: Any) -> None:
        if ev.isExit():
            self.setToolTip("")
            return
        self.setToolTip(self.tooltip_for(self.slice_at(ev.pos())))

    @property
    def slices(self) -> tuple[PieSlice, ...]:
        return self._slices

    @property
    def radius(self) -> float:
        return self._radius

    def set_slices(self, items: list[tuple[str, int, str]], notes: list[str] | None = None) -> None:
        """``items``: (label, value, colour) in drawing order, clockwise from 12 o'clock; ``notes``: one
        explanation per item for the tooltips."""
        angles = pie_angles([max(0, v) for _, v, _ in items], FULL_CIRCLE)
        texts = list(notes) if notes is not None and len(notes) == len(items) else [""] * len(items)
        self._slices = tuple(
            PieSlice(label, value, color, start, span, note)
            for (label, value, color), (start, span), note in zip(items, angles, texts, strict=True)
        )
        self.update()

    def mid_point(self, index: int, fraction: float = 0.5) -> QPointF:
        """The point at the middle angle of slice ``index``, ``fraction`` of the way out, in item coordinates."""
        s = self._slices[index]
        theta = math.radians((PIE_START + s.start + s.span / 2) / 16)
        r = self._radius * fraction
        # drawPie puts Qt angle t at (r cos t, -r sin t) in item coordinates
        return QPointF(r * math.cos(theta), -r * math.sin(theta))

    def boundingRect(self) -> QRectF:
        r = self._radius
        return QRectF(-r, -r, 2 * r, 2 * r)

    def paint(self, painter: QPainter, *args: Any) -> None:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = self.boundingRect()
        pen = QPen(QColor(self._background))
        pen.setWidthF(1.5)
        pen.setCosmetic(True)
        painter.setPen(pen)
        for s in self._slices:
            if s.span <= 0:
                continue
            painter.setBrush(QBrush(QColor(s.color)))
            if s.span >= FULL_CIRCLE:
                painter.drawEllipse(rect)
            else:
                painter.drawPie(rect, PIE_START + s.start, s.span)
        if self._hole > 0:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QBrush(QColor(self._background)))
            h = self._radius * self._hole
            painter.drawEllipse(QRectF(-h, -h, 2 * h, 2 * h))


def _plot(parent: QWidget | None = None) -> pg.PlotWidget:
    w = pg.PlotWidget(parent=parent, background=theme.current().background)
    item = w.getPlotItem()
    item.setMenuEnabled(False)
    item.hideButtons()
    item.setMouseEnabled(x=False, y=False)
    item.getViewBox().setMouseEnabled(x=False, y=False)
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(theme.BORDER))
        axis.setTextPen(pg.mkPen(theme.current().muted))
        axis.enableAutoSIPrefix(False)  # "GiB (x0.001)" reads badly: keep GiB and let the ticks get small
    w.setMinimumSize(160, 140)
    return w


class _TextPool:
    """Text items of one plot, reused between updates (creating pyqtgraph items is the slow part)."""

    def __init__(self, plot: pg.PlotWidget, size: float, anchor: tuple[float, float]) -> None:
        self._plot = plot
        self._size = size
        self._anchor = anchor
        self.items: list[pg.TextItem] = []
        self.used = 0

    def reset(self) -> None:
        for item in self.items[self.used :]:
            item.setVisible(False)
        self.used = 0

    def take(self, text: str, color: str, pos: QPointF | tuple[float, float], *, bold: bool = False) -> pg.TextItem:
        if self.used < len(self.items):
            item = self.items[self.used]
        else:
            item = _label("", color, self._anchor, size=self._size)
            self._plot.addItem(item)
            self.items.append(item)
        self.used += 1
        font = item.textItem.font()
        if font.bold() != bold:
            font.setBold(bold)
            item.setFont(font)
        item.setColor(color)
        item.setText(text)
        item.setPos(pos if isinstance(pos, QPointF) else QPointF(*pos))
        item.setVisible(True)
        return item

    def finish(self) -> None:
        for item in self.items[self.used :]:
            item.setVisible(False)


def _label(
    text: str, color: str, anchor: tuple[float, float], *, bold: bool = False, size: float | None = None
) -> pg.TextItem:
    item = pg.TextItem(text=text, color=color, anchor=anchor)
    font = QFont(item.textItem.font())
    if size is not None:
        font.setPointSizeF(size)
    font.setBold(bold)
    item.setFont(font)
    return item


#: the GPU's memory is drawn as a line only while it is at most this many times the tallest bar; beyond
#: that the bars would be slivers, so the axis follows the bars and a note names the GPU's memory
GPU_SCALE_LIMIT = 3.0


def _y_top(view: EstimateView, tallest_gib: float) -> tuple[float, bool]:
    """The top of the y axis (GiB) and whether the GPU's memory line is inside it."""
    gpu = (view.gpu_memory_bytes or 0) / unit_bytes()
    tallest = max(tallest_gib, 1e-3)
    if gpu and gpu < tallest:
        # bars past the GPU's memory: room above them for the GPU's label (it would sit on the bars)
        return tallest * 1.25, True
    if gpu and gpu <= tallest * GPU_SCALE_LIMIT:
        return max(tallest, gpu) * 1.12, True
    return tallest * 1.12, False


def _gpu_marks(
    plot: pg.PlotWidget, view: EstimateView, top: float, in_range: bool, x_right: float
) -> list[pg.GraphicsObject]:
    """The GPU's memory as a dashed line, or as a note at the top right when it is far above the bars."""
    if view.gpu_memory_bytes is None:
        return []
    gpu = view.gpu_memory_bytes / unit_bytes()
    if in_range and top > gpu * 1.2:
        # the bars reach past the line: the line unlabelled, its label at the top right, above the bars
        line = _gpu_line(view, labelled=False)
        note = _label(f"{view.gpu_name}: {gpu:.2f} {unit_name()} (- - -)", theme.GPU_LINE, (1.0, 0.0), size=8)
        note.setPos(x_right, top)
        plot.addItem(line)
        plot.addItem(note)
        return [line, note]
    if in_range:
        item: pg.GraphicsObject = _gpu_line(view)
    else:
        item = _label(
            f"{view.gpu_name}: {view.gpu_memory_bytes / unit_bytes():.2f} {unit_name()} \u2191",
            theme.GPU_LINE,
            (1.0, 0.0),
            size=8,
        )
        item.setPos(x_right, top)
    plot.addItem(item)
    return [item]


def _gpu_line(view: EstimateView, labelled: bool = True) -> pg.InfiniteLine:
    assert view.gpu_memory_bytes is not None
    pen = pg.mkPen(theme.GPU_LINE, width=1.5, style=Qt.PenStyle.DashLine)
    line = pg.InfiniteLine(
        pos=view.gpu_memory_bytes / unit_bytes(),
        angle=0,
        pen=pen,
        label=f"{view.gpu_name}: {view.gpu_memory_bytes / unit_bytes():.2f} {unit_name()}" if labelled else None,
        labelOpts={
            "position": 0.98,
            "color": theme.GPU_LINE,
            "anchors": [(1, 1), (1, 1)],
            "fill": (255, 255, 255, 210),
        },
    )
    line.setZValue(20)  # above the bars: the bars may reach past the GPU's memory
    return line


class BreakdownChart(QWidget):
    """The components at the peak: a pie, or one stacked bar against the GPU's memory."""

    mode_changed = Signal(str)

    MODES = ("pie", "bar")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(tr("Breakdown at the peak"))
        self.title.setObjectName("sectionTitle")
        # a long peak-phase name must not widen this chart at the phase chart's expense
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._buttons = QButtonGroup(self)
        self._buttons.setExclusive(True)
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.title, 1)
        self.mode_buttons: dict[str, QToolButton] = {}
        for mode, text in (("pie", tr("Pie")), ("bar", tr("Bar"))):
            b = QToolButton(self)
            b.setObjectName("toggle")
            b.setText(text)
            b.setCheckable(True)
            b.setToolTip(
                tr("Show the breakdown as a pie") if mode == "pie" else tr("Show the breakdown as stacked bars")
            )
            b.clicked.connect(lambda _checked=False, m=mode: self.set_mode(m))
            self._buttons.addButton(b)
            self.mode_buttons[mode] = b
            header.addWidget(b)
        self.mode_buttons["pie"].setChecked(True)

        self.pie_plot = _plot(self)
        pie_item = self.pie_plot.getPlotItem()
        pie_item.hideAxis("left")
        pie_item.hideAxis("bottom")
        pie_item.setAspectLocked(True)
        self.pie = PieItem(radius=1.0)
        self.pie_plot.addItem(self.pie)
        self.pie_plot.setRange(xRange=(-1.05, 1.05), yRange=(-1.05, 1.05), padding=0)
        self._pie_labels = _TextPool(self.pie_plot, 8.5, (0.5, 0.5))
        self._center_value = _label("", theme.current().text, (0.5, 1.0), bold=True, size=11)
        self._center_caption = _label("", theme.current().muted, (0.5, 0.0), size=8)
        self.pie_plot.addItem(self._center_value)
        self.pie_plot.addItem(self._center_caption)
        self._center_value.setPos(0, 0.02)
        self._center_caption.setPos(0, -0.02)

        self.bar_plot = _plot(self)
        self.bar_plot.getPlotItem().getAxis("bottom").setTicks([[(0, "peak")]])
        self.bar_plot.setLabel("left", "GiB")
        self.bar_items: list[pg.BarGraphItem] = []
        self._bar_extras: list[pg.GraphicsObject] = []

        self.stack = QStackedWidget(self)
        self.stack.addWidget(self.pie_plot)
        self.stack.addWidget(self.bar_plot)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(4)
        layout.addLayout(header)
        layout.addWidget(self.stack, 1)

    @property
    def mode(self) -> str:
        return self.MODES[self.stack.currentIndex()]

    def hide_controls(self) -> None:
        """No Pie / Bar buttons (a picture has nothing to click); their room is kept, so the plot lines up with
        the phase chart's beside it (whose header keeps the same room)."""
        for button in self.mode_buttons.values():
            policy = button.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            button.setSizePolicy(policy)
            button.setVisible(False)

    def set_mode(self, mode: str) -> None:
        if mode not in self.MODES:
            raise ValueError(f"unknown chart mode {mode!r}")
        self.mode_buttons[mode].setChecked(True)
        if self.mode != mode:
            self.stack.setCurrentIndex(self.MODES.index(mode))
            self._refresh()
            self.mode_changed.emit(mode)

    def show_view(self, view: EstimateView) -> None:
        """Draw ``view`` in the visible chart; the hidden one is drawn when it is shown (half the work)."""
        # the short phase name: the long ones ("loss + start of backward") were cut off by the Pie / Bar buttons
        # short beside the pie / bar toggle (a long title was cut); the tooltip has the full words
        gpu0 = f" · {tr('GPU 0')}" if view.uneven else ""
        self.title.setText(f"{tr('At the peak')} ({_phase_label(view.peak_phase)}){gpu0}")
        self.title.setToolTip(f"{tr('Breakdown at the peak')} ({localize_name(view.peak_phase)})")
        self._view = view
        if self.bar_plot.getPlotItem().getAxis("left").labelText != unit_name():
            self.bar_plot.setLabel("left", unit_name())
        self._drawn = {m: False for m in self.MODES}
        self._refresh()

    def _refresh(self) -> None:
        view = getattr(self, "_view", None)
        if view is None or self._drawn.get(self.mode):
            return
        if self.mode == "pie":
            self._show_pie(view)
        else:
            self._show_bar(view)
        self._drawn[self.mode] = True

    def _show_pie(self, view: EstimateView) -> None:
        self.pie.set_slices(
            [(localize_name(s.name), s.bytes, s.color) for s in view.slices], [localize(s.explain) for s in view.slices]
        )
        self._pie_labels.reset()
        for i, s in enumerate(view.slices):
            if s.share < LABEL_MIN_SHARE:
                continue
            self._pie_labels.take(
                f"{s.share * 100:.0f}%", theme.text_on(s.color), self.pie.mid_point(i, (1 + HOLE) / 2), bold=True
            )
        self._pie_labels.finish()
        self._center_value.setText(f"{view.peak_allocated_bytes / unit_bytes():.2f} {unit_name()}")
        self._center_caption.setText(tr("allocated"))

    def _show_bar(self, view: EstimateView) -> None:
        """One stacked bar per group of GPUs that hold the same (GPU 0's components; equal groups repeat them):
        a split model shows its few distinct GPUs, 128 data-parallel GPUs one bar."""
        plot = self.bar_plot
        for item in [*self.bar_items, *self._bar_extras]:
            plot.removeItem(item)
        self.bar_items = []
        self._bar_extras = []
        groups = gpu_groups(view.per_gpu) if len(view.per_gpu) > 1 else []
        labels = [f"GPU {a}" if a == b else f"GPU {a}–{b}" for a, b, _ in groups]
        loads = tuple(g for _, _, g in groups) if len(groups) > 1 else ()
        first = loads[0].allocated_bytes if loads else view.peak_allocated_bytes
        same = [0] + [i for i, g in enumerate(loads) if i > 0 and g.allocated_bytes == first]
        other = [i for i, g in enumerate(loads) if i > 0 and g.allocated_bytes != first]
        n = max(1, len(loads))
        bottom = 0.0
        total = view.peak_allocated_bytes / unit_bytes()
        for s in view.slices:
            height = s.bytes / unit_bytes()
            bar = pg.BarGraphItem(
                x=[float(i) for i in same],
                height=[height] * len(same),
                y0=[bottom] * len(same),
                width=0.6,
                brush=QColor(s.color),
                pen=pg.mkPen(theme.current().background, width=1),
            )
            bar.setToolTip(
                f"{localize_name(s.name)}: {height:.2f} {unit_name()} ({s.bytes:,} {tr('bytes')}, "
                f"{s.share * 100:.1f}%)\n{localize(s.explain)}"
            )
            plot.addItem(bar)
            self.bar_items.append(bar)
            bottom += height
        if other:
            rest = pg.BarGraphItem(
                x=[float(i) for i in other],
                height=[loads[i].allocated_bytes / unit_bytes() for i in other],
                width=0.6,
                brush=QColor(theme.UNKNOWN_COLOR),
                pen=pg.mkPen(theme.current().background, width=1),
            )
            rest.setToolTip(
                "\n".join(
                    f"{labels[i]}: {loads[i].allocated_bytes / unit_bytes():.2f} {unit_name()} {tr('allocated')}"
                    for i in other
                )
            )
            plot.addItem(rest)
            self._bar_extras.append(rest)
        tallest = max([total, view.device_bytes / unit_bytes()] + [g.device_bytes / unit_bytes() for g in loads])
        top, gpu_in_range = _y_top(view, tallest)
        if n == 1:
            # segment labels to the right of the bar, where they fit
            for s, bar in zip(view.slices, self.bar_items, strict=True):
                height = s.bytes / unit_bytes()
                if height < top * 0.045:
                    continue
                y0 = float(bar.opts["y0"][0])
                text = _label(f"{localize_name(s.name)}  {height:.2f}", theme.current().text, (0.0, 0.5), size=8)
                text.setPos(0.36, y0 + height / 2)
                plot.addItem(text)
                self._bar_extras.append(text)
        device = pg.InfiniteLine(
            pos=view.device_bytes / unit_bytes(),
            angle=0,
            pen=pg.mkPen(theme.DEVICE_LINE, width=1, style=Qt.PenStyle.DotLine),
            label=f"{tr('on the device')} {view.device_bytes / unit_bytes():.2f} {unit_name()}",
            labelOpts={"position": 0.02, "color": theme.current().muted, "anchors": [(0, 1), (0, 1)]},
        )
        plot.addItem(device)
        self._bar_extras.append(device)
        right = 1.42 if n == 1 else n - 0.4
        self._bar_extras += _gpu_marks(plot, view, top, gpu_in_range, right)
        plot.setRange(xRange=(-0.45, right + 0.03), yRange=(0, top), padding=0)
        peak = f"{localize_name('peak')} ({localize_name(view.peak_phase)})"
        if n == 1 and groups:
            peak = tr("{gpus} (each)").format(gpus=labels[0])  # every GPU holds the same
        ticks = [(0, peak)] if n == 1 else list(enumerate(labels))
        plot.getPlotItem().getAxis("bottom").setTicks([ticks])


class PhaseChart(QWidget):
    """Memory allocated in each phase (load, prefill, decode, ...), stacked by component."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(tr("Memory by phase"))
        self.title.setObjectName("sectionTitle")
        self.plot = _plot(self)
        self.plot.setLabel("left", "GiB")
        self.bar_items: list[pg.BarGraphItem] = []
        self._extras: list[pg.GraphicsObject] = []
        self._totals = _TextPool(self.plot, 8, (0.5, 1.0))
        #: component name -> GiB per phase, in stacking order (what the chart draws)
        self.stacks: dict[str, list[float]] = {}
        self.phase_names: list[str] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(4)
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.title, 1)
        # same height as the breakdown's header with its toggle buttons, so the two plots line up
        spacer = QToolButton(self)
        spacer.setObjectName("toggle")
        spacer.setText(" ")
        spacer.setEnabled(False)
        spacer.setVisible(False)
        sp = spacer.sizePolicy()
        sp.setRetainSizeWhenHidden(True)
        spacer.setSizePolicy(sp)
        header.addWidget(spacer)
        layout.addLayout(header)
        layout.addWidget(self.plot, 1)

    def show_view(self, view: EstimateView) -> None:
        self.title.setText(tr("Memory by phase") + (f" · {tr('GPU 0')}" if view.uneven else ""))
        plot = self.plot
        if plot.getPlotItem().getAxis("left").labelText != unit_name():
            plot.setLabel("left", unit_name())
        for item in [*self.bar_items, *self._extras]:
            plot.removeItem(item)
        self.bar_items = []
        self._extras = []
        self._totals.reset()
        phases = view.phases
        self.phase_names = [p.name for p in phases]
        names = list(view.colors)
        stacks: dict[str, list[float]] = {n: [0.0] * len(phases) for n in names}
        for i, p in enumerate(phases):
            for name, b in p.parts:
                stacks.setdefault(name, [0.0] * len(phases))[i] += b / unit_bytes()
        self.stacks = {n: v for n, v in stacks.items() if any(v)}
        xs = list(range(len(phases)))
        bottoms = [0.0] * len(phases)
        for name, heights in self.stacks.items():
            bar = pg.BarGraphItem(
                x=xs,
                height=heights,
                y0=list(bottoms),
                width=0.62,
                brush=QColor(view.colors.get(name, theme.UNKNOWN_COLOR)),
                pen=pg.mkPen(theme.current().background, width=1),
            )
            bar.setToolTip(
                localize_name(name)
                + "\n"
                + "\n".join(
                    f"{localize_name(p.name)}: {h:.2f} {unit_name()} "
                    f"({h / (p.total / unit_bytes()) * 100 if p.total else 0:.1f}%)"
                    for p, h in zip(phases, heights, strict=True)
                )
            )
            plot.addItem(bar)
            self.bar_items.append(bar)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        for i, p in enumerate(phases):
            self._totals.take(
                f"{p.total / unit_bytes():.2f}", theme.current().text, (i, p.total / unit_bytes()), bold=p.is_peak
            )
        self._totals.finish()
        top, gpu_in_range = _y_top(view, max([p.total / unit_bytes() for p in phases], default=0.0))
        self._extras += _gpu_marks(plot, view, top, gpu_in_range, len(phases) - 0.42)
        # the peak mark goes on a second line: six phase names (checkpointing's recompute) fill the axis
        axis = plot.getPlotItem().getAxis("bottom")
        axis.setTicks(
            [
                [
                    (i, _phase_label(p.name) + ("\n(" + localize_name("peak") + ")" if p.is_peak else ""))
                    for i, p in enumerate(phases)
                ]
            ]
        )
        # six phases (checkpointing's recompute and the first layer's backward) need a point less to stay apart
        font = QFont(axis.font())
        if len(phases) >= 6 and font.pointSizeF() > 7:
            font.setPointSizeF(font.pointSizeF() - 1)
        axis.setStyle(tickFont=font)
        axis.setHeight(2 * QFontMetrics(font).height() + 12)
        plot.setRange(xRange=(-0.6, len(phases) - 0.4), yRange=(0, top), padding=0)
