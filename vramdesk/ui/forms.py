"""The workload form (centre of the window): model and precision, Inference / Fine-tune tabs, hardware.

The widgets come from the option table (``vramdesk.core.options``): each option's form group names the box it
sits in, its declaration order is the order of the rows, and :mod:`vramdesk.ui.option_fields` builds its widget.
Only the model and the GPU lists are built here. Every widget change emits ``changed``;
:meth:`WorkloadForm.values` reads the form into plain :class:`FormValues` and :meth:`WorkloadForm.set_values`
shows them. Each choice has a tooltip that says what it changes in memory.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from vramdesk.core.engines import ENGINES, engine
from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.messages import free
from vramdesk.core.options import option, options
from vramdesk.services.catalog import Catalog
from vramdesk.services.nvml import DetectionResult

from .core_text import localize
from .i18n import tr
from .option_fields import ChecksField, OptionField, field_for, select
from .presenter import DETECTED_PREFIX, PARENTHESES, FormValues, unit_bytes, unit_name

#: the form boxes, in the window's order: the option table's group -> the box's title ("" = no box of its own)
GROUPS: tuple[tuple[str, str], ...] = (
    ("model", "Model and precision"),
    ("inference", ""),
    ("vllm", "vLLM"),
    ("llamacpp", "llama.cpp"),
    ("sglang", "SGLang"),
    ("ollama", "Ollama"),
    ("device_map", "transformers device_map"),
    ("finetune", ""),
    ("hardware", "Hardware"),
)


def _readout() -> QLabel:
    """A small "max 40,448" label next to a length field (filled by the window from the solver)."""
    label = QLabel("")
    label.setObjectName("caption")
    label.setMinimumWidth(70)
    label.setAccessibleName(tr("Largest value that fits"))
    return label


def _with_readout(field: QWidget, readout: QLabel) -> QWidget:
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(6)
    row.addWidget(field, 1)
    row.addWidget(readout)
    return box


class WorkloadForm(QWidget):
    changed = Signal()

    def __init__(self, catalog: Catalog, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._catalog = catalog
        self._loading = False
        self._detection: tuple[DetectionResult | None, dict[str, GpuSpec]] = (None, {})
        #: whether models outside the catalog have a vision tower (see note_model_facts)
        self._vision_known: dict[str, bool] = {}
        #: the widget of every option the form shows, by option name
        self.fields: dict[str, OptionField] = {
            o.name: field_for(o) for o in options() if o.group not in ("hidden",) and o.name != "gpu"
        }
        #: the "largest that fits" labels beside the length fields, by option name
        self.readouts: dict[str, QLabel] = {n: _readout() for n, f in self.fields.items() if f.opt.form.get("readout")}
        self._vision_tip = self.widget("vision_tower").toolTip()

        self.model_combo = QComboBox()
        for m in sorted(catalog.models(), key=lambda m: m.id.lower()):
            self.model_combo.addItem(m.id, m.id)
        self.model_combo.setToolTip(tr("The model to estimate: pick one in the browser, or drop a config.json here"))
        self.model_combo.setMaxVisibleItems(20)
        self.model_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.model_combo.setMinimumContentsLength(12)
        self.detected_label = QLabel("")
        self.detected_label.setObjectName("caption")
        self.detected_label.setWordWrap(True)
        self.detected_label.setTextFormat(Qt.TextFormat.RichText)
        self.gpu_combo = QComboBox()
        self.gpu_combo.setToolTip(tr(option("gpu").help))  # the list itself is the catalog's and NVML's
        self.gpu_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.gpu_combo.setMinimumContentsLength(12)
        self.gpu_combo.setMaxVisibleItems(24)
        self._fill_gpus({})

        boxes = {group: self._group_layout(group, title) for group, title in GROUPS}
        #: the boxes of the engines' own settings, by form group (shown for their engine only)
        self.engine_boxes = {e.form_group: boxes[e.form_group][0] for e in ENGINES.values()}
        boxes["model"][1].insertRow(0, tr("&Model"), self.model_combo)
        boxes["hardware"][1].insertRow(0, self.detected_label)
        boxes["hardware"][1].insertRow(1, tr(option("gpu").label), self.gpu_combo)

        inf_page = QWidget()
        il = QVBoxLayout(inf_page)
        il.setContentsMargins(4, 6, 4, 4)
        boxes["inference"][1].setContentsMargins(0, 0, 0, 0)  # the page's own margins frame it, as its boxes'
        il.addWidget(boxes["inference"][0])
        for group, _ in GROUPS:
            if group in self.engine_boxes:
                il.addWidget(boxes[group][0])
        il.addStretch(1)
        ft_page = boxes["finetune"][0]
        self.tabs = QTabWidget()
        self.tabs.addTab(inf_page, tr("Inference"))
        self.tabs.addTab(ft_page, tr("Fine-tune"))
        self.tabs.setAccessibleName(tr("Workload"))

        self.validation_label = QLabel("")
        self.validation_label.setObjectName("validation")
        self.validation_label.setWordWrap(True)
        self.validation_label.setVisible(False)
        self.validation_label.setAccessibleName(tr("Problem with the settings"))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.setSpacing(8)
        for widget in (boxes["model"][0], self.tabs, boxes["hardware"][0], self.validation_label):
            layout.addWidget(widget)
        layout.addStretch(1)

        for combo in (self.model_combo, self.gpu_combo):
            combo.currentIndexChanged.connect(self._on_changed)
        for f in self.fields.values():
            f.on_change(self._on_changed)
        self.tabs.currentChanged.connect(self._on_changed)
        self._sync_visibility()

    def _group_layout(self, group: str, title: str) -> tuple[QWidget, QFormLayout]:
        """The box of one option group with a row per option (check boxes span the row; an option that names
        another as ``beside`` shares that one's row)."""
        box: QWidget = QGroupBox(tr(title)) if title else QWidget()
        fl = QFormLayout(box)
        self._tune(fl)
        if title:
            fl.setContentsMargins(8, 6, 8, 6)
        else:
            fl.setContentsMargins(4, 6, 4, 4)
        beside = {str(f.opt.form["beside"]): f for f in self.fields.values() if f.opt.form.get("beside")}
        for name, f in self.fields.items():
            if f.opt.group != group or f.opt.form.get("beside"):
                continue
            widget = f.widget
            if name in self.readouts:
                widget = _with_readout(widget, self.readouts[name])
            if name in beside:
                fl.addRow(widget, beside[name].widget)
            elif f.label:
                fl.addRow(f.label, widget)
                label = fl.labelForField(widget)
                if isinstance(label, QLabel):
                    # a label's mnemonic focuses its buddy only when the buddy takes focus: the field, not its row
                    label.setBuddy(f.widget.focusProxy() or f.widget)
            else:
                fl.addRow(widget)
        return box, fl

    def widget(self, name: str) -> QWidget:
        """The widget of option ``name`` (its combo, spin box, check box, line or row of check boxes)."""
        return self.fields[name].widget

    def check(self, option: str, value: str) -> QCheckBox:
        """One check box of a list option (``check("modules_to_save", "embed")``)."""
        f = self.fields[option]
        assert isinstance(f, ChecksField)
        return f.checks[value]

    def _value(self, name: str) -> Any:
        return self.fields[name].get()

    @staticmethod
    def _tune(fl: QFormLayout) -> None:
        fl.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        fl.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        fl.setHorizontalSpacing(8)
        fl.setVerticalSpacing(4)

    # ---------------------------------------------------------------- GPUs
    def _fill_gpus(self, detected: dict[str, tuple[str, GpuSpec]]) -> None:
        current = self.gpu_combo.currentData()
        self.gpu_combo.blockSignals(True)
        self.gpu_combo.clear()
        self.gpu_combo.addItem(tr("No GPU"), None)
        for key, (label, spec) in detected.items():
            self.gpu_combo.addItem(label, key)
            free = (spec.free_bytes or 0) / unit_bytes()
            self.gpu_combo.setItemData(
                self.gpu_combo.count() - 1,
                tr("Detected on this machine; the verdict uses its free memory") + f" ({free:.2f} {unit_name()})",
                Qt.ItemDataRole.ToolTipRole,
            )
        if detected:
            self.gpu_combo.insertSeparator(self.gpu_combo.count())
        for g in self._catalog.gpus():
            self.gpu_combo.addItem(f"{g.name} — {g.memory_bytes / unit_bytes():.2f} {unit_name()}", g.name)
        i = self.gpu_combo.findData(current)
        self.gpu_combo.setCurrentIndex(max(0, i))
        self.gpu_combo.blockSignals(False)

    def set_detected(self, result: DetectionResult | None, specs: dict[str, GpuSpec]) -> None:
        """Show what NVML found (or why nothing) and offer the detected GPUs at the top of the GPU list."""
        self._detection = (result, specs)
        entries: dict[str, tuple[str, GpuSpec]] = {}
        if result is not None:
            for g in result.gpus:
                key = f"{DETECTED_PREFIX}{g.index}"
                if key in specs:
                    entries[key] = (f"{tr('This machine')}: GPU {g.index} {g.name}", specs[key])
        self._fill_gpus(entries)
        if result is None:
            self.detected_label.setText(tr("Looking for NVIDIA GPUs…"))
        elif not result.gpus:
            self.detected_label.setText(
                "<b>"
                + tr("No NVIDIA GPU detected — choose the GPUs to plan for")
                + "</b>"
                + (f"<br>{html.escape(localize(PARENTHESES(text=free(result.reason))))}" if result.reason else "")
            )
        else:
            lines = []
            unit = unit_bytes()
            for g in result.gpus:
                others = ", ".join(
                    f"{p.name or 'pid ' + str(p.pid)} {((p.used_bytes or 0) / unit_bytes()):.1f} {unit_name()}"
                    for p in g.processes[:3]
                )
                mig = " · MIG" if g.mig else ""
                lines.append(
                    f"<b>GPU {g.index}</b> {g.name}{mig}: {g.free / unit:.1f} / {g.total / unit:.1f} {unit_name()} "
                    + tr("free")
                    + (f"<br>&nbsp;&nbsp;{tr('other processes')}: {others}" if others else "")
                )
            if result.reason:  # some GPUs answered, others not
                lines.append(f"<i>{html.escape(localize(result.reason))}</i>")
            self.detected_label.setText("<br>".join(lines))

    def refresh_units(self) -> None:
        """Rewrite the memory figures of the GPU list and the detection note in the current unit."""
        result, specs = self._detection
        self.set_detected(result, specs)

    def note_model_facts(self, model_id: str, facts: ModelFacts) -> None:
        """Remember what a resolved model (Hub, local) is made of: the vision tower choice then follows it."""
        self._vision_known[model_id] = facts.counts.vision > 0
        if not self._loading:
            self._sync_visibility()

    # ---------------------------------------------------------------- values
    def _on_changed(self, *_args: object) -> None:
        if not self._loading:
            self._sync_visibility()
            self.changed.emit()

    def _sync_visibility(self) -> None:
        v = self._value
        # each engine's own settings (vLLM's, llama.cpp's, transformers' device_map) show for that engine only
        own = engine(v("engine")).form_group
        for group, box in self.engine_boxes.items():
            box.setVisible(group == own)
            box.setEnabled(group == own)
        for f in self.fields.values():
            rule = f.opt.form.get("when")
            if rule:
                f.widget.setEnabled(all(self._holds(key, want) for key, want in dict(rule).items()))
        vision = self.model_has_vision(str(self.model_combo.currentData()))
        self.widget("vision_tower").setEnabled(vision is not False)
        self.widget("vision_tower").setToolTip(
            self._vision_tip
            + "\n"
            + (
                tr("This model has no vision tower")
                if vision is False
                else tr("This model has a vision tower")
                if vision
                else tr("Not a catalog model: the window cannot tell whether it has a vision tower")
            )
        )

    def _holds(self, key: str, want: Any) -> bool:
        """One condition of an option's ``when`` rule (its declaration's form hints): the tab ("mode") or another
        option's value is one of a list, is set ("set": not None) or is above a number (">1")."""
        value: Any = self.mode if key == "mode" else self._value(key)
        if want == "set":
            return value is not None
        if isinstance(want, str) and want.startswith(">"):
            return value is not None and value > float(want[1:])
        return value in list(want)

    def model_has_vision(self, model_id: str) -> bool | None:
        """Whether ``model_id`` has a vision tower: known for catalog models and those passed to
        :meth:`note_model_facts`; None (unknown) otherwise."""
        if self._catalog.find(model_id) is None:
            return self._vision_known.get(model_id)
        try:
            return self._catalog.facts(model_id).counts.vision > 0
        except (ValueError, LookupError):
            return None

    @property
    def mode(self) -> str:
        return "finetune" if self.tabs.currentIndex() == 1 else "inference"

    def values(self) -> FormValues:
        got = {name: f.get() for name, f in self.fields.items()}
        if got["vision_tower"] == "trained" and self.model_has_vision(str(self.model_combo.currentData())) is False:
            got["vision_tower"] = "frozen"  # a model without a vision tower has none to train (the core says so)
        if got["mean_seq_len"] is not None:
            got["mean_seq_len"] = min(got["mean_seq_len"], got["seq_len"])
        return FormValues(
            model=str(self.model_combo.currentData()),
            mode=self.mode,
            gpu=self.gpu_combo.currentData(),
            **got,
        )

    def set_values(self, form: FormValues) -> None:
        self._loading = True
        try:
            select(self.model_combo, form.model)
            for name, f in self.fields.items():
                f.set(getattr(form, name))
            select(self.gpu_combo, form.gpu)
            self.tabs.setCurrentIndex(1 if form.mode == "finetune" else 0)
        finally:
            self._loading = False
        self._sync_visibility()

    def show_max_length(self, field: str, value: int | None, tooltip: str, tight: int | None = None) -> None:
        """The solver's largest ``field`` ("input_len" / "seq_len") next to its spin box; None clears it. ``tight``:
        a larger value that still runs inside the headroom, shown instead, marked tight."""
        own, other = (
            self.readouts[n] for n in (("input_len", "seq_len") if field == "input_len" else ("seq_len", "input_len"))
        )
        other.setText("")
        other.setToolTip("")
        if tight:
            own.setText(f"{tr('max')} {tight:,} ({tr('tight')})")
        else:
            own.setText("" if value is None and not tooltip else f"{tr('max')} {value:,}" if value else tr("none fits"))
        own.setToolTip(tooltip)

    def set_problem(self, text: str | None) -> None:
        """Inline validation: the problem in words under the form (None hides it)."""
        self.validation_label.setVisible(bool(text))
        self.validation_label.setText(f"⚠ {text}" if text else "")
