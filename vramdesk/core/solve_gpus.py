"""The fewest GPUs of one type a scenario needs, and how the work is laid out on them.

* :func:`gpu_counts`: the GPU counts to try, fewest first (whole machines for a fine-tune past one machine).
* :func:`gpu_layout`: a scenario on a given number of GPUs (vLLM tensor parallel, a layer split, or ZeRO-3 for
  a fine-tune without sharding).
* :func:`minimize_gpus`: the fewest GPUs of one type, scanning 1, 2, 3, ... (a GPU count changes how the work is
  split, so the scan does not assume monotonicity).
"""

from __future__ import annotations

from typing import Any

from .engines import engine
from .facts import ModelFacts
from .gpu import GpuSpec, hardware_text
from .messages import Message, MessageText, Text, error_text, free
from .scenario import InferenceWorkload, Scenario
from .solve import Probe, _accepted, _Frozen, _with_headroom, probe, verdict_word, with_data

#: how the work is laid out on the GPUs (``GpuCountResult.how``)
TENSOR_PARALLEL = Message("gpus.how.tensor_parallel", "tensor parallel over all GPUs")
LAYERS_SPLIT = Message("gpus.how.layers_split", "layers split across the GPUs")
FSDP = Message("gpus.how.fsdp", "FSDP, tp {tp}, pp {pp}")
ZERO = Message("gpus.how.zero", "ZeRO-{zero}, tp {tp}, pp {pp}")
DATA_PARALLEL = Message("gpus.how.data_parallel", "data parallel, tp {tp}, pp {pp}")
#: vLLM refuses a tensor-parallel size that does not divide the attention heads
HEADS_NOT_DIVISIBLE = Message("gpus.heads_not_divisible", "{heads} attention heads % tp {tp} != 0")
#: the answer: "2 x H100 SXM (ZeRO-3, tp 1, pp 1): fits" (``where`` is :func:`~vramdesk.core.gpu.hardware_text`)
FOUND = Message("gpus.found", "{where} ({how}): {verdict}")
FOUND_MACHINES = Message("gpus.found.machines", "{where} = {gpus} GPUs ({how}): {verdict}")
NONE_FITS = Message("gpus.none", "does not fit on up to {max_gpus} x {gpu}")
NONE_FITS_WHY = Message("gpus.none.why", "does not fit on up to {max_gpus} x {gpu} ({why})")


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
    how: MessageText
    message: MessageText


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


def gpu_layout(scenario: Scenario, n: int, machines: int = 1) -> tuple[Scenario, Text]:
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
        how = TENSOR_PARALLEL() if engine(work.engine).grows_by_tensor_parallel else LAYERS_SPLIT()
    else:
        p = s.parallelism
        if p.fsdp:
            how = FSDP(tp=p.tp, pp=p.pp)
        elif p.zero:
            how = ZERO(zero=p.zero, tp=p.tp, pp=p.pp)
        else:
            how = DATA_PARALLEL(tp=p.tp, pp=p.pp)
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
            prev = Probe(value=n, verdict=None, device_bytes=None, error=HEADS_NOT_DIVISIBLE(heads=heads, tp=n))
            continue
        try:
            s, how = gpu_layout(scenario, per, machines)
        except ValueError as err:
            prev = Probe(value=n, verdict=None, device_bytes=None, error=error_text(err))
            continue
        evaluations += 1
        p, _ = probe(s, facts, gpu)
        p = p.model_copy(update={"value": n})
        if p.verdict in accepted:
            where = hardware_text(gpu.name, per, machines)  # (a Text of the GPU module's once it has ids)
            word = verdict_word(str(p.verdict))
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
                message=(
                    FOUND_MACHINES(where=where, gpus=n, how=how, verdict=word)
                    if machines > 1
                    else FOUND(where=where, how=how, verdict=word)
                ),
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
        message=_none_fits(max_gpus, gpu, prev),
    )


def _none_fits(max_gpus: int, gpu: GpuSpec, prev: Probe | None) -> Text:
    """No GPU count up to ``max_gpus`` is accepted: with why the last one tried was not."""
    if prev is None:
        return NONE_FITS(max_gpus=max_gpus, gpu=gpu.name)
    why = free(prev.error) if prev.error else verdict_word(str(prev.verdict))
    return NONE_FITS_WHY(max_gpus=max_gpus, gpu=gpu.name, why=why)


__all__ = ["GPUS_PER_MACHINE", "MAX_MACHINES", "GpuCountResult", "gpu_counts", "gpu_layout", "minimize_gpus"]
