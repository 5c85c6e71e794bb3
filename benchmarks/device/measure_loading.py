#!/usr/bin/env python3
"""Measure what loading a checkpoint leaves in PyTorch's CUDA cache, before and after one training step.

Why
    vramdesk's traces and GPU runs build their models with ``from_config`` on the device, so their caches hold
    nothing from loading. Users load checkpoints, and a loading path that converts dtypes on the GPU can leave cached
    blocks the size of the largest tensors (an embedding or lm_head of vocabulary x hidden elements), visible in
    nvidia-smi until activations reuse them. The held-out Qwen v1 single-GPU LoRA rows sit about 6 B x vocabulary x
    hidden above the estimate at short lengths and close in at long ones, which is what such a cache would do; this
    script measures it for today's loading paths, which the next GPU session can run without downloads.

What it does
    Saves a randomly initialised model of the given config as a bf16 safetensors checkpoint (once), then, each in a
    fresh process, loads it the ways training scripts do and records allocated / reserved / NVML after loading and
    after one forward + backward at the given length:

    * ``bf16``: ``from_pretrained(dtype=torch.bfloat16, device_map=device)``;
    * ``auto``: ``from_pretrained(dtype="auto", device_map=device)``;
    * ``fp32-then-bf16``: ``from_pretrained(dtype=torch.float32, device_map=device)`` then ``.to(torch.bfloat16)``
      (older scripts' habit);
    * ``cpu-then-cuda``: ``from_pretrained(dtype=torch.bfloat16)`` on the CPU, then ``.to(device)``.

Run (a machine with a GPU, torch and transformers):
    python3 benchmarks/device/measure_loading.py --out loading.jsonl benchmarks/data/configs/Qwen__Qwen2.5-1.5B.json
Smoke test without a GPU:
    python3 benchmarks/device/measure_loading.py --out smoke.jsonl --device cpu benchmarks/device/tiny-llama.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WAYS = ("bf16", "auto", "fp32-then-bf16", "cpu-then-cuda")


def _levels(device: str) -> dict[str, int]:
    import torch

    if not device.startswith("cuda"):
        return {"allocated": 0, "reserved": 0, "nvml_used": 0}
    from measure_steps import nvml_used  # the sibling script (this one runs from its folder)

    torch.cuda.synchronize()
    used = nvml_used(torch.device(device).index or 0)
    return {
        "allocated": torch.cuda.memory_allocated(),
        "max_allocated": torch.cuda.max_memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),
        "nvml_used": used,
    }


def save_checkpoint(config_path: str, folder: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.from_pretrained(config_path)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    model.save_pretrained(str(folder), safe_serialization=True)


def load_once(folder: Path, way: str, device: str, seq_len: int) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    t0 = time.perf_counter()
    if way == "bf16":
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.bfloat16, device_map=device)
    elif way == "auto":
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype="auto", device_map=device)
    elif way == "fp32-then-bf16":
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, device_map=device)
        model = model.to(torch.bfloat16)
    elif way == "cpu-then-cuda":
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.bfloat16).to(device)
    else:
        raise ValueError(f"unknown way {way!r}; one of {', '.join(WAYS)}")
    loaded = _levels(device)
    model.gradient_checkpointing_enable()
    model.train()
    ids = torch.randint(0, int(model.config.vocab_size), (1, seq_len), device=device)
    model(input_ids=ids, labels=ids).loss.backward()
    stepped = _levels(device)
    return {
        "way": way,
        "params": sum(p.numel() for p in model.parameters()),
        "dtype": str(next(model.parameters()).dtype),
        "seq_len": seq_len,
        "after_load": loaded,
        "after_step": stepped,
        "wall_s": round(time.perf_counter() - t0, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", help="a config.json (the checkpoint is written from it with random weights)")
    ap.add_argument("--out", help="JSON lines file to append to (required, except in the child)")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--ways", default=",".join(WAYS), help=f"comma-separated, of {', '.join(WAYS)}")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per way")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        way, folder = args.child.split(":", 1)
        try:
            result = load_once(Path(folder), way, args.device, args.seq_len)
        except Exception as err:  # an out-of-memory error is a result too
            result = {"way": way, "error": f"{type(err).__name__}: {str(err)[:500]}"}
        print(json.dumps(result))
        return 0
    if not args.out:
        ap.error("--out is required")
    from measure_steps import run_child  # the sibling script (this one runs from its folder)

    ways = [w for w in args.ways.split(",") if w]
    unknown = [w for w in ways if w not in WAYS]
    if unknown:
        ap.error(f"unknown way(s) {', '.join(unknown)}; known: {', '.join(WAYS)}")
    with tempfile.TemporaryDirectory(prefix="vramdesk-ckpt-") as tmp:
        folder = Path(tmp)
        save_checkpoint(args.config, folder)
        for way in ways:
            cmd = [sys.executable, __file__, args.config, "--device", args.device, "--seq-len", str(args.seq_len)]
            cmd += ["--child", f"{way}:{folder}"]
            result = run_child(cmd, args.timeout, {"way": way})
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(result) + "\n")
            if "error" in result:
                print(f"{way}: {result['error']}", flush=True)
            else:
                a, s = result["after_load"], result["after_step"]
                print(
                    f"{way}: after load allocated {a['allocated'] / 2**30:.2f} reserved {a['reserved'] / 2**30:.2f} "
                    f"GiB; after a step reserved {s['reserved'] / 2**30:.2f} GiB ({result['dtype']})",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
