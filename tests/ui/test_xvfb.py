"""The window on a real X server: ``vramdesk --screenshot`` through Qt's xcb platform on an Xvfb display.

The other UI tests render offscreen; this one catches what only a real display path shows (the xcb plugin and
its libraries, fonts, the window's real size). It starts its own ``Xvfb :N`` on a free display number
(benchmarks/xdisplay.py) and always stops it. Without ``Xvfb`` on PATH it is skipped (``apt-get install xvfb``
to run it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from benchload import load_benchmark
from PySide6.QtGui import QImage

from vramdesk.ui.main_window import WINDOW_SIZE
from vramdesk.ui.theme import CATEGORY_COLORS, LIGHT

XVFB = shutil.which("Xvfb")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(XVFB is None, reason="Xvfb is not on PATH (apt-get install xvfb to run this check)"),
]

SCREENSHOT_TIMEOUT_S = 120
xdisplay = load_benchmark("xdisplay", folder="")


@contextlib.contextmanager
def xvfb(log: Path) -> Iterator[str]:
    """benchmarks/xdisplay.py's private X server; a failure to start one fails the test."""
    try:
        with xdisplay.xvfb(log) as display:
            yield display
    except xdisplay.NoDisplayError as err:
        pytest.fail(str(err))


def test_screenshot_on_a_real_x_server(tmp_path: Path) -> None:
    out = tmp_path / "xcb.png"
    home = tmp_path / "home"
    home.mkdir()
    with xvfb(tmp_path / "xvfb.log") as display:
        env = {
            **os.environ,
            "DISPLAY": display,
            "QT_QPA_PLATFORM": "xcb",
            "VRAMDESK_LANG": "en",
            "HF_HUB_OFFLINE": "1",
            # the app's settings, log and autosave stay in this test's folder
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_RUNTIME_DIR": str(home / "runtime"),
        }
        env.pop("WAYLAND_DISPLAY", None)
        (home / "runtime").mkdir(mode=0o700)
        done = subprocess.run(
            [sys.executable, "-m", "vramdesk", "--screenshot", str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=SCREENSHOT_TIMEOUT_S,
            check=False,
        )
    report = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, report
    assert "offscreen" not in done.stderr, report
    assert out.is_file() and out.stat().st_size > 10_000, report
    image = QImage(str(out))
    assert not image.isNull()
    assert (image.width(), image.height()) == WINDOW_SIZE
    colours = {image.pixelColor(x, y).name() for x in range(0, image.width(), 5) for y in range(0, image.height(), 5)}
    # the pie shows the weights and the KV cache of the default scenario in their category colours
    assert CATEGORY_COLORS["weights"] in colours and CATEGORY_COLORS["kv_cache"] in colours
    # the window's own background, and enough different colours to be a rendered window (not a blank grab)
    assert LIGHT.background in colours and LIGHT.panel in colours
    assert len(colours) > 50
