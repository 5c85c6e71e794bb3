"""Score vramdesk's SGLang estimate against public SGLang start-up logs.

Reads ``sglang_logs.yaml`` (next to this file), builds the vramdesk scenario each row's ``vramdesk:`` block states
(engine SGLang, the catalog model and GPU, TP, mem_fraction_static from the row's settings or SGLang's own rule,
chunked_prefill_size, weights, KV dtype, one 2-token request: SGLang starts whenever its pool holds a token), runs
``vramdesk.core.estimate.estimate`` and compares, per figure, what SGLang logged with what vramdesk predicts:

    weights per rank ("Load weight end ... mem usage"), the free memory before loading ("Load weight begin. avail
    mem"), the pool's tokens ("KV Cache is allocated. #tokens" = max_total_num_tokens), the KV memory ("K size" +
    "V size", or "KV size"), and the outcome (started / refused) against vramdesk's verdict.

It prints figures only (per row, and the median / 90th-percentile |error| % over the rows, held-out rows apart); it
passes or fails nothing. The table, the held-out rule and the report share score_vllm.py's code.

    python benchmarks/serving/score_sglang.py [--held-out] [--id ID ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # score_vllm sits next to this file (run as a script, or loaded by the tests)
    sys.path.insert(0, str(HERE))

from score_vllm import GIB, SGLANG_TABLE, FigureStats, Prediction, Scored, _num, _p90, held_out, load_rows  # noqa: E402

#: (figure, logged field, unit) in the order they are printed
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("weights per rank", "weights_gib", "GiB"),
    ("free before loading", "avail_before_load_gib", "GiB"),
    ("pool tokens", "kv_tokens", "tokens"),
    ("KV memory", "kv_gib", "GiB"),
)


def logged_figures(row: dict[str, Any]) -> dict[str, float | None]:
    """The row's logged figures under the scorer's keys: the KV memory is "KV size", or "K size" + "V size"."""
    lg = row["logged"]
    kv = lg.get("kv_gib")
    if kv is None and lg.get("k_gib") is not None:
        kv = lg["k_gib"] + (lg.get("v_gib") or 0)
    return {
        "weights_gib": lg.get("weights_gib"),
        "avail_before_load_gib": lg.get("avail_before_load_gib"),
        "kv_tokens": lg.get("kv_tokens") if lg.get("kv_tokens") is not None else lg.get("max_total_num_tokens"),
        "kv_gib": kv,
    }


def scenario_options(row: dict[str, Any]) -> dict[str, Any]:
    """The vramdesk options (the CLI's long-option names) for one row's ``vramdesk:`` block and settings."""
    s, v = row["settings"], row["vramdesk"]
    tp = int(s.get("tp") or 1)
    opts: dict[str, Any] = {
        "mode": "inference",
        "engine": "sglang",
        "gpu": v["gpu"],
        "gpus": tp,
        "tp": tp,
        "batch": 1,
        "input_len": 1,
        "output_len": 1,
        "weights": str(v.get("weights") or "auto"),
        "kv_dtype": str(v.get("kv_dtype") or "auto"),
    }
    if s.get("mem_fraction_static") is not None:
        opts["mem_fraction_static"] = float(s["mem_fraction_static"])
    if v.get("chunked_prefill_size") is not None:
        opts["chunked_prefill_size"] = int(v["chunked_prefill_size"])
    return opts


def predict(row: dict[str, Any]) -> Prediction:
    from vramdesk.cli import scenario_from
    from vramdesk.core.engines.sglang import memory_settings
    from vramdesk.core.estimate import estimate
    from vramdesk.core.gpu import MIB
    from vramdesk.services.resolve import resolve_gpu, resolve_model

    opts = scenario_options(row)
    scenario = scenario_from(str(row["vramdesk"]["model"]), opts)
    gpu = resolve_gpu(scenario.hardware.gpu)
    est = estimate(scenario, resolve_model(scenario.model.id), gpu)
    info = est.engine
    work = scenario.workload
    fraction = None
    if gpu is not None and hasattr(work, "sglang"):
        fraction = memory_settings(work.sglang, gpu.memory_bytes / MIB, opts["tp"], 1).mem_fraction_static
    tokens = info.kv_capacity_tokens
    figures: dict[str, float | None] = {
        "weights_gib": sum(c.bytes for c in est.components if c.category == "weights") / GIB,
        "avail_before_load_gib": info.pool_bytes / fraction / GIB if info.pool_bytes and fraction else None,
        "kv_tokens": float(tokens) if tokens is not None else None,
        "kv_gib": tokens * info.kv_bytes_per_token / GIB if tokens is not None else None,
        "mem_fraction_static": fraction,
    }
    fit = est.fit
    verdict = "refused" if fit is not None and fit.verdict == "does not fit" else "started"
    return Prediction(figures=figures, verdict=verdict, message=str(fit.message) if fit else "")


def score_rows(rows: Sequence[dict[str, Any]]) -> list[Scored]:
    from vramdesk.cli_common import CliError
    from vramdesk.core.estimate import EstimateError
    from vramdesk.services.resolve import ResolveError

    out: list[Scored] = []
    for row in rows:
        block = row.get("vramdesk") or {}
        if block.get("not_expressible") or not block.get("model"):
            out.append(Scored(row, why_not=str(block.get("not_expressible") or "no vramdesk model")))
            continue
        scored = {**row, "logged": {**row["logged"], **logged_figures(row)}}
        try:
            out.append(Scored(scored, prediction=predict(scored)))
        except (CliError, EstimateError, ResolveError, ValueError) as err:
            out.append(Scored(scored, why_not=f"vramdesk: {err}"))
    return out


def print_summary(scored: Sequence[Scored], title: str, out: Any = sys.stdout) -> None:
    """Median and 90th-percentile |error| % per figure over the scored rows, and the verdict agreement."""
    used = [s for s in scored if s.prediction is not None]
    print(f"\n== {title}: {len(used)} rows scored, {len(scored) - len(used)} not expressible", file=out)
    print(f"{'figure':<22} {'rows':>4} {'median|e|%':>10} {'p90|e|%':>8} {'median e%':>9}", file=out)
    for name, key, unit in FIGURES:
        fs = FigureStats(name, unit)
        for s in used:
            lg, pr = s.row["logged"].get(key), s.prediction.figures.get(key) if s.prediction else None
            if lg is not None and pr is not None:
                fs.pairs.append((s.row["id"], float(lg), float(pr)))
        errs = [e[3] for e in fs.errors()]
        if not errs:
            print(f"{name:<22} {0:>4} {'-':>10} {'-':>8} {'-':>9}", file=out)
            continue
        absolute = sorted(abs(e) for e in errs)
        median = statistics.median(absolute)
        print(
            f"{name:<22} {len(errs):>4} {median:>10.1f} {_p90(absolute):>8.1f} {statistics.median(errs):>+9.1f}",
            file=out,
        )
    agree = [s for s in used if s.prediction is not None and s.prediction.verdict == s.row["outcome"]]
    print(f"verdict agrees with the outcome: {len(agree)} of {len(used)}", file=out)


def print_rows(scored: Sequence[Scored], out: Any = sys.stdout) -> None:
    """One line per row: logged -> vramdesk (error %) for every figure both have, and the outcome."""
    print("\n== per row (logged -> vramdesk)", file=out)
    for s in scored:
        if s.prediction is None:
            print(f"  {s.row['id']}: not expressible: {s.why_not}", file=out)
            continue
        pred = s.prediction.figures
        parts = [f"mem_fraction_static {s.row['settings'].get('mem_fraction_static')} -> {pred['mem_fraction_static']}"]
        for name, key, unit in FIGURES:
            lg, pr = s.row["logged"].get(key), pred.get(key)
            if lg is not None and pr is not None:
                err = f" ({(pr - lg) / lg * 100:+.1f}%)" if lg else ""
                parts.append(f"{name} {_num(float(lg), unit)} -> {_num(pr, unit)}{err}")
        caveat = s.row["vramdesk"].get("stand_in")
        print(f"  {s.row['id']} [{s.row['outcome']}/{s.prediction.verdict}]: " + "; ".join(parts), file=out)
        if caveat:
            print(f"      stand-in: {caveat}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--held-out", action="store_true", help="score the held-out rows only")
    ap.add_argument("--id", action="append", default=[], help="score these row ids only")
    ap.add_argument("--table", type=Path, default=SGLANG_TABLE)
    args = ap.parse_args(argv)
    rows = load_rows(args.table)
    if args.id:
        rows = [r for r in rows if r["id"] in set(args.id)]
    if args.held_out:
        rows = [r for r in rows if held_out(r["id"])]
    scored = score_rows(rows)
    print_rows(scored)
    print_summary(scored, "all rows")
    held = [s for s in scored if held_out(s.row["id"])]
    if held and len(held) < len(scored):
        print_summary(held, "held-out rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
