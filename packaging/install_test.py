"""Install what ships into fresh minimal Debian roots, as a workstation user would, and use it.

    python packaging/install_test.py                       # Debian 11 (what CI runs)
    python packaging/install_test.py --suite all           # Debian 11, 12, 13 and Ubuntu 22.04, 24.04
    python packaging/install_test.py --suite debian        # Debian 11, 12 and 13
    python packaging/install_test.py --suite bookworm --keep   # leave the roots in build/roots/ to look into

For each root (debootstrap --variant=minbase: no Python, no X, no desktop; root privileges needed):
  .deb      apt-get install ./vramdesk_<v>_amd64.deb (apt pulls the declared dependencies from Debian), then as an
            ordinary user: --version (and that it loads no libQt6), --self-test, an estimate with --json,
            the window under Xvfb (xcb) with a screenshot; then apt-get purge leaves none of its files;
  tarball   in a second fresh root with the same libraries, unpacked in the user's home: --version, an estimate,
            install-desktop-entry.sh --help / install / --remove.
Screenshots go to dist/install-test/<suite>.png. Exit 0 when everything passed; each failure is one line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import subprocess
import sys
import tarfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packaging"))
sys.path.insert(0, str(ROOT / "packaging" / "linux"))
from build import APP_ID, DIST, version  # noqa: E402
from buildroot import Distro, RootError, enter, make_root, remove_root, roots_dir  # noqa: E402

UBUNTU = "http://archive.ubuntu.com/ubuntu"
#: the keyring packages that sign each Ubuntu release, pinned by SHA-256 (the roots' trust anchor)
JAMMY_KEYRING = (
    "pool/main/u/ubuntu-keyring/ubuntu-keyring_2021.03.26_all.deb",
    "0d0e7ed6b112f5d03eabf3c7eb01ebdacf9c57714b279e90495cfc58c8c4520f",
    "usr/share/keyrings/ubuntu-archive-keyring.gpg",
)
NOBLE_KEYRING = (
    "pool/main/u/ubuntu-keyring/ubuntu-keyring_2023.11.28.1_all.deb",
    "36de43b15853ccae0028e9a767613770c704833f82586f28eb262f0311adb8a8",
    "usr/share/keyrings/ubuntu-archive-keyring.gpg",
)
SUITES = {
    "bullseye": "Debian 11",
    "bookworm": "Debian 12",
    "trixie": "Debian 13",
    "jammy": "Ubuntu 22.04",
    "noble": "Ubuntu 24.04",
}
DISTROS = {
    "jammy": Distro(mirror=UBUNTU, components="main,universe", keyring=JAMMY_KEYRING),
    # Debian 12's debootstrap has no script named noble: every Ubuntu release uses the same one
    "noble": Distro(
        mirror=UBUNTU, components="main,universe", keyring=NOBLE_KEYRING, script="/usr/share/debootstrap/scripts/gutsy"
    ),
}
USER = "tester"
#: the user's environment: no network for the Hub, the bundled catalog only
USER_ENV = {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9", "XDG_RUNTIME_DIR": f"/tmp/{USER}-runtime"}


class InstallError(AssertionError):
    pass


def log(msg: str) -> None:
    print(msg, flush=True)


def fresh_root(suite: str, purpose: str) -> Path:
    """A new copy of a minimal ``suite`` root (the debootstrap result is kept as a base between runs)."""
    base = make_root(roots_dir(ROOT) / f"base-{suite}", suite, distro=DISTROS.get(suite, Distro()))
    root = roots_dir(ROOT) / f"test-{suite}-{purpose}"
    remove_root(root)
    subprocess.run(["cp", "-a", str(base), str(root)], check=True)
    enter(root, ["useradd", "--create-home", "--shell", "/bin/sh", USER], capture=True)
    enter(root, ["install", "-d", "-m", "700", "-o", USER, "-g", USER, USER_ENV["XDG_RUNTIME_DIR"]], capture=True)
    return root


def as_user(root: Path, argv: list[str], env: dict[str, str] | None = None, timeout_note: str = "") -> str:
    """``argv`` run as the ordinary user in ``root``; its stdout. A non-zero exit or any stderr line fails."""
    t0 = time.monotonic()
    done = enter(root, argv, env={**USER_ENV, **(env or {})}, user=USER, check=False, capture=True)
    name = " ".join(argv)
    if done.returncode != 0:
        raise InstallError(f"{root.name}: {name}: exit {done.returncode}: {done.stderr.strip()[-1500:]}")
    noise = [ln for ln in done.stderr.splitlines() if ln.strip()]
    if noise:
        raise InstallError(f"{root.name}: {name}: unexpected stderr: {' | '.join(noise)[:1500]}")
    log(f"  ok {time.monotonic() - t0:5.2f} s  {name}{timeout_note}")
    return done.stdout


def apt_install(root: Path, *packages: str) -> None:
    enter(root, ["apt-get", "update", "-q"], capture=True)
    enter(root, ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages], capture=True)


def check_cli(root: Path, exe: str, ver: str) -> None:
    out = as_user(root, [exe, "--version"])
    if out.strip() != f"vramdesk {ver}":
        raise InstallError(f"{root.name}: --version printed {out.strip()!r}")
    # the command line loads no Qt library (the dynamic linker's own log of what it opens)
    traced = enter(root, [exe, "--version"], env={**USER_ENV, "LD_DEBUG": "files"}, user=USER, capture=True)
    qt = sorted({w for w in traced.stderr.split() if "libQt6" in w and w.endswith(".so.6")})
    if qt:
        raise InstallError(f"{root.name}: --version loaded Qt: {', '.join(qt)}")
    log("  ok --version loads no libQt6")
    out = as_user(root, [exe, "estimate", "Qwen/Qwen3-4B", "--gpu", "RTX 4090", "--json"])
    result = json.loads(out)
    if not result.get("device_bytes", 0) > 0 or "fit" not in result:
        raise InstallError(f"{root.name}: estimate --json has no device_bytes / fit")


def check_window(root: Path, exe: str, shot: Path) -> None:
    out = as_user(root, [exe, "--self-test"], env={"QT_QPA_PLATFORM": "offscreen"})
    if not out.startswith("self-test ok"):
        raise InstallError(f"{root.name}: --self-test printed {out.strip()!r}")
    apt_install(root, "xvfb", "xauth")
    png = f"/home/{USER}/window.png"
    as_user(
        root,
        ["xvfb-run", "-a", "-s", "-screen 0 1400x900x24", exe, "--screenshot", png],
        env={"QT_QPA_PLATFORM": "xcb"},
        timeout_note=" (xcb, Xvfb)",
    )
    shot.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(root / png.lstrip("/"), shot)
    colours = png_colours(shot.read_bytes())
    if colours < 16:
        raise InstallError(f"{root.name}: the window's screenshot has {colours} colours: nothing drawn")
    log(f"  ok window screenshot {shot.relative_to(ROOT)} ({colours} colours)")


def png_colours(data: bytes, step: int = 8) -> int:
    """Distinct RGB colours of an 8-bit RGB / RGBA PNG, every ``step``-th pixel of every row (rows unfiltered as
    the PNG specification says: None, Sub, Up, Average, Paeth)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise InstallError("not a PNG file")
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8:
                raise InstallError(f"PNG bit depth {depth} is not 8")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = {2: 3, 6: 4}.get(ctype)
    if bpp is None:
        raise InstallError(f"PNG colour type {ctype} is not RGB or RGBA")
    raw, stride = zlib.decompress(idat), width * bpp
    prev, seen = bytearray(stride), set[bytes]()
    for y in range(height):
        filt, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = row[i - bpp] if i >= bpp else 0
            up, corner = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if filt == 1:
                row[i] = (row[i] + left) & 0xFF
            elif filt == 2:
                row[i] = (row[i] + up) & 0xFF
            elif filt == 3:
                row[i] = (row[i] + (left + up) // 2) & 0xFF
            elif filt == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        seen.update(bytes(row[x : x + 3]) for x in range(0, stride, step * bpp))
        prev = row
    return len(seen)


def test_deb(suite: str, deb: Path, ver: str) -> list[str]:
    """The .deb in a fresh root; returns the Depends it declared (for the tarball root)."""
    log(f"--- {SUITES[suite]} ({suite}): {deb.name}")
    root = fresh_root(suite, "deb")
    shutil.copy2(deb, root / "tmp" / deb.name)
    t0 = time.monotonic()
    apt_install(root, f"/tmp/{deb.name}")
    log(f"  ok apt-get install ./{deb.name} with its dependencies in {time.monotonic() - t0:.0f} s")
    files = enter(root, ["dpkg", "-L", "vramdesk"], capture=True).stdout.split()
    depends = enter(root, ["dpkg-query", "-W", "-f=${Depends}", "vramdesk"], capture=True).stdout
    check_cli(root, "vramdesk", ver)
    check_window(root, "vramdesk", DIST / "install-test" / f"{suite}.png")
    enter(root, ["apt-get", "purge", "-y", "-q", "vramdesk"], capture=True)
    left = [f for f in files if (f.startswith("/usr/lib/vramdesk") or "vramdesk" in Path(f).name)]
    left = [f for f in left if (root / f.lstrip("/")).exists() or (root / f.lstrip("/")).is_symlink()]
    if left:
        raise InstallError(f"{root.name}: left after apt-get purge: {', '.join(left[:8])}")
    log("  ok apt-get purge: none of its files left")
    return [d.split()[0] for d in depends.split(",") if d.strip() and not d.strip().startswith("libc6")]


def test_tarball(suite: str, tarball: Path, ver: str, libraries: list[str]) -> None:
    log(f"--- {SUITES[suite]} ({suite}): {tarball.name}")
    root = fresh_root(suite, "tarball")
    home = root / "home" / USER
    with tarfile.open(tarball) as tar:
        tar.extractall(home, filter="tar")
    subprocess.run(["chroot", str(root), "chown", "-R", f"{USER}:{USER}", f"/home/{USER}"], check=True)
    exe = f"/home/{USER}/vramdesk-{ver}/vramdesk"
    # before the system has Qt's libraries: the command line works, the window refuses in one line naming them
    # and the apt command
    as_user(root, [exe, "estimate", "Qwen/Qwen3-4B", "--gpu", "RTX 4090", "--json"])
    bare = enter(root, [exe, "--self-test"], env={**USER_ENV, "QT_QPA_PLATFORM": "offscreen"}, user=USER,
                 check=False, capture=True)  # fmt: skip
    said = bare.stderr.strip().splitlines()
    if bare.returncode != 2 or len(said) != 1 or "install with: sudo apt install " not in said[0]:
        raise InstallError(f"{root.name}: --self-test without Qt's libraries: exit {bare.returncode}: {said[-3:]}")
    log(f"  ok without Qt's libraries --self-test says: {said[0][:150]}...")
    apt_install(root, *libraries)
    check_cli(root, exe, ver)
    script = f"/home/{USER}/vramdesk-{ver}/install-desktop-entry.sh"
    out = as_user(root, [script, "--help"])
    if "Usage:" not in out or (home / ".local" / "share" / "applications").exists():
        raise InstallError(f"{root.name}: install-desktop-entry.sh --help did more than print its usage")
    wrong = enter(root, [script, "--bogus"], user=USER, check=False, capture=True)
    if wrong.returncode != 2 or "unknown argument --bogus" not in wrong.stderr:
        raise InstallError(f"{root.name}: install-desktop-entry.sh --bogus: exit {wrong.returncode}")
    as_user(root, [script])
    entry = home / ".local" / "share" / "applications" / f"{APP_ID}.desktop"
    if f'Exec="{exe}"' not in entry.read_text(encoding="utf-8"):
        raise InstallError(f"{root.name}: the desktop entry does not start {exe}")
    as_user(root, [script, "--remove"])
    if entry.exists() or list((home / ".local" / "share" / "icons").rglob("vramdesk.*")):
        raise InstallError(f"{root.name}: install-desktop-entry.sh --remove left files")
    log("  ok install-desktop-entry.sh: --help, a wrong argument, install, --remove")


def main(argv: list[str] | None = None) -> int:
    ver = version()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="bullseye", choices=[*SUITES, "all", "debian"])
    p.add_argument("--deb", type=Path, default=DIST / f"vramdesk_{ver}_amd64.deb")
    p.add_argument("--tarball", type=Path, default=DIST / f"vramdesk-{ver}-linux-x86_64.tar.gz")
    p.add_argument("--keep", action="store_true", help="keep the test roots in build/roots/")
    args = p.parse_args(argv)
    suites = {"all": list(SUITES), "debian": [s for s in SUITES if s not in DISTROS]}.get(args.suite, [args.suite])
    t0 = time.monotonic()
    try:
        for suite in suites:
            libraries = test_deb(suite, args.deb, ver)
            test_tarball(suite, args.tarball, ver, libraries)
            if not args.keep:
                for purpose in ("deb", "tarball"):
                    remove_root(roots_dir(ROOT) / f"test-{suite}-{purpose}")
    except (InstallError, RootError, subprocess.CalledProcessError, json.JSONDecodeError, OSError) as err:
        print(f"install test FAILED: {err}", file=sys.stderr)
        return 1
    log(f"install test passed on {', '.join(SUITES[s] for s in suites)} in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
