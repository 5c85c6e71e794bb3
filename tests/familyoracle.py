"""The transformers family oracle (benchmarks/data/transformers_families.jsonl) for the family tests: each model
type's record, and its default config as a fresh copy a test may change."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from benchload import ROOT

ORACLE = ROOT / "benchmarks" / "data" / "transformers_families.jsonl"


@cache
def oracle_records() -> dict[str, dict[str, Any]]:
    """model_type -> its record (``total``, ``by_prefix``, ``config``, or ``error``)."""
    rows = (json.loads(line) for line in ORACLE.read_text(encoding="utf-8").splitlines() if line.strip())
    return {rec["model_type"]: rec for rec in rows}


def oracle_config(model_type: str) -> dict[str, Any]:
    """A copy of the default config transformers wrote for ``model_type``."""
    return copy.deepcopy(oracle_records()[model_type]["config"])
