"""The model browser's fit badges: each listed model's verdict under the window's plan (its workload, engine,
precision and GPUs, the model swapped in) and the longest input (inference) or sequence (fine-tuning) that fits.

:class:`FitPlan` is the window's plan without its model; :func:`compute_badge` estimates one model under it
(the presenter's :func:`~vramdesk.ui.presenter.evaluate_scenario`, then :func:`vramdesk.core.solve.maximize`
as the form's max-length readout does); :func:`badge_chunk` is the job the browser runs on a worker, a few
models at a time; :class:`BadgeCache` keeps the answers per plan, so sorting and showing a list again cost
nothing and a changed plan starts afresh. Only models whose facts are on this machine are badged
(:class:`OfflineFacts`: the catalog, models the window has read, the HF cache and the Hub answers saved before):
a badge never downloads a config. The texts, colours and sort keys of the badges are here too. Qt-free, like
:mod:`vramdesk.ui.presenter`.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property

from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.messages import error_text
from vramdesk.core.plan_name import tokens_text
from vramdesk.core.result import Fit
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import SolveResult, maximize
from vramdesk.services.cache import AnswerCache
from vramdesk.services.catalog import Catalog
from vramdesk.services.hub import HubClient
from vramdesk.services.resolve import resolve_model

from . import theme
from .core_text import localize
from .i18n import tr
from .presenter import (
    EXPECTED_ERRORS,
    VERDICT_TITLES,
    VIEW_NO_GPU,
    FormValues,
    describe_error,
    evaluate_scenario,
    fit_message,
    form_from_scenario,
    gib,
    scenario_from_form,
)

#: what a badge can say: a verdict, "no gpu" (memory needed only), "unknown" (no estimate; ``reason`` says why)
STATES = ("fits", "tight", "does not fit", "no gpu", "unknown")
#: the browser's filter: every model, what fits, what fits or is tight
FILTERS: dict[str, tuple[str, ...] | None] = {"all": None, "fits": ("fits",), "fits or tight": ("fits", "tight")}
#: plans whose badges are kept (going back to the previous GPU or length shows its badges again at once)
KEPT_PLANS = 4
#: models per worker job: small enough that rows fill in while the rest is computed
CHUNK = 6


class NotOfflineError(LookupError):
    """A model whose facts are not on this machine (a Hub result never looked at): no badge, and this is why."""


@dataclass(frozen=True)
class FitPlan:
    """The window's plan for badging: its scenario (the model is swapped per row), the GPU its verdict uses (a
    detected one with its free memory, a catalog GPU, or None) and the verdict's headroom (None: the core's)."""

    scenario: Scenario
    gpu: GpuSpec | None
    headroom_fraction: float | None = None

    @cached_property
    def key(self) -> str:
        """What the badges depend on: everything but the model and the name."""
        data = self.scenario.model_dump(mode="json", exclude={"model", "name"})
        gpu = self.gpu.model_dump(mode="json") if self.gpu is not None else None
        return json.dumps({"plan": data, "gpu": gpu, "headroom": self.headroom_fraction}, sort_keys=True)

    @cached_property
    def form(self) -> FormValues:
        return form_from_scenario(self.scenario)

    @property
    def length_field(self) -> str:
        """The length the badge names: the input (inference) or the training sequence (fine-tuning)."""
        return "seq_len" if self.scenario.workload.kind == "finetune" else "input_len"

    def for_model(self, model_id: str) -> Scenario:
        """The plan with ``model_id`` in it, as the window builds it when the user picks that model (the form with
        the other model over the plan; a generated name follows)."""
        return scenario_from_form(self.scenario, self.form.replace(model=model_id))


@dataclass(frozen=True)
class Badge:
    """One model's badge under one plan."""

    model_id: str
    #: one of :data:`STATES`
    state: str
    #: memory one GPU needs at the plan's workload (None without an estimate)
    device_bytes: int | None = None
    #: the verdict's figures (needed, available, on what basis); None without a GPU
    fit: Fit | None = None
    length_field: str = "input_len"
    #: the longest length that fits (a tight plan: that still runs inside the headroom); None: none does
    max_length: int | None = None
    #: the solver's answer behind ``max_length`` (its message says what stopped the search)
    solved: SolveResult | None = field(default=None, repr=False)
    #: why there is no verdict, or no longest length (a Text or window text)
    reason: str = ""

    @property
    def verdict(self) -> str | None:
        return self.state if self.state in VERDICT_TITLES else None


def unknown_badge(model_id: str, reason: str) -> Badge:
    return Badge(model_id=model_id, state="unknown", reason=reason)


def compute_badge(plan: FitPlan, model_id: str, facts: ModelFacts) -> Badge:
    """``model_id`` under ``plan``: the verdict (or the memory needed, without a GPU) and the longest length that
    fits (tight plans: the longest that runs inside the headroom, as the form's readout shows it)."""
    try:
        scenario = plan.for_model(model_id)
    except ValueError as err:
        return unknown_badge(model_id, describe_error(err))
    gpu = plan.gpu
    ev = evaluate_scenario(
        scenario, resolve=lambda _ref: facts, find_gpu=lambda _name: gpu, headroom_fraction=plan.headroom_fraction
    )
    view = ev.view
    if view is None:
        return unknown_badge(model_id, ev.error or "")
    field_name = plan.length_field
    if gpu is None or view.verdict is None:
        return Badge(model_id, "no gpu", device_bytes=view.device_bytes, length_field=field_name)
    solved, reason = None, ""
    try:
        solved = maximize(
            scenario,
            facts,
            gpu,
            field_name,
            allow_tight=view.verdict == "tight",
            headroom_fraction=plan.headroom_fraction,
        )
    except EXPECTED_ERRORS as err:  # SolveError is a ValueError
        reason = error_text(err)
    return Badge(
        model_id,
        view.verdict,
        device_bytes=view.device_bytes,
        fit=view.estimate.fit,
        length_field=field_name,
        max_length=solved.value if solved is not None else None,
        solved=solved,
        reason=reason,
    )


FactsFor = Callable[[str, tuple[str, ...]], ModelFacts]
#: what reading a model's facts from this machine may end with (a damaged cache file, a config it cannot read)
_READ_ERRORS: tuple[type[Exception], ...] = (*EXPECTED_ERRORS, OSError)


def badge_chunk(
    plan: FitPlan, models: Iterable[tuple[str, tuple[str, ...]]], facts_for: FactsFor, cancel: threading.Event
) -> list[Badge]:
    """The worker's job: a badge for each (model id, sources) until ``cancel`` is set. A model whose facts are not
    on this machine, or cannot be read, gets an "unknown" badge that says why."""
    out: list[Badge] = []
    for model_id, sources in models:
        if cancel.is_set():
            break
        try:
            facts = facts_for(model_id, sources)
        except NotOfflineError as err:
            out.append(unknown_badge(model_id, str(err)))
            continue
        except _READ_ERRORS as err:
            out.append(unknown_badge(model_id, describe_error(err)))
            continue
        out.append(compute_badge(plan, model_id, facts))
    return out


class _QuietAnswers(AnswerCache):
    """The saved Hub answers, read for a badge: looking a model up to badge it is not using it, so the list of
    recently used models stays as it is."""

    def touch_recent(self, model_id: str, source: str) -> None:
        return None


class OfflineFacts:
    """Model facts without the network: the catalog, models the window has read (:meth:`remember`), and for a
    result found in the HF cache or the saved answers, those (read once, kept). Anything else raises
    :class:`NotOfflineError`. Called from the worker; :meth:`remember` from the window's thread."""

    def __init__(self, catalog: Catalog, resolve_offline: Callable[[str], ModelFacts] | None = None) -> None:
        self._catalog = catalog
        self._resolve = resolve_offline or self._resolve_here
        self._known: dict[str, ModelFacts] = {}
        self._lock = threading.Lock()

    def _resolve_here(self, model_id: str) -> ModelFacts:
        return resolve_model(model_id, self._catalog, client=HubClient(offline=True), answers=_QuietAnswers())

    def remember(self, model_id: str, facts: ModelFacts) -> None:
        with self._lock:
            self._known[model_id] = facts

    def knows(self, model_id: str) -> bool:
        with self._lock:
            return model_id in self._known

    def __call__(self, model_id: str, sources: tuple[str, ...]) -> ModelFacts:
        with self._lock:
            known = self._known.get(model_id)
        if known is not None:
            return known
        if self._catalog.find(model_id) is not None:
            return self._catalog.facts(model_id)
        if "cache" not in sources:
            raise NotOfflineError(tr("Not estimated: its config is not on this machine. Choose the model to read it."))
        facts = self._resolve(model_id)
        self.remember(model_id, facts)
        return facts


class BadgeCache:
    """Badges by plan key and model id, for the last :data:`KEPT_PLANS` plans."""

    def __init__(self, kept: int = KEPT_PLANS) -> None:
        self._plans: OrderedDict[str, dict[str, Badge]] = OrderedDict()
        self._kept = kept

    def plan(self, key: str) -> dict[str, Badge]:
        """The badges of plan ``key`` (a new, empty set for a new plan; the oldest plan is dropped)."""
        if key in self._plans:
            self._plans.move_to_end(key)
        else:
            self._plans[key] = {}
            while len(self._plans) > self._kept:
                self._plans.popitem(last=False)
        return self._plans[key]

    def put(self, key: str, badges: Iterable[Badge]) -> None:
        if key in self._plans:  # a plan dropped meanwhile keeps nothing
            self._plans[key].update({b.model_id: b for b in badges})

    def forget(self, model_id: str) -> None:
        """Drop ``model_id``'s badges (its facts became known: it is badged again)."""
        for badges in self._plans.values():
            badges.pop(model_id, None)

    def missing(self, key: str, model_ids: Iterable[str]) -> list[str]:
        have = self._plans.get(key, {})
        return [m for m in model_ids if m not in have]

    @property
    def plan_keys(self) -> tuple[str, ...]:
        return tuple(self._plans)


# ---------------------------------------------------------------------------------------------- texts


def badge_text(badge: Badge | None) -> str:
    """The cell: "Fits ≤ 39.5k", "Tight ≤ 8k", "Does not fit", "needs 9.85 GiB" (no GPU), "–" (unknown),
    "…" (not computed yet)."""
    if badge is None:
        return "…"
    if badge.state == "no gpu":
        return tr("needs {memory}").format(memory=gib(badge.device_bytes or 0))
    if badge.verdict is None:
        return "–"
    word = tr(VERDICT_TITLES[badge.verdict])
    if badge.verdict != "does not fit" and badge.max_length:
        return f"{word} ≤ {tokens_text(badge.max_length)}"
    return word


def widest_badges(no_gpu: bool) -> tuple[str, ...]:
    """The longest texts a badge cell can show in the window's language (the Fit column is sized to them)."""
    if no_gpu:
        return (tr("needs {memory}").format(memory=gib(999.99 * 2**30)),)
    return (f"{tr('Fits')} ≤ 999.9k", f"{tr('Tight')} ≤ 999.9k", tr("Does not fit"))


def _labelled(label: str, text: str) -> str:
    """``label: text`` with the language's colon ("Fits: needs 9.11 GiB of ...", "可以运行：需要 ...")."""
    return tr("{label}: {text}").format(label=label, text=text)


def badge_tooltip(badge: Badge | None) -> str:
    """The cell's tooltip: the verdict's sentence (memory needed against the GPU), and the longest length that
    fits with what stopped the search; or why there is no badge."""
    if badge is None:
        return tr("Estimating whether it fits…")
    if badge.state == "unknown":
        return _labelled(tr("Cannot estimate"), localize(badge.reason)) if badge.reason else tr("Cannot estimate")
    if badge.state == "no gpu":
        return localize(VIEW_NO_GPU(need=gib(badge.device_bytes or 0)))
    lines = []
    if badge.fit is not None:
        lines.append(_labelled(tr(VERDICT_TITLES[badge.state]), localize(fit_message(badge.fit))))
    if badge.solved is not None:
        lines.append(localize(badge.solved.message))
    elif badge.reason:
        lines.append(localize(badge.reason))
    return "\n".join(lines)


def header_tooltip(no_gpu: bool, length_field: str) -> str:
    """The Fit column's header: what its badges say (without a GPU: that they show the memory needed instead)."""
    if no_gpu:
        return tr("No GPU chosen or detected: the column shows the memory each model needs at this workload.")
    if length_field == "seq_len":
        return tr("Whether each model fits the GPU at the form's workload, and the longest sequence (≤) that fits.")
    return tr("Whether each model fits the GPU at the form's workload, and the longest input (≤) that fits.")


#: sort order of the states: what fits first, then tight, does not fit, memory only, unknown; not computed last
_STATE_RANK = {state: i for i, state in enumerate(STATES)}


def sort_key(badge: Badge | None) -> tuple[int, int, int]:
    """Ascending = fits first, then tight, then does not fit, then the rest; within a verdict the longest length
    first, then the least memory."""
    if badge is None:
        return (len(STATES), 0, 0)
    memory = badge.device_bytes if badge.device_bytes is not None else 1 << 62
    return (_STATE_RANK[badge.state], -(badge.max_length or 0), memory)


def accepts(badge: Badge | None, chosen: str) -> bool:
    """Whether filter ``chosen`` (a key of :data:`FILTERS`) shows a row with ``badge``."""
    wanted = FILTERS.get(chosen)
    return wanted is None or (badge is not None and badge.state in wanted)


def badge_colors(state: str | None, palette: theme.Palette) -> tuple[str, str]:
    """(text, background) of a badge in the window's palette: the verdict's colour on a light tint of it (a dark
    theme: a lighter shade on a dark tint, so it still reads)."""
    color = theme.VERDICT_COLORS.get(state if state in VERDICT_TITLES else None, theme.VERDICT_COLORS[None])
    if palette.name == "dark":
        return theme.mix(color, "#ffffff", 0.45), theme.mix(color, palette.background, 0.72)
    return color, theme.mix(color, palette.background, 0.88)
