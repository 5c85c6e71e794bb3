"""DeepSpeed JSON configs become scenario options; bad files name the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vramdesk.services.deepspeed import DeepSpeedConfigError, parse_deepspeed, read_deepspeed

ZERO3_OFFLOAD = {
    "bf16": {"enabled": "auto"},
    "zero_optimization": {
        "stage": 3,
        "offload_optimizer": {"device": "cpu", "pin_memory": True},
        "offload_param": {"device": "cpu", "pin_memory": True},
        "overlap_comm": True,
        "contiguous_gradients": True,
        "reduce_bucket_size": "auto",
        "stage3_prefetch_bucket_size": 50_000_000,
        "stage3_max_live_parameters": 1e9,
    },
    "gradient_accumulation_steps": "auto",
    "train_micro_batch_size_per_gpu": 4,
    "gradient_clipping": "auto",
}


def test_zero3_offload_config() -> None:
    plan = parse_deepspeed(ZERO3_OFFLOAD)
    assert plan.options["zero"] == 3 and plan.options["offload"] == "params"
    assert plan.options["micro_batch"] == 4 and "grad_accum" not in plan.options  # "auto" keeps the scenario's
    assert "precision" not in plan.options  # bf16 "auto" too (it once read as fp32)
    assert plan.buckets["stage3_prefetch_bucket_size"] == 50_000_000


@pytest.mark.parametrize(
    ("sections", "precision"),
    [
        ({"bf16": {"enabled": True}}, "amp-bf16"),
        ({"fp16": {"enabled": True}, "bf16": {"enabled": False}}, "amp-fp16"),
        ({"fp16": {"enabled": False}}, "fp32"),
        ({"fp16": {"enabled": False}, "bf16": {"enabled": "auto"}}, None),
        ({"bf16": {"enabled": "auto"}}, None),
        ({}, None),
    ],
)
def test_precision_sections(sections: dict[str, object], precision: str | None) -> None:
    assert parse_deepspeed(sections).options.get("precision") == precision


def test_precision_and_optimizer() -> None:
    plan = parse_deepspeed(
        {
            "bf16": {"enabled": True},
            "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}},
            "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
        }
    )
    assert plan.options == {
        "mode": "finetune",
        "zero": 2,
        "offload": "optimizer",
        "precision": "amp-bf16",
        "optimizer": "adamw",
    }


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"zero_optimisation": {"stage": 3}}, "zero_optimisation"),
        ({"zero_optimization": {"stage": 3, "offload_params": {}}}, "offload_params"),
        ({"zero_optimization": {"stage": 5}}, "must be 0"),
        ({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}, "needs stage 3"),
        ({"optimizer": {"type": "OneBitLamb"}}, "OneBitLamb"),
        ({"train_micro_batch_size_per_gpu": -1}, "train_micro_batch_size_per_gpu"),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_configs_name_the_key(config: object, message: str) -> None:
    with pytest.raises(DeepSpeedConfigError, match=message):
        parse_deepspeed(config)  # type: ignore[arg-type]


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "ds.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(DeepSpeedConfigError, match=r"ds\.json"):
        read_deepspeed(bad)
    good = tmp_path / "ok.json"
    good.write_text(json.dumps(ZERO3_OFFLOAD), encoding="utf-8")
    assert read_deepspeed(good).options["zero"] == 3


def test_gradient_bucket_settings_reach_the_plan_and_the_estimate() -> None:
    from vramdesk.core.estimate import estimate
    from vramdesk.core.scenario import Scenario
    from vramdesk.services.catalog import default_catalog

    plan = parse_deepspeed(
        {"zero_optimization": {"stage": 2, "reduce_bucket_size": 2e8, "overlap_comm": True}, "bf16": {"enabled": True}}
    )
    assert plan.options["zero_bucket"] == 200_000_000 and plan.options["zero_overlap_comm"] is True
    cat = default_catalog()
    model = "Qwen/Qwen2.5-0.5B"

    def bucket(par: dict[str, object]) -> int:
        s = Scenario.model_validate(
            {"model": {"id": model}, "workload": {"kind": "finetune", "method": "full"}, "parallelism": par}
        )
        est = estimate(s, cat.facts(model), None)
        return next(c.bytes for c in est.phases[-1].components if c.name == "communication buckets")

    # one GPU still holds DeepSpeed's contiguous bucket(s): 2 B per element, two with overlap_comm
    assert bucket({"zero": 2, "zero_bucket": 200_000_000, "zero_overlap_comm": True}) == 2 * 2 * 200_000_000
    assert bucket({"zero": 2}) == 2 * 500_000_000  # DeepSpeed's defaults: 5e8, overlap_comm off below ZeRO-3


def test_settings_that_change_memory_but_are_not_modelled_are_said() -> None:
    plan = parse_deepspeed(
        {
            "zero_optimization": {
                "stage": 3,
                "zero_hpz_partition_size": 8,
                "mics_shard_size": -1,
                "stage3_max_live_parameters": 1e9,
                "stage3_prefetch_bucket_size": "auto",
            }
        }
    )
    said = " ".join(plan.notes)
    assert "zero_hpz_partition_size 8" in said and "stage3_max_live_parameters" in said
    assert "mics" not in said  # -1 is DeepSpeed's "off"
    assert "MiCS" in " ".join(parse_deepspeed({"zero_optimization": {"stage": 3, "mics_shard_size": 8}}).notes)
    # HF's "auto" values are what the integration fills in: nothing to say
    quiet = parse_deepspeed(
        {"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto"}}
    )
    assert quiet.notes == ()


def test_precision_and_batch_sections_deepspeed_would_refuse_or_read_otherwise() -> None:
    # DeepSpeed refuses bf16 and fp16 together, and a micro-batch or accumulation of 0
    for bad, key in (
        ({"bf16": {"enabled": True}, "fp16": {"enabled": True}}, "'bf16' and 'fp16' are both enabled"),
        ({"train_micro_batch_size_per_gpu": 0}, "'train_micro_batch_size_per_gpu' must be at least 1"),
        ({"gradient_accumulation_steps": 0}, "'gradient_accumulation_steps' must be at least 1"),
    ):
        with pytest.raises(DeepSpeedConfigError, match=key):
            parse_deepspeed({"zero_optimization": {"stage": 2}, **bad})
    # no precision section: DeepSpeed alone would train in fp32; the plan keeps its own precision and says so
    plain = parse_deepspeed({"zero_optimization": {"stage": 2}})
    assert "precision" not in plain.options
    assert any("no bf16 / fp16 section" in n for n in plain.notes)
    assert not any("no bf16" in n for n in parse_deepspeed({"fp16": {"enabled": False}}).notes)
