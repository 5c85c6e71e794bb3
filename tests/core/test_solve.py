"""Inverse solvers: every answer is the boundary (fits at the answer, not one step beyond), and a
configuration that does not fit gets at least one checked change that makes it fit."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from vramdesk.cli import main
from vramdesk.core.estimate import estimate
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import SolveError, maximize
from vramdesk.core.solve_changes import _sharding_candidates, smallest_changes
from vramdesk.core.solve_gpus import gpu_counts, gpu_layout, minimize_gpus
from vramdesk.services.catalog import default_catalog

LLAMA8 = "meta-llama/Llama-3.1-8B"


def scen(model: str, gpu: str, weights: str = "auto", gpus: int = 1, **work: Any) -> Scenario:
    return Scenario.model_validate(
        {"model": {"id": model}, "weights": weights, "workload": work, "hardware": {"gpu": gpu, "gpu_count": gpus}}
    )


def verdict(s: Scenario) -> str:
    cat = default_catalog()
    est = estimate(s, cat.facts(s.model.id), cat.gpu(s.hardware.gpu or ""))
    assert est.fit is not None
    return est.fit.verdict


def with_work(s: Scenario, **kw: Any) -> Scenario:
    data = s.model_dump(mode="json")
    data["workload"].update(kw)
    return Scenario.model_validate(data)


CASES = [
    (scen(LLAMA8, "RTX 4090"), "input_len"),
    (scen(LLAMA8, "RTX 4090", engine="vllm"), "input_len"),
    (scen(LLAMA8, "RTX 4090", "q4_k_m", engine="llamacpp", input_len=8192), "batch"),
    (scen(LLAMA8, "RTX 4090", input_len=8192), "batch"),
    (scen("Qwen/Qwen3-4B", "H100 SXM", kind="finetune", method="full"), "seq_len"),
    (scen(LLAMA8, "RTX 4090", kind="finetune", method="qlora", seq_len=4096), "micro_batch"),
    (scen(LLAMA8, "RTX 4090", kind="finetune", method="lora"), "lora_rank"),
    (scen("Qwen/Qwen3-30B-A3B", "H100 SXM", engine="vllm"), "batch"),
]


@pytest.mark.parametrize(("s", "field"), CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_maximize_answer_is_the_boundary(s: Scenario, field: str) -> None:
    cat = default_catalog()
    r = maximize(s, cat.facts(s.model.id), cat.gpu(s.hardware.gpu or ""), field)
    assert r.value is not None and r.value >= 1
    assert verdict(with_work(s, **{field: r.value})) == "fits"
    if r.limited_by == "memory":
        assert verdict(with_work(s, **{field: r.value + 1})) != "fits"
        assert r.above is not None and r.above.value == r.value + 1
    assert r.evaluations < 80


def test_allow_tight_moves_the_boundary_up() -> None:
    s = scen(LLAMA8, "RTX 4090")
    cat = default_catalog()
    f, g = cat.facts(LLAMA8), cat.gpu("RTX 4090")
    strict = maximize(s, f, g, "input_len")
    loose = maximize(s, f, g, "input_len", allow_tight=True)
    assert strict.value is not None and loose.value is not None
    assert loose.value > strict.value
    assert verdict(with_work(s, input_len=loose.value)) in ("fits", "tight")
    assert verdict(with_work(s, input_len=loose.value + 1)) == "does not fit"


def test_maximize_is_monotone_in_the_gpu() -> None:
    cat = default_catalog()
    f = cat.facts(LLAMA8)
    values = []
    for gpu in ("RTX 4080", "RTX 4090", "RTX 5090", "A100 80GB SXM"):
        r = maximize(scen(LLAMA8, gpu, "q4_k_m", engine="llamacpp"), f, cat.gpu(gpu), "batch")
        assert r.value is not None
        values.append(r.value)
    assert values == sorted(values) and values[0] < values[-1]


def test_model_context_limit_is_reported() -> None:
    cat = default_catalog()
    s = scen(LLAMA8, "H200 SXM", "q4_k_m", engine="llamacpp")
    r = maximize(s, cat.facts(LLAMA8), cat.gpu("H200 SXM"), "input_len")
    assert r.limited_by == "model context"
    assert r.value == 131072 - 512


def test_nothing_fits_and_wrong_field() -> None:
    cat = default_catalog()
    s = scen("meta-llama/Llama-3.1-70B", "RTX 4090")
    r = maximize(s, cat.facts(s.model.id), cat.gpu("RTX 4090"), "batch")
    assert r.value is None and r.limited_by == "nothing fits"
    with pytest.raises(SolveError):
        maximize(s, cat.facts(s.model.id), cat.gpu("RTX 4090"), "seq_len")
    with pytest.raises(SolveError):
        maximize(
            scen(LLAMA8, "RTX 4090", kind="finetune", method="full"),
            cat.facts(LLAMA8),
            cat.gpu("RTX 4090"),
            "lora_rank",
        )


@pytest.mark.parametrize(
    "s",
    [
        scen("meta-llama/Llama-3.1-70B", "H100 SXM", engine="vllm"),
        scen("meta-llama/Llama-3.1-70B", "RTX 4090"),
        scen(LLAMA8, "H100 SXM", kind="finetune", method="full", grad_checkpointing=False, seq_len=8192),
    ],
)
def test_minimize_gpus_is_the_boundary(s: Scenario) -> None:
    cat = default_catalog()
    gpu = cat.gpu(s.hardware.gpu or "")
    r = minimize_gpus(s, cat.facts(s.model.id), gpu)
    assert r.gpus is not None and r.gpus > 1 and r.scenario is not None
    assert verdict(Scenario.model_validate(r.scenario)) == "fits"
    heads = cat.facts(s.model.id).arch.layers[0].n_heads
    # every layout with fewer GPUs does not fit (beyond one machine a fine-tune counts whole machines)
    for per, machines in gpu_counts(s, r.gpus - 1):
        if s.workload.kind == "inference" and s.workload.engine == "vllm" and heads % per:
            continue  # vLLM refuses a tensor-parallel size that does not divide the heads
        below, _ = gpu_layout(s, per, machines)
        assert verdict(below) != "fits"


def test_a_fine_tune_beyond_one_machine_counts_whole_machines() -> None:
    """A 405B full fine-tune needs more than one 8-GPU server: the answer is in machines of 8 (the issue's
    '8 x 8 H100' kind of plan), not 121 GPUs in one box."""
    cat = default_catalog()
    s = Scenario.model_validate(
        {
            "model": {"id": "meta-llama/Llama-3.1-405B"},
            "workload": {"kind": "finetune", "method": "full"},
            "hardware": {"gpu": "H100 SXM", "gpu_count": 8},
            "parallelism": {"zero": 3},
        }
    )
    r = minimize_gpus(s, cat.facts(s.model.id), cat.gpu("H100 SXM"), max_gpus=256)
    assert r.gpus is not None and r.scenario is not None and r.machines > 1
    assert r.gpus == 8 * r.machines and r.scenario["hardware"] == {
        "gpu": "H100 SXM",
        "gpu_count": 8,
        "nodes": r.machines,
    }
    assert f"{r.machines} machines x 8" in r.message
    assert verdict(Scenario.model_validate(r.scenario)) == "fits"
    fewer, _ = gpu_layout(s, 8, r.machines - 1)
    assert verdict(fewer) != "fits"


def test_llamacpp_fewest_gpus_uses_the_layer_split() -> None:
    cat = default_catalog()
    s = scen("meta-llama/Llama-3.1-70B", "RTX 4090", "q4_k_m", engine="llamacpp")
    r = minimize_gpus(s, cat.facts(s.model.id), cat.gpu("RTX 4090"))
    assert r.gpus is not None and r.gpus >= 2 and r.below is not None and r.below.verdict != "fits"
    assert r.at_value is not None and r.at_value.verdict == "fits"


def test_solver_headroom_moves_the_boundary() -> None:
    cat = default_catalog()
    s = scen(LLAMA8, "RTX 4090", input_len=4096)
    f = cat.facts(LLAMA8)
    default = maximize(s, f, cat.gpu("RTX 4090"), "input_len", respect_model_context=False)
    none = maximize(s, f, cat.gpu("RTX 4090"), "input_len", respect_model_context=False, headroom_fraction=0.0)
    strict = maximize(s, f, cat.gpu("RTX 4090"), "input_len", respect_model_context=False, headroom_fraction=0.2)
    assert strict.value is not None and default.value is not None and none.value is not None
    assert strict.value < default.value < none.value


def test_non_fitting_configs_get_a_change_that_fits() -> None:
    cat = default_catalog()
    cases = [
        scen(LLAMA8, "RTX 4090", kind="finetune", method="full"),
        scen("meta-llama/Llama-3.1-70B", "RTX 4090", "q4_k_m", engine="llamacpp"),
        scen(LLAMA8, "RTX 4090", input_len=100_000, batch=4),
        scen(LLAMA8, "RTX 3060 12GB", engine="vllm"),
        scen("Qwen/Qwen3-32B", "RTX 4090", engine="vllm"),
    ]
    for s in cases:
        assert verdict(s) != "fits"
        res = smallest_changes(s, cat.facts(s.model.id), cat.gpu(s.hardware.gpu or ""))
        assert res.current_verdict == "does not fit"
        assert res.options, s
        # the options on the plan's GPUs first, then those that add GPUs; each group cheapest first
        tiers = [o.more_gpus > 0 for o in res.options]
        assert tiers == sorted(tiers)
        for tier in (False, True):
            costs = [o.cost for o in res.options if (o.more_gpus > 0) is tier]
            assert costs == sorted(costs)
        for o in res.options:
            assert verdict(Scenario.model_validate(o.scenario)) == "fits"
            assert o.summary and o.changes


def test_changes_prefer_cheap_edits() -> None:
    cat = default_catalog()
    s = scen(LLAMA8, "RTX 4090", kind="finetune", method="full", grad_checkpointing=False, optimizer="adamw")
    res = smallest_changes(s, cat.facts(LLAMA8), cat.gpu("RTX 4090"))
    keys = [c.key for o in res.options for c in o.changes]
    assert "method=lora" in keys
    # parameter offload (speed 8) never outranks LoRA (quality 3)
    first = res.options[0]
    assert all(c.key != "offload=params" for c in first.changes)


def test_fsdp1_lora_is_offered_fsdp2_at_no_cost() -> None:
    """FSDP1 makes a LoRA model's frozen layers keep their inputs; switching to fully_shard costs nothing."""
    cat = default_catalog()
    s = Scenario.model_validate(
        {
            "model": {"id": LLAMA8},
            "workload": {
                "kind": "finetune",
                "method": "lora",
                "lora_targets": ["q", "v"],
                "seq_len": 1536,
                "grad_checkpointing": False,
            },
            "hardware": {"gpu": "RTX 4090", "gpu_count": 2},
            "parallelism": {"fsdp": True},
        }
    )
    res = smallest_changes(s, cat.facts(LLAMA8), cat.gpu("RTX 4090"))
    assert res.current_verdict == "does not fit"
    first = res.options[0]
    assert [c.key for c in first.changes] == ["fsdp_version=2"] and first.cost == 0
    assert Scenario.model_validate(first.scenario).parallelism.fsdp_version == 2
    assert verdict(Scenario.model_validate(first.scenario)) == "fits"
    # a full fine-tune trains every parameter: the version changes nothing there, so it is not offered
    full = s.model_copy(update={"workload": s.workload.model_copy(update={"method": "full"})})
    keys = [c.key for o in smallest_changes(full, cat.facts(LLAMA8), cat.gpu("RTX 4090")).options for c in o.changes]
    assert "fsdp_version=2" not in keys


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


def test_cli_solve_maximize_json() -> None:
    code, text = cli("solve", LLAMA8, "--gpu", "RTX 4090", "--maximize", "input-len", "--json")
    assert code == 0
    doc = json.loads(text)
    assert doc["field"] == "input_len" and doc["value"] > 1000
    assert doc["at_value"]["verdict"] == "fits" and doc["above"]["verdict"] != "fits"
    assert doc["performance"]["decode_tokens_per_s"] > 0


def test_cli_solve_minimize_and_changes_text() -> None:
    code, text = cli("solve", "meta-llama/Llama-3.1-70B", "--engine", "vllm", "--gpu", "H100 SXM", "--minimize", "gpus")
    assert code == 0 and "x H100 SXM" in text
    code, text = cli("solve", LLAMA8, "--mode", "finetune", "--method", "full", "--gpu", "RTX 4090", "--changes")
    assert code == 0 and "LoRA" in text


def test_cli_solve_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = cli("solve", LLAMA8, "--maximize", "batch")
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--gpu" in err
    code, _ = cli("solve", LLAMA8, "--gpu", "RTX 4090", "--maximize", "seq-len")
    err = capsys.readouterr().err
    assert code == 2 and "fine-tuning" in err


def test_cli_estimate_json_performance() -> None:
    code, text = cli("estimate", LLAMA8, "--gpu", "RTX 4090", "--json")
    assert code == 0
    p = json.loads(text)["performance"]
    assert p["decode_tokens_per_s"] > 0 and p["prefill_tokens_per_s"] > 0 and p["bound"]
    code, text = cli("estimate", LLAMA8, "--json")
    assert json.loads(text)["performance"] is None
    code, text = cli("estimate", LLAMA8, "--mode", "finetune", "--gpu", "H100 SXM", "--json")
    p = json.loads(text)["performance"]
    assert p["train_tokens_per_s"] > 0 and p["step_time_s"] > 0


def test_changes_combine_with_a_solver_when_one_edit_is_not_enough() -> None:
    cat = default_catalog()
    s = scen("Qwen/Qwen3-32B", "RTX 4090", engine="vllm")
    res = smallest_changes(s, cat.facts(s.model.id), cat.gpu("RTX 4090"), max_gpus=1)
    assert res.options, "no single GPU option found"
    in_vllm = [o for o in res.options if Scenario.model_validate(o.scenario).workload.engine == "vllm"]
    assert in_vllm and all(len(o.changes) >= 2 for o in in_vllm)  # 4-bit weights alone leave no room for the pool
    assert any(c.key == "weights=awq-int4" for o in in_vllm for c in o.changes)
    for o in res.options:
        assert verdict(Scenario.model_validate(o.scenario)) == "fits"
        assert o.tokens_per_s is not None and o.tokens_per_s > 0


def _plan(gpus: int, parallelism: dict[str, Any]) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"id": LLAMA8},
            "workload": {"kind": "finetune", "method": "full", "precision": "amp-bf16"},
            "hardware": {"gpu": "H100 SXM", "gpu_count": gpus},
            "parallelism": parallelism,
        }
    )


def test_several_gpus_are_offered_more_sharding_before_any_quality_cost() -> None:
    """A full fine-tune that replicates everything on 4 GPUs fits once ZeRO shards the states: the cheapest
    option keeps full fine-tuning (no quality cost), ahead of LoRA."""
    cat = default_catalog()
    s = _plan(4, {})
    res = smallest_changes(s, cat.facts(LLAMA8), cat.gpu("H100 SXM"))
    assert res.current_verdict == "does not fit"
    best = res.options[0]
    assert [c.key for c in best.changes] == ["zero=2"] and best.cost == 1.0
    keys = [o.changes[0].key for o in res.options if len(o.changes) == 1]
    assert keys.index("zero=3") < keys.index("method=lora")
    assert verdict(Scenario.model_validate(best.scenario)) == "fits"


@pytest.mark.parametrize(
    ("gpus", "parallelism", "offered", "not_offered"),
    [
        (4, {"fsdp": True, "fsdp_strategy": "shard-grad-op"}, {"fsdp_strategy=full"}, {"zero=2", "zero=3"}),
        (4, {"pp": 2, "zero": 1}, set(), {"zero=2", "zero=3"}),  # DeepSpeed: ZeRO-2/3 do not go with pipelines
        (1, {}, set(), {"zero=2", "zero=3"}),
    ],
)
def test_sharding_changes_follow_the_plan(
    gpus: int, parallelism: dict[str, Any], offered: set[str], not_offered: set[str]
) -> None:
    keys = {c.change.key for c in _sharding_candidates(_plan(gpus, parallelism))}
    assert offered <= keys and not keys & not_offered


def test_a_fine_tune_that_needs_more_machines_is_offered_them() -> None:
    """A 70B full fine-tune does not fit 8 H100s even with ZeRO-3; besides LoRA and offload, the changes name the
    machines that would hold it as planned (each extra GPU costs 2, so they rank last)."""
    cat = default_catalog()
    s = Scenario.model_validate(
        {
            "model": {"id": "meta-llama/Llama-3.1-70B"},
            "workload": {"kind": "finetune", "method": "full", "precision": "amp-bf16"},
            "hardware": {"gpu": "H100 SXM", "gpu_count": 8},
            "parallelism": {"zero": 3},
        }
    )
    res = smallest_changes(s, cat.facts(s.model.id), cat.gpu("H100 SXM"))
    machines = [o for o in res.options if len(o.changes) == 1 and "machines x 8 x H100 SXM" in o.summary]
    assert machines, [o.summary for o in res.options]
    (more,) = machines
    planned = Scenario.model_validate(more.scenario)
    assert planned.hardware.gpu_count == 8 and planned.hardware.nodes > 1
    assert more.cost == 2.0 * 8 * (planned.hardware.nodes - 1)
    assert verdict(planned) == "fits"


def test_when_only_length_cuts_fit_three_changes_that_keep_the_length_are_tried() -> None:
    """Llama-3.1-8B LoRA at 8,192 tokens x 4 without checkpointing on a 4090: alone or in pairs only a cut to
    about 160 tokens fits; checkpointing + chunked cross-entropy + micro-batch 1 keeps the length (tight)."""
    cat = default_catalog()
    s = Scenario.model_validate(
        {
            "model": {"id": "meta-llama/Llama-3.1-8B"},
            "workload": {
                "kind": "finetune",
                "method": "lora",
                "seq_len": 8192,
                "micro_batch": 4,
                "grad_checkpointing": False,
            },
            "hardware": {"gpu": "RTX 4090"},
        }
    )
    facts, gpu = cat.facts("meta-llama/Llama-3.1-8B"), cat.gpu("RTX 4090")
    tight = smallest_changes(s, facts, gpu, allow_tight=True)
    keys = [{c.key for c in o.changes} for o in tight.options]
    assert {"grad_checkpointing", "chunked_loss", "micro_batch"} in keys
    best = tight.options[0]
    assert {c.key for c in best.changes} == {"grad_checkpointing", "chunked_loss", "micro_batch"}
    # the extra search adds no further length cuts: every three-change option keeps the sequence
    strict = smallest_changes(s, facts, gpu)
    for o in strict.options:
        if len(o.changes) == 3:
            assert all(c.key != "seq_len" for c in o.changes)
    assert any(len(o.changes) == 1 and o.changes[0].key == "seq_len" for o in strict.options)
