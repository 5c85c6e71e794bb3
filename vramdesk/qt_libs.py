"""Before the window starts: the system libraries Qt needs and this machine lacks, named with the command that
installs them on this distribution.

Qt aborts the process when its platform plugin cannot load, with a message that names a plugin and a guess
(``xcb-cursor0 ... is needed``) rather than what is missing. So, before Qt is imported, the plugin that will be used
and the Qt libraries are checked with ``ldd`` (the dynamic linker's own answer: every missing library at once),
and a missing one is one line: which libraries, and ``sudo apt install ...`` (or dnf, pacman, zypper) with the
package names. Costs one ``ldd`` run (~10 ms) at window start; the command line never calls it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: soname -> package on (Debian / Ubuntu, Fedora / RHEL, Arch, openSUSE)
PACKAGES: dict[str, tuple[str, str, str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor", "xcb-util-cursor", "libxcb-cursor0"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm", "xcb-util-wm", "libxcb-icccm4"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms", "xcb-util-keysyms", "libxcb-keysyms1"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image", "xcb-util-image", "libxcb-image0"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil", "xcb-util-renderutil",
                                "libxcb-render-util0"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util", "xcb-util", "libxcb-util1"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11", "libxkbcommon-x11-0"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon", "libxkbcommon", "libxkbcommon0"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb", "libx11", "libX11-xcb1"),
    "libX11.so.6": ("libx11-6", "libX11", "libx11", "libX11-6"),
    "libxcb.so.1": ("libxcb1", "libxcb", "libxcb", "libxcb1"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl", "libglvnd", "libEGL1"),
    "libGL.so.1": ("libgl1", "libglvnd-glx", "libglvnd", "libGL1"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl", "libglvnd", "libOpenGL0"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig", "fontconfig", "libfontconfig1"),
    "libfreetype.so.6": ("libfreetype6", "freetype", "freetype2", "libfreetype6"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs", "dbus", "libdbus-1-3"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2", "glib2", "libglib-2_0-0"),
    "libwayland-client.so.0": ("libwayland-client0", "libwayland-client", "wayland", "libwayland-client0"),
    "libwayland-cursor.so.0": ("libwayland-cursor0", "libwayland-cursor", "wayland", "libwayland-cursor0"),
    "libwayland-egl.so.1": ("libwayland-egl1", "libwayland-egl", "wayland", "libwayland-egl1"),
}  # fmt: skip
for _n in ("randr.so.0", "shape.so.0", "xinerama.so.0", "xkb.so.1", "sync.so.1", "shm.so.0", "xfixes.so.0",
           "render.so.0"):  # fmt: skip
    _deb = "libxcb-" + _n.replace(".so.", "")
    PACKAGES.setdefault(f"libxcb-{_n}", (_deb, "libxcb", "libxcb", _deb))

#: distribution family -> (index in PACKAGES' tuples, install command)
FAMILIES: dict[str, tuple[int, str]] = {
    "debian": (0, "sudo apt install"),
    "fedora": (1, "sudo dnf install"),
    "arch": (2, "sudo pacman -S"),
    "suse": (3, "sudo zypper install"),
}
#: os-release ID / ID_LIKE values -> family
_FAMILY_IDS = {
    "debian": "debian", "ubuntu": "debian", "fedora": "fedora", "rhel": "fedora", "centos": "fedora",
    "arch": "arch", "suse": "suse", "opensuse": "suse",
}  # fmt: skip
_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.M)


def family(os_release: str | None = None) -> str:
    """debian | fedora | arch | suse (from /etc/os-release's ID and ID_LIKE), or "" when unknown."""
    if os_release is None:
        try:
            os_release = Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
    ids: list[str] = []
    for line in os_release.splitlines():
        key, _, value = line.partition("=")
        if key in ("ID", "ID_LIKE"):
            ids += value.strip().strip("\"'").lower().split()
    for name in ids:
        key = "opensuse" if name.startswith("opensuse") else name
        if key in _FAMILY_IDS:
            return _FAMILY_IDS[key]
    return ""


def platform_name() -> str:
    """The Qt platform plugin Qt will try first here (QT_QPA_PLATFORM, else wayland or xcb)."""
    chosen = os.environ.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    if chosen:
        return chosen
    return "wayland" if os.environ.get("WAYLAND_DISPLAY") else "xcb"


def qt_dir() -> Path | None:
    """PySide6's Qt folder (``.../PySide6/Qt``), found without importing Qt."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        qt = Path(location) / "Qt"
        if qt.is_dir():
            return qt
    return None


def files_to_check(qt: Path, platform: str) -> list[Path]:
    """The Qt libraries the window loads and the platform plugin (xcb / wayland; offscreen needs no more)."""
    lib = qt / "lib"
    files = [lib / f"libQt6{name}.so.6" for name in ("Core", "Gui", "Widgets", "OpenGL")]
    plugins = Path(os.environ.get("QT_PLUGIN_PATH") or qt / "plugins") / "platforms"
    if platform == "xcb":
        files += [lib / "libQt6XcbQpa.so.6", plugins / "libqxcb.so"]
    elif platform.startswith("wayland"):
        files += [lib / "libQt6WaylandClient.so.6", plugins / "libqwayland.so"]
    return [f for f in files if f.is_file()]


def missing_libraries(files: list[Path]) -> list[str]:
    """Sonames ``ldd`` cannot find for ``files`` (none when ldd is unavailable)."""
    ldd = shutil.which("ldd")
    if not ldd or not files:
        return []
    try:
        done = subprocess.run([ldd, *map(str, files)], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(set(_NOT_FOUND.findall(done.stdout)))


def advice(missing: list[str], fam: str) -> str:
    """One line: what is missing, and the command that installs it on this distribution family."""
    line = f"the window cannot start: Qt needs {', '.join(missing)}, not installed on this system"
    index, command = FAMILIES.get(fam, (0, ""))
    packages = sorted({PACKAGES[m][index] for m in missing if m in PACKAGES})
    unknown = [m for m in missing if m not in PACKAGES]
    if command and packages:
        line += f"; install with: {command} {' '.join(packages)}"
        if unknown:
            line += f" (and the package that provides {', '.join(unknown)})"
    elif packages:
        line += f" (Debian / Ubuntu packages: {' '.join(packages)})"
    return line


def preflight() -> str | None:
    """None when Qt's libraries and platform plugin load here; else the one line :func:`advice` makes.
    Only on Linux (other systems bundle or ship what Qt needs)."""
    if not sys.platform.startswith("linux"):
        return None
    qt = qt_dir()
    if qt is None:
        return None
    missing = missing_libraries(files_to_check(qt, platform_name()))
    return advice(missing, family()) if missing else None


def import_error_advice(err: ImportError) -> str:
    """An ImportError from Qt's libraries (``libEGL.so.1: cannot open shared object file``) as :func:`advice`."""
    qt = qt_dir()
    missing = missing_libraries(files_to_check(qt, platform_name())) if qt is not None else []
    if not missing:
        name = re.search(r"(\S+\.so[.\d]*): cannot open shared object file", str(err))
        missing = [name.group(1)] if name else []
    if not missing:
        return f"the window cannot start: {err}"
    return advice(missing, family())
