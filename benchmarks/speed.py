"""Speed benchmark: in-process estimates per second over the whole catalog, and the default scenario's latency.

Prints figures only (machines here are shared and noisy): a cold pass (architecture, inventory and weight
pricing built for each model) and warm passes (what the window does when a setting changes).
"""

from __future__ import annotations

import statistics
import sys
import time

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import Catalog


def main() -> int:
    catalog = Catalog()
    models = catalog.models()
    gpu = catalog.gpu("H100 SXM")
    engines = ("transformers", "vllm", "llamacpp")

    t0 = time.perf_counter()
    facts = {m.id: model_facts(catalog.config(m.id), m.id) for m in models}
    t_facts = time.perf_counter() - t0

    def scenarios(input_len: int) -> list[tuple[str, Scenario]]:
        out: list[tuple[str, Scenario]] = []
        for m in models:
            for engine in engines:
                s = DEFAULT_SCENARIO.model_copy(
                    update={
                        "model": DEFAULT_SCENARIO.model.model_copy(update={"id": m.id}),
                        "workload": DEFAULT_SCENARIO.workload.model_copy(
                            update={"engine": engine, "input_len": input_len}
                        ),
                    }
                )
                out.append((m.id, s))
        return out

    cold = scenarios(4096)
    t0 = time.perf_counter()
    for mid, s in cold:
        estimate(s, facts[mid], gpu)
    t_cold = time.perf_counter() - t0

    warm_runs = []
    for input_len in (1024, 8192, 32768):
        batch = scenarios(input_len)
        t0 = time.perf_counter()
        for mid, s in batch:
            estimate(s, facts[mid], gpu)
        warm_runs.append((time.perf_counter() - t0) / len(batch))

    f = catalog.facts(DEFAULT_SCENARIO.model.id)
    g = catalog.gpu(DEFAULT_SCENARIO.hardware.gpu or "RTX 4090")
    estimate(DEFAULT_SCENARIO, f, g)
    lat = []
    for _ in range(300):
        t0 = time.perf_counter()
        estimate(DEFAULT_SCENARIO, f, g)
        lat.append(time.perf_counter() - t0)

    n = len(cold)
    print(f"speed: {len(models)} catalog models x {len(engines)} engines = {n} scenarios")
    print(
        f"  model facts (normalise + inventory), all models: {t_facts * 1000:.1f} ms "
        f"({t_facts / len(models) * 1000:.2f} ms per model)"
    )
    print(
        f"  cold estimates (first pricing of each format):   {n / t_cold:,.0f} per second "
        f"({t_cold / n * 1000:.3f} ms each)"
    )
    print(
        f"  warm estimates (settings changed):               {1 / statistics.median(warm_runs):,.0f} per second "
        f"({statistics.median(warm_runs) * 1000:.3f} ms each)"
    )
    print(
        f"  default scenario latency: median {statistics.median(lat) * 1e6:.0f} us, "
        f"p90 {sorted(lat)[int(0.9 * len(lat))] * 1e6:.0f} us"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
