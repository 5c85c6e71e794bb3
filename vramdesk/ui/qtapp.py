"""The QApplication the window, the exports and the tests share: created once, with the bundled font, the
language and the light or dark palette.

It lives apart from :mod:`vramdesk.ui.app` (the program's entry) so that the modules the window is made of
(exports, the comparison) can make sure an application exists without importing the entry back.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QMessageLogContext, Qt, QThread, QtMsgType, qInstallMessageHandler
from PySide6.QtGui import QFont, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QApplication

from vramdesk.services.catalog import resources_dir

from . import theme
from .app_identity import set_identity, show_identity
from .i18n import set_language
from .qt_i18n import choose_language, install_qt_translations

FONT_FILE = "DejaVuSans.ttf"
FONT_POINT_SIZE = 9

_fonts_loaded: list[str] = []


def install_font(app: QApplication) -> str | None:
    """Use the bundled DejaVu Sans, so the window looks the same on every machine (and hosts without fonts)."""
    if not _fonts_loaded:
        try:
            path = resources_dir() / "fonts" / FONT_FILE
        except FileNotFoundError:
            return None
        if not path.is_file():
            return None
        font_id = QFontDatabase.addApplicationFont(str(path))
        families = QFontDatabase.applicationFontFamilies(font_id) if font_id >= 0 else []
        if not families:
            return None
        _fonts_loaded.append(families[0])
    family = _fonts_loaded[0]
    font = app.font()
    if font.family() != family or font.pointSize() != FONT_POINT_SIZE:
        # only when it changes: setFont() sends a font change to every widget and graphics scene alive
        app.setFont(QFont(family, FONT_POINT_SIZE))
    return family


#: Qt messages that say nothing to a user of --self-test / --screenshot (the offscreen platform's)
_QUIET_MESSAGES = ("This plugin does not support propagateSizeHints()",)
STYLE = "Fusion"

_Handler = Callable[[QtMsgType, QMessageLogContext, str], None]
#: the message handler that was installed before ours (pytest-qt's while a test runs), which gets the rest
_previous_handler: list[_Handler] = []


def _quiet_handler(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
    if message in _QUIET_MESSAGES:
        return
    if _previous_handler:
        _previous_handler[0](mode, context, message)
        return
    print(message, file=sys.stderr)


def _install_quiet_handler() -> None:
    previous = qInstallMessageHandler(_quiet_handler)
    _previous_handler.clear()
    if previous is not None and previous is not _quiet_handler:
        _previous_handler.append(previous)


def _check_thread(app: QCoreApplication | None) -> None:
    """Qt widgets, styles and fonts belong to the GUI thread: from any other, ensure_app() would crash Qt."""
    if app is None:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("ensure_app() must create the QApplication in the main thread")
    elif QThread.currentThread() != app.thread():
        raise RuntimeError("ensure_app() called from a thread other than the QApplication's (the GUI thread)")


#: Python's cyclic garbage collector runs on the GUI thread only (pyqtgraph's GarbageCollector: automatic
#: collection off, a timer collects when the counts pass the thresholds). A collection that starts on a worker
#: thread (the fit badges, the advice, the Hub) can free a dead window's Qt objects there: Qt's signal lock taken,
#: then the GIL awaited, while the GUI thread holds the GIL and awaits that lock. Full test runs hung so twice
#: (py-spy: gc_collect_main under Text.__new__ on a pool thread, QObject::disconnect on both threads).
_COLLECTOR: list[Any] = []


def _collect_on_the_gui_thread() -> None:
    if not _COLLECTOR:
        from pyqtgraph.util.garbage_collector import GarbageCollector

        _COLLECTOR.append(GarbageCollector(interval=0.5))


def ensure_app() -> QApplication:
    """The running QApplication, or a new one set up the way the window expects.

    Safe to call again and again (every window, export and test does): once the application is set up, a call
    changes nothing Qt has to tell the live widgets about. It never makes a second application object, and raises
    RuntimeError outside the GUI thread or when a QCoreApplication / QGuiApplication that is no QApplication runs."""
    existing = QCoreApplication.instance()
    _check_thread(existing)
    if isinstance(existing, QApplication):
        app = existing
    elif existing is not None:
        raise RuntimeError(f"a {type(existing).__name__} is running: the window needs a QApplication")
    else:
        if os.environ.get("QT_QPA_PLATFORM") == "offscreen":
            _install_quiet_handler()
        app = QApplication(["vramdesk"])
        set_identity(app)
    show_identity()
    _collect_on_the_gui_thread()
    style = app.style()
    if style is None or style.name().lower() != STYLE.lower():
        # once: setStyle() deletes the previous style object and re-polishes every widget alive
        app.setStyle(STYLE)
    install_font(app)
    set_language(choose_language())
    install_qt_translations()
    dark = QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark and not offscreen()
    theme.use_palette(theme.DARK if dark else theme.LIGHT)
    return app


def offscreen() -> bool:
    """Qt draws to no screen (the offscreen or minimal platform: tests, --self-test, --screenshot)."""
    return QGuiApplication.platformName() in ("offscreen", "minimal")
