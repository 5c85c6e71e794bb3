"""The `vramdesk` entry point: the window for no command (or `gui`, --self-test, --screenshot), else the CLI.

It only dispatches, so that the command line never imports Qt and the window never imports the CLI.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

_GUI_FLAGS = ("--self-test", "--screenshot")


def wants_gui(argv: Sequence[str]) -> bool:
    if not argv:
        return True
    return argv[0] == "gui" or any(a == f or a.startswith(f + "=") for a in argv for f in _GUI_FLAGS)


def has_display() -> bool:
    """Qt aborts the process when it cannot open a display; say so instead (Linux/BSD only)."""
    if not sys.platform.startswith(("linux", "freebsd")):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("QT_QPA_PLATFORM"))


def opens_a_file(args: Sequence[str]) -> list[str]:
    """A bare saved scenario (a double-click on a ``.vramdesk.json``, ``vramdesk plan.vramdesk.json``, macOS
    "Open with") opens in the window, like ``vramdesk gui FILE``."""
    if len(args) == 1 and args[0].endswith(".vramdesk.json"):
        return ["gui", args[0]]
    return list(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = opens_a_file(sys.argv[1:] if argv is None else argv)
    if args[:2] == ["-m", "vramdesk.ui.export"]:
        # `vramdesk export` renders charts in a child process so the CLI never imports Qt; a frozen build has
        # no `python -m`, so the bundle's own executable answers that form of the command line
        from vramdesk.ui.export import main as export_main

        return export_main(args[2:])
    if args[:2] == ["-m", "vramdesk.services.nvml"]:
        # GPU detection probes NVML in a child process (a hung or crashing driver takes only the child along):
        # the frozen build answers that command line here too
        from vramdesk.services.nvml import probe_main

        return probe_main(args[2:])
    if wants_gui(args) and not any(a in ("-h", "--help", "--version") for a in args[:1]):
        headless_ok = any(a.startswith(_GUI_FLAGS) for a in args)
        if not headless_ok and not has_display():
            print(
                "vramdesk: error: no display found (DISPLAY / WAYLAND_DISPLAY unset): use 'vramdesk estimate ...' "
                "on a headless machine, 'vramdesk --screenshot OUT.png' to render the window, or set "
                "QT_QPA_PLATFORM=offscreen",
                file=sys.stderr,
            )
            return 2
        return _run_window(args)
    from vramdesk.cli import main as cli_main

    return cli_main(args)


def _run_window(args: list[str]) -> int:
    """The window, after checking that Qt's libraries load here (Qt itself would abort with a guess)."""
    from vramdesk import qt_libs

    problem = qt_libs.preflight()
    if problem:
        print(f"vramdesk: error: {problem}", file=sys.stderr)
        return 2
    try:
        from vramdesk.ui.app import run
    except ImportError as err:
        if "PySide6" not in repr(err) and ".so" not in str(err):
            raise
        print(f"vramdesk: error: {qt_libs.import_error_advice(err)}", file=sys.stderr)
        return 2
    code: int = run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
