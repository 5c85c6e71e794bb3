"""Local model files: a config.json, or a model folder that holds one.

Only JSON is read; nothing from a model repository is ever executed (no ``trust_remote_code``).
Safetensors / GGUF headers and the HF cache arrive with the "Model sources" work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: a config.json larger than this is not a config
MAX_CONFIG_BYTES = 8 * 1024 * 1024


class LocalModelError(ValueError):
    """A local file that cannot be used; the message names the path and the problem."""


def read_config(path: Path) -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        cfg = path / "config.json"
        if not cfg.is_file():
            raise LocalModelError(f"{path}: folder has no config.json")
        path = cfg
    if not path.is_file():
        raise LocalModelError(f"{path}: no such file")
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise LocalModelError(f"{path}: {size:,} bytes is too large for a config.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise LocalModelError(f"{path}: not UTF-8 text ({err.reason})") from err
    except json.JSONDecodeError as err:
        raise LocalModelError(f"{path}: malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}") from err
    if not isinstance(data, dict):
        raise LocalModelError(f"{path}: a config.json must hold a JSON object, not {type(data).__name__}")
    return data


def looks_like_path(ref: str) -> bool:
    return ref.endswith((".json", ".gguf")) or ref.startswith((".", "/", "~")) or "\\" in ref or Path(ref).exists()
