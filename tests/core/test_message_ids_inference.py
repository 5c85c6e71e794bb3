"""The inference texts carry message ids: the engines' component explanations and warnings, the KV explanation, the
weight formats' labels, layouts and errors, the estimate's warnings, notes, errors and constants, the GPU and
attention words. Each is built through the real code path, has an id in every piece, has a Chinese template with
the English template's placeholders, reads in Chinese without English words left, and keeps its numbers.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest
from familyoracle import oracle_records
from i18ncheck import CORE_WHITELIST, english_left, without_id

import vramdesk.core.engines as engines_package
from vramdesk.core import architecture, attention_impl, kv, kv_layers, llamacpp_fit, weight_format_text
from vramdesk.core import estimate as estimate_module
from vramdesk.core import gpu as gpu_module
from vramdesk.core.architecture import AttentionKind
from vramdesk.core.config_readers import normalize
from vramdesk.core.dtype_names import FormatError
from vramdesk.core.engines import (
    ENGINES,
    UnknownEngineError,
    base,
    engine,
    llamacpp,
    ollama,
    sglang,
    state_mixers,
    transformers,
    vllm,
    vllm_moe,
)
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.gpu import hardware_text
from vramdesk.core.kv import plan_kv
from vramdesk.core.messages import MESSAGES, Later, Message, Text, fields
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.core.weight_format import WeightFormat, _group_text, parse_weight_format
from vramdesk.services.catalog import default_catalog
from vramdesk.ui.core_text import localize
from vramdesk.ui.i18n import i18n_dir

LANG = "zh_CN"
CAT = default_catalog()
PREFIXES = (
    "weights.",
    "kv.",
    "transformers.",
    "vllm.",
    "llamacpp.",
    "ollama.",
    "sglang.",
    "engine.",
    "estimate.",
    "inventory.",
    "arch.",
    "gpu.",
    "attention.",
)
MODULES = (
    architecture,
    attention_impl,
    base,
    engines_package,
    estimate_module,
    gpu_module,
    kv,
    kv_layers,
    llamacpp,
    llamacpp_fit,
    ollama,
    sglang,
    state_mixers,
    transformers,
    vllm,
    vllm_moe,
    weight_format_text,
)
#: words the Chinese keeps as they are: a unit, an identifier written before its call parentheses, libraries,
#: kernels, tensors and dimensions the weight formats name, the tensor roles and format kinds an error lists,
#: what the tests type and Python's own words in a regular-expression error
KEPT = frozenset(
    [
        "EiB",
        "generate",
        "MTP",
        "GEMV",
        "gemv",
        "WQLinear_GEMVFast",
        "WQLinear_GEMV",
        "in",
        "out",
        "AutoGPTQ",
        "gptqmodel",
        "qweight",
        "qzeros",
        "SCB",
        "OCP",
        "MX",
        "llama-quantize",
        "Qwen",
        "ceil",
        "ModelOpt",
        "embedding",
        "norm",
        "bias",
        "attn",
        "mlp",
        "expert",
        "router",
        "conv",
        "vision",
        "mtp",
        "awq",
        "gptq",
        "gguf",
        "ct-int",
        "bits",
        "float",
        "bogus",
        "mystery",
        "safetensors",
        "headers",
        "re",
        "missing",
        "unterminated",
        "subpattern",
        "at",
        "position",
        # vLLM's MoE kernels and the GPU architecture they are laid out for (names)
        "Triton",
        "Marlin",
        "FlashInfer",
        "ROCm",
        "Hopper",
        # a Mamba mixer's tensor, and a mixer's own name (Kimi Delta Attention)
        "dt",
        "Kimi",
        "Delta",
        "Attention",
    ]
)
#: transformers 5.24's own default config per model type (benchmarks/data/transformers_families.jsonl)
_ORACLE = {mt: rec["config"] for mt, rec in oracle_records().items() if "config" in rec}
#: texts of other layers the inference texts pass through as they came (a refusal of quant_config's)
FOREIGN = ("unsupported quantisation method",)


def _table() -> dict[str, str]:
    data = json.loads((i18n_dir() / f"{LANG}.messages.inference.json").read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


def _defined_ids() -> set[str]:
    ids = set()
    for module in MODULES:
        for value in vars(module).values():
            if isinstance(value, Message):
                ids.add(value.id)
            elif isinstance(value, dict):
                ids |= {v.id for v in value.values() if isinstance(v, Message)}
    return ids


def _ids(t: object) -> set[str]:
    if not isinstance(t, Text):
        return set()
    out = {t.id} if t.id else set()
    for part in t.parts:
        out |= _ids(part)
    for value in t.args.values():
        out |= _ids(value)
    return out


def _s(model: str, gpu: str | None = "H100 SXM", weights: str = "auto", gpus: int = 1, **kw: Any) -> Scenario:
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


Q8, L70, L8 = "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-8B"
SCENARIOS = [
    _s(Q8, "RTX 4090", kind="inference"),
    _s(Q8, "RTX 4090", kind="inference", input_len=32000, attention="eager"),
    _s(Q8, None, kind="inference"),
    _s(Q8, "H100 SXM", kind="inference", input_len=30720, output_len=16, full_prompt_logits=True),
    _s(Q8, "H100 SXM", kind="inference", input_len=512, output_len=64, transformers_version="<=4.35"),
    _s("google/gemma-3-1b-it", "RTX 4090", kind="inference", input_len=16, batch=4),
    _s("EleutherAI/pythia-1b", "RTX 4090", kind="inference"),
    _s(L70, "RTX 4090", gpus=2, kind="inference", max_memory_gib=20),
    _s(L70, "RTX 4090", gpus=2, kind="inference", max_memory_gib=1),
    _s(Q8, "RTX 4090", kind="inference", max_memory_gib=6, cpu_memory_gib=2),
    _s(L70, "A100 80GB SXM", gpus=4, parallel={"tp": 4}, kind="inference"),
    _s("Qwen/Qwen2.5-7B-Instruct-AWQ", "RTX 4090", kind="inference", batch=8, input_len=2048),
    _s("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "RTX 4090", kind="inference"),
    _s(Q8, "T4", weights="nf4-dq", kind="inference", input_len=8192),
    _s(Q8, "L40S", weights="fp8", kind="inference", kv_dtype="fp8"),
    _s(Q8, "L40S", weights="fp8-block", kind="inference"),
    _s(Q8, "L40S", weights="int8", kind="inference"),
    _s(Q8, "L40S", weights="gptq-int4-g-1", kind="inference"),
    _s(Q8, "L40S", weights="awq-int4-gemv", kind="inference"),
    _s(Q8, "L40S", weights="int4", kind="inference"),
    _s(Q8, "L40S", weights="fp8-channel", kind="inference"),
    _s("openai/gpt-oss-20b", "RTX 4090", kind="inference", attention="flash"),
    _s(Q8, "H100 SXM", kind="inference", engine="vllm"),
    _s(Q8, None, kind="inference", engine="vllm"),
    _s(Q8, "RTX 4090", kind="inference", engine="vllm", batch=64, input_len=32000),
    _s("Qwen/Qwen3-32B", "RTX 4090", gpus=2, parallel={"tp": 2}, kind="inference", engine="vllm"),
    _s("Qwen/Qwen3-Next-80B-A3B-Thinking", "H100 SXM", kind="inference", engine="vllm"),
    _s(Q8, "H100 SXM", gpus=2, nodes=2, parallel={"tp": 2, "pp": 2}, kind="inference", engine="vllm"),
    # SGLang: its own fraction, no GPU, a fraction too small for the weights and one that leaves nothing outside,
    # a pool smaller than the requests, tensor parallel, linear-attention states
    _s(Q8, "H100 SXM", kind="inference", engine="sglang"),
    _s(Q8, None, kind="inference", engine="sglang"),
    _s(Q8, "H100 SXM", kind="inference", engine="sglang", sglang={"mem_fraction_static": 0.1}),
    _s(Q8, "H100 SXM", kind="inference", engine="sglang", sglang={"mem_fraction_static": 0.99}),
    _s(Q8, "RTX 4090", kind="inference", engine="sglang", batch=64, input_len=32000),
    _s("Qwen/Qwen3-32B", "RTX 4090", gpus=2, parallel={"tp": 2}, kind="inference", engine="sglang"),
    _s("Qwen/Qwen3-Next-80B-A3B-Thinking", "H100 SXM", gpus=4, parallel={"tp": 4}, kind="inference", engine="sglang"),
    _s(Q8, "H100 SXM", gpus=2, nodes=2, kind="inference"),
    _s(Q8, "RTX 4090", weights="q4_k_m", kind="inference", engine="llamacpp"),
    _s(Q8, "RTX 4090", weights="q8_0", kind="inference", engine="llamacpp", llamacpp={"flash_attn": False}),
    _s(Q8, "RTX 4090", weights="bf16", kind="inference", engine="llamacpp"),
    _s(Q8, "RTX 4090", weights="q4_k_m", kind="inference", engine="transformers"),
    _s(L70, "RTX 4090", weights="q4_k_m", kind="inference", engine="llamacpp", llamacpp={"n_gpu_layers": 40}),
    _s(L70, "RTX 4090", weights="q4_0", gpus=2, kind="inference", engine="llamacpp"),
    _s(L70, "RTX 4090", weights="q4_k_m", gpus=3, kind="inference", engine="llamacpp", llamacpp={"split_mode": "row"}),
    _s("Qwen/Qwen3-Next-80B-A3B-Thinking", "H100 SXM", kind="inference", engine="llamacpp", weights="q4_k_m"),
    # Ollama: its defaults on a 24 GiB card; an old release with a model that does not fit, more requests than
    # slots and the KV setting it does not read; num_gpu, a context cut to the model's and q8_0 without flash
    _s(Q8, "RTX 4090", weights="q4_k_m", kind="inference", engine="ollama"),
    _s(
        L70,
        "RTX 4090",
        weights="q4_k_m",
        kind="inference",
        engine="ollama",
        batch=8,
        kv_dtype="q8_0",
        ollama={"ollama_version": "0.2-0.6.6"},
    ),
    _s(
        Q8,
        "RTX 4090",
        weights="q4_k_m",
        kind="inference",
        engine="ollama",
        ollama={"num_gpu": 10, "num_ctx": 10_000_000, "kv_cache_type": "q8_0", "flash_attention": "off"},
    ),
    # llama.cpp disables Phi's sliding window
    _s("microsoft/phi-4", "H100 SXM", kind="inference", engine="llamacpp", weights="q4_k_m", input_len=32000),
    # 0 layers on the GPU: the CUDA backend stages the largest expert tensor in the compute buffer
    _s(
        "deepseek-ai/DeepSeek-V3",
        "RTX 4090",
        kind="inference",
        engine="llamacpp",
        weights="q4_k_m",
        llamacpp={"n_gpu_layers": 0},
    ),
    # MoE experts in host memory (--n-cpu-moe / --cpu-moe): the compute buffer stages one expert tensor
    _s(
        "Qwen/Qwen3-30B-A3B",
        "RTX 4090",
        kind="inference",
        engine="llamacpp",
        weights="q4_k_m",
        llamacpp={"n_cpu_moe": 20},
    ),
    _s(
        "Qwen/Qwen3-30B-A3B",
        "RTX 4090",
        gpus=2,
        kind="inference",
        engine="llamacpp",
        weights="q4_k_m",
        llamacpp={"n_cpu_moe": 20},
    ),
    _s(
        "Qwen/Qwen3-235B-A22B",
        "RTX 4090",
        kind="inference",
        engine="llamacpp",
        weights="q4_k_m",
        llamacpp={"n_cpu_moe": 999},
    ),
    _s("Qwen/Qwen3.5-4B", "H100 SXM", kind="inference"),
    _s("Qwen/Qwen3.5-4B", "H100 SXM", kind="inference", engine="llamacpp", weights="q4_k_m"),
    # llama.cpp's --fit: the layers it places on one GPU, on two (an MoE model's experts in host memory; a margin
    # that leaves the first GPU no layer and the last the output layer alone), and the plans it leaves alone
    _s(L70, "RTX 4090", weights="q4_k_m", kind="inference", engine="llamacpp", llamacpp={"fit": True}),
    _s("Qwen/Qwen3-30B-A3B", "RTX 4090", kind="inference", engine="llamacpp", llamacpp={"fit": True}),
    _s(
        "meta-llama/Llama-3.1-405B",
        "RTX 4090",
        gpus=2,
        kind="inference",
        engine="llamacpp",
        input_len=8192,
        llamacpp={"fit": True, "fit_target_mib": 16000},
    ),
    _s(
        L70,
        "RTX 4090",
        weights="q4_k_m",
        kind="inference",
        engine="llamacpp",
        llamacpp={"fit": True, "n_gpu_layers": 80},
    ),
    _s(
        L70,
        "RTX 4090",
        weights="q8_0",
        gpus=2,
        kind="inference",
        engine="llamacpp",
        llamacpp={"fit": True, "split_mode": "row"},
    ),
    _s("Qwen/Qwen3-30B-A3B", "RTX 4090", kind="inference", engine="llamacpp", llamacpp={"fit": True, "n_cpu_moe": 4}),
    _s("deepseek-ai/DeepSeek-V3", "H200 SXM", gpus=8, kind="inference", engine="vllm", parallel={"tp": 8}),
    _s("deepseek-ai/DeepSeek-V3", "H200 SXM", gpus=8, kind="inference", input_len=1024),
    _s("meta-llama/Llama-4-Scout-17B-16E-Instruct", "H200 SXM", gpus=2, kind="inference", input_len=1024),
    _s("google/gemma-2-9b-it", "RTX 4090", kind="inference", input_len=9000),
    _s(L8, "A100 80GB SXM", gpus=2, kind="finetune", method="full"),
    _s("openai/gpt-oss-20b", "H100 SXM", kind="finetune", method="lora"),
]
#: scenarios the estimate refuses, with the id of the refusal
REFUSED = [
    (_s(Q8, "H100 SXM", gpus=2, nodes=2, parallel={"tp": 2, "pp": 2}, kind="inference"), "estimate.one_machine_engine"),
    (
        _s("meta-llama/Llama-3.1-405B", kind="inference", batch=65536, input_len=16_000_000, kv_dtype="fp32"),
        "estimate.too_large",
    ),
    (_s(Q8, "RTX 4090", kind="inference", engine="llamacpp", llamacpp={"n_cpu_moe": 8}), "llamacpp.cpu_moe.no_experts"),
]


def _estimate_texts(est: Estimate) -> list[str]:
    out: list[str] = [c.explain for p in est.phases for c in p.components]
    out += [c.explain for g in est.per_gpu for c in g.components]
    out += [c.explain for c in est.device_overheads]
    out += list(est.warnings) + list(est.params.notes) + list(est.constants.values())
    return out


def _direct_texts() -> list[str]:
    """What no estimate of the catalog reaches: the GPU words, every attention kind, the layer transients of each
    MLP kind, the vLLM refusals, every weight format and its errors."""
    out: list[str] = [hardware_text("H100 SXM", 1), hardware_text("H100 SXM", 8), hardware_text("H100 SXM", 8, 2)]
    llama = CAT.facts(L8).arch
    layer = llama.layers[0]
    kinds = {
        AttentionKind.FULL: layer,
        AttentionKind.SLIDING: layer.model_copy(update={"attention": AttentionKind.SLIDING, "window": 4096}),
        AttentionKind.CHUNKED: layer.model_copy(update={"attention": AttentionKind.CHUNKED, "window": 8192}),
        AttentionKind.MLA: layer.model_copy(update={"attention": AttentionKind.MLA}),
        AttentionKind.LINEAR: layer.model_copy(update={"attention": AttentionKind.LINEAR}),
        AttentionKind.NONE: layer.model_copy(update={"attention": AttentionKind.NONE}),
    }
    every = llama.model_copy(update={"layers": tuple(kinds.values())})
    out.append(every.attention_summary)
    for eng in ENGINES.values():
        plan = plan_kv(every, eng, tokens=4096, seqs=2, kv_bits=16, compute_bytes=2)
        out.append(plan.explain)
        none = plan_kv(
            every, eng, tokens=4096, seqs=2, kv_bits=16, compute_bytes=2, layers=(kinds[AttentionKind.NONE],)
        )
        out.append(none.explain)
    mixtral = CAT.facts("mistralai/Mixtral-8x7B-v0.1").arch
    pythia = CAT.facts("EleutherAI/pythia-1b").arch
    for arch in (mixtral, pythia, llama):
        for lay in arch.layers[:1]:
            out.append(base._dense_layer_transient(arch, lay, 4096, 2, moe_loop=True)[1])
    # a Mamba-2 mixer's transient (Nemotron-H's M layers)
    hybrid = normalize(
        {
            "model_type": "nemotron_h", "hybrid_override_pattern": "M*", "num_hidden_layers": 2, "hidden_size": 256,
            "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
            "mamba_num_heads": 8, "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 1,
        }
    )  # fmt: skip
    out.append(base._attention_transient(hybrid, hybrid.layers[0], 4096, 2, 4096, 2, "sdpa")[1])
    # the Mamba-1, short-convolution and Kimi Delta Attention mixers' transients (transformers' default configs)
    lfm2 = {**_ORACLE["lfm2"], "layer_types": ["conv", "full_attention"] * 16}
    lfm2.pop("full_attn_idxs")
    for config in (_ORACLE["mamba"], lfm2, _ORACLE["kimi_linear"]):
        arch = normalize(config)
        mixer = next(lay for lay in arch.layers if lay.attention == AttentionKind.LINEAR)
        out.append(base._attention_transient(arch, mixer, 4096, 2, 4096, 2, "sdpa")[1])
    # DeepSeek-V4's compressed layers in a KV plan's words (transformers' default config)
    v4 = normalize(_ORACLE["deepseek_v4"])
    out.append(plan_kv(v4, ENGINES["vllm"], tokens=4096, seqs=1, kv_bits=16, compute_bytes=2).explain.text())
    out += [
        vllm.vllm_tp_problem(CAT.facts("Qwen/Qwen2.5-7B").arch, 7) or "",
        vllm.vllm_tp_problem(llama, 3) or "",
        sglang.sglang_tp_problem(CAT.facts("Qwen/Qwen2.5-7B").arch, 7) or "",
        sglang.sglang_tp_problem(llama, 3) or "",
        sglang.BUDGET_LABEL(fraction=0.85),
    ]
    for name in ("bf16", "fp32", "fp16", "fp8", "fp8-block", "fp8-block-64x64", "fp8-channel", "int8", "int4"):
        out += _format_texts(parse_weight_format(name))
    for name in ("nf4", "nf4-dq", "fp4", "gptq-int4", "gptq-int8-g-1", "gptq-int3-g32", "awq-int4", "awq-int4-g64"):
        out += _format_texts(parse_weight_format(name))
    for name in ("awq-int4-gemv", "awq-int4-gemv-fast", "mxfp4", "q4_k_m", "q8_0", "gguf-f16", "mxfp4_moe"):
        out += _format_texts(parse_weight_format(name))
    from vramdesk.core import weight_format as wf

    gptq = wf._gptq_format("bf16", 4, 128, desc_act=True)
    out += _format_texts(gptq)
    out += _format_texts(wf._nvfp4_format("bf16", (), 8, "ModelOpt"))
    out += _format_texts(wf._fp8_format("bf16", block=None, static_act=True))
    out += _format_texts(wf._fp8_format("bf16", block=(128, 128), static_act=True))
    out += [_group_text(-1), _group_text(64)]
    out += _format_errors()
    with pytest.raises(UnknownEngineError) as info:
        engine("mystery")
    out.append(info.value.args[0])
    return out


def _format_texts(fmt: WeightFormat) -> list[str]:
    return [fmt.label, fmt.explain]


def _format_errors() -> list[str]:
    from vramdesk.core import weight_format as wf

    good = parse_weight_format("gptq-int4")
    attempts = [
        lambda: parse_weight_format("bogus"),
        lambda: parse_weight_format("gptq-int5"),
        lambda: parse_weight_format("fp8-block-0x128"),
        lambda: parse_weight_format(3),  # type: ignore[arg-type]
        lambda: wf._gptq_format("bf16", 5, 128),
        lambda: wf._gptq_format("bf16", 4, 0),
        lambda: wf._awq_format("bf16", 8, 128),
        lambda: wf._awq_format("bf16", 4, 0),
        lambda: replace(good, kind="mystery"),
        lambda: replace(good, base_dtype="fp64"),
        lambda: replace(good, quantized_roles=frozenset({"mystery"})),
        lambda: replace(good, kind="gguf", layout="mystery"),
        lambda: replace(good, skip_patterns=(3,)),  # type: ignore[arg-type]
        lambda: replace(good, skip_patterns=("re:(",)),
        lambda: wf._matcher(("re:(",)),
        lambda: good.is_quantized("x", "mystery"),
        lambda: good.tensor_bytes("x", "attn", (4096, -1)),
        lambda: good.ggml_type("x", "attn", (4096, 4096)),
        lambda: replace(good, kind="fp8", scale_layout="mystery").tensor_bytes("x", "attn", (64, 64)),
        lambda: replace(parse_weight_format("awq-int4-gemv"), group_size=96).tensor_bytes("x", "attn", (64, 192)),
        lambda: replace(good, kind="float", quantized_roles=frozenset({"attn"}))._matrix_bytes(64, 64),
    ]
    out: list[str] = []
    for attempt in attempts:
        try:
            attempt()
        except FormatError as err:
            message = err.args[0]
            assert isinstance(message, Text) and message.id.startswith("weights.error."), message
            assert str(err) == message
            out.append(message)
    return out


@pytest.fixture(scope="module")
def texts() -> list[tuple[str, set[str]]]:
    return all_texts()


def all_texts() -> list[tuple[str, set[str]]]:
    """(text, names kept as they are) of every inference text the tests reach."""
    out: list[tuple[str, set[str]]] = []
    for s in SCENARIOS:
        gpu = CAT.gpu(s.hardware.gpu) if s.hardware.gpu else None
        est = estimate(s, CAT.facts(s.model.id), gpu)
        names = {s.model.id, s.hardware.gpu or ""}
        out += [(t, names) for t in _estimate_texts(est) if _ids(t) & _mine()]
    for s, mid in REFUSED:
        with pytest.raises(EstimateError) as info:
            estimate(s, CAT.facts(s.model.id), CAT.gpu(s.hardware.gpu or ""))
        message = info.value.args[0]
        assert isinstance(message, Text) and message.id == mid and str(info.value) == message
        out.append((message, set()))
    out += [(t, {"H100 SXM"}) for t in _direct_texts()]
    out += [(t, {"H100 SXM"}) for t in _estimate_special()]
    # (a KV plan's or a layer transient's words are built when read: read them)
    return [(t.text() if isinstance(t, Later) else t, names) for t, names in out]


def _estimate_special() -> list[str]:
    """The estimate's texts that need a changed model: a checkpoint's stored tensors, an unreadable quantization
    config, a context past max_position_embeddings, an MTP head, a vision tower, a checkpoint trained dequantised."""
    out: list[str] = []
    qwen = CAT.facts(Q8)
    h100 = CAT.gpu("H100 SXM")
    for source in ("safetensors headers", ""):
        stored = replace(qwen, checkpoint=qwen.tensors, checkpoint_source=source, _cache={})
        est = estimate(_s(Q8, kind="inference"), stored, h100)
        out += [c.explain for c in est.components if c.name == "weights"]
    broken = replace(qwen, arch=qwen.arch.model_copy(update={"quantization_config": {"quant_method": "bogus"}}))
    with pytest.raises(EstimateError) as info:
        estimate(_s(Q8, kind="inference"), broken, h100)
    out.append(info.value.args[0])
    est = estimate(_s(Q8, kind="inference", input_len=40000, output_len=1000), qwen, h100)
    out += list(est.warnings)
    for model, eng in (("deepseek-ai/DeepSeek-V3", "vllm"), ("Qwen/Qwen3.5-4B", "transformers")):
        est = estimate(_s(model, kind="inference", engine=eng), CAT.facts(model), h100)
        out += [n for n in est.params.notes if _ids(n) & _mine()]
    est = estimate(
        _s("Qwen/Qwen3.5-4B", kind="inference", engine="llamacpp", weights="q4_k_m"), CAT.facts("Qwen/Qwen3.5-4B"), h100
    )
    out += [n for n in est.params.notes if _ids(n) & _mine()]
    gpt_oss = CAT.facts("openai/gpt-oss-20b")
    est = estimate(_s("openai/gpt-oss-20b", kind="finetune", method="lora"), gpt_oss, h100)
    out += [w for w in est.warnings if _ids(w) & _mine()]
    # vLLM's max_model_len: its own default (the model's context) would not start; a plan longer than the one set;
    # one set too long to start
    llama = CAT.facts("meta-llama/Llama-3.1-8B")
    for vllm_opts in ({}, {"max_model_len": 2048}, {"max_model_len": 100_000}):
        s = _s(llama.model_id, gpu="RTX 4090", kind="inference", engine="vllm", vllm=vllm_opts)
        est = estimate(s, llama, CAT.gpu("RTX 4090"))
        out += [w for w in est.warnings if _ids(w) & _mine()] + ([est.fit.message] if est.fit else [])
    # vLLM's start-up check (gpt-oss-120b at max_model_len 131072; at utilization 0.8 the weights leave no room)
    big = CAT.facts("openai/gpt-oss-120b")
    for util in (0.9, 0.8):
        s = _s(big.model_id, kind="inference", engine="vllm", input_len=130560, vllm={"gpu_memory_utilization": util})
        est = estimate(s, big, h100)
        out += [c.explain for c in est.components if c.name == "weights"] + ([est.fit.message] if est.fit else [])
    # vLLM by release (engines/vllm_versions.py): 0.8's non-torch memory with the CUDA context inside the budget (one
    # GPU, TP 2), the sort of 0.10's sampler, 0.19's CUDA-graph estimate inside the pool (and no room left for the
    # cache with it), and the memory outside gpu_memory_utilization too small for the context or for the graphs
    runs = (
        (L8, 1, {"version": "0.8"}),
        (L8, 2, {"version": "0.8"}),
        (big.model_id, 1, {"version": "0.8"}),
        (L8, 1, {"version": "0.10"}),
        (L8, 1, {"version": "0.19", "estimate_cudagraphs": True}),
        (big.model_id, 1, {"version": "0.19", "estimate_cudagraphs": True, "gpu_memory_utilization": 0.8}),
        (L8, 1, {"gpu_memory_utilization": 0.99}),
        (L8, 1, {"gpu_memory_utilization": 0.995}),
    )
    for model, gpus, vllm_opts in runs:
        s = _s(model, gpus=gpus, parallel={"tp": gpus}, kind="inference", engine="vllm", vllm=vllm_opts)
        est = estimate(s, CAT.facts(model), h100)
        out += [c.explain for c in (*est.components, *est.device_overheads)]
        out += [est.fit.message] if est.fit else []
    # (one request of max_model_len too long for the cache left: gpt-oss-120b at 131072 tokens, 1024 sequences)
    s = _s(big.model_id, kind="inference", engine="vllm", input_len=130560, vllm={"max_num_seqs": 1024})
    est = estimate(s, big, h100)
    out += [est.fit.message] if est.fit else []
    # DeepSeek Sparse Attention's indexer keys beside the MLA cache (DeepSeek-V3.2's config from the coverage corpus)
    with open("benchmarks/data/config_corpus/deepseek-ai__DeepSeek-V3.2.json", encoding="utf-8") as f:
        dsa = model_facts(json.load(f))
    for eng in ("vllm", "transformers"):
        est = estimate(_s("deepseek-ai/DeepSeek-V3.2", kind="inference", engine=eng), dsa, h100)
        out += [c.explain for c in est.components if c.name == "KV cache"]
    # transformers up to 5.14 cached the expanded K and V of every MLA head
    old = _s("deepseek-ai/DeepSeek-V3.2", kind="inference", engine="transformers", transformers_version="5.0-5.14")
    out += [c.explain for c in estimate(old, dsa, h100).components if c.name == "KV cache"]
    return out


def _mine() -> set[str]:
    return {i for i in MESSAGES if i.startswith(PREFIXES)}


# ------------------------------------------------------------------------------------------ the checks


def test_every_message_is_reached(texts) -> None:
    reached = set().union(*(_ids(t) for t, _names in texts))
    defined = {i for i in _defined_ids() if i.startswith(PREFIXES)}
    assert defined == _mine()
    assert not defined - reached, sorted(defined - reached)


#: pieces of other layers' English the inference texts pass through as they came (the services' source of a
#: checkpoint, quant_config's refusal): they get their ids where they are made
OTHERS = ("safetensors headers", "unsupported quantisation method 'bogus'")


def test_every_piece_has_an_id(texts) -> None:
    missing = {piece for t, _names in texts for piece in without_id(t) if not piece.startswith(OTHERS)}
    assert not missing, sorted(missing)


def test_every_message_has_a_chinese_template_with_the_same_placeholders() -> None:
    table = _table()
    for mid in sorted(_mine()):
        assert mid in table, f"{mid} has no Chinese template in {LANG}.messages.inference.json"
        assert fields(table[mid]) == fields(MESSAGES[mid]), mid
    assert not set(table) - _mine(), "Chinese templates for ids no module defines"


def test_the_chinese_leaves_no_english(texts) -> None:
    left = {}
    for t, names in texts:
        if any(foreign in t for foreign in FOREIGN):
            continue
        zh = localize(t, LANG)
        words = [w for w in english_left(zh, names, CORE_WHITELIST) if w not in KEPT]
        if words:
            left[str(t)] = (zh, words)
    assert not left, left


_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


def test_the_numbers_survive(texts) -> None:
    for t, _names in texts:
        zh = localize(t, LANG)
        assert set(_NUMBER.findall(str(t))) <= set(_NUMBER.findall(zh)), (str(t), zh)


def test_the_gpus_and_the_attention_kinds_are_texts() -> None:
    one, eight, two = hardware_text("H100 SXM", 1), hardware_text("H100 SXM", 8), hardware_text("H100 SXM", 8, 2)
    assert (one, eight, two) == ("H100 SXM", "8 x H100 SXM", "2 machines x 8 x H100 SXM")
    assert localize(two, LANG) == "2 台机器 x 8 x H100 SXM"
    summary = CAT.facts("google/gemma-2-9b-it").arch.attention_summary
    assert summary == "21 full, 21 sliding" and isinstance(summary, Text)
    assert localize(summary, LANG) == "21 层全注意力，21 层滑动窗口"
