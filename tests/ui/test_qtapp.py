"""ensure_app(), which every window, export and test calls: once the application is set up, another call changes
nothing that Qt would tell every live widget about, and it refuses to run off the GUI thread."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
import shiboken6

from vramdesk.ui import qtapp


def test_a_second_call_keeps_the_style_object_and_the_font(qapp) -> None:
    app = qtapp.ensure_app()
    style, font = shiboken6.getCppPointer(app.style())[0], app.font()
    assert qtapp.ensure_app() is app
    # setStyle() would delete the style object and re-polish every widget alive (each test's windows and any a
    # failed test left behind): only the first call sets it
    assert shiboken6.getCppPointer(app.style())[0] == style and app.style().name().lower() == "fusion"
    assert app.font() == font


def test_it_refuses_to_run_off_the_gui_thread(qapp) -> None:
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            qtapp.ensure_app()
        except RuntimeError as err:
            errors.append(err)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(60)
    assert len(errors) == 1 and "GUI thread" in str(errors[0])


def test_the_offscreen_notices_are_quiet_and_the_rest_goes_on(capsys: pytest.CaptureFixture[str]) -> None:
    """ensure_app's message handler (installed when it makes the application) drops what the offscreen platform
    says about every window and hands the rest to the handler before it (pytest-qt's while a test runs)."""
    got: list[str] = []
    qtapp._previous_handler[:] = [lambda _mode, _context, message: got.append(message)]
    try:
        qtapp._quiet_handler(None, None, "This plugin does not support propagateSizeHints()")  # type: ignore[arg-type]
        qtapp._quiet_handler(None, None, "something else")  # type: ignore[arg-type]
    finally:
        qtapp._previous_handler.clear()
    assert got == ["something else"]
    qtapp._quiet_handler(None, None, "printed")  # type: ignore[arg-type]
    assert capsys.readouterr().err == "printed\n"


def test_the_garbage_collector_runs_on_the_gui_thread_only(qtbot) -> None:
    """Automatic collection is off once the application is set up, and the GUI thread's timer collects: a worker
    thread that allocates never starts a collection that frees Qt objects there (the deadlock of issue 21's runs)."""
    qtapp.ensure_app()
    assert not gc.isenabled()
    collector = qtapp._COLLECTOR[0]
    assert collector.timer.isActive()

    class Cycle:
        def __init__(self) -> None:
            self.me = self

    probe = Cycle()
    gone = weakref.ref(probe)
    del probe
    for _ in range(gc.get_threshold()[0] + 10):  # past the first generation's threshold
        Cycle()
    qtbot.waitUntil(lambda: gone() is None, timeout=5000)  # collected by the timer, on this thread
