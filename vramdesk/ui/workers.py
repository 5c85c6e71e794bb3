"""Background work for the window: one :class:`TaskRunner` per kind of job, the newest request wins.

A job is a function ``fn(cancel: threading.Event) -> result`` run on a thread pool. Submitting a new job
sets the previous job's ``cancel`` event (hub searches and resolves stop waiting at once) and bumps a
generation number; a result that comes back for an older generation is dropped, so a slow, stale answer
never overwrites a newer one. Results come back to the GUI thread through a queued signal.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal


class _Relay(QObject):
    done = Signal(int, object, object)  # generation, result, error


class _Job(QRunnable):
    def __init__(self, fn: Callable[[threading.Event], Any], gen: int, relay: _Relay, cancel: threading.Event):
        super().__init__()
        self._fn = fn
        self._gen = gen
        self._relay = relay
        self._cancel = cancel
        self.setAutoDelete(True)

    def run(self) -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = self._fn(self._cancel)
        except Exception as err:  # handed to the GUI thread, which decides
            error = err
        if self._cancel.is_set():
            return
        with contextlib.suppress(RuntimeError):  # the window went away meanwhile
            self._relay.done.emit(self._gen, result, error)


class TaskRunner(QObject):
    """Runs one kind of job in the background; ``finished(result)`` / ``failed(error)`` for the newest only."""

    finished = Signal(object)
    failed = Signal(object)
    busy_changed = Signal(bool)

    def __init__(self, name: str, parent: QObject | None = None, pool: QThreadPool | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self._pool = pool or QThreadPool.globalInstance()
        self._relay = _Relay(self)
        self._relay.done.connect(self._on_done)
        self._gen = 0
        self._cancel: threading.Event | None = None
        self.started_at = 0.0
        #: seconds the last finished job took
        self.last_seconds = 0.0
        #: what the newest job is about (shown in the status bar)
        self.label = ""

    @property
    def busy(self) -> bool:
        return self._cancel is not None

    def submit(self, fn: Callable[[threading.Event], Any], label: str = "") -> int:
        was_busy = self.busy
        self.cancel(emit=False)
        self._gen += 1
        self._cancel = threading.Event()
        self.label = label
        self.started_at = time.perf_counter()
        self._pool.start(_Job(fn, self._gen, self._relay, self._cancel))
        if not was_busy:
            self.busy_changed.emit(True)
        return self._gen

    def cancel(self, *, emit: bool = True) -> None:
        if self._cancel is not None:
            self._cancel.set()
            self._cancel = None
            if emit:
                self.busy_changed.emit(False)

    def _on_done(self, gen: int, result: Any, error: Any) -> None:
        if gen != self._gen or self._cancel is None:
            return  # an older request, or cancelled: the newest one wins
        self._cancel = None
        self.last_seconds = time.perf_counter() - self.started_at
        self.busy_changed.emit(False)
        if error is not None:
            self.failed.emit(error)
        else:
            self.finished.emit(result)
