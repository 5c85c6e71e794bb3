#!/usr/bin/env python3
"""Run transformers ``generate`` for catalog models on a real GPU and record the allocator's peaks.

Why
    The inference estimate is checked against published measurements (benchmarks/accuracy.py); this script lets a
    lent GPU add figures of our own for the same code path: a catalog model built from its config.json with random
    weights (no download), one ``generate`` call of a fixed number of new tokens, and the peaks PyTorch and NVML
    report. ``benchmarks/accuracy.py`` compares the estimate of the same settings with every result committed under
    ``benchmarks/data/device/*-inference.jsonl``.

Run (a machine with a GPU, torch and transformers; each case in a fresh process):
    python3 benchmarks/device/measure_inference.py --out inference.jsonl            # the default cases
    python3 benchmarks/device/measure_inference.py --out inference.jsonl --case Qwen/Qwen3-8B:1:4096:256
Smoke test without a GPU:
    python3 benchmarks/device/measure_inference.py --out smoke.jsonl --device cpu --config \\
        benchmarks/device/tiny-llama.json --case tiny:2:64:8

Output: one JSON object per case: {"model", "batch", "input_len", "output_len", "attention", "dtype", "device",
"versions", "weights_allocated", "peak_allocated", "peak_reserved", "nvml_used_max", "wall_s"} (bytes), or
{"model", ..., "error"} when the run failed (an out-of-memory error is a result too).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "resources" / "catalog" / "configs"

#: model:batch:input_len:output_len, dense and MoE, short and long prompts, one and several sequences (most
#: telling first: a session with a time budget runs the head of the list)
DEFAULT_CASES = (
    "Qwen/Qwen3-8B:1:4096:256",
    "meta-llama/Llama-3.1-8B:4:8192:128",
    "Qwen/Qwen3-30B-A3B:4:4096:128",
    "google/gemma-3-1b-it:8:4096:256",
    "Qwen/Qwen3-8B:1:32768:64",
    "mistralai/Mistral-7B-v0.3:16:1024:256",
    "Qwen/Qwen2.5-7B:1:16384:128",
    "Qwen/Qwen3-8B:8:2048:256",
    "microsoft/phi-4:2:8192:128",
)


def parse_case(text: str) -> dict[str, Any]:
    """``model:batch:input_len:output_len`` -> its fields; a malformed case is an error naming it."""
    parts = text.rsplit(":", 3)
    if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts[1:]):
        raise ValueError(f"case {text!r}: expected MODEL:BATCH:INPUT_LEN:OUTPUT_LEN with positive integers")
    return {"model": parts[0], "batch": int(parts[1]), "input_len": int(parts[2]), "output_len": int(parts[3])}


def config_path(model: str, override: str | None) -> Path:
    if override:
        return Path(override)
    path = CONFIGS / f"{model.replace('/', '__')}.json"
    if not path.exists():
        raise FileNotFoundError(f"{model}: no config in {CONFIGS} (expected {path.name})")
    return path


def run_case(case: dict[str, Any], device: str, attention: str, override: str | None) -> dict[str, Any]:
    """One generate call in this process (called in a child)."""
    import torch
    import transformers
    from measure_steps import nvml_used  # the sibling script (this one runs from its folder)
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.from_pretrained(str(config_path(case["model"], override)))
    cuda = device.startswith("cuda")
    index = (torch.device(device).index or 0) if cuda else 0
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation=attention)
    model.eval()
    if cuda:
        torch.cuda.synchronize()
    weights = torch.cuda.memory_allocated() if cuda else 0
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    vocab = int(getattr(cfg, "vocab_size", None) or cfg.get_text_config().vocab_size)
    ids = torch.randint(0, vocab, (case["batch"], case["input_len"]), device=device)
    t0 = time.perf_counter()
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=case["output_len"],
            min_new_tokens=case["output_len"],
            do_sample=False,
            pad_token_id=0,
        )
    if cuda:
        torch.cuda.synchronize()
    return {
        **case,
        "attention": attention,
        "dtype": "bf16",
        "new_tokens": int(out.shape[1] - ids.shape[1]),
        "device": torch.cuda.get_device_name(index) if cuda else device,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "weights_allocated": weights,
        "peak_allocated": torch.cuda.max_memory_allocated() if cuda else 0,
        "peak_reserved": torch.cuda.max_memory_reserved() if cuda else 0,
        "nvml_used_max": nvml_used(index) if cuda else 0,
        "wall_s": round(time.perf_counter() - t0, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="MODEL:BATCH:INPUT_LEN:OUTPUT_LEN (repeatable; default: a set)")
    ap.add_argument("--out", help="JSON lines file to append to (required, except in the child)")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--attention", default="sdpa", choices=("sdpa", "eager"))
    ap.add_argument("--config", default=None, help="a config.json for every case instead of the catalog's (smoke)")
    ap.add_argument("--timeout", type=int, default=240, help="seconds per case")
    ap.add_argument("--budget", type=float, default=0, help="start no new case after this many seconds (0: none)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        cases = [parse_case(c) for c in (args.case or DEFAULT_CASES)]
    except ValueError as err:
        ap.error(str(err))
    if args.child:
        try:
            result = run_case(cases[0], args.device, args.attention, args.config)
        except Exception as err:  # an out-of-memory error is a result too
            result = {**cases[0], "attention": args.attention, "error": f"{type(err).__name__}: {str(err)[:500]}"}
        print(json.dumps(result))
        return 0
    if not args.out:
        ap.error("--out is required")
    from measure_steps import run_child, summary  # the sibling script (this one runs from its folder)

    start = time.monotonic()
    for n, case in enumerate(cases):
        if args.budget and time.monotonic() - start > args.budget:
            print(f"budget of {args.budget:.0f} s spent: {len(cases) - n} cases not started", flush=True)
            break
        spec = f"{case['model']}:{case['batch']}:{case['input_len']}:{case['output_len']}"
        cmd = [sys.executable, __file__, "--child", "--device", args.device, "--attention", args.attention]
        cmd += ["--case", spec] + (["--config", args.config] if args.config else [])
        result = run_child(cmd, args.timeout, case)
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(result) + "\n")
        print(f"{spec}: {summary(result)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
