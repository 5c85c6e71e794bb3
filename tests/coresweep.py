"""The sweep of core texts the window shows: the real estimator (and the solver, the speed model and the
advice) over many scenarios, every text core-made that the window would show, and the error lines of invalid
inputs. Shared by the Chinese checks (tests/ui/test_core_text.py, tests/ui/test_message_ids.py).
"""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import ValidationError
from qwen1config import QWEN7B

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.facts import ModelFacts, model_facts
from vramdesk.core.messages import error_text
from vramdesk.core.optimizers import NEEDS_FULL
from vramdesk.core.performance import PerformanceError, performance
from vramdesk.core.scenario import Optimizer, Scenario
from vramdesk.core.solve import SolveError, maximize
from vramdesk.core.solve_changes import smallest_changes
from vramdesk.services.catalog import default_catalog
from vramdesk.ui.presenter import describe_error, evaluate_form, evaluate_scenario, form_from_scenario, set_unit

CAT = default_catalog()
#: Qwen v1 is not in the catalog: its published config.json, read as a local file would be
QWEN1 = model_facts(QWEN7B, "Qwen/Qwen-7B")


def _facts(model_id: str) -> ModelFacts:
    return QWEN1 if model_id == QWEN1.model_id else CAT.facts(model_id)


def S(model: str, gpu: str | None = "H100 SXM", weights: str = "auto", gpus: int = 1, **kw: Any) -> Scenario:
    parallel = kw.pop("parallel", {})
    nodes = kw.pop("nodes", 1)
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "weights": weights,
            "workload": kw,
            "hardware": {"gpu": gpu, "gpu_count": gpus, "nodes": nodes},
            "parallelism": parallel,
        }
    )


L8, L70, Q8, Q4 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-8B", "Qwen/Qwen3-4B"
INFERENCE = [
    S(Q8, "RTX 4090", kind="inference"),
    S(Q8, "RTX 4090", kind="inference", input_len=32000, attention="eager"),
    S(Q8, None, kind="inference"),
    S(Q8, "H100 SXM", kind="inference", input_len=30720, output_len=16, full_prompt_logits=True),
    S(L70, "RTX 4090", kind="inference", batch=4),
    S(L70, "A100 80GB SXM", gpus=4, kind="inference"),
    S(L70, "A100 80GB SXM", gpus=4, parallel={"tp": 4}, kind="inference"),
    S("Qwen/Qwen2.5-7B-Instruct-AWQ", "RTX 4090", kind="inference", batch=8, input_len=2048),
    S("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "RTX 4090", kind="inference"),
    S("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", "L4", kind="inference"),
    S(Q8, "T4", weights="nf4", kind="inference"),
    S(Q8, "T4", weights="nf4-dq", kind="inference", input_len=8192),
    S(Q8, "L40S", weights="fp8", kind="inference", kv_dtype="fp8"),
    S(Q8, "L40S", weights="int8", kind="inference"),
    S("openai/gpt-oss-20b", "RTX 4090", kind="inference", attention="flash"),
    S("openai/gpt-oss-120b", "H100 SXM", kind="inference", engine="vllm"),
    S(Q8, "H100 SXM", kind="inference", engine="vllm"),
    S(Q8, "H100 SXM", kind="inference", engine="vllm", batch=512, input_len=32000, vllm={"enforce_eager": True}),
    S(Q8, None, kind="inference", engine="vllm"),
    S("Qwen/Qwen3-32B", "RTX 4090", gpus=2, parallel={"tp": 2}, kind="inference", engine="vllm", input_len=4096),
    S(L70, "RTX 4090", kind="inference", engine="vllm"),
    S(Q8, "RTX 4090", weights="q4_k_m", kind="inference", engine="llamacpp"),
    S(
        Q8,
        "RTX 4090",
        weights="q8_0",
        kind="inference",
        engine="llamacpp",
        kv_dtype="q8_0",
        llamacpp={"flash_attn": False},
    ),
    S(Q8, "RTX 4090", weights="bf16", kind="inference", engine="llamacpp"),
    S(L70, "RTX 4090", weights="q4_k_m", kind="inference", engine="llamacpp", llamacpp={"n_gpu_layers": 40}),
    S(L70, "RTX 4090", weights="q4_0", gpus=2, kind="inference", engine="llamacpp"),
    S("Qwen/Qwen3-Next-80B-A3B-Thinking", "H100 SXM", kind="inference"),
    S("Qwen/Qwen3-Next-80B-A3B-Thinking", "H100 SXM", kind="inference", engine="llamacpp", weights="q4_k_m"),
    S("Qwen/Qwen3.5-35B-A3B", "H100 SXM", kind="inference", engine="vllm"),
    S("Qwen/Qwen3-30B-A3B", "H100 SXM", kind="inference"),
    S("deepseek-ai/DeepSeek-V3", "H200 SXM", gpus=8, kind="inference", engine="vllm", parallel={"tp": 8}),
    S("google/gemma-2-9b-it", "RTX 4090", kind="inference"),
    S("google/gemma-3-1b-it", "RTX 3060 12GB", kind="inference", engine="llamacpp", weights="q4_k_m"),
    S("mistralai/Mixtral-8x7B-v0.1", "A100 80GB SXM", kind="inference", weights="mxfp4"),
    S(Q8, "MI300X", kind="inference"),
    S(Q8, "Apple M4 Max", kind="inference", engine="llamacpp", weights="q4_k_m"),
    S(Q8, "RTX 4090", kind="inference", max_memory_gib=10),
    S(L70, "RTX 4090", weights="q4_k_m", gpus=3, kind="inference", engine="llamacpp", llamacpp={"split_mode": "row"}),
    S(Q8, "RTX 4090", kind="inference", max_memory_gib=6, cpu_memory_gib=2),
    S(L70, "RTX 4090", gpus=2, kind="inference", max_memory_gib=1),
]
FINETUNE = [
    S(Q4, "H100 SXM", kind="finetune", method=method, optimizer=opt)
    for method in ("full", "lora", "qlora")
    for opt in get_args(Optimizer)
    if method == "full" or opt not in NEEDS_FULL
] + [
    S(Q4, "RTX 4090", kind="finetune", method="full", precision=p, grad_checkpointing=False)
    for p in ("bf16", "fp16", "fp32", "amp-bf16", "amp-fp16")
]
FINETUNE += [
    S(Q4, "H100 SXM", kind="finetune", method="lora", dora=True, lora_dropout=0.1, chunked_loss=True),
    S(Q4, "H100 SXM", kind="finetune", method="qlora", dora=True, activation_offload=True, attention="eager"),
    S(Q4, "H100 SXM", kind="finetune", method="lora", lora_targets=["q", "v"], lora_rank=64, attention="flash"),
    S(L8, "RTX 4090", kind="finetune", method="full"),
    S(Q4, "H100 SXM", kind="finetune", method="full", precision="amp-bf16", grad_checkpointing=True),
    S(Q4, "H100 SXM", kind="finetune", method="lora", precision="amp-bf16", grad_checkpointing=False),
    S(L8, "RTX 4090", kind="finetune", method="lora", seq_len=8192, micro_batch=4),
    S(L8, "RTX 4090", kind="finetune", method="lora", grad_accum=8),
    S(L8, "RTX 4090", kind="finetune", method="lora", expandable_segments=True),
    S(Q4, "H100 SXM", kind="finetune", method="lora", grad_checkpointing=False, lora_dropout=0.05),
    S("google/gemma-2-9b-it", "H100 SXM", kind="finetune", method="lora", grad_checkpointing=False, attention="eager"),
    S("Qwen/Qwen3-30B-A3B", "H100 SXM", kind="finetune", method="lora", grad_checkpointing=False, seq_len=1024),
    S(L8, "RTX 4090", kind="finetune", method="lora", seq_len=8192, mean_seq_len=3000),
    S(L8, "A100 80GB SXM", kind="finetune", method="full", micro_batch=16, seq_len=4096),
    S(L70, "A100 80GB SXM", gpus=8, parallel={"zero": 3}, kind="finetune", method="full"),
    S(L70, "A100 80GB SXM", gpus=8, parallel={"zero": 2, "offload": "optimizer"}, kind="finetune", method="full"),
    S(L70, "A100 80GB SXM", gpus=8, parallel={"zero": 3, "offload": "params"}, kind="finetune", method="full"),
    S(L70, "A100 80GB SXM", gpus=8, parallel={"zero": 1}, kind="finetune", method="full"),
    # DeepSpeed around another optimizer (its states on the fp32 partition; the larger of two step temporaries)
    S(L8, "A100 80GB SXM", gpus=8, parallel={"zero": 2}, kind="finetune", method="full", optimizer="sgd"),
    S(L8, "A100 80GB SXM", gpus=8, parallel={"zero": 3}, kind="finetune", method="full", optimizer="adamw-8bit"),
    S(L70, "A100 80GB SXM", gpus=8, parallel={"fsdp": True}, kind="finetune", method="full"),
    S(L70, "A100 80GB SXM", gpus=8, parallel={"fsdp": True, "offload": "params"}, kind="finetune", method="lora"),
    S(L70, "A100 80GB SXM", gpus=8, parallel={"fsdp": True, "fsdp_version": 2}, kind="finetune", method="lora"),
    S(
        L8,
        "RTX 4090",
        gpus=2,
        parallel={"fsdp": True},
        kind="finetune",
        method="lora",
        lora_targets=["q", "v"],
        seq_len=1536,
        grad_checkpointing=False,
    ),
    S(L70, "H100 SXM", gpus=8, parallel={"pp": 4, "tp": 2}, kind="finetune", method="full"),
    S(L8, "H100 SXM", gpus=4, parallel={"pp": 4}, kind="finetune", method="full", grad_accum=8),
    S(L8, "H100 SXM", gpus=2, kind="finetune", method="full"),
    S("Qwen/Qwen3-30B-A3B", "H100 SXM", kind="finetune", method="qlora"),
    S("Qwen/Qwen3-Next-80B-A3B-Thinking", "H100 SXM", kind="finetune", method="qlora"),
    S("openai/gpt-oss-20b", "H100 SXM", kind="finetune", method="lora"),
    S(Q4, None, kind="finetune", method="lora"),
    S("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "RTX 4090", kind="finetune", method="lora"),
    S("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "RTX 4090", kind="finetune", method="lora", grad_checkpointing=False),
    S("Qwen/Qwen2.5-7B-Instruct-AWQ", "RTX 4090", kind="finetune", method="lora", micro_batch=2),
    S("Qwen/Qwen3.5-4B", "H100 SXM", kind="finetune", method="lora", vision_tower="trained", grad_accum=4),
    S("Qwen/Qwen3.5-4B", "H100 SXM", kind="finetune", method="full", vision_tower="trained"),
    S(L8, "H100 SXM", kind="finetune", method="full", checkpoint_every=4, seq_len=8192),
    S(L8, "H100 SXM", gpus=2, kind="finetune", method="full", parallel={"tp": 2}, grad_checkpointing=False),
    S(L8, "H100 SXM", kind="finetune", method="lora", modules_to_save=["embed", "lm_head"], lora_bias="all"),
    # two machines: the data-parallel ring crosses the network
    S(L70, "H100 SXM", gpus=8, nodes=2, parallel={"zero": 3}, kind="finetune", method="full"),
    S(L70, "H100 SXM", gpus=8, nodes=2, parallel={"fsdp": True}, kind="finetune", method="lora"),
    # Adafactor's fp32 copies of the embedding outgrow every block the activations leave (new segments)
    S(L8, "H100 SXM", kind="finetune", method="full", optimizer="adafactor", seq_len=512),
    S(L8, "H100 SXM", kind="finetune", method="lora", adapter_dtype="base", grad_accum=2),
    S(L8, "A100 80GB SXM", kind="finetune", method="lora", precision="fp16", parallel={"zero": 2}),
    S(QWEN1.model_id, "A100 80GB SXM", kind="finetune", method="lora", precision="fp16", parallel={"zero": 2}),
    S(QWEN1.model_id, "A100 80GB SXM", kind="finetune", method="full", grad_accum=8, parallel={"zero": 2}),
    S(QWEN1.model_id, "A100 80GB SXM", kind="finetune", method="lora", optimizer="adamw-torch2.0", seq_len=8192),
    S(L70, "H100 SXM", gpus=8, kind="finetune", method="full", parallel={"fsdp": True, "fsdp_strategy": "hybrid"}),
    S(
        L8,
        "H100 SXM",
        gpus=8,
        kind="finetune",
        method="full",
        parallel={"fsdp": True, "fsdp_strategy": "shard-grad-op"},
    ),
]
SCENARIOS = INFERENCE + FINETUNE
#: form edits the window turns into error lines (pydantic's and the estimator's), with what the user typed (and
#: the module names the LoRA error lists): kept as they are
INVALID: list[tuple[dict[str, Any], set[str]]] = [
    ({"tp": 4, "gpu_count": 2}, set()),
    ({"weights": "bogus"}, {"bogus"}),
    ({"gpu": "Nonexistent GPU"}, {"Nonexistent GPU"}),
    ({"model": "acme/not-in-the-catalog"}, {"acme/not-in-the-catalog"}),
    ({"mode": "finetune", "lora_targets": "foo,bar"}, {"foo", "bar", "gate", "up", "down"}),
    ({"mode": "finetune", "pp": 2, "gpu_count": 2, "zero": 2}, set()),
    ({"mode": "finetune", "method": "qlora", "precision": "fp32"}, set()),
    ({"mode": "finetune", "method": "full", "model": "Qwen/Qwen2.5-7B-Instruct-AWQ"}, {"AWQ"}),
    ({"gpu_memory_utilization": 0.0}, set()),
    ({"engine": "vllm", "tp": 3, "gpu_count": 4}, set()),  # heads that tensor parallel cannot split
    ({"mode": "finetune", "gpu_count": 2, "zero": 2, "fsdp": True}, set()),
    ({"batch": 0}, set()),
]


def _gpu(s: Scenario) -> Any:
    return CAT.gpu(s.hardware.gpu) if s.hardware.gpu else None


def window_texts(s: Scenario) -> list[tuple[str, str]]:
    """(kind, English text) of everything core-made the window shows for ``s``: the verdict line, warnings,
    component and phase names, explanations, the Explain dialog's constants, the speed line's assumptions, the
    max-length readout and, when it does not fit, the listed changes."""
    ev = evaluate_scenario(s, resolve=_facts)
    if ev.view is None:
        return [("error", ev.error or "")]
    v = ev.view
    out = [("message", v.message)] + [("warning", w) for w in v.warnings]
    for p in v.estimate.phases:
        out.append(("phase", p.name))
        for c in p.components:
            out += [("name", c.name), ("explain", c.explain)]
    for c in v.estimate.device_overheads:
        out += [("name", c.name), ("explain", c.explain)]
    for key, value in v.estimate.constants.items():
        out += [("name", key), ("constant", value)]
    gpu = _gpu(s)
    if gpu is None:
        return out
    facts = _facts(s.model.id)
    try:
        out += [("assumption", a) for a in performance(v.estimate, s, facts, gpu).assumptions]
    except PerformanceError as err:
        out.append(("assumption", error_text(err)))
    field = "seq_len" if s.workload.kind == "finetune" else "input_len"
    try:
        out.append(("max", maximize(s, facts, gpu, field).message))
    except (SolveError, ValueError, LookupError) as err:
        out.append(("max", error_text(err)))
    if v.verdict == "does not fit":
        out += [("change", o.summary) for o in smallest_changes(s, facts, gpu, limit=8).options]
    return out


def error_texts() -> list[tuple[str, set[str]]]:
    """The error line of each invalid input, with the words to keep as they are."""
    base = form_from_scenario(DEFAULT_SCENARIO)
    out = []
    for edit, typed in INVALID:
        ev = evaluate_form(DEFAULT_SCENARIO, base.replace(**edit), resolve=CAT.facts)
        assert ev.error, edit  # each of these is invalid
        out.append((ev.error, typed))
    nodes = S(Q8, gpus=2, parallel={"tp": 2}, kind="inference").model_dump(mode="json")
    nodes["hardware"].update(nodes=2, gpu_count=1)
    with pytest.raises(ValidationError) as err:
        Scenario.model_validate(nodes)
    out.append((describe_error(err.value), set()))
    return out


def sweep() -> list[tuple[str, str, set[str]]]:
    """(kind, text, names to ignore: the scenario's GPU and model), each text once; a few in GB as well."""
    seen: dict[tuple[str, str], set[str]] = {}
    gpus = {g.name for g in CAT.gpus()}
    for s in SCENARIOS:
        for kind, text in window_texts(s):
            seen.setdefault((kind, text), gpus | {s.model.id})
    set_unit("GB")
    try:
        for s in (INFERENCE[0], INFERENCE[1], INFERENCE[17]):
            for kind, text in window_texts(s):
                seen.setdefault((kind, text), gpus | {s.model.id})
    finally:
        set_unit("GiB")
    for text, typed in error_texts():
        seen.setdefault(("error", text), gpus | typed | {DEFAULT_SCENARIO.model.id})
    return [(k, t, names) for (k, t), names in seen.items()]
