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
import math
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from vramdesk.core.engines.vllm_versions import band_of
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.facts import ModelFacts, model_facts
from vramdesk.core.gpu import GIB, GpuSpec
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import Catalog, default_catalog

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
BASELINE = HERE / "accuracy_baseline.json"
#: what the app shows beside each memory level: the estimate against measured runs it was not fitted to
SHIPPED = HERE.parent / "resources" / "accuracy.json"
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
    elif arch.startswith("QWenLMHeadModel"):
        # Qwen (v1): its own config.json fields (model_type "qwen", doubled intermediate_size, kv_channels)
        cfg.update(model_type="qwen", kv_channels=entry["head_dim"], no_bias=True)
        del cfg["torch_dtype"]
    elif arch.startswith("ChatGLM"):
        # ChatGLM3 runs remote code that vramdesk never executes; for memory it is a decoder stack with biased
        # q/k/v (fused query_key_value), an unbiased output projection and a gated MLP: the Qwen2 layout with the
        # same tensor sizes
        cfg.update(model_type="qwen2", use_sliding_window=False)
    elif arch.startswith("BaichuanForCausalLM"):
        cfg.update(model_type="llama", attention_bias=False)
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
        ("rtx 4090", "RTX 4090"),
        ("rtx a6000", "RTX A6000"),
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
                # the row's own vLLM release (its band of vramdesk.core.engines.vllm_versions), as score_vllm.py does
                "version": band_of(str(row.get("framework_version") or "0.19")),
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
    raise LookupError(f"task '{row['task']}' is not estimated")


#: S05 (ms-swift) trains on cls-fudan-news-zh one sample per batch, unpacked, cut at max_length; SOURCES.md gives
#: the dataset's token statistics (Qwen tokenizer): mean 3234, sd 2548, min 91, max 19548
S05_LENGTHS = (3234.0, 2548.0)


def truncated_mean_length(max_len: int, mean: float, sd: float) -> int:
    """Mean of min(X, max_len) for X lognormal with the given mean and sd: the mean batch length of a dataset cut
    at max_len (E[X; X < L] + L P(X >= L), in closed form)."""
    s2 = math.log(1 + (sd / mean) ** 2)
    s, mu = math.sqrt(s2), math.log(mean) - s2 / 2

    def phi(z: float) -> float:
        return 0.5 * (1 + math.erf(z / math.sqrt(2)))

    ln = math.log(max_len)
    below = math.exp(mu + s2 / 2) * phi((ln - mu - s2) / s)
    return round(below + max_len * (1 - phi((ln - mu) / s)))


def _training_scenario(row: dict[str, Any], facts: ModelFacts, gpu: GpuSpec) -> Scenario:
    t = row["training"]
    why = []
    if t.get("torch_compile"):
        why.append("torch.compile changes activation memory")
    if t.get("optimizer_in_backward"):
        why.append("optimizer-in-backward is not modelled")
    if t.get("packed") is False:
        why.append("unpacked batches of unknown length")
    if not t.get("seq_len"):
        why.append("sequence length not stated (dynamic padding)")
    if int(row["hardware"].get("num_gpus") or 1) > 1:
        why.append("multi-GPU row (summed or distributed figures)")
    if why:
        raise LookupError("; ".join(why))
    method_text = str(t["method"]).lower()
    method = "qlora" if "qlora" in method_text else ("lora" if "lora" in method_text else "full")
    base = "auto"
    weights_text = str(row.get("weights", "")).lower()
    if "quantized base" in method_text:
        if weights_text.startswith("gptq-int4"):
            base = "gptq-int4"
        elif weights_text.startswith("gptq-int8"):
            base = "gptq-int8"
        elif "bnb" in weights_text or "nf4" in weights_text:
            method, base = "qlora", "nf4-dq"
        else:
            raise LookupError(f"quantised base '{row.get('weights')}' not mapped")
    prec_text = str(t.get("precision", "bf16")).lower()
    precision = "fp32" if prec_text.startswith("fp32") else "amp-bf16" if "amp" in prec_text else "bf16"
    opt_text = str(t.get("optimizer", "adamw")).lower()
    optimizer = (
        "adamw-8bit"
        if "8bit" in opt_text.replace("-", "").replace(" ", "")
        else ("adamw-fused" if "fused" in opt_text else "adamw")
    )
    targets: tuple[str, ...] = ("all-linear",)
    raw = t.get("lora_targets")
    if isinstance(raw, list):
        short = {
            "q_proj": "q",
            "k_proj": "k",
            "v_proj": "v",
            "o_proj": "o",
            "output_proj": "o",
            "gate_proj": "gate",
            "up_proj": "up",
            "down_proj": "down",
        }
        fused = {"c_attn", "W_pack", "query_key_value"}  # one fused q/k/v projection: adapters on q, k and v
        names: list[str] = []
        for item in raw:
            if str(item).startswith("mlp"):
                names += ["gate", "up", "down"]
            elif item in fused:
                names += ["q", "k", "v"]
            elif item in short:
                names.append(short[item])
            else:
                raise LookupError(f"LoRA target '{item}' has no equivalent in this architecture")
        targets = tuple(names)
    work = {
        "kind": "finetune",
        "method": method,
        "micro_batch": int(t.get("micro_batch_size") or 1),
        "seq_len": int(t["seq_len"]),
        "grad_accum": int(t.get("grad_accum") or 1),
        "optimizer": optimizer,
        "precision": precision,
        "grad_checkpointing": bool(t.get("gradient_checkpointing")),
        "lora_rank": int(t.get("lora_rank") or 16),
        "lora_targets": targets,
        "lora_dropout": float(t.get("lora_dropout") or 0.0) if method != "full" else 0.0,
        "chunked_loss": "chunked" in str(t.get("loss", "")).lower(),
        "activation_offload": bool(t.get("activation_offloading")),
    }
    if row.get("source_id") == "S05":
        work["mean_seq_len"] = truncated_mean_length(int(t["seq_len"]), *S05_LENGTHS)
    return Scenario.model_validate(
        {"model": {"id": facts.model_id}, "weights": base, "workload": work, "hardware": {"gpu": gpu.name}}
    )


def _estimate_training_row(row: dict[str, Any], models: Models) -> list[Row]:
    facts = models.facts(row["base_model"])
    gpu = _gpu(str(row["hardware"]["gpu"]), models.catalog)
    scenario = _training_scenario(row, facts, gpu)
    est = estimate(scenario, facts, gpu)
    measured = row["measured"]
    level = _level(str(measured.get("method", "")))
    value = {"allocated": est.peak_allocated_bytes, "reserved": est.peak_reserved_bytes, "device": est.device_bytes}[
        level
    ]
    work = scenario.workload
    return [
        Row(
            row["id"],
            row["source_id"],
            getattr(work, "method", "full"),
            level,
            float(measured["value_gib"]),
            value / GIB,
            row["grade"],
        )
    ]


def run_heldout(catalog: Catalog | None = None) -> list[Row]:
    """The held-out set (benchmarks/data/heldout_qwen25.yaml): published measurements never used to set anything."""
    data = yaml.safe_load((DATA / "heldout_qwen25.yaml").read_text(encoding="utf-8"))
    models = Models(catalog or default_catalog())
    gpu = models.catalog.gpu(data["gpu"])
    rows = []
    for item in [*data["rows"], *data.get("multi_gpu_rows", [])]:
        facts = models.facts(item["model"])
        gpus = int(item.get("gpus", 1))
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
                "hardware": {"gpu": gpu.name, "gpu_count": gpus},
            }
        )
        est = estimate(scenario, facts, gpu)
        rid = f"qwen25-{item['model'].split('/')[-1]}-{item['weights']}-in{item['input_len']}"
        # the script sums max_memory_allocated over the GPUs of a device_map split: so does the comparison
        allocated = sum(g.peak_allocated_bytes for g in est.per_gpu) if gpus > 1 else est.peak_allocated_bytes
        rows.append(
            Row(
                rid + (f"-x{gpus}" if gpus > 1 else ""),
                "held-out Qwen2.5",
                f"device_map, {gpus} GPUs, sum" if gpus > 1 else item["weights"],
                "allocated",
                float(item["measured_gib"]),
                allocated / GIB,
                "A",
            )
        )
    return rows


def run_heldout_finetune(catalog: Catalog | None = None) -> tuple[list[Row], dict[str, dict[str, float]]]:
    """The held-out fine-tuning set (benchmarks/data/heldout_qwen1_finetune.yaml), compared at the level the file
    fixed before any comparison; also returns, per level, the median |error| for context."""
    data = yaml.safe_load((DATA / "heldout_qwen1_finetune.yaml").read_text(encoding="utf-8"))
    models = Models(catalog or default_catalog())
    gpu = models.catalog.gpu(data["gpu"])
    level = str(data["level"])
    rows: list[Row] = []
    by_level: dict[str, list[float]] = {"allocated": [], "reserved": [], "device": []}
    for item in data["rows"]:
        facts = models.facts(item["model"])
        m = dict(data["methods"][item["method"]])
        gpus, nodes = int(item.get("gpus", 1)), int(item.get("nodes", 1))
        for seq, measured in zip(data["seq_lens"], item["measured"], strict=True):
            work = {
                "kind": "finetune",
                "method": m["method"],
                "micro_batch": 1,
                "seq_len": seq,
                "grad_accum": 8,
                "optimizer": m.get("optimizer", "adamw"),
                "precision": m["precision"],
                "grad_checkpointing": True,
                "attention": "flash",
                "lora_rank": 64,
                "lora_targets": ["all-linear"],
                "lora_dropout": 0.05 if m["method"] != "full" else 0.0,
                "adapter_dtype": m.get("adapter_dtype", "fp32"),
                "modules_to_save": m.get("modules_to_save", []),
            }
            scenario = Scenario.model_validate(
                {
                    "model": {"id": facts.model_id},
                    "weights": m["weights"],
                    "workload": work,
                    "hardware": {"gpu": gpu.name, "gpu_count": gpus, "nodes": nodes},
                    "parallelism": {
                        "zero": int(m.get("zero", 0)),
                        "zero_bucket": m.get("zero_bucket"),
                        "zero_overlap_comm": m.get("zero_overlap_comm"),
                    },
                }
            )
            est = estimate(scenario, facts, gpu)
            n = gpus * nodes
            values = {
                "allocated": est.peak_allocated_bytes * n / GIB,
                "reserved": est.peak_reserved_bytes * n / GIB,
                "device": est.device_bytes * n / GIB,
            }
            for lv, v in values.items():
                by_level[lv].append(abs(v / measured - 1))
            rid = f"qwen1-{item['model'].split('/')[-1]}-{item['method']}-s{seq}" + (f"-x{n}" if n > 1 else "")
            group = "multi-GPU (sum)" if n > 1 else ("qlora" if "qlora" in item["method"] else m["method"])
            rows.append(Row(rid, "held-out Qwen v1 fine-tuning", group, level, float(measured), values[level], "B"))
    context = {
        lv: {"n": len(v), "median": round(100 * statistics.median(v), 2), "p90": round(100 * _pct(v, 0.9), 2)}
        for lv, v in by_level.items()
    }
    return rows, context


MIB = 1 << 20


def _fms_scenario(data: dict[str, Any], models: Models, name: str, method: str, gpus: int, batch: int) -> Scenario:
    model = data["models"][name]
    facts = models.facts(model["id"])
    lora = method != "full"
    work: dict[str, Any] = {
        "kind": "finetune",
        "method": method,
        "micro_batch": batch,
        "seq_len": int(model["seq"]),
        "grad_accum": 1,
        "optimizer": "adamw",
        "precision": "bf16",
        "grad_checkpointing": True,
        "attention": "flash",
    }
    if lora:
        work.update(lora_rank=16, lora_targets=["q", "k", "v", "o"], lora_dropout=0.1, adapter_dtype="fp32")
    return Scenario.model_validate(
        {
            "model": {"id": facts.model_id},
            "weights": "nf4" if method == "qlora" else "bf16",
            "workload": work,
            "hardware": {"gpu": data["gpu"], "gpu_count": gpus},
            "parallelism": {"fsdp": gpus > 1, "fsdp_strategy": "full"},
        }
    )


@dataclass(frozen=True)
class FmsResult:
    rows: list[Row]
    #: median / p90 |error| of the same rows at each memory level
    levels: dict[str, dict[str, float]]
    #: runs that ran out of memory on 80 GB which the estimate calls "fits", out of ``oom_runs``
    wrong_fits: list[str]
    oom_runs: int
    #: runs that completed which the estimate calls "does not fit"
    wrong_no_fits: list[str]


def run_heldout_fms(catalog: Catalog | None = None) -> FmsResult:
    """The second held-out fine-tuning set (benchmarks/data/heldout_fms_a100.yaml): rows at the level the file fixed
    before any comparison, the median |error| per level for context, and the verdicts that contradict what the
    runs did: out-of-memory runs called "fits", completed runs called "does not fit"."""
    data = yaml.safe_load((DATA / "heldout_fms_a100.yaml").read_text(encoding="utf-8"))
    models = Models(catalog or default_catalog())
    gpu = models.catalog.gpu(data["gpu"])
    rows: list[Row] = []
    by_level: dict[str, list[float]] = {"allocated": [], "device": []}
    wrong_no_fits = []
    for name, method, gpus, batch, peak, nvidia_mib in data["rows"]:
        scenario = _fms_scenario(data, models, name, method, gpus, batch)
        est = estimate(scenario, models.facts(scenario.model.id), gpu)
        measured = peak / GIB
        by_level["allocated"].append(abs(est.peak_allocated_bytes / peak - 1))
        by_level["device"].append(abs(est.device_bytes / (nvidia_mib * MIB) - 1))
        rid = f"fms-{name}-{method}-g{gpus}-b{batch}"
        group = f"{method} (2 GPUs, FSDP)" if gpus > 1 else method
        rows.append(
            Row(rid, "held-out fms-acceleration", group, "allocated", measured, est.peak_allocated_bytes / GIB, "B")
        )
        if est.fit is not None and est.fit.verdict == "does not fit":
            wrong_no_fits.append(f"{name} {method} {gpus} GPU(s) batch {batch}: {est.fit.message}")
    wrong_fits = []
    for name, method, gpus, batch in data["out_of_memory"]:
        scenario = _fms_scenario(data, models, name, method, gpus, batch)
        est = estimate(scenario, models.facts(scenario.model.id), gpu)
        if est.fit is not None and est.fit.verdict == "fits":
            wrong_fits.append(f"{name} {method} {gpus} GPU(s) batch {batch}: {est.fit.message}")
    context = {
        lv: {"n": len(v), "median": round(100 * statistics.median(v), 2), "p90": round(100 * _pct(v, 0.9), 2)}
        for lv, v in by_level.items()
    }
    return FmsResult(rows, context, wrong_fits, len(data["out_of_memory"]), wrong_no_fits)


def run_heldout_trainers(catalog: Catalog | None = None) -> list[Row]:
    """The held-out trainer set (benchmarks/data/heldout_trainers.yaml): each row at the level its source printed,
    with the settings the file fixed before any comparison; the row's group is its trainer."""
    data = yaml.safe_load((DATA / "heldout_trainers.yaml").read_text(encoding="utf-8"))
    models = Models(catalog or default_catalog())
    rows: list[Row] = []
    for item in data["rows"]:
        trainer, model_id = str(item["trainer"]), str(item["model"])
        config = data["configs"].get(model_id)
        facts = model_facts(config, model_id) if config else models.facts(model_id)
        gpu = models.catalog.gpu(item["gpu"])
        work = {"kind": "finetune", "trainer": trainer, **data["settings"].get(trainer, {}), **item["work"]}
        scenario = Scenario.model_validate(
            {
                "model": {"id": model_id},
                "workload": work,
                "hardware": {"gpu": gpu.name, "gpu_count": int(item["gpus"])},
                "parallelism": data["parallelism"].get(trainer, {}),
            }
        )
        est = estimate(scenario, facts, gpu)
        level = str(item["level"])
        value = {"allocated": est.peak_allocated_bytes, "reserved": est.peak_reserved_bytes, "device": est.device_bytes}
        measured = float(item["value"]) * (1e9 / GIB if item["unit"] == "GB" else 1.0)
        w = item["work"]
        rid = f"{trainer}-{model_id.rsplit('/', maxsplit=1)[-1]}-{w['method']}-b{w['micro_batch']}-s{w['seq_len']}"
        rows.append(Row(rid, "held-out trainers", trainer, level, measured, value[level] / GIB, "B"))
    return rows


def _print_heldout_trainers(rows: list[Row]) -> None:
    """The trainer set by trainer, with issue 22's figures: median, p90 and the share under-predicted by > 5 %."""
    print(f"\nheld-out trainers ({len(rows)} published figures outside the calibration set) by trainer:")
    for g, st in summarize(rows, "weights").items():
        print(f"  {g:24s} {st['n']:4d} {st['median']:8.2f} {st['p90']:8.2f}")
    _print_signed(rows)
    under = sum(1 for r in rows if r.error < -0.05)
    print(f"  under-predicted by more than 5 %: {under} of {len(rows)} ({100 * under / max(1, len(rows)):.0f} %)")


def _replay_report() -> Any:
    """benchmarks/allocator/replay_report.py (it maps a trace's settings to a scenario), a sibling script."""
    sys.path.insert(0, str(HERE / "allocator"))
    import replay_report

    return replay_report


#: measured level in a measure_steps.py result -> the estimate's figure for it
DEVICE_LEVELS = {
    "allocated": ("peak_allocated", "peak_allocated_bytes"),
    "reserved": ("peak_reserved", "peak_reserved_bytes"),
    "device": ("nvml_used_max", "device_bytes"),
}


def run_device_inference(paths: list[Path] | None = None, catalog: Catalog | None = None) -> list[Row]:
    """transformers generate runs of catalog models on a lent GPU (benchmarks/device/measure_inference.py, committed
    as benchmarks/data/device/*-inference.jsonl): the estimate of the same settings at each level measured."""
    from vramdesk.services.nvml import catalog_name

    models = Models(catalog or default_catalog())
    rows: list[Row] = []
    for path in paths if paths is not None else sorted((DATA / "device").glob("*-inference.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            res: dict[str, Any] = json.loads(line) if line.strip() else {"error": "blank"}
            if "error" in res:
                continue
            facts = models.facts(str(res["model"]))
            gpu = models.catalog.gpu(catalog_name(str(res["device"]), models.catalog) or str(res["device"]))
            work = {
                "kind": "inference",
                "engine": "transformers",
                "batch": int(res["batch"]),
                "input_len": int(res["input_len"]),
                "output_len": int(res["output_len"]),
                "attention": str(res.get("attention", "sdpa")),
            }
            scenario = Scenario.model_validate(
                {"model": {"id": facts.model_id}, "weights": "bf16", "workload": work, "hardware": {"gpu": gpu.name}}
            )
            est = estimate(scenario, facts, gpu)
            rid = f"{path.stem}/{res['model']}-b{res['batch']}-in{res['input_len']}-out{res['output_len']}"
            for level, (measured_key, est_attr) in DEVICE_LEVELS.items():
                if res.get(measured_key):
                    value = getattr(est, est_attr) / GIB
                    rows.append(
                        Row(rid, "own GPU runs", "inference", level, float(res[measured_key]) / GIB, value, "B")
                    )
    return rows


def run_device_runs() -> list[Row]:
    """The traced training steps run on a lent GPU (benchmarks/data/device/*.jsonl): vramdesk's estimate of the same
    settings at each level the run measured. Not third-party figures: the programs the traces recorded, so these
    rows check the trace-derived model end to end on real hardware (kernel workspaces, context, allocator)."""
    report = _replay_report()
    rows: list[Row] = []
    for path in sorted((DATA / "device").glob("*.jsonl")):
        if path.stem.endswith("-inference"):
            continue
        for res in report.read_device_runs(path):
            if "error" in res:
                continue
            scenario, config, gpu = report.device_scenario(res)
            est = estimate(scenario, model_facts(config, scenario.model.id), gpu)
            method = str(res["settings"]["method"])
            rid = f"{path.stem}/{res['trace']}" + ("/expandable" if scenario.workload.expandable_segments else "")
            for level, (measured_key, est_attr) in DEVICE_LEVELS.items():
                measured = float(res[measured_key]) / GIB
                rows.append(Row(rid, "own GPU runs", method, level, measured, getattr(est, est_attr) / GIB, "B"))
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


def run(catalog: Catalog | None = None) -> tuple[list[Row], list[Row], list[tuple[str, str]]]:
    """(inference rows, training rows, skipped rows with the reason)."""
    data = yaml.safe_load((DATA / "measured.yaml").read_text(encoding="utf-8"))
    models = Models(catalog or default_catalog())
    rows: list[Row] = []
    train_rows: list[Row] = []
    skipped: list[tuple[str, str]] = []
    for item in data:
        task = str(item["task"])
        training = not (task.startswith("inference") or task.startswith("serving"))
        try:
            if training:
                train_rows.extend(_estimate_training_row(item, models))
            else:
                rows.extend(_estimate_row(item, models))
        except (LookupError, EstimateError) as err:
            skipped.append((item["id"], ("training: " if training else "") + str(err).strip("'\"")))
    return rows, train_rows, skipped


def _print_signed(rows: list[Row]) -> None:
    signed = sorted(r.error for r in rows)
    print(
        f"  signed error: min {100 * signed[0]:+.1f}%, median {100 * statistics.median(signed):+.1f}%, "
        f"max {100 * signed[-1]:+.1f}%"
    )


def _print_heldout_finetune(
    title: str, rows: list[Row], levels: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    """Print one held-out fine-tuning set by method, its signed errors and the other memory levels (context);
    return the per-method summary for the baseline."""
    methods = summarize(rows, "weights")
    print(f"\n{title}, {rows[0].level} level) by method:")
    for g, st in methods.items():
        print(f"  {g:24s} {st['n']:4d} {st['median']:8.2f} {st['p90']:8.2f}")
    _print_signed(rows)
    print("  the same rows at each memory level (context; the level above was fixed before comparing):")
    for lv, st in levels.items():
        print(f"    {lv:22s} {st['n']:4d} {st['median']:8.2f} {st['p90']:8.2f}")
    return methods


#: issue 8's bar for held-out fine-tuning figures, per method: median and 90th percentile of |error|, in %
DONE_WHEN = {"median": 10.0, "p90": 25.0}


def shipped_summary(heldout: list[Row], held_ft: list[Row], held_fms: list[Row], own: list[Row]) -> dict[str, Any]:
    """Per mode and memory level, each set of measured runs the estimate was not fitted to: name, runs, median and
    90th percentile of |error| (%). The window shows it beside the figures (resources/accuracy.json)."""

    def entry(name: str, rows: list[Row]) -> dict[str, Any]:
        errors = [abs(r.error) for r in rows]
        return {
            "set": name,
            "n": len(rows),
            "median": round(100 * statistics.median(errors), 1),
            "p90": round(100 * _pct(errors, 0.9), 1),
        }

    own_runs = "our own runs of traced training steps on a lent GPU"
    finetune: dict[str, list[dict[str, Any]]] = {"allocated": [], "reserved": [], "device": []}
    if held_fms:
        finetune["allocated"].append(entry("held-out fms-acceleration runs (A100, 1 and 2 GPUs)", held_fms))
    if held_ft:
        finetune[held_ft[0].level].append(entry("held-out Qwen v1 fine-tuning profile (A100)", held_ft))
    for level, entries in finetune.items():
        rows = [r for r in own if r.level == level and r.weights != "inference"]
        if rows:
            entries.append(entry(own_runs, rows))
    inference: dict[str, list[dict[str, Any]]] = {"allocated": [], "reserved": [], "device": []}
    if heldout:
        inference["allocated"].append(entry("held-out Qwen2.5 speed benchmark (A100 x 1-3, transformers)", heldout))
    for level, entries in inference.items():
        rows = [r for r in own if r.level == level and r.weights == "inference"]
        if rows:
            entries.append(entry("our own transformers generate runs on a lent GPU", rows))
    return {
        "_about": "written by benchmarks/accuracy.py --update-baseline: |estimate / measured - 1| in %, per set of "
        "measured runs that nothing in the estimator was fitted to",
        "finetune": finetune,
        "inference/transformers": inference,
    }


def pooled_by_method(rows: list[Row]) -> dict[str, dict[str, float]]:
    """Both held-out fine-tuning sets as one, per method (full, lora, qlora: single- and multi-GPU runs compared
    per GPU together; the Qwen table's multi-GPU sums apart), each row at the level its set fixed."""
    family = [
        replace(r, weights=r.weights if r.weights == "multi-GPU (sum)" else r.weights.split(" (")[0]) for r in rows
    ]
    out = summarize(family, "weights")
    # the multi-GPU sums are LoRA runs (Qwen-7B on 2 x 2 GPUs, Qwen-72B with ZeRO-3): the bar with them counted in
    lora_all = [r for r in family if r.weights in ("lora", "multi-GPU (sum)")]
    if lora_all:
        out["lora with the sums"] = summarize(lora_all, "weights")["all"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-baseline", action="store_true")
    parser.add_argument("--rows", action="store_true", help="print every row")
    args = parser.parse_args(argv)
    rows, train_rows, skipped = run()
    heldout = run_heldout()
    held_ft, held_ft_levels = run_heldout_finetune()
    fms = run_heldout_fms()
    held_fms, wrong_fits, oom_runs = fms.rows, fms.wrong_fits, fms.oom_runs
    device_runs = run_device_runs() + run_device_inference()
    held_trainers = run_heldout_trainers()
    if args.rows:
        for r in rows + train_rows + heldout + held_ft + held_fms + held_trainers + device_runs:
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
    _print_signed(heldout)
    by_method = summarize(train_rows, "weights") if train_rows else {}
    print(f"\nfine-tuning ({len(train_rows)} comparisons) by method:  group  n  median|err|%  p90|err|%")
    for g, st in by_method.items():
        print(f"  {g:24s} {st['n']:4d} {st['median']:8.2f} {st['p90']:8.2f}")
    held_ft_methods = _print_heldout_finetune(
        f"held-out fine-tuning ({len(held_ft)} published measurements outside the calibration set",
        held_ft,
        held_ft_levels,
    )
    held_fms_methods = _print_heldout_finetune(
        f"held-out fine-tuning, set 2 ({len(held_fms)} fms-acceleration runs outside the calibration set",
        held_fms,
        fms.levels,
    )
    pooled = pooled_by_method(held_ft + held_fms)
    print(
        f"\nboth held-out fine-tuning sets pooled ({len(held_ft) + len(held_fms)} rows) by method, against issue 8's "
        f"bar (median <= {DONE_WHEN['median']:.0f} %, p90 <= {DONE_WHEN['p90']:.0f} %):"
    )
    for g, st in pooled.items():
        ok = st["median"] <= DONE_WHEN["median"] and st["p90"] <= DONE_WHEN["p90"]
        print(f"  {g:24s} {st['n']:4d} {st['median']:8.2f} {st['p90']:8.2f}  {'met' if ok else 'NOT met'}")
    print(f'  runs that ran out of memory on 80 GB and the estimate calls "fits": {len(wrong_fits)} of {oom_runs}')
    for line in wrong_fits:
        print(f"    {line}")
    print(f'  runs that completed and the estimate calls "does not fit": {len(fms.wrong_no_fits)} of {len(held_fms)}')
    for line in fms.wrong_no_fits:
        print(f"    {line}")
    _print_heldout_trainers(held_trainers)
    device_summary = summarize([replace(r, weights=f"{r.level} {r.weights}") for r in device_runs], "weights")
    print(
        f"\nour own runs on a lent GPU (traced training steps and transformers generate; {len(device_runs)} "
        "comparisons, not published figures, nothing fitted to them) by level and method:"
    )
    for g, st in device_summary.items():
        print(f"  {g:24s} {st['n']:4d} {st['median']:8.2f} {st['p90']:8.2f}")
    inference_skips = [x for x in skipped if not x[1].startswith("training: ")]
    training_skips = [x for x in skipped if x[1].startswith("training: ")]
    for title, items in (("inference", inference_skips), ("fine-tuning", training_skips)):
        print(f"\nskipped {title} rows ({len(items)}):")
        for rid, why in items:
            print(f"  {rid}: {why.removeprefix('training: ')}")
    current = {
        "by_source": by_source,
        "by_weights": by_format,
        "heldout": {**held_fmt, "all": held_src["all"]},
        "training": by_method,
        "heldout_finetune": held_ft_methods,
        "heldout_finetune_fms": {
            **held_fms_methods,
            "wrong fits": {"n": oom_runs, "median": float(len(wrong_fits)), "p90": float(len(wrong_fits))},
            "wrong no-fits": {
                "n": len(held_fms),
                "median": float(len(fms.wrong_no_fits)),
                "p90": float(len(fms.wrong_no_fits)),
            },
        },
        "device_runs": device_summary,
    }
    shipped = shipped_summary(heldout, held_ft, held_fms, device_runs)
    if args.update_baseline or not BASELINE.exists():
        BASELINE.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
        SHIPPED.write_text(json.dumps(shipped, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nbaseline written to {BASELINE.name}")
        return 0
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    regressions = []
    sections = (
        "by_source",
        "by_weights",
        "heldout",
        "training",
        "heldout_finetune",
        "heldout_finetune_fms",
        "device_runs",
    )
    for section in sections:
        for group, old in baseline.get(section, {}).items():
            new = current[section].get(group)
            if new is None:
                regressions.append(f"{section}/{group}: no longer estimated")
                continue
            for stat in ("median", "p90"):
                if new[stat] > old[stat] + TOLERANCE_PP:
                    regressions.append(f"{section}/{group} {stat}: {old[stat]:.2f}% -> {new[stat]:.2f}%")
    if SHIPPED.exists() and json.loads(SHIPPED.read_text(encoding="utf-8")) != shipped:
        regressions.append(f"{SHIPPED.name} differs from this run's figures: run with --update-baseline")
    if regressions:
        print("\nREGRESSION against the committed baseline:")
        for line in regressions:
            print(f"  {line}")
        return 1
    print("\nno regression against the committed baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
