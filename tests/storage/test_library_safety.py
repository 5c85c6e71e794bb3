"""Nothing a user saves is lost (issue 18): two processes saving one name, names checked before anything moves,
file names every platform can hold, versions instead of overwrites, a lock a killed process gives back, a full
disk, and a library folder that cannot be written or holds a file that cannot be read."""

from __future__ import annotations

import errno
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
from vramdesk.storage import library as lib
from vramdesk.storage.library import NAME_MAX, LibraryError, ScenarioLibrary, StaleEntryError, slug


def listing(library: ScenarioLibrary) -> list[str]:
    return sorted(p.name for p in library.root.iterdir() if p.is_file() and not p.name.startswith("."))


# ---------------------------------------------------------------------------------------------- two processes

SAVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from vramdesk.core.defaults import DEFAULT_SCENARIO
    from vramdesk.storage.library import ScenarioLibrary

    base, who, trials, saves = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    print("ready", flush=True)
    while not (base / "go").exists():
        time.sleep(0.001)
    for t in range(trials):
        library = ScenarioLibrary(base / f"trial-{t}")
        for i in range(saves):
            sc = DEFAULT_SCENARIO.model_copy(update={"name": "same name"})
            data = sc.model_dump(mode="json")
            data["workload"]["batch"] = 1 + i
            data["workload"]["output_len"] = 100 + (0 if who == "a" else 1)
            library.save(type(sc).model_validate(data))
    print("done", flush=True)
    """
)


def test_two_processes_saving_one_name_both_keep_every_save(tmp_path: Path) -> None:
    """2 processes x 10 saves of one name x 20 trials: 20 entries in every trial, each save's content intact."""
    trials, saves = 20, 10
    script = tmp_path / "saver.py"
    script.write_text(SAVER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), who, str(trials), str(saves)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for who in ("a", "b")
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    (tmp_path / "go").touch()
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "done"
    for t in range(trials):
        library = ScenarioLibrary(tmp_path / f"trial-{t}")
        scan = library.scan()
        assert not scan.quarantined
        got = sorted((e.scenario.workload.output_len, e.scenario.workload.batch) for e in scan.entries)  # type: ignore[union-attr]
        assert got == sorted((100 + w, 1 + i) for w in (0, 1) for i in range(saves)), f"trial {t}"


def test_a_killed_lock_holder_does_not_block_the_library(library: ScenarioLibrary, tmp_path: Path) -> None:
    library.save(DEFAULT_SCENARIO, name="before")
    holder = tmp_path / "holder.py"
    holder.write_text(
        textwrap.dedent(
            f"""
            from filelock import FileLock
            lock = FileLock({str(library.root / ".lock")!r})
            lock.acquire()
            print("locked", flush=True)
            import time
            time.sleep(60)
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(holder)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    proc.stdout.close()
    entry = library.save(DEFAULT_SCENARIO, name="after")  # the kernel released the dead holder's lock
    assert entry.id == "after.vramdesk.json"


def test_a_busy_library_refuses_in_one_line_and_writes_nothing(
    library: ScenarioLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lib, "LOCK_TIMEOUT_S", 0.05)
    library.root.mkdir(parents=True)
    # held by another process (filelock shares one lock between the objects of one process)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from filelock import FileLock; import sys, time; "
            f"lock = FileLock({str(library.root / '.lock')!r}); lock.acquire(); "
            "print('locked', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(LibraryError, match=r"is busy .* nothing was saved") as err:
            library.save(DEFAULT_SCENARIO, name="x")
        assert "\n" not in str(err.value)
        assert listing(library) == []
    finally:
        proc.kill()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()


# ---------------------------------------------------------------------------------------------- names


def test_a_name_too_long_is_refused_before_anything_changes(library: ScenarioLibrary) -> None:
    entry = library.save(variant(batch=3), name="keep me")
    before = entry.path.read_bytes()
    long = "x" * 300
    with pytest.raises(LibraryError, match=rf"at most {NAME_MAX} characters; this one has 300"):
        library.rename(entry.id, long)
    with pytest.raises(LibraryError, match="at most"):
        library.save(DEFAULT_SCENARIO, name=long)
    # nothing deleted, nothing new, nothing moved aside
    assert entry.path.read_bytes() == before
    assert listing(library) == [entry.id]
    assert not library.corrupted_dir.exists()
    assert library.scan().entries[0].scenario.workload.batch == 3  # type: ignore[union-attr]


def test_the_longest_name_keeps_its_full_text_in_a_short_file_name(library: ScenarioLibrary) -> None:
    entry = library.save(DEFAULT_SCENARIO, name="a")
    full = ("Llama 70B plan for the cluster " * 10)[:NAME_MAX]
    renamed = library.rename(entry.id, full)
    assert renamed.scenario.name == full.strip()
    assert len(renamed.id) <= lib.SLUG_MAX + len(lib.SUFFIX) and not entry.path.exists()
    assert library.get(renamed.id).scenario.name == full.strip()


@pytest.mark.parametrize(
    ("name", "file"),
    [
        ("CON", "_CON.vramdesk.json"),
        ("nul", "_nul.vramdesk.json"),
        ("com1.plan", "_com1.plan.vramdesk.json"),
        ("LPT9", "_LPT9.vramdesk.json"),
        ("Console plan", "Console-plan.vramdesk.json"),
        ("我的配置", "scenario.vramdesk.json"),
        ("Qwen3 ✓ café", "Qwen3-cafe.vramdesk.json"),
        ("..", "scenario.vramdesk.json"),
    ],
)
def test_file_names_every_platform_can_hold(library: ScenarioLibrary, name: str, file: str) -> None:
    entry = library.save(DEFAULT_SCENARIO, name=name)
    assert entry.id == file and entry.scenario.name == name


def test_control_characters_in_names_become_spaces(library: ScenarioLibrary) -> None:
    entry = library.save(DEFAULT_SCENARIO, name="two\nlines\t and\x00 more ")
    assert entry.scenario.name == "two lines and more"
    with pytest.raises(LibraryError, match="cannot be empty"):
        library.rename(entry.id, " \n\t ")
    assert library.get(entry.id).scenario.name == "two lines and more"


def test_names_that_differ_only_in_case_get_distinct_files(library: ScenarioLibrary) -> None:
    """A library copied to macOS or Windows (case-insensitive) must keep every file."""
    a = library.save(DEFAULT_SCENARIO, name="Plan")
    b = library.save(DEFAULT_SCENARIO, name="plan")
    assert a.id == "Plan.vramdesk.json" and b.id == "plan-2.vramdesk.json"


def test_a_case_only_rename_keeps_one_file_and_its_history(library: ScenarioLibrary) -> None:
    a = library.save(variant(batch=2), name="Plan")
    library.update(a.id, variant(batch=4))
    renamed = library.rename(a.id, "plan")
    assert renamed.id == "plan.vramdesk.json" and renamed.scenario.name == "plan"
    assert listing(library) == ["plan.vramdesk.json"]
    assert renamed.scenario.workload.batch == 4  # type: ignore[union-attr]
    history = library.versions(renamed.id)
    assert [v.scenario.workload.batch for v in history if v.scenario] == [4, 2]  # type: ignore[union-attr]


def test_ids_from_outside_are_checked(library: ScenarioLibrary) -> None:
    for bad in ("../x.vramdesk.json", "a\\b.vramdesk.json", "x\x00.vramdesk.json", "notes.txt", ""):
        with pytest.raises(LibraryError, match="not a library id"):
            library.get(bad)


# ---------------------------------------------------------------------------------------------- versions


def test_every_overwrite_keeps_the_previous_version_and_restore_brings_it_back(library: ScenarioLibrary) -> None:
    entry = library.save(variant(batch=1), name="plan", tags=["a"])
    assert entry.revision == 1 and library.versions(entry.id) == []
    second = library.update(entry.id, variant(batch=2))
    assert second.revision == 2
    third = library.set_tags(entry.id, ["b"])
    assert third.revision == 3 and third.scenario.workload.batch == 2  # type: ignore[union-attr]
    history = library.versions(entry.id)
    assert [(v.revision, v.scenario.workload.batch, v.tags) for v in history if v.scenario] == [  # type: ignore[union-attr]
        (2, 2, ("a",)),
        (1, 1, ("a",)),
    ]
    assert all(v.replaced > 0 for v in history)
    oldest = history[-1]
    restored = library.restore(entry.id, oldest.id)
    assert restored.scenario.workload.batch == 1 and restored.tags == ("a",)  # type: ignore[union-attr]
    assert restored.scenario.name == "plan" and restored.revision == 4
    # the restore is itself undoable: what it replaced is the newest version now
    newest = library.versions(entry.id)[0]
    assert newest.scenario is not None and newest.tags == ("b",)
    with pytest.raises(LibraryError, match="no earlier version"):
        library.restore(entry.id, "19990101T000000.000000Z.vramdesk.json")


def test_versions_are_bounded(library: ScenarioLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lib, "MAX_VERSIONS", 3)
    entry = library.save(variant(batch=1), name="plan")
    for b in range(2, 8):
        library.update(entry.id, variant(batch=b))
    kept = [v.scenario.workload.batch for v in library.versions(entry.id) if v.scenario]  # type: ignore[union-attr]
    assert kept == [6, 5, 4]


def test_rename_and_delete_take_the_versions_along(library: ScenarioLibrary) -> None:
    entry = library.save(variant(batch=1), name="plan")
    library.update(entry.id, variant(batch=2))
    renamed = library.rename(entry.id, "other plan")
    assert [v.revision for v in library.versions(renamed.id)] == [2, 1]
    assert library.versions(entry.id) == []
    moved = library.delete(renamed.id)
    kept = moved.with_name(moved.name + ".versions")
    assert kept.is_dir() and len(list(kept.iterdir())) == 2
    assert not (library.versions_dir / renamed.id).exists()


def test_a_save_from_a_stale_copy_is_refused_with_nothing_written(library: ScenarioLibrary) -> None:
    entry = library.save(variant(batch=1), name="plan")
    library.update(entry.id, variant(batch=2), expected_revision=1)  # this window's save
    with pytest.raises(StaleEntryError, match="saved by another window or process"):
        library.update(entry.id, variant(batch=3), expected_revision=1)  # another window still had revision 1
    assert library.get(entry.id).scenario.workload.batch == 2  # type: ignore[union-attr]


def test_versions_folder_is_not_listed_as_entries(library: ScenarioLibrary) -> None:
    entry = library.save(variant(batch=1), name="plan")
    for b in range(2, 5):
        library.update(entry.id, variant(batch=b))
    scan = library.scan()
    assert [e.id for e in scan.entries] == [entry.id] and not scan.quarantined


# ---------------------------------------------------------------------------------------------- faults


def test_a_full_disk_leaves_the_saved_configuration_as_it_was(
    library: ScenarioLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = library.save(variant(batch=1), name="plan")
    before = entry.path.read_bytes()

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        library.update(entry.id, variant(batch=2))
    with pytest.raises(OSError, match="No space left"):
        library.rename(entry.id, "new name")
    with pytest.raises(OSError, match="No space left"):
        library.save(DEFAULT_SCENARIO, name="another")
    monkeypatch.undo()
    assert entry.path.read_bytes() == before
    assert listing(library) == [entry.id]
    leftovers = [p for p in library.root.rglob("*") if p.is_file() and p.name not in (entry.id, ".lock")]
    assert leftovers == []


def test_a_library_that_cannot_be_written_still_lists_what_it_can(
    library: ScenarioLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only folder with a damaged file and an unreadable one: the other entries are listed, the two
    bad files are reported and stay where they are."""
    good = library.save(DEFAULT_SCENARIO, name="good")
    (library.root / "damaged.vramdesk.json").write_text("{half")
    unreadable = library.root / "locked.vramdesk.json"
    unreadable.write_text(good.path.read_text())
    real_read_json = lib.read_json

    def read_json(path: Path) -> object:
        if Path(path) == unreadable:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_read_json(path)

    def cannot_move(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(lib, "read_json", read_json)
    monkeypatch.setattr(lib.shutil, "move", cannot_move)
    scan = library.scan()
    assert [e.id for e in scan.entries] == [good.id]
    reasons = {q.original.name: q for q in scan.quarantined}
    assert reasons["damaged.vramdesk.json"].moved_to is None
    assert "left in place" in reasons["damaged.vramdesk.json"].reason
    assert "cannot be read: Permission denied" in reasons["locked.vramdesk.json"].reason
    assert (library.root / "damaged.vramdesk.json").exists() and unreadable.exists()


def test_a_library_folder_that_cannot_be_created_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    library = ScenarioLibrary(blocker / "scenarios")
    with pytest.raises(LibraryError, match=r"cannot write to the library .* nothing was saved"):
        library.save(DEFAULT_SCENARIO, name="x")


KILLER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from vramdesk.core.defaults import DEFAULT_SCENARIO
    from vramdesk.storage.library import ScenarioLibrary

    library = ScenarioLibrary(Path(sys.argv[1]))
    entry = library.save(DEFAULT_SCENARIO, name="victim")
    print("ready", flush=True)
    b = 1
    while True:
        data = DEFAULT_SCENARIO.model_dump(mode="json")
        data["workload"]["batch"] = b
        library.update(entry.id, type(DEFAULT_SCENARIO).model_validate(data))
        library.save(DEFAULT_SCENARIO, name="victim")
        b = b % 64 + 1
    """
)


def test_kill_9_during_saves_loses_nothing_that_was_saved(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    for delay in (0.05, 0.13, 0.29):
        proc = subprocess.Popen([sys.executable, str(script), str(root)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc.stdout.close()
        library = ScenarioLibrary(root)
        scan = library.scan()
        assert not scan.quarantined  # every file in the library parses
        for e in scan.entries:
            for v in library.versions(e.id):
                assert v.error is None
    # and the library still takes saves (no lock left held, no half-made names in the way)
    assert ScenarioLibrary(root).save(DEFAULT_SCENARIO, name="after").scenario.name == "after"


def test_export_never_writes_onto_the_entry_itself(library: ScenarioLibrary) -> None:
    entry = library.save(variant(batch=5), name="plan")
    with pytest.raises(LibraryError, match="the saved configuration itself"):
        library.export_file(entry.id, entry.path)
    assert json.loads(entry.path.read_text())["library"]["revision"] == 1


def test_slug_is_bounded_and_never_empty() -> None:
    assert slug("") == "scenario" and slug("---") == "scenario"
    assert len(slug("a" * 1000)) == lib.SLUG_MAX
    assert slug("x" * 79 + ".y") == "x" * 79  # no trailing dot (Windows drops it)


def _library_refusals(library: ScenarioLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The library's new messages, as it words them (paths are this test's folders)."""
    from vramdesk.core.messages import error_text
    from vramdesk.error_words import strerror_text

    out: list[str] = []

    def said(fn: object) -> None:
        try:
            fn()  # type: ignore[operator]
        except (LibraryError, OSError) as err:
            out.append(error_text(err))
        else:  # pragma: no cover - each call below is refused
            raise AssertionError("not refused")

    entry = library.save(DEFAULT_SCENARIO, name="plan")
    said(lambda: library.save(DEFAULT_SCENARIO, name="x" * 300))
    said(lambda: library.export_file(entry.id, entry.path))
    said(lambda: library.restore(entry.id, "19990101T000000.000000Z.vramdesk.json"))
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    said(lambda: ScenarioLibrary(blocker / "lib").save(DEFAULT_SCENARIO, name="x"))
    # the busy lock and a full disk, worded as the library words them
    out.append(lib.BUSY(root=str(library.root), seconds=15))
    out.append(lib.CANNOT_WRITE(root=str(library.root), reason=strerror_text("No space left on device")))
    # a damaged and an unreadable file in a folder that cannot be written
    (library.root / "bad.vramdesk.json").write_text("{half")
    unreadable = library.root / "locked.vramdesk.json"
    unreadable.write_text(entry.path.read_text())
    real_read_json = lib.read_json

    def read_json(path: Path) -> object:
        if Path(path) == unreadable:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_read_json(path)

    def cannot_move(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(lib, "read_json", read_json)
    monkeypatch.setattr(lib.shutil, "move", cannot_move)
    out += [q.reason for q in library.scan().quarantined]
    return out


def test_the_librarys_new_messages_read_in_chinese(
    library: ScenarioLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("PySide6")
    from i18ncheck import english_left

    from vramdesk.ui.core_text import localize

    texts = _library_refusals(library, tmp_path, monkeypatch)
    assert len(texts) == 8
    for text in texts:
        zh = localize(text, "zh_CN")
        left = english_left(zh, ignore={"plan"}, whitelist={"vramdesk", "JSON"})
        assert zh != text and not left, (text, zh, left)


def test_cli_save_into_the_library_keeps_what_it_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vramdesk estimate ... --save <library>/x.vramdesk.json` while a window has x open: the window's content
    stays as a version, and the file keeps its tags."""
    import io

    from vramdesk import cli
    from vramdesk.storage.paths import DATA_DIR_ENV

    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    library = ScenarioLibrary()
    entry = library.save(variant(batch=3), name="shared", tags=["team"])
    code = cli.main(["estimate", "Qwen/Qwen3-4B", "--batch", "7", "--save", str(entry.path)], out=io.StringIO())
    assert code == 0, capsys.readouterr().err
    now = library.get(entry.id)
    assert now.scenario.workload.batch == 7 and now.tags == ("team",) and now.revision == 2  # type: ignore[union-attr]
    [old] = library.versions(entry.id)
    assert old.scenario is not None and old.scenario.workload.batch == 3  # type: ignore[union-attr]
    # a new file in the library folder is created under the lock, outside it written as asked
    assert cli.main(["estimate", "Qwen/Qwen3-4B", "--save", str(library.root / "new.vramdesk.json")]) == 0
    assert library.get("new.vramdesk.json").revision == 1
    elsewhere = tmp_path / "plain.json"
    assert cli.main(["estimate", "Qwen/Qwen3-4B", "--save", str(elsewhere)], out=io.StringIO()) == 0
    assert "library" not in json.loads(elsewhere.read_text())
