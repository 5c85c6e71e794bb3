"""Where vramdesk keeps the user's files: platformdirs' user data folder, or ``$VRAMDESK_DATA_DIR``."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "VRAMDESK_DATA_DIR"


def data_dir() -> Path:
    """The user data folder (``$VRAMDESK_DATA_DIR`` wins: tests and portable installs point it elsewhere)."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("vramdesk", appauthor=False))


def library_dir() -> Path:
    """One JSON file per saved configuration."""
    return data_dir() / "scenarios"
