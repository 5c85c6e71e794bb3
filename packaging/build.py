"""Build everything this machine can build into dist/.

    python packaging/build.py                 # the bundle, then the installers for this system
    python packaging/build.py --host          # Linux: the bundle from this machine's Python (needs its glibc)
    python packaging/build.py --skip-bundle   # reuse dist/vramdesk (e.g. after editing the .deb layout)
    python packaging/build.py --fast          # CI: the same files, lighter compression (about 40 s less)
    python packaging/build.py --deb-compression zstd   # faster still (xz is the default: smallest)

Linux:   dist/vramdesk/ (PyInstaller onedir, built in a Debian 11 root made with debootstrap, so that it needs
         glibc 2.31 at most: packaging/linux/buildroot.py; --host builds it here instead),
         dist/vramdesk-<version>-linux-x86_64.tar.gz,
         dist/vramdesk_<version>_amd64.deb, and dist/vramdesk-<version>-x86_64.AppImage when appimagetool is on
         PATH (packaging/appimage/build_appimage.sh).
Windows: dist/vramdesk/ and, when makensis is on PATH, dist/vramdesk-<version>-windows-x64-setup.exe.
macOS:   dist/vramdesk.app and dist/vramdesk-<version>-macos-<arm64|x86_64>.dmg (packaging/macos/build_dmg.sh; signs and
         notarises only when its secrets are set).

Needs PyInstaller in the running Python (pip install -e '.[package]'). Uses only the standard library
otherwise, plus dpkg-deb for the .deb. See docs/packaging.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
DIST = ROOT / "dist"
BUILD = ROOT / "build"
APP_ID = "io.github.vramdesk.VramDesk"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)

sys.path.insert(0, str(PACKAGING / "linux"))
import buildroot  # noqa: E402
import deb  # noqa: E402
import licences  # noqa: E402


def version() -> str:
    with (ROOT / "pyproject.toml").open("rb") as f:
        v: str = tomllib.load(f)["project"]["version"]
    return v


def log(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def run(cmd: list[str], **kw: object) -> None:
    log("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


# --- the PyInstaller bundle -------------------------------------------------------------------------------------


def build_bundle() -> Path:
    spec = PACKAGING / "vramdesk.spec"
    run(
        [
            sys.executable,
            "-m",
            "PyInstaller",
            "--noconfirm",
            "--clean",
            "--log-level",
            "WARN",
            "--distpath",
            str(DIST),
            "--workpath",
            str(BUILD / "pyinstaller"),
            str(spec),
        ],
        cwd=ROOT,
    )
    bundle = DIST / ("vramdesk.app" if sys.platform == "darwin" else "vramdesk")
    if sys.platform.startswith("linux"):
        strip_python(bundle)
        with (ROOT / "pyproject.toml").open("rb") as f:
            project_licence = tomllib.load(f)["project"]["license"]
        licences.main(bundle, BUILD / "pyinstaller" / "vramdesk" / "collected.json", project_licence)
    return bundle


def strip_python(bundle: Path) -> None:
    """Strip libpython and the stdlib extensions (23 MB -> 6 MB). The rest is left alone: stripping numpy's
    auditwheel-patched OpenBLAS breaks it, and the Qt and system libraries come stripped already."""
    strip = shutil.which("strip")
    if not strip:
        log("strip not found: libpython stays unstripped (+17 MB)")
        return
    internal = bundle / "_internal"
    targets = sorted(internal.glob("libpython3*.so*")) + sorted((internal / "python3.11" / "lib-dynload").glob("*.so"))
    targets = [t for t in targets if t.is_file() and not t.is_symlink()]
    if targets:
        subprocess.run([strip, "--strip-unneeded", *map(str, targets)], check=True)


def tree_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


# --- Linux ------------------------------------------------------------------------------------------------------


def install_desktop_files(root: Path, share: Path) -> None:
    """The freedesktop files under ``share`` (usr/share for the .deb, share/ in the tarball and AppImage)."""
    del root
    apps = share / "applications"
    apps.mkdir(parents=True, exist_ok=True)
    shutil.copy2(PACKAGING / "linux" / f"{APP_ID}.desktop", apps / f"{APP_ID}.desktop")
    meta = share / "metainfo"
    meta.mkdir(parents=True, exist_ok=True)
    shutil.copy2(PACKAGING / "linux" / f"{APP_ID}.metainfo.xml", meta / f"{APP_ID}.metainfo.xml")
    mime = share / "mime" / "packages"
    mime.mkdir(parents=True, exist_ok=True)
    shutil.copy2(PACKAGING / "linux" / "vramdesk-mime.xml", mime / "vramdesk.xml")
    for size in ICON_SIZES:
        d = share / "icons" / "hicolor" / f"{size}x{size}" / "apps"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "resources" / "icons" / f"vramdesk-{size}.png", d / "vramdesk.png")
    d = share / "icons" / "hicolor" / "scalable" / "apps"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy2(PACKAGING / "icons" / "vramdesk.svg", d / "vramdesk.svg")


def build_tarball(bundle: Path, ver: str, level: int = 6) -> Path:
    """vramdesk-<v>/ = the bundle + share/ (desktop entry, icons, metainfo, MIME) + install-desktop-entry.sh."""
    out = DIST / f"vramdesk-{ver}-linux-x86_64.tar.gz"
    stage = BUILD / "tarball"
    shutil.rmtree(stage, ignore_errors=True)
    top = stage / f"vramdesk-{ver}"
    shutil.copytree(bundle, top, symlinks=True)
    install_desktop_files(top, top / "share")
    script = top / "install-desktop-entry.sh"
    shutil.copy2(PACKAGING / "linux" / "install-desktop-entry.sh", script)
    script.chmod(0o755)
    log(f"writing {out.name}")
    with tarfile.open(out, "w:gz", compresslevel=level) as tar:
        tar.add(top, arcname=top.name, filter=_normalize)
    return out


def _normalize(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def build_deb(bundle: Path, ver: str, compression: str, level: int = 6) -> Path:
    """The .deb (packaging/linux/deb.py): the bundle in /usr/lib/vramdesk and the desktop integration."""
    return deb.build(
        bundle,
        DIST / f"vramdesk_{ver}_amd64.deb",
        BUILD / "deb" / "root",
        ver,
        compression,
        level,
        lambda share: install_desktop_files(share.parent.parent, share),
        ROOT / "CHANGELOG.md",
        _epoch(),
        log,
    )


def _epoch() -> int:
    return int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or int(time.time())


def build_appimage(bundle: Path, ver: str) -> Path | None:
    if not shutil.which(os.environ.get("APPIMAGETOOL", "appimagetool")):
        log("appimagetool not found: no AppImage (packaging/appimage/build_appimage.sh documents the recipe)")
        return None
    out = DIST / f"vramdesk-{ver}-x86_64.AppImage"
    run(["bash", str(PACKAGING / "appimage" / "build_appimage.sh"), str(bundle), str(out)], cwd=ROOT)
    return out


# --- Windows ----------------------------------------------------------------------------------------------------


def _macos_arch() -> str:
    """The processor a macOS bundle runs on, as Apple names it in a download ("arm64" or "x86_64")."""
    machine = platform.machine()
    return {"aarch64": "arm64", "AMD64": "x86_64"}.get(machine, machine)


def build_nsis(bundle: Path, ver: str) -> Path | None:
    makensis = shutil.which("makensis")
    if not makensis:
        log("makensis not found: no Windows installer (choco install nsis)")
        return None
    out = DIST / f"vramdesk-{ver}-windows-x64-setup.exe"
    run(
        [
            makensis,
            "-V2",
            f"-DVERSION={ver}",
            f"-DPAYLOAD={bundle.resolve()}",
            f"-DOUTFILE={out.resolve()}",
            str(PACKAGING / "windows" / "vramdesk.nsi"),
        ]
    )
    return out


def timed(step: Callable[..., Path | None], *args: object) -> Path | None:
    t0 = time.monotonic()
    out = step(*args)
    if out is not None:
        log(f"{out.name}: {out.stat().st_size / 1e6:.1f} MB in {time.monotonic() - t0:.1f} s")
    return out


# --- main -------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--skip-bundle", action="store_true", help="reuse dist/vramdesk instead of running PyInstaller")
    p.add_argument(
        "--host",
        action="store_true",
        help="Linux: run PyInstaller with this Python here instead of in the Debian 11 build root (the bundle then "
        "needs this machine's glibc)",
    )
    p.add_argument("--bundle-only", action="store_true", help="stop after the PyInstaller bundle")
    p.add_argument("--deb-compression", default="xz", choices=["xz", "gzip", "zstd", "none"])
    p.add_argument("--no-tarball", action="store_true", help="Linux: skip the .tar.gz")
    p.add_argument(
        "--fast",
        action="store_true",
        help="CI: compression level 3 instead of 6 (same files; .deb 64 instead of 59 MB, 26 instead of 73 s)",
    )
    args = p.parse_args(argv)

    ver = version()
    DIST.mkdir(exist_ok=True)
    t0 = time.monotonic()
    if args.skip_bundle:
        bundle = DIST / ("vramdesk.app" if sys.platform == "darwin" else "vramdesk")
        if not bundle.exists():
            raise SystemExit(f"{bundle} does not exist: run without --skip-bundle")
    elif sys.platform.startswith("linux") and not args.host:
        try:
            bundle = buildroot.build_bundle_in_root(ROOT)
        except buildroot.RootError as err:
            raise SystemExit(f"error: {err}") from None
    else:
        bundle = build_bundle()
    t_bundle = time.monotonic() - t0
    log(f"bundle {bundle.relative_to(ROOT)}: {tree_size(bundle) / 1e6:.1f} MB in {t_bundle:.1f} s")
    if args.bundle_only:
        return 0

    outputs: list[Path | None] = []
    if sys.platform.startswith("linux"):
        if platform.machine() not in ("x86_64", "AMD64"):
            log(f"note: this machine is {platform.machine()}; the file names still say x86_64/amd64")
        if not args.no_tarball:
            outputs.append(timed(build_tarball, bundle, ver, 3 if args.fast else 6))
        outputs.append(timed(build_deb, bundle, ver, args.deb_compression, 3 if args.fast else 6))
        outputs.append(timed(build_appimage, bundle, ver))
    elif sys.platform == "win32":
        outputs.append(timed(build_nsis, bundle, ver))
    elif sys.platform == "darwin":
        # one .dmg per processor (the bundle holds the Python and Qt of the machine that froze it)
        dmg = DIST / f"vramdesk-{ver}-macos-{_macos_arch()}.dmg"
        run(["bash", str(PACKAGING / "macos" / "build_dmg.sh"), str(bundle), str(dmg)], cwd=ROOT)
        outputs.append(dmg)
    for out in outputs:
        if out is not None:
            log(f"-> {out.relative_to(ROOT)}")
    log(f"done in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
