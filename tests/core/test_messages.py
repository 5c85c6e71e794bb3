"""Message ids (vramdesk/core/messages.py): a Text is the English str it always was, plus its id and values; the
catalog keeps one template per id; a result model keeps the Text through validation and dumps plain strings."""

from __future__ import annotations

import json
import pickle

import pytest

from vramdesk.core import messages
from vramdesk.core.fit import verdict
from vramdesk.core.gpu import GIB, GpuSpec
from vramdesk.core.messages import MESSAGES, Message, Text, fields, free, join, text
from vramdesk.core.result import Fit

GPU = GpuSpec(name="RTX 4090", memory_bytes=24 * GIB)


def test_a_text_is_the_english_string() -> None:
    t = text("test.spare", "needs {need:.2f} GiB; {spare:.2f} GiB to spare", need=9.8461, spare=12.5)
    assert t == "needs 9.85 GiB; 12.50 GiB to spare"
    assert type(str(t)) is str and str(t) == t
    assert isinstance(t, str) and t.id == "test.spare" and dict(t.args) == {"need": 9.8461, "spare": 12.5}
    assert f"[{t}]" == "[needs 9.85 GiB; 12.50 GiB to spare]"
    assert json.dumps({"m": t}) == json.dumps({"m": str(t)})
    assert hash(t) == hash(str(t)) and {t: 1}[str(t)] == 1
    assert t + "!" == str(t) + "!" and type(t + "!") is str
    copy = pickle.loads(pickle.dumps(t))
    assert copy == t and copy.id == t.id and dict(copy.args) == dict(t.args)


def test_nested_texts_and_joins_keep_their_parts() -> None:
    inner = text("test.word", "free")
    outer = text("test.outer", "{n} GiB {basis}", n=3, basis=inner)
    assert outer == "3 GiB free" and outer.args["basis"] is inner
    joined = join("; ", outer, "a plain note")
    assert joined == "3 GiB free; a plain note" and joined.id == "" and joined.parts == (outer, "a plain note")
    assert joined.separator == "; "
    loose = free("some label")
    assert loose == "some label" and isinstance(loose, Text) and loose.id == "" and not loose.args
    assert free(outer) is outer


def test_the_catalog_refuses_a_clashing_template() -> None:
    Message("test.clash", "one {a}")
    Message("test.clash", "one {a}")  # the same template again is the same message
    assert MESSAGES["test.clash"] == "one {a}"
    with pytest.raises(ValueError, match="two templates"):
        Message("test.clash", "two {a}")
    with pytest.raises(ValueError, match="two templates"):
        text("test.clash", "one {b}", b=1)
    with pytest.raises(ValueError, match="an id"):
        messages.register("", "x")


def test_fields_name_placeholders_and_specs() -> None:
    assert fields("needs {need:.2f} GiB of {available:.2f} GiB {basis}") == {
        "need": ".2f",
        "available": ".2f",
        "basis": "",
    }


def test_a_result_keeps_the_id_and_dumps_plain_strings() -> None:
    fit = verdict(10 * GIB, GPU)
    assert isinstance(fit.message, Text) and fit.message.id == "fit.spare"
    assert isinstance(fit.basis, Text) and fit.basis.id == "fit.basis.total"
    again = Fit.model_validate(fit.model_dump())
    assert again.message == fit.message and type(again.message) is str  # a dump is plain text: no id
    kept = Fit.model_validate({**fit.model_dump(), "message": fit.message})
    assert isinstance(kept.message, Text) and kept.message.id == "fit.spare"
    dumped = fit.model_dump()
    assert type(dumped["message"]) is str and type(dumped["basis"]) is str
    plain = fit.model_copy(update={"message": str(fit.message), "basis": str(fit.basis)})
    assert fit.model_dump_json() == plain.model_dump_json()
    assert json.loads(fit.model_dump_json())["message"] == ("needs 10.00 GiB of 24.00 GiB total; 14.00 GiB to spare")
    with pytest.raises(ValueError):
        Fit.model_validate({**fit.model_dump(), "message": 3})


def test_verdict_sentences_are_byte_identical() -> None:
    """The English that the f-strings wrote before the ids."""
    assert verdict(23 * GIB, GPU).message == (
        "needs 23.00 GiB of 24.00 GiB total: less than the 1.20 GiB headroom left for the display, other "
        "processes and allocator spikes"
    )
    assert verdict(30 * GIB, GPU).message == (
        "needs 30.00 GiB per GPU but the RTX 4090 has 24.00 GiB total: short by 6.00 GiB"
    )
    busy = GPU.model_copy(
        update={"free_bytes": 0, "used_bytes": int(23.7 * GIB), "device_index": 0, "held_by": "process 4242"}
    )
    assert verdict(3 * GIB, busy).message == (
        "no free memory on GPU 0 (the RTX 4090): other processes hold 23.70 GiB (process 4242); needs 3.00 GiB per GPU"
    )
    noted = GPU.model_copy(update={"free_bytes": 20 * GIB, "free_note": "the figures did not add up"})
    assert verdict(3 * GIB, noted).message == (
        "needs 3.00 GiB of 20.00 GiB free; 17.00 GiB to spare; the figures did not add up"
    )
