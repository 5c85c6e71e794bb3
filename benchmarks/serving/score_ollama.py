"""Score vramdesk's Ollama estimate against the public Ollama server logs of ollama_logs.yaml (issue 20).

Every row is stated to vramdesk as ``--engine ollama`` with the row's release band, num_ctx, parallel slots, KV
cache type, flash attention, OLLAMA_GPU_OVERHEAD and num_gpu (each left to Ollama's default where the row's
vramdesk block says null), on the catalog GPU the block names with the logged available memory as its free memory.
Three estimates are made of each row:

  fit      vramdesk's own fit of the layers (num_gpu as the row set it, else Ollama's fit)
  logged   the layers the log shows on the GPU (num_gpu = the logged count), the context and slots of the fit
  full     every layer on the GPU, the same context and slots: what Ollama's "required.full" figures describe

and each figure the log printed is set beside vramdesk's:

  layers         logged layers offloaded "N/M"          <- the fit's "offloaded N/M layers to GPU"
  ctx_size       the runner's --ctx-size (all slots)     <- the fit's num_ctx x num_parallel   (rows that left
  parallel       the runner's --parallel                 <- the fit's num_parallel              num_ctx / slots
                                                                                                 to Ollama)
  kv_total       memory.required.kv                      <- the full estimate's KV cache, all GPUs
  graph_full     memory.graph.full                       <- the full estimate's compute buffer, GPU 0
  graph_partial  memory.graph.partial (partial runs)     <- the logged estimate's compute buffer, GPU 0
  weights_total  memory.weights.total                    <- the full estimate's weights on the GPUs (Ollama
                                                            sums the blocks and the output layer, not the
                                                            token embeddings llama.cpp keeps in host memory)
  model_gpu      llama.cpp's CUDA model buffers          <- the logged estimate's weights on the GPUs
  kv_gpu         llama.cpp's CUDA KV buffers             <- the logged estimate's KV cache on the GPUs
  compute_gpu    llama.cpp's CUDA0 compute buffer        <- the logged estimate's compute buffer, GPU 0

error % = (vramdesk - logged) / logged x 100; for layers, vramdesk - logged in layers. Ollama prints GiB with one
decimal, so its figures carry +-0.05 GiB of rounding. Figures only: no threshold, no pass or fail. Rows vramdesk
cannot state are listed apart with the figures of the nearest scenario their block names.

    .venv/bin/python benchmarks/serving/score_ollama.py [--rows ID,ID,...] [--detail]
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

LOGS = Path(__file__).resolve().with_name("ollama_logs.yaml")
MIB = 2**20

#: figures compared as MiB (error %), in the order they are printed
MIB_FIGURES = ("kv_total", "graph_full", "graph_partial", "weights_total", "model_gpu", "kv_gpu", "compute_gpu")
#: figures compared as counts: layers by their difference, the chosen context and slots by exact match
COUNT_FIGURES = ("layers", "ctx_size", "parallel")
FIGURES = COUNT_FIGURES + MIB_FIGURES
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(B|KiB|MiB|GiB|TiB)\s*$")
_UNIT = {"B": 2.0**-20, "KiB": 2.0**-10, "MiB": 1.0, "GiB": 2.0**10, "TiB": 2.0**20}
_CUDA = re.compile(r"^CUDA\d+$")


@dataclass(frozen=True)
class Item:
    """One figure of one row: the logged value beside vramdesk's."""

    row: str
    figure: str
    logged: float
    estimated: float
    held_out: bool

    @property
    def error(self) -> float | None:
        """% for MiB figures, the difference for counts; None when the logged MiB is 0."""
        if self.figure in COUNT_FIGURES:
            return self.estimated - self.logged
        if self.logged <= 0:
            return None
        return (self.estimated - self.logged) / self.logged * 100.0


def load_rows(path: Path = LOGS) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = data["rows"]
    return rows


def size_mib(text: str) -> float:
    """MiB of a size as Ollama prints it ("19.5 GiB", "896.0 MiB", "0 B")."""
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"not a size: {text!r}")
    return float(m.group(1)) * _UNIT[m.group(2)]


# ---------------------------------------------------------------------------------------------------- vramdesk


@dataclass(frozen=True)
class Run:
    """What one estimate says: Ollama's choices and MiB per GPU of weights, KV cache and compute buffer."""

    offloaded: int
    total_layers: int
    num_ctx: int
    parallel: int
    per_gpu: tuple[dict[str, float], ...]

    def gpu_sum(self, part: str) -> float:
        return sum(g[part] for g in self.per_gpu)


def _find(text: Any, message_id: str) -> Any:
    """The part of a composite Text with ``message_id`` (depth first), or None."""
    if getattr(text, "id", "") == message_id:
        return text
    for part in getattr(text, "parts", ()) or ():
        found = _find(part, message_id)
        if found is not None:
            return found
    return None


def _options(row: dict[str, Any], **pinned: int) -> dict[str, Any]:
    """vramdesk's command-line options for the row (the keys of vramdesk.cli's option table)."""
    v = row["vramdesk"]
    opts: dict[str, Any] = {
        "engine": "ollama",
        "weights": v["weights"],
        "gpu": v["gpu"],
        "ollama_version": v["ollama_version"],
        "kv_cache_type": v["kv_cache_type"],
        "flash_attention": v["flash_attention"],
        "gpu_overhead_mib": int(v["gpu_overhead_mib"]),
    }
    if int(v["gpus"]) > 1:
        opts["gpus"] = int(v["gpus"])
    for key in ("num_ctx", "num_parallel", "num_gpu"):
        if v.get(key) is not None:
            opts[key] = int(v[key])
    opts.update(pinned)
    return opts


def _gpu(row: dict[str, Any], name: str) -> Any:
    from vramdesk.services.resolve import resolve_gpu

    gpu = resolve_gpu(name)
    free = row["vramdesk"].get("free")
    if gpu is None or free is None:
        return gpu
    return gpu.model_copy(update={"free_bytes": int(size_mib(str(free)) * MIB)})


def estimate_run(row: dict[str, Any], **pinned: int) -> Run:
    """vramdesk's estimate of the row with some options pinned (num_gpu, num_ctx, num_parallel)."""
    from vramdesk.cli import scenario_from
    from vramdesk.core.estimate import estimate
    from vramdesk.services.resolve import resolve_model

    scenario = scenario_from(str(row["vramdesk"]["model"]), _options(row, **pinned))
    est = estimate(scenario, resolve_model(scenario.model.id), _gpu(row, str(scenario.hardware.gpu)))
    comps = {c.name: c for c in est.components}
    offloaded = _find(comps["weights"].explain, "ollama.offloaded")
    context = _find(comps["KV cache"].explain, "ollama.context")
    if offloaded is None or context is None:
        raise RuntimeError(f"{row['id']}: the estimate does not say Ollama's layers and context")
    names = {"weights": "weights", "KV cache": "kv", "compute buffer": "compute"}
    shares = [g.components for g in est.per_gpu if g.components] or [est.components]
    per_gpu = []
    for share in shares:
        got = {names[c.name]: c.bytes / MIB for c in share if c.name in names}
        per_gpu.append({part: got.get(part, 0.0) for part in names.values()})
    return Run(
        offloaded=int(offloaded.args["layers"]),
        total_layers=int(offloaded.args["total"]),
        num_ctx=int(context.args["num_ctx"]),
        parallel=int(context.args["parallel"]),
        per_gpu=tuple(per_gpu),
    )


@dataclass(frozen=True)
class Runs:
    fit: Run
    logged: Run
    full: Run


def runs(row: dict[str, Any]) -> Runs:
    """The row's three estimates: vramdesk's fit, the logged layer count, every layer on the GPU."""
    fit = estimate_run(row)
    same = {"num_ctx": fit.num_ctx, "num_parallel": fit.parallel}
    logged = estimate_run(row, num_gpu=int(row["logged"]["offloaded"]["layers"]), **same)
    full = estimate_run(row, num_gpu=fit.total_layers, **same)
    return Runs(fit, logged, full)


# ---------------------------------------------------------------------------------------------------- logged


def _cuda_sum(buffers: dict[str, Any] | None) -> float | None:
    values = [float(v) for d, v in (buffers or {}).items() if _CUDA.match(d)]
    return sum(values) if values else None


def logged_figures(row: dict[str, Any]) -> dict[str, float]:
    """The row's logged figures by name (MiB, or counts); a figure the row does not have is absent."""
    logged, settings = row["logged"], row["settings"]
    out: dict[str, float] = {"layers": float(logged["offloaded"]["layers"])}
    left_to_ollama = settings.get("num_ctx_set") is not True and row["vramdesk"].get("num_ctx") is None
    if settings.get("ctx_size") is not None and left_to_ollama:
        out["ctx_size"] = float(settings["ctx_size"])
    if settings.get("parallel") is not None and row["vramdesk"].get("num_parallel") is None:
        out["parallel"] = float(settings["parallel"])
    est = logged.get("estimate") or {}
    for figure, key in (("kv_total", "kv"), ("graph_full", "graph_full"), ("weights_total", "weights_total")):
        if est.get(key) is not None:
            out[figure] = size_mib(str(est[key]))
    partial = logged["offloaded"]["layers"] < logged["offloaded"]["total"]
    if partial and est.get("graph_partial") is not None:
        out["graph_partial"] = size_mib(str(est["graph_partial"]))
    buffers = logged.get("buffers_mib") or {}
    for figure, key in (("model_gpu", "model"), ("kv_gpu", "kv")):
        total = _cuda_sum(buffers.get(key))
        if total is not None:
            out[figure] = total
    compute = (buffers.get("compute") or {}).get("CUDA0")
    if compute is not None:
        out["compute_gpu"] = float(compute)
    return out


def vramdesk_figures(r: Runs) -> dict[str, float]:
    return {
        "layers": float(r.fit.offloaded),
        "ctx_size": float(r.fit.num_ctx * r.fit.parallel),
        "parallel": float(r.fit.parallel),
        "kv_total": r.full.gpu_sum("kv"),
        "graph_full": r.full.per_gpu[0]["compute"],
        "graph_partial": r.logged.per_gpu[0]["compute"],
        "weights_total": r.full.gpu_sum("weights"),
        "model_gpu": r.logged.gpu_sum("weights"),
        "kv_gpu": r.logged.gpu_sum("kv"),
        "compute_gpu": r.logged.per_gpu[0]["compute"],
    }


def compare(row: dict[str, Any]) -> list[Item]:
    """Every figure the row logged beside vramdesk's figure for it."""
    mine = vramdesk_figures(runs(row))
    held = bool(row["held_out"])
    return [Item(row["id"], f, v, mine[f], held) for f, v in logged_figures(row).items()]


def score(rows: Iterable[dict[str, Any]]) -> tuple[list[Item], list[Item]]:
    """(items of the rows vramdesk can state, items of the nearest scenario of those it cannot)."""
    stated: list[Item] = []
    nearest: list[Item] = []
    for row in rows:
        (stated if row["vramdesk"]["expressible"] else nearest).extend(compare(row))
    return stated, nearest


# ---------------------------------------------------------------------------------------------------- report


def _nearest_rank(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _worst(items: Sequence[Item], n: int) -> str:
    def size(i: Item) -> float:
        e = i.error
        return abs(i.estimated - i.logged) if e is None else abs(e)

    shown = []
    for i in sorted(items, key=size, reverse=True)[:n]:
        if i.figure in COUNT_FIGURES:
            shown.append(f"{i.row} {i.logged:.0f}->{i.estimated:.0f}")
        else:
            err = "logged 0" if i.error is None else f"{i.error:+.1f}%"
            shown.append(f"{i.row} {i.logged:.0f}->{i.estimated:.0f} ({err})")
    return "; ".join(shown)


def summary_lines(items: Sequence[Item], title: str, worst: int = 3) -> list[str]:
    """Per figure: rows; layers: exact share, mean / median / p90 |difference|; context and slots: exact share;
    MiB: median signed %, median / p90 |%|; and the rows that differ most."""
    lines = [f"{title} ({len({i.row for i in items})} rows)"]
    lines.append(f"  {'figure':<14}{'n':>3}  {'statistics':<44}  differ most (logged -> vramdesk)")
    for figure in FIGURES:
        mine = [i for i in items if i.figure == figure]
        if not mine:
            continue
        errors = [e for e in (i.error for i in mine) if e is not None]
        exact = sum(1 for e in errors if e == 0) / len(mine)
        if figure == "layers":
            diffs = [abs(e) for e in errors]
            stats = (
                f"exact {exact:4.0%}  mean|d| {statistics.fmean(diffs):5.1f}  med|d| {statistics.median(diffs):4.1f}"
                f"  p90|d| {_nearest_rank(diffs, 0.9):4.0f}"
            )
        elif figure in COUNT_FIGURES:
            stats = f"exact {exact:4.0%}"
        elif errors:
            absolute = [abs(e) for e in errors]
            stats = (
                f"median {statistics.median(errors):+6.1f}%  med|%| {statistics.median(absolute):5.1f}"
                f"  p90|%| {_nearest_rank(absolute, 0.9):5.1f}"
            )
        else:
            stats = "-"
        lines.append(f"  {figure:<14}{len(mine):>3}  {stats:<44}  {_worst(mine, worst)}")
    return lines


def detail_lines(items: Sequence[Item]) -> list[str]:
    lines = [f"  {'row':<46}{'figure':<15}{'logged':>10}{'vramdesk':>10}{'error':>9}"]
    for i in items:
        e = i.error
        err = "-" if e is None else (f"{e:+.0f}" if i.figure in COUNT_FIGURES else f"{e:+.1f}%")
        lines.append(f"  {i.row:<46}{i.figure:<15}{i.logged:10.1f}{i.estimated:10.1f}{err:>9}")
    return lines


def report(rows: Sequence[dict[str, Any]], detail: bool = False) -> list[str]:
    stated, nearest = score(rows)
    n_stated = sum(1 for r in rows if r["vramdesk"]["expressible"])
    out = [
        f"Ollama server logs: {len(rows)} rows, {n_stated} stated to vramdesk --engine ollama; "
        "MiB figures: error % = (vramdesk - logged) / logged; layers: vramdesk - logged",
        "",
    ]
    out += summary_lines(stated, "all stated rows")
    out += ["", *summary_lines([i for i in stated if i.held_out], "held out (odd thread number)")]
    out += ["", *summary_lines([i for i in stated if not i.held_out], "not held out")]
    if detail:
        out += ["", "every stated figure:", *detail_lines(stated)]
    out += ["", "rows vramdesk cannot state (kept out of the figures above):"]
    out += [f"  {r['id']}: {r['vramdesk']['why']}" for r in rows if not r["vramdesk"]["expressible"]]
    if nearest:
        out += ["", *summary_lines(nearest, "those rows as the nearest scenario their vramdesk block names")]
        out += detail_lines(nearest)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", help="comma-separated row ids (default: every row)")
    parser.add_argument("--detail", action="store_true", help="also print every figure of every stated row")
    args = parser.parse_args(argv)
    rows = load_rows()
    if args.rows:
        wanted = set(args.rows.split(","))
        rows = [r for r in rows if r["id"] in wanted]
        missing = wanted - {r["id"] for r in rows}
        if missing:
            parser.error(f"no such rows: {', '.join(sorted(missing))}")
    print("\n".join(report(rows, detail=args.detail)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
