"""benchmarks/serving/llamacpp_logs.yaml, the public llama.cpp CUDA load logs of issue 20: every row names its
source and the run's settings, its figures are MiB as llama.cpp prints them, its kinds follow from its settings,
the held-out split follows the fixed rule of the file's header, and score_llamacpp.py scores rows."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from benchload import ROOT, load_benchmark

LOGS = ROOT / "benchmarks" / "serving" / "llamacpp_logs.yaml"
ROWS: list[dict[str, Any]] = yaml.safe_load(LOGS.read_text(encoding="utf-8"))["rows"]

#: the device names llama.cpp gives its buffers
DEVICE = re.compile(r"^(CUDA\d+|CUDA_Host|CPU|CPU_Mapped|CPU_AARCH64|CPU_REPACK|AMX)$")
FIELDS = {
    "id",
    "source",
    "engine",
    "build",
    "commit",
    "gpus",
    "model",
    "settings",
    "logged_mib",
    "graph",
    "kinds",
    "vramdesk",
    "held_out",
    "caveat",
}
SOURCE_FIELDS = {"url", "kind", "repo", "thread", "author", "date", "where"}
SETTINGS = {
    "n_ctx",
    "n_batch",
    "n_ubatch",
    "n_seq",
    "flash_attn",
    "offloaded",
    "total_layers",
    "cache_k",
    "cache_v",
    "override_tensor",
    "n_cpu_moe",
    "split_mode",
    "tensor_split",
    "command",
}
KV_DTYPE = {"f16": "fp16", "q8_0": "q8_0", "q4_0": "q4_0"}


@pytest.fixture(scope="module")
def scorer() -> ModuleType:
    return load_benchmark("score_llamacpp", "serving")


def _values(buffers: dict[str, Any]) -> list[float]:
    out: list[float] = []
    for value in buffers.values():
        out.extend(value if isinstance(value, list) else [value])
    return out


def _cuda_devices(row: dict[str, Any]) -> set[str]:
    return {d for buffers in row["logged_mib"].values() for d in buffers if re.match(r"^CUDA\d+$", d)}


def test_there_are_enough_rows_and_their_ids_are_unique() -> None:
    ids = [r["id"] for r in ROWS]
    assert len(ids) >= 30
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_every_row_names_its_source_and_the_run(row: dict[str, Any]) -> None:
    assert set(row) >= FIELDS, FIELDS - set(row)
    src = row["source"]
    assert set(src) >= SOURCE_FIELDS, SOURCE_FIELDS - set(src)
    assert src["url"].startswith("https://github.com/")
    assert src["kind"] in {"ci-log", "issue", "pull", "discussion"}
    assert (src["thread"] is None) == (src["kind"] == "ci-log")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", src["date"])
    assert row["engine"] in {"llama.cpp", "ollama"}
    assert row["build"] is None or 1000 <= row["build"] < 20000
    assert row["gpus"] and all(isinstance(g, str) for g in row["gpus"])
    assert row["model"]["hf_repo"].count("/") == 1 and row["model"]["quant"]
    assert set(row["settings"]) >= SETTINGS, SETTINGS - set(row["settings"])
    assert isinstance(row["caveat"], str)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_the_figures_are_plausible_mib(row: dict[str, Any]) -> None:
    s = row["settings"]
    assert 128 <= s["n_ctx"] <= 1 << 20 and 1 <= s["n_ubatch"] <= s["n_batch"] and s["n_seq"] >= 1
    assert 0 <= s["offloaded"] <= s["total_layers"] <= 200
    assert s["cache_k"] in KV_DTYPE and s["cache_v"] in KV_DTYPE
    logged = row["logged_mib"]
    assert set(logged) <= {"model", "kv", "compute"} and ("compute" in logged or "kv" in logged)
    for buffers in logged.values():
        assert buffers and all(DEVICE.match(d) for d in buffers), buffers
        # MiB with two decimals as printed, below 1 TiB
        assert all(isinstance(v, float) and 0 <= v < 2**20 and round(v, 2) == v for v in _values(buffers))
    assert set(row["gpus"]) and len(_cuda_devices(row)) <= len(row["gpus"])


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_the_kinds_follow_from_the_settings(row: dict[str, Any]) -> None:
    s = row["settings"]
    moe_cpu = bool(s["override_tensor"]) or bool(s["n_cpu_moe"])
    multi = len(_cuda_devices(row)) > 1
    want = {
        "full": s["offloaded"] == s["total_layers"] and not moe_cpu and not multi,
        "partial": 0 < s["offloaded"] < s["total_layers"],
        "zero": s["offloaded"] == 0,
        "moe_cpu": moe_cpu,
        "fa_off": not s["flash_attn"],
        "multi_gpu": multi,
        "old_build": row["build"] is not None and row["build"] < 3000,
    }
    assert set(row["kinds"]) == {k for k, on in want.items() if on}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_the_held_out_rule_holds(row: dict[str, Any]) -> None:
    """Held out = odd source number: the thread number, or the llama.cpp build number of a CI log."""
    number = row["source"]["thread"] if row["source"]["kind"] != "ci-log" else row["build"]
    assert row["held_out"] == (number % 2 == 1)


def test_both_splits_and_every_kind_have_rows() -> None:
    assert {r["held_out"] for r in ROWS} == {True, False}
    kinds = {k for r in ROWS for k in r["kinds"]}
    assert kinds == {"full", "partial", "zero", "moe_cpu", "fa_off", "multi_gpu", "old_build"}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_the_vramdesk_statement_is_complete(row: dict[str, Any]) -> None:
    v = row["vramdesk"]
    assert v["kv_dtype"] == KV_DTYPE[row["settings"]["cache_k"]]
    assert v["gpus"] >= 1 and v["weights"]
    if str(v["model"]).endswith(".json"):
        path = ROOT / v["model"]
        assert path.is_file() and path.parent == ROOT / "benchmarks" / "serving" / "configs"
        assert path.name.startswith("llamacpp-")
    assert v["expressible"] or v["why"]
    # vramdesk has no option for tensor overrides: such rows are kept out of the figures
    assert not (row["settings"]["override_tensor"] and v["expressible"])
    # n_cpu_moe (experts of the first N layers in host memory) states the run's --n-cpu-moe, or the nearest vramdesk
    # has to an -ot that keeps experts in host memory: only rows that keep experts there name it
    n = v.get("n_cpu_moe")
    assert (n is not None) == ("moe_cpu" in row["kinds"])
    assert n is None or 0 < n < row["settings"]["total_layers"]
    if row["settings"]["n_cpu_moe"] and v["expressible"]:
        assert n == row["settings"]["n_cpu_moe"]


def test_the_scorer_compares_every_logged_buffer(scorer: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    by_id = {r["id"]: r for r in ROWS}
    picked = [
        by_id[i]
        for i in ("ci-b4896-pythia2.8b-f16", "ci-b4896-pythia2.8b-q4_0-ngl10", "ik357-qwen3-235b-q8_0-ot-ffn-cpu")
    ]
    stated, nearest = scorer.score(picked)
    assert {i.row for i in stated} == {picked[0]["id"], picked[1]["id"]}
    assert {i.row for i in nearest} == {picked[2]["id"]}
    full = {(i.buffer, i.device): i for i in stated if i.row == picked[0]["id"]}
    assert set(full) == {
        ("model", "CUDA0"),
        ("kv", "CUDA0"),
        ("compute", "CUDA0"),
        ("host_model", "host"),
        ("host_compute", "host"),
    }
    assert full[("model", "CUDA0")].logged == 5049.71 and full[("model", "CUDA0")].estimated > 0
    partial = {(i.buffer, i.device): i for i in stated if i.row == picked[1]["id"]}
    # the repacked CPU_AARCH64 copy is not counted as the host share of the weights
    assert partial[("host_model", "host")].logged == 1086.70 and partial[("host_kv", "host")].logged == 440.0
    assert scorer.main(["--rows", ",".join(r["id"] for r in picked)]) == 0
    out = capsys.readouterr().out
    assert "all stated rows (2 rows)" in out and "held out" in out and picked[2]["id"] in out


def test_the_nearest_scenario_of_an_expert_override_keeps_the_experts_in_host_memory(scorer: ModuleType) -> None:
    by_id = {r["id"]: r for r in ROWS}
    row = by_id["ik357-qwen3-235b-q8_0-ot-ffn-cpu"]
    (_stated, nearest) = scorer.score([row])
    got = {(i.buffer, i.device): i for i in nearest}
    # -ot keeps the FFN tensors of 81 layers in host memory; n_cpu_moe 81 moves their experts, so most of the
    # weights are host memory and the GPU keeps attention, routers, norms and the output layer
    assert got[("host_model", "host")].estimated > 4 * got[("model", "CUDA0")].estimated
    # the first GPU's compute buffer holds the staged expert tensor: larger than the same run with every weight on
    # the GPU (the 297 MiB logits buffer)
    plain = dict(row, vramdesk={k: v for k, v in row["vramdesk"].items() if k != "n_cpu_moe"})
    (_s, whole) = scorer.score([plain])
    before = {(i.buffer, i.device): i for i in whole}
    assert got[("compute", "CUDA0")].estimated > before[("compute", "CUDA0")].estimated + 512
    assert got[("kv", "CUDA0")].estimated == before[("kv", "CUDA0")].estimated


def test_the_scorer_refuses_unknown_rows(scorer: ModuleType) -> None:
    with pytest.raises(SystemExit):
        scorer.main(["--rows", "no-such-row"])


def test_the_configs_are_the_ones_the_rows_use() -> None:
    used = {Path(str(r["vramdesk"]["model"])).name for r in ROWS if str(r["vramdesk"]["model"]).endswith(".json")}
    mine = {p.name for p in (ROOT / "benchmarks" / "serving" / "configs").glob("llamacpp-*.json")}
    assert used == mine
