"""The window's logic without widgets: form values <-> scenario, and one estimate -> plain view data.

Nothing here imports Qt, so the tests can check what the window will show without building it, and the
window stays a thin layer that copies these values into widgets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from vramdesk.core.estimate import estimate
from vramdesk.core.facts import ModelFacts
from vramdesk.core.fit import SHORT, basis_text
from vramdesk.core.fit import verdict as fit_verdict
from vramdesk.core.gpu import GIB, GpuSpec, hardware_text
from vramdesk.core.messages import Message, Text
from vramdesk.core.options import Option, options
from vramdesk.core.plan_name import renamed
from vramdesk.core.result import Estimate, Fit
from vramdesk.core.scenario import (
    FinetuneWorkload,
    InferenceWorkload,
    Scenario,
)
from vramdesk.report.tables import runs
from vramdesk.services.resolve import resolve_gpu, resolve_model
from vramdesk.validation_text import validation_text

from .i18n import tr
from .theme import component_colors

#: errors an estimate may end with for a combination the user picked; anything else is a bug and is raised
EXPECTED_ERRORS: tuple[type[Exception], ...] = (ValueError, LookupError)

VERDICT_TITLES = {"fits": "Fits", "tight": "Tight", "does not fit": "Does not fit"}


#: the units the window can show memory in (Settings): binary GiB (2^30 bytes) or decimal GB (10^9 bytes)
UNITS: dict[str, int] = {"GiB": GIB, "GB": 1_000_000_000}


@dataclass
class DisplayUnit:
    """The unit every memory figure of the window is shown in: one of :data:`UNITS` (Settings > memory unit).

    The window has one, :data:`DISPLAY_UNIT`; :func:`set_unit`, :func:`unit_name`, :func:`unit_bytes` and
    :func:`gib` read and change it (the charts, the table, the dialogs and the compare window all call them)."""

    name: str = "GiB"

    def set(self, name: str) -> str:
        """Switch to ``name`` ("GiB" or "GB"; anything else means GiB); returns the unit now in use."""
        self.name = name if name in UNITS else "GiB"
        return self.name

    @property
    def bytes(self) -> int:
        """Bytes in one unit (2^30 for GiB, 10^9 for GB)."""
        return UNITS[self.name]

    def text(self, n: float) -> str:
        """``n`` bytes in this unit with two decimals ("9.85 GiB", or "10.58 GB")."""
        return f"{n / self.bytes:.2f} {self.name}"


#: the window's display unit (the saved setting, applied by MainWindow.load_display_settings)
DISPLAY_UNIT = DisplayUnit()


def set_unit(name: str) -> str:
    """Show every memory figure of the window in ``name`` ("GiB" or "GB"; anything else means GiB)."""
    return DISPLAY_UNIT.set(name)


def unit_name() -> str:
    return DISPLAY_UNIT.name


def unit_bytes() -> int:
    """Bytes in one unit of the window (2^30 for GiB, 10^9 for GB)."""
    return DISPLAY_UNIT.bytes


def gib(n: float) -> str:
    """Bytes in the window's unit with two decimals ("9.85 GiB", or "10.58 GB")."""
    return DISPLAY_UNIT.text(n)


def count_text(n: int) -> str:
    """A parameter count the way model cards write it: 4.02 B, 596 M, 135 M."""
    if n >= 1_000_000_000:
        return f"{n / 1e9:.2f} B"
    if n >= 1_000_000:
        return f"{n / 1e6:.0f} M"
    return f"{n:,}"


#: the options the form shows (every option of the table outside its "hidden" group), by name
_FORM_OPTIONS: dict[str, Option] = {o.name: o for o in options() if o.group != "hidden"}


def _form_default(opt: Option) -> Any:
    """An option's default as the form holds it: a list the form edits as text (LoRA targets) is comma text."""
    if opt.kind == "list" and not opt.form.get("values"):
        return ",".join(opt.default)
    return opt.default


class FormValues:
    """What the form shows: the model, the open tab ("inference" or "finetune") and every option the window lets
    the user change, as attributes named like the options (``values.batch``, ``values.lora_rank``).

    The options come from the option table (``vramdesk.core.options``), so a new option needs no field here; an
    option not given takes its declared default. Frozen, compared by value; :meth:`replace` makes a changed copy.
    """

    model: str
    mode: str

    def __init__(self, model: str, mode: str = "inference", **values: Any) -> None:
        unknown = sorted(set(values) - set(_FORM_OPTIONS))
        if unknown:
            raise TypeError(f"FormValues: no option {', '.join(unknown)}")
        data = {"model": model, "mode": mode, **{n: _form_default(o) for n, o in _FORM_OPTIONS.items()}, **values}
        object.__setattr__(self, "__dict__", data)

    def __getattr__(self, name: str) -> Any:  # only for names that are not options: typed Any for the checker
        raise AttributeError(f"FormValues has no option '{name}'")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("FormValues is frozen: use replace()")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FormValues) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(tuple((k, repr(v)) for k, v in vars(self).items()))

    def __repr__(self) -> str:
        return "FormValues(" + ", ".join(f"{k}={v!r}" for k, v in vars(self).items()) + ")"

    def replace(self, **changes: Any) -> FormValues:
        return FormValues(**{**vars(self), **changes})

    @staticmethod
    def names() -> tuple[str, ...]:
        """The model, the tab and every option the form holds, in the table's order."""
        return ("model", "mode", *_FORM_OPTIONS)


DETECTED_PREFIX = "detected:"


def form_from_scenario(scenario: Scenario, gpu_key: str | None = None) -> FormValues:
    """The form for ``scenario``; ``gpu_key`` replaces the GPU name (a detected GPU the user picked). The tab
    that is not the scenario's shows its workload's defaults."""
    data = scenario.model_dump()
    defaults = {"inference": InferenceWorkload().model_dump(), "finetune": FinetuneWorkload().model_dump()}
    sources = {
        kind: {**data, "workload": data["workload"] if scenario.workload.kind == kind else work}
        for kind, work in defaults.items()
    }
    values = {name: opt.get(sources[opt.mode] if opt.mode else data) for name, opt in _FORM_OPTIONS.items()}
    values.update(
        model=scenario.model.id,
        mode=scenario.workload.kind,
        lora_targets=",".join(values["lora_targets"]),
        gpu=gpu_key or scenario.hardware.gpu,
    )
    return FormValues(**values)


def _form_value(form: FormValues, name: str, work: Mapping[str, Any], detected: Mapping[str, GpuSpec] | None) -> Any:
    """One form field as the scenario holds it (the form's own spelling of a few options differs)."""
    value = getattr(form, name)
    adapters = form.method != "full"
    if name == "lora_targets":
        return tuple(t.strip() for t in form.lora_targets.split(",") if t.strip()) or ("all-linear",)
    if name == "modules_to_save":
        # the core rejects it for a full fine-tune (it trains every module already); the form keeps it
        saved = tuple(form.modules_to_save) if adapters else ()
        kept = tuple(work.get("modules_to_save") or ())
        return kept if set(saved) == set(kept) else saved  # the same modules: keep the scenario's order
    if name == "lora_bias":
        return form.lora_bias if adapters else "none"
    if name == "nodes":
        # several machines are a fine-tuning plan's: an inference plan runs on one
        return form.nodes if form.mode == "finetune" else 1
    if name == "gpu" and value is not None and detected and value in detected:
        return detected[value].name
    return value


def scenario_from_form(base: Scenario, form: FormValues, detected: Mapping[str, GpuSpec] | None = None) -> Scenario:
    """``base`` with the form's values, validated (raises pydantic's ValidationError, a ValueError).

    Fields the form does not show (vLLM's block size, ...) are kept, and the name unless it is the generated one
    (:func:`~vramdesk.core.plan_name.renamed`: it follows the plan); switching between the Inference and Fine-tune
    tabs keeps the other workload's fields where ``base`` has them.
    """
    data: dict[str, Any] = base.model_dump()
    if data["model"]["id"] != form.model:
        data["model"] = {"id": form.model, "revision": None}
    data["weights"] = form.weights
    old: dict[str, Any] = data["workload"]
    data["workload"] = dict(old) if old.get("kind", "inference") == form.mode else {"kind": form.mode}
    for name, opt in _FORM_OPTIONS.items():
        if opt.mode in (None, form.mode):
            opt.put(data, _form_value(form, name, old, detected))
    # a generated name follows the plan (until the user types one)
    return renamed(base, Scenario.model_validate(data))


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
class GpuLoad:
    """What one GPU holds at the peak, and its own verdict (fits / tight / does not fit, or None)."""

    index: int
    allocated_bytes: int
    reserved_bytes: int
    device_bytes: int
    verdict: str | None
    #: device bytes as a fraction of what the verdict compares with (the engine's budget, free or total memory;
    #: 0 without a GPU)
    fraction: float


def gpu_groups(loads: tuple[GpuLoad, ...]) -> list[tuple[int, int, GpuLoad]]:
    """Consecutive GPUs that hold the same and get the same verdict, as (first index, last index, one of them):
    128 data-parallel GPUs are one group, pipeline stages or a device_map split a few."""
    keys = [(g.device_bytes, g.verdict) for g in loads]
    return [(loads[a].index, loads[b].index, loads[a]) for a, b, _ in runs(keys)]


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
    #: one entry per GPU that holds part of the model (several when it is split)
    per_gpu: tuple[GpuLoad, ...] = ()
    #: the verdict compares with the free memory of a detected GPU (not its total)
    uses_free_memory: bool = False
    mode: str = "inference"
    #: the GPUs hold different amounts (pipeline stages, llama.cpp / device_map splits): the cards, the breakdown
    #: and the phases are GPU 0's, the verdict the busiest GPU's
    uneven: bool = False
    #: machines of ``gpu_count`` GPUs each (several for a plan that spans machines)
    machines: int = 1

    def hardware_text(self) -> str:
        """The GPUs the verdict is for: "H100 SXM", "8 x H100 SXM", or "16 machines x 8 x H100 SXM"."""
        return hardware_text(str(self.gpu_name), self.gpu_count, self.machines)

    def summary_line(self) -> str:
        where = f" on {self.hardware_text()}"
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


def plan_facts(scenario: Scenario | None, known_facts: Callable[[str], ModelFacts]) -> tuple[ModelFacts | None, str]:
    """The facts of ``scenario``'s model for a view of the plan (the Which GPUs view, the fit map), or None and the
    line that says why it cannot be shown."""
    if scenario is None:
        return None, tr("Cannot estimate")
    try:
        return known_facts(scenario.model.id), ""
    except LookupError as err:
        return None, describe_error(err)


def describe_error(err: BaseException) -> str:
    """One readable line for an error the user caused (pydantic's messages name the field). A core refusal's
    :class:`~vramdesk.core.messages.Text` comes back as it is, so that the window translates it by its id; so do
    pydantic's errors (:func:`~vramdesk.validation_text.validation_text`: ``loc: message`` each, by id)."""
    if isinstance(err, ValidationError):
        return validation_text(err)
    if len(err.args) == 1 and isinstance(err.args[0], Text) and err.args[0] == err.args[0].strip():
        return err.args[0]
    text = str(err).strip()
    if isinstance(err, LookupError) and len(text) > 1 and text[0] == text[-1] == "'":
        text = text[1:-1]  # KeyError's repr-quoting
    return text or type(err).__name__


#: the verdict sentences in the window's unit (the core's :mod:`vramdesk.core.fit` ones, with amounts as text)
VIEW_SHORT = Message("view.fit.short", "needs {need} per GPU but the {gpu} has {available} {basis}: short by {short}")
VIEW_CACHE_ONLY = Message(
    "view.fit.cache_only",
    "needs {live} of {available} {basis} for live tensors, {need} with PyTorch's cache of free blocks: the "
    "allocator gives cached blocks back before it runs out, so this runs unless fragmentation takes more than the "
    "{left} left; expandable_segments:True lowers that risk",
)
VIEW_TIGHT = Message(
    "view.fit.tight",
    "needs {need} of {available} {basis}: less than the {headroom} headroom left for the display, other processes "
    "and allocator spikes",
)
VIEW_SPARE = Message("view.fit.spare", "needs {need} of {available} {basis}; {spare} to spare")
VIEW_NO_GPU = Message("view.no_gpu", "needs {need} per GPU; choose a GPU to see whether it fits")
#: a text in parentheses (full-width ones around Chinese)
PARENTHESES = Message("view.parentheses", "({text})")


def _first_id(message: str) -> str:
    """The message id of a verdict sentence (of its first part when a note was joined to it)."""
    if not isinstance(message, Text):
        return ""
    if message.id or not message.parts:
        return message.id
    return _first_id(message.parts[0])


def fit_message(fit: Fit) -> str:
    """The core's verdict sentence (:func:`vramdesk.core.fit.verdict`), rebuilt from the :class:`Fit` fields in
    the window's unit (in GiB it is the core's text), as a :class:`~vramdesk.core.messages.Text`."""
    need, avail, where = gib(fit.required_bytes), gib(fit.available_bytes), basis_text(fit.basis)
    if fit.available_bytes <= 0:  # a Fit from before the core recorded what it compared with
        return fit.message
    if fit.verdict == "does not fit":
        if _first_id(fit.message) not in ("", SHORT.id):
            return fit.message  # (the engine's own refusal, vLLM's start-up check: its words, not a shortfall)
        return VIEW_SHORT(need=need, gpu=fit.gpu, available=avail, basis=where, short=gib(fit.short_bytes))
    if fit.verdict == "tight" and fit.live_bytes is not None:
        return VIEW_CACHE_ONLY(
            live=gib(fit.live_bytes),
            available=avail,
            basis=where,
            need=need,
            left=gib(fit.available_bytes - fit.live_bytes),
        )
    if fit.verdict == "tight":
        return VIEW_TIGHT(need=need, available=avail, basis=where, headroom=gib(fit.headroom_bytes))
    return VIEW_SPARE(need=need, available=avail, basis=where, spare=gib(fit.available_bytes - fit.required_bytes))


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
        message = fit_message(fit)
    else:
        verdict = None
        headline = "No GPU chosen"
        message = VIEW_NO_GPU(need=gib(est.device_bytes))
    loads = []
    for share in est.per_gpu:
        if share.fit is not None:  # the core's own verdict for this GPU (headroom and engine budget included)
            own: str | None = share.fit.verdict
        else:
            own = fit_verdict(share.device_bytes, gpu).verdict if gpu is not None else None
        loads.append(
            GpuLoad(
                index=share.index,
                allocated_bytes=share.peak_allocated_bytes,
                reserved_bytes=share.peak_reserved_bytes,
                device_bytes=share.device_bytes,
                verdict=own,
                # of the whole card, for every engine (vLLM's budget, gpu_memory_utilization x the card, read as
                # "100 %" next to training plans' share of the card)
                fraction=share.device_bytes / gpu.memory_bytes if gpu is not None and gpu.memory_bytes else 0.0,
            )
        )
    return EstimateView(
        model_id=est.model_id,
        gpu_name=gpu.name if gpu else None,
        gpu_memory_bytes=gpu.memory_bytes if gpu else None,
        gpu_count=scenario.hardware.gpu_count,
        machines=scenario.hardware.nodes,
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
        per_gpu=tuple(loads),
        uses_free_memory=gpu is not None and gpu.free_bytes is not None,
        mode=scenario.workload.kind,
        uneven=est.gpus_differ,
    )


ModelResolver = Callable[[str], ModelFacts]
GpuResolver = Callable[[str | None], GpuSpec | None]


def evaluate_scenario(
    scenario: Scenario,
    *,
    resolve: ModelResolver = resolve_model,
    find_gpu: GpuResolver = resolve_gpu,
    headroom_fraction: float | None = None,
) -> Evaluation:
    """Resolve the model and GPU, estimate, and turn the result into view data (or an error line).

    ``headroom_fraction`` overrides the verdict's safety margin (a share of the GPU's memory; None = the
    core's default)."""
    try:
        facts = resolve(scenario.model.id)
        gpu = find_gpu(scenario.hardware.gpu)
        est = estimate(scenario, facts, gpu, headroom_fraction=headroom_fraction)
    except EXPECTED_ERRORS as err:
        return Evaluation(scenario=scenario, error=describe_error(err))
    return Evaluation(scenario=scenario, view=build_view(est, scenario, gpu))


def evaluate_form(
    base: Scenario,
    form: FormValues,
    *,
    resolve: ModelResolver = resolve_model,
    find_gpu: GpuResolver = resolve_gpu,
    detected: Mapping[str, GpuSpec] | None = None,
    headroom_fraction: float | None = None,
) -> Evaluation:
    """What the window does on every change: the form over ``base``, validated, then estimated.

    ``detected`` maps the keys of detected GPUs to their specs (with free memory): the verdict then uses them.
    """
    try:
        scenario = scenario_from_form(base, form, detected)
    except ValidationError as err:
        return Evaluation(scenario=None, error=describe_error(err))
    if detected and form.gpu is not None and form.gpu in detected:
        spec = detected[form.gpu]

        def find_detected(name: str | None) -> GpuSpec | None:
            return spec

        return evaluate_scenario(scenario, resolve=resolve, find_gpu=find_detected, headroom_fraction=headroom_fraction)
    return evaluate_scenario(scenario, resolve=resolve, find_gpu=find_gpu, headroom_fraction=headroom_fraction)


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
