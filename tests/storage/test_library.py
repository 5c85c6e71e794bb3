"""The library of saved configurations: round trips, migrations, damaged files kept aside, kills mid-write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from samples import variant

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import SCHEMA_VERSION
from vramdesk.storage import library as lib
from vramdesk.storage.library import LibraryError, ScenarioLibrary
from vramdesk.storage.paths import DATA_DIR_ENV, data_dir, library_dir
from vramdesk.storage.scenarios import ScenarioFileError, load_scenario


def test_data_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    assert data_dir() == tmp_path / "data"
    assert ScenarioLibrary().root == library_dir() == tmp_path / "data" / "scenarios"
    assert lib.autosave_dir() == tmp_path / "data" / "autosave"
    assert lib.legacy_autosave_path() == tmp_path / "data" / "autosave.json"
    monkeypatch.delenv(DATA_DIR_ENV)
    assert "vramdesk" in str(data_dir())


def test_save_get_round_trip(library: ScenarioLibrary) -> None:
    entry = library.save(DEFAULT_SCENARIO, name="4090 plan", tags=["team", "team", " "])
    assert entry.id == "4090-plan.vramdesk.json" and entry.path.parent == library.root
    assert entry.scenario == DEFAULT_SCENARIO.model_copy(update={"name": "4090 plan"})
    assert entry.tags == ("team",) and not entry.read_only
    again = library.get(entry.id)
    assert again.scenario == entry.scenario and again.tags == ("team",)
    # the file is the Scenario format (plus the library object) and loads as a plain scenario too
    raw = json.loads(entry.path.read_text())
    assert raw["schema_version"] == SCHEMA_VERSION and raw["library"] == {"tags": ["team"], "revision": 1}
    assert load_scenario(entry.path) == entry.scenario
    # a second save with the same name never overwrites the first
    second = library.save(DEFAULT_SCENARIO, name="4090 plan")
    assert second.id == "4090-plan-2.vramdesk.json"
    assert {e.id for e in library.entries()} == {entry.id, second.id}


def test_rename_duplicate_tag_update_delete(library: ScenarioLibrary) -> None:
    a = library.save(DEFAULT_SCENARIO, name="a")
    renamed = library.rename(a.id, "bee")
    assert renamed.id == "bee.vramdesk.json" and renamed.scenario.name == "bee"
    assert not a.path.exists()
    copy = library.duplicate(renamed.id)
    assert copy.scenario.name == "bee (copy)" and copy.id != renamed.id
    tagged = library.set_tags(copy.id, ["int4", "cheap"])
    assert tagged.tags == ("int4", "cheap")
    assert [e.id for e in library.with_tag("cheap")] == [copy.id]
    updated = library.update(copy.id, variant(batch=8))
    assert updated.scenario.workload.batch == 8  # type: ignore[union-attr]
    assert updated.scenario.name == "bee (copy)" and updated.tags == ("int4", "cheap")
    moved = library.delete(copy.id)
    assert moved.parent == library.trash_dir and json.loads(moved.read_text())["workload"]["batch"] == 8
    assert [e.id for e in library.entries()] == [renamed.id]
    with pytest.raises(LibraryError, match="no saved configuration"):
        library.get(copy.id)
    with pytest.raises(LibraryError):
        library.get("../escape.json")
    with pytest.raises(LibraryError, match="empty"):
        library.rename(renamed.id, "  ")


def test_import_and_export(library: ScenarioLibrary, tmp_path: Path) -> None:
    src = tmp_path / "mine.json"
    src.write_text(json.dumps({"model": {"id": "Qwen/Qwen3-8B"}, "name": "eight", "library": {"tags": ["x"]}}))
    entry = library.import_file(src, tags=["imported"])
    assert entry.scenario.model.id == "Qwen/Qwen3-8B" and entry.tags == ("x", "imported")
    out = library.export_file(entry.id, tmp_path / "out.vramdesk.json")
    assert load_scenario(out) == entry.scenario


# ---------------------------------------------------------------------------------------------- migrations

SCHEMA_0_INFERENCE = {
    "schema_version": 0,
    "name": "old 4090 plan",
    "model_id": "Qwen/Qwen3-4B",
    "mode": "inference",
    "dtype": "int4",
    "engine": "vllm",
    "batch_size": 4,
    "prompt_tokens": 2048,
    "new_tokens": 256,
    "kv_cache_dtype": "fp8",
    "gpu": "RTX 4090",
    "num_gpus": 2,
    "tensor_parallel": 2,
}


def test_schema_0_file_migrates(library: ScenarioLibrary) -> None:
    library.root.mkdir(parents=True)
    path = library.root / "old.vramdesk.json"
    path.write_text(json.dumps(SCHEMA_0_INFERENCE))
    s = load_scenario(path)
    assert s.schema_version == SCHEMA_VERSION and s.name == "old 4090 plan" and s.model.id == "Qwen/Qwen3-4B"
    assert s.weights == "int4"
    w = s.workload
    assert w.kind == "inference"
    assert (w.engine, w.batch, w.input_len, w.output_len, w.kv_dtype) == ("vllm", 4, 2048, 256, "fp8")
    assert (s.hardware.gpu, s.hardware.gpu_count, s.parallelism.tp) == ("RTX 4090", 2, 2)
    # the library reads it too, and its next save writes the current schema
    entry = library.get(path.name)
    assert not entry.read_only
    library.set_tags(entry.id, ["migrated"])
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION


def test_schema_0_finetune_and_bad_schema_0(tmp_path: Path) -> None:
    path = tmp_path / "ft.json"
    path.write_text(
        json.dumps(
            {
                "schema_version": 0,
                "model_id": "Qwen/Qwen3-4B",
                "mode": "finetune",
                "finetune_method": "qlora",
                "batch_size": 2,
                "seq_len": 1024,
                "lora_r": 32,
                "optimizer": "adamw-8bit",
                "prompt_tokens": 9,  # an inference field: schema 0 ignored it in fine-tuning mode
            }
        )
    )
    w = load_scenario(path).workload
    assert w.kind == "finetune"
    assert (w.method, w.micro_batch, w.seq_len, w.lora_rank, w.optimizer) == ("qlora", 2, 1024, 32, "adamw-8bit")
    path.write_text(json.dumps({"schema_version": 0, "mode": "inference"}))
    with pytest.raises(ScenarioFileError, match="model_id"):
        load_scenario(path)


def test_newer_file_opens_read_only(library: ScenarioLibrary) -> None:
    library.root.mkdir(parents=True)
    data = DEFAULT_SCENARIO.model_dump(mode="json")
    data["schema_version"] = SCHEMA_VERSION + 1
    data["future_top"] = {"x": 1}
    data["workload"]["future_knob"] = True
    path = library.root / "future.vramdesk.json"
    text = json.dumps(data)
    path.write_text(text)
    entry = library.get(path.name)
    assert entry.read_only and entry.note is not None and "newer vramdesk" in entry.note
    assert entry.scenario.model.id == DEFAULT_SCENARIO.model.id
    assert entry.scenario.workload == DEFAULT_SCENARIO.workload
    for action in (
        lambda: library.update(entry.id, DEFAULT_SCENARIO),
        lambda: library.rename(entry.id, "x"),
        lambda: library.set_tags(entry.id, ["x"]),
    ):
        with pytest.raises(LibraryError, match="read-only"):
            action()
    copy = library.duplicate(entry.id)  # a copy in this version's schema is allowed
    assert not copy.read_only
    assert path.read_text() == text  # the newer file is untouched
    # the plain loader (the CLI's `estimate`) still says to update
    with pytest.raises(ScenarioFileError, match="newer vramdesk"):
        load_scenario(path)


# ---------------------------------------------------------------------------------------------- damaged files


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "not a JSON scenario file"),
        (b'{"schema_version": 1, "model": {"id": "Qwen/Qw', "not a JSON scenario file"),  # truncated
        (b"\x00\x01binary garbage\xff", "not a JSON scenario file"),
        (b"[1, 2, 3]", "must be a JSON object"),
        (b'{"schema_version": "one", "model": {"id": "a/b"}}', "schema_version"),
        (b'{"model": {"id": "a/b"}, "workload": {"batch": -1}}', "batch"),
    ],
)
def test_damaged_files_are_moved_aside_and_reported(library: ScenarioLibrary, content: bytes, reason: str) -> None:
    good = library.save(DEFAULT_SCENARIO, name="good")
    bad = library.root / "bad.vramdesk.json"
    bad.write_bytes(content)
    scan = library.scan()
    assert [e.id for e in scan.entries] == [good.id]
    [q] = scan.quarantined
    assert q.original == bad and not bad.exists() and reason in q.reason
    assert q.moved_to.parent == library.corrupted_dir
    assert q.moved_to.read_bytes() == content  # kept, byte for byte
    assert library.last_quarantined == scan.quarantined
    # a second scan finds nothing new to move, and a second bad file with the same name gets its own name
    bad.write_bytes(content)
    assert len(library.scan().quarantined) == 1
    assert len(list(library.corrupted_dir.iterdir())) == 2


# ---------------------------------------------------------------------------------------------- kill mid-write

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from vramdesk.core.defaults import DEFAULT_SCENARIO
    from vramdesk.storage.library import file_text
    from vramdesk.fsutil import atomic_write_text

    path = Path(sys.argv[1])
    texts = [file_text(DEFAULT_SCENARIO.model_copy(update={"name": c * 190}), [c * 50] * 400) for c in "ab"]
    print("ready", flush=True)
    i = 0
    while True:
        atomic_write_text(path, texts[i % 2])
        i += 1
    """
)


def test_killing_a_save_mid_write_leaves_a_whole_file(library: ScenarioLibrary, tmp_path: Path) -> None:
    first = library.save(DEFAULT_SCENARIO, name="victim")
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    names = set()
    for delay in (0.05, 0.11, 0.17):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(first.path)], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
        entry = library.get(first.id)  # parses: the old file or a new one, never half of one
        assert entry.scenario.name in ("a" * 190, "b" * 190)
        assert len(entry.tags) == 1 and entry.tags[0] in ("a" * 50, "b" * 50)
        names.add(entry.scenario.name)
    # leftovers of a killed write are temporaries the library never lists
    assert [e.id for e in library.entries()] == [first.id]
    assert all(p.name.startswith(".") for p in library.root.iterdir() if p.is_file() and p != first.path)


# ---------------------------------------------------------------------------------------------- autosave


CRASHING_WINDOW = textwrap.dedent(
    """
    import os, sys
    from vramdesk.core.defaults import DEFAULT_SCENARIO
    from vramdesk.storage.library import Autosave

    data = DEFAULT_SCENARIO.model_dump(mode="json")
    data["workload"]["batch"] = int(sys.argv[1])
    store = Autosave()  # kept alive, as the window keeps its own: its lock is held while it exists
    store.write(type(DEFAULT_SCENARIO).model_validate(data))
    print("written", flush=True)
    if sys.argv[2] == "crash":
        os._exit(9)  # no clean exit: the autosave stays and the OS frees its lock
    sys.stdin.readline()  # a window that keeps running
    """
)


def test_each_window_has_its_own_autosave_and_a_crashed_ones_is_offered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    script = tmp_path / "window.py"
    script.write_text(CRASHING_WINDOW)
    env = {**os.environ, DATA_DIR_ENV: str(tmp_path)}
    # a window still running elsewhere: its autosave is its own, never offered, never cleared by us
    running = subprocess.Popen(
        [sys.executable, str(script), "5", "run"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert running.stdout is not None and running.stdout.readline().strip() == "written"
        mine = lib.Autosave()
        assert mine.orphans() == []
        mine.write(variant(batch=3))
        assert mine.orphans() == []  # our own work is not "left by a crash"
        mine.clear()
        assert not mine.path.exists() and len(list(lib.autosave_dir().glob("*.json"))) == 1  # the other window's stays
        # that window crashes after an autosave: the next start offers it, once
        crashed = subprocess.run(
            [sys.executable, str(script), "7", "crash"], capture_output=True, text=True, env=env, check=False
        )
        assert crashed.returncode == 9
        after = lib.Autosave()
        [orphan] = after.orphans()
        assert orphan.scenario.workload.batch == 7  # type: ignore[union-attr]
        after.settle(orphan)
        assert after.orphans() == []
        [kept] = list((lib.autosave_dir() / "settled").iterdir())  # declined or restored, it is kept
        assert json.loads(kept.read_text())["workload"]["batch"] == 7
    finally:
        running.kill()
        running.communicate(timeout=10)


def test_a_damaged_or_legacy_autosave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    # the single autosave.json of earlier versions is offered back like a crashed window's
    lib.legacy_autosave_path().write_text(lib.file_text(variant(batch=4)))
    [orphan] = lib.Autosave().orphans()
    assert orphan.scenario.workload.batch == 4  # type: ignore[union-attr]
    lib.Autosave().settle(orphan)
    assert not lib.legacy_autosave_path().exists()
    lib.autosave_dir().mkdir(exist_ok=True)
    (lib.autosave_dir() / "123-456.json").write_text("{half")
    assert lib.Autosave().orphans() == []
    [moved] = list((lib.autosave_dir() / "corrupted").iterdir())
    assert moved.read_text() == "{half"
