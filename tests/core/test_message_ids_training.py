"""The fine-tuning texts carry message ids (vramdesk/core/training*.py, parallel.py, lora.py, optimizers.py): the
component explanations, the warnings, the step-segment note and the refusals passed on from the LoRA targets, each
built through the real estimate, are translated by id into Chinese (resources/i18n/zh_CN.messages.training.json)
with no English left and every number kept.
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import pytest
from i18ncheck import CORE_WHITELIST, english_left, without_id
from qwen1config import QWEN7B

from vramdesk.core import (
    lora,
    optimizers,
    parallel,
    training_activations,
    training_plan,
    training_state,
    training_text,
    training_transients,
)
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import ModelFacts, model_facts
from vramdesk.core.messages import MESSAGES, Message, Text, fields
from vramdesk.core.optimizers import blockwise
from vramdesk.core.peft import common as peft_common
from vramdesk.core.peft import ia3 as peft_ia3
from vramdesk.core.peft import ln_tuning as peft_ln_tuning
from vramdesk.core.peft import prompts as peft_prompts
from vramdesk.core.peft import vera as peft_vera
from vramdesk.core.scenario import FinetuneWorkload, Parallelism, Scenario
from vramdesk.core.training import training_phases
from vramdesk.core.training_plan import TrainingError, check_plan
from vramdesk.services.catalog import default_catalog
from vramdesk.ui.core_text import localize, message_table

LANG = "zh_CN"
CAT = default_catalog()
MODULES: tuple[ModuleType, ...] = (
    blockwise,
    lora,
    optimizers,
    parallel,
    peft_common,
    peft_ia3,
    peft_ln_tuning,
    peft_prompts,
    peft_vera,
    training_activations,
    training_plan,
    training_state,
    training_text,
    training_transients,
)
PREFIXES = ("training.", "parallel.", "lora.", "optimizer.", "peft.")
L8, Q4, Q15 = "meta-llama/Llama-3.1-8B", "Qwen/Qwen3-4B", "Qwen/Qwen2.5-1.5B-Instruct"
GEMMA, MOE, PYTHIA, MLA = (
    "google/gemma-2-2b-it",
    "Qwen/Qwen3-30B-A3B",
    "EleutherAI/pythia-410m",
    "deepseek-ai/DeepSeek-V3",
)
#: the Qwen v1 config as a local file reads: its own loss keeps the logits in 16 bits
QWEN1 = model_facts(QWEN7B, "Qwen/Qwen-7B")

#: (model, workload, parallelism, GPUs, frozen base): between them every sentence of the fine-tuning estimate
PLANS: list[tuple[str, dict[str, Any], dict[str, Any], int, str]] = [
    (L8, {"method": "full"}, {}, 1, "auto"),
    (L8, {"method": "full", "optimizer": "adamw-8bit", "grad_checkpointing": False}, {}, 1, "auto"),
    (L8, {"method": "full", "optimizer": "adafactor", "seq_len": 512}, {}, 1, "auto"),
    (L8, {"method": "full", "optimizer": "adamw-torch2.0"}, {}, 1, "auto"),
    (L8, {"method": "full", "optimizer": "adamw-fused"}, {}, 1, "auto"),
    (L8, {"method": "full", "optimizer": "adamw-forloop"}, {}, 1, "auto"),
    (L8, {"method": "full", "optimizer": "sgd", "precision": "fp32"}, {}, 1, "auto"),
    (L8, {"method": "full", "optimizer": "lion", "chunked_loss": True}, {}, 1, "auto"),
    (L8, {"method": "lora", "trainer": "unsloth"}, {}, 1, "auto"),
    (L8, {"method": "lora", "trainer": "litgpt"}, {}, 1, "auto"),
    (L8, {"method": "full", "precision": "amp-bf16"}, {}, 1, "auto"),
    (L8, {"method": "full", "grad_accum": 4}, {}, 1, "auto"),
    (Q15, {"method": "full"}, {}, 1, "auto"),
    (L8, {"method": "full"}, {}, 2, "auto"),
    (L8, {"method": "full"}, {"zero": 3}, 8, "auto"),
    (L8, {"method": "full"}, {"zero": 2, "offload": "optimizer", "zero_overlap_comm": True}, 8, "auto"),
    (L8, {"method": "full", "grad_accum": 4}, {"zero": 3, "offload": "params"}, 8, "auto"),
    (L8, {"method": "full", "optimizer": "sgd", "grad_accum": 2}, {"zero": 2}, 8, "auto"),
    (L8, {"method": "full", "optimizer": "adamw-8bit"}, {"zero": 3}, 8, "auto"),
    (L8, {"method": "full"}, {"fsdp": True, "fsdp_strategy": "shard-grad-op"}, 8, "auto"),
    (L8, {"method": "full"}, {"fsdp": True, "fsdp_strategy": "hybrid"}, 8, "auto"),
    (L8, {"method": "lora"}, {"fsdp": True, "fsdp_version": 2}, 4, "auto"),
    (L8, {"method": "lora"}, {"fsdp": True, "fsdp_version": 1}, 4, "auto"),
    (L8, {"method": "full"}, {"pp": 2}, 2, "auto"),
    (L8, {"method": "full", "grad_checkpointing": False}, {"tp": 2}, 2, "auto"),
    (L8, {"method": "lora"}, {}, 1, "auto"),
    (L8, {"method": "lora", "grad_checkpointing": False}, {}, 1, "auto"),
    (L8, {"method": "lora", "adapter_dtype": "base"}, {}, 1, "auto"),
    (L8, {"method": "lora", "adapter_dtype": "base", "precision": "amp-bf16"}, {}, 1, "auto"),
    (L8, {"method": "lora", "precision": "amp-bf16"}, {}, 1, "auto"),
    (L8, {"method": "lora"}, {"zero": 2}, 2, "auto"),
    (
        Q15,
        {
            "method": "lora",
            "modules_to_save": ("embed", "lm_head"),
            "lora_bias": "all",
            "dora": True,
            "lora_dropout": 0.1,
        },
        {},
        1,
        "auto",
    ),
    (L8, {"method": "lora", "checkpoint_every": 2, "mean_seq_len": 900, "micro_batch": 4}, {}, 1, "auto"),
    (L8, {"method": "lora", "activation_offload": True, "attention": "eager"}, {}, 1, "auto"),
    (GEMMA, {"method": "lora", "attention": "eager"}, {}, 1, "auto"),
    (GEMMA, {"method": "full"}, {"zero": 3}, 8, "auto"),
    (MOE, {"method": "lora", "grad_checkpointing": False, "seq_len": 1024}, {}, 1, "auto"),
    (PYTHIA, {"method": "full", "grad_checkpointing": False}, {}, 1, "auto"),
    (MLA, {"method": "full", "grad_checkpointing": False}, {}, 1, "auto"),
    (Q4, {"method": "qlora", "optimizer": "paged-adamw-32bit", "grad_checkpointing": False}, {}, 1, "auto"),
    (Q4, {"method": "qlora"}, {"fsdp": True}, 2, "auto"),
    (L8, {"method": "lora"}, {}, 1, "gptq-int4"),
    (L8, {"method": "lora", "grad_checkpointing": False}, {}, 1, "awq-int4"),
    ("Qwen/Qwen3.5-4B", {"method": "lora", "vision_tower": "trained", "grad_accum": 4}, {}, 1, "auto"),
    ("Qwen/Qwen3.5-4B", {"method": "lora"}, {}, 1, "auto"),
    (QWEN1.model_id, {"method": "lora", "precision": "fp16"}, {"zero": 2}, 2, "auto"),
    (L8, {"method": "ia3"}, {}, 1, "auto"),
    (Q4, {"method": "ia3", "adapter_dtype": "base", "modules_to_save": ("lm_head",)}, {}, 1, "auto"),
    (L8, {"method": "prompt-tuning"}, {}, 1, "auto"),
    (L8, {"method": "p-tuning", "num_virtual_tokens": 32}, {}, 1, "auto"),
    (Q4, {"method": "prefix-tuning", "grad_checkpointing": False}, {}, 1, "auto"),
    (Q4, {"method": "prefix-tuning", "grad_checkpointing": False, "prefix_projection": True}, {}, 1, "auto"),
    (L8, {"method": "full", "block_training": "lisa"}, {}, 1, "auto"),
    (Q15, {"method": "full", "block_training": "badam", "active_layers": 2}, {}, 1, "auto"),
    (L8, {"method": "ln-tuning"}, {}, 1, "auto"),
    (Q4, {"method": "vera", "vera_rank": 128}, {}, 1, "auto"),
    ("bigscience/bloom-560m", {"method": "ln-tuning"}, {}, 1, "auto"),
    (GEMMA, {"method": "ln-tuning", "precision": "amp-bf16"}, {}, 1, "auto"),
]


def _facts(model_id: str) -> ModelFacts:
    return QWEN1 if model_id == QWEN1.model_id else CAT.facts(model_id)


def _run_texts(model_id: str, work: dict[str, Any], par: dict[str, Any], gpus: int, base: str) -> list[str]:
    facts = _facts(model_id)
    run = training_phases(facts, FinetuneWorkload(**work), Parallelism(**par), gpus, base)
    out: list[str] = [c.explain for stage in [run.phases, *run.stages] for p in stage for c in p.components]
    out += run.warnings
    if run.step_segments_text:
        out.append(run.step_segments_text)
    return out


def _refusal(model_id: str, **work: Any) -> Text:
    with pytest.raises(TrainingError) as info:
        check_plan(_facts(model_id), FinetuneWorkload(**work), Parallelism())
    message = info.value.args[0]
    assert isinstance(message, Text)
    return message


@pytest.fixture(scope="module")
def texts() -> list[tuple[str, set[str]]]:
    """Every text of the plans, once, with the names to leave out of the English check (the model, what it names
    as typed: lora_bias=all, the LoRA short names)."""
    seen: dict[str, tuple[str, set[str]]] = {}
    for model_id, work, par, gpus, base in PLANS:
        for t in _run_texts(model_id, work, par, gpus, base):
            names = {model_id, "lora_bias=all"}
            if t.id == "attention.eager_fallback":  # the model type, as transformers names it
                names.add(str(t.args["model_type"]))
            if "block_training" in work:  # the methods' and the trainer's own names
                names |= {"LISA", "LMFlow", "BAdam"}
            if "trainer" in work:  # a trainer's fixed settings are named as the command line spells them
                names |= {str(work["trainer"]), *str(t.args.get("settings", "")).split(", ")} - {""}
            if work.get("method") == "vera":  # the vectors' names, as peft spells them
                names |= {"VeRA", "lambda_d", "lambda_b"}
            if work.get("method") == "ln-tuning":  # the norms' module names, as peft's defaults spell them
                names |= set(peft_ln_tuning.LN_TUNING_TARGETS[_facts(model_id).arch.model_type])
            seen.setdefault(str(t), (t, names))
    for model_id, model_type, target in ((L8, "llama", "foo"), (PYTHIA, "gpt_neox", "bar")):
        t = _refusal(model_id, lora_targets=(target, "q"))
        modules = set(str(t.args["modules"]).split(", "))  # the model's own module names, as it has them
        seen.setdefault(str(t), (t, {model_id, model_type, target, "gate", "up", "down", *modules}))
    # peft's methods: a model type without default targets (the types named as peft has them), a quantised base
    olmo = "allenai/OLMo-2-1124-7B"
    for method in ("ia3", "ln-tuning", "vera"):
        t = _refusal(olmo, method=method)
        seen.setdefault(str(t), (t, {olmo, "olmo2", "VERA", *str(t.args["known"]).split(", ")}))
    with pytest.raises(TrainingError) as info:
        check_plan(_facts(L8), FinetuneWorkload(method="ia3"), Parallelism(), "nf4")
    seen.setdefault(str(info.value), (info.value.args[0], {L8}))
    t = _refusal(L8, method="prefix-tuning")
    seen.setdefault(str(t), (t, {L8}))
    for model_id in (MLA, "Qwen/Qwen3-Next-80B-A3B-Thinking"):
        t = _refusal(model_id, method="prefix-tuning", grad_checkpointing=False)
        seen.setdefault(str(t), (t, {model_id}))
    # block-wise training sharded, or with more layers than the model has
    for work, par, gpus in (({"active_layers": 99}, {}, 1), ({}, {"tp": 2}, 2)):
        with pytest.raises(TrainingError) as info:
            training_phases(
                _facts(L8), FinetuneWorkload(method="full", block_training="badam", **work), Parallelism(**par), gpus
            )
        seen.setdefault(str(info.value), (info.value.args[0], {L8, "BAdam"}))
    # the per-token rule of a Gated DeltaNet layer (the last layer of the catalog's hybrid models is full attention)
    arch = CAT.facts("Qwen/Qwen3-Next-80B-A3B-Thinking").arch
    linear = next(layer for layer in arch.layers if layer.linear is not None)
    seen.setdefault("linear", (training_activations._layer_bytes_per_token(arch, linear, False)[1], set()))
    return list(seen.values())


def _defined_ids() -> set[str]:
    ids = set()
    for module in MODULES:
        for value in vars(module).values():
            if isinstance(value, Message) or (isinstance(value, Text) and value.id):
                ids.add(value.id)
            elif isinstance(value, dict):
                ids |= {v.id for v in value.values() if isinstance(v, Text) and v.id}
    return ids


def _ids(t: str) -> set[str]:
    if not isinstance(t, Text):
        return set()
    out = {t.id} if t.id else set()
    for part in t.parts:
        out |= _ids(part)
    for value in t.args.values():
        out |= _ids(value) if isinstance(value, Text) else set()
    return out


def _own_pieces_without_id(t: str) -> list[str]:
    """without_id, less the weight-format label that the frozen base's sentence embeds as that module gives it."""
    if isinstance(t, Text) and t.id in ("training.weights.frozen_base", "training.weights.frozen_base.method"):
        label = t.args["format"]
        assert isinstance(label, Text) and (label.id or label.args.get("table") == "phrases")
        return [p for name, v in t.args.items() if name != "format" for p in without_id(v) if isinstance(v, Text)]
    if isinstance(t, Text) and t.parts:
        return [p for part in t.parts for p in _own_pieces_without_id(part)]
    if isinstance(t, Text) and t.id:
        return [p for v in t.args.values() if isinstance(v, Text) for p in _own_pieces_without_id(v)]
    pieces: list[str] = without_id(t)
    return pieces


NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


# ------------------------------------------------------------------------------------------ the catalog


def test_every_message_has_a_chinese_template_with_the_same_placeholders() -> None:
    table = message_table(LANG)
    ids = _defined_ids()
    assert len(ids) > 120
    assert all(i.startswith(PREFIXES) for i in ids)
    for mid in sorted(ids):
        assert mid in table, f"{mid} has no Chinese template"
        assert fields(table[mid]) == fields(MESSAGES[mid]), mid


def test_every_message_is_reached_by_a_plan(texts: list[tuple[str, set[str]]]) -> None:
    used = set().union(*(_ids(t) for t, _ in texts))
    # (the check_plan refusals are reached in tests/ui/test_message_ids.py)
    refusals = {v.id for v in vars(training_plan).values() if isinstance(v, Message)}
    assert sorted(_defined_ids() - refusals - used) == []


# ------------------------------------------------------------------------------------------ the texts


def test_the_texts_have_ids_through_and_through(texts: list[tuple[str, set[str]]]) -> None:
    for t, _names in texts:
        assert isinstance(t, Text), t
        assert _own_pieces_without_id(t) == [], str(t)
        assert _ids(t) <= set(message_table(LANG)), str(t)


def test_the_chinese_leaves_no_english_and_keeps_the_numbers(texts: list[tuple[str, set[str]]]) -> None:
    for t, names in texts:
        zh = localize(t, LANG)
        assert zh != t and re.search("[\u4e00-\u9fff]", zh), str(t)
        assert english_left(zh, names, CORE_WHITELIST) == [], (str(t), zh)
        english, chinese = str(t), zh
        for name in names:
            english, chinese = english.replace(name, " "), chinese.replace(name, " ")
        assert sorted(NUMBER.findall(english)) == sorted(NUMBER.findall(chinese)), (str(t), zh)


def test_the_english_is_what_the_estimate_has_always_written() -> None:
    # a shard note and the offload notes after the weights' own sentence, "; " between the clauses
    (weights,) = {
        c.explain
        for p in training_phases(
            _facts(L8), FinetuneWorkload(method="full"), Parallelism(zero=3, offload="params"), 8
        ).phases
        for c in p.components
        if c.name == "weights"
    }
    assert weights == (
        "8,030,261,248 parameters x 2 B (DeepSpeed's 16-bit working copy); per GPU with 8 GPUs (dp 8 x tp 1 x pp 1, "
        "ZeRO-3); optimizer states (and the step) on the CPU, parameters on the CPU, gathered layer by layer"
    )
    assert isinstance(weights, Text)
    assert [p.id for p in weights.parts if isinstance(p, Text)] == [
        "parallel.deepspeed.weights",
        "parallel.per_gpu.sharded",
        "",
    ]
    assert localize(weights, LANG) == (
        "8,030,261,248 个参数 x 2 B（DeepSpeed 的 16 位工作副本）；"
        "每块 GPU（共 8 块 GPU：dp 8 x tp 1 x pp 1，ZeRO-3）；"
        "优化器状态（及其更新步）在 CPU 上，参数在 CPU 上，逐层聚合"
    )


def test_the_estimate_keeps_the_ids_of_warnings_and_refusals() -> None:
    scenario = Scenario.model_validate(
        {"model": {"id": L8}, "workload": {"kind": "finetune", "method": "lora", "grad_accum": 4}}
    )
    est = estimate(scenario, _facts(L8), CAT.gpu("RTX 4090"))
    ids = {w.id if isinstance(w, Text) else "" for w in est.warnings}
    assert {"training.warn.varying_lengths", "training.warn.grad_accum"} <= ids
    refusal = _refusal(L8, lora_targets=("foo",))
    assert refusal.id == "lora.targets_not_found"
    assert localize(refusal, LANG).startswith(f"在 {L8}（llama）中找不到 LoRA 目标 foo；已知的简称：q, k, v, o")
