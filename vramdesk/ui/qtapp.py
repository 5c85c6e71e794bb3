"""The QApplication the window, the exports and the tests share: created once, with the bundled font, the
language and the light or dark palette.

It lives apart from :mod:`vramdesk.ui.app` (the program's entry) so that the modules the window is made of
(exports, the comparison) can make sure an application exists without importing the entry back.
"""

from __future__ import annotations

import os
import sys

from PySide6.QtCore import QMessageLogContext, Qt, QtMsgType, qInstallMessageHandler
from PySide6.QtGui import QFont, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QApplication

from vramdesk.services.catalog import resources_dir

from . import theme
from .i18n import choose_language, install_qt_translations, set_language

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
    app.setFont(QFont(family, FONT_POINT_SIZE))
    return family


#: Qt messages that say nothing to a user of --self-test / --screenshot (the offscreen platform's)
_QUIET_MESSAGES = ("This plugin does not support propagateSizeHints()",)


def _quiet_handler(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
    if message in _QUIET_MESSAGES:
        return
    print(message, file=sys.stderr)


def ensure_app() -> QApplication:
    """The running QApplication, or a new one set up the way the window expects."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        app = existing
    else:
        if os.environ.get("QT_QPA_PLATFORM") == "offscreen":
            qInstallMessageHandler(_quiet_handler)
        app = QApplication(["vramdesk"])
        app.setApplicationName("vramdesk")
        app.setApplicationDisplayName("vramdesk")
        app.setOrganizationName("vramdesk")
    app.setStyle("Fusion")
    install_font(app)
    set_language(choose_language())
    install_qt_translations()
    dark = QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark and not offscreen()
    theme.use_palette(theme.DARK if dark else theme.LIGHT)
    return app


def offscreen() -> bool:
    """Qt draws to no screen (the offscreen or minimal platform: tests, --self-test, --screenshot)."""
    return QGuiApplication.platformName() in ("offscreen", "minimal")
