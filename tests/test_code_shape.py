"""The package's shape (issue 19): no import cycle, no function over 120 lines, no module over 800 lines.

What is still too long is listed with its length today: it may shrink, never grow, and leaves the list once it is
within the limit (the test says so), so the list only ever gets shorter."""

from __future__ import annotations

import codeshape

#: path -> lines today
LONG_MODULES: dict[str, int] = {}

#: path:function -> lines today
LONG_FUNCTIONS: dict[str, int] = {}


def _over(measured: dict[str, int], limit: int, known: dict[str, int]) -> list[str]:
    problems = []
    for name, lines in sorted(measured.items()):
        if lines > limit and lines > known.get(name, limit):
            was = f" (was {known[name]})" if name in known else ""
            problems.append(f"{name}: {lines} lines, over {limit}{was}")
    for name in sorted(known):
        now = measured.get(name)
        if now is None or now <= limit:
            problems.append(f"{name} is within {limit} lines now ({now}): take it off the list")
    return problems


def test_no_import_cycle() -> None:
    assert codeshape.import_cycles() == []


def test_no_module_over_800_lines() -> None:
    assert _over(codeshape.module_lengths(), codeshape.MAX_MODULE_LINES, LONG_MODULES) == []


def test_no_function_over_120_lines() -> None:
    assert _over(codeshape.function_lengths(), codeshape.MAX_FUNCTION_LINES, LONG_FUNCTIONS) == []


def test_the_limits_catch_growth() -> None:
    assert _over({"a.py": 900}, 800, {}) == ["a.py: 900 lines, over 800"]
    assert _over({"a.py": 901}, 800, {"a.py": 900}) == ["a.py: 901 lines, over 800 (was 900)"]
    assert _over({"a.py": 700}, 800, {"a.py": 900}) == ["a.py is within 800 lines now (700): take it off the list"]
