"""The "Which GPUs" window (View menu): every catalog GPU with the fewest of it that fit the plan the form shows,
as ``vramdesk solve --advise`` lists them, in a sortable table. The rows are computed on a worker
(:class:`~vramdesk.ui.workers.TaskRunner`), so the main window stays responsive; a double-clicked row (or Apply)
plans for that GPU and count (``plan_chosen``; the main window puts it on its undo history).

The rows and their texts are :mod:`vramdesk.ui.gpu_rows` (Qt-free).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.advice import GpuAdvice
from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import Catalog

from .core_text import localize
from .gpu_rows import (
    COLUMNS,
    MAX_GPUS,
    GpuAdviceResult,
    compute_rows,
    plan_for,
    plan_label,
    row_cells,
    row_tooltip,
    sort_advice,
)
from .i18n import tr
from .presenter import describe_error, plan_facts
from .workers import TaskRunner

_Index = QModelIndex | QPersistentModelIndex


class GpuTableModel(QAbstractTableModel):
    """The advice rows; sorting goes through :func:`~vramdesk.ui.gpu_rows.sort_advice` (rows that do not fit last)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[GpuAdvice] = []
        self._cells: list[tuple[str, ...]] = []

    def set_rows(self, rows: Sequence[GpuAdvice]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self._cells = [row_cells(r) for r in self.rows]
        self.endResetModel()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self._cells[index.row()][index.column()]
        if role == Qt.ItemDataRole.ToolTipRole:
            return row_tooltip(self.rows[index.row()])
        if role == Qt.ItemDataRole.TextAlignmentRole and 1 <= index.column() <= 5 and index.column() != 2:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return tr(COLUMNS[section].title)
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        self.rows = sort_advice(self.rows, column, descending=order == Qt.SortOrder.DescendingOrder)
        self._cells = [row_cells(r) for r in self.rows]
        self.layoutChanged.emit()


class GpusDialog(QDialog):
    """Signals: ``plan_chosen(Scenario, str)``, a row was chosen: the plan on its GPUs and the undo step's name."""

    plan_chosen = Signal(object, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Which GPUs"))
        self.setObjectName("gpusView")
        self.resize(920, 560)
        self.scenario: Scenario | None = None
        self.runner = TaskRunner("gpu-advice", self)
        self.runner.finished.connect(self._on_rows)
        self.runner.failed.connect(lambda err: self._show_status(describe_error(err) or type(err).__name__))
        layout = QVBoxLayout(self)
        self.caption = QLabel("")
        self.caption.setObjectName("caption")
        self.caption.setWordWrap(True)
        layout.addWidget(self.caption)
        self.model = GpuTableModel(self)
        self.table = QTableView(self)
        self.table.setAccessibleName(tr("Which GPUs"))
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicator(1, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.doubleClicked.connect(lambda index: self.apply_row(index.row()))
        layout.addWidget(self.table, 1)
        self.status = QLabel("")
        self.status.setObjectName("caption")
        layout.addWidget(self.status)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.apply_button = QPushButton(tr("Apply to the plan"), self)
        self.apply_button.setEnabled(False)
        self.apply_button.clicked.connect(self._apply_selected)
        buttons.addButton(self.apply_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)
        self.table.selectionModel().currentRowChanged.connect(
            lambda cur, _prev: self.apply_button.setEnabled(
                cur.isValid() and self.model.rows[cur.row()].gpus is not None
            )
        )

    @property
    def busy(self) -> bool:
        return self.runner.busy

    def compute(
        self, scenario: Scenario, facts: ModelFacts, gpus: Sequence[GpuSpec], headroom_fraction: float | None = None
    ) -> int:
        """Work out the rows for ``scenario`` on a worker (a newer request replaces an older one)."""
        self.scenario = scenario
        self.caption.setText(
            tr("The fewest GPUs of each type that fit {model}. Double-click a row to plan for it.").format(
                model=scenario.model.id
            )
        )
        self._show_status(tr("Working out which GPUs fit…"))
        self.model.set_rows(())
        gpus = list(gpus)

        def job(cancel: threading.Event) -> GpuAdviceResult:
            return compute_rows(scenario, facts, gpus, headroom_fraction=headroom_fraction, cancel=cancel)

        return self.runner.submit(job, label=scenario.model.id)

    def show_error(self, message: str) -> None:
        """No rows: say why (the plan has a problem, the model is not read yet)."""
        self.runner.cancel()
        self.model.set_rows(())
        self._show_status(message)

    def _on_rows(self, result: GpuAdviceResult) -> None:
        header = self.table.horizontalHeader()
        self.model.set_rows(result.rows)
        self.model.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())
        fitting = sum(1 for r in result.rows if r.gpus is not None)
        self._show_status(
            tr("{n} of {total} GPU types fit with up to {most} GPUs.").format(
                n=fitting, total=len(result.rows), most=MAX_GPUS
            )
        )

    def _show_status(self, text: str) -> None:
        self.status.setText(text)

    def _apply_selected(self) -> None:
        index = self.table.currentIndex()
        if index.isValid():
            self.apply_row(index.row())

    def apply_row(self, row: int) -> bool:
        """Plan for the GPUs of table row ``row`` (``plan_chosen``); False for a row that does not fit."""
        if self.scenario is None or not 0 <= row < len(self.model.rows):
            return False
        advice = self.model.rows[row]
        planned = plan_for(self.scenario, advice)
        if planned is None:
            return False
        self.plan_chosen.emit(planned, plan_label(advice))
        return True

    def closeEvent(self, event: Any) -> None:
        self.runner.cancel()
        super().closeEvent(event)


class _Window(Protocol):
    """What :func:`open_for` reads of the main window."""

    gpus_dialog: GpusDialog | None
    headroom_fraction: float | None
    _catalog: Catalog

    def current_scenario(self) -> Scenario | None: ...
    def _known_facts(self, ref: str) -> ModelFacts: ...
    def apply_plan(self, scenario: Scenario, label: str, keep_detected: bool = True) -> None: ...


def open_for(window: _Window) -> GpusDialog:
    """Open (or raise) ``window``'s Which GPUs view for the plan its form shows; a chosen row is applied to the
    plan as one undo step (the plan names its GPU: a detected one is left)."""
    dialog = window.gpus_dialog
    if dialog is None:
        dialog = window.gpus_dialog = GpusDialog(window if isinstance(window, QWidget) else None)
        dialog.plan_chosen.connect(lambda s, label: window.apply_plan(s, label, keep_detected=False))
    scenario = window.current_scenario()
    facts, problem = plan_facts(scenario, window._known_facts)
    if scenario is None or facts is None:
        dialog.show_error(localize(problem))  # (a refusal of the core: its Text, in the window's language)
    else:
        dialog.compute(scenario, facts, window._catalog.gpus(), window.headroom_fraction)
    dialog.show()
    dialog.raise_()
    return dialog


__all__ = ["GpuTableModel", "GpusDialog", "open_for"]
