"""The library of saved configurations and the side-by-side comparison, in one window.

Left: the saved configurations (:class:`vramdesk.storage.library.ScenarioLibrary`) with open, rename,
duplicate, delete (to the library's trash), tags, import and export. Tick 2–6 of them (and, optionally,
the window's current work) to compare: a table of inputs (differences highlighted), each component at the
peak, the totals at each level and the verdict per GPU, and grouped stacked bars. The view follows changes:
the library folder is watched and the current work updates with every estimate of the main window.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QFileSystemWatcher, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.options import by_path
from vramdesk.core.scenario import Scenario
from vramdesk.report.comparison import (
    SECTION_TITLES,
    CompareItem,
    CompareRow,
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

from . import theme
from .core_text import localize, localize_name
from .i18n import tr
from .presenter import describe_error, evaluate_scenario, unit_bytes, unit_name
from .widgets import Legend

MIN_ITEMS = 2
MAX_ITEMS = 6
CURRENT_ID = "::current"
#: row names of the comparison the window translates (inputs show their option's label, other fields their name)
ROW_NAMES = (
    "peak allocated",
    "peak reserved",
    "on the device (per GPU)",
    "host memory (per machine)",
    "peak phase",
    "GPU",
    "verdict",
    "decode tokens/s",
    "training tokens/s",
    "error",
)
#: sections whose cells are byte counts, shown in the window's unit (GiB or GB)
BYTE_SECTIONS = ("component", "total")

Evaluator = Callable[[Scenario], CompareItem]
#: what an export refused because it would replace a library file says to do
_OTHER = "choose another file"


def compare_item(label: str, scenario: Scenario) -> CompareItem:
    """Estimate ``scenario`` for a comparison column (an error column when it cannot be estimated)."""
    ev = evaluate_scenario(scenario)
    if ev.view is None:
        return CompareItem(label, scenario, error=ev.error or "cannot estimate")
    from .export import speed_of

    return CompareItem(label, scenario, ev.view.estimate, speed_of(ev.view, scenario))


class CompareChart(pg.PlotWidget):  # type: ignore[misc]
    """One stacked bar per configuration (components at the peak), the GPU's memory as a tick above each."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent, background=theme.current().background)
        item = self.getPlotItem()
        item.setMenuEnabled(False)
        item.hideButtons()
        item.setMouseEnabled(x=False, y=False)
        self.setLabel("left", unit_name())
        self.setMinimumHeight(200)
        #: component name -> GiB per column (what is drawn, in stacking order)
        self.stacks: dict[str, list[float]] = {}
        #: component name -> colour (the legend's entries)
        self.colors: dict[str, str] = {}
        self._items: list[pg.GraphicsObject] = []

    def show_items(self, items: Sequence[CompareItem]) -> None:
        for it in self._items:
            self.removeItem(it)
        self._items = []
        cats: dict[str, str] = {}
        for i in items:
            if i.est is not None:
                for c in i.est.components:
                    cats.setdefault(c.name, c.category)
        colors = theme.component_colors(list(cats.items()))
        self.colors = colors
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
        xs = list(range(len(items)))
        bottoms = [0.0] * len(items)
        for name, heights in self.stacks.items():
            bar = pg.BarGraphItem(
                x=xs, height=heights, y0=list(bottoms), width=0.6, brush=QColor(colors[name]), pen=pg.mkPen(None)
            )
            bar.setToolTip(localize_name(name))
            self.addItem(bar)
            self._items.append(bar)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        top = max(bottoms, default=1.0)
        for x, i in enumerate(items):
            est = i.est
            if est is None:
                continue
            verdict = est.fit.verdict if est.fit else None
            color = theme.VERDICT_COLORS.get(verdict, theme.VERDICT_COLORS[None])
            label = pg.TextItem(f"{est.device_bytes / unit:.2f}", color=color, anchor=(0.5, 1.0))
            label.setPos(x, bottoms[x])
            self.addItem(label)
            self._items.append(label)
            if est.fit is not None:
                mem = est.fit.memory_bytes / unit
                top = max(top, mem)
                line = pg.PlotDataItem(
                    [x - 0.38, x + 0.38],
                    [mem, mem],
                    pen=pg.mkPen(theme.ERROR_COLOR, width=2, style=Qt.PenStyle.DashLine),
                )
                self.addItem(line)
                self._items.append(line)
        self.getPlotItem().getAxis("bottom").setTicks([[(x, i.label[:24]) for x, i in enumerate(items)]])
        self.setRange(xRange=(-0.6, max(0, len(items) - 1) + 0.6), yRange=(0, top * 1.12 or 1), padding=0)


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
        self.table = QTableWidget(self)
        self.table.setAccessibleName(tr("Comparison"))
        self.table.setTabKeyNavigation(False)  # Tab moves on to the next field; the arrows move in the table
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
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

    def chosen(self) -> list[tuple[str, Scenario]]:
        out: list[tuple[str, Scenario]] = []
        if self._current is not None and self.include_current.isChecked():
            sc = self._current()
            if sc is not None:
                out.append((tr("Current work"), sc))
        by_id = {e.id: e for e in self.entries}
        out += [(by_id[i].name, by_id[i].scenario) for i in self.checked_ids() if i in by_id]
        return out

    def update_comparison(self) -> None:
        self._timer.stop()
        chosen = self.chosen()
        if len(chosen) < MIN_ITEMS:
            self.status.setText(tr("Tick 2 to 6 configurations to compare them"))
            self.items = []
            self.comparison = None
            self.table.clear()
            self.table.setRowCount(0)
            self.table.setColumnCount(0)
            self.chart.show_items([])
            self.legend.set_entries([])
            return
        if len(chosen) > MAX_ITEMS:
            self.status.setText(tr("At most 6 configurations: the first 6 are compared"))
            chosen = chosen[:MAX_ITEMS]
        else:
            self.status.setText("")
        labels = _unique([label for label, _ in chosen])
        self.items = [self._evaluate(label, sc) for label, (_, sc) in zip(labels, chosen, strict=True)]
        self.comparison = build_comparison(self.items)
        self._fill_table(self.comparison)
        self.chart.show_items(self.items)
        self.legend.set_entries([(localize_name(n), c) for n, c in self.chart.colors.items()])

    def _fill_table(self, cmp: Comparison) -> None:
        p = theme.current()
        diff = QBrush(QColor(theme.mix(theme.VERDICT_COLORS["tight"], p.background, 0.75)))
        section_bg = QBrush(QColor(theme.mix(p.text, p.background, 0.92)))
        rows: list[tuple[str, str | None, list[str], bool]] = []
        for section, title in SECTION_TITLES.items():
            part = cmp.section(section)
            if not part:
                continue
            rows.append((tr(title).replace("GiB", unit_name()), None, [], False))
            rows += [(_row_name(r.name, section), section, _cells(r), r.differs) for r in part]
        self.table.clear()
        self.table.setColumnCount(1 + len(cmp.labels))
        self.table.setHorizontalHeaderLabels(["", *cmp.labels])
        self.table.setRowCount(len(rows))
        for row, (name, kind, cells, differs) in enumerate(rows):
            head = QTableWidgetItem(name)
            if kind is None:
                font = head.font()
                font.setBold(True)
                head.setFont(font)
                head.setBackground(section_bg)
            self.table.setItem(row, 0, head)
            for col, text in enumerate(cells, 1):
                item = QTableWidgetItem(text)
                if kind in ("component", "total", "speed"):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if differs and kind in ("input", "verdict"):
                    item.setBackground(diff)
                if kind == "verdict" and text in theme.VERDICT_COLORS:
                    item.setForeground(QBrush(QColor(theme.VERDICT_COLORS[text])))
                    item.setText(localize_name(text))
                self.table.setItem(row, col, item)
        self.table.resizeColumnsToContents()

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
        if self.comparison is None:
            return ""
        if fmt == "md":
            return comparison_markdown(self.comparison)
        if fmt == "tsv":
            return comparison_tsv(self.comparison)  # quoted cells, no formulas a spreadsheet would run
        if fmt == "csv":
            return comparison_csv(self.comparison)
        if fmt == "html":
            from .export import image_data_uri, render_image

            return comparison_html(self.comparison, image_data_uri(render_image(self.chart)))
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
        name, _ = QFileDialog.getSaveFileName(
            self, tr("Export comparison"), "comparison.md", tr("Markdown, CSV, HTML or PNG (*.md *.csv *.html *.png)")
        )
        if not name:
            return
        try:
            self.export(Path(name))
        except (ValueError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))

    def export(self, path: Path) -> Path:
        """Write the comparison to ``path`` (its suffix says the format); never over a library configuration,
        the files the comparison was made from."""
        from vramdesk.fsutil import atomic_write_text

        from .export import export_png

        check_output(path, [e.path for e in self.entries], what="a configuration in the library", advice=_OTHER)
        suffix = path.suffix.lower().lstrip(".")
        if suffix == "png":
            return export_png(self.chart, path)
        atomic_write_text(path, self.table_text({"markdown": "md", "htm": "html"}.get(suffix, suffix)))
        return path


def _row_name(name: str, section: str) -> str:
    """A row's title in the window's language (component names, the fixed rows, "GPU 1 on the device")."""
    if section == "component":
        return localize_name(name)
    opt = by_path().get(name) if section == "input" else None
    if opt is not None:  # an option: its label from the option table, without the keyboard-shortcut mark
        return re.sub(r"\(&\w\)|&(?=\w)", "", tr(opt.label)).strip()
    if name in ROW_NAMES:
        return tr(name)
    m = re.fullmatch(r"GPU (\d+(?:-\d+)?) on the device(, each)?", name)
    if m is None:
        return name
    name = f"GPU {m.group(1)} {tr('on the device')}"
    return tr("{gpus} (each)").format(gpus=name) if m.group(2) else name


def _cells(row: CompareRow) -> list[str]:
    """A row's cells as the window shows them: bytes in the window's unit, phases and errors translated."""
    if row.section == "verdict" and row.name == "verdict":
        return list(row.cells)  # the table colours them by verdict, then shows them translated
    if row.section in BYTE_SECTIONS or row.name.endswith(" on the device"):
        return [
            f"{v / unit_bytes():.2f}" if isinstance(v, int) and not isinstance(v, bool) else _text(cell)
            for v, cell in zip(row.values, row.cells, strict=True)
        ]
    return [_text(c) for c in row.cells]


def _text(cell: str) -> str:
    translated = localize_name(cell)
    return translated if translated != cell else localize(cell)


def _unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        n = seen.get(label, 0) + 1
        seen[label] = n
        out.append(label if n == 1 else f"{label} ({n})")
    return out
