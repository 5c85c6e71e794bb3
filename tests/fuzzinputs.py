"""Untrusted inputs for the fuzz suite (tests/test_fuzz_inputs.py) and its long run (benchmarks/fuzz.py).

Each ``check_*`` function takes one generated input, runs it through the code a user's file or command line
reaches, and returns ``"ok"`` or ``"refused"`` (a one-line error of the kind the code promises). Anything
else is a finding: an exception that escapes is a traceback, :class:`AbsurdError` an answer no real plan has.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import math
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from vramdesk.cli import build_parser, main
from vramdesk.core.architecture import ConfigError
from vramdesk.core.checkpoint import MAX_TENSOR_ELEMENTS, CheckpointError, parse_safetensors_header
from vramdesk.core.dtype_names import FormatError
from vramdesk.core.estimate import MAX_PLAN_BYTES, EstimateError, estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.gguf_header import gguf_to_config, parse_gguf_header
from vramdesk.core.jsonsafe import JsonError, loads
from vramdesk.core.options import options
from vramdesk.core.performance import PerformanceError, performance
from vramdesk.core.scenario import Scenario
from vramdesk.report.json_report import estimate_to_dict
from vramdesk.services.resolve import resolve_gpu
from vramdesk.storage.library import read_entry
from vramdesk.storage.scenarios import ScenarioFileError, is_scenario_file

ROOT = Path(__file__).resolve().parents[1]
CONFIGS: list[dict[str, Any]] = [
    json.loads(p.read_text(encoding="utf-8"))
    for p in sorted((ROOT / "resources" / "catalog" / "configs").glob("*.json"))
]
#: the errors an estimate may end in: each is one line the CLI prints with exit status 2
REFUSALS = (ConfigError, EstimateError, FormatError, CheckpointError, PerformanceError)


class AbsurdError(AssertionError):
    """An answer, but not one any real plan has (negative or non-integer bytes, more than 1 EiB on a GPU)."""


# ---------------------------------------------------------------------------------------------- values

#: the values a broken or hostile file puts where a number belongs
_WEIRD_VALUES: list[Any] = [
    0,
    -1,
    -(2**31),
    2**31,
    2**31 - 1,
    2**63,
    2**64 + 1,
    10**30,
    10**99,
    1.5,
    -0.5,
    1e300,
    float("nan"),
    float("inf"),
    float("-inf"),
    True,
    False,
    None,
    "",
    "12",
    "abc",
    [],
    [1, 2],
    {},
    {"a": 1},
]
WEIRD = st.one_of(
    st.sampled_from(_WEIRD_VALUES).map(copy.deepcopy),  # a copy: a later mutation may write into a list drawn here
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=1, max_value=70_000),  # plausible, so that combinations get far
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)


def deep(depth: int, leaf: Any = 1) -> Any:
    """``[[[...leaf...]]]`` nested ``depth`` levels, built without recursion."""
    v = leaf
    for _ in range(depth):
        v = [v]
    return v


def _numeric_paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if len(path) > 20:
        return
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                yield (*path, k)
            elif isinstance(v, dict | list):
                yield from _numeric_paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, int | float) and not isinstance(v, bool):
                yield (*path, i)
            elif isinstance(v, dict | list):
                yield from _numeric_paths(v, (*path, i))


_ALL_KEYS = sorted({k for c in CONFIGS for k in c} | {k for c in CONFIGS for k in c.get("text_config", {})})


def _set(root: Any, path: tuple[Any, ...], value: Any) -> None:
    node = root
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


@st.composite
def mutated_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A catalog config.json with one to four fields broken: a weird value in a numeric field, a field
    deleted, another key set to a weird value, or a field nested deep."""
    cfg = copy.deepcopy(draw(st.sampled_from(CONFIGS)))
    for _ in range(draw(st.integers(1, 4))):
        paths = list(_numeric_paths(cfg))
        op = draw(st.sampled_from(["number", "number", "number", "delete", "key", "deep"]))
        if op == "number" and paths:
            _set(cfg, draw(st.sampled_from(paths)), draw(WEIRD))
        elif op == "delete" and paths:
            path = draw(st.sampled_from(paths))
            node = cfg
            for k in path[:-1]:
                node = node[k]
            if isinstance(node, dict):
                del node[path[-1]]
        elif op == "key":
            cfg[draw(st.sampled_from(_ALL_KEYS))] = draw(WEIRD)
        elif op == "deep":
            # deeper than JSON readers accept (64); not so deep that printing a failing example recurses too far
            cfg[draw(st.sampled_from(_ALL_KEYS))] = deep(draw(st.sampled_from([10, 100, 200])))
    return cfg


# ---------------------------------------------------------------------------------------------- checks of results


def assert_sane(doc: Any, where: str = "") -> None:
    """Every byte figure of an estimate's JSON is a non-negative integer, per GPU below 1 EiB; every float finite."""
    stack: list[tuple[Any, str]] = [(doc, where)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                key = str(k)
                if key.endswith("bytes") and v is not None:
                    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                        raise AbsurdError(f"{path}.{key} = {v!r} is not a non-negative integer")
                    if key == "device_bytes" and v > MAX_PLAN_BYTES:
                        raise AbsurdError(f"{path}.{key} = {v:,} is above 1 EiB")
                stack.append((v, f"{path}.{key}"))
        elif isinstance(node, list | tuple):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            raise AbsurdError(f"{path} = {node}")


_SCENARIOS = [
    Scenario.model_validate({"model": {"id": "fuzz"}, "hardware": {"gpu": "H100 SXM"}}),
    Scenario.model_validate(
        {"model": {"id": "fuzz"}, "workload": {"kind": "finetune", "method": "full"}, "hardware": {"gpu_count": 2}}
    ),
]

_H100 = resolve_gpu("H100 SXM")


def check_config(cfg: Any) -> str:
    """A config dict through normalisation, the inventory, an inference and a fine-tuning estimate."""
    try:
        facts = model_facts(cfg, "fuzz")
    except ConfigError as err:
        one_line(str(err))
        return "refused"
    refused = False
    for scenario in _SCENARIOS:
        gpu = _H100 if scenario.hardware.gpu else None
        try:
            est = estimate(scenario, facts, gpu)
            perf = performance(est, scenario, facts, gpu) if gpu is not None else None
        except REFUSALS as err:
            one_line(str(err))
            refused = True
            continue
        doc = estimate_to_dict(est, scenario, perf)
        json.dumps(doc, allow_nan=False)
        assert_sane(doc)
    return "refused" if refused else "ok"


def one_line(message: str) -> None:
    if "\n" in message or not message.strip():
        raise AssertionError(f"not one line: {message!r}")


# ---------------------------------------------------------------------------------------------- JSON text


@st.composite
def json_bytes(draw: st.DrawFn) -> bytes:
    """Mostly JSON-like bytes: valid documents, NaN / Infinity, deep nesting, huge numbers, non-UTF-8, garbage."""
    kind = draw(st.sampled_from(["doc", "doc", "deep", "constant", "number", "bytes", "bad_utf8"]))
    if kind == "doc":
        value = draw(
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
                max_leaves=20,
            )
        )
        return json.dumps(value).encode()
    if kind == "deep":
        n = draw(st.sampled_from([63, 64, 65, 100, 1_000, 100_000]))
        opener = draw(st.sampled_from(["[", '{"a":']))
        closer = "]" if opener == "[" else "}"
        return (opener * n + "1" + closer * n).encode()
    if kind == "constant":
        return draw(st.sampled_from([b"NaN", b"[Infinity]", b'{"a": -Infinity}', b"1e999", b'{"x": [1, NaN]}']))
    if kind == "number":
        return draw(st.sampled_from([b"1" * 5_000, b"-" + b"9" * 200, b"1e-99999", b"0." + b"1" * 4000]))
    if kind == "bad_utf8":
        return b'{"a": "' + draw(st.binary(min_size=1, max_size=4)) + b'\xff"}'
    return draw(st.binary(max_size=64))


def check_json(data: bytes) -> str:
    try:
        value = loads(data, source="fuzz.json")
    except JsonError as err:
        one_line(str(err))
        assert str(err).startswith("fuzz.json: ")
        return "refused"
    json.dumps(value, allow_nan=False)  # what was accepted is strict JSON
    return "ok"


# ---------------------------------------------------------------------------------------------- scenario files

_SCENARIO_BASES: list[dict[str, Any]] = [
    Scenario.model_validate({"model": {"id": "Qwen/Qwen3-4B"}}).model_dump(mode="json"),
    Scenario.model_validate(
        {"model": {"id": "Qwen/Qwen3-4B"}, "workload": {"kind": "finetune"}, "hardware": {"gpu_count": 8}}
    ).model_dump(mode="json"),
    {"schema_version": 0, "model_id": "Qwen/Qwen3-4B", "mode": "finetune", "num_gpus": 2, "lora_r": 8},
    {**Scenario.model_validate({"model": {"id": "x/y"}}).model_dump(mode="json"), "schema_version": 2, "new": 1},
]


def _leaf_paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield (*path, k)
            yield from _leaf_paths(v, (*path, k))


@st.composite
def scenario_files(draw: st.DrawFn) -> bytes:
    """Saved-scenario bytes: a valid file with fields broken (NaN included), or arbitrary JSON-ish bytes."""
    if draw(st.integers(0, 3)) == 0:
        return draw(json_bytes())
    data = copy.deepcopy(draw(st.sampled_from(_SCENARIO_BASES)))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(list(_leaf_paths(data))))
        _set(data, path, draw(st.one_of(WEIRD, st.just(deep(200)))))
    return json.dumps(data).encode()  # NaN / Infinity written as JSON's non-standard constants


def check_scenario_file(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    is_scenario_file(path)  # never raises
    try:
        read_entry(path)
    except ScenarioFileError as err:
        one_line(str(err))
        return "refused"
    return "ok"


# ---------------------------------------------------------------------------------------------- safetensors, GGUF


def _safetensors_header(shape: list[Any], dtype: Any = "BF16", offsets: Any = None) -> dict[str, Any]:
    return {
        "__metadata__": {"format": "pt"},
        "model.embed_tokens.weight": {"dtype": dtype, "shape": shape, "data_offsets": offsets or [0, 0]},
    }


@st.composite
def safetensors_files(draw: st.DrawFn) -> tuple[bytes, int]:
    """(the start of a .safetensors file, the file's size): random bytes, or a header with fields broken."""
    kind = draw(st.sampled_from(["bytes", "header", "header", "json"]))
    if kind == "bytes":
        data = draw(st.binary(max_size=80))
        return data, len(data) + draw(st.integers(0, 100))
    if kind == "json":
        body = draw(json_bytes())
    else:
        dims = draw(st.lists(st.one_of(st.integers(0, 4096), WEIRD), max_size=10))
        header = _safetensors_header(
            dims, draw(st.sampled_from(["BF16", "F32", "I8", "U8", "F8_E4M3", "Q4", 7, None])), draw(WEIRD)
        )
        if draw(st.booleans()):
            ok_dims = [d for d in dims if isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**40]
            n = math.prod(ok_dims) * 2
            header["model.embed_tokens.weight"] = {"dtype": "BF16", "shape": ok_dims, "data_offsets": [0, n]}
        body = json.dumps(header).encode()
    data = struct.pack("<Q", len(body)) + body
    return data, len(data) + draw(st.sampled_from([0, 16, 2**40]))


def check_safetensors(data: bytes, file_size: int) -> str:
    try:
        entries, _ = parse_safetensors_header(data, file_size=file_size)
    except CheckpointError as err:
        one_line(str(err))
        return "refused"
    for name, (dtype, dims) in entries.items():
        if not all(isinstance(d, int) and d >= 0 for d in dims) or math.prod(dims) > MAX_TENSOR_ELEMENTS:
            raise AbsurdError(f"{name}: {dtype} {dims}")
    return "ok"


def _tiny_gguf() -> bytes:
    sys.path.insert(0, str(ROOT / "tests"))
    from fakehub import llama_gguf

    return llama_gguf(layers=1, vocab=32)[0]


GGUF = _tiny_gguf()


@st.composite
def gguf_files(draw: st.DrawFn) -> bytes:
    """A tiny valid GGUF file with bytes overwritten (single bytes, 8-byte counts and lengths) or cut short."""
    buf = bytearray(GGUF)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(buf) - 8))
        if draw(st.booleans()):
            buf[at] = draw(st.integers(0, 255))
        else:
            buf[at : at + 8] = struct.pack("<Q", draw(st.sampled_from([0, 1, 2**31, 2**63, 2**64 - 1, 10**9])))
    if draw(st.integers(0, 4)) == 0:
        buf = buf[: draw(st.integers(0, len(buf)))]
    return bytes(buf)


def check_gguf(buf: bytes) -> str:
    try:
        header = parse_gguf_header(buf, total_size=len(buf))
        header.data_end()
        cfg = gguf_to_config(header)
    except CheckpointError as err:
        one_line(str(err))
        return "refused"
    return check_config(cfg)


# ---------------------------------------------------------------------------------------------- the command line

#: options the generator leaves out: output and file options (the CLI property passes files of its own)
_SKIP = {"help", "json", "jsonl", "save", "deepspeed"}
#: counts, with "0", "-1" and "x" that argparse refuses (0 is allowed for --output-len and --n-gpu-layers)
_NUMBERS = ["1", "1", "2", "3", "4", "8", "16", "64", "512", "4096", "65536", "1000000", "2147483648", "0", "-1", "x"]
_FLOATS = ["0", "0.05", "0.5", "0.9", "1", "1.5", "20", "-1", "nan", "inf", "1e308", "1e-300", "abc"]
_STRINGS: dict[str, list[str]] = {
    "weights": [
        *("auto", "bf16", "fp8", "int8", "nf4", "nf4-dq", "gptq-int4", "awq-int4", "mxfp4", "q4_k_m", "q8_0"),
        *("fp32", "bogus", ""),
    ],
    "gpu": ["RTX 4090", "H100 SXM", "A100 80GB", "no such gpu"],
    "lora_targets": ["all-linear", "q,v", "q,k,v,o,gate,up,down", "zz", ","],
    "modules_to_save": ["embed", "lm_head", "embed,lm_head", "bogus"],
    "name": ["a", "x" * 300, "\u00e9\u4e2d"],
    "nodes": ["1", "1", "2", "8", "4096"],
    "gpus": ["1", "1", "2", "4", "8", "4096"],
}
MODELS = [
    "Qwen/Qwen3-4B",
    "Qwen/Qwen3-30B-A3B",
    "openai/gpt-oss-20b",
    "google/gemma-3-1b-it",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "deepseek-ai/DeepSeek-V3",
    "Qwen/Qwen3.5-35B-A3B",
    "Qwen/Qwen2.5-7B-Instruct-AWQ",
    "EleutherAI/pythia-70m",
    "no/such-model",
]


def _estimate_actions() -> list[argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices["estimate"]._actions if a.option_strings and a.dest not in _SKIP]


ACTIONS = _estimate_actions()


def _values(action: argparse.Action, nodes: list[str] | None = None) -> st.SearchStrategy[list[str]]:
    flag = max(action.option_strings, key=len)
    if isinstance(action, argparse.BooleanOptionalAction):
        return st.sampled_from([[flag], [flag.replace("--", "--no-", 1)]])
    if action.dest in _STRINGS:
        values = nodes if nodes is not None and action.dest == "nodes" else _STRINGS[action.dest]
        return st.sampled_from(values).map(lambda v: [flag, v])
    if action.choices is not None:
        return st.sampled_from([str(c) for c in action.choices] + ["bogus"]).map(lambda v: [flag, v])
    name = getattr(action.type, "__name__", "")
    pool = _NUMBERS if name in ("_positive", "_nonneg") or action.type is int else _FLOATS
    return st.sampled_from(pool).map(lambda v: [flag, v])


_MODE_KEYS = {
    "inference": {o.flag for o in options() if o.mode == "inference"},
    "finetune": {o.flag for o in options() if o.mode == "finetune"} | {"deepspeed"},
}


@st.composite
def estimate_argv(draw: st.DrawFn, model: str | None = None, nodes: list[str] | None = None) -> list[str]:
    """``estimate MODEL [random options over the real option list] [--json]``: mostly options of the mode drawn
    (so that many plans get as far as the estimator), sometimes any option."""
    argv = ["estimate", model or draw(st.sampled_from(MODELS))]
    mode = draw(st.sampled_from(["inference", "finetune", "any"]))
    actions = ACTIONS
    if mode != "any":
        other = _MODE_KEYS["finetune" if mode == "inference" else "inference"]
        actions = [a for a in ACTIONS if a.dest not in other and a.dest != "mode"]
        argv += ["--mode", mode]
    for action in draw(st.lists(st.sampled_from(actions), max_size=8, unique_by=lambda a: a.dest)):
        argv += draw(_values(action, nodes))
    if draw(st.integers(0, 3)):
        argv.append("--json")
    return argv


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``vramdesk.cli.main`` in-process: (exit status, stdout, stderr); argparse's exit is a status too."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv, out=out)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def check_cli(argv: list[str]) -> str:
    code, out, err = run_cli(argv)
    errors = [ln for ln in err.splitlines() if not ln.startswith("vramdesk: note: ")]
    if code == 0:
        assert out.strip(), f"exit 0 without output: {argv}"
        assert not errors, f"exit 0 with {errors!r}"
        if "--json" in argv:
            doc = json.loads(out)
            json.dumps(doc, allow_nan=False)
            assert_sane(doc)
        return "ok"
    assert code == 2, f"exit {code}: {err[-2000:]}"
    assert len(errors) == 1 and errors[0].startswith("vramdesk"), f"stderr is not one line: {err!r}"
    return "refused"


# ---------------------------------------------------------------------------------------------- --jsonl


@st.composite
def jsonl_batches(draw: st.DrawFn) -> list[bytes]:
    """Lines of a --jsonl batch: valid plans, and lines of every kind that used to spoil the batch."""
    good = st.sampled_from(
        [
            {"model": "Qwen/Qwen3-4B"},
            {"model": "Qwen/Qwen3-4B", "batch": 4, "input_len": 8192},
            {"model": "Qwen/Qwen3-4B", "mode": "finetune", "gpus": 2, "zero": 3},
        ]
    )
    line = st.one_of(
        good.map(lambda d: json.dumps(d).encode()),
        good.flatmap(lambda d: WEIRD.map(lambda v: json.dumps({**d, "batch": v}).encode())),
        good.flatmap(
            lambda d: st.sampled_from([*sorted(_STRINGS), "tp", "pp", "mode", "model", "zz"]).flatmap(
                lambda k: WEIRD.map(lambda v: json.dumps({**d, k: v}).encode())
            )
        ),
        json_bytes().map(lambda b: b.replace(b"\n", b" ")),
        st.just(b'{"model": "no/such-model"}'),
        st.just(b"   "),
    )
    return draw(st.lists(line, min_size=1, max_size=6))


def check_jsonl(path: Path, lines: list[bytes]) -> str:
    path.write_bytes(b"\n".join(lines) + b"\n")
    code, out, err = run_cli(["estimate", "--jsonl", str(path)])
    numbers = [i for i, ln in enumerate(lines, 1) if ln.strip()]
    results = out.splitlines()
    assert len(results) == len(numbers), f"{len(results)} results for {len(numbers)} lines: {err[-2000:]}"
    failed = 0
    for n, text in zip(numbers, results, strict=True):
        doc = json.loads(text)
        if "error" in doc:
            failed += 1
            assert doc["error"].startswith(f"line {n}: "), doc
            assert "internal error" not in doc["error"], doc  # a bug that the batch survived
        else:
            assert_sane(doc)
    assert code == (1 if failed else 0)
    return "refused" if failed else "ok"


CHECKS: dict[str, Callable[..., str]] = {
    "config": check_config,
    "json": check_json,
    "scenario": check_scenario_file,
    "safetensors": check_safetensors,
    "gguf": check_gguf,
    "cli": check_cli,
    "jsonl": check_jsonl,
}
