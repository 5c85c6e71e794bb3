"""The config-coverage benchmark: its classifier, and the corpus index against the files it lists."""

from __future__ import annotations

import json
import re

import pytest
from benchload import load_benchmark

coverage = load_benchmark("config_coverage", folder="")

#: the standard decoder fields, under a model type no family record names
_GENERIC = {
    "model_type": "vramdesk_test_unknown_decoder",
    "hidden_size": 1024,
    "intermediate_size": 2816,
    "num_hidden_layers": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "vocab_size": 32000,
    "max_position_embeddings": 2048,
}


def _corpus_config(name: str) -> dict[str, object]:
    return dict(json.loads((coverage.CORPUS / name).read_text(encoding="utf-8")))


def test_a_known_family_is_exact_with_its_parameter_total() -> None:
    out = coverage.classify(_corpus_config("meta-llama__Llama-3.1-8B.json"), "meta-llama/Llama-3.1-8B")
    assert out.kind == "exact"
    assert out.message == ""
    assert out.params == 8_030_261_248  # the Hub's safetensors total


def test_an_unknown_model_type_with_decoder_fields_is_approximate() -> None:
    out = coverage.classify(_GENERIC, "someone/unknown")
    assert out.kind == "approximate"
    assert out.params is not None and out.params > 0


def test_an_unknown_model_type_without_decoder_fields_is_refused_in_one_line() -> None:
    bert_like = {"model_type": "vramdesk_test_encoder", "hidden_size": 768, "num_attention_heads": 12}
    out = coverage.classify(bert_like, "someone/encoder")
    assert out.kind == "refused"
    assert "vramdesk_test_encoder" in out.message
    assert "\n" not in out.message
    assert out.params is None


def test_an_unexpected_exception_is_a_crash_with_the_traceback_last_line() -> None:
    # a GPU record of the wrong type fails inside the estimate with a Python error, no config or estimate error
    out = coverage.classify(_GENERIC, "someone/unknown", gpu=object())
    assert out.kind == "crash"
    assert re.match(r"^[A-Za-z]+Error: \S", out.message)
    assert "\n" not in out.message
    assert out.params is None


def test_the_report_counts_each_class_and_compares_with_published_totals() -> None:
    rows = [
        coverage.Row("a.json", "o/a", "llama", "dev", 100, coverage.Outcome("exact", params=100)),
        coverage.Row("b.json", "o/b", "x", "dev", 200, coverage.Outcome("approximate", params=210)),
        coverage.Row("c.json", "o/c", "bert", "dev", None, coverage.Outcome("refused", "no decoder fields")),
    ]
    text = "\n".join(coverage.report("dev", rows))
    assert "exact           1    33.3%" in text
    assert "refused         1    33.3%" in text
    assert "[refused] bert: no decoder fields" in text
    assert "within 0.5%: 1/2 (50.0%)" in text
    assert "+5.000%  o/b: 210 vs 200" in text


def test_every_index_row_names_a_file_and_every_file_has_a_row() -> None:
    rows = coverage.read_index()
    listed = [r["file"] for r in rows]
    assert len(listed) == len(set(listed))
    on_disk = {p.name for p in coverage.CORPUS.glob("*.json")}
    assert set(listed) == on_disk
    for r in rows:
        assert r["file"] == r["repo_id"].replace("/", "__") + ".json"
        config = json.loads((coverage.CORPUS / r["file"]).read_text(encoding="utf-8"))
        assert str(config.get("model_type", "")) == r["model_type"]
        assert r["split"] == coverage.split_of(r["repo_id"])
        assert r["hub_sha256_match"] in {"yes", "no", "unknown"}
        assert (r["published_total"] == "") == (r["published_source"] == "") == (r["published_counts"] == "")
        assert r["published_counts"] in {"", *coverage.COUNTS}


def test_a_total_without_the_mtp_layers_is_compared_without_them() -> None:
    outcome = coverage.Outcome("exact", params=1_100, mtp=100)
    assert coverage.Row("a.json", "o/a", "qwen3_5", "dev", 1_000, outcome, "without_mtp").error == 0.0
    assert coverage.Row("a.json", "o/a", "qwen3_5", "dev", 1_000, outcome).error == 0.1


def test_the_split_rule_is_fixed_by_the_repo_id() -> None:
    assert coverage.split_of("meta-llama/Llama-3.1-8B") == coverage.split_of("meta-llama/Llama-3.1-8B")
    shares = [coverage.split_of(f"org/model-{i}") for i in range(3000)]
    assert 0.28 < shares.count("held-out") / len(shares) < 0.39


def test_the_benchmark_prints_each_class_and_exits_zero_without_crashes(capsys: pytest.CaptureFixture[str]) -> None:
    assert coverage.main(["--split", "held-out"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== held-out: ")
    for kind in coverage.CLASSES:
        assert f"  {kind:<12}" in out
    assert "== dev" not in out
