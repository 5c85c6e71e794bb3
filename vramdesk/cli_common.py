"""What the commands of the command line share: their error type and the errors they report in one line, the
estimate with its speed, reading a scenario file and writing the answer to a file or stdout."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from vramdesk.core import jsonsafe
from vramdesk.core.architecture import ConfigError
from vramdesk.core.dtype_names import FormatError
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.performance import Performance, PerformanceError, performance
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.deepspeed import DeepSpeedConfigError
from vramdesk.services.resolve import ResolveError, resolve_gpu, resolve_model
from vramdesk.storage.scenarios import ScenarioFileError


class CliError(Exception):
    pass


def estimate_and_speed(scenario: Scenario, gpu: GpuSpec | None = None) -> tuple[Estimate, Performance | None]:
    """The estimate and, when a GPU is given (``gpu``, else the scenario's; the catalog has its figures), the speed
    estimate."""
    facts = resolve_model(scenario.model.id)
    gpu = gpu or resolve_gpu(scenario.hardware.gpu)
    est = estimate(scenario, facts, gpu)
    if gpu is None:
        return est, None
    try:
        return est, performance(est, scenario, facts, gpu)
    except PerformanceError:
        return est, None


ERRORS = (
    CliError,
    ResolveError,
    EstimateError,
    ConfigError,
    FormatError,
    ScenarioFileError,
    DeepSpeedConfigError,
    jsonsafe.JsonError,
    OSError,
)


def read_scenario_file(path: Path) -> Scenario:
    """A scenario file of any supported schema; one from a newer vramdesk is read as far as it can be."""
    from vramdesk.storage.library import read_entry

    entry = read_entry(path)
    if entry.note:
        print(f"vramdesk: note: {path}: {entry.note}", file=sys.stderr)
    return entry.scenario


def write_or_print(text: str, output: str | None, out: TextIO, inputs: Sequence[str | Path] = ()) -> None:
    """``text`` to the file ``output`` (never over one of ``inputs``), else to ``out``."""
    if output:
        from vramdesk.fsutil import atomic_write_text
        from vramdesk.safety import check_output

        check_output(output, inputs)
        atomic_write_text(Path(output), text)
    else:
        out.write(text)


def run_child(cmd: list[str], fmt: str, output: Path) -> None:
    """Run ``cmd`` (``python -m vramdesk.ui.<module> ...``) offscreen: the pictures need Qt, which the command line
    itself never imports. Its last stderr line is the reason when it fails; a CliError says so."""
    import os
    import subprocess

    env = dict(os.environ)
    env["QT_QPA_PLATFORM"] = "offscreen"
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        reason = lines[-1].removeprefix("vramdesk: error: ") if lines else f"exit status {proc.returncode}"
        raise CliError(f"cannot render {fmt}: {reason}")
    if not output.is_file():
        raise CliError(f"cannot render {fmt}: {output} was not written")
