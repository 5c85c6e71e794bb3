"""Sweeps: one plan estimated over a grid of two or three settings (``vramdesk sweep``, the window's fit map).

An axis is an option of the option table (:mod:`vramdesk.core.options`) by name (``input_len``, ``batch``,
``gpu_count``, ``weights``, ``gpu``, ``seq_len``, ``micro_batch``, ``lora_rank``, ...) with the values to try,
checked against the option's bounds and choices. :func:`sweep` estimates every combination, the last axis
varying fastest (``itertools.product`` order), each cell with its scenario, the memory the busiest GPU needs, the
peak allocated, the verdict and its margin, or the reason the estimate refused.

:func:`parse_axis` reads the command line's spec: ``input_len=1k..32k`` (doubling from 1k; ``k`` is 1024),
``input_len=1024..32768x8`` (8 values spaced evenly on a log scale), ``lora_rank=8..64+8`` (a step),
``batch=1,2,4,8`` (a list), ``gpu=RTX 4090,H100 SXM`` (GPU names: the caller resolves them, since the core holds
no catalog). :mod:`vramdesk.report.sweep_table` writes the grid as a table, CSV and JSON.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from .facts import ModelFacts
from .gpu import GpuSpec
from .messages import Message, MessageText, error_text, free
from .options import Option, by_flag, options
from .scenario import Scenario
from .solve import Verdict, _Frozen, _with_headroom, probe

#: the most axes a sweep has, and the most cells (combinations) it estimates
MAX_AXES = 3
MAX_CELLS = 10_000
#: the most values a range makes (more than a sweep takes, so the cell count's message says what is too many)
_MOST_VALUES = 100 * MAX_CELLS
#: the option kinds a sweep can vary (lists such as lora_targets cannot); text options are named ones
_KINDS = ("int", "float", "choice", "bool")
_TEXT_OPTIONS = ("weights", "gpu")
#: ``k`` / ``m`` after a number: x 1024 / x 1024² (token counts: 32k = 32768)
_SUFFIXES = {"k": 1024, "m": 1024 * 1024}
_BOOLS = {"on": True, "true": True, "yes": True, "1": True, "off": False, "false": False, "no": False, "0": False}


class SweepError(ValueError):
    """An axis that cannot be swept (unknown, out of bounds, too many cells); ``args[0]`` is a
    :class:`~vramdesk.core.messages.Text` of one line that names the axis."""


NO_EQUALS = Message("sweep.error.no_equals", "axis '{spec}': write it as NAME=VALUES, e.g. batch=1,2,4,8")
UNKNOWN = Message("sweep.error.unknown", "axis {name}: not a setting a sweep can vary (choose from {choices})")
NO_VALUES = Message("sweep.error.no_values", "axis {name}: no values")
WHOLE = Message("sweep.expected.whole", "whole numbers (1024, 4k)")()
NUMBERS = Message("sweep.expected.numbers", "numbers")()
NOT_NUMBER = Message("sweep.error.not_number", "axis {name}: expected {expected}, got '{value}'")
BELOW = Message("sweep.error.below", "axis {name}: {value} is less than {bound}")
NOT_ABOVE = Message("sweep.error.not_above", "axis {name}: {value} must be more than {bound}")
ABOVE = Message("sweep.error.above", "axis {name}: {value} is more than {bound}")
NOT_BELOW = Message("sweep.error.not_below", "axis {name}: {value} must be less than {bound}")
NOT_CHOICE = Message("sweep.error.not_choice", "axis {name}: '{value}' is not one of {choices}")
BAD_RANGE = Message(
    "sweep.error.range",
    "axis {name}: a range is LO..HI, LO..HIxN (N values) or LO..HI+STEP, with LO <= HI; got '{spec}'",
)
RANGE_KIND = Message("sweep.error.range_kind", "axis {name}: a range needs a number setting; list the values instead")
FLOAT_RANGE = Message("sweep.error.float_range", "axis {name}: a range of decimals needs xN or +STEP")
TOO_MANY_AXES = Message("sweep.error.too_many_axes", "a sweep has at most {most} axes, got {count}")
NO_AXES = Message("sweep.error.no_axes", "a sweep needs at least one axis")
TWICE = Message("sweep.error.twice", "axis {name}: given twice")
TOO_MANY_CELLS = Message(
    "sweep.error.too_many_cells", "{count:,} cells ({shape}) are more than the {most:,} a sweep estimates"
)
WRONG_MODE = Message("sweep.error.mode", "axis {name}: applies to {mode}, and this plan is {kind}")
MODES = {
    "inference": Message("sweep.mode.inference", "inference")(),
    "finetune": Message("sweep.mode.finetune", "fine-tuning")(),
}
NO_GPU = Message("sweep.error.no_gpu", "a sweep needs a GPU to judge the fit: choose one, or sweep a gpu axis")
UNKNOWN_GPU = Message("sweep.error.unknown_gpu", "axis gpu: no GPU named '{value}'")


class Axis(_Frozen):
    """One setting and the values a sweep tries, in order (checked: within the option's bounds and choices)."""

    name: str
    values: tuple[Any, ...]

    @property
    def option(self) -> Option:
        return _sweepable()[self.name]


class Cell(_Frozen):
    """One combination: its place in the grid, the values (one per axis), and what the estimate said."""

    index: tuple[int, ...]
    values: tuple[Any, ...]
    #: the plan with these values (None when they do not make a valid plan: ``error`` says why)
    scenario: Scenario | None
    gpu: str
    #: the GPU's memory
    memory_bytes: int
    #: what nvidia-smi shows on GPU 0, and what the busiest GPU needs (the verdict's figure; the same unless the
    #: GPUs hold different amounts)
    device_bytes: int | None = None
    required_bytes: int | None = None
    peak_allocated_bytes: int | None = None
    verdict: Verdict | None = None
    #: (available - required) / available
    margin_fraction: float | None = None
    error: MessageText | None = None


class SweepResult(_Frozen):
    axes: tuple[Axis, ...]
    #: every combination, the last axis varying fastest
    cells: tuple[Cell, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.values) for a in self.axes)

    def cell(self, *index: int) -> Cell:
        """The cell at ``index`` (one position per axis)."""
        flat = 0
        for i, n in zip(index, self.shape, strict=True):
            if not 0 <= i < n:
                raise IndexError(f"cell {index} is outside the grid {self.shape}")
            flat = flat * n + i
        return self.cells[flat]


def sweepable(opt: Option) -> bool:
    """A setting a sweep can vary: a number, a choice, a switch, the weights or the GPU."""
    return opt.kind in _KINDS or opt.name in _TEXT_OPTIONS


def _sweepable() -> dict[str, Option]:
    return {o.name: o for o in options() if sweepable(o)}


def axis_option(name: str) -> Option:
    """The option an axis names: its field name (``input_len``), or its flag (``input-len``, ``gpus``)."""
    key = name.strip().replace("-", "_")
    table = _sweepable()
    opt = table.get(key) or by_flag().get(key)
    if opt is None or not sweepable(opt):
        raise SweepError(UNKNOWN(name=name.strip(), choices=", ".join(table)))
    return opt


# ---------------------------------------------------------------------------------------------- values


def _number(opt: Option, text: str) -> int | float:
    t = text.strip().lower().replace("_", "")
    scale = 1
    if t[-1:] in _SUFFIXES:
        t, scale = t[:-1], _SUFFIXES[t[-1]]
    try:
        v = float(t) * scale
    except ValueError:
        expected = WHOLE if opt.kind == "int" else NUMBERS
        raise SweepError(NOT_NUMBER(name=opt.name, expected=expected, value=text.strip())) from None
    if opt.kind == "float":
        if not math.isfinite(v):
            raise SweepError(NOT_NUMBER(name=opt.name, expected=NUMBERS, value=text.strip()))
        return v
    if not v.is_integer():
        raise SweepError(NOT_NUMBER(name=opt.name, expected=WHOLE, value=text.strip()))
    return int(v)


def _value(opt: Option, text: str) -> Any:
    """One value of ``opt`` read from its text (not yet checked against bounds or choices)."""
    if opt.kind in ("int", "float"):
        return _number(opt, text)
    if opt.kind == "bool":
        t = text.strip().lower()
        if t not in _BOOLS:
            raise SweepError(NOT_CHOICE(name=opt.name, value=text.strip(), choices="on, off"))
        return _BOOLS[t]
    if opt.kind == "choice" and all(isinstance(v, int) for v in opt.values):
        try:
            return int(text.strip())
        except ValueError:
            raise SweepError(NOT_CHOICE(name=opt.name, value=text.strip(), choices=_choices(opt))) from None
    return text.strip()


def _choices(opt: Option) -> str:
    return ", ".join(str(v) for v in opt.values)


def _range(opt: Option, spec: str) -> list[Any]:
    """``LO..HI`` (doubling, HI last), ``LO..HIxN`` (N values, log-spaced) or ``LO..HI+STEP``."""
    if opt.kind not in ("int", "float"):
        raise SweepError(RANGE_KIND(name=opt.name))
    first, _, rest = spec.partition("..")
    m = re.fullmatch(r"\s*(.+?)\s*(?:([xX+])\s*(\S+))?\s*", rest)
    if m is None or not first.strip():
        raise SweepError(BAD_RANGE(name=opt.name, spec=spec.strip()))
    lo, hi = _number(opt, first), _number(opt, m[1])
    how, amount = (m[2] or "").lower(), m[3]
    if hi < lo or (lo <= 0 and how != "+"):
        raise SweepError(BAD_RANGE(name=opt.name, spec=spec.strip()))
    out: list[Any] = []
    if how == "x":
        try:
            n = int(amount)
        except ValueError:
            raise SweepError(BAD_RANGE(name=opt.name, spec=spec.strip())) from None
        if n < 2 or n > _MOST_VALUES:
            raise SweepError(BAD_RANGE(name=opt.name, spec=spec.strip()))
        ratio = (hi / lo) ** (1 / (n - 1))
        out = [lo * ratio**i for i in range(n - 1)] + [hi]
    elif how == "+":
        step = _number(opt, amount)
        if step <= 0 or (hi - lo) / step > _MOST_VALUES:
            raise SweepError(BAD_RANGE(name=opt.name, spec=spec.strip()))
        count = math.floor((hi - lo) / step + 1e-9)
        out = [lo + step * i for i in range(count + 1)]
    elif opt.kind == "float":
        raise SweepError(FLOAT_RANGE(name=opt.name))
    else:
        v = lo
        while v <= hi:
            out.append(v)
            v *= 2
        if out[-1] != hi:
            out.append(hi)
    return [round(v) for v in out] if opt.kind == "int" else [float(f"{v:.10g}") for v in out]


def _check(opt: Option, value: Any) -> None:
    if opt.kind in ("int", "float"):
        b = opt.bounds
        if "ge" in b and value < b["ge"]:
            raise SweepError(BELOW(name=opt.name, value=_bound(value), bound=_bound(b["ge"])))
        if "gt" in b and value <= b["gt"]:
            raise SweepError(NOT_ABOVE(name=opt.name, value=_bound(value), bound=_bound(b["gt"])))
        if "le" in b and value > b["le"]:
            raise SweepError(ABOVE(name=opt.name, value=_bound(value), bound=_bound(b["le"])))
        if "lt" in b and value >= b["lt"]:
            raise SweepError(NOT_BELOW(name=opt.name, value=_bound(value), bound=_bound(b["lt"])))
    elif opt.kind == "choice" and value not in opt.values:
        raise SweepError(NOT_CHOICE(name=opt.name, value=value, choices=_choices(opt)))
    elif opt.kind == "text" and not str(value):
        raise SweepError(NO_VALUES(name=opt.name))


def _bound(v: float) -> int | float:
    return int(v) if float(v).is_integer() else v


def axis(name: str, values: Sequence[Any]) -> Axis:
    """An axis of the option ``name`` over ``values`` (texts are read as the option's kind), checked; repeated
    values are dropped."""
    opt = axis_option(name)
    read = [_value(opt, v) if isinstance(v, str) and opt.kind != "text" else v for v in values]
    if opt.kind == "int":
        read = [int(v) if isinstance(v, float) and v.is_integer() else v for v in read]
    kept: list[Any] = []
    for v in read:
        if opt.kind == "int" and (isinstance(v, bool) or not isinstance(v, int)):
            raise SweepError(NOT_NUMBER(name=opt.name, expected=WHOLE, value=v))
        _check(opt, v)
        if v not in kept:
            kept.append(v)
    if not kept:
        raise SweepError(NO_VALUES(name=opt.name))
    return Axis(name=opt.name, values=tuple(kept))


def parse_axis(spec: str) -> Axis:
    """``NAME=VALUES`` as the command line writes it: a range (``1k..32k``, ``1024..32768x8``, ``8..64+8``) or a
    list (``1,2,4,8``; ``RTX 4090,H100 SXM``)."""
    name, eq, values = spec.partition("=")
    if not eq or not name.strip():
        raise SweepError(NO_EQUALS(spec=spec.strip()))
    opt = axis_option(name)
    if ".." in values:
        return axis(opt.name, _range(opt, values))
    return axis(opt.name, [v for v in values.split(",") if v.strip()])


def check_axes(scenario: Scenario, axes: Sequence[Axis]) -> None:
    """At most :data:`MAX_AXES`, each once, each for the plan's workload, at most :data:`MAX_CELLS` cells."""
    if not axes:
        raise SweepError(NO_AXES())
    if len(axes) > MAX_AXES:
        raise SweepError(TOO_MANY_AXES(most=MAX_AXES, count=len(axes)))
    kind = scenario.workload.kind
    seen: set[str] = set()
    for a in axes:
        if a.name in seen:
            raise SweepError(TWICE(name=a.name))
        seen.add(a.name)
        mode = a.option.mode
        if mode is not None and mode != kind:
            raise SweepError(WRONG_MODE(name=a.name, mode=MODES[mode], kind=MODES[kind]))
    count = math.prod(len(a.values) for a in axes)
    if count > MAX_CELLS:
        shape = " x ".join(str(len(a.values)) for a in axes)
        raise SweepError(TOO_MANY_CELLS(count=count, shape=shape, most=MAX_CELLS))


# ---------------------------------------------------------------------------------------------- the grid


def _cell_scenario(base: Mapping[str, Any], axes: Sequence[Axis], values: Sequence[Any]) -> Scenario:
    data = copy.deepcopy(dict(base))
    for a, v in zip(axes, values, strict=True):
        a.option.put(data, v)
    work = data["workload"]
    mean = work.get("mean_seq_len")
    if mean is not None and "seq_len" in (a.name for a in axes) and mean > work["seq_len"]:
        work["mean_seq_len"] = work["seq_len"]  # (as solve.with_work: the mean cannot exceed the longest)
    return Scenario.model_validate(data)


@_with_headroom
def sweep(
    scenario: Scenario,
    facts: ModelFacts,
    gpu: GpuSpec | None,
    axes: Sequence[Axis | tuple[str, Sequence[Any]]],
    *,
    resolve_gpu: Callable[[str], GpuSpec | None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SweepResult:
    """Estimate ``scenario`` on ``gpu`` (x its gpu_count) at every combination of the ``axes`` (each an
    :class:`Axis` or (option name, values)); a ``gpu`` axis plans each cell for that GPU (``resolve_gpu`` turns a
    name into its spec; None: no such GPU). ``headroom_fraction=`` sets the verdict's headroom; ``should_stop``
    returning True ends the sweep early (the cells so far)."""
    grid = tuple(a if isinstance(a, Axis) else axis(a[0], a[1]) for a in axes)
    check_axes(scenario, grid)
    specs: dict[str, GpuSpec] = {}
    for a in grid:
        if a.name == "gpu":
            for name in a.values:
                spec = resolve_gpu(str(name)) if resolve_gpu is not None else None
                if spec is None:
                    raise SweepError(UNKNOWN_GPU(value=name))
                specs[str(name)] = spec
    if gpu is None and not specs:
        raise SweepError(NO_GPU())
    base = scenario.model_dump(mode="json")
    gpu_at = next((i for i, a in enumerate(grid) if a.name == "gpu"), None)
    cells: list[Cell] = []
    for index in itertools.product(*(range(len(a.values)) for a in grid)):
        if should_stop is not None and should_stop():
            break
        values = tuple(a.values[i] for a, i in zip(grid, index, strict=True))
        on = specs[str(values[gpu_at])] if gpu_at is not None else gpu
        assert on is not None
        cells.append(_cell(base, grid, index, values, facts, on))
    return SweepResult(axes=grid, cells=tuple(cells))


def _cell(
    base: Mapping[str, Any],
    grid: Sequence[Axis],
    index: tuple[int, ...],
    values: tuple[Any, ...],
    facts: ModelFacts,
    gpu: GpuSpec,
) -> Cell:
    head: dict[str, Any] = {"index": index, "values": values, "gpu": gpu.name, "memory_bytes": gpu.memory_bytes}
    try:
        planned = _cell_scenario(base, grid, values)
    except ValidationError as err:
        return Cell(scenario=None, error=_invalid(err), **head)
    p, est = probe(planned, facts, gpu)
    if est is None or est.fit is None:
        return Cell(scenario=planned, error=p.error, **head)
    return Cell(
        scenario=planned,
        device_bytes=est.device_bytes,
        required_bytes=est.fit.required_bytes,
        peak_allocated_bytes=est.peak_allocated_bytes,
        verdict=est.fit.verdict,
        margin_fraction=est.fit.margin_fraction,
        **head,
    )


def _invalid(err: ValidationError) -> str:
    """Why the values make no valid plan, in one line: the scenario's own refusal (a Text with its id) where it
    raised one, else pydantic's first message with its field."""
    first = err.errors()[0]
    inner = first.get("ctx", {}).get("error")
    if isinstance(inner, BaseException):
        return error_text(inner)
    where = ".".join(str(k) for k in first.get("loc", ()))
    return free(f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", "")))


__all__ = [
    "MAX_AXES",
    "MAX_CELLS",
    "Axis",
    "Cell",
    "SweepError",
    "SweepResult",
    "axis",
    "axis_option",
    "check_axes",
    "parse_axis",
    "sweep",
    "sweepable",
]
