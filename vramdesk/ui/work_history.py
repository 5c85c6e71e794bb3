"""What the window's undo history and unsaved-changes marker work on, without Qt.

A :class:`WorkState` is everything an undo step puts back: the form's values, the scenario they sit on (fields
the form does not show), the library entry the work was opened from with the revision read then, and the
content that entry held (the baseline the unsaved-changes marker compares with). An undo that crosses an
"open" therefore also goes back to the entry that was open before, so a Ctrl+S after it never writes into the
wrong configuration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vramdesk.core.scenario import Scenario

from .presenter import FormValues


@dataclass(frozen=True)
class WorkState:
    values: FormValues
    base: Scenario
    entry_id: str | None = None
    entry_revision: int | None = None
    #: what was last opened or saved (None: nothing yet; the default plan)
    saved: Scenario | None = None


def changed_fields(before: FormValues, after: FormValues) -> tuple[str, ...]:
    """The form fields whose values differ, in the form's order."""
    return tuple(n for n in FormValues.names() if getattr(before, n) != getattr(after, n))


def _value(v: Any) -> str:
    if v is None:
        return "default"
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, tuple):
        return ",".join(str(x) for x in v) or "none"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def change_text(before: FormValues, after: FormValues) -> str:
    """A short description of an edit for the Edit menu ("batch 1 -> 8", "model, engine")."""
    names = changed_fields(before, after)
    if len(names) == 1:
        n = names[0]
        return f"{n.replace('_', ' ')} {_value(getattr(before, n))} \u2192 {_value(getattr(after, n))}"
    shown = ", ".join(n.replace("_", " ") for n in names[:3])
    return shown + (f" (+{len(names) - 3})" if len(names) > 3 else "")


def same_plan(a: Scenario | None, b: Scenario | None) -> bool:
    """The same plan, whatever its name (the name is the library's business, not an edit of the plan)."""
    if a is None or b is None:
        return a is b
    return a.model_copy(update={"name": None}) == b.model_copy(update={"name": None})


def scenario_summary(scenario: Scenario, tr: Callable[[str], str] = str) -> str:
    """One line naming what a saved plan is (for the list of a configuration's earlier versions); ``tr``
    translates its words (the window passes its own)."""
    w = scenario.workload
    hw = scenario.hardware
    gpu = f"{hw.gpu_count} x {hw.gpu}" if hw.gpu and hw.gpu_count > 1 else (hw.gpu or tr("no GPU"))
    if w.kind == "inference":
        length = f"{w.input_len:,}" if w.input_len else tr("default")
        what = f"{tr('Inference')}, {w.engine}, {tr('batch')} {w.batch:,}, {tr('input')} {length}"
    else:
        what = f"{tr('Fine-tune')}, {w.method}, {tr('micro-batch')} {w.micro_batch:,}, {tr('length')} {w.seq_len:,}"
    return f"{scenario.model.id} · {what} · {scenario.weights} · {gpu}"
