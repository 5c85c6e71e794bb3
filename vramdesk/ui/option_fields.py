"""One widget per option, built from the option table (``vramdesk.core.options``): a check box for a switch, a
combo for a choice, a spin box for a number, a line for text, check boxes for a list of modules.

Every field reads and writes the value the form holds for its option (:class:`~vramdesk.ui.presenter.FormValues`),
and reports changes through :meth:`OptionField.on_change`. Labels, tooltips, choice names and the texts of special
values come from the option's declaration and are translated here, at display time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QLineEdit, QSpinBox, QWidget

from vramdesk.core.options import Option

from .i18n import tr

#: the largest value a QSpinBox holds (32 bits); a larger bound uses a QDoubleSpinBox with no decimals
_INT_MAX = 2**31 - 1


def combo(
    values: Sequence[Any], tooltip: str, labels: dict[str, str] | None = None, tips: dict[str, str] | None = None
) -> QComboBox:
    """A combo of ``values`` (item data), shown as ``labels`` (by ``str(value)``), with item tooltips ``tips``."""
    c = QComboBox()
    for v in values:
        c.addItem((labels or {}).get(str(v), str(v)), v)
        tip = (tips or {}).get(str(v))
        if tip:
            c.setItemData(c.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
    c.setToolTip(tooltip)
    c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    c.setMinimumContentsLength(8)
    return c


def select(box: QComboBox, value: object, text: str | None = None) -> None:
    """Select the item whose data is ``value``, adding one (labelled ``text``) when there is none."""
    i = box.findData(value)
    if i < 0:
        box.addItem(text if text is not None else str(value), value)
        i = box.count() - 1
    box.setCurrentIndex(i)


class OptionField:
    """One option's widget, read and written as the form's value."""

    def __init__(self, opt: Option, widget: QWidget) -> None:
        self.opt = opt
        self.widget = widget
        name = opt.form.get("accessible")
        if name:
            widget.setAccessibleName(tr(str(name)))

    @property
    def label(self) -> str:
        """The form row's label, translated ("" for a check box, which carries its own text)."""
        return tr(self.opt.label)

    def get(self) -> Any:  # pragma: no cover - every field kind overrides it
        raise NotImplementedError

    def set(self, value: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def on_change(self, slot: Callable[..., None]) -> None:  # pragma: no cover
        raise NotImplementedError


class CheckField(OptionField):
    def __init__(self, opt: Option) -> None:
        self.check = QCheckBox(tr(opt.label))
        self.check.setToolTip(tr(opt.help))
        super().__init__(opt, self.check)

    @property
    def label(self) -> str:
        return ""

    def get(self) -> bool:
        return self.check.isChecked()

    def set(self, value: Any) -> None:
        self.check.setChecked(bool(value))

    def on_change(self, slot: Callable[..., None]) -> None:
        self.check.toggled.connect(slot)


class ChoiceField(OptionField):
    """A combo of the option's values (the form's own list and order when it declares one); an optional switch
    offers None (its default in words) as well."""

    def __init__(self, opt: Option) -> None:
        values: list[Any] = list(opt.form.get("values") or opt.values)
        if opt.kind == "bool":
            values = [None, True, False] if opt.optional else [True, False]
        # (an option whose form says its choices are "names" (the engines) shows them as written: "transformers"
        # the engine is not the Chinese of the transformers-version field's label)
        names = bool(opt.form.get("names"))
        labels = {k: label if names else tr(label) for k, (label, _) in opt.choices.items()}
        tips = {k: tr(tip) for k, (_, tip) in opt.choices.items() if tip}
        self.combo = combo(values, tr(opt.help), labels, tips)
        super().__init__(opt, self.combo)

    def get(self) -> Any:
        return self.combo.currentData()

    def set(self, value: Any) -> None:
        select(self.combo, value)

    def on_change(self, slot: Callable[..., None]) -> None:
        self.combo.currentIndexChanged.connect(slot)


class NumberField(OptionField):
    """A spin box over the option's bounds. An optional number has one more value below its minimum that means
    None (shown as its default in words: "auto", "all", "no cap")."""

    def __init__(self, opt: Option) -> None:
        hints = opt.form
        integer = opt.kind == "int"
        decimals = 0 if integer else int(hints.get("decimals", 2))
        tick = 1 if integer else 10.0**-decimals
        low = float(hints.get("minimum", opt.bounds.get("ge", opt.bounds.get("gt", 0.0) + (tick if integer else 0))))
        high = opt.bounds.get("le", opt.bounds.get("lt", float(_INT_MAX)) - tick)
        # a value the option refuses (gt 0) or one below its minimum is the None of an optional number
        self._none = (low - 1 if integer or "ge" in opt.bounds else low) if opt.optional else None
        lowest = self._none if self._none is not None else low
        spin: QSpinBox | QDoubleSpinBox
        if integer and high <= _INT_MAX:
            spin = QSpinBox()
            spin.setRange(int(lowest), int(high))
        else:
            spin = QDoubleSpinBox()
            spin.setDecimals(decimals)
            spin.setRange(lowest, high)
        step = float(hints.get("step", 1.0))
        if isinstance(spin, QSpinBox):
            spin.setSingleStep(int(step))
        else:
            spin.setSingleStep(step)
        spin.setGroupSeparatorShown(True)
        spin.setAccelerated(True)
        spin.setAlignment(Qt.AlignmentFlag.AlignRight)
        spin.setToolTip(tr(opt.help))
        for key, setter in (("prefix", spin.setPrefix), ("suffix", spin.setSuffix)):
            if key in hints:
                # a unit ("GiB") stays as it is; words ("every ", " layers") are translated
                setter(str(hints[key]) if str(hints[key]).strip() in ("GiB",) else tr(str(hints[key])))
        special = opt.shown if opt.optional else hints.get("special")
        if special:
            spin.setSpecialValueText(tr(str(special)))
        self.spin = spin
        self._integer = integer
        super().__init__(opt, spin)

    def get(self) -> Any:
        v = self.spin.value()
        if self._none is not None and v <= self._none:
            return None
        return round(v) if self._integer else round(v, 4)

    def set(self, value: Any) -> None:
        self.spin.setValue(self._none if value is None and self._none is not None else value)  # type: ignore[arg-type]

    def on_change(self, slot: Callable[..., None]) -> None:
        self.spin.valueChanged.connect(slot)


class TextField(OptionField):
    """A line of text; empty means the option's default."""

    def __init__(self, opt: Option) -> None:
        self.edit = QLineEdit()
        self.edit.setToolTip(tr(opt.help))
        super().__init__(opt, self.edit)

    def get(self) -> str:
        default = self.opt.default
        return self.edit.text().strip() or (",".join(default) if isinstance(default, tuple) else str(default))

    def set(self, value: Any) -> None:
        self.edit.setText(",".join(value) if isinstance(value, tuple) else str(value))

    def on_change(self, slot: Callable[..., None]) -> None:
        self.edit.textChanged.connect(slot)


class ChecksField(OptionField):
    """A list of named values (peft's modules_to_save): one check box each, side by side."""

    def __init__(self, opt: Option) -> None:
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(12)
        self.checks: dict[str, QCheckBox] = {}
        each = opt.form.get("each") or {}
        for value in opt.form.get("values") or ():
            label, tip = opt.choices.get(str(value), (str(value), ""))
            check = QCheckBox(tr(label))
            if tip:
                check.setToolTip(tr(tip))
            if value in each:
                check.setAccessibleName(tr(str(each[value])))
            self.checks[str(value)] = check
            row.addWidget(check)
        row.addStretch(1)
        box.setToolTip(tr(opt.help))
        if self.checks:  # the row label's mnemonic focuses the first check box (forms.py sets the buddy)
            box.setFocusProxy(next(iter(self.checks.values())))
        super().__init__(opt, box)

    def get(self) -> tuple[str, ...]:
        return tuple(v for v, check in self.checks.items() if check.isChecked())

    def set(self, value: Any) -> None:
        for v, check in self.checks.items():
            check.setChecked(v in tuple(value or ()))

    def on_change(self, slot: Callable[..., None]) -> None:
        for check in self.checks.values():
            check.toggled.connect(slot)


def option_texts(opt: Option) -> set[str]:
    """Every English text the form shows for ``opt`` (each goes through ``tr``): its label and tooltip, the names
    and tips of its choices (a name that is the value itself is not a text), the words of its special values,
    prefixes and suffixes, and its accessible names."""
    out = {opt.label, opt.help}
    out |= {label for value, (label, _) in opt.choices.items() if label != value}
    out |= {tip for _, tip in opt.choices.values() if tip}
    hints = opt.form
    out |= {str(hints[k]) for k in ("special", "accessible") if hints.get(k)}
    out |= {str(hints[k]) for k in ("prefix", "suffix") if hints.get(k) and str(hints[k]).strip() != "GiB"}
    out |= {str(v) for v in dict(hints.get("each") or {}).values()}
    if opt.optional and opt.shown and opt.kind in ("int", "float"):
        out.add(opt.shown)
    return out


def field_for(opt: Option) -> OptionField:
    """The widget the form shows for ``opt``."""
    if opt.kind == "bool" and not opt.optional:
        return CheckField(opt)
    if opt.kind in ("choice", "bool") or (opt.kind == "text" and opt.form.get("values")):
        return ChoiceField(opt)
    if opt.kind in ("int", "float"):
        return NumberField(opt)
    if opt.kind == "list" and opt.form.get("values"):
        return ChecksField(opt)
    return TextField(opt)
