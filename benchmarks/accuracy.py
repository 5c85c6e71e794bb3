"""Accuracy benchmark: the estimator against published, measured peak memory.

Reads ``benchmarks/data/measured.yaml`` (a snapshot of ``shared/calibration/measured.yaml``), estimates every
inference row the estimator supports, compares at the level the row measured (max_memory_allocated, reserved,
nvidia-smi, or a vLLM profiling component) in GiB, and prints the median and 90th-percentile absolute error
by source and by weight format. Rows it cannot use are listed with the reason.

Exit status 1 when a group's median or p90 got worse than the committed baseline
(``benchmarks/accuracy_baseline.json``) by more than the tolerance; ``--update-baseline`` rewrites it.

The calibration set is for checking: nothing in the estimator is fitted to these rows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vramdesk.core.estimate import EstimateError, ModelFacts, estimate, model_facts
from vramdesk.core.gpu import GIB, GpuSpec
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import Catalog, default_catalog

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
BASELINE = HERE / "accuracy_baseline.json"
#: percentage points a group's median / p90 may worsen before the benchmark fails
TOLERANCE_PP = 0.5


@dataclass
class Row:
    id: str
    source: str
    weights: str
    level: str
    measured_gib: float
    estimate_gib: float
    grade: str

    @property
    def error(self) -> float:
        return (self.estimate_gib - self.measured_gib) / self.measured_gib


def _config_from_models_yaml(entry: dict[str, Any]) -> dict[str, Any]:
    """A config.json dict from the architecture facts in models.yaml (for base models not in the catalog)."""
    arch = str(entry.get("architecture", ""))
    cfg: dict[str, Any] = {
        "hidden_size": entry["hidden_size"],
        "num_hidden_layers": entry["num_hidden_layers"],
        "num_attention_heads": entry["num_attention_heads"],
        "num_key_value_heads": entry.get("num_key_value_heads", entry["num_attention_heads"]),
        "intermediate_size": entry["intermediate_size"],
        "vocab_size": entry["vocab_size"],
        "tie_word_embeddings": bool(entry.get("tie_word_embeddings", False)),
        "max_position_embeddings": entry.get("max_position_embeddings"),
        "torch_dtype": "bfloat16",
    }
    if "head_dim" in entry and entry["head_dim"] * entry["num_attention_heads"] != entry["hidden_size"]:
        cfg["head_dim"] = entry["head_dim"]
    if arch.startswith("GPTBigCode"):
        cfg.update(
            model_type="gpt_bigcode",
            n_embd=entry["hidden_size"],
            n_layer=entry["num_hidden_layers"],
            n_head=entry["num_attention_heads"],
            n_inner=entry["intermediate_size"],
            n_positions=entry.get("max_position_embeddings", 8192),
            multi_query=entry.get("num_key_value_heads") == 1,
        )
    elif arch.startswith("Qwen2"):
        cfg.update(model_type="qwen2", attention_bias=bool(entry.get("attention_bias", True)))
    elif "Llama" in arch or "LLaMAMLP" in arch:
        cfg.update(model_type="llama", attention_bias=bool(entry.get("attention_bias", False)))
    else:
        raise KeyError(f"no config mapping for architecture '{arch}'")
    return cfg


class Models:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.yaml: dict[str, Any] = yaml.safe_load((DATA / "models.yaml").read_text(encoding="utf-8"))
        self.cache: dict[str, ModelFacts] = {}

    def facts(self, model_id: str) -> ModelFacts:
        if model_id in self.cache:
            return self.cache[model_id]
        local = DATA / "configs" / (model_id.replace("/", "__") + ".json")
        if self.catalog.find(model_id) is not None:
            facts = self.catalog.facts(model_id)
        elif local.is_file():
            facts = model_facts(json.loads(local.read_text(encoding="utf-8")), model_id)
        elif model_id in self.yaml:
            facts = model_facts(_config_from_models_yaml(self.yaml[model_id]), model_id)
        else:
            raise KeyError(f"no architecture for {model_id}")
        self.cache[model_id] = facts
        return facts


def _weights(row: dict[str, Any]) -> str:
    w = str(row["weights"]).lower()
    if w.startswith("bf16"):
        return "bf16"
    if w.startswith("fp16"):
        return "fp16"
    if w.startswith("fp8"):
        return "fp8-block" if "block" in w else "fp8"
    if w.startswith("gptq-int8"):
        return "gptq-int8"
    if w.startswith("gptq-int4"):
        return "gptq-int4"
    if w.startswith("awq"):
        return "awq-int4"
    if "int8" in w:
        return "int8"
    if "4-bit" in w or "nf4" in w:
        return "fp4" if "fp4" in w else "nf4"
    raise KeyError(f"weights '{row['weights']}'")


def _gpu(text: str, catalog: Catalog) -> GpuSpec:
    t = text.lower()
    for key, name in (
        ("h20", "H20"),
        ("a100", "A100 80GB SXM"),
        ("l40s", "L40S"),
        ("h100", "H100 SXM"),
        ("80gb-class", "A100 80GB SXM"),
    ):
        if key in t:
            return catalog.gpu(name)
    raise KeyError(f"GPU '{text}'")


def _level(method: str) -> str:
    m = method.lower()
    if "reserved" in m:
        return "reserved"
    if "nvidia-smi" in m or "nvml" in m:
        return "device"
    return "allocated"


def _estimate_row(row: dict[str, Any], models: Models) -> list[Row]:
    facts = models.facts(row["base_model"])
    catalog = models.catalog
    try:
        gpu = _gpu(str(row["hardware"]["gpu"]), catalog)
    except KeyError:
        if not row["task"].startswith("serving-load (weights)"):
            raise
        gpu = catalog.gpu("A100 80GB SXM")  # weights per worker do not depend on the GPU
    weights = _weights(row)
    measured = row["measured"]
    if row["task"] == "inference-generate":
        if row.get("input_len") is None:
            raise LookupError("prompt length not stated")
        attention = str(row.get("attention") or "").lower()
        work = {
            "kind": "inference",
            "engine": "transformers",
            "batch": row["batch_size"],
            "input_len": row["input_len"],
            "output_len": row["output_len"],
            "attention": "eager" if attention.startswith("eager") else "flash" if "flash" in attention else "sdpa",
        }
        scenario = Scenario.model_validate(
            {"model": {"id": facts.model_id}, "weights": weights, "workload": work, "hardware": {"gpu": gpu.name}}
        )
        est = estimate(scenario, facts, gpu)
        level = _level(str(measured.get("method", "")))
        value = {
            "allocated": est.peak_allocated_bytes,
            "reserved": est.peak_reserved_bytes,
            "device": est.device_bytes,
        }[level]
        return [
            Row(row["id"], row["source_id"], weights, level, float(measured["value_gib"]), value / GIB, row["grade"])
        ]
    if row["task"].startswith("serving-load"):
        settings = row.get("settings") or {}
        tp = int(settings.get("tensor_parallel_size") or 1)
        max_len = int(settings.get("max_model_len") or 8192)
        work = {
            "kind": "inference",
            "engine": "vllm",
            "batch": 1,
            "input_len": max_len,
            "output_len": 0,
            "vllm": {
                "gpu_memory_utilization": 0.9,
                "max_num_seqs": int(settings.get("max_num_seqs") or 256),
                "max_num_batched_tokens": 8192,
            },
        }
        scenario = Scenario.model_validate(
            {
                "model": {"id": facts.model_id},
                "weights": weights,
                "workload": work,
                "hardware": {"gpu": gpu.name, "gpu_count": tp},
                "parallelism": {"tp": tp},
            }
        )
        est = estimate(scenario, facts, gpu)
        comps = {c.name: c.bytes for c in est.components}
        parts = measured.get("components_gib") or {"model_weights": measured["value_gib"]}
        out = []
        for key, ours in (("model_weights", "weights"), ("pytorch_activation_peak", "profile-run activations")):
            if key in parts and ours in comps:
                out.append(
                    Row(
                        f"{row['id']}:{key}",
                        row["source_id"],
                        weights,
                        f"vllm {key}",
                        float(parts[key]),
                        comps[ours] / GIB,
                        row["grade"],
                    )
                )
        tokens = measured.get("kv_cache_tokens")
        if tokens and est.engine.kv_capacity_tokens:
            # tokens, not GiB: the row's unit is "tokens of KV the pool holds"
            out.append(
                Row(
                    f"{row['id']}:kv_cache_tokens",
                    row["source_id"],
                    weights,
                    "vllm kv_cache_tokens",
                    float(tokens),
                    float(est.engine.kv_capacity_tokens),
                    row["grade"],
                )
            )
        if not out:
            raise LookupError("no comparable vLLM component")
        return out
    raise LookupError(f"task '{row['task']}' is not an inference estimate yet (fine-tuning lands separately)")


def run_heldout(catalog: Catalog | None = None) -> list[Row]:
    """The held-out set (benchmarks/data/heldout_qwen25.yaml): published measurements never used to set anything."""
    data = yaml.safe_load((DATA / "heldout_qwen25.yaml").read_text(encoding="utf-8"))
    models = Models(catalog or default_catalog())
    gpu = models.catalog.gpu(data["gpu"])
    rows = []
    for item in data["rows"]:
        facts = models.facts(item["model"])
        work = {
            "kind": "inference",
            "engine": "transformers",
            "attention": "flash",
            "batch": 1,
            "input_len": item["input_len"],
            "output_len": data["output_len"],
        }
        scenario = Scenario.model_validate(
            {
                "model": {"id": facts.model_id},
                "weights": item["weights"],
                "workload": work,
                "hardware": {"gpu": gpu.name},
            }
        )
        est = estimate(scenario, facts, gpu)
        rid = f"qwen25-{item['model'].split('/')[-1]}-{item['weights']}-in{item['input_len']}"
        rows.append(
            Row(
                rid,
                "held-out Qwen2.5",
                item["weights"],
                "allocated",
                float(item["measured_gib"]),
                est.peak_allocated_bytes / GIB,
                "A",
            )
        )
    return rows


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summarize(rows: list[Row], key: str) -> dict[str, dict[str, float]]:
    groups: dict[str, list[float]] = {}
    for r in rows:
        groups.setdefault(getattr(r, key), []).append(abs(r.error))
    groups["all"] = [abs(r.error) for r in rows]
    return {
        g: {"n": len(v), "median": round(100 * statistics.median(v), 2), "p90": round(100 * _pct(v, 0.9), 2)}
        for g, v in sorted(groups.items())
    }


def run(catalog: Catalog | None = None) -> tuple[list[Row], list[tuple[str, str]]]:
    data = yaml.safe_load((DATA / "measured.yaml").read_text(encoding="utf-8"))
    models = Models(catalog or default_catalog())
    rows: list[Row] = []
    skipped: list[tuple[str, str]] = []
    for item in data:
        task = str(item["task"])
        if not (task.startswith("inference") or task.startswith("serving")):
            skipped.append((item["id"], f"{task}: fine-tuning estimates are a separate issue"))
            continue
        try:
            rows.extend(_estimate_row(item, models))
        except (LookupError, EstimateError) as err:
            skipped.append((item["id"], str(err).strip("'\"")))
    return rows, skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-baseline", action="store_true")
    parser.add_argument("--rows", action="store_true", help="print every row")
    args = parser.parse_args(argv)
    rows, skipped = run()
    heldout = run_heldout()
    if args.rows:
        for r in rows + heldout:
            print(
                f"{r.id:55s} {r.level:28s} measured {r.measured_gib:8.3f}  estimate {r.estimate_gib:8.3f}  "
                f"{100 * r.error:+6.1f}%"
            )
    by_source = summarize(rows, "source")
    by_format = summarize(rows, "weights")
    print(f"accuracy: {len(rows)} comparisons, {len(skipped)} rows skipped")
    for title, table in (("by source", by_source), ("by weight format", by_format)):
        print(f"\n{title}:  group  n  median|err|%  p90|err|%")
        for g, s in table.items():
            print(f"  {g:24s} {s['n']:4d} {s['median']:8.2f} {s['p90']:8.2f}")
    held_src = summarize(heldout, "source")
    held_fmt = summarize(heldout, "weights")
    print(f"\nheld-out set ({len(heldout)} published measurements outside the calibration set):")
    for g, st in {**held_fmt, "all": held_src["all"]}.items():
        print(f"  {g:24s} {st['n']:4d} {st['median']:8.2f} {st['p90']:8.2f}")
    signed = sorted(r.error for r in heldout)
    print(
        f"  signed error: min {100 * signed[0]:+.1f}%, median {100 * statistics.median(signed):+.1f}%, "
        f"max {100 * signed[-1]:+.1f}%"
    )
    inference_skips = [s for s in skipped if "fine-tuning" not in s[1]]
    print(f"\nskipped inference rows ({len(inference_skips)}):")
    for rid, why in inference_skips:
        print(f"  {rid}: {why}")
    print(f"skipped fine-tuning rows: {len(skipped) - len(inference_skips)} (estimated once fine-tuning lands)")
    current = {"by_source": by_source, "by_weights": by_format, "heldout": {**held_fmt, "all": held_src["all"]}}
    if args.update_baseline or not BASELINE.exists():
        BASELINE.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
        print(f"\nbaseline written to {BASELINE.name}")
        return 0
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    regressions = []
    for section in ("by_source", "by_weights", "heldout"):
        for group, old in baseline.get(section, {}).items():
            new = current[section].get(group)
            if new is None:
                regressions.append(f"{section}/{group}: no longer estimated")
                continue
            for stat in ("median", "p90"):
                if new[stat] > old[stat] + TOLERANCE_PP:
                    regressions.append(f"{section}/{group} {stat}: {old[stat]:.2f}% -> {new[stat]:.2f}%")
    if regressions:
        print("\nREGRESSION against the committed baseline:")
        for line in regressions:
            print(f"  {line}")
        return 1
    print("\nno regression against the committed baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
