"""Seeded random fine-tuning plans over the catalog: every plan is either estimated with sane phases or refused
with a message; nothing crashes."""

from __future__ import annotations

import random
from typing import Any, get_args

from pydantic import ValidationError

from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.scenario import Optimizer, Scenario, TrainPrecision
from vramdesk.services.catalog import default_catalog


def _plan(rng: random.Random, models: list[str], gpus: list[str]) -> dict[str, Any]:
    count = rng.choice([1, 1, 2, 4, 8])
    par: dict[str, Any] = {}
    if count > 1:
        par = rng.choice(
            [
                {},
                {"zero": rng.choice([1, 2, 3])},
                {"fsdp": True, "fsdp_strategy": rng.choice(["full", "shard-grad-op", "hybrid"])},
                {"tp": 2},
                {"pp": 2, "zero": rng.choice([0, 1])},
            ]
        )
    return {
        "model": {"id": rng.choice(models)},
        "hardware": {"gpu": rng.choice(gpus), "gpu_count": count},
        "parallelism": par,
        "workload": {
            "kind": "finetune",
            "method": rng.choice(["full", "lora", "qlora"]),
            "micro_batch": rng.choice([1, 2, 4]),
            "seq_len": rng.choice([256, 2048, 8192]),
            "grad_accum": rng.choice([1, 4]),
            "optimizer": rng.choice(get_args(Optimizer)),
            "precision": rng.choice(get_args(TrainPrecision)),
            "grad_checkpointing": rng.random() < 0.7,
            "checkpoint_every": rng.choice([1, 1, 2]),
            "adapter_dtype": rng.choice(["fp32", "base"]),
            "lora_dropout": rng.choice([0.0, 0.05]),
            "chunked_loss": rng.random() < 0.2,
            "activation_offload": rng.random() < 0.1,
        },
    }


def test_random_fine_tuning_plans_are_estimated_or_refused_with_a_reason() -> None:
    cat = default_catalog()
    models = [m.id for m in cat.models()]
    gpus = [g.name for g in cat.gpus()][:12]
    rng = random.Random(20261130)
    estimated = 0
    for _ in range(300):
        plan = _plan(rng, models, gpus)
        try:
            s = Scenario.model_validate(plan)
            est = estimate(s, cat.facts(s.model.id), cat.gpu(s.hardware.gpu))
        except (ValidationError, EstimateError) as err:
            assert str(err).strip(), plan
            continue
        estimated += 1
        names = [p.name for p in est.phases]
        assert all(c.bytes >= 0 for p in est.phases for c in p.components), plan
        assert ("backward (recompute)" in names) is plan["workload"]["grad_checkpointing"], plan
        assert names[0] == "forward" and names[-1] == "optimizer step", plan
        if not est.per_gpu:
            assert est.peak_allocated_bytes == max(p.allocated_bytes for p in est.phases), plan
        assert est.peak_allocated_bytes <= est.peak_reserved_bytes <= est.device_bytes, plan
    assert estimated > 250
