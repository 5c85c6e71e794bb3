"""Windows: a named mutex held while the window runs, so that the installer and the uninstaller can tell that
vramdesk is running (packaging/windows/vramdesk.nsi opens it by this name) and ask to close it first, instead of
failing to replace files in use. Qt-free (ctypes); nothing on other systems.
"""

from __future__ import annotations

import sys

#: session-local ("Local\\"): the installer runs in the user's own session; the name is packaging/windows/vramdesk.nsi's
MUTEX_NAME = "Local\\io.github.vramdesk.VramDesk.running"

#: the handle, kept for the life of the process (Windows releases it when the process ends, however it ends)
_held: list[int] = []


def hold_running_mutex() -> bool:
    """Create the mutex once (Windows only); True when this process holds a handle to it."""
    if sys.platform != "win32":
        return False
    if _held:
        return True
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    create = kernel32.CreateMutexW
    create.argtypes = [ctypes.c_void_p, wintypes.BOOL, wintypes.LPCWSTR]
    create.restype = wintypes.HANDLE
    handle = create(None, False, MUTEX_NAME)  # not owned: only its existence is the signal
    if not handle:
        return False
    _held.append(handle)
    return True
