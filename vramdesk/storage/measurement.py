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

from vramdesk.core import jsonsafe
from vramdesk.core.messages import Message
from vramdesk.core.scenario import Scenario
from vramdesk.fsutil import atomic_write_text

FORMAT = "vramdesk-measurement/1"
_PREFIX = "vramdesk-measurement/"

NOT_JSON = Message("measurement.read.not_json", "{path}: not a JSON measurement file ({problem})")
TOO_LARGE = Message(
    "measurement.read.too_large", "{path}: {mib:.1f} MiB is larger than a measurement file can be ({most} MiB)"
)
#: a measurement file is a few KiB; larger than this is not one (read whole, so bounded first)
MAX_MEASUREMENT_BYTES = 4 * 1024 * 1024
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
    local = ref.endswith((".json", ".gguf")) or ref.startswith((".", "/", "~")) or "\\" in ref or ":" in ref
    if local or ref.count("/") > 1 or _on_disk(ref):
        plan["model"]["id"] = PurePath(ref.replace("\\", "/")).name or "model"
    return plan


def _on_disk(ref: str) -> bool:
    """``ref`` names a local file or folder (a relative "runs/mine" looks like a Hub id but is a path)."""
    try:
        return bool(ref) and Path(ref).expanduser().exists()
    except (OSError, ValueError):
        return False


def write_measurement(path: Path, measurement: Measurement) -> None:
    atomic_write_text(path, json.dumps(measurement.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")


def _where(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    return ".".join(str(p) for p in first["loc"]) or "(top)", str(first["msg"])


def read_measurement(path: Path) -> Measurement:
    """The measurement in ``path``; MeasurementError with one line for a bad or newer file."""
    try:
        size = Path(path).stat().st_size
        if size > MAX_MEASUREMENT_BYTES:
            raise MeasurementError(TOO_LARGE(path=str(path), mib=size / 2**20, most=MAX_MEASUREMENT_BYTES // 2**20))
        # (strict JSON: no NaN, bounded nesting, non-UTF-8 named)
        data = jsonsafe.loads(Path(path).read_bytes(), source="")
    except OSError as err:
        raise MeasurementError(NOT_JSON(path=str(path), problem=" ".join(str(err).split()))) from err
    except jsonsafe.JsonError as err:
        raise MeasurementError(NOT_JSON(path=str(path), problem=err.problem)) from err
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
