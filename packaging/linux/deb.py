"""The .deb: the bundle in /usr/lib/vramdesk, /usr/bin/vramdesk -> /usr/lib/vramdesk/vramdesk, the desktop
integration, and what Debian's policy and lintian ask of a package (md5sums, a changelog, a machine-readable
copyright file with every bundled component's licence, shared libraries not executable, overrides with reasons for
what a PyInstaller bundle cannot change).

No maintainer scripts: dpkg's file triggers (shared-mime-info, desktop-file-utils, hicolor-icon-theme) update the
MIME, desktop and icon caches on install and removal, and ``dpkg -r`` removes every file.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from email.utils import formatdate
from pathlib import Path

import elf_scan
import system_libs

PREFIX = "usr/lib/vramdesk"
MAINTAINER = "vramdesk developers <vramdesk@users.noreply.github.com>"
DESCRIPTION = (
    "GPU memory estimates for LLM inference and fine-tuning\n"
    " Will this model run or fine-tune on this GPU? vramdesk shows the memory\n"
    " each part takes (weights, KV cache, activations, optimizer states), when\n"
    " the peak happens and what to change if it does not fit.\n"
    " .\n"
    " Self-contained: the app and its Python runtime live in /usr/lib/vramdesk.\n"
)

#: lintian tags a PyInstaller bundle cannot avoid, each with the reason (usr/share/lintian/overrides/vramdesk)
OVERRIDES = (
    # the wheels ship these unstripped and auditwheel patched them with patchelf: stripping them afterwards breaks
    # them ("ELF load command address/offset not page-aligned")
    ("unstripped-binary-or-object", f"[{PREFIX}/_internal/numpy/*]"),
    ("unstripped-binary-or-object", f"[{PREFIX}/_internal/numpy.libs/*]"),
    ("unstripped-binary-or-object", f"[{PREFIX}/_internal/PySide6/Qt/lib/libicu*]"),
    # ICU's data library holds no code; Python extension modules take libc's symbols from the interpreter
    ("library-not-linked-against-libc", f"[{PREFIX}/_internal/*]"),
    ("shared-library-lacks-prerequisites", f"[{PREFIX}/_internal/*]"),
    # PyInstaller's bootloader is built without -pie by its wheel
    ("hardening-no-pie", f"[{PREFIX}/vramdesk]"),
    # the window draws with its own copy of DejaVu Sans on every system (Windows and macOS have none)
    (
        "duplicate-font-file",
        f"also in (fonts-dejavu-core) [{PREFIX}/_internal/vramdesk/resources/fonts/DejaVuSans.ttf]",
    ),
    # pyexpat links the system's libexpat (NEEDED libexpat.so.1, the .deb depends on libexpat1); lintian matches
    # expat's error strings, which pyexpat.c carries itself
    ("embedded-library", f"expat [{PREFIX}/_internal/python3.11/lib-dynload/pyexpat.cpython-311-x86_64-linux-gnu.so]"),
)


def depends(bundle: Path, log: Callable[[str], None]) -> str:
    """libc6 as new as the newest GLIBC_ symbol any bundled file needs, and the package of every library the
    bundle needs from the system; a needed library that is neither bundled nor known stops the build."""
    found = elf_scan.scan(bundle)
    unknown = sorted(
        name
        for name in found.outside
        if name not in elf_scan.LIBC and not system_libs.is_system(name) and not name.startswith(("libGL", "libEGL"))
    )
    if unknown:
        users = "; ".join(f"{n} (needed by {found.outside[n][0]})" for n in unknown)
        raise SystemExit(f"the bundle needs libraries it does not carry and no dependency provides: {users}")
    libc = "libc6"
    if found.glibc_file:
        log(f"newest glibc symbol: GLIBC_{found.glibc_text} ({found.glibc_file})")
        libc = f"libc6 (>= {found.glibc_text})"
    return ", ".join([libc, *system_libs.packages(sorted(found.outside))])


def copyright_text(bundle: Path) -> str:
    """DEP-5: vramdesk's own licence, and the bundled components with their licences' place in the bundle."""
    index = bundle / "LICENSES" / "README.txt"
    listed = ""
    if index.is_file():
        rows = [ln for ln in index.read_text(encoding="utf-8").splitlines() if "->" in ln]
        listed = "".join(f"  {' '.join(r.split())}\n" for r in rows)
    return (
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
        "Upstream-Name: vramdesk\n"
        "Source: https://github.com/vramdesk/vramdesk\n"
        "\n"
        "Files: *\n"
        "Copyright: 2026 vramdesk developers\n"
        "License: Apache-2.0\n"
        "\n"
        f"Files: {PREFIX}/_internal/*\n"
        "Copyright: the authors of each bundled component, as its licence file says\n"
        "License: bundled-components\n"
        f" The bundle carries CPython, Qt (PySide6), numpy and the other components below; the\n"
        f" licence text of each is in /{PREFIX}/LICENSES (its README.txt is this list):\n"
        " .\n" + "".join(f" {line}" if line.strip() else " .\n" for line in listed.splitlines(keepends=True)) + "\n"
        "License: Apache-2.0\n"
        ' Licensed under the Apache License, Version 2.0 (the "License"); you may not use\n'
        " this file except in compliance with the License.\n"
        " .\n"
        " On Debian systems, the full text of the Apache License, Version 2.0 can be\n"
        " found in /usr/share/common-licenses/Apache-2.0.\n"
    )


def _is_shared_library(path: Path) -> bool:
    return ".so" in path.name and elf_scan.is_elf(path)


def _permissions(root: Path, executable: Path) -> None:
    """0755 for folders and programs, 0644 for everything else: shared libraries are not executable."""
    for p in root.rglob("*"):
        if p.is_symlink():
            continue
        if p.is_dir() or p == executable or (p.stat().st_mode & stat.S_IXUSR and not _is_shared_library(p)):
            p.chmod(0o755)
        else:
            p.chmod(0o644)


def _md5sums(root: Path) -> str:
    lines = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink() and "DEBIAN" not in p.relative_to(root).parts:
            lines.append(f"{hashlib.md5(p.read_bytes()).hexdigest()}  {p.relative_to(root).as_posix()}\n")
    return "".join(lines)


def _gzip(data: bytes) -> bytes:
    """gzip -9n: no name, no timestamp (the same bytes from the same input)."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def _debian_changelog(ver: str, epoch: int) -> bytes:
    """A native package's changelog.gz in Debian's format: this release, pointing at the project's own changelog
    (CHANGELOG.md.gz next to it)."""
    when = formatdate(epoch, usegmt=False).replace("-0000", "+0000")
    return (
        f"vramdesk ({ver}) unstable; urgency=medium\n\n"
        f"  * vramdesk {ver}; what changed is in /usr/share/doc/vramdesk/CHANGELOG.md.gz.\n\n"
        f" -- {MAINTAINER}  {when}\n"
    ).encode()


def build(
    bundle: Path,
    out: Path,
    stage: Path,
    ver: str,
    compression: str,
    level: int,
    desktop_files: Callable[[Path], None],
    changelog: Path,
    epoch: int,
    log: Callable[[str], None],
) -> Path:
    """Assemble the package in ``stage`` and build ``out`` with dpkg-deb."""
    dpkg_deb = shutil.which("dpkg-deb")
    if not dpkg_deb:
        raise SystemExit("dpkg-deb not found (apt-get install dpkg): cannot build the .deb")
    shutil.rmtree(stage, ignore_errors=True)
    app = stage / PREFIX
    shutil.copytree(bundle, app, symlinks=True)
    (stage / "usr" / "bin").mkdir(parents=True)
    (stage / "usr" / "bin" / "vramdesk").symlink_to("../lib/vramdesk/vramdesk")  # relative (Debian policy 10.5)
    share = stage / "usr" / "share"
    desktop_files(share)
    man = share / "man" / "man1"
    man.mkdir(parents=True)
    (man / "vramdesk.1.gz").write_bytes(_gzip((Path(__file__).parent / "vramdesk.1").read_bytes()))
    doc = share / "doc" / "vramdesk"
    doc.mkdir(parents=True)
    (doc / "copyright").write_text(copyright_text(bundle), encoding="utf-8")
    (doc / "changelog.gz").write_bytes(_gzip(_debian_changelog(ver, epoch)))
    if changelog.is_file():
        (doc / "CHANGELOG.md.gz").write_bytes(_gzip(changelog.read_bytes()))
    overrides = share / "lintian" / "overrides"
    overrides.mkdir(parents=True)
    (overrides / "vramdesk").write_text("".join(f"vramdesk: {tag} {where}\n" for tag, where in OVERRIDES))
    _permissions(stage, app / "vramdesk")
    installed_kib = (
        sum(p.stat().st_size for p in stage.rglob("*") if p.is_file() and not p.is_symlink()) + 1023
    ) // 1024
    debian = stage / "DEBIAN"
    debian.mkdir()
    (debian / "control").write_text(
        f"Package: vramdesk\nVersion: {ver}\nArchitecture: amd64\nMaintainer: {MAINTAINER}\n"
        f"Installed-Size: {installed_kib}\nDepends: {depends(bundle, log)}\nSection: science\nPriority: optional\n"
        f"Homepage: https://github.com/vramdesk/vramdesk\nDescription: {DESCRIPTION}"
    )
    (debian / "md5sums").write_text(_md5sums(stage), encoding="utf-8")
    for f in debian.iterdir():
        f.chmod(0o644)
    cmd = [dpkg_deb, "--root-owner-group", f"-Z{compression}"]
    if compression in ("xz", "gzip"):
        cmd.append(f"-z{level}")
    log("$ " + " ".join([*cmd, "--build", str(stage), str(out)]))
    subprocess.run(
        [*cmd, "--build", str(stage), str(out)], check=True, env={**os.environ, "SOURCE_DATE_EPOCH": str(epoch)}
    )
    return out
