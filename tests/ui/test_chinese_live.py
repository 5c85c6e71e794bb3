"""The window in Chinese, live: core texts translated where the window shows them, the language switched at
once from the settings dialog (the work kept), the compare window following the GiB/GB setting, and the
screenshot at a device pixel ratio of 2.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QLibraryInfo, QSettings, Qt, QTimer
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QDialogButtonBox
from uiwindow import make_window, scenario_for, wait_advice

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.gpu import GIB
from vramdesk.core.scenario import Scenario
from vramdesk.storage.library import ScenarioLibrary
from vramdesk.ui import i18n, qt_i18n
from vramdesk.ui.core_text import localize, localize_name
from vramdesk.ui.dialogs import UNIT_KEY, SettingsDialog
from vramdesk.ui.main_window import WINDOW_SIZE, MainWindow
from vramdesk.ui.theme import CATEGORY_COLORS

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u4e00-\u9fff]")


def scenario(model: str = "Qwen/Qwen3-14B", gpu: str = "RTX 4090", **work: object) -> Scenario:
    return scenario_for(model, gpu, **work)


def run_settings(w: MainWindow, change: Callable[[SettingsDialog], None]) -> None:
    """Open the Settings dialog the way the menu does (modal), change it and press OK."""

    def answer() -> None:
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, SettingsDialog)
        change(dialog)
        dialog.accept()

    QTimer.singleShot(0, answer)
    w.open_settings()


def qt_translations() -> str:
    return QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)


def pick(combo: Any, data: str) -> None:
    combo.setCurrentIndex(combo.findData(data))


# ---------------------------------------------------------------------------------------------- core texts


def test_core_texts_are_chinese_where_the_window_shows_them(qtbot, chinese) -> None:
    w = make_window(qtbot, scenario(input_len=16384))
    view = w.view
    assert view is not None and view.verdict == "does not fit"
    message = w.message_label.text()
    assert message == localize(view.message) and CJK.search(message) and "needs" not in message
    model = w.table_model
    for row, s in enumerate(view.slices):
        name = model.data(model.index(row, model.NAME))
        explain = model.data(model.index(row, model.EXPLAIN))
        assert name == localize_name(s.name) and explain == localize(s.explain)
        assert CJK.search(explain), explain
        assert html.escape(localize(s.explain)) in model.data(model.index(row, 0), Qt.ItemDataRole.ToolTipRole)
    assert "权重" in [text for text, _ in w.legend.entries]
    pie = w.breakdown.pie
    assert pie.slices[0].label == "权重" and localize(view.slices[0].explain) in pie.tooltip_for(0)
    assert "预填充" in w.breakdown.title.text() or "解码" in w.breakdown.title.text()
    ticks = w.phase_chart.plot.getPlotItem().getAxis("bottom")._tickLevels[0]
    assert ticks[0][1] == "加载" and any("峰值" in t for _, t in ticks)
    advice = wait_advice(qtbot, w)
    assert advice is not None and advice.changes is not None
    first = advice.changes.options[0]
    shown = [b.text() for b in w.advice_buttons if b.isVisible()]
    assert shown and shown[0].startswith(f"→ {localize(first.summary)}：") and CJK.search(shown[0])
    r = advice.max_length
    assert r is not None and localize(r.message) in w.form.readouts["input_len"].toolTip()
    assert CJK.search(w.speed_label.toolTip())
    dialog = w.explain_component(0)
    assert localize(view.slices[0].explain) in dialog.text and "权重" in dialog.windowTitle()
    dialog.close()


def test_error_lines_and_warnings_in_chinese(qtbot, chinese) -> None:
    w = make_window(qtbot, scenario("Qwen/Qwen3-8B", engine="vllm", batch=512, input_len=32000))
    assert w.warnings_label.isVisible() and "vLLM：KV 池" in w.warnings_label.text()
    w.form.widget("gpu_count").setValue(2)
    w.form.widget("tp").setValue(2)
    w.estimate_now()
    assert w.evaluation is not None and w.evaluation.view is not None
    w.form.widget("gpu_count").setValue(1)
    w.estimate_now()
    ev = w.evaluation
    assert ev is not None and ev.error is not None and "needs 2 GPUs" in ev.error  # the core stays English
    assert w.message_label.text() == localize(ev.error) and "需要 2 块 GPU" in w.message_label.text()
    assert "需要 2 块 GPU" in w.form.validation_label.text()


# ---------------------------------------------------------------------------------------------- live language


def visible_texts(w: MainWindow) -> dict[str, str]:
    m = w.table_model
    return {
        "tab": w.tabs.tabText(0),
        "verdict": w.verdict_label.text(),
        "message": w.message_label.text(),
        "menu": w.menuBar().actions()[0].text(),
        "header": str(m.headerData(0, Qt.Orientation.Horizontal)),
        "explain": str(m.data(m.index(0, m.EXPLAIN))),
        "caption": w.stat_allocated.caption.text(),
        "chart": w.phase_chart.title.text(),
    }


def test_switching_the_language_in_settings_applies_at_once_and_keeps_the_work(qtbot) -> None:
    w = make_window(qtbot, scenario("Qwen/Qwen3-8B", gpu="RTX 4090"))
    # unsaved edits: another model, another GPU, a batch, the fine-tune tab's rank, the bar chart
    w.choose_model("Qwen/Qwen3-4B")
    pick(w.gpu_combo, "L40S")
    w.widget("batch").setValue(3)
    w.form.widget("lora_rank").setValue(32)
    w.breakdown.set_mode("bar")
    w.estimate_now()
    before_values, before_scenario = w.form_values(), w.current_scenario()
    assert before_scenario is not None and before_scenario.hardware.gpu == "L40S"
    english = visible_texts(w)
    actions = len(w.actions())
    try:
        run_settings(w, lambda d: pick(d.language_combo, "zh_CN"))
        assert i18n.language() == "zh_CN" and QSettings().value(i18n.SETTING_KEY) == "zh_CN"
        chinese = visible_texts(w)
        assert chinese["tab"] == "推理" and chinese["verdict"] == "可以运行" and chinese["header"] == "组成部分"
        assert chinese["menu"] == "文件(&F)" and chinese["caption"] == "峰值已分配"
        for key in english:
            assert chinese[key] != english[key], key
            assert CJK.search(chinese[key]), (key, chinese[key])
        # the work is unchanged
        assert w.form_values() == before_values and w.current_scenario() == before_scenario
        assert w.breakdown.mode == "bar" and len(w.actions()) == actions
        assert w.evaluation is not None and w.evaluation.view is not None
        # Qt's own strings follow too (standard buttons), where Qt ships the translation
        dialog = w.explain_component(0)
        buttons = [b.text() for b in dialog.findChildren(QDialogButtonBox)[0].buttons()]
        assert "复制" in buttons and ("关闭" in buttons or not (Path(qt_translations()) / "qtbase_zh_CN.qm").exists())
        dialog.close()
        # and back to English from the View menu
        w._set_language("en")
        assert visible_texts(w) == english
        dialog = w.explain_component(0)
        assert "Close" in [b.text() for b in dialog.findChildren(QDialogButtonBox)[0].buttons()]
        dialog.close()
        assert w.form_values() == before_values and w.current_scenario() == before_scenario
        # widgets of the old language are gone (one form, one browser)
        qtbot.wait(10)
        QApplication.sendPostedEvents(None, 0)
        assert len(w.findChildren(type(w.form))) == 1
    finally:
        i18n.set_language("en")
        qt_i18n.install_qt_translations("en")


def test_an_open_library_window_is_rebuilt_in_the_new_language(qtbot, tmp_path: Path) -> None:
    lib = ScenarioLibrary(tmp_path / "lib")
    a = lib.save(DEFAULT_SCENARIO, name="a")
    b = lib.save(scenario("Qwen/Qwen3-8B"), name="b")
    w = make_window(qtbot, library=lib)
    win = w.open_library()
    win.include_current.setChecked(False)
    win.set_checked([a.id, b.id])
    try:
        w._set_language("zh_CN")
        new = w.library_window
        assert new is not None and new is not win and new.isVisible()
        assert new.windowTitle() != "Saved configurations" and CJK.search(new.windowTitle())
        assert set(new.checked_ids()) == {a.id, b.id} and not new.include_current.isChecked()
        new.update_comparison()
        assert new.comparison is not None and new.table.item(1, 0) is not None
    finally:
        i18n.set_language("en")
        qt_i18n.install_qt_translations("en")
        if w.library_window is not None:
            w.library_window.close()


# ---------------------------------------------------------------------------------------------- compare units


def cell(win: Any, row_name: str, col: int) -> str:
    """The cell of the row named ``row_name`` (component and total rows)."""
    for r in range(win.table.rowCount()):
        head = win.table.item(r, 0)
        if head is not None and head.text() == row_name:
            item = win.table.item(r, col)
            return item.text() if item is not None else ""
    raise AssertionError(f"no row {row_name!r}")


def test_compare_window_follows_the_unit_setting(qtbot, tmp_path: Path) -> None:
    lib = ScenarioLibrary(tmp_path / "lib")
    a = lib.save(DEFAULT_SCENARIO, name="bf16")
    b = lib.save(scenario("Qwen/Qwen3-8B"), name="8b")
    w = make_window(qtbot, library=lib)
    win = w.open_library()
    qtbot.addWidget(win)
    win.include_current.setChecked(False)
    win.set_checked([a.id, b.id])
    win.update_comparison()
    assert win.comparison is not None
    col = 1 + list(win.comparison.labels).index("bf16")
    weights = next(c for c in win.items[col - 1].est.components if c.name == "weights").bytes
    assert cell(win, "weights", col) == f"{weights / GIB:.2f}"
    assert win.chart.getPlotItem().getAxis("left").labelText == "GiB"
    gib_stack = win.chart.stacks["weights"][col - 1]
    assert gib_stack == pytest.approx(weights / GIB)
    device = win.items[col - 1].est.device_bytes
    assert cell(win, "On the device (per GPU)", col) == f"{device / GIB:.2f}"
    # the unit changes in Settings: the open compare window follows at once
    run_settings(w, lambda d: pick(d.unit_combo, "GB"))
    assert QSettings().value(UNIT_KEY) == "GB"
    assert cell(win, "weights", col) == f"{weights / 1e9:.2f}"
    assert cell(win, "On the device (per GPU)", col) == f"{device / 1e9:.2f}"
    assert win.chart.getPlotItem().getAxis("left").labelText == "GB"
    assert win.chart.stacks["weights"][col - 1] == pytest.approx(weights / 1e9)
    titles = [win.table.item(r, 0).text() for r in range(win.table.rowCount()) if win.table.item(r, 0) is not None]
    assert "Components at the peak (GB)" in titles and not any("GiB" in t for t in titles)
    # a new compare window starts in the saved unit too
    w2 = make_window(qtbot, library=lib)
    win2 = w2.open_library()
    qtbot.addWidget(win2)
    win2.include_current.setChecked(False)
    win2.set_checked([a.id, b.id])
    win2.update_comparison()
    assert cell(win2, "weights", col) == f"{weights / 1e9:.2f}"
    # copies and exports show the window's unit too (named in their headers)
    assert "(GB)" in win.table_text("md") and "(GiB)" not in win.table_text("md")


# ---------------------------------------------------------------------------------------------- high DPI


def _screenshot(tmp_path: Path, name: str, **env: str) -> tuple[QImage, str]:
    out = tmp_path / name
    run_env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", **env}
    proc = subprocess.run(
        [sys.executable, "-m", "vramdesk", "--screenshot", str(out)],
        cwd=ROOT,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    image = QImage(str(out))
    assert not image.isNull()
    return image, proc.stdout


def _count(image: QImage, color: str, step: int) -> int:
    return sum(
        1
        for x in range(0, image.width(), step)
        for y in range(0, image.height(), step)
        if image.pixelColor(x, y).name() == color
    )


def test_screenshot_at_device_pixel_ratio_2_has_twice_the_pixels_and_draws_the_charts(qapp, tmp_path: Path) -> None:
    one, _ = _screenshot(tmp_path, "one.png", QT_SCALE_FACTOR="1")
    two, printed = _screenshot(tmp_path, "two.png", QT_SCALE_FACTOR="2")
    assert (one.width(), one.height()) == WINDOW_SIZE
    assert (two.width(), two.height()) == (2 * WINDOW_SIZE[0], 2 * WINDOW_SIZE[1])
    assert f"({2 * WINDOW_SIZE[0]}x{2 * WINDOW_SIZE[1]})" in printed
    assert round(two.dotsPerMeterX() * 0.0254) == 192  # viewers show it at the window's size
    # the charts are drawn (the pie and the bars in the category colours), over four times the pixels
    for category in ("weights", "kv_cache"):
        color = CATEGORY_COLORS[category]
        n1, n2 = _count(one, color, 2), _count(two, color, 4)  # the same grid of points in window coordinates
        assert n1 > 200 and n2 == pytest.approx(n1, rel=0.1), (category, n1, n2)
        assert _count(two, color, 1) > 3.5 * _count(one, color, 1)
    # text is rendered at the full resolution: the 2x image is not the 1x one scaled up (more distinct colours
    # from anti-aliased edges along twice the outline length)
    assert len({two.pixel(x, y) for x in range(0, two.width(), 3) for y in range(0, two.height(), 3)}) > len(
        {one.pixel(x, y) for x in range(0, one.width(), 3) for y in range(0, one.height(), 3)}
    )


def test_the_language_setting_has_chinese_translations() -> None:
    # (the compare window's row names are message ids now: tests/ui/test_comparison_view.py reads them in Chinese)
    assert "The language of the window (it changes at once)" in i18n.table("zh_CN")
