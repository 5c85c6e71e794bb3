"""The solvers' texts (vramdesk/core/solve.py, solve_gpus.py, solve_changes.py), the speed model's assumptions
(performance.py) and the GPU advice (advice.py) carry message ids: built through the real code paths, every piece
of each text has an id (apart from the pieces other modules write: the GPUs of ``hardware_text`` and a weight
format's label), every id has a Chinese template with the same placeholders
(resources/i18n/zh_CN.messages.solve.json), and the Chinese leaves no English word and keeps every number."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import pytest
from i18ncheck import CORE_WHITELIST, english_left, without_id

from vramdesk.core import advice as advice_module
from vramdesk.core import performance as performance_module
from vramdesk.core import performance_moe as performance_moe_module
from vramdesk.core import solve as solve_module
from vramdesk.core import solve_changes as changes_module
from vramdesk.core import solve_gpus as gpus_module
from vramdesk.core import solve_same_gpu as same_gpu_module
from vramdesk.core.advice import advise
from vramdesk.core.estimate import estimate, resolve_format
from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GIB, GpuSpec, hardware_text
from vramdesk.core.messages import MESSAGES, Message, Text, fields
from vramdesk.core.performance import Efficiency, PerformanceError, link_for, performance
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import FIELD_NAMES, SolveError, maximize
from vramdesk.core.solve_changes import _solved_change, smallest_changes
from vramdesk.core.solve_gpus import gpu_layout, minimize_gpus
from vramdesk.services.catalog import default_catalog
from vramdesk.ui.core_text import localize, message_table

LANG = "zh_CN"
CAT = default_catalog()
PREFIXES = ("solve.", "changes.", "gpus.", "speed.", "advice.")
MODULES = (
    solve_module,
    gpus_module,
    changes_module,
    same_gpu_module,
    performance_module,
    performance_moe_module,
    advice_module,
)
Q06, Q4, Q8 = "Qwen/Qwen3-0.6B", "Qwen/Qwen3-4B", "Qwen/Qwen3-8B"
L8, L70 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"
NEXT = "Qwen/Qwen3-Next-80B-A3B-Thinking"
#: words the texts quote as typed (command-line values) or name (hardware), kept as they are in Chinese
KEPT = {"seq-len", "micro-batch", "lora-rank", "input-len", "finetune", "qlora", "lora", "AMD Infinity Fabric"}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*(?:e[-+]\d+)?")


def S(model: str, gpu: str = "H100 SXM", weights: str = "auto", gpus: int = 1, nodes: int = 1, **kw: Any) -> Scenario:
    parallel = kw.pop("parallel", {})
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "weights": weights,
            "workload": kw,
            "hardware": {"gpu": gpu, "gpu_count": gpus, "nodes": nodes},
            "parallelism": parallel,
        }
    )


def F(model: str) -> ModelFacts:
    return CAT.facts(model)


def G(name: str) -> GpuSpec:
    return CAT.gpu(name)


def _for(s: Scenario) -> tuple[ModelFacts, GpuSpec]:
    assert s.hardware.gpu is not None
    return F(s.model.id), G(s.hardware.gpu)


# ------------------------------------------------------------------------------------------ the texts


def _solve_texts() -> Iterator[str]:
    small_vllm = S(Q06, kind="inference", engine="vllm")
    long_prompt = S(Q8, "RTX 4090", kind="inference", input_len=32000)
    lora = S(Q06, kind="finetune", method="lora")
    for s, field, tight in (
        (long_prompt, "input_len", False),  # memory: "(input len 4,403: tight)"
        (long_prompt, "input_len", True),  # "that fits or tight"
        (small_vllm, "input_len", False),  # the model's context limit
        (small_vllm, "batch", False),
        (lora, "lora_rank", False),  # the search limit
        (lora, "seq_len", False),
        (lora, "micro_batch", False),
        (S(Q06, kind="inference", engine="llamacpp", weights="q4_k_m"), "n_gpu_layers", False),
        (S(L70, "RTX 4090", kind="inference"), "input_len", False),  # even 1 does not fit
        (S(Q4, kind="finetune", method="full", precision="amp-bf16"), "seq_len", False),  # even 1 is only tight
        # even 1 is refused: the estimate's error (a training refusal) inside the sentence
        (S(L8, gpus=2, kind="finetune", parallel={"pp": 2, "zero": 2}), "seq_len", False),
    ):
        yield maximize(s, *_for(s), field, allow_tight=tight).message
    # the step beyond the answer refused by an error, and the estimate not monotone (no catalog scenario reaches
    # either): as maximize words them
    batch = FIELD_NAMES["batch"]
    yield solve_module.LIMITED(
        largest=solve_module.LARGEST(name=batch, gpus=1, gpu="H100 SXM", value=1024),
        limit=solve_module.BEYOND_ERROR(
            name=batch, value=1025, error=solve_module.NOT_MONOTONE(field="input_len", value=8)
        ),
    )
    refusals = (
        (S(Q4, kind="finetune"), "input_len"),
        (S(Q4, kind="inference"), "n_gpu_layers"),
        (S(Q4, kind="inference"), "seq_len"),
        (S(Q4, kind="finetune", method="full"), "lora_rank"),
        (S(Q4, kind="inference"), "foo"),
    )
    for s, field in refusals:
        with pytest.raises(SolveError) as info:
            maximize(s, *_for(s), field)
        assert str(info.value) == info.value.args[0]
        yield info.value.args[0]


def _gpu_texts() -> Iterator[str]:
    cases: list[tuple[Scenario, int]] = [
        (S(Q8, "RTX 4090", kind="inference", input_len=32000), 8),  # layers split
        (S(L70, kind="inference", engine="vllm"), 8),  # tensor parallel
        (S(L70, "RTX 4090", kind="inference", engine="vllm"), 3),  # heads % tp 3: none fits, with the error
        (S(L70, "RTX 4090", kind="inference"), 2),  # none fits, with its verdict
        (S(L70, "RTX 4090", kind="inference"), 0),  # nothing tried
        (S(L8, "RTX 4090", kind="finetune", method="full"), 8),  # ZeRO-3
        (S(L8, "RTX 4090", gpus=2, kind="finetune", method="lora", parallel={"fsdp": True}), 8),  # FSDP
        (S(L70, "A100 80GB SXM", kind="finetune", method="full"), 64),  # whole machines
    ]
    for s, most in cases:
        res = minimize_gpus(s, *_for(s), max_gpus=most)
        yield res.message
        yield res.how
    yield gpu_layout(S(Q4, kind="finetune"), 1)[1]  # data parallel


def _change_texts() -> Iterator[str]:
    vllm = S(Q8, kind="inference", engine="vllm", batch=512, input_len=32000)
    full = S(L8, "RTX 4090", kind="finetune", method="full", grad_checkpointing=False)
    fsdp1 = S(L70, "A100 80GB SXM", gpus=8, kind="finetune", method="lora", parallel={"fsdp": True})
    grad_op = S(L8, gpus=8, kind="finetune", method="full", parallel={"fsdp": True, "fsdp_strategy": "shard-grad-op"})
    two = S(L8, gpus=2, kind="finetune", method="full")
    # every candidate edit (those that fit are listed; each is named)
    cands = changes_module._inference_candidates(vllm, vllm.workload, *_for(vllm), False)  # type: ignore[arg-type]
    cands += changes_module._inference_candidates(
        S(Q8, "RTX 4090", kind="inference"),
        S(Q8, "RTX 4090", kind="inference").workload,  # type: ignore[arg-type]
        *_for(S(Q8, "RTX 4090", kind="inference")),
        False,
    )
    for s in (full, fsdp1, grad_op, two):
        cands += changes_module._training_candidates(s, s.workload, *_for(s))  # type: ignore[arg-type]
    yield from (c.change.description for c in cands if c.solve is None)
    # the solver-backed cuts
    for s, field in (
        (S(Q8, "RTX 4090", kind="inference", input_len=32000), "input_len"),
        (vllm, "batch"),
        (S(L70, "RTX 4090", weights="q4_k_m", kind="inference", engine="llamacpp"), "n_gpu_layers"),
        (S(L8, "RTX 4090", kind="finetune", method="lora", seq_len=8192, micro_batch=4), "seq_len"),
        (S(L8, "RTX 4090", kind="finetune", method="qlora", micro_batch=32), "micro_batch"),
    ):
        solved = _solved_change(field, s, s, *_for(s), False)
        assert solved is not None, field
        yield solved[1].description
    # the options: a summary joins its changes, more GPUs among them, an engine switch with its reason, the
    # device_map spill; the cost rule and the ranking (a MoE whose 4-bit GGUF fits whole: all layers on the GPU)
    for s in (
        S(L70, "RTX 4090", kind="inference"),
        S("Qwen/Qwen3-30B-A3B", "RTX 4090", kind="inference"),
        S(L8, "RTX 4090", kind="finetune", method="full"),
    ):
        res = smallest_changes(s, *_for(s), limit=10)
        assert res.options
        yield res.rule
        yield res.ranking
        for option in res.options:
            yield option.summary
            yield from (c.description for c in option.changes)
            yield from (c.reason for c in option.changes)


def _checkpoint_facts(model: str) -> ModelFacts:
    """``model`` as read from its checkpoint: the stored tensors price the weights (a local or Hub checkpoint)."""
    facts = F(model)
    stored = tuple(dataclasses.replace(t, stored_bytes=2 * t.numel, stored_dtype="BF16") for t in facts.tensors)
    return dataclasses.replace(facts, checkpoint=stored, _cache={})


def _speed_texts() -> Iterator[str]:
    cases: list[tuple[Scenario, Efficiency | None]] = [
        (S(Q8, "RTX 4090", kind="inference"), None),
        (S("Qwen/Qwen2.5-7B-Instruct-AWQ", "RTX 4090", kind="inference"), None),  # block-quantised
        (S(NEXT, kind="inference"), None),  # MoE, recurrent state
        (S(Q8, gpus=2, kind="inference", engine="vllm", parallel={"tp": 2}), None),  # tensor parallel over NVLink
        (S(Q8, gpus=2, kind="inference", engine="vllm", parallel={"tp": 2}), Efficiency(link_gbps=100)),
        (S(L70, "A100 80GB SXM", gpus=4, kind="inference"), None),  # layers split
        (S(Q8, "Apple M4 Max", weights="q4_k_m", kind="inference", engine="llamacpp"), None),  # no TFLOPS
        # MoE experts in host memory (--n-cpu-moe)
        (
            S(
                "Qwen/Qwen3-30B-A3B",
                "RTX 4090",
                weights="q4_k_m",
                kind="inference",
                engine="llamacpp",
                llamacpp={"n_cpu_moe": 20},
            ),
            None,
        ),
        (
            S(L70, "RTX 4090", weights="q4_k_m", kind="inference", engine="llamacpp", llamacpp={"n_gpu_layers": 40}),
            None,
        ),
        (S(Q8, "RTX 4090", kind="inference", max_memory_gib=6, cpu_memory_gib=20), None),  # device_map
        (S(Q4, kind="finetune", method="full"), None),
        (S(Q4, kind="finetune", method="full", grad_checkpointing=False), None),
        (S(Q4, kind="finetune", method="lora"), None),
        (S(Q4, kind="finetune", method="lora", grad_checkpointing=False), None),
        (S(Q4, kind="finetune", method="qlora"), None),
        (S(Q4, "RTX 4090", kind="finetune", method="full", precision="fp32", grad_checkpointing=False), None),
        (S(L8, gpus=4, kind="finetune", method="full", grad_accum=8, parallel={"pp": 4}), None),
        (S(L8, gpus=2, kind="finetune", method="full"), None),  # data parallel
        (S(L8, gpus=2, kind="finetune", method="full", parallel={"tp": 2}), None),
        (S(L70, "A100 80GB SXM", gpus=8, kind="finetune", method="full", parallel={"zero": 3}), None),
        (S(L70, gpus=8, nodes=2, kind="finetune", method="full", parallel={"zero": 3}), None),  # the network
        (S(L70, "A100 80GB SXM", gpus=8, kind="finetune", parallel={"zero": 2, "offload": "optimizer"}), None),
        (S(L70, "A100 80GB SXM", gpus=8, kind="finetune", parallel={"zero": 3, "offload": "params"}), None),
    ]
    for s, eff in cases:
        facts, gpu = _for(s)
        yield from performance(estimate(s, facts, gpu), s, facts, gpu, eff).assumptions
    # the weights as the checkpoint stores them
    s = S(Q8, "RTX 4090", kind="inference")
    facts = _checkpoint_facts(Q8)
    yield from performance(estimate(s, F(Q8), G("RTX 4090")), s, facts, G("RTX 4090")).assumptions
    # QLoRA in fp32 (the estimate refuses it; the speed model words it)
    qlora = S(Q4, kind="finetune", method="qlora")
    fp32 = qlora.model_copy(update={"workload": qlora.workload.model_copy(update={"precision": "fp32"})})
    yield from performance(estimate(qlora, *_for(qlora)), fp32, *_for(qlora)).assumptions
    # every link
    for name in ("B200", "H100 SXM", "H100 NVL", "A100 80GB SXM", "V100 32GB SXM", "MI300X", "RTX 5090", "RTX 4090"):
        yield link_for(GpuSpec(name=name, memory_bytes=80 * GIB))[2]
    # GPUs without the figures
    for s, gpu in (
        (S(Q8, "RTX 4090", kind="inference"), GpuSpec(name="Custom GPU", memory_bytes=24 * GIB)),
        (S(Q4, "Apple M4 Max", kind="finetune"), G("Apple M4 Max")),
    ):
        with pytest.raises(PerformanceError) as info:
            performance(estimate(s, F(s.model.id), gpu), s, F(s.model.id), gpu)
        assert str(info.value) == info.value.args[0]
        yield info.value.args[0]


def _advice_texts() -> Iterator[str]:
    for s, gpus in (
        (S(L70, "RTX 4090", kind="inference"), ["RTX 4090", "H100 SXM"]),
        (S(Q4, "Apple M4 Max", kind="finetune"), ["Apple M4 Max"]),  # no training speed: the note says why
    ):
        for row in advise(s, F(s.model.id), [G(g) for g in gpus], max_gpus=2):
            yield row.how
            yield row.note


def _foreign_pieces() -> set[str]:
    """Pieces other modules write (no id of theirs yet): the GPUs of hardware_text, the weight formats' labels."""
    out = {hardware_text(g.name, n, m) for g in CAT.gpus() for n in range(1, 9) for m in range(1, 9)}
    for model in (Q06, Q4, Q8, L8, L70, NEXT, "Qwen/Qwen2.5-7B-Instruct-AWQ"):
        for weights in ("auto", "q4_k_m", "nf4", "int8", "fp8", "awq-int4", "q8_0", "q4_0", "bf16"):
            try:
                out.add(str(resolve_format(S(model, weights=weights), F(model).arch)[0].label))
            except ValueError:
                continue
    return out


@pytest.fixture(scope="module")
def texts() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for area, gen in (
        ("solve", _solve_texts),
        ("gpus", _gpu_texts),
        ("changes", _change_texts),
        ("speed", _speed_texts),
        ("advice", _advice_texts),
    ):
        out += [(area, t) for t in gen() if t]
    return out


@pytest.fixture(scope="module")
def foreign() -> set[str]:
    return _foreign_pieces()


def _ids(text: str) -> set[str]:
    if not isinstance(text, Text):
        return set()
    out = {text.id} if text.id else set()
    for part in text.parts:
        out |= _ids(part)
    for value in text.args.values():
        out |= _ids(value) if isinstance(value, Text) else set()
    return out


# ------------------------------------------------------------------------------------------ the checks


def test_the_modules_register_their_messages_and_each_has_its_chinese() -> None:
    defined = {
        v.id
        for module in MODULES
        for v in vars(module).values()
        if isinstance(v, Message) or (isinstance(v, Text) and v.id)
    }
    defined |= {t.id for t in (*solve_module.VERDICT_WORDS.values(), *FIELD_NAMES.values())}
    assert defined <= set(MESSAGES)
    mine = {mid for mid in MESSAGES if mid.startswith(PREFIXES)}
    assert defined == mine, sorted(mine ^ defined)
    table = message_table(LANG)
    for mid in sorted(mine):
        assert mid in table, f"{mid} has no Chinese template"
        assert fields(table[mid]) == fields(MESSAGES[mid]), mid
    own = {k for k in table if k.startswith(PREFIXES)}
    assert own == mine, "Chinese templates for ids no module defines: " + ", ".join(sorted(own - mine))


def test_every_message_is_reached(texts: list[tuple[str, str]]) -> None:
    used = set().union(*(_ids(t) for _area, t in texts))
    mine = {mid for mid in MESSAGES if mid.startswith(PREFIXES)}
    assert mine <= used, "messages no text reached: " + ", ".join(sorted(mine - used))


def test_every_piece_has_an_id(texts: list[tuple[str, str]], foreign: set[str]) -> None:
    for area, text in texts:
        assert isinstance(text, Text), (area, text)
        left = [p for p in without_id(text) if p not in foreign]
        assert left == [], f"[{area}] {text!r}: no id for {left}"


def test_every_id_has_a_chinese_template_with_the_same_placeholders(texts: list[tuple[str, str]]) -> None:
    table = message_table(LANG)
    for area, text in texts:
        for mid in _ids(text):
            assert mid in table, f"[{area}] {text!r}: no Chinese for {mid}"
            assert fields(table[mid]) == fields(MESSAGES[mid]), mid


def test_the_chinese_leaves_no_english_and_keeps_the_numbers(texts: list[tuple[str, str]], foreign: set[str]) -> None:
    ignore = {g.name for g in CAT.gpus()} | {"Custom GPU"} | foreign | KEPT
    for area, text in texts:
        zh = localize(text, LANG)
        # the refusal of an unknown field quotes what was typed and the fields it knows, as they are
        typed = {"foo", *solve_module.FIELDS} if getattr(text, "id", "") == "solve.error.unknown_field" else set()
        assert english_left(zh, ignore | typed, CORE_WHITELIST) == [], f"[{area}] {text!r} -> {zh!r}"
        for number in _NUMBER.findall(str(text)):
            assert number in zh, f"[{area}] {number} lost: {text!r} -> {zh!r}"


def test_the_english_is_the_sentence_as_before() -> None:
    """The ids change nothing in English: spot checks of whole sentences."""
    s = S(Q8, "RTX 4090", kind="inference", input_len=32000)
    r = maximize(s, *_for(s), "input_len", allow_tight=True)
    assert str(r.message).startswith("largest input len that fits or tight on 1 x RTX 4090: ")
    g = minimize_gpus(S(L70, "RTX 4090", kind="inference"), F(L70), G("RTX 4090"), max_gpus=2)
    assert g.message == "does not fit on up to 2 x RTX 4090 (does not fit)"
    assert link_for(G("H100 SXM"))[2] == "NVLink 4 (450 GB/s per direction)"
    assert link_for(G("RTX 4090"))[2] == "PCIe 4.0 x16 (about 25 GB/s achieved, no NVLink)"
    res = smallest_changes(S(L70, "RTX 4090", kind="inference"), F(L70), G("RTX 4090"), limit=3)
    assert all(o.summary == " + ".join(c.description for c in o.changes) for o in res.options)
    assert res.rule.startswith("cost = quality + speed, each 0-10: KV fp8/int8/q8_0 quality 1; ")
