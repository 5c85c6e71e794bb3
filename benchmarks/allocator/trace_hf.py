#!/usr/bin/env python3
"""Record the ordered tensor allocation/free stream of Hugging Face training steps (research tool).

What it is
    A CPU-only "trace oracle": it builds a causal LM from a config.json with
    ``AutoModelForCausalLM.from_config`` inside ``torch._subclasses.FakeTensorMode``
    (no real memory is allocated, so real model sizes run on a laptop), runs real
    forward/backward/optimizer steps of the current transformers/peft code, and
    records every storage allocation and free seen by a ``TorchDispatchMode``
    pushed above the fake mode.  The fake tensors live on ``cpu``; the places where
    a CUDA run takes a different code path are emulated by patches (see
    ``apply_cuda_emulation``), so that the stream is the one a CUDA run would
    produce at the tensor level.  Another tool replays the stream through a model
    of PyTorch's CUDA caching allocator (rounding, blocks, segments) to predict
    ``max_memory_reserved`` and fragmentation.

    It is a benchmark/research script: it needs a venv with torch, transformers
    and peft (it is never imported by the app or the tests).

How to run
    python3.11 -m venv ../tracevenv          # a venv of its own, outside the repository
    ../tracevenv/bin/pip install torch==2.13.0 transformers peft accelerate
    ../tracevenv/bin/python benchmarks/allocator/trace_hf.py \\
        --config benchmarks/data/configs/mistralai__Mistral-7B-v0.1.json \\
        --out benchmarks/data/traces/x.jsonl.gz --lengths 4096,4096 --batch 4 \\
        --method lora --lora-rank 16 --lora-alpha 32 --lora-dropout 0.05 \\
        --lora-targets q_proj,k_proj,v_proj,o_proj --precision bf16 \\
        --checkpointing reentrant --attention sdpa --optimizer adamw-foreach --grad-accum 1

    LoRA on a GPTQ 4-bit base (auto_gptq's QuantLinear swapped in; peft's own GPTQ LoRA layer):
        BUILD_CUDA_EXT=0 ../tracevenv/bin/pip install --no-deps auto-gptq
        ... --gptq-int4 128 --lora-targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj

    Variable lengths drawn from a clipped lognormal (seeded, reproducible):
        --random-lengths 48 --max-length 2048   (instead of --lengths)

    HF Trainer bf16=True also runs the forward under accelerate's autocast and converts the
    bf16 logits of the output to fp32; add --trainer-amp-wrap to emulate that too.

    Validation of the fake run against real CPU tensors (tiny configs only):
        --real --native-sdpa   (same program on real CPU tensors; CPU SDPA kernels)

Output (gzip, JSON lines)
    line 1: {"format": "vramdesk-alloc-trace/1", "config", "settings", "versions", "params", "trainable"}
    then one array per event, in program order:
        ["a", id, nbytes, "op"]   storage allocated (unrounded bytes; op = aten op or "param"/"buffer")
        ["f", id]                 that storage freed
        ["p", "name"]             phase marker: build, step<i>-fwd, step<i>-bwd, opt<k>, end (i, k from 0)
    Storages alive at the end get no free event; zero-byte storages are skipped;
    views / in-place results share a storage and are not new allocations.
    The overall max live bytes (512-rounded per storage) goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import random
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

# the tracker, the CUDA emulation and the optimizer grouping are the shipped child's (vramdesk/tracing/child.py,
# standard library + torch + transformers + peft only): loaded by path, so this venv needs no vramdesk
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "vramdesk" / "tracing"))
from child import (
    AllocTracker,
    apply_cuda_emulation,
    decay_param_groups,
    module_to_noop,
)

FORMAT = "vramdesk-alloc-trace/1"


# --------------------------------------------------------------------------------------
# Lengths
# --------------------------------------------------------------------------------------
def _dist_version(name: str) -> str:
    from importlib.metadata import version

    return version(name.replace("_", "-"))


def swap_in_gptq(model: Any, group_size: int) -> Any:
    """Replace every nn.Linear inside the decoder layers with auto_gptq's QuantLinear (4 bits, ``group_size``),
    as a GPTQ checkpoint loads. The module file is loaded by path: the auto_gptq package itself imports
    transformers internals that transformers 5 no longer has. Returns the QuantLinear class."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("auto_gptq")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("--gptq-int4 needs auto_gptq installed (BUILD_CUDA_EXT=0 pip install auto-gptq)")
    path = os.path.join(next(iter(spec.submodule_search_locations)), "nn_modules", "qlinear", "qlinear_cuda_old.py")
    mspec = importlib.util.spec_from_file_location("auto_gptq_qlinear_cuda_old", path)
    assert mspec is not None and mspec.loader is not None
    mod = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(mod)
    ql_cls = mod.QuantLinear
    targets = [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and re.search(r"\.layers\.\d+\.", name)
    ]
    for name, lin in targets:
        parent = model.get_submodule(name.rsplit(".", 1)[0])
        q = ql_cls(
            bits=4,
            group_size=group_size,
            infeatures=lin.in_features,
            outfeatures=lin.out_features,
            bias=lin.bias is not None,
        )
        if q.autogptq_cuda_available:  # pragma: no cover - a CUDA build
            raise SystemExit("auto_gptq's CUDA extension loaded: the trace needs the torch path")
        setattr(parent, name.rsplit(".", 1)[1], q)
    del targets, lin, q
    import gc

    gc.collect()
    return ql_cls


def drop_freed_build_events(tracker: AllocTracker) -> None:
    """Remove allocations made and freed during the build (the 16-bit weights a quantised swap replaced): a real
    run loads the quantised checkpoint directly, so they never reach the allocator."""
    start = max(i for i, e in enumerate(tracker.events) if e[0] == "p" and e[1] == "build")
    freed = {e[1] for e in tracker.events[start:] if e[0] == "f"}
    tracker.events[start:] = [e for e in tracker.events[start:] if not (e[0] in ("a", "f") and e[1] in freed)]


def lognormal_lengths(
    n: int,
    mean: float = 3234.0,
    sd: float = 2548.0,
    lo: int = 91,
    hi: int = 19548,
    seed: int = 0,
    max_length: int | None = None,
) -> list[int]:
    s2 = math.log(1.0 + (sd / mean) ** 2)
    mu = math.log(mean) - s2 / 2.0
    rng = random.Random(seed)
    out: list[int] = []
    for _ in range(n):
        x = round(rng.lognormvariate(mu, math.sqrt(s2)))
        x = min(max(x, lo), hi)
        if max_length:
            x = min(x, max_length)
        out.append(x)
    return out


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------
def _outputs_to_fp32(out: Any) -> Any:
    """accelerate's ConvertOutputsToFp32: every fp16/bf16 tensor of the model output -> .float()."""
    try:
        from accelerate.utils.operations import convert_to_fp32

        return convert_to_fp32(out)
    except ImportError:
        for k, v in list(out.items()):
            if isinstance(v, torch.Tensor) and v.dtype in (torch.float16, torch.bfloat16):
                out[k] = v.float()
        return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--config", required=True, help="path to a config.json (or a directory holding one)")
    ap.add_argument("--out", required=True, help="output .jsonl.gz")
    ap.add_argument("--lengths", default=None, help="comma list, one sequence length per micro-step")
    ap.add_argument(
        "--random-lengths",
        type=int,
        default=0,
        help="N micro-steps with lengths from a lognormal (mean 3234, sd 2548, clip [91,19548], seed 0)",
    )
    ap.add_argument("--max-length", type=int, default=None, help="truncate every length to this")
    ap.add_argument("--length-seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--method", choices=["full", "lora"], default="full")
    ap.add_argument("--lora-rank", type=int, default=8)
    ap.add_argument("--lora-alpha", type=int, default=32)
    ap.add_argument("--lora-dropout", type=float, default=0.05)
    ap.add_argument("--lora-targets", default="q_proj,k_proj,v_proj", help="comma list or all-linear")
    ap.add_argument("--dora", action="store_true", help="DoRA (peft use_dora)")
    ap.add_argument("--modules-to-save", default="", help="comma list of modules peft trains in full")
    ap.add_argument("--precision", choices=["bf16", "fp16", "amp-bf16"], default="bf16")
    ap.add_argument("--checkpointing", choices=["none", "reentrant", "nonreentrant"], default="none")
    ap.add_argument("--attention", choices=["sdpa", "eager"], default="sdpa")
    ap.add_argument(
        "--optimizer",
        choices=["adamw-foreach", "adamw-fused", "adamw-forloop", "sgd", "adafactor"],
        default="adamw-foreach",
        help="sgd: momentum 0.9, foreach; adafactor: transformers' Adafactor (factored, no first moment)",
    )
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--steps-note", default="")
    ap.add_argument(
        "--trainer-amp-wrap",
        action="store_true",
        help="also emulate HF Trainer bf16=True through accelerate: forward under autocast(bf16) "
        "and bf16/fp16 outputs (the logits) converted to fp32 (accelerate convert_outputs_to_fp32)",
    )
    ap.add_argument(
        "--gptq-int4",
        type=int,
        default=0,
        metavar="GROUP",
        help="frozen base as auto_gptq 4-bit QuantLinear modules with this group size (needs auto_gptq installed; "
        "implies fp16 parameters)",
    )
    ap.add_argument("--real", action="store_true", help="real CPU tensors instead of FakeTensorMode (validation)")
    ap.add_argument(
        "--native-sdpa", action="store_true", help="do not emulate the CUDA SDPA backend choice (needed with --real)"
    )
    args: argparse.Namespace = ap.parse_args(argv)

    import peft
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    lengths: list[int]
    if args.lengths:
        lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
        if args.max_length:
            lengths = [min(x, args.max_length) for x in lengths]
    elif args.random_lengths:
        lengths = lognormal_lengths(args.random_lengths, seed=args.length_seed, max_length=args.max_length)
    else:
        ap.error("give --lengths or --random-lengths")

    settings: dict[str, Any] = dict(vars(args))
    settings["lengths"] = lengths
    versions: dict[str, str] = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
    }

    torch.manual_seed(0)
    patches = apply_cuda_emulation(native_sdpa=args.native_sdpa)
    settings["patches"] = [
        *patches,
        "AdamW foreach/fused/for-loop chosen explicitly",
        "nn.Module.to no-op during get_peft_model",
        "AMP = torch.autocast('cpu', bfloat16)",
        "0-dim host tensors (AdamW step when not fused, flash/mem-eff philox seed/offset) not recorded",
    ]

    cfg_path = args.config
    cfg = AutoConfig.from_pretrained(cfg_path)
    for k in ("_provenance",):
        if hasattr(cfg, k):
            with contextlib.suppress(Exception):
                delattr(cfg, k)

    if args.gptq_int4:
        args.precision = "fp16"  # auto_gptq's QuantLinear computes in fp16 (x.half())
    param_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision, torch.float32)
    tracker = AllocTracker()
    fake_mode = contextlib.nullcontext()
    if not args.real:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)

    t_all = time.perf_counter()
    with fake_mode, tracker:
        tracker.mark("build")
        model = AutoModelForCausalLM.from_config(cfg, dtype=param_dtype, attn_implementation=args.attention)
        gptq_cls: Any = None
        if args.gptq_int4:
            gptq_cls = swap_in_gptq(model, args.gptq_int4)
            drop_freed_build_events(tracker)
            settings["patches"].append(
                "decoder-layer nn.Linear -> auto_gptq qlinear_cuda_old.QuantLinear (4-bit, CUDA extension "
                "unavailable: the torch dequantising path); build allocations freed by the swap dropped"
            )
            versions["auto_gptq"] = _dist_version("auto_gptq")
        if args.method == "lora":
            from peft import LoraConfig, get_peft_model

            targets = args.lora_targets
            targets = "all-linear" if targets == "all-linear" else [t for t in targets.split(",") if t]
            lcfg = LoraConfig(
                r=args.lora_rank,
                lora_alpha=args.lora_alpha,
                lora_dropout=args.lora_dropout,
                target_modules=targets,
                task_type="CAUSAL_LM",
                bias="none",
                use_dora=args.dora,
                modules_to_save=[m for m in args.modules_to_save.split(",") if m] or None,
            )
            if gptq_cls is not None:
                # peft finds auto_gptq through its package, which does not import under transformers 5: map the
                # class to peft's GPTQ LoRA layer directly (what its dispatch would choose)
                from peft.tuners.lora.gptq import GPTQLoraLinear

                lcfg._register_custom_module({gptq_cls: GPTQLoraLinear})
            with module_to_noop():
                model = get_peft_model(model, lcfg)
            if args.checkpointing == "reentrant":
                model.enable_input_require_grads()  # as HF Trainer / peft do for reentrant ckpt
        if args.checkpointing != "none":
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": args.checkpointing == "reentrant"}
            )
        model.train()

        # parameters / buffers: relabel their allocation events, add any the mode did not see
        seen_ids: dict[int, int] = {}  # allocation event id -> index in tracker.events
        for i, e in enumerate(tracker.events):
            if e[0] == "a":
                seen_ids[e[1]] = i
        n_param = n_train = 0
        for kind, tensors in (
            ("param", [p for _, p in model.named_parameters()]),
            ("buffer", [b for _, b in model.named_buffers()]),
        ):
            for t in tensors:
                if kind == "param":
                    n_param += t.numel()
                    n_train += t.numel() if t.requires_grad else 0
                rec = tracker.live.get(id(t.untyped_storage()))
                if rec is not None and rec[0] in seen_ids:
                    tracker.events[seen_ids[rec[0]]][3] = kind
                else:
                    tracker.see(t, kind)

        trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        groups = decay_param_groups(trainable)
        okw: dict[str, Any] = {"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-8}
        opt: Any
        if args.optimizer == "sgd":
            opt = torch.optim.SGD(groups, lr=1e-4, momentum=0.9, foreach=True)
        elif args.optimizer == "adafactor":
            from transformers.optimization import Adafactor

            opt = Adafactor(groups, lr=1e-4, scale_parameter=False, relative_step=False, warmup_init=False)
        elif args.optimizer == "adamw-foreach":
            opt = torch.optim.AdamW(groups, foreach=True, **okw)
        elif args.optimizer == "adamw-fused":
            opt = torch.optim.AdamW(groups, fused=True, **okw)
        else:
            opt = torch.optim.AdamW(groups, foreach=False, **okw)

        use_autocast = args.precision == "amp-bf16" or args.trainer_amp_wrap
        amp = torch.autocast("cpu", dtype=torch.bfloat16) if use_autocast else contextlib.nullcontext()
        ga = args.grad_accum
        n_opt = 0
        for i, s in enumerate(lengths):
            tracker.mark(f"step{i}-fwd")
            input_ids = torch.ones((args.batch, s), dtype=torch.long)
            labels = torch.ones((args.batch, s), dtype=torch.long)
            with amp:
                out = model(input_ids=input_ids, labels=labels)
                if args.trainer_amp_wrap:
                    out = _outputs_to_fp32(out)
            loss = out.loss
            del out
            loss = loss / ga
            tracker.mark(f"step{i}-bwd")
            loss.backward()
            del loss, input_ids, labels
            if (i + 1) % ga == 0:
                tracker.mark(f"opt{n_opt}")
                tracker.skip_scalar_allocs = args.optimizer != "adamw-fused"
                opt.step()
                opt.zero_grad(set_to_none=True)
                tracker.skip_scalar_allocs = False
                n_opt += 1
        tracker.finish()
    wall = time.perf_counter() - t_all

    header: dict[str, Any] = {
        "format": FORMAT,
        "config": cfg_path,
        "settings": settings,
        "versions": versions,
        "params": int(n_param),
        "trainable": int(n_train),
    }
    n_ev = 0
    with gzip.open(args.out, "wt", compresslevel=9) as fh:
        fh.write(json.dumps(header) + "\n")
        for e in tracker.events:
            fh.write(json.dumps(e, separators=(",", ":")) + "\n")
            n_ev += 1
    overall = max((p for _, p in tracker.summary), default=0)
    print(
        f"params {n_param:,} trainable {n_train:,}; events {n_ev:,} "
        f"({tracker.n_alloc:,} allocations); overall peak live {overall / 2**30:.3f} GiB ({overall} B); "
        f"wall {wall:.1f} s",
        file=sys.stderr,
    )
    if tracker.scalar_reads:
        print("data-dependent reads answered by policy:", dict(tracker.scalar_reads), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
