"""What a Chinese reader would see as untranslated English in a localized text (shared by the i18n sweeps)."""

from __future__ import annotations

import re
from collections.abc import Collection

TOKEN = re.compile(r"(?:--)?[A-Za-z0-9_]+(?:[.+\-][A-Za-z0-9_]+)*\+?")


def english_left(text: str, ignore: Collection[str], whitelist: Collection[str]) -> list[str]:
    """Words of ``text`` that are neither identifiers nor in ``whitelist``; what the user typed, repo ids and the
    like (``ignore``), commands quoted as typed and absolute paths are removed first. Identifiers: single
    letters, tokens with a digit, underscore or dot, and command-line options."""
    for name in sorted(ignore, key=len, reverse=True):
        text = text.replace(name, " ")
    text = re.sub(r"`[^`]*`", " ", text)  # a command quoted as typed (`hf auth login`)
    text = re.sub(r"(?<![\w.])/[^\s:;,()（）：；，]*", " ", text)  # an absolute path
    return [
        tok
        for tok in TOKEN.findall(text)
        if not (len(tok) == 1 or re.search(r"[\d_.]", tok) or tok.startswith("--") or tok in whitelist)
    ]
