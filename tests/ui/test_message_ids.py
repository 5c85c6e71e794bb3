"""The window translates every core text by its message id (``resources/i18n/zh_CN.messages*.json``, no
pattern matching): every message a module defines has a Chinese template with its placeholders, every text the
window shows carries ids all the way down, and none leaves English words.

(Until the ids, the window matched ~600 regular expressions; the Chinese the ids give was checked against what
they gave, text by text, over the sweep below and the 11,060 distinct texts of the golden cases, before the
expressions were deleted; ``tests/golden`` keeps the Chinese from moving since.)
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from coresweep import sweep
from i18ncheck import CORE_WHITELIST, english_left, without_id

import vramdesk
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.fit import verdict
from vramdesk.core.gpu import GIB, GpuSpec
from vramdesk.core.messages import MESSAGES, Message, Text, fields, join, text
from vramdesk.core.scenario import FinetuneWorkload, Parallelism, Scenario
from vramdesk.core.training_plan import TrainingError, check_plan
from vramdesk.services.catalog import default_catalog
from vramdesk.ui.core_text import localize, message_files, message_table, translator
from vramdesk.ui.presenter import describe_error, fit_message, set_unit

LANG = "zh_CN"
CAT = default_catalog()
GPU_NAMES = {g.name for g in CAT.gpus()}


def _import_everything() -> None:
    """Import every vramdesk module, so that each message is registered in MESSAGES."""
    for info in pkgutil.walk_packages(vramdesk.__path__, "vramdesk."):
        if info.name != "vramdesk.__main__":
            importlib.import_module(info.name)


def test_every_message_has_a_chinese_template_with_the_same_placeholders() -> None:
    _import_everything()
    table = message_table(LANG)
    ours = {mid for mid in MESSAGES if not mid.startswith("test.")}
    missing = sorted(ours - set(table))
    assert not missing, f"{len(missing)} messages without Chinese: {missing}"
    differ = [mid for mid in sorted(ours) if fields(table[mid]) != fields(MESSAGES[mid])]
    assert not differ, f"placeholders differ from the English: {differ}"
    assert not set(table) - set(MESSAGES), f"Chinese for ids no module defines: {sorted(set(table) - set(MESSAGES))}"
    assert len(ours) > 800


def test_no_id_has_two_chinese_templates() -> None:
    import json

    seen: dict[str, str] = {}
    for path in message_files(LANG):
        for mid in json.loads(path.read_text(encoding="utf-8")):
            if not mid.startswith("_"):
                assert mid not in seen, f"{mid} is in {seen.get(mid)} and {path.name}"
                seen[mid] = path.name
    assert len(message_files(LANG)) >= 6


# ------------------------------------------------------------------------------------------ real texts

BUSY = GpuSpec(
    name="RTX 4090",
    memory_bytes=24 * GIB,
    free_bytes=0,
    used_bytes=int(23.7 * GIB),
    device_index=0,
    # as services/nvml words the biggest holder
    held_by=Message("nvml.holder.named", "process {pid} {name} holds {gib:.2f} GiB")(
        pid=4242, name="python3", gib=22.0
    ),
)


def _verdicts() -> list[Text]:
    gpus = [CAT.gpu("RTX 4090"), CAT.gpu("H100 SXM"), CAT.gpu("A100 40GB PCIe")]
    out: list[Text] = []
    for model in ("Qwen/Qwen3-4B", "meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-32B-Instruct"):
        for gpu in gpus:
            for work in ({}, {"engine": "vllm"}, {"kind": "finetune"}):
                scenario = Scenario.model_validate({"model": {"id": model}, "workload": work})
                est = estimate(scenario, CAT.facts(model), gpu)
                assert est.fit is not None
                out.append(est.fit.message)  # type: ignore[arg-type]
    # each sentence the verdict builds
    gpu = gpus[0]
    out += [
        verdict(10 * GIB, gpu),
        verdict(23 * GIB, gpu),
        verdict(30 * GIB, gpu),
        verdict(30 * GIB, gpu, allocated_bytes=20 * GIB),
        verdict(10 * GIB, gpu.model_copy(update={"free_bytes": 20 * GIB})),
        verdict(10 * GIB, gpu, budget_bytes=20 * GIB),
        verdict(3 * GIB, BUSY),
        verdict(3 * GIB, BUSY.model_copy(update={"device_index": None, "held_by": None})),
        verdict(3 * GIB, BUSY.model_copy(update={"used_bytes": 0})),
    ]  # type: ignore[list-item]
    return [m if isinstance(m, Text) else m.message for m in out]  # type: ignore[union-attr]


def _refusals() -> list[Text]:
    llama = CAT.facts("meta-llama/Llama-3.1-8B")
    plans: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("bf16", {"method": "qlora"}, {}),
        ("awq-int4", {"method": "full"}, {}),
        ("nf4", {"method": "full"}, {}),
        ("auto", {"method": "qlora", "precision": "fp32"}, {}),
        ("auto", {"vision_tower": "trained"}, {}),
        ("auto", {}, {"tp": 3}),
        ("auto", {}, {"fsdp": True, "zero": 2}),
        ("auto", {}, {"offload": "optimizer"}),
        ("auto", {}, {"offload": "params"}),
        ("auto", {}, {"offload": "params", "zero": 2}),
        ("auto", {}, {"pp": 2, "zero": 2}),
        ("auto", {"method": "ia3", "dora": True}, {}),
    ]
    out: list[Text] = []
    for base, work, par in plans:
        with pytest.raises(TrainingError) as info:
            check_plan(llama, FinetuneWorkload(**work), Parallelism(**par), base)
        message = info.value.args[0]
        assert isinstance(message, Text) and message.id.startswith("training.")
        assert str(info.value) == message  # str(err) is the English sentence
        out.append(message)
    work = FinetuneWorkload().model_copy(update={"method": "adapter-x"})
    with pytest.raises(TrainingError) as info:
        check_plan(llama, work, Parallelism())
    out.append(info.value.args[0])
    return out


def test_verdicts_in_chinese() -> None:
    seen = set()
    for message in _verdicts():
        seen.add(message.id or message.parts[0].id)  # type: ignore[union-attr]
        _assert_chinese(message)
    assert {"fit.spare", "fit.tight", "fit.short", "fit.cache_only", "fit.nothing_free.held_by"} <= seen
    gpu = CAT.gpu("RTX 4090")
    assert localize(verdict(10 * GIB, gpu).message, LANG) == "需要 10.00 GiB（总显存共 23.99 GiB）；尚余 13.99 GiB"
    assert localize(verdict(3 * GIB, BUSY).message, LANG) == (
        "GPU 0（RTX 4090）没有空闲显存：其他进程占用 23.70 GiB（进程 4242 python3 占用 22.00 GiB）；"
        "每块 GPU 需要 3.00 GiB"
    )


def test_the_window_verdict_sentence_is_translated_by_id() -> None:
    gpu = CAT.gpu("RTX 4090")
    for unit in ("GB", "GiB"):
        set_unit(unit)
        try:
            for fit in (verdict(n * GIB, gpu, allocated_bytes=a) for n, a in ((10, None), (23, None), (30, None))):
                shown = fit_message(fit)
                assert isinstance(shown, Text) and shown.id.startswith("view.fit.")
                _assert_chinese(shown)
            cache = fit_message(verdict(30 * GIB, gpu, allocated_bytes=20 * GIB))
            assert isinstance(cache, Text) and cache.id == "view.fit.cache_only"
            _assert_chinese(cache)
        finally:
            set_unit("GiB")


def test_refusals_in_chinese() -> None:
    ids = set()
    for message in _refusals():
        ids.add(message.id)
        _assert_chinese(
            message,
            {"meta-llama/Llama-3.1-8B", "--method lora", "vision_tower=trained", "--method ia3", "dora", "adapter-x"},
        )
    assert len(ids) == 12


def test_the_estimate_and_the_window_keep_the_refusal_id() -> None:
    scenario = Scenario.model_validate(
        {
            "model": {"id": "meta-llama/Llama-3.1-8B"},
            "workload": {"kind": "finetune"},
            "parallelism": {"pp": 2, "zero": 2},
            "hardware": {"gpu_count": 2},
        }
    )
    with pytest.raises(EstimateError) as info:
        estimate(scenario, CAT.facts("meta-llama/Llama-3.1-8B"), CAT.gpu("H100 SXM"))
    shown = describe_error(info.value)
    assert isinstance(shown, Text) and shown.id == "training.zero_with_pp"
    assert shown == str(info.value)
    assert localize(shown, LANG).startswith("ZeRO-2 会在数据并行进程间切分梯度")


def test_a_message_without_a_translation_stays_english() -> None:
    untranslated = text("test.no_translation", "{what} per GPU", what=verdict(3 * GIB, CAT.gpu("RTX 4090")).message)
    assert untranslated.id not in message_table(LANG)
    assert localize(untranslated, LANG) == str(untranslated)
    # a join: the translated piece in Chinese, the other one in English
    mixed = join("; ", verdict(10 * GIB, CAT.gpu("RTX 4090")).message, text("test.other", "one more clause"))
    assert localize(mixed, LANG) == "需要 10.00 GiB（总显存共 23.99 GiB）；尚余 13.99 GiB；one more clause"
    # plain strings and texts without an id are shown as they are
    assert localize("needs 3.00 GiB per GPU", LANG) == "needs 3.00 GiB per GPU"
    assert localize(untranslated, "en") == untranslated


# ------------------------------------------------------------------------------------------ the whole sweep


@pytest.fixture(scope="module")
def swept() -> list[tuple[str, str, set[str]]]:
    return [(kind, text, names) for kind, text, names in sweep() if kind not in ("name", "phase")]


def test_every_text_the_window_shows_has_ids_all_the_way_down(swept) -> None:
    left = sorted({piece for _kind, message, _names in swept for piece in without_id(message)})
    assert not left, f"{len(left)} pieces without an id:\n" + "\n".join(left)


def test_every_id_the_window_shows_has_chinese(swept) -> None:
    t = translator(LANG)
    assert t is not None
    missing = sorted({mid for _kind, message, _names in swept for mid in t.missing(message)})
    assert not missing, missing


def _assert_chinese(message: str, names: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    assert isinstance(message, Text) and not without_id(message), message
    zh = localize(message, LANG)
    left = english_left(zh, GPU_NAMES | names, CORE_WHITELIST)
    assert not left, (str(message), zh, left)
