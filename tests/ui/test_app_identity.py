"""The window's identity on the desktop (vramdesk/ui/app_identity.py): its icon, its desktop-file id and its title."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from benchload import load_benchmark
from PySide6.QtGui import QGuiApplication, QImage
from uiwindow import shown_window

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.ui import qtapp
from vramdesk.ui.app_identity import APP_ID, ICON_SIZES, app_icon, window_title
from vramdesk.ui.main_window import MainWindow

ROOT = Path(__file__).resolve().parents[2]
DESKTOP_ENTRY = ROOT / "packaging" / "linux" / f"{APP_ID}.desktop"


@pytest.fixture
def window(qtbot, tmp_path: Path) -> MainWindow:
    return shown_window(qtbot, tmp_path)


def test_the_application_has_the_icon_in_every_size(qapp) -> None:
    qtapp.ensure_app()
    icon = QGuiApplication.windowIcon()
    assert sorted(s.width() for s in icon.availableSizes()) == list(ICON_SIZES)
    for size in (16, 48, 256):
        drawn = icon.pixmap(size, size).toImage().convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
        png = QImage(str(ROOT / "resources" / "icons" / f"vramdesk-{size}.png"))
        assert drawn == png.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
    # not a blank square: the icon has both opaque and transparent pixels
    image = app_icon().pixmap(64, 64).toImage()
    alphas = {image.pixelColor(x, y).alpha() for x in range(64) for y in range(64)}
    assert 0 in alphas and 255 in alphas


def test_the_desktop_file_name_is_the_desktop_entrys_id(qapp) -> None:
    qtapp.ensure_app()
    assert QGuiApplication.desktopFileName() == APP_ID
    assert DESKTOP_ENTRY.is_file()  # the entry the id names (installed as <id>.desktop)


def test_the_title_names_the_plan_once_and_the_app_once(qtbot, window: MainWindow) -> None:
    assert window.windowTitle() == f"{DEFAULT_SCENARIO.name}[*] — vramdesk"
    handle = window.windowHandle()
    assert handle is not None
    assert handle.title() == f"{DEFAULT_SCENARIO.name} — vramdesk"  # what the system's title bar gets
    window.widget("batch").setValue(9)
    window.estimate_now()
    # the generated name follows the plan; the marker shows
    assert window.isWindowModified() and handle.title() == "Qwen3-4B, batch 9 on an RTX 4090* — vramdesk"
    assert handle.title().count("vramdesk") == 1


def test_a_plan_named_with_the_marker_keeps_its_name() -> None:
    assert window_title("a[*]b") == "a[*][*]b[*] — vramdesk"


# ---------------------------------------------------------------------------------------------- on a real X server

xdisplay = load_benchmark("xdisplay", folder="")


def _window_properties(display: str) -> str | None:
    """xprop of vramdesk's top-level window on ``display`` (None until it is mapped)."""
    env = {**os.environ, "DISPLAY": display}
    found = subprocess.run(
        ["xdotool", "search", "--onlyvisible", "--class", "vramdesk"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    ids = found.stdout.split()
    if not ids:
        return None
    props = subprocess.run(
        ["xprop", "-id", ids[0], "WM_CLASS", "_NET_WM_NAME", "_GTK_APPLICATION_ID", "_NET_WM_ICON"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return props.stdout if "_NET_WM_NAME(UTF8_STRING)" in props.stdout else None


@pytest.mark.slow
@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not all(shutil.which(t) for t in ("Xvfb", "xprop", "xdotool")),
    reason="needs Linux, Xvfb, xprop and xdotool (apt-get install xvfb x11-utils xdotool)",
)
def test_the_window_on_x11_has_its_class_id_title_and_icon(qtbot, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    seen: list[str] = []
    with xdisplay.xvfb(tmp_path / "xvfb.log") as display:
        env = {
            **os.environ,
            "DISPLAY": display,
            "QT_QPA_PLATFORM": "xcb",
            "VRAMDESK_LANG": "en",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_RUNTIME_DIR": str(runtime),
            "PYTHONPATH": str(ROOT),
        }
        proc = subprocess.Popen([sys.executable, "-m", "vramdesk", "gui"], env=env, stderr=subprocess.PIPE, text=True)
        try:

            def titled() -> bool:
                props = _window_properties(display)
                if props is None or DEFAULT_SCENARIO.name not in props:
                    return False
                seen.append(props)
                return True

            qtbot.waitUntil(titled, timeout=120_000)
        finally:
            proc.terminate()
            proc.communicate(timeout=60)
    props = seen[-1]
    assert 'WM_CLASS(STRING) = "vramdesk", "vramdesk"' in props
    assert f'_NET_WM_NAME(UTF8_STRING) = "{DEFAULT_SCENARIO.name} — vramdesk"' in props
    assert f'_GTK_APPLICATION_ID(UTF8_STRING) = "{APP_ID}"' in props
    assert "Icon (16 x 16)" in props and "Icon (128 x 128)" in props
