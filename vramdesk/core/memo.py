"""Facts derived once per immutable core object (an :class:`~vramdesk.core.architecture.Architecture`, a tensor
inventory), kept beside it rather than on it.

The core's values are frozen pydantic models; a ``functools.cached_property`` on one would be copied by
``model_copy(update=...)`` into a model whose fields differ (a stale answer), and a private attribute would take
part in ``==``. So the derived facts live here, in a table keyed by the object's identity: an entry is dropped
when its object is garbage-collected, and a lookup checks the object is still the same one, so a reused ``id``
never answers for another object. Worker threads may build an entry twice at once; both build the same value.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

#: id(owner) -> (a weak reference to it, its derived facts by key)
_TABLE: dict[int, tuple[weakref.ref[Any], dict[Hashable, Any]]] = {}


def _forget(ident: int, ref: weakref.ref[Any], table: dict[int, tuple[weakref.ref[Any], dict[Hashable, Any]]]) -> None:
    entry = table.get(ident)
    if entry is not None and entry[0] is ref:
        del table[ident]


def derived(owner: object, key: Hashable, build: Callable[[], T]) -> T:
    """``build()``'s value for ``owner`` and ``key``, built on the first call and kept while ``owner`` lives.

    ``build`` must depend only on ``owner`` (immutable) and ``key``."""
    ident = id(owner)
    entry = _TABLE.get(ident)
    if entry is None or entry[0]() is not owner:
        # (the table and the function are bound here: at interpreter exit the module's globals are gone before
        # the last objects, whose callbacks still run)
        def gone(ref: weakref.ref[Any], ident: int = ident, table: Any = _TABLE, forget: Any = _forget) -> None:
            forget(ident, ref, table)

        entry = (weakref.ref(owner, gone), {})
        _TABLE[ident] = entry
    facts = entry[1]
    try:
        return facts[key]  # type: ignore[no-any-return]
    except KeyError:
        value = facts[key] = build()
        return value


def size() -> int:
    """Objects that have derived facts kept (for tests: entries go with their objects)."""
    return len(_TABLE)


def entries(owner: object) -> int:
    """How many facts are kept for ``owner`` (for tests: what a caller adds per call stays bounded)."""
    entry = _TABLE.get(id(owner))
    return len(entry[1]) if entry is not None and entry[0]() is owner else 0
