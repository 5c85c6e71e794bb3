"""The window most ui tests start from: the default plan, no Hub, no GPU detection, a library of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.storage.library import ScenarioLibrary
from vramdesk.ui import qtapp
from vramdesk.ui.main_window import MainWindow


def shown_window(qtbot: Any, tmp_path: Path) -> MainWindow:
    """A MainWindow on the default plan with its library under ``tmp_path``, shown and exposed."""
    qtapp.ensure_app()
    w = MainWindow(DEFAULT_SCENARIO, hub_search=None, detect=None, library=ScenarioLibrary(tmp_path / "lib"))
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    return w
