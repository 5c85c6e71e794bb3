"""The Linux packaging pieces that run without a root: the tarball's desktop-entry script, the system-library
table, the ELF scan and the screenshot check of packaging/install_test.py."""

from __future__ import annotations

import importlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QImage

ROOT = Path(__file__).resolve().parents[2]
LINUX = ROOT / "packaging" / "linux"
SCRIPT = LINUX / "install-desktop-entry.sh"
APP_ID = "io.github.vramdesk.VramDesk"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux packaging")


def _module(name: str, folder: Path):  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(folder))


def _unpacked(tmp: Path) -> Path:
    """An unpacked tarball's top folder: the script, a stand-in program and the share/ tree build.py makes."""
    build = _module("build", ROOT / "packaging")
    top = tmp / "vramdesk-9.9.9"
    top.mkdir()
    shutil.copy2(SCRIPT, top / SCRIPT.name)
    (top / "vramdesk").write_text("#!/bin/sh\n")
    (top / "vramdesk").chmod(0o755)
    build.install_desktop_files(top, top / "share")
    return top


def _run(top: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    return subprocess.run(["sh", str(top / SCRIPT.name), *args], env=env, capture_output=True, text=True, check=False)


def test_help_prints_the_usage_and_installs_nothing(tmp_path: Path) -> None:
    top, home = _unpacked(tmp_path), tmp_path / "home"
    done = _run(top, home, "--help")
    assert done.returncode == 0 and "Usage:" in done.stdout and "--remove" in done.stdout
    assert not (home / ".local").exists()


def test_a_wrong_argument_is_refused_in_one_line(tmp_path: Path) -> None:
    top, home = _unpacked(tmp_path), tmp_path / "home"
    done = _run(top, home, "--bogus")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].endswith("unknown argument --bogus")
    assert not (home / ".local").exists()
    assert _run(top, home, "--remove", "extra").returncode == 2


def test_install_then_remove_leaves_nothing(tmp_path: Path) -> None:
    top, home = _unpacked(tmp_path), tmp_path / "home"
    done = _run(
        top,
        home,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith(f"installed ({home}/.local/share)")
    data = home / ".local" / "share"
    entry = (data / "applications" / f"{APP_ID}.desktop").read_text(encoding="utf-8")
    assert f'Exec="{top}/vramdesk"' in entry
    assert (data / "icons" / "hicolor" / "48x48" / "apps" / "vramdesk.png").is_file()
    done = _run(top, home, "--remove")
    assert done.returncode == 0 and "removed" in done.stdout
    left = [p for p in data.rglob("*") if p.is_file() and ("vramdesk" in p.name.lower() or APP_ID in p.name)]
    assert left == []


def test_system_libraries_map_to_debian_packages() -> None:
    libs = _module("system_libs", LINUX)
    assert libs.is_system("libstdc++.so.6") and libs.is_system("libxcb-icccm.so.4")
    assert not libs.is_system("libpython3.11.so.1.0") and not libs.is_system("libxcb-cursor.so.0")
    assert not libs.is_system("libssl.so.1.1")  # Debian 12 has only libssl3: the bundle keeps its own
    got = libs.packages(["libz.so.1", "libgio-2.0.so.0", "libglib-2.0.so.0", "libX11.so.6"])
    assert got == ["zlib1g", "libglib2.0-0", "libx11-6", "libegl1", "libgl1", "shared-mime-info", "hicolor-icon-theme"]


def test_the_elf_scan_finds_what_a_library_needs_from_the_system(tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None or shutil.which("objdump") is None:
        pytest.skip("gcc and objdump are needed")
    scan = _module("elf_scan", LINUX)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    src = tmp_path / "a.c"
    src.write_text("#include <string.h>\nint f(char *a, const char *b) { strcpy(a, b); return 0; }\n")
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(bundle / "liba.so"), str(src), "-Wl,--no-as-needed",
                    "-l:libz.so.1"], check=True)  # fmt: skip
    (bundle / "data.bin").write_bytes(b"\x7fELX not an ELF file")
    found = scan.scan(bundle)
    assert found.elf_files == 1
    assert set(found.outside) >= {"libz.so.1", "libc.so.6"} and found.outside["libz.so.1"] == ["liba.so"]
    assert found.glibc >= (2, 2) and found.glibc_file == "liba.so"
    lines = scan.report(found)
    assert lines[0].startswith("1 ELF files; newest glibc symbol GLIBC_2.") and len(lines) >= 3

    class Head(io.StringIO):
        """A reader that goes away after the first line, as ``| head -n 1`` does."""

        def write(self, text: str) -> int:
            if self.getvalue():
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(text)

    out = Head()
    assert scan.main([str(bundle)], out) == 0  # (it had ended with a traceback, failing CI's pipeline)
    assert out.getvalue() == lines[0] + "\n"


def _png(path: Path, colours: int) -> bytes:
    image = QImage(320, 64, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    for i in range(1, colours):
        for y in range(64):
            image.setPixelColor(i * 8 % 320, y, QColor(i % 256, (i * 7) % 256, (i * 13) % 256))
    assert image.save(str(path), "PNG")
    return path.read_bytes()


def test_the_screenshot_check_counts_drawn_colours(tmp_path: Path) -> None:
    check = _module("install_test", ROOT / "packaging")
    assert check.png_colours(_png(tmp_path / "blank.png", 1)) == 1
    assert check.png_colours(_png(tmp_path / "drawn.png", 30)) >= 20
    with pytest.raises(check.InstallError):
        check.png_colours(b"GIF89a")
