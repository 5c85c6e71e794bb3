"""How long an update took as the user sees it: from its start to the end of the repaint that shows it.

Widgets paint when their top-level widget handles an ``UpdateRequest`` (Qt's repaint manager paints every dirty
widget there and flushes the backing store to the screen). :class:`RepaintClock` watches that widget for it after
:meth:`RepaintClock.start`; a zero-timer queued from inside that event runs once the event has been handled, i.e.
after the paint and the flush, and reports the time since the start (and the part the paint took).
"""

from __future__ import annotations

import time
import weakref

from PySide6.QtCore import QEvent, QObject, QTimer, Signal

#: a repaint this long after the start is not the update's own (the window was hidden, or nothing changed and a
#: later repaint came for another reason): it is not reported
STALE_S = 2.0


class RepaintClock(QObject):
    """Emits ``repainted(total_s, paint_s)`` once per :meth:`start`, when the repaint that follows it is done.

    (A signal, not a callback: a bound method of the window held here would keep the deleted window alive.)"""

    repainted = Signal(float, float)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        #: the watched window, weakly (the clock is its child: a strong reference would keep a deleted window)
        self._watched: weakref.ref[QObject] | None = None
        self._started: float | None = None
        self._paint_from = 0.0

    def watch(self, window: QObject | None) -> None:
        """Watch ``window`` (a top-level widget: Qt sends it the ``UpdateRequest``, not its ``windowHandle()``);
        None or the same window again changes nothing."""
        before = self._watched() if self._watched is not None else None
        if window is None or window is before:
            return
        if before is not None:
            before.removeEventFilter(self)
        self._watched = weakref.ref(window)
        window.installEventFilter(self)

    def start(self, at: float | None = None) -> None:
        """An update began at ``at`` (``time.perf_counter()``; now when None): time it to its repaint."""
        self._started = time.perf_counter() if at is None else at

    @property
    def running(self) -> bool:
        return self._started is not None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if self._started is not None and event.type() == QEvent.Type.UpdateRequest:
            self._paint_from = time.perf_counter()
            # runs after this event, so after the paint it triggers (and never once the clock, or its window, is gone)
            QTimer.singleShot(0, self, self._finish)
        return False

    def _finish(self) -> None:
        if self._started is None:
            return
        now = time.perf_counter()
        started, self._started = self._started, None
        if now - started <= STALE_S:
            self.repainted.emit(now - started, now - self._paint_from)


__all__ = ["STALE_S", "RepaintClock"]
