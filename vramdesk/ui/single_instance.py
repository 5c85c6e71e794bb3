"""One window per user on Linux and Windows: a second ``vramdesk FILE`` (a double-click on a saved scenario while the
app runs) hands the file to the running window and exits 0.

The running window listens on a local socket keyed by the app id and the user's name: on Linux a Unix socket in the
user's runtime folder (``$XDG_RUNTIME_DIR``, mode 0700: no other user can reach it), on Windows a named pipe that
only the user may open (``UserAccessOption``). A second start sends one JSON line, ``{"open": "/abs/path"}``, and
the window answers ``ok`` at once (before any question it asks about unsaved work). When nothing answers within
:data:`HANDOFF_TIMEOUT_MS` the second start opens its own window as before; a socket file left by a window that
crashed (nothing listens on it) is removed so the new window can listen there. macOS needs none of this: the system
sends a running app a file-open event (:mod:`vramdesk.ui.file_open`).
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import re
import sys
from pathlib import Path

from PySide6.QtCore import QByteArray, QEventLoop, QObject, QStandardPaths, QTimer, Signal
from PySide6.QtNetwork import QAbstractSocket, QLocalServer, QLocalSocket

from .app_identity import APP_ID

#: how long a second start waits for the running window's answer before it opens its own window
HANDOFF_TIMEOUT_MS = 1000
#: a message longer than this is no hand-off (a path is a few hundred bytes)
MAX_MESSAGE_BYTES = 64 * 1024
OK = b"ok\n"

LOG = logging.getLogger("vramdesk")


def user_key() -> str:
    """The user's name as a file-name-safe key (the user id where the name is unknown)."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (a container's anonymous uid)
        name = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "user"


def server_name(runtime_dir: Path | None = None) -> str:
    """Where the running window listens: a socket path on Unix, a pipe name on Windows."""
    key = f"{APP_ID}-{user_key()}"
    if sys.platform == "win32":
        return key
    folder = runtime_dir or Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.RuntimeLocation))
    return str(folder / f"{key}.sock")


def _message(path: Path) -> bytes:
    return json.dumps({"open": str(path)}, ensure_ascii=False).encode("utf-8") + b"\n"


def hand_off(path: Path, name: str, timeout_ms: int = HANDOFF_TIMEOUT_MS) -> bool:
    """Give ``path`` to the window listening at ``name``; True once it answered that it takes it.

    Waits in a local event loop (the answer, a refused connection or the timeout ends it), so a server in this
    same process answers too."""
    socket = QLocalSocket()
    loop = QEventLoop()
    reply = bytearray()
    done: list[bool] = []

    def finish() -> None:
        done.append(True)
        loop.quit()

    def on_ready() -> None:
        reply.extend(socket.readAll().data())
        if b"\n" in reply or len(reply) > MAX_MESSAGE_BYTES:
            finish()

    socket.connected.connect(lambda: socket.write(QByteArray(_message(path.resolve()))))
    socket.readyRead.connect(on_ready)
    socket.errorOccurred.connect(lambda _error: finish())
    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(finish)
    timer.start(timeout_ms)
    socket.connectToServer(name)
    if not done and socket.state() != QLocalSocket.LocalSocketState.UnconnectedState:
        loop.exec()
    timer.stop()
    if socket.bytesAvailable():
        reply.extend(socket.readAll().data())
    socket.abort()
    return bytes(reply).startswith(OK)


def _answers(name: str) -> bool:
    """Something listens at ``name`` (a running window, perhaps a busy one)."""
    probe = QLocalSocket()
    probe.connectToServer(name)
    alive = probe.waitForConnected(HANDOFF_TIMEOUT_MS)
    probe.abort()
    return alive


class InstanceServer(QObject):
    """The running window's end: emits :attr:`file_received` for each path a second start hands over."""

    file_received = Signal(str)

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._accept)
        self._buffers: dict[int, bytearray] = {}

    def listen(self) -> bool:
        """Listen at :attr:`name`, taking over a socket file nothing listens on; False when another window runs
        (or the folder is not writable: then a second start simply opens its own window)."""
        if _answers(self.name):
            return False
        if not self.server.listen(self.name):
            if self.server.serverError() != QAbstractSocket.SocketError.AddressInUseError:
                LOG.info("single instance: cannot listen at %s: %s", self.name, self.server.errorString())
                return False
            QLocalServer.removeServer(self.name)  # a crashed window's socket file: nothing answered on it above
            if not self.server.listen(self.name):
                LOG.info("single instance: cannot listen at %s: %s", self.name, self.server.errorString())
                return False
        return True

    def close(self) -> None:
        self.server.close()  # on Unix this removes the socket file

    def _accept(self) -> None:
        while self.server.hasPendingConnections():
            socket = self.server.nextPendingConnection()
            if socket is None:
                return
            self._buffers[id(socket)] = bytearray()
            socket.readyRead.connect(lambda s=socket: self._read(s))
            socket.disconnected.connect(lambda s=socket: self._drop(s))

    def _drop(self, socket: QLocalSocket) -> None:
        self._buffers.pop(id(socket), None)
        socket.deleteLater()

    def _read(self, socket: QLocalSocket) -> None:
        buffer = self._buffers.setdefault(id(socket), bytearray())
        buffer.extend(socket.readAll().data())
        if len(buffer) > MAX_MESSAGE_BYTES:
            socket.abort()
            return
        if b"\n" not in buffer:
            return
        line = bytes(buffer).split(b"\n", 1)[0]
        path = _parse(line)
        socket.write(QByteArray(OK if path is not None else b"error\n"))
        socket.flush()
        socket.disconnectFromServer()
        if path is not None:
            # after the answer went out: the window may ask about unsaved work, and the second start is not kept
            # waiting for that
            QTimer.singleShot(0, lambda: self.file_received.emit(path))


def _parse(line: bytes) -> str | None:
    """The path of a hand-off message, None for anything else."""
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    path = data.get("open") if isinstance(data, dict) else None
    return path if isinstance(path, str) and path else None
