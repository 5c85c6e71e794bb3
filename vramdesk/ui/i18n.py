"""Translations of the window's strings: English in the code, other languages in JSON tables.

Why not Qt's .ts/.qm: ``pyside6-lupdate``/``pyside6-lrelease`` exist in the venv, but a .qm file is a
binary build product that needs a Qt tool at build time and cannot be reviewed in a diff. A JSON table
(``resources/i18n/<lang>.json``: English text -> translation) ships with the other resources, needs
no tool, and a test checks that every string the UI passes to :func:`tr` has a translation.

The language: the ``VRAMDESK_LANG`` environment variable, else the saved setting, else the system locale;
anything without a table falls back to English. Nothing here imports Qt (the presenter's texts call :func:`tr`);
the system locale, the saved setting and Qt's own translators are :mod:`vramdesk.ui.qt_i18n`'s.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from vramdesk.services.catalog import resources_dir

#: languages the window ships (code -> name shown in the language menu, in that language)
LANGUAGES: dict[str, str] = {"en": "English", "zh_CN": "简体中文"}
SETTING_KEY = "ui/language"

_state: dict[str, str] = {}


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


def set_language(lang: str) -> str:
    """Show the window in ``lang`` from now on (``qt_i18n.save_language`` also keeps it for the next start)."""
    lang = normalize(lang)
    _state["lang"] = lang
    return lang


def language() -> str:
    return _state.get("lang", "en")


def tr(text: str) -> str:
    """``text`` in the current language (the English text itself when there is no translation)."""
    return table(language()).get(text, text)
