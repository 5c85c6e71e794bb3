"""Smoke-test what ships: install the .deb, run the installed app, remove it, check nothing is left.

    python packaging/smoke_test.py                     # dist/vramdesk_<version>_amd64.deb (+ the .tar.gz)
    python packaging/smoke_test.py --mode extract      # dpkg -x into a scratch root (no root needed)
    python packaging/smoke_test.py --mode install      # apt-get install ./the.deb, then dpkg --purge (root)
    python packaging/smoke_test.py --bundle dist/vramdesk     # just a bundle folder (Windows/macOS CI)

The app runs in an empty environment (``env -i``: no PATH, so no Python can be found; HF_HUB_OFFLINE=1 and a
dead HF_ENDPOINT, so only the bundled catalog can answer), offscreen. Any output on stderr fails the test.
Exit 0 when everything passed; each failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packaging"))
from build import APP_ID, DIST, ICON_SIZES, version  # noqa: E402

#: stderr lines that are not a failure (none so far: add a pattern here only with a reason)
ALLOWED_STDERR: tuple[str, ...] = ()


class SmokeError(AssertionError):
    pass


def clean_env(home: Path) -> dict[str, str]:
    runtime = home / "xdg-runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": "/nonexistent",  # no python3, nothing: the bundle must bring everything
        "LANG": "C.UTF-8",
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "HF_HOME": str(home / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_ENDPOINT": "http://127.0.0.1:9",  # nothing listens there: a network call fails fast
    }
    if sys.platform == "win32":  # Windows cannot start a process without these
        env.update({k: os.environ[k] for k in ("SYSTEMROOT", "TEMP", "TMP") if k in os.environ})
    return env


def run_app(exe: Path, args: list[str], env: dict[str, str], timeout: float = 60) -> tuple[str, float]:
    t0 = time.monotonic()
    proc = subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)
    elapsed = time.monotonic() - t0
    stderr = [ln for ln in proc.stderr.splitlines() if ln.strip() and not any(p in ln for p in ALLOWED_STDERR)]
    name = " ".join([exe.name, *args])
    if proc.returncode != 0:
        raise SmokeError(f"{name}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    if stderr:
        raise SmokeError(f"{name}: unexpected stderr: " + " | ".join(stderr)[:2000])
    text = proc.stdout.strip()
    shown = f"{len(text)} characters of JSON" if text.startswith(("{", "[")) else (text.splitlines() or [""])[-1]
    print(f"  ok {elapsed:5.2f} s  {name}: {shown}")
    return proc.stdout, elapsed


def check_app(exe: Path, ver: str) -> None:
    """--version, --self-test, an estimate from the catalog, a saved scenario opened in the window, exports
    (the chart renderers and Qt plugins the window does not need at start), then the Hub client."""
    with tempfile.TemporaryDirectory(prefix="vramdesk-smoke-") as tmp:
        home = Path(tmp)
        env = clean_env(home)
        out, _ = run_app(exe, ["--version"], env)
        if out.strip() != f"vramdesk {ver}":
            raise SmokeError(f"--version printed {out.strip()!r}, expected 'vramdesk {ver}'")
        out, _ = run_app(exe, ["--self-test"], env)
        if not out.startswith("self-test ok"):
            raise SmokeError(f"--self-test printed {out.strip()!r}")
        # GPU detection runs the bundle itself as a child (`-m vramdesk.services.nvml --probe`): that must answer
        out, _ = run_app(exe, ["gpus", "--json"], env)
        reason = str(json.loads(out).get("reason") or "")
        if "GPU probe" in reason:
            raise SmokeError(f"gpus --json: the NVML probe child did not run in the bundle: {reason}")
        scenario = home / "planned.vramdesk.json"
        estimate = ["estimate", "Qwen/Qwen3-4B", "--gpu", "RTX 4090", "--json", "--save", str(scenario)]
        out, _ = run_app(exe, estimate, env)
        result = json.loads(out)
        if not result.get("device_bytes", 0) > 0 or "fit" not in result:
            raise SmokeError("estimate --json: no device_bytes / fit in the result")
        if not scenario.is_file():
            raise SmokeError("estimate --save wrote no scenario file")
        png = home / "window.png"
        run_app(exe, ["gui", "--screenshot", str(png), str(scenario)], env)
        if not png.is_file() or png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
            raise SmokeError("--screenshot of a saved scenario wrote no PNG")
        for fmt, magic in (("pdf", b"%PDF"), ("svg", b"<?xml"), ("html", b"<!")):
            out_file = home / f"report.{fmt}"
            run_app(exe, ["export", str(scenario), "--format", fmt, "-o", str(out_file)], env)
            if not out_file.is_file() or not out_file.read_bytes().lstrip()[:5].startswith(magic):
                raise SmokeError(f"export --format {fmt} wrote no {fmt.upper()} file")
    check_hub(exe)


def check_hub(exe: Path) -> None:
    """Search and estimate through the Hub client inside the bundle, against tests/fakehub.py on 127.0.0.1
    (so a module the bundle lacks on the online path shows up here, not on a user's machine)."""
    try:
        sys.path.insert(0, str(ROOT / "tests"))
        from fakehub import TINY_CONFIG, FakeHub
    except ImportError as e:  # a release machine without the test dependencies
        print(f"  skipped the Hub check: {e}")
        return
    finally:
        sys.path.remove(str(ROOT / "tests"))
    with tempfile.TemporaryDirectory(prefix="vramdesk-hub-") as tmp, FakeHub() as fake:
        fake.add_model("acme/tiny-llama", info={"downloads": 5}, files={"config.json": json.dumps(TINY_CONFIG)})
        env = clean_env(Path(tmp))
        del env["HF_HUB_OFFLINE"]
        env["HF_ENDPOINT"] = fake.url
        out, _ = run_app(exe, ["search", "tiny", "--limit", "3", "--json"], env)
        if "acme/tiny-llama" not in out:
            raise SmokeError("search did not find acme/tiny-llama on the fake Hub")
        out, _ = run_app(exe, ["estimate", "acme/tiny-llama", "--json"], env)
        if not json.loads(out).get("params", {}).get("total"):
            raise SmokeError("estimate of a Hub model gave no parameter count")


def dpkg_contents(deb: Path) -> list[str]:
    out = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    return [line.split()[5].lstrip(".") for line in out.splitlines()]


def check_layout(paths: list[str]) -> None:
    want = [
        "/usr/lib/vramdesk/vramdesk",
        "/usr/bin/vramdesk",
        f"/usr/share/applications/{APP_ID}.desktop",
        f"/usr/share/metainfo/{APP_ID}.metainfo.xml",
        "/usr/share/mime/packages/vramdesk.xml",
        "/usr/share/icons/hicolor/scalable/apps/vramdesk.svg",
        "/usr/lib/vramdesk/_internal/vramdesk/resources/catalog/models.json",
        *(f"/usr/share/icons/hicolor/{s}x{s}/apps/vramdesk.png" for s in ICON_SIZES),
    ]
    missing = [w for w in want if w not in paths]
    if missing:
        raise SmokeError("the .deb lacks " + ", ".join(missing))
    print(f"  ok layout: {len(paths)} entries, /usr/lib/vramdesk + /usr/bin + desktop entry, metainfo, MIME, icons")


def validate_desktop_files(root: Path) -> None:
    tool = shutil.which("desktop-file-validate")
    if tool:
        subprocess.run([tool, str(root / f"usr/share/applications/{APP_ID}.desktop")], check=True)
    tool = shutil.which("appstreamcli")
    if tool:
        subprocess.run(
            [
                tool,
                "validate",
                "--no-net",
                "--pedantic",
                "--no-color",
                str(root / f"usr/share/metainfo/{APP_ID}.metainfo.xml"),
            ],
            check=True,
            capture_output=True,
        )


def smoke_extract(deb: Path, ver: str) -> None:
    print(f"--- {deb.name}: dpkg -x into a scratch root")
    check_layout(dpkg_contents(deb))
    with tempfile.TemporaryDirectory(prefix="vramdesk-deb-") as tmp:
        root = Path(tmp)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        link = root / "usr/bin/vramdesk"
        if os.readlink(link) != "../lib/vramdesk/vramdesk":
            raise SmokeError(f"/usr/bin/vramdesk points to {os.readlink(link)}")
        validate_desktop_files(root)
        check_app(root / "usr/lib/vramdesk/vramdesk", ver)


def smoke_install(deb: Path, ver: str) -> None:
    print(f"--- {deb.name}: apt-get install, run /usr/bin/vramdesk, dpkg --purge")
    check_layout(dpkg_contents(deb))
    if subprocess.run(["dpkg", "-s", "vramdesk"], capture_output=True, check=False).returncode == 0:
        raise SmokeError("vramdesk is already installed on this machine: refusing to touch it")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    t0 = time.monotonic()
    subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", str(deb.resolve())],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    print(f"  ok installed in {time.monotonic() - t0:.1f} s")
    files = subprocess.run(["dpkg", "-L", "vramdesk"], capture_output=True, text=True, check=True).stdout.split()
    try:
        validate_desktop_files(Path("/"))
        globs = Path("/usr/share/mime/globs2")
        if globs.is_file() and "x-vramdesk-scenario" not in globs.read_text(encoding="utf-8"):
            raise SmokeError("the MIME database does not know *.vramdesk.json after install")
        cache = Path("/usr/share/applications/mimeinfo.cache")
        if shutil.which("update-desktop-database") and APP_ID not in cache.read_text(encoding="utf-8"):
            raise SmokeError(f"{cache} does not send the scenario type to {APP_ID}.desktop")
        print("  ok desktop entry valid; *.vramdesk.json is in the MIME database and opens with vramdesk")
        check_app(Path("/usr/bin/vramdesk"), ver)
    finally:
        subprocess.run(["dpkg", "--purge", "vramdesk"], check=True, env=env, stdout=subprocess.DEVNULL)
    left = [f for f in files if f.startswith(("/usr/lib/vramdesk", "/usr/bin/vramdesk")) or "vramdesk" in Path(f).name]
    left = [f for f in left if os.path.lexists(f)]
    if left:
        raise SmokeError("left behind after dpkg --purge: " + ", ".join(left[:10]))
    print("  ok removed: nothing of vramdesk left")


def smoke_tarball(tarball: Path, ver: str) -> None:
    print(f"--- {tarball.name}: unpack and run")
    with tempfile.TemporaryDirectory(prefix="vramdesk-tgz-") as tmp:
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp, filter="tar")
        top = Path(tmp) / f"vramdesk-{ver}"
        for needed in ("vramdesk", "install-desktop-entry.sh", f"share/applications/{APP_ID}.desktop"):
            if not (top / needed).exists():
                raise SmokeError(f"{tarball.name} lacks vramdesk-{ver}/{needed}")
        with tempfile.TemporaryDirectory(prefix="vramdesk-home-") as home:
            run_app(top / "vramdesk", ["--version"], clean_env(Path(home)))


def main(argv: list[str] | None = None) -> int:
    ver = version()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--deb", type=Path, default=DIST / f"vramdesk_{ver}_amd64.deb")
    p.add_argument("--tarball", type=Path, default=DIST / f"vramdesk-{ver}-linux-x86_64.tar.gz")
    p.add_argument(
        "--mode",
        choices=["auto", "install", "extract"],
        default="auto",
        help="auto: install for real when root with apt-get, else dpkg -x",
    )
    p.add_argument("--bundle", type=Path, help="test this bundle folder's executable only (no .deb)")
    args = p.parse_args(argv)
    try:
        if args.bundle:
            exe_name = "vramdesk-cli.exe" if sys.platform == "win32" else "vramdesk"
            exe = args.bundle / exe_name
            if sys.platform == "darwin" and args.bundle.suffix == ".app":
                exe = args.bundle / "Contents" / "MacOS" / "vramdesk"
            print(f"--- {exe}")
            check_app(exe, ver)
            return 0
        mode = args.mode
        if mode == "auto":
            mode = "install" if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get") else "extract"
        (smoke_install if mode == "install" else smoke_extract)(args.deb, ver)
        if args.tarball.is_file():
            smoke_tarball(args.tarball, ver)
    except (SmokeError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        print(f"smoke test FAILED: {e}", file=sys.stderr)
        return 1
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
