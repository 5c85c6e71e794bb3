"""A private X server for checks that need a real display path: ``Xvfb :N`` on the first free N, always stopped.

Used by tests/ui/test_xvfb.py (a screenshot through Qt's xcb platform) and benchmarks/ui_keystroke.py (keystroke
to repaint on a real X server). Without ``Xvfb`` on PATH, :func:`xvfb` raises :class:`NoDisplayError`.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

#: display numbers tried (high, away from a desktop's :0 and ssh's :10-:20)
DISPLAYS = range(99, 160)
SCREEN = "1920x1200x24"
START_TIMEOUT_S = 10.0


class NoDisplayError(RuntimeError):
    """No X server could be started (no Xvfb on PATH, or none of the display numbers worked)."""


def _taken(n: int) -> bool:
    """Whether display ``:n`` looks used: its lock file or its socket exists."""
    return Path(f"/tmp/.X{n}-lock").exists() or Path(f"/tmp/.X11-unix/X{n}").exists()


def _wait_ready(proc: subprocess.Popen[bytes], n: int) -> bool:
    """Wait until Xvfb listens on ``:n`` (its socket appears); False when it exits first or never does."""
    socket = Path(f"/tmp/.X11-unix/X{n}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if socket.exists():
            return True
        time.sleep(0.05)
    return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@contextlib.contextmanager
def xvfb(log: Path, screen: str = SCREEN) -> Iterator[str]:
    """Start ``Xvfb :N`` on the first free N and yield ``":N"``; the server is always stopped afterwards."""
    exe = shutil.which("Xvfb")
    if exe is None:
        raise NoDisplayError("Xvfb is not on PATH (apt-get install xvfb)")
    for n in DISPLAYS:
        if _taken(n):
            continue
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [exe, f":{n}", "-screen", "0", screen, "-nolisten", "tcp", "-noreset"],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            if not _wait_ready(proc, n):
                continue  # lost a race for this number (or it failed): the finally stops it, try the next
            yield f":{n}"
            return
        finally:
            _stop(proc)
    tail = log.read_text(errors="replace")[-2000:]
    raise NoDisplayError(f"could not start Xvfb on any display in {DISPLAYS}:\n{tail}")
