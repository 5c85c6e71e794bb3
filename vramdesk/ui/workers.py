"""Background work for the window: one :class:`TaskRunner` per kind of job, the newest request wins.

A job is a function ``fn(cancel: threading.Event) -> result`` run on a thread pool. Submitting a new job
sets the previous job's ``cancel`` event (hub searches and resolves stop waiting at once) and bumps a
generation number; a result that comes back for an older generation is dropped, so a slow, stale answer
never overwrites a newer one. Results come back to the GUI thread through a queued signal.

The worker threads emit on one relay object that lives as long as the process, never on a runner's own child:
a pool thread emitting (holding Python's GIL and waiting for the object's signal lock) on an object the GUI thread
is destroying (holding that lock and waiting for the GIL to drop the object's Python wrapper) deadlocks both. The
relay hands each result to its runner by key; a runner that is gone gets nothing. (Python's garbage collector,
which could free Qt objects on a worker thread the same way, runs on the GUI thread only: ``qtapp.ensure_app``.)
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal


class _Relay(QObject):
    """The one object the worker threads emit on (see the module's doc); it lives in the GUI thread."""

    done = Signal(int, int, object, object)  # runner key, generation, result, error

    def __init__(self) -> None:
        super().__init__()
        #: key -> runner, weakly: a runner that went away is not kept for a late result
        self.runners: weakref.WeakValueDictionary[int, TaskRunner] = weakref.WeakValueDictionary()
        self.keys = itertools.count(1)
        self.done.connect(self._deliver)

    def _deliver(self, key: int, gen: int, result: Any, error: Any) -> None:
        runner = self.runners.get(key)
        if runner is not None and shiboken6.isValid(runner):
            runner._on_done(gen, result, error)


_RELAY: list[_Relay] = []


def _relay() -> _Relay:
    """The process's relay, made by the first runner (in the GUI thread, where runners are made)."""
    if not _RELAY:
        _RELAY.append(_Relay())
    return _RELAY[0]


class _Job(QRunnable):
    def __init__(self, fn: Callable[[threading.Event], Any], key: int, gen: int, cancel: threading.Event):
        super().__init__()
        self._fn = fn
        self._key = key
        self._gen = gen
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
        with contextlib.suppress(RuntimeError):  # (the process is ending)
            _relay().done.emit(self._key, self._gen, result, error)


class TaskRunner(QObject):
    """Runs one kind of job in the background; ``finished(result)`` / ``failed(error)`` for the newest only."""

    finished = Signal(object)
    failed = Signal(object)
    busy_changed = Signal(bool)

    def __init__(self, name: str, parent: QObject | None = None, pool: QThreadPool | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self._pool = pool or QThreadPool.globalInstance()
        relay = _relay()
        self._key = next(relay.keys)
        relay.runners[self._key] = self
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
        self._pool.start(_Job(fn, self._key, self._gen, self._cancel))
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
