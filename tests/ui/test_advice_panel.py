"""The window's advice: smallest changes under a "does not fit" verdict, the max-length readouts, the speed
line, and the display settings (memory unit, verdict headroom).

The advice runs on a worker; the tests wait for it with ``qtbot.waitUntil``. QSettings live in a folder of
each test's own, so a unit or headroom saved here never leaks into another test's window.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from PySide6.QtCore import QSettings, Qt
from uiwindow import make_window as _open
from uiwindow import scenario_for, wait_advice

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.gpu import GIB
from vramdesk.core.performance import performance
from vramdesk.core.scenario import FinetuneWorkload, Scenario
from vramdesk.core.solve import maximize, with_work
from vramdesk.services.resolve import resolve_gpu, resolve_model
from vramdesk.ui import i18n
from vramdesk.ui.advice_view import LIMITS, Advice
from vramdesk.ui.dialogs import HEADROOM_KEY, UNIT_CHOICES, UNIT_KEY, SettingsDialog
from vramdesk.ui.main_window import MainWindow
from vramdesk.ui.presenter import GpuLoad, gpu_groups


def make_window(qtbot: object, s: Scenario) -> MainWindow:
    """The window before its first estimate settles (the advice tests wait for what they need)."""
    return _open(qtbot, s, wait=False)


def scenario(model: str = "Qwen/Qwen3-4B", gpu: str = "RTX 4090", **work: object) -> Scenario:
    return scenario_for(model, gpu, **work)


def readout(label) -> int | None:
    digits = re.sub(r"[^0-9]", "", label.text())
    return int(digits) if digits else None


# ---------------------------------------------------------------------------------------------- changes


def test_a_configuration_that_does_not_fit_lists_changes_and_one_click_makes_it_fit(qtbot) -> None:
    w = make_window(qtbot, scenario("Qwen/Qwen3-14B", input_len=16384))
    assert w.evaluation is not None and w.evaluation.view is not None
    assert w.evaluation.view.verdict == "does not fit"
    advice = wait_advice(qtbot, w)
    assert advice.changes is not None and advice.changes.options
    assert w.advice_box.isVisible()
    shown = [b for b in w.advice_buttons if b.isVisible()]
    assert 1 <= len(shown) <= len(w.advice_buttons)
    first = advice.changes.options[0]
    assert first.summary in shown[0].text()
    qtbot.mouseClick(shown[0], Qt.MouseButton.LeftButton)
    ev = w.evaluation
    assert ev is not None and ev.view is not None and ev.scenario is not None
    assert ev.view.verdict == "fits"
    assert ev.view.device_bytes == first.device_bytes
    assert ev.scenario.model_dump(mode="json") == first.scenario
    # once it fits, the list goes away (after the advice for the new scenario is back)
    w.advice = None
    wait_advice(qtbot, w)
    assert not w.advice_box.isVisible()


def test_no_changes_are_offered_when_it_fits(qtbot) -> None:
    w = make_window(qtbot, DEFAULT_SCENARIO)
    advice = wait_advice(qtbot, w)
    assert isinstance(advice, Advice) and advice.verdict == "fits" and advice.scenario == w.current_scenario()
    assert advice.changes is None and advice.max_length is not None and advice.error is None
    assert not w.advice_box.isVisible()
    with pytest.raises(dataclasses.FrozenInstanceError):
        advice.changes = None  # type: ignore[misc]


def test_only_the_newest_advice_request_is_shown(qtbot) -> None:
    w = make_window(qtbot, scenario("Qwen/Qwen3-14B", input_len=16384))
    wait_advice(qtbot, w)
    w.advice = None
    w.widget("input_len").setValue(8192)
    w.estimate_now()
    w.advise_now()
    w.widget("input_len").setValue(4096)
    w.estimate_now()
    w.advise_now()
    advice = wait_advice(qtbot, w)
    assert advice.scenario.workload.input_len == 4096


# ---------------------------------------------------------------------------------------------- max length


def test_max_context_readout_is_the_solver_boundary(qtbot) -> None:
    s = scenario("Qwen/Qwen3-8B", input_len=8192)
    w = make_window(qtbot, s)
    advice = wait_advice(qtbot, w)
    facts, gpu = resolve_model(s.model.id), resolve_gpu("RTX 4090")
    assert gpu is not None
    expected = maximize(s, facts, gpu, "input_len")
    assert expected.limited_by == "memory"
    assert advice.max_length.value == expected.value
    assert readout(w.form.readouts["input_len"]) == expected.value
    assert LIMITS["memory"] in w.form.readouts["input_len"].toolTip()
    at = estimate(with_work(s, input_len=expected.value), facts, gpu).fit
    above = estimate(with_work(s, input_len=expected.value + 1), facts, gpu).fit
    assert at is not None and at.verdict == "fits"
    assert above is not None and above.verdict != "fits"
    # the readout follows the form: another GPU, another boundary
    w.advice = None
    w.gpu_combo.setCurrentIndex(w.gpu_combo.findData("RTX 3090"))
    advice = wait_advice(qtbot, w)
    gpu2 = resolve_gpu("RTX 3090")
    assert gpu2 is not None
    s2 = s.model_copy(update={"hardware": s.hardware.model_copy(update={"gpu": "RTX 3090"})})
    assert readout(w.form.readouts["input_len"]) == maximize(s2, facts, gpu2, "input_len").value


def test_fine_tuning_shows_the_longest_sequence(qtbot) -> None:
    base = scenario("Qwen/Qwen3-4B")
    s = base.model_copy(update={"workload": FinetuneWorkload(method="lora", seq_len=2048)})
    w = make_window(qtbot, s)
    advice = wait_advice(qtbot, w)
    gpu = resolve_gpu("RTX 4090")
    assert gpu is not None
    expected = maximize(s, resolve_model(s.model.id), gpu, "seq_len")
    assert advice.length_field == "seq_len"
    assert readout(w.form.readouts["seq_len"]) == expected.value
    assert w.form.readouts["input_len"].text() == ""


def test_a_tight_plan_reads_the_tight_boundary_it_is_within(qtbot) -> None:
    """A full fine-tune whose optimizer step makes it tight at any length: the readout is the longest sequence
    that still runs inside the headroom, marked tight, not the 92 tokens that fit with it (which read as if the
    plan could not run)."""
    base = scenario("meta-llama/Llama-3.1-8B", "H100 SXM")
    s = base.model_copy(update={"workload": FinetuneWorkload(method="full", precision="bf16", seq_len=4096)})
    w = _open(qtbot, s)
    advice = wait_advice(qtbot, w)
    assert w.view is not None and w.view.verdict == "tight"
    facts, gpu = resolve_model(s.model.id), resolve_gpu("H100 SXM")
    assert gpu is not None
    fits, runs = maximize(s, facts, gpu, "seq_len"), maximize(s, facts, gpu, "seq_len", allow_tight=True)
    assert fits.value is not None and runs.value is not None and fits.value < 4096 < runs.value
    assert advice.max_length_tight.value == runs.value
    assert readout(w.form.readouts["seq_len"]) == runs.value and "(tight)" in w.form.readouts["seq_len"].text()
    assert f"{fits.value:,}" in w.form.readouts["seq_len"].toolTip()


def test_no_gpu_no_readout(qtbot) -> None:
    w = make_window(qtbot, DEFAULT_SCENARIO)
    wait_advice(qtbot, w)
    w.gpu_combo.setCurrentIndex(w.gpu_combo.findData(None))
    w.estimate_now()
    assert w.form.readouts["input_len"].text() == ""
    assert not w.speed_label.isVisible()


# ---------------------------------------------------------------------------------------------- speed


def test_speed_line_shows_the_performance_estimate(qtbot) -> None:
    w = make_window(qtbot, DEFAULT_SCENARIO)
    assert w.speed_label.isVisible()
    gpu = resolve_gpu("RTX 4090")
    assert gpu is not None and w.evaluation is not None and w.evaluation.view is not None
    perf = performance(w.evaluation.view.estimate, DEFAULT_SCENARIO, resolve_model("Qwen/Qwen3-4B"), gpu)
    assert perf.decode_tokens_per_s is not None
    assert f"{perf.decode_tokens_per_s:,.1f}" in w.speed_label.text()
    assert "time to first token" in w.speed_label.text()
    for line in perf.assumptions:
        assert line in w.speed_label.toolTip()


def test_speed_line_for_fine_tuning_shows_the_step_time(qtbot) -> None:
    s = scenario("Qwen/Qwen3-4B").model_copy(update={"workload": FinetuneWorkload(method="qlora")})
    w = make_window(qtbot, s)
    assert w.speed_label.isVisible()
    assert "training step" in w.speed_label.text()


# ---------------------------------------------------------------------------------------------- settings


def test_units_switch_rescales_every_figure(qtbot) -> None:
    w = make_window(qtbot, DEFAULT_SCENARIO)
    assert w.evaluation is not None and w.evaluation.view is not None
    view = w.evaluation.view
    gib_text = w.stat_device.value.text()
    assert gib_text == f"{view.device_bytes / GIB:.2f} GiB"
    row0 = float(w.table_model.data(w.table_model.index(0, w.table_model.GIB_COL)))
    dialog = SettingsDialog(w)
    qtbot.addWidget(dialog)
    dialog.unit_combo.setCurrentIndex(dialog.unit_combo.findData("GB"))
    dialog.apply()
    assert QSettings().value(UNIT_KEY) == "GB"
    w.load_display_settings()
    w.form.refresh_units()
    w.estimate_now()
    factor = GIB / 1e9
    gb_text = w.stat_device.value.text()
    assert gb_text.endswith(" GB")
    assert float(gb_text.split()[0]) == pytest.approx(float(gib_text.split()[0]) * factor, abs=0.01)
    row0_gb = float(w.table_model.data(w.table_model.index(0, w.table_model.GIB_COL)))
    assert row0_gb == pytest.approx(row0 * factor, abs=0.01)
    assert w.table_model.headerData(w.table_model.GIB_COL, Qt.Orientation.Horizontal) == "GB"
    assert w.phase_chart.plot.getPlotItem().getAxis("left").labelText == "GB"
    assert w.breakdown.bar_plot.getPlotItem().getAxis("left").labelText == "GB"
    assert " GB" in w.message_label.text() and "GiB" not in w.message_label.text()
    assert "GiB" not in w.gpu_combo.currentText() and "25.76 GB" in w.gpu_combo.currentText()
    # a new window starts in the saved unit
    w2 = make_window(qtbot, DEFAULT_SCENARIO)
    assert w2.stat_device.value.text() == gb_text


def test_headroom_setting_changes_a_borderline_verdict(qtbot) -> None:
    facts, gpu = resolve_model("Qwen/Qwen3-8B"), resolve_gpu("RTX 4090")
    assert gpu is not None
    edge = maximize(scenario("Qwen/Qwen3-8B"), facts, gpu, "input_len").value
    assert edge is not None
    w = make_window(qtbot, scenario("Qwen/Qwen3-8B", input_len=edge + 1))
    assert w.evaluation is not None and w.evaluation.view is not None
    assert w.evaluation.view.verdict != "fits"
    dialog = SettingsDialog(w)
    qtbot.addWidget(dialog)
    dialog.headroom_spin.setValue(0.0)
    dialog.apply()
    assert float(str(QSettings().value(HEADROOM_KEY))) == 0.0
    w.load_display_settings()
    assert w.headroom_fraction == 0.0
    w.estimate_now()
    assert w.evaluation.view is not None and w.evaluation.view.verdict == "fits"
    # back to the default: the key is removed and the verdict is as before
    dialog.headroom_spin.setValue(dialog.headroom_spin.minimum())
    dialog.apply()
    assert QSettings().value(HEADROOM_KEY) is None
    w.load_display_settings()
    w.estimate_now()
    assert w.evaluation.view is not None and w.evaluation.view.verdict != "fits"


def test_per_gpu_chips_use_the_cores_own_verdict(qtbot) -> None:
    s = scenario("Qwen/Qwen3-32B", gpu="RTX 4090", engine="vllm", input_len=4096).model_copy(
        update={"hardware": scenario().hardware.model_copy(update={"gpu_count": 2})}
    )
    s = Scenario.model_validate({**s.model_dump(mode="json"), "parallelism": {"tp": 2}})
    w = make_window(qtbot, s)
    ev = w.evaluation
    assert ev is not None and ev.view is not None
    est = ev.view.estimate
    assert len(ev.view.per_gpu) == 2
    gpu = resolve_gpu("RTX 4090")
    assert gpu is not None
    card = gpu.memory_bytes
    for load, share in zip(ev.view.per_gpu, est.per_gpu, strict=True):
        assert share.fit is not None
        assert load.verdict == share.fit.verdict
        # the share of the whole card, for vLLM too (not of its gpu_memory_utilization budget)
        assert load.fraction == pytest.approx(share.device_bytes / card)
    assert w.gpu_chips.isVisible()


def test_gpus_that_hold_the_same_are_one_chip_and_machines_are_named(qtbot) -> None:
    # 2 machines x 8 GPUs, ZeRO-3: all 16 hold the same; the chips once listed every GPU (128 for 16 machines)
    s = Scenario.model_validate(
        {
            "model": {"id": "meta-llama/Llama-3.1-8B"},
            "hardware": {"gpu": "H100 SXM", "gpu_count": 8, "nodes": 2},
            "parallelism": {"zero": 3},
            "workload": {"kind": "finetune", "method": "full"},
        }
    )
    w = _open(qtbot, s)
    assert w.view is not None and len(w.view.per_gpu) == 16
    assert "GPU 0–15 (each)" in w.gpu_chips.text() and w.gpu_chips.text().count("GPU") == 1
    assert "on 2 machines x 8 x H100 SXM" in w.scenario_label.text()


def test_gpu_groups_keep_the_gpus_that_differ_apart() -> None:
    def load(i: int, gib_: int, verdict: str = "fits") -> GpuLoad:
        return GpuLoad(i, 0, 0, gib_ * GIB, verdict, 0.5)

    # pipeline stages: the first holds more than the middle two, the last its own
    loads = (load(0, 30), load(1, 20), load(2, 20), load(3, 25), load(4, 25, "tight"))
    assert [(a, b, g.device_bytes // GIB) for a, b, g in gpu_groups(loads)] == [
        (0, 0, 30),
        (1, 2, 20),
        (3, 3, 25),
        (4, 4, 25),
    ]


def test_new_strings_have_chinese_translations() -> None:
    table = i18n.table("zh_CN")
    dynamic = set(LIMITS.values()) | set(UNIT_CHOICES.values())
    dynamic |= {"memory bandwidth", "compute", "communication", "host transfer"}
    missing = sorted(s for s in dynamic if s not in table)
    assert not missing, missing


def test_changes_respect_a_headroom_of_the_users_own(qtbot) -> None:
    QSettings().setValue(HEADROOM_KEY, 20.0)
    w = make_window(qtbot, scenario("Qwen/Qwen3-14B", input_len=16384))
    assert w.headroom_fraction == pytest.approx(0.2)
    advice = wait_advice(qtbot, w)
    options = advice.changes.options
    assert options
    facts, gpu = resolve_model("Qwen/Qwen3-14B"), resolve_gpu("RTX 4090")
    assert gpu is not None
    for o in options:
        fit = estimate(Scenario.model_validate(o.scenario), facts, gpu, headroom_fraction=0.2).fit
        assert fit is not None and fit.verdict == "fits"
    # the max readout is solved with the same headroom as the verdict
    solved = maximize(
        Scenario.model_validate(advice.scenario.model_dump()), facts, gpu, "input_len", headroom_fraction=0.2
    )
    assert advice.max_length is not None and advice.max_length.value == solved.value
    qtbot.mouseClick(w.advice_buttons[0], Qt.MouseButton.LeftButton)
    assert w.evaluation is not None and w.evaluation.view is not None
    assert w.evaluation.view.verdict == "fits"
