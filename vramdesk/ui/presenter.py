"""The window's logic without widgets: form values <-> scenario, and one estimate -> plain view data.

Nothing here imports Qt, so the tests can check what the window will show without building it, and the
window stays a thin layer that copies these values into widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from vramdesk.core.estimate import ModelFacts, estimate
from vramdesk.core.gpu import GIB, GpuSpec
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import InferenceWorkload, Scenario
from vramdesk.services.resolve import resolve_gpu, resolve_model

from .theme import component_colors

ENGINES: tuple[str, ...] = ("transformers", "vllm", "llamacpp")
WEIGHT_FORMATS: tuple[str, ...] = (
    "auto",
    "bf16",
    "fp16",
    "fp8",
    "int8",
    "nf4",
    "nf4-dq",
    "gptq-int4",
    "gptq-int8",
    "awq-int4",
    "mxfp4",
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q4_k_m",
    "q4_0",
)
KV_DTYPES: tuple[str, ...] = ("auto", "bf16", "fp16", "fp8", "q8_0", "q4_0")

#: errors an estimate may end with for a combination the user picked; anything else is a bug and is raised
EXPECTED_ERRORS: tuple[type[Exception], ...] = (ValueError, LookupError)

VERDICT_TITLES = {"fits": "Fits", "tight": "Tight", "does not fit": "Does not fit"}


def gib(n: float) -> str:
    """Bytes as GiB with two decimals (the unit everywhere in the window)."""
    return f"{n / GIB:.2f} GiB"


def count_text(n: int) -> str:
    """A parameter count the way model cards write it: 4.02 B, 596 M, 135 M."""
    if n >= 1_000_000_000:
        return f"{n / 1e9:.2f} B"
    if n >= 1_000_000:
        return f"{n / 1e6:.0f} M"
    return f"{n:,}"


@dataclass(frozen=True)
class FormValues:
    """What the form shows: exactly the fields of a scenario the first window lets the user change."""

    model: str
    engine: str = "transformers"
    weights: str = "auto"
    batch: int = 1
    #: None = the model's default (its context, at most 4096)
    input_len: int | None = None
    output_len: int = 512
    kv_dtype: str = "auto"
    #: GPU catalog name; None = no GPU chosen (no fit verdict)
    gpu: str | None = None
    gpu_count: int = 1


def form_from_scenario(scenario: Scenario) -> FormValues:
    work = scenario.workload
    if not isinstance(work, InferenceWorkload):  # a fine-tuning file: show inference defaults
        work = InferenceWorkload()
    return FormValues(
        model=scenario.model.id,
        engine=work.engine,
        weights=scenario.weights,
        batch=work.batch,
        input_len=work.input_len,
        output_len=work.output_len,
        kv_dtype=work.kv_dtype,
        gpu=scenario.hardware.gpu,
        gpu_count=scenario.hardware.gpu_count,
    )


def scenario_from_form(base: Scenario, form: FormValues) -> Scenario:
    """``base`` with the form's values, validated (raises pydantic's ValidationError, a ValueError).

    Fields the form does not show (attention, vLLM/llama.cpp options, parallelism, the name) are kept.
    A fine-tuning scenario keeps its workload: the estimator then says why it cannot estimate it yet.
    """
    data: dict[str, Any] = base.model_dump()
    model = dict(data["model"])
    if model["id"] != form.model:
        model = {"id": form.model, "revision": None}
    data["model"] = model
    data["weights"] = form.weights
    if data["workload"].get("kind", "inference") == "inference":
        data["workload"].update(
            engine=form.engine,
            batch=form.batch,
            input_len=form.input_len,
            output_len=form.output_len,
            kv_dtype=form.kv_dtype,
        )
    data["hardware"] = {"gpu": form.gpu, "gpu_count": form.gpu_count}
    return Scenario.model_validate(data)


@dataclass(frozen=True)
class Slice:
    """One component at the peak, as the pie, the bar, the legend and the table show it."""

    name: str
    category: str
    bytes: int
    #: fraction of the peak allocation, 0..1
    share: float
    color: str
    explain: str


@dataclass(frozen=True)
class PhaseBar:
    name: str
    #: (component name, bytes), in stacking order (bottom first)
    parts: tuple[tuple[str, int], ...]
    total: int
    is_peak: bool


@dataclass(frozen=True)
class EstimateView:
    """Everything the results side of the window shows, as plain values."""

    model_id: str
    gpu_name: str | None
    gpu_memory_bytes: int | None
    gpu_count: int
    #: "fits" / "tight" / "does not fit", or None when no GPU is chosen
    verdict: str | None
    headline: str
    message: str
    peak_phase: str
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    device_bytes: int
    params_total: int
    params_active: int
    slices: tuple[Slice, ...]
    phases: tuple[PhaseBar, ...]
    #: colour of every component name that appears in any phase
    colors: dict[str, str]
    #: category of every component name that appears in any phase
    categories: dict[str, str]
    warnings: tuple[str, ...]
    estimate: Estimate = field(repr=False)

    def summary_line(self) -> str:
        where = f" on {self.gpu_count} x {self.gpu_name}" if self.gpu_count > 1 else f" on {self.gpu_name}"
        tail = f"{where} ({self.verdict})" if self.gpu_name and self.verdict else " (no GPU chosen)"
        return f"{self.model_id} {gib(self.device_bytes)}{tail}"


@dataclass(frozen=True)
class Evaluation:
    """The result of one estimate request: a view, or the reason there is none."""

    scenario: Scenario | None
    view: EstimateView | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.view is not None


def describe_error(err: BaseException) -> str:
    """One readable line for an error the user caused (pydantic's messages name the field)."""
    if isinstance(err, ValidationError):
        parts = []
        for e in err.errors():
            loc = ".".join(str(x) for x in e["loc"])
            msg = str(e["msg"]).removeprefix("Value error, ")
            parts.append(f"{loc}: {msg}" if loc else msg)
        return "; ".join(parts)
    text = str(err).strip()
    if isinstance(err, LookupError) and len(text) > 1 and text[0] == text[-1] == "'":
        text = text[1:-1]  # KeyError's repr-quoting
    return text or type(err).__name__


def build_view(est: Estimate, scenario: Scenario, gpu: GpuSpec | None) -> EstimateView:
    names: list[str] = [c.name for c in est.components]
    categories: dict[str, str] = {c.name: c.category for c in est.components}
    for phase in est.phases:
        for c in phase.components:
            if c.name not in categories:
                names.append(c.name)
                categories[c.name] = c.category
    colors = component_colors([(n, categories[n]) for n in names])
    total = sum(c.bytes for c in est.components) or 1
    slices = tuple(
        Slice(
            name=c.name,
            category=c.category,
            bytes=c.bytes,
            share=c.bytes / total,
            color=colors[c.name],
            explain=c.explain,
        )
        for c in est.components
    )
    phases = tuple(
        PhaseBar(
            name=p.name,
            parts=tuple((c.name, c.bytes) for c in p.components),
            total=p.allocated_bytes,
            is_peak=p.name == est.peak_phase,
        )
        for p in est.phases
    )
    fit = est.fit
    if fit is not None:
        verdict: str | None = fit.verdict
        headline = VERDICT_TITLES.get(fit.verdict, fit.verdict.capitalize())
        message = fit.message
    else:
        verdict = None
        headline = "No GPU chosen"
        message = f"needs {gib(est.device_bytes)} per GPU; choose a GPU to see whether it fits"
    return EstimateView(
        model_id=est.model_id,
        gpu_name=gpu.name if gpu else None,
        gpu_memory_bytes=gpu.memory_bytes if gpu else None,
        gpu_count=scenario.hardware.gpu_count,
        verdict=verdict,
        headline=headline,
        message=message,
        peak_phase=est.peak_phase,
        peak_allocated_bytes=est.peak_allocated_bytes,
        peak_reserved_bytes=est.peak_reserved_bytes,
        device_bytes=est.device_bytes,
        params_total=est.params.total,
        params_active=est.params.active,
        slices=slices,
        phases=phases,
        colors=colors,
        categories=categories,
        warnings=est.warnings,
        estimate=est,
    )


ModelResolver = Callable[[str], ModelFacts]
GpuResolver = Callable[[str | None], GpuSpec | None]


def evaluate_scenario(
    scenario: Scenario, *, resolve: ModelResolver = resolve_model, find_gpu: GpuResolver = resolve_gpu
) -> Evaluation:
    """Resolve the model and GPU, estimate, and turn the result into view data (or an error line)."""
    try:
        facts = resolve(scenario.model.id)
        gpu = find_gpu(scenario.hardware.gpu)
        est = estimate(scenario, facts, gpu)
    except EXPECTED_ERRORS as err:
        return Evaluation(scenario=scenario, error=describe_error(err))
    return Evaluation(scenario=scenario, view=build_view(est, scenario, gpu))


def evaluate_form(
    base: Scenario, form: FormValues, *, resolve: ModelResolver = resolve_model, find_gpu: GpuResolver = resolve_gpu
) -> Evaluation:
    """What the window does on every change: the form over ``base``, validated, then estimated."""
    try:
        scenario = scenario_from_form(base, form)
    except ValidationError as err:
        return Evaluation(scenario=None, error=describe_error(err))
    return evaluate_scenario(scenario, resolve=resolve, find_gpu=find_gpu)


def pie_angles(values: list[int] | tuple[int, ...], full: int = 5760) -> list[tuple[int, int]]:
    """(start, span) per value in 1/16 degree, spans summing to exactly ``full`` (cumulative rounding).

    Zero values get a zero span; when every value is zero every span is zero.
    """
    total = sum(values)
    if total <= 0:
        return [(0, 0) for _ in values]
    out: list[tuple[int, int]] = []
    acc = 0
    prev = 0
    for v in values:
        acc += v
        edge = round(acc * full / total)
        out.append((prev, edge - prev))
        prev = edge
    return out
