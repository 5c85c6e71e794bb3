"""Shared test set-up: Qt renders offscreen (no display in CI), and the bundled catalog is used."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
