"""The model browser: a search box (debounced), a results table with source badges, and a details pane.

Local results (catalog, HF cache, models looked at before) come at once; the Hub's answer comes from a
worker (:class:`TaskRunner`: a newer search cancels the older one). Both search functions are injected,
so tests run a slow fake Hub without the network.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.facts import ModelFacts
from vramdesk.core.messages import join
from vramdesk.services.catalog import Catalog
from vramdesk.services.search import FOUND_IN, SOURCE_DETAIL, SOURCE_WORDS, HubAnswer, SearchResult, merge

from .core_text import localize
from .i18n import tr
from .presenter import count_text, describe_error
from .widgets import RowsTableModel
from .workers import TaskRunner

_Index = QModelIndex | QPersistentModelIndex

DEBOUNCE_MS = 250
SOURCE_COLORS = {"catalog": "#0072B2", "cache": "#009E73", "hub": "#E69F00", "recent": "#CC79A7", "file": "#666666"}


def source_word(source: str) -> str:
    """A result's source ("catalog") as a Text for :func:`localize` (the window's word for it)."""
    known = SOURCE_WORDS.get(source)
    return known() if known is not None else tr(source)


LocalSearch = Callable[[str], list[SearchResult]]
HubSearch = Callable[[str, threading.Event], HubAnswer]


def downloads_text(n: int | None) -> str:
    if n is None:
        return ""
    if n >= 1_000_000:
        return f"{n / 1e6:.1f} M"
    if n >= 1_000:
        return f"{n / 1e3:.0f} k"
    return str(n)


class SearchResultModel(RowsTableModel):
    """Search results: model id, source badge, parameters, downloads."""

    HEADERS = ("Model", "Source", "Params", "Downloads")
    MODEL, SOURCE, PARAMS, DOWNLOADS = range(4)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: list[SearchResult] = []

    @property
    def rows(self) -> list[SearchResult]:
        return list(self._rows)

    def set_rows(self, rows: list[SearchResult]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def result(self, row: int) -> SearchResult | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        r = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == self.MODEL:
                return r.id
            if col == self.SOURCE:
                return tr(r.source)
            if col == self.PARAMS:
                return count_text(r.params) if r.params else ""
            if col == self.DOWNLOADS:
                return downloads_text(r.downloads)
            return None
        if role == Qt.ItemDataRole.ForegroundRole and col == self.SOURCE:
            return QColor(SOURCE_COLORS.get(r.source, "#666666"))
        if role == Qt.ItemDataRole.ToolTipRole:
            found = FOUND_IN(sources=join(", ", *(source_word(s) for s in r.sources)))
            parts = [f"<b>{html.escape(r.id)}</b>", html.escape(localize(found))]
            if r.detail:
                parts.append(html.escape(localize(r.detail)))
            if r.gated:
                parts.append(html.escape(tr("gated: accept the licence on the Hub and set an HF token")))
            return "<br>".join(parts)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (self.PARAMS, self.DOWNLOADS):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.UserRole:
            return r.id
        return None


def details_html(result: SearchResult | None, facts: ModelFacts | None, catalog: Catalog | None) -> str:
    """The details pane: what is known about a model (more once its config has been read)."""
    if result is None and facts is None:
        return f"<i>{html.escape(tr('Pick a model to see its architecture.'))}</i>"
    model_id = facts.model_id if facts is not None else result.id if result is not None else ""
    rows: list[tuple[str, str]] = []
    if facts is not None:
        arch = facts.arch
        rows.append((tr("Architecture"), f"{arch.model_type} ({arch.family})" + (", MoE" if arch.is_moe else "")))
        rows.append((tr("Layers"), str(arch.n_layers)))
        rows.append((tr("Attention"), localize(arch.attention_summary) if arch.attention_summary else "–"))
        rows.append((tr("Hidden size"), f"{arch.hidden:,}"))
        rows.append((tr("Context length"), f"{arch.max_position:,}" if arch.max_position else "–"))
        rows.append((tr("Parameters"), count_text(facts.stored_total or facts.counts.checkpoint)))
        rows.append((tr("Checkpoint dtype"), arch.dtype))
    elif result is not None:
        if result.model_type:
            rows.append((tr("Architecture"), result.model_type))
        if result.params:
            rows.append((tr("Parameters"), count_text(result.params)))
        if result.downloads is not None:
            rows.append((tr("Downloads"), f"{result.downloads:,}"))
    entry = catalog.find(model_id) if catalog is not None and model_id else None
    if entry is not None:
        rows.append((tr("License"), entry.license or "–"))
        rows.append((tr("Gated"), tr("yes") if entry.gated else tr("no")))
    elif result is not None and result.gated:
        rows.append((tr("Gated"), tr("yes")))
    if result is not None and result.detail:
        rows.append((tr("Source"), localize(SOURCE_DETAIL(source=source_word(result.source), detail=result.detail))))
    body = "".join(
        f"<tr><td style='color:#5f6b7a; padding-right:8px'>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>"
        for k, v in rows
    )
    note = "" if facts is not None else f"<p><i>{html.escape(tr('Choose it to read its config.'))}</i></p>"
    return f"<p><b>{html.escape(model_id)}</b></p><table>{body}</table>{note}"


class ModelBrowser(QFrame):
    """Signals: ``model_chosen(str)`` when the user picks a result (click, Enter, or typing an id + Enter)."""

    model_chosen = Signal(str)
    #: (busy, text) for the status bar
    status = Signal(bool, str)

    def __init__(
        self,
        catalog: Catalog,
        local_search: LocalSearch,
        hub_search: HubSearch | None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("browserPanel")
        self._catalog = catalog
        self._local = local_search
        self._hub = hub_search
        self._local_rows: list[SearchResult] = []
        self._facts: ModelFacts | None = None
        self.last_hub: HubAnswer | None = None
        self.query = ""

        title = QLabel(tr("Models"))
        title.setObjectName("sectionTitle")
        self.search_box = QLineEdit(self)
        self.search_box.setPlaceholderText(tr("Search models (catalog, HF cache, Hub)…"))
        self.search_box.setClearButtonEnabled(True)
        self.search_box.setAccessibleName(tr("Search models"))
        self.search_box.setToolTip(
            tr("Words of a model name or a repo id (owner/name). Enter picks the first result or the id typed.")
        )
        self.hub_note = QLabel("")
        self.hub_note.setObjectName("caption")
        self.hub_note.setWordWrap(True)

        self.model = SearchResultModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.setAccessibleName(tr("Search results"))
        self.table.setTabKeyNavigation(False)  # Tab moves on to the next field; the arrows move in the table
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(21)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideLeft)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in (1, 2, 3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setMinimumSectionSize(36)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self.table.activated.connect(self._on_activated)
        self.table.clicked.connect(self._on_activated)

        self.details = QLabel(self)
        self.details.setObjectName("details")
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setAccessibleName(tr("Model details"))
        self.details.setMinimumHeight(150)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 10, 10)
        layout.setSpacing(6)
        layout.addWidget(title)
        layout.addWidget(self.search_box)
        layout.addWidget(self.table, 3)
        layout.addWidget(self.hub_note)
        layout.addWidget(self.details, 2)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.search_now)
        self.search_box.textChanged.connect(self._on_text)
        self.search_box.returnPressed.connect(self._on_return)
        self.hub_runner = TaskRunner("hub-search", self)
        self.hub_runner.finished.connect(self._on_hub)
        self.hub_runner.failed.connect(self._on_hub_failed)
        self.hub_runner.busy_changed.connect(self._on_busy)
        self.search_now()

    # ---------------------------------------------------------------- searching
    def _on_text(self, _text: str) -> None:
        self._debounce.start()

    def search_now(self) -> None:
        """Search for what the box holds: local results now, the Hub's on a worker."""
        self._debounce.stop()
        query = self.search_box.text().strip()
        self.query = query
        self._local_rows = self._local(query)
        self._show(self._local_rows)
        if self._hub is not None and query:
            hub = self._hub
            self.hub_runner.submit(lambda cancel: hub(query, cancel), label=query)
        else:
            self.hub_runner.cancel()
            self.hub_note.setText("")

    def _show(self, rows: list[SearchResult]) -> None:
        current = self.current_id()
        self.model.set_rows(rows)
        # the downloads column only when some result has them (the Hub's)
        self.table.setColumnHidden(SearchResultModel.DOWNLOADS, not any(r.downloads is not None for r in rows))
        if current:
            for i, r in enumerate(rows):
                if r.id == current:
                    self.table.selectRow(i)
                    break

    def _on_hub(self, answer: HubAnswer) -> None:
        self.last_hub = answer
        self._show(merge(self.query, self._local_rows, answer.results, limit=40))
        self.hub_note.setText(localize(answer.note))

    def _on_hub_failed(self, error: object) -> None:
        said = describe_error(error) if isinstance(error, BaseException) else str(error)
        self.hub_note.setText(tr("Hub search failed") + ": " + localize(said))

    def _on_busy(self, busy: bool) -> None:
        if busy:
            self.status.emit(True, tr("Searching the Hub for") + f" “{self.hub_runner.label}”…")
        else:
            n = self.model.rowCount()
            self.status.emit(False, f"{n} " + tr("models found"))

    def shutdown(self) -> None:
        self._debounce.stop()
        self.hub_runner.cancel()

    # ---------------------------------------------------------------- choosing
    def current_id(self) -> str | None:
        idx = self.table.currentIndex()
        r = self.model.result(idx.row()) if idx.isValid() else None
        return r.id if r else None

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        r = self.model.result(current.row())
        facts = self._facts if self._facts is not None and r is not None and self._facts.model_id == r.id else None
        if facts is None and r is not None and r.source == "catalog":
            try:
                facts = self._catalog.facts(r.id)
            except (ValueError, LookupError):
                facts = None
        self.details.setText(details_html(r, facts, self._catalog))

    def _on_activated(self, index: QModelIndex) -> None:
        r = self.model.result(index.row())
        if r is not None:
            self.model_chosen.emit(r.id)

    def _on_return(self) -> None:
        text = self.search_box.text().strip()
        if self._debounce.isActive():
            self.search_now()
        if self.model.rowCount() and (not text or "/" not in text or self.model.result(0).id == text):  # type: ignore[union-attr]
            self.table.selectRow(0)
            self._on_activated(self.model.index(0, 0))
        elif text:
            self.model_chosen.emit(text)

    def show_facts(self, facts: ModelFacts | None, model_id: str) -> None:
        """The model the window estimates now: its details (from its config) in the pane."""
        self._facts = facts
        r = next((x for x in self.model.rows if x.id == model_id), None)
        if r is None:
            r = SearchResult(id=model_id, source="file" if facts is None else "catalog", sources=())
        self.details.setText(details_html(r, facts, self._catalog))
