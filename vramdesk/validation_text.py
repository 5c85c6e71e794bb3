"""pydantic's validation errors with message ids, so that the window translates them by id (shared by the window,
the services and the storage; outside the layers like :mod:`vramdesk.safety`).

Each error reads ``loc: message``; the message is the validator's own :class:`~vramdesk.core.messages.Text` (the
``ValueError`` a scenario validator raised with it) or, for pydantic's own error types, the message ``pydantic.<type>``
below, formatted from the error's ``ctx`` to exactly pydantic's English. Where it would not give pydantic's English
(a pydantic version that words it otherwise, a type not listed here) the English stays a plain string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from vramdesk.core.messages import Message, Text, join

#: ``loc: message``: where in the scenario (a dotted path, kept as it is) and what is wrong there
AT = Message("pydantic.at", "{loc}: {message}")
#: pydantic's error types (``err.errors()[i]["type"]``) -> their English, with the ``ctx`` names pydantic fills in
PYDANTIC: dict[str, Message] = {
    t: Message(f"pydantic.{t}", template)
    for t, template in {
        "missing": "Field required",
        "extra_forbidden": "Extra inputs are not permitted",
        "frozen_instance": "Instance is frozen",
        "frozen_field": "Field is frozen",
        "greater_than": "Input should be greater than {gt}",
        "greater_than_equal": "Input should be greater than or equal to {ge}",
        "less_than": "Input should be less than {lt}",
        "less_than_equal": "Input should be less than or equal to {le}",
        "multiple_of": "Input should be a multiple of {multiple_of}",
        "finite_number": "Input should be a finite number",
        "int_type": "Input should be a valid integer",
        "int_parsing": "Input should be a valid integer, unable to parse string as an integer",
        "int_parsing_size": "Unable to parse input string as an integer, exceeded maximum size",
        "int_from_float": "Input should be a valid integer, got a number with a fractional part",
        "float_type": "Input should be a valid number",
        "float_parsing": "Input should be a valid number, unable to parse string as a number",
        "bool_type": "Input should be a valid boolean",
        "bool_parsing": "Input should be a valid boolean, unable to interpret input",
        "string_type": "Input should be a valid string",
        "string_unicode": "Input should be a valid string, unable to parse raw data as a unicode string",
        "string_too_short": "String should have at least {min_length} characters",
        "string_too_long": "String should have at most {max_length} characters",
        "none_required": "Input should be None",
        "dict_type": "Input should be a valid dictionary",
        "list_type": "Input should be a valid list",
        "tuple_type": "Input should be a valid tuple",
        "iterable_type": "Input should be iterable",
        "model_type": "Input should be a valid dictionary or instance of {class_name}",
        "model_attributes_type": "Input should be a valid dictionary or object to extract fields from",
        "literal_error": "Input should be {expected}",
        "union_tag_invalid": (
            "Input tag '{tag}' found using {discriminator} does not match any of the expected tags: {expected_tags}"
        ),
        "union_tag_not_found": "Unable to extract tag using discriminator {discriminator}",
        "json_type": "JSON input should be string, bytes or bytearray",
    }.items()
}
#: the singular of the two length errors ("at least 1 character")
ONE_CHARACTER = {
    "string_too_short": Message("pydantic.string_too_short.one", "String should have at least {min_length} character"),
    "string_too_long": Message("pydantic.string_too_long.one", "String should have at most {max_length} character"),
}
#: the last choice of a literal error ("'a', 'b' or 'c'"): the values are kept as they are, "or" is translated
LITERAL_OR = Message("pydantic.literal_error.or", "{values} or {last}")
_VALUE_ERROR = "Value error, "


def validation_text(err: ValidationError) -> str:
    """One line for every error of ``err``: ``loc: message`` each, joined with ``"; "`` (a
    :class:`~vramdesk.core.messages.Text` whose pieces carry ids where pydantic's English is known)."""
    parts: list[str] = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        message = error_message(e)
        parts.append(AT(loc=loc, message=message) if loc else message)
    return parts[0] if len(parts) == 1 else join("; ", *parts)


def error_message(e: Mapping[str, Any]) -> str:
    """The message of one of pydantic's errors, without its "Value error, " prefix: the validator's Text, the
    message of a known error type, or pydantic's English as a plain string."""
    msg = str(e["msg"]).removeprefix(_VALUE_ERROR)
    ctx = e.get("ctx") or {}
    kind = str(e["type"])
    if kind == "value_error":
        raised = ctx.get("error")
        args: tuple[object, ...] = getattr(raised, "args", ())
        if len(args) == 1 and isinstance(args[0], Text) and args[0] == msg:
            return args[0]
        return msg
    message = PYDANTIC.get(kind)
    if message is None:
        return msg
    values: dict[str, object] = {k: _shown(v) for k, v in ctx.items()}
    if kind in ONE_CHARACTER and values.get("min_length", values.get("max_length")) == 1:
        message = ONE_CHARACTER[kind]
    expected = values.get("expected")
    if kind == "literal_error" and isinstance(expected, str) and " or " in expected:
        first, last = expected.rsplit(" or ", 1)
        values["expected"] = LITERAL_OR(values=first, last=last)
    try:
        out = message(**values)
    except (KeyError, IndexError, ValueError):
        return msg
    return out if out == msg else msg


def _shown(value: object) -> object:
    """A ``ctx`` value as pydantic writes it in the message: a whole float without its ``.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return int(value)
    return value


__all__ = ["AT", "LITERAL_OR", "ONE_CHARACTER", "PYDANTIC", "error_message", "validation_text"]
