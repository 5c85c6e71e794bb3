"""Loading the scripts under benchmarks/ (not a package) in tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark(name: str, folder: str = "allocator") -> ModuleType:
    """benchmarks/FOLDER/NAME.py as module NAME (registered, so the scripts that import each other by name work)."""
    path = ROOT / "benchmarks" / folder / f"{name}.py" if folder else ROOT / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
