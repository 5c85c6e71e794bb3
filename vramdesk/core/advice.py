"""GPU advice: which GPUs of a list (the catalog's, given by the caller) fit a configuration, how many of
each (up to ``max_gpus``), and how fast it would run there. Rows are plain data the window sorts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .estimate import EstimateError, estimate
from .facts import ModelFacts
from .gpu import GpuSpec
from .messages import MessageText, error_text
from .performance import Efficiency, PerformanceError, performance
from .scenario import Scenario
from .solve_gpus import minimize_gpus

SortKey = Literal["gpus", "total_memory", "decode", "prefill", "train", "step_time", "name", "spare", "device"]


class GpuAdvice(BaseModel):
    model_config = ConfigDict(frozen=True)

    gpu: str
    memory_bytes: int
    #: fewest GPUs of this type that fit; None = not even ``max_gpus``
    gpus: int | None
    verdict: str
    #: per GPU, as nvidia-smi would show it
    device_bytes: int | None
    #: memory left per GPU (negative: short)
    spare_bytes: int | None
    total_memory_bytes: int | None
    how: MessageText
    decode_tokens_per_s: float | None = None
    decode_tokens_per_s_total: float | None = None
    prefill_tokens_per_s: float | None = None
    train_tokens_per_s: float | None = None
    step_time_s: float | None = None
    bound: str | None = None
    note: MessageText = ""


def advise(
    scenario: Scenario,
    facts: ModelFacts,
    gpus: Iterable[GpuSpec],
    *,
    max_gpus: int = 8,
    allow_tight: bool = False,
    efficiency: Efficiency | None = None,
    headroom_fraction: float | None = None,
) -> list[GpuAdvice]:
    """One row per GPU type: the fewest of it that fit ``scenario`` and the expected speed there.

    Fitting rows come first (fewest GPUs, then the fastest); GPUs that do not fit even ``max_gpus`` times
    are kept at the end with their shortfall on one GPU. ``headroom_fraction``: the verdicts' headroom (None: the
    estimator's)."""
    rows: list[GpuAdvice] = []
    for gpu in gpus:
        res = minimize_gpus(
            scenario, facts, gpu, max_gpus=max_gpus, allow_tight=allow_tight, headroom_fraction=headroom_fraction
        )
        if res.gpus is None or res.scenario is None:
            try:
                one = estimate(
                    scenario.model_copy(
                        update={
                            "hardware": scenario.hardware.model_copy(
                                update={"gpu": gpu.name, "gpu_count": scenario.hardware.gpu_count}
                            )
                        }
                    ),
                    facts,
                    gpu,
                    headroom_fraction=headroom_fraction,
                )
                dev: int | None = one.device_bytes
            except (EstimateError, ValueError):
                dev = None
            rows.append(
                GpuAdvice(
                    gpu=gpu.name,
                    memory_bytes=gpu.memory_bytes,
                    gpus=None,
                    verdict="does not fit",
                    device_bytes=dev,
                    spare_bytes=None if dev is None else gpu.memory_bytes - dev,
                    total_memory_bytes=None,
                    how="",
                    note=res.message,
                )
            )
            continue
        solved = Scenario.model_validate(res.scenario)
        solved = solved.model_copy(update={"hardware": solved.hardware.model_copy(update={"gpu": gpu.name})})
        est = estimate(solved, facts, gpu, headroom_fraction=headroom_fraction)
        fit = est.fit
        row: dict[str, Any] = dict(
            gpu=gpu.name,
            memory_bytes=gpu.memory_bytes,
            gpus=res.gpus,
            verdict=fit.verdict if fit else "fits",
            device_bytes=est.device_bytes,
            spare_bytes=gpu.memory_bytes - (fit.required_bytes if fit else est.device_bytes),
            total_memory_bytes=gpu.memory_bytes * res.gpus,
            how=res.how,
        )
        try:
            perf = performance(est, solved, facts, gpu, efficiency)
        except PerformanceError as err:
            rows.append(GpuAdvice(**row, note=error_text(err)))
            continue
        rows.append(
            GpuAdvice(
                **row,
                decode_tokens_per_s=perf.decode_tokens_per_s,
                decode_tokens_per_s_total=perf.decode_tokens_per_s_total,
                prefill_tokens_per_s=perf.prefill_tokens_per_s,
                train_tokens_per_s=perf.train_tokens_per_s,
                step_time_s=perf.step_time_s,
                bound=perf.bound,
            )
        )
    return sort_rows(rows, "gpus")


def _speed(row: GpuAdvice) -> float:
    return row.decode_tokens_per_s or row.train_tokens_per_s or 0.0


def sort_rows(rows: Sequence[GpuAdvice], key: SortKey = "gpus", *, descending: bool = False) -> list[GpuAdvice]:
    """Sort advice rows; rows that do not fit (or lack the figure) always go last."""

    def k(r: GpuAdvice) -> tuple[float, float, float, str]:
        sign = -1.0 if descending else 1.0
        if key == "name":
            return (0.0, 0.0, 0.0, r.gpu.lower())
        if key == "gpus":
            value: float | int | None = r.gpus
        else:
            value = {
                "total_memory": r.total_memory_bytes,
                "decode": r.decode_tokens_per_s,
                "prefill": r.prefill_tokens_per_s,
                "train": r.train_tokens_per_s,
                "step_time": r.step_time_s,
                "spare": r.spare_bytes,
                "device": r.device_bytes,
            }[key]
        if r.gpus is None or value is None:
            return (1.0, 0.0, 0.0, r.gpu.lower())
        return (0.0, sign * float(value), -_speed(r), r.gpu.lower())

    out = sorted(rows, key=k)
    return list(reversed(out)) if descending and key == "name" else out


__all__ = ["GpuAdvice", "advise", "sort_rows"]
