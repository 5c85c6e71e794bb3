"""The first window: presenter logic without widgets, then the window, its charts and the app's commands.

Qt runs offscreen (tests/conftest.py). Everything runs in this process: the app reuses pytest-qt's
QApplication.
"""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.gpu import GIB
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog
from vramdesk.services.resolve import resolve_gpu, resolve_model
from vramdesk.storage.scenarios import save_scenario
from vramdesk.ui import app as ui_app
from vramdesk.ui import qtapp
from vramdesk.ui.charts import FULL_CIRCLE, BreakdownChart, PieItem
from vramdesk.ui.main_window import WINDOW_SIZE, MainWindow
from vramdesk.ui.presenter import (
    VERDICT_TITLES,
    FormValues,
    evaluate_form,
    evaluate_scenario,
    form_from_scenario,
    pie_angles,
    scenario_from_form,
)
from vramdesk.ui.theme import CATEGORY_COLORS, component_colors
from vramdesk.ui.widgets import ComponentTableModel

ROOT = Path(__file__).resolve().parents[2]


def direct_estimate(scenario: Scenario = DEFAULT_SCENARIO):
    return estimate(scenario, resolve_model(scenario.model.id), resolve_gpu(scenario.hardware.gpu))


def variant(**changes: object) -> Scenario:
    data = DEFAULT_SCENARIO.model_dump()
    for key, value in changes.items():
        if key in ("engine", "batch", "input_len", "output_len", "kv_dtype"):
            data["workload"][key] = value
        elif key in ("gpu", "gpu_count"):
            data["hardware"][key] = value
        elif key in ("tp", "pp"):
            data["parallelism"][key] = value
        elif key == "model":
            data["model"] = {"id": value}
        else:
            data[key] = value
    return Scenario.model_validate(data)


def component(est_or_rows, name: str) -> int:
    return next(c.bytes for c in est_or_rows if c.name == name)


@pytest.fixture
def window(qtbot) -> MainWindow:
    qtapp.ensure_app()
    w = MainWindow(DEFAULT_SCENARIO)
    qtbot.addWidget(w)
    w.resize(*WINDOW_SIZE)
    w.show()
    qtbot.waitExposed(w)
    return w


# ---------------------------------------------------------------------------------------------- presenter


def test_presenter_matches_a_direct_estimate() -> None:
    est = direct_estimate()
    ev = evaluate_form(DEFAULT_SCENARIO, form_from_scenario(DEFAULT_SCENARIO))
    assert ev.error is None and ev.view is not None
    view = ev.view
    assert est.fit is not None
    assert view.verdict == est.fit.verdict
    assert view.headline == VERDICT_TITLES[est.fit.verdict]
    assert view.message == est.fit.message
    assert (view.peak_allocated_bytes, view.peak_reserved_bytes, view.device_bytes) == (
        est.peak_allocated_bytes,
        est.peak_reserved_bytes,
        est.device_bytes,
    )
    assert [s.name for s in view.slices] == [c.name for c in est.components]
    assert sum(s.bytes for s in view.slices) == est.peak_allocated_bytes
    assert math.isclose(sum(s.share for s in view.slices), 1.0)
    assert [p.name for p in view.phases] == [p.name for p in est.phases]
    assert [p.name for p in view.phases if p.is_peak] == [est.peak_phase]
    assert view.summary_line().startswith(f"Qwen/Qwen3-4B {est.device_bytes / GIB:.2f} GiB on RTX 4090 (")


def test_form_round_trip_keeps_fields_the_form_does_not_show() -> None:
    base = Scenario.model_validate(
        {
            "name": "kept",
            "model": {"id": "Qwen/Qwen3-8B"},
            "weights": "auto",
            "workload": {
                "engine": "vllm",
                "attention": "flash",
                "vllm": {"gpu_memory_utilization": 0.8, "block_size": 32},
            },
            "hardware": {"gpu": "H100 SXM", "gpu_count": 2},
            "parallelism": {"tp": 2},
        }
    )
    form = form_from_scenario(base)
    assert form == FormValues(
        model="Qwen/Qwen3-8B",
        engine="vllm",
        weights="auto",
        batch=1,
        input_len=None,
        output_len=512,
        kv_dtype="auto",
        attention="flash",
        gpu_memory_utilization=0.8,
        tp=2,
        gpu="H100 SXM",
        gpu_count=2,
    )
    changed = scenario_from_form(base, FormValues(**{**form.__dict__, "batch": 4, "kv_dtype": "fp8"}))
    assert changed.workload.batch == 4 and changed.workload.kv_dtype == "fp8"
    assert changed.workload.attention == "flash"
    assert changed.workload.vllm.gpu_memory_utilization == 0.8
    assert changed.workload.vllm.block_size == 32  # a field the form does not show
    assert changed.parallelism.tp == 2 and changed.name == "kept"
    assert scenario_from_form(base, form) == base


def test_invalid_combinations_become_error_lines() -> None:
    base = variant(tp=2, gpu_count=2)
    bad = evaluate_form(base, FormValues(**{**form_from_scenario(base).__dict__, "gpu_count": 1}))
    assert bad.view is None and bad.error is not None
    assert "tp (2)" in bad.error and "gpu_count is 1" in bad.error
    unknown = evaluate_scenario(variant(model="nobody/no-such-model"))
    assert unknown.view is None and unknown.error is not None and "nobody/no-such-model" in unknown.error


def test_a_fine_tuning_scenario_is_estimated_and_kept(qtbot) -> None:
    finetune = Scenario.model_validate(
        {"model": {"id": "Qwen/Qwen3-4B"}, "workload": {"kind": "finetune"}, "hardware": {"gpu": "RTX 4090"}}
    )
    form = form_from_scenario(finetune)
    assert form.engine == "transformers" and form.gpu == "RTX 4090"
    assert scenario_from_form(finetune, form).workload.kind == "finetune"  # the form never drops it silently
    w = MainWindow(finetune)
    qtbot.addWidget(w)
    cat = default_catalog()
    direct = estimate(finetune, cat.facts("Qwen/Qwen3-4B"), cat.gpu("RTX 4090"))
    assert direct.fit is not None
    assert w.verdict_label.text().lower() == direct.fit.verdict.lower()
    assert direct.fit.message in w.message_label.text()


@pytest.mark.parametrize(
    "values", [[1], [3, 1], [8044936192, 1132462080, 566231040, 8519680], [5, 0, 5], [1, 1, 1, 1, 1, 1, 1], [10**12, 1]]
)
def test_pie_angles_cover_the_circle_in_proportion(values: list[int]) -> None:
    angles = pie_angles(values)
    assert sum(span for _, span in angles) == FULL_CIRCLE
    total = sum(values)
    edge = 0
    for (start, span), v in zip(angles, values, strict=True):
        assert start == edge and span >= 0  # slices follow each other without gaps
        assert abs(span - v * FULL_CIRCLE / total) <= 1
        edge += span
    assert pie_angles([0, 0]) == [(0, 0), (0, 0)]


def test_component_colours_are_stable_per_category() -> None:
    colors = component_colors(
        [("weights", "weights"), ("KV cache", "kv_cache"), ("CUDA graphs", "overhead"), ("cuBLAS", "overhead")]
    )
    assert colors["weights"] == CATEGORY_COLORS["weights"]
    assert colors["KV cache"] == CATEGORY_COLORS["kv_cache"]
    assert colors["CUDA graphs"] == CATEGORY_COLORS["overhead"]
    assert colors["cuBLAS"] not in CATEGORY_COLORS.values()  # a lighter shade of the same category
    assert len(set(CATEGORY_COLORS.values())) == len(CATEGORY_COLORS) == 9
    # the logits' light yellow: its second component is a darker shade, not a near-identical paler one
    two = component_colors([("logits and loss", "logits"), ("loss head", "logits")])
    (r1, g1, b1), (r2, g2, b2) = (tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in two.values())
    assert (r1 + g1 + b1) - (r2 + g2 + b2) > 120


# ---------------------------------------------------------------------------------------------- window


def test_window_shows_the_default_estimate(window: MainWindow) -> None:
    est = direct_estimate()
    assert est.fit is not None
    assert window.verdict_label.text() == VERDICT_TITLES[est.fit.verdict]
    assert window.verdict_label.text() in ("Fits", "Tight", "Does not fit")
    assert window.message_label.text() == est.fit.message
    assert window.stat_allocated.value.text() == f"{est.peak_allocated_bytes / GIB:.2f} GiB"
    assert window.stat_reserved.value.text() == f"{est.peak_reserved_bytes / GIB:.2f} GiB"
    assert window.stat_device.value.text() == f"{est.device_bytes / GIB:.2f} GiB"
    assert window.stat_params.value.text() == f"{est.params.total / 1e9:.2f} B"
    assert window.model_combo.currentData() == "Qwen/Qwen3-4B"
    assert window.gpu_combo.currentData() == "RTX 4090"
    # the command line's default prompt (auto: the model's context, at most 4,096 tokens)
    assert window.widget("input_len").text() == "auto" and est.engine.kv_bytes_per_token > 0
    # table: one row per component, GiB with 2 decimals, the formula as tooltip and as a column
    model = window.table_model
    assert model.rowCount() == len(est.components)
    for row, c in enumerate(est.components):
        assert model.index(row, ComponentTableModel.NAME).data() == c.name
        assert model.index(row, ComponentTableModel.GIB_COL).data() == f"{c.bytes / GIB:.2f}"
        assert c.explain in model.index(row, ComponentTableModel.EXPLAIN).data()
        tip = model.index(row, ComponentTableModel.GIB_COL).data(Qt.ItemDataRole.ToolTipRole)
        assert c.name in tip and f"{c.bytes:,}" in tip
    # the legend names every component the charts draw, in their colours
    legend = dict(window.legend.entries)
    assert set(legend) >= {c.name for c in est.components}
    assert legend["weights"] == CATEGORY_COLORS["weights"]


def test_pie_slices_are_proportional_to_the_components(window: MainWindow) -> None:
    est = direct_estimate()
    slices = window.breakdown.pie.slices
    assert [s.label for s in slices] == [c.name for c in est.components]
    assert sum(s.span for s in slices) == FULL_CIRCLE
    assert math.isclose(sum(s.degrees for s in slices), 360.0)
    total = sum(c.bytes for c in est.components)
    for s, c in zip(slices, est.components, strict=True):
        assert s.value == c.bytes
        assert abs(s.span - c.bytes / total * FULL_CIRCLE) <= 1
        assert s.color == window.view.colors[c.name]  # type: ignore[union-attr]
    assert slices[0].color == CATEGORY_COLORS[est.components[0].category]


def _pie_pixel(window: MainWindow, clockwise_from_12_deg: float, radius_fraction: float) -> QPoint:
    """Where a point of the pie is in the window, computed without the pie's own angle code."""
    pie = window.breakdown.pie
    a = math.radians(clockwise_from_12_deg)
    r = pie.radius * radius_fraction
    # the ViewBox's y axis points up: 12 o'clock is +y, 3 o'clock is +x
    scene = pie.mapToScene(QPointF(r * math.sin(a), r * math.cos(a)))
    plot = window.breakdown.pie_plot
    return plot.mapTo(window, plot.mapFromScene(scene))


def test_pie_pixels_have_the_category_colours_clockwise_from_12(window: MainWindow) -> None:
    est = direct_estimate()
    assert [c.category for c in est.components][:3] == ["weights", "kv_cache", "activations"]
    image = window.grab().toImage()
    assert (image.width(), image.height()) == WINDOW_SIZE

    def color_at(deg: float) -> str:
        p = _pie_pixel(window, deg, 0.93)  # outside the percentage labels (at 0.76)
        return image.pixelColor(p.x(), p.y()).name()

    total = sum(c.bytes for c in est.components)
    weights_end = est.components[0].bytes / total * 360
    kv_end = weights_end + est.components[1].bytes / total * 360
    assert color_at(weights_end / 2) == CATEGORY_COLORS["weights"]
    assert color_at(10) == CATEGORY_COLORS["weights"]  # the first slice starts at 12 and runs clockwise
    assert color_at((weights_end + kv_end) / 2) == CATEGORY_COLORS["kv_cache"]
    assert color_at(kv_end + 5) == CATEGORY_COLORS["activations"]
    # the hole in the middle is white
    centre = _pie_pixel(window, 0, 0.0)
    assert image.pixelColor(centre.x(), centre.y() + 30).name() == "#ffffff"


def test_pie_item_paints_its_slices(qtbot) -> None:
    chart = BreakdownChart()
    qtbot.addWidget(chart)
    chart.resize(400, 400)
    chart.show()
    qtbot.waitExposed(chart)
    pie: PieItem = chart.pie
    pie.set_slices([("a", 1, "#ff0000"), ("b", 3, "#0000ff")])
    assert [s.span for s in pie.slices] == [1440, 4320]
    image = chart.pie_plot.grab().toImage()
    plot = chart.pie_plot

    def at(deg: float) -> str:
        a = math.radians(deg)
        p = plot.mapFromScene(pie.mapToScene(QPointF(0.8 * math.sin(a), 0.8 * math.cos(a))))
        return image.pixelColor(p.x(), p.y()).name()

    assert at(45) == "#ff0000"  # a quarter, clockwise from 12 to 3 o'clock
    assert at(135) == "#0000ff"
    assert at(315) == "#0000ff"


def test_more_input_tokens_re_estimates_and_grows_the_kv_cache(window: MainWindow, qtbot) -> None:
    before = window.view
    assert before is not None
    kv_before = component(before.slices, "KV cache")
    with qtbot.waitSignal(window.estimated, timeout=2000):
        window.widget("input_len").setValue(8192)  # from auto (4,096 for Qwen3-4B)
    after = window.view
    assert after is not None and after is not before
    kv_after = component(after.slices, "KV cache")
    assert kv_after > kv_before
    expected = direct_estimate(variant(input_len=8192))
    assert kv_after == component(expected.components, "KV cache")
    assert window.stat_device.value.text() == f"{expected.device_bytes / GIB:.2f} GiB"
    assert [s.value for s in window.breakdown.pie.slices] == [c.bytes for c in expected.components]


def test_changes_are_debounced_into_one_estimate(window: MainWindow, qtbot) -> None:
    seen: list[object] = []
    window.estimated.connect(seen.append)
    window.widget("batch").setValue(2)
    window.widget("output_len").setValue(1024)
    window.widget("engine").setCurrentIndex(window.widget("engine").findData("vllm"))
    assert seen == []  # nothing yet: the estimate runs on the next turn of the event loop
    qtbot.waitUntil(lambda: len(seen) == 1, timeout=2000)
    qtbot.wait(20)
    assert len(seen) == 1
    est = direct_estimate(variant(batch=2, output_len=1024, engine="vllm"))
    assert window.view is not None and window.view.device_bytes == est.device_bytes
    assert window.breakdown.title.text() == f"At the peak ({est.peak_phase})"


def test_impossible_combination_shows_an_error_and_keeps_the_chart(qtbot) -> None:
    w = MainWindow(variant(tp=2, gpu_count=2))
    qtbot.addWidget(w)
    good = w.view
    assert good is not None and w.verdict_label.text() != "Cannot estimate"
    slices = w.breakdown.pie.slices
    with qtbot.waitSignal(w.estimated, timeout=2000) as blocker:
        w.widget("gpu_count").setValue(1)
    assert blocker.args is not None and blocker.args[0].error is not None
    assert w.verdict_label.text() == "Cannot estimate"
    assert "tp (2)" in w.message_label.text()
    assert "#c62828" in w.verdict_label.styleSheet()
    assert w.breakdown.pie.slices == slices and w.view is good  # the last chart stays
    # and the window recovers
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.widget("gpu_count").setValue(2)
    assert w.verdict_label.text() in ("Fits", "Tight", "Does not fit")


def test_unknown_model_in_a_scenario_does_not_crash(qtbot) -> None:
    w = MainWindow(variant(model="nobody/no-such-model"))
    qtbot.addWidget(w)
    # not a catalog model: it is looked up on a worker, the window says so meanwhile
    assert w.verdict_label.text() == "Reading the model…" or w.verdict_label.text() == "Cannot estimate"
    qtbot.waitUntil(lambda: w.verdict_label.text() == "Cannot estimate", timeout=5000)
    assert "nobody/no-such-model" in w.message_label.text()
    assert w.model_combo.currentData() == "nobody/no-such-model"
    # choosing a catalog model fixes it
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.model_combo.setCurrentIndex(w.model_combo.findData("Qwen/Qwen3-0.6B"))
    assert w.view is not None and w.view.model_id == "Qwen/Qwen3-0.6B"


def test_no_gpu_means_no_verdict(window: MainWindow, qtbot) -> None:
    with qtbot.waitSignal(window.estimated, timeout=2000):
        window.gpu_combo.setCurrentIndex(window.gpu_combo.findData(None))
    assert window.view is not None and window.view.verdict is None
    assert window.verdict_label.text() == "No GPU chosen"


def test_breakdown_switches_between_pie_and_stacked_bar(window: MainWindow, qtbot) -> None:
    chart = window.breakdown
    est = direct_estimate()
    assert chart.mode == "pie"
    qtbot.mouseClick(chart.mode_buttons["bar"], Qt.MouseButton.LeftButton)
    assert chart.mode == "bar" and chart.stack.currentWidget() is chart.bar_plot
    assert len(chart.bar_items) == len(est.components)
    heights = [float(b.opts["height"][0]) for b in chart.bar_items]
    assert math.isclose(sum(heights), est.peak_allocated_bytes / GIB)
    bottoms = [float(b.opts["y0"][0]) for b in chart.bar_items]
    assert bottoms[0] == 0 and all(
        math.isclose(bottoms[i + 1], bottoms[i] + heights[i]) for i in range(len(heights) - 1)
    )
    qtbot.mouseClick(chart.mode_buttons["pie"], Qt.MouseButton.LeftButton)
    assert chart.mode == "pie"
    with pytest.raises(ValueError, match="unknown chart mode"):
        chart.set_mode("donut")


def test_phase_chart_stacks_every_phase(window: MainWindow) -> None:
    est = direct_estimate()
    chart = window.phase_chart
    assert chart.phase_names == [p.name for p in est.phases] == ["load", "prefill", "decode"]
    for i, phase in enumerate(est.phases):
        stacked = sum(v[i] for v in chart.stacks.values())
        assert math.isclose(stacked, phase.allocated_bytes / GIB)
    assert chart.stacks["KV cache"][0] == 0 and chart.stacks["KV cache"][1] > 0
    ticks = chart.plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert ("prefill\n(peak)" in [t for _, t in ticks]) is (est.peak_phase == "prefill")


def test_table_model_passes_qt_model_checks(window: MainWindow, qtmodeltester) -> None:
    qtmodeltester.check(window.table_model)


# ---------------------------------------------------------------------------------------------- app commands


def test_parse_args() -> None:
    p = ui_app.parse_args
    assert p([]) == ui_app.Options(mode="gui")
    assert p(["gui", "a.json"]) == ui_app.Options(mode="gui", scenario=Path("a.json"))
    assert p(["--screenshot", "x.png", "s.json"]) == ui_app.Options("screenshot", Path("s.json"), Path("x.png"))
    assert p(["--screenshot=x.png"]) == ui_app.Options("screenshot", None, Path("x.png"))
    assert p(["--self-test"]).mode == "self-test"
    for bad in (["--screenshot"], ["--bogus"], ["gui", "a.json", "b.json"]):
        with pytest.raises(ui_app.UsageError):
            p(bad)


def test_screenshot_writes_a_png_of_the_window_size(qapp, tmp_path: Path, capsys) -> None:
    out = tmp_path / "shot.png"
    assert ui_app.run(["--screenshot", str(out)]) == 0
    image = QImage(str(out))
    assert not image.isNull()
    assert (image.width(), image.height()) == WINDOW_SIZE
    colours = {image.pixelColor(x, y).name() for x in range(0, WINDOW_SIZE[0], 7) for y in range(0, WINDOW_SIZE[1], 7)}
    assert CATEGORY_COLORS["weights"] in colours and CATEGORY_COLORS["kv_cache"] in colours
    assert "shot.png" in capsys.readouterr().out


def test_screenshot_of_a_saved_scenario(qapp, tmp_path: Path) -> None:
    scenario = tmp_path / "s.json"
    save_scenario(variant(engine="vllm", model="Qwen/Qwen3-8B"), scenario)
    out = tmp_path / "s.png"
    assert ui_app.run([f"--screenshot={out}", str(scenario)]) == 0
    assert QImage(str(out)).width() == WINDOW_SIZE[0]


@pytest.mark.parametrize(
    "content", ["{not json", json.dumps({"model": {"id": "x"}, "workload": {"batch": 0}}), json.dumps([1, 2])]
)
def test_screenshot_with_a_bad_scenario_exits_2(qapp, tmp_path: Path, capsys, content: str) -> None:
    scenario = tmp_path / "bad.json"
    scenario.write_text(content, encoding="utf-8")
    out = tmp_path / "never.png"
    assert ui_app.run(["--screenshot", str(out), str(scenario)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and err.startswith("vramdesk: ")
    assert not out.exists()


def test_screenshot_to_an_unwritable_place_exits_2(qapp, tmp_path: Path, capsys) -> None:
    assert ui_app.run(["--screenshot", str(tmp_path / "missing" / "x.png")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert ui_app.run(["--screenshot", str(tmp_path)]) == 2
    assert "folder" in capsys.readouterr().err


def test_missing_scenario_file_for_screenshot(qapp, tmp_path: Path, capsys) -> None:
    assert ui_app.run(["--screenshot", str(tmp_path / "x.png"), str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_self_test_passes(qapp, capsys) -> None:
    assert ui_app.run(["--self-test"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("self-test ok: Qwen/Qwen3-4B ")
    assert "on RTX 4090 (" in out


def test_self_test_reports_a_failure(qapp, capsys, monkeypatch) -> None:
    monkeypatch.setattr(ui_app, "resolve_model", lambda ref: (_ for _ in ()).throw(RuntimeError("boom")))
    assert ui_app.run(["--self-test"]) == 1
    assert "self-test failed: RuntimeError: boom" in capsys.readouterr().err


def test_usage_errors_exit_2(qapp, capsys) -> None:
    assert ui_app.run(["--bogus"]) == 2
    assert "unknown option --bogus" in capsys.readouterr().err
    assert ui_app.run(["gui", "--help"]) == 0
    assert "--screenshot" in capsys.readouterr().out


def test_gui_with_a_bad_scenario_falls_back_to_the_default(qtbot, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": {"id": "Qwen/Qwen3-4B"}, "workload": {"kind": "inference", "batch": -1}}')
    w = ui_app.open_window(bad)
    qtbot.addWidget(w)
    assert w.scenario == DEFAULT_SCENARIO
    assert w.view is not None and w.verdict_label.text() in ("Fits", "Tight", "Does not fit")
    err = capsys.readouterr().err
    assert "bad.json" in err and "default scenario" in err
    assert w.warnings_label.isVisibleTo(w) and "bad.json" in w.warnings_label.text()


def test_gui_opens_a_saved_scenario(qtbot, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    save_scenario(variant(engine="llamacpp", weights="q4_k_m", model="Qwen/Qwen3-8B", batch=3), path)
    w = ui_app.open_window(path)
    qtbot.addWidget(w)
    assert w.widget("engine").currentData() == "llamacpp"
    assert w.widget("weights").currentData() == "q4_k_m"
    assert w.widget("batch").value() == 3
    assert w.view is not None and w.view.model_id == "Qwen/Qwen3-8B"


def test_run_gui_runs_the_event_loop_until_the_window_closes(qapp, qtbot) -> None:
    from PySide6.QtCore import QTimer

    closed: list[MainWindow] = []

    def close_windows() -> None:
        for widget in QApplication.topLevelWidgets():
            if isinstance(widget, MainWindow) and widget.isVisible():
                closed.append(widget)
                widget.close()

    QTimer.singleShot(100, close_windows)
    # a safety net that only stops a hang; stopped afterwards, so it cannot quit a later test's event loop
    safety_net = QTimer()
    safety_net.setSingleShot(True)
    safety_net.timeout.connect(qapp.quit)
    safety_net.start(60_000)
    try:
        assert ui_app.run([]) == 0
    finally:
        safety_net.stop()
    assert len(closed) == 1
    # run() leaves its closed window alive (the program ends there); this process goes on to other tests
    for window in closed:
        window.deleteLater()
    closed.clear()


# ---------------------------------------------------------------------------------------------- guards


def test_many_qt_calls_do_not_abort_the_interpreter() -> None:
    """shiboken6 6.12.0 on Python 3.11 takes a reference from None per void call; 5,000 calls aborted."""
    code = (
        "import vramdesk.ui\n"
        "from PySide6.QtWidgets import QApplication, QWidget\n"
        "from PySide6.QtCore import QObject, Signal\n"
        "class O(QObject):\n    s = Signal()\n"
        "app = QApplication([]); w = QWidget(); o = O()\n"
        "for _ in range(30000):\n    w.resize(10, 10); o.s.emit()\n"
        "print('ok')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


def test_ui_never_imports_the_cli() -> None:
    for path in (ROOT / "vramdesk" / "ui").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module is None or not node.module.startswith("vramdesk.cli"), path
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("vramdesk.cli") for a in node.names), path
