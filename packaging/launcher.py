"""The frozen app's entry script: the same as the `vramdesk` console script (vramdesk.main:main, which also opens a
bare ``.vramdesk.json`` path given by the desktop in the window)."""

import os
import sys

from vramdesk.main import main


def _qt_paths() -> None:
    """What PyInstaller's PySide6 run-time hook did, without importing Qt (the spec drops that hook so that the
    command line loads no Qt library): Qt's plugins are looked up in the bundle, whatever QT_PLUGIN_PATH the user's
    environment has for other Qt programs; on Windows the bundle's DLLs are found first."""
    base = getattr(sys, "_MEIPASS", None)
    if base is None:
        return
    qt = os.path.join(base, "PySide6") if sys.platform == "win32" else os.path.join(base, "PySide6", "Qt")
    os.environ["QT_PLUGIN_PATH"] = os.path.join(qt, "plugins")
    if sys.platform == "win32":
        os.environ["PATH"] = base + os.pathsep + os.environ.get("PATH", "")


if __name__ == "__main__":
    _qt_paths()
    sys.exit(main())
