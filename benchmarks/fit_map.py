"""Fit-map benchmark: how long the fit map of Llama-3.1-8B on an RTX 4090 over input tokens x batch (12 x 8 cells)
takes to compute and to render, and to export as PNG / SVG / CSV.

Prints figures only (machines here are shared and noisy), each also as a ratio to a floor measured in the same
run: one plain estimate of the same plan. Computing is the sweep (:func:`vramdesk.core.sweep.sweep`, one estimate
per cell, run on a worker in the window); rendering is the presenter's colours and texts
(:func:`vramdesk.ui.fit_map_model.build_map`) and one paint of the heat map into an image of the window's size.
The issue's target is the compute and render together under 0.5 s.

    QT_QPA_PLATFORM=offscreen python benchmarks/fit_map.py
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from PySide6.QtCore import QPoint
from PySide6.QtGui import QImage, QPainter

from vramdesk.core.estimate import estimate
from vramdesk.core.scenario import Scenario
from vramdesk.core.sweep import parse_axis, sweep
from vramdesk.report.captions import Caption, source_line, subtitle
from vramdesk.report.sweep_table import sweep_csv
from vramdesk.services.catalog import default_catalog
from vramdesk.ui import qtapp, theme
from vramdesk.ui.figure import Figure, export_figure
from vramdesk.ui.fit_map_model import build_map, units_text
from vramdesk.ui.fit_map_view import HeatMap

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
AXES = ("input_len=512..128kx12", "batch=1..128")
RUNS = 7


def _median(fn: Callable[[], object], runs: int = RUNS) -> float:
    fn()  # warm
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    qtapp.ensure_app()
    cat = default_catalog()
    facts, gpu = cat.facts(MODEL), cat.gpu("RTX 4090")
    plan = Scenario.model_validate({"model": {"id": MODEL}, "hardware": {"gpu": "RTX 4090"}})
    floor = _median(lambda: estimate(plan, facts, gpu), 200)
    axes = [parse_axis(a) for a in AXES]
    result = sweep(plan, facts, gpu, axes)
    cells = len(result.cells)
    heat = HeatMap()
    heat.resize(860, 440)

    def render() -> None:
        heat.set_map(build_map(result, theme.current().background))
        image = QImage(heat.size(), QImage.Format.Format_ARGB32)
        painter = QPainter(image)
        heat.render(painter, QPoint(0, 0))
        painter.end()

    compute = _median(lambda: sweep(plan, facts, gpu, axes))
    drawn = _median(render)
    print(f"fit map: {MODEL} on the RTX 4090, {' x '.join(AXES)} = {cells} cells")
    print(f"  floor, one estimate           {floor * 1e3:8.2f} ms")
    print(f"  compute (the sweep)           {compute * 1e3:8.1f} ms   {compute / floor:6.0f} x floor")
    print(f"  render (colours, texts, paint){drawn * 1e3:8.1f} ms   {drawn / floor:6.0f} x floor")
    total = compute + drawn
    verdict = "met" if total < 0.5 else "MISSED"
    print(f"  compute + render              {total * 1e3:8.1f} ms   (target < 500 ms: {verdict})")
    with tempfile.TemporaryDirectory() as folder:
        for fmt in ("png", "svg"):
            path = Path(folder) / f"map.{fmt}"

            def export(path: Path = path) -> None:
                with theme.printing():
                    body = HeatMap()
                    body.set_map(build_map(result, theme.current().background))
                    fig = Figure(Caption(MODEL, subtitle(plan), source_line()), body, units=units_text())
                export_figure(fig, path)
                fig.deleteLater()

            print(f"  export {fmt.upper()}                    {_median(export, 3) * 1e3:8.1f} ms")
        t_csv = _median(lambda: (Path(folder) / "map.csv").write_text(sweep_csv(result), encoding="utf-8"))
        print(f"  export CSV                    {t_csv * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
