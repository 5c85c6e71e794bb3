"""Opening the main window in tests: injected GPU detection and Hub search, shown, exposed, first estimate done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import Scenario
from vramdesk.services.nvml import NO_DRIVER, DetectionResult
from vramdesk.storage.library import ScenarioLibrary
from vramdesk.ui import qtapp
from vramdesk.ui.main_window import MainWindow

NO_GPU = DetectionResult(reason=NO_DRIVER(library="libnvidia-ml.so.1"))


def make_window(qtbot: Any, scenario: Scenario = DEFAULT_SCENARIO, *, wait: bool = True, **kw: Any) -> MainWindow:
    """A shown main window for ``scenario``; no GPU and no Hub unless ``detect`` / ``hub_search`` say otherwise."""
    qtapp.ensure_app()
    kw.setdefault("detect", lambda: NO_GPU)
    kw.setdefault("hub_search", None)
    w = MainWindow(scenario, **kw)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    if wait:
        qtbot.waitUntil(lambda: not w.pending, timeout=5000)
    return w


def scenario_for(model: str, gpu: str = "RTX 4090", **work: object) -> Scenario:
    """The default scenario with another model, GPU and workload fields."""
    data = DEFAULT_SCENARIO.model_dump(mode="json")
    data["model"] = {"id": model}
    data["hardware"]["gpu"] = gpu
    data["workload"].update(work)
    return Scenario.model_validate(data)


def wait_advice(qtbot: Any, w: MainWindow) -> dict:
    """Wait until the window's advice job (smallest changes, max context) has answered."""
    qtbot.waitUntil(
        lambda: not w._advice_timer.isActive() and not w.advice_runner.busy and bool(w.advice), timeout=10_000
    )
    return w.advice


def shown_window(qtbot: Any, tmp_path: Path) -> MainWindow:
    """A MainWindow on the default plan with its library under ``tmp_path``, shown and exposed."""
    return make_window(qtbot, wait=False, detect=None, library=ScenarioLibrary(tmp_path / "lib"))
