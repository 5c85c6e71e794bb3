"""The form's widgets built from the option table (vramdesk/ui/option_fields.py): each offers exactly the values its
option accepts, reads back what it was given, and names None the way the declaration does."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox

from vramdesk.core.options import Option, option, options
from vramdesk.ui.option_fields import ChecksField, NumberField, field_for

SHOWN = [o for o in options() if o.group != "hidden" and o.name != "gpu"]


def _sample(o: Option) -> Any:
    if o.kind == "bool":
        return not o.default if o.default is not None else True
    if o.kind in ("choice", "text"):
        return [v for v in (o.form.get("values") or o.values) if v != o.default][-1]
    if o.kind == "list":
        return ("q", "v") if o.name == "lora_targets" else ("lm_head",)
    if o.kind == "float":
        return 0.5
    return 3


@pytest.mark.parametrize("opt", SHOWN, ids=lambda o: o.name)
def test_every_field_reads_back_what_it_was_given(qtbot, opt: Option) -> None:
    field = field_for(opt)
    qtbot.addWidget(field.widget)
    value = _sample(opt)
    field.set(",".join(value) if opt.name == "lora_targets" else value)
    got = field.get()
    assert got == (",".join(value) if opt.name == "lora_targets" else value)
    default = ",".join(opt.default) if opt.name == "lora_targets" else opt.default
    field.set(default)
    assert field.get() == default


@pytest.mark.parametrize("opt", [o for o in SHOWN if o.kind in ("int", "float")], ids=lambda o: o.name)
def test_a_number_field_offers_only_what_the_option_accepts(qtbot, opt: Option) -> None:
    field = field_for(opt)
    assert isinstance(field, NumberField)
    spin = field.spin
    qtbot.addWidget(spin)
    spin.setValue(spin.maximum())
    top = field.get()
    assert top <= opt.bounds.get("le", float("inf")) and top < opt.bounds.get("lt", float("inf"))
    spin.setValue(spin.minimum())
    low = field.get()
    if opt.optional:
        assert low is None and spin.text() == spin.specialValueText() != ""
        spin.setValue(spin.minimum() + spin.singleStep())
        low = field.get()
    assert low >= opt.bounds.get("ge", float("-inf")) and low > opt.bounds.get("gt", float("-inf"))


def test_widget_kinds_follow_the_declaration(qtbot) -> None:
    kinds = {
        "dora": QCheckBox,
        "engine": QComboBox,
        "zero_overlap_comm": QComboBox,
        "weights": QComboBox,
        "batch": QSpinBox,
        "zero_bucket": QDoubleSpinBox,  # 10^12 elements do not fit a 32-bit spin box
        "max_memory_gib": QDoubleSpinBox,
        "lora_targets": QLineEdit,
    }
    for name, kind in kinds.items():
        f = field_for(option(name))
        qtbot.addWidget(f.widget)
        assert isinstance(f.widget, kind), name
    overlap = field_for(option("zero_overlap_comm"))
    qtbot.addWidget(overlap.widget)
    assert isinstance(overlap.widget, QComboBox)
    assert [overlap.widget.itemData(i) for i in range(overlap.widget.count())] == [None, True, False]
    saved = field_for(option("modules_to_save"))
    qtbot.addWidget(saved.widget)
    assert isinstance(saved, ChecksField) and list(saved.checks) == ["embed", "lm_head"]
    assert saved.checks["embed"].accessibleName() == "Train the embeddings in full"
