"""Translations of the window's strings: English in the code, other languages in JSON tables.

Why not Qt's .ts/.qm: ``pyside6-lupdate``/``pyside6-lrelease`` exist in the venv, but a .qm file is a
binary build product that needs a Qt tool at build time and cannot be reviewed in a diff. A JSON table
(``resources/i18n/<lang>.json``: English text -> translation) ships with the other resources, needs
no tool, and a test checks that every string the UI passes to :func:`tr` has a translation.

The language: the ``VRAMDESK_LANG`` environment variable, else the saved setting (:func:`set_language`
with ``persist=True``), else the system locale; anything without a table falls back to English.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from vramdesk.services.catalog import resources_dir

#: languages the window ships (code -> name shown in the language menu, in that language)
LANGUAGES: dict[str, str] = {"en": "English", "zh_CN": "简体中文"}
SETTING_KEY = "ui/language"

_state: dict[str, str] = {}
#: the QTranslator of Qt's own strings now installed (standard buttons, context menus), if any
_qt_translators: list[Any] = []


def i18n_dir() -> Path:
    return resources_dir() / "i18n"


@cache
def table(lang: str) -> dict[str, str]:
    """English -> ``lang`` (empty for English or a language without a table)."""
    if lang == "en":
        return {}
    path = i18n_dir() / f"{lang}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str) and v}


def normalize(code: str | None) -> str:
    """A locale name ("zh_CN", "zh-Hans-CN", "zh_TW", "en_US.UTF-8") -> a shipped language code."""
    c = (code or "").replace("-", "_").split(".")[0].lower()
    if c.startswith("zh"):
        return "zh_CN"
    return "en"


def system_language() -> str:
    from PySide6.QtCore import QLocale

    return normalize(QLocale.system().name())


def saved_language() -> str | None:
    from PySide6.QtCore import QSettings

    value = QSettings().value(SETTING_KEY)
    return value if isinstance(value, str) and value in LANGUAGES else None


def choose_language() -> str:
    env = os.environ.get("VRAMDESK_LANG")
    if env:
        return normalize(env)
    return saved_language() or system_language()


def set_language(lang: str, *, persist: bool = False) -> str:
    lang = normalize(lang)
    _state["lang"] = lang
    if persist:
        from PySide6.QtCore import QSettings

        QSettings().setValue(SETTING_KEY, lang)
    return lang


def language() -> str:
    return _state.get("lang", "en")


def install_qt_translations(lang: str | None = None) -> bool:
    """Qt's own strings (OK, Cancel, Close, the text fields' context menus) in ``lang`` (default: the current
    language), from the ``qtbase_<lang>.qm`` that ships with Qt; English removes them. False when Qt has no such
    file (a bundle without Qt's translations) or there is no application yet."""
    from PySide6.QtCore import QCoreApplication, QLibraryInfo, QTranslator

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


def tr(text: str) -> str:
    """``text`` in the current language (the English text itself when there is no translation)."""
    return table(language()).get(text, text)
