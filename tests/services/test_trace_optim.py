"""Optimizers from their own packages (galore-torch, apollo-torch, adam-mini) traced on tiny configs next to the
estimate: the states the warm-up step makes and the phases of a full fine-tuning step (a Python with torch,
transformers, peft and those packages: VRAMDESK_TRACE_PYTHON). Without it: the request carries the optimizer's
settings, and plans the trace cannot build are refused."""

from __future__ import annotations

import os
from typing import Any

import pytest
from test_trace import CONFIGS

from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.scenario import Scenario
from vramdesk.services import trace as tr

TRACE_PYTHON = os.environ.get("VRAMDESK_TRACE_PYTHON")
needs_torch = pytest.mark.skipif(not TRACE_PYTHON, reason="VRAMDESK_TRACE_PYTHON (a Python with torch) is not set")

FULL = {"kind": "finetune", "method": "full", "seq_len": 256, "precision": "bf16"}
#: |traced - estimated| / traced allowed per phase, and on the optimizer-states row: the traced states are the
#: package's own zeros_like calls, each rounded up to the allocator's 512-byte blocks (Qwen3's 64-element q / k
#: norms: 6 KiB of rounding in 6.6 MB), which the estimate's element count does not round
PHASE_TOLERANCE = 0.06
STATE_TOLERANCE = 0.002


def _scenario(work: dict[str, Any]) -> Scenario:
    return Scenario.model_validate({"model": {"id": "tiny"}, "workload": work})


def test_the_request_carries_the_projection_and_the_model_dims() -> None:
    work = {**FULL, "optimizer": "galore-adamw", "projection_rank": 32, "projection_gap": 50}
    plan = tr.trace_request(_scenario(work), CONFIGS["llama"])["plan"]
    assert (plan["optimizer"], plan["projection_rank"], plan["projection_gap"]) == ("galore-adamw", 32, 50)
    assert plan["model_dims"] == {"dim": 256, "n_heads": 8, "n_kv_heads": 4}


@pytest.mark.parametrize(
    "work",
    [
        {**FULL, "optimizer": "adamw-torchao-8bit"},
        {**FULL, "optimizer": "lomo"},
        {**FULL, "optimizer": "adamw", "optimizer_in_backward": True},
    ],
    ids=["torchao", "lomo", "in-backward"],
)
def test_optimizers_the_child_does_not_build_are_refused(work: dict[str, Any]) -> None:
    with pytest.raises(tr.TraceRunError, match=f"not {work['optimizer']}"):
        tr.trace_request(_scenario(work), CONFIGS["llama"])


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("family", ["llama", "qwen3"])
@pytest.mark.parametrize("optimizer", ["galore-adamw", "apollo", "apollo-mini", "adam-mini"])
def test_package_optimizers_trace_close_to_the_estimate(family: str, optimizer: str) -> None:
    assert TRACE_PYTHON
    config = CONFIGS[family]
    scenario = _scenario({**FULL, "optimizer": optimizer, "projection_rank": 32})
    request = tr.trace_request(scenario, config)
    est = estimate(scenario, model_facts(config, "tiny"), None)
    report = tr.compare(tr.run_child(TRACE_PYTHON, request), est, request["plan"])
    states = next(c for c in report.components if c.name == "optimizer states")
    assert states.estimate is not None
    assert abs(states.traced - states.estimate) <= STATE_TOLERANCE * states.traced, states
    compared = {p.name: p for p in report.phases if p.estimate is not None}
    assert "optimizer step" in compared
    for name, row in compared.items():
        assert row.diff is not None
        assert abs(row.diff) <= PHASE_TOLERANCE, (name, row.diff)
