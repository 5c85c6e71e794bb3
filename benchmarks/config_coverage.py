"""Coverage benchmark: how much of a corpus of real, published ``config.json`` files the estimator reads.

The corpus is ``benchmarks/data/config_corpus/``: one file per Hugging Face model (``<org>__<name>.json``), each the
published file's bytes as a public copy stores them, listed in ``INDEX.csv`` with the model's repo id, its
``model_type``, where the copy was found (repository, path, commit), whether its SHA-256 equals the Hub file's, the
published parameter total where one can be cited (and that figure's source) and the file's split.

Every file gets ``model_facts(config, repo_id)`` and one estimate: the default scenario of
``vramdesk.core.defaults`` pointed at the model (transformers, batch 1, the model's context up to 4,096 tokens, 512
generated, one RTX 4090). Each file is classed as

- **exact**: a known family, read without the generic-decoder warning;
- **approximate**: estimated through the generic Llama-style path (its warning says so);
- **refused**: ``ConfigError`` / ``EstimateError`` with its one-line message;
- **crash**: any other exception (the traceback's last line).

Printed per split: the counts and shares of each class, the refused model types with their messages (grouped),
and, where a published total is known, the estimated parameter count against it (median and p90 of the absolute
error, the share within 0.5 %, the worst ten). Exit status 1 only when something crashed.

The split was fixed before any estimate was run: a file is **held-out** when the first byte of the SHA-256 of its
repo id (UTF-8) is below 86 (about a third), else **dev** (``split_of``). The held-out third is the one the
coverage target is judged on; nothing in the estimator may be tuned on it.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import statistics
import sys
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import GENERIC_DECODER
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.gpu import GpuSpec
from vramdesk.core.scenario import ModelRef
from vramdesk.services.catalog import default_catalog

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "data" / "config_corpus"
INDEX = CORPUS / "INDEX.csv"
COLUMNS = (
    "file",
    "repo_id",
    "model_type",
    "source_repo",
    "source_path",
    "source_commit",
    "hub_sha256_match",
    "published_total",
    "published_source",
    "published_counts",
    "split",
)
#: what a published total counts, as its source says (decided from the source, before comparing): every tensor
#: the checkpoint stores, or all of them but the MTP layers (keras-hub's Qwen3.5 presets)
COUNTS = ("checkpoint", "without_mtp")
CLASSES = ("exact", "approximate", "refused", "crash")
#: the relative error a parameter total may have against the published figure
TOLERANCE = 0.005
#: held-out when the first byte of sha256(repo id) is below this (86 / 256 = about a third)
HELD_OUT_BELOW = 86


def split_of(repo_id: str) -> str:
    """The file's split, from its repo id alone (fixed before any estimate was run)."""
    return "held-out" if hashlib.sha256(repo_id.encode()).digest()[0] < HELD_OUT_BELOW else "dev"


@dataclass(frozen=True)
class Outcome:
    kind: str
    #: the refusal's or the crash's one line; empty when estimated
    message: str = ""
    #: the parameters the checkpoint stores, as estimated (None when refused)
    params: int | None = None
    #: of which the MTP layers
    mtp: int = 0


@dataclass(frozen=True)
class Row:
    file: str
    repo_id: str
    model_type: str
    split: str
    published: int | None
    outcome: Outcome
    #: what the published total counts (:data:`COUNTS`)
    counts: str = "checkpoint"

    @property
    def estimated(self) -> int | None:
        """The estimated total on the published figure's basis."""
        p = self.outcome.params
        if p is None:
            return None
        return p - self.outcome.mtp if self.counts == "without_mtp" else p

    @property
    def error(self) -> float | None:
        """Relative error of the estimated parameter total against the published one."""
        if self.published is None or self.estimated is None:
            return None
        return (self.estimated - self.published) / self.published


def _one_line(text: str) -> str:
    return " ".join(text.split())


def classify(config: Mapping[str, Any], repo_id: str, gpu: GpuSpec | None = None) -> Outcome:
    """One config: its facts and the default estimate, classed as exact / approximate / refused / crash."""
    try:
        facts = model_facts(config, repo_id)
        scenario = DEFAULT_SCENARIO.model_copy(update={"model": ModelRef(id=repo_id)})
        estimate(scenario, facts, gpu)
    except (ConfigError, EstimateError) as err:
        return Outcome("refused", _one_line(str(err)))
    except Exception:
        return Outcome("crash", _one_line(traceback.format_exc().strip().splitlines()[-1]))
    generic = any(getattr(w, "id", "") == GENERIC_DECODER.id for w in facts.arch.warnings)
    return Outcome("approximate" if generic else "exact", params=facts.counts.checkpoint, mtp=facts.counts.mtp)


def read_index(path: Path = INDEX) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise SystemExit(f"{path}: the columns must be {', '.join(COLUMNS)}")
        return list(reader)


def run(entries: Iterable[dict[str, str]], corpus: Path = CORPUS) -> list[Row]:
    gpu = default_catalog().gpu(DEFAULT_SCENARIO.hardware.gpu or "RTX 4090")
    rows = []
    for e in entries:
        config = json.loads((corpus / e["file"]).read_text(encoding="utf-8"))
        published = int(e["published_total"]) if e["published_total"] else None
        outcome = classify(config, e["repo_id"], gpu)
        counts = e["published_counts"] or "checkpoint"
        if counts not in COUNTS:
            raise SystemExit(f"{e['file']}: published_counts must be one of {', '.join(COUNTS)}, not {counts!r}")
        rows.append(Row(e["file"], e["repo_id"], e["model_type"], e["split"], published, outcome, counts))
    return rows


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(title: str, rows: list[Row]) -> list[str]:
    """The lines printed for one split."""
    n = len(rows)
    out = [f"== {title}: {n} configs, {len({r.model_type for r in rows})} model types"]
    counts = Counter(r.outcome.kind for r in rows)
    for kind in CLASSES:
        share = counts[kind] / n if n else 0.0
        out.append(f"  {kind:<12}{counts[kind]:>5}  {share:7.1%}")
    estimated = counts["exact"] + counts["approximate"]
    out.append(f"  {'estimated':<12}{estimated:>5}  {estimated / n if n else 0.0:7.1%}")
    by_message: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in rows:
        if r.outcome.kind in {"refused", "crash"}:
            by_message[(r.outcome.kind, r.outcome.message)].append(r.model_type)
    if by_message:
        out.append("  refused / crashed, by message:")
        for (kind, message), types in sorted(by_message.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            kinds = ", ".join(f"{t} x{c}" if c > 1 else t for t, c in sorted(Counter(types).items()))
            out.append(f"    [{kind}] {kinds}: {message}")
    approx = Counter(r.model_type for r in rows if r.outcome.kind == "approximate")
    if approx:
        out.append("  approximate model types: " + ", ".join(f"{t} x{c}" for t, c in sorted(approx.items())))
    checked = [r for r in rows if r.error is not None]
    if checked:
        errors = [abs(r.error) for r in checked if r.error is not None]
        within = sum(e <= TOLERANCE for e in errors)
        out.append(
            f"  parameters vs published ({len(checked)} with a figure): median |error| "
            f"{statistics.median(errors):.3%}, p90 {_percentile(errors, 0.9):.3%}, within {TOLERANCE:.1%}: "
            f"{within}/{len(checked)} ({within / len(checked):.1%})"
        )
        worst = sorted(checked, key=lambda r: -abs(r.error or 0.0))[:10]
        for r in worst:
            basis = "" if r.counts == "checkpoint" else f" ({r.counts})"
            out.append(f"    {r.error or 0.0:+8.3%}  {r.repo_id}: {r.estimated:,} vs {r.published:,}{basis}")
    unestimated = sum(1 for r in rows if r.published is not None and r.outcome.params is None)
    if unestimated:
        out.append(f"  ({unestimated} with a published figure were not estimated)")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--split", choices=("dev", "held-out", "all"), default="all", help="which split to print")
    args = parser.parse_args(argv)
    rows = run(read_index())
    splits = ("dev", "held-out") if args.split == "all" else (args.split,)
    for split in splits:
        print("\n".join(report(split, [r for r in rows if r.split == split])))
    if args.split == "all":
        print("\n".join(report("all", rows)))
    crashes = [r for r in rows if r.outcome.kind == "crash"]
    for r in crashes:
        print(f"CRASH {r.file}: {r.outcome.message}", file=sys.stderr)
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
