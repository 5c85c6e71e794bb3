"""The core stays pure: importing it pulls in no Qt, no network, no NVML (checked in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("PySide6", "shiboken6", "pyqtgraph", "pynvml", "huggingface_hub", "httpx", "requests", "numpy")


def _imported_after(module: str) -> set[str]:
    code = (
        f"import sys, importlib; importlib.import_module({module!r}); "
        "print('\\n'.join(sorted(m.split('.')[0] for m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.split())


def test_core_imports_nothing_outside_stdlib_and_pydantic() -> None:
    loaded = _imported_after("vramdesk.core.estimate")
    assert not loaded & set(FORBIDDEN)


def test_cli_does_not_import_qt() -> None:
    loaded = _imported_after("vramdesk.cli")
    assert not loaded & {"PySide6", "shiboken6", "pyqtgraph"}
