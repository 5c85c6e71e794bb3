"""Physical invariants over seeded random fine-tuning plans: changing one setting in a direction that can only
save memory (checkpointing, a smaller optimizer, offload, more GPUs to shard over) never raises the allocated
peak, and one that can only cost memory (longer sequences, larger micro-batches, a higher LoRA rank) never
lowers it. These found real bugs: a phantom autocast cache under DeepSpeed and FSDP, SGD under ZeRO counting
fp32 weights whole, a tied embedding's gradients missing with accumulation."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Optimizer, Scenario, TrainPrecision
from vramdesk.services.catalog import default_catalog

ADAMW = ("adamw", "adamw-fused", "adamw-forloop", "adamw-torch2.0")
Plan = dict[str, Any]


#: every way of spreading a run the estimator models, each crossed with every precision and method below
SPREADS: list[tuple[int, dict[str, Any]]] = [
    (1, {}),
    (4, {}),
    (4, {"zero": 1}),
    (4, {"zero": 2}),
    (4, {"zero": 3}),
    (4, {"fsdp": True, "fsdp_strategy": "full"}),
    (4, {"fsdp": True, "fsdp_strategy": "shard-grad-op"}),
    (8, {"fsdp": True, "fsdp_strategy": "hybrid"}),
    (2, {"tp": 2}),
    (4, {"pp": 2, "zero": 1}),
]


def _plans(rng: random.Random, models: list[str]) -> list[Plan]:
    plans = []
    for count, par in SPREADS:
        for precision in get_args(TrainPrecision):
            for method in ("full", "lora", "qlora"):
                plans.append(
                    {
                        "model": {"id": rng.choice(models)},
                        "hardware": {"gpu": "H100 SXM", "gpu_count": count},
                        "parallelism": dict(par),
                        "workload": {
                            "kind": "finetune",
                            "method": method,
                            "micro_batch": rng.choice([1, 2, 4]),
                            "seq_len": rng.choice([256, 2048, 8192]),
                            "grad_accum": rng.choice([1, 4]),
                            "optimizer": rng.choice([*ADAMW, *get_args(Optimizer)]),
                            "precision": precision,
                            "grad_checkpointing": rng.random() < 0.5,
                            "adapter_dtype": rng.choice(["fp32", "base"]),
                            "lora_dropout": rng.choice([0.0, 0.05]),
                            "chunked_loss": rng.random() < 0.2,
                        },
                    }
                )
    return plans


def _work(p: Plan) -> dict[str, Any]:
    w: dict[str, Any] = p["workload"]
    return w


def _sharded(p: Plan) -> bool:
    par = p["parallelism"]
    return bool(par.get("zero") == 3 or (par.get("fsdp") and par.get("fsdp_strategy") == "full"))


#: (name, applies to the plan, the changed plan, "up" if the peak may only rise, "down" if it may only fall)
CHANGES: list[tuple[str, Callable[[Plan], bool], Callable[[Plan], None], str]] = [
    ("longer sequences", lambda p: True, lambda p: _work(p).update(seq_len=2 * _work(p)["seq_len"]), "up"),
    ("larger micro-batch", lambda p: True, lambda p: _work(p).update(micro_batch=2 * _work(p)["micro_batch"]), "up"),
    ("more accumulation", lambda p: True, lambda p: _work(p).update(grad_accum=8), "up"),
    ("higher LoRA rank", lambda p: _work(p)["method"] != "full", lambda p: _work(p).update(lora_rank=64), "up"),
    ("LoRA dropout", lambda p: _work(p)["method"] != "full", lambda p: _work(p).update(lora_dropout=0.1), "up"),
    (
        "checkpoint every 2nd layer",
        lambda p: _work(p)["grad_checkpointing"],
        lambda p: _work(p).update(checkpoint_every=2),
        "up",
    ),
    (
        "checkpointing",
        lambda p: not _work(p)["grad_checkpointing"],
        lambda p: _work(p).update(grad_checkpointing=True),
        "down",
    ),
    ("chunked loss", lambda p: not _work(p)["chunked_loss"], lambda p: _work(p).update(chunked_loss=True), "down"),
    ("activation offload", lambda p: True, lambda p: _work(p).update(activation_offload=True), "down"),
    (
        "8-bit AdamW",
        lambda p: _work(p)["optimizer"] in ADAMW,
        lambda p: _work(p).update(optimizer="adamw-8bit"),
        "down",
    ),
    ("SGD", lambda p: _work(p)["optimizer"] in ADAMW, lambda p: _work(p).update(optimizer="sgd"), "down"),
    (
        "optimizer offload",
        lambda p: bool(p["parallelism"].get("zero")),
        lambda p: p["parallelism"].update(offload="optimizer"),
        "down",
    ),
    (
        "twice the GPUs, sharded",
        _sharded,
        lambda p: p["hardware"].update(gpu_count=2 * p["hardware"]["gpu_count"]),
        "down",
    ),
    (
        "a second machine, sharded",
        lambda p: bool(p["parallelism"].get("zero") or p["parallelism"].get("fsdp")),
        lambda p: p["hardware"].update(nodes=2),
        "down",
    ),
]


def _run(plan: Plan) -> Estimate | None:
    cat = default_catalog()
    try:
        s = Scenario.model_validate(plan)
        return estimate(s, cat.facts(s.model.id), cat.gpu(s.hardware.gpu))
    except (ValidationError, EstimateError):
        return None


@pytest.mark.parametrize("seed", [20261130, 7, 31])
def test_one_setting_moves_the_peak_only_its_way(seed: int) -> None:
    models = [m.id for m in default_catalog().models()]
    compared, broken = 0, []
    for plan in _plans(random.Random(seed), models):
        base = _run(plan)
        if base is None:
            continue
        for name, applies, change, direction in CHANGES:
            if not applies(plan):
                continue
            changed = copy.deepcopy(plan)
            change(changed)
            other = _run(changed)
            if other is None:
                continue
            compared += 1
            a, b = base.peak_allocated_bytes, other.peak_allocated_bytes
            # 1 MiB of slack: rounding of per-GPU divisions
            if (b < a - (1 << 20)) if direction == "up" else (b > a + (1 << 20)):
                broken.append(f"{name}: {a / 2**30:.2f} -> {b / 2**30:.2f} GiB for {plan}")
    assert compared > 500
    assert not broken, "\n".join(broken[:5])
