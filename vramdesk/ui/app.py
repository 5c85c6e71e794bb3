"""Start the desktop app: ``vramdesk``, ``vramdesk gui [SCENARIO.json]``, ``--self-test`` and ``--screenshot``.

:func:`run` is what :mod:`vramdesk.main` calls with the command line (without the program name). It
returns the exit code: 0 ok, 1 a failed self-test, 2 a usage error, no display, an unreadable scenario
file or an unwritable screenshot path.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from PySide6.QtCore import (
    QEventLoop,
    QStandardPaths,
    Qt,
    QTimer,
)
from PySide6.QtGui import QGuiApplication, QImageWriter
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.messages import join
from vramdesk.core.scenario import Scenario
from vramdesk.error_words import said
from vramdesk.safety import redact
from vramdesk.services.resolve import resolve_gpu, resolve_model
from vramdesk.storage.scenarios import OPEN_FAILED, SHOWING_DEFAULT, ScenarioFileError, load_scenario

from .charts import FULL_CIRCLE
from .core_text import localize
from .dialogs import apply_saved_settings
from .file_open import ExternalFiles
from .i18n import tr
from .main_window import WINDOW_SIZE, MainWindow
from .qtapp import ensure_app, offscreen
from .running_mutex import hold_running_mutex
from .single_instance import InstanceServer, hand_off, server_name

USAGE = """\
usage: vramdesk                          open the window with the default scenario
       vramdesk gui [SCENARIO.json]      open the window with a saved scenario
       vramdesk --screenshot OUT.png [SCENARIO.json]
                                         render the window offscreen and save it as PNG
       vramdesk --self-test              start the window offscreen, estimate, exit 0 or 1
"""
#: a self-test or screenshot that has not finished by then is a failure, never a hang
WATCHDOG_MS = 30_000

T = TypeVar("T")


class UsageError(ValueError):
    pass


@dataclass(frozen=True)
class Options:
    mode: str  # "gui" | "self-test" | "screenshot" | "help"
    scenario: Path | None = None
    out: Path | None = None


def parse_args(argv: list[str]) -> Options:
    args = list(argv)
    if args and args[0] == "gui":
        args = args[1:]
    mode = "gui"
    out: Path | None = None
    positional: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            return Options(mode="help")
        if a == "--self-test":
            mode = "self-test"
        elif a == "--screenshot" or a.startswith("--screenshot="):
            mode = "screenshot"
            if "=" in a:
                value = a.split("=", 1)[1]
            else:
                i += 1
                if i >= len(args):
                    raise UsageError("--screenshot needs an output file (OUT.png)")
                value = args[i]
            if not value:
                raise UsageError("--screenshot needs an output file (OUT.png)")
            out = Path(value)
        elif a.startswith("-") and a != "-":
            raise UsageError(f"unknown option {a}")
        else:
            positional.append(a)
        i += 1
    if len(positional) > 1:
        raise UsageError("expected at most one scenario file, got " + ", ".join(positional))
    scenario = Path(positional[0]) if positional else None
    return Options(mode=mode, scenario=scenario, out=out)


def _has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM") or not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def show_error_dialog(parent: QWidget | None, summary: str, details: str) -> QMessageBox:
    """An error with its details one click away, selectable and copyable (Copy puts all on the clipboard)."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle(tr("vramdesk: unexpected error"))
    box.setText(summary)
    box.setInformativeText(tr("Please report it with the details below."))
    box.setDetailedText(details)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    copy = box.addButton(tr("Copy details"), QMessageBox.ButtonRole.ActionRole)
    box.addButton(QMessageBox.StandardButton.Close)
    copy.clicked.disconnect()
    copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(f"{summary}\n\n{details}"))
    return box


LOG = logging.getLogger("vramdesk")


class _RedactingFormatter(logging.Formatter):
    """Log lines without URL passwords or tokens (a traceback can quote a Hub URL through a chained error)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def start_log() -> Path | None:
    """Log to ``vramdesk.log`` in the app's data folder (errors, start-up); returns its path or None."""
    folder = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppLocalDataLocation)
    if not folder:
        return None
    path = Path(folder) / "vramdesk.log"
    if any(isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path for h in LOG.handlers):
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(_RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    LOG.info("vramdesk started")
    return path


def install_excepthook(log_path: Path | None = None) -> None:
    """Unexpected errors in the running window: logged (stderr, log file) and shown in the error dialog."""

    def hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        # the chained httpx / huggingface_hub errors in a traceback can quote a URL with its password
        details = redact("".join(traceback.format_exception(exc_type, exc, tb)))
        print(details, file=sys.stderr)
        LOG.error("unexpected error\n%s", details)
        if log_path is not None:
            details += f"\nLog file: {log_path}"
        if QApplication.instance() is not None and not offscreen():
            show_error_dialog(QApplication.activeWindow(), redact(f"{exc_type.__name__}: {exc}"), details).exec()

    sys.excepthook = hook


def _err(msg: str) -> None:
    print(f"vramdesk: {msg}", file=sys.stderr)


def open_window(scenario_path: Path | None) -> MainWindow:
    """The window for ``vramdesk gui [SCENARIO.json]``; an unreadable file falls back to the default scenario."""
    scenario: Scenario = DEFAULT_SCENARIO
    notice = None
    if scenario_path is not None:
        try:
            scenario = load_scenario(scenario_path)
        except (ScenarioFileError, OSError) as err:
            notice = join("; ", OPEN_FAILED(error=said(err)), SHOWING_DEFAULT())
            _err(notice)
    # the interactive window autosaves the current work and offers it back after a crash
    window = MainWindow(scenario, notice=notice, autosave=True)
    if notice and not offscreen():
        QTimer.singleShot(0, lambda: QMessageBox.warning(window, "vramdesk", localize(notice)))
    return window


def _in_loop(fn: Callable[[], T], delay_ms: int = 0) -> T:
    """Run ``fn`` from a running event loop (after ``delay_ms``) and return its result; never hangs."""
    loop = QEventLoop()
    box: dict[str, object] = {}

    def call() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # handed to the caller below
            box["error"] = err
        finally:
            loop.quit()

    def watchdog() -> None:
        box.setdefault("error", TimeoutError(f"no result after {WATCHDOG_MS / 1000:.0f} s"))
        loop.quit()

    QTimer.singleShot(delay_ms, call)
    guard = QTimer()
    guard.setSingleShot(True)
    guard.timeout.connect(watchdog)
    guard.start(WATCHDOG_MS)
    loop.exec()
    guard.stop()
    # out of the box before it leaves: Qt keeps the guard's slot, which holds the box, and an error's traceback
    # holds what fn made (the self-test's window)
    error, value = box.pop("error", None), box.pop("value", None)
    if error is not None:
        raise error  # type: ignore[misc]
    return value  # type: ignore[return-value]


def _offscreen_window(scenario: Scenario) -> MainWindow:
    window = MainWindow(scenario)
    window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    window.resize(*WINDOW_SIZE)
    window.show()
    return window


class SelfTestError(RuntimeError):
    pass


def self_test() -> str:
    """Build the window offscreen, estimate the default scenario through it and check what it shows."""
    window = _offscreen_window(DEFAULT_SCENARIO)
    try:
        window.wait_idle()
        ev = window.estimate_now()
        if ev.view is None:
            raise SelfTestError(f"the default scenario did not estimate: {ev.error}")
        view = ev.view
        direct = estimate(
            DEFAULT_SCENARIO, resolve_model(DEFAULT_SCENARIO.model.id), resolve_gpu(DEFAULT_SCENARIO.hardware.gpu)
        )
        if direct.device_bytes != view.device_bytes:
            raise SelfTestError(f"the window shows {view.device_bytes} bytes, estimate() gives {direct.device_bytes}")
        slices = window.breakdown.pie.slices
        if not slices or sum(s.span for s in slices) != FULL_CIRCLE:
            raise SelfTestError("the breakdown pie has no data")
        if not window.phase_chart.bar_items or not window.phase_chart.phase_names:
            raise SelfTestError("the phase chart has no data")
        if window.table_model.rowCount() != len(direct.components):
            raise SelfTestError("the components table does not list every component")
        if not window.verdict_label.text() or window.verdict_label.text() != view.headline:
            raise SelfTestError(f"the verdict label shows {window.verdict_label.text()!r}")
        if window.grab().isNull():
            raise SelfTestError("the window could not be rendered")
        return f"self-test ok: {view.summary_line()}"
    finally:
        window.close()
        window.deleteLater()


def check_output_path(out: Path) -> None:
    """Fail early, before anything is rendered, when ``out`` cannot be a file to write."""
    if not out.parent.is_dir():
        raise OSError(f"{out}: the folder {out.parent} does not exist")
    if out.is_dir():
        raise OSError(f"{out}: is a folder")


def screenshot(out: Path, scenario: Scenario) -> MainWindow:
    """Render the window for ``scenario`` at :data:`WINDOW_SIZE` and save it as PNG (raises OSError).

    On a high-DPI screen (device pixel ratio 2, e.g. ``QT_SCALE_FACTOR=2``) the PNG has the screen's own pixels
    (2960x1800), so text, lines and the charts stay sharp; the window's layout is the same."""
    window = _offscreen_window(scenario)
    try:
        window.wait_idle()
        ev = window.estimate_now()
        window.wait_idle()
        ev = window.evaluation or ev
        if ev.view is None:
            raise ValueError(f"cannot estimate this scenario: {ev.error}")
        QApplication.processEvents()
        image = window.grab().toImage()
        ratio = max(1.0, window.devicePixelRatioF())
        want = (round(WINDOW_SIZE[0] * ratio), round(WINDOW_SIZE[1] * ratio))
        if (image.width(), image.height()) != want:  # a window the platform did not give its full size
            image = image.scaled(
                *want, Qt.AspectRatioMode.IgnoreAspectRatio, Qt.TransformationMode.SmoothTransformation
            )
        # PNG's pHYs: 96 dpi x the ratio, so viewers show a 2x image at the window's size
        dots_per_meter = round(96 / 0.0254 * ratio)
        image.setDotsPerMeterX(dots_per_meter)
        image.setDotsPerMeterY(dots_per_meter)
        window.screenshot_size = (image.width(), image.height())
        check_output_path(out)
        writer = QImageWriter(str(out), b"png")
        if not writer.write(image):
            raise OSError(f"{out}: cannot write the PNG file ({writer.errorString()})")
        return window
    finally:
        window.close()
        window.deleteLater()


def run(argv: list[str]) -> int:
    try:
        opts = parse_args(argv)
    except UsageError as err:
        _err(str(err))
        print(USAGE, end="", file=sys.stderr)
        return 2
    if opts.mode == "help":
        print(USAGE, end="")
        return 0
    if opts.mode in ("self-test", "screenshot"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    elif QApplication.instance() is None and not _has_display():
        _err(
            "no display found (DISPLAY and WAYLAND_DISPLAY are unset). Run it on a desktop, or use "
            "--screenshot OUT.png / --self-test, or set QT_QPA_PLATFORM=offscreen"
        )
        return 2

    if opts.mode == "screenshot":
        assert opts.out is not None
        scenario = DEFAULT_SCENARIO
        try:
            check_output_path(opts.out)
        except OSError as err:
            _err(str(err))
            return 2
        if opts.scenario is not None:
            try:
                scenario = load_scenario(opts.scenario)
            except (ScenarioFileError, OSError) as err:
                _err(str(err))
                return 2
        ensure_app()
        try:
            shot = _in_loop(lambda: screenshot(opts.out, scenario), delay_ms=10)  # type: ignore[arg-type]
        except (OSError, ValueError) as err:
            _err(str(err))
            return 2
        width, height = getattr(shot, "screenshot_size", WINDOW_SIZE)
        print(f"saved {opts.out} ({width}x{height})")
        return 0

    if opts.mode == "self-test":
        ensure_app()
        try:
            line = _in_loop(self_test)
        except Exception as err:
            print(f"self-test failed: {type(err).__name__}: {err}", file=sys.stderr)
            return 1
        print(line)
        return 0

    app = ensure_app()
    instance = None
    if uses_single_instance():
        name = server_name()
        if opts.scenario is not None and opts.scenario.is_file() and hand_off(opts.scenario, name):
            print(f"vramdesk: {opts.scenario} opened in the running window")
            return 0
        instance = InstanceServer(name)
        instance.listen()
    hold_running_mutex()  # Windows: the installer asks to close the window before it replaces its files
    apply_saved_settings()
    log_path = start_log()
    previous_hook = sys.excepthook
    install_excepthook(log_path)
    try:
        window = open_window(opts.scenario)
        external = accept_external_files(app, window, instance)
        window.show()
        if opts.scenario is None:
            QTimer.singleShot(0, lambda: window.offer_restore(ask=not offscreen()))
        code = int(app.exec())
        app.removeEventFilter(external)
        window.deleteLater()  # the window closed; a caller that goes on (the tests) does not keep it
        return code
    finally:
        sys.excepthook = previous_hook
        if instance is not None:
            instance.close()
            instance.deleteLater()


def uses_single_instance() -> bool:
    """A second start hands its file to the running window on Linux and Windows (macOS sends the running app a
    file-open event instead); not offscreen, where no window is on a screen to take it."""
    return sys.platform != "darwin" and not offscreen()


def accept_external_files(app: QApplication, window: MainWindow, instance: InstanceServer | None) -> ExternalFiles:
    """Files handed to the running app open in ``window``: a second start's (``instance``) and, on macOS, the
    system's file-open events (an event filter on the application sees every event: only where such events come)."""
    external = ExternalFiles(window)
    if instance is not None:
        instance.file_received.connect(lambda path: external.open(Path(path)))
    if sys.platform == "darwin":
        app.installEventFilter(external)
    return external
