"""Inverse questions, answered exactly on the estimator's own model: the shared types and the one-variable solver.

* :func:`maximize`: the largest input length, batch, training sequence length, micro-batch or LoRA rank that
  still gets an accepted verdict ("fits"; "tight" too when asked). Galloping (1, 2, 4, ...) then bisection
  over integers; the answer is checked: the estimate at the answer is accepted and at answer + 1 it is not
  (unless a stated limit, such as the model's context length, stopped the search first).
* :func:`~vramdesk.core.solve_gpus.minimize_gpus`: the fewest GPUs of one type, scanning 1, 2, 3, ... (a GPU
  count changes how the work is split, so the scan does not assume monotonicity).
* :func:`~vramdesk.core.solve_changes.smallest_changes`: single and pairwise changes to a configuration, each
  checked by running the estimator, ranked by a stated quality and speed cost.

Here: the answers' types (:class:`SolveResult`, :class:`Change`, :class:`Option`, :class:`ChangesResult`,
:data:`COST_RULE`), the scenario edits and the estimate every solver runs (:func:`probe`), and :func:`maximize`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from .dtype_names import FormatError
from .engines import engine
from .estimate import EstimateError, estimate
from .facts import ModelFacts
from .gpu import GpuSpec
from .messages import Message, MessageText, Text, error_text, free
from .result import Estimate
from .scenario import MAX_TOKENS, FinetuneWorkload, InferenceWorkload, Scenario

_R = TypeVar("_R")

FIELDS: tuple[str, ...] = ("input_len", "batch", "seq_len", "micro_batch", "lora_rank")
Verdict = Literal["fits", "tight", "does not fit"]


class SolveError(ValueError):
    """A question that does not apply to the scenario (e.g. --maximize batch for fine-tuning); ``args[0]`` is the
    message's :class:`~vramdesk.core.messages.Text`."""


# ---------------------------------------------------------------------------------------------- texts

#: a verdict inside a sentence ("(input len 225: tight)"), as its word
VERDICT_WORDS: dict[str, Text] = {
    "fits": Message("solve.verdict.fits", "fits")(),
    "tight": Message("solve.verdict.tight", "tight")(),
    "does not fit": Message("solve.verdict.does_not_fit", "does not fit")(),
}
#: the solvable fields as a sentence names them ("largest input len that fits ...")
FIELD_NAMES: dict[str, Text] = {
    "input_len": Message("solve.field.input_len", "input len")(),
    "batch": Message("solve.field.batch", "batch")(),
    "seq_len": Message("solve.field.seq_len", "seq len")(),
    "micro_batch": Message("solve.field.micro_batch", "micro batch")(),
    "lora_rank": Message("solve.field.lora_rank", "lora rank")(),
    "n_gpu_layers": Message("solve.field.n_gpu_layers", "n gpu layers")(),
}
INFERENCE_ONLY = Message(
    "solve.error.inference_only", "--maximize {flag} applies to inference (use seq-len / micro-batch)"
)
LLAMACPP_ONLY = Message("solve.error.llamacpp_only", "n_gpu_layers applies to the llama.cpp engine")
FINETUNE_ONLY = Message("solve.error.finetune_only", "--maximize {flag} applies to fine-tuning (--mode finetune)")
RANK_NEEDS_LORA = Message("solve.error.lora_rank_needs_lora", "--maximize lora-rank needs --method lora or qlora")
UNKNOWN_FIELD = Message("solve.error.unknown_field", "cannot maximize '{field}' (choose from {choices})")
NOT_MONOTONE = Message(
    "solve.error.not_monotone", "{field}: the estimate is not monotone near {value}; no exact boundary"
)
EVEN_TIGHT = Message(
    "solve.even.tight",
    "even {field} = {value} is only tight on the {gpu} (it runs inside the headroom; allow tight plans to count it)",
)
EVEN_ERROR = Message("solve.even.error", "even {field} = {value} does not fit the {gpu} ({error})")
EVEN_VERDICT = Message("solve.even.verdict", "even {field} = {value} does not fit the {gpu}: {verdict}")
LARGEST = Message("solve.largest", "largest {name} that fits on {gpus} x {gpu}: {value:,}")
LARGEST_OR_TIGHT = Message("solve.largest.or_tight", "largest {name} that fits or tight on {gpus} x {gpu}: {value:,}")
#: the answer and what stopped the search: "largest ...: 4,402 (input len 4,403: tight)"
LIMITED = Message("solve.largest.limited", "{largest} ({limit})")
BEYOND = Message("solve.limit.memory", "{name} {value:,}: {verdict}")
BEYOND_ERROR = Message("solve.limit.error", "{name} {value:,}: {error}")
CONTEXT_LIMIT = Message("solve.limit.context", "the model's context limit; memory would allow more than {cap:,}")
SEARCH_LIMIT = Message("solve.limit.search", "search limit {cap:,}")


def verdict_word(verdict: str) -> Text:
    """A verdict ("fits", "tight", "does not fit") as the word a sentence uses."""
    return VERDICT_WORDS.get(verdict) or free(verdict)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Probe(_Frozen):
    value: int
    verdict: Verdict | None
    device_bytes: int | None
    required_bytes: int | None = None
    error: MessageText | None = None


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
    message: MessageText


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
        return Probe(value=0, verdict=None, device_bytes=None, error=error_text(err)), None
    fit = est.fit
    assert fit is not None  # a GPU was given
    return Probe(value=0, verdict=fit.verdict, device_bytes=est.device_bytes, required_bytes=fit.required_bytes), est


def _setter(scenario: Scenario, field: str) -> tuple[Callable[[int], Scenario], int | None, int]:
    work = scenario.workload
    if field in ("input_len", "batch"):
        if not isinstance(work, InferenceWorkload):
            raise SolveError(INFERENCE_ONLY(flag=field.replace("_", "-")))
        limit = MAX_TOKENS if field == "input_len" else 65536
        current = work.input_len if field == "input_len" else work.batch
        return (lambda v: with_work(scenario, **{field: v})), current, limit
    if field == "n_gpu_layers":
        if not isinstance(work, InferenceWorkload) or not engine(work.engine).offloads_gpu_layers:
            raise SolveError(LLAMACPP_ONLY())

        def set_ngl(v: int) -> Scenario:
            return with_data(scenario, lambda d: d["workload"].setdefault("llamacpp", {}).update(n_gpu_layers=v))

        return set_ngl, work.llamacpp.n_gpu_layers, 100000
    if field in ("seq_len", "micro_batch", "lora_rank"):
        if not isinstance(work, FinetuneWorkload):
            raise SolveError(FINETUNE_ONLY(flag=field.replace("_", "-")))
        if field == "lora_rank" and work.method == "full":
            raise SolveError(RANK_NEEDS_LORA())
        limit = MAX_TOKENS if field == "seq_len" else 65536
        current = getattr(work, field)
        return (lambda v: with_work(scenario, **{field: v})), int(current), limit
    raise SolveError(UNKNOWN_FIELD(field=field, choices=", ".join(FIELDS)))


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
                cache[v] = Probe(value=v, verdict=None, device_bytes=None, error=error_text(err))
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
            message=_nothing_fits(field, lo_value, gpu, p),
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
            raise SolveError(NOT_MONOTONE(field=field, value=lo))
        limited = "memory"
    else:
        limited = "model context" if limited_by_context else "search limit"
    name = FIELD_NAMES.get(field) or free(field.replace("_", " "))
    largest = (LARGEST_OR_TIGHT if allow_tight else LARGEST)(
        name=name, gpus=scenario.hardware.gpu_count, gpu=gpu.name, value=lo
    )
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
        message=LIMITED(largest=largest, limit=_limit(limited, name, lo, cap, above)),
    )


def _limit(limited: str, name: Text, value: int, cap: int, above: Probe | None) -> Text:
    """What stopped the search at ``value``: the next value's verdict (or error), the model's context, the limit."""
    if limited == "memory" and above is not None:
        if above.verdict:
            return BEYOND(name=name, value=value + 1, verdict=verdict_word(above.verdict))
        error = above.error if above.error is not None else "None"  # (a probe has a verdict or an error)
        return BEYOND_ERROR(name=name, value=value + 1, error=free(error))
    if limited == "model context":
        return CONTEXT_LIMIT(cap=cap)
    return SEARCH_LIMIT(cap=cap)


def _nothing_fits(field: str, value: int, gpu: GpuSpec, p: Probe) -> Text:
    """Why even the smallest value is not accepted: only tight, an error, or its verdict."""
    if p.verdict == "tight":
        return EVEN_TIGHT(field=field, value=value, gpu=gpu.name)
    if p.error:
        return EVEN_ERROR(field=field, value=value, gpu=gpu.name, error=free(p.error))
    return EVEN_VERDICT(field=field, value=value, gpu=gpu.name, verdict=verdict_word(str(p.verdict)))


# ---------------------------------------------------------------------------------------------- changes


class Change(_Frozen):
    """One candidate edit of a scenario."""

    key: str
    description: MessageText
    #: 0 = none ... 10 = severe; stated per kind in QUALITY_COST
    quality_cost: float
    #: 0 = none ... 10 = severe; stated per kind in SPEED_COST
    speed_cost: float
    #: why the change works, where that is not plain from its description (an engine switch says what the other
    #: engine does differently); "" for most
    reason: MessageText = ""


class Option(_Frozen):
    changes: tuple[Change, ...]
    verdict: Verdict
    device_bytes: int
    cost: float
    scenario: dict[str, Any]
    summary: MessageText
    #: expected speed with this change (decode tokens/s per sequence, or training tokens/s); None when the GPU
    #: lacks the figures
    tokens_per_s: float | None = None
    #: GPUs the option adds to the plan's (0: it runs on the GPUs the plan has; see RANK_RULE)
    more_gpus: int = 0
    #: CPU memory the option needs (offloaded layers, spilled weights); None when not estimated
    host_bytes: int | None = None


class ChangesResult(_Frozen):
    current_verdict: Verdict | None
    options: tuple[Option, ...]
    tried: int
    rule: MessageText
    #: how the options are ordered, in one sentence (:data:`RANK_RULE`)
    ranking: MessageText = ""


#: the order of the changes: the options on the user's own GPUs come before any that needs more of them, whatever
#: their cost (a change the user can make today beats a purchase), and the cost ranks inside each group
RANK_RULE = Message(
    "changes.rank_rule",
    "Changes that keep your GPUs come first, cheapest first (cost = quality + speed); changes that add GPUs "
    "follow, each added GPU costing 2.",
)()
#: how each kind of change is scored (quality 0-10, speed 0-10); the ranking cost is their sum, and a pair
#: costs the sum of its parts
COST_RULE = Message(
    "changes.cost_rule",
    "cost = quality + speed, each 0-10: KV fp8/int8/q8_0 quality 1; KV q4_0 quality 3; 8-bit weights quality 1; "
    "5-6 bit GGUF quality 2; 4-bit weights quality 3 (speed +1 for bitsandbytes); activation checkpointing "
    "speed 3 (the forward runs twice); 8-bit optimizer quality 1; full -> LoRA quality 3; LoRA -> QLoRA quality 2 "
    "+ speed 3; vLLM gpu_memory_utilization 0.95 or max_num_batched_tokens 2048 speed 1, --enforce-eager speed 3; "
    "optimizer offload speed 5; parameter offload speed 8; expandable_segments 0; chunked cross-entropy speed 1; "
    "FSDP2 for LoRA 0; ZeRO-2 speed 1, ZeRO-3 or FSDP full shard speed 2; switching to llama.cpp (a GGUF "
    "quant) 1 + the quant's quality; llama.cpp CPU layers or device_map weights in CPU memory speed 2 + 3 x log2 "
    "of the slowdown the speed model predicts, at most 20 (2 + 7 x the share on the CPU without speed figures); "
    "shorter context / sequence quality 2 + 6 x the share cut; smaller batch speed 1 + 6 x the "
    "share cut; n more GPUs cost 2 x n (money)",
)()


__all__ = [
    "COST_RULE",
    "FIELDS",
    "RANK_RULE",
    "Change",
    "ChangesResult",
    "Option",
    "Probe",
    "SolveError",
    "SolveResult",
    "maximize",
    "probe",
    "with_data",
    "with_work",
]
