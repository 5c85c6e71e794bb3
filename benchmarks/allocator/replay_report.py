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
import importlib.util
import json
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from vramdesk.core.estimate import estimate, model_facts
from vramdesk.core.gpu import GIB, MIB
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

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


def scenario_for(header: dict[str, Any], gpu: str) -> tuple[Scenario, dict[str, Any]]:
    """vramdesk's scenario for the settings a trace was recorded with (the longest sequence of the trace)."""
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
    }
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


def compare_device(sim: Any, path: Path) -> int:
    """The replay of each trace next to the same steps run on a GPU (measure_steps.py): max_memory_allocated,
    max_memory_reserved (the replay with that GPU's capacity unknown: uncapped) and NVML's figure for the process
    against reserved + the CUDA context this report assumes."""
    head = f"{'trace':40} {'sim A':>7} {'gpu A':>7} {'err':>6} | {'sim R':>7} {'gpu R':>7} {'err':>6} | {'gpu NVML':>8}"
    print(head)
    print("-" * len(head))
    errors: dict[str, list[float]] = {"allocated": [], "reserved": []}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        res = json.loads(line)
        name = str(res["trace"])
        if "error" in res:
            print(f"{name:40} {res['error'][:70]}")
            continue
        _, events = sim.read_trace(TRACES / f"{name}.jsonl.gz")
        replay = sim.replay(events, expandable_segments="expandable" in str(res.get("alloc_conf", "")))
        ea = replay.peak_allocated / res["peak_allocated"] - 1
        er = replay.peak_reserved / res["peak_reserved"] - 1
        errors["allocated"].append(ea)
        errors["reserved"].append(er)
        print(
            f"{name:40} {replay.peak_allocated / GIB:7.2f} {res['peak_allocated'] / GIB:7.2f} {100 * ea:+5.1f}% | "
            f"{replay.peak_reserved / GIB:7.2f} {res['peak_reserved'] / GIB:7.2f} {100 * er:+5.1f}% | "
            f"{res['nvml_used_max'] / GIB:8.2f}"
        )
    for level, errs in errors.items():
        if errs:
            print(f"  {level:10} |error| median {100 * statistics.median(abs(e) for e in errs):5.1f} %  ({len(errs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
