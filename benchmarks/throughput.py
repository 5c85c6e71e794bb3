"""Throughput benchmark (issue 23): the warm in-process estimate of the default plan, and ``vramdesk estimate
--jsonl`` over 10,000 scenarios of the whole catalog including process start, each beside its floor measured in
the same run.

Prints figures only (machines here are shared and noisy; the ratios are the figures to watch):

* **warm estimate**: ``estimate()`` of the default plan again and again (the window's case: a setting changed,
  the model's facts known). Floor: validating the same scenario object (``Scenario.model_validate``) — the
  least any estimate of a scenario costs. Targets: <= 50 us.
* **--jsonl**: a child process runs ``vramdesk estimate --jsonl`` over 10,000 lines (every catalog model, the
  three engines, four GPUs, several lengths and batch sizes) and writes the results to a file: as it runs by
  default (worker processes, one per core) and with ``--jobs 1`` (one process; the two outputs must be the same
  bytes). Floor: a child process that starts the same way and only parses and validates each line into its
  scenario. Target: >= 5,000 lines per second.

    python benchmarks/throughput.py [--lines N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENGINES = ("transformers", "vllm", "llamacpp")
GPUS = ("RTX 4090", "H100 SXM", "A100 80GB SXM", "L40S")
INPUTS = (1024, 4096, 8192, 32768)
BATCHES = (1, 2, 4, 8)


def scenario_lines(n: int) -> list[str]:
    """``n`` --jsonl lines cycling through every catalog model with varied engines, GPUs and sizes (fixed)."""
    from vramdesk.services.catalog import Catalog

    models = [m.id for m in Catalog().models()]
    out = []
    for i in range(n):
        line = {
            "model": models[i % len(models)],
            "engine": ENGINES[(i // len(models)) % len(ENGINES)],
            "gpu": GPUS[(i // 7) % len(GPUS)],
            "input_len": INPUTS[(i // 3) % len(INPUTS)],
            "batch": BATCHES[(i // 5) % len(BATCHES)],
        }
        out.append(json.dumps(line))
    return out


def _validate_only(path: str) -> int:
    """Child mode: the floor: parse each line and validate it into its scenario (what every line costs before
    it is estimated), through the command line's own reading of a line."""
    from vramdesk.cli import scenario_from

    n = 0
    with open(path, "rb") as fh:
        for raw in fh:
            obj = json.loads(raw)
            scenario_from(obj.pop("model"), obj)
            n += 1
    return 0 if n else 1


def _child(args: list[str], out: Path) -> float:
    env = {**os.environ, "VRAMDESK_NO_DETECT": "1", "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    with out.open("wb") as fh:
        subprocess.run([sys.executable, *args], stdout=fh, env=env, check=False)
    return time.perf_counter() - t0


def _best(fn: object, repeat: int, number: int) -> float:
    """Median over ``repeat`` runs of the mean of ``number`` calls (seconds)."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()  # type: ignore[operator]
        runs.append((time.perf_counter() - t0) / number)
    return statistics.median(runs)


def warm_figures() -> tuple[float, float]:
    """(warm estimate of the default plan, validating its scenario), seconds each."""
    from vramdesk.core.defaults import DEFAULT_SCENARIO
    from vramdesk.core.estimate import estimate
    from vramdesk.core.scenario import Scenario
    from vramdesk.services.catalog import Catalog

    catalog = Catalog()
    facts = catalog.facts(DEFAULT_SCENARIO.model.id)
    gpu = catalog.gpu(DEFAULT_SCENARIO.hardware.gpu or "RTX 4090")
    data = DEFAULT_SCENARIO.model_dump(mode="json")
    estimate(DEFAULT_SCENARIO, facts, gpu)
    warm = _best(lambda: estimate(DEFAULT_SCENARIO, facts, gpu), 15, 400)
    floor = _best(lambda: Scenario.model_validate(data), 15, 400)
    return warm, floor


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=10_000, help="--jsonl lines [10000]")
    ap.add_argument("--validate-only", metavar="FILE", help=argparse.SUPPRESS)
    ns = ap.parse_args(argv)
    if ns.validate_only:
        return _validate_only(ns.validate_only)

    warm, floor = warm_figures()
    print("throughput (issue 23 targets: warm estimate <= 50 us; --jsonl >= 5,000 lines/s)")
    print(
        f"  warm estimate, default plan:        {warm * 1e6:7.1f} us   "
        f"(floor, validating its scenario: {floor * 1e6:.1f} us; ratio {warm / floor:.1f}x)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "scenarios.jsonl"
        src.write_text("\n".join(scenario_lines(ns.lines)) + "\n", encoding="utf-8")
        results = Path(tmp) / "results.jsonl"
        t_one = _child(["-m", "vramdesk", "estimate", "--jsonl", str(src), "--jobs", "1"], Path(tmp) / "one.jsonl")
        t_est = _child(["-m", "vramdesk", "estimate", "--jsonl", str(src)], results)
        same = (Path(tmp) / "one.jsonl").read_bytes() == results.read_bytes()
        t_floor = _child([__file__, "--validate-only", str(src)], Path(tmp) / "floor.out")
        t_start = _child(["-m", "vramdesk", "estimate", "--jsonl", os.devnull], Path(tmp) / "start.out")
        lines = results.read_text(encoding="utf-8").splitlines()
        errors = sum(1 for line in lines if line.startswith('{"error"'))
        size = results.stat().st_size
    n = ns.lines
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(
        f"  --jsonl, {n:,} lines incl. start:   {n / t_est:7,.0f} lines/s   "
        f"({t_est:.2f} s over {cores} core(s); process start {t_start:.2f} s; {size / n / 1024:.1f} KiB of JSON "
        f"per line; {errors} error lines)"
    )
    print(f"  --jsonl --jobs 1 (one process):     {n / t_one:7,.0f} lines/s   ({t_one:.2f} s)")
    print(
        f"  floor, parse + validate each line:  {n / t_floor:7,.0f} lines/s   "
        f"({t_floor:.2f} s, one process; ratio to --jobs 1: {t_one / t_floor:.1f}x)"
    )
    if len(lines) != n or not same:
        print(f"  FAILED: {len(lines)} result lines for {n} input lines; one process and several agree: {same}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
