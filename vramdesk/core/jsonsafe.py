"""Strict JSON for untrusted input: config.json files, safetensors headers, scenario, DeepSpeed and --jsonl lines.

The standard library's ``json.loads`` accepts ``NaN`` / ``Infinity`` (and ``1e999``, read as infinity), raises
``RecursionError`` (not a ``ValueError``) for deep nesting, ``ValueError`` for integers past 4,300 digits and
``UnicodeDecodeError`` for non-UTF-8 bytes. Each of those used to end as a traceback. :func:`loads` turns all of
them into one :class:`JsonError` whose message is one line naming the source and what is wrong.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: deepest nesting accepted (objects and arrays); real config.json files nest 3-4 levels, scenario files 3
MAX_DEPTH = 64
#: longest integer literal accepted (digits); 2^64 has 20, so anything longer is not a count or a size
MAX_INT_DIGITS = 100
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


class JsonError(ValueError):
    """Input that is not strict JSON; the message (one line) is ``"{source}: {problem}"``. Callers that word
    their own errors (``"{path}: not a JSON scenario file ({problem})"``) use :attr:`problem`."""

    def __init__(self, source: str, problem: str, syntax: tuple[str, int, int] | None = None) -> None:
        super().__init__(f"{source}: {problem}" if source else problem)
        self.source = source
        self.problem = problem
        #: (message, line, column) of a JSON syntax error, for callers that word it their own way
        self.syntax = syntax


def _no_constant(name: str) -> Any:
    raise JsonError("", f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonError("", f"the number {text[:40]} is too large for a float")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonError("", f"an integer of {len(text.lstrip('-')):,} digits is too long (at most {MAX_INT_DIGITS})")
    return int(text)


def _check(value: Any, max_depth: int) -> str | None:
    """The first problem in a parsed value (too deep, a lone surrogate in a string), walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                return f"nested deeper than {max_depth} levels"
            for k, v in node.items():
                if _LONE_SURROGATE.search(k):
                    return "a key holds a lone UTF-16 surrogate (\\ud800-\\udfff)"
                if not k.isprintable():  # no real key holds one; in an error message it would break the line
                    return f"the key {k[:40]!r} holds a control character"
                stack.append((v, depth + 1))
        elif isinstance(node, list):
            if depth > max_depth:
                return f"nested deeper than {max_depth} levels"
            stack.extend((v, depth + 1) for v in node)
        elif isinstance(node, str) and not node.isascii() and _LONE_SURROGATE.search(node):
            return "a string holds a lone UTF-16 surrogate (\\ud800-\\udfff)"
    return None


def loads(data: str | bytes | bytearray, *, source: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse strict JSON (UTF-8 when given bytes; a leading BOM is allowed) or raise :class:`JsonError`."""
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as err:
            # str(err) names the byte and its offset: "'utf-8' codec can't decode byte 0xff in position 7: ..."
            raise JsonError(source, f"not UTF-8 text ({err})") from None
    else:
        text = data
    text = text.removeprefix("\ufeff")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except JsonError as err:
        raise JsonError(source, err.problem) from None
    except json.JSONDecodeError as err:
        problem = f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}"
        raise JsonError(source, problem, (err.msg, err.lineno, err.colno)) from None
    except RecursionError:
        # the C scanner recurses once per level: this is only reached far past max_depth
        raise JsonError(source, f"nested deeper than {max_depth} levels") from None
    except ValueError as err:  # anything else json raises (defensive: one line, whatever it says)
        raise JsonError(source, f"not valid JSON ({' '.join(str(err).split())[:200]})") from None
    found = _check(value, max_depth)
    if found:
        raise JsonError(source, found)
    return value


__all__ = ["MAX_DEPTH", "JsonError", "loads"]
