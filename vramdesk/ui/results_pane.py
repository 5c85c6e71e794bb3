"""The results side of the main window: the verdict box (with one chip per GPU and the changes that make a plan
fit), the readout cards, the speed line, the breakdown and phase charts, the legend, the components table and
the warnings.

The pane builds no text of its own from an estimate: :mod:`vramdesk.ui.results_view`,
:mod:`vramdesk.ui.speed_view` and :mod:`vramdesk.ui.advice_view` do (Qt-free), and it copies them into widgets.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from . import theme
from .advice_view import MAX_CHANGES, ChangesPanel
from .charts import BreakdownChart, PhaseChart
from .i18n import tr
from .presenter import EstimateView
from .results_view import Readout, VerdictTexts, gpu_chips, legend_entries, readouts, verdict_texts, warnings_html
from .speed_view import SpeedLine
from .widgets import ComponentTableModel, Legend, StatCard

#: rows the components table shows without scrolling (it grows up to this, then scrolls)
TABLE_ROWS = (4, 9)
ROW_HEIGHT = 22


class ResultsPane(QWidget):
    """Signals: ``change_chosen(int)``, a listed change was clicked (its index); ``explain_requested(int)``, the
    Explain button (-1: the selected row) or a double-clicked row of the table (its index)."""

    change_chosen = Signal(int)
    explain_requested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("results")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 10)
        layout.setSpacing(8)
        layout.addWidget(self._build_verdict())
        layout.addLayout(self._build_readouts())
        self.speed_label = QLabel("")
        self.speed_label.setObjectName("caption")
        self.speed_label.setAccessibleName(tr("Speed"))
        self.speed_label.setVisible(False)
        layout.addWidget(self.speed_label)
        layout.addLayout(self._build_charts(), 5)
        layout.addLayout(self._build_legend())
        layout.addWidget(self._build_table())
        self.warnings_label = QLabel(self)
        self.warnings_label.setObjectName("warnings")
        self.warnings_label.setWordWrap(True)
        self.warnings_label.setTextFormat(Qt.TextFormat.RichText)
        self.warnings_label.setVisible(False)
        layout.addWidget(self.warnings_label)

    # ------------------------------------------------------------------ building
    def _build_verdict(self) -> QFrame:
        self.verdict_frame = QFrame(self)
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
        vl.addWidget(self._build_advice(self.verdict_frame))
        return self.verdict_frame

    def _build_advice(self, parent: QWidget) -> QWidget:
        self.advice_box = QWidget(parent)
        self.advice_box.setAccessibleName(tr("Changes that make it fit"))
        al = QVBoxLayout(self.advice_box)
        al.setContentsMargins(0, 4, 0, 0)
        al.setSpacing(2)
        self.advice_caption = QLabel(tr("Smallest changes that make it fit (click one to apply it):"))
        self.advice_caption.setObjectName("caption")
        al.addWidget(self.advice_caption)
        self.advice_buttons: list[QPushButton] = []
        #: the heading above a button that starts a group ("On this GPU", "With more GPUs")
        self.advice_headings: list[QLabel] = []
        for i in range(MAX_CHANGES):
            h = QLabel("", self.advice_box)
            h.setObjectName("caption")
            h.setStyleSheet("QLabel { font-weight: 600; padding-top: 2px; }")
            h.setVisible(False)
            al.addWidget(h)
            self.advice_headings.append(h)
            b = QPushButton("", self.advice_box)
            b.setFlat(True)
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            b.setStyleSheet("QPushButton { text-align: left; padding: 1px 4px; }")
            b.clicked.connect(lambda _checked=False, i=i: self.change_chosen.emit(i))
            b.setVisible(False)
            al.addWidget(b)
            self.advice_buttons.append(b)
        #: how the changes are ranked, in one sentence (the whole cost rule is its tooltip)
        self.advice_rule = QLabel("", self.advice_box)
        self.advice_rule.setObjectName("caption")
        self.advice_rule.setWordWrap(True)
        self.advice_rule.setVisible(False)
        al.addWidget(self.advice_rule)
        self.advice_box.setVisible(False)
        return self.advice_box

    def _build_readouts(self) -> QHBoxLayout:
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
        return stats

    def _build_charts(self) -> QHBoxLayout:
        charts = QHBoxLayout()
        charts.setSpacing(8)
        self.breakdown = BreakdownChart()
        self.phase_chart = PhaseChart()
        self.breakdown.setAccessibleName(tr("Breakdown chart"))
        self.phase_chart.setAccessibleName(tr("Phase chart"))
        for chart, stretch in ((self.breakdown, 5), (self.phase_chart, 6)):
            frame = QFrame(self)
            frame.setObjectName("chartPanel")
            fl = QVBoxLayout(frame)
            fl.setContentsMargins(1, 1, 1, 1)
            fl.addWidget(chart)
            charts.addWidget(frame, stretch)
        return charts

    def _build_legend(self) -> QHBoxLayout:
        self.legend = Legend(self)
        self.explain_button = QPushButton(tr("Explain…"), self)
        self.explain_button.setToolTip(
            tr("The selected component's full explanation and the constants used, with their sources")
        )
        self.explain_button.clicked.connect(lambda _checked=False: self.explain_requested.emit(-1))
        legend_row = QHBoxLayout()
        legend_row.setSpacing(8)
        legend_row.addWidget(self.legend, 1)
        legend_row.addWidget(self.explain_button, 0, Qt.AlignmentFlag.AlignTop)
        return legend_row

    def _build_table(self) -> QTableView:
        self.table_model = ComponentTableModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.table_model)
        self.table.setAccessibleName(tr("Components at the peak"))
        self.table.setTabKeyNavigation(False)  # Tab moves on to the next field; the arrows move in the table
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)
        self.table.setShowGrid(False)
        self.table.setToolTip(tr("Double-click a row for its full explanation and sources"))
        self.table.doubleClicked.connect(lambda index: self.explain_requested.emit(index.row()))
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        header.setStretchLastSection(True)
        for col, width in ((0, 190), (1, 100), (2, 70), (3, 60)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, width)
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.fit_table(TABLE_ROWS[0])
        return self.table

    def fit_table(self, rows: int) -> None:
        """Make the table ``rows`` rows high (within :data:`TABLE_ROWS`)."""
        rows = max(TABLE_ROWS[0], min(TABLE_ROWS[1], rows))
        header = self.table.horizontalHeader().sizeHint().height()
        self.table.setFixedHeight(header + rows * ROW_HEIGHT + 2 * self.table.frameWidth() + 2)

    def selected_row(self) -> int | None:
        """The table's selected row, None when none is."""
        selected = self.table.selectionModel().selectedRows()
        return selected[0].row() if selected else None

    # ------------------------------------------------------------------ showing
    def show_verdict(self, texts: VerdictTexts) -> None:
        p = theme.current()
        color = texts.color
        tint = theme.mix(color, p.background, 0.92)
        self.verdict_frame.setStyleSheet(
            f"QFrame#verdict {{ background: {tint}; border: 1px solid {theme.mix(color, p.background, 0.6)}; "
            f"border-left: 5px solid {color}; border-radius: 6px; }}"
        )
        self.verdict_label.setStyleSheet(f"color: {color}; font-size: 18pt; font-weight: bold;")
        self.message_label.setStyleSheet(f"color: {theme.ERROR_COLOR if texts.is_error else p.text};")
        self.verdict_label.setText(texts.title)
        self.message_label.setText(texts.message)
        self.scenario_label.setText(texts.caption)

    def show_view(self, view: EstimateView, notice: str | None = None) -> None:
        """Everything of one estimate; ``notice`` (a file's note) leads the warnings."""
        self.show_verdict(verdict_texts(view))
        chips = gpu_chips(view)
        self.gpu_chips.setVisible(chips is not None)
        if chips is not None:
            self.gpu_chips.setText(chips)
        r = readouts(view)
        for card, readout in (
            (self.stat_allocated, r.allocated),
            (self.stat_reserved, r.reserved),
            (self.stat_device, r.device),
            (self.stat_host, r.host),
            (self.stat_params, r.params),
            (self.stat_active, r.active),
        ):
            self._show_readout(card, readout)
        self.stat_host.setVisible(r.host_visible)
        self.breakdown.show_view(view)
        self.phase_chart.show_view(view)
        self.legend.set_entries(legend_entries(view))
        self.table_model.set_rows(view.slices)
        self.fit_table(len(view.slices))
        text = warnings_html(notice, view.warnings)
        self.warnings_label.setVisible(bool(text))
        self.warnings_label.setText(text)

    @staticmethod
    def _show_readout(card: StatCard, readout: Readout) -> None:
        card.caption.setText(readout.caption)
        card.set_value(readout.value)
        if readout.note:
            card.set_note(readout.note)

    def show_speed(self, line: SpeedLine | None) -> None:
        """The speed line (None hides it)."""
        if line is None:
            self.speed_label.setVisible(False)
            return
        self.speed_label.setText(line.text)
        self.speed_label.setToolTip(line.tooltip)
        self.speed_label.setVisible(True)

    def show_changes(self, panel: ChangesPanel) -> None:
        for i, (h, b) in enumerate(zip(self.advice_headings, self.advice_buttons, strict=True)):
            button = panel.buttons[i] if i < len(panel.buttons) else None
            h.setText(button.heading if button is not None else "")
            h.setVisible(button is not None and bool(button.heading))
            if button is not None:
                b.setText(button.text)
                b.setToolTip(button.tooltip)
            b.setVisible(button is not None)
        self.advice_caption.setText(panel.caption)
        self.advice_rule.setText(panel.rule)
        self.advice_rule.setToolTip(panel.rule_tooltip)
        self.advice_rule.setVisible(bool(panel.rule))
        self.advice_box.setVisible(panel.visible)
