"""The golden cases: every catalog model x engines x modes x options, and what vramdesk answers for each.

Issue 19 reshapes the code (one option table, engines as modules, messages with ids) without changing one
number or one sentence. This module is the check: it runs the estimator, the advice, the command line and the
window's presenter over a fixed set of several thousand cases and writes one line per case with a digest of
the whole answer (every byte of the estimate's JSON, the presenter's texts in English and Chinese) and the
headline figures in clear, so a diff says which case moved and by how much.

    python tests/golden/cases.py            # compare with the committed file; exit 1 and the first diffs
    python tests/golden/cases.py --update   # rewrite it (only when a change is meant to move numbers)

``tests/test_golden.py`` runs the comparison in the suite.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden.jsonl"

#: GPUs the cases rotate through (a small consumer card, a big datacenter one, a middle one, none)
GPUS: tuple[str | None, ...] = ("RTX 4090", "H100 SXM", "A100 40GB PCIe", None)

#: inference variants: one or two settings away from the defaults, each on every model
INFERENCE: tuple[dict[str, Any], ...] = (
    {},
    {"engine": "vllm"},
    {"engine": "llamacpp"},
    {"weights": "bf16", "input_len": 32768, "batch": 4},
    {"weights": "fp16", "attention": "eager", "input_len": 2048},
    {"weights": "fp8", "engine": "vllm", "kv_dtype": "fp8"},
    {"weights": "int8", "input_len": 1024, "output_len": 64},
    {"weights": "nf4", "batch": 8, "input_len": 4096},
    {"weights": "nf4-dq", "full_prompt_logits": True},
    {"weights": "gptq-int4", "engine": "vllm", "max_num_seqs": 64, "gpu_memory_utilization": 0.8},
    {"weights": "awq-int4", "engine": "vllm", "enforce_eager": True, "max_num_batched_tokens": 2048},
    {"weights": "mxfp4", "engine": "vllm", "block_size": 32},
    {"weights": "q4_k_m", "engine": "llamacpp", "input_len": 16384},
    {"weights": "q8_0", "engine": "llamacpp", "kv_dtype": "q8_0", "n_ubatch": 256},
    {"weights": "q4_0", "engine": "llamacpp", "flash_attn": False, "kv_dtype": "q4_0"},
    {"weights": "q5_k_m", "engine": "llamacpp", "n_gpu_layers": 10},
    {"weights": "iq4_xs", "engine": "llamacpp", "swa_full": True, "gpus": 2},
    {"weights": "q6_k", "engine": "llamacpp", "gpus": 2, "split_mode": "row"},
    {"engine": "vllm", "gpus": 2, "tp": 2},
    {"engine": "vllm", "gpus": 4, "tp": 2, "pp": 2, "kv_dtype": "fp8"},
    {"gpus": 2, "max_memory_gib": 6.0},
    {"max_memory_gib": 4.0, "cpu_memory_gib": 8.0},
    {"kv_dtype": "fp16", "batch": 16, "input_len": 512, "output_len": 1024},
    {"attention": "flash", "input_len": 131072},
)

#: fine-tuning variants
FINETUNE: tuple[dict[str, Any], ...] = (
    {},
    {"method": "full", "optimizer": "adamw", "precision": "amp-bf16"},
    {"method": "full", "optimizer": "adamw-8bit", "grad_checkpointing": False, "micro_batch": 2},
    {"method": "full", "optimizer": "sgd", "precision": "fp32", "seq_len": 512},
    {"method": "full", "optimizer": "adafactor", "precision": "bf16"},
    {"method": "full", "optimizer": "lion", "chunked_loss": True, "seq_len": 8192},
    {"method": "full", "gpus": 8, "zero": 3, "optimizer": "adamw-fused"},
    {"method": "full", "gpus": 8, "zero": 2, "offload": "optimizer"},
    {"method": "full", "gpus": 8, "zero": 3, "offload": "params", "grad_accum": 4},
    {"method": "full", "gpus": 8, "fsdp": True, "fsdp_strategy": "shard-grad-op"},
    {"method": "full", "gpus": 8, "nodes": 2, "fsdp": True, "fsdp_strategy": "hybrid"},
    {"method": "full", "gpus": 8, "tp": 2, "pp": 2, "zero": 1},
    {"method": "lora", "lora_rank": 64, "lora_targets": "q,v", "lora_dropout": 0.1},
    {"method": "lora", "dora": True, "modules_to_save": "embed,lm_head"},
    {"method": "lora", "lora_bias": "all", "adapter_dtype": "base", "precision": "fp16"},
    {"method": "lora", "checkpoint_every": 2, "mean_seq_len": 900, "micro_batch": 4},
    {"method": "lora", "activation_offload": True, "expandable_segments": True},
    {"method": "lora", "gpus": 4, "fsdp": True, "fsdp_version": 2},
    {"method": "lora", "gpus": 4, "fsdp": True, "fsdp_version": 1, "attention": "eager"},
    {"method": "qlora", "optimizer": "paged-adamw-8bit"},
    {"method": "qlora", "optimizer": "paged-adamw-32bit", "seq_len": 4096, "grad_checkpointing": False},
    {"method": "qlora", "gpus": 2, "zero": 2, "vision_tower": "absent"},
    {"method": "lora", "vision_tower": "trained", "weights": "bf16"},
    {"method": "lora", "weights": "fp8", "optimizer": "adamw-forloop"},
    {"method": "full", "optimizer": "adamw-torch2.0", "gpus": 8, "zero": 3, "zero_bucket": 200_000_000},
    {"method": "full", "gpus": 4, "zero": 2, "zero_overlap_comm": False, "expandable_segments": True},
)

#: command-line argument lists (after ``estimate MODEL``), on a few models
CLI_MODELS = (
    "Qwen/Qwen3-8B",
    "meta-llama/Llama-3.1-70B",
    "openai/gpt-oss-20b",
    "Qwen/Qwen3-30B-A3B",
    "google/gemma-3-1b-it",
    "deepseek-ai/DeepSeek-V3",
)
CLI_ARGS: tuple[tuple[str, ...], ...] = (
    (),
    ("--gpu", "RTX 4090"),
    ("--engine", "vllm", "--gpu", "H100 SXM", "--gpus", "2", "--tp", "2"),
    ("--engine", "llamacpp", "--weights", "q4_k_m", "--n-gpu-layers", "20", "--gpu", "RTX 3090"),
    ("--engine", "llamacpp", "--no-flash-attn", "--swa-full", "--n-ubatch", "1024"),
    ("--weights", "nf4", "--batch", "4", "--input-len", "8192", "--output-len", "256"),
    ("--full-prompt-logits", "--kv-dtype", "fp16", "--attention", "eager"),
    ("--max-memory-gib", "10", "--cpu-memory-gib", "32", "--gpu", "RTX 4090"),
    (
        "--gpu-memory-utilization",
        "0.95",
        "--max-num-seqs",
        "32",
        "--max-num-batched-tokens",
        "4096",
        "--enforce-eager",
        "--engine",
        "vllm",
    ),
    ("--mode", "finetune"),
    ("--mode", "finetune", "--method", "full", "--optimizer", "adamw-8bit", "--gpu", "H100 SXM"),
    ("--mode", "finetune", "--method", "qlora", "--lora-rank", "8", "--lora-targets", "q,k,v,o"),
    ("--mode", "finetune", "--method", "lora", "--dora", "--modules-to-save", "lm_head", "--lora-bias", "all"),
    ("--mode", "finetune", "--method", "full", "--gpus", "8", "--zero", "3", "--offload", "optimizer"),
    (
        "--mode",
        "finetune",
        "--method",
        "full",
        "--gpus",
        "8",
        "--fsdp",
        "--fsdp-strategy",
        "shard-grad-op",
        "--fsdp-version",
        "2",
    ),
    (
        "--mode",
        "finetune",
        "--seq-len",
        "4096",
        "--mean-seq-len",
        "1000",
        "--micro-batch",
        "2",
        "--grad-accum",
        "8",
        "--no-grad-checkpointing",
    ),
    (
        "--mode",
        "finetune",
        "--checkpoint-every",
        "3",
        "--chunked-loss",
        "--activation-offload",
        "--expandable-segments",
        "--precision",
        "amp-fp16",
        "--adapter-dtype",
        "base",
        "--lora-dropout",
        "0.05",
    ),
    ("--mode", "finetune", "--vision-tower", "absent", "--nodes", "2", "--gpus", "4", "--pp", "2"),
    ("--mode", "finetune", "--engine", "vllm"),
    (
        "--output-len",
        "-1",
    ),
    ("--gpus", "2", "--tp", "4"),
)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _scenario_dict(model: str, gpu: str | None, opts: dict[str, Any], mode: str) -> dict[str, Any]:
    """The saved-file shape of one case (what ``Scenario.model_validate`` reads)."""
    hardware: dict[str, Any] = {"gpu": gpu}
    parallel: dict[str, Any] = {}
    work: dict[str, Any] = {"kind": mode}
    data: dict[str, Any] = {"model": {"id": model}, "hardware": hardware, "parallelism": parallel, "workload": work}
    vllm = ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "enforce_eager", "block_size")
    llamacpp = ("n_gpu_layers", "n_ubatch", "flash_attn", "swa_full", "split_mode")
    par = ("tp", "pp", "zero", "fsdp", "fsdp_strategy", "fsdp_version", "zero_bucket", "zero_overlap_comm", "offload")
    for key, value in opts.items():
        if key == "weights":
            data["weights"] = value
        elif key == "gpus":
            hardware["gpu_count"] = value
        elif key == "nodes":
            hardware["nodes"] = value
        elif key in par:
            parallel[key] = value
        elif key in vllm:
            work.setdefault("vllm", {})[key] = value
        elif key in llamacpp:
            work.setdefault("llamacpp", {})[key] = value
        elif key in ("lora_targets", "modules_to_save"):
            work[key] = value.split(",")
        else:
            work[key] = value
    return data


def _plain(value: Any) -> Any:
    """A presenter dataclass as JSON-able values (its ``estimate`` field is digested separately)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value) if f.name != "estimate"}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _core_texts(est: Any) -> list[tuple[bool, str]]:
    """Every English text of an estimate the window translates, each with whether it is a component or phase name
    (looked up whole, as the window does) or a sentence."""
    out: list[tuple[bool, str]] = [(False, c.explain) for c in (*est.components, *est.device_overheads)]
    for ph in est.phases:
        out += [(True, ph.name)] + [(True, c.name) for c in ph.components] + [(False, c.explain) for c in ph.components]
    out += [(False, t) for t in (*est.warnings, *est.params.notes)]
    if est.fit is not None:
        out.append((False, est.fit.message))
    return out


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def core_cases() -> Iterator[tuple[str, Callable[[], dict[str, Any]]]]:
    from vramdesk.core.advice import advise
    from vramdesk.core.estimate import estimate
    from vramdesk.core.scenario import Scenario
    from vramdesk.services.catalog import Catalog
    from vramdesk.ui import presenter
    from vramdesk.ui.core_text import localize, localize_name

    catalog = Catalog()
    facts_cache: dict[str, Any] = {}
    advice_gpus = [catalog.gpu(n) for n in ("RTX 4090", "A100 80GB SXM", "H100 SXM")]

    def facts(mid: str) -> Any:
        if mid not in facts_cache:
            facts_cache[mid] = catalog.facts(mid)
        return facts_cache[mid]

    n = 0
    for model in catalog.models():
        for mode, variants in (("inference", INFERENCE), ("finetune", FINETUNE)):
            for i, opts in enumerate(variants):
                gpu_name = GPUS[(n + i) % len(GPUS)]
                n += 1
                key = f"{model.id}|{mode}|{i}|{gpu_name}"
                deep = n % 4 == 0

                def run(
                    model_id: str = model.id,
                    gpu_name: str | None = gpu_name,
                    opts: dict[str, Any] = opts,
                    mode: str = mode,
                    deep: bool = deep,
                    n: int = n,
                ) -> dict[str, Any]:
                    try:
                        scenario = Scenario.model_validate(_scenario_dict(model_id, gpu_name, opts, mode))
                        gpu = catalog.gpu(gpu_name) if gpu_name else None
                        est = estimate(scenario, facts(model_id), gpu)
                    except ValueError as err:
                        return {"error": _error(err)}
                    rec: dict[str, Any] = {
                        "est": _digest(est.model_dump_json()),
                        "peak": est.peak_allocated_bytes,
                        "device": est.device_bytes,
                        "verdict": est.fit.verdict if est.fit else None,
                    }
                    if deep:
                        view = presenter.build_view(est, scenario, gpu)
                        form = presenter.form_from_scenario(scenario)
                        back = presenter.scenario_from_form(scenario, form)
                        zh = [(localize_name if name else localize)(t, "zh_CN") for name, t in _core_texts(est)]
                        zh += [localize_name(t, "zh_CN") for t in view.colors]
                        rec["view"] = _digest(json.dumps(_plain(view), sort_keys=True, default=str))
                        rec["form"] = _digest(json.dumps(vars(form), sort_keys=True, default=str))
                        rec["round_trip"] = _digest(back.model_dump_json())
                        rec["zh"] = _digest(json.dumps(zh, ensure_ascii=False))
                    if n % 16 == 0:
                        try:
                            rows = advise(scenario, facts(model_id), advice_gpus, max_gpus=8)
                            rec["advice"] = _digest(json.dumps([_plain(r) for r in rows], sort_keys=True, default=str))
                        except ValueError as err:
                            rec["advice"] = _error(err)
                    return rec

                yield key, run


def cli_cases() -> Iterator[tuple[str, Callable[[], dict[str, Any]]]]:
    from vramdesk import cli

    os.environ[cli.NO_DETECT_ENV] = "1"  # the answers without --gpu are GPU-free, whatever machine runs this

    for model in CLI_MODELS:
        for args in CLI_ARGS:
            argv = ["estimate", model, *args, "--json"]

            def run(argv: list[str] = argv) -> dict[str, Any]:
                out, err = io.StringIO(), io.StringIO()
                saved = sys.stderr
                sys.stderr = err
                try:
                    rc = cli.main(argv, out=out)
                except SystemExit as exc:
                    rc = exc.code if isinstance(exc.code, int) else 2
                finally:
                    sys.stderr = saved
                return {"rc": rc, "out": _digest(out.getvalue()), "err": err.getvalue().strip()}

            yield "cli " + " ".join(argv[1:-1]), run


def compute() -> list[str]:
    from vramdesk.ui import presenter

    unit = presenter.unit_name()
    presenter.set_unit("GiB")  # the window's display unit is a setting; the golden texts are in GiB
    try:
        lines = []
        for gen in (core_cases, cli_cases):
            for key, run in gen():
                lines.append(json.dumps({"case": key, **run()}, sort_keys=True, ensure_ascii=False))
        return lines
    finally:
        presenter.set_unit(unit)


def diff(expected: list[str], actual: list[str], limit: int = 15) -> list[str]:
    """The cases that changed, appeared or went, first ``limit`` of them, in words."""
    old = {json.loads(line)["case"]: line for line in expected}
    new = {json.loads(line)["case"]: line for line in actual}
    out = [f"changed: {old[k]}\n     now: {new[k]}" for k in new if k in old and old[k] != new[k]]
    out += [f"new case: {new[k]}" for k in new if k not in old]
    out += [f"case gone: {old[k]}" for k in old if k not in new]
    if len(expected) == len(actual) and not out and expected != actual:
        out.append("same cases in a different order")
    return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true", help="rewrite the golden file")
    ns = ap.parse_args(argv)
    lines = compute()
    if ns.update:
        GOLDEN.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {len(lines)} cases to {GOLDEN}")
        return 0
    expected = GOLDEN.read_text(encoding="utf-8").splitlines()
    problems = diff(expected, lines)
    for p in problems:
        print(p)
    print(f"{len(lines)} cases, {len(problems)} differences shown")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
