"""Fit-badge benchmark: how long the model browser takes to badge the whole bundled catalog for one plan.

Prints figures only (machines here are shared and noisy), each also as a ratio to a floor measured in the same
run: one plain estimate of the default scenario (what the window runs on every change). A badge is one estimate
(the verdict at the plan's workload) and the solver's search for the longest input or sequence that fits
(:func:`vramdesk.core.solve.maximize`, a few dozen estimates for a model that fits, one for a model that does not).
The browser runs this on a worker, :data:`~vramdesk.ui.fit_badges.CHUNK` models at a time, so the window stays
responsive; a badge once computed is kept per plan, and sorting or showing the list again reads the cache.
"""

from __future__ import annotations

import itertools
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import Catalog
from vramdesk.ui.fit_badges import CHUNK, Badge, BadgeCache, FitPlan, OfflineFacts, badge_chunk, sort_key


def _floor(catalog: Catalog) -> float:
    """Seconds of one plain estimate of the default scenario (median of 200, warm)."""
    facts = catalog.facts(DEFAULT_SCENARIO.model.id)
    gpu = catalog.gpu(DEFAULT_SCENARIO.hardware.gpu or "RTX 4090")
    estimate(DEFAULT_SCENARIO, facts, gpu)
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        estimate(DEFAULT_SCENARIO, facts, gpu)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _plans(catalog: Catalog) -> list[tuple[str, FitPlan]]:
    finetune = DEFAULT_SCENARIO.model_dump(mode="json")
    finetune["workload"] = {"kind": "finetune", "method": "lora", "seq_len": 2048}
    on_h100 = DEFAULT_SCENARIO.model_dump(mode="json")
    on_h100["hardware"]["gpu"] = "H100 SXM"
    no_gpu = DEFAULT_SCENARIO.model_dump(mode="json")
    no_gpu["hardware"]["gpu"] = None
    return [
        ("inference, RTX 4090", FitPlan(DEFAULT_SCENARIO, catalog.gpu("RTX 4090"))),
        ("inference, H100 SXM", FitPlan(Scenario.model_validate(on_h100), catalog.gpu("H100 SXM"))),
        ("LoRA 2k, RTX 4090", FitPlan(Scenario.model_validate(finetune), catalog.gpu("RTX 4090"))),
        ("inference, no GPU", FitPlan(Scenario.model_validate(no_gpu), None)),
    ]


def _estimates(badges: list[Badge]) -> int:
    """Estimates the badges ran: the verdict's, and the solver's probes."""
    return sum(1 + (b.solved.evaluations if b.solved is not None else 0) for b in badges if b.state != "unknown")


def _window_while_badging() -> tuple[int, float, list[float]]:
    """The real window (offscreen): the GPU changes in the form, and while the browser badges its list again (after
    the window's own re-estimate and the debounce) the longest gap between ticks of a 5 ms timer is what a user
    would feel as a freeze. Returns (listed models, seconds from the change until every badge is in, the gaps in
    seconds, sorted)."""
    from PySide6.QtCore import QTimer

    from vramdesk.services.nvml import DetectionResult
    from vramdesk.ui import qtapp
    from vramdesk.ui.main_window import MainWindow

    app = qtapp.ensure_app()
    w = MainWindow(detect=lambda: DetectionResult(reason="benchmark"), hub_search=None)
    w.show()

    def wait(done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 60
        while not done() and time.monotonic() < deadline:
            app.processEvents()
            time.sleep(0.001)

    def applied(gpu: str) -> bool:
        plan = w.browser.plan
        return plan is not None and plan.gpu is not None and plan.gpu.name == gpu

    wait(lambda: applied("RTX 4090") and not w.browser.badging)
    t0 = time.perf_counter()
    w.gpu_combo.setCurrentIndex(w.gpu_combo.findData("H100 SXM"))
    # the window's own re-estimate and repaint come first; the badges follow after the debounce: time those
    wait(lambda: applied("H100 SXM"))
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    wait(lambda: not w.browser.badging)
    seconds = time.perf_counter() - t0
    timer.stop()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    listed = w.browser.model.rowCount()
    w.close()
    w.deleteLater()
    app.processEvents()
    return listed, seconds, sorted(gaps) or [0.0]


def main() -> int:
    catalog = Catalog()  # a fresh catalog: the first plan also builds every model's facts
    models = [(m.id, ("catalog",)) for m in catalog.models()]
    facts_for = OfflineFacts(catalog)
    floor = _floor(catalog)
    print(f"browser badges: {len(models)} catalog models; floor = one plain estimate, {floor * 1e6:.0f} us")
    cancel = threading.Event()
    for i, (title, plan) in enumerate(_plans(catalog)):
        t0 = time.perf_counter()
        badges: list[Badge] = []
        for start in range(0, len(models), CHUNK):  # as the browser's worker runs them
            badges += badge_chunk(plan, models[start : start + CHUNK], facts_for, cancel)
        seconds = time.perf_counter() - t0
        n = _estimates(badges)
        states = {s: sum(b.state == s for b in badges) for s in ("fits", "tight", "does not fit", "no gpu", "unknown")}
        said = ", ".join(f"{k} {v}" for k, v in states.items() if v)
        cold = " (facts built too)" if i == 0 else ""
        print(
            f"  {title:20s} {len(badges)} models, {n:,} estimates in {seconds:.2f} s{cold}: "
            f"{len(badges) / seconds:,.0f} models/s, {seconds / len(badges) / floor:,.0f} x floor per model; {said}"
        )
    # the cache: what sorting and showing the list again cost once the badges are in
    cache = BadgeCache()
    key = _plans(catalog)[0][1].key
    cache.plan(key)
    cache.put(key, badges)
    ids = [m for m, _ in models]
    t0 = time.perf_counter()
    for _ in range(100):
        have = cache.plan(key)
        sorted(ids, key=lambda m: sort_key(have.get(m)))
    per_sort = (time.perf_counter() - t0) / 100
    print(f"  re-sort from the cache: {per_sort * 1e6:.0f} us ({per_sort / floor:.1f} x floor)")
    listed, seconds, gaps = _window_while_badging()
    median, p90, most = (gaps[int(q * (len(gaps) - 1))] * 1000 for q in (0.5, 0.9, 1.0))
    print(
        f"  window, GPU changed: {listed} listed models badged again in {seconds:.2f} s (debounce included); "
        f"event-loop gaps of a 5 ms timer meanwhile: median {median:.0f} ms, p90 {p90:.0f} ms, longest {most:.0f} ms "
        f"({most / 1000 / floor:.0f} x floor)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
