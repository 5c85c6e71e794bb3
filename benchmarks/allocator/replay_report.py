"""Replay recorded training-step allocation traces through the caching-allocator model and compare.

For every trace in ``benchmarks/data/traces`` (written by ``trace_hf.py``) this prints, in GiB:

* the trace's own allocated peak (what ``torch.cuda.max_memory_allocated`` would show, less kernel workspaces),
* the simulated ``max_memory_reserved`` with no capacity limit and on the row's GPU (the allocator frees its
  cache and retries before it reports out of memory, so a full card reserves less; nvidia-smi adds the context),
* the smallest capacity the allocator needs to get through the trace without running out of memory,
* vramdesk's own allocated and reserved estimate for the same settings,
* the published figure the trace stands for (``benchmarks/data/allocator_measured.yaml``), where there is one.

Run: ``python benchmarks/allocator/replay_report.py [--only NAME]`` (no torch needed).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.gpu import GIB, MIB, GpuSpec
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog
from vramdesk.services.nvml import catalog_name

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
TRACES = DATA / "traces"
#: CUDA context outside the caching allocator (vramdesk.core.constants.CUDA_CONTEXT_TORCH)
CONTEXT = 500 * MIB


def load_simulator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("caching_allocator", HERE / "caching_allocator.py")
    if spec is None or spec.loader is None:
        raise ImportError("benchmarks/allocator/caching_allocator.py not found")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["caching_allocator"] = mod
    spec.loader.exec_module(mod)
    return mod


def scenario_for(header: dict[str, Any], gpu: str, expandable: bool = False) -> tuple[Scenario, dict[str, Any]]:
    """vramdesk's scenario for the settings a trace was recorded with (the longest sequence of the trace), with
    the caching allocator's expandable segments on or off."""
    st = header["settings"]
    config_path = Path(st["config"])
    if not config_path.is_absolute():
        config_path = HERE.parent.parent / config_path
    config = json.loads(config_path.read_text(encoding="utf-8"))
    lengths = [int(x) for x in str(st["lengths"]).split(",")] if isinstance(st["lengths"], str) else st["lengths"]
    targets_raw = str(st.get("lora_targets") or "all-linear")
    # module names as peft matches them (q_proj, ...): vramdesk's LoRA targets accept them as they are
    targets = targets_raw.split(",")
    method = st["method"]
    work: dict[str, Any] = {
        "kind": "finetune",
        "method": method,
        "micro_batch": int(st["batch"]),
        "seq_len": max(lengths),
        "grad_accum": int(st.get("grad_accum") or 1),
        "optimizer": {
            "adamw-foreach": "adamw",
            "adamw-fused": "adamw-fused",
            "sgd": "sgd",
            "adafactor": "adafactor",
        }.get(st["optimizer"], "adamw-forloop"),
        "precision": st["precision"] if st["precision"] in ("amp-bf16", "fp16") else "bf16",
        "grad_checkpointing": st["checkpointing"] != "none",
        "attention": "flash" if st.get("attention") == "sdpa" else "eager",
        "expandable_segments": expandable,
    }
    if len(set(lengths)) > 1:
        # unpacked batches of varying length: the estimator's reserve rule for them needs the mean
        work["mean_seq_len"] = round(statistics.fmean(lengths))
    if method != "full":
        work.update(
            lora_rank=int(st["lora_rank"]),
            lora_targets=targets,
            lora_dropout=float(st.get("lora_dropout") or 0.0),
            adapter_dtype="fp32",
            dora=bool(st.get("dora")),
            modules_to_save=[m for m in str(st.get("modules_to_save") or "").split(",") if m],
        )
    name = config.get("_name_or_path") or config_path.stem
    scenario = Scenario.model_validate(
        {
            "model": {"id": name},
            "weights": f"gptq-int4-g{st['gptq_int4']}" if st.get("gptq_int4") else "auto",
            "workload": work,
            "hardware": {"gpu": gpu},
        }
    )
    return scenario, config


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="replay only traces whose name contains this text")
    ap.add_argument("--phases", action="store_true", help="also print each phase's simulated peaks")
    ap.add_argument(
        "--device",
        metavar="FILE",
        help="results of benchmarks/device/measure_steps.py: compare them with the replays instead",
    )
    args = ap.parse_args(argv)
    sim = load_simulator()
    if args.device:
        return compare_device(sim, Path(args.device))
    measured: dict[str, dict[str, Any]] = yaml.safe_load((DATA / "allocator_measured.yaml").read_text("utf-8"))
    catalog = default_catalog()
    gpu = catalog.gpu("A100 80GB SXM")
    files = sorted(TRACES.glob("*.jsonl.gz"))
    if args.only:
        files = [f for f in files if args.only in f.name]
    if not files:
        print(f"no traces in {TRACES}")
        return 1
    head = (
        f"{'trace':34} {'alloc':>6} {'res':>6} {'res@gpu':>7} {'need':>6} | {'est A':>6} {'est R':>6} | "
        "published (sim vs it)"
    )
    print(head)
    print("-" * len(head))
    errors: dict[str, list[float]] = {"allocated": [], "device": [], "reserved": []}
    for path in files:
        name = path.name.removesuffix(".jsonl.gz")
        header, events = sim.read_trace(path)
        free_run = sim.replay(events)
        m = measured.get(name, {})
        capacity = int(float(m.get("gpu_capacity_gib", 80.0)) * GIB)
        # the CUDA context sits outside the allocator; nvidia-smi counts it
        capped = sim.replay(events, capacity=capacity, context_bytes=CONTEXT)
        need = sim.min_capacity(events)
        scenario, config = scenario_for(header, gpu.name)
        est = estimate(scenario, model_facts(config, scenario.model.id), gpu)
        simulated = {
            "allocated": free_run.peak_allocated,
            "reserved": capped.peak_reserved,
            "device": capped.peak_reserved + CONTEXT,
        }
        pub = []
        for level in ("allocated", "reserved", "device"):
            if f"{level}_gib" in m:
                err = simulated[level] / (float(m[f"{level}_gib"]) * GIB) - 1
                errors[level].append(err)
                pub.append(f"{level} {m[f'{level}_gib']} ({100 * err:+.1f} %)")
        res_gpu = "OOM" if capped.oom else f"{capped.peak_reserved / GIB:7.2f}"
        print(
            f"{name:34} {free_run.peak_allocated / GIB:6.2f} {free_run.peak_reserved / GIB:6.2f} {res_gpu:>7} "
            f"{need / GIB:6.2f} | {est.peak_allocated_bytes / GIB:6.2f} {est.peak_reserved_bytes / GIB:6.2f} | "
            f"{', '.join(pub) or '-'}"
        )
        for phase, (pa, pr) in free_run.phases.items() if args.phases else ():
            if pr > 0:
                print(f"    {phase:28} allocated {pa / GIB:7.2f}  reserved {pr / GIB:7.2f}")
    print("\nsimulated against published, |error| median (n):")
    for level, errs in errors.items():
        if errs:
            print(f"  {level:10} {100 * statistics.median(abs(e) for e in errs):5.1f} %  ({len(errs)})")
    return 0


def read_device_runs(path: Path) -> list[dict[str, Any]]:
    """The lines measure_steps.py wrote (failed runs included: they carry "error")."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def device_scenario(res: dict[str, Any]) -> tuple[Scenario, dict[str, Any], GpuSpec]:
    """vramdesk's scenario and GPU for one measured run: the trace's settings on the GPU NVML named."""
    catalog = default_catalog()
    with gzip.open(TRACES / f"{res['trace']}.jsonl.gz", "rt", encoding="utf-8") as fh:
        header = json.loads(fh.readline())
    gpu = catalog.gpu(catalog_name(str(res["device"]), catalog) or str(res["device"]))
    scenario, config = scenario_for(header, gpu.name, "expandable" in str(res.get("alloc_conf", "")))
    return scenario, config, gpu


def compare_device(sim: Any, path: Path) -> int:
    """The replay of each trace and vramdesk's estimate next to the same steps run on a GPU (measure_steps.py):
    max_memory_allocated and max_memory_reserved (the replay uncapped), and the CUDA context NVML shows beside
    the allocator's reserve (nvidia-smi's per-process figure minus max_memory_reserved)."""
    head = (
        f"{'trace':40} {'gpu A':>6} {'sim':>6} {'est':>6} | {'gpu R':>6} {'sim':>6} {'est':>6} | "
        f"{'NVML':>6} {'est':>6} {'ctx MiB':>7}"
    )
    print(head + "\n" + "-" * len(head))
    errors: dict[str, list[float]] = {}
    for res in read_device_runs(path):
        name = str(res["trace"])
        if "error" in res:
            print(f"{name:40} {res['error'][:70]}")
            continue
        _, events = sim.read_trace(TRACES / f"{name}.jsonl.gz")
        expandable = "expandable" in str(res.get("alloc_conf", ""))
        replay = sim.replay(events, expandable_segments=expandable)
        scenario, config, gpu = device_scenario(res)
        est = estimate(scenario, model_facts(config, scenario.model.id), gpu)
        gpu_a, gpu_r, nvml = res["peak_allocated"], res["peak_reserved"], res["nvml_used_max"]
        pairs = {
            "simulated allocated": (replay.peak_allocated, gpu_a),
            "simulated reserved": (replay.peak_reserved, gpu_r),
            "estimated allocated": (est.peak_allocated_bytes, gpu_a),
            "estimated reserved": (est.peak_reserved_bytes, gpu_r),
            "estimated nvidia-smi": (est.device_bytes, nvml),
        }
        for key, (mine, theirs) in pairs.items():
            errors.setdefault(key, []).append(mine / theirs - 1)
        label = name + (" (exp.)" if expandable else "")
        print(
            f"{label[:40]:40} {gpu_a / GIB:6.2f} {_pct_s(replay.peak_allocated, gpu_a)} "
            f"{_pct_s(est.peak_allocated_bytes, gpu_a)} | {gpu_r / GIB:6.2f} {_pct_s(replay.peak_reserved, gpu_r)} "
            f"{_pct_s(est.peak_reserved_bytes, gpu_r)} | {nvml / GIB:6.2f} {_pct_s(est.device_bytes, nvml)} "
            f"{(nvml - gpu_r) / MIB:7.0f}"
        )
    print("\n|error| median and max (n):")
    for key, errs in errors.items():
        if errs:
            print(
                f"  {key:22} {100 * statistics.median(abs(e) for e in errs):5.1f} % "
                f"{100 * max(abs(e) for e in errs):5.1f} %  ({len(errs)})"
            )
    return 0


def _pct_s(mine: float, theirs: float) -> str:
    return f"{100 * (mine / theirs - 1):+5.1f}%"


if __name__ == "__main__":
    sys.exit(main())
