"""The licences of everything the Linux bundle carries, gathered from where they are: each bundled Python
distribution's own licence files (or, when its wheel ships none, the licence its metadata names, with the text
from /usr/share/common-licenses where Debian has it), Python's LICENSE.txt, and the Debian copyright file of
every system library PyInstaller took from the build root. Written to <bundle>/LICENSES/ with an index.

Run by packaging/linux/in_root_build.sh with the build venv's Python, after PyInstaller (which writes
build/pyinstaller/collected.json: the modules and binaries it bundled, see vramdesk.spec).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

COMMON = Path("/usr/share/common-licenses")
#: SPDX ids -> Debian's common licence files (only those whose text needs no copyright line of its own)
COMMON_TEXTS = {
    "Apache-2.0": "Apache-2.0",
    "LGPL-3.0": "LGPL-3",
    "LGPL-3.0-only": "LGPL-3",
    "GPL-2.0": "GPL-2",
    "GPL-2.0-only": "GPL-2",
    "GPL-3.0": "GPL-3",
    "GPL-3.0-only": "GPL-3",
    "MPL-2.0": "MPL-2.0",
}
_LICENCE_FILE = re.compile(r"(LICEN[CS]E|COPYING|NOTICE|AUTHORS)", re.I)


def _field(dist: metadata.Distribution, name: str) -> str:
    values = dist.metadata.get_all(name) or []
    return str(values[0]) if values else ""


def licence_name(dist: metadata.Distribution) -> str:
    meta = dist.metadata
    expr = _field(dist, "License-Expression")
    if expr:
        return expr
    classifiers = [c.rsplit(" :: ", 1)[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    short = _field(dist, "License").strip()
    if short and "\n" not in short and len(short) < 80:
        return short
    return " / ".join(classifiers) or "not stated in its metadata"


def _top_levels(dist: metadata.Distribution) -> set[str]:
    names = set()
    for f in dist.files or []:
        first = f.parts[0]
        if first.endswith((".dist-info", ".egg-info", ".data")) or first in ("..", "__pycache__"):
            continue
        names.add(first.removesuffix(".py").split(".")[0])
    return names


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name)


def python_distributions(modules: set[str], out: Path) -> list[tuple[str, str, str]]:
    rows = []
    for dist in sorted(metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower()):
        name = dist.metadata["Name"] or "?"
        if name == "vramdesk" or not (_top_levels(dist) & modules):
            continue
        target = out / "python" / _safe(f"{name}-{dist.version}")
        target.mkdir(parents=True, exist_ok=True)
        copied = 0
        for f in dist.files or []:
            if _LICENCE_FILE.search(f.name) and ".dist-info" in str(f.parts[0]):
                src = Path(str(dist.locate_file(f)))
                if src.is_file():
                    shutil.copy2(src, target / _safe("_".join(f.parts[1:])))
                    copied += 1
        licence = licence_name(dist)
        if not copied:
            text = next((COMMON_TEXTS[t] for t in re.split(r"[\s()/]+", licence) if t in COMMON_TEXTS), None)
            if text:
                shutil.copy2(COMMON / text, target / text)
            else:
                (target / "README").write_text(
                    f"{name} {dist.version}: {licence}. Its wheel ships no licence file; see its project page "
                    f"{_field(dist, 'Home-page')}\n",
                    encoding="utf-8",
                )
        rows.append((f"{name} {dist.version}", licence, str(target.relative_to(out))))
    return rows


def system_packages(binaries: list[tuple[str, str]], out: Path) -> list[tuple[str, str, str]]:
    """Debian copyright files of the bundled libraries that came from the build root's system directories."""
    owners: dict[str, list[str]] = {}
    for dest, src in binaries:
        if not src.startswith(("/usr/lib", "/lib", "/usr/local/lib")):
            continue
        found = subprocess.run(["dpkg", "-S", str(Path(src).resolve())], capture_output=True, text=True, check=False)
        if found.returncode != 0:
            found = subprocess.run(["dpkg", "-S", src], capture_output=True, text=True, check=False)
        pkg = found.stdout.split(":", 1)[0].strip() if found.returncode == 0 else ""
        owners.setdefault(pkg or "?", []).append(Path(dest).name)
    rows = []
    for pkg, files in sorted(owners.items()):
        if pkg == "?":
            raise SystemExit(f"no Debian package owns the bundled {', '.join(files)}: its licence is unknown")
        version = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True, check=True
        ).stdout
        target = out / "system" / _safe(pkg)
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path("/usr/share/doc") / pkg / "copyright", target / "copyright")
        rows.append(
            (
                f"{pkg} {version} (Debian; {', '.join(sorted(files))})",
                "see its copyright file",
                str(target.relative_to(out)),
            )
        )
    return rows


def main(bundle: Path, collected: Path, project_licence: str) -> int:
    data = json.loads(collected.read_text(encoding="utf-8"))
    modules = {m.split(".")[0] for m in data["modules"]}
    out = bundle / "LICENSES"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    shutil.copy2(COMMON / COMMON_TEXTS[project_licence], out / "vramdesk.txt")
    python_licence = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    (out / "python").mkdir()
    shutil.copy2(python_licence, out / "python" / "CPython.txt")
    rows = [
        ("vramdesk", project_licence, "vramdesk.txt"),
        (f"CPython {sys.version.split()[0]}", "PSF-2.0", "python/CPython.txt"),
    ]
    rows += python_distributions(modules, out)
    rows += system_packages([(d, s) for d, s in data["binaries"]], out)
    width = max(len(r[0]) for r in rows)
    lines = [
        "Every component of this vramdesk bundle and where its licence is, relative to this folder.",
        "The DejaVu fonts' licence is in _internal/vramdesk/resources/fonts.",
        "",
    ]
    lines += [f"{c.ljust(width)}  {lic}  ->  {path}" for c, lic, path in rows]
    (out / "README.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"[licences] {len(rows)} components -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
