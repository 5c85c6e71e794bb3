"""Core sentences with a message id: the English text, plus what the window needs to translate it without
matching it against regular expressions.

* :class:`Text` is a ``str`` (the English sentence, byte for byte what the core has always written: JSON, the
  command line, comparisons and f-strings see a plain string) that also carries ``id`` (``"fit.spare"``) and
  ``args``, the values the sentence was formatted from: raw numbers (``need=9.846...``), names kept as they are
  (a GPU, a model) and nested :class:`Text` s (a basis word, a clause).
* :class:`Message` is one entry of the catalog: an id and its English template, registered in :data:`MESSAGES`
  when the message is defined (at import of the module that defines it). The same id always has the same
  template; a clash is refused. Calling it formats the template: ``SPARE(need=9.846)`` -> a :class:`Text`.
  :func:`text` does both at once, for a message used in one place.
* Number formats live in the template (``{need:.2f} GiB``) and the args hold the raw value, so the English is
  the f-string's output unchanged; a translated template reuses the same placeholders and format specs.
* Composite texts have the id ``""``: :func:`join` (``join("; ", verdict, note)``) keeps its ``parts`` and its
  ``separator``; :func:`free` marks English that has no id (a library's or the OS's own words): it stays English.

A translation table maps an id to a template in the other language (``resources/i18n/<lang>.messages*.json``,
read by ``vramdesk/ui/core_text.py``). Plain ``str`` values of a message (a GPU, a model, a dtype) are shown as
they are in every language.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Annotated, Any, cast

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

#: every message id -> its English template
MESSAGES: dict[str, str] = {}

_EMPTY: Mapping[str, object] = MappingProxyType({})


class Text(str):
    """An English sentence that remembers its message id and the values it was formatted from."""

    # (class-level defaults: a text sets only what it has, which keeps formatting one cheap)
    id: str = ""
    args: Mapping[str, object] = _EMPTY
    #: a :func:`join`: its pieces (``Text`` or plain ``str``) and what stands between them
    parts: tuple[str, ...] = ()
    separator: str = ""

    def __new__(
        cls,
        value: str,
        id: str = "",
        args: Mapping[str, object] | None = None,
        parts: tuple[str, ...] = (),
        separator: str = "",
    ) -> Text:
        self = super().__new__(cls, value)
        if id:
            self.id = id
        if args:
            self.args = MappingProxyType(dict(args))
        if parts:
            self.parts = parts
        if separator:
            self.separator = separator
        return self

    @classmethod
    def _formatted(cls, template: str, id: str, args: dict[str, object]) -> Text:
        """A message's text from a dict of values only it holds (no copy needed)."""
        self = super().__new__(cls, template.format_map(args))
        self.id = id
        self.args = MappingProxyType(args)
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # (a MappingProxyType does not pickle: the worker threads' results may be copied)
        return (_rebuild, (str(self), self.id, dict(self.args), self.parts, self.separator))

    # (repr stays the plain string's: a model's repr, and what digests of it see, read as before the ids)


def _rebuild(value: str, id: str, args: dict[str, object], parts: tuple[str, ...], separator: str) -> Text:
    return Text(value, id, args, parts, separator)


def register(id: str, template: str) -> None:
    """Add ``id`` -> ``template`` to the catalog; refuse an id that already has another template."""
    if not id:
        raise ValueError("a message needs an id")
    known = MESSAGES.setdefault(id, template)
    if known != template:
        raise ValueError(f"message {id!r} has two templates: {known!r} and {template!r}")


class Message:
    """One catalog entry: calling it with the template's values gives the :class:`Text`."""

    __slots__ = ("_bare", "id", "template")

    def __init__(self, id: str, template: str) -> None:
        register(id, template)
        self.id = id
        self.template = template
        self._bare: Text | None = None

    def __call__(self, **args: object) -> Text:
        if not args:  # (a sentence without values is one text: built once)
            bare = self._bare
            if bare is None:
                bare = self._bare = Text(self.template.format(), self.id)
            return bare
        for value in args.values():
            if type(value) is Later:
                args = {k: _now(v) for k, v in args.items()}
                break
        return Text._formatted(self.template, self.id, args)

    def later(self, **args: object) -> Later:
        """The :class:`Text` of these values, formatted when it is first read (an explanation)."""
        return Later(self, **args)

    def __repr__(self) -> str:
        return f"Message({self.id!r}, {self.template!r})"


def text(id: str, template: str, **args: object) -> Text:
    """Format ``template`` with ``args`` as the :class:`Text` of message ``id`` (registered in the catalog)."""
    return Message(id, template)(**args)


def join(separator: str, *parts: str | Later) -> Text:
    """``separator.join(parts)`` that keeps its pieces: ``join("; ", verdict, note)``."""
    texts: tuple[str, ...] = tuple([_now(p) for p in parts])
    self = Text(separator.join(texts))
    self.parts = texts  # (even when empty: a join is a composite)
    self.separator = separator
    return self


class Later:
    """A :class:`Text` not built yet: what builds it (a :class:`Message`, :func:`join` or a function returning a
    text) and the values it is built from, which may be ``Later`` themselves.

    An estimate's numbers do not need its explanations, which cost more to format than the arithmetic costs to
    do: an engine gives a component ``explain=SOME_MESSAGE.later(...)`` and the sentence is formatted the first
    time something reads it (a tooltip, a report, ``model_dump``), once. Reading a field declared with
    :func:`read_when_built` gives the :class:`Text`, never the ``Later``; a ``Later`` handed to a message or to
    :func:`join` is built there. It compares, hashes, prints and pickles as the text it becomes."""

    __slots__ = ("_args", "_built", "_kwargs", "_make")

    def __init__(self, make: Callable[..., str], /, *args: object, **kwargs: object) -> None:
        self._make: Callable[..., str] | None = make
        self._args = args
        self._kwargs = kwargs
        self._built: Text | None = None

    def text(self) -> Text:
        """The text, built on the first call."""
        built = self._built
        if built is None:
            make = cast("Callable[..., str]", self._make)
            values = {k: v.text() if type(v) is Later else v for k, v in self._kwargs.items()}
            if type(make) is Message and values:  # (the common case, straight to the formatting)
                built = Text._formatted(make.template, make.id, values)
            else:
                made = make(*map(_now, self._args), **values)
                built = made if isinstance(made, Text) else Text(made)
            self._built = built
            self._make, self._args, self._kwargs = None, (), {}  # (what built it is not kept alive)
        return built

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return repr(self.text())

    def __format__(self, spec: str) -> str:
        return format(self.text(), spec)

    def __eq__(self, other: object) -> bool:
        return self.text() == (other.text() if isinstance(other, Later) else other)

    def __hash__(self) -> int:
        return hash(self.text())

    def __reduce__(self) -> tuple[Any, ...]:
        return self.text().__reduce__()


#: what an explanation may be given as: a text, or one built when first read
Explanation = str | Later


def _now(value: object) -> Any:
    """``value``, or the text a :class:`Later` builds."""
    return value.text() if type(value) is Later else value


def later(make: Callable[..., str], /, *args: object, **kwargs: object) -> Later:
    """``make(*args, **kwargs)`` (a :class:`Text`), built when first read: ``later(join, "; ", a, b)``."""
    return Later(make, *args, **kwargs)


class _BuiltOnRead:
    """A model field that may hold a :class:`Later`: reading it gives the :class:`Text`, which then takes the
    ``Later``'s place (an equal value: the frozen model's hash and equality are unchanged)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        stored = obj.__dict__[self.name]
        if type(stored) is Later:
            stored = obj.__dict__[self.name] = stored.text()
        return stored

    def __set__(self, obj: Any, value: object) -> None:
        raise AttributeError(f"{type(obj).__name__}.{self.name} is read-only")


def read_when_built(model: type, *names: str) -> None:
    """Let ``model``'s :data:`MessageText` fields ``names`` be given a :class:`Later` (pydantic keeps it as it
    is): reading one builds it. Called once, after the model's class."""
    for name in names:
        setattr(model, name, _BuiltOnRead(name))


def free(value: str) -> Text:
    """English that has no id (a library's or the OS's own words, data such as a catalog note): shown as it is in
    every language. A :class:`Text` comes back unchanged."""
    return value if isinstance(value, Text) else Text(value)


def error_text(err: BaseException) -> str:
    """An exception's message: its :class:`Text` (``args[0]``, id and values kept) when it has one, else
    ``str(err)``."""
    first = err.args[0] if len(err.args) == 1 else None
    return first if isinstance(first, Text) else str(err)


def fields(template: str) -> dict[str, str]:
    """The placeholders of a template and their format specs: ``"{need:.2f} GiB"`` -> ``{"need": ".2f"}``."""
    out: dict[str, str] = {}
    for _literal, name, spec, conversion in string.Formatter().parse(template):
        if name is not None:
            out[name] = f"!{conversion}:{spec or ''}" if conversion else spec or ""
    return out


class _MessageSchema:
    """pydantic: keep a :class:`Text` (or a :class:`Later`) as it is (a plain ``str`` validates as ``str``), dump a
    plain string."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        # (instance checks, not a Python validator: every component of every estimate passes through here)
        return core_schema.union_schema(
            [core_schema.is_instance_schema(Text), core_schema.is_instance_schema(Later), core_schema.str_schema()],
            mode="left_to_right",
            custom_error_type="string_type",
            serialization=core_schema.plain_serializer_function_ser_schema(
                str, return_schema=core_schema.str_schema(), when_used="always"
            ),
        )


#: a result field that carries a :class:`Text` (kept through validation, dumped as a plain string)
MessageText = Annotated[str, _MessageSchema]


__all__ = [
    "MESSAGES",
    "Explanation",
    "Later",
    "Message",
    "MessageText",
    "Text",
    "error_text",
    "fields",
    "free",
    "join",
    "later",
    "read_when_built",
    "register",
    "text",
]
