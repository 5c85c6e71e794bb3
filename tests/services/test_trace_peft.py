"""PEFT's methods other than LoRA traced through real peft code on tiny Llama and Qwen3 configs (the trace child
on fake tensors), phase by phase against the estimate; the plans as requests need no torch.

The traces need a Python with torch, transformers and peft (VRAMDESK_TRACE_PYTHON; checked with torch 2.14,
transformers 5.24, peft 0.21.2)."""

from __future__ import annotations

from typing import Any

import pytest
from test_trace import CONFIGS, TRACE_PYTHON, needs_torch  # the same tiny configs as the LoRA traces

from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.peft.ln_tuning import LN_TUNING_TARGETS
from vramdesk.core.scenario import Scenario
from vramdesk.services import trace as tr

#: IA3, prefix tuning and VeRA on GPT-NeoX: the estimate is 8-10 % over the real step in the backward (IA3), 25-28 %
#: in the forward (prefix tuning) and 15 % in the backward (VeRA): a frozen base with GPT-NeoX's plain GELU MLP is
#: priced by the full fine-tune's rule (frozen linears keep their inputs there; CHANGELOG, known gaps). Strict, so a
#: fix shows up
_NEOX_GAP = pytest.mark.xfail(
    strict=True, reason="IA3 / prefix tuning / VeRA on GPT-NeoX: over the trace (plain-MLP frozen base)"
)


def _families(gap: bool = False) -> list[Any]:
    return [pytest.param(f, marks=_NEOX_GAP) if gap and f == "gpt_neox" else f for f in sorted(CONFIGS)]


IA3 = {"kind": "finetune", "method": "ia3", "seq_len": 512}
PROMPT = {"kind": "finetune", "method": "prompt-tuning", "seq_len": 512}
P_TUNING = {"kind": "finetune", "method": "p-tuning", "seq_len": 512}
#: (peft refuses prefix tuning with gradient checkpointing)
PREFIX = {"kind": "finetune", "method": "prefix-tuning", "seq_len": 512, "grad_checkpointing": False}

#: the largest |estimate / trace - 1| per phase. Seen (llama, qwen3): forward +0.4 %, +0.2 %; loss + start of
#: backward +0.8 %, +0.7 %; checkpointed backward +1.1 %, +0.2 % (+1.4 %, -0.8 % with base-dtype vectors);
#: optimizer step -0.03 %, -0.02 %
TOLERANCE = 0.02


def _scenario(work: dict[str, Any]) -> Scenario:
    return Scenario.model_validate({"model": {"id": "tiny"}, "workload": work})


def test_a_prefix_plan_becomes_a_request() -> None:
    plan = tr.trace_request(_scenario({**PREFIX, "num_virtual_tokens": 8, "prefix_projection": True}), {})["plan"]
    assert (plan["method"], plan["num_virtual_tokens"], plan["prefix_projection"]) == ("prefix-tuning", 8, True)
    assert not plan["grad_checkpointing"]
    assert "prefix_projection" not in tr.trace_request(_scenario(PROMPT), {})["plan"]


@needs_torch
def test_the_child_refuses_prefix_tuning_with_checkpointing() -> None:
    assert TRACE_PYTHON
    request = tr.trace_request(_scenario({**PREFIX, "grad_checkpointing": True}), CONFIGS["llama"])
    with pytest.raises(tr.TraceRunError) as err:
        tr.run_child(TRACE_PYTHON, request)
    assert str(err.value) == (
        "the trace refused this plan: prefix tuning does not work with gradient checkpointing (peft refuses it)"
    )


def test_an_ia3_plan_becomes_a_request() -> None:
    request = tr.trace_request(_scenario({**IA3, "adapter_dtype": "base"}), CONFIGS["llama"])
    plan = request["plan"]
    assert plan["method"] == "ia3"
    assert plan["adapter_dtype"] == "base"
    # IA3 takes peft's own default modules for the model type: no LoRA keys reach the child
    assert not [key for key in plan if key.startswith("lora_")]


def _traced(family: str, work: dict[str, Any]) -> tuple[tr.TraceReport, int, int]:
    assert TRACE_PYTHON
    config = CONFIGS[family]
    scenario = _scenario(work)
    request = tr.trace_request(scenario, config)
    est = estimate(tr.compared_scenario(scenario, request), model_facts(config, "tiny"), None)
    answer = tr.run_child(TRACE_PYTHON, request)
    return tr.compare(answer, est, request["plan"]), answer["trainable"], est.params.trainable


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("family", _families(gap=True))
@pytest.mark.parametrize("work", [IA3, {**IA3, "adapter_dtype": "base"}], ids=["fp32-vectors", "base-dtype"])
def test_ia3_traces_close_to_the_estimate(family: str, work: dict[str, Any]) -> None:
    report, traced_trainable, estimated_trainable = _traced(family, work)
    assert traced_trainable == estimated_trainable
    compared = {p.name: p for p in report.phases if p.estimate is not None}
    assert set(compared) == {"forward", "loss + start of backward", "backward", "optimizer step"}
    for name, row in compared.items():
        assert row.diff is not None
        assert abs(row.diff) <= TOLERANCE, (name, row.diff)
    # weights, gradients and optimizer states to the allocator's rounding: each of the 12 vectors (3 in each of the 4
    # layers) and each of its two AdamW states is a tensor of its own rounded up to 512 B, which the estimate
    # counts as the bytes themselves
    for comp in report.components:
        assert comp.estimate is not None
        assert 0 <= comp.traced - comp.estimate <= 2 * 12 * 512, comp


#: prompt tuning and p-tuning, checkpointed: forward -0.2 / -0.4 %, loss + start of backward +0.2 / +0.4 %,
#: optimizer step -0.02 %; the checkpointed backward -5.4 to -7.9 %: the frozen layers' backward leaves the same
#: 2-3 MiB of short-lived gradients out as under LoRA (-5.0 / -5.8 % there, tests/services/test_trace.py), a
#: larger share of these smaller steps
PROMPT_TOLERANCE = {"backward": 0.08}


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("family", _families())
@pytest.mark.parametrize("work", [PROMPT, P_TUNING], ids=["prompt-tuning", "p-tuning"])
def test_prompt_learning_traces_close_to_the_estimate(family: str, work: dict[str, Any]) -> None:
    report, traced_trainable, estimated_trainable = _traced(family, work)
    assert traced_trainable == estimated_trainable
    compared = {p.name: p for p in report.phases if p.estimate is not None}
    assert set(compared) == {"forward", "loss + start of backward", "backward", "optimizer step"}
    for name, row in compared.items():
        assert row.diff is not None
        assert abs(row.diff) <= PROMPT_TOLERANCE.get(name, 0.01), (name, row.diff)
    for comp in report.components:
        assert comp.estimate is not None
        # (one embedding, or p-tuning's 7 encoder tensors, and their two states: 512 B blocks)
        assert 0 <= comp.traced - comp.estimate <= 4096 + 2 * 7 * 512, comp


#: prefix tuning, not checkpointed: the loss + start of backward (the step's peak) +0.3 to +0.6 %; the forward -1.3
#: to -2.7 %: the cache's concatenated keys and values, alive only until the forward returns, are left out; the
#: optimizer step within 0.02 %. The backward phase is not compared: without checkpointing the estimate puts the
#: moment the loss head is freed, with every layer's activations alive, in its loss phase (LoRA's too)
PREFIX_TOLERANCE = {"forward": 0.03, "loss + start of backward": 0.01, "optimizer step": 0.001}


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("family", _families(gap=True))
@pytest.mark.parametrize("projection", [False, True], ids=["embedding", "projection"])
def test_prefix_tuning_traces_close_to_the_estimate(family: str, projection: bool) -> None:
    report, traced_trainable, estimated_trainable = _traced(family, {**PREFIX, "prefix_projection": projection})
    assert traced_trainable == estimated_trainable
    rows = {p.name: p for p in report.phases}
    for name, tolerance in PREFIX_TOLERANCE.items():
        diff = rows[name].diff
        assert diff is not None
        assert abs(diff) <= tolerance, (name, diff)


LN_TUNING = {"kind": "finetune", "method": "ln-tuning", "seq_len": 512}
#: LN tuning, checkpointed (llama, qwen3): forward +0.4 / +0.2 %, loss + start of backward +0.8 / +0.7 %, the
#: checkpointed backward -4.0 / -5.3 % (the frozen layers' short-lived gradients, as under LoRA), optimizer step
#: -0.004 / -0.02 %
LN_TOLERANCE = {"backward": 0.06}


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("family", [f for f in sorted(CONFIGS) if CONFIGS[f]["model_type"] in LN_TUNING_TARGETS])
def test_ln_tuning_traces_close_to_the_estimate(family: str) -> None:
    report, traced_trainable, estimated_trainable = _traced(family, LN_TUNING)
    assert traced_trainable == estimated_trainable
    compared = {p.name: p for p in report.phases if p.estimate is not None}
    assert set(compared) == {"forward", "loss + start of backward", "backward", "optimizer step"}
    for name, row in compared.items():
        assert row.diff is not None
        assert abs(row.diff) <= LN_TOLERANCE.get(name, 0.01), (name, row.diff)
    # the norms' bf16 copies (9 in Llama, 4 in Qwen3), their gradients and two AdamW states to the byte; the
    # weights 1 KiB / 4 KiB over (the allocator's 512 B blocks for the base's small norm weights)
    for comp in report.components:
        assert comp.estimate is not None
        assert 0 <= comp.traced - comp.estimate <= 4096, comp


def test_ln_tuning_without_peft_defaults_is_refused() -> None:
    """GPT-NeoX has no LN-tuning defaults in peft: the estimate refuses it as peft would, naming what peft knows."""
    with pytest.raises(EstimateError, match=r"model type gpt_neox\); peft knows them for: bloom, "):
        estimate(_scenario(LN_TUNING), model_facts(CONFIGS["gpt_neox"], "tiny"), None)


def test_an_ln_tuning_plan_becomes_a_request() -> None:
    plan = tr.trace_request(_scenario(LN_TUNING), CONFIGS["qwen3"])["plan"]
    assert plan["method"] == "ln-tuning"
    assert not [key for key in plan if key.startswith("lora_") or key == "num_virtual_tokens"]


VERA = {"kind": "finetune", "method": "vera", "seq_len": 512, "vera_rank": 64}
#: VeRA, checkpointed (llama, qwen3): forward +0.4 / +0.2 %, loss + start of backward +0.8 / +0.7 %, backward
#: -0.3 / +2.8 %, optimizer step -0.0 %. GPT-NeoX (VeRA on the fused query_key_value): backward +15 %, the IA3 gap
VERA_TOLERANCE = 0.03


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("family", _families(gap=True))
def test_vera_traces_close_to_the_estimate(family: str) -> None:
    report, traced_trainable, estimated_trainable = _traced(family, VERA)
    # lambda_d (rank) and lambda_b (out) per adapted module, as peft counts them
    assert traced_trainable == estimated_trainable
    compared = {p.name: p for p in report.phases if p.estimate is not None}
    assert set(compared) == {"forward", "loss + start of backward", "backward", "optimizer step"}
    for name, row in compared.items():
        assert row.diff is not None
        assert abs(row.diff) <= VERA_TOLERANCE, (name, row.diff)


def test_a_vera_plan_becomes_a_request() -> None:
    plan = tr.trace_request(_scenario(VERA), CONFIGS["llama"])["plan"]
    assert (plan["method"], plan["vera_rank"]) == ("vera", 64)
    assert not [key for key in plan if key.startswith("lora_")]
