"""The side-by-side comparison of several estimates: its rows and its Qt-free writers (Markdown / CSV / TSV /
JSON / HTML).

The rows read top to bottom as :mod:`vramdesk.report.compare_rows` orders them: the verdict per GPU, the totals,
the speed, the components at the peak, then the inputs grouped (Model, Workload, Training, Hardware, Engine) with
human labels. Each row keeps its machine key (``name``: the dotted field path of an input), its values (integer
bytes for byte rows) and whether the columns differ. The writers print the byte rows in ``unit`` ("GiB" or "GB")
and, with ``only_differences``, leave out the inputs and components on which every plan agrees.

The caller estimates (report sits beside services and storage) and passes :class:`CompareItem` columns in.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from vramdesk import __version__
from vramdesk.core.gpu import GIB, hardware_text
from vramdesk.core.performance import Performance
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import FinetuneWorkload, Scenario

from .captions import comparison_caption
from .compare_rows import (
    INPUT_GROUPS,
    RESULT_SECTIONS,
    TRAINING_PARALLELISM,
    gpu_label,
    input_cell,
    input_group,
    input_label,
    result_label,
    title,
)
from .tables import CSS, cell_text, gib, gpus_on_the_device, markdown_table, now_text, runs, scenario_inputs, write_rows

#: the units byte rows can be printed in: bytes in one
UNITS: dict[str, int] = {"GiB": GIB, "GB": 1_000_000_000}
#: the blocks that only differences leave out where the plans agree
_FILTERED = frozenset({"component", *INPUT_GROUPS})
_NUMERIC = frozenset({"total", "speed", "component"})
_VERDICT_CLASS = {"fits": "fits", "tight": "tight", "does not fit": "nofit"}


@dataclass(frozen=True)
class CompareItem:
    """One column of a comparison: a scenario and its estimate, or the reason there is none."""

    label: str
    scenario: Scenario
    est: Estimate | None = None
    perf: Performance | None = None
    error: str | None = None


@dataclass(frozen=True)
class CompareRow:
    section: str  # "verdict" | "total" | "speed" | "component" | "input"
    #: the machine key: the dotted field path of an input, the English name of the other rows
    name: str
    #: the cells as text (byte rows in GiB; :meth:`texts` prints them in another unit)
    cells: tuple[str, ...]
    #: integers for byte rows (None where a column has no value), the raw values of inputs, for machine output
    values: tuple[Any, ...]
    #: the columns do not all agree (what the view highlights)
    differs: bool
    #: the row's title in English (a Text with a message id: the window shows it translated)
    label: str = ""
    #: an input's group ("model", "workload", "training", "hardware", "engine"); "" for the other rows
    group: str = ""
    #: "bytes" for byte rows, "tokens/s" for speeds, "" for text
    unit: str = ""

    @property
    def block(self) -> str:
        """The block the row shows in: its section, or an input's group."""
        return self.group or self.section

    def texts(self, unit: str = "GiB") -> tuple[str, ...]:
        """The cells, byte rows in ``unit`` ("GiB" or "GB") with two decimals."""
        if self.unit != "bytes":
            return self.cells
        per = unit_size(unit)
        return tuple("–" if v is None else f"{v / per:.2f}" for v in self.values)


@dataclass(frozen=True)
class Comparison:
    labels: tuple[str, ...]
    rows: tuple[CompareRow, ...]
    errors: tuple[str | None, ...]
    created: str = field(default_factory=now_text)

    def section(self, name: str) -> list[CompareRow]:
        return [r for r in self.rows if r.section == name]

    def blocks(self, only_differences: bool = False) -> list[tuple[str, list[CompareRow]]]:
        """(block, rows) top to bottom; blocks left without rows are left out."""
        out: list[tuple[str, list[CompareRow]]] = []
        for block in (*RESULT_SECTIONS, *INPUT_GROUPS):
            rows = [r for r in self.rows if r.block == block]
            if only_differences and block in _FILTERED:
                rows = [r for r in rows if r.differs]
            if rows:
                out.append((block, rows))
        return out


def unit_size(unit: str) -> int:
    """Bytes in one ``unit``; a ValueError names the units there are."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}: expected {' or '.join(UNITS)}")
    return UNITS[unit]


def _row(
    section: str, name: str, values: Sequence[Any], fmt: Callable[[Any], str] = cell_text, **kw: str
) -> CompareRow:
    cells = tuple("–" if v is None else fmt(v) for v in values)
    differs = len(set(values if kw.get("unit") == "bytes" else cells)) > 1
    label = kw.pop("label", "") or result_label(name)
    return CompareRow(section, name, cells, tuple(values), differs, label=label, **kw)


def _input_rows(items: Sequence[CompareItem]) -> list[CompareRow]:
    """The inputs, grouped, each group in the scenario's order; ZeRO / FSDP / offload only where a plan trains."""
    inputs = [scenario_inputs(i.scenario) for i in items]
    for d in inputs:
        d.pop("name", None)  # the columns are the plans' names
    trains = any(isinstance(i.scenario.workload, FinetuneWorkload) for i in items)
    keys: list[str] = []
    for d in inputs:
        keys += [k for k in d if k not in keys]
    if not trains:
        keys = [k for k in keys if not (k.startswith("parallelism.") and k.split(".")[-1] in TRAINING_PARALLELISM)]
    rows = []
    for group in INPUT_GROUPS:
        for k in (k for k in keys if input_group(k) == group):
            values = [d.get(k) for d in inputs]
            rows.append(_row("input", k, values, partial(_input_text, k), label=input_label(k), group=group))
    return rows


def _input_text(path: str, value: Any) -> str:
    return input_cell(path, value) or cell_text(value)


def _verdict_rows(items: Sequence[CompareItem]) -> list[CompareRow]:
    """The GPU, the verdict, what each GPU holds (GPUs alike share a row), and any error."""
    ests = [i.est for i in items]
    hardware = [
        None
        if i.est is None or i.est.fit is None
        else hardware_text(i.est.fit.gpu, i.scenario.hardware.gpu_count, i.scenario.hardware.nodes)
        for i in items
    ]
    rows = [
        _row("verdict", "GPU", hardware),
        _row("verdict", "verdict", [None if e is None or e.fit is None else e.fit.verdict for e in ests]),
    ]
    most = max((len(e.per_gpu) for e in ests if e is not None), default=0)
    if most > 1:
        per_index = [
            tuple(e.per_gpu[g].device_bytes if e is not None and g < len(e.per_gpu) else None for e in ests)
            for g in range(most)
        ]
        # GPUs on which every plan holds the same as on the GPU before share a row
        for first, last, vals in runs(per_index):
            name = gpus_on_the_device(first, last)
            rows.append(_row("verdict", name, list(vals), gib, label=gpu_label(first, last), unit="bytes"))
    if any(i.error for i in items):
        rows.append(_row("verdict", "error", [i.error for i in items]))
    return rows


def _result_rows(items: Sequence[CompareItem]) -> list[CompareRow]:
    """The totals, the speed and each component at the peak."""
    ests = [i.est for i in items]
    rows = [
        _row("total", name, [None if e is None else getattr(e, attr) for e in ests], gib, unit="bytes")
        for name, attr in (
            ("peak allocated", "peak_allocated_bytes"),
            ("peak reserved", "peak_reserved_bytes"),
            ("on the device (per GPU)", "device_bytes"),
            ("host memory (per machine)", "host_bytes"),
        )
    ]
    if not any(e.host_bytes for e in ests if e is not None):
        rows = [r for r in rows if r.name != "host memory (per machine)"]  # nothing stays in host memory
    rows.append(_row("total", "peak phase", [None if e is None else e.peak_phase for e in ests]))
    decode = [i.perf.decode_tokens_per_s if i.perf is not None else None for i in items]
    if any(decode):
        rows.append(_row("speed", "decode tokens/s", decode, lambda v: f"{v:.1f}", unit="tokens/s"))
    train = [getattr(i.perf, "train_tokens_per_s", None) if i.perf is not None else None for i in items]
    if any(train):
        rows.append(_row("speed", "training tokens/s", train, lambda v: f"{v:.0f}", unit="tokens/s"))
    names: list[str] = []
    for est in ests:
        if est is not None:
            names += [c.name for c in est.components if c.name not in names]
    for n in names:
        vals = [None if e is None else next((c.bytes for c in e.components if c.name == n), 0) for e in ests]
        rows.append(_row("component", n, vals, gib, label=n, unit="bytes"))
    return rows


def build_comparison(items: Sequence[CompareItem]) -> Comparison:
    """The verdict per GPU and the totals first, then the components at the peak, then the inputs grouped."""
    rows = [*_verdict_rows(items), *_result_rows(items), *_input_rows(items)]
    return Comparison(tuple(i.label for i in items), tuple(rows), tuple(i.error for i in items))


def heading(cmp: Comparison) -> str:
    """``vramdesk comparison of 3 plans``: what the files are titled."""
    return f"vramdesk comparison of {len(cmp.labels)} plans"


def comparison_markdown(cmp: Comparison, unit: str = "GiB", only_differences: bool = False) -> str:
    source = comparison_caption(cmp.labels, cmp.created).source
    out = [f"# {heading(cmp)}\n", f"{source}\n"]
    inputs_started = False
    for block, rows in cmp.blocks(only_differences):
        if block in INPUT_GROUPS and not inputs_started:
            out.append(f"## {title('input')}\n")
            inputs_started = True
        out.append(f"{'###' if block in INPUT_GROUPS else '##'} {title(block, unit)}\n")
        body = [(f"**{r.label}**" if r.differs and r.section == "input" else r.label, *r.texts(unit)) for r in rows]
        numeric = range(1, len(cmp.labels) + 1) if block in _NUMERIC else ()
        out.append(markdown_table(("", *cmp.labels), body, align_right=tuple(numeric)))
    return "\n".join(out)


CSV_HEADER = ("section", "group", "name", "label", "unit", "differs")


def comparison_csv(cmp: Comparison, only_differences: bool = False) -> str:
    """One row per line: its machine key, label and unit; byte rows hold integers (bytes), the rest their text."""
    rows = [
        (r.section, r.group, r.name, r.label, r.unit, int(r.differs), *("" if v is None else v for v in r.values))
        for _, part in cmp.blocks(only_differences)
        for r in part
    ]
    return write_rows([(*CSV_HEADER, *cmp.labels), *rows])


def comparison_tsv(cmp: Comparison, unit: str = "GiB", only_differences: bool = False) -> str:
    """The comparison as shown (bytes in ``unit``) for pasting into a spreadsheet: tabs, a line per row and one
    with each block's title."""
    lines: list[tuple[str, ...]] = [("", *cmp.labels)]
    for block, rows in cmp.blocks(only_differences):
        lines.append((str(title(block, unit)),))
        lines += [(r.label, *r.texts(unit)) for r in rows]
    return write_rows(lines, "\t")


def comparison_json(cmp: Comparison, unit: str = "GiB", only_differences: bool = False) -> dict[str, Any]:
    return {
        "app": "vramdesk",
        "version": __version__,
        "created": cmp.created,
        "title": heading(cmp),
        "columns": list(cmp.labels),
        "errors": list(cmp.errors),
        "unit": unit,
        "only_differences": only_differences,
        "rows": [
            {
                "section": r.section,
                "group": r.group,
                "name": r.name,
                "label": r.label,
                "unit": r.unit,
                "values": list(r.values),
                "cells": list(r.texts(unit)),
                "differs": r.differs,
            }
            for _, part in cmp.blocks(only_differences)
            for r in part
        ],
    }


def _html_block(cmp: Comparison, block: str, rows: Sequence[CompareRow], unit: str) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in ("", *cmp.labels))
    body = []
    for r in rows:
        cls = ' class="diff"' if r.differs and r.section == "input" else ""
        cells = []
        for value, text in zip(r.values, r.texts(unit), strict=True):
            if block in _NUMERIC:
                cells.append(f'<td class="num">{esc(text)}</td>')
            elif r.name == "verdict" and value in _VERDICT_CLASS:
                cells.append(f'<td class="verdict {_VERDICT_CLASS[value]}">{esc(text)}</td>')
            else:
                cells.append(f"<td{cls}>{esc(text)}</td>")
        body.append(f"<tr><td{cls}>{esc(r.label)}</td>{''.join(cells)}</tr>")
    level = "h3" if block in INPUT_GROUPS else "h2"
    table = f'<table cellspacing="0" cellpadding="3"><tr>{head}</tr>{"".join(body)}</table>'
    return f"<{level}>{esc(title(block, unit))}</{level}>{table}"


def comparison_html(
    cmp: Comparison, chart_src: str | None = None, unit: str = "GiB", only_differences: bool = False
) -> str:
    """A standalone HTML document: the verdict first, the chart (``chart_src``: an image URL; a data: URI keeps the
    file standalone), the totals, the components and the inputs grouped."""
    esc = html.escape
    cap = comparison_caption(cmp.labels, cmp.created)
    parts = [
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{esc(heading(cmp))}</title><style>{CSS}</style>',
        f"</head><body><h1>{esc(heading(cmp))}</h1>",
        f'<p class="meta">{esc(cap.subtitle)}<br>{esc(cap.source)}</p>',
    ]
    inputs_started = False
    for block, rows in cmp.blocks(only_differences):
        if block in INPUT_GROUPS and not inputs_started:
            parts.append(f"<h2>{esc(title('input'))}</h2>")
            inputs_started = True
        parts.append(_html_block(cmp, block, rows, unit))
        if block == "verdict" and chart_src:
            alt = f"{cap.title}: {cap.subtitle}"
            parts.append(f'<p><img src="{esc(chart_src)}" width="720" alt="{esc(alt)}"></p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
