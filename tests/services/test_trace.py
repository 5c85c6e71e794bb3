"""``vramdesk trace``'s parent side: the plan as a request, the refusals, and traces of tiny configs of three
families against the estimate (those need a Python with torch, transformers and peft: VRAMDESK_TRACE_PYTHON)."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.scenario import Scenario
from vramdesk.services import trace as tr

TRACE_PYTHON = os.environ.get("VRAMDESK_TRACE_PYTHON")
needs_torch = pytest.mark.skipif(not TRACE_PYTHON, reason="VRAMDESK_TRACE_PYTHON (a Python with torch) is not set")

_COMMON = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 4096}
CONFIGS: dict[str, dict[str, Any]] = {
    "llama": {
        **_COMMON,
        "model_type": "llama",
        "intermediate_size": 688,
        "num_key_value_heads": 4,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
    "qwen3": {
        **_COMMON,
        "model_type": "qwen3",
        "intermediate_size": 768,
        "num_key_value_heads": 4,
        "head_dim": 64,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
    },
    "gpt_neox": {
        **_COMMON,
        "model_type": "gpt_neox",
        "intermediate_size": 1024,
        "max_position_embeddings": 2048,
        "rotary_pct": 0.25,
        "use_parallel_residual": True,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
    },
}
INFERENCE = {"kind": "inference", "input_len": 512, "output_len": 16, "batch": 2}
LORA = {"kind": "finetune", "method": "lora", "seq_len": 512, "lora_rank": 16}


def _scenario(work: dict[str, Any], **extra: Any) -> Scenario:
    return Scenario.model_validate({"model": {"id": "tiny"}, "workload": work, **extra})


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_an_inference_plan_becomes_a_request() -> None:
    request = tr.trace_request(_scenario(INFERENCE), CONFIGS["llama"])
    assert request["plan"] == {
        "mode": "inference",
        "batch": 2,
        "input_len": 512,
        "decode_steps": tr.DECODE_STEPS,
        "dtype": "bf16",
        "attention": "sdpa",
    }
    compared = tr.compared_scenario(_scenario(INFERENCE), request)
    assert compared.workload.output_len == tr.DECODE_STEPS  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("work", "extra", "words"),
    [
        ({**INFERENCE, "engine": "vllm"}, {}, "the trace runs transformers; this plan's engine is vllm"),
        (
            {**LORA, "method": "qlora"},
            {},
            "the trace runs full fine-tuning, LoRA, IA3, prompt tuning, p-tuning, prefix tuning, LN tuning and VeRA; "
            "this plan uses qlora",
        ),
        (
            {**LORA, "optimizer": "adamw-8bit"},
            {},
            "adamw, adamw-fused, adamw-forloop, sgd or adafactor, not adamw-8bit",
        ),
        (INFERENCE, {"weights": "int4"}, "the trace runs unquantised bf16 / fp16 / fp32 weights, not int4"),
        (INFERENCE, {"hardware": {"gpu_count": 2}}, "this plan spreads over 2 GPUs"),
    ],
)
def test_plans_the_trace_does_not_run_are_refused(work: dict[str, Any], extra: dict[str, Any], words: str) -> None:
    with pytest.raises(tr.TraceRunError, match=words):
        tr.trace_request(_scenario(work, **extra), CONFIGS["llama"])


def test_too_many_decode_steps() -> None:
    with pytest.raises(tr.TraceRunError, match="between 1 and the output length 16"):
        tr.trace_request(_scenario(INFERENCE), CONFIGS["llama"], decode_steps=17)


def test_not_an_executable(tmp_path: Path) -> None:
    with pytest.raises(tr.TraceRunError, match=r"is not an executable Python interpreter"):
        tr.run_child(tmp_path / "nope", {})


def test_a_python_without_torch_is_named() -> None:
    """This test run's own interpreter has no torch (vramdesk never depends on it): the child says which are missing."""
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("this interpreter has torch")
    request = tr.trace_request(_scenario(INFERENCE), CONFIGS["llama"])
    with pytest.raises(tr.TraceRunError) as err:
        tr.run_child(sys.executable, request)
    assert str(err.value) == (
        f"{sys.executable} has no torch, transformers, peft: pip install torch transformers peft in that environment"
    )


def test_a_child_that_crashes_gives_its_last_line(tmp_path: Path) -> None:
    python = _script(tmp_path, 'echo "Traceback ..." >&2; echo "RuntimeError: boom" >&2; exit 1')
    with pytest.raises(tr.TraceRunError) as err:
        tr.run_child(python, {})
    assert str(err.value) == f"the trace failed in {python}: RuntimeError: boom"


def test_a_child_that_exits_silently(tmp_path: Path) -> None:
    python = _script(tmp_path, "exit 9")
    with pytest.raises(tr.TraceRunError, match=r"failed in .*: exit status 9$"):
        tr.run_child(python, {})


def test_a_garbled_answer(tmp_path: Path) -> None:
    python = _script(tmp_path, 'echo \'{"format": "other"}\'')
    with pytest.raises(tr.TraceRunError, match=r"not what vramdesk expects \(format is not vramdesk-trace-child/1\)"):
        tr.run_child(python, {})


def test_the_workspace_goes_in_before_the_first_compute_phase() -> None:
    events = [["p", "load"], ["a", 0, 1000], ["p", "prefill"], ["a", 1, 600], ["f", 1], ["p", "end"]]
    out = tr.with_workspaces(events, [8 << 20])
    assert out[2] == ["a", "workspace0", 8 << 20]
    assert tr.live_at_markers(out) == {"load": 0, "prefill": 1024 + (8 << 20), "end": 1024 + (8 << 20)}


def _traced(family: str, work: dict[str, Any]) -> tr.TraceReport:
    assert TRACE_PYTHON
    config = CONFIGS[family]
    scenario = _scenario(work)
    request = tr.trace_request(scenario, config)
    compared = tr.compared_scenario(scenario, request)
    est = estimate(compared, model_facts(config, "tiny"), None)
    return tr.compare(tr.run_child(TRACE_PYTHON, request), est, request["plan"])


#: the largest |difference| per phase seen on these tiny configs (the backward of a checkpointed LoRA step is the
#: estimate's loosest phase at this size: its recompute rule is fitted on real sizes)
TOLERANCE = {"load": 0.01, "prefill": 0.03, "decode": 0.01, "forward": 0.01, "loss + start of backward": 0.02}


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(CONFIGS))
@pytest.mark.parametrize("work", [INFERENCE, LORA], ids=["inference", "lora"])
def test_tiny_models_trace_close_to_the_estimate(family: str, work: dict[str, Any]) -> None:
    report = _traced(family, work)
    compared = {p.name: p for p in report.phases if p.estimate is not None}
    expected = (
        {"load", "prefill", "decode"}
        if work is INFERENCE
        else {"forward", "loss + start of backward", "backward", "optimizer step"}
    )
    assert set(compared) == expected
    for name, row in compared.items():
        assert row.diff is not None
        assert abs(row.diff) <= TOLERANCE.get(name, 0.06), (name, row.diff)
    # the parts the trace tells apart are the estimate's to the last block
    for comp in report.components:
        assert comp.estimate is not None
        assert abs(comp.traced - comp.estimate) <= 4096, comp
    assert report.peak_reserved >= report.peak_allocated > 0


@needs_torch
def test_remote_code_architectures_are_refused() -> None:
    assert TRACE_PYTHON
    request = {
        "config": {"model_type": "my_remote_arch", "auto_map": {"AutoModel": "x.Y"}},
        "plan": {"mode": "inference"},
    }
    with pytest.raises(tr.TraceRunError) as err:
        tr.run_child(TRACE_PYTHON, request)
    assert str(err.value) == (
        "the trace refused this plan: model_type 'my_remote_arch' is not an architecture transformers ships "
        "(it would need trust_remote_code, which the trace never uses)"
    )
