"""The figures of one estimate, as pictures and reports show them: the breakdown at the peak (a pie or a stacked
bar), the phase timeline, or the two side by side, each a :class:`vramdesk.ui.figure.Figure` with the plan's
caption, the components' legend and the unit.

Build them inside :func:`vramdesk.ui.theme.printing` (:func:`estimate_figure` does when asked for a theme), so
an export is drawn in the print palette whatever the window's theme; the texts are in the window's language.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QWidget

from vramdesk.core.scenario import Scenario
from vramdesk.report.captions import caption

from . import theme
from .charts import BreakdownChart, PhaseChart
from .core_text import localize_name
from .figure import Figure
from .i18n import tr
from .presenter import EstimateView, unit_name
from .results_view import legend_entries

#: what a chart export holds: both charts side by side, the breakdown at the peak alone, the phases alone
CHARTS = ("both", "breakdown", "phase")
#: how the breakdown is drawn
MODES = BreakdownChart.MODES
#: logical size of each figure (a 2x PNG doubles it)
SIZES: dict[str, tuple[int, int]] = {"both": (1200, 640), "breakdown": (820, 640), "phase": (1000, 640)}
#: the figure a report embeds (both charts): narrower, so that its text is not tiny on a page 180 mm wide
REPORT_SIZE = (860, 560)


class ChartRow(QWidget):
    """The breakdown and the phase chart side by side (what the window shows), without their controls."""

    def __init__(self, mode: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.breakdown = BreakdownChart(self)
        self.breakdown.hide_controls()
        self.breakdown.set_mode(mode)
        self.phase_chart = PhaseChart(self)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.breakdown, 5)
        row.addWidget(self.phase_chart, 6)

    def show_view(self, view: EstimateView) -> None:
        self.breakdown.show_view(view)
        self.phase_chart.show_view(view)


def units_text() -> str:
    """The unit every figure of the window is in, said once under the chart."""
    return tr("Memory in GB (10^9 bytes)") if unit_name() == "GB" else tr("Memory in GiB (2^30 bytes)")


def _body(chart: str, mode: str) -> BreakdownChart | PhaseChart | ChartRow:
    if chart == "breakdown":
        b = BreakdownChart()
        b.hide_controls()
        b.set_mode(mode)
        return b
    if chart == "phase":
        return PhaseChart()
    return ChartRow(mode)


def estimate_figure(
    view: EstimateView,
    scenario: Scenario,
    *,
    chart: str = "both",
    mode: str = "bar",
    created: str | None = None,
    keep_screen: bool | None = None,
    size: tuple[int, int] | None = None,
) -> Figure:
    """The figure of ``view`` (``chart``: one of :data:`CHARTS`; ``mode``: the breakdown's, pie or bar), captioned
    from ``scenario`` (``created``: the date its source line gives). ``keep_screen``: build it inside
    :func:`vramdesk.ui.theme.printing` (True: in the window's palette); None: in the palette in use now.
    ``size``: logical pixels (else :data:`SIZES`; a smaller figure has larger text for its width)."""
    if chart not in CHARTS:
        raise ValueError(f"unknown chart {chart!r}: expected one of {', '.join(CHARTS)}")
    if mode not in MODES:
        raise ValueError(f"unknown chart mode {mode!r}: expected one of {', '.join(MODES)}")
    if keep_screen is not None:
        with theme.printing(keep_screen=keep_screen):
            return estimate_figure(view, scenario, chart=chart, mode=mode, created=created, size=size)
    body = _body(chart, mode)
    # the breakdown: the components at the peak; the phases: every component of any phase
    peak = [(localize_name(s.name), s.color) for s in view.slices]
    legend = peak if chart == "breakdown" else legend_entries(view)
    fig = Figure(caption(scenario, created), body, legend=legend, units=units_text(), size=size or SIZES[chart])
    fig.lay_out()
    body.show_view(view)
    fig.lay_out()
    return fig


__all__ = ["CHARTS", "MODES", "REPORT_SIZE", "SIZES", "ChartRow", "estimate_figure", "units_text"]
