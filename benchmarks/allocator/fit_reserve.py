"""Fit and check the training reserve rule against simulated allocator runs.

Every fixed-length trace in ``benchmarks/data/traces`` (``g-*``) is replayed through ``caching_allocator.py``;
the gap between the simulated ``max_memory_reserved`` and ``max_memory_allocated`` is regressed on two figures
the estimator already has for the same settings: the loss head's bytes at the start of backward and one layer's
activations (the recomputed layer with checkpointing, an average layer without). Prints the least-squares
coefficients for adapter (LoRA / QLoRA) and full fine-tuning, the leave-one-out error of the reserved peak they
give, and the same error for the coefficients the estimator ships (``vramdesk.core.constants``).

The same for ``expandable_segments:True`` replays, where one coefficient on the loss head is enough, and the
varying-length rule against the replayed runs of ``benchmarks/data/allocator_varying.yaml``.

Run: ``python benchmarks/allocator/fit_reserve.py`` (no torch needed; about a minute).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import replay_report  # noqa: E402  (a sibling script, not a package)

from vramdesk.core import constants as K  # noqa: E402
from vramdesk.core.estimate import estimate  # noqa: E402
from vramdesk.core.facts import model_facts  # noqa: E402
from vramdesk.core.gpu import GIB  # noqa: E402
from vramdesk.core.scenario import Scenario  # noqa: E402
from vramdesk.services.catalog import default_catalog  # noqa: E402


@dataclass(frozen=True)
class Case:
    name: str
    full: bool
    loss_head: int
    layer: int
    sim_allocated: int
    sim_reserved: int
    est_allocated: int
    est_reserved: int
    #: the same replay with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and the estimate with that setting
    sim_reserved_expandable: int = 0
    est_reserved_expandable: int = 0


def cases() -> list[Case]:
    sim = replay_report.load_simulator()
    gpu = default_catalog().gpu("A100 80GB SXM")
    out: list[Case] = []
    seen: set[tuple[object, ...]] = set()
    for path in sorted((HERE.parent / "data" / "traces").glob("g-*.jsonl.gz")):
        header, events = sim.read_trace(path)
        st = header["settings"]
        tokens = int(st["batch"]) * max(st["lengths"])
        key = (st["config"], st["method"], st["lora_targets"], tokens, st["checkpointing"] != "none")
        if key in seen:  # the same program (e.g. reentrant and non-reentrant checkpointing) counts once
            continue
        seen.add(key)
        result = sim.replay(events)
        expandable = sim.replay(events, expandable_segments=True)
        scenario, config = replay_report.scenario_for(header, gpu.name)
        facts = model_facts(config, scenario.model.id)
        est = estimate(scenario, facts, gpu)
        work = scenario.workload.model_copy(update={"expandable_segments": True})
        est_exp = estimate(scenario.model_copy(update={"workload": work}), facts, gpu)
        phases = {p.name: p for p in est.phases}

        def part(phase: str, category: str, phases: dict = phases) -> int:  # type: ignore[type-arg]
            p = phases.get(phase)
            return sum(c.bytes for c in p.components if c.category == category) if p else 0

        resident = part("loss + start of backward", "activations")
        if "backward (recompute)" in phases:
            layer = part("backward (recompute)", "activations") - resident
        else:
            layer = resident // facts.arch.n_layers
        out.append(
            Case(
                path.name.removesuffix(".jsonl.gz"),
                st["method"] == "full",
                part("loss + start of backward", "logits"),
                layer,
                result.peak_allocated,
                result.peak_reserved,
                est.peak_allocated_bytes,
                est.peak_reserved_bytes,
                expandable.peak_reserved,
                est_exp.peak_reserved_bytes,
            )
        )
    return out


def varying() -> None:
    """Unpacked batches of varying length (benchmarks/data/allocator_varying.yaml, replayed 48-step runs): the
    cache each run's replay keeps, as a multiple k of the loss head at its longest batch, against max/mean, and the
    estimate with the run's mean length given (K.TRAIN_RESERVE_VARYING: k = a x max/mean - b)."""
    runs = yaml.safe_load((HERE.parent / "data" / "allocator_varying.yaml").read_text(encoding="utf-8"))["runs"]
    gpu = default_catalog().gpu("A100 80GB SXM")
    scale, offset = K.TRAIN_RESERVE_VARYING
    print(f"\nvarying lengths: cache = k x loss head, shipped k = {scale} x max/mean - {offset} (adapters)")
    errors = []
    for name, r in runs.items():
        config = json.loads((HERE.parent.parent / r["config"]).read_text(encoding="utf-8"))
        work: dict[str, object] = {
            "kind": "finetune",
            "method": r["method"],
            "seq_len": r["max_length"],
            "grad_accum": 16,
        }
        if r["method"] == "lora":
            work.update(lora_rank=8, lora_dropout=0.05, lora_targets=r["lora_targets"].split(","))
        plain = Scenario.model_validate({"model": {"id": name}, "workload": work, "hardware": {"gpu": gpu.name}})
        facts = model_facts(config, name)
        fixed = estimate(plain, facts, gpu)
        head = sum(
            c.bytes
            for p in fixed.phases
            if p.name == "loss + start of backward"
            for c in p.components
            if c.category == "logits"
        )
        var = Scenario.model_validate(
            {
                "model": {"id": name},
                "workload": {**work, "mean_seq_len": r["mean_length"]},
                "hardware": {"gpu": gpu.name},
            }
        )
        est = estimate(var, facts, gpu)
        k = (r["reserved"] - r["allocated"]) * GIB / head
        err = 100 * (est.peak_reserved_bytes / (r["reserved"] * GIB) - 1)
        if r["method"] == "lora":
            errors.append(err)
        print(
            f"  {name:24} {r['method']:5} max/mean {r['max_length'] / r['mean_length']:4.2f}  k {k:4.2f}  "
            f"reserved {r['reserved']:6.2f} est {est.peak_reserved_bytes / GIB:6.2f} ({err:+.1f} %)  "
            f"need {r['need']:6.2f} (allocated {r['allocated']:6.2f})"
        )
    a = np.abs(errors)
    print(f"  LoRA runs: reserved peak |error| median {np.median(a):.1f} %, max {a.max():.1f} %")


def _features(c: Case) -> list[float]:
    lh, ly = c.loss_head / GIB, c.layer / GIB
    return [lh, ly, lh * c.full, ly * c.full]


def main() -> int:
    data = cases()
    x = np.array([_features(c) for c in data])
    y = np.array([(c.sim_reserved - c.sim_allocated) / GIB for c in data])
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    print(f"{len(data)} simulated training steps")
    print(f"least squares: adapters {coef[0]:.3f} x loss head + {coef[1]:.3f} x layer; ", end="")
    print(f"full {coef[0] + coef[2]:.3f} x loss head + {coef[1] + coef[3]:.3f} x layer")
    loo = []
    for i, c in enumerate(data):
        keep = np.arange(len(data)) != i
        ci = np.linalg.lstsq(x[keep], y[keep], rcond=None)[0]
        loo.append(100 * ((c.est_allocated / GIB + x[i] @ ci) / (c.sim_reserved / GIB) - 1))
    shipped = [100 * (c.est_reserved / c.sim_reserved - 1) for c in data]
    for label, errs in (("leave-one-out fit", loo), ("shipped constants", shipped)):
        a = np.abs(errs)
        print(
            f"{label:18} reserved peak |error| median {np.median(a):.1f} %, p90 {np.percentile(a, 90):.1f} %, "
            f"signed {min(errs):+.1f} .. {max(errs):+.1f} %"
        )
    print(f"shipped: adapters {K.TRAIN_RESERVE_LOSS_HEAD['adapters']} / {K.TRAIN_RESERVE_LAYER['adapters']}, ", end="")
    print(f"full {K.TRAIN_RESERVE_LOSS_HEAD['full']} / {K.TRAIN_RESERVE_LAYER['full']}")
    # expandable segments: the cache left is mostly the loss head's (one coefficient, both regimes)
    lh = np.array([c.loss_head / GIB for c in data])
    ye = np.array([(c.sim_reserved_expandable - c.sim_allocated) / GIB for c in data])
    coef_exp = float(lh @ ye / (lh @ lh))
    exp_err = [100 * (c.est_reserved_expandable / c.sim_reserved_expandable - 1) for c in data]
    e = np.abs(exp_err)
    print(
        f"expandable segments: least squares {coef_exp:.3f} x loss head "
        f"(shipped {K.TRAIN_RESERVE_EXPANDABLE_LOSS_HEAD}); "
        f"reserved peak |error| median {np.median(e):.1f} %, p90 {np.percentile(e, 90):.1f} %, "
        f"signed {min(exp_err):+.1f} .. {max(exp_err):+.1f} %"
    )
    varying()
    print(f"\n{'trace':36} {'sim A':>7} {'est A':>7} {'sim R':>7} {'est R':>7} {'sim Rx':>7} {'est Rx':>7}  GiB")
    for c in data:
        print(
            f"{c.name:36} {c.sim_allocated / GIB:7.2f} {c.est_allocated / GIB:7.2f} "
            f"{c.sim_reserved / GIB:7.2f} {c.est_reserved / GIB:7.2f} "
            f"{c.sim_reserved_expandable / GIB:7.2f} {c.est_reserved_expandable / GIB:7.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
