"""File helpers shared by services and storage (below both layers; no Qt, no network)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _write_temporary(path: Path, data: bytes) -> str:
    """A whole, flushed copy of ``data`` in a uniquely named hidden temporary beside ``path``; its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:120]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates the file 0600; give the result the permissions a plain open() would (umask)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary file in the same folder, flush it to disk, then rename it over the target:
    a reader sees the old file or the new one, never half a file, and a failed write (a full disk, a kill)
    leaves the old file as it was and no temporary."""
    atomic_write_bytes(Path(path), text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    tmp = _write_temporary(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_create_text(path: Path, text: str) -> bool:
    """Like :func:`atomic_write_text`, but only where ``path`` does not exist yet: False (nothing written) when
    it does. The whole file appears at once under its name (a hard link of the finished temporary), so two
    processes creating the same name never overwrite each other, lock or no lock."""
    path = Path(path)
    tmp = _write_temporary(path, text.encode("utf-8"))
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:
            # a file system without hard links (FAT, some network shares): the caller's lock is the guard
            if path.exists():
                return False
            os.replace(tmp, path)
            return True
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)
