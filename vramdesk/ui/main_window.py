"""The main window: the model browser (left), the workload form (centre), the results (right).

Every form change re-estimates on the next turn of the event loop (an estimate takes about a
millisecond). Catalog models resolve at once; any other model (Hub id, config.json, folder, .gguf) is
resolved on a worker (:class:`TaskRunner`, newest request wins) and the estimate follows when it is
back. GPU detection (NVML) also runs on a worker. The logic lives in :mod:`vramdesk.ui.presenter`.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QEventLoop, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent, QKeyEvent, QKeySequence, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec, hardware_text
from vramdesk.core.performance import Performance, PerformanceError, performance
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import ChangesResult, SolveError, SolveResult, maximize
from vramdesk.core.solve_changes import smallest_changes
from vramdesk.safety import check_output
from vramdesk.services.accuracy import MeasuredSet, measured_accuracy
from vramdesk.services.catalog import Catalog, default_catalog
from vramdesk.services.deepspeed import (
    DeepSpeedConfigError,
    apply_deepspeed,
    describe_plan,
    looks_like_deepspeed,
    read_deepspeed,
)
from vramdesk.services.nvml import DetectionResult, detect_gpus, to_gpu_spec
from vramdesk.services.resolve import resolve_gpu, resolve_model
from vramdesk.services.search import HubAnswer, SearchResult, hub_results, local_results
from vramdesk.storage.library import (
    NAME_MAX,
    Autosave,
    Entry,
    LibraryError,
    ScenarioLibrary,
    StaleEntryError,
    read_entry,
)
from vramdesk.storage.library import (
    SUFFIX as LIBRARY_SUFFIX,
)
from vramdesk.storage.scenarios import ScenarioFileError, save_scenario

from . import theme
from .browser import HubSearch, LocalSearch, ModelBrowser
from .charts import BreakdownChart, PhaseChart
from .core_text import localize, localize_name
from .forms import WorkloadForm
from .i18n import LANGUAGES, install_qt_translations, language, set_language, tr
from .presenter import (
    DETECTED_PREFIX,
    VERDICT_TITLES,
    EstimateView,
    Evaluation,
    FormValues,
    count_text,
    evaluate_form,
    form_from_scenario,
    gib,
    gpu_groups,
    scenario_from_form,
    set_unit,
)
from .widgets import ComponentTableModel, Legend, StatCard
from .work_history import WorkState, change_text, changed_fields, same_plan
from .workers import TaskRunner

WINDOW_SIZE = (1480, 900)
BROWSER_WIDTH = 330
FORM_WIDTH = 350
#: rows the components table shows without scrolling (it grows up to this, then scrolls)
TABLE_ROWS = (4, 9)
ROW_HEIGHT = 22
RECENT_KEY = "ui/recent_models"
MAX_RECENT = 10
MODEL_FILE_SUFFIXES = (".gguf", ".json")
#: milliseconds of quiet before the current work is autosaved
AUTOSAVE_DELAY_MS = 1500
#: milliseconds of quiet before the advice (smallest changes, max context) is computed on a worker
ADVICE_DELAY_MS = 60
#: changes listed under a "does not fit" verdict
MAX_CHANGES = 4
LIMITS = {
    "memory": "memory",
    "model context": "the model's context length",
    "search limit": "the search limit",
    "nothing fits": "nothing fits",
}
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

Resolver = Callable[[str], ModelFacts]
Detector = Callable[[], DetectionResult]


def _default_hub(query: str, cancel: threading.Event) -> HubAnswer:
    return hub_results(query, cancel=cancel)


def _default_local(query: str) -> list[SearchResult]:
    return local_results(query, limit=40)


def _seconds(s: float) -> str:
    """A duration the way people say it: 480 ms, 2.4 s, 3.1 min."""
    if s < 1:
        return f"{s * 1000:,.0f} ms"
    if s < 120:
        return f"{s:,.1f} s"
    return f"{s / 60:,.1f} min"


def droppable_path(path: Path) -> bool:
    """A config.json, a model folder or a .gguf file (what the window accepts by drag and drop)."""
    if path.is_dir():
        return True
    return path.is_file() and (path.suffix.lower() == ".gguf" or path.name.lower().endswith(".json"))


def accuracy_note(sets: tuple[MeasuredSet, ...]) -> str:
    """How this level of the estimate compared with measured runs it was not fitted to, one line per set."""
    if not sets:
        return tr("No measured runs at this level for this kind of plan yet: the figure is modelled, not checked")
    lines = [tr("How far this figure was from measured runs it was not fitted to:")]
    for s in sets:
        lines.append(
            f"• {tr(s.name)}: {tr('median')} {s.median:.1f} %, {tr('90th percentile')} {s.p90:.1f} % "
            f"({s.runs} {tr('comparisons')})"
        )
    return "\n".join(lines)


def _text_field(widget: QObject) -> QLineEdit | None:
    """The line edit a focused widget types into: itself, a spin box's or an editable combo box's."""
    if isinstance(widget, QLineEdit):
        return widget
    if isinstance(widget, QAbstractSpinBox):
        return widget.lineEdit()
    if isinstance(widget, QComboBox) and widget.isEditable():
        return widget.lineEdit()
    return None


class FormEdit(QUndoCommand):
    """One step of the window's undo history: the whole work state before and after an edit, an applied
    suggestion or an open. Consecutive edits of the same single field (typing 8192 digit by digit) merge."""

    MERGE_ID = 1

    def __init__(self, window: MainWindow, before: WorkState, after: WorkState, text: str, key: str | None) -> None:
        super().__init__(text)
        self.window, self.before, self.after, self.key = window, before, after, key
        self._pushed = False

    def id(self) -> int:
        return self.MERGE_ID if self.key is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, FormEdit) or other.key != self.key or self.key is None:
            return False
        self.after = other.after
        return True

    def redo(self) -> None:
        if not self._pushed:  # QUndoStack.push() calls redo(): the edit is already on the form
            self._pushed = True
            return
        self.window.restore_work_state(self.after)

    def undo(self) -> None:
        self.window.restore_work_state(self.before)


class MainWindow(QMainWindow):
    """Signals: ``estimated(object)`` with the :class:`Evaluation` of every finished re-estimate."""

    estimated = Signal(object)

    def __init__(
        self,
        scenario: Scenario | None = None,
        *,
        catalog: Catalog | None = None,
        notice: str | None = None,
        resolve: Resolver = resolve_model,
        local_search: LocalSearch = _default_local,
        hub_search: HubSearch | None = _default_hub,
        detect: Detector | None = detect_gpus,
        library: ScenarioLibrary | None = None,
        autosave: bool = False,
    ) -> None:
        super().__init__()
        self._library = library
        #: the library entry the form was opened from (Save writes back to it), or None
        self.library_entry_id: str | None = None
        #: that entry's revision when it was opened or last saved here (a save from an older one asks first)
        self.library_entry_revision: int | None = None
        #: the scenario file the work was opened from (File > Open, a drop), which no export may replace
        self.scenario_path: Path | None = None
        #: what was last opened or saved (the unsaved-changes marker compares the form with it)
        self._saved: Scenario | None = None
        #: undo / redo of form edits, applied suggestions and opens (Edit menu, Ctrl+Z / Ctrl+Shift+Z)
        self.undo_stack = QUndoStack(self)
        self._undo_state: WorkState | None = None
        self._undo_label: str | None = None
        self._restoring = False
        self.library_window: Any = None
        self._autosave = autosave
        #: this window's own autosave file (other windows have theirs)
        self.autosave_store = Autosave()
        self._autosave_timer = QTimer(self)
        self._autosave_timer.setSingleShot(True)
        self._autosave_timer.setInterval(AUTOSAVE_DELAY_MS)
        self._autosave_timer.timeout.connect(self.autosave_now)
        self._catalog = catalog or default_catalog()
        self._scenario: Scenario = scenario or DEFAULT_SCENARIO
        self._notice = notice
        self._resolve_fn = resolve
        self._facts: dict[str, ModelFacts] = {}
        self._resolve_errors: dict[str, str] = {}
        self._resolving: str | None = None
        self._detect_fn = detect
        self.detection: DetectionResult | None = None
        self._detected_specs: dict[str, GpuSpec] = {}
        self.evaluation: Evaluation | None = None
        self.view: EstimateView | None = None
        #: seconds of the last estimate + repaint (for the status bar and the tests)
        self.last_update_seconds = 0.0
        #: pixel size of the last --screenshot image (device pixels: twice the window's size at a ratio of 2)
        self.screenshot_size: tuple[int, int] = WINDOW_SIZE
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.estimate_now)
        self._advice_timer = QTimer(self)
        self._advice_timer.setSingleShot(True)
        self._advice_timer.setInterval(ADVICE_DELAY_MS)
        self._advice_timer.timeout.connect(self.advise_now)
        #: what the advice worker last answered (for the tests): {"changes": ChangesResult | None, "max": ...}
        self.advice: dict[str, Any] = {}
        self.performance: Performance | None = None
        self.headroom_fraction: float | None = None
        self._advice_ev: Evaluation | None = None
        self._change_options: list[Any] = []
        self.load_display_settings()

        self.setWindowTitle("vramdesk[*]")
        self.setStyleSheet(theme.style_sheet(theme.current()))
        self.setAcceptDrops(True)
        self._local_search = local_search
        self._hub_search = hub_search
        self._build_panes()
        self._build_status_bar()
        self._build_menus()

        self.resolve_runner = self._runner("resolve")
        self.resolve_runner.finished.connect(self._on_resolved)
        self.resolve_runner.failed.connect(self._on_resolve_failed)
        self.resolve_runner.busy_changed.connect(self._on_resolve_busy)
        self.detect_runner = self._runner("detect")
        self.detect_runner.finished.connect(self._on_detected)
        self.detect_runner.failed.connect(lambda err: self._on_detected(DetectionResult(reason=str(err))))
        self.advice_runner = self._runner("advice")
        self.advice_runner.finished.connect(self._on_advice)
        self.advice_runner.failed.connect(self._on_advice_failed)

        self.estimated.connect(self._after_estimate)
        self.resize(*WINDOW_SIZE)
        self.form.set_detected(None, {})
        self._saved = self._scenario
        self.set_scenario(self._scenario)
        self.detect_gpus_again()

    def _build_panes(self) -> None:
        """The three panes (browser, form, results) as the central widget, in the current language."""
        self.browser = ModelBrowser(self._catalog, self._local_search, self._hub_search, self)
        self.browser.setMinimumWidth(240)
        self.browser.model_chosen.connect(self.choose_model)
        self.browser.status.connect(self._show_status)
        self.form = WorkloadForm(self._catalog, self)
        self.form.setObjectName("formBody")
        self.form.changed.connect(self._on_form_changed)
        scroll = QScrollArea(self)
        scroll.setObjectName("formScroll")
        scroll.setWidget(self.form)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(FORM_WIDTH)
        self.form_scroll = scroll

        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.setObjectName("central")
        splitter.addWidget(self.browser)
        splitter.addWidget(scroll)
        splitter.addWidget(self._build_results())
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 0)
        splitter.setStretchFactor(2, 1)
        splitter.setSizes([BROWSER_WIDTH, FORM_WIDTH, WINDOW_SIZE[0] - BROWSER_WIDTH - FORM_WIDTH])
        splitter.setChildrenCollapsible(False)
        self.splitter = splitter
        self.setCentralWidget(splitter)
        self._alias_form_widgets()
        # Ctrl+Z in a text field: see eventFilter (only these widgets, not every event of the app, pass through it)
        for widget in splitter.findChildren(QWidget):
            if _text_field(widget) is not None:
                widget.installEventFilter(self)

    def _runner(self, name: str) -> TaskRunner:
        return TaskRunner(name, self)

    def _alias_form_widgets(self) -> None:
        """The form's widgets as attributes of the window (tests and shortcuts reach them here)."""
        f = self.form
        self.model_combo = f.model_combo
        self.gpu_combo = f.gpu_combo
        self.tabs = f.tabs

    def widget(self, name: str) -> QWidget:
        """The form's widget of option ``name`` (tests and shortcuts reach it here too)."""
        return self.form.widget(name)

    # ------------------------------------------------------------------ building
    def _build_results(self) -> QWidget:
        box = QWidget(self)
        box.setObjectName("results")
        layout = QVBoxLayout(box)
        layout.setContentsMargins(14, 12, 14, 10)
        layout.setSpacing(8)

        self.verdict_frame = QFrame(box)
        self.verdict_frame.setObjectName("verdict")
        self.verdict_frame.setAccessibleName(tr("Verdict"))
        self.verdict_label = QLabel("–")
        self.verdict_label.setObjectName("verdictLabel")
        self.verdict_label.setMinimumHeight(34)
        self.message_label = QLabel("")
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.scenario_label = QLabel("")
        self.scenario_label.setObjectName("caption")
        self.gpu_chips = QLabel("")
        self.gpu_chips.setTextFormat(Qt.TextFormat.RichText)
        self.gpu_chips.setWordWrap(True)
        self.gpu_chips.setVisible(False)
        vl = QVBoxLayout(self.verdict_frame)
        vl.setContentsMargins(14, 6, 12, 8)
        vl.setSpacing(2)
        head = QHBoxLayout()
        head.setSpacing(12)
        head.addWidget(self.verdict_label)
        head.addWidget(self.scenario_label, 1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        vl.addLayout(head)
        vl.addWidget(self.message_label)
        vl.addWidget(self.gpu_chips)
        self.advice_box = QWidget(self.verdict_frame)
        self.advice_box.setAccessibleName(tr("Changes that make it fit"))
        al = QVBoxLayout(self.advice_box)
        al.setContentsMargins(0, 4, 0, 0)
        al.setSpacing(2)
        self.advice_caption = QLabel(tr("Smallest changes that make it fit (click one to apply it):"))
        self.advice_caption.setObjectName("caption")
        al.addWidget(self.advice_caption)
        self.advice_buttons: list[QPushButton] = []
        for i in range(MAX_CHANGES):
            b = QPushButton("", self.advice_box)
            b.setFlat(True)
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            b.setStyleSheet("QPushButton { text-align: left; padding: 1px 4px; }")
            b.clicked.connect(partial(self.apply_change, i))
            b.setVisible(False)
            al.addWidget(b)
            self.advice_buttons.append(b)
        self.advice_box.setVisible(False)
        vl.addWidget(self.advice_box)
        layout.addWidget(self.verdict_frame)

        stats = QHBoxLayout()
        stats.setSpacing(8)
        self.stat_allocated = StatCard(
            tr("Peak allocated"), tr("What torch.cuda.max_memory_allocated() reports at the peak phase")
        )
        self.stat_reserved = StatCard(
            tr("Reserved"), tr("What the caching allocator holds: torch.cuda.max_memory_reserved()")
        )
        self.stat_device = StatCard(
            tr("On the device"),
            tr("What nvidia-smi / NVML shows: reserved + CUDA context and libraries; the verdict uses this"),
        )
        self.stat_params = StatCard(tr("Parameters"), tr("Unique parameters of the model the engine runs"))
        self.stat_active = StatCard(
            tr("Active / trainable"), tr("Parameters touched per token (MoE), or trained (fine-tuning)")
        )
        # shown only when the plan keeps something in CPU memory (offload, device_map spill, llama.cpp CPU layers)
        self.stat_host = StatCard(
            tr("Host memory per machine"),
            tr(
                "CPU memory one machine needs for what the plan keeps there: offloaded optimizer states, parameters "
                "or activations of all its GPUs, layers a device_map or llama.cpp leaves on the CPU"
            ),
        )
        self.stat_host.setVisible(False)
        cards = (self.stat_allocated, self.stat_reserved, self.stat_device, self.stat_host, self.stat_params)
        for card in (*cards, self.stat_active):
            card.setAccessibleName(card.caption.text())
            stats.addWidget(card, 1)
        layout.addLayout(stats)
        self.speed_label = QLabel("")
        self.speed_label.setObjectName("caption")
        self.speed_label.setAccessibleName(tr("Speed"))
        self.speed_label.setVisible(False)
        layout.addWidget(self.speed_label)

        charts = QHBoxLayout()
        charts.setSpacing(8)
        self.breakdown = BreakdownChart()
        self.phase_chart = PhaseChart()
        self.breakdown.setAccessibleName(tr("Breakdown chart"))
        self.phase_chart.setAccessibleName(tr("Phase chart"))
        for chart, stretch in ((self.breakdown, 5), (self.phase_chart, 6)):
            frame = QFrame(box)
            frame.setObjectName("chartPanel")
            fl = QVBoxLayout(frame)
            fl.setContentsMargins(1, 1, 1, 1)
            fl.addWidget(chart)
            charts.addWidget(frame, stretch)
        layout.addLayout(charts, 5)

        self.legend = Legend(box)
        self.explain_button = QPushButton(tr("Explain…"), box)
        self.explain_button.setToolTip(
            tr("The selected component's full explanation and the constants used, with their sources")
        )
        self.explain_button.clicked.connect(lambda _checked=False: self.explain_component())
        legend_row = QHBoxLayout()
        legend_row.setSpacing(8)
        legend_row.addWidget(self.legend, 1)
        legend_row.addWidget(self.explain_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(legend_row)
        #: the open Explain dialog, if any
        self.explain_dialog: Any = None

        self.table_model = ComponentTableModel(self)
        self.table = QTableView(box)
        self.table.setModel(self.table_model)
        self.table.setAccessibleName(tr("Components at the peak"))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)
        self.table.setShowGrid(False)
        self.table.setToolTip(tr("Double-click a row for its full explanation and sources"))
        self.table.doubleClicked.connect(lambda index: self.explain_component(index.row()))
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        header.setStretchLastSection(True)
        for col, width in ((0, 190), (1, 100), (2, 70), (3, 60)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, width)
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._fit_table(TABLE_ROWS[0])
        layout.addWidget(self.table)

        self.warnings_label = QLabel(box)
        self.warnings_label.setObjectName("warnings")
        self.warnings_label.setWordWrap(True)
        self.warnings_label.setTextFormat(Qt.TextFormat.RichText)
        self.warnings_label.setVisible(False)
        layout.addWidget(self.warnings_label)
        return box

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.status_label = QLabel("")
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)  # busy indicator
        self.progress.setMaximumWidth(120)
        self.progress.setMaximumHeight(14)
        self.progress.setTextVisible(False)
        self.progress.setVisible(False)
        self.progress.setAccessibleName(tr("Working"))
        self.timing_label = QLabel("")
        self.timing_label.setObjectName("caption")
        bar.addWidget(self.status_label, 1)
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.timing_label)

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
        self.recent_menu = file_menu.addMenu(tr("&Recent models"))
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        file_menu.addSeparator()
        file_menu.addAction(self._action(tr("&Quit"), QKeySequence.StandardKey.Quit, self.close))
        edit = menu.addMenu(tr("&Edit"))
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
        view = menu.addMenu(tr("&View"))
        view.addAction(self._action(tr("Find a model"), QKeySequence.StandardKey.Find, self.focus_search))
        view.addAction(self._action(tr("Inference"), QKeySequence("Ctrl+1"), lambda: self.tabs.setCurrentIndex(0)))
        view.addAction(self._action(tr("Fine-tune"), QKeySequence("Ctrl+2"), lambda: self.tabs.setCurrentIndex(1)))
        view.addAction(self._action(tr("Pie / bar chart"), QKeySequence("Ctrl+B"), self._toggle_chart_mode))
        view.addAction(self._action(tr("Detect GPUs again"), QKeySequence("F5"), self.detect_gpus_again))
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

    def _action(self, text: str, shortcut: Any, slot: Callable[[], Any]) -> QAction:
        act = QAction(text, self)
        act.setShortcut(shortcut)
        act.triggered.connect(lambda _checked=False: slot())
        self.addAction(act)
        return act

    def _fit_table(self, rows: int) -> None:
        rows = max(TABLE_ROWS[0], min(TABLE_ROWS[1], rows))
        header = self.table.horizontalHeader().sizeHint().height()
        self.table.setFixedHeight(header + rows * ROW_HEIGHT + 2 * self.table.frameWidth() + 2)

    # ------------------------------------------------------------------ form <-> scenario
    @property
    def scenario(self) -> Scenario:
        """The scenario the form was loaded from (fields the form does not show come from it)."""
        return self._scenario

    def current_scenario(self) -> Scenario | None:
        """What the form shows now, as a scenario (None while the form has a problem)."""
        ev = self.evaluation
        return ev.scenario if ev is not None else None

    def set_scenario(self, scenario: Scenario) -> None:
        """Show ``scenario`` in the form and estimate it now."""
        self._scenario = scenario
        self.form.set_values(form_from_scenario(scenario))
        self.estimate_now()

    def form_values(self) -> FormValues:
        return self.form.values()

    def _on_form_changed(self) -> None:
        self._timer.start()

    def choose_model(self, model_id: str) -> None:
        """Estimate ``model_id`` (a catalog id, a Hub repo id, or a path)."""
        self.form.set_values(FormValues(**{**self.form.values().__dict__, "model": model_id}))
        self.estimate_now()

    # ------------------------------------------------------------------ models
    def _known_facts(self, ref: str) -> ModelFacts:
        """Facts for ``ref`` without waiting: catalog and resolved models; raises for failed ones."""
        if self._catalog.find(ref) is not None:
            return self._catalog.facts(ref)
        if ref in self._facts:
            return self._facts[ref]
        if ref in self._resolve_errors:
            raise LookupError(self._resolve_errors[ref])
        raise LookupError(f"{ref} is not resolved yet")

    def _needs_resolving(self, ref: str) -> bool:
        return self._catalog.find(ref) is None and ref not in self._facts and ref not in self._resolve_errors

    @property
    def pending(self) -> bool:
        """A model lookup or the GPU detection is still running."""
        return bool(self.resolve_runner.busy or self.detect_runner.busy)

    def _start_resolve(self, ref: str) -> None:
        if self._resolving == ref and self.resolve_runner.busy:
            return
        self._resolving = ref
        fn = self._resolve_fn
        self.resolve_runner.submit(lambda _cancel: (ref, fn(ref)), label=ref)

    def _on_resolved(self, result: tuple[str, ModelFacts]) -> None:
        ref, facts = result
        self._facts[ref] = facts
        self._resolving = None
        self._remember_recent(ref)
        self.form.note_model_facts(ref, facts)
        self.estimate_now()

    def _on_resolve_failed(self, error: object) -> None:
        ref = self._resolving or ""
        self._resolving = None
        if isinstance(error, (ValueError, LookupError, OSError)):
            self._resolve_errors[ref] = str(error).strip("'\"") or type(error).__name__
        else:
            self._resolve_errors[ref] = f"{type(error).__name__}: {error}"
        self.estimate_now()

    def _on_resolve_busy(self, busy: bool) -> None:
        if busy:
            self._show_status(True, tr("Reading the model") + f" {self.resolve_runner.label}…")
        else:
            self._show_status(False, "")

    # ------------------------------------------------------------------ GPUs
    def detect_gpus_again(self) -> None:
        if self._detect_fn is None:
            self._on_detected(DetectionResult(reason=tr("GPU detection is off")))
            return
        import inspect

        fn: Any = self._detect_fn
        # the default detector (NVML probed in a child process) takes the job's cancel event: closing the window
        # or detecting again then kills a probe stuck in a hung driver at once, not at its deadline
        try:
            takes_cancel = "cancel" in inspect.signature(fn).parameters
        except (TypeError, ValueError):  # a callable without a signature
            takes_cancel = False
        if takes_cancel:
            self.detect_runner.submit(lambda cancel: fn(cancel=cancel), label="NVML")
        else:
            self.detect_runner.submit(lambda _cancel: fn(), label="NVML")

    def _on_detected(self, result: DetectionResult) -> None:
        self.detection = result
        specs: dict[str, GpuSpec] = {}
        for g in result.gpus:
            try:
                specs[f"{DETECTED_PREFIX}{g.index}"] = to_gpu_spec(g, self._catalog)
            except ValueError:
                continue
        self._detected_specs = specs
        previous = self.form.values().gpu
        self.form.set_detected(result, specs)
        # a first start on a machine with a GPU: plan for it (unless the scenario names another), but never for one
        # with no free memory (another job fills it, or its figures leave none): nothing could fit there
        usable = [key for key, spec in specs.items() if spec.free_bytes is None or spec.free_bytes > 0]
        if usable and previous == DEFAULT_SCENARIO.hardware.gpu and self._scenario is DEFAULT_SCENARIO:
            self.form.gpu_combo.setCurrentIndex(self.form.gpu_combo.findData(usable[0]))
        if self.form.gpu_combo.currentData() != previous:
            self._on_form_changed()

    # ------------------------------------------------------------------ undo and the unsaved-changes marker
    def work_state(self, values: FormValues | None = None) -> WorkState:
        return WorkState(
            values=self.form.values() if values is None else values,
            base=self._scenario,
            entry_id=self.library_entry_id,
            entry_revision=self.library_entry_revision,
            saved=self._saved,
        )

    def restore_work_state(self, state: WorkState) -> None:
        """Put back a state of the undo history (the form, the entry it belongs to, what that entry held)."""
        self._restoring = True
        try:
            self._scenario = state.base
            self.library_entry_id = state.entry_id
            self.library_entry_revision = state.entry_revision
            self._saved = state.saved
            self.form.set_values(state.values)
            self._undo_state = state
            self.estimate_now()
        finally:
            self._restoring = False

    def _record_edit(self, values: FormValues) -> None:
        """Put what changed since the last estimate on the undo stack (nothing when the form is the same)."""
        if self._restoring:
            return
        now = self.work_state(values)
        before, self._undo_state = self._undo_state, now
        label, self._undo_label = self._undo_label, None
        if before is None or (before.values == now.values and before.entry_id == now.entry_id):
            return
        names = changed_fields(before.values, now.values)
        key = names[0] if label is None and len(names) == 1 and before.entry_id == now.entry_id else None
        if label is None:
            label = change_text(before.values, now.values) if language() == "en" else tr("Form edit")
        self.undo_stack.push(FormEdit(self, before, now, label, key))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Ctrl+Z / Ctrl+Shift+Z in a text field of the form: the field's own undo while it has one (typing), the
        window's history otherwise (the field would take the shortcut and do nothing)."""
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent):
            edit = _text_field(watched)
            if edit is not None:
                undo = event.matches(QKeySequence.StandardKey.Undo) and not edit.isUndoAvailable()
                redo = event.matches(QKeySequence.StandardKey.Redo) and not edit.isRedoAvailable()
                if undo or redo:
                    event.ignore()  # not overridden: the window's shortcut runs
                    return True
        return super().eventFilter(watched, event)

    def _keep_undo_state(self) -> None:
        """A save or a revision change: the current state is the new starting point (no undo step)."""
        self._undo_state = self.work_state()

    @property
    def modified(self) -> bool:
        """The form holds a plan that differs from what was last opened or saved."""
        ev = self.evaluation
        current = ev.scenario if ev is not None else None  # what the last estimate read off the form
        if current is None:  # still resolving the model, or the form has a problem
            try:
                current = scenario_from_form(self._scenario, self.form.values(), self._detected_specs)
            except ValueError:
                return True
        return not same_plan(current, self._saved)

    def _entry_name(self) -> str | None:
        if self.library_entry_id is None:
            return None
        return self._saved.name if self._saved is not None and self._saved.name else None

    def update_title(self) -> None:
        """The configuration's name (or the model's) with Qt's unsaved-changes marker; Qt adds the app name."""
        model = self.form.values().model
        own = self._scenario.name if self._scenario.model.id == model else None  # a name for another model is stale
        name = self._entry_name() or own or model
        self.setWindowTitle(f"{name}[*]")
        self.setWindowModified(self.modified)

    def estimate_now(self) -> Evaluation:
        """Estimate what the form shows and update the results side; returns what it showed."""
        t0 = time.perf_counter()
        self._timer.stop()
        form = self.form.values()
        self._record_edit(form)
        if self._needs_resolving(form.model):
            self._start_resolve(form.model)
            ev = Evaluation(scenario=None, error=None)
            self._show_pending(form.model)
            self.evaluation = ev
            return ev
        if self.resolve_runner.busy and self._resolving != form.model:
            self.resolve_runner.cancel()
            self._resolving = None
        ev = evaluate_form(
            self._scenario,
            form,
            resolve=self._known_facts,
            find_gpu=resolve_gpu,
            detected=self._detected_specs,
            headroom_fraction=self.headroom_fraction,
        )
        self.evaluation = ev
        if ev.view is not None:
            self._show_view(ev.view)
            self._show_speed(ev)
            self.form.set_problem(None)
        else:
            self._show_error(localize(ev.error or "unknown error"))
            self.form.set_problem(localize(ev.error) if ev.error else None)
            self.speed_label.setVisible(False)
        self._request_advice(ev)
        facts = self._facts.get(form.model)
        if facts is None and self._catalog.find(form.model) is not None:
            facts = self._catalog.facts(form.model)
        self.browser.show_facts(facts, form.model)
        self.last_update_seconds = time.perf_counter() - t0
        self.timing_label.setText(f"{tr('updated in')} {self.last_update_seconds * 1000:.1f} ms")
        self.update_title()
        self.estimated.emit(ev)
        return ev

    # ------------------------------------------------------------------ speed and advice
    def _gpu_spec(self, ev: Evaluation) -> GpuSpec | None:
        """The GPU the verdict of ``ev`` used (a detected one with its free memory, or a catalog GPU)."""
        if ev.scenario is None:
            return None
        key = self.form.values().gpu
        if key is not None and key in self._detected_specs:
            return self._detected_specs[key]
        try:
            return resolve_gpu(ev.scenario.hardware.gpu)
        except (LookupError, ValueError):
            return None

    def _show_speed(self, ev: Evaluation) -> None:
        """One line of expected speed (decode and time to first token, or the training step) when a GPU is chosen."""
        self.performance = None
        gpu = self._gpu_spec(ev)
        if ev.view is None or ev.scenario is None or gpu is None:
            self.speed_label.setVisible(False)
            return
        try:
            perf = performance(ev.view.estimate, ev.scenario, self._known_facts(ev.scenario.model.id), gpu)
        except (PerformanceError, LookupError, ValueError):
            self.speed_label.setVisible(False)
            return
        self.performance = perf
        parts: list[str] = []
        if perf.decode_tokens_per_s is not None:
            parts.append(f"{tr('decode')} {perf.decode_tokens_per_s:,.1f} {tr('tokens/s per sequence')}")
        if perf.time_to_first_token_s is not None:
            parts.append(f"{tr('time to first token')} {_seconds(perf.time_to_first_token_s)}")
        if perf.step_time_s is not None:
            parts.append(f"{tr('training step')} {_seconds(perf.step_time_s)}")
        if perf.train_tokens_per_s is not None:
            parts.append(f"{perf.train_tokens_per_s:,.0f} {tr('tokens/s')}")
        if not parts:
            self.speed_label.setVisible(False)
            return
        bound = f" — {tr('bound by')} {tr(perf.bound)}"
        self.speed_label.setText(f"{tr('Speed')}: " + " · ".join(parts) + bound)
        self.speed_label.setToolTip("\n".join([tr("Assumptions:")] + [f"• {localize(a)}" for a in perf.assumptions]))
        self.speed_label.setVisible(True)

    def _request_advice(self, ev: Evaluation) -> None:
        """Clear the advice of the previous estimate and compute the new one on a worker after a short pause."""
        self._advice_ev = ev
        gpu = self._gpu_spec(ev) if ev.view is not None else None
        if gpu is None or ev.view is None or ev.view.verdict != "does not fit":
            self._show_changes(None)
        if gpu is None or ev.view is None:
            self._advice_timer.stop()
            self.advice_runner.cancel()
            self.advice = {}
            self.form.show_max_length("input_len", None, "")
            return
        self._advice_timer.start()

    def advise_now(self) -> int | None:
        """Submit the advice job for the last estimate (smallest changes when it does not fit, max context)."""
        self._advice_timer.stop()
        ev = self._advice_ev
        if ev is None or ev.view is None or ev.scenario is None:
            return None
        gpu = self._gpu_spec(ev)
        if gpu is None:
            return None
        scenario = ev.scenario
        facts = self._known_facts(scenario.model.id)
        field = "seq_len" if scenario.workload.kind == "finetune" else "input_len"
        wants_changes = ev.view.verdict == "does not fit"
        ev_verdict = ev.view.verdict
        headroom = self.headroom_fraction

        def job(_cancel: threading.Event) -> dict[str, Any]:
            out: dict[str, Any] = {
                "scenario": scenario,
                "field": field,
                "changes": None,
                "max": None,
                "verdict": ev_verdict,
            }
            try:
                out["max"] = maximize(scenario, facts, gpu, field, headroom_fraction=headroom)
                # and the largest that still runs inside the headroom ("tight"): a tight plan is not a failed one
                if not _cancel.is_set():
                    out["max_tight"] = maximize(
                        scenario, facts, gpu, field, allow_tight=True, headroom_fraction=headroom
                    )
            except (SolveError, ValueError, LookupError) as err:
                out["max_error"] = str(err)
            if wants_changes and not _cancel.is_set():
                out["changes"] = smallest_changes(
                    scenario, facts, gpu, limit=MAX_CHANGES + 4, headroom_fraction=headroom
                )
            return out

        return self.advice_runner.submit(job, label=scenario.model.id)

    def _on_advice(self, result: dict[str, Any]) -> None:
        self.advice = result
        r: SolveResult | None = result.get("max")
        if r is None:
            self.form.show_max_length(result["field"], None, localize(result.get("max_error", "")))
        else:
            limit = tr(LIMITS.get(r.limited_by, r.limited_by))
            tip = f"{tr('Limited by')}: {limit}\n{localize(r.message)}"
            t: SolveResult | None = result.get("max_tight")
            tight = t.value if t is not None and t.value is not None and t.value > (r.value or 0) else None
            if tight is not None:
                tip += "\n" + tr(
                    "fits with the headroom up to {n}; runs, tight (inside the headroom), up to {m}"
                ).format(n=f"{r.value:,}" if r.value else "–", m=f"{tight:,}")
            # a plan that is itself tight reads the tight boundary (the one it is within), others the fitting one
            shown_tight = tight if result.get("verdict") == "tight" else None
            self.form.show_max_length(result["field"], r.value, tip, shown_tight)
        self._show_changes(result.get("changes"))

    def _on_advice_failed(self, error: object) -> None:
        self.advice = {"error": error}
        self.form.show_max_length("input_len", None, "")
        self._show_changes(None)

    def _show_changes(self, changes: ChangesResult | None) -> None:
        options = list(changes.options[:MAX_CHANGES]) if changes is not None else []
        self._change_options = options
        for i, b in enumerate(self.advice_buttons):
            if i < len(options):
                o = options[i]
                speed = f", {o.tokens_per_s:,.1f} {tr('tokens/s')}" if o.tokens_per_s else ""
                verdict = tr(VERDICT_TITLES.get(o.verdict, o.verdict))
                b.setText(f"→ {localize(o.summary)}: {gib(o.device_bytes)} ({verdict}{speed})")
                b.setToolTip(f"{tr('cost')} {o.cost:g} ({tr('quality + speed, lower is better')})")
                b.setVisible(True)
            else:
                b.setVisible(False)
        verdict_is_off = self.view is not None and self.view.verdict == "does not fit"
        if changes is not None and not options and verdict_is_off:
            self.advice_caption.setText(tr("No single change or pair of changes makes it fit."))
        else:
            self.advice_caption.setText(tr("Smallest changes that make it fit (click one to apply it):"))
        self.advice_box.setVisible(changes is not None and verdict_is_off)

    def apply_change(self, index: int) -> None:
        """Put the scenario of listed change ``index`` in the form (a detected GPU stays selected)."""
        options = self._change_options
        if not 0 <= index < len(options):
            return
        scenario = Scenario.model_validate(options[index].scenario)
        key = self.form.values().gpu
        self._undo_label = tr("Apply") + " " + "; ".join(localize(c.description) for c in options[index].changes)
        self._scenario = scenario
        self.form.set_values(form_from_scenario(scenario, key if key in self._detected_specs else None))
        self.estimate_now()

    def wait_idle(self, timeout_ms: int = 10_000) -> bool:
        """Process events until no lookup or detection is running (for --screenshot); False on timeout."""
        deadline = time.monotonic() + timeout_ms / 1000
        while (self.pending or self._advice_timer.isActive() or self.advice_runner.busy) and (
            time.monotonic() < deadline
        ):
            QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
            time.sleep(0.002)
        QApplication.processEvents()
        return not self.pending

    def _set_verdict_style(self, color: str) -> None:
        p = theme.current()
        tint = theme.mix(color, p.background, 0.92)
        self.verdict_frame.setStyleSheet(
            f"QFrame#verdict {{ background: {tint}; border: 1px solid {theme.mix(color, p.background, 0.6)}; "
            f"border-left: 5px solid {color}; border-radius: 6px; }}"
        )
        self.verdict_label.setStyleSheet(f"color: {color}; font-size: 18pt; font-weight: bold;")
        self.message_label.setStyleSheet(f"color: {p.text};")

    def _show_pending(self, model_id: str) -> None:
        self._set_verdict_style(theme.VERDICT_COLORS[None])
        self.verdict_label.setText(tr("Reading the model…"))
        self.message_label.setText(f"{model_id}: " + tr("its config is being read; the estimate follows"))
        self.scenario_label.setText(model_id)

    def _show_view(self, view: EstimateView) -> None:
        self.view = view
        color = theme.VERDICT_COLORS.get(view.verdict, theme.VERDICT_COLORS[None])
        self._set_verdict_style(color)
        self.verdict_label.setText(tr(view.headline))
        self.message_label.setText(localize(view.message))
        if view.gpu_name is None:
            self.scenario_label.setText(view.model_id)
        else:
            free = f" ({tr('free memory of the detected GPU')})" if view.uses_free_memory else ""
            gpus = hardware_text(view.gpu_name, view.gpu_count)
            if view.machines > 1:
                gpus = tr("{n} machines x {gpus}").format(n=view.machines, gpus=gpus)
            self.scenario_label.setText(f"{view.model_id} {tr('on')} {gpus}{free}")
        self._show_gpu_chips(view)
        self.stat_allocated.set_value(gib(view.peak_allocated_bytes))
        self.stat_reserved.set_value(gib(view.peak_reserved_bytes))
        self.stat_device.set_value(gib(view.device_bytes))
        # GPUs that hold different amounts: these figures are GPU 0's (the chips above have each GPU's)
        gpu0 = f" · {tr('GPU 0')}" if view.uneven else ""
        self.stat_allocated.caption.setText(tr("Peak allocated") + gpu0)
        self.stat_reserved.caption.setText(tr("Reserved") + gpu0)
        self.stat_device.caption.setText(tr("On the device") + gpu0)
        engine = view.estimate.engine.engine
        for card, level in (
            (self.stat_allocated, "allocated"),
            (self.stat_reserved, "reserved"),
            (self.stat_device, "device"),
        ):
            card.set_note(accuracy_note(measured_accuracy(view.mode, engine, level)))
        host = view.estimate.host_bytes
        self.stat_host.setVisible(host > 0)
        self.stat_host.set_value(gib(host) if host else "–")
        self.stat_params.set_value(count_text(view.params_total))
        params = view.estimate.params
        self.stat_active.set_value(count_text(params.trainable if view.mode == "finetune" else params.active))
        self.breakdown.show_view(view)
        self.phase_chart.show_view(view)
        self.legend.set_entries([(localize_name(name), view.colors[name]) for name in view.colors])
        self.table_model.set_rows(view.slices)
        self._fit_table(len(view.slices))
        self._show_warnings(list(view.warnings))

    def _show_gpu_chips(self, view: EstimateView) -> None:
        """One chip per GPU when the model is split: its share and its own verdict."""
        if len(view.per_gpu) <= 1 or view.gpu_memory_bytes is None:
            self.gpu_chips.setVisible(False)
            return
        chips = []
        # GPUs that hold the same are one chip ("GPU 0-127, each"): a 16-machine plan once listed 128 chips
        for first, last, g in gpu_groups(view.per_gpu):
            color = theme.VERDICT_COLORS.get(g.verdict, theme.VERDICT_COLORS[None])
            which = f"GPU {first}" if first == last else tr("{gpus} (each)").format(gpus=f"GPU {first}–{last}")
            chips.append(
                f'<span style="color:{color}">&#9632;</span>&nbsp;{which}: {gib(g.device_bytes)} '
                f"({g.fraction * 100:.0f}%)"
            )
        self.gpu_chips.setText("&nbsp;&nbsp;&nbsp; ".join(chips))
        self.gpu_chips.setVisible(True)

    def _show_error(self, message: str) -> None:
        self._set_verdict_style(theme.ERROR_COLOR)
        self.verdict_label.setText(tr("Cannot estimate"))
        self.message_label.setText(message)
        self.message_label.setStyleSheet(f"color: {theme.ERROR_COLOR};")
        self.scenario_label.setText(tr("the charts still show the last estimate"))

    def _show_warnings(self, warnings: list[str]) -> None:
        lines = ([localize(self._notice)] if self._notice else []) + [localize(w) for w in warnings]
        self.warnings_label.setVisible(bool(lines))
        self.warnings_label.setText("<br>".join(f"&#9888;&nbsp;{html.escape(w)}" for w in lines))

    def _show_status(self, busy: bool, text: str) -> None:
        busy = busy or self.pending or self.browser.hub_runner.busy
        self.progress.setVisible(busy)
        if text:
            self.status_label.setText(text)

    # ------------------------------------------------------------------ comfort
    def explain_component(self, row: int | None = None) -> Any:
        """Open the Explain dialog for breakdown row ``row`` (None: the selected row, else the largest
        component). Returns the dialog, or None when there is no estimate to explain."""
        from .dialogs import ExplainDialog

        rows = self.table_model.rows
        if self.view is None or not rows:
            return None
        if row is None:
            selected = self.table.selectionModel().selectedRows()
            row = selected[0].row() if selected else max(range(len(rows)), key=lambda i: rows[i].bytes)
        if not 0 <= row < len(rows):
            return None
        if self.explain_dialog is not None:
            self.explain_dialog.close()
        dialog = ExplainDialog(rows[row], self.view.estimate.constants, self.view.peak_phase, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.finished.connect(lambda _result, d=dialog: self._forget_explain(d))
        self.explain_dialog = dialog
        dialog.show()
        return dialog

    def _forget_explain(self, dialog: Any) -> None:
        if self.explain_dialog is dialog:
            self.explain_dialog = None

    def focus_search(self) -> None:
        self.browser.search_box.setFocus()
        self.browser.search_box.selectAll()

    def _toggle_chart_mode(self) -> None:
        self.breakdown.set_mode("bar" if self.breakdown.mode == "pie" else "pie")

    def open_settings(self) -> None:
        from .dialogs import SettingsDialog

        dialog = SettingsDialog(self)
        before = language()
        if dialog.exec():
            if language() != before:
                self.retranslate()
            self.browser.search_now()  # the endpoint or offline mode may have changed
            self.load_display_settings()
            self.form.refresh_units()
            self.estimate_now()
            if self.library_window is not None:
                self.library_window.update_comparison()  # the unit may have changed

    def load_display_settings(self) -> None:
        """The memory unit and the verdict's headroom from the saved settings (Settings dialog)."""
        from .dialogs import saved_headroom_percent, saved_unit

        set_unit(saved_unit())
        percent = saved_headroom_percent()
        self.headroom_fraction = None if percent is None else percent / 100

    def _set_language(self, code: str) -> None:
        before = language()
        set_language(code, persist=True)
        if language() != before:
            self.retranslate()

    def retranslate(self) -> None:
        """Rebuild the window's widgets in the current language, at once (no restart).

        What the user was doing is kept: the form as it is (unsaved edits included, so also the model and the
        GPU choice), the scenario it came from, the library entry, the detected GPUs, the search text, the
        chart mode, the pane sizes and the open library/compare window."""
        install_qt_translations()
        values = self.form.values()
        tab = self.tabs.currentIndex()
        mode = self.breakdown.mode
        query = self.browser.search_box.text()
        sizes = self.splitter.sizes()
        if self.explain_dialog is not None:
            self.explain_dialog.close()
            self.explain_dialog = None
        old_browser, old_central = self.browser, self.centralWidget()
        old_browser.shutdown()
        for act in self.actions():
            self.removeAction(act)
            act.deleteLater()
        self.menuBar().clear()
        self._build_panes()
        self._build_menus()
        self.progress.setAccessibleName(tr("Working"))
        if old_central is not None:
            old_central.deleteLater()
        self.splitter.setSizes(sizes)
        self.form.set_detected(self.detection, self._detected_specs)
        self.form.set_values(values)
        self.tabs.setCurrentIndex(tab)
        self.breakdown.set_mode(mode)
        if query:
            self.browser.search_box.setText(query)
        library = self.library_window
        if library is not None:
            visible, checked = library.isVisible(), library.checked_ids()
            current = library.include_current.isChecked()
            library.close()
            library.deleteLater()
            self.library_window = None
            if visible:
                window = self.open_library()
                window.set_checked(checked)
                window.include_current.setChecked(current)
        self.estimate_now()

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

    def open_scenario_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, tr("Open scenario"), "", tr("Scenario files (*.json)"))
        if path:
            self.open_scenario(Path(path))

    def open_scenario(self, path: Path) -> bool:
        """Open a scenario file; one from a newer vramdesk opens read-only (a note says so)."""
        try:
            entry = read_entry(Path(path))
        except (ScenarioFileError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(str(err)))
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
            QMessageBox.warning(self, "vramdesk", localize(str(err)))
            return False
        # what the file says about itself (NVMe offload planned as host offload...) stays beside the estimate
        self._notice = "; ".join(f"{Path(path).name}: {note}" for note in plan.notes) or None
        self.set_scenario(scenario)
        self.statusBar().showMessage(
            tr("Planned with {name}: {settings}").format(name=Path(path).name, settings=localize(describe_plan(plan))),
            8000,
        )
        return True

    # ------------------------------------------------------------------ library, compare, export
    @property
    def library(self) -> ScenarioLibrary:
        if self._library is None:
            self._library = ScenarioLibrary()
        return self._library

    def _current_for_saving(self) -> Scenario | None:
        try:
            return scenario_from_form(self._scenario, self.form.values(), self._detected_specs)
        except ValueError as err:
            QMessageBox.warning(self, "vramdesk", localize(str(err)))
            return None

    def save_to_library(self, name: str | None = None, *, as_new: bool = False) -> str | None:
        """Save the current work in the library: back to the entry it came from, or as a new entry
        (asking for a name unless ``name`` is given). Returns the entry id, None when nothing was saved.

        Saving back never replaces a plan the user did not mean to: when the form now plans another model
        than the entry holds, or another window or process saved the entry since, it asks once (replace, save as
        a new configuration, or cancel). Whatever is replaced is kept as an earlier version of the entry."""
        scenario = self._current_for_saving()
        if scenario is None:
            return None
        try:
            if self.library_entry_id is not None and not as_new:
                outcome = self._save_back(self.library_entry_id, scenario)
                if outcome == "cancel":
                    return None
                if isinstance(outcome, str):  # "new": save as a new configuration instead
                    return self.save_to_library(as_new=True)
                entry = outcome
            else:
                if name is None:
                    name = self._ask_name(scenario)
                    if name is None:
                        return None
                entry = self.library.save(scenario, name=name)
        except (LibraryError, ScenarioFileError, OSError) as err:
            QMessageBox.warning(self, "vramdesk", localize(str(err)))
            return None
        self._saved_entry(entry)
        text = tr("Saved") + f" “{entry.name}”"
        if entry.revision > 1:
            text += " — " + tr("the earlier content is kept (Library → History)")
        self.statusBar().showMessage(text, 8000)
        if self.library_window is not None:
            self.library_window.reload()
        return entry.id

    def _ask_name(self, scenario: Scenario) -> str | None:
        dialog = QInputDialog(self)
        dialog.setWindowTitle(tr("Save as"))
        dialog.setLabelText(tr("Name:"))
        dialog.setTextValue(scenario.name or scenario.model.id)
        line = dialog.findChild(QLineEdit)
        if line is not None:
            line.setMaxLength(NAME_MAX)
        if not dialog.exec():
            return None
        return dialog.textValue()

    def _save_back(self, entry_id: str, scenario: Scenario) -> Entry | str:
        """Write ``scenario`` into its entry, asking first where that would surprise; an Entry, or "new" / "cancel"."""
        try:
            on_disk = self.library.get(entry_id)
        except LibraryError:
            return "new"  # deleted meanwhile (another window, by hand): save as new under the form's name
        reason = None
        if on_disk.scenario.model.id != scenario.model.id:
            reason = tr("“{name}” holds a plan for {old}; the form now plans {new}.").format(
                name=on_disk.name, old=on_disk.scenario.model.id, new=scenario.model.id
            )
        elif self.library_entry_revision is not None and on_disk.revision != self.library_entry_revision:
            reason = tr("“{name}” was saved by another window or process since you opened it.").format(
                name=on_disk.name
            )
        expected = self.library_entry_revision
        if reason is not None:
            choice = self.ask_save_conflict(reason, on_disk.name)
            if choice != "replace":
                return choice
            expected = on_disk.revision
        try:
            return self.library.update(entry_id, scenario, expected_revision=expected)
        except StaleEntryError:  # saved by someone else between our read and our write: ask again
            self.library_entry_revision = None
            return self._save_back(entry_id, scenario)

    def ask_save_conflict(self, reason: str, name: str) -> str:
        """Replace the saved configuration, save as a new one, or cancel: "replace", "new" or "cancel"."""
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(tr("Save"))
        box.setText(reason)
        box.setInformativeText(tr("Replace it? What it holds now is kept as an earlier version (Library → History)."))
        as_new = box.addButton(tr("Save as a new configuration"), QMessageBox.ButtonRole.AcceptRole)
        replace = box.addButton(tr("Replace “{name}”").format(name=name), QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(as_new)
        box.exec()
        clicked = box.clickedButton()
        if clicked is as_new:
            return "new"
        if clicked is replace:
            return "replace"
        return "cancel"

    def _saved_entry(self, entry: Entry) -> None:
        """The form now belongs to ``entry`` as saved (its revision, its content: no unsaved changes)."""
        self.library_entry_id = entry.id
        self.library_entry_revision = entry.revision
        self._scenario = entry.scenario
        self._saved = entry.scenario
        self._keep_undo_state()
        self.update_title()

    def open_library(self) -> Any:
        from .compare import LibraryWindow

        if self.library_window is None:
            self.library_window = LibraryWindow(self.library, self, current=self.current_scenario)
            self.library_window.open_requested.connect(self._open_from_library)
            self.library_window.entry_restored.connect(self._on_entry_restored)
        self.library_window.show()
        self.library_window.raise_()
        return self.library_window

    def open_compare(self) -> Any:
        window = self.open_library()
        window.include_current.setChecked(True)
        return window

    def _open_from_library(self, scenario: Scenario) -> None:
        win = self.library_window
        entry = win.selected() if win is not None else None
        writable = entry is not None and not entry.read_only
        self.library_entry_id = entry.id if writable and entry is not None else None
        self.library_entry_revision = entry.revision if writable and entry is not None else None
        self._notice = entry.note if entry is not None else None
        self.scenario_path = None
        self._saved = scenario
        self.set_scenario(scenario)

    def _on_entry_restored(self, entry: Entry) -> None:
        """An earlier version was restored in the library: the work open from that entry follows (an undoable
        step), unless it has unsaved changes (then the next save asks, as the entry's revision moved on)."""
        if entry.id != self.library_entry_id or self.modified:
            return
        self.library_entry_revision = entry.revision
        self._saved = entry.scenario
        self._undo_label = tr("Restore an earlier version")
        self.set_scenario(entry.scenario)

    def export_current(self, fmt: str, path: Path) -> Path:
        """Write the current estimate as ``fmt`` (see :data:`vramdesk.ui.export.VIEW_FORMATS`)."""
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
        return export_view(ev.view, ev.scenario, fmt, path, mode=self.breakdown.mode, perf=perf, inputs=inputs)

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
            QMessageBox.warning(self, "vramdesk", localize(str(err)))
            return
        QApplication.restoreOverrideCursor()
        self.statusBar().showMessage(tr("Saved") + f" {out}", 4000)

    def copy_chart(self) -> None:
        """The charts (2x) on the clipboard as an image."""
        from .export import chart_image, copy_image

        if self.view is None:
            return
        copy_image(chart_image(self.view, self.breakdown.mode))
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

    # ------------------------------------------------------------------ autosave
    def _after_estimate(self, ev: Evaluation) -> None:
        if self.library_window is not None:
            self.library_window.current_changed()
        if self._autosave and ev.scenario is not None:
            self._autosave_timer.start()

    def autosave_now(self) -> None:
        self._autosave_timer.stop()
        scenario = self.current_scenario()
        if scenario is None:
            return
        try:
            self.autosave_store.write(scenario)
        except OSError as err:
            self.statusBar().showMessage(tr("Autosave failed:") + " " + localize(str(err)), 6000)

    def offer_restore(self, ask: bool = True) -> bool:
        """After a crash (a window's autosave is left and its process is gone): offer to restore that work, the
        newest first (one per start). It is kept either way (``autosave/settled``). True when it was restored."""
        orphans = self.autosave_store.orphans()
        if not orphans:
            return False
        orphan = orphans[0]
        scenario = orphan.scenario
        if ask:
            answer = QMessageBox.question(
                self,
                "vramdesk",
                tr("vramdesk did not close properly last time. Restore the work you had then?")
                + f"\n{scenario.name or scenario.model.id}",
            )
            if answer != QMessageBox.StandardButton.Yes:
                self.autosave_store.settle(orphan)
                return False
        self.autosave_store.settle(orphan)
        self.set_scenario(scenario)
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
            QMessageBox.warning(self, "vramdesk", localize(str(err)))
            return False
        self.statusBar().showMessage(tr("Saved") + f" {path}", 4000)
        if self.library_entry_id is None:
            self._saved = scenario
            self.update_title()
        return True

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if any(u.isLocalFile() and droppable_path(Path(u.toLocalFile())) for u in urls):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        for u in event.mimeData().urls():
            if u.isLocalFile() and droppable_path(Path(u.toLocalFile())):
                self.drop_path(Path(u.toLocalFile()))
                event.acceptProposedAction()
                return
        event.ignore()

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

    def closeEvent(self, event: Any) -> None:
        if self._autosave:
            self._autosave_timer.stop()
            self.autosave_store.clear()  # a clean exit: nothing of this window's to restore next time
        if self.library_window is not None:
            self.library_window.close()
        self.browser.shutdown()
        self.resolve_runner.cancel()
        self.detect_runner.cancel()
        self._advice_timer.stop()
        self.advice_runner.cancel()
        super().closeEvent(event)
