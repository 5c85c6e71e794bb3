"""The window's background jobs: the newest request wins, results arrive on the GUI thread, and a runner that goes
away while its job runs gets nothing (and nothing hangs: the jobs emit on one relay that outlives every runner)."""

from __future__ import annotations

import threading

import shiboken6
from PySide6.QtCore import QEvent, QObject, QThread
from PySide6.QtWidgets import QApplication

from vramdesk.ui.workers import TaskRunner


def test_the_newest_request_wins_and_arrives_on_the_gui_thread(qtbot) -> None:
    owner = QObject()
    runner = TaskRunner("test", owner)
    got: list[tuple[object, bool]] = []
    runner.finished.connect(lambda r: got.append((r, QThread.currentThread() is QApplication.instance().thread())))
    release = threading.Event()
    runner.submit(lambda cancel: release.wait(5) and "old")
    runner.submit(lambda cancel: "new")
    qtbot.waitUntil(lambda: bool(got), timeout=5000)
    release.set()
    qtbot.wait(100)
    assert got == [("new", True)]
    assert not runner.busy


def test_a_failure_is_reported_and_a_cancelled_job_says_nothing(qtbot) -> None:
    owner = QObject()
    runner = TaskRunner("test", owner)
    errors: list[BaseException] = []
    results: list[object] = []
    runner.failed.connect(errors.append)
    runner.finished.connect(results.append)

    def boom(cancel: threading.Event) -> None:
        raise ValueError("no such model")

    runner.submit(boom)
    qtbot.waitUntil(lambda: bool(errors), timeout=5000)
    assert str(errors[0]) == "no such model"
    started = threading.Event()
    runner.submit(lambda cancel: started.set() or cancel.wait(5) or "late")
    assert started.wait(5)
    runner.cancel()
    qtbot.wait(100)
    assert results == [] and not runner.busy


def test_runners_deleted_while_their_jobs_finish_get_nothing(qtbot) -> None:
    delivered: list[object] = []
    gates = []
    runners = []
    for n in range(40):
        owner = QObject()
        runner = TaskRunner(f"gone-{n}", owner)
        runner.finished.connect(delivered.append)
        gate = threading.Event()
        gates.append(gate)
        runner.submit(lambda cancel, gate=gate, n=n: gate.wait(5) and n)
        runners.append(runner)
        owner.deleteLater()  # the runner goes with its owner, as a window's do when it closes
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert not any(shiboken6.isValid(r) for r in runners)  # (their Python wrappers are all that is left)
    for gate in gates:
        gate.set()  # the jobs finish now, after their runners are gone
    qtbot.wait(300)
    assert delivered == []
    # and a runner made afterwards still gets its answer
    owner = QObject()
    runner = TaskRunner("after", owner)
    runner.finished.connect(delivered.append)
    runner.submit(lambda cancel: "here")
    qtbot.waitUntil(lambda: delivered == ["here"], timeout=5000)
