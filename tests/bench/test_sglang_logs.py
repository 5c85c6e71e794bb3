"""The SGLang scorer (benchmarks/serving/score_sglang.py): every row's ``vramdesk:`` block states a scenario or why
there is none, the scorer builds the scenario it states, reads the logged figures under its keys, and prints a row
per run and the summary."""

from __future__ import annotations

import io
from types import ModuleType
from typing import Any

import pytest
import yaml
from benchload import ROOT, load_benchmark

SGLANG = ROOT / "benchmarks" / "serving" / "sglang_logs.yaml"
BLOCK = {"model", "gpu", "weights", "kv_dtype", "chunked_prefill_size", "stand_in", "not_expressible"}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    data = yaml.safe_load(SGLANG.read_text(encoding="utf-8"))
    assert isinstance(data, list) and data
    return data


@pytest.fixture(scope="module")
def scorer() -> ModuleType:
    mod: ModuleType = load_benchmark("score_sglang", "serving")
    return mod


def test_every_row_states_a_scenario_or_why_not(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        block = row["vramdesk"]
        assert set(block) == BLOCK, row["id"]
        assert bool(block["model"]) == (block["not_expressible"] is None), row["id"]
        if block["model"]:
            assert block["gpu"], row["id"]


def test_the_scenario_is_the_rows_settings_and_the_shortest_request(
    scorer: ModuleType, rows: list[dict[str, Any]]
) -> None:
    qwq = next(r for r in rows if r["id"] == "sgl-llmsinclouds-qwq-32b-4xl4")
    opts = scorer.scenario_options(qwq)
    assert opts["engine"] == "sglang" and opts["gpu"] == "L4" and opts["tp"] == opts["gpus"] == 4
    assert opts["mem_fraction_static"] == 0.85 and opts["chunked_prefill_size"] == 2048
    assert (opts["batch"], opts["input_len"], opts["output_len"]) == (1, 1, 1)
    # a fraction the server chose is left to SGLang's rule
    auto = next(r for r in rows if r["settings"]["mem_fraction_static"] is None)
    assert "mem_fraction_static" not in scorer.scenario_options(auto)
    # K size + V size is the KV memory where no KV size was printed
    assert scorer.logged_figures(qwq)["kv_gib"] == pytest.approx(qwq["logged"]["k_gib"] + qwq["logged"]["v_gib"])


def test_the_scorer_runs_on_every_row(scorer: ModuleType, rows: list[dict[str, Any]]) -> None:
    scored = scorer.score_rows(rows)
    assert [s.row["id"] for s in scored] == [r["id"] for r in rows]
    for s in scored:
        if s.row["vramdesk"]["not_expressible"]:
            assert s.prediction is None and s.why_not == s.row["vramdesk"]["not_expressible"]
            continue
        assert s.why_not is None and s.prediction is not None, s.why_not
        figures = s.prediction.figures
        assert s.prediction.verdict in {"started", "refused"}
        assert figures["kv_tokens"] and figures["kv_tokens"] > 0 and figures["weights_gib"] > 0
        assert 0 < figures["mem_fraction_static"] < 1
    out = io.StringIO()
    scorer.print_rows(scored, out=out)
    scorer.print_summary(scored, "all rows", out=out)
    text = out.getvalue()
    assert "sgl-llmsinclouds-qwq-32b-4xl4 [started/" in text and "pool tokens 46,611 -> " in text
    assert "not expressible" in text and "verdict agrees with the outcome" in text
