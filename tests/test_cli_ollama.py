"""`vramdesk estimate --engine ollama`: Ollama's flags on the command line and its answer in --json."""

from __future__ import annotations

import json

import pytest
from test_cli import cli  # the command-line tests' runner

from vramdesk.cli import main


def _kv(data: dict) -> int:
    return next(c["bytes"] for c in data["components"] if c["name"] == "KV cache")


def test_estimate_json_with_ollama_says_how_many_layers_it_offloads() -> None:
    base = ["estimate", "meta-llama/Llama-3.1-70B", "--gpu", "RTX 4090", "--weights", "q4_k_m", "--engine", "ollama"]
    code, text = cli(*base, "--json")
    assert code == 0
    data = json.loads(text)
    assert data["engine"]["engine"] == "ollama" and data["engine"]["total_layers"] == 80
    layers = data["engine"]["gpu_layers"]
    assert 0 < layers < 80
    assert any(f"offloaded {layers}/81 layers to GPU" in w for w in data["warnings"])
    assert data["scenario"]["workload"]["ollama"]["ollama_version"] == "0.15.5-0.24"
    # the flags reach the scenario: twice the slots, twice the KV cache; num_gpu places the layers asked for
    code, two = cli(*base, "--num-ctx", "4096", "--num-parallel", "2", "--ollama-version", "0.13-0.15.4", "--json")
    code1, one = cli(*base, "--num-ctx", "4096", "--ollama-version", "0.13-0.15.4", "--json")
    assert code == code1 == 0
    assert _kv(json.loads(two)) > _kv(json.loads(one))
    code, fixed = cli(*base, "--num-gpu", "12", "--kv-cache-type", "q8_0", "--json")
    assert code == 0 and json.loads(fixed)["engine"]["gpu_layers"] == 12
    assert json.loads(fixed)["scenario"]["workload"]["ollama"]["kv_cache_type"] == "q8_0"


def test_a_bad_ollama_value_names_the_flag_and_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["estimate", "Qwen/Qwen3-8B", "--engine", "ollama", "--kv-cache-type", "q5_1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--kv-cache-type" in err and "'q5_1'" in err and "f16" in err
