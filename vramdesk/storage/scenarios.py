"""Saved scenarios: JSON files with a schema version, written atomically (never half a file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from vramdesk.core.scenario import SCHEMA_VERSION, Scenario
from vramdesk.fsutil import atomic_write_text

MAX_SCENARIO_BYTES = 4 * 1024 * 1024


class ScenarioFileError(ValueError):
    """A scenario file that cannot be read; the message names the file and the field."""


def dump_scenario(scenario: Scenario) -> str:
    return json.dumps(scenario.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def save_scenario(scenario: Scenario, path: Path) -> None:
    atomic_write_text(path, dump_scenario(scenario))


def _migrate(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise ScenarioFileError(f"schema_version must be a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise ScenarioFileError(
            f"this scenario was saved by a newer vramdesk (schema {version}; this version reads up to "
            f"{SCHEMA_VERSION}): update vramdesk to open it"
        )
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
    try:
        return Scenario.model_validate(_migrate(data))
    except ScenarioFileError as err:
        raise ScenarioFileError(f"{source}: {err}") from err
    except ValidationError as err:
        raise ScenarioFileError(f"{source}: {_describe(err)}") from err


def load_scenario(path: Path) -> Scenario:
    path = Path(path)
    if not path.is_file():
        raise ScenarioFileError(f"{path}: no such file")
    if path.stat().st_size > MAX_SCENARIO_BYTES:
        raise ScenarioFileError(f"{path}: too large to be a scenario file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ScenarioFileError(f"{path}: not a JSON scenario file ({err})") from err
    return parse_scenario(data, str(path))


def is_scenario_file(path: Path) -> bool:
    """A .json file that holds a scenario (has "model" and "workload"), not a model config."""
    try:
        if Path(path).stat().st_size > MAX_SCENARIO_BYTES:
            return False
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "model" in data and "workload" in data
