"""The "Fit map" window (View menu): the plan the form shows, swept over two settings (input tokens x batch for
inference, sequence x micro-batch for fine-tuning, or any other pair), as a heat map of the memory the busiest
GPU needs, coloured by verdict, with the line where the plan stops fitting the GPU. Hovering a square tells its
numbers; clicking one plans with its settings (``plan_chosen``; the main window puts it on its undo history).
The sweep runs on a worker (:class:`~vramdesk.ui.workers.TaskRunner`); the map exports as PNG / SVG / PDF (a
:class:`~vramdesk.ui.figure.Figure` in the print palette) or CSV (:func:`vramdesk.report.sweep_table.sweep_csv`).

The grid, colours and texts are :mod:`vramdesk.ui.fit_map_model` (Qt-free).
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QFontMetricsF, QHelpEvent, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.plan_name import plan_name
from vramdesk.core.scenario import Scenario
from vramdesk.report.captions import Caption, source_line, subtitle
from vramdesk.report.sweep_table import sweep_csv
from vramdesk.services.catalog import Catalog

from . import theme
from .core_text import localize
from .figure import Figure, export_figure
from .fit_map_model import (
    DEFAULT_AXES,
    FitMap,
    FitMapResult,
    axis_choices,
    build_map,
    compute_map,
    default_spec,
    option_title,
    plan_label,
    units_text,
)
from .i18n import language, tr
from .presenter import describe_error, plan_facts
from .workers import TaskRunner

#: room around the grid for the ticks and the axes' titles (logical pixels)
_LEFT, _BOTTOM, _TOP, _RIGHT = 86, 48, 8, 12


def _ink(fill: str) -> QColor:
    """Text that reads on ``fill``: white on a dark square, the palette's text on a pale one."""
    c = QColor(fill)
    luma = 0.299 * c.red() + 0.587 * c.green() + 0.114 * c.blue()
    return QColor("#ffffff") if luma < 150 else QColor(theme.current().text)


class HeatMap(QWidget):
    """The squares, the ticks, the axes' titles and the boundary line, painted (so an SVG keeps every text as
    ``<text>``). Signal ``cell_clicked(i, j)``: column i (x), row j (y, counted from the bottom)."""

    cell_clicked = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        p = theme.current()
        self._text, self._muted, self._line = QColor(p.text), QColor(p.muted), QColor(p.text)
        self.map: FitMap | None = None
        self.hovered: tuple[int, int] | None = None
        self.setMouseTracking(True)
        self.setMinimumSize(420, 260)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAccessibleName(tr("Fit map"))

    def set_map(self, fit_map: FitMap | None) -> None:
        self.map = fit_map
        self.hovered = None
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(760, 440)

    def grid_rect(self) -> QRectF:
        return QRectF(_LEFT, _TOP, max(1, self.width() - _LEFT - _RIGHT), max(1, self.height() - _TOP - _BOTTOM))

    def cell_rect(self, i: int, j: int) -> QRectF:
        """Where column ``i``, row ``j`` is drawn (row 0 at the bottom)."""
        assert self.map is not None
        g = self.grid_rect()
        w, h = g.width() / len(self.map.x_ticks), g.height() / len(self.map.y_ticks)
        return QRectF(g.left() + i * w, g.bottom() - (j + 1) * h, w, h)

    def cell_at(self, pos: QPoint | QPointF) -> tuple[int, int] | None:
        """The (column, row) under ``pos``, or None outside the grid."""
        if self.map is None:
            return None
        g = self.grid_rect()
        x, y = float(pos.x()), float(pos.y())
        if not (g.left() <= x < g.right() and g.top() <= y < g.bottom()):
            return None
        i = int((x - g.left()) / g.width() * len(self.map.x_ticks))
        j = int((g.bottom() - y) / g.height() * len(self.map.y_ticks))
        return min(i, len(self.map.x_ticks) - 1), min(j, len(self.map.y_ticks) - 1)

    def tooltip_at(self, pos: QPoint | QPointF) -> str:
        at = self.cell_at(pos)
        return "" if at is None or self.map is None else self.map.cell(*at).tooltip

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            text = self.tooltip_at(event.pos())
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        at = self.cell_at(event.position())
        if at != self.hovered:
            self.hovered = at
            self.update()
        super().mouseMoveEvent(event)

    def leaveEvent(self, event: QEvent) -> None:
        self.hovered = None
        self.update()
        super().leaveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        at = self.cell_at(event.position())
        if event.button() == Qt.MouseButton.LeftButton and at is not None:
            self.cell_clicked.emit(*at)
        super().mouseReleaseEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        if self.map is None:
            return
        painter = QPainter(self)
        try:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            self._paint_cells(painter, self.map)
            self._paint_axes(painter, self.map)
        finally:
            painter.end()

    def _paint_cells(self, painter: QPainter, m: FitMap) -> None:
        metrics = QFontMetricsF(self.font())
        for i, column in enumerate(m.cells):
            for j, cell in enumerate(column):
                r = self.cell_rect(i, j)
                painter.fillRect(r.adjusted(0.5, 0.5, -0.5, -0.5), QColor(cell.color))
                if r.width() > metrics.horizontalAdvance(cell.text) + 6 and r.height() > metrics.height() + 2:
                    painter.setPen(_ink(cell.color))
                    painter.drawText(r, Qt.AlignmentFlag.AlignCenter, cell.text)
        if self.hovered is not None:
            painter.setPen(QPen(self._text, 2))
            painter.drawRect(self.cell_rect(*self.hovered).adjusted(1, 1, -1, -1))
        g = self.grid_rect()
        w, h = g.width() / len(m.x_ticks), g.height() / len(m.y_ticks)
        pen = QPen(self._line, 3)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        painter.setPen(pen)
        for (x0, y0), (x1, y1) in m.boundary:
            painter.drawLine(
                QPointF(g.left() + x0 * w, g.bottom() - y0 * h), QPointF(g.left() + x1 * w, g.bottom() - y1 * h)
            )

    def _paint_axes(self, painter: QPainter, m: FitMap) -> None:
        metrics = QFontMetricsF(self.font())
        g = self.grid_rect()
        w, h = g.width() / len(m.x_ticks), g.height() / len(m.y_ticks)
        painter.setPen(self._text)
        line = metrics.height()
        # (every tick when they fit side by side, else every second, third, ...)
        widest = max(metrics.horizontalAdvance(t) for t in m.x_ticks) + 8
        every = max(1, int(widest // max(1.0, w)) + (1 if widest % max(1.0, w) else 0))
        for i, tick in enumerate(m.x_ticks):
            if i % every == 0:
                rect = QRectF(g.left() + i * w - 30, g.bottom() + 3, w + 60, line)
                painter.drawText(rect, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, tick)
        step = max(1, int((line + 2) // max(1.0, h)) + 1) if h < line + 2 else 1
        for j, tick in enumerate(m.y_ticks):
            if j % step == 0:
                rect = QRectF(0, g.bottom() - (j + 1) * h, _LEFT - 6, h)
                painter.drawText(rect, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, tick)
        painter.setPen(self._muted)
        painter.drawText(
            QRectF(g.left(), g.bottom() + line + 6, g.width(), line),
            Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
            m.x_title,
        )
        painter.save()
        painter.translate(14, g.center().y())
        painter.rotate(-90)
        painter.drawText(
            QRectF(-g.height() / 2, -line / 2 - 2, g.height(), line + 4), Qt.AlignmentFlag.AlignCenter, m.y_title
        )
        painter.restore()


class FitMapDialog(QDialog):
    """Signals: ``plan_chosen(Scenario, str, bool)``: a square was clicked: its plan, the undo step's name, and
    whether the window keeps its detected GPU (not when the map sweeps the GPU)."""

    plan_chosen = Signal(object, str, bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Fit map"))
        self.setObjectName("fitMapView")
        self.resize(900, 600)
        #: the language the texts were made in (a window in another language opens it anew)
        self.language = language()
        self.scenario: Scenario | None = None
        self.facts: ModelFacts | None = None
        self.gpu: GpuSpec | None = None
        self.resolve_gpu: Callable[[str], GpuSpec | None] | None = None
        self.headroom_fraction: float | None = None
        self.answer: FitMapResult | None = None
        self.fit_map: FitMap | None = None
        self.runner = TaskRunner("fit-map", self)
        self.runner.finished.connect(self._on_result)
        self.runner.failed.connect(self._on_failed)
        layout = QVBoxLayout(self)
        self.caption = QLabel("")
        self.caption.setObjectName("caption")
        self.caption.setWordWrap(True)
        layout.addWidget(self.caption)
        row = QHBoxLayout()
        self.x_combo, self.x_edit = self._axis_row(row, tr("&Across:"))
        self.y_combo, self.y_edit = self._axis_row(row, tr("&Up:"))
        self.draw_button = QPushButton(tr("&Draw"), self)
        self.draw_button.clicked.connect(self.compute)
        row.addWidget(self.draw_button)
        layout.addLayout(row)
        self.heat = HeatMap(self)
        self.heat.cell_clicked.connect(self.apply_cell)
        layout.addWidget(self.heat, 1)
        self.legend_label = QLabel("")
        self.legend_label.setTextFormat(Qt.TextFormat.RichText)
        self.legend_label.setObjectName("caption")
        layout.addWidget(self.legend_label)
        self.status = QLabel("")
        self.status.setObjectName("caption")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.export_button = QPushButton(tr("&Export…"), self)
        self.export_button.setEnabled(False)
        self.export_button.clicked.connect(self.export_dialog)
        buttons.addButton(self.export_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)

    def _axis_row(self, row: QHBoxLayout, title: str) -> tuple[QComboBox, QLineEdit]:
        label = QLabel(title, self)
        combo = QComboBox(self)
        edit = QLineEdit(self)
        edit.setPlaceholderText("1k..32k  ·  1,2,4,8")
        edit.setToolTip(
            tr("Values: a list (1,2,4,8), a doubling range (1k..32k), N values (1k..32kx8) or a step (8..64+8)")
        )
        edit.returnPressed.connect(self.compute)
        label.setBuddy(combo)
        combo.currentIndexChanged.connect(lambda _i, c=combo, e=edit: self._axis_changed(c, e))
        row.addWidget(label)
        row.addWidget(combo)
        row.addWidget(edit, 1)
        return combo, edit

    def _axis_changed(self, combo: QComboBox, edit: QLineEdit) -> None:
        name = combo.currentData()
        if self.scenario is not None and isinstance(name, str):
            edit.setText(default_spec(name, self.scenario, self.facts))

    @property
    def busy(self) -> bool:
        return self.runner.busy

    def set_plan(
        self,
        scenario: Scenario,
        facts: ModelFacts,
        gpu: GpuSpec | None,
        *,
        resolve_gpu: Callable[[str], GpuSpec | None] | None = None,
        headroom_fraction: float | None = None,
    ) -> None:
        """Map ``scenario`` (on ``gpu``): the axes start as the workload's defaults, or stay as the user chose
        them when the plan's workload is the same kind."""
        same_kind = self.scenario is not None and self.scenario.workload.kind == scenario.workload.kind
        self.scenario, self.facts, self.gpu = scenario, facts, gpu
        self.resolve_gpu, self.headroom_fraction = resolve_gpu, headroom_fraction
        self.caption.setText(
            tr("Memory per GPU for {model}. Hover a square for its numbers; click one to plan with it.").format(
                model=scenario.model.id
            )
        )
        if same_kind:
            return
        choices = axis_choices(scenario)
        for combo, default in zip((self.x_combo, self.y_combo), DEFAULT_AXES[scenario.workload.kind], strict=True):
            combo.blockSignals(True)
            combo.clear()
            for opt in choices:
                combo.addItem(option_title(opt), opt.name)
            combo.setCurrentIndex(max(0, combo.findData(default)))
            combo.blockSignals(False)
        self.x_edit.setText(default_spec(DEFAULT_AXES[scenario.workload.kind][0], scenario, facts))
        self.y_edit.setText(default_spec(DEFAULT_AXES[scenario.workload.kind][1], scenario, facts))

    def specs(self) -> tuple[str, str]:
        """The two axes as ``NAME=VALUES``."""
        return (
            f"{self.x_combo.currentData()}={self.x_edit.text()}",
            f"{self.y_combo.currentData()}={self.y_edit.text()}",
        )

    def compute(self) -> int:
        """Sweep the plan over the two axes on a worker (a newer request replaces an older one)."""
        scenario, facts = self.scenario, self.facts
        if scenario is None or facts is None:
            return 0
        specs, gpu, resolve, headroom = self.specs(), self.gpu, self.resolve_gpu, self.headroom_fraction
        self.status.setText(tr("Working out the fit map…"))

        def job(cancel: threading.Event) -> FitMapResult:
            return compute_map(
                scenario, facts, gpu, specs, resolve_gpu=resolve, headroom_fraction=headroom, cancel=cancel
            )

        return self.runner.submit(job, label=scenario.model.id)

    def show_error(self, message: str) -> None:
        """No map: say why (the plan has a problem, the model is not read yet, no GPU is chosen)."""
        self.runner.cancel()
        self.answer, self.fit_map = None, None
        self.heat.set_map(None)
        self.export_button.setEnabled(False)
        self.status.setText(message)

    def _on_failed(self, err: BaseException) -> None:
        self.show_error(localize(describe_error(err)))

    def _on_result(self, result: FitMapResult) -> None:
        self.answer = result
        self.fit_map = build_map(result.result, theme.current().background)
        self.heat.set_map(self.fit_map)
        self.export_button.setEnabled(True)
        self.legend_label.setText(
            "&nbsp;&nbsp;&nbsp;".join(
                f'<span style="color:{color}">■</span>&nbsp;{html.escape(name)}' for name, color in self.fit_map.legend
            )
        )
        cells = result.result.cells
        runs = sum(1 for c in cells if c.verdict in ("fits", "tight"))
        self.status.setText(tr("{n} of {total} combinations run on the GPU.").format(n=runs, total=len(cells)))

    def apply_cell(self, i: int, j: int) -> bool:
        """Plan with the settings of square (``i``, ``j``) (``plan_chosen``); False when it has no valid plan."""
        if self.fit_map is None or self.answer is None:
            return False
        cell = self.fit_map.cell(i, j).cell
        if cell.scenario is None:
            return False
        sweeps_gpu = "gpu" in (a.name for a in self.answer.result.axes)
        self.plan_chosen.emit(cell.scenario, plan_label(self.fit_map, cell), not sweeps_gpu)
        return True

    def figure(self) -> Figure:
        """The map as an exported figure: title, subtitle, the map, legend, units, source; build it inside
        :func:`vramdesk.ui.theme.printing`."""
        assert self.answer is not None
        scenario = self.answer.scenario
        heat = HeatMap()
        heat.set_map(build_map(self.answer.result, theme.current().background))
        title = tr("Fit map: {plan}").format(plan=scenario.name or plan_name(scenario))
        assert heat.map is not None
        return Figure(
            Caption(title, subtitle(scenario), source_line()), heat, legend=list(heat.map.legend), units=units_text()
        )

    def export(self, path: Path) -> Path:
        """Write the map to ``path``: PNG / SVG / PDF (the figure, in the print palette) or CSV (every cell)."""
        if self.answer is None:
            raise ValueError("nothing to export: the fit map is not drawn yet")
        path = Path(path)
        if path.suffix.lower() == ".csv":
            from vramdesk.fsutil import atomic_write_text

            atomic_write_text(path, sweep_csv(self.answer.result))
            return path
        with theme.printing():
            figure = self.figure()
        try:
            return export_figure(figure, path)
        finally:
            figure.deleteLater()

    def export_dialog(self) -> None:
        formats = tr("PNG, SVG, PDF or CSV (*.png *.svg *.pdf *.csv)")
        name, _ = QFileDialog.getSaveFileName(self, tr("Export the fit map"), "fit-map.png", formats)
        if not name:
            return
        try:
            out = self.export(Path(name))
        except (ValueError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
            return
        self.status.setText(tr("Saved") + f" {out}")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # the main window closing closes the map too (after its own close handling, which may refuse)
        if watched is self.parent() and event.type() == QEvent.Type.Close:
            QTimer.singleShot(0, self._close_with_parent)
        return False

    def _close_with_parent(self) -> None:
        parent = self.parentWidget()
        if parent is None or not parent.isVisible():
            self.close()

    def closeEvent(self, event: Any) -> None:
        self.runner.cancel()
        super().closeEvent(event)


class _Window(Protocol):
    """What :func:`open_for` reads of the main window."""

    headroom_fraction: float | None
    _catalog: Catalog

    def current_scenario(self) -> Scenario | None: ...
    def _known_facts(self, ref: str) -> ModelFacts: ...
    def _gpu_spec(self, ev: Any) -> GpuSpec | None: ...
    @property
    def evaluation(self) -> Any: ...
    def apply_plan(self, scenario: Scenario, label: str, keep_detected: bool = True) -> None: ...


def _dialog_of(window: _Window) -> FitMapDialog:
    """The window's fit map (one made in another language is replaced)."""
    parent = window if isinstance(window, QWidget) else None
    found = parent.findChild(FitMapDialog, "fitMapView") if parent is not None else None
    if isinstance(found, FitMapDialog) and found.language == language():
        return found
    if isinstance(found, FitMapDialog):
        found.close()
        found.setObjectName("")
        found.deleteLater()
    dialog = FitMapDialog(parent)
    dialog.plan_chosen.connect(lambda s, label, keep: window.apply_plan(s, label, keep_detected=keep))
    if parent is not None:
        parent.installEventFilter(dialog)
    for name in ("action_undo", "action_redo"):  # Ctrl+Z in the map takes back a square it applied
        act = getattr(window, name, None)
        if isinstance(act, QAction):
            dialog.addAction(act)
    return dialog


def open_for(window: _Window) -> FitMapDialog:
    """Open (or raise) ``window``'s fit map for the plan its form shows, and draw it; a clicked square is applied to
    the plan as one undo step."""
    dialog = _dialog_of(window)
    scenario = window.current_scenario()
    facts, problem = plan_facts(scenario, window._known_facts)
    gpu = window._gpu_spec(window.evaluation) if scenario is not None else None
    catalog = window._catalog

    def resolve(name: str) -> GpuSpec | None:
        try:
            return catalog.gpu(name)
        except LookupError:
            return None

    if scenario is None or facts is None:
        dialog.show_error(localize(problem))
    else:
        dialog.set_plan(scenario, facts, gpu, resolve_gpu=resolve, headroom_fraction=window.headroom_fraction)
        dialog.compute()
    dialog.show()
    dialog.raise_()
    return dialog


__all__ = ["FitMapDialog", "HeatMap", "open_for"]
