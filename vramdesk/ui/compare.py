"""The library of saved configurations and the side-by-side comparison, in one window.

Left: the saved configurations (:class:`vramdesk.storage.library.ScenarioLibrary`) with open, rename,
duplicate, delete (to the library's trash), tags, import and export. Tick 2–6 of them (and, optionally,
the window's current work) to compare: the verdict per GPU and the totals first, then each component at the
peak, then the inputs grouped (Model, Workload, Training, Hardware, Engine) with differences highlighted ("Only
differences", on at first, hides the rest), and a stacked bar per plan. The plans' columns can be dragged into
another order or removed (right-click a plan's name); the chart and every export follow. The view follows
changes: the library folder is watched and the current work updates with every estimate of the main window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QFileSystemWatcher, QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.scenario import Scenario
from vramdesk.report.comparison import (
    CompareItem,
    Comparison,
    build_comparison,
    comparison_csv,
    comparison_html,
    comparison_markdown,
    comparison_tsv,
)
from vramdesk.safety import check_output
from vramdesk.storage.library import Entry, LibraryError, ScenarioLibrary
from vramdesk.storage.scenarios import ScenarioFileError

from .compare_chart import CompareChart
from .compare_export import compare_item
from .compare_table import CompareTable
from .core_text import localize
from .i18n import tr
from .presenter import describe_error, unit_name
from .widgets import Legend

MIN_ITEMS = 2
MAX_ITEMS = 6
CURRENT_ID = "::current"

Evaluator = Callable[[Scenario], CompareItem]
#: what an export refused because it would replace a library file says to do
_OTHER = "choose another file"


class LibraryWindow(QWidget):
    """Saved configurations on the left, their comparison on the right.

    Signals: ``open_requested(object)`` with a Scenario the main window should show.
    """

    open_requested = Signal(object)
    #: an earlier version was restored into an entry (the Entry as it is now)
    entry_restored = Signal(object)

    def __init__(
        self,
        library: ScenarioLibrary,
        parent: QWidget | None = None,
        *,
        current: Callable[[], Scenario | None] | None = None,
        evaluate: Callable[[str, Scenario], CompareItem] = compare_item,
    ) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle(tr("Saved configurations"))
        self.library = library
        self._current = current
        self._evaluate = evaluate
        self.entries: list[Entry] = []
        self.items: list[CompareItem] = []
        self.comparison: Comparison | None = None
        #: the key (entry id or CURRENT_ID) of each column of the comparison
        self.keys: list[str] = []
        #: the order the user dragged the columns into (keys; plans not in it follow in the list's order)
        self.order: list[str] = []
        #: key -> (label, scenario, its column): what is estimated already
        self._estimated: dict[str, tuple[str, Scenario, CompareItem]] = {}
        self.history_dialog: Any = None

        self.list = QListWidget(self)
        self.list.setAccessibleName(tr("Saved configurations"))
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.itemChanged.connect(lambda _item: self._schedule())
        self.list.itemDoubleClicked.connect(lambda _item: self.open_selected())
        self.include_current = QCheckBox(tr("Include the current work"), self)
        self.include_current.setChecked(current is not None)
        self.include_current.setEnabled(current is not None)
        self.include_current.toggled.connect(lambda _on: self._schedule())
        self.report_label = QLabel("", self)
        self.report_label.setWordWrap(True)
        self.report_label.setObjectName("warnings")
        self.report_label.setVisible(False)

        buttons = QVBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for key, text, slot in (
            ("open", tr("Open"), self.open_selected),
            ("rename", tr("Rename…"), self.rename_selected),
            ("duplicate", tr("Duplicate"), self.duplicate_selected),
            ("tags", tr("Tags…"), self.tag_selected),
            ("history", tr("History…"), self.show_history),
            ("delete", tr("Delete"), self.delete_selected),
            ("import", tr("Import…"), self.import_dialog),
            ("export", tr("Export file…"), self.export_selected),
        ):
            b = QPushButton(text, self)
            b.clicked.connect(lambda _c=False, slot=slot: slot())
            buttons.addWidget(b)
            self.buttons[key] = b
        buttons.addStretch(1)
        left = QWidget(self)
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        top_row = QHBoxLayout()
        top_row.addWidget(self.list, 1)
        top_row.addLayout(buttons)
        ll.addWidget(QLabel(tr("Tick 2 to 6 configurations to compare them"), left))
        ll.addLayout(top_row, 1)
        ll.addWidget(self.include_current)
        ll.addWidget(self.report_label)

        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        self.table = CompareTable(self)
        self.table.setAccessibleName(tr("Comparison"))
        self.table.horizontalHeader().sectionMoved.connect(lambda _logical, _old, _new: self._columns_moved())
        self.table.horizontalHeader().customContextMenuRequested.connect(self._header_menu_at)
        self.only_differences = QCheckBox(tr("Only differences"), self)
        self.only_differences.setToolTip(tr("Hide the inputs and components on which every plan agrees"))
        self.only_differences.setChecked(True)
        self.only_differences.toggled.connect(self.table.set_only_differences)
        self.chart = CompareChart(self)
        self.chart.setAccessibleName(tr("Comparison chart"))
        self.legend = Legend(self)
        copy_md = QPushButton(tr("Copy as Markdown"), self)
        copy_md.clicked.connect(lambda _c=False: self.copy_table("md"))
        copy_tsv = QPushButton(tr("Copy as TSV"), self)
        copy_tsv.clicked.connect(lambda _c=False: self.copy_table("tsv"))
        save = QPushButton(tr("Export comparison…"), self)
        save.clicked.connect(lambda _c=False: self.export_dialog())
        actions = QHBoxLayout()
        actions.addWidget(self.status, 1)
        actions.addWidget(self.only_differences)
        for b in (copy_md, copy_tsv, save):
            actions.addWidget(b)
        right = QWidget(self)
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        inner = QSplitter(Qt.Orientation.Vertical, right)
        inner.addWidget(self.table)
        chart_box = QWidget(inner)
        cl = QVBoxLayout(chart_box)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(self.chart, 1)
        cl.addWidget(self.legend)
        inner.addWidget(chart_box)
        inner.setSizes([380, 260])
        rl.addLayout(actions)
        rl.addWidget(inner, 1)

        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([360, 900])
        layout = QVBoxLayout(self)
        layout.addWidget(split)
        self.resize(1280, 760)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.update_comparison)
        self._watcher = QFileSystemWatcher(self)
        self._watcher.directoryChanged.connect(lambda _p: self.reload())
        self.reload()

    # ------------------------------------------------------------------ the list
    def checked_ids(self) -> list[str]:
        out = []
        for row in range(self.list.count()):
            item = self.list.item(row)
            if item.checkState() == Qt.CheckState.Checked:
                out.append(str(item.data(Qt.ItemDataRole.UserRole)))
        return out

    def set_checked(self, ids: Sequence[str]) -> None:
        wanted = set(ids)
        self.list.blockSignals(True)
        for row in range(self.list.count()):
            item = self.list.item(row)
            on = item.data(Qt.ItemDataRole.UserRole) in wanted
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        self.list.blockSignals(False)
        self._schedule()

    def reload(self) -> None:
        """Read the library again (keeping the ticks), report files moved aside, and update the comparison."""
        checked = set(self.checked_ids())
        scan = self.library.scan()
        self.entries = scan.entries
        self.list.blockSignals(True)
        self.list.clear()
        for e in self.entries:
            text = e.name
            if e.tags:
                text += "  [" + ", ".join(e.tags) + "]"
            if e.read_only:
                text += "  " + tr("(read-only)")
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, e.id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if e.id in checked else Qt.CheckState.Unchecked)
            item.setToolTip(f"{e.scenario.model.id}\n{e.path}" + (f"\n{localize(e.note)}" if e.note else ""))
            self.list.addItem(item)
        self.list.blockSignals(False)
        if scan.quarantined:
            moved = tr("A file that could not be read was moved aside (not deleted):")
            left = tr("A file that could not be read was left where it is:")
            lines = [
                f"{moved} {q.moved_to} — {localize(q.reason)}"
                if q.moved_to is not None
                else f"{left} {q.original} — {localize(q.reason)}"
                for q in scan.quarantined
            ]
            self.report_label.setText("\n".join(lines))
            self.report_label.setVisible(True)
        if self.library.root.is_dir() and str(self.library.root) not in self._watcher.directories():
            self._watcher.addPath(str(self.library.root))
        self._schedule()

    def selected(self) -> Entry | None:
        item = self.list.currentItem()
        if item is None:
            return None
        entry_id = item.data(Qt.ItemDataRole.UserRole)
        return next((e for e in self.entries if e.id == entry_id), None)

    def select(self, entry_id: str) -> None:
        for row in range(self.list.count()):
            if self.list.item(row).data(Qt.ItemDataRole.UserRole) == entry_id:
                self.list.setCurrentRow(row)
                return

    def _act(self, fn: Callable[[Entry], object]) -> None:
        entry = self.selected()
        if entry is None:
            self.status.setText(tr("Select a configuration first"))
            return
        try:
            fn(entry)
        except (LibraryError, ScenarioFileError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
        self.reload()

    def open_selected(self) -> None:
        entry = self.selected()
        if entry is not None:
            self.open_requested.emit(entry.scenario)

    def rename_selected(self, name: str | None = None) -> None:
        def go(e: Entry) -> None:
            new = name
            if new is None:
                new, ok = QInputDialog.getText(self, tr("Rename"), tr("New name:"), text=e.name)
                if not ok:
                    return
            self.select(self.library.rename(e.id, new).id)

        self._act(go)

    def show_history(self) -> Any:
        """The selected configuration's earlier versions, to restore one (None when nothing is selected)."""
        from .versions import VersionsDialog

        entry = self.selected()
        if entry is None:
            self.status.setText(tr("Select a configuration first"))
            return None
        dialog = VersionsDialog(self.library, entry, self)
        dialog.restored.connect(self._on_restored)
        self.history_dialog = dialog
        dialog.show()
        return dialog

    def _on_restored(self, entry: Entry) -> None:
        self.reload()
        self.select(entry.id)
        self.entry_restored.emit(entry)

    def duplicate_selected(self) -> None:
        self._act(lambda e: self.library.duplicate(e.id))

    def tag_selected(self, tags: Sequence[str] | None = None) -> None:
        def go(e: Entry) -> None:
            new = list(tags) if tags is not None else None
            if new is None:
                text, ok = QInputDialog.getText(
                    self, tr("Tags"), tr("Tags, separated by commas:"), text=", ".join(e.tags)
                )
                if not ok:
                    return
                new = [t for t in text.split(",") if t.strip()]
            self.library.set_tags(e.id, new)

        self._act(go)

    def delete_selected(self, confirm: bool = True) -> None:
        def go(e: Entry) -> None:
            if confirm:
                answer = QMessageBox.question(
                    self, "vramdesk", tr("Move this configuration to the library's trash folder?") + f"\n{e.name}"
                )
                if answer != QMessageBox.StandardButton.Yes:
                    return
            self.library.delete(e.id)

        self._act(go)

    def import_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, tr("Import configurations"), "", tr("vramdesk files (*.vramdesk.json *.json)")
        )
        for p in paths:
            try:
                self.library.import_file(Path(p))
            except (ScenarioFileError, OSError) as err:
                QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
        self.reload()

    def export_selected(self, target: Path | None = None) -> None:
        def go(e: Entry) -> None:
            path = target
            if path is None:
                name, _ = QFileDialog.getSaveFileName(
                    self, tr("Export configuration"), e.id, tr("vramdesk files (*.vramdesk.json)")
                )
                if not name:
                    return
                path = Path(name)
            # a copy written over a library file would replace that configuration (or this one)
            check_output(path, [x.path for x in self.entries], what="a configuration in the library", advice=_OTHER)
            self.library.export_file(e.id, path)

        self._act(go)

    # ------------------------------------------------------------------ the comparison
    def _schedule(self) -> None:
        self._timer.start()

    def current_changed(self) -> None:
        """The main window re-estimated: the current-work column follows."""
        if self.include_current.isChecked():
            self._schedule()

    def chosen(self) -> list[tuple[str, str, Scenario]]:
        """(key, name, scenario) of each plan to compare, in the order the user set."""
        out: list[tuple[str, str, Scenario]] = []
        if self._current is not None and self.include_current.isChecked():
            sc = self._current()
            if sc is not None:
                out.append((CURRENT_ID, tr("Current work"), sc))
        by_id = {e.id: e for e in self.entries}
        out += [(i, by_id[i].name, by_id[i].scenario) for i in self.checked_ids() if i in by_id]
        rank = {key: n for n, key in enumerate(self.order)}
        return sorted(out, key=lambda c: rank.get(c[0], len(rank)))  # (stable: the rest in the list's order)

    def _item(self, key: str, label: str, scenario: Scenario) -> CompareItem:
        """The column of a plan, estimated again only when it changed."""
        known = self._estimated.get(key)
        if known is not None and known[0] == label and known[1] == scenario:
            return known[2]
        item = self._evaluate(label, scenario)
        self._estimated[key] = (label, scenario, item)
        return item

    def update_comparison(self) -> None:
        self._timer.stop()
        chosen = self.chosen()
        if len(chosen) < MIN_ITEMS:
            self.status.setText(tr("Tick 2 to 6 configurations to compare them"))
            self.items, self.keys = [], []
            self.comparison = None
            self.table.show_comparison(None)
            self.chart.show_items([])
            self.legend.set_entries([])
            return
        if len(chosen) > MAX_ITEMS:
            self.status.setText(tr("At most 6 configurations: the first 6 are compared"))
            chosen = chosen[:MAX_ITEMS]
        else:
            self.status.setText("")
        labels = _unique([label for _, label, _ in chosen])
        self.keys = [key for key, _, _ in chosen]
        self.items = [self._item(key, label, sc) for label, (key, _, sc) in zip(labels, chosen, strict=True)]
        self._estimated = {k: v for k, v in self._estimated.items() if k in self.keys}
        self.comparison = build_comparison(self.items)
        self.table.show_comparison(self.comparison)
        self.chart.show_items(self.items)
        self.legend.set_entries(self.chart.legend_entries())

    # ------------------------------------------------------------------ the columns
    def _columns_moved(self) -> None:
        """The user dragged a plan's column: the comparison, the chart and the exports take its order."""
        order = [self.keys[c] for c in self.table.column_order() if 0 <= c < len(self.keys)]
        if order != self.keys:
            self.order = order
            self._schedule()

    def remove_column(self, column: int) -> None:
        """Take plan ``column`` (0 = the first plan, as the comparison has them) out of the comparison: its tick
        goes (or "Include the current work")."""
        if not 0 <= column < len(self.keys):
            return
        key = self.keys[column]
        if key == CURRENT_ID:
            self.include_current.setChecked(False)
            return
        self.set_checked([i for i in self.checked_ids() if i != key])

    def header_menu(self, column: int) -> QMenu:
        """The menu of plan ``column``'s header."""
        menu = QMenu(self)
        name = self.comparison.labels[column] if self.comparison and column < len(self.comparison.labels) else ""
        action = menu.addAction(tr("Remove from comparison") + (f": {name}" if name else ""))
        action.triggered.connect(lambda _c=False, column=column: self.remove_column(column))
        return menu

    def _header_menu_at(self, pos: QPoint) -> None:
        column = self.table.horizontalHeader().logicalIndexAt(pos) - 1
        if 0 <= column < len(self.keys):
            self.header_menu(column).exec(self.table.horizontalHeader().mapToGlobal(pos))

    # ------------------------------------------------------------------ copies and exports
    def highlighted_cells(self) -> list[tuple[int, int]]:
        """(row, column) of the cells shown highlighted as differences (for tests)."""
        out = []
        for r in range(self.table.rowCount()):
            for c in range(1, self.table.columnCount()):
                item = self.table.item(r, c)
                if item is not None and item.background().style() != Qt.BrushStyle.NoBrush:
                    out.append((r, c))
        return out

    def table_text(self, fmt: str) -> str:
        """The comparison as the window shows it (columns in their order, the unit, only the differences when
        that is on) in ``fmt``: md, tsv, csv or html."""
        if self.comparison is None:
            return ""
        cmp, unit, diff = self.comparison, unit_name(), self.only_differences.isChecked()
        if fmt == "md":
            return comparison_markdown(cmp, unit, diff)
        if fmt == "tsv":
            return comparison_tsv(cmp, unit, diff)  # quoted cells, no formulas a spreadsheet would run
        if fmt == "csv":
            return comparison_csv(cmp, diff)
        if fmt == "html":
            return comparison_html(cmp, unit=unit, only_differences=diff)
        raise ValueError(f"unknown format {fmt!r}")

    def copy_table(self, fmt: str) -> None:
        from .export import copy_text

        text = self.table_text(fmt)
        if text:
            copy_text(text, markdown=fmt == "md")
            self.status.setText(tr("Copied"))

    def export_dialog(self) -> None:
        if self.comparison is None:
            return
        formats = tr("PNG, SVG, PDF, HTML, Markdown, CSV or JSON (*.png *.svg *.pdf *.html *.md *.csv *.json)")
        name, _ = QFileDialog.getSaveFileName(self, tr("Export comparison"), "comparison.png", formats)
        if not name:
            return
        try:
            self.export(Path(name))
        except (ValueError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))

    def export(self, path: Path) -> Path:
        """Write the comparison as shown to ``path`` (its suffix says the format: png, svg, pdf, html, md, csv or
        json); never over a library configuration, the files the comparison was made from."""
        from .compare_export import export_comparison

        if self.comparison is None:
            raise ValueError("nothing to export: tick 2 to 6 configurations to compare them")
        return export_comparison(
            self.comparison,
            self.items,
            path,
            unit=unit_name(),
            only_differences=self.only_differences.isChecked(),
            inputs=[e.path for e in self.entries],
            what="a configuration in the library",
            advice=_OTHER,
        )


def _unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        n = seen.get(label, 0) + 1
        seen[label] = n
        out.append(label if n == 1 else f"{label} ({n})")
    return out
