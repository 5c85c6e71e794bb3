"""The core's English texts in the window's language: component explanations, warnings, the fit verdict,
solver and advice texts, the errors of invalid scenarios, and the texts of the services and storage layers the
window shows (NVML detection, Hub errors and search notes, local files, the library's notices).

The core and the command line stay English (their texts are a contract that scripts and tests read), so the
translation happens here, at display time, by message id: every such text is a
:class:`~vramdesk.core.messages.Text` that remembers its id and the values it was formatted from, and
``resources/i18n/<lang>.messages*.json`` holds each id's template in that language, with the same placeholders
and format specs as the English one. No sentence is matched against a pattern.

* A message: its template in ``lang`` formatted with its values; a value that is itself a ``Text`` is
  translated in turn, a plain ``str`` value (a GPU, a model, a dtype, a number written with its unit) is kept as
  it is.
* A :func:`~vramdesk.core.messages.join`: its pieces, each in turn, with its separator.
* An id without a template in ``lang``, and text without an id: the English, as it is.
* Afterwards ASCII punctuation next to Chinese becomes full-width (``；``, ``：``, ``（…）``), as the window's own
  Chinese strings write it: typography, so a template need not know what stands next to it.

Component and phase names ("KV cache", "optimizer step") are words, not sentences: :func:`localize_name` looks
them up whole in ``resources/i18n/<lang>.names.json``.

In English (or a language without tables) every function returns its text unchanged.
``tests/ui/test_core_text.py`` sweeps the estimator over many scenarios and names every text that is left
English.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from vramdesk.core.messages import Text

from .i18n import i18n_dir, language

#: ASCII punctuation next to Chinese text becomes full-width (as the window's own Chinese strings write it)
_CJK = "\u3000-\u303f\u3400-\u9fff\uff00-\uffef"
_PUNCT = {":": "：", ";": "；", ",": "，"}
_PUNCT_AFTER_CJK = re.compile(rf"(?<=[{_CJK}])([:;,])(?: |$)")
_PUNCT_BEFORE_CJK = re.compile(rf"([:;,]) (?=[{_CJK}])")
_SPACE_BEFORE_PAREN = re.compile(r" +（")
_SPACE_AFTER_PAREN = re.compile(rf"） +(?=[{_CJK}])")
#: a pair of ASCII parentheses around Chinese text (innermost first) becomes a full-width pair
_PAREN_AROUND_CJK = re.compile(rf" ?\(([^()]*[{_CJK}][^()]*)\)")
#: "path: message": in a Chinese sentence every ": " is the full-width colon (never inside a number, URL or time)
_COLON_SPACE = re.compile(r"(?<=\S): ")
_HAS_CJK = re.compile(rf"[{_CJK}]")


class Translator:
    """One language's tables: :meth:`text` for core texts, :meth:`name` for component and phase names."""

    def __init__(self, messages: Mapping[str, str], names: Mapping[str, str] | None = None) -> None:
        self.messages = dict(messages)
        self.names = {k: v for k, v in (names or {}).items() if v}

    def name(self, text: str) -> str:
        return self.names.get(text, text)

    def text(self, text: str) -> str:
        """``text`` in this language (see the module's rules); a plain ``str`` comes back as it is."""
        if not isinstance(text, Text) or not text:
            return text
        return _full_width(self._render(text))

    def missing(self, text: str) -> list[str]:
        """The ids in ``text`` (nested ones included) that have no template in this language."""
        if not isinstance(text, Text):
            return []
        out = [part_id for part in text.parts for part_id in self.missing(part)]
        if text.id and text.id not in self.messages:
            out.append(text.id)
        return out + [i for value in text.args.values() if isinstance(value, Text) for i in self.missing(value)]

    def _render(self, text: str) -> str:
        if not isinstance(text, Text):
            return text
        if text.parts:
            return text.separator.join(self._render(part) for part in text.parts)
        template = self.messages.get(text.id) if text.id else None
        if template is None:
            return str(text)
        values = {name: self._render(v) if isinstance(v, Text) else v for name, v in text.args.items()}
        return template.format(**values)


def _full_width(text: str) -> str:
    if not _HAS_CJK.search(text):
        return text
    text = text.replace("; ", "；")  # the core's clause separator (never inside a number or an identifier)
    text = _PUNCT_AFTER_CJK.sub(lambda m: _PUNCT[m.group(1)], text)
    text = _PUNCT_BEFORE_CJK.sub(lambda m: _PUNCT[m.group(1)], text)
    while True:
        paired = _PAREN_AROUND_CJK.sub(r"（\1）", text)
        if paired == text:
            break
        text = paired
    text = _COLON_SPACE.sub("：", text)
    text = _SPACE_BEFORE_PAREN.sub("（", text)
    return _SPACE_AFTER_PAREN.sub("）", text)


def message_files(lang: str) -> list[Path]:
    """The message tables of ``lang``: ``<lang>.messages.json``, then each ``<lang>.messages.<area>.json``."""
    folder = i18n_dir()
    return sorted(folder.glob(f"{lang}.messages.json")) + sorted(folder.glob(f"{lang}.messages.*.json"))


def _read_table(path: Path) -> dict[str, str]:
    """A JSON object of id (or name) -> text; empty when the file is missing, unreadable or not such an object
    (the texts it held stay English)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if not k.startswith("_") and isinstance(v, str) and v}


@cache
def message_table(lang: str) -> dict[str, str]:
    """Every message id of ``lang`` -> its template (an id in two files keeps the first file's, in the order of
    :func:`message_files`); empty for English or a language without one."""
    out: dict[str, str] = {}
    if lang == "en":
        return out
    for path in message_files(lang):
        for key, value in _read_table(path).items():
            out.setdefault(key, value)
    return out


@cache
def translator(lang: str) -> Translator | None:
    """The tables of ``lang`` (None for English or a language with neither messages nor names)."""
    if lang == "en":
        return None
    messages, names = message_table(lang), _read_table(i18n_dir() / f"{lang}.names.json")
    return Translator(messages, names) if messages or names else None


def localize(text: str, lang: str | None = None) -> str:
    """A core text (explanation, warning, verdict, advice, error) in ``lang`` (default: the window's)."""
    lang = lang or language()
    if lang == "en" or not text:
        return text
    t = translator(lang)
    return text if t is None else t.text(text)


def localize_name(text: str, lang: str | None = None) -> str:
    """A component or phase name in ``lang`` (default: the window's language)."""
    lang = lang or language()
    if lang == "en":
        return text
    t = translator(lang)
    return text if t is None else t.name(text)


__all__ = ["Translator", "localize", "localize_name", "message_files", "message_table", "translator"]
