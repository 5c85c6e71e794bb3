"""The macOS and Windows recipes, checked on any system: the bundle's Info.plist (written and read back with
plistlib), its lowest macOS from the bundled Qt, the entitlements, and the NSIS installer's per-user install and
running-app check (tests/installers/test_packaging.py compiles the script with makensis)."""

from __future__ import annotations

import importlib.util
import plistlib
import re
from pathlib import Path
from types import ModuleType

import pytest

from vramdesk.ui.app_identity import APP_ID
from vramdesk.ui.running_mutex import MUTEX_NAME

PKG = Path(__file__).resolve().parents[2] / "packaging"
NSI = PKG / "windows" / "vramdesk.nsi"


def _bundle_info() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vramdesk_bundle_info", PKG / "macos" / "bundle_info.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- macOS ------------------------------------------------------------------------------------------------------


def test_info_plist_round_trips_with_the_document_type(tmp_path: Path) -> None:
    info = _bundle_info().info_plist("0.1.0", "6.11.3")
    path = tmp_path / "Info.plist"
    path.write_bytes(plistlib.dumps(info))
    back = plistlib.loads(path.read_bytes())
    assert back["LSMinimumSystemVersion"] == "13.0"  # Qt 6.11: "macOS 13 or higher" (doc.qt.io/qt-6.11/macos.html)
    assert back["CFBundleShortVersionString"] == "0.1.0"
    (doc,) = back["CFBundleDocumentTypes"]
    (exported,) = back["UTExportedTypeDeclarations"]
    assert doc["LSItemContentTypes"] == [exported["UTTypeIdentifier"]] == [APP_ID + ".scenario"]
    assert exported["UTTypeConformsTo"] == ["public.json"]
    assert exported["UTTypeTagSpecification"]["public.filename-extension"] == ["vramdesk.json"]


@pytest.mark.parametrize(
    ("qt", "macos"),
    [
        ("6.5.3", "11.0"),
        ("6.8.2", "12.0"),
        ("6.9.1", "13.0"),
        ("6.10.0", "13.0"),
        ("6.11.3", "13.0"),
        ("6.12.0", "14.4"),
    ],
)
def test_the_lowest_macos_follows_the_bundled_qt(qt: str, macos: str) -> None:
    # 6.9 is not in the table: it takes the next listed release's (stricter, never too lax)
    assert _bundle_info().min_macos_for_qt(qt) == macos


def test_a_qt_newer_than_the_table_stops_the_build() -> None:
    with pytest.raises(SystemExit, match=r"Qt 6\.13\.0 is newer .*https://doc\.qt\.io/qt-6\.13/macos\.html"):
        _bundle_info().min_macos_for_qt("6.13.0")


def test_the_spec_takes_the_plist_from_bundle_info() -> None:
    text = (PKG / "vramdesk.spec").read_text(encoding="utf-8")
    assert 'info_plist=info_plist(dist_version("vramdesk"), qVersion())' in text
    assert '"LSMinimumSystemVersion"' not in text  # one place says it: bundle_info.py
    assert '"PySide6.QtNetwork"' not in text, "the single-instance hand-off needs QtNetwork"


def test_entitlements_parse() -> None:
    ent = plistlib.loads((PKG / "macos" / "entitlements.plist").read_bytes())
    assert isinstance(ent, dict) and all(isinstance(v, bool) for v in ent.values())


# --- Windows ----------------------------------------------------------------------------------------------------


def test_the_installer_is_per_user_and_never_elevated() -> None:
    text = NSI.read_text(encoding="utf-8")
    assert "RequestExecutionLevel user" in text and "RequestExecutionLevel admin" not in text
    assert 'InstallDir "$LOCALAPPDATA\\Programs\\${APPNAME}"' in text
    code = "\n".join(line.split(";", 1)[0] for line in text.splitlines())  # without comments
    assert "HKLM" not in code and "$PROGRAMFILES" not in code
    assert re.findall(r"SetShellVarContext (\w+)", code) and set(re.findall(r"SetShellVarContext (\w+)", code)) == {
        "current"
    }
    assert '!define MUI_FINISHPAGE_RUN "$INSTDIR\\vramdesk.exe"' in text


def test_install_and_uninstall_wait_for_the_running_window() -> None:
    text = NSI.read_text(encoding="utf-8")
    (name,) = re.findall(r'!define RUNNING_MUTEX "([^"]+)"', text)
    assert name == MUTEX_NAME and APP_ID in name  # what the window creates (vramdesk/ui/running_mutex.py)
    assert "OpenMutexW" in text
    for function in ("Function .onInit", "Function un.onInit"):
        body = text.split(function, 1)[1].split("FunctionEnd", 1)[0]
        assert "!insertmacro ABORT_WHILE_RUNNING" in body, function
