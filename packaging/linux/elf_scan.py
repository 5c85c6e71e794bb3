"""What the ELF files of a bundle need from the system: the newest glibc symbol version and the libraries that
are not in the bundle (``objdump -p``: NEEDED entries and version references).

    python packaging/linux/elf_scan.py dist/vramdesk      # prints the newest GLIBC_ and the system libraries
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

_NEEDED = re.compile(r"^\s+NEEDED\s+(\S+)$", re.M)
_GLIBC = re.compile(r"\bGLIBC_(\d+(?:\.\d+)+)\b")

#: sonames glibc itself provides (package libc6)
LIBC = frozenset(
    {
        "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libutil.so.1", "libresolv.so.2",
        "ld-linux-x86-64.so.2", "libanl.so.1", "libmvec.so.1",
    }
)  # fmt: skip


@dataclass
class Scan:
    """The newest GLIBC_ version any file needs, which file, and the needed libraries not in the bundle."""

    glibc: tuple[int, ...] = (0,)
    glibc_file: str = ""
    #: soname -> the bundle's files that need it
    outside: dict[str, list[str]] = field(default_factory=dict)
    elf_files: int = 0

    @property
    def glibc_text(self) -> str:
        return ".".join(map(str, self.glibc))


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def scan(bundle: Path) -> Scan:
    objdump = shutil.which("objdump")
    if objdump is None:
        raise SystemExit("objdump not found (apt-get install binutils): cannot check the bundle's ELF files")
    files = [p for p in sorted(bundle.rglob("*")) if p.is_file() and not p.is_symlink() and is_elf(p)]
    present = {p.name for p in bundle.rglob("*")}
    out = Scan(elf_files=len(files))
    for path in files:
        text = subprocess.run([objdump, "-p", str(path)], capture_output=True, text=True, check=True).stdout
        rel = str(path.relative_to(bundle))
        for soname in _NEEDED.findall(text):
            if soname not in present:
                out.outside.setdefault(soname, []).append(rel)
        versions = [tuple(int(x) for x in v.split(".")) for v in _GLIBC.findall(text)]
        if versions and max(versions) > out.glibc:
            out.glibc, out.glibc_file = max(versions), rel
    return out


def report(result: Scan) -> list[str]:
    """The lines the command prints: the newest glibc symbol first, then each library taken from the system."""
    lines = [f"{result.elf_files} ELF files; newest glibc symbol GLIBC_{result.glibc_text} ({result.glibc_file})"]
    lines += [f"  from the system: {n}  ({len(u)} files, e.g. {u[0]})" for n, u in sorted(result.outside.items())]
    return lines


def main(argv: list[str], out: TextIO) -> int:
    try:
        for line in report(scan(Path(argv[0]))):
            out.write(line + "\n")
        out.flush()
    except BrokenPipeError:
        # the reader has what it wanted (``| head -n 1``): end quietly, as other command-line tools do
        return 0
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:], sys.stdout)
    with contextlib.suppress(BrokenPipeError):  # (what was left to flush went to a closed pipe)
        sys.stdout.close()
    sys.exit(code)
