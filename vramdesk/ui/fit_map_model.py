"""The fit map's grid, colours and texts (Qt-free, like :mod:`vramdesk.ui.presenter`): a sweep of the plan over
two settings (:func:`vramdesk.core.sweep.sweep`) as a heat map of the memory each GPU needs, with the GPU's
boundary (the edges between cells that fit, tightly or not, and cells that do not).

:func:`axis_choices` and :func:`default_spec` are what the view offers to sweep; :func:`compute_map` is the job
the view runs on a worker; :func:`build_map` turns its result into :class:`FitMap` (a colour, a short text and a
tooltip per cell, the ticks, the boundary, the legend); :func:`plan_label` names applying a cell on the undo
history.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

from vramdesk.core.facts import ModelFacts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.options import Option, options
from vramdesk.core.plan_name import tokens_text
from vramdesk.core.scenario import Scenario
from vramdesk.core.sweep import Cell, SweepResult, axis_option, parse_axis, sweep, sweepable

from . import theme
from .core_text import localize
from .i18n import tr
from .presenter import VERDICT_TITLES, gib, unit_bytes, unit_name

#: the axes a fit map starts with, per workload: (x, y)
DEFAULT_AXES = {"inference": ("input_len", "batch"), "finetune": ("seq_len", "micro_batch")}
#: options counted in tokens (ticks say 4k, 32k)
_TOKENS = ("input_len", "output_len", "seq_len", "mean_seq_len", "max_num_batched_tokens", "n_ubatch")
#: the GPUs a gpu axis starts with (the plan's own first)
_GPUS = ("RTX 4090", "L40S", "A100 80GB SXM", "H100 SXM", "H200 SXM")
#: verdicts that run (the boundary lies between these and the rest)
_RUNS = ("fits", "tight")


def option_title(opt: Option) -> str:
    """An option's label in the window's language, without its keyboard mark (``&Batch`` -> ``Batch``)."""
    return re.sub(r"\(&\w\)|&(?=\w)", "", tr(opt.label)).strip()


def axis_choices(scenario: Scenario) -> list[Option]:
    """The settings the fit map can sweep for ``scenario``'s workload, in the form's order."""
    kind = scenario.workload.kind
    return [o for o in options() if sweepable(o) and o.mode in (None, kind) and o.group != "hidden"]


def _pow2_floor(n: int) -> int:
    return 1 << max(0, int(n).bit_length() - 1)


def default_spec(name: str, scenario: Scenario, facts: ModelFacts | None = None) -> str:
    """The values an axis starts with, as the command line's ``--axis`` writes them (``512..64k``)."""
    opt = axis_option(name)
    limit = facts.arch.max_position if facts is not None and facts.arch.max_position else 131072
    work = scenario.workload
    if opt.name == "input_len":
        room = limit - getattr(work, "output_len", 0)
        return f"512..{tokens_text(_pow2_floor(max(1024, min(room, 131072))))}"
    if opt.name == "seq_len":
        return f"256..{tokens_text(_pow2_floor(max(512, min(limit, 32768))))}"
    fixed = {"batch": "1..128", "micro_batch": "1..64", "lora_rank": "4..256", "gpu_count": "1..8+1"}
    if opt.name in fixed:
        return fixed[opt.name]
    if opt.name == "gpu":
        first = scenario.hardware.gpu
        return ",".join(dict.fromkeys([*([first] if first else []), *_GPUS]))
    if opt.name == "weights":
        return "auto,bf16,fp8,int8,nf4"
    if opt.kind == "bool":
        return "off,on"
    if opt.kind == "choice":
        return ",".join(str(v) for v in opt.values)
    value = opt.get(scenario.model_dump(mode="json"))
    value = value if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None
    if opt.kind == "float":
        v = float(value or opt.bounds.get("le", 1.0))
        hi = min(opt.bounds.get("le", v * 2), v * 2)
        return f"{v / 2:g}..{hi:g}x6"
    v = int(value or 8)
    low = max(int(opt.bounds.get("ge", 1)), 1, v // 8)
    return f"{low}..{max(low * 2, v * 8)}"


def value_text(opt: Option, value: object) -> str:
    """An axis value as a tick says it: 4k tokens, 1,024, 0.9, on / off, a GPU's or a dtype's name."""
    if isinstance(value, bool):
        return tr("On") if value else tr("Off")
    if isinstance(value, int) and opt.name in _TOKENS:
        return tokens_text(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True)
class FitMapResult:
    """What the worker answered: the sweep for ``scenario`` (on ``gpu``, or each cell's GPU of a gpu axis)."""

    scenario: Scenario
    gpu: GpuSpec | None
    result: SweepResult


def compute_map(
    scenario: Scenario,
    facts: ModelFacts,
    gpu: GpuSpec | None,
    specs: tuple[str, str],
    *,
    resolve_gpu: Callable[[str], GpuSpec | None] | None = None,
    headroom_fraction: float | None = None,
    cancel: threading.Event | None = None,
) -> FitMapResult:
    """The sweep of ``scenario`` over the two axis specs (``input_len=512..64k``, ``batch=1..128``)."""
    axes = [parse_axis(s) for s in specs]
    stop = cancel.is_set if cancel is not None else None
    result = sweep(
        scenario, facts, gpu, axes, resolve_gpu=resolve_gpu, should_stop=stop, headroom_fraction=headroom_fraction
    )
    return FitMapResult(scenario, gpu, result)


@dataclass(frozen=True)
class MapCell:
    cell: Cell
    color: str
    #: what the square says (the memory in the window's unit, one decimal; "–" when the estimate refused)
    text: str
    tooltip: str
    #: it runs (fits or tight)
    runs: bool


@dataclass(frozen=True)
class FitMap:
    """A sweep over two axes as the heat map draws it: column ``i`` is the x axis's value ``i``, row ``j`` the y
    axis's (drawn bottom up)."""

    x: Option
    y: Option
    x_ticks: tuple[str, ...]
    y_ticks: tuple[str, ...]
    #: cells[i][j]: column i, row j
    cells: tuple[tuple[MapCell, ...], ...]
    #: the GPU's boundary: unit segments ((x0, y0), (x1, y1)) on the grid's corners between cells that run and
    #: cells that do not
    boundary: tuple[tuple[tuple[int, int], tuple[int, int]], ...]
    legend: tuple[tuple[str, str], ...]

    @property
    def x_title(self) -> str:
        return option_title(self.x)

    @property
    def y_title(self) -> str:
        return option_title(self.y)

    def cell(self, i: int, j: int) -> MapCell:
        return self.cells[i][j]


def _mix(a: str, b: str, t: float) -> str:
    """The colour ``t`` of the way from ``a`` to ``b`` (``#rrggbb``)."""
    ca = [int(a[k : k + 2], 16) for k in (1, 3, 5)]
    cb = [int(b[k : k + 2], 16) for k in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(ca, cb, strict=True))


def cell_color(cell: Cell, background: str) -> str:
    """The verdict's colour, paler the less of the GPU the cell needs (an error: the neutral colour)."""
    base = theme.VERDICT_COLORS.get(cell.verdict, theme.VERDICT_COLORS[None])
    if cell.required_bytes is None or cell.memory_bytes <= 0:
        return _mix(background, base, 0.35)
    share = cell.required_bytes / cell.memory_bytes
    t = 0.25 + 0.6 * min(1.0, share) if cell.verdict in _RUNS else min(1.0, 0.7 + 0.3 * min(1.0, share - 1))
    return _mix(background, base, t)


def _tooltip(x: Option, y: Option, cell: Cell) -> str:
    xv, yv = (value_text(o, v) for o, v in zip((x, y), cell.values, strict=True))
    lines = [f"{option_title(x)} {xv} · {option_title(y)} {yv}"]
    if cell.error or cell.required_bytes is None:
        lines.append(localize(cell.error or ""))
        return "\n".join(line for line in lines if line)
    lines.append(
        tr("Needs {need} per GPU of the {gpu}'s {memory}").format(
            need=gib(cell.required_bytes), gpu=cell.gpu, memory=gib(cell.memory_bytes)
        )
    )
    if cell.peak_allocated_bytes is not None:
        lines.append(tr("Peak allocated: {alloc}").format(alloc=gib(cell.peak_allocated_bytes)))
    verdict = tr(VERDICT_TITLES.get(cell.verdict or "", cell.verdict or ""))
    margin = cell.margin_fraction or 0.0
    if margin >= 0:
        lines.append(tr("{verdict}: {percent}% to spare").format(verdict=verdict, percent=f"{margin * 100:.0f}"))
    else:
        lines.append(tr("{verdict}: {percent}% short").format(verdict=verdict, percent=f"{-margin * 100:.0f}"))
    lines.append(tr("Click to plan with these settings"))
    return "\n".join(lines)


def _boundary(runs: list[list[bool]]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Unit edges between neighbouring cells where one runs and the other does not."""
    cols, rows = len(runs), len(runs[0]) if runs else 0
    out: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for i in range(cols):
        for j in range(rows):
            if i + 1 < cols and runs[i][j] != runs[i + 1][j]:
                out.append(((i + 1, j), (i + 1, j + 1)))
            if j + 1 < rows and runs[i][j] != runs[i][j + 1]:
                out.append(((i, j + 1), (i + 1, j + 1)))
    return out


def legend(background: str) -> tuple[tuple[str, str], ...]:
    """The verdicts' colours (at a middle shade) and the boundary line."""
    shade = {"fits": 0.55, "tight": 0.7, "does not fit": 0.85}
    entries = [(tr(VERDICT_TITLES[v]), _mix(background, theme.VERDICT_COLORS[v], t)) for v, t in shade.items()]
    return (*entries, (tr("Where it stops fitting the GPU (line)"), theme.current().text))


def build_map(result: SweepResult, background: str) -> FitMap:
    """The heat map of a two-axis sweep on ``background`` (the palette the map is drawn on)."""
    if len(result.axes) != 2:
        raise ValueError(f"a fit map has two axes, not {len(result.axes)}")
    x, y = (a.option for a in result.axes)
    nx, ny = result.shape
    cells: list[list[MapCell]] = [[] for _ in range(nx)]
    for c in result.cells:
        text = "–" if c.required_bytes is None else f"{c.required_bytes / unit_bytes():.1f}"
        runs = c.verdict in _RUNS
        cells[c.index[0]].append(MapCell(c, cell_color(c, background), text, _tooltip(x, y, c), runs))
    if any(len(col) != ny for col in cells):
        raise ValueError("the sweep stopped before every cell was estimated")
    return FitMap(
        x=x,
        y=y,
        x_ticks=tuple(value_text(x, v) for v in result.axes[0].values),
        y_ticks=tuple(value_text(y, v) for v in result.axes[1].values),
        cells=tuple(tuple(col) for col in cells),
        boundary=tuple(_boundary([[m.runs for m in col] for col in cells])),
        legend=legend(background),
    )


def units_text() -> str:
    """The figure's units line."""
    return tr("Each square: the memory the busiest GPU needs, in {unit}").format(unit=unit_name())


def plan_label(fit_map: FitMap, cell: Cell) -> str:
    """The undo history's name for applying ``cell``."""
    xv, yv = (value_text(o, v) for o, v in zip((fit_map.x, fit_map.y), cell.values, strict=True))
    return tr("Fit map: {x} {xv}, {y} {yv}").format(x=fit_map.x_title, xv=xv, y=fit_map.y_title, yv=yv)


__all__ = [
    "DEFAULT_AXES",
    "FitMap",
    "FitMapResult",
    "MapCell",
    "axis_choices",
    "build_map",
    "cell_color",
    "compute_map",
    "default_spec",
    "legend",
    "option_title",
    "plan_label",
    "units_text",
    "value_text",
]
