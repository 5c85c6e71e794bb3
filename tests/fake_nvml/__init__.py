"""The fake ``libnvidia-ml.so.1`` (``fake_nvml.c``, configured by FAKE_NVML_* variables: see its header) for tests.

:func:`build` compiles it into a folder; a child process started with :func:`child_env` (``LD_LIBRARY_PATH`` set
before it starts) loads it through the real bindings, as it would load the driver's library.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).with_name("fake_nvml.c")


def build(folder: Path) -> Path | None:
    """``folder/libnvidia-ml.so.1`` built from the shim; None without a C compiler (or off Linux)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc or not sys.platform.startswith("linux"):
        return None
    out = folder / "libnvidia-ml.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), str(SOURCE)], check=True)
    return out


def child_env(shim: Path, **fake: str) -> dict[str, str]:
    """os.environ with the shim's folder first on LD_LIBRARY_PATH and FAKE_NVML_<NAME> set from ``fake``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_NVML_")}
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(shim.parent), os.environ.get("LD_LIBRARY_PATH")) if p)
    env.update({f"FAKE_NVML_{k.upper()}": v for k, v in fake.items()})
    return env
