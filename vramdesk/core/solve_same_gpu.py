"""Running a plan that does not fit on the GPUs it already has, by keeping part of the model in CPU memory.

* :func:`cpu_options`: llama.cpp with a GGUF quant and the most layers that then fit on the GPU (``n_gpu_layers``,
  the rest run by the CPU), and transformers' ``device_map`` with an accelerate ``max_memory`` cap per GPU (the
  weights beyond it wait in CPU memory and cross PCIe for every forward). Each is estimated, and its speed is the
  speed model's (:mod:`vramdesk.core.performance` prices both: llama.cpp's CPU layers read at host-memory speed,
  device_map's spilled weights copied over PCIe).
* for a MoE model, llama.cpp with every layer on the GPU and the routed experts of the first N layers in host memory
  (``--n-cpu-moe``, the smallest N that fits): attention, the router, the shared expert and the KV cache stay on the
  GPU, and the CPU runs the experts (the speed model reads the experts a token routes to from host memory).
* :func:`cpu_speed_cost`: the speed cost of work left on the CPU, from the speed model's slowdown when it has the
  figures (the stated rule in :data:`~vramdesk.core.solve.COST_RULE`).

Not offered because the estimator does not model it: vLLM's ``cpu_offload_gb``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import floor, log2
from typing import Any

from .engines import engine
from .estimate import EstimateError, resolve_format
from .facts import ModelFacts
from .gpu import GIB, GpuSpec
from .messages import Message, join
from .performance import PerformanceError, performance
from .result import Estimate
from .scenario import InferenceWorkload, Scenario
from .solve import Change, Option, _accepted, maximize, probe, with_data

#: llama.cpp offloads part of the layers (also the name of the solver's cut of ``n_gpu_layers`` on a llama.cpp plan)
GPU_LAYERS = Message("changes.n_gpu_layers", "offload: {value} of {total} layers on the GPU, the rest on the CPU")
TO_LLAMACPP = Message("changes.engine.llamacpp", "llama.cpp with GGUF {quant}")
TO_LLAMACPP_ALL = Message("changes.engine.llamacpp.all", "llama.cpp with GGUF {quant}, all {total} layers on the GPU")
LLAMACPP_REASON = Message(
    "changes.engine.llamacpp.reason",
    "llama.cpp runs GGUF quants of this architecture and keeps the layers that do not fit the GPU in CPU memory, "
    "where the CPU runs them",
)
LLAMACPP_ALL_REASON = Message(
    "changes.engine.llamacpp.all.reason",
    "llama.cpp runs GGUF quants of this architecture, and this one fits the GPU whole",
)
CPU_MOE = Message(
    "changes.n_cpu_moe",
    "the MoE experts of the first {value} of {total} layers in host memory (--n-cpu-moe {value}), the CPU runs them",
)
CPU_MOE_REASON = Message(
    "changes.n_cpu_moe.reason",
    "llama.cpp keeps those layers' expert tensors in host memory and everything else (attention, router, shared "
    "expert, KV cache) on the GPU; a token reads only the experts it routes to, so the CPU's share stays small",
)
SPILL = Message(
    "changes.device_map.spill", "device_map max_memory {cap} GiB per GPU ({cpu:.1f} GiB of weights in CPU memory)"
)
SPILL_REASON = Message(
    "changes.device_map.spill.reason",
    "accelerate keeps the weights beyond the cap in CPU memory and copies each of those layers to the GPU for "
    "every forward: no quality cost, but every token waits for PCIe",
)

#: the cost of switching to another engine (another program to install and run; the quant's own quality cost is
#: counted apart): a stated constant, so that a same-quality edit inside the user's engine ranks first
ENGINE_SWITCH_COST = 1.0
#: the speed cost of work on the CPU: CPU_COST_BASE + CPU_COST_PER_HALVING x log2(the slowdown the speed model
#: predicts against the plan as asked), at most CPU_COST_MAX (a 64-fold slowdown); without speed figures,
#: CPU_COST_BASE + 7 x the share on the CPU (the rule the layer-offload cut always had). Each halving of the speed
#: costs as much as 4-bit weights' quality, so that 0.03 tokens/s of spilled bf16 weights ranks below a GGUF quant
#: at 0.5 tokens/s; the cap sits past the 0-10 scale of the other costs for the same reason.
CPU_COST_BASE = 2.0
CPU_COST_PER_HALVING = 3.0
CPU_COST_MAX = 20.0


def option_speed(est: Estimate, scenario: Scenario, facts: ModelFacts, gpu: GpuSpec) -> float | None:
    """The speed model's figure for an option: decode tokens/s of one sequence, or training tokens/s; None when the
    GPU lacks the figures."""
    try:
        perf = performance(est, scenario, facts, gpu)
    except PerformanceError:
        return None
    return perf.decode_tokens_per_s if perf.decode_tokens_per_s is not None else perf.train_tokens_per_s


def cpu_speed_cost(cpu_share: float, tokens_per_s: float | None, base_tokens_per_s: float | None) -> float:
    """The speed cost of keeping ``cpu_share`` of the model on the CPU (see :data:`CPU_COST_BASE`)."""
    if cpu_share <= 0:
        return 0.0
    if tokens_per_s and base_tokens_per_s:
        slowdown = max(1.0, base_tokens_per_s / tokens_per_s)
        return round(min(CPU_COST_MAX, CPU_COST_BASE + CPU_COST_PER_HALVING * log2(slowdown)), 2)
    return round(CPU_COST_BASE + 7 * cpu_share, 2)


@dataclass
class SameGpu:
    """What :func:`cpu_options` works from: the plan, where it runs, the speed of the plan as asked (the reference
    of a slowdown) and the bits per parameter of its weights now; ``tried`` counts the estimates run."""

    scenario: Scenario
    facts: ModelFacts
    gpu: GpuSpec
    allow_tight: bool
    base_tokens_per_s: float | None
    current_bits: float
    tried: int = 0

    def fits(self, s: Scenario) -> tuple[bool, Estimate | None]:
        self.tried += 1
        p, est = probe(s, self.facts, self.gpu)
        return p.verdict in _accepted(self.allow_tight) and est is not None, est

    def option(
        self, s: Scenario, est: Estimate, changes: tuple[Change, ...], extra: float, speed: float | None
    ) -> Option:
        fit = est.fit
        return Option(
            changes=changes,
            verdict=fit.verdict if fit is not None else "fits",
            device_bytes=est.device_bytes,
            cost=round(extra + sum(c.quality_cost + c.speed_cost for c in changes), 2),
            scenario=s.model_dump(mode="json"),
            summary=join(" + ", *(c.description for c in changes)),
            tokens_per_s=speed,
            host_bytes=est.host_bytes,
        )


def _weights(scenario: Scenario, facts: ModelFacts) -> tuple[float, int] | None:
    """The text model's weights in the plan's format: (bits per parameter, bytes); None for a format it refuses."""
    try:
        fmt, _ = resolve_format(scenario, facts.arch)
    except (EstimateError, ValueError):
        return None
    wb = facts.weights(fmt, frozenset({"text"}))
    return 8.0 * wb.total / max(1, wb.params), wb.total


def _on_llamacpp(scenario: Scenario, quant: str) -> Scenario:
    """``scenario`` on llama.cpp with GGUF ``quant``, every layer on the GPU (its other settings kept)."""

    def switch(d: dict[str, Any]) -> None:
        d["weights"] = quant
        d["workload"]["engine"] = "llamacpp"
        d["workload"].setdefault("llamacpp", {})["n_gpu_layers"] = None

    return with_data(scenario, switch)


def _with_layers(scenario: Scenario, layers: int) -> Scenario:
    return with_data(scenario, lambda d: d["workload"]["llamacpp"].update(n_gpu_layers=layers))


def _with_cpu_moe(scenario: Scenario, layers: int) -> Scenario:
    return with_data(scenario, lambda d: d["workload"].setdefault("llamacpp", {}).update(n_cpu_moe=layers))


def _cpu_moe_option(t: SameGpu, s: Scenario, first: tuple[Change, ...], extra: float) -> Option | None:
    """``s`` (llama.cpp, every layer on the GPU) with the routed experts of the fewest first layers in host memory
    that fits, after the changes ``first`` that led to ``s``; None for a dense model or when even all experts in
    host memory do not fit. The layer count is bisected: more layers' experts in host memory never need more GPU
    memory once one has (the compute buffer's staged expert copy is there from the first)."""
    arch = t.facts.arch
    if not arch.is_moe:
        return None
    hi = arch.n_layers
    if not t.fits(_with_cpu_moe(s, hi))[0]:
        return None
    lo = 1
    while lo < hi:  # the smallest count in [lo, hi] that fits (hi fits)
        mid = (lo + hi) // 2
        if t.fits(_with_cpu_moe(s, mid))[0]:
            hi = mid
        else:
            lo = mid + 1
    planned = _with_cpu_moe(s, lo)
    ok, est = t.fits(planned)
    if not ok or est is None:
        return None
    speed = option_speed(est, planned, t.facts, t.gpu)
    weights = _weights(planned, t.facts)
    share = min(1.0, est.host_bytes / weights[1]) if weights and weights[1] and est.host_bytes else 0.0
    cpu = Change(
        key="n_cpu_moe",
        description=CPU_MOE(value=lo, total=arch.n_layers),
        quality_cost=0,
        speed_cost=cpu_speed_cost(share, speed, t.base_tokens_per_s),
        reason=CPU_MOE_REASON(),
    )
    return t.option(planned, est, (*first, cpu), extra, speed)


def _llamacpp_options(t: SameGpu) -> list[Option]:
    """llama.cpp with each GGUF quant it runs, the most layers on the GPU that then fit. An architecture the
    estimator's llama.cpp model refuses gets no option (its estimate fails)."""
    work = t.scenario.workload
    assert isinstance(work, InferenceWorkload)
    llamacpp = engine("llamacpp")
    total = t.facts.arch.n_layers + 1  # llama.cpp counts the output layer as one more
    out: list[Option] = []
    for quant, quality, _speed in llamacpp.lighter_weights:
        try:
            s = _on_llamacpp(t.scenario, quant)
        except ValueError:
            continue
        weights = _weights(s, t.facts)
        if weights is None:
            continue
        bits = weights[0]
        r = maximize(s, t.facts, t.gpu, "n_gpu_layers", allow_tight=t.allow_tight)
        t.tried += r.evaluations
        if r.value is None:
            continue
        layers = r.value
        q = quality if bits < t.current_bits * 0.95 else 0.0
        key = f"engine=llamacpp,weights={quant}"
        switch = Change(
            key=key,
            description=TO_LLAMACPP(quant=quant.upper()),
            quality_cost=q,
            speed_cost=0,
            reason=LLAMACPP_REASON(),
        )
        if layers < total:
            moe = _cpu_moe_option(t, s, (switch,), ENGINE_SWITCH_COST)
            if moe is not None:
                out.append(moe)
            s = _with_layers(s, layers)
        ok, est = t.fits(s)
        if not ok or est is None:
            continue
        speed = option_speed(est, s, t.facts, t.gpu)
        # (q: the quant's quality cost when it is lighter than the weights now; a GGUF of the same bits costs none)
        if layers >= total:
            whole = Change(
                key=key,
                description=TO_LLAMACPP_ALL(quant=quant.upper(), total=total),
                quality_cost=q,
                speed_cost=0,
                reason=LLAMACPP_ALL_REASON(),
            )
            out.append(t.option(s, est, (whole,), ENGINE_SWITCH_COST, speed))
            continue
        cpu = Change(
            key="n_gpu_layers",
            description=GPU_LAYERS(value=layers, total=total),
            quality_cost=0,
            speed_cost=cpu_speed_cost(1 - layers / total, speed, t.base_tokens_per_s),
        )
        out.append(t.option(s, est, (switch, cpu), ENGINE_SWITCH_COST, speed))
    return out


def _spill_option(t: SameGpu) -> Option | None:
    """transformers' device_map with the largest whole-GiB max_memory per GPU that fits: the weights beyond it in
    CPU memory (a cut of the plan's own cap, when it has one)."""
    work = t.scenario.workload
    assert isinstance(work, InferenceWorkload)

    def capped(cap: int) -> Scenario:
        return with_data(t.scenario, lambda d: d["workload"].update(max_memory_gib=float(cap)))

    hi = floor(t.gpu.memory_bytes / GIB)
    if work.max_memory_gib is not None:
        hi = min(hi, int(work.max_memory_gib) - (1 if work.max_memory_gib.is_integer() else 0))
    if hi < 1 or not t.fits(capped(1))[0]:
        return None
    lo = 1  # fits; the answer is the largest cap in [lo, hi] that fits (a larger cap keeps more on the GPU)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if t.fits(capped(mid))[0]:
            lo = mid
        else:
            hi = mid - 1
    s = capped(lo)
    ok, est = t.fits(s)
    if not ok or est is None or not est.host_bytes:
        return None  # nothing spilled: the cap is no change
    speed = option_speed(est, s, t.facts, t.gpu)
    weights = _weights(s, t.facts)
    share = min(1.0, est.host_bytes / weights[1]) if weights and weights[1] else 1.0
    change = Change(
        key="max_memory_gib",
        description=SPILL(cap=lo, cpu=est.host_bytes / GIB),
        quality_cost=0,
        speed_cost=cpu_speed_cost(share, speed, t.base_tokens_per_s),
        reason=SPILL_REASON(),
    )
    return t.option(s, est, (change,), 0.0, speed)


def cpu_options(t: SameGpu) -> list[Option]:
    """The options on the plan's own GPUs that keep part of the model in CPU memory (see the module's doc)."""
    work = t.scenario.workload
    if not isinstance(work, InferenceWorkload):
        return []
    eng = engine(work.engine)
    out: list[Option] = []
    if not eng.offloads_gpu_layers:  # (a llama.cpp plan already has its layer cut among the solver's changes)
        out += _llamacpp_options(t)
    elif not work.llamacpp.n_cpu_moe:  # a llama.cpp plan of a MoE model: its own quant, experts in host memory
        whole = with_data(t.scenario, lambda d: d["workload"].setdefault("llamacpp", {}).update(n_gpu_layers=None))
        moe = _cpu_moe_option(t, whole, (), 0.0)
        if moe is not None:
            out.append(moe)
    if eng.streams_offloaded_weights:
        spill = _spill_option(t)
        if spill is not None:
            out.append(spill)
    return out


__all__ = [
    "CPU_COST_BASE",
    "ENGINE_SWITCH_COST",
    "GPU_LAYERS",
    "SameGpu",
    "cpu_options",
    "cpu_speed_cost",
    "option_speed",
]
