"""vramdesk.core.sweep: axis specs read and checked against the option table, the grid's order, each cell equal to
a direct estimate, and the CSV / JSON writers."""

from __future__ import annotations

import csv
import io
import json

import pytest

from vramdesk.core.estimate import estimate
from vramdesk.core.scenario import Scenario
from vramdesk.core.sweep import (
    MAX_CELLS,
    Axis,
    SweepError,
    axis,
    parse_axis,
    sweep,
)
from vramdesk.report.sweep_table import sweep_csv, sweep_doc, sweep_rows
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
L8 = "meta-llama/Llama-3.1-8B-Instruct"
FACTS = CAT.facts(L8)
RTX = CAT.gpu("RTX 4090")


def plan(**work: object) -> Scenario:
    return Scenario.model_validate({"model": {"id": L8}, "hardware": {"gpu": "RTX 4090"}, "workload": work})


def tune(**work: object) -> Scenario:
    return plan(kind="finetune", **work)


@pytest.mark.parametrize(
    ("spec", "name", "values"),
    [
        ("input_len=1k..8k", "input_len", (1024, 2048, 4096, 8192)),
        ("input_len=1000..5000", "input_len", (1000, 2000, 4000, 5000)),
        ("input-len=1024..32768x4", "input_len", (1024, 3251, 10321, 32768)),
        ("lora_rank=8..32+8", "lora_rank", (8, 16, 24, 32)),
        ("batch=1, 2,4,4,8", "batch", (1, 2, 4, 8)),
        ("gpus=1..3+1", "gpu_count", (1, 2, 3)),
        ("gpu=RTX 4090,H100 SXM", "gpu", ("RTX 4090", "H100 SXM")),
        ("kv_dtype=fp8,auto", "kv_dtype", ("fp8", "auto")),
        ("zero=0,3", "zero", (0, 3)),
        ("enforce_eager=off,on", "enforce_eager", (False, True)),
        ("gpu_memory_utilization=0.5..0.9+0.2", "gpu_memory_utilization", (0.5, 0.7, 0.9)),
        ("weights=bf16,q4_k_m", "weights", ("bf16", "q4_k_m")),
    ],
)
def test_axis_specs(spec: str, name: str, values: tuple[object, ...]) -> None:
    a = parse_axis(spec)
    assert (a.name, a.values) == (name, values)
    assert [type(v) for v in a.values] == [type(v) for v in values]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("batch", "axis 'batch': write it as NAME=VALUES, e.g. batch=1,2,4,8"),
        ("batch=0,1", "axis batch: 0 is less than 1"),
        ("batch=70000", "axis batch: 70000 is more than 65536"),
        ("batch=two", "axis batch: expected whole numbers (1024, 4k), got 'two'"),
        ("batch=1.5", "axis batch: expected whole numbers (1024, 4k), got '1.5'"),
        ("gpu_memory_utilization=0,0.5", "axis gpu_memory_utilization: 0 must be more than 0"),
        ("lora_dropout=0.1,1", "axis lora_dropout: 1 must be less than 1"),
        ("kv_dtype=fp7", "axis kv_dtype: 'fp7' is not one of auto, fp32, bf16, fp16, fp8, int8, q8_0, q4_0"),
        ("enforce_eager=maybe", "axis enforce_eager: 'maybe' is not one of on, off"),
        ("batch=8..1", "axis batch: a range is LO..HI, LO..HIxN (N values) or LO..HI+STEP, with LO <= HI; got '8..1'"),
        (
            "batch=1..8x1",
            "axis batch: a range is LO..HI, LO..HIxN (N values) or LO..HI+STEP, with LO <= HI; got '1..8x1'",
        ),
        ("kv_dtype=a..b", "axis kv_dtype: a range needs a number setting; list the values instead"),
        ("gpu_memory_utilization=0.5..0.9", "axis gpu_memory_utilization: a range of decimals needs xN or +STEP"),
        ("batch=,", "axis batch: no values"),
    ],
)
def test_axis_errors_are_one_line_naming_the_axis(spec: str, message: str) -> None:
    with pytest.raises(SweepError) as err:
        parse_axis(spec)
    assert str(err.value) == message
    assert err.value.args[0].id.startswith("sweep.")


def test_an_unknown_or_list_setting_is_refused_with_the_choices() -> None:
    for spec in ("colour=1,2", "lora_targets=q_proj"):
        with pytest.raises(SweepError, match=r"not a setting a sweep can vary \(choose from weights, engine, .*batch"):
            parse_axis(spec)


def test_the_grid_runs_the_last_axis_fastest_and_each_cell_is_the_estimate() -> None:
    s = plan(input_len=2048)
    result = sweep(s, FACTS, RTX, [parse_axis("input_len=1k..4k"), ("batch", [1, 8, 32])])
    assert result.shape == (3, 3)
    assert [c.values for c in result.cells] == [(i, b) for i in (1024, 2048, 4096) for b in (1, 8, 32)]
    assert [c.index for c in result.cells] == [(i, j) for i in range(3) for j in range(3)]
    for c in result.cells:
        assert c.scenario is not None and c.error is None
        direct = estimate(plan(input_len=c.values[0], batch=c.values[1]), FACTS, RTX)
        assert direct.fit is not None
        assert (c.device_bytes, c.required_bytes, c.peak_allocated_bytes) == (
            direct.device_bytes,
            direct.fit.required_bytes,
            direct.peak_allocated_bytes,
        )
        assert (c.verdict, c.margin_fraction, c.memory_bytes) == (
            direct.fit.verdict,
            direct.fit.margin_fraction,
            RTX.memory_bytes,
        )
    assert result.cell(2, 1).values == (4096, 8)
    # more memory along each axis, and both sides of the boundary are in this grid
    need = [[result.cell(i, j).required_bytes or 0 for j in range(3)] for i in range(3)]
    assert all(row == sorted(row) for row in need) and need[0][0] < need[2][0]
    assert {c.verdict for c in result.cells} >= {"fits", "does not fit"}


def test_fine_tuning_axes_and_a_gpu_axis_resolved_by_the_caller() -> None:
    s = tune(seq_len=2048, mean_seq_len=2048)
    asked: list[str] = []

    def resolve(name: str):
        asked.append(name)
        return CAT.gpu(name)

    result = sweep(s, FACTS, None, [("gpu", ["RTX 4090", "H100 SXM"]), ("seq_len", [512, 1024])], resolve_gpu=resolve)
    assert asked == ["RTX 4090", "H100 SXM"]
    h100 = result.cell(1, 0)
    assert h100.gpu == "H100 SXM" and h100.memory_bytes == CAT.gpu("H100 SXM").memory_bytes
    assert h100.scenario is not None and h100.scenario.hardware.gpu == "H100 SXM"
    # the mean length follows a shorter longest one, as the solver's edits do
    assert h100.scenario.workload.seq_len == 512 and h100.scenario.workload.mean_seq_len == 512
    direct = estimate(h100.scenario, FACTS, CAT.gpu("H100 SXM"))
    assert h100.required_bytes == direct.fit.required_bytes if direct.fit else False
    with pytest.raises(SweepError, match="axis gpu: no GPU named 'Nope'"):
        sweep(s, FACTS, None, [("gpu", ["Nope"])], resolve_gpu=lambda _n: None)


def test_a_cell_the_estimator_refuses_keeps_the_reason() -> None:
    # tensor parallel 3 on one GPU is no valid plan: that cell says why in one line, the others are estimated
    result = sweep(plan(input_len=1024), FACTS, RTX, [("tp", [1, 3])])
    ok, bad = result.cells
    assert ok.verdict is not None and ok.error is None
    assert bad.verdict is None and bad.required_bytes is None and bad.scenario is None
    assert bad.error == "parallelism: tp (3) x pp (1) needs 3 GPUs but hardware.gpu_count is 1"


def test_the_sweeps_limits() -> None:
    s = plan()
    with pytest.raises(SweepError, match="applies to fine-tuning, and this plan is inference"):
        sweep(s, FACTS, RTX, [("seq_len", [512])])
    with pytest.raises(SweepError, match="at most 3 axes, got 4"):
        sweep(s, FACTS, RTX, [("batch", [1]), ("input_len", [1]), ("gpu_count", [1]), ("output_len", [1])])
    with pytest.raises(SweepError, match="axis batch: given twice"):
        sweep(s, FACTS, RTX, [("batch", [1]), ("batch", [2])])
    with pytest.raises(SweepError, match=f"40,000 cells \\(10000 x 4\\) are more than the {MAX_CELLS:,}"):
        sweep(s, FACTS, RTX, [parse_axis("input_len=1..10000+1"), ("batch", [1, 2, 3, 4])])
    with pytest.raises(SweepError, match="needs a GPU"):
        sweep(s, FACTS, None, [("batch", [1])])
    with pytest.raises(SweepError, match="axis batch: 0 is less than 1"):
        sweep(s, FACTS, RTX, [("batch", [0])])


def test_the_writers_give_back_every_cell() -> None:
    s = plan(input_len=2048)
    result = sweep(s, FACTS, RTX, [Axis(name="input_len", values=(1024, 65536)), axis("batch", ["1", "4"])])
    rows = list(csv.DictReader(io.StringIO(sweep_csv(result))))
    assert [(r["input_len"], r["batch"]) for r in rows] == [
        ("1024", "1"),
        ("1024", "4"),
        ("65536", "1"),
        ("65536", "4"),
    ]
    header, _ = sweep_rows(result)
    assert header[:3] == ["input_len", "batch", "gpu"]
    for r, c in zip(rows, result.cells, strict=True):
        assert int(r["required_bytes"]) == c.required_bytes and r["verdict"] == c.verdict
        assert float(r["required_gib"]) == pytest.approx((c.required_bytes or 0) / 2**30, abs=0.001)
        assert int(r["gpu_memory_bytes"]) == RTX.memory_bytes and r["error"] == ""
    doc = json.loads(json.dumps(sweep_doc(result, s)))
    assert doc["axes"] == [{"name": "input_len", "values": [1024, 65536]}, {"name": "batch", "values": [1, 4]}]
    assert doc["shape"] == [2, 2] and doc["model"] == L8
    assert [c["values"] for c in doc["cells"]][1] == {"input_len": 1024, "batch": 4}
    assert doc["cells"][3]["required_bytes"] == result.cells[3].required_bytes
    assert Scenario.model_validate(doc["scenario"]) == s
