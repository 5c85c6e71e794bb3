"""benchmarks/serving/ollama_logs.yaml, the public Ollama server logs of issue 20: every row names its source, the
run's GPUs, model and settings, its figures are copied as Ollama and llama.cpp print them, its vramdesk block names
a catalog model, GPU and release band, the held-out split follows the fixed rule of the file's header, and
score_ollama.py scores every row (no figure is asserted: the scores are a measurement)."""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import pytest
import yaml
from benchload import ROOT, load_benchmark

from vramdesk.core.engines.ollama import BANDS
from vramdesk.services.catalog import default_catalog

LOGS = ROOT / "benchmarks" / "serving" / "ollama_logs.yaml"
DATA: dict[str, Any] = yaml.safe_load(LOGS.read_text(encoding="utf-8"))
ROWS: list[dict[str, Any]] = DATA["rows"]

FIELDS = {"id", "source", "ollama_version", "version_from", "gpus", "model", "settings", "logged", "vramdesk"}
FIELDS |= {"held_out", "caveat"}
SOURCE_FIELDS = {"url", "kind", "repo", "thread", "author", "date", "where"}
SETTINGS = {"ctx_size", "parallel", "num_ctx_set", "kv_cache_type", "flash_attention", "gpu_overhead", "num_gpu"}
SETTINGS |= {"command"}
VRAMDESK = {"model", "weights", "gpu", "gpus", "free", "ollama_version", "num_ctx", "num_parallel", "num_gpu"}
VRAMDESK |= {"kv_cache_type", "flash_attention", "gpu_overhead_mib", "expressible"}
ESTIMATE = {"available", "required_full", "required_partial", "kv", "allocations", "weights_total", "graph_full"}
ESTIMATE |= {"graph_partial"}
SIZE = re.compile(r"^[0-9]+(\.[0-9]+)? (B|KiB|MiB|GiB|TiB)$")
#: the device names llama.cpp gives its buffers
DEVICE = re.compile(r"^(CUDA\d+|CUDA_Host|CPU|CPU_Mapped)$")


@pytest.fixture(scope="module")
def scorer() -> ModuleType:
    return load_benchmark("score_ollama", "serving")


def _catalog_models() -> set[str]:
    return {m.id for m in default_catalog().models()}


def _catalog_gpus() -> set[str]:
    return {g.name for g in default_catalog().gpus()}


def test_there_are_rows_and_their_ids_are_unique() -> None:
    ids = [r["id"] for r in ROWS]
    assert len(ids) >= 12
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9.\-]+", i) for i in ids)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_every_row_names_its_source_and_the_run(row: dict[str, Any]) -> None:
    assert set(row) >= FIELDS, FIELDS - set(row)
    src = row["source"]
    assert set(src) >= SOURCE_FIELDS, SOURCE_FIELDS - set(src)
    assert src["kind"] in {"issue", "pull", "discussion"}
    path = {"issue": "issues", "pull": "pull", "discussion": "discussions"}[src["kind"]]
    assert src["url"] == f"https://github.com/{src['repo']}/{path}/{src['thread']}"
    assert isinstance(src["thread"], int) and src["author"] and src["where"]
    assert re.fullmatch(r"20\d\d-\d\d-\d\d", src["date"])
    # the version as logged, or null with where the part read leaves it
    assert row["ollama_version"] is None or re.fullmatch(r"\d+\.\d+(\.\d+)?", row["ollama_version"])
    assert isinstance(row["version_from"], str) and row["version_from"]
    model = row["model"]
    assert model["hf_repo"].count("/") == 1 and model["blocks"] >= 1
    assert set(row["settings"]) >= SETTINGS, SETTINGS - set(row["settings"])
    assert isinstance(row["caveat"], str) and row["caveat"]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_the_figures_are_copied_as_printed(row: dict[str, Any]) -> None:
    gpus = row["gpus"]
    assert gpus and all(set(g) >= {"name", "total", "available"} for g in gpus)
    for gpu in gpus:
        for key in ("total", "available", "llama_free"):
            assert gpu.get(key) is None or SIZE.match(gpu[key]), gpu
    logged = row["logged"]
    offloaded = logged["offloaded"]
    # Ollama counts the repeating blocks and the output layer
    assert offloaded["total"] == row["model"]["blocks"] + 1
    assert 0 <= offloaded["layers"] <= offloaded["total"]
    assert set(logged) <= {"offloaded", "estimate", "buffers_mib", "ps"}
    assert "estimate" in logged or "buffers_mib" in logged
    estimate = logged.get("estimate") or {}
    assert set(estimate) <= ESTIMATE
    for key, value in estimate.items():
        values = value if isinstance(value, list) else [value]
        assert all(SIZE.match(v) for v in values), (key, value)
        if isinstance(value, list):
            assert len(value) == len(gpus), key
    for buffers in (logged.get("buffers_mib") or {}).values():
        assert buffers and all(DEVICE.match(d) for d in buffers), buffers
        # MiB with two decimals as llama.cpp prints them
        assert all(isinstance(v, float) and 0 <= v < 2**20 and round(v, 2) == v for v in buffers.values())


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_the_held_out_rule_holds(row: dict[str, Any]) -> None:
    """Held out = odd thread number, the rule of llamacpp_logs.yaml (fixed before any row was scored)."""
    assert row["held_out"] == (row["source"]["thread"] % 2 == 1)


def test_both_splits_have_stated_rows() -> None:
    assert "odd" in DATA["heldout_rule"]
    assert {r["held_out"] for r in ROWS if r["vramdesk"]["expressible"]} == {True, False}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_the_vramdesk_statement_is_complete(row: dict[str, Any]) -> None:
    v = row["vramdesk"]
    assert set(v) >= VRAMDESK, VRAMDESK - set(v)
    assert v["model"] in _catalog_models()
    assert v["gpu"] in _catalog_gpus()
    assert v["ollama_version"] in BANDS
    assert v["kv_cache_type"] in {"f16", "q8_0", "q4_0"} and v["flash_attention"] in {"auto", "on", "off"}
    assert v["gpus"] == len(row["gpus"])
    assert v["free"] is None or SIZE.match(v["free"])
    assert v["expressible"] or v["why"]
    # a setting the log shows set is stated as set; one left to Ollama stays Ollama's
    s = row["settings"]
    if s["num_ctx_set"] is False:
        assert v["num_ctx"] is None
    if s["kv_cache_type"] != "f16":
        assert v["kv_cache_type"] == s["kv_cache_type"]


def test_sizes_are_read_in_their_units(scorer: ModuleType) -> None:
    assert scorer.size_mib("0 B") == 0.0
    assert scorer.size_mib("896.0 MiB") == 896.0
    assert scorer.size_mib("19.5 GiB") == 19.5 * 1024
    with pytest.raises(ValueError):
        scorer.size_mib("19.5 GB")


def test_the_scorer_sets_every_logged_figure_beside_vramdesks(scorer: ModuleType) -> None:
    stated, nearest = scorer.score(ROWS)
    by_row: dict[str, set[str]] = {}
    for item in stated + nearest:
        by_row.setdefault(item.row, set()).add(item.figure)
        assert item.estimated >= 0
    for row in ROWS:
        assert by_row[row["id"]] == set(scorer.logged_figures(row)), row["id"]
        assert "layers" in by_row[row["id"]]
    assert {i.row for i in nearest} == {r["id"] for r in ROWS if not r["vramdesk"]["expressible"]}


def test_the_scorer_reports_all_rows_and_the_held_out_ones(
    scorer: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert scorer.main(["--detail"]) == 0
    out = capsys.readouterr().out
    stated = sum(1 for r in ROWS if r["vramdesk"]["expressible"])
    assert f"all stated rows ({stated} rows)" in out
    assert "held out (odd thread number)" in out and "not held out" in out
    for row in ROWS:
        assert row["id"] in out


def test_the_scorer_refuses_unknown_rows(scorer: ModuleType) -> None:
    with pytest.raises(SystemExit):
        scorer.main(["--rows", "no-such-row"])
