"""The speed line under the window's readouts: what one estimate is expected to run at (decode speed and time to
first token, or the training step and tokens/s), with the performance model's assumptions as its tooltip.

Qt-free, like :mod:`vramdesk.ui.presenter`: the window only copies :class:`SpeedLine` into its label.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.performance import Performance, PerformanceError, performance
from vramdesk.core.scenario import Scenario

from .core_text import localize
from .i18n import tr
from .presenter import EstimateView


@dataclass(frozen=True)
class SpeedLine:
    """The speed label's text and tooltip."""

    text: str
    tooltip: str


def seconds_text(s: float) -> str:
    """A duration the way people say it: 480 ms, 2.4 s, 3.1 min."""
    if s < 1:
        return f"{s * 1000:,.0f} ms"
    if s < 120:
        return f"{s:,.1f} s"
    return f"{s / 60:,.1f} min"


def estimate_speed(
    view: EstimateView, scenario: Scenario, facts: Callable[[str], ModelFacts], gpu: GpuSpec
) -> Performance | None:
    """The performance estimate of ``view`` on ``gpu`` (``facts`` looks the model up), or None when there is none
    (the GPU lacks the figures, the model is not known, the plan is one the model does not cover)."""
    try:
        return performance(view.estimate, scenario, facts(scenario.model.id), gpu)
    except (PerformanceError, LookupError, ValueError):
        return None


def speed_line(perf: Performance) -> SpeedLine | None:
    """The line "Speed: decode 41.3 tokens/s per sequence · time to first token 180 ms — bound by memory
    bandwidth", its tooltip the assumptions, in the window's language; None when ``perf`` has no figure to show."""
    parts: list[str] = []
    if perf.decode_tokens_per_s is not None:
        parts.append(f"{tr('decode')} {perf.decode_tokens_per_s:,.1f} {tr('tokens/s per sequence')}")
    if perf.time_to_first_token_s is not None:
        parts.append(f"{tr('time to first token')} {seconds_text(perf.time_to_first_token_s)}")
    if perf.step_time_s is not None:
        parts.append(f"{tr('training step')} {seconds_text(perf.step_time_s)}")
    if perf.train_tokens_per_s is not None:
        parts.append(f"{perf.train_tokens_per_s:,.0f} {tr('tokens/s')}")
    if not parts:
        return None
    bound = f" — {tr('bound by')} {tr(perf.bound)}"
    return SpeedLine(
        text=f"{tr('Speed')}: " + " · ".join(parts) + bound,
        tooltip="\n".join([tr("Assumptions:")] + [f"• {localize(a)}" for a in perf.assumptions]),
    )


def timing_line(update_s: float, total_s: float | None = None, paint_s: float = 0.0) -> SpeedLine:
    """The status bar's "updated in N ms": the time to the end of the repaint (``total_s``) once it is known, else
    the estimate and the widgets' update (``update_s``); the tooltip splits the two."""
    if total_s is None:
        return SpeedLine(f"{tr('updated in')} {update_s * 1000:.1f} ms", "")
    split = tr("From the change to the end of the repaint: estimate and widgets {estimate} ms, paint {paint} ms")
    tooltip = split.format(estimate=f"{update_s * 1000:.1f}", paint=f"{paint_s * 1000:.1f}")
    return SpeedLine(f"{tr('updated in')} {total_s * 1000:.1f} ms", tooltip)
