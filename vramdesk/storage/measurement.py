"""The measurement file a user can export and attach to a bug report: ``vramdesk-measurement/1``, JSON.

``{"format", "kind" ("trace" | "measure"), "plan" (the scenario, saved-file shape), "model" {"model_type",
"config_sha256"}, "versions", "phases" [{"name", "allocated_bytes", "reserved_bytes"}], "peak_allocated_bytes",
"peak_reserved_bytes", "estimate" (null, or {"peak_allocated_bytes", "peak_reserved_bytes", "phases" [{"name",
"allocated_bytes"}]})}``. It holds no path, user name, host name or token: a model given as a local path is
kept as its file name. Written atomically; read back strictly (a newer format, a missing or unknown key, a wrong
type: one line that names it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from vramdesk.core.messages import Message
from vramdesk.core.scenario import Scenario
from vramdesk.fsutil import atomic_write_text

FORMAT = "vramdesk-measurement/1"
_PREFIX = "vramdesk-measurement/"

NOT_JSON = Message("measurement.read.not_json", "{path}: not a JSON measurement file ({problem})")
NOT_MEASUREMENT = Message("measurement.read.format", "{path}: not a vramdesk measurement file (format {got})")
NEWER = Message("measurement.read.newer", "{path}: written by a newer vramdesk (format {got}); this one reads {known}")
BAD_FIELD = Message("measurement.read.field", "{path}: {where}: {problem}")


class MeasurementError(ValueError):
    """A measurement file that cannot be read; ``args[0]`` is its one-line Text."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PhaseFigures(_Strict):
    name: str = Field(min_length=1, max_length=200)
    allocated_bytes: StrictInt = Field(ge=0)
    reserved_bytes: StrictInt | None = Field(default=None, ge=0)


class ModelIdentity(_Strict):
    model_type: str = Field(max_length=200)
    config_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class EstimateFigures(_Strict):
    peak_allocated_bytes: StrictInt = Field(ge=0)
    peak_reserved_bytes: StrictInt = Field(ge=0)
    phases: tuple[PhaseFigures, ...]


class Measurement(_Strict):
    format: Literal["vramdesk-measurement/1"] = "vramdesk-measurement/1"
    kind: Literal["trace", "measure"]
    plan: dict[str, Any]
    model: ModelIdentity
    versions: dict[str, str]
    phases: tuple[PhaseFigures, ...]
    peak_allocated_bytes: StrictInt = Field(ge=0)
    peak_reserved_bytes: StrictInt = Field(ge=0)
    estimate: EstimateFigures | None = None


def config_hash(config: dict[str, Any]) -> str:
    """SHA-256 of the config as canonical JSON (sorted keys, no spaces): the same config, the same hash."""
    canon = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def public_plan(scenario: Scenario) -> dict[str, Any]:
    """The scenario as saved, with a local model path cut to its file or folder name (no user or host names)."""
    plan: dict[str, Any] = scenario.model_dump(mode="json")
    ref = str(plan.get("model", {}).get("id", ""))
    if ref.endswith((".json", ".gguf")) or ref.startswith((".", "/", "~")) or "\\" in ref or ref.count("/") > 1:
        plan["model"]["id"] = PurePath(ref.replace("\\", "/")).name or "model"
    return plan


def write_measurement(path: Path, measurement: Measurement) -> None:
    atomic_write_text(path, json.dumps(measurement.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")


def _where(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    return ".".join(str(p) for p in first["loc"]) or "(top)", str(first["msg"])


def read_measurement(path: Path) -> Measurement:
    """The measurement in ``path``; MeasurementError with one line for a bad or newer file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise MeasurementError(NOT_JSON(path=str(path), problem=" ".join(str(err).split()))) from err
    got = data.get("format") if isinstance(data, dict) else None
    if got != FORMAT:
        if isinstance(got, str) and got.startswith(_PREFIX) and got[len(_PREFIX) :].isdigit():
            raise MeasurementError(NEWER(path=str(path), got=got, known=FORMAT))
        raise MeasurementError(NOT_MEASUREMENT(path=str(path), got=repr(got)))
    try:
        return Measurement.model_validate(data)
    except ValidationError as err:
        where, problem = _where(err)
        raise MeasurementError(BAD_FIELD(path=str(path), where=where, problem=problem)) from err
