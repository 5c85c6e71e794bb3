"""Chinese for the texts the core produces (vramdesk/ui/core_text.py): explanations, warnings, the verdict, the
solver's and the advice's texts, the errors of invalid inputs.

The core stays English; the window translates at display time by message id (``resources/i18n/zh_CN.messages*.json``)
and component names whole (``zh_CN.names.json``). The sweep (tests/coresweep.py) runs the real estimator (and the
solver, the advice and the speed model) over many scenarios, collects every text the window would show, and checks
that after translation no English word is left except a short list of technical identifiers. A new core sentence
without a translation fails here, with the sentence named.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from coresweep import sweep
from i18ncheck import CORE_WHITELIST
from i18ncheck import english_left as _english_left

from vramdesk.ui import core_text, i18n
from vramdesk.ui.core_text import Translator, localize, localize_name

ZH = "zh_CN"
WHITELIST = CORE_WHITELIST
_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")


@pytest.fixture(scope="module")
def texts() -> list[tuple[str, str, set[str]]]:
    return sweep()


def english_left(text: str, ignore: set[str]) -> list[str]:
    return _english_left(text, ignore, WHITELIST)


def test_the_sweep_covers_every_kind_of_core_text(texts) -> None:
    kinds = Counter(k for k, _, _ in texts)
    assert kinds["explain"] > 150 and kinds["name"] >= 25 and kinds["phase"] >= 10
    assert kinds["message"] > 30 and kinds["warning"] >= 6 and kinds["constant"] >= 10
    assert kinds["assumption"] > 50 and kinds["max"] > 20 and kinds["change"] > 20 and kinds["error"] >= 9


def test_every_core_text_the_window_shows_is_translated(texts) -> None:
    untranslated = []
    for kind, text, ignore in texts:
        zh = localize_name(text, ZH) if kind in ("name", "phase") else localize(text, ZH)
        left = english_left(zh, ignore)
        if left:
            untranslated.append(f"[{kind}] {text!r}\n    -> {zh!r}\n    English left: {sorted(set(left))}")
    assert not untranslated, f"{len(untranslated)} core texts without a translation:\n" + "\n".join(untranslated)


def test_numbers_survive_translation(texts) -> None:
    """Every number of the English text is in the Chinese one (no figure dropped, changed or invented)."""
    for kind, text, _ in texts:
        if kind in ("name", "phase"):
            continue
        zh = localize(text, ZH)
        assert Counter(_NUMBER.findall(zh)) == Counter(_NUMBER.findall(text)), (text, zh)


def test_every_component_and_phase_name_has_its_own_translation(texts) -> None:
    table = core_text.translator(ZH)
    assert table is not None
    missing = sorted({t for k, t, _ in texts if k in ("name", "phase") and t not in table.names})
    assert not missing, missing


def test_english_texts_pass_through_unchanged(texts) -> None:
    assert i18n.language() == "en"
    for _kind, text, _ in texts:
        assert localize(text) == text and localize(text, "en") == text
        assert localize_name(text) == text
    # a language without a table leaves the text as it is
    assert localize("needs 1.00 GiB per GPU", "xx") == "needs 1.00 GiB per GPU"


def test_examples_read_as_they_should() -> None:
    from vramdesk.core.fit import verdict
    from vramdesk.core.gpu import GIB
    from vramdesk.services.catalog import default_catalog
    from vramdesk.ui.presenter import fit_message, set_unit

    rtx = default_catalog().gpu("RTX 4090")
    fit = verdict(int(9.846 * GIB), rtx)
    assert localize(fit.message, ZH) == "需要 9.85 GiB（总显存共 23.99 GiB）；尚余 14.14 GiB"
    set_unit("GB")
    try:
        short = fit_message(verdict(int(30.2e9), rtx.model_copy(update={"free_bytes": int(25.76e9)})))
    finally:
        set_unit("GiB")
    assert short == "needs 30.20 GB per GPU but the RTX 4090 has 25.76 GB free: short by 4.44 GB"
    assert localize(short, ZH) == "每块 GPU 需要 30.20 GB，但 RTX 4090 的空闲显存只有 25.76 GB：还差 4.44 GB"
    assert localize_name("optimizer states", ZH) == "优化器状态" and localize_name("KV cache", ZH) == "KV 缓存"
    assert localize_name("gradients", ZH) == "梯度" and localize_name("activations", ZH) == "激活值"


def test_translator_rules() -> None:
    from vramdesk.core.messages import Message, free, join

    word = Message("test.rules.word", "big")()
    sentence = Message("test.rules.sentence", "a {size} one on the {gpu}: {n:,} tokens")
    t = Translator(
        {"test.rules.word": "大", "test.rules.sentence": "{gpu} 上一个{size}的：{n:,} 个 token"},
        {"load": "加载"},
    )
    one = sentence(size=word, gpu="RTX 4090", n=4096)
    assert one == "a big one on the RTX 4090: 4,096 tokens"
    assert t.text(one) == "RTX 4090 上一个大的：4,096 个 token"  # nested texts translated, names kept, formats kept
    assert t.text(join("; ", one, free("an English note"))) == "RTX 4090 上一个大的：4,096 个 token；an English note"
    unknown = Message("test.rules.unknown", "nothing known about {size}")(size=word)
    assert t.text(unknown) == "nothing known about big" and t.missing(unknown) == ["test.rules.unknown"]
    assert t.text("a plain string (big)") == "a plain string (big)"  # no id: shown as it is
    assert t.name("load") == "加载" and t.name("x") == "x"


def test_the_core_tables_ship_next_to_the_window_table() -> None:
    assert (i18n.i18n_dir() / "zh_CN.names.json").is_file()
    table = core_text.translator(ZH)
    assert table is not None and len(table.messages) > 800 and len(table.names) > 60
    assert not (i18n.i18n_dir() / "zh_CN.core.json").exists()  # the regular-expression tables are gone
