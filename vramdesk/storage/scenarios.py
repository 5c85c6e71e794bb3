"""Saved scenarios: JSON files with a schema version, written atomically (never half a file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vramdesk.core import jsonsafe
from vramdesk.core.messages import Message, Text, free, join
from vramdesk.core.scenario import SCHEMA_VERSION, Scenario
from vramdesk.error_words import said
from vramdesk.fsutil import atomic_write_text
from vramdesk.validation_text import error_message

MAX_SCENARIO_BYTES = 4 * 1024 * 1024

V0_NO_MODEL = Message("scenarios.v0_no_model", 'schema 0 file without a "model_id"')
V0_MODE = Message("scenarios.v0_mode", "schema 0: mode must be inference or finetune, got {mode!r}")
BAD_VERSION = Message("scenarios.bad_version", "schema_version must be a whole number, got {version!r}")
NEWER = Message(
    "scenarios.newer",
    "this scenario was saved by a newer vramdesk (schema {version}; this version reads up to {supported}): update "
    "vramdesk to open it",
)
FIELD_PROBLEM = Message("scenarios.field_problem", "{field}: {problem}")
VALUE_ERROR = Message("scenarios.value_error", "Value error, {problem}")
TOP_LEVEL = Message("scenarios.top_level", "(top level)")
NOT_OBJECT = Message("scenarios.not_object", "{source}: a scenario must be a JSON object")
FILE_FAILED = Message("scenarios.file_failed", "{source}: {problem}")
TOO_MANY_UNKNOWN = Message("scenarios.too_many_unknown", "{source}: too many unknown fields")
NO_SUCH_FILE = Message("scenarios.no_such_file", "{path}: no such file")
TOO_LARGE = Message("scenarios.too_large", "{path}: too large to be a scenario file")
NOT_JSON = Message("scenarios.not_json", "{path}: not a JSON scenario file ({problem})")
#: the window's notice when the scenario file it was started with cannot be opened
OPEN_FAILED = Message("scenarios.open_failed", "could not open the scenario file: {error}")
SHOWING_DEFAULT = Message("scenarios.showing_default", "showing the default scenario instead")


class ScenarioFileError(ValueError):
    """A scenario file that cannot be read; the message names the file and the field (a
    :class:`~vramdesk.core.messages.Text`, ``args[0]``)."""


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
        raise ScenarioFileError(V0_NO_MODEL())
    mode = data.pop("mode", "inference")
    if mode not in ("inference", "finetune"):
        raise ScenarioFileError(V0_MODE(mode=mode))
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
        raise ScenarioFileError(BAD_VERSION(version=version))
    return version


def _migrate(data: dict[str, Any]) -> dict[str, Any]:
    version = _version(data)
    if version > SCHEMA_VERSION:
        raise ScenarioFileError(NEWER(version=version, supported=SCHEMA_VERSION))
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version = _version(data)
    return data


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or TOP_LEVEL()
        parts.append(FIELD_PROBLEM(field=loc, problem=_problem(e)))
    return parts[0] if len(parts) == 1 else join("; ", *parts)


def _problem(e: Any) -> str:
    """pydantic's message of one error, with its id where it has one (a validator's own Text after pydantic's
    "Value error, ", or one of pydantic's own error types)."""
    message = error_message(e)
    if e.get("type") == "value_error" and isinstance(message, Text):
        return VALUE_ERROR(problem=message)
    return message if isinstance(message, Text) else free(str(e["msg"]))


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioFileError(NOT_OBJECT(source=source))
    data = {k: v for k, v in data.items() if k != LIBRARY_KEY}
    try:
        return Scenario.model_validate(_migrate(data))
    except ScenarioFileError as err:
        raise ScenarioFileError(FILE_FAILED(source=source, problem=said(err))) from err
    except ValidationError as err:
        raise ScenarioFileError(FILE_FAILED(source=source, problem=_describe(err))) from err


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
                raise ScenarioFileError(FILE_FAILED(source=source, problem=_describe(err))) from err
            for loc in extra:
                _drop(data, loc)
    raise ScenarioFileError(TOO_MANY_UNKNOWN(source=source))  # pragma: no cover


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
        raise ScenarioFileError(NO_SUCH_FILE(path=str(path)))
    if path.stat().st_size > MAX_SCENARIO_BYTES:
        raise ScenarioFileError(TOO_LARGE(path=str(path)))
    try:
        return jsonsafe.loads(path.read_bytes(), source=str(path))
    except jsonsafe.JsonError as err:  # NaN, deep nesting, non-UTF-8 too: the library quarantines such a file
        raise ScenarioFileError(NOT_JSON(path=str(path), problem=free(err.problem))) from err


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
