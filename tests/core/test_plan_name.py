"""A plan's generated name, and the rule that it follows the plan until the user types one."""

from __future__ import annotations

from typing import Any

import pytest

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.plan_name import has_generated_name, plan_name, renamed, tokens_text
from vramdesk.core.scenario import Scenario


def S(**data: Any) -> Scenario:
    return Scenario.model_validate({"model": {"id": "Qwen/Qwen3-8B"}, **data})


@pytest.mark.parametrize(
    ("data", "name"),
    [
        ({}, "Qwen3-8B"),
        ({"hardware": {"gpu": "RTX 4090"}}, "Qwen3-8B on an RTX 4090"),
        ({"hardware": {"gpu": "T4"}}, "Qwen3-8B on a T4"),
        ({"hardware": {"gpu": "H100 SXM", "gpu_count": 8}}, "Qwen3-8B on 8 x H100 SXM"),
        (
            {"weights": "awq-int4", "workload": {"engine": "vllm", "input_len": 7680, "batch": 8}},
            "Qwen3-8B AWQ-INT4, vLLM, 7.5k prompt, batch 8",
        ),
        (
            {"weights": "q4_k_m", "workload": {"engine": "llamacpp", "input_len": 8192}, "hardware": {"gpu": "L4"}},
            "Qwen3-8B Q4_K_M, llama.cpp, 8k prompt on an L4",
        ),
        (
            {
                "workload": {"kind": "finetune", "method": "qlora", "seq_len": 4096, "micro_batch": 2},
                "hardware": {"gpu": "H100 SXM", "gpu_count": 8, "nodes": 2},
                "parallelism": {"zero": 3},
            },
            "Qwen3-8B QLoRA, 4k seq, micro-batch 2, ZeRO-3 on 2 machines x 8 x H100 SXM",
        ),
        (
            {"workload": {"kind": "finetune", "method": "full"}, "parallelism": {"fsdp": True}},
            "Qwen3-8B full fine-tune, 2k seq, FSDP",
        ),
    ],
)
def test_plan_names(data: dict[str, Any], name: str) -> None:
    assert plan_name(S(**data)) == name


def test_token_counts_read_as_a_name_says_them() -> None:
    assert [tokens_text(n) for n in (500, 1024, 7680, 8192, 32768, 100_000)] == [
        "500",
        "1k",
        "7.5k",
        "8k",
        "32k",
        "97.7k",
    ]


def test_the_first_start_has_a_generated_name() -> None:
    assert has_generated_name(DEFAULT_SCENARIO) and DEFAULT_SCENARIO.name == "Qwen3-4B on an RTX 4090"


def test_a_generated_name_follows_the_plan_and_a_typed_one_stays() -> None:
    before = S(hardware={"gpu": "RTX 4090"})
    generated = before.model_copy(update={"name": plan_name(before)})
    after = S(hardware={"gpu": "H100 SXM", "gpu_count": 2})
    assert renamed(generated, after).name == "Qwen3-8B on 2 x H100 SXM"
    typed = before.model_copy(update={"name": "my plan"})
    assert renamed(typed, after.model_copy(update={"name": "my plan"})).name == "my plan"
    assert renamed(before, after).name is None  # no name: none is invented (the window shows the model)


def test_a_generated_name_always_fits_a_scenario() -> None:
    """A local model's name is its folder's; a model id of 1,000 characters still gives a valid name."""
    local = Scenario.model_validate({"model": {"id": "/data/models/my-llama/config.json"}})
    assert plan_name(local) == "my-llama"
    huge = Scenario.model_validate(
        {"model": {"id": "owner/" + "x" * 990}, "hardware": {"gpu": "H100 SXM", "gpu_count": 8}}
    )
    name = plan_name(huge)
    assert len(name) <= 200 and name.endswith("on 8 x H100 SXM")
    Scenario.model_validate({**huge.model_dump(), "name": name})  # the scenario takes it
