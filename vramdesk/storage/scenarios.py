"""Saved scenarios: JSON files with a schema version, written atomically (never half a file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vramdesk.core import jsonsafe
from vramdesk.core.scenario import SCHEMA_VERSION, Scenario
from vramdesk.fsutil import atomic_write_text

MAX_SCENARIO_BYTES = 4 * 1024 * 1024


class ScenarioFileError(ValueError):
    """A scenario file that cannot be read; the message names the file and the field."""


def dump_scenario(scenario: Scenario) -> str:
    return json.dumps(scenario.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def save_scenario(scenario: Scenario, path: Path) -> None:
    atomic_write_text(path, dump_scenario(scenario))


#: Schema 0 (never released in a tagged version; written by early development builds) was a flat object:
#:
#: ``{"schema_version": 0, "name"?, "model_id", "mode": "inference"|"finetune", "dtype"?, "engine"?,
#: "batch_size"?, "prompt_tokens"?, "new_tokens"?, "kv_cache_dtype"?, "seq_len"?, "finetune_method"?,
#: "optimizer"?, "lora_r"?, "gpu"?, "num_gpus"?, "tensor_parallel"?}``
#:
#: Schema 1 nests these under ``model`` / ``workload`` / ``hardware`` / ``parallelism`` (core.scenario).
_V0_INFERENCE = {"batch_size": "batch", "prompt_tokens": "input_len", "new_tokens": "output_len"}
_V0_FINETUNE = {"batch_size": "micro_batch", "seq_len": "seq_len", "finetune_method": "method", "lora_r": "lora_rank"}


def _v0_to_v1(old: dict[str, Any]) -> dict[str, Any]:
    data = dict(old)
    model = data.pop("model_id", None)
    if not isinstance(model, str):
        raise ScenarioFileError('schema 0 file without a "model_id"')
    mode = data.pop("mode", "inference")
    if mode not in ("inference", "finetune"):
        raise ScenarioFileError(f"schema 0: mode must be inference or finetune, got {mode!r}")
    work: dict[str, Any] = {"kind": mode}
    for key, new in (_V0_INFERENCE if mode == "inference" else _V0_FINETUNE).items():
        if key in data:
            work[new] = data.pop(key)
    for key in (*_V0_INFERENCE, *_V0_FINETUNE):
        data.pop(key, None)  # a field of the other mode: schema 0 ignored it as well
    if mode == "inference":
        if "engine" in data:
            work["engine"] = data.pop("engine")
        if "kv_cache_dtype" in data:
            work["kv_dtype"] = data.pop("kv_cache_dtype")
    elif "optimizer" in data:
        work["optimizer"] = data.pop("optimizer")
    data.pop("engine", None)
    data.pop("kv_cache_dtype", None)
    data.pop("optimizer", None)
    out: dict[str, Any] = {"schema_version": 1, "model": {"id": model}, "workload": work}
    if "name" in data:
        out["name"] = data.pop("name")
    if "dtype" in data:
        out["weights"] = data.pop("dtype")
    hardware: dict[str, Any] = {}
    if "gpu" in data:
        hardware["gpu"] = data.pop("gpu")
    if "num_gpus" in data:
        hardware["gpu_count"] = data.pop("num_gpus")
    if hardware:
        out["hardware"] = hardware
    if "tensor_parallel" in data:
        out["parallelism"] = {"tp": data.pop("tensor_parallel")}
    data.pop("schema_version", None)
    out.update(data)  # anything else is left for validation to name
    return out


#: version -> function that lifts a dict of that version by one step
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _v0_to_v1}
#: a top-level key a library file may carry next to the scenario (tags, ...); not part of the Scenario
LIBRARY_KEY = "library"


def _version(data: dict[str, Any]) -> int:
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ScenarioFileError(f"schema_version must be a whole number, got {version!r}")
    return version


def _migrate(data: dict[str, Any]) -> dict[str, Any]:
    version = _version(data)
    if version > SCHEMA_VERSION:
        raise ScenarioFileError(
            f"this scenario was saved by a newer vramdesk (schema {version}; this version reads up to "
            f"{SCHEMA_VERSION}): update vramdesk to open it"
        )
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version = _version(data)
    return data


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioFileError(f"{source}: a scenario must be a JSON object")
    data = {k: v for k, v in data.items() if k != LIBRARY_KEY}
    try:
        return Scenario.model_validate(_migrate(data))
    except ScenarioFileError as err:
        raise ScenarioFileError(f"{source}: {err}") from err
    except ValidationError as err:
        raise ScenarioFileError(f"{source}: {_describe(err)}") from err


def parse_newer(data: dict[str, Any], source: str = "scenario") -> Scenario:
    """Best effort for a file from a newer vramdesk: the fields this version knows, the rest dropped.

    The caller must treat the result as read-only (saving it back would lose the newer fields)."""
    data = {k: v for k, v in data.items() if k != LIBRARY_KEY}
    data["schema_version"] = SCHEMA_VERSION
    for _ in range(50):
        try:
            return Scenario.model_validate(data)
        except ValidationError as err:
            extra = [e["loc"] for e in err.errors() if e["type"] == "extra_forbidden"]
            if not extra:
                raise ScenarioFileError(f"{source}: {_describe(err)}") from err
            for loc in extra:
                _drop(data, loc)
    raise ScenarioFileError(f"{source}: too many unknown fields")  # pragma: no cover


def _drop(data: dict[str, Any], loc: tuple[Any, ...]) -> None:
    node: Any = data
    for key in loc[:-1]:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, dict) and node.get("kind") == key:
            continue  # a discriminated-union tag ("inference") in the location path
        else:
            return
    if isinstance(node, dict):
        node.pop(loc[-1], None)


def read_json(path: Path) -> Any:
    """The JSON content of a scenario file; ScenarioFileError when it is missing, too large or not JSON."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioFileError(f"{path}: no such file")
    if path.stat().st_size > MAX_SCENARIO_BYTES:
        raise ScenarioFileError(f"{path}: too large to be a scenario file")
    try:
        return jsonsafe.loads(path.read_bytes(), source=str(path))
    except jsonsafe.JsonError as err:  # NaN, deep nesting, non-UTF-8 too: the library quarantines such a file
        raise ScenarioFileError(f"{path}: not a JSON scenario file ({err.problem})") from err


def load_scenario(path: Path) -> Scenario:
    return parse_scenario(read_json(path), str(path))


def is_scenario_file(path: Path) -> bool:
    """A .json file that holds a scenario (has "model" and "workload"), not a model config."""
    try:
        if Path(path).stat().st_size > MAX_SCENARIO_BYTES:
            return False
        data = jsonsafe.loads(Path(path).read_bytes(), source=str(path))
    except (OSError, jsonsafe.JsonError):
        return False
    return isinstance(data, dict) and "model" in data and "workload" in data
