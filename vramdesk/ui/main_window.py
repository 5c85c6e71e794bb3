"""The main window: a scenario form on the left, the verdict, levels, charts and components on the right.

Every change of the form re-estimates on the next turn of the event loop (an estimate takes about a
millisecond, so no thread is needed). The logic lives in :mod:`vramdesk.ui.presenter`; this module only
copies values between widgets and that plain data.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QSizePolicy,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.gpu import GIB
from vramdesk.core.scenario import MAX_TOKENS, Scenario
from vramdesk.services.catalog import Catalog, default_catalog

from . import theme
from .charts import BreakdownChart, PhaseChart
from .presenter import (
    ENGINES,
    KV_DTYPES,
    WEIGHT_FORMATS,
    EstimateView,
    Evaluation,
    FormValues,
    count_text,
    evaluate_form,
    form_from_scenario,
    gib,
)
from .widgets import ComponentTableModel, Legend, StatCard

WINDOW_SIZE = (1200, 760)
FORM_WIDTH = 330
#: rows the components table shows without scrolling (it grows up to this, then scrolls)
TABLE_ROWS = (4, 8)
ROW_HEIGHT = 22


def _select(combo: QComboBox, value: object, text: str | None = None) -> None:
    """Select the item whose data is ``value``, adding one (labelled ``text``) when there is none."""
    i = combo.findData(value)
    if i < 0:
        combo.addItem(text if text is not None else str(value), value)
        i = combo.count() - 1
    combo.setCurrentIndex(i)


def _spin(minimum: int, maximum: int, tooltip: str) -> QSpinBox:
    s = QSpinBox()
    s.setRange(minimum, maximum)
    s.setGroupSeparatorShown(True)
    s.setAccelerated(True)
    s.setToolTip(tooltip)
    s.setAlignment(Qt.AlignmentFlag.AlignRight)
    return s


class MainWindow(QMainWindow):
    """Signals: ``estimated(object)`` with the :class:`Evaluation` of every re-estimate."""

    estimated = Signal(object)

    def __init__(
        self, scenario: Scenario | None = None, *, catalog: Catalog | None = None, notice: str | None = None
    ) -> None:
        super().__init__()
        self._catalog = catalog or default_catalog()
        self._scenario: Scenario = scenario or DEFAULT_SCENARIO
        self._notice = notice
        self.evaluation: Evaluation | None = None
        self.view: EstimateView | None = None
        self._loading = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.estimate_now)

        self.setWindowTitle("vramdesk")
        self.setStyleSheet(theme.STYLE_SHEET)
        central = QWidget(self)
        central.setObjectName("central")
        root = QHBoxLayout(central)
        root.setContentsMargins(0, 0, 0, 0)
        root.setSpacing(0)
        root.addWidget(self._build_form())
        root.addWidget(self._build_results(), 1)
        self.setCentralWidget(central)
        self.resize(*WINDOW_SIZE)
        self.set_scenario(self._scenario)

    # ------------------------------------------------------------------ building
    def _build_form(self) -> QFrame:
        panel = QFrame(self)
        panel.setObjectName("formPanel")
        panel.setFixedWidth(FORM_WIDTH)
        title = QLabel("vramdesk")
        title.setObjectName("appTitle")
        subtitle = QLabel("Will this model fit on this GPU?")
        subtitle.setObjectName("appSubtitle")

        self.model_combo = QComboBox()
        self.model_combo.setEditable(False)
        for m in sorted(self._catalog.models(), key=lambda m: m.id.lower()):
            self.model_combo.addItem(m.id, m.id)
        self.model_combo.setToolTip("A model from the bundled catalog")
        self.model_combo.setMaxVisibleItems(20)
        self.engine_combo = QComboBox()
        for e in ENGINES:
            self.engine_combo.addItem(e, e)
        self.engine_combo.setToolTip(
            "The inference engine: its memory rules differ (growing cache, pre-allocated pool, GGUF blocks)"
        )
        self.weights_combo = QComboBox()
        for w in WEIGHT_FORMATS:
            self.weights_combo.addItem("auto (checkpoint)" if w == "auto" else w, w)
        self.weights_combo.setToolTip("How the weights are stored in memory")
        self.kv_combo = QComboBox()
        for k in KV_DTYPES:
            self.kv_combo.addItem("auto (compute)" if k == "auto" else k, k)
        self.kv_combo.setToolTip("Data type of the KV cache")
        self.batch_spin = _spin(1, 65536, "Sequences generated at once")
        self.input_spin = _spin(0, MAX_TOKENS, "Prompt tokens per sequence; auto = the model's context, at most 4,096")
        self.input_spin.setSpecialValueText("auto")
        self.input_spin.setSingleStep(512)
        self.output_spin = _spin(0, MAX_TOKENS, "Generated tokens per sequence")
        self.output_spin.setSingleStep(128)
        self.gpu_combo = QComboBox()
        self.gpu_combo.addItem("No GPU", None)
        for g in self._catalog.gpus():
            self.gpu_combo.addItem(f"{g.name} — {g.memory_bytes / GIB:.2f} GiB", g.name)
        self.gpu_combo.setToolTip("The GPU to check the estimate against")
        self.gpu_count_spin = _spin(1, 4096, "Number of GPUs of this kind")
        for combo in (self.model_combo, self.engine_combo, self.weights_combo, self.kv_combo, self.gpu_combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(10)
            combo.currentIndexChanged.connect(self._on_form_changed)
        for spin in (self.batch_spin, self.input_spin, self.output_spin, self.gpu_count_spin):
            spin.valueChanged.connect(self._on_form_changed)

        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(2)
        grid.setColumnStretch(0, 1)
        grid.setColumnStretch(1, 1)
        row = 0

        def section(text: str) -> None:
            nonlocal row
            label = QLabel(text)
            label.setObjectName("sectionTitle")
            if row:
                grid.setRowMinimumHeight(row, 10)  # a gap above every section but the first
                row += 1
            grid.addWidget(label, row, 0, 1, 2)
            grid.setRowMinimumHeight(row + 1, 4)
            row += 2

        def fields(*pairs: tuple[str, QWidget], span: int = 1) -> None:
            """One or two fields side by side, each with its label above it."""
            nonlocal row
            for col, (text, widget) in enumerate(pairs):
                label = QLabel(text)
                label.setObjectName("fieldLabel")
                label.setBuddy(widget)
                grid.addWidget(label, row, col, 1, span)
                grid.addWidget(widget, row + 1, col, 1, span)
            grid.setRowMinimumHeight(row + 2, 6)
            row += 3

        section("Model and precision")
        fields(("&Model", self.model_combo), span=2)
        fields(("&Weights", self.weights_combo), ("&KV cache", self.kv_combo))
        section("Inference")
        fields(("&Engine", self.engine_combo), ("&Batch", self.batch_spin))
        fields(("&Input tokens", self.input_spin), ("&Output tokens", self.output_spin))
        section("Hardware")
        fields(("&GPU", self.gpu_combo), span=2)
        fields(("GPU &count", self.gpu_count_spin))

        hardware_note = QLabel(
            "Memory is per GPU. Units are GiB (2³⁰ bytes). Hover a number to see where it comes from."
        )
        hardware_note.setObjectName("caption")
        hardware_note.setWordWrap(True)

        layout = QVBoxLayout(panel)
        layout.setContentsMargins(16, 14, 14, 14)
        layout.setSpacing(6)
        layout.addWidget(title)
        layout.addWidget(subtitle)
        layout.addSpacing(10)
        layout.addLayout(grid)
        layout.addStretch(1)
        layout.addWidget(hardware_note)
        return panel

    def _build_results(self) -> QWidget:
        box = QWidget(self)
        layout = QVBoxLayout(box)
        layout.setContentsMargins(14, 12, 14, 10)
        layout.setSpacing(8)

        self.verdict_frame = QFrame(box)
        self.verdict_frame.setObjectName("verdict")
        self.verdict_label = QLabel("–")
        self.verdict_label.setObjectName("verdictLabel")
        self.message_label = QLabel("")
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.scenario_label = QLabel("")
        self.scenario_label.setObjectName("caption")
        vl = QVBoxLayout(self.verdict_frame)
        vl.setContentsMargins(14, 6, 12, 8)
        vl.setSpacing(2)
        head = QHBoxLayout()
        head.setSpacing(12)
        head.addWidget(self.verdict_label)
        head.addWidget(self.scenario_label, 1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        vl.addLayout(head)
        vl.addWidget(self.message_label)
        layout.addWidget(self.verdict_frame)

        stats = QHBoxLayout()
        stats.setSpacing(8)
        self.stat_allocated = StatCard(
            "Peak allocated", "What torch.cuda.max_memory_allocated() reports at the peak phase"
        )
        self.stat_reserved = StatCard("Reserved", "What the caching allocator holds: torch.cuda.max_memory_reserved()")
        self.stat_device = StatCard(
            "On the device",
            "What nvidia-smi / NVML shows for the process: reserved + "
            "CUDA context and libraries; the fit verdict uses this",
        )
        self.stat_params = StatCard("Parameters", "Unique parameters of the model the engine runs")
        self.stat_active = StatCard("Active per token", "Parameters touched per token (MoE: routed + shared experts)")
        for card in (self.stat_allocated, self.stat_reserved, self.stat_device, self.stat_params, self.stat_active):
            stats.addWidget(card, 1)
        layout.addLayout(stats)

        charts = QHBoxLayout()
        charts.setSpacing(8)
        self.breakdown = BreakdownChart()
        self.phase_chart = PhaseChart()
        for chart, stretch in ((self.breakdown, 5), (self.phase_chart, 6)):
            frame = QFrame(box)
            frame.setObjectName("chartPanel")
            fl = QVBoxLayout(frame)
            fl.setContentsMargins(1, 1, 1, 1)
            fl.addWidget(chart)
            charts.addWidget(frame, stretch)
        layout.addLayout(charts, 5)

        self.legend = Legend(box)
        layout.addWidget(self.legend)

        self.table_model = ComponentTableModel(self)
        self.table = QTableView(box)
        self.table.setModel(self.table_model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)
        self.table.setShowGrid(False)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        header.setStretchLastSection(True)
        for col, width in ((0, 170), (1, 95), (2, 60), (3, 60)):
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

    def _fit_table(self, rows: int) -> None:
        rows = max(TABLE_ROWS[0], min(TABLE_ROWS[1], rows))
        header = self.table.horizontalHeader().sizeHint().height()
        self.table.setFixedHeight(header + rows * ROW_HEIGHT + 2 * self.table.frameWidth() + 2)

    # ------------------------------------------------------------------ form <-> scenario
    @property
    def scenario(self) -> Scenario:
        """The scenario the form was loaded from (fields the form does not show come from it)."""
        return self._scenario

    def set_scenario(self, scenario: Scenario) -> None:
        """Show ``scenario`` in the form and estimate it now."""
        self._scenario = scenario
        form = form_from_scenario(scenario)
        self._loading = True
        try:
            _select(self.model_combo, form.model)
            _select(self.engine_combo, form.engine)
            _select(self.weights_combo, form.weights)
            _select(self.kv_combo, form.kv_dtype)
            _select(self.gpu_combo, form.gpu)
            self.batch_spin.setValue(form.batch)
            self.input_spin.setValue(form.input_len or 0)
            self.output_spin.setValue(form.output_len)
            self.gpu_count_spin.setValue(form.gpu_count)
        finally:
            self._loading = False
        self.estimate_now()

    def form_values(self) -> FormValues:
        return FormValues(
            model=str(self.model_combo.currentData()),
            engine=str(self.engine_combo.currentData()),
            weights=str(self.weights_combo.currentData()),
            batch=self.batch_spin.value(),
            input_len=self.input_spin.value() or None,
            output_len=self.output_spin.value(),
            kv_dtype=str(self.kv_combo.currentData()),
            gpu=self.gpu_combo.currentData(),
            gpu_count=self.gpu_count_spin.value(),
        )

    def _on_form_changed(self) -> None:
        if not self._loading:
            self._timer.start()

    # ------------------------------------------------------------------ results
    def estimate_now(self) -> Evaluation:
        """Estimate what the form shows and update the results side; returns what it showed."""
        self._timer.stop()
        ev = evaluate_form(self._scenario, self.form_values())
        self.evaluation = ev
        if ev.view is not None:
            self._show_view(ev.view)
        else:
            self._show_error(ev.error or "unknown error")
        self.estimated.emit(ev)
        return ev

    def _set_verdict_style(self, color: str) -> None:
        tint = theme.mix(color, "#ffffff", 0.92)
        self.verdict_frame.setStyleSheet(
            f"QFrame#verdict {{ background: {tint}; border: 1px solid {theme.mix(color, '#ffffff', 0.6)}; "
            f"border-left: 5px solid {color}; border-radius: 6px; }}"
        )
        self.verdict_label.setStyleSheet(f"color: {color}; font-size: 18pt; font-weight: bold;")
        self.message_label.setStyleSheet(f"color: {theme.TEXT};")

    def _show_view(self, view: EstimateView) -> None:
        self.view = view
        color = theme.VERDICT_COLORS.get(view.verdict, theme.VERDICT_COLORS[None])
        self._set_verdict_style(color)
        self.verdict_label.setText(view.headline)
        self.message_label.setText(view.message)
        if view.gpu_name is None:
            self.scenario_label.setText(view.model_id)
        else:
            gpus = f"{view.gpu_count} x {view.gpu_name}" if view.gpu_count > 1 else view.gpu_name
            self.scenario_label.setText(f"{view.model_id} on {gpus}")
        self.setWindowTitle(f"vramdesk — {view.model_id}")
        self.stat_allocated.set_value(gib(view.peak_allocated_bytes))
        self.stat_reserved.set_value(gib(view.peak_reserved_bytes))
        self.stat_device.set_value(gib(view.device_bytes))
        self.stat_params.set_value(count_text(view.params_total))
        self.stat_active.set_value(count_text(view.params_active))
        self.breakdown.show_view(view)
        self.phase_chart.show_view(view)
        self.legend.set_entries([(name, view.colors[name]) for name in view.colors])
        self.table_model.set_rows(view.slices)
        self._fit_table(len(view.slices))
        self._show_warnings(list(view.warnings))

    def _show_error(self, message: str) -> None:
        self._set_verdict_style(theme.ERROR_COLOR)
        self.verdict_label.setText("Cannot estimate")
        self.message_label.setText(message)
        self.message_label.setStyleSheet(f"color: {theme.ERROR_COLOR};")
        self.scenario_label.setText("the charts still show the last estimate")

    def _show_warnings(self, warnings: list[str]) -> None:
        lines = ([self._notice] if self._notice else []) + warnings
        self.warnings_label.setVisible(bool(lines))
        self.warnings_label.setText("<br>".join(f"&#9888;&nbsp;{html.escape(w)}" for w in lines))
