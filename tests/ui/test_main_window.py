"""The three-pane window: model browser (slow fake Hub), workload tabs, GPU detection, comfort, translations.

Search, resolve and NVML are injected, so nothing here touches the network or a driver.
"""

from __future__ import annotations

import ast
import json
import statistics
import threading
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QElapsedTimer, QPointF, QTimer
from PySide6.QtGui import QGuiApplication
from uiwindow import make_window

from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GIB, MIB
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog
from vramdesk.services.nvml import DetectedGpu, DetectionResult, GpuProcess
from vramdesk.services.search import HubAnswer, SearchResult, local_results
from vramdesk.ui import app as ui_app
from vramdesk.ui import i18n, qt_i18n
from vramdesk.ui.browser import SearchResultModel, details_html
from vramdesk.ui.presenter import DETECTED_PREFIX

ROOT = Path(__file__).resolve().parents[2]
NO_GPU = DetectionResult(reason="no NVIDIA driver found (libnvidia-ml.so.1)")


def no_gpu() -> DetectionResult:
    return NO_GPU


class SlowHub:
    """A Hub that answers after ``delay`` seconds (``delays[query]`` for that query) unless cancelled; records every
    call and whether it ran on the GUI thread."""

    def __init__(self, delay: float = 0.4, delays: dict[str, float] | None = None) -> None:
        self.delay = delay
        self.delays = delays or {}
        self.calls: list[str] = []
        self.cancelled: list[str] = []
        self.on_gui_thread: list[bool] = []

    def __call__(self, query: str, cancel: threading.Event) -> HubAnswer:
        self.calls.append(query)
        self.on_gui_thread.append(threading.current_thread() is threading.main_thread())
        if cancel.wait(self.delays.get(query, self.delay)):
            self.cancelled.append(query)
            return HubAnswer()
        return HubAnswer(
            results=[
                SearchResult(
                    id=f"acme/{query}-hub",
                    source="hub",
                    sources=("hub",),
                    params=7_000_000_000,
                    downloads=12_345,
                    model_type="llama",
                )
            ],
            seconds=self.delay,
        )


# ---------------------------------------------------------------------------------------------- browser


def test_search_debounces_and_the_newest_hub_answer_wins(qtbot) -> None:
    # the first query is still in flight when the next one comes, however slow the machine (60 s: a hang guard)
    hub = SlowHub(delay=0.3, delays={"qwen": 60.0})
    w = make_window(qtbot, hub_search=hub)
    browser = w.browser
    # keep typing: each letter restarts the debounce timer, which cannot fire before the event loop runs again
    stalls: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [0]

    def tick() -> None:
        now = clock.elapsed()
        stalls.append(now - last[0])
        last[0] = now

    ticker = QTimer()
    ticker.setInterval(5)
    ticker.timeout.connect(tick)
    ticker.start()
    for text in ("q", "qw", "qwe", "qwen"):
        browser.search_box.setText(text)
    assert hub.calls == []  # still within the debounce interval
    qtbot.waitUntil(lambda: hub.calls == ["qwen"], timeout=2000)
    assert w.progress.isVisible()  # the status bar shows the Hub search
    # a new query while the first is in flight cancels it
    browser.search_box.setText("qwen3")
    qtbot.waitUntil(lambda: browser.last_hub is not None, timeout=3000)
    ticker.stop()
    assert hub.calls == ["qwen", "qwen3"] and hub.cancelled == ["qwen"]
    ids = [r.id for r in browser.model.rows]
    assert "acme/qwen3-hub" in ids and "acme/qwen-hub" not in ids
    assert any(r.source == "catalog" for r in browser.model.rows)  # local results stay, merged
    qtbot.waitUntil(lambda: not w.progress.isVisible(), timeout=2000)
    longest = max(stalls[1:], default=0)
    print(f"longest event-loop stall while typing against a slow Hub: {longest} ms")
    # the slow Hub never blocked the event loop: it was only ever called on a worker (a stall's length in ms is
    # the machine's load as much as the window's)
    assert hub.on_gui_thread == [False, False]


def test_local_results_come_at_once_and_catalog_details_show(qtbot) -> None:
    w = make_window(qtbot)
    browser = w.browser
    browser.search_box.setText("qwen3 8b")
    browser.search_now()
    ids = [r.id for r in browser.model.rows]
    assert "Qwen/Qwen3-8B" in ids
    row = ids.index("Qwen/Qwen3-8B")
    browser.table.selectRow(row)
    text = browser.details.text()
    facts = default_catalog().facts("Qwen/Qwen3-8B")
    assert facts.arch.attention_summary in text and f"{facts.arch.max_position:,}" in text
    assert "apache-2.0" in text.lower()
    assert f">{facts.arch.n_layers}<" in text


def test_picking_a_result_re_estimates(qtbot) -> None:
    w = make_window(qtbot)
    before = w.view
    assert before is not None
    w.browser.search_box.setText("Qwen3-32B")
    w.browser.search_now()
    row = [r.id for r in w.browser.model.rows].index("Qwen/Qwen3-32B")
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.browser.table.clicked.emit(w.browser.model.index(row, 0))
    assert w.view is not None and w.view.model_id == "Qwen/Qwen3-32B"
    assert w.view.verdict == "does not fit" and before.verdict != "does not fit"
    assert w.model_combo.currentData() == "Qwen/Qwen3-32B"


def test_a_hub_model_is_resolved_on_a_worker(qtbot) -> None:
    gate = threading.Event()
    calls: list[str] = []
    resolved: list[bool] = []  # per resolve: it ran on the GUI thread

    def slow_resolve(ref: str) -> ModelFacts:
        calls.append(ref)
        gate.wait(60)  # only a hang guard: the test opens the gate
        resolved.append(threading.current_thread() is threading.main_thread())
        return default_catalog().facts("Qwen/Qwen3-8B")

    w = make_window(qtbot, resolve=slow_resolve)
    w.choose_model("acme/some-8b")
    assert resolved == []  # the window did not wait: the resolve is still held at the gate
    assert w.pending and w.progress.isVisible()
    assert w.verdict_label.text() == "Reading the model…"
    with qtbot.waitSignal(w.estimated, timeout=5000):
        gate.set()
    assert calls == ["acme/some-8b"] and resolved == [False]  # on a worker
    assert w.view is not None and w.view.params_total == default_catalog().facts("Qwen/Qwen3-8B").counts.text
    assert "acme/some-8b" in w.recent_models()
    # a second change uses the resolved facts without another lookup
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.widget("batch").setValue(2)
    assert calls == ["acme/some-8b"]


def test_search_result_model_passes_qt_model_checks(qtbot, qtmodeltester) -> None:
    model = SearchResultModel()
    model.set_rows(local_results("qwen"))
    assert model.rowCount() > 3
    qtmodeltester.check(model)
    assert model.index(0, SearchResultModel.SOURCE).data() == "catalog"


def test_details_without_facts_say_what_the_search_knows() -> None:
    r = SearchResult(id="acme/x", source="hub", sources=("hub",), params=7_000_000_000, downloads=5, gated=True)
    text = details_html(r, None, default_catalog())
    assert "acme/x" in text and "7.00 B" in text and "Choose it to read its config." in text


# ---------------------------------------------------------------------------------------------- form


def test_fine_tune_tab_estimates_training_phases(qtbot) -> None:
    w = make_window(qtbot)
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.tabs.setCurrentIndex(1)
    view = w.view
    assert view is not None and view.mode == "finetune"
    assert view.phases[0].name == "forward"
    assert w.phase_chart.phase_names == [p.name for p in view.phases]
    lora_device = view.device_bytes
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.form.widget("method").setCurrentIndex(w.form.widget("method").findData("full"))
    assert w.view is not None and w.view.device_bytes > lora_device
    assert not w.form.widget("lora_rank").isEnabled()
    scenario = w.current_scenario()
    assert scenario is not None and scenario.workload.kind == "finetune"
    assert scenario.workload.method == "full"  # type: ignore[union-attr]
    # back to inference keeps the inference fields
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.tabs.setCurrentIndex(0)
    assert w.view is not None and w.view.mode == "inference"
    back = w.current_scenario()
    assert back is not None and back.workload.input_len is None  # type: ignore[union-attr]  # auto, as it was


def test_engine_groups_follow_the_engine(qtbot) -> None:
    w = make_window(qtbot)
    f = w.form
    assert not f.engine_boxes["vllm"].isVisibleTo(w) and not f.engine_boxes["llamacpp"].isVisibleTo(w)
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("engine").setCurrentIndex(f.widget("engine").findData("vllm"))
    assert f.engine_boxes["vllm"].isVisibleTo(w) and not f.engine_boxes["llamacpp"].isVisibleTo(w)
    first = w.view
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("gpu_memory_utilization").setValue(0.5)
    assert w.view is not None and first is not None and w.view.device_bytes < first.device_bytes
    with qtbot.waitSignal(w.estimated, timeout=2000):
        f.widget("engine").setCurrentIndex(f.widget("engine").findData("llamacpp"))
    assert f.engine_boxes["llamacpp"].isVisibleTo(w)
    for widget in (
        f.widget("engine"),
        f.widget("gpu_memory_utilization"),
        f.widget("n_gpu_layers"),
        f.widget("optimizer"),
        f.widget("tp"),
    ):
        assert widget.toolTip()


def test_inline_validation_names_the_problem(qtbot) -> None:
    w = make_window(qtbot)
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.form.widget("tp").setValue(2)
    assert w.form.validation_label.isVisibleTo(w)
    assert "tp (2)" in w.form.validation_label.text() and "gpu_count is 1" in w.form.validation_label.text()
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.widget("gpu_count").setValue(2)
    assert not w.form.validation_label.isVisibleTo(w)
    view = w.view
    assert view is not None and len(view.per_gpu) == 2
    assert w.gpu_chips.isVisibleTo(w) and "GPU 1" in w.gpu_chips.text()
    w.breakdown.set_mode("bar")
    ticks = w.breakdown.bar_plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert [t for _, t in ticks] == ["GPU 0", "GPU 1"]
    xs = list(w.breakdown.bar_items[0].opts["x"])
    assert xs == [0.0, 1.0] or len(w.breakdown._bar_extras) > 0


# ---------------------------------------------------------------------------------------------- GPUs


def test_no_nvml_says_so_and_the_catalog_picker_stays(qtbot) -> None:
    w = make_window(qtbot)
    text = w.form.detected_label.text()
    assert "No NVIDIA GPU detected — choose the GPUs to plan for" in text and "libnvidia-ml.so.1" in text
    assert w.gpu_combo.findData("H100 SXM") >= 0 and w.gpu_combo.currentData() == "RTX 4090"


def test_detected_gpu_uses_free_memory(qtbot) -> None:
    gpu = DetectedGpu(
        index=0,
        name="NVIDIA GeForce RTX 4090",
        total=24564 * MIB,
        free=8 * GIB,
        used=15 * GIB,
        processes=(GpuProcess(4242, "python3", 14 * GIB),),
    )
    w = make_window(qtbot, detect=lambda: DetectionResult(gpus=[gpu]))
    key = f"{DETECTED_PREFIX}0"
    assert w.gpu_combo.currentData() == key  # a first start plans for the GPU it finds
    assert "python3" in w.form.detected_label.text() and "8.0 / 24.0 GiB" in w.form.detected_label.text()
    view = w.view
    assert view is not None and view.uses_free_memory
    assert view.verdict == "does not fit"  # 9.85 GiB needed, 8 GiB free
    assert "free" in w.message_label.text()
    assert "free memory of the detected GPU" in w.scenario_label.text()
    scenario = w.current_scenario()
    assert scenario is not None and scenario.hardware.gpu == "RTX 4090"  # files name the catalog GPU
    with qtbot.waitSignal(w.estimated, timeout=2000):
        w.gpu_combo.setCurrentIndex(w.gpu_combo.findData("RTX 4090"))
    assert w.view is not None and w.view.verdict == "fits" and not w.view.uses_free_memory


# ---------------------------------------------------------------------------------------------- charts


def test_pie_hover_tooltip_has_bytes_and_share(qtbot) -> None:
    w = make_window(qtbot)
    pie = w.breakdown.pie
    view = w.view
    assert view is not None
    for i, s in enumerate(view.slices):
        if s.share < 0.01:
            continue
        tip = pie.tooltip_for(pie.slice_at(pie.mid_point(i, 0.8)))
        assert tip.startswith(s.name) and f"{s.bytes:,} bytes" in tip and f"{s.share * 100:.1f}%" in tip
    assert pie.slice_at(QPointF(0, 0)) is None  # the hole
    assert pie.slice_at(QPointF(2, 2)) is None
    phase_tip = w.phase_chart.bar_items[0].toolTip()
    assert "GiB" in phase_tip and "%" in phase_tip


# ---------------------------------------------------------------------------------------------- comfort


def test_drop_a_config_json_resolves_it(qtbot, tmp_path: Path) -> None:
    cat = default_catalog()
    config = tmp_path / "my-model" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(cat.config("Qwen/Qwen3-0.6B")), encoding="utf-8")
    w = make_window(qtbot)
    with qtbot.waitSignal(w.estimated, timeout=5000):
        w.drop_path(config)
    qtbot.waitUntil(lambda: not w.pending, timeout=5000)
    assert w.view is not None and w.model_combo.currentData() == str(config)
    assert w.view.params_total == cat.facts("Qwen/Qwen3-0.6B").counts.text


def test_drop_a_scenario_file_opens_it(qtbot, tmp_path: Path) -> None:
    from vramdesk.storage.scenarios import save_scenario

    path = tmp_path / "s.json"
    finetune = Scenario.model_validate(
        {"model": {"id": "Qwen/Qwen3-0.6B"}, "workload": {"kind": "finetune", "method": "full"}}
    )
    save_scenario(finetune, path)
    w = make_window(qtbot)
    w.drop_path(path)
    assert w.tabs.currentIndex() == 1 and w.form.widget("method").currentData() == "full"
    out = tmp_path / "saved.json"
    assert w.save_scenario(out)
    assert json.loads(out.read_text())["workload"]["method"] == "full"


def test_shortcuts_and_accessible_names(qtbot) -> None:
    w = make_window(qtbot)
    shortcuts = {a.shortcut().toString() for a in w.actions()}
    assert {"Ctrl+F", "Ctrl+1", "Ctrl+2", "Ctrl+O", "Ctrl+S", "F5"} <= shortcuts
    for widget in (w.browser.search_box, w.browser.table, w.table, w.tabs, w.verdict_frame):
        assert widget.accessibleName()


def test_error_dialog_has_copyable_details(qtbot) -> None:
    box = ui_app.show_error_dialog(None, "ValueError: boom", "Traceback ...\nValueError: boom")
    qtbot.addWidget(box)
    assert box.detailedText().startswith("Traceback")
    copy = next(b for b in box.buttons() if b.text() == "Copy details")
    copy.click()
    assert "ValueError: boom" in QGuiApplication.clipboard().text()


# ---------------------------------------------------------------------------------------------- speed


def test_change_to_repaint_is_fast(qtbot) -> None:
    w = make_window(qtbot)
    estimates: list[object] = []
    w.estimated.connect(estimates.append)
    times = []
    for n in range(20):
        t0 = time.perf_counter()
        w.widget("batch").setValue(1 + n % 4)
        w.estimate_now()
        w.repaint()  # synchronous paint of the whole window
        times.append(time.perf_counter() - t0)
    median = statistics.median(times) * 1000
    print(f"change -> repaint: median {median:.1f} ms, max {max(times) * 1000:.1f} ms")
    # the work is counted, not timed (a loaded machine's median is its load): one estimate per change, and a
    # deadline that only catches a hang
    assert len(estimates) == 20
    assert max(times) < 60


# ---------------------------------------------------------------------------------------------- languages


def _tr_literals() -> set[str]:
    out = set()
    for path in (ROOT / "vramdesk" / "ui").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "tr" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    out.add(arg.value)
    return out


def test_every_translatable_string_has_a_chinese_translation() -> None:
    from vramdesk.core.options import options
    from vramdesk.ui import presenter, theme, widgets
    from vramdesk.ui.option_fields import option_texts

    table = i18n.table("zh_CN")
    wanted = _tr_literals() | set(presenter.VERDICT_TITLES.values())
    wanted |= set().union(*(option_texts(o) for o in options() if o.group != "hidden"))
    wanted |= set(SearchResultModel.HEADERS) | set(widgets.ComponentTableModel.HEADERS)
    wanted |= set(theme.CATEGORY_LABELS.values())
    missing = sorted(s for s in wanted if s not in table)
    assert not missing, missing
    assert len(wanted) > 150


@pytest.mark.parametrize(
    ("code", "lang"), [("zh_CN", "zh_CN"), ("zh-Hans-CN", "zh_CN"), ("en_US.UTF-8", "en"), ("", "en")]
)
def test_locale_names_pick_a_shipped_language(code: str, lang: str) -> None:
    assert i18n.normalize(code) == lang


def test_window_in_chinese(qtbot, monkeypatch) -> None:
    monkeypatch.setenv("VRAMDESK_LANG", "zh_CN")
    i18n.set_language(qt_i18n.choose_language())
    try:
        w = make_window(qtbot)
        assert w.tabs.tabText(0) == "推理" and w.tabs.tabText(1) == "微调"
        assert w.verdict_label.text() == "可以运行"
        assert w.table_model.headerData(0, __import__("PySide6.QtCore").QtCore.Qt.Orientation.Horizontal) == "组成部分"
    finally:
        i18n.set_language("en")


def test_translation_files_ship_with_the_resources() -> None:
    assert (ROOT / "resources" / "i18n" / "zh_CN.json").is_file()


def test_settings_dialog_applies_and_never_saves_the_token(qtbot, monkeypatch) -> None:
    import os

    from PySide6.QtCore import QSettings

    from vramdesk.ui.dialogs import ENDPOINT_KEY, OFFLINE_KEY, SettingsDialog, apply_saved_settings

    for key in ("HF_ENDPOINT", "HF_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    dialog = SettingsDialog()
    qtbot.addWidget(dialog)
    assert dialog.offline_check.isChecked()
    dialog.endpoint_edit.setText("http://127.0.0.1:9/")
    dialog.offline_check.setChecked(False)
    dialog.token_edit.setText("hf_secret_token")
    dialog.accept()
    try:
        assert os.environ["HF_ENDPOINT"] == "http://127.0.0.1:9" and "HF_HUB_OFFLINE" not in os.environ
        assert os.environ["HF_TOKEN"] == "hf_secret_token" and dialog.token_edit.text() == ""
        settings = QSettings()
        settings.sync()
        assert settings.value(ENDPOINT_KEY) == "http://127.0.0.1:9"
        assert "hf_secret_token" not in Path(settings.fileName()).read_text(encoding="utf-8")
        monkeypatch.delenv("HF_ENDPOINT")
        apply_saved_settings()
        assert os.environ["HF_ENDPOINT"] == "http://127.0.0.1:9"
    finally:
        QSettings().remove(ENDPOINT_KEY)
        QSettings().remove(OFFLINE_KEY)
        QSettings().remove(i18n.SETTING_KEY)
        i18n.set_language("en")
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
