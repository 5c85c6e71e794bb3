"""The main window's menus and what they do with files: open and save scenario files, plan with a DeepSpeed
config, export the estimate (charts, reports, the breakdown), copy it to the clipboard, dropped files and
folders, and the recent models.

:class:`WindowActions` is a part of :class:`vramdesk.ui.main_window.MainWindow` (a mixin, over
:class:`vramdesk.ui.window_library.LibraryActions`): the attributes and methods it declares under
``TYPE_CHECKING`` are the window's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QUndoStack
from PySide6.QtWidgets import QApplication, QFileDialog, QMenu, QMessageBox, QTabWidget

from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.scenario import Scenario
from vramdesk.safety import check_output
from vramdesk.services.catalog import Catalog
from vramdesk.services.deepspeed import (
    DeepSpeedConfigError,
    apply_deepspeed,
    describe_plan,
    looks_like_deepspeed,
    read_deepspeed,
)
from vramdesk.storage.library import SUFFIX as LIBRARY_SUFFIX
from vramdesk.storage.library import Entry, read_entry
from vramdesk.storage.scenarios import ScenarioFileError, save_scenario

from .charts import BreakdownChart
from .core_text import localize
from .fit_map_view import FitMapDialog
from .fit_map_view import open_for as open_fit_map
from .i18n import LANGUAGES, language, tr
from .presenter import EstimateView, Evaluation, describe_error, scenario_from_form
from .window_library import LibraryActions

RECENT_KEY = "ui/recent_models"
MAX_RECENT = 10
#: Export menu: (format, menu text, file filter, default suffix)
EXPORTS = (
    ("png", "Chart as PNG (high-DPI)…", "PNG images (*.png)", ".png"),
    ("svg", "Chart as SVG…", "SVG images (*.svg)", ".svg"),
    ("chart-pdf", "Charts as PDF (vector)…", "PDF files (*.pdf)", ".pdf"),
    ("pdf", "Report as PDF…", "PDF files (*.pdf)", ".pdf"),
    ("html", "Report as HTML…", "HTML files (*.html)", ".html"),
    ("md", "Report as Markdown…", "Markdown files (*.md)", ".md"),
    ("csv", "Breakdown as CSV…", "CSV files (*.csv)", ".csv"),
    ("json", "Breakdown as JSON…", "JSON files (*.json)", ".json"),
)

#: the export options of the Export menu, kept between sessions
EXPORT_CHART_KEY = "export/chart"
EXPORT_SCREEN_THEME_KEY = "export/screen_theme"
#: Export menu: what a chart picture (PNG, SVG, chart PDF, the clipboard) holds
EXPORT_CHARTS = (("both", "Both charts"), ("breakdown", "Breakdown at the peak only"), ("phase", "Phases only"))


def droppable_path(path: Path) -> bool:
    """A config.json, a model folder or a .gguf file (what the window accepts by drag and drop)."""
    if path.is_dir():
        return True
    return path.is_file() and (path.suffix.lower() == ".gguf" or path.name.lower().endswith(".json"))


class WindowActions(LibraryActions):
    """The menu bar, and the file, export and clipboard actions behind it."""

    if TYPE_CHECKING:
        undo_stack: QUndoStack
        tabs: QTabWidget
        breakdown: BreakdownChart
        view: EstimateView | None
        recent_menu: QMenu

        evaluation: Evaluation | None
        headroom_fraction: float | None
        _catalog: Catalog

        def current_scenario(self) -> Scenario | None: ...
        def _known_facts(self, ref: str) -> ModelFacts: ...
        def _gpu_spec(self, ev: Evaluation) -> GpuSpec | None: ...
        def apply_plan(self, scenario: Scenario, label: str, keep_detected: bool = True) -> None: ...
        def choose_model(self, model_id: str) -> None: ...
        def focus_search(self) -> None: ...
        def detect_gpus_again(self) -> None: ...
        def open_settings(self) -> None: ...
        def open_gpus_view(self) -> Any: ...
        def _toggle_chart_mode(self) -> None: ...
        def _set_language(self, code: str) -> None: ...

    # ------------------------------------------------------------------ menus
    def _build_menus(self) -> None:
        menu = self.menuBar()
        file_menu = menu.addMenu(tr("&File"))
        self.action_open = self._action(tr("&Open scenario…"), QKeySequence.StandardKey.Open, self.open_scenario_dialog)
        self.action_save = self._action(tr("&Save"), QKeySequence.StandardKey.Save, self.save_to_library)
        self.action_save_as = self._action(
            tr("Save &as…"), QKeySequence.StandardKey.SaveAs, lambda: self.save_to_library(as_new=True)
        )
        self.action_export_scenario = self._action(
            tr("Save scenario &file…"), QKeySequence(), self.save_scenario_dialog
        )
        self.action_deepspeed = self._action(
            tr("Apply &DeepSpeed config…"), QKeySequence(), self.apply_deepspeed_dialog
        )
        self.action_library = self._action(tr("&Library…"), QKeySequence("Ctrl+L"), self.open_library)
        self.action_compare = self._action(tr("&Compare…"), QKeySequence("Ctrl+K"), self.open_compare)
        file_menu.addAction(self.action_open)
        file_menu.addAction(self.action_deepspeed)
        file_menu.addAction(self.action_save)
        file_menu.addAction(self.action_save_as)
        file_menu.addAction(self.action_export_scenario)
        file_menu.addSeparator()
        file_menu.addAction(self.action_library)
        file_menu.addAction(self.action_compare)
        self.export_menu = file_menu.addMenu(tr("&Export"))
        self.export_actions: dict[str, QAction] = {}
        for fmt, text, _filter, _suffix in EXPORTS:
            act = self._action(tr(text), QKeySequence(), partial(self.export_dialog, fmt))
            self.export_menu.addAction(act)
            self.export_actions[fmt] = act
        self._build_export_options()
        self.recent_menu = file_menu.addMenu(tr("&Recent models"))
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        file_menu.addSeparator()
        file_menu.addAction(self._action(tr("&Quit"), QKeySequence.StandardKey.Quit, self.close))
        self._build_edit_menu()
        view = menu.addMenu(tr("&View"))
        view.addAction(self._action(tr("Find a model"), QKeySequence.StandardKey.Find, self.focus_search))
        view.addAction(self._action(tr("Inference"), QKeySequence("Ctrl+1"), lambda: self.tabs.setCurrentIndex(0)))
        view.addAction(self._action(tr("Fine-tune"), QKeySequence("Ctrl+2"), lambda: self.tabs.setCurrentIndex(1)))
        view.addAction(self._action(tr("Pie / bar chart"), QKeySequence("Ctrl+B"), self._toggle_chart_mode))
        view.addAction(self._action(tr("Detect GPUs again"), QKeySequence("F5"), self.detect_gpus_again))
        self.action_gpus_view = self._action(tr("&Which GPUs…"), QKeySequence("Ctrl+Shift+G"), self.open_gpus_view)
        view.addAction(self.action_gpus_view)
        self.action_fit_map = self._action(tr("Fit &map…"), QKeySequence("Ctrl+Shift+M"), self.open_fit_map)
        view.addAction(self.action_fit_map)
        file_menu.insertAction(
            file_menu.actions()[-2],
            self._action(tr("Se&ttings…"), QKeySequence.StandardKey.Preferences, self.open_settings),
        )
        lang_menu = view.addMenu(tr("&Language"))
        for code, name in LANGUAGES.items():
            act = QAction(name, self)
            act.setCheckable(True)
            act.setChecked(code == language())
            act.triggered.connect(lambda _c=False, code=code: self._set_language(code))
            lang_menu.addAction(act)

    def _build_edit_menu(self) -> None:
        edit = self.menuBar().addMenu(tr("&Edit"))
        self.action_undo = self.undo_stack.createUndoAction(self, tr("Undo"))
        self.action_undo.setShortcut(QKeySequence.StandardKey.Undo)
        self.action_redo = self.undo_stack.createRedoAction(self, tr("Redo"))
        # the platform's redo keys, plus Ctrl+Shift+Z and Ctrl+Y where it has not got them (twice is ambiguous)
        redo_keys = QKeySequence.keyBindings(QKeySequence.StandardKey.Redo)
        for extra in ("Ctrl+Shift+Z", "Ctrl+Y"):
            if all(k.toString() != extra for k in redo_keys):
                redo_keys.append(QKeySequence(extra))
        self.action_redo.setShortcuts(redo_keys)
        for act in (self.action_undo, self.action_redo):
            self.addAction(act)
            edit.addAction(act)
        edit.addSeparator()
        self.action_copy_image = self._action(tr("Copy chart image"), QKeySequence("Ctrl+Shift+C"), self.copy_chart)
        edit.addAction(self.action_copy_image)
        edit.addAction(self._action(tr("Copy table as Markdown"), QKeySequence(), lambda: self.copy_table("md")))
        edit.addAction(self._action(tr("Copy table as TSV"), QKeySequence(), lambda: self.copy_table("tsv")))

    def open_fit_map(self) -> FitMapDialog:
        """The fit map (View menu) for the plan the form shows; a clicked square plans with its settings."""
        return open_fit_map(self)

    def _action(self, text: str, shortcut: Any, slot: Callable[[], Any]) -> QAction:
        act = QAction(text, self)
        act.setShortcut(shortcut)
        act.triggered.connect(lambda _checked=False: slot())
        self.addAction(act)
        return act

    # ------------------------------------------------------------------ recent models
    def recent_models(self) -> list[str]:
        value = QSettings().value(RECENT_KEY)
        return [str(v) for v in value] if isinstance(value, list) else []

    def _remember_recent(self, ref: str) -> None:
        items = [ref] + [r for r in self.recent_models() if r != ref]
        QSettings().setValue(RECENT_KEY, items[:MAX_RECENT])

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        items = self.recent_models()
        if not items:
            act = self.recent_menu.addAction(tr("(none yet)"))
            act.setEnabled(False)
        for ref in items:
            act = self.recent_menu.addAction(ref)
            act.triggered.connect(lambda _c=False, ref=ref: self.choose_model(ref))

    # ------------------------------------------------------------------ scenario files and DeepSpeed configs
    def open_scenario_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, tr("Open scenario"), "", tr("Scenario files (*.json)"))
        if path:
            self.open_scenario(Path(path))

    def open_scenario(self, path: Path) -> bool:
        """Open a scenario file; one from a newer vramdesk opens read-only (a note says so)."""
        try:
            entry = read_entry(Path(path))
        except (ScenarioFileError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
            return False
        self._show_opened_file(Path(path), entry)
        return True

    def _show_opened_file(self, path: Path, entry: Entry) -> None:
        """The work now comes from a file, not from a library entry (a Save asks for a name)."""
        self.library_entry_id = None
        self.library_entry_revision = None
        self.scenario_path = Path(path)
        if entry.note:
            self._notice = f"{path}: {entry.note}"
        self._saved = entry.scenario
        self.set_scenario(entry.scenario)

    def apply_deepspeed_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, tr("Apply DeepSpeed config"), "", tr("DeepSpeed config (*.json);;All files (*)")
        )
        if path:
            self.apply_deepspeed_file(Path(path))

    def apply_deepspeed_file(self, path: Path) -> bool:
        """Plan with the DeepSpeed JSON config the job will launch with: its ZeRO stage, offload, buckets,
        precision, micro-batch, accumulation and optimizer go into the form (as a fine-tuning plan); the model,
        GPUs, method and lengths stay. A file that cannot be used is named in a message and nothing changes."""
        base = self._current_for_saving()
        if base is None:
            return False
        try:
            plan = read_deepspeed(Path(path))
            scenario = apply_deepspeed(base, plan)
        except DeepSpeedConfigError as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
            return False
        # what the file says about itself (NVMe offload planned as host offload...) stays beside the estimate
        self._notice = "; ".join(f"{Path(path).name}: {note}" for note in plan.notes) or None
        self.set_scenario(scenario)
        self.statusBar().showMessage(
            tr("Planned with {name}: {settings}").format(name=Path(path).name, settings=localize(describe_plan(plan))),
            8000,
        )
        return True

    def save_scenario_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, tr("Save scenario"), "scenario.json", tr("Scenario files (*.json)"))
        if path:
            self.save_scenario(Path(path))

    def save_scenario(self, path: Path) -> bool:
        try:
            scenario = scenario_from_form(self._scenario, self.form.values(), self._detected_specs)
            save_scenario(scenario, path)
        except (ValueError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
            return False
        self.statusBar().showMessage(tr("Saved") + f" {path}", 4000)
        if self.library_entry_id is None:
            self._saved = scenario
            self.update_title()
        return True

    def drop_path(self, path: Path) -> None:
        """A dropped file or folder: a scenario file opens; a DeepSpeed config plans with it; a config.json,
        folder or .gguf becomes the model."""
        if path.is_file() and path.suffix.lower() == ".json" and path.name != "config.json":
            if looks_like_deepspeed(path):
                self.apply_deepspeed_file(path)
                return
            try:
                entry = read_entry(path)
            except (ScenarioFileError, OSError):
                pass  # not a scenario: try it as a model config
            else:
                self._show_opened_file(path, entry)
                return
        self.choose_model(str(path))

    # ------------------------------------------------------------------ export and the clipboard
    def _build_export_options(self) -> None:
        """Under the formats: which chart a picture holds, and whether it keeps the screen's theme (else it is
        drawn for print, dark on white); both are saved with the settings."""
        self.export_menu.addSeparator()
        charts = self.export_menu.addMenu(tr("Chart in pictures"))
        group = QActionGroup(self)
        group.setExclusive(True)
        saved = self.export_chart()
        self.export_chart_actions: dict[str, QAction] = {}
        for chart, text in EXPORT_CHARTS:
            act = QAction(tr(text), self)
            act.setCheckable(True)
            act.setChecked(chart == saved)
            act.triggered.connect(lambda _c=False, chart=chart: QSettings().setValue(EXPORT_CHART_KEY, chart))
            group.addAction(act)
            charts.addAction(act)
            self.export_chart_actions[chart] = act
        self.action_keep_screen_theme = QAction(tr("Keep the screen theme in pictures"), self)
        self.action_keep_screen_theme.setCheckable(True)
        self.action_keep_screen_theme.setChecked(self.export_keeps_screen_theme())
        self.action_keep_screen_theme.setToolTip(
            tr("Draw exported charts in the window's colours instead of dark text on white (reports stay white)")
        )
        self.action_keep_screen_theme.toggled.connect(lambda on: QSettings().setValue(EXPORT_SCREEN_THEME_KEY, on))
        self.export_menu.addAction(self.action_keep_screen_theme)

    def export_chart(self) -> str:
        """What a chart picture holds (Export > Chart in pictures): both, breakdown or phase."""
        value = str(QSettings().value(EXPORT_CHART_KEY, "both"))
        return value if value in {c for c, _ in EXPORT_CHARTS} else "both"

    def export_keeps_screen_theme(self) -> bool:
        value = QSettings().value(EXPORT_SCREEN_THEME_KEY, False)
        return value is True or str(value).lower() == "true"

    def export_current(
        self, fmt: str, path: Path, *, chart: str | None = None, keep_screen: bool | None = None
    ) -> Path:
        """Write the current estimate as ``fmt`` (see :data:`vramdesk.ui.export.VIEW_FORMATS`); a picture holds
        ``chart`` and keeps the screen's theme with ``keep_screen`` (None: as the Export menu says)."""
        from .export import export_view, speed_of

        ev = self.evaluation
        if ev is None or ev.view is None or ev.scenario is None:
            raise ValueError(tr("Nothing to export: the form has a problem"))
        perf = speed_of(ev.view, ev.scenario)
        # never over a saved configuration of the library, nor the file the work came from
        if self.library.root.is_dir():
            saved = self.library.root.glob(f"*{LIBRARY_SUFFIX}")
            check_output(path, saved, what="a configuration in the library", advice="choose another file")
        inputs = [self.scenario_path] if self.scenario_path is not None else []
        return export_view(
            ev.view,
            ev.scenario,
            fmt,
            path,
            mode=self.breakdown.mode,
            perf=perf,
            chart=chart or self.export_chart(),
            keep_screen=self.export_keeps_screen_theme() if keep_screen is None else keep_screen,
            inputs=inputs,
        )

    def export_dialog(self, fmt: str) -> None:
        _f, text, pattern, suffix = next(e for e in EXPORTS if e[0] == fmt)
        base = (self.view.model_id.rsplit("/", 1)[-1] if self.view else "vramdesk") + suffix
        name, _ = QFileDialog.getSaveFileName(self, tr(text).rstrip("…"), base, tr(pattern))
        if not name:
            return
        # charts are painted on the GUI thread: 0.1-0.25 s for PNG / PDF / HTML (benchmarks/ui_latency.py)
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            out = self.export_current(fmt, Path(name))
        except (ValueError, OSError) as err:
            QApplication.restoreOverrideCursor()
            QMessageBox.warning(self, "vramdesk", localize(describe_error(err)))
            return
        QApplication.restoreOverrideCursor()
        self.statusBar().showMessage(tr("Saved") + f" {out}", 4000)

    def copy_chart(self) -> None:
        """The chart's figure (2x, as the Export menu's options say) on the clipboard as an image."""
        from .export import chart_image, copy_image

        if self.view is None:
            return
        ev = self.evaluation
        scenario = ev.scenario if ev is not None and ev.view is self.view else None
        image = chart_image(
            self.view,
            self.breakdown.mode,
            scenario=scenario,
            chart=self.export_chart(),
            keep_screen=self.export_keeps_screen_theme(),
        )
        copy_image(image)
        self.statusBar().showMessage(tr("Copied"), 3000)

    def copy_table(self, fmt: str) -> None:
        """The breakdown at the peak on the clipboard, as Markdown or as tab-separated values."""
        from vramdesk.report.tables import breakdown_markdown, breakdown_tsv

        from .export import copy_text

        if self.view is None:
            return
        est = self.view.estimate
        copy_text(breakdown_markdown(est) if fmt == "md" else breakdown_tsv(est), markdown=fmt == "md")
        self.statusBar().showMessage(tr("Copied"), 3000)
