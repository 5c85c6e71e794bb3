"""Bounded work for any input (issue 18): property tests over what a user's files and command line can hold.

Every generated input ends as an answer that passes :func:`fuzzinputs.assert_sane` or as a one-line refusal
(exit status 2 on the command line), never a traceback. The generators and checks live in tests/fuzzinputs.py;
benchmarks/fuzz.py runs them ten times longer and counts what it finds. Costs that grow with absurd counts are
checked in a child process under a memory cap (RLIMIT_AS) and a timeout, so that a regression fails rather than
taking the machine down, and a slow machine does not make them flaky.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from fuzzinputs import (
    CONFIGS,
    ROOT,
    check_cli,
    check_config,
    check_gguf,
    check_json,
    check_jsonl,
    check_safetensors,
    check_scenario_file,
    deep,
    estimate_argv,
    gguf_files,
    json_bytes,
    jsonl_batches,
    mutated_configs,
    run_cli,
    safetensors_files,
    scenario_files,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vramdesk.core.architecture import ConfigError
from vramdesk.core.checkpoint import CheckpointError, parse_safetensors_header
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.jsonsafe import JsonError, loads
from vramdesk.core.scenario import MAX_TOTAL_GPUS, Scenario
from vramdesk.services.deepspeed import DeepSpeedConfigError, read_deepspeed
from vramdesk.services.local import LocalModelError, read_config
from vramdesk.storage.library import ScenarioLibrary
from vramdesk.storage.scenarios import ScenarioFileError, is_scenario_file, load_scenario

#: no per-example deadline: hypothesis only measures it after the example returns (it stops no hang) and it fails a
#: loaded machine. Cost is bounded where it can run away: the absurd-count cases run in a child under a memory cap
#: and a timeout (_guarded), and benchmarks/fuzz.py times every case out. Derandomized: the same examples on every
#: run (and no example database written into the checkout)
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def fuzz(examples: int) -> settings:
    return settings(FUZZ, max_examples=examples)


_TMP = Path(tempfile.mkdtemp(prefix="vramdesk-fuzz-"))


# ---------------------------------------------------------------------------------------------- properties


@fuzz(2000)
@given(mutated_configs())
def test_a_broken_config_is_estimated_sanely_or_refused_in_one_line(cfg: dict[str, Any]) -> None:
    check_config(cfg)


@fuzz(500)
@given(json_bytes())
def test_strict_json_accepts_strict_json_and_refuses_the_rest_in_one_line(data: bytes) -> None:
    check_json(data)


@fuzz(500)
@given(scenario_files())
def test_a_broken_scenario_file_is_read_or_refused_in_one_line(data: bytes) -> None:
    check_scenario_file(_TMP / "fuzz.vramdesk.json", data)


@fuzz(500)
@given(safetensors_files())
def test_a_broken_safetensors_header_is_read_or_refused(case: tuple[bytes, int]) -> None:
    check_safetensors(*case)


@fuzz(500)
@given(gguf_files())
def test_a_broken_gguf_header_is_read_or_refused(buf: bytes) -> None:
    check_gguf(buf)


@fuzz(1000)
@given(estimate_argv())
def test_random_estimate_options_exit_0_with_output_or_2_with_one_line(argv: list[str]) -> None:
    check_cli(argv)


@fuzz(300)
@given(mutated_configs(), st.data())
def test_a_broken_config_file_on_the_command_line_exits_0_or_2(cfg: dict[str, Any], data: st.DataObject) -> None:
    path = _TMP / "model" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(cfg))  # NaN / Infinity as JSON's non-standard constants
    check_cli(data.draw(estimate_argv(model=str(path))))


@fuzz(200)
@given(jsonl_batches())
def test_every_jsonl_line_gets_its_own_result_whatever_the_others_hold(lines: list[bytes]) -> None:
    check_jsonl(_TMP / "batch.jsonl", lines)


# ---------------------------------------------------------------------------------------------- strict JSON


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b'{"a": NaN}', "NaN is not a number JSON allows"),
        (b"[Infinity]", "Infinity is not a number JSON allows"),
        (b"-Infinity", "-Infinity is not a number JSON allows"),
        (b"[1e999]", "too large for a float"),
        (b"[" * 65 + b"]" * 65, "nested deeper than 64 levels"),
        (b"[" * 200_000, "nested deeper than 64 levels"),  # the C scanner's RecursionError
        (b'{"a": "\xff"}', "not UTF-8 text ('utf-8' codec can't decode byte 0xff in position 7"),
        (b"1" * 5000, "an integer of 5,000 digits is too long"),
        (b'"\\ud800"', "lone UTF-16 surrogate"),
        (b'{"a": 1', "malformed JSON at line 1, column 8: Expecting ',' delimiter"),
    ],
)
def test_strict_json_names_the_source_and_the_problem_in_one_line(text: bytes, problem: str) -> None:
    with pytest.raises(JsonError) as err:
        loads(text, source="x/config.json")
    assert str(err.value).startswith("x/config.json: ") and problem in str(err.value)
    assert "\n" not in str(err.value) and isinstance(err.value, ValueError)


def test_strict_json_reads_what_json_reads() -> None:
    assert loads(b'\xef\xbb\xbf{"a": [1, 2.5, "\xc3\xa9", null, true]}', source="s") == {
        "a": [1, 2.5, "\u00e9", None, True]
    }
    assert loads(b"[" * 64 + b"]" * 64, source="s") == deep(63, [])
    for path in (ROOT / "resources" / "catalog" / "configs").glob("*.json"):
        assert loads(path.read_bytes(), source=str(path)) == json.loads(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------- each reader


_HOSTILE = [
    b'{"model_type": "llama", "hidden_size": NaN}',
    b'{"model_type": "llama", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"model_type": "llama", "name": "caf\xe9"}',
]


@pytest.mark.parametrize("data", _HOSTILE)
def test_a_hostile_config_json_is_a_local_model_error(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "config.json").write_bytes(data)
    with pytest.raises(LocalModelError) as err:
        read_config(tmp_path)
    assert str(err.value).startswith(str(tmp_path / "config.json")) and "\n" not in str(err.value)


@pytest.mark.parametrize("data", _HOSTILE)
def test_a_hostile_config_json_exits_2_with_one_line(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "config.json").write_bytes(data)
    code, out, err = run_cli(["estimate", str(tmp_path / "config.json")])
    assert code == 2 and err.count("\n") == 1 and str(tmp_path) in err and not out


@pytest.mark.parametrize("data", _HOSTILE)
def test_a_hostile_scenario_file_is_a_scenario_file_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "s.vramdesk.json"
    path.write_bytes(data.replace(b'"model_type": "llama"', b'"model": {"id": "Qwen/Qwen3-4B"}, "workload": {}'))
    assert is_scenario_file(path) is False
    with pytest.raises(ScenarioFileError, match="not a JSON scenario file") as err:
        load_scenario(path)
    assert "\n" not in str(err.value)


def test_a_hostile_file_in_the_library_is_quarantined_and_the_library_opens(tmp_path: Path) -> None:
    lib = ScenarioLibrary(tmp_path / "library")
    good = Scenario.model_validate({"model": {"id": "Qwen/Qwen3-4B"}, "name": "good"})
    lib.save(good)
    for i, data in enumerate(_HOSTILE):
        (lib.root / f"bad{i}.vramdesk.json").write_bytes(data.replace(b'"model_type": "llama"', b'"model": {}'))
    result = lib.scan()
    assert [e.scenario.name for e in result.entries] == ["good"]
    assert len(result.quarantined) == len(_HOSTILE)


@pytest.mark.parametrize("data", [*_HOSTILE, b'{"zero_optimization": {"stage": Infinity}}'])
def test_a_hostile_deepspeed_file_is_a_deepspeed_config_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "ds.json"
    path.write_bytes(data)
    with pytest.raises(DeepSpeedConfigError, match="not valid JSON") as err:
        read_deepspeed(path)
    assert "\n" not in str(err.value)


def test_a_safetensors_header_with_nan_deep_nesting_or_an_absurd_shape_is_refused() -> None:
    def file(header: bytes) -> bytes:
        return struct.pack("<Q", len(header)) + header

    for header in (
        b'{"w": {"dtype": "BF16", "shape": [NaN], "data_offsets": [0, 2]}}',
        b'{"__metadata__": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"w": {"dtype": "BF16", "shape": [1099511627776, 1099511627776]}}',
        b'{"w": {"dtype": "BF16", "shape": [true, 2], "data_offsets": [0, 4]}}',
    ):
        data = file(header)
        with pytest.raises(CheckpointError) as err:
            parse_safetensors_header(data, file_size=len(data))
        assert "\n" not in str(err.value)


# ---------------------------------------------------------------------------------------------- config bounds


def _qwen() -> dict[str, Any]:
    return json.loads((ROOT / "resources" / "catalog" / "configs" / "Qwen__Qwen3-4B.json").read_text())


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # 2**31 layers (22 GB before the bound) is checked in a child process below; 5,000 fails fast on old code
        ("num_hidden_layers", 5000, "field 'num_hidden_layers' = 5000 is above 1,024 (no real model"),
        ("hidden_size", 10**9, "field 'hidden_size' = 1000000000 is above 131,072"),
        ("vocab_size", 2**40, "'vocab_size' = 1099511627776 is above 4,194,304"),
        ("num_attention_heads", 2**20, "is above 8,192"),
        ("intermediate_size", 2**40, "is above 1,048,576"),
        ("max_position_embeddings", 2**40, "'max_position_embeddings' = 1099511627776 is above 134,217,728"),
        ("sliding_window", 2**40, "'sliding_window' = 1099511627776 is above"),
        ("num_hidden_layers", float("nan"), "num_hidden_layers = nan is not a finite number"),
        ("head_dim", float("inf"), "head_dim = inf is not a finite number"),
        ("num_hidden_layers", True, "must be an integer"),
        ("num_key_value_heads", 1e300, "is above 8,192"),
    ],
)
def test_an_impossible_config_number_is_refused_naming_the_field(field: str, value: Any, message: str) -> None:
    cfg = _qwen()
    cfg[field] = value
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        normalize(cfg)


def test_fields_within_their_bounds_that_multiply_out_to_an_absurd_model_are_refused() -> None:
    cfg = _qwen() | {"num_hidden_layers": 1024, "hidden_size": 131_072, "intermediate_size": 1_048_576}
    with pytest.raises(ConfigError, match="parameters is above 1e"):
        model_facts(cfg)


def test_every_catalog_config_is_within_the_bounds() -> None:
    for cfg in CONFIGS:
        normalize(cfg)


def test_an_estimate_above_one_eib_per_gpu_is_refused() -> None:
    cfg = _qwen() | {"num_key_value_heads": 8192, "num_attention_heads": 8192, "head_dim": 8192}
    facts = model_facts(cfg, "wide")
    huge = Scenario.model_validate({"model": {"id": "x"}, "workload": {"batch": 65536, "input_len": 2**24}})
    with pytest.raises(EstimateError, match="above the 1 EiB"):
        estimate(huge, facts)


# ---------------------------------------------------------------------------------------------- cost bounds

_GUARD = textwrap.dedent(
    """
    import resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))
    from vramdesk.cli import main
    import io
    t = time.perf_counter()
    code = main(sys.argv[1:], out=io.StringIO())
    print(f"{time.perf_counter() - t:.2f}", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
    raise SystemExit(code)
    """
)


def _guarded(argv: list[str], limit_gib: float = 3.0, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process whose address space is capped: a cost that grows with a count fails here
    (MemoryError or killed) instead of swapping the machine; the timeout catches a hang."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    code = _GUARD.replace("CAP", str(int(limit_gib * 2**30)))
    return subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


@pytest.mark.parametrize(
    "options",
    [
        ["--mode", "finetune", "--nodes", "4096", "--gpus", "4096"],
        ["--nodes", "4096", "--gpus", "4096", "--engine", "vllm", "--pp", "4096"],
    ],
)
def test_absurd_gpu_counts_are_refused_in_one_line_at_once(options: list[str]) -> None:
    proc = _guarded(["estimate", "Qwen/Qwen3-4B", *options], limit_gib=2, timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    error = proc.stderr.splitlines()[0]
    assert "= 16,777,216 GPUs: a plan models at most 65,536 GPUs" in error


@pytest.mark.parametrize(
    "options",
    [
        ["--mode", "finetune", "--nodes", "4096", "--gpus", "16", "--gpu", "H100 SXM"],
        ["--mode", "finetune", "--nodes", "4096", "--gpus", "16", "--zero", "3", "--gpu", "H100 SXM"],
        ["--gpus", "4096", "--weights", "q4_k_m", "--engine", "llamacpp", "--split-mode", "row"],
        ["--gpus", "4096", "--pp", "4096", "--max-memory-gib", "0.01"],
        ["--gpus", "4096", "--engine", "vllm", "--pp", "36"],
    ],
)
def test_the_largest_gpu_counts_allowed_cost_bounded_time_and_memory(options: list[str]) -> None:
    assert MAX_TOTAL_GPUS == 4096 * 16
    proc = _guarded(["estimate", "Qwen/Qwen3-4B", *options, "--json"], limit_gib=3, timeout=120)
    # the memory cap and the timeout are the bound (~1 s and < 1 GB here; 16,384 x 16 GPUs ran past 120 s)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_config_with_two_billion_layers_is_refused_at_once(tmp_path: Path) -> None:
    cfg = _qwen() | {"num_hidden_layers": 2**31}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    proc = _guarded(["estimate", str(tmp_path / "config.json")], limit_gib=2, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("vramdesk: error:") == 1, proc.stderr[-2000:]
    assert "num_hidden_layers' = 2147483648 is above 1,024" in proc.stderr


# ---------------------------------------------------------------------------------------------- --jsonl


def test_a_jsonl_batch_survives_each_kind_of_bad_line(tmp_path: Path) -> None:
    lines = [
        b'{"model": "Qwen/Qwen3-4B"}',
        b'{"model": "Qwen/Qwen3-4B", "name": "caf\xe9"}',  # not UTF-8: this line only
        b'{"model": "Qwen/Qwen3-4B", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"model": "Qwen/Qwen3-4B", "batch": NaN}',
        b'{"model": "Qwen/Qwen3-4B", "batch": 1' + b"0" * 400 + b"}",
        b"[1, 2]",
        b'{"model": "Qwen/Qwen3-4B", "zz": 1}',
        b'{"model": "no/such-model"}',
        b'{"model": "Qwen/Qwen3-4B", "gpus": 4096, "nodes": 4096, "mode": "finetune"}',
        b'{"model": "Qwen/Qwen3-4B", "batch": 2}',
    ]
    check_jsonl(tmp_path / "b.jsonl", lines)
    _, out, _ = run_cli(["estimate", "--jsonl", str(tmp_path / "b.jsonl")])
    docs = [json.loads(t) for t in out.splitlines()]
    assert "error" not in docs[0] and "error" not in docs[-1]
    assert [("error" in d) for d in docs[1:-1]] == [True] * 8
    assert docs[1]["error"].startswith("line 2: not valid JSON (not UTF-8 text (")
    assert "nested deeper than 64 levels" in docs[2]["error"]
    assert "NaN is not a number JSON allows" in docs[3]["error"]


def test_a_jsonl_line_that_hits_a_bug_is_that_lines_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vramdesk import cli

    real = cli.estimate_and_speed

    def buggy(scenario: Scenario) -> Any:
        if scenario.workload.kind == "inference" and getattr(scenario.workload, "batch", 1) == 3:
            raise ZeroDivisionError("division by zero")
        return real(scenario)

    monkeypatch.setattr(cli, "estimate_and_speed", buggy)
    path = tmp_path / "b.jsonl"
    path.write_bytes(b'{"model": "Qwen/Qwen3-4B", "batch": 3}\n{"model": "Qwen/Qwen3-4B"}\n')
    code, out, _ = run_cli(["estimate", "--jsonl", str(path)])
    first, second = (json.loads(t) for t in out.splitlines())
    assert first == {"error": "line 1: internal error (ZeroDivisionError: division by zero)"}
    assert "error" not in second and code == 1


def test_a_jsonl_line_longer_than_the_limit_is_its_own_error(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_bytes(b'{"model": "' + b"x" * (2 * 1024 * 1024) + b'"}\n{"model": "Qwen/Qwen3-4B"}\n')
    _, out, _ = run_cli(["estimate", "--jsonl", str(path)])
    first, second = (json.loads(t) for t in out.splitlines())
    assert first["error"].startswith("line 1: longer than 1,048,576 bytes") and "error" not in second


def test_the_fuzz_checks_themselves_catch_what_they_must() -> None:
    """The checks are the suite's teeth: an absurd figure and a multi-line error must fail them."""
    from fuzzinputs import AbsurdError, assert_sane, one_line

    with pytest.raises(AbsurdError):
        assert_sane({"per_gpu": [{"device_bytes": 2**61}]})
    with pytest.raises(AbsurdError):
        assert_sane({"components": [{"bytes": -1}]})
    with pytest.raises(AbsurdError):
        assert_sane({"fit": {"margin_fraction": math.nan}})
    with pytest.raises(AssertionError):
        one_line("a\nb")
