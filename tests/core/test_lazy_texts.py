"""Explanations built when first read (issue 23): a :class:`Later` and the fields that hold one."""

from __future__ import annotations

import copy
import gc
import pickle
import sys

import pytest

from vramdesk.core import memo
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.messages import Later, Message, Text, join, later
from vramdesk.core.result import Component
from vramdesk.services.catalog import Catalog

AMOUNT = Message("test.lazy.amount", "{n:,} bytes of {what}")

calls: list[int] = []


def _counted(n: int) -> Text:
    calls.append(n)
    return AMOUNT(n=n, what="x")


def test_a_later_is_built_once_when_first_read() -> None:
    calls.clear()
    c = Component(name="w", bytes=1, category="weights", explain=later(_counted, 1234))
    assert calls == []  # nothing formatted while the numbers are worked out
    assert c.explain == "1,234 bytes of x" and calls == [1234]
    assert type(c.explain) is Text and c.explain.id == "test.lazy.amount" and c.explain.args["n"] == 1234
    assert c.explain == "1,234 bytes of x" and calls == [1234]  # once


def test_a_component_given_a_later_equals_one_given_the_text() -> None:
    lazy = Component(name="w", bytes=1, category="weights", explain=AMOUNT.later(n=5, what="y"))
    eager = Component(name="w", bytes=1, category="weights", explain=AMOUNT(n=5, what="y"))
    assert hash(lazy) == hash(eager) and lazy == eager
    assert lazy.model_dump() == eager.model_dump() == {
        "name": "w", "bytes": 1, "category": "weights", "explain": "5 bytes of y",
    }  # fmt: skip
    assert repr(lazy) == repr(eager)


def test_nested_laters_and_joins_keep_their_parts() -> None:
    inner = AMOUNT.later(n=2, what="z")
    c = Component(name="w", bytes=1, category="weights", explain=later(join, "; ", inner, "tail"))
    assert c.explain == "2 bytes of z; tail"
    assert c.explain.parts[0].id == "test.lazy.amount"  # type: ignore[attr-defined]
    # a Later given to an eager message or join is built there: no Later inside a Text
    outer = AMOUNT(n=3, what=AMOUNT.later(n=4, what="w"))
    assert type(outer.args["what"]) is Text and outer == "3 bytes of 4 bytes of w"
    assert all(type(p) is Text for p in join("; ", AMOUNT.later(n=1, what="a"), "b").parts[:1])


def test_copies_and_pickles_read_as_the_text() -> None:
    c = Component(name="w", bytes=1, category="weights", explain=AMOUNT.later(n=7, what="q"))
    back = pickle.loads(pickle.dumps(c))
    assert back.explain == "7 bytes of q" and back.explain.id == "test.lazy.amount"
    assert copy.deepcopy(c).explain == "7 bytes of q"
    assert c.model_copy(update={"bytes": 2}).explain == "7 bytes of q"
    assert isinstance(pickle.loads(pickle.dumps(AMOUNT.later(n=1, what="a"))), Text)
    assert f"{AMOUNT.later(n=1, what='a')}" == "1 bytes of a" and str(Later(AMOUNT, n=1, what="a")) == "1 bytes of a"


def test_an_estimate_formats_no_explanation_until_one_is_read() -> None:
    catalog = Catalog()
    facts = catalog.facts(DEFAULT_SCENARIO.model.id)
    gpu = catalog.gpu("RTX 4090")
    est = estimate(DEFAULT_SCENARIO, facts, gpu)
    pending = [c for p in est.phases for c in p.components if type(c.__dict__["explain"]) is Later]
    assert len(pending) >= 5  # the engine's components wait to be read
    assert all(c.explain and type(c.__dict__["explain"]) is Text for c in pending)
    kv = next(c for c in est.components if c.name == "KV cache")
    assert "36 full layers x 8 kv heads x (k 128 + v 128)" in kv.explain


def test_derived_facts_go_with_their_object() -> None:
    class Owner:
        pass

    before = memo.size()
    owner = Owner()
    built: list[int] = []
    assert memo.derived(owner, "k", lambda: built.append(1) or 41) == 41
    assert memo.derived(owner, "k", lambda: built.append(1) or 42) == 41 and built == [1]
    assert memo.derived(owner, "other", lambda: 7) == 7
    assert memo.size() == before + 1
    del owner
    gc.collect()
    assert memo.size() == before
    # a new object that reuses the id never gets the old one's facts
    fresh = Owner()
    assert memo.derived(fresh, "k", lambda: 99) == 99


def test_an_object_dropped_after_the_module_is_torn_down_forgets_itself_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # at interpreter exit a module's globals are cleared before the last objects go: their callbacks still run
    class Owner:
        pass

    owner = Owner()
    memo.derived(owner, "k", lambda: 1)
    table, ident = memo._TABLE, id(owner)
    assert ident in table
    raised: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", raised.append)
    monkeypatch.setattr(memo, "_TABLE", None)
    monkeypatch.setattr(memo, "_forget", None)
    del owner
    gc.collect()
    assert raised == [] and ident not in table


def test_formats_made_and_dropped_leave_no_priced_weights_behind() -> None:
    from vramdesk.core.weight_format import parse_weight_format

    facts = Catalog().facts(DEFAULT_SCENARIO.model.id)
    parts = frozenset({"text"})
    facts.weights(parse_weight_format("nf4"), parts)  # (the first pricing of the format, kept by value)
    gc.collect()
    before = memo.size(), memo.entries(facts)
    first = facts.weights(parse_weight_format("nf4"), parts)
    for _ in range(50):
        assert facts.weights(parse_weight_format("nf4"), parts) == first
    gc.collect()
    assert (memo.size(), memo.entries(facts)) == before
