"""Score vramdesk's vLLM estimate against public vLLM start-up logs.

Reads ``vllm_logs.yaml`` (next to this file), builds the vramdesk scenario of every row it can express (engine
vLLM, the row's GPU, TP / PP, gpu_memory_utilization, max_num_seqs, max_num_batched_tokens, weights, KV dtype,
block size, enforce_eager, and one sequence of max_model_len tokens), runs ``vramdesk.core.estimate.estimate``
and compares, per figure, what vLLM logged with what vramdesk predicts:

    weights per rank, non-torch memory, profile activation peak, available KV (the KV pool), KV tokens,
    maximum concurrency (KV tokens / max_model_len), the budget (utilization x GPU memory), the GPU's total
    memory, and the outcome (started / refused) against vramdesk's verdict ("does not fit" = refused).

It prints figures only (rows, median and 90th-percentile |error| %, the median signed error, the worst rows),
for all rows and for the held-out split, and the verdict agreement; it passes or fails nothing. Rows vramdesk
cannot express are listed with the reason. ``sglang_logs.yaml`` is validated and listed here; score_sglang.py scores it.

Every row runs at the vramdesk vLLM version band of its logged release (``vllm_version``; a bounded one, such as
``~0.10.1``, at the band that bound falls in); ``--same-version BAND`` runs them all at one band instead.

    python benchmarks/serving/score_vllm.py [--held-out] [--limit N] [--id ID ...] [--same-version BAND]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
VLLM_TABLE = HERE / "vllm_logs.yaml"
SGLANG_TABLE = HERE / "sglang_logs.yaml"
GIB = 2**30

#: (figure, logged field, unit) in the order they are printed
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("weights per rank", "weights_gib", "GiB"),
    ("non-torch", "non_torch_gib", "GiB"),
    ("activation peak", "activation_peak_gib", "GiB"),
    ("available KV", "available_kv_gib", "GiB"),
    ("KV tokens", "kv_tokens", "tokens"),
    ("max concurrency", "max_concurrency", "x"),
    ("budget (util x total)", "budget_gib", "GiB"),
    ("GPU total", "total_gpu_gib", "GiB"),
)
WORST = 3


def held_out(row_id: str) -> bool:
    """The split the tables' headers fix: about a third of the rows, by a hash of the id."""
    return zlib.crc32(row_id.encode("utf-8")) % 3 == 0


def load_rows(path: Path = VLLM_TABLE) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of rows")
    return data


@dataclass
class Prediction:
    figures: dict[str, float | None]
    verdict: str
    message: str


@dataclass
class Scored:
    row: dict[str, Any]
    prediction: Prediction | None = None
    why_not: str | None = None


@dataclass
class FigureStats:
    name: str
    unit: str
    #: (row id, logged, predicted)
    pairs: list[tuple[str, float, float]] = field(default_factory=list)

    def errors(self) -> list[tuple[str, float, float, float]]:
        """(id, logged, predicted, error %) for the rows whose logged figure is positive (a percentage of a
        negative or zero KV pool means nothing; those rows still count in the verdict)."""
        return [(i, lg, pr, (pr - lg) / lg * 100) for i, lg, pr in self.pairs if lg > 0]


def _model_ref(row: dict[str, Any]) -> str:
    ref = str(row["vramdesk_model"])
    return str(HERE / ref) if ref.endswith(".json") else ref


def row_band(row: dict[str, Any]) -> str:
    """The vramdesk vLLM version band of a row's logged (or bounded) release: ``0.11.2`` -> ``0.10``."""
    from vramdesk.core.engines.vllm_versions import band_of

    return band_of(str(row["vllm_version"]))


def scenario_options(row: dict[str, Any], band: str | None = None) -> dict[str, Any]:
    """The vramdesk options (the CLI's long-option names) for one row, at its own release's band unless ``band``
    names one."""
    s, gpu = row["settings"], row["gpu"]
    tp, pp = int(s.get("tp") or 1), int(s.get("pp") or 1)
    mml = int(s["max_model_len"])
    kv = str(s.get("kv_cache_dtype") or "auto")
    opts: dict[str, Any] = {
        "mode": "inference",
        "engine": "vllm",
        "gpu": gpu["vramdesk_gpu"],
        "gpus": tp * pp,
        "tp": tp,
        "pp": pp,
        "batch": 1,
        # vLLM refuses max_model_len when one such sequence does not fit the pool: one sequence of that length
        "input_len": mml - 1,
        "output_len": 1,
        "gpu_memory_utilization": float(s["gpu_memory_utilization"]),
        "max_num_seqs": int(s["max_num_seqs"]),
        "max_num_batched_tokens": int(s["max_num_batched_tokens"]),
        "enforce_eager": bool(s.get("enforce_eager") or False),
        "block_size": int(s.get("block_size") or 16),
        "weights": str(s.get("weights") or "auto"),
        "kv_dtype": "fp8" if kv.startswith("fp8") else kv,
        "vllm_version": band or row_band(row),
    }
    return opts


def predict(row: dict[str, Any], band: str | None = None) -> Prediction:
    from vramdesk.cli import scenario_from
    from vramdesk.core.estimate import estimate
    from vramdesk.services.resolve import resolve_gpu, resolve_model

    scenario = scenario_from(_model_ref(row), scenario_options(row, band))
    gpu = resolve_gpu(scenario.hardware.gpu)
    est = estimate(scenario, resolve_model(scenario.model.id), gpu)

    def component(pick: Callable[[Any], bool], parts: Sequence[Any]) -> float | None:
        hits = [c.bytes for c in parts if pick(c)]
        return sum(hits) / GIB if hits else None

    comps = est.components
    info = est.engine
    mml = int(row["settings"]["max_model_len"])
    tokens = info.kv_capacity_tokens
    figures: dict[str, float | None] = {
        "weights_gib": component(lambda c: c.category == "weights", comps),
        "non_torch_gib": component(lambda c: c.name == "non-torch memory", est.device_overheads),
        "activation_peak_gib": component(lambda c: c.category == "activations", comps),
        "available_kv_gib": component(lambda c: c.category == "pool", comps),
        "kv_tokens": float(tokens) if tokens is not None else None,
        # vLLM's own figure (the pool over one request of max_model_len), tokens / max_model_len before it existed
        "max_concurrency": info.max_concurrency
        if info.max_concurrency is not None
        else (tokens / mml if tokens is not None else None),
        "budget_gib": info.pool_bytes / GIB if info.pool_bytes is not None else None,
        "total_gpu_gib": gpu.memory_bytes / GIB if gpu is not None else None,
    }
    fit = est.fit
    verdict = "refused" if fit is not None and fit.verdict == "does not fit" else "started"
    return Prediction(figures=figures, verdict=verdict, message=str(fit.message) if fit else "")


def score_rows(rows: Sequence[dict[str, Any]], band: str | None = None) -> list[Scored]:
    from vramdesk.cli_common import CliError
    from vramdesk.core.architecture import ConfigError
    from vramdesk.core.dtype_names import FormatError
    from vramdesk.core.estimate import EstimateError
    from vramdesk.services.resolve import ResolveError

    out: list[Scored] = []
    for row in rows:
        if row.get("engine") != "vllm":
            continue
        if row.get("not_expressible") or not row.get("vramdesk_model"):
            out.append(Scored(row, why_not=str(row.get("not_expressible") or "no vramdesk model")))
            continue
        try:
            out.append(Scored(row, prediction=predict(row, band)))
        except (CliError, ConfigError, EstimateError, FormatError, ResolveError, ValueError) as err:
            out.append(Scored(row, why_not=f"vramdesk: {err}"))
    return out


def figure_stats(scored: Sequence[Scored]) -> list[FigureStats]:
    stats = []
    for name, key, unit in FIGURES:
        fs = FigureStats(name, unit)
        for s in scored:
            if s.prediction is None:
                continue
            logged, pred = s.row["logged"].get(key), s.prediction.figures.get(key)
            if logged is None or pred is None:
                continue
            fs.pairs.append((s.row["id"], float(logged), float(pred)))
        stats.append(fs)
    return stats


def _p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def _num(v: float, unit: str) -> str:
    return f"{v:,.0f}" if unit == "tokens" else f"{v:.2f}"


def print_report(scored: Sequence[Scored], title: str, out: Any = sys.stdout) -> None:
    used = [s for s in scored if s.prediction is not None]
    print(f"\n== {title}: {len(used)} rows scored, {len(scored) - len(used)} not expressible", file=out)
    print(f"{'figure':<22} {'rows':>4} {'median|e|%':>10} {'p90|e|%':>8} {'median e%':>9}  worst rows", file=out)
    for fs in figure_stats(used):
        errs = fs.errors()
        if not errs:
            print(f"{fs.name:<22} {len(fs.pairs):>4} {'-':>10} {'-':>8} {'-':>9}", file=out)
            continue
        absolute = [abs(e[3]) for e in errs]
        worst = sorted(errs, key=lambda e: -abs(e[3]))[:WORST]
        worst_text = "; ".join(f"{i} {_num(lg, fs.unit)}->{_num(pr, fs.unit)} ({e:+.0f}%)" for i, lg, pr, e in worst)
        print(
            f"{fs.name:<22} {len(errs):>4} {statistics.median(absolute):>10.1f} {_p90(absolute):>8.1f} "
            f"{statistics.median(e[3] for e in errs):>+9.1f}  {worst_text}",
            file=out,
        )
        skipped = [(i, lg, pr) for i, lg, pr in fs.pairs if lg <= 0]
        for i, lg, pr in skipped:
            print(f"{'':<22}      logged <= 0, not in %: {i} {_num(lg, fs.unit)} -> {_num(pr, fs.unit)}", file=out)
    outcome_rows = [s for s in used if s.row.get("outcome") in ("started", "refused")]
    agree = [s for s in outcome_rows if s.prediction is not None and s.prediction.verdict == s.row["outcome"]]
    print(f"verdict agrees with the outcome: {len(agree)} of {len(outcome_rows)}", file=out)
    for s in outcome_rows:
        if s not in agree and s.prediction is not None:
            print(
                f"  {s.row['id']}: logged {s.row['outcome']}, vramdesk {s.prediction.verdict} ({s.prediction.message})",
                file=out,
            )


def print_not_expressible(scored: Sequence[Scored], out: Any = sys.stdout) -> None:
    rows = [s for s in scored if s.prediction is None]
    print(f"\n== rows vramdesk cannot express: {len(rows)}", file=out)
    for s in rows:
        print(f"  {s.row['id']}: {s.why_not}", file=out)


def print_sglang(rows: Sequence[dict[str, Any]], out: Any = sys.stdout) -> None:
    print(f"\n== SGLang rows (validated and listed; scored by score_sglang.py): {len(rows)}", file=out)
    for r in rows:
        lg, st = r["logged"], r["settings"]
        kv = lg.get("kv_gib")
        if kv is None and lg.get("k_gib") is not None:
            kv = lg["k_gib"] + (lg.get("v_gib") or 0)
        print(
            f"  {r['id']}: {r['model']} on {r['gpu']['count']}x {r['gpu']['type']}, tp {st.get('tp')}, "
            f"mem_fraction_static {st.get('mem_fraction_static')}, weights {lg.get('weights_gib')} GiB, "
            f"KV {kv} GiB / {lg.get('kv_tokens')} tokens, {r['outcome']}",
            file=out,
        )


def print_detail(scored: Sequence[Scored], out: Any = sys.stdout) -> None:
    """One line per scored row: logged -> predicted for every figure both have."""
    print("\n== per row (logged -> vramdesk)", file=out)
    for s in scored:
        if s.prediction is None:
            continue
        parts = []
        for _name, key, unit in FIGURES:
            lg, pr = s.row["logged"].get(key), s.prediction.figures.get(key)
            if lg is not None and pr is not None:
                parts.append(f"{key.removesuffix('_gib')} {_num(float(lg), unit)}->{_num(pr, unit)}")
        verdict = f"{s.row['outcome']}/{s.prediction.verdict}"
        print(f"  {s.row['id']} [{verdict}]: " + ", ".join(parts), file=out)


def kv_by_source(scored: Sequence[Scored], out: Any = sys.stdout) -> None:
    """Median |error| of the available KV per source repository (where the errors sit)."""
    groups: dict[str, list[float]] = {}
    for s in scored:
        lg = s.row["logged"].get("available_kv_gib")
        pr = s.prediction.figures.get("available_kv_gib") if s.prediction else None
        if lg is None or pr is None or lg <= 0:
            continue
        key = s.row["source"].get("repo") or s.row["source"]["url"].split("/")[2]
        groups.setdefault(key, []).append(abs(pr - lg) / lg * 100)
    text = ", ".join(f"{k} {statistics.median(v):.1f}% ({len(v)})" for k, v in sorted(groups.items()))
    print(f"available KV median |e| by source: {text}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--held-out", action="store_true", help="score the held-out rows only")
    ap.add_argument("--limit", type=int, default=None, help="score the first N rows only")
    ap.add_argument("--id", action="append", default=[], help="score these row ids only")
    ap.add_argument("--table", type=Path, default=VLLM_TABLE)
    ap.add_argument("--detail", action="store_true", help="also print every row's logged and predicted figures")
    ap.add_argument(
        "--same-version",
        metavar="BAND",
        default=None,
        help="score every row at this vramdesk vLLM version band (0.7, 0.8, 0.10, 0.17, 0.19) instead of its own",
    )
    args = ap.parse_args(argv)
    rows = load_rows(args.table)
    if args.id:
        rows = [r for r in rows if r["id"] in set(args.id)]
    if args.held_out:
        rows = [r for r in rows if held_out(r["id"])]
    if args.limit is not None:
        rows = rows[: args.limit]
    scored = score_rows(rows, args.same_version)
    print_report(scored, "all rows")
    kv_by_source(scored)
    held = [s for s in scored if held_out(s.row["id"])]
    if held and len(held) < len(scored):
        print_report(held, "held-out rows")
    print_not_expressible(scored)
    if args.detail:
        print_detail(scored)
    if SGLANG_TABLE.is_file() and not args.id and args.table == VLLM_TABLE:
        print_sglang(load_rows(SGLANG_TABLE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
