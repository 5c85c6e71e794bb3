"""Fast checks of packaging/ that do not build the bundle (the full build + install is packaging/smoke_test.py,
run by .ci/run): the spec, desktop entry, metainfo, MIME type, icons, NSIS script, shell recipes, release workflow
and the .deb layout (from a stand-in bundle)."""

from __future__ import annotations

import configparser
import importlib.util
import shutil
import struct
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "packaging"
APP_ID = "io.github.vramdesk.VramDesk"
DESKTOP = PKG / "linux" / f"{APP_ID}.desktop"
METAINFO = PKG / "linux" / f"{APP_ID}.metainfo.xml"
MIME = PKG / "linux" / "vramdesk-mime.xml"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
MIME_TYPE = "application/x-vramdesk-scenario+json"


def load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vramdesk_packaging_build", PKG / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DESKTOP, encoding="utf-8")
    return parser["Desktop Entry"]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# --- the PyInstaller spec ---------------------------------------------------------------------------------------


def test_spec_is_python_and_onedir_with_the_resources() -> None:
    text = (PKG / "vramdesk.spec").read_text(encoding="utf-8")
    compile(text, "vramdesk.spec", "exec")
    assert "COLLECT(" in text, "onedir: EXE + COLLECT"
    assert "onefile" not in text.lower().replace("not onefile", "")
    assert '"vramdesk/resources"' in text, "resources must land where catalog.resources_dir() looks (_MEIPASS)"
    assert 'copy_metadata("vramdesk")' in text, "vramdesk.__version__ reads the dist-info"
    # pyqtgraph imports these at start (ecosystem.md §6): excluding them breaks the bundle
    for needed in ("PySide6.QtOpenGL", "PySide6.QtOpenGLWidgets", "PySide6.QtSvg"):
        assert f'"{needed}"' not in text, f"{needed} must not be excluded"


def test_a_bare_scenario_file_opens_in_the_window() -> None:
    from vramdesk.main import opens_a_file

    assert opens_a_file(["/data/plans/plan.vramdesk.json"]) == ["gui", "/data/plans/plan.vramdesk.json"]
    assert opens_a_file(["estimate", "x.vramdesk.json"]) == ["estimate", "x.vramdesk.json"]
    assert opens_a_file([]) == []
    assert "from vramdesk.main import main" in (PKG / "launcher.py").read_text(encoding="utf-8")


def test_build_script_version_is_the_project_version() -> None:
    build = load_build()
    with (ROOT / "pyproject.toml").open("rb") as f:
        assert build.version() == tomllib.load(f)["project"]["version"]
    assert build.APP_ID == APP_ID
    assert tuple(build.ICON_SIZES) == ICON_SIZES


# --- Linux desktop integration ----------------------------------------------------------------------------------


def test_desktop_entry_is_valid() -> None:
    entry = desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Exec"] == "vramdesk gui %f", "a double-clicked file opens in the window"
    assert entry["Icon"] == "vramdesk"
    assert MIME_TYPE in entry["MimeType"].split(";")
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("desktop-file-validate not installed (apt-get install desktop-file-utils); keys checked only")
    proc = subprocess.run([tool, str(DESKTOP)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_metainfo_is_well_formed_and_matches_the_desktop_entry() -> None:
    root = ET.parse(METAINFO).getroot()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.findtext("launchable") == DESKTOP.name
    assert root.findtext("metadata_license") == "CC0-1.0"
    with (ROOT / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    releases = [r.get("version") for r in root.iter("release")]
    assert project["version"] in releases, "add a <release> to the metainfo for this version"
    assert root.findtext("project_license") == project["license"]
    assert MIME_TYPE in [m.text for m in root.iter("mediatype")]


def test_metainfo_passes_appstreamcli() -> None:
    tool = shutil.which("appstreamcli")
    if tool is None:
        pytest.skip("appstreamcli not installed (apt-get install appstream)")
    proc = subprocess.run(
        [tool, "validate", "--no-net", "--no-color", str(METAINFO)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mime_type_globs_saved_scenarios() -> None:
    from vramdesk.storage.library import SUFFIX

    ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
    root = ET.parse(MIME).getroot()
    types = root.findall("m:mime-type", ns)
    assert [t.get("type") for t in types] == [MIME_TYPE]
    globs = [g.get("pattern") for g in types[0].findall("m:glob", ns)]
    assert globs == ["*" + SUFFIX], "the MIME glob follows the saved-file suffix"
    assert types[0].find("m:sub-class-of", ns).get("type") == "application/json"  # type: ignore[union-attr]


def test_icons_exist_in_every_size() -> None:
    icons = PKG / "icons"
    ET.parse(icons / "vramdesk.svg")  # well-formed
    for size in ICON_SIZES:  # the window's icons and the installers' are the same files (resources/icons)
        assert png_size(ROOT / "resources" / "icons" / f"vramdesk-{size}.png") == (size, size)
    assert png_size(icons / "vramdesk-1024.png") == (1024, 1024)
    ico = (icons / "vramdesk.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", ico[:6])
    assert (reserved, kind) == (0, 1)
    sizes = {ico[6 + 16 * i] or 256 for i in range(count)}
    assert {16, 32, 48, 256} <= sizes


def test_deb_layout_from_a_stand_in_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """build_deb on a tiny fake bundle: the same code path as the real .deb, in well under a second."""
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb not installed (not a Debian-family system)")
    build = load_build()
    sys.path.insert(0, str(PKG))
    try:
        import smoke_test  # it imports packaging/build.py as "build": take both out again afterwards
    finally:
        sys.path.remove(str(PKG))
        sys.modules.pop("smoke_test", None)
        sys.modules.pop("build", None)
    monkeypatch.setattr(build, "DIST", tmp_path / "dist")
    monkeypatch.setattr(build, "BUILD", tmp_path / "build")
    (tmp_path / "dist").mkdir()
    bundle = tmp_path / "bundle"
    (bundle / "_internal/vramdesk/resources/catalog").mkdir(parents=True)
    (bundle / "_internal/vramdesk/resources/catalog/models.json").write_text("{}")
    (bundle / "vramdesk").write_text("#!/bin/sh\necho vramdesk 0.0\n")
    (bundle / "vramdesk").chmod(0o755)
    gcc = shutil.which("gcc")
    if gcc:  # a real shared library that needs zlib from the system: the .deb must depend on zlib1g
        src = tmp_path / "z.c"
        src.write_text("#include <string.h>\nint f(char *a, const char *b) { strcpy(a, b); return 0; }\n")
        lib = bundle / "_internal" / "libstandin.so"
        subprocess.run(
            [gcc, "-shared", "-fPIC", "-o", str(lib), str(src), "-Wl,--no-as-needed", "-l:libz.so.1"], check=True
        )
    deb = build.build_deb(bundle, "9.9.9", "gzip")
    assert deb.name == "vramdesk_9.9.9_amd64.deb"
    smoke_test.check_layout(smoke_test.dpkg_contents(deb))
    fields = subprocess.run(["dpkg-deb", "-f", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "Package: vramdesk" in fields and "Installed-Size:" in fields
    depends = next(line for line in fields.splitlines() if line.startswith("Depends: "))
    if gcc:
        assert depends.startswith("Depends: libc6 (>= 2.") and ", zlib1g," in depends, depends
    assert depends.endswith("libegl1, libgl1, shared-mime-info, hicolor-icon-theme"), depends
    listed = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "./usr/share/doc/vramdesk/changelog.gz" in listed and "./usr/share/lintian/overrides/vramdesk" in listed
    control = subprocess.run(["dpkg-deb", "-I", str(deb)], capture_output=True, text=True, check=True).stdout
    assert " md5sums" in control


# --- Windows, macOS, AppImage -----------------------------------------------------------------------------------


def test_nsis_script_compiles(tmp_path: Path) -> None:
    makensis = shutil.which("makensis")
    if makensis is None:
        pytest.skip("makensis not installed (apt-get install nsis); the release workflow compiles it on Windows")
    payload = tmp_path / "payload"
    (payload / "_internal").mkdir(parents=True)
    for name in ("vramdesk.exe", "vramdesk-cli.exe", "_internal/placeholder.txt"):
        (payload / name).write_bytes(b"placeholder")
    out = tmp_path / "vramdesk-test-installer.exe"
    proc = subprocess.run(
        [
            makensis,
            "-WX",
            "-V2",
            "-DVERSION=0.1.0",
            f"-DPAYLOAD={payload}",
            f"-DOUTFILE={out}",
            str(PKG / "windows" / "vramdesk.nsi"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.read_bytes()[:2] == b"MZ"


def test_nsis_script_undoes_what_it_installs() -> None:
    text = (PKG / "windows" / "vramdesk.nsi").read_text(encoding="utf-8")
    install, uninstall = text.split('Section "Uninstall"')
    assert 'CreateShortcut "$SMPROGRAMS' in install and 'Delete "$SMPROGRAMS' in uninstall
    for key in ("Software\\Classes\\${PROGID}", "App Paths\\vramdesk.exe", "${UNINST_KEY}"):
        assert key in install and key in uninstall, key
    assert "OpenWithProgids" in uninstall


@pytest.mark.parametrize(
    "script", ["macos/build_dmg.sh", "appimage/build_appimage.sh", "linux/install-desktop-entry.sh"]
)
def test_shell_recipes_parse(script: str) -> None:
    shell = "sh" if script.endswith("install-desktop-entry.sh") else "bash"
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} not available")
    proc = subprocess.run([shell, "-n", str(PKG / script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_macos_signing_runs_only_with_secrets() -> None:
    text = (PKG / "macos" / "build_dmg.sh").read_text(encoding="utf-8")
    assert 'if [ -n "$identity" ]' in text and "signing skipped" in text and "notarisation skipped" in text
    ET.parse(PKG / "macos" / "entitlements.plist")


# --- CI ---------------------------------------------------------------------------------------------------------


def test_release_workflow_parses_and_covers_three_systems() -> None:
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
    jobs = wf["jobs"]
    runners = {name: job["runs-on"] for name, job in jobs.items() if name != "macos"}
    # macOS: one build per processor (numpy and pydantic-core publish no universal2 wheels)
    mac = {(m["runner"], m["arch"]) for m in jobs["macos"]["strategy"]["matrix"]["include"]}
    assert mac == {("macos-14", "arm64"), ("macos-13", "x86_64")}
    runners["macos"] = "macos"
    assert any(r.startswith("ubuntu") for r in runners.values())
    assert any(r.startswith("windows") for r in runners.values())
    assert any(r.startswith("macos") for r in runners.values())
    for name in ("linux", "windows", "macos"):
        steps = " ".join(str(s.get("run", "")) for s in jobs[name]["steps"])
        assert "packaging/build.py" in steps and "packaging/smoke_test.py" in steps, name
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as True
    assert "tags" in on["push"]


def test_ci_runs_the_packaging_smoke_test() -> None:
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "packaging/build.py" in text and "packaging/smoke_test.py" in text
