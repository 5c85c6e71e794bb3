"""A guard against a reference-counting bug of shiboken6 6.12.0 on CPython 3.11.

With PySide6/shiboken6 6.12.0 on Python 3.11 every call of a Qt method that returns ``void`` takes one
reference from ``None``, and every signal ``emit()`` one from ``True`` (6.11.3 and 6.10.3 do not; on
Python 3.12+ these objects are immortal, so the missing reference does no harm). A window makes
thousands of such calls, and when the count reaches zero CPython aborts with
``Fatal Python error: none_dealloc`` / ``bool_dealloc`` (5,000 ``QWidget.resize()`` calls are enough).

:func:`protect_singletons` measures the leak with a throw-away QObject and, only when it is there, adds
a large number of references to ``None``, ``True`` and ``False``: the same thing Python 3.12 does by
making them immortal. The real fix is a PySide6 without the bug (pin ``PySide6-Essentials!=6.12.0`` on
Python < 3.12); then the probe finds no leak and this does nothing.
"""

from __future__ import annotations

import ctypes
import sys

#: references added to each singleton: more than any session can leak
BOOST = 1 << 40
_PROBE_CALLS = 64

_state: dict[str, bool] = {}


def leaks_references() -> bool:
    """Whether Qt calls take references from None/True that they never gave (the 6.12.0 bug)."""
    if sys.version_info >= (3, 12):
        return False  # None, True and False are immortal there
    from PySide6.QtCore import QObject, Signal

    class _Probe(QObject):
        ping = Signal()

    probe = _Probe()
    none_before, true_before = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(_PROBE_CALLS):
        probe.setObjectName("probe")
        probe.ping.emit()
    none_lost = none_before - sys.getrefcount(None)
    true_lost = true_before - sys.getrefcount(True)
    return none_lost >= _PROBE_CALLS // 2 or true_lost >= _PROBE_CALLS // 2


def _add_references(obj: object, n: int) -> bool:
    cell = ctypes.c_ssize_t.from_address(id(obj))
    # ob_refcnt is the first field of every object in a normal (non trace-refs) CPython build; check that
    # before writing to it: getrefcount() counts its own argument once more
    if cell.value != sys.getrefcount(obj) - 1:
        return False
    cell.value += n
    return True


def protect_singletons() -> bool:
    """Apply the guard when the running PySide6 leaks; returns whether it is in force. Idempotent."""
    if "applied" not in _state:
        applied = False
        if leaks_references():
            applied = all([_add_references(None, BOOST), _add_references(True, BOOST), _add_references(False, BOOST)])
        _state["applied"] = applied
    return _state["applied"]
