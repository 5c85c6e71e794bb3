"""The measurement file (vramdesk-measurement/1): written atomically, read back strictly, no personal data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vramdesk.core.scenario import Scenario
from vramdesk.storage.measurement import (
    MAX_MEASUREMENT_BYTES,
    Measurement,
    MeasurementError,
    ModelIdentity,
    PhaseFigures,
    config_hash,
    public_plan,
    read_measurement,
    write_measurement,
)


def _measurement(model_id: str = "meta-llama/Llama-3.2-1B") -> Measurement:
    scenario = Scenario.model_validate({"model": {"id": model_id}, "workload": {"kind": "inference"}})
    return Measurement(
        kind="trace",
        plan=public_plan(scenario),
        model=ModelIdentity(model_type="llama", config_sha256=config_hash({"model_type": "llama"})),
        versions={"torch": "2.14.1"},
        phases=(PhaseFigures(name="load", allocated_bytes=1024, reserved_bytes=2 << 20),),
        peak_allocated_bytes=1024,
        peak_reserved_bytes=2 << 20,
    )


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    write_measurement(path, _measurement())
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "vramdesk-measurement/1"
    assert data["plan"]["model"]["id"] == "meta-llama/Llama-3.2-1B"
    assert read_measurement(path) == _measurement()


def test_a_local_path_keeps_only_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.json"
    private = tmp_path / "someone" / "secret-run" / "config.json"
    write_measurement(path, _measurement(str(private)))
    text = path.read_text(encoding="utf-8")
    assert "someone" not in text and str(tmp_path) not in text
    assert json.loads(text)["plan"]["model"]["id"] == "config.json"
    # a relative folder that exists reads like a Hub id ("owner/name") but is a path
    (tmp_path / "runs" / "mine").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    write_measurement(path, _measurement("runs/mine"))
    assert json.loads(path.read_text(encoding="utf-8"))["plan"]["model"]["id"] == "mine"
    write_measurement(path, _measurement("meta-llama/Llama-3.2-1B"))  # a Hub id stays
    assert json.loads(path.read_text(encoding="utf-8"))["plan"]["model"]["id"] == "meta-llama/Llama-3.2-1B"


def test_a_huge_nan_or_non_utf8_file_is_refused_in_one_line(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_MEASUREMENT_BYTES + 1))
    for path, words in (
        (big, "larger than a measurement file can be"),
        (_write(tmp_path / "nan.json", b'{"format": NaN}'), "not a JSON measurement file"),
        (_write(tmp_path / "bytes.json", b'{"format": "\xff"}'), "not a JSON measurement file"),
        (_write(tmp_path / "deep.json", b"[" * 10_000 + b"]" * 10_000), "not a JSON measurement file"),
    ):
        with pytest.raises(MeasurementError) as err:
            read_measurement(path)
        assert words in str(err.value) and "\n" not in str(err.value)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_the_config_hash_ignores_key_order() -> None:
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1}) != config_hash({"a": 1, "b": 3})


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            {"format": "vramdesk-measurement/2"},
            "written by a newer vramdesk (format vramdesk-measurement/2); this one reads vramdesk-measurement/1",
        ),
        ({"format": "something-else"}, "not a vramdesk measurement file (format 'something-else')"),
        ({"peak_allocated_bytes": -1}, "peak_allocated_bytes: Input should be greater than or equal to 0"),
        ({"token": "hf_abc"}, "token: Extra inputs are not permitted"),
        ({"kind": "guess"}, "kind: Input should be 'trace' or 'measure'"),
    ],
)
def test_bad_files_are_refused_in_one_line(tmp_path: Path, change: dict[str, object], words: str) -> None:
    path = tmp_path / "m.json"
    write_measurement(path, _measurement())
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(change)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(MeasurementError) as err:
        read_measurement(path)
    assert str(err.value) == f"{path}: {words}"
    assert "\n" not in str(err.value)


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(MeasurementError, match=r"not a JSON measurement file"):
        read_measurement(path)
