"""The status bar's "updated in N ms" counts the repaint: from the start of the estimate to the end of the paint."""

from __future__ import annotations

import re

from PySide6.QtWidgets import QApplication, QSpinBox
from uiwindow import make_window

from vramdesk.ui.repaint_clock import RepaintClock


def test_the_clock_reports_once_after_the_repaint_that_follows_its_start(qtbot) -> None:
    box = QSpinBox()
    qtbot.addWidget(box)
    box.show()
    qtbot.waitExposed(box)
    got: list[tuple[float, float]] = []
    clock = RepaintClock()
    clock.repainted.connect(lambda total, paint: got.append((total, paint)))
    clock.watch(box)
    box.setValue(3)  # no start yet: nothing is timed
    qtbot.wait(50)
    assert got == []
    clock.start()
    box.setValue(4)
    qtbot.waitUntil(lambda: bool(got), timeout=3000)
    ((total, paint),) = got
    assert 0 <= paint <= total < 2.0
    box.setValue(5)  # a later repaint without a start is not reported again
    qtbot.wait(50)
    assert len(got) == 1 and not clock.running


def test_the_status_bar_says_the_time_to_the_repaint(qtbot) -> None:
    w = make_window(qtbot)
    qtbot.waitExposed(w)
    w.last_repaint_seconds = None
    w.form.fields["batch"].set(2)
    qtbot.waitUntil(lambda: w.last_repaint_seconds is not None, timeout=5000)
    QApplication.processEvents()
    m = re.fullmatch(r"updated in (\d+\.\d) ms", w.timing_label.text())
    assert m is not None, w.timing_label.text()
    assert w.last_repaint_seconds is not None
    # the figure is the whole wait: never less than the estimate and the widgets' update it contains
    assert float(m.group(1)) >= round(w.last_update_seconds * 1000, 1) - 0.05
    assert "paint" in w.timing_label.toolTip()
