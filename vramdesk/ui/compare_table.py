"""The comparison as a table in the window's language and unit: a bold title row per block (the verdict and the
totals first, the inputs in their groups last), the verdicts in their colours, differences highlighted, and
"only differences" hiding the rows on which every plan agrees (and the titles of blocks left empty).

The first column holds the rows' names; the plans' columns can be dragged into another order (the header's
sections are movable; the names' column stays first)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from vramdesk.core.options import by_path
from vramdesk.report.compare_rows import title
from vramdesk.report.comparison import CompareRow, Comparison

from . import theme
from .core_text import localize, localize_name
from .i18n import tr
from .presenter import unit_name

#: blocks whose rows "only differences" hides where the plans agree (the results always show)
FILTERED_BLOCKS = frozenset({"component", "model", "workload", "training", "hardware", "engine"})
_NUMERIC = frozenset({"total", "speed", "component"})


def verdict_color(verdict: str | None) -> str:
    """A verdict's colour, lightened on a dark background so it still reads."""
    color = theme.VERDICT_COLORS.get(verdict, theme.VERDICT_COLORS[None])
    return theme.mix(color, "#ffffff", 0.35) if theme.current().name == "dark" else color


@dataclass(frozen=True)
class TableRow:
    """One line of the table: a block's title (``row`` None) or a comparison row."""

    block: str
    row: CompareRow | None


def row_label(row: CompareRow) -> str:
    """A row's name in the window's language: an option's label from the option table (without its keyboard
    mark), a component's name, or the comparison's own label."""
    if row.section == "component":
        return localize_name(row.name)
    opt = by_path().get(row.name) if row.section == "input" else None
    if opt is not None and tr(opt.label) != opt.label:
        return re.sub(r"\(&\w\)|&(?=\w)", "", tr(opt.label)).strip()
    return localize(row.label)


def cell_texts(row: CompareRow) -> list[str]:
    """A row's cells as the window shows them: bytes in the window's unit, choices, phases and verdicts in words."""
    if row.unit:
        return list(row.texts(unit_name()))
    opt = by_path().get(row.name) if row.section == "input" else None
    out = []
    for value, cell in zip(row.values, row.cells, strict=True):
        named = opt.choices.get(str(value)) if opt is not None and value is not None else None
        if (named is not None and named[0] == cell) or isinstance(value, bool):
            out.append(tr(cell))  # a choice in words, "yes" / "no"
        else:
            translated = localize_name(cell)
            out.append(translated if translated != cell else localize(cell))
    return out


class CompareTable(QTableWidget):
    """The comparison table (see the module's docstring)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabKeyNavigation(False)  # Tab moves on to the next field; the arrows move in the table
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(22)
        header = self.horizontalHeader()
        header.setSectionsMovable(True)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.setToolTip(tr("Drag a plan's name to move its column; right-click it to remove the plan"))
        header.sectionMoved.connect(lambda _logical, _old, _new: self._keep_names_first())
        self.lines: list[TableRow] = []
        self.only_differences = True

    def _keep_names_first(self) -> None:
        header = self.horizontalHeader()
        if header.visualIndex(0) != 0:
            header.blockSignals(True)
            header.moveSection(header.visualIndex(0), 0)
            header.blockSignals(False)

    def column_order(self) -> list[int]:
        """The plans' columns (0 = the first plan) in the order they are shown."""
        header = self.horizontalHeader()
        return [header.logicalIndex(v) - 1 for v in range(1, header.count())]

    def show_comparison(self, cmp: Comparison | None) -> None:
        self.clear()
        self.setRowCount(0)
        self.setColumnCount(0)  # the header forgets its moved sections: the new columns are in the plans' order
        self.lines = []
        if cmp is None:
            return
        for block, rows in cmp.blocks():
            self.lines.append(TableRow(block, None))
            self.lines += [TableRow(block, r) for r in rows]
        self.setColumnCount(1 + len(cmp.labels))
        self.setHorizontalHeaderLabels(["", *cmp.labels])
        self.setRowCount(len(self.lines))
        for n, line in enumerate(self.lines):
            self._fill(n, line)
        self.set_only_differences(self.only_differences)
        self.resizeColumnsToContents()
        self.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)

    def _fill(self, n: int, line: TableRow) -> None:
        p = theme.current()
        row = line.row
        if row is None:
            head = QTableWidgetItem(localize(title(line.block, unit_name())))
            font = head.font()
            font.setBold(True)
            head.setFont(font)
            head.setBackground(QBrush(QColor(theme.mix(p.text, p.background, 0.92))))
            self.setItem(n, 0, head)
            return
        self.setItem(n, 0, QTableWidgetItem(row_label(row)))
        diff = QBrush(QColor(theme.mix(theme.VERDICT_COLORS["tight"], p.background, 0.75)))
        for col, (value, text) in enumerate(zip(row.values, cell_texts(row), strict=True), 1):
            item = QTableWidgetItem(text)
            if line.block in _NUMERIC:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if row.differs and row.section == "input":
                item.setBackground(diff)
            if row.name == "verdict" and value in theme.VERDICT_COLORS:
                item.setForeground(QBrush(QColor(verdict_color(value))))
                font = QFont(item.font())
                font.setBold(True)
                item.setFont(font)
                item.setText(localize_name(str(value)))
            self.setItem(n, col, item)

    def set_only_differences(self, on: bool) -> None:
        """Hide the inputs and components on which the plans agree (``on``), and titles with nothing below."""
        self.only_differences = on
        shown: dict[str, int] = {}
        for n, line in enumerate(self.lines):
            hide = line.row is not None and on and line.block in FILTERED_BLOCKS and not line.row.differs
            self.setRowHidden(n, hide)
            if line.row is not None and not hide:
                shown[line.block] = shown.get(line.block, 0) + 1
        for n, line in enumerate(self.lines):
            if line.row is None:
                self.setRowHidden(n, not shown.get(line.block))

    def shown_rows(self) -> list[str]:
        """The first column of the rows shown, top to bottom (for tests)."""
        items = [self.item(n, 0) for n in range(self.rowCount()) if not self.isRowHidden(n)]
        return [item.text() for item in items if item is not None]


__all__ = ["CompareTable", "TableRow", "cell_texts", "row_label", "verdict_color"]
