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
    Per phase, the max live bytes (512-rounded per storage) and elapsed time go to stderr.
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
import traceback
import weakref
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

aten = torch.ops.aten

FORMAT = "vramdesk-alloc-trace/1"
SDPA_FUSED_FWD = {
    "aten._scaled_dot_product_flash_attention.default",
    "aten._scaled_dot_product_efficient_attention.default",
}


def _round512(n: int) -> int:
    return 512 * ((n + 511) // 512)


# --------------------------------------------------------------------------------------
# The tracker
# --------------------------------------------------------------------------------------
# torch is not installed in the type-check venv, so TorchDispatchMode is Any there.
class AllocTracker(TorchDispatchMode):  # type: ignore[misc]
    """Sees every aten op below autograd; records new storages and their deaths."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[list[Any]] = []
        self.live: dict[int, tuple[int, int, weakref.ref[Any]]] = {}  # id(storage) -> (event id, nbytes, weakref)
        self.next_id = 0
        self.cur = 0  # live bytes, 512-rounded
        self.phase: str | None = None
        self.phase_peak = 0
        self.phase_t0 = time.perf_counter()
        self.summary: list[tuple[str, int, float]] = []  # (phase, peak bytes, seconds)
        self.scalar_reads: Counter[str] = Counter()
        self.skip_scalar_allocs = False  # host-side 0-dim tensors (AdamW step, non-fused)
        self.n_alloc = 0

    # ---- phases -------------------------------------------------------------------
    def mark(self, name: str) -> None:
        self._close_phase()
        self.phase = name
        self.phase_peak = self.cur
        self.phase_t0 = time.perf_counter()
        self.events.append(["p", name])

    def _close_phase(self) -> None:
        if self.phase is not None:
            dt = time.perf_counter() - self.phase_t0
            self.summary.append((self.phase, self.phase_peak, dt))
            print(
                f"  {self.phase:>14s}: peak live {self.phase_peak / 2**30:9.3f} GiB  "
                f"({self.phase_peak} B)  {dt:7.2f} s",
                file=sys.stderr,
                flush=True,
            )

    # ---- storages -----------------------------------------------------------------
    def _free(self, key: int) -> None:
        rec = self.live.pop(key, None)
        if rec is None:
            return
        self.cur -= _round512(rec[1])
        self.events.append(["f", rec[0]])

    def see(self, t: torch.Tensor, op: str) -> None:
        try:
            st = t.untyped_storage()
        except Exception:
            return
        key = id(st)
        if key in self.live:
            return
        nb = int(st.nbytes())
        if nb == 0:
            return
        eid = self.next_id
        self.next_id += 1

        def _on_dead(_r: weakref.ref[Any], k: int = key) -> None:
            self._free(k)

        ref = weakref.ref(st, _on_dead)
        self.live[key] = (eid, nb, ref)
        self.events.append(["a", eid, nb, op])
        self.n_alloc += 1
        self.cur += _round512(nb)
        self.phase_peak = max(self.phase_peak, self.cur)

    def forget(self, t: torch.Tensor) -> None:
        """Drop a storage from the books without a free event (host-side tensor seen by mistake)."""
        key = id(t.untyped_storage())
        rec = self.live.pop(key, None)
        if rec is None:
            return
        self.cur -= _round512(rec[1])
        # remove its allocation event (it is recent; search from the end)
        for i in range(len(self.events) - 1, -1, -1):
            e = self.events[i]
            if e[0] == "a" and e[1] == rec[0]:
                del self.events[i]
                break

    def __torch_dispatch__(
        self,
        func: Any,
        types: tuple[type, ...],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func is aten._local_scalar_dense.default:
            x = args[0]
            if _is_fake(x):
                # data-dependent read on a fake tensor: answer with a fixed policy
                site = _call_site()
                self.scalar_reads[site] += 1
                if x.dtype == torch.bool:
                    return True
                if x.dtype.is_floating_point:
                    return 1.0
                return 1
        out = func(*args, **kwargs)
        if getattr(func, "is_view", False):
            # a view never allocates; FakeTensorMode can hand one a storage of its own (peft's ModulesToSaveWrapper
            # on a tied lm_head made aten.t look like a 445 MiB copy that a real CPU run does not make)
            return out
        op = str(func)
        fused_sdpa = op in SDPA_FUSED_FWD
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                if t.dim() == 0 and (fused_sdpa or (self.skip_scalar_allocs)):
                    # flash/mem-efficient philox seed/offset and AdamW's `step` are host
                    # (CPU) tensors on a CUDA run: not GPU memory
                    continue
                if t.device.type == "meta" and not _is_fake(t):
                    continue
                self.see(t, op)
        return out

    def finish(self) -> None:
        self.mark("end")
        self._close_phase()


def _is_fake(t: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def _call_site() -> str:
    for fr in reversed(traceback.extract_stack()[:-3]):
        f = fr.filename
        if "/torch/" in f and "/torch/optim/" not in f:
            continue
        if f.endswith("trace_hf.py"):
            continue
        return f"{f.split('site-packages/')[-1]}:{fr.lineno}"
    return "?"


# --------------------------------------------------------------------------------------
# CUDA emulation patches
# --------------------------------------------------------------------------------------
_ORIG_SDPA = F.scaled_dot_product_attention
_ORIG_DROPOUT = F.dropout


def _sdpa_cuda_policy(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """What torch's CUDA scaled_dot_product_attention does on sm80+ (flash > efficient > math).

    Mirrors aten/src/ATen/native/transformers/attention.cpp: backend choice, the bool mask
    converted to an additive mask of the query dtype (where(mask, 0, -inf)), the mem-efficient
    mask alignment/expand (preprocess_mask), and the autocast cast (SDPA is on the autocast
    lower-precision list).
    """
    if torch.is_autocast_enabled("cpu"):
        dt = torch.get_autocast_dtype("cpu")
        query, key, value = (t.to(dt) if t.is_floating_point() else t for t in (query, key, value))
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.to(dt)
    hd = query.shape[-1]
    low = query.dtype in (torch.float16, torch.bfloat16)
    same_hd = key.shape[-1] == hd and value.shape[-1] == hd
    hq, hk = query.shape[-3], key.shape[-3]
    gqa_ok = hq == hk or (enable_gqa and hq % hk == 0)
    if attn_mask is None and low and same_hd and hd <= 256 and hd % 8 == 0 and gqa_ok:
        return aten._scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, False, scale=scale)[0]
    if hq == hk and same_hd and hd % (8 if low else 4) == 0 and query.dtype != torch.float64:
        bias = attn_mask
        if bias is not None:
            if bias.dtype == torch.bool:
                neg = torch.scalar_tensor(float("-inf"), dtype=query.dtype, device=bias.device)
                bias = torch.where(bias, 0.0, neg)
            # preprocess_mask: strides of all but the last dim must be multiples of 8
            aligned = bias.stride(-1) == 1 and all(bias.stride(i) % 8 == 0 for i in range(bias.dim() - 1))
            if not aligned:
                last = bias.shape[-1]
                pad = 8 - last % 8
                bias = F.pad(bias, (0, pad))[..., :last]
            bias = bias.expand(query.shape[0], query.shape[1], query.shape[2], key.shape[2])
        need_lse = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
        return aten._scaled_dot_product_efficient_attention(
            query, key, value, bias, need_lse, dropout_p, is_causal, scale=scale
        )[0]
    mask = attn_mask
    if mask is not None and mask.dtype == torch.bool:
        neg = torch.scalar_tensor(float("-inf"), dtype=query.dtype, device=mask.device)
        mask = torch.where(mask, 0.0, neg)
    return aten._scaled_dot_product_attention_math(
        query, key, value, mask, dropout_p, is_causal, None, scale=scale, enable_gqa=enable_gqa
    )[0]


def _dropout_cuda(input: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> torch.Tensor:
    """CUDA dropout = fused native_dropout (output + 1-byte bool mask)."""
    if not training or p == 0.0:
        return input
    if p == 1.0 or input.numel() == 0:
        return _ORIG_DROPOUT(input, p, training, inplace)
    out = aten.native_dropout(input, p, True)[0]
    if inplace:
        return input.copy_(out)
    return out


def apply_cuda_emulation(native_sdpa: bool) -> list[str]:
    """Patches so that the fake-CPU run takes the code paths of a CUDA run. Returns their names."""
    applied: list[str] = []
    import transformers.masking_utils as mu
    from transformers.utils import import_utils as iu

    # 1+2. transformers treats FakeTensors as "tracing": it then keeps all-ones/causal masks
    # and assumes packed sequences. On a GPU the tensors are real: let masking_utils read
    # values (the tracker answers data-dependent reads: bool -> True, i.e. "no padding /
    # no packing"), which is the unpadded-batch answer.
    orig_is_tracing: Callable[[Any], bool] = iu.is_tracing

    def is_tracing_no_fake(tensor: Any = None) -> bool:
        return orig_is_tracing(None)

    mu.is_tracing = is_tracing_no_fake
    applied.append("masking_utils.is_tracing ignores FakeTensors (mask skip + packed-seq detection as on GPU)")
    if not native_sdpa:
        # 3. CUDA SDPA backend policy
        F.scaled_dot_product_attention = _sdpa_cuda_policy
        applied.append("F.scaled_dot_product_attention -> CUDA backend policy (flash > mem-efficient > math)")
    # 4. CUDA dropout kernel
    F.dropout = _dropout_cuda
    applied.append("F.dropout -> aten.native_dropout (bool mask)")
    return applied


@contextlib.contextmanager
def module_to_noop() -> Iterator[None]:
    """nn.Module.to does nothing (peft moves/casts adapters; FakeTensor params cannot be swapped)."""
    orig = torch.nn.Module.to
    torch.nn.Module.to = lambda self, *a, **k: self
    try:
        yield
    finally:
        torch.nn.Module.to = orig


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


def decay_param_groups(model: Any, params_named: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    """HF Trainer.create_optimizer grouping: weight-decay group, then no-decay (bias / norms)."""
    norm_pat = re.compile(r"(bias|layernorm|rmsnorm|(?:^|\.)norm(?:$|\.)|_norm(?:$|\.))", re.I)
    decay = [p for n, p in params_named if not norm_pat.search(n)]
    nodecay = [p for n, p in params_named if norm_pat.search(n)]
    return [{"params": decay, "weight_decay": 0.0}, {"params": nodecay, "weight_decay": 0.0}]


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
        groups = [g for g in decay_param_groups(model, trainable) if g["params"]]
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
    overall = max((p for _, p, _ in tracker.summary), default=0)
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
