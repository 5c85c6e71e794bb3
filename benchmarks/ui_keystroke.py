"""Keystroke to final repaint, as the user sees it: the real window on a real X server (Xvfb, Qt's xcb platform).

For ``--keys`` key presses in the "Input tokens" and "Batch" spin boxes (arrow up / down, as a user steps a
value), the time from the key event to the end of the repaint that shows the new estimate: the key reaches the
spin box, the form re-estimates, the results are set, and the window's repaint (paint + flush to the X server)
ends. The floor, measured in the same run on the same display: a key press in a bare spin box that does nothing
but repaint itself. The ratio to it is the figure to watch on a shared machine.

Target (issue "The desktop flows", item 8): p90 at most 50 ms on an idle machine for the default plan.

    python benchmarks/ui_keystroke.py [--keys 120]     (starts its own Xvfb; or uses $DISPLAY with --display)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_P90_MS = 50.0


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def _line(name: str, values: list[float]) -> str:
    return (
        f"  {name:34s} median {statistics.median(values):6.1f}  p90 {_pct(values, 0.9):6.1f}  "
        f"max {max(values):6.1f}  (n={len(values)})"
    )


def _measure(keys: int) -> int:
    """The measurement itself, in a process whose Qt talks to the X server in $DISPLAY."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QSpinBox

    from vramdesk.core.defaults import DEFAULT_SCENARIO
    from vramdesk.services.nvml import DetectionResult
    from vramdesk.ui import qtapp
    from vramdesk.ui.main_window import MainWindow
    from vramdesk.ui.repaint_clock import RepaintClock

    qtapp.ensure_app()
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    print(f"platform: {app.platformName()}, display {os.environ.get('DISPLAY', '?')}")

    def settle(seconds: float = 0.3) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.002)

    #: when the key of the measurement in progress was pressed
    pressed = [0.0]

    def timed_keys(window: object, clock: RepaintClock, presses: list[Qt.Key], *, on_estimate: bool) -> list[float]:
        """ms from each key press to the end of the repaint the clock reports; ``on_estimate``: the clock is
        started by the window's ``estimated`` signal (the repaint after the estimate), else at the key press."""
        out: list[float] = []
        done: list[float] = []
        clock.repainted.connect(lambda total, _paint: done.append(total))
        for key in presses:
            done.clear()
            pressed[0] = time.perf_counter()
            if not on_estimate:
                clock.start(pressed[0])
            QTest.keyClick(window, key)  # type: ignore[call-overload]
            deadline = time.monotonic() + 2.0
            while not done and time.monotonic() < deadline:
                app.processEvents()
            if done:
                out.append(done[0] * 1000)
            settle(0.02)
        return out

    # the floor: a bare spin box that only repaints itself
    bare = QSpinBox()
    bare.setRange(0, 1_000_000)
    bare.resize(200, 40)
    bare.show()
    bare.activateWindow()
    bare.setFocus()
    settle()
    floor_clock = RepaintClock()
    floor_clock.watch(bare)
    steps = [Qt.Key.Key_Up, Qt.Key.Key_Down] * (keys // 2)
    floor = timed_keys(bare.windowHandle(), floor_clock, steps, on_estimate=False)
    bare.close()

    w = MainWindow(DEFAULT_SCENARIO, detect=lambda: DetectionResult(reason="benchmark"), hub_search=None)
    w.resize(1480, 900)
    w.show()
    w.activateWindow()
    settle(1.0)
    w.form.fields["input_len"].set(4096)
    settle(0.5)
    clock = RepaintClock()
    clock.watch(w)
    # the final repaint is the one after the estimate: arm the clock when the window has estimated
    w.estimated.connect(lambda _ev: clock.start(pressed[0]))
    results: dict[str, list[float]] = {}
    for field in ("input_len", "batch"):
        w.form.widget(field).setFocus()
        settle(0.2)
        results[field] = timed_keys(w.windowHandle(), clock, steps, on_estimate=True)
    w.close()

    every = [v for vals in results.values() for v in vals]
    print(f"keystroke -> final repaint on a real X server (ms), {w.windowTitle().replace('[*]', '')}:")
    print(_line("floor: bare spin box repaint", floor))
    print(_line("Input tokens, arrow up/down", results["input_len"]))
    print(_line("Batch, arrow up/down", results["batch"]))
    p90 = _pct(every, 0.9)
    ratio = p90 / max(_pct(floor, 0.9), 0.001)
    verdict = "within" if p90 <= TARGET_P90_MS else "ABOVE"
    print(f"  p90 over both fields {p90:.1f} ms ({ratio:.1f} x the floor's p90): {verdict} the {TARGET_P90_MS:.0f} ms")
    missing = 2 * len(steps) - len(every)
    if missing:
        print(f"  {missing} key presses showed no repaint within 2 s (not counted)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=120, help="key presses per field [120]")
    parser.add_argument("--display", action="store_true", help="use $DISPLAY instead of starting an Xvfb")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.child:
        return _measure(ns.keys)
    env = {**os.environ, "QT_QPA_PLATFORM": "xcb", "HF_HUB_OFFLINE": "1", "VRAMDESK_NO_DETECT": "1"}
    env.pop("WAYLAND_DISPLAY", None)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--keys", str(ns.keys)]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        # the window's settings, autosave and log stay in this run's folder
        env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"))
        if ns.display:
            return subprocess.run(cmd, env=env, check=False).returncode
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from xdisplay import NoDisplayError, xvfb

        try:
            with xvfb(home / "xvfb.log", screen="1600x1000x24") as display:
                return subprocess.run(cmd, env={**env, "DISPLAY": display}, check=False).returncode
        except NoDisplayError as err:  # a machine without Xvfb measures nothing, and says so
            print(f"ui_keystroke: skipped: {err}")
            return 0


if __name__ == "__main__":
    sys.exit(main())
