"""The Fine-tune tab's memory options (LoRA dropout, DoRA, chunked cross-entropy, activation offloading) and the
Explain dialog of a breakdown row.

Every option goes form -> presenter -> scenario -> core; each test compares the window with the core's own
estimate of the same scenario, so the UI never invents a number.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from uiwindow import make_window

from vramdesk.core.estimate import estimate
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services import accuracy
from vramdesk.services.accuracy import measured_accuracy
from vramdesk.services.catalog import default_catalog
from vramdesk.storage.scenarios import save_scenario
from vramdesk.ui import i18n, qt_i18n
from vramdesk.ui.dialogs import ExplainDialog, explain_text
from vramdesk.ui.main_window import MainWindow
from vramdesk.ui.presenter import FormValues, evaluate_scenario, form_from_scenario, scenario_from_form

MODEL = "Qwen/Qwen3-4B"
GPU = "H100 SXM"


def finetune(**work: object) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"id": MODEL},
            "workload": {"kind": "finetune", "method": "lora", "seq_len": 4096, **work},
            "hardware": {"gpu": GPU},
        }
    )


def core(s: Scenario) -> Estimate:
    cat = default_catalog()
    return estimate(s, cat.facts(s.model.id), cat.gpu(GPU))


def part(est: Estimate, name: str) -> int:
    """The largest size of component ``name`` over every phase."""
    return max(c.bytes for p in est.phases for c in p.components if c.name == name)


def shown(w: MainWindow) -> Estimate:
    assert w.view is not None and w.evaluation is not None and w.evaluation.scenario is not None
    return w.view.estimate


# ---------------------------------------------------------------------------------------------- presenter


def test_the_new_options_round_trip_through_the_presenter() -> None:
    s = finetune(
        lora_dropout=0.1,
        dora=True,
        chunked_loss=True,
        activation_offload=True,
        expandable_segments=True,
        mean_seq_len=1024,
    )
    form = form_from_scenario(s)
    assert form.mean_seq_len == 1024
    assert (form.lora_dropout, form.dora, form.chunked_loss, form.activation_offload) == (0.1, True, True, True)
    assert form.expandable_segments
    assert scenario_from_form(s, form) == s
    plain = scenario_from_form(
        s,
        FormValues(
            **{
                **form.__dict__,
                "dora": False,
                "chunked_loss": False,
                "activation_offload": False,
                "expandable_segments": False,
                "mean_seq_len": None,
            }
        ),
    )
    assert plain.workload == finetune(lora_dropout=0.1).workload
    # the inference form keeps the defaults (nothing leaks into an inference scenario)
    inference = form_from_scenario(Scenario.model_validate({"model": {"id": MODEL}}))
    assert (inference.lora_dropout, inference.dora, inference.chunked_loss, inference.activation_offload) == (
        0.0,
        False,
        False,
        False,
    )


def test_machines_are_a_fine_tuning_field_of_the_form(qtbot) -> None:
    s = Scenario.model_validate(
        {
            "model": {"id": MODEL},
            "workload": {"kind": "finetune", "method": "full"},
            "hardware": {"gpu": GPU, "gpu_count": 8},
            "parallelism": {"zero": 3},
        }
    )
    w = make_window(qtbot, s)
    assert w.form.widget("nodes").isEnabled() and w.form.widget("nodes").value() == 1
    with qtbot.waitSignal(w.estimated, timeout=3000):
        w.form.widget("nodes").setValue(4)
    planned = w.current_scenario()
    assert planned is not None and planned.hardware.nodes == 4
    view = w.view
    assert view is not None and len(view.per_gpu) == 32 and "4 machines x 8 x" in w.scenario_label.text()
    # an inference plan runs on one machine: the field is off there, and the plan gets one machine
    form = w.form.values().replace(mode="inference")
    assert scenario_from_form(planned, form).hardware.nodes == 1
    with qtbot.waitSignal(w.estimated, timeout=3000):
        w.tabs.setCurrentIndex(0)
    assert not w.form.widget("nodes").isEnabled()


def test_hardware_fields_the_form_does_not_show_are_kept() -> None:
    s = Scenario.model_validate(
        {
            "model": {"id": MODEL},
            "workload": {"kind": "finetune", "method": "full"},
            "hardware": {"gpu": GPU, "gpu_count": 8, "nodes": 2},
            "parallelism": {"zero": 3},
        }
    )
    form = form_from_scenario(s)
    assert scenario_from_form(s, form) == s
    more = scenario_from_form(s, FormValues(**{**form.__dict__, "gpu_count": 4}))
    assert more.hardware.nodes == 2 and more.hardware.gpu_count == 4


# ---------------------------------------------------------------------------------------------- the window


def test_each_option_changes_the_estimate_the_way_the_core_says(qtbot) -> None:
    w = make_window(qtbot, finetune())
    f = w.form
    base = shown(w)
    assert base == core(finetune())
    assert base.host_bytes == 0

    # chunked cross-entropy: a smaller loss head, nothing else
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("chunked_loss").setChecked(True)
    chunked = shown(w)
    assert chunked == core(finetune(chunked_loss=True))
    assert part(chunked, "loss head") < part(base, "loss head") / 3
    assert part(chunked, "activations") == part(base, "activations")
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("chunked_loss").setChecked(False)

    # activation offloading: activations leave the GPU and show up as host memory
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("activation_offload").setChecked(True)
    off = shown(w)
    assert off == core(finetune(activation_offload=True))
    # what the GPU held is split: the current layer and the one in transfer stay, the rest lives in CPU memory
    assert off.host_bytes + part(off, "activations") == part(base, "activations")
    assert off.host_bytes > 0 and part(off, "activations") <= part(base, "activations")
    # without gradient checkpointing every layer's activations are saved: offloading them frees the GPU
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("grad_checkpointing").setChecked(False)
    off_full = shown(w)
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("activation_offload").setChecked(False)
    kept = shown(w)
    assert off_full == core(finetune(grad_checkpointing=False, activation_offload=True))
    assert off_full.host_bytes + part(off_full, "activations") == part(kept, "activations")
    assert off_full.peak_allocated_bytes < kept.peak_allocated_bytes / 2
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("grad_checkpointing").setChecked(True)
    assert shown(w) == base

    # LoRA dropout: a 1-byte mask per adapted input element, more activations
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("lora_dropout").setValue(0.05)
    drop = shown(w)
    assert drop == core(finetune(lora_dropout=0.05))
    assert part(drop, "activations") > part(base, "activations")
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("lora_dropout").setValue(0.0)

    # DoRA: magnitude vectors (more trainable parameters) and more memory at the peak
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("dora").setChecked(True)
    dora = shown(w)
    assert dora == core(finetune(dora=True))
    assert dora.params.trainable > base.params.trainable
    assert dora.peak_allocated_bytes > base.peak_allocated_bytes

    scenario = w.current_scenario()
    assert scenario is not None and scenario.workload == finetune(dora=True).workload


def test_dropout_and_dora_only_apply_to_adapters(qtbot) -> None:
    w = make_window(qtbot, finetune())
    f = w.form
    assert f.widget("lora_dropout").maximum() == pytest.approx(0.99) and f.widget("lora_dropout").minimum() == 0
    for widget in (
        f.widget("lora_dropout"),
        f.widget("dora"),
        f.widget("chunked_loss"),
        f.widget("activation_offload"),
    ):
        assert widget.isEnabled() and widget.toolTip()
    assert "mask" in f.widget("lora_dropout").toolTip() and "host memory" in f.widget("activation_offload").toolTip()
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("method").setCurrentIndex(f.widget("method").findData("full"))
    assert not f.widget("lora_dropout").isEnabled() and not f.widget("dora").isEnabled()
    assert f.widget("chunked_loss").isEnabled() and f.widget("activation_offload").isEnabled()
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("method").setCurrentIndex(f.widget("method").findData("qlora"))
    assert f.widget("lora_dropout").isEnabled() and f.widget("dora").isEnabled()


def test_a_scenario_file_with_the_options_fills_the_form_and_saves_them(qtbot, tmp_path: Path) -> None:
    path = tmp_path / "dora.json"
    s = finetune(lora_dropout=0.1, dora=True, chunked_loss=True, activation_offload=True)
    save_scenario(s, path)
    w = make_window(qtbot, finetune())
    assert w.open_scenario(path)
    f = w.form
    assert w.tabs.currentIndex() == 1
    assert f.widget("lora_dropout").value() == pytest.approx(0.1)
    assert (
        f.widget("dora").isChecked()
        and f.widget("chunked_loss").isChecked()
        and f.widget("activation_offload").isChecked()
    )
    assert shown(w) == core(s)
    out = tmp_path / "saved.json"
    assert w.save_scenario(out)
    work = json.loads(out.read_text(encoding="utf-8"))["workload"]
    assert (work["lora_dropout"], work["dora"], work["chunked_loss"], work["activation_offload"]) == (
        0.1,
        True,
        True,
        True,
    )


# ---------------------------------------------------------------------------------------------- Explain


def test_explain_text_has_the_full_explanation_and_every_constant() -> None:
    ev = evaluate_scenario(finetune(chunked_loss=True))
    assert ev.view is not None
    row = ev.view.slices[0]
    text = explain_text(row, ev.view.estimate.constants, ev.view.peak_phase)
    assert row.name in text and row.explain in text and f"{row.bytes:,}" in text
    assert "Constants and sources" in text
    assert ev.view.estimate.constants
    for name, source in ev.view.estimate.constants.items():
        assert f"{name}: {source}" in text
    assert "(none)" in explain_text(row, {})


def test_double_clicking_a_breakdown_row_explains_it(qtbot) -> None:
    w = make_window(qtbot, finetune(chunked_loss=True))
    view = w.view
    assert view is not None
    row = next(i for i, s in enumerate(view.slices) if s.name == "activations")
    rect = w.table.visualRect(w.table_model.index(row, 0))
    # what a real double-click delivers: press + release, then the double-click (Qt wants the pressed row)
    qtbot.mouseClick(w.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(w.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: w.explain_dialog is not None and w.explain_dialog.isVisible(), timeout=2000)
    dialog = w.explain_dialog
    assert isinstance(dialog, ExplainDialog)
    text = dialog.view.toPlainText()
    assert text == dialog.text
    assert text.startswith("activations:") and view.slices[row].explain in text
    for name, source in view.estimate.constants.items():
        assert f"{name}: {source}" in text
    # read-only, but selectable and copyable
    assert dialog.view.isReadOnly()
    assert dialog.view.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    dialog.view.selectAll()
    assert dialog.view.textCursor().selectedText()
    QGuiApplication.clipboard().clear()
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == text
    dialog.close()
    qtbot.waitUntil(lambda: w.explain_dialog is None, timeout=2000)


def test_the_explain_button_uses_the_selection_or_the_largest_component(qtbot) -> None:
    w = make_window(qtbot, finetune())
    view = w.view
    assert view is not None
    assert w.explain_button.isVisible() and w.explain_button.toolTip()
    largest = max(view.slices, key=lambda s: s.bytes)
    w.table.clearSelection()
    w.explain_button.click()
    dialog = w.explain_dialog
    assert dialog is not None and dialog.text.startswith(f"{largest.name}:")
    assert dialog.windowTitle() == f"Explain: {largest.name}"
    last = len(view.slices) - 1
    w.table.selectRow(last)
    w.explain_button.click()  # replaces the open dialog
    assert w.explain_dialog is not None and w.explain_dialog is not dialog
    assert w.explain_dialog.text.startswith(f"{view.slices[last].name}:")
    w.explain_dialog.close()


def test_explain_dialog_in_chinese(qtbot, monkeypatch) -> None:
    monkeypatch.setenv("VRAMDESK_LANG", "zh_CN")
    i18n.set_language(qt_i18n.choose_language())
    try:
        w = make_window(qtbot, finetune())
        assert w.form.widget("chunked_loss").text() == "分块交叉熵"
        dialog = w.explain_component(0)
        assert dialog is not None
        assert "常量与来源" in dialog.text and dialog.copy_button.text() == "复制"
        dialog.close()
    finally:
        i18n.set_language("en")


def test_the_largest_dropout_the_form_offers_is_one_the_core_accepts(qtbot) -> None:
    """PEFT takes a dropout in [0, 1): the spin box goes to 0.99, and the core estimates that value."""
    from pydantic import ValidationError

    w = make_window(qtbot, finetune())
    f = w.form
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("lora_dropout").setValue(f.widget("lora_dropout").maximum())
    ev = w.evaluation
    assert ev is not None and ev.view is not None, ev and ev.error
    assert ev.scenario is not None and ev.scenario.workload.lora_dropout == pytest.approx(0.99)
    assert ev.view.device_bytes == core(finetune(lora_dropout=0.99)).device_bytes
    with pytest.raises(ValidationError):
        finetune(lora_dropout=1.0)


def test_checkpointing_shows_a_recompute_bar_and_a_short_peak_title(qtbot) -> None:
    w = make_window(qtbot, finetune(grad_checkpointing=True, micro_batch=4))
    est = shown(w)
    assert est.peak_phase == "loss + start of backward"
    assert w.phase_chart.phase_names == [p.name for p in est.phases]
    assert "backward (recompute)" in w.phase_chart.phase_names
    # the short name keeps the title clear of the Pie / Bar buttons; the full one is in the tooltip
    assert w.breakdown.title.text() == "At the peak (loss)"
    assert w.breakdown.title.toolTip() == "Breakdown at the peak (loss + start of backward)"
    ticks = [t for _, t in w.phase_chart.plot.getPlotItem().getAxis("bottom")._tickLevels[0]]
    assert ticks == ["forward", "loss\n(peak)", "recompute", "layer 1", "backward", "optimizer"]


def test_bars_past_the_gpu_keep_its_label_off_them(qtbot) -> None:
    """A plan far over the GPU: the dashed line stays unlabelled where the bars cross it, and its label sits at
    the top right, above the tallest bar's total."""
    w = make_window(qtbot, finetune(method="full", precision="amp-bf16", micro_batch=4))
    est = shown(w)
    assert w.view is not None and w.view.gpu_memory_bytes is not None
    gpu_gib = w.view.gpu_memory_bytes / 2**30
    tallest = max(p.allocated_bytes for p in est.phases) / 2**30
    assert tallest > gpu_gib
    extras = w.phase_chart._extras
    lines = [e for e in extras if isinstance(e, pg.InfiniteLine)]
    notes = [e for e in extras if isinstance(e, pg.TextItem)]
    assert len(lines) == 1 and not [c for c in lines[0].childItems() if isinstance(c, pg.InfLineLabel)]
    assert len(notes) == 1 and notes[0].pos().y() > tallest
    assert notes[0].toPlainText().startswith(f"{w.view.gpu_name}: ")


# ---------------------------------------------------------------------------------------------- accuracy


def test_each_level_says_how_well_it_matched_measured_runs(qtbot) -> None:
    """The three level cards carry, under their description, the held-out and own-GPU figures for this kind of
    plan (resources/accuracy.json, which the accuracy benchmark keeps equal to what it measures)."""
    w = make_window(qtbot, finetune())
    allocated = measured_accuracy("finetune", "transformers", "allocated")
    assert allocated and all(s.runs > 0 for s in allocated)
    tip = w.stat_allocated.toolTip()
    assert tip.startswith("What torch.cuda.max_memory_allocated() reports")
    for s in allocated:
        assert s.name in tip and f"median {s.median:.1f} %" in tip and f"({s.runs} comparisons)" in tip
    assert "traced training steps on a lent GPU" in w.stat_reserved.toolTip()
    vllm = Scenario.model_validate(
        {
            "model": {"id": MODEL},
            "workload": {"kind": "inference", "engine": "vllm", "input_len": 1024, "output_len": 128},
            "hardware": {"gpu": GPU},
        }
    )
    w.set_scenario(vllm)
    qtbot.waitUntil(lambda: w.view is not None and w.view.mode == "inference", timeout=5000)
    assert not measured_accuracy("inference", "vllm", "device")
    assert "No measured runs at this level for this kind of plan yet" in w.stat_device.toolTip()


def test_without_the_accuracy_file_the_cards_only_lose_that_note(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(accuracy, "resources_dir", lambda: tmp_path)
    accuracy._table.cache_clear()
    try:
        assert measured_accuracy("finetune", "transformers", "allocated") == ()
        (tmp_path / "accuracy.json").write_text("{not json", encoding="utf-8")
        accuracy._table.cache_clear()
        assert measured_accuracy("finetune", "transformers", "allocated") == ()
    finally:
        monkeypatch.undo()
        accuracy._table.cache_clear()
    assert measured_accuracy("finetune", "transformers", "allocated")
