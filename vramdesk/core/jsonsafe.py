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

from .messages import Message, Text

#: deepest nesting accepted (objects and arrays); real config.json files nest 3-4 levels, scenario files 3
MAX_DEPTH = 64
#: longest integer literal accepted (digits); 2^64 has 20, so anything longer is not a count or a size
MAX_INT_DIGITS = 100
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")

AT = Message("input.json.at", "{source}: {problem}")
CONSTANT = Message("input.json.constant", "{name} is not a number JSON allows")
FLOAT_TOO_LARGE = Message("input.json.float_too_large", "the number {number} is too large for a float")
INTEGER_TOO_LONG = Message(
    "input.json.integer_too_long", "an integer of {digits:,} digits is too long (at most {most})"
)
TOO_DEEP = Message("input.json.too_deep", "nested deeper than {depth} levels")
KEY_SURROGATE = Message("input.json.key_surrogate", "a key holds a lone UTF-16 surrogate (\\ud800-\\udfff)")
KEY_CONTROL = Message("input.json.key_control", "the key {key!r} holds a control character")
STRING_SURROGATE = Message("input.json.string_surrogate", "a string holds a lone UTF-16 surrogate (\\ud800-\\udfff)")
NOT_UTF8 = Message("input.json.not_utf8", "not UTF-8 text ({error})")
#: a UnicodeDecodeError as Python words it (one byte, or a run of them), with its reason
CANNOT_DECODE = Message(
    "input.json.cannot_decode", "'{encoding}' codec can't decode byte {byte} in position {position}: {reason}"
)
CANNOT_DECODE_RUN = Message(
    "input.json.cannot_decode.bytes", "'{encoding}' codec can't decode bytes in position {start}-{end}: {reason}"
)
DECODE_REASONS: dict[str, Text] = {
    reason: Message(f"input.json.cannot_decode.{key}", reason)()
    for key, reason in (
        ("invalid_start", "invalid start byte"),
        ("invalid_continuation", "invalid continuation byte"),
        ("unexpected_end", "unexpected end of data"),
    )
}
MALFORMED = Message("input.json.malformed", "malformed JSON at line {line}, column {column}: {reason}")
INVALID = Message("input.json.invalid", "not valid JSON ({error})")
#: the json module's own syntax errors (``JSONDecodeError.msg``, C scanner and Python decoder alike)
SYNTAX: dict[str, Text] = {
    msg: Message(f"input.json.syntax.{key}", msg)()
    for key, msg in (
        ("expecting_value", "Expecting value"),
        ("expecting_property_name", "Expecting property name enclosed in double quotes"),
        ("expecting_colon", "Expecting ':' delimiter"),
        ("expecting_comma", "Expecting ',' delimiter"),
        ("unterminated_string", "Unterminated string starting at"),
        ("control_character", "Invalid control character at"),
        ("invalid_escape", "Invalid \\escape"),
        ("invalid_unicode_escape", "Invalid \\uXXXX escape"),
        ("extra_data", "Extra data"),
    )
}


class JsonError(ValueError):
    """Input that is not strict JSON; the message (one line) is ``"{source}: {problem}"``. Callers that word
    their own errors (``"{path}: not a JSON scenario file ({problem})"``) use :attr:`problem`."""

    def __init__(self, source: str, problem: str, syntax: tuple[str, int, int] | None = None) -> None:
        super().__init__(AT(source=source, problem=problem) if source else problem)
        self.source = source
        self.problem = problem
        #: (message, line, column) of a JSON syntax error, for callers that word it their own way
        self.syntax = syntax


def _no_constant(name: str) -> Any:
    raise JsonError("", CONSTANT(name=name))


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonError("", FLOAT_TOO_LARGE(number=text[:40]))
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonError("", INTEGER_TOO_LONG(digits=len(text.lstrip("-")), most=MAX_INT_DIGITS))
    return int(text)


def _check(value: Any, max_depth: int) -> Text | None:
    """The first problem in a parsed value (too deep, a lone surrogate in a string), walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > max_depth:
                return TOO_DEEP(depth=max_depth)
            for k, v in node.items():
                if _LONE_SURROGATE.search(k):
                    return KEY_SURROGATE()
                if not k.isprintable():  # no real key holds one; in an error message it would break the line
                    return KEY_CONTROL(key=k[:40])
                stack.append((v, depth + 1))
        elif isinstance(node, list):
            if depth > max_depth:
                return TOO_DEEP(depth=max_depth)
            stack.extend((v, depth + 1) for v in node)
        elif isinstance(node, str) and not node.isascii() and _LONE_SURROGATE.search(node):
            return STRING_SURROGATE()
    return None


def _decode_error(err: UnicodeDecodeError) -> str:
    """Python's sentence for a UnicodeDecodeError, with an id where it reads as Python wrote it."""
    reason = DECODE_REASONS.get(err.reason, err.reason)
    if err.end - err.start == 1:
        byte = f"0x{err.object[err.start]:02x}"
        out = CANNOT_DECODE(encoding=err.encoding, byte=byte, position=err.start, reason=reason)
    else:
        out = CANNOT_DECODE_RUN(encoding=err.encoding, start=err.start, end=err.end - 1, reason=reason)
    return out if out == str(err) else str(err)


def loads(data: str | bytes | bytearray, *, source: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse strict JSON (UTF-8 when given bytes; a leading BOM is allowed) or raise :class:`JsonError`."""
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as err:
            # str(err) names the byte and its offset: "'utf-8' codec can't decode byte 0xff in position 7: ..."
            raise JsonError(source, NOT_UTF8(error=_decode_error(err))) from None
    else:
        text = data
    text = text.removeprefix("\ufeff")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except JsonError as err:
        raise JsonError(source, err.problem) from None
    except json.JSONDecodeError as err:
        problem = MALFORMED(line=err.lineno, column=err.colno, reason=SYNTAX.get(err.msg, err.msg))
        raise JsonError(source, problem, (err.msg, err.lineno, err.colno)) from None
    except RecursionError:
        # the C scanner recurses once per level: this is only reached far past max_depth
        raise JsonError(source, TOO_DEEP(depth=max_depth)) from None
    except ValueError as err:  # anything else json raises (defensive: one line, whatever it says)
        raise JsonError(source, INVALID(error=" ".join(str(err).split())[:200])) from None
    found = _check(value, max_depth)
    if found:
        raise JsonError(source, found)
    return value


__all__ = ["MAX_DEPTH", "JsonError", "loads"]
