"""The changes panel of a plan too big for its GPU (issue 21): the changes on this GPU come first under their own
heading (llama.cpp partial offload among them), the ones that add GPUs follow under theirs, each button says the
memory, the verdict and the speed, the ranking rule is stated under them, and applying one is one undo step."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from uiwindow import make_window, scenario_for, wait_advice

from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import RANK_RULE
from vramdesk.ui.core_text import localize
from vramdesk.ui.presenter import gib

L70 = "meta-llama/Llama-3.1-70B-Instruct"


def test_the_panel_puts_this_gpu_first_and_undo_takes_an_applied_change_back(qtbot) -> None:
    w = make_window(qtbot, scenario_for(L70, "RTX 4090"), wait=False)
    advice = wait_advice(qtbot, w)
    assert w.view is not None and w.view.verdict == "does not fit"
    assert advice.changes is not None and w.advice_box.isVisible()
    pane = w.results
    shown = [i for i, b in enumerate(w.advice_buttons) if b.isVisible()]
    options = [w._change_options[i] for i in shown]
    # the groups: on this GPU first (headed), then with more GPUs (headed), no heading inside a group
    headings = [pane.advice_headings[i].text() if pane.advice_headings[i].isVisible() else "" for i in shown]
    first_more = next(i for i, o in enumerate(options) if o.more_gpus)
    assert headings[0] == "On this GPU" and headings[first_more] == "With more GPUs"
    assert all(not h for i, h in enumerate(headings) if i not in (0, first_more))
    assert all(not o.more_gpus for o in options[:first_more]) and all(o.more_gpus for o in options[first_more:])
    # each button: the change, the memory, the verdict and the speed
    for i, o in zip(shown, options, strict=True):
        text = w.advice_buttons[i].text()
        assert localize(o.summary) in text and gib(o.device_bytes) in text and "Fits" in text
        assert (f"{o.tokens_per_s:,.1f} tokens/s" if o.tokens_per_s else "speed unknown") in text
    assert pane.advice_rule.isVisible() and pane.advice_rule.text() == RANK_RULE
    assert "cost = quality + speed" in pane.advice_rule.toolTip()
    # a llama.cpp partial offload on this one GPU, with why and the CPU memory it needs in its tooltip
    pick = next(i for i, o in zip(shown, options, strict=True) if not o.more_gpus and "layers on the GPU" in o.summary)
    assert "llama.cpp" in w.advice_buttons[pick].toolTip() and "CPU memory it needs" in w.advice_buttons[pick].toolTip()
    chosen = w._change_options[pick]
    before = w.form.values()

    qtbot.mouseClick(w.advice_buttons[pick], Qt.MouseButton.LeftButton)
    ev = w.evaluation
    assert ev is not None and ev.view is not None and ev.scenario is not None
    assert ev.view.verdict == "fits"
    assert ev.scenario.model_dump(mode="json") == chosen.scenario
    planned = Scenario.model_validate(chosen.scenario)
    assert planned.workload.kind == "inference" and planned.workload.engine == "llamacpp"
    assert w.form.values().gpu == "RTX 4090" and w.form.values() != before
    assert w.widget("n_gpu_layers").value() == planned.workload.llamacpp.n_gpu_layers
    assert w.undo_stack.undoText().startswith("Apply ")

    # Ctrl+Z: the plan as it was, not fitting again
    w.activateWindow()
    w.setFocus()
    qtbot.keySequence(w, QKeySequence.StandardKey.Undo)
    assert w.form.values() == before
    ev = w.evaluation
    assert ev is not None and ev.view is not None and ev.view.verdict == "does not fit"
    assert ev.scenario is not None and ev.scenario.workload.kind == "inference"
    assert ev.scenario.workload.engine == "transformers"
