"""The model browser: a search box (debounced), a results table with source and fit badges, and a details pane.

Local results (catalog, HF cache, models looked at before) come at once; the Hub's answer comes from a
worker (:class:`TaskRunner`: a newer search cancels the older one). Both search functions are injected,
so tests run a slow fake Hub without the network.

The Fit column says whether each listed model fits the window's plan (:meth:`ModelBrowser.set_plan`: its
workload, engine, precision and GPUs) and the longest input or sequence that fits; the badges
(:mod:`vramdesk.ui.fit_badges`) are computed on another worker a few models at a time, rows filling in as they
come, and kept per plan. The table sorts by any column (Fit: what fits first) and a filter shows only what fits.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, QSortFilterProxyModel, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec, hardware_text
from vramdesk.core.messages import join
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import Catalog
from vramdesk.services.search import FOUND_IN, SOURCE_DETAIL, SOURCE_WORDS, HubAnswer, SearchResult, merge

from . import theme
from .core_text import localize
from .fit_badges import (
    CHUNK,
    FILTERS,
    Badge,
    BadgeCache,
    FitPlan,
    OfflineFacts,
    accepts,
    badge_chunk,
    badge_colors,
    badge_text,
    badge_tooltip,
    header_tooltip,
    sort_key,
    unknown_badge,
    widest_badges,
)
from .i18n import tr
from .presenter import count_text, describe_error
from .widgets import RowsTableModel
from .workers import TaskRunner

_Index = QModelIndex | QPersistentModelIndex

DEBOUNCE_MS = 250
#: milliseconds of quiet after a change of the plan before the badges are computed again
PLAN_DEBOUNCE_MS = 300
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
    """Search results: model id, fit badge, source badge, parameters, downloads."""

    HEADERS = ("Model", "Fit", "Source", "Params", "Downloads")
    MODEL, FIT, SOURCE, PARAMS, DOWNLOADS = range(5)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: list[SearchResult] = []
        #: the current plan's badges by model id (the browser's cache fills it)
        self._badges: dict[str, Badge] = {}
        self._no_gpu = False
        self._length_field = "input_len"

    @property
    def rows(self) -> list[SearchResult]:
        return list(self._rows)

    def set_rows(self, rows: list[SearchResult]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def result(self, row: int) -> SearchResult | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def badge(self, row: int) -> Badge | None:
        r = self.result(row)
        return self._badges.get(r.id) if r is not None else None

    def set_badges(self, badges: dict[str, Badge], *, no_gpu: bool, length_field: str) -> None:
        """Show the badges of another plan (``badges`` is that plan's live set: :meth:`badges_changed` repaints)."""
        self._badges = badges
        self._no_gpu = no_gpu
        self._length_field = length_field
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, self.FIT, self.FIT)
        if self._rows:
            self.dataChanged.emit(self.index(0, self.FIT), self.index(len(self._rows) - 1, self.FIT))

    def badges_changed(self, model_ids: set[str]) -> None:
        """Repaint the badges of ``model_ids``: one signal for the rows between the first and the last of them (each
        signal has the table measure every row again for its column widths)."""
        rows = [i for i, r in enumerate(self._rows) if r.id in model_ids]
        if rows:
            self.dataChanged.emit(self.index(min(rows), self.FIT), self.index(max(rows), self.FIT))

    def sort_value(self, row: int, col: int) -> tuple[int | str, ...]:
        """What column ``col`` sorts row ``row`` by (Fit: what fits first, the longest length first)."""
        r = self._rows[row]
        if col == self.FIT:
            return sort_key(self._badges.get(r.id))
        if col == self.SOURCE:
            return (tr(r.source), r.id.lower())
        if col == self.PARAMS:
            return (r.params or 0,)
        if col == self.DOWNLOADS:
            return (r.downloads or 0,)
        return (r.id.lower(),)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and section == self.FIT and role == Qt.ItemDataRole.ToolTipRole:
            return header_tooltip(self._no_gpu, self._length_field)
        return super().headerData(section, orientation, role)

    def _fit_data(self, r: SearchResult, role: int) -> Any:
        badge = self._badges.get(r.id)
        if role == Qt.ItemDataRole.DisplayRole:
            return badge_text(badge)
        if role == Qt.ItemDataRole.ToolTipRole:
            return badge_tooltip(badge)
        if role in (Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.BackgroundRole) and badge is not None:
            if badge.verdict is None:
                return QColor(theme.current().muted) if role == Qt.ItemDataRole.ForegroundRole else None
            text, back = badge_colors(badge.verdict, theme.current())
            return QColor(text) if role == Qt.ItemDataRole.ForegroundRole else QBrush(QColor(back))
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.UserRole:
            return badge.state if badge is not None else None
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        r = self._rows[index.row()]
        col = index.column()
        if col == self.FIT:
            return self._fit_data(r, role)
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


class FitFilterModel(QSortFilterProxyModel):
    """The results as the table shows them: sorted by the column's :meth:`SearchResultModel.sort_value` (none:
    the search's ranking) and filtered by fit (a key of :data:`~vramdesk.ui.fit_badges.FILTERS`)."""

    def __init__(self, source: SearchResultModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._results = source
        self.setSourceModel(source)
        self.setDynamicSortFilter(True)  # badges that come in re-sort and re-filter their rows
        self.fit_filter = "all"

    def set_fit_filter(self, chosen: str) -> None:
        chosen = chosen if chosen in FILTERS else "all"
        if chosen == self.fit_filter:
            return
        if hasattr(self, "beginFilterChange"):  # Qt 6.9 and later (invalidateRowsFilter is deprecated there)
            self.beginFilterChange()
            self.fit_filter = chosen
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:  # pragma: no cover - Qt 6.7 / 6.8
            self.fit_filter = chosen
            self.invalidateRowsFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: _Index) -> bool:
        return accepts(self._results.badge(source_row), self.fit_filter)

    def lessThan(self, left: _Index, right: _Index) -> bool:
        col = left.column()
        return self._results.sort_value(left.row(), col) < self._results.sort_value(right.row(), col)


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
        *,
        offline_resolve: Callable[[str], ModelFacts] | None = None,
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
        #: the plan the badges are for (None until the window gives one), and one waiting out the debounce
        self.plan: FitPlan | None = None
        self._next_plan: FitPlan | None = None
        self.badges = BadgeCache()
        self._facts_for = OfflineFacts(catalog, offline_resolve)
        self._chunk: list[str] = []

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
        self.proxy = FitFilterModel(self.model, self)
        self._build_table()
        fit_row = self._build_fit_row()

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
        layout.addLayout(fit_row)
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
        self._plan_timer = QTimer(self)
        self._plan_timer.setSingleShot(True)
        self._plan_timer.setInterval(PLAN_DEBOUNCE_MS)
        self._plan_timer.timeout.connect(self.apply_plan)
        self.fit_runner = TaskRunner("fit-badges", self)
        self.fit_runner.finished.connect(self._on_badges)
        self.fit_runner.failed.connect(self._on_badges_failed)
        self.search_now()

    def _build_table(self) -> None:
        self.table = QTableView(self)
        self.table.setModel(self.proxy)
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
        header.setSectionResizeMode(SearchResultModel.MODEL, QHeaderView.ResizeMode.Stretch)
        # sized to their contents when the results change (_show), not on every badge that comes in: a
        # ResizeToContents column has the table measure every row again for each change of any cell
        for col in range(1, len(SearchResultModel.HEADERS)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Fixed)
        header.setMinimumSectionSize(36)
        # unsorted (the search's ranking) until a header is clicked; a third click goes back to it
        header.setSortIndicatorClearable(True)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSortingEnabled(True)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self.table.activated.connect(self._on_activated)
        self.table.clicked.connect(self._on_activated)

    def _build_fit_row(self) -> QHBoxLayout:
        """The filter by fit (All / Fits / Fits or tight) and a caption: what the badges are for, and their count."""
        self.fit_filter = QComboBox(self)
        for text, key in (
            (tr("All models"), "all"),
            (tr("Only what fits"), "fits"),
            (tr("Fits or tight"), "fits or tight"),
        ):
            self.fit_filter.addItem(text, key)
        self.fit_filter.setAccessibleName(tr("Show models by fit"))
        self.fit_filter.setToolTip(tr("Show every result, or only those that fit the GPU at the form's workload"))
        self.fit_filter.currentIndexChanged.connect(self._on_filter)
        self.fit_caption = QLabel("")
        self.fit_caption.setObjectName("caption")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.fit_filter)
        row.addWidget(self.fit_caption, 1)
        return row

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
        self._fit_columns()
        if current:
            for i, r in enumerate(rows):
                if r.id == current:
                    shown = self.proxy.mapFromSource(self.model.index(i, 0))
                    if shown.isValid():
                        self.table.selectRow(shown.row())
                    break
        self._badge_more()

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
        self._plan_timer.stop()
        self.fit_runner.cancel()

    def _fit_columns(self) -> None:
        """Size the columns to what they hold; the Fit column to the longest badge it can show (so that badges
        coming in change no width)."""
        header = self.table.horizontalHeader()
        bold = header.font()
        bold.setBold(True)
        titles = QFontMetrics(bold)
        for col in (SearchResultModel.SOURCE, SearchResultModel.PARAMS, SearchResultModel.DOWNLOADS):
            # the title's own width, not the room Qt keeps beside every title for a sort arrow: the list is narrow
            title = titles.horizontalAdvance(self.model.header_text(col)) + 14
            self.table.setColumnWidth(col, max(self.table.sizeHintForColumn(col), title))
        no_gpu = self.plan is not None and self.plan.gpu is None
        widest = max(self.table.fontMetrics().horizontalAdvance(t) for t in widest_badges(no_gpu))
        arrow = titles.horizontalAdvance(self.model.header_text(SearchResultModel.FIT)) + 34  # the title, its arrow
        self.table.setColumnWidth(SearchResultModel.FIT, max(widest + 16, arrow))

    # ---------------------------------------------------------------- fit badges
    def set_plan(self, scenario: Scenario | None, gpu: GpuSpec | None, headroom_fraction: float | None = None) -> None:
        """The window's plan changed (or was estimated again): badge the list for ``scenario`` on ``gpu`` (the
        GPU its verdict uses: detected, with its free memory, or from the catalog; None: no GPU). The first plan
        is applied at once, later ones after :data:`PLAN_DEBOUNCE_MS` of quiet; the same plan again costs
        nothing. ``scenario`` None (the form has a problem): the badges stay."""
        if scenario is None:
            return
        plan = FitPlan(scenario, gpu, headroom_fraction)
        if self.plan is not None and plan.key == self.plan.key:
            self._next_plan = None
            self._plan_timer.stop()
            return
        self._next_plan = plan
        if self.plan is None:
            self.apply_plan()
        else:
            self._plan_timer.start()

    def apply_plan(self) -> None:
        """Badge the list for the plan waiting out the debounce now (a computation for an older one stops)."""
        self._plan_timer.stop()
        plan, self._next_plan = self._next_plan, None
        if plan is None:
            return
        self.plan = plan
        self.fit_runner.cancel()
        no_gpu = plan.gpu is None
        self.model.set_badges(self.badges.plan(plan.key), no_gpu=no_gpu, length_field=plan.length_field)
        self.fit_filter.setEnabled(not no_gpu)
        self.proxy.set_fit_filter("all" if no_gpu else str(self.fit_filter.currentData()))
        self._fit_columns()
        self._badge_more()

    @property
    def badging(self) -> bool:
        """Badges are being computed, or a plan waits out the debounce."""
        return self.fit_runner.busy or self._plan_timer.isActive()

    def _badge_more(self) -> None:
        """Compute the next few missing badges of the listed models (one job at a time; its answer asks for more)."""
        plan = self.plan
        if plan is None or self.fit_runner.busy:
            return
        rows = self.model.rows
        wanted = set(self.badges.missing(plan.key, [r.id for r in rows])[:CHUNK])
        self._update_caption()
        if not wanted:
            return
        chunk = [(r.id, r.sources) for r in rows if r.id in wanted]
        self._chunk = [m for m, _ in chunk]
        facts_for, key = self._facts_for, plan.key
        self.fit_runner.submit(lambda cancel: (key, badge_chunk(plan, chunk, facts_for, cancel)))

    def _on_badges(self, answer: tuple[str, list[Badge]]) -> None:
        key, badges = answer
        self.badges.put(key, badges)
        if self.plan is not None and key == self.plan.key:
            self.model.badges_changed({b.model_id for b in badges})
        self._badge_more()

    def _on_badges_failed(self, error: object) -> None:
        """A bug in the badge job: its models say so (and the rest of the list is still badged)."""
        said = describe_error(error) if isinstance(error, BaseException) else str(error)
        if self.plan is not None:
            self._on_badges((self.plan.key, [unknown_badge(m, said) for m in self._chunk]))

    def _on_filter(self, _index: int) -> None:
        if self.plan is not None and self.plan.gpu is not None:
            self.proxy.set_fit_filter(str(self.fit_filter.currentData()))

    def sort_by_fit(self) -> None:
        """Sort the list by the Fit column: what fits first (the longest length first), then tight, then the rest."""
        self.table.sortByColumn(SearchResultModel.FIT, Qt.SortOrder.AscendingOrder)

    def _update_caption(self) -> None:
        """Under the search box: the GPUs the badges are for, or that there is none."""
        plan = self.plan
        if plan is None:
            self.fit_caption.setText("")
        elif plan.gpu is None:
            self.fit_caption.setText(tr("No GPU: memory needed"))
        else:
            hw = plan.scenario.hardware
            self.fit_caption.setText(
                tr("Fit on {gpus}").format(gpus=localize(hardware_text(plan.gpu.name, hw.gpu_count, hw.nodes)))
            )

    # ---------------------------------------------------------------- choosing
    def _source_row(self, index: QModelIndex | QPersistentModelIndex) -> int:
        """The results row of a table index (the table shows them sorted and filtered)."""
        if index.model() is self.proxy:
            return self.proxy.mapToSource(self.proxy.index(index.row(), index.column())).row()
        return index.row()

    def current_id(self) -> str | None:
        idx = self.table.currentIndex()
        r = self.model.result(self._source_row(idx)) if idx.isValid() else None
        return r.id if r else None

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        r = self.model.result(self._source_row(current)) if current.isValid() else None
        facts = self._facts if self._facts is not None and r is not None and self._facts.model_id == r.id else None
        if facts is None and r is not None and r.source == "catalog":
            try:
                facts = self._catalog.facts(r.id)
            except (ValueError, LookupError):
                facts = None
        self.details.setText(details_html(r, facts, self._catalog))

    def _on_activated(self, index: QModelIndex) -> None:
        r = self.model.result(self._source_row(index))
        if r is not None:
            self.model_chosen.emit(r.id)

    def _on_return(self) -> None:
        text = self.search_box.text().strip()
        if self._debounce.isActive():
            self.search_now()
        first = self.model.result(self._source_row(self.proxy.index(0, 0))) if self.proxy.rowCount() else None
        if first is not None and (not text or "/" not in text or first.id == text):
            self.table.selectRow(0)
            self.model_chosen.emit(first.id)
        elif text:
            self.model_chosen.emit(text)

    def show_facts(self, facts: ModelFacts | None, model_id: str) -> None:
        """The model the window estimates now: its details (from its config) in the pane, and its badge (a model
        read from the Hub is badged once the window has its facts)."""
        self._facts = facts
        r = next((x for x in self.model.rows if x.id == model_id), None)
        if r is None:
            r = SearchResult(id=model_id, source="file" if facts is None else "catalog", sources=())
        self.details.setText(details_html(r, facts, self._catalog))
        if facts is not None and self._catalog.find(model_id) is None and not self._facts_for.knows(model_id):
            self._facts_for.remember(model_id, facts)
            self.badges.forget(model_id)
            self.model.badges_changed({model_id})
            self._badge_more()
