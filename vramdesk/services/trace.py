"""``vramdesk trace``: one inference request or training step of a plan run in the user's own Python (their torch,
transformers and peft; vramdesk installs none of them) on fake tensors, its allocation stream replayed through the
caching-allocator model (:mod:`vramdesk.tracing.replay`) and set next to the estimate phase by phase.

The child is ``vramdesk/tracing/child.py`` (standard library + torch + transformers + peft only), fed one JSON
request on stdin. What a CPU trace cannot see -- the cuBLAS workspace a GPU's first GEMM allocates through the
caching allocator -- is added to the stream as the estimate prices it (one per stream: two when training), so that
traced and estimated figures count the same things; the report says so."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vramdesk.tracing
from vramdesk.core.constants import CUBLAS_WORKSPACE_PRE_HOPPER, CUBLAS_WORKSPACES_TRAINING
from vramdesk.core.messages import Message, Text, free
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.core.workloads import FinetuneWorkload, InferenceWorkload
from vramdesk.tracing import DECODE_STEPS, TIMEOUT_S
from vramdesk.tracing.alloc_rules import TraceError as StreamError
from vramdesk.tracing.replay import replay

EXIT_REFUSED, EXIT_MISSING = 3, 4  # the child's exit statuses (vramdesk/tracing/child.py)
CHILD_FORMAT = "vramdesk-trace-child/1"

NOT_EXECUTABLE = Message("trace.python.not_executable", "{path} is not an executable Python interpreter")
NO_TORCH = Message(
    "trace.python.no_torch",
    "{path} has no {missing}: pip install torch transformers peft in that environment",
)
CHILD_REFUSED = Message("trace.child.refused", "the trace refused this plan: {reason}")
CHILD_FAILED = Message("trace.child.failed", "the trace failed in {path}: {reason}")
CHILD_EXIT = Message("trace.child.exit", "exit status {status}")
CHILD_TIMEOUT = Message("trace.child.timeout", "the trace took longer than {seconds:.0f} s and was stopped")
CHILD_GARBLED = Message("trace.child.garbled", "the trace's answer is not what vramdesk expects ({problem})")
NOT_TRANSFORMERS = Message("trace.plan.engine", "the trace runs transformers; this plan's engine is {engine}")
ONE_GPU = Message("trace.plan.one_gpu", "the trace runs one GPU's share; this plan spreads over {gpus} GPUs")
METHOD = Message(
    "trace.plan.method",
    "the trace runs full fine-tuning, LoRA, IA3, prompt tuning, p-tuning, prefix tuning, LN tuning and VeRA; this "
    "plan uses {method}",
)
#: the fine-tuning methods the trace child runs (the child's own list: vramdesk.tracing.child.PEFT_METHODS)
TRACED_METHODS = ("full", "lora", "ia3", "prompt-tuning", "p-tuning", "prefix-tuning", "ln-tuning", "vera")
OPTIMIZER = Message(
    "trace.plan.optimizer",
    "the trace runs galore-adamw, apollo, apollo-mini, adam-mini, adamw, adamw-fused, adamw-forloop, sgd or "
    "adafactor, not {optimizer}",
)
#: optimizers the child builds (vramdesk/tracing/child.py make_optimizer); the last four from their own packages
TRACED_OPTIMIZERS: tuple[str, ...] = (
    "adamw",
    "adamw-fused",
    "adamw-forloop",
    "sgd",
    "adafactor",
    "galore-adamw",
    "apollo",
)
TRACED_OPTIMIZERS += ("apollo-mini", "adam-mini")
WEIGHTS = Message("trace.plan.weights", "the trace runs unquantised bf16 / fp16 / fp32 weights, not {weights}")
DECODE_RANGE = Message("trace.plan.decode_steps", "decode steps must be between 1 and the output length {output_len}")
WORKSPACE_NOTE = Message(
    "trace.note.workspace",
    "the traced figures include {count} cuBLAS workspace(s) of {mib:.3f} MiB, which a CPU trace cannot see: "
    "added at the first GEMM as the estimate prices them",
)
DECODE_NOTE = Message(
    "trace.note.decode",
    "{steps} decode step(s) traced; the estimate compared is for the same {steps} new token(s) "
    "(each further token adds one position per layer to the cache)",
)
NO_ESTIMATE_NOTE = Message("trace.note.no_estimate", "no estimate to compare with: {reason}")

# words for a difference, by where it comes from
WHY_WEIGHTS = Message(
    "trace.why.weights",
    "the weights counted differ, or building the model from its config makes a transient loading a checkpoint does "
    "not (an untied head before it is tied, a cast): compare the weights row",
)
WHY_STATE = Message("trace.why.state", "optimizer states or gradients are sized differently from the trace")
WHY_ACTIVATIONS = Message(
    "trace.why.activations", "activations and temporaries: the estimate's per-token rule differs from this code"
)
WHY_KV = Message("trace.why.kv", "the KV cache grows differently in this transformers version")
WHY_RESERVED = Message(
    "trace.why.reserved", "the estimate's reserve rule (rounding and cached blocks) differs from the replay"
)
WHY_CLOSE = Message("trace.why.close", "within {tolerance:.0f} %")
WHY_TRACE_ONLY = Message("trace.why.trace_only", "traced only: the estimate has no such phase")


class TraceRunError(Exception):
    """A trace that did not run; ``args[0]`` is its one-line Text."""


def child_script() -> Path:
    """The child script shipped with the package."""
    return Path(vramdesk.tracing.__file__).resolve().parent / "child.py"


# ---- the request ------------------------------------------------------------------------------------------------
def _dtype(scenario: Scenario, config: dict[str, Any]) -> str:
    weights = scenario.weights
    if weights in ("bf16", "fp16", "fp32"):
        return weights
    if weights != "auto" or config.get("quantization_config"):
        raise TraceRunError(WEIGHTS(weights=weights if weights != "auto" else "auto (a quantised checkpoint)"))
    own = str(config.get("dtype") or config.get("torch_dtype") or "bfloat16")
    return {"float16": "fp16", "float32": "fp32"}.get(own, "bf16")


def trace_request(scenario: Scenario, config: dict[str, Any], decode_steps: int | None = None) -> dict[str, Any]:
    """The child's request for ``scenario`` on ``config``; a plan the trace does not run raises TraceRunError."""
    work = scenario.workload
    if scenario.hardware.gpu_count * scenario.hardware.nodes > 1:
        raise TraceRunError(ONE_GPU(gpus=scenario.hardware.gpu_count * scenario.hardware.nodes))
    attention = "eager" if work.attention == "eager" else "sdpa"
    if isinstance(work, InferenceWorkload):
        if work.engine != "transformers":
            raise TraceRunError(NOT_TRANSFORMERS(engine=work.engine))
        steps = min(DECODE_STEPS, work.output_len) if decode_steps is None else decode_steps
        if not 1 <= steps <= work.output_len:
            raise TraceRunError(DECODE_RANGE(output_len=work.output_len))
        plan: dict[str, Any] = {
            "mode": "inference",
            "batch": work.batch,
            "input_len": work.input_len or 4096,
            "decode_steps": steps,
            "dtype": _dtype(scenario, config),
            "attention": attention,
        }
    else:
        plan = _training_plan(work, attention)
        # Adam-mini's partition of queries and keys by head (Adam_mini(dim=, n_heads=, n_kv_heads=))
        heads = config.get("num_attention_heads")
        plan["model_dims"] = {"dim": config.get("hidden_size"), "n_heads": heads}
        plan["model_dims"]["n_kv_heads"] = config.get("num_key_value_heads", heads)
        _dtype(scenario, config)  # a quantised base is refused here too
    return {"config": config, "plan": plan}


def _training_plan(work: FinetuneWorkload, attention: str) -> dict[str, Any]:
    if work.method not in TRACED_METHODS:
        raise TraceRunError(METHOD(method=work.method))
    if work.optimizer not in TRACED_OPTIMIZERS or work.optimizer_in_backward:
        raise TraceRunError(OPTIMIZER(optimizer=work.optimizer))
    plan: dict[str, Any] = {
        "mode": "finetune",
        "method": work.method,
        "micro_batch": work.micro_batch,
        "seq_len": work.seq_len,
        "precision": work.precision,
        "optimizer": work.optimizer,
        "projection_rank": work.projection_rank,
        "projection_gap": work.projection_gap,
        "grad_checkpointing": work.grad_checkpointing,
        "attention": attention,
    }
    if work.method != "full":
        plan["adapter_dtype"] = work.adapter_dtype
    if work.block_training != "off":
        plan["block_training"] = work.block_training
        plan["active_layers"] = work.active_layers
    if work.method in ("prompt-tuning", "p-tuning", "prefix-tuning"):
        plan["num_virtual_tokens"] = work.num_virtual_tokens
    if work.method == "prefix-tuning":
        plan["prefix_projection"] = work.prefix_projection
    if work.method == "vera":
        plan["vera_rank"] = work.vera_rank
    if work.method == "lora":
        targets = list(work.lora_targets)
        plan.update(
            lora_rank=work.lora_rank,
            lora_alpha=2 * work.lora_rank,
            lora_dropout=work.lora_dropout,
            lora_targets="all-linear" if targets == ["all-linear"] else targets,
        )
    return plan


def compared_scenario(scenario: Scenario, request: dict[str, Any]) -> Scenario:
    """The plan as traced: an inference plan's output length is the number of decode steps traced."""
    plan = request["plan"]
    if plan["mode"] != "inference":
        return scenario
    work = scenario.workload.model_copy(update={"output_len": plan["decode_steps"]})
    return scenario.model_copy(update={"workload": work})


# ---- the child --------------------------------------------------------------------------------------------------
def run_child(python: str | Path, request: dict[str, Any], timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """Run the child script with ``python`` on ``request``; its answer, or TraceRunError with one line."""
    exe = Path(python).expanduser()
    if not exe.is_file() or not os.access(exe, os.X_OK):
        raise TraceRunError(NOT_EXECUTABLE(path=str(exe)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"))}
    env["HF_HUB_OFFLINE"] = "1"  # the config is given: nothing to download
    env["PYTHONWARNINGS"] = "ignore::FutureWarning"
    try:
        proc = subprocess.run(
            [str(exe), str(child_script())],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise TraceRunError(CHILD_TIMEOUT(seconds=timeout)) from err
    except OSError as err:
        raise TraceRunError(NOT_EXECUTABLE(path=str(exe))) from err
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    if proc.returncode == EXIT_MISSING and last.startswith("missing: "):
        raise TraceRunError(NO_TORCH(path=str(exe), missing=", ".join(last.removeprefix("missing: ").split())))
    if proc.returncode == EXIT_REFUSED and last:
        raise TraceRunError(CHILD_REFUSED(reason=free(last)))
    if proc.returncode != 0:
        raise TraceRunError(
            CHILD_FAILED(path=str(exe), reason=free(last) if last else CHILD_EXIT(status=proc.returncode))
        )
    return parse_answer(proc.stdout)


def parse_answer(stdout: str) -> dict[str, Any]:
    """The child's JSON answer, checked for the keys the replay needs."""
    try:
        answer = json.loads(stdout)
    except json.JSONDecodeError as err:
        raise TraceRunError(CHILD_GARBLED(problem=free(f"not JSON: {err}"))) from err
    if not isinstance(answer, dict) or answer.get("format") != CHILD_FORMAT:
        raise TraceRunError(CHILD_GARBLED(problem=free(f"format is not {CHILD_FORMAT}")))
    if not isinstance(answer.get("events"), list) or not isinstance(answer.get("versions"), dict):
        raise TraceRunError(CHILD_GARBLED(problem=free("no events or versions")))
    return answer


# ---- the comparison ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PhaseRow:
    """One traced phase: its peaks (the replay) and the estimate's allocated figure for it (None: no such phase)."""

    name: str
    allocated: int
    reserved: int
    estimate: int | None
    why: Text

    @property
    def diff(self) -> float | None:
        """The estimate's difference from the trace, as a fraction of the traced figure."""
        return None if self.estimate is None or not self.allocated else self.estimate / self.allocated - 1


@dataclass(frozen=True)
class ComponentRow:
    """A part of the memory the trace can tell apart: live bytes at a phase boundary, and the estimate's."""

    name: str
    traced: int
    estimate: int | None


@dataclass(frozen=True)
class TraceReport:
    mode: str
    versions: dict[str, str]
    model_type: str
    params: int
    trainable: int
    phases: tuple[PhaseRow, ...]
    components: tuple[ComponentRow, ...]
    peak_allocated: int
    peak_reserved: int
    estimate_allocated: int | None
    estimate_reserved: int | None
    notes: tuple[Text, ...] = field(default=())


#: the estimate's phases each traced phase stands for (a name that starts with one of these)
_PHASES = {
    "load": ("load",),
    "prefill": ("prefill",),
    "decode": ("decode",),
    "forward": ("forward",),
    "loss + start of backward": ("loss + start of backward",),
    "backward": ("backward",),
    "optimizer step": ("optimizer step",),
}
TOLERANCE = 0.03


def with_workspaces(events: Sequence[list[Any]], sizes: Sequence[int]) -> list[list[Any]]:
    """``events`` with one allocation per workspace size just before the first phase after ``load``."""
    out = list(events)
    at = next((i for i, e in enumerate(out) if e[0] == "p" and e[1] != "load" and i > 0), len(out))
    return out[:at] + [["a", f"workspace{k}", n] for k, n in enumerate(sizes)] + out[at:]


def live_at_markers(events: Sequence[list[Any]]) -> dict[str, int]:
    """Live bytes (512-rounded per tensor) at the first marker of each phase."""
    sizes: dict[Any, int] = {}
    live = 0
    seen: dict[str, int] = {}
    for e in events:
        if e[0] == "a":
            sizes[e[1]] = n = 512 * ((int(e[2]) + 511) // 512)
            live += n
        elif e[0] == "f":
            live -= sizes.pop(e[1], 0)
        else:
            seen.setdefault(str(e[1]), live)
    return seen


def _workspace_sizes(est: Estimate | None, training: bool) -> list[int]:
    count = CUBLAS_WORKSPACES_TRAINING if training else 1
    total = 0
    if est is not None:
        total = sum(c.bytes for c in est.phases[-1].components if c.category == "overhead")
    total = total or CUBLAS_WORKSPACE_PRE_HOPPER * count
    return [total // count] * count


def _why(name: str, diff: float | None) -> Text:
    if diff is None:
        return WHY_TRACE_ONLY()
    if abs(diff) <= TOLERANCE:
        return WHY_CLOSE(tolerance=100 * TOLERANCE)
    if name == "load":
        return WHY_WEIGHTS()
    if name == "decode":
        return WHY_KV()
    if name == "optimizer step":
        return WHY_STATE()
    return WHY_ACTIVATIONS()


def _est_phase(est: Estimate | None, name: str) -> int | None:
    if est is None or name not in _PHASES:
        return None
    found = [p.allocated_bytes for p in est.phases if p.name.startswith(_PHASES[name])]
    return max(found) if found else None


def _components(est: Estimate | None, live: dict[str, int], training: bool, tail: int) -> list[ComponentRow]:
    def est_part(phase: str, pick: str) -> int | None:
        if est is None:
            return None
        for p in est.phases:
            if p.name.startswith(phase):
                return sum(c.bytes for c in p.components if pick in (c.category, c.name))
        return None

    after_load = next((v for k, v in live.items() if k != "load"), 0)
    weights = min(live.get("prefill", after_load), live.get("optimizer warm-up", after_load))
    rows = [ComponentRow("weights", weights, est_part("load" if not training else "forward", "weights"))]
    if not training:
        rows.append(
            ComponentRow("KV cache", max(live.get("end", 0) - weights - tail, 0), est_part("decode", "kv_cache"))
        )
        return rows
    states = live.get("forward", weights) - live.get("optimizer warm-up", weights)
    rows.append(ComponentRow("optimizer states", states, est_part("forward", "optimizer states")))
    grads = live.get("optimizer step", 0) - live.get("forward", 0)
    rows.append(ComponentRow("gradients", max(grads, 0), est_part("optimizer step", "gradients")))
    return rows


def compare(
    answer: dict[str, Any], est: Estimate | None, plan: dict[str, Any], notes: Sequence[Text] = ()
) -> TraceReport:
    """The child's answer replayed (cuBLAS workspaces added) and set next to ``est`` (None: traced figures only)."""
    mode = str(plan["mode"])
    training = mode == "finetune"
    sizes = _workspace_sizes(est, training)
    events = with_workspaces(answer["events"], sizes)
    try:
        result = replay(events)
    except StreamError as err:
        raise TraceRunError(CHILD_GARBLED(problem=free(str(err)))) from err
    rows = []
    for name, (allocated, reserved) in result.phases.items():
        if name == "end":
            continue
        guess = _est_phase(est, name)
        row = PhaseRow(name, allocated, reserved, guess, WHY_TRACE_ONLY())
        rows.append(PhaseRow(name, allocated, reserved, guess, _why(name, row.diff)))
    live = live_at_markers(answer["events"])
    # the decode's next-token ids (int64, one per sequence) are live at the end beside the cache
    tail = 512 * ((8 * int(plan.get("batch", 1)) + 511) // 512) if not training else 0
    all_notes = [WORKSPACE_NOTE(count=len(sizes), mib=sizes[0] / 2**20), *notes]
    return TraceReport(
        mode=mode,
        versions={str(k): str(v) for k, v in answer["versions"].items()},
        model_type=str(answer.get("model_type", "")),
        params=int(answer.get("params", 0)),
        trainable=int(answer.get("trainable", 0)),
        phases=tuple(rows),
        components=tuple(_components(est, live, training, tail)),
        peak_allocated=result.peak_allocated,
        peak_reserved=result.peak_reserved,
        estimate_allocated=None if est is None else est.peak_allocated_bytes,
        estimate_reserved=None if est is None else est.peak_reserved_bytes,
        notes=tuple(all_notes),
    )


def reserved_words(report: TraceReport) -> Text:
    """Why the estimate's reserved peak differs from the replay's, or that it does not."""
    if report.estimate_reserved is None or not report.peak_reserved:
        return WHY_TRACE_ONLY()
    diff = report.estimate_reserved / report.peak_reserved - 1
    return WHY_CLOSE(tolerance=100 * TOLERANCE) if abs(diff) <= TOLERANCE else WHY_RESERVED()


NO_CONFIG = Message("trace.config.missing", "{model}: no config.json to trace ({problem})")


def model_config(ref: str) -> dict[str, Any]:
    """The config.json of a catalog model, a local file or folder, the HF cache or the Hub (read as JSON only)."""
    from vramdesk.error_words import said
    from vramdesk.services.cache import find_cached
    from vramdesk.services.catalog import default_catalog
    from vramdesk.services.hub import HubClient, HubError
    from vramdesk.services.local import LocalModelError, looks_like_path, read_config

    catalog = default_catalog()
    try:
        if catalog.find(ref) is not None:
            return catalog.config(ref)
        if looks_like_path(ref):
            return read_config(Path(ref).expanduser())
        cached = find_cached(ref)
        if cached is not None and cached.has_config:
            return read_config(cached.snapshot)
        return HubClient().config(ref)
    except (LocalModelError, OSError) as err:
        raise TraceRunError(NO_CONFIG(model=ref, problem=said(err))) from err
    except HubError as err:
        raise TraceRunError(NO_CONFIG(model=ref, problem=err.message)) from err
