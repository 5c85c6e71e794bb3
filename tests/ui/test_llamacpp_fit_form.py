"""llama.cpp's --fit in the window (issue 20): the check box and its margin sit in the llama.cpp box, the margin only
takes input while --fit is on, and the window shows the core's own estimate of the plan either way."""

from __future__ import annotations

from uiwindow import make_window

from vramdesk.core.estimate import estimate
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog
from vramdesk.ui.main_window import MainWindow

CAT = default_catalog()
L70 = "meta-llama/Llama-3.1-70B"


def plan(**llamacpp: object) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"id": L70},
            "weights": "q4_k_m",
            "workload": {"kind": "inference", "engine": "llamacpp", "input_len": 8192, "llamacpp": llamacpp},
            "hardware": {"gpu": "RTX 4090"},
        }
    )


def core(s: Scenario) -> Estimate:
    return estimate(s, CAT.facts(s.model.id), CAT.gpu("RTX 4090"))


def shown(w: MainWindow) -> Estimate:
    ev = w.evaluation
    assert ev is not None and ev.view is not None, ev and ev.error
    return ev.view.estimate


def change(qtbot, w: MainWindow, action) -> Estimate:
    with qtbot.waitSignal(w.estimated, timeout=3000):
        action()
    return shown(w)


def test_fit_and_its_margin_change_the_estimate_as_the_core_says(qtbot) -> None:
    w = make_window(qtbot, plan())
    f = w.form
    fit, margin = f.widget("fit"), f.widget("fit_target_mib")
    box = f.engine_boxes["llamacpp"]
    assert box.isVisible() and box.isAncestorOf(fit) and box.isAncestorOf(margin)
    assert not fit.isChecked() and not margin.isEnabled() and margin.value() == 1024
    base = shown(w)
    assert base == core(plan())
    on = change(qtbot, w, lambda: fit.setChecked(True))
    assert on == core(plan(fit=True))
    assert margin.isEnabled() and on.device_bytes < base.device_bytes
    assert w.current_scenario() == plan(fit=True)
    wider = change(qtbot, w, lambda: margin.setValue(4096))
    assert wider == core(plan(fit=True, fit_target_mib=4096))
    assert wider.device_bytes < on.device_bytes
    off = change(qtbot, w, lambda: fit.setChecked(False))
    assert off == base and not margin.isEnabled()
