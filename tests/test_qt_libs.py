"""vramdesk names the system libraries Qt lacks, and the command that installs them, before Qt aborts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vramdesk import main as entry
from vramdesk import qt_libs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's dynamic linker")


def _plugin_missing(tmp: Path, *sonames: str) -> Path:
    """A real shared library that links to ``sonames``, which are then removed (ldd: "not found")."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is needed to build a stand-in plugin")
    libs = tmp / "libs"
    libs.mkdir()
    links = []
    for soname in sonames:
        stub = libs / soname
        src = tmp / f"{soname}.c"
        src.write_text("int stub_symbol(void) { return 1; }\n")
        subprocess.run([gcc, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(stub), str(src)], check=True)
        links.append(f"-l:{soname}")
    plugin = tmp / "libqxcb.so"
    src = tmp / "plugin.c"
    src.write_text("int plugin_symbol(void) { return 2; }\n")
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-o", str(plugin), str(src), f"-L{libs}", "-Wl,--no-as-needed", *links], check=True
    )
    shutil.rmtree(libs)
    return plugin


#: sonames no system has (a real one, such as libxcb-cursor.so.0, may be installed where the tests run)
GONE_A, GONE_B = "libvramdesk-gone-a.so.0", "libvramdesk-gone-b.so.4"


def test_ldd_names_every_missing_library(tmp_path: Path) -> None:
    plugin = _plugin_missing(tmp_path, GONE_B, GONE_A)
    assert qt_libs.missing_libraries([plugin]) == [GONE_A, GONE_B]


def test_a_library_that_loads_has_nothing_missing(tmp_path: Path) -> None:
    plugin = _plugin_missing(tmp_path)
    assert qt_libs.missing_libraries([plugin]) == []


@pytest.mark.parametrize(
    ("os_release", "family", "command"),
    [
        ('ID=ubuntu\nID_LIKE=debian\nVERSION_ID="22.04"\n', "debian", "sudo apt install libxcb-cursor0 libxcb-icccm4"),
        ('ID="rocky"\nID_LIKE="rhel centos fedora"\n', "fedora", "sudo dnf install xcb-util-cursor xcb-util-wm"),
        ("ID=arch\n", "arch", "sudo pacman -S xcb-util-cursor xcb-util-wm"),
        ('ID="opensuse-tumbleweed"\nID_LIKE="opensuse suse"\n', "suse", "sudo zypper install libxcb-cursor0"),
    ],
)
def test_the_install_command_is_the_distributions_own(os_release: str, family: str, command: str) -> None:
    assert qt_libs.family(os_release) == family
    line = qt_libs.advice(["libxcb-cursor.so.0", "libxcb-icccm.so.4"], family)
    assert line.startswith("the window cannot start: Qt needs libxcb-cursor.so.0, libxcb-icccm.so.4")
    assert line.split("install with: ")[1].startswith(command)
    assert "\n" not in line


def test_an_unknown_distribution_still_names_the_libraries() -> None:
    assert qt_libs.family("ID=gentoo\n") == ""
    line = qt_libs.advice(["libEGL.so.1", "libfoo.so.3"], "")
    assert "libEGL.so.1, libfoo.so.3" in line and "libegl1" in line and "install with" not in line


def test_the_window_refuses_in_one_line_before_qt_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = _plugin_missing(tmp_path, GONE_A)
    monkeypatch.setattr(qt_libs, "files_to_check", lambda qt, platform: [plugin])
    monkeypatch.setattr(qt_libs, "PACKAGES", {**qt_libs.PACKAGES, GONE_A: ("libgone0", "gone", "gone", "libgone0")})
    monkeypatch.setattr(qt_libs, "family", lambda os_release=None: "debian")
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    assert entry.main(["gui"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"vramdesk: error: the window cannot start: Qt needs {GONE_A}, not installed on this system; "
        "install with: sudo apt install libgone0"
    ]


def test_an_import_error_of_qt_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qt_libs, "files_to_check", lambda qt, platform: [])
    monkeypatch.setattr(qt_libs, "family", lambda os_release=None: "fedora")
    err = ImportError("libEGL.so.1: cannot open shared object file: No such file or directory")
    assert qt_libs.import_error_advice(err) == (
        "the window cannot start: Qt needs libEGL.so.1, not installed on this system; "
        "install with: sudo dnf install libglvnd-egl"
    )


def test_the_checked_files_are_qts_own() -> None:
    qt = qt_libs.qt_dir()
    assert qt is not None and (qt / "lib").is_dir()
    names = {p.name for p in qt_libs.files_to_check(qt, "xcb")}
    assert {"libQt6Gui.so.6", "libqxcb.so"} <= names
    assert "libqxcb.so" not in {p.name for p in qt_libs.files_to_check(qt, "offscreen")}
