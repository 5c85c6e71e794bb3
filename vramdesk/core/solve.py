"""Inverse questions, answered exactly on the estimator's own model.

* :func:`maximize`: the largest input length, batch, training sequence length, micro-batch or LoRA rank that
  still gets an accepted verdict ("fits"; "tight" too when asked). Galloping (1, 2, 4, ...) then bisection
  over integers; the answer is checked: the estimate at the answer is accepted and at answer + 1 it is not
  (unless a stated limit, such as the model's context length, stopped the search first).
* :func:`minimize_gpus`: the fewest GPUs of one type, scanning 1, 2, 3, ... (a GPU count changes how
  the work is split, so the scan does not assume monotonicity).
* :func:`smallest_changes`: single and pairwise changes to a configuration, each checked by running the
  estimator, ranked by a stated quality and speed cost.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from .dtype_names import FormatError, kv_bits
from .engines import engine
from .estimate import EstimateError, estimate, resolve_format
from .facts import ModelFacts
from .gpu import GpuSpec, hardware_text
from .performance import PerformanceError, performance
from .result import Estimate
from .scenario import MAX_TOKENS, FinetuneWorkload, InferenceWorkload, Scenario

_R = TypeVar("_R")

FIELDS: tuple[str, ...] = ("input_len", "batch", "seq_len", "micro_batch", "lora_rank")
Verdict = Literal["fits", "tight", "does not fit"]


class SolveError(ValueError):
    """A question that does not apply to the scenario (e.g. --maximize batch for fine-tuning)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Probe(_Frozen):
    value: int
    verdict: Verdict | None
    device_bytes: int | None
    required_bytes: int | None = None
    error: str | None = None


class SolveResult(_Frozen):
    field: str
    #: the largest accepted value; None when even the smallest value is not accepted
    value: int | None
    current: int | None
    #: what stopped the search: "memory", "model context", "search limit" or "nothing fits"
    limited_by: Literal["memory", "model context", "search limit", "nothing fits"]
    limit: int
    accepted: tuple[str, ...]
    #: the estimate at the answer and one step beyond (the proof of the boundary)
    at_value: Probe | None
    above: Probe | None
    evaluations: int
    message: str


class GpuCountResult(_Frozen):
    gpu: str
    #: fewest GPUs accepted (all machines together); None when none up to ``max_gpus`` is
    gpus: int | None
    #: machines they are spread over (fine-tuning beyond one machine counts whole machines)
    machines: int = 1
    max_gpus: int
    accepted: tuple[str, ...]
    #: the scenario as solved (tp set for vLLM, ZeRO-3 for fine-tuning without sharding)
    scenario: dict[str, Any] | None
    at_value: Probe | None
    below: Probe | None
    evaluations: int
    how: str
    message: str


# ---------------------------------------------------------------------------------------------- helpers


def _accepted(allow_tight: bool) -> tuple[str, ...]:
    return ("fits", "tight") if allow_tight else ("fits",)


def with_work(scenario: Scenario, **update: Any) -> Scenario:
    """A copy of ``scenario`` with workload fields replaced, validated."""
    data = scenario.model_dump(mode="json")
    work = data["workload"]
    work.update(update)
    mean = work.get("mean_seq_len")
    if mean is not None and "seq_len" in update and mean > work["seq_len"]:
        # a shorter longest batch cuts the varying ones too: their mean cannot exceed it
        work["mean_seq_len"] = work["seq_len"]
    return Scenario.model_validate(data)


def with_data(scenario: Scenario, update: Callable[[dict[str, Any]], None]) -> Scenario:
    data = scenario.model_dump(mode="json")
    update(data)
    return Scenario.model_validate(data)


#: the verdict headroom the solvers use (set by their ``headroom_fraction`` argument for the call's duration)
_HEADROOM: ContextVar[float | None] = ContextVar("vramdesk_solver_headroom", default=None)


def _with_headroom(fn: Callable[..., _R]) -> Callable[..., _R]:
    """Give a solver a ``headroom_fraction`` keyword that every estimate it runs uses."""

    @functools.wraps(fn)
    def wrapper(*args: Any, headroom_fraction: float | None = None, **kwargs: Any) -> _R:
        token = _HEADROOM.set(headroom_fraction)
        try:
            return fn(*args, **kwargs)
        finally:
            _HEADROOM.reset(token)

    return wrapper


def probe(scenario: Scenario, facts: ModelFacts, gpu: GpuSpec) -> tuple[Probe, Estimate | None]:
    try:
        est = estimate(scenario, facts, gpu, headroom_fraction=_HEADROOM.get())
    except (EstimateError, FormatError, ValueError) as err:
        return Probe(value=0, verdict=None, device_bytes=None, error=str(err)), None
    fit = est.fit
    assert fit is not None  # a GPU was given
    return Probe(value=0, verdict=fit.verdict, device_bytes=est.device_bytes, required_bytes=fit.required_bytes), est


def _setter(scenario: Scenario, field: str) -> tuple[Callable[[int], Scenario], int | None, int]:
    work = scenario.workload
    if field in ("input_len", "batch"):
        if not isinstance(work, InferenceWorkload):
            raise SolveError(f"--maximize {field.replace('_', '-')} applies to inference (use seq-len / micro-batch)")
        limit = MAX_TOKENS if field == "input_len" else 65536
        current = work.input_len if field == "input_len" else work.batch
        return (lambda v: with_work(scenario, **{field: v})), current, limit
    if field == "n_gpu_layers":
        if not isinstance(work, InferenceWorkload) or not engine(work.engine).offloads_gpu_layers:
            raise SolveError("n_gpu_layers applies to the llama.cpp engine")

        def set_ngl(v: int) -> Scenario:
            return with_data(scenario, lambda d: d["workload"].setdefault("llamacpp", {}).update(n_gpu_layers=v))

        return set_ngl, work.llamacpp.n_gpu_layers, 100000
    if field in ("seq_len", "micro_batch", "lora_rank"):
        if not isinstance(work, FinetuneWorkload):
            raise SolveError(f"--maximize {field.replace('_', '-')} applies to fine-tuning (--mode finetune)")
        if field == "lora_rank" and work.method == "full":
            raise SolveError("--maximize lora-rank needs --method lora or qlora")
        limit = MAX_TOKENS if field == "seq_len" else 65536
        current = getattr(work, field)
        return (lambda v: with_work(scenario, **{field: v})), int(current), limit
    raise SolveError(f"cannot maximize '{field}' (choose from {', '.join(FIELDS)})")


@_with_headroom
def maximize(
    scenario: Scenario,
    facts: ModelFacts,
    gpu: GpuSpec,
    field: str,
    *,
    allow_tight: bool = False,
    respect_model_context: bool = True,
    limit: int | None = None,
) -> SolveResult:
    """The largest value of ``field`` whose estimate gets an accepted verdict on ``gpu`` (x gpu_count)."""
    field = field.replace("-", "_")
    build, current, hard = _setter(scenario, field)
    accepted = _accepted(allow_tight)
    cap = hard if limit is None else min(hard, limit)
    limited_by_context = False
    arch = facts.arch
    if field == "lora_rank":
        cap = min(cap, arch.hidden)
    if field == "n_gpu_layers":
        cap = min(cap, arch.n_layers + 1)  # llama.cpp counts the output layer as one more
    work = scenario.workload
    if respect_model_context and arch.max_position:
        if field == "input_len" and isinstance(work, InferenceWorkload):
            ctx_cap = max(1, arch.max_position - work.output_len)
            if ctx_cap < cap:
                cap, limited_by_context = ctx_cap, True
        elif field == "seq_len" and arch.max_position < cap:
            cap, limited_by_context = arch.max_position, True
    evaluations = 0
    cache: dict[int, Probe] = {}

    def ok(v: int) -> bool:
        nonlocal evaluations
        if v not in cache:
            evaluations += 1
            try:
                s = build(v)
            except ValueError as err:
                cache[v] = Probe(value=v, verdict=None, device_bytes=None, error=str(err))
            else:
                p, _ = probe(s, facts, gpu)
                cache[v] = p.model_copy(update={"value": v})
        return cache[v].verdict in accepted

    lo_value = 0 if field == "n_gpu_layers" else 1
    if not ok(lo_value):
        p = cache[lo_value]
        return SolveResult(
            field=field,
            value=None,
            current=current,
            limited_by="nothing fits",
            limit=cap,
            accepted=accepted,
            at_value=None,
            above=p,
            evaluations=evaluations,
            message=(
                f"even {field} = {lo_value} is only tight on the {gpu.name} (it runs inside the headroom; "
                "allow tight plans to count it)"
                if p.verdict == "tight"
                else f"even {field} = {lo_value} does not fit the {gpu.name}"
                + (f" ({p.error})" if p.error else f": {p.verdict}")
            ),
        )
    # gallop from the smallest value, then bisect [lo accepted, hi rejected)
    lo, hi = lo_value, None
    step = 1
    while hi is None:
        nxt = min(cap, lo + step) if lo_value == 0 else min(cap, max(lo * 2, lo + 1))
        if nxt == lo:
            break
        if ok(nxt):
            lo = nxt
            step *= 2
            if nxt == cap:
                break
        else:
            hi = nxt
    if hi is not None:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                lo = mid
            else:
                hi = mid
    at = cache[lo]
    above: Probe | None = None
    limited: Literal["memory", "model context", "search limit"]
    if lo < cap:
        ok(lo + 1)
        above = cache[lo + 1]
        if above.verdict in accepted:  # pragma: no cover - non-monotone estimator; report honestly
            raise SolveError(f"{field}: the estimate is not monotone near {lo}; no exact boundary")
        limited = "memory"
    else:
        limited = "model context" if limited_by_context else "search limit"
    name = field.replace("_", " ")
    msg = f"largest {name} that {' or '.join(accepted)} on {scenario.hardware.gpu_count} x {gpu.name}: {lo:,}"
    if limited == "memory" and above is not None:
        msg += f" ({name} {lo + 1:,}: {above.verdict or above.error})"
    elif limited == "model context":
        msg += f" (the model's context limit; memory would allow more than {cap:,})"
    elif limited == "search limit":
        msg += f" (search limit {cap:,})"
    return SolveResult(
        field=field,
        value=lo,
        current=current,
        limited_by=limited,
        limit=cap,
        accepted=accepted,
        at_value=at,
        above=above,
        evaluations=evaluations,
        message=msg,
    )


#: GPUs in one machine when a fine-tune outgrows the plan's own: a common 8-GPU server (a plan that already spans
#: machines keeps its own GPUs per machine)
GPUS_PER_MACHINE = 8
#: the most machines "what to change" suggests for a fine-tune that needs more GPUs
MAX_MACHINES = 8


def gpu_counts(scenario: Scenario, max_gpus: int) -> list[tuple[int, int]]:
    """The (GPUs per machine, machines) to try, fewest GPUs first: 1, 2, ... on one machine, then whole machines
    for fine-tuning (nobody rents 121 GPUs as 15 machines and one GPU); inference stays on one machine."""
    per = scenario.hardware.gpu_count if scenario.hardware.nodes > 1 else GPUS_PER_MACHINE
    if isinstance(scenario.workload, InferenceWorkload):
        return [(n, 1) for n in range(1, max_gpus + 1)]
    out = [(n, 1) for n in range(1, min(per, max_gpus) + 1)]
    machines = 2
    while per * machines <= max_gpus:
        out.append((per, machines))
        machines += 1
    return out


def gpu_layout(scenario: Scenario, n: int, machines: int = 1) -> tuple[Scenario, str]:
    """``scenario`` on ``n`` GPUs per machine and ``machines`` machines: vLLM uses tensor parallel n;
    transformers and llama.cpp split layers; fine-tuning keeps its sharding, or adds ZeRO-3 when it has none
    (plain data parallel copies everything)."""
    work = scenario.workload

    def upd(d: dict[str, Any]) -> None:
        d["hardware"]["gpu_count"] = n
        d["hardware"]["nodes"] = machines
        par = d["parallelism"]
        if isinstance(work, InferenceWorkload):
            if engine(work.engine).grows_by_tensor_parallel:
                par["tp"], par["pp"] = n, 1
            else:
                par["tp"] = min(par["tp"], n)
                par["pp"] = min(par["pp"], max(1, n // par["tp"]))
        else:
            if par["tp"] * par["pp"] > n:
                par["tp"], par["pp"] = 1, 1
            if n * machines > 1 and par["zero"] == 0 and not par["fsdp"]:
                par["zero"] = 3

    s = with_data(scenario, upd)
    if isinstance(work, InferenceWorkload):
        how = (
            "tensor parallel over all GPUs"
            if engine(work.engine).grows_by_tensor_parallel
            else "layers split across the GPUs"
        )
    else:
        p = s.parallelism
        how = "FSDP" if p.fsdp else (f"ZeRO-{p.zero}" if p.zero else "data parallel")
        how += f", tp {p.tp}, pp {p.pp}"
    return s, how


@_with_headroom
def minimize_gpus(
    scenario: Scenario, facts: ModelFacts, gpu: GpuSpec, *, max_gpus: int = 64, allow_tight: bool = False
) -> GpuCountResult:
    accepted = _accepted(allow_tight)
    evaluations = 0
    prev: Probe | None = None
    work = scenario.workload
    heads = facts.arch.layers[0].n_heads if facts.arch.layers else 1
    for per, machines in gpu_counts(scenario, max_gpus):
        n = per * machines
        if isinstance(work, InferenceWorkload) and engine(work.engine).grows_by_tensor_parallel and heads % n:
            # vLLM refuses a tensor-parallel size that does not divide the attention heads
            prev = Probe(value=n, verdict=None, device_bytes=None, error=f"{heads} attention heads % tp {n} != 0")
            continue
        try:
            s, how = gpu_layout(scenario, per, machines)
        except ValueError as err:
            prev = Probe(value=n, verdict=None, device_bytes=None, error=str(err))
            continue
        evaluations += 1
        p, _ = probe(s, facts, gpu)
        p = p.model_copy(update={"value": n})
        if p.verdict in accepted:
            where = hardware_text(gpu.name, per, machines) + (f" = {n} GPUs" if machines > 1 else "")
            return GpuCountResult(
                gpu=gpu.name,
                gpus=n,
                machines=machines,
                max_gpus=max_gpus,
                accepted=accepted,
                scenario=s.model_dump(mode="json"),
                at_value=p,
                below=prev,
                evaluations=evaluations,
                how=how,
                message=f"{where} ({how}): {p.verdict}",
            )
        prev = p
    return GpuCountResult(
        gpu=gpu.name,
        gpus=None,
        max_gpus=max_gpus,
        accepted=accepted,
        scenario=None,
        at_value=None,
        below=prev,
        evaluations=evaluations,
        how="",
        message=f"does not fit on up to {max_gpus} x {gpu.name}"
        + (f" ({prev.error or prev.verdict})" if prev is not None else ""),
    )


# ---------------------------------------------------------------------------------------------- changes


class Change(_Frozen):
    """One candidate edit of a scenario."""

    key: str
    description: str
    #: 0 = none ... 10 = severe; stated per kind in QUALITY_COST
    quality_cost: float
    #: 0 = none ... 10 = severe; stated per kind in SPEED_COST
    speed_cost: float


class Option(_Frozen):
    changes: tuple[Change, ...]
    verdict: Verdict
    device_bytes: int
    cost: float
    scenario: dict[str, Any]
    summary: str
    #: expected speed with this change (decode tokens/s per sequence, or training tokens/s); None when the GPU
    #: lacks the figures
    tokens_per_s: float | None = None


class ChangesResult(_Frozen):
    current_verdict: Verdict | None
    options: tuple[Option, ...]
    tried: int
    rule: str


#: how each kind of change is scored (quality 0-10, speed 0-10); the ranking cost is their sum, and a pair
#: costs the sum of its parts
COST_RULE = (
    "cost = quality + speed, each 0-10: KV fp8/int8/q8_0 quality 1; KV q4_0 quality 3; 8-bit weights quality 1; "
    "5-6 bit GGUF quality 2; 4-bit weights quality 3 (speed +1 for bitsandbytes); activation checkpointing "
    "speed 3 (the forward runs twice); 8-bit optimizer quality 1; full -> LoRA quality 3; LoRA -> QLoRA quality 2 "
    "+ speed 3; vLLM gpu_memory_utilization 0.95 or max_num_batched_tokens 2048 speed 1, --enforce-eager speed 3; "
    "optimizer offload speed 5; parameter offload speed 8; expandable_segments 0; chunked cross-entropy speed 1; "
    "FSDP2 for LoRA 0; ZeRO-2 speed 1, ZeRO-3 or FSDP full shard speed 2; llama.cpp CPU layers speed 2-9 by the "
    "share on the CPU; shorter context / sequence quality 2 + 6 x the share cut; smaller batch speed 1 + 6 x the "
    "share cut; n more GPUs cost 2 x n (money)"
)


@dataclass(frozen=True)
class _Cand:
    change: Change
    apply: Callable[[Scenario], Scenario]
    #: a solver-backed change: the largest value of this field that fits the scenario as changed so far
    #: (so "4-bit weights + the longest context that then fits" is one pair)
    solve: str | None = None


def _solved_change(
    field: str, scenario: Scenario, original: Scenario, facts: ModelFacts, gpu: GpuSpec, allow_tight: bool
) -> tuple[Scenario, Change] | None:
    """Apply the largest ``field`` value that fits ``scenario``; None when nothing fits or it is no cut."""
    work = original.workload
    r = maximize(scenario, facts, gpu, field, allow_tight=allow_tight)
    if r.value is None:
        return None
    v = r.value
    if isinstance(work, InferenceWorkload):
        if field == "input_len":
            cur = work.input_len or min(facts.arch.max_position or 4096, 4096)
            if v >= cur:
                return None
            share = 1 - v / cur
            ch = Change(
                key="input_len", description=f"input length {cur:,} -> {v:,}", quality_cost=2 + 6 * share, speed_cost=0
            )
            return with_work(scenario, input_len=v), ch
        if field == "batch":
            if v >= work.batch:
                return None
            share = 1 - v / work.batch
            ch = Change(key="batch", description=f"batch {work.batch} -> {v}", quality_cost=0, speed_cost=1 + 6 * share)
            return with_work(scenario, batch=v), ch
        total = facts.arch.n_layers + 1
        if v >= total:
            return None
        share = 1 - v / total
        ch = Change(
            key="n_gpu_layers",
            description=f"offload: {v} of {total} layers on the GPU, the rest on the CPU",
            quality_cost=0,
            speed_cost=2 + 7 * share,
        )
        return with_data(scenario, lambda d: d["workload"].setdefault("llamacpp", {}).update(n_gpu_layers=v)), ch
    assert isinstance(work, FinetuneWorkload)
    if field == "seq_len":
        if v >= work.seq_len:
            return None
        share = 1 - v / work.seq_len
        ch = Change(
            key="seq_len",
            description=f"sequence length {work.seq_len:,} -> {v:,}",
            quality_cost=2 + 6 * share,
            speed_cost=0,
        )
        return with_work(scenario, seq_len=v), ch
    if v >= work.micro_batch:
        return None
    accum = work.grad_accum * -(-work.micro_batch // v)
    ch = Change(
        key="micro_batch",
        description=f"micro-batch {work.micro_batch} -> {v}, grad_accum {accum} (same tokens per step)",
        quality_cost=0,
        speed_cost=1,
    )
    return with_work(scenario, micro_batch=v, grad_accum=accum), ch


def _solver_cand(field: str) -> _Cand:
    return _Cand(Change(key=field, description=field, quality_cost=0, speed_cost=0), lambda s: s, solve=field)


def _bits(scenario: Scenario, facts: ModelFacts, name: str) -> float:
    try:
        fmt, _ = resolve_format(scenario.model_copy(update={"weights": name}), facts.arch)
    except EstimateError:
        return 1e9
    wb = facts.weights(fmt, frozenset({"text"}))
    return 8.0 * wb.total / max(1, wb.params)


def _current_bits(scenario: Scenario, facts: ModelFacts) -> float:
    fmt, _ = resolve_format(scenario, facts.arch)
    if scenario.weights == "auto" and facts.checkpoint is not None:
        total = sum(t.stored_bytes or 2 * t.numel for t in facts.checkpoint if t.part == "text")
        params = sum(t.numel for t in facts.checkpoint if t.part == "text")
        return 8.0 * total / max(1, params)
    wb = facts.weights(fmt, frozenset({"text"}))
    return 8.0 * wb.total / max(1, wb.params)


def _inference_candidates(
    scenario: Scenario, work: InferenceWorkload, facts: ModelFacts, gpu: GpuSpec, allow_tight: bool
) -> list[_Cand]:
    out: list[_Cand] = []
    eng = engine(work.engine)
    cur_bits = _current_bits(scenario, facts)
    # the lighter weight formats and KV dtypes each engine runs: (name, quality cost[, speed cost])
    for name, q, sp in eng.lighter_weights:
        if _bits(scenario, facts, name) < cur_bits * 0.95:
            out.append(
                _Cand(
                    Change(key=f"weights={name}", description=f"weights {name}", quality_cost=q, speed_cost=sp),
                    lambda s, n=name: s.model_copy(update={"weights": n}),  # type: ignore[misc]
                )
            )
    cur_kv = work.kv_dtype
    try:
        cur_kv_bits = kv_bits("bf16" if cur_kv == "auto" else cur_kv)
    except FormatError:  # pragma: no cover - Literal
        cur_kv_bits = 16.0
    for name, q in eng.lighter_kv:
        if kv_bits(name) < cur_kv_bits:
            out.append(
                _Cand(
                    Change(key=f"kv_dtype={name}", description=f"KV cache {name}", quality_cost=q, speed_cost=0.0),
                    lambda s, n=name: with_work(s, kv_dtype=n),  # type: ignore[misc]
                )
            )
    if eng.has_pool_budget:
        v = work.vllm
        if v.gpu_memory_utilization < 0.95:
            out.append(
                _Cand(
                    Change(
                        key="gpu_memory_utilization=0.95",
                        description=f"vLLM gpu_memory_utilization {v.gpu_memory_utilization} -> 0.95",
                        quality_cost=0,
                        speed_cost=1,
                    ),
                    lambda s: with_data(
                        s, lambda d: d["workload"].setdefault("vllm", {}).update(gpu_memory_utilization=0.95)
                    ),
                )
            )
        if v.max_num_batched_tokens is None or v.max_num_batched_tokens > 2048:
            out.append(
                _Cand(
                    Change(
                        key="max_num_batched_tokens=2048",
                        description="vLLM max_num_batched_tokens 2048 (smaller prefill chunks)",
                        quality_cost=0,
                        speed_cost=1,
                    ),
                    lambda s: with_data(
                        s, lambda d: d["workload"].setdefault("vllm", {}).update(max_num_batched_tokens=2048)
                    ),
                )
            )
        if not v.enforce_eager:
            out.append(
                _Cand(
                    Change(
                        key="enforce_eager",
                        description="vLLM --enforce-eager (no CUDA graphs)",
                        quality_cost=0,
                        speed_cost=3,
                    ),
                    lambda s: with_data(s, lambda d: d["workload"].setdefault("vllm", {}).update(enforce_eager=True)),
                )
            )
    out.append(_solver_cand("input_len"))
    if work.batch > 1:
        out.append(_solver_cand("batch"))
    if eng.offloads_gpu_layers:
        out.append(_solver_cand("n_gpu_layers"))
    return out


def _training_candidates(scenario: Scenario, work: FinetuneWorkload, facts: ModelFacts, gpu: GpuSpec) -> list[_Cand]:
    out: list[_Cand] = []
    if not work.grad_checkpointing:
        out.append(
            _Cand(
                Change(
                    key="grad_checkpointing", description="activation checkpointing on", quality_cost=0, speed_cost=3
                ),
                lambda s: with_work(s, grad_checkpointing=True),
            )
        )
    if not work.chunked_loss:
        # the loss head (12 B x tokens x vocab) is the largest transient of long sequences and large vocabularies;
        # a chunked / fused cross-entropy (Liger's, torchtune's) keeps one chunk's fp32 terms
        out.append(
            _Cand(
                Change(
                    key="chunked_loss",
                    description="chunked cross-entropy (Liger / torchtune)",
                    quality_cost=0,
                    speed_cost=1,
                ),
                lambda s: with_work(s, chunked_loss=True),
            )
        )
    if not work.expandable_segments:
        # the allocator's cache of free blocks shrinks to about a fifth of the loss head (benchmarks/allocator)
        out.append(
            _Cand(
                Change(
                    key="expandable_segments",
                    description="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                    quality_cost=0,
                    speed_cost=0,
                ),
                lambda s: with_work(s, expandable_segments=True),
            )
        )
    par = scenario.parallelism
    if par.fsdp and par.fsdp_version == 1 and work.method != "full":
        # FSDP1's flat parameters make frozen layers keep their inputs; fully_shard does not
        out.append(
            _Cand(
                Change(
                    key="fsdp_version=2",
                    description="FSDP2 (fully_shard) instead of FSDP1",
                    quality_cost=0,
                    speed_cost=0,
                ),
                lambda s: with_data(s, lambda d: d["parallelism"].update(fsdp_version=2)),
            )
        )
    out += _sharding_candidates(scenario)
    if work.optimizer in ("adamw", "adamw-fused", "lion", "adafactor"):
        out.append(
            _Cand(
                Change(key="optimizer=adamw-8bit", description="8-bit AdamW", quality_cost=1, speed_cost=0),
                lambda s: with_work(s, optimizer="adamw-8bit"),
            )
        )
    if work.method == "full":
        out.append(
            _Cand(
                Change(key="method=lora", description="LoRA instead of full fine-tuning", quality_cost=3, speed_cost=0),
                lambda s: with_work(s, method="lora"),
            )
        )
    if work.method in ("full", "lora"):
        q = 5.0 if work.method == "full" else 2.0
        out.append(
            _Cand(
                Change(key="method=qlora", description="QLoRA (4-bit base)", quality_cost=q, speed_cost=3),
                _qlora,
            )
        )
    out += _offload_candidates(scenario)
    out.append(_solver_cand("seq_len"))
    if work.micro_batch > 1:
        out.append(_solver_cand("micro_batch"))
    return out


def _offload_candidates(scenario: Scenario) -> list[_Cand]:
    """Optimizer or parameters on the CPU, with the DeepSpeed stage that does it when the plan has none: ZeRO-2 for
    the optimizer (ZeRO-Offload; ZeRO-1 beside a pipeline), ZeRO-3 for the parameters (not beside a pipeline)."""
    par = scenario.parallelism
    out: list[_Cand] = []

    def offload(kind: str, zero: int | None) -> Callable[[Scenario], Scenario]:
        update: dict[str, object] = {"offload": kind} | ({"zero": zero} if zero is not None else {})
        return lambda s: with_data(s, lambda d: d["parallelism"].update(update))

    if par.offload == "none":
        zero = None if (par.zero or par.fsdp) else (1 if par.pp > 1 else 2)
        what = "optimizer on the CPU" + (f" (DeepSpeed ZeRO-{zero} offload)" if zero else "")
        out.append(
            _Cand(
                Change(key="offload=optimizer", description=what, quality_cost=0, speed_cost=5),
                offload("optimizer", zero),
            )
        )
    if par.offload != "params" and (par.fsdp or par.zero == 3 or par.pp == 1):
        zero = None if (par.fsdp or par.zero == 3) else 3
        what = "parameters on the CPU" + (" (DeepSpeed ZeRO-3 offload)" if zero else "")
        out.append(
            _Cand(
                Change(key="offload=params", description=what, quality_cost=0, speed_cost=8),
                offload("params", zero),
            )
        )
    return out


def _sharding_candidates(scenario: Scenario) -> list[_Cand]:
    """On several GPUs, shard more of the model states across them: no quality cost, some communication. ZeRO-2
    (gradients and states) and ZeRO-3 (weights too) under DeepSpeed, or without FSDP; FSDP's full shard for an
    FSDP plan that keeps whole weights. ZeRO-2/3 do not combine with pipeline parallel."""
    par = scenario.parallelism
    if scenario.hardware.gpu_count * scenario.hardware.nodes < 2:
        return []
    out: list[_Cand] = []
    if par.fsdp:
        if par.fsdp_strategy == "shard-grad-op":
            out.append(
                _Cand(
                    Change(
                        key="fsdp_strategy=full",
                        description="FSDP full shard (weights sharded too)",
                        quality_cost=0,
                        speed_cost=2,
                    ),
                    lambda s: with_data(s, lambda d: d["parallelism"].update(fsdp_strategy="full")),
                )
            )
        return out
    if par.pp > 1:
        return out
    for stage, speed, what in ((2, 1.0, "gradients and optimizer states"), (3, 2.0, "weights, gradients and states")):
        if par.zero < stage:
            out.append(
                _Cand(
                    Change(
                        key=f"zero={stage}",
                        description=f"ZeRO-{stage} ({what} sharded over the GPUs)",
                        quality_cost=0,
                        speed_cost=speed,
                    ),
                    lambda s, z=stage: with_data(s, lambda d: d["parallelism"].update(zero=z)),  # type: ignore[misc]
                )
            )
    return out


def _qlora(s: Scenario) -> Scenario:
    work = s.workload
    prec = work.precision if isinstance(work, FinetuneWorkload) and work.precision != "fp32" else "bf16"
    return with_work(s, method="qlora", precision=prec)


def _speed(est: Estimate, scenario: Scenario, facts: ModelFacts, gpu: GpuSpec) -> float | None:
    try:
        perf = performance(est, scenario, facts, gpu)
    except PerformanceError:
        return None
    return perf.decode_tokens_per_s if perf.decode_tokens_per_s is not None else perf.train_tokens_per_s


@_with_headroom
def smallest_changes(
    scenario: Scenario,
    facts: ModelFacts,
    gpu: GpuSpec,
    *,
    allow_tight: bool = False,
    max_gpus: int = 8,
    limit: int = 10,
) -> ChangesResult:
    """Single and pairwise changes that make ``scenario`` fit, cheapest first (see :data:`COST_RULE`).

    A pair is listed only when neither of its changes fits alone; three changes are tried only when no single
    change or pair fits. Every option was estimated."""
    accepted = _accepted(allow_tight)
    base, _ = probe(scenario, facts, gpu)
    work = scenario.workload
    if isinstance(work, InferenceWorkload):
        cands = _inference_candidates(scenario, work, facts, gpu, allow_tight)
    else:
        cands = _training_candidates(scenario, work, facts, gpu)
    tried = 0
    options: list[Option] = []
    singles_ok: set[str] = set()

    def attempt(chosen: Sequence[_Cand]) -> Option | None:
        nonlocal tried
        s = scenario
        changes_list: list[Change] = []
        try:
            # fixed edits first, then the solver-backed one finds the largest value that fits what they left
            for c in sorted(chosen, key=lambda c: c.solve is not None):
                if c.solve is None:
                    s = c.apply(s)
                    changes_list.append(c.change)
                    continue
                solved = _solved_change(c.solve, s, scenario, facts, gpu, allow_tight)
                if solved is None:
                    return None
                s, ch = solved
                changes_list.append(ch)
        except ValueError:
            return None
        tried += 1
        p, est = probe(s, facts, gpu)
        if p.verdict not in accepted or p.device_bytes is None or p.verdict is None or est is None:
            return None
        changes = tuple(changes_list)
        cost = sum(c.quality_cost + c.speed_cost for c in changes)
        return Option(
            changes=changes,
            verdict=p.verdict,
            device_bytes=p.device_bytes,
            cost=round(cost, 2),
            scenario=s.model_dump(mode="json"),
            summary=" + ".join(c.description for c in changes),
            tokens_per_s=_speed(est, s, facts, gpu),
        )

    for c in cands:
        o = attempt([c])
        if o is not None:
            options.append(o)
            singles_ok.add(c.change.key)

    def compatible(group: Sequence[_Cand]) -> bool:
        kinds = [c.change.key.split("=")[0] for c in group]
        return len(set(kinds)) == len(kinds) and sum(c.solve is not None for c in group) <= 1

    pairs_ok: set[frozenset[str]] = set()
    for a, b in combinations(cands, 2):
        if a.change.key in singles_ok or b.change.key in singles_ok or not compatible((a, b)):
            continue
        o = attempt([a, b])
        if o is not None:
            options.append(o)
            pairs_ok.add(frozenset((a.change.key, b.change.key)))
    if all(any(c.key in ("seq_len", "input_len") for c in o.changes) for o in options):
        # three changes when no one or two do, or when all that do cut the sequence or prompt length (8,192 -> 160
        # tokens is an answer no one asked for); the same minimality rule
        length_cuts_only = bool(options)
        for trio in combinations(cands, 3):
            keys = [c.change.key for c in trio]
            if not compatible(trio) or any(frozenset(p) in pairs_ok for p in combinations(keys, 2)):
                continue
            if length_cuts_only and any(c.solve in ("seq_len", "input_len") for c in trio):
                continue  # looking for what keeps the length, not for more ways to cut it
            o = attempt(list(trio))
            if o is not None:
                options.append(o)
    now = scenario.hardware.gpu_count * scenario.hardware.nodes
    # a fine-tune may also grow by whole machines (up to 8 of them); inference stays on one machine
    most = max(max_gpus, MAX_MACHINES * GPUS_PER_MACHINE) if isinstance(work, FinetuneWorkload) else max_gpus
    if now < most:
        # more GPUs alone, then each fixed edit with the fewest GPUs it then needs (when that saves GPUs)
        plain: int | None = None
        for cand in (None, *[c for c in cands if c.solve is None]):
            start = scenario if cand is None else cand.apply(scenario)
            g = minimize_gpus(start, facts, gpu, max_gpus=most, allow_tight=allow_tight)
            tried += g.evaluations
            if g.gpus is None or g.gpus <= now or g.scenario is None or g.at_value is None:
                continue
            if cand is None:
                plain = g.gpus
            elif (plain is not None and g.gpus >= plain) or cand.change.key in singles_ok:
                continue
            extra = g.gpus - now
            where = hardware_text(gpu.name, g.gpus // g.machines, g.machines)
            ch = Change(key=f"gpus={g.gpus}", description=f"{where} ({g.how})", quality_cost=0, speed_cost=0)
            changes = (ch,) if cand is None else (cand.change, ch)
            solved = Scenario.model_validate(g.scenario)
            _, est_g = probe(solved, facts, gpu)
            options.append(
                Option(
                    changes=changes,
                    verdict=g.at_value.verdict or "fits",
                    device_bytes=g.at_value.device_bytes or 0,
                    cost=round(2.0 * extra + sum(c.quality_cost + c.speed_cost for c in changes), 2),
                    scenario=g.scenario,
                    summary=" + ".join(c.description for c in changes),
                    tokens_per_s=_speed(est_g, solved, facts, gpu) if est_g is not None else None,
                )
            )
    options.sort(key=lambda o: (o.cost, len(o.changes), o.device_bytes))
    return ChangesResult(current_verdict=base.verdict, options=tuple(options[:limit]), tried=tried, rule=COST_RULE)


__all__ = [
    "COST_RULE",
    "FIELDS",
    "ChangesResult",
    "GpuCountResult",
    "Option",
    "SolveError",
    "SolveResult",
    "gpu_counts",
    "gpu_layout",
    "maximize",
    "minimize_gpus",
    "smallest_changes",
]
