"""The window's advice for one estimate, and its texts: the smallest changes that make a plan fit (under a
"does not fit" verdict) and the longest input or sequence the GPU takes (the readout next to its spin box).

:func:`compute_advice` is the job the window runs on a worker; it answers an :class:`Advice`. The other
functions turn that answer into what the window shows (:class:`ChangesPanel`, :class:`MaxLengthReadout`), in
the window's language. Qt-free, like :mod:`vramdesk.ui.presenter`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.messages import error_text
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import ChangesResult, Option, SolveError, SolveResult, maximize
from vramdesk.core.solve_changes import smallest_changes

from .core_text import localize
from .i18n import tr
from .presenter import VERDICT_TITLES, gib

#: changes listed under a "does not fit" verdict
MAX_CHANGES = 5
#: of them, the places kept for changes that add GPUs when there are changes on the plan's own GPUs too (those come
#: first: the solver's ranking, RANK_RULE)
MORE_GPU_PLACES = 2
#: what stopped the solver's search (SolveResult.limited_by), as the readout's tooltip names it
LIMITS = {
    "memory": "memory",
    "model context": "the model's context length",
    "search limit": "the search limit",
    "nothing fits": "nothing fits",
}


@dataclass(frozen=True)
class Advice:
    """What the advice worker answered for one estimate."""

    #: the scenario advised on (None when the worker failed)
    scenario: Scenario | None
    #: the length the readout is for: "input_len" (inference) or "seq_len" (fine-tuning)
    length_field: str = "input_len"
    #: the estimate's verdict ("fits", "tight", "does not fit")
    verdict: str | None = None
    #: the smallest changes that make it fit; None unless the verdict is "does not fit"
    changes: ChangesResult | None = None
    #: the largest ``length_field`` that fits with the headroom
    max_length: SolveResult | None = None
    #: the largest that still runs inside the headroom ("tight"); None when the first search failed
    max_length_tight: SolveResult | None = None
    #: why there is no ``max_length`` (the solver's error)
    max_length_error: str | None = None
    #: the worker itself failed: what it raised, in words
    error: str | None = None


def compute_advice(
    scenario: Scenario,
    facts: ModelFacts,
    gpu: GpuSpec,
    *,
    verdict: str | None,
    headroom_fraction: float | None = None,
    cancel: threading.Event | None = None,
) -> Advice:
    """The advice for ``scenario`` on ``gpu``: the longest input (or sequence) it takes, fitting and tight, and
    under a "does not fit" ``verdict`` the smallest changes that make it fit. ``cancel`` set: stop early."""
    cancel = cancel or threading.Event()
    length_field = "seq_len" if scenario.workload.kind == "finetune" else "input_len"
    longest = tight = None
    error = None
    try:
        longest = maximize(scenario, facts, gpu, length_field, headroom_fraction=headroom_fraction)
        # and the largest that still runs inside the headroom ("tight"): a tight plan is not a failed one
        if not cancel.is_set():
            tight = maximize(scenario, facts, gpu, length_field, allow_tight=True, headroom_fraction=headroom_fraction)
    except (SolveError, ValueError, LookupError) as err:
        error = error_text(err)
    changes = None
    if verdict == "does not fit" and not cancel.is_set():
        changes = smallest_changes(scenario, facts, gpu, limit=MAX_CHANGES + 4, headroom_fraction=headroom_fraction)
    return Advice(
        scenario=scenario,
        length_field=length_field,
        verdict=verdict,
        changes=changes,
        max_length=longest,
        max_length_tight=tight,
        max_length_error=error,
    )


@dataclass(frozen=True)
class MaxLengthReadout:
    """The readout next to the input (or sequence) length: what the form's ``show_max_length`` takes."""

    length_field: str
    #: the longest that fits with the headroom (None: none, or no answer)
    value: int | None
    tooltip: str
    #: a longer one that still runs inside the headroom, shown instead (a plan that is itself tight)
    tight: int | None = None


def max_length_readout(advice: Advice) -> MaxLengthReadout:
    """The readout for ``advice``: the boundary, what limits it and the tight boundary beyond it, in words."""
    r = advice.max_length
    if r is None:
        return MaxLengthReadout(advice.length_field, None, localize(advice.max_length_error or ""))
    limit = tr(LIMITS.get(r.limited_by, r.limited_by))
    tip = f"{tr('Limited by')}: {limit}\n{localize(r.message)}"
    t = advice.max_length_tight
    tight = t.value if t is not None and t.value is not None and t.value > (r.value or 0) else None
    if tight is not None:
        tip += "\n" + tr("fits with the headroom up to {n}; runs, tight (inside the headroom), up to {m}").format(
            n=f"{r.value:,}" if r.value else "–", m=f"{tight:,}"
        )
    # a plan that is itself tight reads the tight boundary (the one it is within), others the fitting one
    shown_tight = tight if advice.verdict == "tight" else None
    return MaxLengthReadout(advice.length_field, r.value, tip, shown_tight)


@dataclass(frozen=True)
class ChangeButton:
    """One listed change: the button's text, its tooltip (the change's cost, why it works, the CPU memory it needs)
    and the heading above it ("On this GPU", "With more GPUs"; "" when it is not the first of its group)."""

    text: str
    tooltip: str
    heading: str = ""


@dataclass(frozen=True)
class ChangesPanel:
    """The changes under the verdict: a caption, up to :data:`MAX_CHANGES` buttons in two groups (on the plan's
    GPUs, with more GPUs), the ranking rule under them and the whole cost rule as the box's tooltip; or nothing."""

    visible: bool
    caption: str
    buttons: tuple[ChangeButton, ...]
    #: the options the buttons apply, in the same order
    options: tuple[Option, ...]
    #: how the changes are ordered, in one sentence (the caption under the buttons)
    rule: str = ""
    #: the cost of each kind of change (the box's tooltip)
    rule_tooltip: str = ""


def change_button(option: Option, heading: str = "") -> ChangeButton:
    """The button "→ KV cache fp8: 21.40 GiB (Fits, 38.2 tokens/s)", with the ranking cost as its tooltip (and why
    the change works and the CPU memory it needs, when it says so)."""
    verdict = tr(VERDICT_TITLES.get(option.verdict, option.verdict))
    if option.tokens_per_s:
        outcome = tr("{verdict}, {speed} tokens/s").format(verdict=verdict, speed=f"{option.tokens_per_s:,.1f}")
    else:
        outcome = tr("{verdict}, speed unknown").format(verdict=verdict)
    tip = [tr("cost {cost} (quality + speed, lower is better)").format(cost=f"{option.cost:g}")]
    tip += [localize(c.reason) for c in option.changes if c.reason]
    if option.host_bytes:
        tip.append(tr("CPU memory it needs: {memory}").format(memory=gib(option.host_bytes)))
    return ChangeButton(
        text=tr("→ {change}: {memory} ({outcome})").format(
            change=localize(option.summary), memory=gib(option.device_bytes), outcome=outcome
        ),
        tooltip="\n".join(tip),
        heading=heading,
    )


def _shown(options: tuple[Option, ...]) -> tuple[Option, ...]:
    """The options the panel lists: the first on the plan's GPUs, then up to :data:`MORE_GPU_PLACES` with more
    GPUs (more of either when the other group has fewer)."""
    same = [o for o in options if not o.more_gpus]
    more = [o for o in options if o.more_gpus]
    n_more = min(len(more), max(MAX_CHANGES - len(same), MORE_GPU_PLACES))
    return tuple(same[: MAX_CHANGES - n_more] + more[:n_more])


def changes_panel(changes: ChangesResult | None, verdict: str | None, gpu_count: int = 1) -> ChangesPanel:
    """What the verdict box lists for ``changes`` while the estimate shown has ``verdict``: the list only under
    "does not fit", and a caption that says so when no change (or pair of changes) helps. ``gpu_count``: the
    plan's GPUs (the first group's heading says "this GPU" or "these GPUs")."""
    options = _shown(changes.options) if changes is not None else ()
    verdict_is_off = verdict == "does not fit"
    if changes is not None and not options and verdict_is_off:
        caption = tr("No single change or pair of changes makes it fit.")
    else:
        caption = tr("Smallest changes that make it fit (click one to apply it):")
    buttons: list[ChangeButton] = []
    for i, o in enumerate(options):
        first = i == 0 or bool(options[i - 1].more_gpus) != bool(o.more_gpus)
        if not first:
            heading = ""
        elif o.more_gpus:
            heading = tr("With more GPUs")
        else:
            heading = tr("On these GPUs") if gpu_count > 1 else tr("On this GPU")
        buttons.append(change_button(o, heading))
    return ChangesPanel(
        visible=changes is not None and verdict_is_off,
        caption=caption,
        buttons=tuple(buttons),
        options=options,
        rule=localize(changes.ranking) if changes is not None and options else "",
        rule_tooltip=localize(changes.rule) if changes is not None else "",
    )


def apply_label(option: Option) -> str:
    """The undo history's name for applying ``option``: "Apply KV cache fp8; batch 4"."""
    return tr("Apply") + " " + "; ".join(localize(c.description) for c in option.changes)
