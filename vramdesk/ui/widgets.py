"""Small widgets of the main window: the components table model, the legend, a value card."""

from __future__ import annotations

import html
import re
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from . import theme
from .core_text import localize, localize_name
from .i18n import tr
from .presenter import Slice, unit_bytes, unit_name

_Index = QModelIndex | QPersistentModelIndex


class RowsTableModel(QAbstractTableModel):
    """A read-only table over ``self._rows`` with translated column titles (``HEADERS``)."""

    HEADERS: tuple[str, ...] = ()
    _rows: Any = ()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.HEADERS)

    def header_text(self, section: int) -> str:
        return tr(self.HEADERS[section])

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.DisplayRole
            and 0 <= section < len(self.HEADERS)
        ):
            return self.header_text(section)
        return None


class ComponentTableModel(RowsTableModel):
    """The components at the peak: name, category, GiB, share and where the number comes from."""

    HEADERS = ("Component", "Category", "GiB", "Share", "Where it comes from")
    NAME, CATEGORY, GIB_COL, SHARE, EXPLAIN = range(5)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: tuple[Slice, ...] = ()

    @property
    def rows(self) -> tuple[Slice, ...]:
        return self._rows

    def set_rows(self, rows: tuple[Slice, ...]) -> None:
        self.beginResetModel()
        self._rows = tuple(rows)
        self.endResetModel()

    def header_text(self, section: int) -> str:
        return unit_name() if section == self.GIB_COL else tr(self.HEADERS[section])

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.TextAlignmentRole
            and section in (self.GIB_COL, self.SHARE)
        ):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return super().headerData(section, orientation, role)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == self.NAME:
                return localize_name(row.name)
            if col == self.CATEGORY:
                return tr(theme.CATEGORY_LABELS.get(row.category, row.category))
            if col == self.GIB_COL:
                return f"{row.bytes / unit_bytes():.2f}"
            if col == self.SHARE:
                return f"{row.share * 100:.1f}%"
            if col == self.EXPLAIN:
                return localize(row.explain)
            return None
        if role == Qt.ItemDataRole.DecorationRole and col == self.NAME:
            return QColor(row.color)
        if role == Qt.ItemDataRole.ToolTipRole:
            return (
                f"<p><b>{html.escape(localize_name(row.name))}</b>: {row.bytes / unit_bytes():.2f} {unit_name()} "
                f"({row.bytes:,} {tr('bytes')})</p>"
                f"<p>{html.escape(localize(row.explain))}</p>"
            )
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (self.GIB_COL, self.SHARE):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.UserRole:
            return row.bytes
        return None


def _unbroken(text: str) -> str:
    """``text`` that never breaks across lines: non-breaking spaces, and a word joiner between Chinese characters
    (Chinese has no spaces, so a wrapping label would split a name anywhere)."""
    text = text.replace(" ", "&nbsp;")
    return re.sub(r"(?<=[\u3400-\u9fff\uff00-\uffef])(?=.)", "\u2060", text)


def legend_html(items: list[tuple[str, str]]) -> str:
    """Rich text for a legend: a coloured square and a name per (name, colour)."""
    parts = [
        f'<span style="color:{color}; font-size:13pt;">&#9632;</span>&nbsp;{_unbroken(html.escape(name))}'
        for name, color in items
    ]
    return "&nbsp;&nbsp;&nbsp; ".join(parts)


class Legend(QLabel):
    """Which colour is which component, for both charts (wraps when there are many)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.entries: list[tuple[str, str]] = []

    def set_entries(self, items: list[tuple[str, str]]) -> None:
        self.entries = list(items)
        self.setText(legend_html(self.entries))


class StatCard(QFrame):
    """A caption over a value ("Peak allocated" / "9.85 GiB")."""

    def __init__(self, caption: str, tooltip: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("stat")
        self.caption = QLabel(caption)
        self.caption.setObjectName("caption")
        self.value = QLabel("–")
        self.value.setObjectName("statValue")
        self.value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 5, 10, 6)
        layout.setSpacing(1)
        layout.addWidget(self.caption)
        layout.addWidget(self.value)
        self.description = tooltip
        self.setToolTip(tooltip)

    def set_value(self, text: str) -> None:
        self.value.setText(text)

    def set_note(self, note: str) -> None:
        """The description, and below it ``note`` (how well this figure matched measurements), as the tooltip."""
        self.setToolTip(f"{self.description}\n\n{note}" if note else self.description)
