"""Qt-free report writers of one estimate: its breakdown (CSV / Markdown / HTML / TSV) and the report
(Markdown / HTML / JSON), and the table helpers :mod:`vramdesk.report.comparison` shares.

The caller estimates (report sits beside services and storage, so it never resolves models itself) and
passes the results in. Bytes stay integers in CSV and JSON; GiB are shown with two decimals elsewhere.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from vramdesk import __version__
from vramdesk.core import engines
from vramdesk.core.gpu import GIB, hardware_text
from vramdesk.core.performance import Performance
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario

from .json_report import estimate_to_dict

#: a PyTorch process's levels (fine-tuning runs in one: its estimates name the engine "training")
_TORCH_LEVELS = ("torch.cuda.max_memory_allocated", "torch.cuda.max_memory_reserved")


def level_labels(engine: str) -> tuple[str, str]:
    """What the allocated and reserved levels correspond to for an engine's process."""
    eng = engines.ENGINES.get(engine)
    return eng.level_labels if eng is not None else _TORCH_LEVELS


def gib(n: int | float) -> str:
    return f"{n / GIB:.2f}"


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> dotted keys (``workload.batch``); lists become comma-joined text."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(data, (list, tuple)):
        out[prefix] = ",".join(str(x) for x in data)
    else:
        out[prefix] = data
    return out


def scenario_inputs(scenario: Scenario) -> dict[str, Any]:
    """The inputs of a scenario as dotted keys (without the schema version)."""
    data = scenario.model_dump(mode="json")
    data.pop("schema_version", None)
    work = data.get("workload", {})
    if work.get("kind") == "inference":  # options of the engines not in use say nothing
        for eng in engines.ENGINES.values():
            if eng.options_section and work.get("engine") != eng.name:
                work.pop(eng.options_section, None)
    return {k: v for k, v in flatten(data).items() if v is not None}


def cell_text(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


# Names, model ids, tags, notes and error texts come from users and the Hub: in Markdown they stay text.
# HTML is written as entities, the brackets and backticks of links, images and code are escaped (no link can
# start), "|" cannot split a table cell, and line breaks cannot start a new block.
_MD_TEXT = str.maketrans(
    {"\\": "\\\\", "&": "&amp;", "<": "&lt;", ">": "&gt;", "[": "\\[", "]": "\\]", "`": "\\`", "|": "\\|"}
    | {c: " " for c in "\n\r\t\v\f"}
)
# a URL scheme that runs or embeds content: the colon becomes an entity, so no renderer links it
_MD_SCHEME = re.compile(r"(?i)\b(javascript|vbscript|data):")


def _md_escape(text: object) -> str:
    return _MD_SCHEME.sub(r"\1&#58;", str(text).translate(_MD_TEXT))


# A spreadsheet runs a CSV / TSV cell that starts with one of these as a formula (OWASP "CSV injection"):
# such a cell gets a leading "'", unless it is a plain number such as -1.5 or +3 (numbers stay numbers).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV / TSV cell that no spreadsheet runs as a formula (non-text values are unchanged)."""
    if not isinstance(value, str):
        return value
    if value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        value = "'" + value
    # the writer quotes cells with "\n" (its line end) but not a lone "\r", which readers take as a new row
    # (whose first cell could then be a formula)
    return value.replace("\r\n", "\n").replace("\r", "\n")


def write_rows(rows: Iterable[Sequence[Any]], delimiter: str = ",") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    w.writerows([csv_cell(v) for v in row] for row in rows)
    return buf.getvalue()


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_right: Sequence[int] = ()) -> str:
    lines = ["| " + " | ".join(_md_escape(h) for h in header) + " |"]
    lines.append("|" + "|".join("---:" if i in align_right else "---" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(_md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- one estimate


BREAKDOWN_HEADER = ("section", "name", "category", "bytes", "GiB", "share", "explain")


def breakdown_rows(est: Estimate) -> list[tuple[str, str, str, int, str, str, str]]:
    """The components at the peak, the device overheads and the three totals (machine-friendly rows)."""
    total = est.peak_allocated_bytes or 1
    rows: list[tuple[str, str, str, int, str, str, str]] = []
    for c in est.components:
        rows.append(("peak", c.name, c.category, c.bytes, gib(c.bytes), f"{c.bytes / total * 100:.1f}%", c.explain))
    rows.append(("total", "peak allocated", "", est.peak_allocated_bytes, gib(est.peak_allocated_bytes), "", ""))
    rows.append(("total", "peak reserved", "", est.peak_reserved_bytes, gib(est.peak_reserved_bytes), "", ""))
    for c in est.device_overheads:
        rows.append(("device", c.name, c.category, c.bytes, gib(c.bytes), "", c.explain))
    rows.append(("total", "on the device", "", est.device_bytes, gib(est.device_bytes), "", ""))
    if est.host_bytes:
        rows.append(("total", "host memory (per machine)", "", est.host_bytes, gib(est.host_bytes), "", ""))
    return rows


_T = TypeVar("_T")


def gpus_on_the_device(first: int, last: int) -> str:
    return f"GPU {first} on the device" if first == last else f"GPU {first}-{last} on the device, each"


def runs(values: Sequence[_T]) -> list[tuple[int, int, _T]]:
    """(first index, last index, value) of each run of equal consecutive values."""
    out: list[tuple[int, int, _T]] = []
    for i, v in enumerate(values):
        if out and out[-1][2] == v:
            out[-1] = (out[-1][0], i, v)
        else:
            out.append((i, i, v))
    return out


def breakdown_csv(est: Estimate) -> str:
    return write_rows([BREAKDOWN_HEADER, *breakdown_rows(est)])


def breakdown_tsv(est: Estimate) -> str:
    """The breakdown for pasting into a spreadsheet (tabs, one line per row)."""
    return write_rows([BREAKDOWN_HEADER[:6], *(r[:6] for r in breakdown_rows(est))], "\t")


def breakdown_markdown(est: Estimate) -> str:
    rows = [(r[1], r[4], r[5], r[2]) for r in breakdown_rows(est)]
    return markdown_table(("Component", "GiB", "Share", "Category"), rows, align_right=(1, 2))


def report_json(
    est: Estimate, scenario: Scenario, perf: Performance | None = None, *, created: str | None = None
) -> dict[str, Any]:
    doc = estimate_to_dict(est, scenario, perf)
    doc["report"] = {"app": "vramdesk", "version": __version__, "created": created or now_text()}
    return doc


@dataclass(frozen=True)
class ReportData:
    """Everything a one-scenario report shows, prepared once for every format."""

    est: Estimate
    scenario: Scenario
    perf: Performance | None = None
    created: str = field(default_factory=now_text)
    version: str = __version__
    #: how close each level came to measured runs it was not fitted to: (level, set, comparisons, median %, p90 %);
    #: None leaves the section out, () says no such runs exist for this kind of plan
    accuracy: tuple[tuple[str, str, int, float, float], ...] | None = None

    @property
    def title(self) -> str:
        return self.scenario.name or self.est.model_id

    def verdict_line(self) -> str:
        f = self.est.fit
        if f is None:
            return f"needs {gib(self.est.device_bytes)} GiB per GPU (no GPU chosen)"
        hw = self.scenario.hardware
        return f"{f.verdict.upper()} on {hardware_text(f.gpu, hw.gpu_count, hw.nodes)}: {f.message}"

    def summary_rows(self) -> list[tuple[str, str]]:
        e = self.est
        rows = [
            ("Peak phase", e.peak_phase),
            (f"Peak allocated ({level_labels(e.engine.engine)[0]})", f"{gib(e.peak_allocated_bytes)} GiB"),
            (f"Peak reserved ({level_labels(e.engine.engine)[1]})", f"{gib(e.peak_reserved_bytes)} GiB"),
            ("On the device, per GPU (nvidia-smi)", f"{gib(e.device_bytes)} GiB"),
            (
                "Parameters (total / active / trainable)",
                f"{e.params.total:,} / {e.params.active:,} / {e.params.trainable:,}",
            ),
        ]
        if e.host_bytes:
            rows.append(("Host memory (per machine)", f"{gib(e.host_bytes)} GiB"))
        if len(e.per_gpu) > 1:
            # consecutive GPUs that hold the same are one row ("GPU 0-127 on the device, each")
            for first, last, value in runs([g.device_bytes for g in e.per_gpu]):
                rows.append((gpus_on_the_device(first, last), f"{gib(value)} GiB"))
        p = self.perf
        if p is not None:
            if p.decode_tokens_per_s:
                rows.append(("Decode speed (one sequence)", f"{p.decode_tokens_per_s:.1f} tokens/s"))
            if p.prefill_tokens_per_s:
                rows.append(("Prefill speed", f"{p.prefill_tokens_per_s:.0f} tokens/s"))
            train = getattr(p, "train_tokens_per_s", None)
            if train:
                rows.append(("Training speed", f"{train:.0f} tokens/s"))
        return rows

    def input_rows(self) -> list[tuple[str, str]]:
        return [(k, cell_text(v)) for k, v in scenario_inputs(self.scenario).items()]

    def phase_rows(self) -> list[tuple[str, str, str]]:
        return [
            (p.name, gib(p.allocated_bytes), "peak" if p.name == self.est.peak_phase else "") for p in self.est.phases
        ]

    def notes(self) -> list[str]:
        return [*self.est.warnings, *self.est.params.notes]

    def accuracy_rows(self) -> list[tuple[str, str, str, str, str]]:
        return [(lv, name, str(n), f"{med:.1f} %", f"{p90:.1f} %") for lv, name, n, med, p90 in self.accuracy or ()]


_ACCURACY_TITLE = "How close these figures came to measurements"
_ACCURACY_HEADER = ("Level", "Measured runs (not fitted to)", "n", "Median |error|", "p90 |error|")
_ACCURACY_NONE = "No measured runs for this kind of plan: the figures are modelled, not checked."


def report_markdown(data: ReportData, chart_path: str | None = None) -> str:
    e = data.est
    esc = _md_escape
    out = [f"# vramdesk report: {esc(data.title)}\n"]
    out.append(f"vramdesk {esc(data.version)} · {esc(data.created)} · model {esc(e.model_id)}\n")
    out.append(f"**{esc(data.verdict_line())}**\n")
    if chart_path:
        out.append(f"![Breakdown at the peak]({chart_path})\n")
    out.append("## Summary\n")
    out.append(markdown_table(("", "value"), data.summary_rows()))
    if data.accuracy is not None:
        out.append(f"\n## {_ACCURACY_TITLE}\n")
        rows = data.accuracy_rows()
        out.append(markdown_table(_ACCURACY_HEADER, rows, align_right=(2, 3, 4)) if rows else _ACCURACY_NONE)
    out.append(f"\n## Breakdown at the peak ({esc(e.peak_phase)})\n")
    out.append(breakdown_markdown(e))
    out.append("\n## Phases\n")
    out.append(markdown_table(("Phase", "Allocated GiB", ""), data.phase_rows(), align_right=(1,)))
    out.append("\n## Inputs\n")
    out.append(markdown_table(("Input", "Value"), data.input_rows()))
    out.append("\n## Where the numbers come from\n")
    for c in (*e.components, *e.device_overheads):
        out.append(f"- **{esc(c.name)}** ({gib(c.bytes)} GiB): {esc(c.explain)}")
    notes = data.notes()
    if notes:
        out.append("\n## Warnings and notes\n")
        out += [f"- {esc(n)}" for n in notes]
    if e.constants:
        out.append("\n## Assumptions (constants)\n")
        out += [f"- `{k.replace('`', '')}`: {esc(v)}" for k, v in e.constants.items()]
    return "\n".join(out).rstrip() + "\n"


CSS = """
body { font-family: 'DejaVu Sans', Arial, sans-serif; font-size: 10pt; color: #1f2328; }
h1 { font-size: 16pt; margin-bottom: 2px; } h2 { font-size: 12pt; margin-top: 14px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 4px 0; }
th, td { border: 1px solid #c8ccd1; padding: 3px 6px; vertical-align: top; }
th { background: #eef1f4; text-align: left; }
td.num { text-align: right; white-space: nowrap; }
td.diff { background: #fff3c4; font-weight: bold; }
.meta { color: #57606a; } .verdict { font-size: 12pt; font-weight: bold; }
.fits { color: #1a7f37; } .tight { color: #9a6700; } .nofit { color: #cf222e; }
"""


def _verdict_class(verdict: str | None) -> str:
    return {"fits": "fits", "tight": "tight", "does not fit": "nofit"}.get(verdict or "", "")


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in header)
    body = []
    for r in rows:
        cells = "".join(
            f'<td class="num">{html.escape(c)}</td>' if i in numeric else f"<td>{html.escape(c)}</td>"
            for i, c in enumerate(r)
        )
        body.append(f"<tr>{cells}</tr>")
    return f'<table cellspacing="0" cellpadding="3"><tr>{h}</tr>{"".join(body)}</table>'


def report_html(data: ReportData, chart_src: str | None = None, chart_width: int = 720) -> str:
    """A standalone HTML report; ``chart_src`` is an image URL (a data: URI keeps the file standalone)."""
    e = data.est
    esc = html.escape
    parts = [
        '<!DOCTYPE html><html><head><meta charset="utf-8">',
        f"<title>vramdesk report: {esc(data.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>vramdesk report: {esc(data.title)}</h1>",
        f'<p class="meta">vramdesk {esc(data.version)} · {esc(data.created)} · model '
        f"<code>{esc(e.model_id)}</code></p>",
        f'<p class="verdict {_verdict_class(e.fit.verdict if e.fit else None)}">{esc(data.verdict_line())}</p>',
    ]
    if chart_src:
        parts.append(f'<p><img src="{esc(chart_src)}" width="{chart_width}" alt="Breakdown at the peak"></p>')
    parts.append("<h2>Summary</h2>" + _html_table(("", "value"), data.summary_rows()))
    if data.accuracy is not None:
        rows = data.accuracy_rows()
        table = _html_table(_ACCURACY_HEADER, rows, numeric=(2, 3, 4)) if rows else f"<p>{esc(_ACCURACY_NONE)}</p>"
        parts.append(f"<h2>{esc(_ACCURACY_TITLE)}</h2>" + table)
    rows = [(r[1], r[4], r[5], r[2], r[6]) for r in breakdown_rows(e)]
    parts.append(f"<h2>Breakdown at the peak ({esc(e.peak_phase)})</h2>")
    parts.append(_html_table(("Component", "GiB", "Share", "Category", "Where it comes from"), rows, numeric=(1, 2)))
    parts.append("<h2>Phases</h2>" + _html_table(("Phase", "Allocated GiB", ""), data.phase_rows(), numeric=(1,)))
    parts.append("<h2>Inputs</h2>" + _html_table(("Input", "Value"), data.input_rows()))
    notes = data.notes()
    if notes:
        parts.append("<h2>Warnings and notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    if e.constants:
        parts.append("<h2>Assumptions (constants)</h2>")
        parts.append(_html_table(("Constant", "Value and source"), list(e.constants.items())))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def json_text(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
