"""A second file opened while the app runs: macOS's file-open events, and on Linux / Windows a second start that hands
its file to the running window (vramdesk/ui/file_open.py, vramdesk/ui/single_instance.py).

The hand-off runs between two servers and clients in this process (the client waits in a local event loop, so the
server here answers it) and once with a real second ``vramdesk gui FILE`` process on an Xvfb display."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchload import load_benchmark
from PySide6.QtCore import QByteArray, QUrl
from PySide6.QtGui import QFileOpenEvent
from PySide6.QtNetwork import QLocalSocket
from PySide6.QtWidgets import QApplication
from uiwindow import shown_window

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.storage.scenarios import save_scenario
from vramdesk.ui import app as ui_app
from vramdesk.ui import qtapp
from vramdesk.ui.file_open import ExternalFiles
from vramdesk.ui.main_window import MainWindow
from vramdesk.ui.single_instance import InstanceServer, hand_off, server_name

ROOT = Path(__file__).resolve().parents[2]
OTHER_MODEL = "Qwen/Qwen3-8B"


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """A short private folder (a Unix socket path has at most 107 bytes; pytest's tmp_path can be longer)."""
    folder = Path(tempfile.mkdtemp(prefix="vd-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def name(runtime_dir: Path) -> str:
    return server_name(runtime_dir)


@pytest.fixture
def server(qtbot, name: str) -> Iterator[InstanceServer]:
    qtapp.ensure_app()
    srv = InstanceServer(name)
    assert srv.listen()
    yield srv
    srv.close()
    srv.deleteLater()


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "other.vramdesk.json"
    model = DEFAULT_SCENARIO.model.model_copy(update={"id": OTHER_MODEL})
    save_scenario(DEFAULT_SCENARIO.model_copy(update={"model": model, "name": None}), path)
    return path


@pytest.fixture
def window(qtbot, tmp_path: Path) -> MainWindow:
    return shown_window(qtbot, tmp_path)


# ---------------------------------------------------------------------------------------------- the hand-off


def test_a_second_start_hands_its_file_to_the_running_window(
    qtbot, server: InstanceServer, name: str, tmp_path: Path
) -> None:
    received: list[str] = []
    server.file_received.connect(received.append)
    (tmp_path / "sub").mkdir()
    relative = Path(os.path.relpath(tmp_path / "sub" / "plan.vramdesk.json"))
    assert hand_off(relative, name)
    # the running window gets the absolute path: the second start's working folder is not its own
    qtbot.waitUntil(lambda: received == [str((tmp_path / "sub" / "plan.vramdesk.json").resolve())])


def test_only_one_window_listens(qtbot, server: InstanceServer, name: str) -> None:
    second = InstanceServer(name)
    try:
        assert not second.listen()
        assert not second.server.isListening()
    finally:
        second.deleteLater()


def test_with_no_window_running_a_start_opens_its_own(qtbot, name: str, tmp_path: Path) -> None:
    qtapp.ensure_app()
    assert not Path(name).exists()
    assert not hand_off(tmp_path / "x.vramdesk.json", name)


@pytest.mark.skipif(sys.platform == "win32", reason="a named pipe leaves no file behind")
def test_a_crashed_windows_socket_file_is_taken_over(qtbot, name: str, tmp_path: Path) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(name)
    stale.close()  # the file stays, nothing listens on it: what a killed window leaves
    assert Path(name).exists()
    qtapp.ensure_app()
    assert not hand_off(tmp_path / "x.vramdesk.json", name)
    srv = InstanceServer(name)
    try:
        assert srv.listen()
        received: list[str] = []
        srv.file_received.connect(received.append)
        assert hand_off(tmp_path / "x.vramdesk.json", name)
        qtbot.waitUntil(lambda: received == [str(tmp_path / "x.vramdesk.json")])
    finally:
        srv.close()
        srv.deleteLater()
    assert not Path(name).exists()  # a clean exit removes the socket file


@pytest.mark.skipif(sys.platform == "win32", reason="a Unix socket stands in for a window that does not answer")
def test_a_window_that_does_not_answer_is_not_waited_for_and_keeps_its_socket(qtbot, name: str, tmp_path: Path) -> None:
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mute.bind(name)
    mute.listen(1)
    try:
        qtapp.ensure_app()
        assert not hand_off(tmp_path / "x.vramdesk.json", name, timeout_ms=200)
        srv = InstanceServer(name)
        try:
            assert not srv.listen()  # alive, only busy: its socket is not removed
        finally:
            srv.deleteLater()
        assert Path(name).exists()
    finally:
        mute.close()


def test_anything_but_a_hand_off_is_refused(qtbot, server: InstanceServer, name: str) -> None:
    received: list[str] = []
    server.file_received.connect(received.append)
    client = QLocalSocket()
    client.connectToServer(name)
    assert client.waitForConnected(5000)
    client.write(QByteArray(b'{"close": "everything"}\n'))
    reply = bytearray()

    def answered() -> bool:
        reply.extend(client.readAll().data())
        return reply.endswith(b"\n")

    qtbot.waitUntil(answered)
    assert bytes(reply) == b"error\n" and received == []
    client.abort()


# ---------------------------------------------------------------------------------------------- opening in the window


def test_a_file_open_event_opens_the_scenario(qtbot, window: MainWindow, scenario_file: Path) -> None:
    app = QApplication.instance()
    assert app is not None
    external = ExternalFiles(window)
    app.installEventFilter(external)
    try:
        QApplication.postEvent(app, QFileOpenEvent(QUrl.fromLocalFile(str(scenario_file))))
        qtbot.waitUntil(lambda: window.scenario_path == scenario_file)
        assert window.form.values().model == OTHER_MODEL and window.view is not None
        assert window.view.model_id == OTHER_MODEL and not window.isWindowModified()
    finally:
        app.removeEventFilter(external)


def _edit(window: MainWindow) -> None:
    window.widget("batch").setValue(7)
    window.estimate_now()
    assert window.modified


def test_unsaved_work_is_kept_when_the_user_cancels(
    qtbot, window: MainWindow, scenario_file: Path, monkeypatch
) -> None:
    external = ExternalFiles(window)
    asked: list[Path] = []
    monkeypatch.setattr(external, "ask_save_first", lambda path: asked.append(path) or "cancel")
    _edit(window)
    assert not external.open(scenario_file)
    assert asked == [scenario_file]
    assert window.widget("batch").value() == 7 and window.form.values().model == DEFAULT_SCENARIO.model.id


def test_unsaved_work_is_saved_to_the_library_first(
    qtbot, window: MainWindow, scenario_file: Path, monkeypatch
) -> None:
    external = ExternalFiles(window)
    monkeypatch.setattr(external, "ask_save_first", lambda path: "save")
    monkeypatch.setattr(window, "_ask_name", lambda scenario: "before the file")
    _edit(window)
    assert external.open(scenario_file)
    saved = [e for e in window.library.entries() if e.name == "before the file"]
    assert len(saved) == 1 and saved[0].scenario.workload.batch == 7
    assert window.form.values().model == OTHER_MODEL


def test_opening_without_saving_can_be_undone(qtbot, window: MainWindow, scenario_file: Path, monkeypatch) -> None:
    external = ExternalFiles(window)
    monkeypatch.setattr(external, "ask_save_first", lambda path: "discard")
    _edit(window)
    assert external.open(scenario_file)
    assert window.form.values().model == OTHER_MODEL
    window.undo_stack.undo()
    assert window.form.values().model == DEFAULT_SCENARIO.model.id and window.widget("batch").value() == 7


def test_the_running_window_opens_what_a_second_start_hands_over(
    qtbot, window: MainWindow, server: InstanceServer, name: str, scenario_file: Path
) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    external = ui_app.accept_external_files(app, window, server)
    opened: list[str] = []
    external.opened.connect(opened.append)
    assert hand_off(scenario_file, name)
    qtbot.waitUntil(lambda: opened == [str(scenario_file.resolve())])
    assert window.form.values().model == OTHER_MODEL


# ---------------------------------------------------------------------------------------------- a real second process

xdisplay = load_benchmark("xdisplay", folder="")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("Xvfb") is None, reason="needs Linux and Xvfb")
def test_a_second_vramdesk_process_hands_off_and_exits_0(
    qtbot, server: InstanceServer, runtime_dir: Path, scenario_file: Path, tmp_path: Path
) -> None:
    received: list[str] = []
    server.file_received.connect(received.append)
    home = tmp_path / "home"
    home.mkdir()
    with xdisplay.xvfb(tmp_path / "xvfb.log") as display:
        env = {
            **os.environ,
            "DISPLAY": display,
            "QT_QPA_PLATFORM": "xcb",
            "XDG_RUNTIME_DIR": str(runtime_dir),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "PYTHONPATH": str(ROOT),
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "vramdesk", "gui", str(scenario_file)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # this process's event loop runs while waiting: the server here answers the child
            qtbot.waitUntil(lambda: proc.poll() is not None, timeout=120_000)
        finally:
            if proc.poll() is None:
                proc.kill()
        out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "opened in the running window" in out and err == ""
    qtbot.waitUntil(lambda: received == [str(scenario_file.resolve())])
