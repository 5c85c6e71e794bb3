"""``vramdesk sweep MODEL [estimate options] --axis NAME=VALUES ...``: one plan estimated over a grid of up to three
settings (:mod:`vramdesk.core.sweep`), written as CSV (one row per cell) or JSON (the axes and the cells), to
stdout or to ``-o OUT`` (the format from its suffix unless ``--format`` says). Errors are one line on stderr,
exit status 2."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from vramdesk.cli_common import ERRORS, CliError, write_or_print
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.scenario import Scenario
from vramdesk.core.sweep import MAX_AXES, MAX_CELLS, SweepError, parse_axis, sweep
from vramdesk.report.sweep_table import sweep_csv, sweep_doc

FORMATS = ("csv", "json")

#: a function that builds a scenario from MODEL and option values (``vramdesk.cli.scenario_from``)
ScenarioFrom = Callable[[str, dict[str, Any]], Scenario]


def add_sweep_parser(sub: Any, estimate_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``sweep`` command; ``estimate_options`` adds the options ``estimate`` takes (the option table's)."""
    sw = sub.add_parser(
        "sweep",
        help="estimate one plan over a grid of up to three settings (CSV or JSON)",
        description="Every combination of the --axis values is estimated on --gpu (x --gpus), the last axis "
        "varying fastest. An axis is a setting by its name (input_len, batch, gpu_count, gpu, weights, kv_dtype, "
        "seq_len, micro_batch, lora_rank, ...) with a list (batch=1,2,4,8; gpu=RTX 4090,H100 SXM) or a range: "
        "LO..HI doubles from LO (input_len=1k..32k; k = 1024), LO..HIxN takes N values evenly on a log scale, "
        f"LO..HI+STEP steps. At most {MAX_AXES} axes and {MAX_CELLS:,} cells.",
    )
    sw.add_argument("model", help="repo id, config.json, model folder, .gguf file, or scenario .json")
    sw.add_argument(
        "--axis",
        action="append",
        required=True,
        metavar="NAME=VALUES",
        help=f"a setting and its values (repeat for up to {MAX_AXES} axes)",
    )
    sw.add_argument("--format", choices=FORMATS, default=None, help="instead of OUT's suffix [csv]")
    sw.add_argument("-o", "--output", metavar="OUT", default=None, help="the file to write (.csv or .json)")
    estimate_options(sw)


def output_format(output: str | None, given: str | None) -> str:
    """``--format``, else OUT's suffix (.csv / .json), else csv."""
    if given:
        return given
    if output is None:
        return "csv"
    suffix = Path(output).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise CliError(f"{output}: unknown suffix '{Path(output).suffix}'; use .csv or .json, or give --format")
    return suffix


def _axis_gpu(name: str) -> GpuSpec | None:
    """A GPU of the gpu axis, from the catalog (an unknown one: the catalog's words, naming the axis)."""
    from vramdesk.services.resolve import ResolveError, resolve_gpu

    try:
        return resolve_gpu(name)
    except ResolveError as err:
        raise CliError(f"axis gpu: {err}") from err


def run_sweep(ns: argparse.Namespace, out: TextIO, scenario_from: ScenarioFrom, opts: Mapping[str, Any]) -> int:
    """`vramdesk sweep MODEL --axis ... [-o OUT] [--format F]`; ``opts``: the estimate options given."""
    from vramdesk.services.resolve import resolve_gpu, resolve_model

    try:
        fmt = output_format(ns.output, ns.format)
        axes = [parse_axis(spec) for spec in ns.axis]
        scenario = scenario_from(ns.model, dict(opts))
        facts = resolve_model(scenario.model.id)
        gpu = resolve_gpu(scenario.hardware.gpu)
        result = sweep(scenario, facts, gpu, axes, resolve_gpu=_axis_gpu)
        if fmt == "csv":
            text = sweep_csv(result)
        else:
            text = json.dumps(sweep_doc(result, scenario), indent=2, allow_nan=False) + "\n"
        inputs = [p for p in (ns.model, opts.get("deepspeed")) if p and Path(str(p)).is_file()]
        write_or_print(text, ns.output, out, inputs)
        if ns.output:
            print(f"wrote {ns.output} ({fmt.upper()}, {len(result.cells):,} cells)", file=out)
    except (*ERRORS, SweepError) as err:
        print(f"vramdesk: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    return 0


__all__ = ["FORMATS", "add_sweep_parser", "output_format", "run_sweep"]
