"""benchmarks/ui_keystroke.py runs: a few key presses on a private Xvfb, each timed to its repaint."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
from benchload import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not on PATH (apt-get install xvfb)"),
]


def test_the_keystroke_benchmark_times_every_key_to_its_repaint() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ui_keystroke.py"), "--keys", "6"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    report = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, report
    assert "platform: xcb" in done.stdout, report
    for name in ("floor: bare spin box repaint", "Input tokens, arrow up/down", "Batch, arrow up/down"):
        assert re.search(rf"{re.escape(name)}\s+median\s+[\d.]+\s+p90\s+[\d.]+.*\(n=6\)", done.stdout), report
    assert re.search(r"p90 over both fields [\d.]+ ms", done.stdout), report
    assert "showed no repaint" not in done.stdout, report
