#!/usr/bin/env python3
"""Run the training steps of committed allocation traces on a real GPU and record what the allocator did.

Why
    ``benchmarks/allocator`` predicts ``max_memory_allocated`` and ``max_memory_reserved`` by replaying
    traces recorded on the CPU (FakeTensorMode) through a model of PyTorch's caching allocator. This script
    runs the same steps (the trace header's settings: config, lengths, batch, LoRA, checkpointing, optimizer)
    with real CUDA tensors and writes, per step phase, the allocator's own peaks and what NVML shows for the
    process, so ``replay_report.py --device FILE`` can put simulation and GPU side by side.

How to run (a machine with a GPU, torch, transformers and peft; each trace in a fresh process, so the caching
allocator starts empty and PYTORCH_CUDA_ALLOC_CONF applies)
    python3 benchmarks/device/measure_steps.py --out results.jsonl g-mistral-lora-b4-s4096 g-qwen15-full-b2-s4096
    python3 benchmarks/device/measure_steps.py --out results.jsonl --expandable g-mistral-lora-b4-s4096
    python3 benchmarks/device/measure_steps.py --out results.jsonl --unmeasured --budget 300  # not measured yet

    Smoke test without a GPU (a tiny config, CPU tensors, no allocator figures):
    python3 benchmarks/device/measure_steps.py --out smoke.jsonl --device cpu \\
        --config benchmarks/device/tiny-llama.json g-mistral-lora-b1-s2048

Output: one JSON object per trace: {"trace", "settings", "versions", "device", "phases": {name: {"allocated",
"reserved", "nvml_used"}}, "peak_allocated", "peak_reserved", "nvml_used_max", "wall_s"} (bytes), or {"trace",
"error"} when the run failed (an out-of-memory error is a result too).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "benchmarks" / "data" / "traces"


MEASURED = ROOT / "benchmarks" / "data" / "device"
#: the GPU memory a trace may roughly need before this script skips it (a model that cannot be built there would
#: only spend the session's time reaching an out-of-memory error)
MAX_GIB = 120.0


def rough_need_gib(name: str) -> float:
    """A coarse upper bound from the header: 16 B per parameter for a full fine-tune (bf16 weights and gradients,
    AdamW's fp32-sized states), 2.5 B for adapters (bf16 base plus activations)."""
    with gzip.open(TRACES / f"{name}.jsonl.gz", "rt", encoding="utf-8") as fh:
        header: dict[str, Any] = json.loads(fh.readline())
    per_param = 16.0 if header["settings"]["method"] == "full" else 2.5
    return float(header["params"]) * per_param / 2**30


def unmeasured(expandable: bool) -> list[str]:
    """Committed traces with no result yet in benchmarks/data/device/ for this allocator setting, that this script
    can set up and that roughly fit: fixed-length steps first (short), then catalog models, then 48-step runs."""
    done: set[str] = set()
    for path in MEASURED.glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                res = json.loads(line)
                if ("expandable" in str(res.get("alloc_conf", ""))) == expandable and "error" not in res:
                    done.add(str(res["trace"]))
    names = []
    for path in TRACES.glob("*.jsonl.gz"):
        name = path.name.removesuffix(".jsonl.gz")
        st = trace_settings(name)
        if name in done or st.get("gptq_int4") or st.get("trainer_amp_wrap") or rough_need_gib(name) > MAX_GIB:
            continue
        names.append(name)
    order = {"g": 0, "c": 1}
    return sorted(names, key=lambda n: (order.get(n.split("-", 1)[0], 2), n))


def trace_settings(name: str) -> dict[str, Any]:
    with gzip.open(TRACES / f"{name}.jsonl.gz", "rt", encoding="utf-8") as fh:
        header: dict[str, Any] = json.loads(fh.readline())
    return dict(header["settings"])


def nvml_used(device_index: int) -> int:
    """Bytes NVML attributes to this process on the GPU (what nvidia-smi lists), 0 when unknown."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if proc.pid == os.getpid() and proc.usedGpuMemory is not None:
                return int(proc.usedGpuMemory)
        return int(pynvml.nvmlDeviceGetMemoryInfo(handle).used)
    except Exception:  # NVML is optional here
        return 0


def run_one(name: str, device: str, config_override: str | None) -> dict[str, Any]:
    """One trace's steps in this process (called in a child)."""
    import peft
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    st = trace_settings(name)
    if st.get("gptq_int4") or st.get("trainer_amp_wrap"):
        # the swapped-in auto_gptq QuantLinear and the Trainer's output wrapper are tracer emulations, not set up here
        raise NotImplementedError("GPTQ-base and --trainer-amp-wrap traces are not run on the device by this script")
    cfg = AutoConfig.from_pretrained(str(ROOT / (config_override or st["config"])))
    cuda = device.startswith("cuda")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(st["precision"], torch.float32)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=st.get("attention", "sdpa"))
    if st["method"] == "lora":
        targets = st["lora_targets"]
        lcfg = peft.LoraConfig(
            r=int(st["lora_rank"]),
            lora_alpha=int(st["lora_alpha"]),
            lora_dropout=float(st["lora_dropout"]),
            target_modules="all-linear" if targets == "all-linear" else [t for t in targets.split(",") if t],
            task_type="CAUSAL_LM",
            use_dora=bool(st.get("dora")),
            modules_to_save=[m for m in str(st.get("modules_to_save") or "").split(",") if m] or None,
        )
        model = peft.get_peft_model(model, lcfg)
        if st["checkpointing"] == "reentrant":
            model.enable_input_require_grads()
    if st["checkpointing"] != "none":
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": st["checkpointing"] == "reentrant"}
        )
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    kind = st["optimizer"]
    opt: Any
    if kind == "sgd":
        opt = torch.optim.SGD(params, lr=1e-4, momentum=0.9, foreach=True)
    elif kind == "adafactor":
        from transformers.optimization import Adafactor

        opt = Adafactor(params, lr=1e-4, scale_parameter=False, relative_step=False, warmup_init=False)
    else:
        opt = torch.optim.AdamW(params, lr=1e-4, foreach=kind == "adamw-foreach", fused=kind == "adamw-fused" or None)
    # AMP as traced: fp32 parameters, the forward under autocast to bf16
    amp = st["precision"] == "amp-bf16"
    autocast = torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=amp)
    phases: dict[str, dict[str, int]] = {}
    index = (torch.device(device).index or 0) if cuda else 0

    def mark(phase: str) -> None:
        if cuda:
            torch.cuda.synchronize()
            phases[phase] = {
                "allocated": torch.cuda.max_memory_allocated(),
                "reserved": torch.cuda.max_memory_reserved(),
                "nvml_used": nvml_used(index),
            }
            torch.cuda.reset_peak_memory_stats()
        else:
            phases[phase] = {"allocated": 0, "reserved": 0, "nvml_used": 0}

    mark("build")
    t0 = time.perf_counter()
    ga, n_opt = int(st.get("grad_accum") or 1), 0
    vocab = int(getattr(cfg, "vocab_size", 32000))
    for i, s in enumerate(st["lengths"]):
        ids = torch.randint(0, vocab, (int(st["batch"]), int(s)), device=device)
        with autocast:
            loss = model(input_ids=ids, labels=ids).loss / ga
        mark(f"step{i}-fwd")
        loss.backward()
        del loss, ids
        mark(f"step{i}-bwd")
        if (i + 1) % ga == 0:
            opt.step()
            opt.zero_grad(set_to_none=True)
            mark(f"opt{n_opt}")
            n_opt += 1
    wall = time.perf_counter() - t0
    return {
        "trace": name,
        "settings": {
            k: st.get(k) for k in ("config", "lengths", "batch", "method", "precision", "checkpointing", "optimizer")
        },
        "config_used": config_override or st["config"],
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__},
        "device": torch.cuda.get_device_name(index) if cuda else device,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "phases": phases,
        "peak_allocated": max(p["allocated"] for p in phases.values()),
        "peak_reserved": max(p["reserved"] for p in phases.values()),
        "nvml_used_max": max(p["nvml_used"] for p in phases.values()),
        "wall_s": round(wall, 2),
    }


def run_child(
    cmd: list[str], timeout: int, failed: dict[str, Any], env: dict[str, str] | None = None
) -> dict[str, Any]:
    """The last JSON line a fresh process prints, or ``failed`` with the error (its stderr's end, or the time-out):
    each measurement runs in its own process so the caching allocator starts empty."""
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {**failed, "error": f"timed out after {timeout} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    result: dict[str, Any] = json.loads(lines[-1]) if lines else {**failed, "error": done.stderr[-800:]}
    return result


def summary(result: dict[str, Any]) -> str:
    """One run's figures (or its error) for the console."""
    return str(
        result.get("error")
        or (
            f"allocated {result['peak_allocated'] / 2**30:.2f} GiB, "
            f"reserved {result['peak_reserved'] / 2**30:.2f} GiB, "
            f"NVML {result['nvml_used_max'] / 2**30:.2f} GiB, {result['wall_s']} s"
        )
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", help="trace names in benchmarks/data/traces (without .jsonl.gz)")
    ap.add_argument(
        "--unmeasured", action="store_true", help="add every trace benchmarks/data/device/ has no result for yet"
    )
    ap.add_argument("--budget", type=float, default=0, help="start no new trace after this many seconds (0: none)")
    ap.add_argument("--out", help="JSON lines file to append to (required, except in the child)")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--expandable", action="store_true", help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    ap.add_argument("--config", default=None, help="a config.json instead of the trace's own (smoke tests)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per trace")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        if len(args.traces) != 1:
            ap.error("--child runs exactly one trace")
        try:
            result = run_one(args.traces[0], args.device, args.config)
        except Exception as err:  # an out-of-memory error is a result too
            result = {"trace": args.traces[0], "error": f"{type(err).__name__}: {str(err)[:500]}"}
        print(json.dumps(result))
        return 0
    if not args.out:
        ap.error("--out is required")
    names = list(args.traces) + [
        n for n in (unmeasured(args.expandable) if args.unmeasured else []) if n not in args.traces
    ]
    if not names:
        ap.error("no traces named (give names or --unmeasured)")
    start = time.monotonic()
    env = dict(os.environ)
    if args.expandable:
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    for name in names:
        if args.budget and time.monotonic() - start > args.budget:
            print(
                f"budget of {args.budget:.0f} s spent: {len(names) - names.index(name)} traces not started", flush=True
            )
            break
        cmd = [sys.executable, __file__, "--child", "--device", args.device, name]
        if args.config:
            cmd += ["--config", args.config]
        result = run_child(cmd, args.timeout, {"trace": name}, env)
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(result) + "\n")
        print(f"{name}: {summary(result)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
