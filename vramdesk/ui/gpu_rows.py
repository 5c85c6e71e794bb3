"""The "Which GPUs" view's rows and texts (Qt-free, like :mod:`vramdesk.ui.presenter`): for each catalog GPU the
fewest of it that fit the plan, the verdict, the memory per GPU, the speed and the layout, as the command line's
``solve --advise`` answers them (:func:`vramdesk.core.advice.advise`).

:func:`compute_rows` is the job the view runs on a worker; :func:`row_cells` and :func:`row_tooltip` are what a
row shows; :func:`sort_advice` orders them by a column (rows that do not fit stay last); :func:`plan_for` is the
plan a chosen row applies.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from vramdesk.core.advice import GpuAdvice, SortKey, advise, sort_rows
from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve_gpus import gpu_layout

from .core_text import localize
from .i18n import tr
from .presenter import VERDICT_TITLES, gib

#: the most GPUs of one type the view tries (the command line's --advise default)
MAX_GPUS = 8


@dataclass(frozen=True)
class Column:
    #: the header, as tr() takes it
    title: str
    #: the core's sort key of the column
    key: SortKey


#: the table's columns, left to right (the catalog has no prices, so there is no price column)
COLUMNS: tuple[Column, ...] = (
    Column("GPU", "name"),
    Column("How many", "gpus"),
    Column("Verdict", "gpus"),
    Column("Memory per GPU", "device"),
    Column("Spare per GPU", "spare"),
    Column("Speed", "decode"),
    Column("Layout", "gpus"),
)


@dataclass(frozen=True)
class GpuAdviceResult:
    """What the worker answered: the rows for ``scenario`` (fewest GPUs first), or why there are none."""

    scenario: Scenario
    rows: tuple[GpuAdvice, ...]
    error: str = ""


def compute_rows(
    scenario: Scenario,
    facts: ModelFacts,
    gpus: Sequence[GpuSpec],
    *,
    headroom_fraction: float | None = None,
    cancel: threading.Event | None = None,
) -> GpuAdviceResult:
    """The advice rows for ``scenario`` over ``gpus``, one GPU type at a time (``cancel`` set: stop early)."""
    rows: list[GpuAdvice] = []
    for gpu in gpus:
        if cancel is not None and cancel.is_set():
            break
        rows += advise(scenario, facts, [gpu], max_gpus=MAX_GPUS, headroom_fraction=headroom_fraction)
    return GpuAdviceResult(scenario, tuple(sort_rows(rows, "gpus")))


def _speed(row: GpuAdvice) -> tuple[float | None, str]:
    if row.decode_tokens_per_s is not None:
        return row.decode_tokens_per_s, tr("{speed} tokens/s").format(speed=f"{row.decode_tokens_per_s:,.1f}")
    if row.train_tokens_per_s is not None:
        return row.train_tokens_per_s, tr("{speed} training tokens/s").format(speed=f"{row.train_tokens_per_s:,.0f}")
    return None, tr("speed unknown")


def row_cells(row: GpuAdvice) -> tuple[str, ...]:
    """What the row shows, one text per column of :data:`COLUMNS`."""
    fits = row.gpus is not None
    verdict = tr(VERDICT_TITLES.get(row.verdict, row.verdict))
    return (
        row.gpu,
        str(row.gpus) if fits else tr("more than {n}").format(n=MAX_GPUS),
        verdict,
        gib(row.device_bytes) if row.device_bytes is not None else "–",
        gib(row.spare_bytes) if fits and row.spare_bytes is not None else "–",
        _speed(row)[1] if fits else "–",
        localize(row.how) if fits and (row.gpus or 0) > 1 else "",  # (one GPU has no layout to speak of)
    )


def row_tooltip(row: GpuAdvice) -> str:
    """The row's tooltip: what its memory is, and the note (why it does not fit, or why there is no speed)."""
    lines = [tr("{gpu}: {memory} each").format(gpu=row.gpu, memory=gib(row.memory_bytes))]
    if row.gpus is not None:
        lines.append(tr("Double-click to plan for {n} x {gpu}").format(n=row.gpus, gpu=row.gpu))
    if row.note:
        lines.append(localize(row.note))
    return "\n".join(lines)


def sort_advice(rows: Sequence[GpuAdvice], column: int, descending: bool = False) -> list[GpuAdvice]:
    """``rows`` ordered by column ``column`` of :data:`COLUMNS`; the speed column reads training speed for a
    fine-tune. Rows that do not fit stay last either way."""
    key = COLUMNS[column].key
    if key == "decode" and rows and all(r.decode_tokens_per_s is None for r in rows):
        key = "train"
    return sort_rows(rows, key, descending=descending)


def plan_for(scenario: Scenario, row: GpuAdvice) -> Scenario | None:
    """``scenario`` on the row's GPU and count, laid out as the advice solved it (tensor parallel for vLLM, a layer
    split, ZeRO-3 for a fine-tune without sharding); None for a row that does not fit."""
    if row.gpus is None:
        return None
    on_gpu = scenario.model_copy(update={"hardware": scenario.hardware.model_copy(update={"gpu": row.gpu})})
    # (the view tries at most MAX_GPUS GPUs: one machine, where a fine-tune's whole machines start past 8)
    planned, _how = gpu_layout(on_gpu, row.gpus, 1)
    return planned


def plan_label(row: GpuAdvice) -> str:
    """The undo history's name for applying ``row``."""
    return tr("Plan for {n} x {gpu}").format(n=row.gpus, gpu=row.gpu)


__all__ = [
    "COLUMNS",
    "MAX_GPUS",
    "GpuAdviceResult",
    "compute_rows",
    "plan_for",
    "plan_label",
    "row_cells",
    "row_tooltip",
    "sort_advice",
]
