"""Not one number or sentence moves by accident: the golden cases (``tests/golden/cases.py``) against the
committed answers. A change meant to move numbers rewrites the file with ``python tests/golden/cases.py --update``
and says why in its commit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
import cases


@pytest.mark.slow
def test_golden_answers_unchanged() -> None:
    expected = cases.GOLDEN.read_text(encoding="utf-8").splitlines()
    actual = cases.compute()
    assert len(actual) > 4000
    problems = cases.diff(expected, actual)
    assert not problems, "\n".join(problems)


def test_diff_names_the_case_that_moved() -> None:
    old = ['{"case": "a", "peak": 1}', '{"case": "b", "peak": 2}']
    new = ['{"case": "a", "peak": 1}', '{"case": "b", "peak": 3}', '{"case": "c", "peak": 4}']
    out = cases.diff(old, new)
    assert out[0].startswith('changed: {"case": "b", "peak": 2}')
    assert out[1] == 'new case: {"case": "c", "peak": 4}'
    assert cases.diff(old, old) == []
