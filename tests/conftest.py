"""Shared test set-up: Qt renders offscreen (no display in CI), and the bundled catalog is used."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# never read or write the user's real caches from a test run
_ISOLATED = tempfile.mkdtemp(prefix="vramdesk-tests-")
os.environ["VRAMDESK_CACHE_DIR"] = os.path.join(_ISOLATED, "vramdesk-cache")
os.environ["HF_HUB_CACHE"] = os.path.join(_ISOLATED, "hf-cache")
os.environ["HF_HOME"] = os.path.join(_ISOLATED, "hf-home")
os.environ["VRAMDESK_DATA_DIR"] = os.path.join(_ISOLATED, "vramdesk-data")
