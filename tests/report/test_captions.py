"""The caption of an exported chart: the plan's name, what it is, where it came from."""

from __future__ import annotations

from vramdesk import __version__
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import Scenario
from vramdesk.report.captions import caption, comparison_caption


def _finetune() -> Scenario:
    data = DEFAULT_SCENARIO.model_dump(mode="json")
    data.update(
        name="",
        model={"id": "Qwen/Qwen3-8B"},
        weights="nf4",
        workload={"kind": "finetune", "method": "qlora", "seq_len": 4096, "micro_batch": 2},
        hardware={"gpu": "H100 SXM", "gpu_count": 2},
    )
    return Scenario.model_validate(data)


def test_the_caption_of_a_plan_names_it_and_says_what_it_is() -> None:
    c = caption(DEFAULT_SCENARIO, created="2026-12-02 10:00 UTC")
    assert c.title == DEFAULT_SCENARIO.name
    assert c.subtitle.startswith("Qwen/Qwen3-4B · checkpoint weights · inference (transformers), 512 out")
    assert c.subtitle.endswith("· RTX 4090")
    assert c.source == f"vramdesk {__version__} · 2026-12-02 10:00 UTC"


def test_a_finetune_caption_says_the_method_the_weights_and_the_gpus() -> None:
    c = caption(_finetune())
    assert c.title == "Qwen/Qwen3-8B"  # no name: the model
    assert c.subtitle == "Qwen/Qwen3-8B · NF4 weights · QLoRA fine-tune, 4k seq, micro-batch 2 · 2 x H100 SXM"


def test_a_comparison_caption_counts_and_names_the_plans() -> None:
    c = comparison_caption(["a", "b", "c"])
    assert (c.title, c.subtitle) == ("Comparison of 3 plans", "a · b · c")
