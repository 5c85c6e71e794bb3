"""Shared test set-up: Qt renders offscreen (no display in CI), and the bundled catalog is used."""

from __future__ import annotations

import os
import sys
import tempfile
from types import ModuleType

import pytest
from benchload import load_benchmark

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
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
    from vramdesk.ui import i18n

    monkeypatch.setenv("VRAMDESK_LANG", "zh_CN")
    i18n.set_language("zh_CN")
    try:
        yield
    finally:
        i18n.set_language("en")
        i18n.install_qt_translations("en")


@pytest.fixture(scope="session")
def sim() -> ModuleType:
    """benchmarks/allocator/caching_allocator.py, the model of PyTorch's CUDA caching allocator."""
    return load_benchmark("caching_allocator")


@pytest.fixture(scope="session")
def report() -> ModuleType:
    """benchmarks/allocator/replay_report.py: a trace's settings as a scenario, GPU-run comparisons."""
    return load_benchmark("replay_report")


_UI_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ui") + os.sep


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/ui builds widgets: mark it ``ui`` (``-m "not ui"`` runs the rest)."""
    for item in items:
        if str(item.path).startswith(_UI_TESTS):
            item.add_marker(pytest.mark.ui)
