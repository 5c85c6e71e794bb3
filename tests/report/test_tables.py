"""Qt-free report writers: breakdown CSV / Markdown / HTML / JSON (the comparison: tests/report/test_comparison.py)."""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser

import pytest

from vramdesk.cli_common import estimate_and_speed
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.scenario import Scenario
from vramdesk.report import tables as t


def scenario(**changes: object) -> Scenario:
    data = DEFAULT_SCENARIO.model_dump()
    for k, v in changes.items():
        if k in ("batch", "engine"):
            data["workload"][k] = v
        elif k == "gpu":
            data["hardware"]["gpu"] = v
        else:
            data[k] = v
    return Scenario.model_validate(data)


@pytest.fixture(scope="module")
def base() -> tuple[Scenario, object, object]:
    est, perf = estimate_and_speed(DEFAULT_SCENARIO)
    return DEFAULT_SCENARIO, est, perf


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in ("meta", "img", "br"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (self.stack, tag)
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_breakdown_csv_parses_back(base) -> None:
    _, est, _ = base
    rows = list(csv.DictReader(io.StringIO(t.breakdown_csv(est))))
    peak = [r for r in rows if r["section"] == "peak"]
    assert [r["name"] for r in peak] == [c.name for c in est.components]
    assert sum(int(r["bytes"]) for r in peak) == est.peak_allocated_bytes
    totals = {r["name"]: int(r["bytes"]) for r in rows if r["section"] == "total"}
    assert totals["peak reserved"] == est.peak_reserved_bytes and totals["on the device"] == est.device_bytes
    assert all(r["explain"] for r in peak)
    tsv = t.breakdown_tsv(est).splitlines()
    assert tsv[0].split("\t") == list(t.BREAKDOWN_HEADER[:6]) and len(tsv) == len(rows) + 1


def test_markdown_report_has_every_part(base) -> None:
    s, est, perf = base
    md = t.report_markdown(t.ReportData(est, s, perf, created="2026-01-01 00:00 UTC"), chart_path="chart.png")
    assert md.startswith(f"# vramdesk report: {s.name}")
    for part in ("## Summary", "## Breakdown at the peak", "## Phases", "## Inputs", "## Where the numbers come from"):
        assert part in md
    assert "vramdesk 0." in md and "2026-01-01 00:00 UTC" in md and "![Breakdown at the peak](chart.png)" in md
    assert f"| weights | {est.components[0].bytes / 2**30:.2f} |" in md
    assert "tokens/s" in md  # speed with a catalog GPU
    table = [ln for ln in md.splitlines() if ln.startswith("| hardware.gpu |")]
    assert table == ["| hardware.gpu | RTX 4090 |"]


def test_html_report_is_well_formed(base) -> None:
    s, est, perf = base
    doc = t.report_html(t.ReportData(est, s, perf), chart_src="data:image/png;base64,AAAA")
    p = _Collect()
    p.feed(doc)
    p.close()
    assert not p.stack and p.tags.count("table") >= 4 and "img" in p.tags
    text = "".join(p.text)
    assert est.fit is not None and est.fit.message in text and "CUDA context" in text


def test_report_json_round_trips(base) -> None:
    s, est, perf = base
    doc = json.loads(t.json_text(t.report_json(est, s, perf)))
    assert doc["device_bytes"] == est.device_bytes and doc["report"]["app"] == "vramdesk"
    assert Scenario.model_validate(doc["scenario"]) == s


def test_the_report_says_how_close_each_level_came_to_measurements(base) -> None:
    """With the rows the app ships for this kind of plan, a section lists them; an empty set says the figures are
    modelled, not checked; without the argument the section is left out."""
    from vramdesk.services.accuracy import accuracy_rows

    s, est, perf = base
    rows = accuracy_rows(s.workload.kind, est.engine.engine)
    assert rows  # the default scenario is transformers inference: the held-out Qwen2.5 set
    md = t.report_markdown(t.ReportData(est, s, perf, accuracy=rows))
    level, name, n, median, p90 = rows[0]
    assert "## How close these figures came to measurements" in md
    assert f"| {level} | {name} | {n} | {median:.1f} % | {p90:.1f} % |" in md
    html_text = t.report_html(t.ReportData(est, s, perf, accuracy=rows))
    assert "How close these figures came to measurements" in html_text and name in html_text
    none = t.report_markdown(t.ReportData(est, s, perf, accuracy=()))
    assert "the figures are modelled, not checked" in none
    assert "How close" not in t.report_markdown(t.ReportData(est, s, perf))
    vllm = accuracy_rows("inference", "vllm")
    assert vllm == ()


def test_a_plan_over_machines_names_them_and_groups_equal_gpus() -> None:
    s = Scenario.model_validate(
        {
            "model": {"id": "meta-llama/Llama-3.1-8B"},
            "hardware": {"gpu": "H100 SXM", "gpu_count": 8, "nodes": 4},
            "parallelism": {"zero": 3},
            "workload": {"kind": "finetune", "method": "full"},
        }
    )
    est, perf = estimate_and_speed(s)
    data = t.ReportData(est, s, perf)
    assert " on 4 machines x 8 x H100 SXM: " in data.verdict_line()
    gpu_rows = [name for name, _ in data.summary_rows() if name.startswith("GPU")]
    assert gpu_rows == ["GPU 0-31 on the device, each"]  # one row, not 32
    assert t.runs([5, 5, 7, 5]) == [(0, 1, 5), (2, 2, 7), (3, 3, 5)]
