"""The core's English texts in the window's language: component explanations, warnings, the fit verdict,
solver and advice texts, and the errors of invalid scenarios.

The core and the command line stay English (their texts are a contract that scripts and tests read), so the
translation happens here, at display time, from a reviewed table (``resources/i18n/<lang>.core.json``):

The same mechanism, with a second file (``resources/i18n/<lang>.services.json``) merged into the table, translates
the English texts of the services and storage layers the window shows: the NVML detection reason, Hub errors and
search notes, model-resolution and local-file errors, and the library's notices.

* ``names``: whole component and phase names ("KV cache", "optimizer step"): :func:`localize_name`.
* ``phrases``: templates matched anywhere in a text, the longest first: :func:`localize`. In a template,
  ``{n}`` is a number (``1,024``, ``0.9``, ``1.0e+09``), ``{id}`` one identifier-like token (``bf16``,
  ``:4096:2:16:8``, ``GiB``), ``{g}`` a name kept as it is (a GPU, a model), ``{x}`` text that is translated in
  turn, and any other name (``{basis}``) text translated by the table of that name. A digit at the end of a
  placeholder name only makes it unique (``{n2}``). Every number, unit and identifier is copied unchanged.

In English (or a language without a table) every function returns its text unchanged. Text the table does
not cover stays English rather than being guessed; ``tests/ui/test_core_text.py`` sweeps the estimator over
many scenarios and names every phrase that is left.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from vramdesk.core.messages import Text

from .i18n import i18n_dir, language

_PLACEHOLDER = re.compile(r"\{([a-z]+)(\d*)\}")
_NUMBER = r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]?\d+)?"
_TOKEN = r"[\w.+\-/:=']*[\w+]"
#: free text: never across "; " (the core's separator between clauses), never starting or ending with a space
_FREE = r"[^;\s](?:[^;]*?[^;\s])?"
#: a translated piece parked in the text: private-use characters only (no digit or letter a template could match)
_SENTINEL = re.compile("\ue000([\ue100-\ue10f]+)\ue001")
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


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    template: str
    #: placeholder name -> kind ("n", "id", "g", "x" or a table name)
    kinds: tuple[tuple[str, str], ...]
    #: the longest literal piece: a cheap test before the regular expression runs
    needle: str
    #: characters of literal text (the longest template is tried first)
    weight: int


def _compile(english: str, translated: str) -> _Rule:
    parts: list[str] = []
    kinds: list[tuple[str, str]] = []
    pos = 0
    literals: list[str] = []
    for m in _PLACEHOLDER.finditer(english):
        literal = english[pos : m.start()]
        literals.append(literal)
        parts.append(re.escape(literal))
        name, kind = m.group(1) + m.group(2), m.group(1)
        kinds.append((name, kind))
        if kind == "n":
            parts.append(f"(?P<{name}>{_NUMBER})")
        elif kind == "id":
            parts.append(f"(?P<{name}>{_TOKEN})")
        else:
            parts.append(f"(?P<{name}>{_FREE})")
        pos = m.end()
    literals.append(english[pos:])
    parts.append(re.escape(english[pos:]))
    if english.endswith("}") and kinds and kinds[-1][1] not in ("n", "id"):
        parts.append(r"(?=;|$)")  # free text at the end runs to the end of its clause
    body = "".join(parts)
    # whole words only: "load" never matches inside "download", "2 B" never inside "12 B"
    if english[:1].isalnum() or english.startswith("{"):
        body = r"(?<![\w.\-])" + body
    if english[-1:].isalnum() or english.endswith("}"):
        body += r"(?![\w\-])"
    return _Rule(re.compile(body), translated, tuple(kinds), max(literals, key=len), sum(map(len, literals)))


class Translator:
    """One language's table: :meth:`text` for sentences, :meth:`name` for component and phase names."""

    def __init__(self, data: dict[str, dict[str, str]]) -> None:
        self.names: dict[str, str] = {k: v for k, v in data.get("names", {}).items() if v}
        self.tables: dict[str, list[_Rule]] = {}
        for table, entries in data.items():
            if table in ("names",) or table.startswith("_") or not isinstance(entries, dict):
                continue
            rules = [_compile(en, zh) for en, zh in entries.items() if zh]
            # the longest template first, so "KV cache pool" wins over "KV cache"
            rules.sort(key=lambda r: -r.weight)
            self.tables[table] = rules

    # ------------------------------------------------------------------ public
    def name(self, text: str) -> str:
        return self.names.get(text, text)

    def text(self, text: str) -> str:
        if not text:
            return text
        store: list[str] = []
        out = self._apply(text, "phrases", store)
        while _SENTINEL.search(out):
            out = _SENTINEL.sub(lambda m: store[_index(m.group(1))], out)
        return _full_width(out)

    def message(self, text: Text, messages: Mapping[str, str]) -> str | None:
        """A :class:`~vramdesk.core.messages.Text` translated by its id with ``messages`` (id -> template), its
        nested texts in turn; None when it, or a part of it, has no translation there."""
        store: list[str] = []
        out = self._render(text, messages, store)
        if out is None:
            return None
        while _SENTINEL.search(out):
            out = _SENTINEL.sub(lambda m: store[_index(m.group(1))], out)
        return _full_width(out)

    # ------------------------------------------------------------------ work
    def _render(self, text: Text, messages: Mapping[str, str], store: list[str]) -> str | None:
        if text.parts:  # a join: each piece, then the separator (full-width at the end, as a whole text)
            pieces: list[str] = []
            for part in text.parts:
                piece = (
                    self._render(part, messages, store)
                    if isinstance(part, Text)
                    else self._apply(part, "phrases", store)
                )
                if piece is None:
                    return None
                pieces.append(piece)
            return text.separator.join(pieces)
        if not text.id:  # English without an id: the regular-expression table it names
            table = str(text.args.get("table", "phrases"))
            return self._apply(text, table, store) if table == "phrases" else self._sub_table(text, table, store)
        template = messages.get(text.id)
        if template is None:
            return None
        args: dict[str, object] = {}
        for name, value in text.args.items():
            rendered = self._render(value, messages, store) if isinstance(value, Text) else value
            if rendered is None:
                return None
            args[name] = rendered
        return template.format(**args)

    def _apply(self, text: str, table: str, store: list[str]) -> str:
        for rule in self.tables.get(table, ()):
            if rule.needle not in text:
                continue
            text = rule.pattern.sub(lambda m, r=rule: self._keep(self._fill(r, m, store), store), text)  # type: ignore[misc]
        return text

    def _sub_table(self, text: str, table: str, store: list[str]) -> str:
        """``text`` through table ``table`` (whole-text match first), then through the phrases."""
        for rule in self.tables.get(table, ()):
            m = rule.pattern.fullmatch(text)
            if m is not None:
                return self._fill(rule, m, store)
        return self._apply(text, "phrases", store)

    def _fill(self, rule: _Rule, m: re.Match[str], store: list[str]) -> str:
        values: dict[str, str] = {}
        for name, kind in rule.kinds:
            value = m.group(name)
            if kind == "x":
                value = self._apply(value, "phrases", store)
            elif kind not in ("n", "id", "g"):
                value = self._sub_table(value, kind, store)
            values[name] = value
        return _PLACEHOLDER.sub(lambda p: values.get(p.group(1) + p.group(2), p.group(0)), rule.template)

    @staticmethod
    def _keep(text: str, store: list[str]) -> str:
        """Park translated text behind a marker, so no later (shorter) template matches inside it."""
        store.append(text)
        digits = "".join(chr(0xE100 + int(c, 16)) for c in f"{len(store) - 1:x}")
        return f"\ue000{digits}\ue001"


def _index(digits: str) -> int:
    return int("".join(f"{ord(c) - 0xE100:x}" for c in digits), 16)


def _full_width(text: str) -> str:
    text = text.replace("; ", "；")  # the core's clause separator (never inside a number or an identifier)
    text = _PUNCT_AFTER_CJK.sub(lambda m: _PUNCT[m.group(1)], text)
    text = _PUNCT_BEFORE_CJK.sub(lambda m: _PUNCT[m.group(1)], text)
    while True:
        paired = _PAREN_AROUND_CJK.sub(r"（\1）", text)
        if paired == text:
            break
        text = paired
    if _HAS_CJK.search(text):
        text = _COLON_SPACE.sub("：", text)
    text = _SPACE_BEFORE_PAREN.sub("（", text)
    return _SPACE_AFTER_PAREN.sub("）", text)


#: the files of one language's table, merged into one (``<lang>.core.json``, then ``<lang>.services.json``): the
#: core's texts, and those of the services and storage layers (Hub, NVML, local files, the library)
TABLE_PARTS = ("core", "services")


@cache
def translator(lang: str) -> Translator | None:
    """The core-text table of ``lang`` (None for English or a language without one)."""
    if lang == "en":
        return None
    merged: dict[str, dict[str, str]] = {}
    for part in TABLE_PARTS:
        try:
            data = json.loads((i18n_dir() / f"{lang}.{part}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            if part == TABLE_PARTS[0]:
                return None
            continue
        if not isinstance(data, dict):
            return None
        for table, entries in data.items():
            if isinstance(entries, dict):
                merged.setdefault(table, {}).update(entries)
    return Translator(merged)


@cache
def message_table(lang: str) -> dict[str, str]:
    """The translations of the core's message ids: ``resources/i18n/<lang>.messages.json`` and every
    ``<lang>.messages.<area>.json`` next to it (id -> template with the English template's placeholders and
    format specs; an id in two files keeps the first file's, in name order); empty for English or a language
    without one. A file that cannot be read is left out (its texts stay English)."""
    if lang == "en":
        return {}
    out: dict[str, str] = {}
    for path in message_files(lang):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        for k, v in data.items():
            if not k.startswith("_") and isinstance(v, str) and v:
                out.setdefault(k, v)
    return out


def message_files(lang: str) -> list[Path]:
    """The message-id tables of ``lang``, in the order :func:`message_table` reads them."""
    folder = i18n_dir()
    return sorted(folder.glob(f"{lang}.messages.json")) + sorted(folder.glob(f"{lang}.messages.*.json"))


@lru_cache(maxsize=4096)
def _localized(text: str, lang: str) -> str:
    t = translator(lang)
    return text if t is None else t.text(text)


def localize(text: str, lang: str | None = None) -> str:
    """A core sentence (explanation, warning, verdict, advice, error) in ``lang`` (default: the window's).

    A :class:`~vramdesk.core.messages.Text` whose id, and the id of every text nested in it, has a translation in
    :func:`message_table` is translated from there; any other text by the regular-expression table."""
    lang = lang or language()
    if lang == "en" or not text:
        return text
    if isinstance(text, Text):  # translated by its message id, else (not converted yet) by the phrases
        t = translator(lang)
        by_id = None if t is None else t.message(text, message_table(lang))
        if by_id is not None:
            return by_id
        text = str(text)  # (the cache below takes plain strings only)
    return _localized(text, lang)


def localize_name(text: str, lang: str | None = None) -> str:
    """A component or phase name in ``lang`` (default: the window's language)."""
    lang = lang or language()
    if lang == "en":
        return text
    t = translator(lang)
    return text if t is None else t.name(text)


__all__ = ["TABLE_PARTS", "Translator", "localize", "localize_name", "message_files", "message_table", "translator"]
