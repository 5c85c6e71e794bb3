"""Shared test set-up: Qt renders offscreen (no display in CI), and the bundled catalog is used."""

from __future__ import annotations

import gc
import os
import sys
import tempfile
from collections.abc import Iterator
from types import FrameType, FunctionType, ModuleType
from typing import Any

import pytest
from benchload import load_benchmark

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# `vramdesk estimate` without --gpu probes this machine's NVML: not in tests (the GPU-free verdicts they check, and no
# probe child per call); tests/test_cli.py turns it back on with a fake NVML
os.environ["VRAMDESK_NO_DETECT"] = "1"
# never read or write the user's real caches from a test run
_ISOLATED = tempfile.mkdtemp(prefix="vramdesk-tests-")
os.environ["VRAMDESK_CACHE_DIR"] = os.path.join(_ISOLATED, "vramdesk-cache")
os.environ["HF_HUB_CACHE"] = os.path.join(_ISOLATED, "hf-cache")
os.environ["HF_HOME"] = os.path.join(_ISOLATED, "hf-home")
os.environ["VRAMDESK_DATA_DIR"] = os.path.join(_ISOLATED, "vramdesk-data")


@pytest.fixture(autouse=True)
def _isolated_qt_settings(tmp_path, monkeypatch):
    """For tests that use Qt: English whatever the machine's locale, QSettings (recent models, language, units,
    headroom) and Qt's standard paths in this test's own folder, and the process-wide unit reset afterwards."""
    if "PySide6.QtCore" not in sys.modules:
        yield
        return
    from PySide6.QtCore import QSettings, QStandardPaths

    monkeypatch.setenv("VRAMDESK_LANG", "en")
    QStandardPaths.setTestModeEnabled(True)  # the log file goes to a test folder
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "qsettings"))
    yield
    presenter = sys.modules.get("vramdesk.ui.presenter")
    if presenter is not None:
        presenter.set_unit("GiB")  # the unit is process-wide: leave it as the next test expects


@pytest.fixture
def library(tmp_path):
    """An empty library of saved configurations in this test's folder (tests/test_library*.py)."""
    from vramdesk.storage.library import ScenarioLibrary

    return ScenarioLibrary(tmp_path / "scenarios")


@pytest.fixture
def chinese(monkeypatch):
    """The window in Simplified Chinese for one test (VRAMDESK_LANG is what ensure_app() reads); English after."""
    from vramdesk.ui import i18n, qt_i18n

    monkeypatch.setenv("VRAMDESK_LANG", "zh_CN")
    i18n.set_language("zh_CN")
    try:
        yield
    finally:
        i18n.set_language("en")
        qt_i18n.install_qt_translations("en")


@pytest.fixture(scope="session")
def sim() -> ModuleType:
    """benchmarks/allocator/caching_allocator.py, the model of PyTorch's CUDA caching allocator."""
    return load_benchmark("caching_allocator")


@pytest.fixture(scope="session")
def report() -> ModuleType:
    """benchmarks/allocator/replay_report.py: a trace's settings as a scenario, GPU-run comparisons."""
    return load_benchmark("replay_report")


_UI_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ui") + os.sep


#: pytest-qt's fixtures: a test that asks for one builds widgets wherever it lives (tests/services has window tests)
_QT_FIXTURES = frozenset({"qtbot", "qapp", "qtmodeltester"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/ui, and every other test that uses pytest-qt, builds widgets: mark it ``ui``
    (``-m "not ui"`` runs the rest without a QApplication)."""
    for item in items:
        if str(item.path).startswith(_UI_TESTS) or _QT_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.ui)


#: the test's setup or call failed (its traceback holds what it made): the leak check cleans up but adds no error
_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report = yield
    if report.when in ("setup", "call") and report.failed:
        item.stash[_FAILED] = True
    return report


def _cpp_address(widget: object) -> int:
    import shiboken6

    return int(shiboken6.getCppPointer(widget)[0])


def _top_level_widgets() -> dict[int, Any]:
    """The live top-level widgets (windows, dialogs, popups) by C++ address; {} before there is an application."""
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None:
        return {}
    return {_cpp_address(w): w for w in QApplication.topLevelWidgets()}


def _delete_deferred() -> None:
    """Run the pending deleteLater() calls (pytest-qt closes the widgets of qtbot.addWidget and deletes them later);
    a destructor can post more, hence the few rounds."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None:
        return
    for _ in range(3):
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def _drop_dead_fixture_values(item: pytest.Item) -> None:
    """pytest keeps the test's fixture values (``item.funcargs``) until its teardown is over: a window whose C++
    object is gone still holds its Python attributes there, and so pyqtgraph's own parentless widgets (a plot's
    "Plot Options" menu and its controls), which die with those attributes."""
    import shiboken6
    from PySide6.QtCore import QObject

    def dead(value: object) -> bool:
        if isinstance(value, tuple | list):
            return any(dead(v) for v in value)
        return isinstance(value, QObject) and not shiboken6.isValid(value)

    funcargs = getattr(item, "funcargs", None)
    if isinstance(funcargs, dict):
        for name, value in list(funcargs.items()):
            if dead(value):
                funcargs[name] = None


def _owns_itself(widget: Any) -> bool:
    """A window the leak check may delete: the app's own classes, main windows and dialogs. Not a plain widget
    or menu without a parent: pyqtgraph makes those for each plot and they belong to it (deleting one before its
    plot crashes when the plot goes)."""
    from PySide6.QtWidgets import QDialog, QMainWindow

    return widget.parentWidget() is None and (
        isinstance(widget, QMainWindow | QDialog) or not type(widget).__module__.startswith("PySide6")
    )


def _describe(widgets: list[Any]) -> str:
    """``MainWindow ('title') x2, QMenu`` (the windows without a parent; their own popups are not listed)."""
    roots = [w for w in widgets if w.parentWidget() is None] or widgets
    counts: dict[str, int] = {}
    for w in roots:
        title = w.windowTitle()
        name = f"{type(w).__module__}.{type(w).__qualname__}" if not type(w).__module__.startswith("PySide6") else ""
        label = (name or type(w).__name__) + (f" ({title!r})" if title else "")
        counts[label] = counts.get(label, 0) + 1
    popups = len(widgets) - len(roots)
    text = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in sorted(counts.items()))
    text += f" (and {popups} of their child popups)" if popups else ""
    orphans = [w for w in roots if not _owns_itself(w)]
    holder = _holder(orphans[0]) if orphans else None
    if holder:
        text += f"; Python still holds the first {type(orphans[0]).__name__} through {holder}"
    return text


def _holder(widget: Any, budget: int = 40) -> str | None:
    """The farthest object of the app's (or the tests') own classes on a chain of Python references that keeps
    ``widget`` alive, with the one below it: e.g. ``vramdesk.ui.window_undo.FormEdit -> ...MainWindow (deleted)``
    for a plot's menu whose window is gone. None when there is none. Only for a failing check: each step scans
    the heap (gc.get_referrers), ``budget`` of them at most."""
    import shiboken6
    from PySide6.QtCore import QObject

    mine = ("vramdesk", "test")

    def own(obj: object) -> bool:
        if isinstance(obj, FrameType):
            return obj.f_globals.get("__name__", "").startswith(mine)
        if isinstance(obj, FunctionType):
            return (obj.__module__ or "").startswith(mine)
        return (getattr(type(obj), "__module__", "") or "").startswith(mine)

    def label(obj: object) -> str:
        if isinstance(obj, FrameType):
            return f"a frame of {obj.f_globals.get('__name__')}.{obj.f_code.co_qualname} (a traceback's?)"
        if isinstance(obj, FunctionType):
            return f"the function {obj.__module__}.{obj.__qualname__}"
        name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        return name + (" (deleted)" if isinstance(obj, QObject) and not shiboken6.isValid(obj) else "")

    def module_of(obj: object) -> str | None:
        """The name of the module whose globals ``obj`` is."""
        name = obj.get("__name__") if isinstance(obj, dict) else None
        module = sys.modules.get(name) if isinstance(name, str) else None
        return name if module is not None and vars(module) is obj else None

    frame: Any = sys._getframe()
    seen = {id(widget)}
    while frame is not None:  # this check's own frames and locals are no holders
        seen.add(id(frame))
        frame = frame.f_back
    frontier: list[object] = [widget]
    chain: list[str] = []
    while frontier and budget > 0:
        found: list[object] = []
        for obj in frontier:
            budget -= 1
            for ref in gc.get_referrers(obj):
                if id(ref) not in seen and not isinstance(ref, ModuleType) and ref is not frontier:
                    seen.add(id(ref))
                    found.append(ref)
        seen.add(id(found))
        module = next((module_of(r) for r in found if module_of(r)), None)
        if module:  # a module's global: as far as it goes
            return " -> ".join([f"a global of {module}", *chain[:1]])
        owned = [r for r in found if own(r)]
        if owned:
            chain = [label(owned[0]), *chain[:1]]
        # the app's objects first, then instance dicts and frames (what links objects), then the rest
        found.sort(key=lambda r: 0 if own(r) else 1 if isinstance(r, dict | FrameType) else 2)
        frontier = found[:6]
    return " -> ".join(chain) if chain else None


def _leaked_since(before: set[int]) -> list[Any]:
    return [w for a, w in _top_level_widgets().items() if a not in before]


@pytest.fixture(autouse=True)
def _check_no_leaked_widgets(request: pytest.FixtureRequest) -> Iterator[None]:
    """A ui test must close and delete the top-level widgets it made (qtbot.addWidget does it for those it is
    given; a fixture that makes a window closes and deletes it): after the test and its fixtures, with the
    deferred deletes done, no top-level widget the test made is alive. Widgets alive before the test are not its.

    A window left alive gets every later test's style, font and language changes and keeps its timers and
    background jobs, until something deletes it at a time nobody chose: the kind of thing behind an
    order-dependent crash. So the leaked windows are closed and deleted here (the next test starts clean), and
    the test fails with their classes, unless it has failed already (its traceback then holds its widgets)."""
    if request.node.get_closest_marker("ui") is None:
        yield
        return
    _delete_deferred()
    before = set(_top_level_widgets())
    yield
    _delete_deferred()
    if not _leaked_since(before):
        return
    for _ in range(3):  # only when something looks leaked: Python-owned widgets in reference cycles
        _drop_dead_fixture_values(request.node)
        gc.collect()
        _delete_deferred()
        if not _leaked_since(before):
            return
    leaked = _leaked_since(before)
    described = _describe(leaked)
    deletable = [w for w in leaked if _owns_itself(w)]
    del leaked
    for widget in deletable:
        widget.close()
        widget.deleteLater()
    del deletable
    _delete_deferred()
    _drop_dead_fixture_values(request.node)
    gc.collect()
    _delete_deferred()
    if not request.node.stash.get(_FAILED, False):
        pytest.fail(
            f"top-level widgets left alive after the test: {described}. Close and delete them (qtbot.addWidget(w), "
            "or w.close() and w.deleteLater() where they are made), or drop the Python reference that keeps them, "
            "or the deleted window they belong to, alive",
            pytrace=False,
        )
