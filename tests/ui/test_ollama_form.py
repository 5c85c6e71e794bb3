"""The Ollama box of the form: shown for the Ollama engine only, its widgets reach the scenario, and the window's
estimate is the core's for the same scenario and moves the way the setting says."""

from __future__ import annotations

from PySide6.QtCore import Qt
from test_form_options import change, core, pick, shown  # the form tests' own helpers
from uiwindow import make_window

from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.ui import i18n, qt_i18n
from vramdesk.ui.main_window import MainWindow

L8, L70 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"


def ollama(model: str = L8, **opts: object) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "weights": "q4_k_m",
            "workload": {"kind": "inference", "engine": "ollama", "ollama": opts},
            "hardware": {"gpu": "RTX 4090"},
        }
    )


def sent(w: MainWindow) -> Scenario:
    assert w.evaluation is not None
    return w.evaluation.scenario


def kv(est: Estimate) -> int:
    return next(c.bytes for c in est.components if c.name == "KV cache")


def test_the_ollama_box_is_shown_for_ollama_only(qtbot) -> None:
    w = make_window(qtbot, ollama())
    f = w.form
    assert f.engine_boxes["ollama"].isVisible()
    assert not f.engine_boxes["llamacpp"].isVisible() and not f.engine_boxes["vllm"].isVisible()
    assert f.engine_boxes["ollama"].title() == "Ollama"
    # Ollama's KV type is its own setting: the workload's is not read
    assert not f.widget("kv_dtype").isEnabled()
    assert shown(w) == core(ollama())
    change(qtbot, w, lambda: pick(f.widget("engine"), "llamacpp"))
    assert (
        f.engine_boxes["llamacpp"].isVisible()
        and not f.engine_boxes["ollama"].isVisible()
        and f.widget("kv_dtype").isEnabled()
    )


def test_each_ollama_setting_changes_the_estimate_as_the_core_does(qtbot) -> None:
    w = make_window(qtbot, ollama(num_ctx=8192))
    f = w.form
    base = shown(w)
    assert f.widget("num_parallel").text() == "auto" and f.widget("num_gpu").text() == "auto"
    # two slots: twice the cells
    two = change(qtbot, w, lambda: f.widget("num_parallel").setValue(2))
    assert sent(w).workload.ollama.num_parallel == 2  # type: ignore[union-attr]
    assert two == core(sent(w)) and kv(two) == 2 * kv(base)
    # q8_0: 34 bytes per 32 elements instead of 64
    q8 = change(qtbot, w, lambda: pick(f.widget("kv_cache_type"), "q8_0"))
    assert q8 == core(sent(w)) and kv(q8) * 64 == kv(two) * 34
    # flash attention off: Ollama keeps f16 and says why
    off = change(qtbot, w, lambda: pick(f.widget("flash_attention"), "off"))
    assert off == core(sent(w)) and kv(off) == kv(two)
    assert any("needs flash attention" in x for x in off.warnings)
    # an older release: its own default context (2048) once num_ctx is left to it
    old = change(qtbot, w, lambda: pick(f.widget("ollama_version"), "0.2-0.6.6"))
    assert old == core(sent(w))
    auto = change(qtbot, w, lambda: f.widget("num_ctx").setValue(f.widget("num_ctx").minimum()))
    assert sent(w).workload.ollama.num_ctx is None  # type: ignore[union-attr]
    assert auto == core(sent(w)) and kv(auto) == kv(off) * 2048 // 8192


def test_num_gpu_and_the_overhead_move_the_layers_of_a_big_model(qtbot) -> None:
    w = make_window(qtbot, ollama(L70, num_ctx=32768))
    f = w.form
    fitted = shown(w)
    layers = fitted.engine.gpu_layers
    assert layers is not None and 0 < layers < 80
    assert f"offloaded {layers}/81 layers to GPU" in w.warnings_label.text()
    spare = change(qtbot, w, lambda: f.widget("gpu_overhead_mib").setValue(2048))
    assert spare == core(sent(w)) and (spare.engine.gpu_layers or 0) < layers
    fixed = change(qtbot, w, lambda: f.widget("num_gpu").setValue(10))
    assert fixed == core(sent(w)) and fixed.engine.gpu_layers == 10
    assert fixed.peak_allocated_bytes < spare.peak_allocated_bytes


def test_the_ollama_widgets_explain_themselves_in_both_languages(qtbot, monkeypatch) -> None:
    w = make_window(qtbot, ollama())
    f = w.form
    names = (
        "ollama_version",
        "num_ctx",
        "num_parallel",
        "kv_cache_type",
        "flash_attention",
        "gpu_overhead_mib",
        "num_gpu",
    )
    assert all(f.widget(name).toolTip() for name in names)
    for name in ("ollama_version", "kv_cache_type", "flash_attention"):
        combo = f.widget(name)
        assert combo.accessibleName().startswith("Ollama"), name
        for i in range(combo.count()):
            assert combo.itemData(i, Qt.ItemDataRole.ToolTipRole), (name, combo.itemText(i))
    monkeypatch.setenv("VRAMDESK_LANG", "zh_CN")
    i18n.set_language(qt_i18n.choose_language())
    try:
        zh = make_window(qtbot, ollama())
        g = zh.form
        assert g.widget("kv_cache_type").accessibleName() == "Ollama KV 缓存类型"
        assert g.widget("num_parallel").toolTip().startswith("同时处理的请求数")
        assert g.widget("flash_attention").itemText(g.widget("flash_attention").findData("off")) == "关闭"
        assert g.minimumSizeHint().width() <= zh.form_scroll.viewport().width()
    finally:
        i18n.set_language("en")
