"""Chinese for the texts the core produces (vramdesk/ui/core_text.py): explanations, warnings, the verdict, the
solver's and the advice's texts, the errors of invalid inputs.

The core stays English; the window translates at display time from ``resources/i18n/zh_CN.core.json``. The
sweep (tests/coresweep.py) runs the real estimator (and the solver, the advice and the speed model) over many scenarios,
collects every text the window would show, and checks that after translation no English word is left except a
short list of technical identifiers. A new core phrase without a translation fails here, with the phrase named.
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
    fit = "needs 9.85 GiB of 23.99 GiB total; 14.14 GiB to spare"
    assert localize(fit, ZH) == "需要 9.85 GiB（总显存共 23.99 GiB）；尚余 14.14 GiB"
    short = "needs 30.20 GB per GPU but the RTX 4090 has 25.76 GB free: short by 4.44 GB"
    assert localize(short, ZH) == "每块 GPU 需要 30.20 GB，但 RTX 4090 的空闲显存只有 25.76 GB：还差 4.44 GB"
    assert localize_name("optimizer states", ZH) == "优化器状态" and localize_name("KV cache", ZH) == "KV 缓存"
    assert localize_name("gradients", ZH) == "梯度" and localize_name("activations", ZH) == "激活值"
    assert localize("sequence length 8,192 -> 4,096 + 8-bit AdamW", ZH) == "序列长度 8,192 -> 4,096 + 8 位 AdamW"


def test_translator_rules() -> None:
    t = Translator(
        {
            "names": {"load": "加载"},
            "size": {"big": "大", "size {n}": "大小 {n}"},
            "phrases": {
                "KV cache": "KV 缓存",
                "KV cache pool": "KV 缓存池",
                "load": "加载",
                "{n} x {g} ({x})": "{n} x {g}（{x}）",
                "a {size} one": "一个{size}的",
                "weights {id}": "权重 {id}",
            },
        }
    )
    assert t.text("the KV cache pool") == "the KV 缓存池"  # the longest template wins
    assert t.text("download") == "download"  # whole words only
    assert t.text("2 x RTX 4090 (load)") == "2 x RTX 4090（加载）"  # {g} kept, {x} translated in turn
    assert t.text("a big one") == "一个大的" and t.text("a size 12 one") == "一个大小 12的"
    assert t.text("weights q4_k_m; KV cache") == "权重 q4_k_m；KV 缓存"
    assert t.text("nothing known") == "nothing known" and t.name("load") == "加载" and t.name("x") == "x"


def test_the_core_table_ships_next_to_the_window_table() -> None:
    assert (i18n.i18n_dir() / "zh_CN.core.json").is_file()
    table = core_text.translator(ZH)
    assert table is not None and len(table.tables["phrases"]) > 150
