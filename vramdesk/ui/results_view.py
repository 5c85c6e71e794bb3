"""The texts of the window's results pane for one estimate: the verdict box (title, sentence, the hardware
caption, one chip per GPU when the model is split), the readouts (values, captions and how far each level
was from measured runs), the legend and the warnings, in the window's language and display unit.

Qt-free, like :mod:`vramdesk.ui.presenter` (whose :class:`EstimateView` they are built from): the results pane
only copies them into its widgets.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from vramdesk.core.gpu import hardware_text
from vramdesk.services.accuracy import MeasuredSet, measured_accuracy

from . import theme
from .core_text import localize, localize_name
from .i18n import tr
from .presenter import EstimateView, count_text, gib, gpu_groups


@dataclass(frozen=True)
class VerdictTexts:
    """The verdict box: its title, the sentence under it, the caption on its right and its colour."""

    title: str
    message: str
    caption: str
    color: str
    #: the sentence is an error (shown in the error colour)
    is_error: bool = False


def scenario_caption(view: EstimateView) -> str:
    """What the verdict is for: "Qwen/Qwen3-4B on 2 x RTX 4090", the model alone without a GPU."""
    if view.gpu_name is None:
        return view.model_id
    free = f" ({tr('free memory of the detected GPU')})" if view.uses_free_memory else ""
    gpus = hardware_text(view.gpu_name, view.gpu_count)
    if view.machines > 1:
        gpus = tr("{n} machines x {gpus}").format(n=view.machines, gpus=gpus)
    return f"{view.model_id} {tr('on')} {gpus}{free}"


def verdict_texts(view: EstimateView) -> VerdictTexts:
    """The verdict box for an estimate."""
    return VerdictTexts(
        title=tr(view.headline),
        message=localize(view.message),
        caption=scenario_caption(view),
        color=theme.VERDICT_COLORS.get(view.verdict, theme.VERDICT_COLORS[None]),
    )


def pending_texts(model_id: str) -> VerdictTexts:
    """The verdict box while the model's config is read (a Hub id, a file)."""
    return VerdictTexts(
        title=tr("Reading the model…"),
        message=f"{model_id}: " + tr("its config is being read; the estimate follows"),
        caption=model_id,
        color=theme.VERDICT_COLORS[None],
    )


def error_texts(message: str) -> VerdictTexts:
    """The verdict box when the form's plan cannot be estimated (``message``: the reason, already localized)."""
    return VerdictTexts(
        title=tr("Cannot estimate"),
        message=message,
        caption=tr("the charts still show the last estimate"),
        color=theme.ERROR_COLOR,
        is_error=True,
    )


def gpu_chips(view: EstimateView) -> str | None:
    """One chip per GPU when the model is split (rich text: its share and its own verdict's colour); None when
    it is not (one GPU, or none chosen). GPUs that hold the same are one chip ("GPU 0–127 (each)")."""
    if len(view.per_gpu) <= 1 or view.gpu_memory_bytes is None:
        return None
    chips = []
    for first, last, g in gpu_groups(view.per_gpu):
        color = theme.VERDICT_COLORS.get(g.verdict, theme.VERDICT_COLORS[None])
        which = f"GPU {first}" if first == last else tr("{gpus} (each)").format(gpus=f"GPU {first}–{last}")
        chips.append(
            f'<span style="color:{color}">&#9632;</span>&nbsp;{which}: {gib(g.device_bytes)} ({g.fraction * 100:.0f}%)'
        )
    return "&nbsp;&nbsp;&nbsp; ".join(chips)


def accuracy_note(sets: tuple[MeasuredSet, ...]) -> str:
    """How this level of the estimate compared with measured runs it was not fitted to, one line per set."""
    if not sets:
        return tr("No measured runs at this level for this kind of plan yet: the figure is modelled, not checked")
    lines = [tr("How far this figure was from measured runs it was not fitted to:")]
    for s in sets:
        lines.append(
            f"• {tr(s.name)}: {tr('median')} {s.median:.1f} %, {tr('90th percentile')} {s.p90:.1f} % "
            f"({s.runs} {tr('comparisons')})"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Readout:
    """One readout card: its caption, its value and its note (the tooltip; empty: the card's own)."""

    caption: str
    value: str
    note: str = ""


@dataclass(frozen=True)
class Readouts:
    """The row of readout cards."""

    allocated: Readout
    reserved: Readout
    device: Readout
    #: shown only when the plan keeps something in CPU memory
    host: Readout
    host_visible: bool
    params: Readout
    active: Readout


def readouts(view: EstimateView) -> Readouts:
    """The readouts of an estimate: memory at three levels (GPU 0's when the GPUs hold different amounts, each
    with how far that level was from measured runs), host memory, and the parameter counts."""
    gpu0 = f" · {tr('GPU 0')}" if view.uneven else ""
    engine = view.estimate.engine.engine

    def note(level: str) -> str:
        return accuracy_note(measured_accuracy(view.mode, engine, level))

    host = view.estimate.host_bytes
    params = view.estimate.params
    return Readouts(
        allocated=Readout(tr("Peak allocated") + gpu0, gib(view.peak_allocated_bytes), note("allocated")),
        reserved=Readout(tr("Reserved") + gpu0, gib(view.peak_reserved_bytes), note("reserved")),
        device=Readout(tr("On the device") + gpu0, gib(view.device_bytes), note("device")),
        host=Readout(tr("Host memory per machine"), gib(host) if host else "–"),
        host_visible=host > 0,
        params=Readout(tr("Parameters"), count_text(view.params_total)),
        active=Readout(
            tr("Active / trainable"), count_text(params.trainable if view.mode == "finetune" else params.active)
        ),
    )


def legend_entries(view: EstimateView) -> list[tuple[str, str]]:
    """(name in the window's language, colour) of every component of the estimate, in the charts' order."""
    return [(localize_name(name), view.colors[name]) for name in view.colors]


def warnings_html(notice: str | None, warnings: tuple[str, ...] | list[str]) -> str:
    """The warnings under the table as rich text, the window's own notice (a file's note) first; empty: none."""
    lines = ([localize(notice)] if notice else []) + [localize(w) for w in warnings]
    return "<br>".join(f"&#9888;&nbsp;{html.escape(w)}" for w in lines)
