"""Score vramdesk's llama.cpp estimate against the public CUDA load logs of llamacpp_logs.yaml (issue 20).

For every row the run is stated to vramdesk as its options allow (--engine llamacpp, the GGUF quant, n_ctx as the
prompt length, -ngl, -ub, flash attention, the KV cache type, the GPU count, --n-cpu-moe) and each buffer llama.cpp
printed is set beside vramdesk's figure for it:

  model         the CUDA model buffer of each GPU            <- component "weights" (per GPU when split)
  kv            the CUDA KV buffer of each GPU               <- component "KV cache"
  compute       the CUDA compute buffer of each GPU          <- component "compute buffer"
  host_model    CPU_Mapped + CPU + CUDA_Host model buffers   <- all weights minus the GPUs' weights
  host_kv       CPU / CUDA_Host KV buffers                   <- the KV cache of the layers left on the CPU
  host_compute  CUDA_Host + CPU compute buffers              <- what vramdesk's host memory holds beyond weights
                                                                and KV (the logits buffer when the output layer
                                                                stays on the CPU, else nothing)

error % = (vramdesk - logged) / logged x 100. Figures only: no threshold, no pass or fail. Rows vramdesk cannot
state (tensor overrides, unequal GPUs) are listed apart, with the figures of the nearest scenario vramdesk has
(the same run without the override, or with the n_cpu_moe its vramdesk block names for an override that keeps
experts in host memory), and kept out of the statistics.

    .venv/bin/python benchmarks/serving/score_llamacpp.py [--rows ID,ID,...] [--detail]
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

ROOT = Path(__file__).resolve().parents[2]
LOGS = Path(__file__).resolve().with_name("llamacpp_logs.yaml")
MIB = 2**20

#: buffers scored, in the order they are printed
BUFFERS = ("model", "kv", "compute", "host_model", "host_kv", "host_compute")
#: kinds of run, in the order they are printed (see the YAML header)
KINDS = ("full", "partial", "zero", "fa_off", "multi_gpu", "old_build", "moe_cpu")
#: host model buffers that hold a second, repacked copy of weights also counted in CPU_Mapped
REPACKED = ("CPU_AARCH64", "CPU_REPACK", "AMX")
_CUDA = re.compile(r"^CUDA\d+$")


@dataclass(frozen=True)
class Item:
    """One buffer of one device of one row: the logged MiB beside vramdesk's."""

    row: str
    buffer: str
    device: str
    logged: float
    estimated: float
    held_out: bool
    kinds: tuple[str, ...]

    @property
    def error_pct(self) -> float | None:
        if self.logged <= 0:
            return None
        return (self.estimated - self.logged) / self.logged * 100.0


def load_rows(path: Path = LOGS) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = data["rows"]
    return rows


def _mib(value: float | list[float]) -> float:
    """A logged figure; several lines for one device (one per GGUF part) are summed."""
    return float(sum(value)) if isinstance(value, list) else float(value)


def _cuda_index(device: str) -> int:
    return int(device.removeprefix("CUDA"))


def _options(row: dict[str, Any], offloaded: int | None) -> dict[str, Any]:
    """vramdesk's command-line options for the run (the keys of vramdesk.cli's option table)."""
    s, v = row["settings"], row["vramdesk"]
    n_seq = int(s.get("n_seq") or 1)
    opts: dict[str, Any] = {
        "engine": "llamacpp",
        "weights": v["weights"],
        "kv_dtype": v["kv_dtype"],
        # llama.cpp's n_ctx is the cell pool of all sequences; vramdesk sizes it as (input + output) x batch
        "input_len": max(1, int(s["n_ctx"]) // n_seq),
        "output_len": 0,
        "batch": n_seq,
        "n_ubatch": int(s["n_ubatch"]),
        "flash_attn": bool(s["flash_attn"]),
    }
    if offloaded is not None:
        opts["n_gpu_layers"] = offloaded
    if v.get("n_cpu_moe"):
        opts["n_cpu_moe"] = int(v["n_cpu_moe"])
    if int(v.get("gpus", 1)) > 1:
        opts["gpus"] = int(v["gpus"])
        if s.get("split_mode") in ("layer", "row"):
            opts["split_mode"] = s["split_mode"]
    return opts


def _model_id(row: dict[str, Any]) -> str:
    model = str(row["vramdesk"]["model"])
    return str(ROOT / model) if model.endswith(".json") else model


def _estimate(row: dict[str, Any], offloaded: int | None) -> Any:
    from vramdesk.cli import scenario_from
    from vramdesk.core.estimate import estimate
    from vramdesk.services.resolve import resolve_model

    scenario = scenario_from(_model_id(row), _options(row, offloaded))
    return estimate(scenario, resolve_model(scenario.model.id), None)


def _per_gpu(est: Any) -> list[dict[str, float]]:
    """MiB of weights, KV cache and compute buffer on each GPU of the estimate."""
    names = {"weights": "model", "KV cache": "kv", "compute buffer": "compute"}
    shares = [g.components for g in est.per_gpu if g.components] or [est.components]
    out = []
    for comps in shares:
        got = {names[c.name]: c.bytes / MIB for c in comps if c.name in names}
        out.append({b: got.get(b, 0.0) for b in ("model", "kv", "compute")})
    return out


def vramdesk_buffers(row: dict[str, Any]) -> dict[tuple[str, str], float]:
    """vramdesk's MiB for each (buffer, device) of the row: devices CUDA0.. for the GPUs, "host" for the rest."""
    est = _estimate(row, int(row["settings"]["offloaded"]))
    # the same run with every layer on the GPUs gives the totals the host shares are the rest of
    whole = _estimate(row, None)
    gpus, whole_gpus = _per_gpu(est), _per_gpu(whole)
    out: dict[tuple[str, str], float] = {}
    for i, g in enumerate(gpus):
        for buffer, mib in g.items():
            out[(buffer, f"CUDA{i}")] = mib
    weights_total = sum(g["model"] for g in whole_gpus) + whole.host_bytes / MIB
    kv_total = sum(g["kv"] for g in whole_gpus)
    host_model = weights_total - sum(g["model"] for g in gpus)
    host_kv = kv_total - sum(g["kv"] for g in gpus)
    out[("host_model", "host")] = host_model
    out[("host_kv", "host")] = host_kv
    out[("host_compute", "host")] = est.host_bytes / MIB - host_model - host_kv
    return out


def logged_buffers(row: dict[str, Any]) -> dict[tuple[str, str], float]:
    """The row's logged MiB for each (buffer, device), host buffers summed under device "host"."""
    logged = row["logged_mib"]
    out: dict[tuple[str, str], float] = {}
    for buffer in ("model", "kv", "compute"):
        for device, value in (logged.get(buffer) or {}).items():
            if _CUDA.match(device):
                out[(buffer, device)] = _mib(value)
        host = [_mib(v) for d, v in (logged.get(buffer) or {}).items() if not _CUDA.match(d) and d not in REPACKED]
        if host:
            out[(f"host_{buffer}", "host")] = sum(host)
    return out


def compare(row: dict[str, Any]) -> list[Item]:
    """Every logged buffer of the row beside vramdesk's figure for it."""
    mine = vramdesk_buffers(row)
    items = []
    for (buffer, device), logged in sorted(logged_buffers(row).items()):
        if (buffer, device) not in mine and _CUDA.match(device) and _cuda_index(device) > 0:
            estimated = 0.0  # vramdesk puts nothing on this GPU
        else:
            estimated = mine.get((buffer, device), 0.0)
        items.append(Item(row["id"], buffer, device, logged, estimated, bool(row["held_out"]), tuple(row["kinds"])))
    return items


def score(rows: Iterable[dict[str, Any]]) -> tuple[list[Item], list[Item]]:
    """(items of the rows vramdesk can state, items of the nearest scenario for those it cannot)."""
    expressible: list[Item] = []
    nearest: list[Item] = []
    for row in rows:
        (expressible if row["vramdesk"]["expressible"] else nearest).extend(compare(row))
    return expressible, nearest


def _nearest_rank(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _fmt(value: float | None) -> str:
    return "     -" if value is None else f"{value:+6.1f}"


def _pct(item: Item) -> str:
    err = item.error_pct
    return "logged 0" if err is None else f"{err:+.1f}%"


def summary_lines(items: Sequence[Item], title: str, worst: int = 3) -> list[str]:
    """Per buffer: rows, median signed error %, median |error| %, p90 |error| % (nearest rank), worst rows."""
    lines = [f"{title} ({len({i.row for i in items})} rows)"]
    lines.append(f"  {'buffer':<13}{'n':>4}{'median%':>9}{'med|%|':>8}{'p90|%|':>8}  worst (logged -> vramdesk MiB)")
    for buffer in BUFFERS:
        mine = [i for i in items if i.buffer == buffer]
        if not mine:
            continue
        pct = [e for e in (i.error_pct for i in mine) if e is not None]
        if pct:
            med, med_abs = statistics.median(pct), statistics.median(abs(e) for e in pct)
            p90 = _nearest_rank([abs(e) for e in pct], 0.9)
            stats = f"{med:+9.1f}{med_abs:8.1f}{p90:8.1f}"
        else:
            stats = f"{'-':>9}{'-':>8}{'-':>8}"
        ranked = sorted(mine, key=lambda i: -abs(i.estimated - i.logged) if i.error_pct is None else -abs(i.error_pct))
        bad = "; ".join(f"{i.row}[{i.device}] {i.logged:.0f}->{i.estimated:.0f} ({_pct(i)})" for i in ranked[:worst])
        lines.append(f"  {buffer:<13}{len(mine):>4}{stats}  {bad}")
    return lines


def detail_lines(items: Sequence[Item]) -> list[str]:
    lines = [f"  {'row':<46}{'buffer':<13}{'device':<7}{'logged':>10}{'vramdesk':>10}{'err%':>8}"]
    for i in items:
        lines.append(
            f"  {i.row:<46}{i.buffer:<13}{i.device:<7}{i.logged:10.2f}{i.estimated:10.2f}{_fmt(i.error_pct):>8}"
        )
    return lines


def report(rows: Sequence[dict[str, Any]], detail: bool = False) -> list[str]:
    expressible, nearest = score(rows)
    out = [
        f"llama.cpp CUDA logs: {len(rows)} rows, {sum(1 for r in rows if r['vramdesk']['expressible'])} "
        "stated to vramdesk, error % = (vramdesk - logged) / logged",
        "",
    ]
    out += summary_lines(expressible, "all stated rows")
    out += ["", *summary_lines([i for i in expressible if i.held_out], "held out (odd source number)")]
    out += ["", *summary_lines([i for i in expressible if not i.held_out], "not held out")]
    for kind in KINDS:
        mine = [i for i in expressible if kind in i.kinds]
        if mine:
            out += ["", *summary_lines(mine, f"kind: {kind}")]
    if detail:
        out += ["", "every stated buffer:", *detail_lines(expressible)]
    out += ["", "rows vramdesk cannot state (kept out of the figures above):"]
    for row in rows:
        if not row["vramdesk"]["expressible"]:
            out.append(f"  {row['id']}: {row['vramdesk']['why']}")
    if nearest:
        out += ["", *summary_lines(nearest, "those rows as the nearest scenario (the override left out)")]
        out += detail_lines([i for i in nearest if i.buffer in ("kv", "compute")])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", help="comma-separated row ids (default: every row)")
    parser.add_argument("--detail", action="store_true", help="also print every buffer of every stated row")
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
