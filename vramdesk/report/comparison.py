"""The side-by-side comparison of several estimates: its rows (inputs, components at the peak, totals, verdict
per GPU, speed) and its Qt-free writers (Markdown / CSV / TSV / JSON / HTML).

The caller estimates (report sits beside services and storage) and passes :class:`CompareItem` columns in.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vramdesk import __version__
from vramdesk.core.gpu import hardware_text
from vramdesk.core.performance import Performance
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario

from .tables import CSS, cell_text, gib, gpus_on_the_device, markdown_table, now_text, runs, scenario_inputs, write_rows


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
    section: str  # "input" | "component" | "total" | "verdict" | "speed"
    name: str
    cells: tuple[str, ...]
    #: integers for byte rows (None where a column has no value), for machine output
    values: tuple[Any, ...]
    #: the columns do not all agree (what the view highlights)
    differs: bool


@dataclass(frozen=True)
class Comparison:
    labels: tuple[str, ...]
    rows: tuple[CompareRow, ...]
    errors: tuple[str | None, ...]

    def section(self, name: str) -> list[CompareRow]:
        return [r for r in self.rows if r.section == name]


def _row(section: str, name: str, values: Sequence[Any], fmt: Any = cell_text) -> CompareRow:
    cells = tuple("–" if v is None else fmt(v) for v in values)
    return CompareRow(section, name, cells, tuple(values), len(set(cells)) > 1)


def build_comparison(items: Sequence[CompareItem]) -> Comparison:
    """Inputs (differences flagged), each component at the peak, totals at each level, verdict per GPU."""
    inputs = [scenario_inputs(i.scenario) for i in items]
    keys: list[str] = []
    for d in inputs:
        keys += [k for k in d if k not in keys]
    rows: list[CompareRow] = [_row("input", k, [d.get(k) for d in inputs]) for k in keys]
    ests = [i.est for i in items]
    names: list[str] = []
    for est in ests:
        if est is not None:
            names += [c.name for c in est.components if c.name not in names]
    for n in names:
        vals: list[int | None] = []
        for est in ests:
            found = None if est is None else next((c.bytes for c in est.components if c.name == n), 0)
            vals.append(found)
        rows.append(_row("component", n, vals, gib))
    for label, attr in (
        ("peak allocated", "peak_allocated_bytes"),
        ("peak reserved", "peak_reserved_bytes"),
        ("on the device (per GPU)", "device_bytes"),
        ("host memory (per machine)", "host_bytes"),
    ):
        rows.append(_row("total", label, [None if e is None else getattr(e, attr) for e in ests], gib))
    rows.append(_row("total", "peak phase", [None if e is None else e.peak_phase for e in ests]))
    hardware = [
        None
        if i.est is None or i.est.fit is None
        else hardware_text(i.est.fit.gpu, i.scenario.hardware.gpu_count, i.scenario.hardware.nodes)
        for i in items
    ]
    rows.append(_row("verdict", "GPU", hardware))
    rows.append(_row("verdict", "verdict", [None if e is None or e.fit is None else e.fit.verdict for e in ests]))
    most = max((len(e.per_gpu) for e in ests if e is not None), default=0)
    if most > 1:
        per_index = [
            tuple(e.per_gpu[g].device_bytes if e is not None and g < len(e.per_gpu) else None for e in ests)
            for g in range(most)
        ]
        # GPUs on which every plan holds the same as on the GPU before share a row
        for first, last, vals2 in runs(per_index):
            rows.append(_row("verdict", gpus_on_the_device(first, last), list(vals2), gib))
    decode = [i.perf.decode_tokens_per_s if i.perf is not None else None for i in items]
    if any(decode):
        rows.append(_row("speed", "decode tokens/s", decode, lambda v: f"{v:.1f}"))
    train = [getattr(i.perf, "train_tokens_per_s", None) if i.perf is not None else None for i in items]
    if any(train):
        rows.append(_row("speed", "training tokens/s", train, lambda v: f"{v:.0f}"))
    rows.append(_row("verdict", "error", [i.error for i in items]))
    if not any(i.error for i in items):
        rows.pop()
    return Comparison(tuple(i.label for i in items), tuple(rows), tuple(i.error for i in items))


SECTION_TITLES = {
    "input": "Inputs",
    "component": "Components at the peak (GiB)",
    "total": "Totals (GiB)",
    "verdict": "Verdict",
    "speed": "Speed",
}


def comparison_markdown(cmp: Comparison) -> str:
    out = ["# vramdesk comparison\n", f"vramdesk {__version__} · {now_text()}\n"]
    for section, title in SECTION_TITLES.items():
        rows = cmp.section(section)
        if not rows:
            continue
        out.append(f"## {title}\n")
        body = [(("**" + r.name + "**") if r.differs and section == "input" else r.name, *r.cells) for r in rows]
        numeric = range(1, len(cmp.labels) + 1) if section in ("component", "total", "speed") else ()
        out.append(markdown_table(("", *cmp.labels), body, align_right=tuple(numeric)))
    return "\n".join(out)


def comparison_csv(cmp: Comparison) -> str:
    """One row per line; byte rows hold integers (bytes), the rest their text."""
    rows = [(r.section, r.name, int(r.differs), *("" if v is None else v for v in r.values)) for r in cmp.rows]
    return write_rows([("section", "name", "differs", *cmp.labels), *rows])


def comparison_tsv(cmp: Comparison) -> str:
    """The comparison as shown (GiB text) for pasting into a spreadsheet: tabs, one line per row."""
    return write_rows([("", *cmp.labels), *((r.name, *r.cells) for r in cmp.rows)], "\t")


def comparison_json(cmp: Comparison) -> dict[str, Any]:
    return {
        "app": "vramdesk",
        "version": __version__,
        "columns": list(cmp.labels),
        "errors": list(cmp.errors),
        "rows": [
            {
                "section": r.section,
                "name": r.name,
                "values": list(r.values),
                "cells": list(r.cells),
                "differs": r.differs,
            }
            for r in cmp.rows
        ],
    }


def comparison_html(cmp: Comparison, chart_src: str | None = None) -> str:
    esc = html.escape
    parts = [
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>vramdesk comparison</title><style>{CSS}</style>',
        "</head><body><h1>vramdesk comparison</h1>",
        f'<p class="meta">vramdesk {esc(__version__)} · {esc(now_text())}</p>',
    ]
    if chart_src:
        parts.append(f'<p><img src="{esc(chart_src)}" width="640" alt="Comparison chart"></p>')
    for section, title in SECTION_TITLES.items():
        rows = cmp.section(section)
        if not rows:
            continue
        head = "".join(f"<th>{esc(c)}</th>" for c in ("", *cmp.labels))
        body = []
        for r in rows:
            cls = ' class="diff"' if r.differs and section == "input" else ""
            num = ' class="num"' if section in ("component", "total", "speed") else cls
            cells = "".join(f"<td{num}>{esc(c)}</td>" for c in r.cells)
            body.append(f"<tr><td{cls}>{esc(r.name)}</td>{cells}</tr>")
        parts.append(
            f'<h2>{esc(title)}</h2><table cellspacing="0" cellpadding="3"><tr>{head}</tr>{"".join(body)}</table>'
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
