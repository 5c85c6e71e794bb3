"""Family benchmark (issue 24): every causal-LM and multimodal model type of transformers, counted by vramdesk
against what transformers itself builds from the same config.

The oracle is ``benchmarks/data/transformers_families.jsonl``, written by ``transformers_families_gen.py`` in a
Python with torch and transformers: per model type, the config class's own defaults as ``save_pretrained`` writes
them and the parameter count of the model transformers builds from it on the meta device. These are not published
checkpoints (``config_coverage.py`` scores those); they are the reference configs transformers ships for each
architecture, and the count is the real code's, not a formula's. vramdesk reads each config with ``model_facts`` and
runs the default estimate (``config_coverage.classify``); its text + vision parameters (transformers builds no MTP
layers) are compared with the oracle's total. Each in-scope type is classed as

- **exact**: a family vramdesk knows, within 0.5 % of transformers' count;
- **wrong**: a family vramdesk knows, further off;
- **approximate**: the generic decoder path, within 0.5 %; **approximate, wrong**: the generic path, further off;
- **refused** (one line) or **crash**.

Out of scope (listed with the reason in :data:`OUT_OF_SCOPE`): encoders and encoder-decoders with a causal-LM head,
speech and music models, captioning / OCR / robotics models that are not chat LLMs. Types whose defaults transformers
itself cannot build are counted apart. Exit status 1 when something crashed.

    python benchmarks/transformers_families.py [--all]     # --all: every row, not only the misses
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from config_coverage import classify

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.services.catalog import default_catalog

ORACLE = Path(__file__).resolve().parent / "data" / "transformers_families.jsonl"
TOLERANCE = 0.005


def _names(words: str) -> list[str]:
    return words.split()


_ENCODER = "an encoder (BERT-style) with a causal-LM head, not a decoder LLM"
_SEQ2SEQ = "the decoder half of an encoder-decoder model"
_SPEECH = "a speech / audio / music model"
_NOT_LLM = "a captioning, OCR, protein or robotics model, not a chat LLM"
#: model types outside issue 24's scope ("every decoder-only and multimodal LLM family"), with the reason
OUT_OF_SCOPE: dict[str, str] = {
    **dict.fromkeys(
        _names(
            "bert bert-generation big_bird camembert data2vec-text electra ernie megatron-bert rembert "
            "roberta roberta-prelayernorm roc_bert roformer xlm xlm-roberta xlm-roberta-xl xmod xlnet "
            "reformer"
        ),
        _ENCODER,
    ),
    **dict.fromkeys(
        _names(
            "bart bigbird_pegasus blenderbot blenderbot-small marian mbart mvp pegasus plbart prophetnet "
            "trocr t5gemma2 udop vision-encoder-decoder"
        ),
        _SEQ2SEQ,
    ),
    **dict.fromkeys(
        ("moshi", "musicgen", "musicgen_melody", "whisper", "moss_transcribe_diarize"),
        _SPEECH,
    ),
    **dict.fromkeys(
        _names(
            "blip blip-2 git instructblip instructblipvideo kosmos-2 kosmos-2.5 pix2struct florence2 "
            "pp_formulanet pp_chart2table got_ocr2 pi0 evolla unlimited_ocr deepseek_ocr2 glm_ocr "
            "paddleocr_vl lighton_ocr minicpm_ocr"
        ),
        _NOT_LLM,
    ),
}
CLASSES = ("exact", "wrong", "approximate", "approximate, wrong", "refused", "crash")


@dataclass(frozen=True)
class Row:
    model_type: str
    oracle: int
    kind: str
    estimated: int | None = None
    message: str = ""

    @property
    def error(self) -> float | None:
        return None if self.estimated is None else (self.estimated - self.oracle) / self.oracle


def load(path: Path = ORACLE) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def score(records: list[dict[str, Any]]) -> list[Row]:
    """One row per in-scope model type that transformers builds from its defaults."""
    gpu = default_catalog().gpu(DEFAULT_SCENARIO.hardware.gpu or "RTX 4090")
    rows = []
    for rec in records:
        if rec["model_type"] in OUT_OF_SCOPE or "total" not in rec:
            continue
        out = classify(rec["config"], f"transformers-defaults/{rec['model_type']}", gpu)
        if out.params is None:
            rows.append(Row(rec["model_type"], rec["total"], out.kind, message=out.message))
            continue
        estimated = out.params - out.mtp  # (transformers builds no MTP layers)
        ok = abs(estimated - rec["total"]) <= TOLERANCE * rec["total"]
        kind = out.kind if ok else f"{out.kind}, wrong" if out.kind == "approximate" else "wrong"
        rows.append(Row(rec["model_type"], rec["total"], kind, estimated))
    return rows


def report(records: list[dict[str, Any]], rows: list[Row], every: bool = False) -> list[str]:
    version = next((r.get("transformers") for r in records), "?")
    unbuilt = [r["model_type"] for r in records if "total" not in r and r["model_type"] not in OUT_OF_SCOPE]
    out = [
        f"transformers {version}: {len(records)} causal-LM / image-text-to-text model types, "
        f"{sum(r['model_type'] in OUT_OF_SCOPE for r in records)} out of scope, {len(unbuilt)} that transformers "
        f"cannot build from its own defaults ({', '.join(unbuilt)}); {len(rows)} scored"
    ]
    counts = Counter(r.kind for r in rows)
    for kind in CLASSES:
        out.append(f"  {kind:<20}{counts[kind]:>5}  {counts[kind] / max(1, len(rows)):7.1%}")
    good = counts["exact"] + counts["approximate"]
    out.append(f"  {'within 0.5 %':<20}{good:>5}  {good / max(1, len(rows)):7.1%}")
    for r in sorted(rows, key=lambda r: (CLASSES.index(r.kind), -abs(r.error or 0.0), r.model_type)):
        if not every and r.kind in ("exact", "approximate"):
            continue
        if r.estimated is None:
            out.append(f"    [{r.kind}] {r.model_type}: {r.message}")
        else:
            out.append(f"    [{r.kind}] {r.model_type}: {r.error or 0.0:+.2%} ({r.estimated:,} vs {r.oracle:,})")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="print every row, not only the misses")
    ns = ap.parse_args(argv)
    records = load()
    rows = score(records)
    print("\n".join(report(records, rows, ns.all)))
    return 1 if any(r.kind == "crash" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
