"""The library of saved configurations: one versioned JSON file per scenario, earlier versions, and the autosave.

Layout under :func:`vramdesk.storage.paths.data_dir`::

    scenarios/<slug>.vramdesk.json   one file per configuration: the Scenario format, plus a top-level
                                     "library" object (tags, revision) that Scenario validation ignores
    scenarios/.lock                  the library's lock: every write holds it (two windows, the window and the
                                     command line), so two saves of one name make two entries
    scenarios/versions/<id>/         earlier contents of an entry, one file each, newest kept (MAX_VERSIONS)
    scenarios/corrupted/             unreadable files moved aside (never deleted), with a timestamp
    scenarios/trash/                 deleted configurations (moved, not erased: "no action loses a file")
    autosave.json                    the current work, written while the window runs and removed on a clean exit

Every write goes through :mod:`vramdesk.fsutil` (old file or new file, never half); every overwrite keeps the
previous content as a version first, so a save that replaced the wrong thing can be undone from the library
window. Names are checked before anything is written, renamed or deleted. File names are ASCII slugs of at
most 80 characters that are never Windows device names (CON, NUL, COM1...) and never differ from another
entry's only in case (a library copied to macOS or Windows keeps every file); the full name stays in the file.
A file from a newer vramdesk opens read-only with a note: writing it back would drop what it added.
"""

from __future__ import annotations

import calendar
import contextlib
import json
import os
import re
import shutil
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from vramdesk.core.messages import Message
from vramdesk.core.scenario import SCHEMA_VERSION, Scenario
from vramdesk.error_words import os_error, os_reason, said
from vramdesk.fsutil import atomic_create_text, atomic_write_bytes, atomic_write_text

from .paths import data_dir, library_dir
from .scenarios import (
    LIBRARY_KEY,
    NOT_OBJECT,
    ScenarioFileError,
    parse_newer,
    parse_scenario,
    read_json,
)

SUFFIX = ".vramdesk.json"
AUTOSAVE_NAME = "autosave.json"
#: earlier versions kept per entry; older ones are removed when a new one is kept
MAX_VERSIONS = 20
#: how long a write waits for another process's write to finish (they take milliseconds)
LOCK_TIMEOUT_S = 15.0
#: the longest name the scenario format holds (its ``name`` field's max_length)
NAME_MAX: int = next(m.max_length for m in Scenario.model_fields["name"].metadata if hasattr(m, "max_length"))
#: Windows device names: "CON", "con.vramdesk.json", "COM1.x" cannot be files there (any case, any extension)
_RESERVED = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"} | {f"{p}{i}" for p in ("COM", "LPT") for i in "123456789"}
SLUG_MAX = 80

NAME_EMPTY = Message("library.name_empty", "a name cannot be empty")
NAME_TOO_LONG = Message("library.name_too_long", "a name can have at most {most} characters; this one has {length:,}")
NEWER_NOTE = Message(
    "library.newer",
    "saved by a newer vramdesk (schema {version}; this version reads up to {supported}): opened read-only; fields "
    "this version does not know are not shown",
)
CANNOT_LIST = Message("library.cannot_list", "cannot list the library folder: {error}")
LEFT_IN_PLACE = Message("library.left_in_place", "{error} (left in place: cannot move it aside: {reason})")
CANNOT_BE_READ = Message("library.cannot_be_read", "{path}: cannot be read: {reason}")
NO_ENTRY = Message("library.no_entry", "no saved configuration '{id}'")
NOT_AN_ID = Message("library.not_an_id", "not a library id: {id!r}")
READ_ONLY = Message("library.read_only", "{name}: {note}; duplicate it to edit a copy")
BUSY = Message(
    "library.busy",
    "the library {root} is busy (another vramdesk has held its lock for {seconds:.0f} s); nothing was saved",
)
CANNOT_WRITE = Message("library.cannot_write", "cannot write to the library {root}: {reason}; nothing was saved")
NO_FREE_NAME = Message("library.no_free_name", "no free file name for '{name}' in {root}")
STALE = Message(
    "library.stale",
    "'{name}' was saved by another window or process since it was opened (revision {expected}, now {revision})",
)
APPEARED = Message("library.appeared", "{id}: appeared while renaming; nothing was changed")
CREATED_MEANWHILE = Message(
    "library.created_meanwhile", "{id}: created by another process meanwhile; nothing was saved"
)
NO_VERSION = Message("library.no_version", "'{name}' has no earlier version {version}")
IMPORT_NEWER = Message("library.import_newer", "{path}: saved by a newer vramdesk (schema {version})")
EXPORT_ONTO_ITSELF = Message(
    "library.export_onto_itself", "{path}: that is the saved configuration itself; choose another file"
)


class LibraryError(ValueError):
    """An action the library refuses (a read-only entry, a bad name, a missing entry, a busy library)."""


class StaleEntryError(LibraryError):
    """The entry changed on disk (another window or process saved it) since the caller read it."""


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
    #: how many times the entry was written (1 = as first saved); a save that expects another revision is stale
    revision: int = 1

    @property
    def name(self) -> str:
        return self.scenario.name or self.scenario.model.id


@dataclass(frozen=True)
class Version:
    """An earlier content of an entry, kept when it was overwritten."""

    id: str
    path: Path
    #: when it was replaced (seconds since the epoch)
    replaced: float
    scenario: Scenario | None
    tags: tuple[str, ...] = ()
    revision: int = 0
    #: why it cannot be restored (unreadable), else None
    error: str | None = None


@dataclass(frozen=True)
class Quarantined:
    """A file that could not be read, and where it was moved (None: it could not be moved and stays)."""

    original: Path
    moved_to: Path | None
    reason: str


@dataclass
class ScanResult:
    entries: list[Entry] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)


def clean_name(name: str) -> str:
    """A configuration name as stored: control characters become spaces, runs of spaces one, ends trimmed.
    LibraryError (and nothing changed anywhere) when it is empty or longer than the format holds."""
    text = "".join(" " if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") else ch for ch in str(name))
    text = " ".join(text.split())
    if not text:
        raise LibraryError(NAME_EMPTY())
    if len(text) > NAME_MAX:
        raise LibraryError(NAME_TOO_LONG(most=NAME_MAX, length=len(text)))
    return text


def slug(text: str) -> str:
    """The file-name stem for ``text``: ASCII letters, digits and ``._-``, at most SLUG_MAX characters,
    never a Windows device name."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", ascii_text).strip("-.")[:SLUG_MAX].rstrip("-.")
    if not s:
        return "scenario"
    if s.split(".", 1)[0].upper() in _RESERVED:
        s = "_" + s
    return s


def file_text(scenario: Scenario, tags: tuple[str, ...] | list[str] = (), revision: int | None = None) -> str:
    """The file of a scenario; the "library" object holds its tags and, in the library, its revision."""
    data: dict[str, Any] = scenario.model_dump(mode="json")
    lib: dict[str, Any] = {}
    clean = _clean_tags(tags)
    if clean:
        lib["tags"] = list(clean)
    if revision is not None:
        lib["revision"] = revision
    if lib:
        data[LIBRARY_KEY] = lib
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _clean_tags(tags: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for raw in tags:
        t = " ".join(str(raw).split())[:60]
        if t and t not in out:
            out.append(t)
    return tuple(out[:50])


def _library_info(data: dict[str, Any]) -> tuple[tuple[str, ...], int]:
    lib = data.get(LIBRARY_KEY)
    tags: tuple[str, ...] = ()
    revision = 1
    if isinstance(lib, dict):
        if isinstance(lib.get("tags"), list):
            tags = _clean_tags([str(t) for t in lib["tags"]])
        rev = lib.get("revision")
        if isinstance(rev, int) and not isinstance(rev, bool) and rev > 0:
            revision = rev
    return tags, revision


def read_entry(path: Path) -> Entry:
    """Read one library file; ScenarioFileError when it is unreadable (missing, not JSON, invalid)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ScenarioFileError(NOT_OBJECT(source=str(path)))
    tags, revision = _library_info(data)
    version = data.get("schema_version", 1)
    read_only, note = False, None
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        scenario = parse_newer(data, str(path))
        read_only = True
        note = NEWER_NOTE(version=version, supported=SCHEMA_VERSION)
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
        revision=revision,
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


def _stamp(seconds: float) -> str:
    """A sortable UTC time with microseconds for version file names."""
    whole = int(seconds)
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(whole)) + f".{int((seconds - whole) * 1e6):06d}Z"


def _stamp_seconds(name: str) -> float:
    m = re.match(r"(\d{8}T\d{6})\.(\d{6})Z", name)
    if not m:
        return 0.0
    return calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%S")) + int(m.group(2)) / 1e6


class ScenarioLibrary:
    """The saved configurations in one folder (default: the user data folder's ``scenarios``)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else library_dir()
        self.corrupted_dir = self.root / "corrupted"
        self.trash_dir = self.root / "trash"
        self.versions_dir = self.root / "versions"
        #: files moved aside (or left unreadable) by the last scan (the UI reports them)
        self.last_quarantined: list[Quarantined] = []

    # ------------------------------------------------------------------ reading
    def scan(self) -> ScanResult:
        """Every readable entry (newest first); unreadable files are moved to ``corrupted/`` and listed.

        One bad file never hides the others: a file that cannot be read (no permission) or moved aside (a
        read-only folder) is listed with the reason and left where it is."""
        result = ScanResult()
        if not self.root.is_dir():
            return result
        try:
            paths = sorted(self.root.glob(f"*{SUFFIX}"))
        except OSError as err:
            result.quarantined.append(Quarantined(self.root, None, CANNOT_LIST(error=os_error(err))))
            self.last_quarantined = result.quarantined
            return result
        for path in paths:
            try:
                result.entries.append(read_entry(path))
            except ScenarioFileError as err:
                try:
                    result.quarantined.append(quarantine(path, said(err), self.corrupted_dir))
                except OSError as move_err:
                    reason = LEFT_IN_PLACE(error=said(err), reason=os_reason(move_err))
                    result.quarantined.append(Quarantined(path, None, reason))
            except FileNotFoundError:
                continue  # deleted or renamed by another process while we listed
            except OSError as err:
                reason = CANNOT_BE_READ(path=str(path), reason=os_reason(err))
                result.quarantined.append(Quarantined(path, None, reason))
        result.entries.sort(key=lambda e: (-e.modified, e.id))
        self.last_quarantined = result.quarantined
        return result

    def entries(self) -> list[Entry]:
        return self.scan().entries

    def get(self, entry_id: str) -> Entry:
        path = self._path(entry_id)
        if not path.is_file():
            raise LibraryError(NO_ENTRY(id=entry_id))
        return read_entry(path)

    def with_tag(self, tag: str) -> list[Entry]:
        return [e for e in self.entries() if tag in e.tags]

    def _path(self, entry_id: str) -> Path:
        if (
            "/" in entry_id
            or "\\" in entry_id
            or "\x00" in entry_id
            or entry_id in ("", ".", "..")
            or not entry_id.endswith(SUFFIX)
        ):
            raise LibraryError(NOT_AN_ID(id=entry_id))
        return self.root / entry_id

    def _taken(self) -> set[str]:
        """The file names in the library folder, lower case (ids must differ in more than case)."""
        try:
            return {p.name.lower() for p in self.root.iterdir()}
        except FileNotFoundError:
            return set()

    def _free_id(self, name: str, exclude: str | None = None) -> str:
        """A file name for ``name`` that no other file has, ignoring case (``exclude``: the entry's own)."""
        base = slug(name)
        taken = self._taken() - ({exclude.lower()} if exclude else set())
        candidate = base + SUFFIX
        n = 1
        while candidate.lower() in taken:
            n += 1
            candidate = f"{base}-{n}{SUFFIX}"
        return candidate

    def _writable(self, entry_id: str) -> Entry:
        entry = self.get(entry_id)
        if entry.read_only:
            raise LibraryError(READ_ONLY(name=entry.name, note=entry.note))
        return entry

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the library's lock (an OS file lock: a killed holder releases it)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(self.root / ".lock"), timeout=LOCK_TIMEOUT_S)
            lock.acquire()
        except Timeout as err:
            raise LibraryError(BUSY(root=str(self.root), seconds=LOCK_TIMEOUT_S)) from err
        except OSError as err:
            raise LibraryError(CANNOT_WRITE(root=str(self.root), reason=os_reason(err))) from err
        try:
            yield
        finally:
            lock.release()

    def _scenario_named(self, scenario: Scenario, name: str | None) -> Scenario:
        """``scenario`` with ``name`` (cleaned), validated: a bad name is refused before anything is written."""
        data = scenario.model_dump(mode="json")
        data["name"] = clean_name(name) if name is not None else scenario.name
        return Scenario.model_validate(data)

    def _create(self, scenario: Scenario, tags: tuple[str, ...] | list[str]) -> Entry:
        """A new file for ``scenario`` under a free name (caller holds the lock)."""
        text = file_text(scenario, tags, revision=1)
        for _ in range(1000):
            entry_id = self._free_id(scenario.name or scenario.model.id)
            path = self.root / entry_id
            if atomic_create_text(path, text):
                return read_entry(path)
        raise LibraryError(NO_FREE_NAME(name=scenario.name, root=str(self.root)))  # pragma: no cover

    def _keep_version(self, entry: Entry) -> None:
        """Copy the entry's current file into its versions folder (before it is overwritten), and prune."""
        folder = self.versions_dir / entry.id
        data = entry.path.read_bytes()
        now = time.time()
        target = folder / f"{_stamp(now)}{SUFFIX}"
        n = 1
        while target.exists():
            n += 1
            target = folder / f"{_stamp(now)}-{n}{SUFFIX}"
        atomic_write_bytes(target, data)
        kept = sorted(p for p in folder.glob(f"*{SUFFIX}"))
        for old in kept[:-MAX_VERSIONS]:
            with contextlib.suppress(OSError):
                old.unlink()

    def _overwrite(self, entry: Entry, scenario: Scenario, tags: tuple[str, ...] | list[str]) -> Entry:
        """Replace the entry's content, keeping the old content as a version first (caller holds the lock)."""
        self._keep_version(entry)
        atomic_write_text(entry.path, file_text(scenario, tags, revision=entry.revision + 1))
        return read_entry(entry.path)

    # ------------------------------------------------------------------ writing
    def save(self, scenario: Scenario, *, name: str | None = None, tags: tuple[str, ...] | list[str] = ()) -> Entry:
        """A new entry (a new file; an existing one is never overwritten by this, whoever saves at once)."""
        scenario = self._scenario_named(scenario, name if name is not None else scenario.name)
        with self._locked():
            return self._create(scenario, tags)

    def update(self, entry_id: str, scenario: Scenario, *, expected_revision: int | None = None) -> Entry:
        """Replace the scenario of an entry, keeping its name and tags (rename changes the name); the content
        it had is kept as a version. With ``expected_revision``, StaleEntryError when another window or process
        saved the entry since (nothing is written then)."""
        with self._locked():
            entry = self._writable(entry_id)
            if expected_revision is not None and entry.revision != expected_revision:
                raise StaleEntryError(STALE(name=entry.name, expected=expected_revision, revision=entry.revision))
            scenario = self._scenario_named(scenario, None).model_copy(update={"name": entry.scenario.name})
            return self._overwrite(entry, scenario, entry.tags)

    def rename(self, entry_id: str, new_name: str) -> Entry:
        """A new name (and file name). The name is checked first; the new file is whole before the old one
        goes; the entry's versions move with it."""
        name = clean_name(new_name)
        with self._locked():
            entry = self._writable(entry_id)
            scenario = self._scenario_named(entry.scenario, name)
            new_id = self._free_id(name, exclude=entry.id)
            if new_id.lower() == entry.id.lower():
                updated = self._overwrite(entry, scenario, entry.tags)
                return updated if new_id == entry.id else self._change_case(updated, new_id)
            self._keep_version(entry)
            new_path = self.root / new_id
            if not atomic_create_text(new_path, file_text(scenario, entry.tags, revision=entry.revision + 1)):
                raise LibraryError(APPEARED(id=new_id))  # pragma: no cover
            self._move_versions(entry.id, new_id)
            entry.path.unlink()
            return read_entry(new_path)

    def _change_case(self, entry: Entry, new_id: str) -> Entry:
        """Rename the entry's file to another case of its name, through a visible intermediate name: a
        case-insensitive file system (macOS, Windows) renames it too, and a crash leaves a listed entry."""
        new_path = self.root / new_id
        middle = self.root / f"{new_id.removesuffix(SUFFIX)}.renaming-{os.getpid()}{SUFFIX}"
        os.replace(entry.path, middle)
        os.replace(middle, new_path)
        self._move_versions(entry.id, new_id)
        return read_entry(new_path)

    def _move_versions(self, old_id: str, new_id: str) -> None:
        old, new = self.versions_dir / old_id, self.versions_dir / new_id
        if not old.is_dir() or old == new:
            return
        if old.name.lower() == new.name.lower():
            middle = self.versions_dir / f".{new_id}.renaming-{os.getpid()}"
            os.replace(old, middle)
            old = middle
        if new.exists():  # versions left by an earlier entry of that name: keep both sets
            for p in old.iterdir():
                shutil.move(str(p), str(new / p.name))
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(old, new)

    def put(self, entry_id: str, scenario: Scenario) -> Entry:
        """Write ``scenario`` as the file ``entry_id`` (a path a script named, ``vramdesk estimate --save``): the
        entry's content is replaced as :meth:`update` does (the old one kept as a version, under the lock, its
        tags kept), or the file is created. A read-only entry is refused."""
        path = self._path(entry_id)
        with self._locked():
            if path.is_file():
                entry = self._writable(entry_id)
                return self._overwrite(entry, self._scenario_named(scenario, None), entry.tags)
            if not atomic_create_text(path, file_text(self._scenario_named(scenario, None), (), revision=1)):
                raise LibraryError(CREATED_MEANWHILE(id=entry_id))
            return read_entry(path)

    def duplicate(self, entry_id: str, new_name: str | None = None) -> Entry:
        entry = self.get(entry_id)
        name = new_name or f"{entry.name} (copy)"
        if new_name is None and len(name) > NAME_MAX:
            name = entry.name[: NAME_MAX - len(" (copy)")].rstrip() + " (copy)"
        return self.save(entry.scenario, name=name, tags=entry.tags)

    def set_tags(self, entry_id: str, tags: tuple[str, ...] | list[str]) -> Entry:
        with self._locked():
            entry = self._writable(entry_id)
            return self._overwrite(entry, entry.scenario, tags)

    def delete(self, entry_id: str) -> Path:
        """Move the entry to ``trash/`` (it can be restored from there by hand), its versions beside it;
        returns where it went."""
        path = self._path(entry_id)
        with self._locked():
            if not path.is_file():
                raise LibraryError(NO_ENTRY(id=entry_id))
            moved = quarantine(path, "deleted", self.trash_dir).moved_to
            assert moved is not None
            versions = self.versions_dir / entry_id
            if versions.is_dir():
                shutil.move(str(versions), str(moved.with_name(moved.name + ".versions")))
            return moved

    # ------------------------------------------------------------------ versions
    def versions(self, entry_id: str) -> list[Version]:
        """The entry's earlier contents, newest first (an unreadable one is listed with its error)."""
        self._path(entry_id)
        folder = self.versions_dir / entry_id
        if not folder.is_dir():
            return []
        out: list[Version] = []
        for p in sorted(folder.glob(f"*{SUFFIX}"), reverse=True):
            try:
                e = read_entry(p)
                out.append(Version(p.name, p, _stamp_seconds(p.name), e.scenario, e.tags, e.revision))
            except (ScenarioFileError, OSError) as err:
                out.append(Version(p.name, p, _stamp_seconds(p.name), None, error=said(err)))
        return out

    def restore(self, entry_id: str, version_id: str) -> Entry:
        """Put an earlier version's plan and tags back into the entry (its name stays); what the entry held
        until now becomes a version in turn, so a restore can be undone the same way."""
        self._path(version_id)
        with self._locked():
            entry = self._writable(entry_id)
            path = self.versions_dir / entry_id / version_id
            if not path.is_file():
                raise LibraryError(NO_VERSION(name=entry.name, version=version_id))
            old = read_entry(path)
            scenario = old.scenario.model_copy(update={"name": entry.scenario.name})
            return self._overwrite(entry, scenario, old.tags)

    def import_file(self, path: Path, tags: tuple[str, ...] | list[str] = ()) -> Entry:
        """Copy a scenario file (any supported schema) into the library, in the current schema."""
        data = read_json(Path(path))
        if (
            isinstance(data, dict)
            and isinstance(data.get("schema_version"), int)
            and data["schema_version"] > (SCHEMA_VERSION)
        ):
            raise ScenarioFileError(IMPORT_NEWER(path=str(path), version=data["schema_version"]))
        scenario = parse_scenario(data, str(path))
        existing: list[str] = []
        lib = data.get(LIBRARY_KEY) if isinstance(data, dict) else None
        if isinstance(lib, dict) and isinstance(lib.get("tags"), list):
            existing = [str(t) for t in lib["tags"]]
        if scenario.name is not None:
            scenario = scenario.model_copy(update={"name": clean_name(scenario.name)})
        return self.save(scenario, tags=[*existing, *tags])

    def export_file(self, entry_id: str, target: Path) -> Path:
        """Write the entry to ``target`` (a .vramdesk.json file anyone can open); never onto a library file."""
        entry = self.get(entry_id)
        target = Path(target)
        with contextlib.suppress(OSError):
            if target.exists() and os.path.samefile(target, entry.path):
                raise LibraryError(EXPORT_ONTO_ITSELF(path=str(target)))
        atomic_write_text(target, file_text(entry.scenario, entry.tags))
        return target


# ---------------------------------------------------------------------------------------------- autosave

#: orphaned autosaves kept after they were offered back (restored or declined), newest first
MAX_SETTLED_AUTOSAVES = 20


def autosave_dir() -> Path:
    return data_dir() / "autosave"


def legacy_autosave_path() -> Path:
    """Where vramdesk before per-window autosaves kept the one autosave (read as an orphan, never written)."""
    return data_dir() / AUTOSAVE_NAME


@dataclass(frozen=True)
class Orphan:
    """The autosave of a window that did not close cleanly (its process is gone)."""

    path: Path
    scenario: Scenario
    modified: float


class Autosave:
    """One window's autosave, beside those of every other running window (two windows never share one file).

    Layout under ``folder`` (default ``<data>/autosave``)::

        <token>.json    the current work of one window (token: process id and start time)
        <token>.lock    held by that window while it runs: an autosave whose lock is free belongs to a window
                        that crashed or was killed (the OS releases a dead process's lock), and is offered back
        settled/        autosaves that were offered back, restored or declined: kept (the newest 20), not deleted
        corrupted/      unreadable autosaves moved aside

    A clean exit (:meth:`clear`) removes the window's own file only."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else autosave_dir()
        self.token = f"{os.getpid()}-{time.time_ns()}"
        self._lock: FileLock | None = None

    @property
    def path(self) -> Path:
        return self.folder / f"{self.token}.json"

    def write(self, scenario: Scenario) -> None:
        if self._lock is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            lock = FileLock(str(self.folder / f"{self.token}.lock"), timeout=0)
            lock.acquire()  # our own, new name: free at once
            self._lock = lock
        atomic_write_text(self.path, file_text(scenario))

    def clear(self) -> None:
        """A clean exit: this window's autosave goes (the other windows' stay)."""
        self.path.unlink(missing_ok=True)
        if self._lock is not None:
            self._lock.release()
            self._lock = None
            (self.folder / f"{self.token}.lock").unlink(missing_ok=True)

    def _alive(self, path: Path) -> bool:
        """Another running window holds this autosave's lock."""
        if path.parent != self.folder:
            return False  # the legacy single autosave has no lock
        probe = FileLock(str(path.with_suffix(".lock")), timeout=0)
        try:
            probe.acquire()
        except Timeout:
            return True
        except OSError:
            return False
        probe.release()
        return False

    def orphans(self) -> list[Orphan]:
        """The autosaves of windows that did not close cleanly, newest first; unreadable ones moved aside."""
        candidates = [legacy_autosave_path()] if self.folder == autosave_dir() else []
        with contextlib.suppress(OSError):
            candidates += sorted(self.folder.glob("*.json"))
        out: list[Orphan] = []
        for path in candidates:
            if path == self.path or not path.is_file() or self._alive(path):
                continue
            try:
                out.append(Orphan(path, parse_scenario(read_json(path), str(path)), path.stat().st_mtime))
            except ScenarioFileError as err:
                with contextlib.suppress(OSError):
                    quarantine(path, said(err), self.folder / "corrupted")
            except OSError:
                continue
        out.sort(key=lambda o: -o.modified)
        return out

    def settle(self, orphan: Orphan) -> None:
        """An orphan was offered back (restored or declined): keep it in ``settled/`` so it is not offered again."""
        settled = self.folder / "settled"
        with contextlib.suppress(OSError):
            quarantine(orphan.path, "offered back", settled)
            orphan.path.with_suffix(".lock").unlink(missing_ok=True)
            kept = sorted(settled.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[MAX_SETTLED_AUTOSAVES:]:
                old.unlink(missing_ok=True)
