"""The Qt side of the window's language: the system locale, the saved setting (``QSettings``) and Qt's own
translated strings (standard buttons, context menus). :mod:`vramdesk.ui.i18n` holds the tables and :func:`tr`,
which need no Qt.
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QSettings, QTranslator

from .i18n import LANGUAGES, SETTING_KEY, language, normalize, set_language

#: the QTranslator of Qt's own strings now installed (standard buttons, context menus), if any
_qt_translators: list[Any] = []


def system_language() -> str:
    return normalize(QLocale.system().name())


def saved_language() -> str | None:
    value = QSettings().value(SETTING_KEY)
    return value if isinstance(value, str) and value in LANGUAGES else None


def choose_language() -> str:
    """The language to start in: ``VRAMDESK_LANG``, else the saved setting, else the system's."""
    env = os.environ.get("VRAMDESK_LANG")
    if env:
        return normalize(env)
    return saved_language() or system_language()


def save_language(lang: str) -> str:
    """Show the window in ``lang`` and keep it for the next start."""
    lang = set_language(lang)
    QSettings().setValue(SETTING_KEY, lang)
    return lang


def install_qt_translations(lang: str | None = None) -> bool:
    """Qt's own strings (OK, Cancel, Close, the text fields' context menus) in ``lang`` (default: the current
    language), from the ``qtbase_<lang>.qm`` that ships with Qt; English removes them. False when Qt has no such
    file (a bundle without Qt's translations) or there is no application yet."""
    app = QCoreApplication.instance()
    if app is None:
        return False
    for old in _qt_translators:
        app.removeTranslator(old)
    _qt_translators.clear()
    lang = lang or language()
    if lang == "en":
        return True
    translator = QTranslator(app)
    if not translator.load(f"qtbase_{lang}", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
        return False
    app.installTranslator(translator)
    _qt_translators.append(translator)
    return True
