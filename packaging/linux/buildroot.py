"""Minimal Debian roots made with debootstrap: the older root the Linux bundle is built in, and the fresh roots the
packages are installed into to test them (packaging/install_test.py).

A root lives under build/roots/<name>. It is entered with ``unshare --mount`` + ``chroot``: /proc, /dev and the
checkout are mounted in a private mount namespace, so nothing stays mounted when the command ends (even when it
is killed), and deleting a root can never reach the host's /dev. Needs root privileges, debootstrap and unshare
(util-linux).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MIRROR = os.environ.get("VRAMDESK_DEBIAN_MIRROR", "http://deb.debian.org/debian")

#: the build root: Debian 11 (glibc 2.31), the oldest Debian the bundle supports. Its Python is built from Debian
#: 12's source package (Debian 11 has Python 3.9), and libxcb-cursor0 is Debian 12's (Debian 11 has none)
BUILD_SUITE = "bullseye"
SOURCE_SUITE = "bookworm"
PY_SOURCE = "python3.11"
BUILD_PACKAGES = (
    # compilers and what CPython's modules link to (sqlite3, tkinter, curses, readline: not bundled)
    "build-essential", "pkg-config", "xz-utils", "ca-certificates", "libssl-dev", "zlib1g-dev", "libffi-dev",
    "libbz2-dev", "liblzma-dev", "uuid-dev", "libexpat1-dev",
    # the libraries Qt's plugins load: PyInstaller collects only what it finds here
    "libgl1", "libegl1", "libfontconfig1", "libfreetype6", "libxkbcommon0", "libxkbcommon-x11-0", "libx11-xcb1",
    "libxcb-icccm4", "libxcb-keysyms1", "libxcb-randr0", "libxcb-shape0", "libxcb-xfixes0", "libxcb-xinerama0",
    "libxcb-xkb1", "libxcb-sync1", "libxcb-shm0", "libxcb-render-util0", "libxcb-image0", "libdbus-1-3",
    "libglib2.0-0", "libwayland-client0", "libwayland-cursor0", "libwayland-egl1",
)  # fmt: skip


class RootError(RuntimeError):
    """A root could not be made or entered: ``args[0]`` is one line naming what failed."""


def roots_dir(checkout: Path) -> Path:
    return checkout / "build" / "roots"


def need_root_tools() -> None:
    """Refuse, in one line, where roots cannot be made."""
    if os.geteuid() != 0:
        raise RootError(
            "building in an older root needs root privileges (debootstrap, chroot): run as root, or pass --host "
            "to build with this machine's Python (the bundle then needs this machine's glibc)"
        )
    for tool in ("debootstrap", "unshare", "chroot"):
        if shutil.which(tool) is None:
            raise RootError(f"{tool} not found: apt-get install debootstrap util-linux coreutils")


def _marker(root: Path) -> Path:
    return root / ".vramdesk-root"


def _wanted(suite: str, packages: Sequence[str], sources: str) -> str:
    return hashlib.sha256("\n".join([suite, MIRROR, sources, *packages]).encode()).hexdigest()


@dataclass(frozen=True)
class Distro:
    """Where a release's packages come from: its archive, its components and the keyring that signs it
    (None: the host's debian-archive-keyring)."""

    mirror: str = MIRROR
    components: str = "main"
    #: (file name of the keyring package in ``mirror``'s pool, its SHA-256, the keyring inside it)
    keyring: tuple[str, str, str] | None = None
    #: debootstrap's script for the release when it has none of that name (debootstrap older than the release)
    script: str | None = None


DEBIAN = Distro()


def _keyring(distro: Distro, cache: Path) -> list[str]:
    """debootstrap's --keyring for ``distro``: the keyring package downloaded once and checked against its pinned
    SHA-256 (the trust anchor), then the keyring file taken out of it."""
    if distro.keyring is None:
        return []
    pool, sha256, inside = distro.keyring
    deb = cache / Path(pool).name
    if not deb.is_file() or hashlib.sha256(deb.read_bytes()).hexdigest() != sha256:
        cache.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(f"{distro.mirror}/{pool}", timeout=60) as reply:
            data = reply.read()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise RootError(f"{Path(pool).name} from {distro.mirror} does not have the pinned SHA-256")
        deb.write_bytes(data)
    unpacked = cache / deb.stem
    _check(["dpkg-deb", "-x", str(deb), str(unpacked)], "dpkg-deb -x")
    return [f"--keyring={unpacked / inside}"]


def make_root(
    root: Path,
    suite: str,
    packages: Sequence[str] = (),
    source_suites: Sequence[str] = (),
    fresh: bool = False,
    distro: Distro = DEBIAN,
) -> Path:
    """A minimal ``suite`` root at ``root`` with ``packages`` installed and deb-src lines for ``source_suites``.
    Kept between calls (a marker records what it holds) unless ``fresh`` or what it should hold changed."""
    need_root_tools()
    mirror = distro.mirror
    sources = "".join(f"deb-src {mirror} {s} main\n" for s in source_suites)
    want = _wanted(suite, packages, sources + repr(distro))
    if not fresh and _marker(root).is_file() and _marker(root).read_text(encoding="utf-8").strip() == want:
        return root
    remove_root(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    log(f"debootstrap {suite} -> {root}")
    cmd = ["debootstrap", "--variant=minbase", "--include=ca-certificates", f"--components={distro.components}"]
    cmd += _keyring(distro, root.parent / "keyrings")
    cmd += [suite, str(root), mirror] + ([distro.script] if distro.script else [])
    _check(cmd, "debootstrap")
    # no daemons start in the root (an installed package's postinst may try)
    policy = root / "usr" / "sbin" / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n", encoding="utf-8")
    policy.chmod(0o755)
    components = distro.components.replace(",", " ")
    (root / "etc" / "apt" / "sources.list").write_text(f"deb {mirror} {suite} {components}\n" + sources)
    if packages or sources:
        enter(root, ["apt-get", "update", "-q"], capture=True)
    if packages:
        log(f"apt-get install {len(packages)} packages")
        enter(root, ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages], capture=True)
    enter(root, ["apt-get", "clean"], capture=True)
    _marker(root).write_text(want + "\n", encoding="utf-8")
    return root


def remove_root(root: Path) -> None:
    """Delete a root; refuses while anything is mounted under it (a root entered by :func:`enter` never is)."""
    if not root.exists():
        return
    real = str(root.resolve())
    with open("/proc/self/mounts", encoding="utf-8") as f:
        for line in f:
            point = line.split()[1]
            if point == real or point.startswith(real + "/"):
                raise RootError(f"{point} is mounted: unmount it before {root} can be removed")
    shutil.rmtree(root)


def enter(
    root: Path,
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    binds: Mapping[Path, str] | None = None,
    user: str | None = None,
    check: bool = True,
    capture: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in ``root`` (a private mount namespace with /proc, /dev and ``binds``: host path -> path in the
    root), as ``user`` when given; a failure raises :class:`RootError` naming the command (``check``)."""
    shutil.copy2("/etc/resolv.conf", root / "etc" / "resolv.conf")
    mounts = ['mount -t proc proc "$R/proc"', 'mount --rbind /dev "$R/dev"']
    for host, inside in (binds or {}).items():
        target = root / inside.lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        mounts.append(f'mount --bind "{host}" "$R/{inside.lstrip("/")}"')
    inner = ["chroot"] + ([f"--userspec={user}:{user}"] if user else []) + ['"$R"', "env", "-i"]
    base = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
        "DEBIAN_FRONTEND": "noninteractive",
    }
    if user:
        base["HOME"] = f"/home/{user}"
    inner += [f"{k}={_q(v)}" for k, v in {**base, **(env or {})}.items()]
    script = " && ".join(mounts) + " && exec " + " ".join(inner) + ' "$@"'
    cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv]
    done = subprocess.run(cmd, env={**os.environ, "R": str(root)}, text=True, capture_output=capture, check=False)
    if check and done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-1:] if capture else []
        raise RootError(
            f"{' '.join(argv)} failed in {root.name} (exit {done.returncode})" + "".join(f": {t}" for t in tail)
        )
    return done


def _q(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"


def _check(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, text=True, capture_output=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise RootError(f"{what} failed (exit {done.returncode}): {last[0]}")


def log(msg: str) -> None:
    print(f"[root] {msg}", flush=True)


def build_bundle_in_root(checkout: Path, jobs: int | None = None) -> Path:
    """The bundle, built by PyInstaller in the Debian 11 root (``dist/vramdesk`` of the checkout)."""
    root = make_root(roots_dir(checkout) / f"build-{BUILD_SUITE}", BUILD_SUITE, BUILD_PACKAGES, (SOURCE_SUITE,))
    env = {"PY_SOURCE": PY_SOURCE, "SOURCE_SUITE": SOURCE_SUITE, "MIRROR": MIRROR}
    # pip in the root trusts what the host trusts (a registry mirror or proxy with its own certificate authority)
    host_ca = Path(os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt")
    if host_ca.is_file():
        shutil.copy2(host_ca, root / "etc" / "ssl" / "host-ca-certificates.crt")
        env["PIP_CERT"] = env["SSL_CERT_FILE"] = "/etc/ssl/host-ca-certificates.crt"
    env["JOBS"] = str(jobs or os.cpu_count() or 2)
    env.update({k: v for k, v in os.environ.items() if k in ("SOURCE_DATE_EPOCH", "PIP_INDEX_URL")})
    enter(root, ["sh", "/src/packaging/linux/in_root_build.sh"], env=env, binds={checkout: "/src"})
    return checkout / "dist" / "vramdesk"


if __name__ == "__main__":  # python packaging/linux/buildroot.py: make (or refresh) the build root only
    try:
        make_root(
            roots_dir(Path(__file__).resolve().parents[2]) / f"build-{BUILD_SUITE}",
            BUILD_SUITE,
            BUILD_PACKAGES,
            (SOURCE_SUITE,),
        )
    except RootError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
