"""What to change so that a scenario fits: candidate edits, each checked by running the estimator, ranked by cost.

* the candidates: lighter weights and KV dtypes, engine settings, checkpointing, sharding, offload, LoRA /
  QLoRA, and solver-backed cuts (the longest context or largest batch that then fits);
* :func:`smallest_changes`: single and pairwise changes to a configuration (three when no one or two do), the
  ways to run it with part of the model in CPU memory (:mod:`vramdesk.core.solve_same_gpu`), then more GPUs alone
  or with one edit: those on the plan's own GPUs first, each group ranked by a stated quality and speed cost
  (:data:`~vramdesk.core.solve.RANK_RULE`, :data:`~vramdesk.core.solve.COST_RULE`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

from .dtype_names import FormatError, kv_bits
from .engines import engine
from .estimate import EstimateError, resolve_format
from .facts import ModelFacts
from .gpu import GpuSpec, hardware_text
from .messages import Message, Text, free, join
from .scenario import FinetuneWorkload, InferenceWorkload, Scenario
from .solve import (
    COST_RULE,
    RANK_RULE,
    Change,
    ChangesResult,
    Option,
    _accepted,
    _with_headroom,
    maximize,
    probe,
    with_data,
    with_work,
)
from .solve_gpus import GPUS_PER_MACHINE, MAX_MACHINES, minimize_gpus
from .solve_same_gpu import GPU_LAYERS, SameGpu, cpu_options, cpu_speed_cost, option_speed

# the changes, as a list of them names each (``Change.description``; an option's summary joins them with " + ")
INPUT_LEN = Message("changes.input_len", "input length {current:,} -> {value:,}")
BATCH = Message("changes.batch", "batch {current} -> {value}")
SEQ_LEN = Message("changes.seq_len", "sequence length {current:,} -> {value:,}")
MICRO_BATCH = Message(
    "changes.micro_batch", "micro-batch {current} -> {value}, grad_accum {grad_accum} (same tokens per step)"
)
WEIGHTS = Message("changes.weights", "weights {name}")
KV_DTYPE = Message("changes.kv_dtype", "KV cache {name}")
VLLM_UTILIZATION = Message("changes.vllm.gpu_memory_utilization", "vLLM gpu_memory_utilization {current} -> 0.95")
VLLM_BATCHED_TOKENS = Message(
    "changes.vllm.max_num_batched_tokens", "vLLM max_num_batched_tokens 2048 (smaller prefill chunks)"
)
VLLM_EAGER = Message("changes.vllm.enforce_eager", "vLLM --enforce-eager (no CUDA graphs)")
CHECKPOINTING = Message("changes.grad_checkpointing", "activation checkpointing on")
CHUNKED_LOSS = Message("changes.chunked_loss", "chunked cross-entropy (Liger / torchtune)")
EXPANDABLE = Message("changes.expandable_segments", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
FSDP2 = Message("changes.fsdp_version", "FSDP2 (fully_shard) instead of FSDP1")
ADAMW_8BIT = Message("changes.optimizer.adamw_8bit", "8-bit AdamW")
TO_LORA = Message("changes.method.lora", "LoRA instead of full fine-tuning")
TO_QLORA = Message("changes.method.qlora", "QLoRA (4-bit base)")
OPTIMIZER_OFFLOAD = Message("changes.offload.optimizer", "optimizer on the CPU")
OPTIMIZER_OFFLOAD_ZERO = Message(
    "changes.offload.optimizer.zero", "optimizer on the CPU (DeepSpeed ZeRO-{zero} offload)"
)
PARAMS_OFFLOAD = Message("changes.offload.params", "parameters on the CPU")
PARAMS_OFFLOAD_ZERO = Message("changes.offload.params.zero", "parameters on the CPU (DeepSpeed ZeRO-{zero} offload)")
FSDP_FULL = Message("changes.fsdp_strategy.full", "FSDP full shard (weights sharded too)")
ZERO2 = Message("changes.zero.2", "ZeRO-{stage} (gradients and optimizer states sharded over the GPUs)")
ZERO3 = Message("changes.zero.3", "ZeRO-{stage} (weights, gradients and states sharded over the GPUs)")
#: more GPUs: "2 x H100 SXM (ZeRO-3, tp 1, pp 1)" (``where`` is :func:`~vramdesk.core.gpu.hardware_text`)
MORE_GPUS = Message("changes.gpus", "{where} ({how})")


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
                key="input_len",
                description=INPUT_LEN(current=cur, value=v),
                quality_cost=2 + 6 * share,
                speed_cost=0,
            )
            return with_work(scenario, input_len=v), ch
        if field == "batch":
            if v >= work.batch:
                return None
            share = 1 - v / work.batch
            ch = Change(
                key="batch", description=BATCH(current=work.batch, value=v), quality_cost=0, speed_cost=1 + 6 * share
            )
            return with_work(scenario, batch=v), ch
        total = facts.arch.n_layers + 1
        if v >= total:
            return None
        # (the speed model's slowdown replaces this once the option is estimated: _Trials.attempt)
        ch = Change(
            key="n_gpu_layers",
            description=GPU_LAYERS(value=v, total=total),
            quality_cost=0,
            speed_cost=cpu_speed_cost(1 - v / total, None, None),
        )
        return with_data(scenario, lambda d: d["workload"].setdefault("llamacpp", {}).update(n_gpu_layers=v)), ch
    assert isinstance(work, FinetuneWorkload)
    if field == "seq_len":
        if v >= work.seq_len:
            return None
        share = 1 - v / work.seq_len
        ch = Change(
            key="seq_len",
            description=SEQ_LEN(current=work.seq_len, value=v),
            quality_cost=2 + 6 * share,
            speed_cost=0,
        )
        return with_work(scenario, seq_len=v), ch
    if v >= work.micro_batch:
        return None
    accum = work.grad_accum * -(-work.micro_batch // v)
    ch = Change(
        key="micro_batch",
        description=MICRO_BATCH(current=work.micro_batch, value=v, grad_accum=accum),
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
                    Change(key=f"weights={name}", description=WEIGHTS(name=name), quality_cost=q, speed_cost=sp),
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
                    Change(key=f"kv_dtype={name}", description=KV_DTYPE(name=name), quality_cost=q, speed_cost=0.0),
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
                        description=VLLM_UTILIZATION(current=v.gpu_memory_utilization),
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
                        description=VLLM_BATCHED_TOKENS(),
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
                        description=VLLM_EAGER(),
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
                Change(key="grad_checkpointing", description=CHECKPOINTING(), quality_cost=0, speed_cost=3),
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
                    description=CHUNKED_LOSS(),
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
                    description=EXPANDABLE(),
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
                    description=FSDP2(),
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
                Change(key="optimizer=adamw-8bit", description=ADAMW_8BIT(), quality_cost=1, speed_cost=0),
                lambda s: with_work(s, optimizer="adamw-8bit"),
            )
        )
    if work.method == "full":
        out.append(
            _Cand(
                Change(key="method=lora", description=TO_LORA(), quality_cost=3, speed_cost=0),
                lambda s: with_work(s, method="lora"),
            )
        )
    if work.method in ("full", "lora"):
        q = 5.0 if work.method == "full" else 2.0
        out.append(
            _Cand(
                Change(key="method=qlora", description=TO_QLORA(), quality_cost=q, speed_cost=3),
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
        what = OPTIMIZER_OFFLOAD_ZERO(zero=zero) if zero else OPTIMIZER_OFFLOAD()
        out.append(
            _Cand(
                Change(key="offload=optimizer", description=what, quality_cost=0, speed_cost=5),
                offload("optimizer", zero),
            )
        )
    if par.offload != "params" and (par.fsdp or par.zero == 3 or par.pp == 1):
        zero = None if (par.fsdp or par.zero == 3) else 3
        what = PARAMS_OFFLOAD_ZERO(zero=zero) if zero else PARAMS_OFFLOAD()
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
                        description=FSDP_FULL(),
                        quality_cost=0,
                        speed_cost=2,
                    ),
                    lambda s: with_data(s, lambda d: d["parallelism"].update(fsdp_strategy="full")),
                )
            )
        return out
    if par.pp > 1:
        return out
    for stage, speed, what in ((2, 1.0, ZERO2), (3, 2.0, ZERO3)):
        if par.zero < stage:
            out.append(
                _Cand(
                    Change(
                        key=f"zero={stage}",
                        description=what(stage=stage),
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


@dataclass
class _Trials:
    """The scenario :func:`smallest_changes` works on, and how many estimates it has run (``tried``)."""

    scenario: Scenario
    facts: ModelFacts
    gpu: GpuSpec
    allow_tight: bool
    #: the speed of the plan as asked (the reference of the CPU layers' slowdown); None without figures
    base_tokens_per_s: float | None = None
    tried: int = 0

    def attempt(self, chosen: Sequence[_Cand]) -> Option | None:
        """``chosen`` applied together and estimated: the option, or None when it does not fit or does not apply."""
        scenario, facts, gpu, allow_tight = self.scenario, self.facts, self.gpu, self.allow_tight
        accepted = _accepted(allow_tight)
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
        self.tried += 1
        p, est = probe(s, facts, gpu)
        if p.verdict not in accepted or p.device_bytes is None or p.verdict is None or est is None:
            return None
        speed = option_speed(est, s, facts, gpu)
        info = est.engine
        if info.gpu_layers is not None and info.total_layers:
            # llama.cpp's layers on the CPU: their speed cost is the speed model's slowdown (see cpu_speed_cost)
            share = 1 - info.gpu_layers / info.total_layers
            cost = cpu_speed_cost(share, speed, self.base_tokens_per_s)
            changes_list = [
                c.model_copy(update={"speed_cost": cost}) if c.key == "n_gpu_layers" else c for c in changes_list
            ]
        changes = tuple(changes_list)
        cost = sum(c.quality_cost + c.speed_cost for c in changes)
        return Option(
            changes=changes,
            verdict=p.verdict,
            device_bytes=p.device_bytes,
            cost=round(cost, 2),
            scenario=s.model_dump(mode="json"),
            summary=join(" + ", *(c.description for c in changes)),
            tokens_per_s=speed,
            host_bytes=est.host_bytes,
        )


def _compatible(group: Sequence[_Cand]) -> bool:
    kinds = [c.change.key.split("=")[0] for c in group]
    return len(set(kinds)) == len(kinds) and sum(c.solve is not None for c in group) <= 1


def _edit_options(trials: _Trials, cands: list[_Cand]) -> tuple[list[Option], set[str]]:
    """The single changes that fit, the pairs neither of whose changes fits alone, then trios (see below); with the
    keys of the single changes that fit."""
    options: list[Option] = []
    singles_ok: set[str] = set()
    for c in cands:
        o = trials.attempt([c])
        if o is not None:
            options.append(o)
            singles_ok.add(c.change.key)

    pairs_ok: set[frozenset[str]] = set()
    for a, b in combinations(cands, 2):
        if a.change.key in singles_ok or b.change.key in singles_ok or not _compatible((a, b)):
            continue
        o = trials.attempt([a, b])
        if o is not None:
            options.append(o)
            pairs_ok.add(frozenset((a.change.key, b.change.key)))
    if all(any(c.key in ("seq_len", "input_len") for c in o.changes) for o in options):
        # three changes when no one or two do, or when all that do cut the sequence or prompt length (8,192 -> 160
        # tokens is an answer no one asked for); the same minimality rule
        length_cuts_only = bool(options)
        for trio in combinations(cands, 3):
            keys = [c.change.key for c in trio]
            if not _compatible(trio) or any(frozenset(p) in pairs_ok for p in combinations(keys, 2)):
                continue
            if length_cuts_only and any(c.solve in ("seq_len", "input_len") for c in trio):
                continue  # looking for what keeps the length, not for more ways to cut it
            o = trials.attempt(list(trio))
            if o is not None:
                options.append(o)
    return options, singles_ok


def _gpu_options(trials: _Trials, cands: list[_Cand], singles_ok: set[str], max_gpus: int) -> list[Option]:
    """The options that add GPUs (up to ``max_gpus``; a fine-tune up to whole machines), costed 2 per added GPU."""
    scenario, facts, gpu, allow_tight = trials.scenario, trials.facts, trials.gpu, trials.allow_tight
    work = scenario.workload
    options: list[Option] = []
    now = scenario.hardware.gpu_count * scenario.hardware.nodes
    # a fine-tune may also grow by whole machines (up to 8 of them); inference stays on one machine
    most = max(max_gpus, MAX_MACHINES * GPUS_PER_MACHINE) if isinstance(work, FinetuneWorkload) else max_gpus
    if now < most:
        # more GPUs alone, then each fixed edit with the fewest GPUs it then needs (when that saves GPUs)
        plain: int | None = None
        for cand in (None, *[c for c in cands if c.solve is None]):
            start = scenario if cand is None else cand.apply(scenario)
            g = minimize_gpus(start, facts, gpu, max_gpus=most, allow_tight=allow_tight)
            trials.tried += g.evaluations
            if g.gpus is None or g.gpus <= now or g.scenario is None or g.at_value is None:
                continue
            if cand is None:
                plain = g.gpus
            elif (plain is not None and g.gpus >= plain) or cand.change.key in singles_ok:
                continue
            extra = g.gpus - now
            where = hardware_text(gpu.name, g.gpus // g.machines, g.machines)
            ch = Change(key=f"gpus={g.gpus}", description=_more_gpus(where, g.how), quality_cost=0, speed_cost=0)
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
                    summary=join(" + ", *(c.description for c in changes)),
                    tokens_per_s=option_speed(est_g, solved, facts, gpu) if est_g is not None else None,
                    more_gpus=extra,
                    host_bytes=est_g.host_bytes if est_g is not None else None,
                )
            )
    return options


def _more_gpus(where: str, how: str) -> Text:
    """More GPUs, "2 x H100 SXM (ZeRO-3, tp 1, pp 1)": the GPUs as :func:`~vramdesk.core.gpu.hardware_text` writes
    them, and how the work is laid out on them."""
    if not isinstance(where, Text) and " machines x " in where:
        # while hardware_text writes "2 machines x 8 x H100 SXM" as a plain string (no message id yet), the window's
        # phrases read the whole description, which they know; drop this once hardware_text gives a Text
        return free(f"{where} ({how})")
    return MORE_GPUS(where=where, how=how)


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
    """Single and pairwise changes that make ``scenario`` fit: those on the plan's own GPUs first, cheapest first,
    then those that add GPUs (see :data:`RANK_RULE` and :data:`COST_RULE`; :func:`_ranked` keeps a few of each).

    A pair is listed only when neither of its changes fits alone; three changes are tried only when no single
    change or pair fits. Every option was estimated. A plan that fits as it is gets none."""
    base, base_est = probe(scenario, facts, gpu)
    if base.verdict in _accepted(allow_tight):
        # it fits as it is: nothing to change
        return ChangesResult(current_verdict=base.verdict, options=(), tried=1, rule=COST_RULE, ranking=RANK_RULE)
    base_speed = option_speed(base_est, scenario, facts, gpu) if base_est is not None else None
    work = scenario.workload
    if isinstance(work, InferenceWorkload):
        cands = _inference_candidates(scenario, work, facts, gpu, allow_tight)
    else:
        cands = _training_candidates(scenario, work, facts, gpu)
    trials = _Trials(scenario, facts, gpu, allow_tight, base_speed)
    options, singles_ok = _edit_options(trials, cands)
    bits = _current_bits(scenario, facts) if isinstance(work, InferenceWorkload) else 0.0
    same = SameGpu(scenario, facts, gpu, allow_tight, base_speed, bits)
    options += cpu_options(same)
    options += _gpu_options(trials, cands, singles_ok, max_gpus)
    return ChangesResult(
        current_verdict=base.verdict,
        options=_ranked(options, limit),
        tried=trials.tried + same.tried,
        rule=COST_RULE,
        ranking=RANK_RULE,
    )


#: the options with more GPUs a cut list keeps beside those on the plan's GPUs (so that "what it would take"
#: stays in view however many same-GPU options there are), at most half the list
MORE_GPUS_KEPT = 2


def _ranked(options: list[Option], limit: int) -> tuple[Option, ...]:
    """The first ``limit`` options by :data:`RANK_RULE`: on the plan's GPUs first, then more GPUs, each by cost
    (then fewer changes, less memory); up to :data:`MORE_GPUS_KEPT` of the more-GPU ones stay in a cut list."""
    order = sorted(options, key=lambda o: (o.more_gpus > 0, o.cost, len(o.changes), o.device_bytes))
    same = [o for o in order if not o.more_gpus]
    more = [o for o in order if o.more_gpus]
    n_more = min(len(more), limit, max(limit - len(same), min(MORE_GPUS_KEPT, limit // 2)))
    return tuple(same[: limit - n_more] + more[:n_more])


__all__ = ["smallest_changes"]
