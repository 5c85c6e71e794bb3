"""The main window: the model browser (left), the workload form (centre), the results (right).

Every form change re-estimates on the next turn of the event loop (an estimate takes about a
millisecond). Catalog models resolve at once; any other model (Hub id, config.json, folder, .gguf) is
resolved on a worker (:class:`TaskRunner`, newest request wins) and the estimate follows when it is
back. GPU detection (NVML) also runs on a worker. The logic lives in :mod:`vramdesk.ui.presenter`, the texts
of the results in :mod:`vramdesk.ui.results_view`, :mod:`vramdesk.ui.speed_view` and
:mod:`vramdesk.ui.advice_view` (all Qt-free); the results pane is :mod:`vramdesk.ui.results_pane`, the menus
and file actions :mod:`vramdesk.ui.window_actions`, the library :mod:`vramdesk.ui.window_library`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QEventLoop, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QKeyEvent, QKeySequence, QUndoStack
from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QProgressBar,
    QScrollArea,
    QSplitter,
    QWidget,
)

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.performance import Performance
from vramdesk.core.plan_name import has_generated_name
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import ChangesResult, Option
from vramdesk.services.catalog import Catalog, default_catalog
from vramdesk.services.nvml import DetectionResult, detect_gpus, to_gpu_spec
from vramdesk.services.resolve import resolve_gpu, resolve_model
from vramdesk.services.search import HubAnswer, SearchResult, hub_results, local_results
from vramdesk.storage.library import Autosave, ScenarioLibrary

from . import theme
from .advice_view import Advice, apply_label, changes_panel, compute_advice, max_length_readout
from .app_identity import window_title
from .browser import HubSearch, LocalSearch, ModelBrowser
from .core_text import localize
from .forms import WorkloadForm
from .gpus_view import GpusDialog, open_for
from .i18n import language, tr
from .presenter import (
    DETECTED_PREFIX,
    EstimateView,
    Evaluation,
    FormValues,
    describe_error,
    evaluate_form,
    form_from_scenario,
    scenario_from_form,
)
from .qt_i18n import install_qt_translations
from .repaint_clock import RepaintClock
from .results_pane import ResultsPane
from .results_view import error_texts, pending_texts
from .speed_view import estimate_speed, speed_line, timing_line
from .window_actions import EXPORTS, WindowActions, droppable_path
from .window_comfort import WindowComfort
from .window_undo import FormEdit, text_field
from .work_history import WorkState, change_text, changed_fields, same_plan
from .workers import TaskRunner

__all__ = ["EXPORTS", "WINDOW_SIZE", "FormEdit", "MainWindow", "droppable_path"]

WINDOW_SIZE = (1480, 900)
BROWSER_WIDTH = 440  # the list has a Fit column next to the model, its source and size
FORM_WIDTH = 350
#: milliseconds of quiet before the current work is autosaved
AUTOSAVE_DELAY_MS = 1500
#: milliseconds of quiet before the advice (smallest changes, max context) is computed on a worker
ADVICE_DELAY_MS = 60

Resolver = Callable[[str], ModelFacts]
Detector = Callable[[], DetectionResult]


def _default_hub(query: str, cancel: threading.Event) -> HubAnswer:
    return hub_results(query, cancel=cancel)


def _default_local(query: str) -> list[SearchResult]:
    return local_results(query, limit=40)


class MainWindow(WindowActions, WindowComfort, QMainWindow):
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
        #: seconds of the last estimate and the update of the widgets (for the tests and benchmarks)
        self.last_update_seconds = 0.0
        #: seconds from the start of the last estimate to the end of the repaint that showed it (the status bar's)
        self.last_repaint_seconds: float | None = None
        self._repaint_clock = RepaintClock(self)
        self._repaint_clock.repainted.connect(self._repainted)
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
        #: what the advice worker last answered (None: nothing yet for the current estimate)
        self.advice: Advice | None = None
        self.performance: Performance | None = None
        self.headroom_fraction: float | None = None
        self._advice_ev: Evaluation | None = None
        self._change_options: tuple[Option, ...] = ()
        #: the open Explain dialog, if any
        self.explain_dialog: Any = None
        #: the Which GPUs view (View menu), once opened
        self.gpus_dialog: GpusDialog | None = None
        self.load_display_settings()

        self.setWindowTitle(window_title(tr("Untitled")))
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
        self.detect_runner.failed.connect(lambda err: self._on_detected(DetectionResult(reason=describe_error(err))))
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
            if text_field(widget) is not None:
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

    def _build_results(self) -> ResultsPane:
        """The results pane; its widgets are the window's attributes of the same names (tests reach them here)."""
        r = self.results = ResultsPane(self)
        r.change_chosen.connect(self.apply_change)
        r.explain_requested.connect(lambda row: self.explain_component(row if row >= 0 else None))
        self.verdict_frame, self.verdict_label, self.message_label = r.verdict_frame, r.verdict_label, r.message_label
        self.scenario_label, self.gpu_chips, self.speed_label = r.scenario_label, r.gpu_chips, r.speed_label
        self.advice_box, self.advice_caption, self.advice_buttons = r.advice_box, r.advice_caption, r.advice_buttons
        self.stat_allocated, self.stat_reserved, self.stat_device = r.stat_allocated, r.stat_reserved, r.stat_device
        self.stat_host, self.stat_params, self.stat_active = r.stat_host, r.stat_params, r.stat_active
        self.breakdown, self.phase_chart, self.legend = r.breakdown, r.phase_chart, r.legend
        self.explain_button, self.table_model, self.table = r.explain_button, r.table_model, r.table
        self.warnings_label = r.warnings_label
        return r

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
            self._resolve_errors[ref] = describe_error(error) or type(error).__name__
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
            edit = text_field(watched)
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
        """The library entry's name, unless it is the plan's generated name: that one follows the plan (and the
        entry is renamed when the plan is saved back)."""
        if self.library_entry_id is None or self._saved is None or not self._saved.name:
            return None
        return None if has_generated_name(self._saved) else self._saved.name

    def update_title(self) -> None:
        """The configuration's name (or the model's, or "Untitled") with Qt's unsaved-changes marker and the app's."""
        model = self.form.values().model
        current = self.current_scenario()
        # the plan's own name (a generated one follows the plan); a name typed for another model is stale
        own = current.name if current is not None and current.model.id == model else None
        name = self._entry_name() or own or model or tr("Untitled")
        self.setWindowTitle(window_title(name))
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
            self._show_error(localize(ev.error) if ev.error else tr("Cannot estimate"))
            self.form.set_problem(localize(ev.error) if ev.error else None)
            self.results.show_speed(None)
        self._request_advice(ev)
        facts = self._facts.get(form.model)
        if facts is None and self._catalog.find(form.model) is not None:
            facts = self._catalog.facts(form.model)
        self.browser.show_facts(facts, form.model)
        self.browser.set_plan(ev.scenario, self._gpu_spec(ev), self.headroom_fraction)  # the list's fit badges
        self.last_update_seconds = time.perf_counter() - t0
        if self.isVisible():  # the status bar says the time to the repaint once it is done (_repainted)
            self._repaint_clock.watch(self)
            self._repaint_clock.start(t0)
        else:
            self.timing_label.setText(timing_line(self.last_update_seconds).text)
        self.update_title()
        self.estimated.emit(ev)
        return ev

    def _repainted(self, total_s: float, paint_s: float) -> None:
        """The repaint after an estimate is done: the status bar says how long the user waited for it."""
        self.last_repaint_seconds = total_s
        line = timing_line(self.last_update_seconds, total_s, paint_s)
        self.timing_label.setText(line.text)
        self.timing_label.setToolTip(line.tooltip)

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
            self.results.show_speed(None)
            return
        self.performance = estimate_speed(ev.view, ev.scenario, self._known_facts, gpu)
        self.results.show_speed(speed_line(self.performance) if self.performance is not None else None)

    def _request_advice(self, ev: Evaluation) -> None:
        """Clear the advice of the previous estimate and compute the new one on a worker after a short pause."""
        self._advice_ev = ev
        gpu = self._gpu_spec(ev) if ev.view is not None else None
        if gpu is None or ev.view is None or ev.view.verdict != "does not fit":
            self._show_changes(None)
        if gpu is None or ev.view is None:
            self._advice_timer.stop()
            self.advice_runner.cancel()
            self.advice = None
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
        scenario, verdict, headroom = ev.scenario, ev.view.verdict, self.headroom_fraction
        facts = self._known_facts(scenario.model.id)

        def job(cancel: threading.Event) -> Advice:
            return compute_advice(scenario, facts, gpu, verdict=verdict, headroom_fraction=headroom, cancel=cancel)

        return self.advice_runner.submit(job, label=scenario.model.id)

    def _on_advice(self, advice: Advice) -> None:
        self.advice = advice
        readout = max_length_readout(advice)
        self.form.show_max_length(readout.length_field, readout.value, readout.tooltip, readout.tight)
        self._show_changes(advice.changes)

    def _on_advice_failed(self, error: object) -> None:
        self.advice = Advice(scenario=None, error=str(error) or type(error).__name__)
        self.form.show_max_length("input_len", None, "")
        self._show_changes(None)

    def _show_changes(self, changes: ChangesResult | None) -> None:
        count = self._advice_ev.scenario.hardware.gpu_count if self._advice_ev and self._advice_ev.scenario else 1
        panel = changes_panel(changes, self.view.verdict if self.view is not None else None, count)
        self._change_options = panel.options
        self.results.show_changes(panel)

    def apply_change(self, index: int) -> None:
        """Put the scenario of listed change ``index`` in the form (a detected GPU stays selected)."""
        options = self._change_options
        if 0 <= index < len(options):
            self.apply_plan(Scenario.model_validate(options[index].scenario), apply_label(options[index]))

    def apply_plan(self, scenario: Scenario, label: str, keep_detected: bool = True) -> None:
        """Put ``scenario`` in the form as one undo step named ``label`` (a detected GPU stays selected, unless
        ``keep_detected`` is False: the plan names its own GPU)."""
        key = self.form.values().gpu
        self._undo_label = label
        self._scenario = scenario
        self.form.set_values(
            form_from_scenario(scenario, key if keep_detected and key in self._detected_specs else None)
        )
        self.estimate_now()

    def open_gpus_view(self) -> Any:
        """The Which GPUs view (View menu) for the plan the form shows; a chosen row plans for its GPUs."""
        return open_for(self)

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

    def _show_pending(self, model_id: str) -> None:
        self.results.show_verdict(pending_texts(model_id))

    def _show_view(self, view: EstimateView) -> None:
        self.view = view
        self.results.show_view(view, self._notice)

    def _show_error(self, message: str) -> None:
        self.results.show_verdict(error_texts(message))

    def _show_status(self, busy: bool, text: str) -> None:
        busy = busy or self.pending or self.browser.hub_runner.busy
        self.progress.setVisible(busy)
        if text:
            self.status_label.setText(text)

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
        if self.gpus_dialog is not None:  # (its texts are in the old language: it opens anew)
            self.gpus_dialog.close()
            self.gpus_dialog.deleteLater()
            self.gpus_dialog = None
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

    def closeEvent(self, event: Any) -> None:
        if self._autosave:
            self._autosave_timer.stop()
            self.autosave_store.clear()  # a clean exit: nothing of this window's to restore next time
        if self.library_window is not None:
            self.library_window.close()
        if self.gpus_dialog is not None:
            self.gpus_dialog.close()
        self.browser.shutdown()
        self.resolve_runner.cancel()
        self.detect_runner.cancel()
        self._advice_timer.stop()
        self.advice_runner.cancel()
        super().closeEvent(event)
