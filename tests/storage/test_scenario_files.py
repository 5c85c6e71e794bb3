"""Scenario files: round trip, atomic writes that never leave half a file, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vramdesk import fsutil
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.storage import scenarios as st


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "default.json"
    st.save_scenario(DEFAULT_SCENARIO, path)
    assert st.load_scenario(path) == DEFAULT_SCENARIO
    assert json.loads(path.read_text())["schema_version"] == 1
    assert st.is_scenario_file(path)


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.json"
    st.save_scenario(DEFAULT_SCENARIO, path)
    before = path.read_text()

    def boom(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(fsutil.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        st.save_scenario(DEFAULT_SCENARIO.model_copy(update={"name": "changed"}), path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]  # no temporary left behind


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not a JSON scenario file"),
        ("[1, 2]", "must be a JSON object"),
        (json.dumps({"schema_version": 99, "model": {"id": "a/b"}}), "newer vramdesk"),
        (
            json.dumps({"model": {"id": "a/b"}, "workload": {"kind": "inference", "batch": 0}}),
            "workload.inference.batch",
        ),
        (json.dumps({"model": {"id": "a/b"}, "hardware": {"gpu_count": 1}, "parallelism": {"tp": 2}}), "tp (2)"),
        (json.dumps({"model": {"id": ""}}), "model.id"),
        (json.dumps({"model": {"id": "a/b"}, "surprise": 1}), "surprise"),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(st.ScenarioFileError) as exc:
        st.load_scenario(path)
    assert message in str(exc.value) and str(path) in str(exc.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(st.ScenarioFileError, match="no such file"):
        st.load_scenario(tmp_path / "nope.json")
