"""The library of saved configurations: one versioned JSON file per scenario, and the autosave.

Layout under :func:`vramdesk.storage.paths.data_dir`::

    scenarios/<slug>.vramdesk.json   one file per configuration: the Scenario format, plus a top-level
                                     "library" object (tags) that Scenario validation ignores
    scenarios/corrupted/             unreadable files moved aside (never deleted), with a timestamp
    scenarios/trash/                 deleted configurations (moved, not erased: "no action loses a file")
    autosave.json                    the current work, written while the window runs and removed on a clean exit

Every write goes through :func:`vramdesk.fsutil.atomic_write_text` (old file or new file, never half).
A file from a newer vramdesk opens read-only with a note: writing it back would drop what it added.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vramdesk.core.scenario import SCHEMA_VERSION, Scenario
from vramdesk.fsutil import atomic_write_text

from .paths import data_dir, library_dir
from .scenarios import (
    LIBRARY_KEY,
    ScenarioFileError,
    parse_newer,
    parse_scenario,
    read_json,
)

SUFFIX = ".vramdesk.json"
AUTOSAVE_NAME = "autosave.json"


class LibraryError(ValueError):
    """An action the library refuses (a read-only entry, a name in use, a missing entry)."""


@dataclass(frozen=True)
class Entry:
    """One saved configuration."""

    #: the file name without the folder (stable id while the entry is not renamed)
    id: str
    path: Path
    scenario: Scenario
    tags: tuple[str, ...] = ()
    #: saved by a newer vramdesk: shown, compared and exported, but never written back
    read_only: bool = False
    note: str | None = None
    modified: float = 0.0

    @property
    def name(self) -> str:
        return self.scenario.name or self.scenario.model.id


@dataclass(frozen=True)
class Quarantined:
    """A file that could not be read, and where it was moved."""

    original: Path
    moved_to: Path
    reason: str


@dataclass
class ScanResult:
    entries: list[Entry] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:80]
    return s or "scenario"


def file_text(scenario: Scenario, tags: tuple[str, ...] | list[str] = ()) -> str:
    data: dict[str, Any] = scenario.model_dump(mode="json")
    clean = _clean_tags(tags)
    if clean:
        data[LIBRARY_KEY] = {"tags": list(clean)}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _clean_tags(tags: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for raw in tags:
        t = str(raw).strip()[:60]
        if t and t not in out:
            out.append(t)
    return tuple(out)


def read_entry(path: Path) -> Entry:
    """Read one library file; ScenarioFileError when it is unreadable (missing, not JSON, invalid)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ScenarioFileError(f"{path}: a scenario must be a JSON object")
    lib = data.get(LIBRARY_KEY)
    tags: tuple[str, ...] = ()
    if isinstance(lib, dict) and isinstance(lib.get("tags"), list):
        tags = _clean_tags([str(t) for t in lib["tags"]])
    version = data.get("schema_version", 1)
    read_only, note = False, None
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        scenario = parse_newer(data, str(path))
        read_only = True
        note = (
            f"saved by a newer vramdesk (schema {version}; this version reads up to {SCHEMA_VERSION}): "
            "opened read-only; fields this version does not know are not shown"
        )
    else:
        scenario = parse_scenario(data, str(path))
    return Entry(
        id=path.name,
        path=path,
        scenario=scenario,
        tags=tags,
        read_only=read_only,
        note=note,
        modified=path.stat().st_mtime,
    )


def quarantine(path: Path, reason: str, folder: Path) -> Quarantined:
    """Move an unreadable file into ``folder`` under a new, unique name (never deletes it)."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = folder / f"{path.name}.{stamp}"
    n = 1
    while target.exists():
        n += 1
        target = folder / f"{path.name}.{stamp}.{n}"
    shutil.move(str(path), str(target))
    return Quarantined(original=path, moved_to=target, reason=reason)


class ScenarioLibrary:
    """The saved configurations in one folder (default: the user data folder's ``scenarios``)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else library_dir()
        self.corrupted_dir = self.root / "corrupted"
        self.trash_dir = self.root / "trash"
        #: files moved aside by the last scan (the UI reports them)
        self.last_quarantined: list[Quarantined] = []

    # ------------------------------------------------------------------ reading
    def scan(self) -> ScanResult:
        """Every readable entry (newest first); unreadable files are moved to ``corrupted/`` and listed."""
        result = ScanResult()
        if not self.root.is_dir():
            return result
        for path in sorted(self.root.glob(f"*{SUFFIX}")):
            try:
                result.entries.append(read_entry(path))
            except ScenarioFileError as err:
                result.quarantined.append(quarantine(path, str(err), self.corrupted_dir))
            except OSError:
                continue  # vanished or unreadable right now: leave it where it is
        result.entries.sort(key=lambda e: (-e.modified, e.id))
        self.last_quarantined = result.quarantined
        return result

    def entries(self) -> list[Entry]:
        return self.scan().entries

    def get(self, entry_id: str) -> Entry:
        path = self._path(entry_id)
        if not path.is_file():
            raise LibraryError(f"no saved configuration '{entry_id}'")
        return read_entry(path)

    def with_tag(self, tag: str) -> list[Entry]:
        return [e for e in self.entries() if tag in e.tags]

    def _path(self, entry_id: str) -> Path:
        if "/" in entry_id or "\\" in entry_id or entry_id in ("", ".", ".."):
            raise LibraryError(f"not a library id: {entry_id!r}")
        return self.root / entry_id

    def _free_id(self, name: str, exclude: str | None = None) -> str:
        base = slug(name)
        candidate = base + SUFFIX
        n = 1
        while (self.root / candidate).exists() and candidate != exclude:
            n += 1
            candidate = f"{base}-{n}{SUFFIX}"
        return candidate

    def _writable(self, entry_id: str) -> Entry:
        entry = self.get(entry_id)
        if entry.read_only:
            raise LibraryError(f"{entry.name}: {entry.note}; duplicate it to edit a copy")
        return entry

    # ------------------------------------------------------------------ writing
    def save(self, scenario: Scenario, *, name: str | None = None, tags: tuple[str, ...] | list[str] = ()) -> Entry:
        """A new entry (a new file; an existing one is never overwritten by this)."""
        if name is not None:
            scenario = scenario.model_copy(update={"name": name.strip() or None})
        entry_id = self._free_id(scenario.name or scenario.model.id)
        path = self.root / entry_id
        atomic_write_text(path, file_text(scenario, tags))
        return read_entry(path)

    def update(self, entry_id: str, scenario: Scenario) -> Entry:
        """Replace the scenario of an entry, keeping its name and tags (rename changes the name)."""
        entry = self._writable(entry_id)
        scenario = scenario.model_copy(update={"name": entry.scenario.name})
        atomic_write_text(entry.path, file_text(scenario, entry.tags))
        return read_entry(entry.path)

    def rename(self, entry_id: str, new_name: str) -> Entry:
        """A new name (and file name); the new file is written before the old one goes."""
        entry = self._writable(entry_id)
        new_name = new_name.strip()
        if not new_name:
            raise LibraryError("a name cannot be empty")
        scenario = entry.scenario.model_copy(update={"name": new_name})
        new_id = self._free_id(new_name, exclude=entry.id)
        new_path = self.root / new_id
        atomic_write_text(new_path, file_text(scenario, entry.tags))
        if new_path != entry.path:
            entry.path.unlink()
        return read_entry(new_path)

    def duplicate(self, entry_id: str, new_name: str | None = None) -> Entry:
        entry = self.get(entry_id)
        name = new_name or f"{entry.name} (copy)"
        return self.save(entry.scenario, name=name, tags=entry.tags)

    def set_tags(self, entry_id: str, tags: tuple[str, ...] | list[str]) -> Entry:
        entry = self._writable(entry_id)
        atomic_write_text(entry.path, file_text(entry.scenario, tags))
        return read_entry(entry.path)

    def delete(self, entry_id: str) -> Path:
        """Move the entry to ``trash/`` (it can be restored from there by hand); returns where it went."""
        path = self._path(entry_id)
        if not path.is_file():
            raise LibraryError(f"no saved configuration '{entry_id}'")
        return quarantine(path, "deleted", self.trash_dir).moved_to

    def import_file(self, path: Path, tags: tuple[str, ...] | list[str] = ()) -> Entry:
        """Copy a scenario file (any supported schema) into the library, in the current schema."""
        data = read_json(Path(path))
        if (
            isinstance(data, dict)
            and isinstance(data.get("schema_version"), int)
            and data["schema_version"] > (SCHEMA_VERSION)
        ):
            raise ScenarioFileError(f"{path}: saved by a newer vramdesk (schema {data['schema_version']})")
        scenario = parse_scenario(data, str(path))
        existing: list[str] = []
        lib = data.get(LIBRARY_KEY) if isinstance(data, dict) else None
        if isinstance(lib, dict) and isinstance(lib.get("tags"), list):
            existing = [str(t) for t in lib["tags"]]
        return self.save(scenario, tags=[*existing, *tags])

    def export_file(self, entry_id: str, target: Path) -> Path:
        """Write the entry to ``target`` (a .vramdesk.json file anyone can open)."""
        entry = self.get(entry_id)
        atomic_write_text(Path(target), file_text(entry.scenario, entry.tags))
        return Path(target)


# ---------------------------------------------------------------------------------------------- autosave


def autosave_path() -> Path:
    return data_dir() / AUTOSAVE_NAME


def write_autosave(scenario: Scenario, path: Path | None = None) -> None:
    atomic_write_text(path or autosave_path(), file_text(scenario))


def read_autosave(path: Path | None = None) -> Scenario | None:
    """The autosaved work of a session that did not end cleanly; None when there is none.

    An unreadable autosave is moved aside next to it (``autosave.json.<time>``), not deleted."""
    path = path or autosave_path()
    if not path.exists():
        return None
    try:
        return parse_scenario(read_json(path), str(path))
    except ScenarioFileError as err:
        quarantine(path, str(err), path.parent / "corrupted")
        return None


def clear_autosave(path: Path | None = None) -> None:
    (path or autosave_path()).unlink(missing_ok=True)
