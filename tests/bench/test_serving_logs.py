"""The public vLLM / SGLang start-up logs (benchmarks/serving): the tables load, every row names its source and
the fields the scorer needs, the numbers are in plausible units, the held-out split is the header's rule, and the
scorer runs."""

from __future__ import annotations

import io
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from benchload import ROOT, load_benchmark

SERVING = ROOT / "benchmarks" / "serving"
VLLM = SERVING / "vllm_logs.yaml"
SGLANG = SERVING / "sglang_logs.yaml"
HELD_OUT_RULE = 'held_out = zlib.crc32(id.encode("utf-8")) % 3 == 0'
OUTCOMES = {"started", "refused"}
SOURCE_KEYS = {"url", "repo", "ref", "author", "date", "kind", "locator"}
VLLM_SETTINGS = {"tp", "pp", "max_model_len", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens"}
VLLM_SETTINGS |= {"dtype", "quantization", "weights", "kv_cache_dtype", "enforce_eager", "block_size", "basis"}
VLLM_LOGGED = {"total_gpu_gib", "budget_gib", "cuda_context_gib", "weights_gib", "activation_peak_gib"}
VLLM_LOGGED |= {"non_torch_gib", "available_kv_gib", "kv_tokens", "max_concurrency", "cuda_graph_gib"}


def _rows(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, list) and data
    return data


@pytest.fixture(scope="module")
def vllm_rows() -> list[dict[str, Any]]:
    return _rows(VLLM)


@pytest.fixture(scope="module")
def sglang_rows() -> list[dict[str, Any]]:
    return _rows(SGLANG)


@pytest.fixture(scope="module")
def scorer() -> ModuleType:
    mod: ModuleType = load_benchmark("score_vllm", "serving")
    return mod


def _check_common(row: dict[str, Any], engine: str) -> None:
    rid = row["id"]
    assert row["engine"] == engine, rid
    src = row["source"]
    assert set(src) >= SOURCE_KEYS, rid
    assert str(src["url"]).startswith("https://"), rid
    assert src["author"] and src["date"] and src["locator"], rid
    assert row["outcome"] in OUTCOMES, rid
    assert (row["refusal"] is not None) == (row["outcome"] == "refused"), rid
    assert row["gpu"]["type"] and int(row["gpu"]["count"]) >= 1, rid
    assert isinstance(row["caveats"], list), rid


def test_vllm_rows_name_their_source_and_settings(vllm_rows: list[dict[str, Any]]) -> None:
    ids = [r["id"] for r in vllm_rows]
    assert len(ids) == len(set(ids))
    assert len(vllm_rows) >= 30
    for row in vllm_rows:
        rid = row["id"]
        _check_common(row, "vllm")
        assert row["vllm_version"] and row["version_basis"], rid
        s = row["settings"]
        assert set(s) >= VLLM_SETTINGS, rid
        assert int(s["tp"]) >= 1 and int(s["pp"]) >= 1, rid
        assert int(row["gpu"]["count"]) == int(s["tp"]) * int(s["pp"]), rid
        assert 0 < float(s["gpu_memory_utilization"]) <= 1, rid
        assert 512 <= int(s["max_model_len"]) <= 1_048_576, rid
        assert int(s["max_num_seqs"]) >= 1 and int(s["max_num_batched_tokens"]) >= 16, rid
        assert set(row["logged"]) == VLLM_LOGGED, rid
        expressible = row["not_expressible"] is None
        assert expressible == bool(row["vramdesk_model"]), rid
        if expressible:
            assert row["gpu"]["vramdesk_gpu"], rid


def test_vllm_numbers_are_plausible(vllm_rows: list[dict[str, Any]]) -> None:
    """GiB per GPU, tokens as counts: a figure in bytes, MiB or summed over GPUs would fall outside these bounds."""
    for row in vllm_rows:
        rid, lg = row["id"], row["logged"]
        total = lg["total_gpu_gib"]
        if total is not None:
            assert 8 <= total <= 300, rid
        for key in ("weights_gib", "budget_gib", "cuda_context_gib", "activation_peak_gib", "non_torch_gib"):
            v = lg[key]
            assert v is None or 0 <= v <= 300, (rid, key)
            if v is not None and total is not None:
                assert v <= total, (rid, key)
        assert lg["weights_gib"] is None or lg["weights_gib"] > 0.1, rid
        kv = lg["available_kv_gib"]
        if kv is not None:
            # a negative pool only on a run that then refused to start
            assert -50 < kv <= 300 and (kv > 0 or row["outcome"] == "refused"), rid
        tokens = lg["kv_tokens"]
        assert tokens is None or (isinstance(tokens, int) and tokens > 0), rid
        conc = lg["max_concurrency"]
        assert conc is None or conc > 0, rid
        if tokens is not None and conc is not None:
            # vLLM prints tokens / max_model_len
            assert tokens / row["settings"]["max_model_len"] == pytest.approx(conc, rel=0.02, abs=0.01), rid
        graph = lg["cuda_graph_gib"]
        assert graph is None or -5 < graph < 20, rid


def test_sglang_rows_name_their_source(sglang_rows: list[dict[str, Any]]) -> None:
    assert len(sglang_rows) >= 5
    for row in sglang_rows:
        rid = row["id"]
        _check_common(row, "sglang")
        assert row["sglang_version"] and row["version_basis"], rid
        assert set(row["settings"]) >= {"tp", "dp", "mem_fraction_static", "context_length", "kv_cache_dtype", "basis"}
        frac = row["settings"]["mem_fraction_static"]
        assert frac is None or 0 < frac <= 1, rid
        lg = row["logged"]
        assert lg["kv_tokens"] is None or (isinstance(lg["kv_tokens"], int) and lg["kv_tokens"] > 0), rid
        for key in ("weights_gib", "avail_before_load_gib", "k_gib", "v_gib", "kv_gib", "avail_after_pool_gib"):
            assert lg.get(key) is None or 0 <= lg[key] <= 300, (rid, key)


@pytest.mark.parametrize("path", [VLLM, SGLANG], ids=["vllm", "sglang"])
def test_held_out_split_is_the_header_rule(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    assert HELD_OUT_RULE in header
    rows = _rows(path)
    for row in rows:
        assert row["held_out"] is (zlib.crc32(row["id"].encode("utf-8")) % 3 == 0), row["id"]
    assert 0 < sum(r["held_out"] for r in rows) < len(rows) or len(rows) < 3


def test_scorer_runs_on_three_rows(scorer: ModuleType, vllm_rows: list[dict[str, Any]]) -> None:
    picked = [r for r in vllm_rows if r["vramdesk_model"]][:3]
    scored = scorer.score_rows(picked)
    assert [s.row["id"] for s in scored] == [r["id"] for r in picked]
    for s in scored:
        assert s.why_not is None and s.prediction is not None, s.why_not
        assert s.prediction.verdict in OUTCOMES
        assert s.prediction.figures["weights_gib"] and s.prediction.figures["available_kv_gib"] is not None
    out = io.StringIO()
    scorer.print_report(scored, "three rows", out=out)
    text = out.getvalue()
    assert "available KV" in text and "verdict agrees with the outcome" in text
    assert all(scorer.held_out(r["id"]) == r["held_out"] for r in picked)
