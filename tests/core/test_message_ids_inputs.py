"""The inputs' texts carry message ids: the errors of invalid scenarios (the validators' and pydantic's own, as
the window's error line words them), of config.json, quantization_config, safetensors and GGUF headers and strict
JSON, the dtype and GGUF-type errors, and the generic-decoder warning. Each is built by the real code path, has an
id for every piece, a Chinese template with the English placeholders, reads without English words in Chinese and
keeps its numbers.
"""

from __future__ import annotations

import copy
import json
import re
import struct
from collections.abc import Callable
from typing import Any

import pytest
from fakehub import TINY_CONFIG, tiny_llama_tensors
from i18ncheck import CORE_WHITELIST, english_left, without_id
from pydantic import ValidationError
from qwen1config import QWEN7B

from vramdesk.core import constants as K
from vramdesk.core import jsonsafe
from vramdesk.core.architecture import ConfigError
from vramdesk.core.checkpoint import CheckpointError, parse_safetensors_header
from vramdesk.core.config_readers import normalize
from vramdesk.core.config_readers.fields import _CONFIG_BOUNDS, _check_bound
from vramdesk.core.dtype_names import FormatError, _base_dtype, kv_bits, normalize_dtype
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.gguf import gguf_mix_type, gguf_tensor_bytes
from vramdesk.core.gguf_header import (
    GgufHeader,
    GgufTensorInfo,
    gguf_entry_bytes,
    gguf_to_config,
    parse_gguf_header,
    tensors_from_gguf,
)
from vramdesk.core.header_inventory import read_inventory
from vramdesk.core.messages import MESSAGES, Text, fields
from vramdesk.core.quant_config import format_from_quantization_config
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog
from vramdesk.ui.core_text import localize, message_table
from vramdesk.ui.presenter import describe_error
from vramdesk.validation_text import validation_text

LANG = "zh_CN"
CAT = default_catalog()
AREAS = ("input.", "config.", "format.", "gguf.", "checkpoint.", "quant.", "family.", "pydantic.")
#: words kept as they are in Chinese: formats, libraries, model and function names, JSON's literals and escapes,
#: Python's type names
NAMES = {
    "JSON",
    "safetensors",
    "compressed-tensors",
    "pack-quantized",
    "int-quantized",
    "naive-quantized",
    "float-quantized",
    "nvfp4-pack-quantized",
    "ModelOpt",
    "gptq",
    "gemm",
    "gemv",
    "ipex",
    "Llama",
    "Mamba",
    "RMSNorm",
    "softmax",
    "vramdesk",
    "ID",
    "weights",
    "true",
    "false",
    "null",
    "NaN",
    "nan",
    "begin",
    "end",
    "nf4",
    "fp4",
    "tensor",
    "channel",
    "group",
    "block",
    "bytes",
    "bytearray",
    "\\ud800-\\udfff",
    "\\uXXXX",
}
#: Python's own words, kept as it wrote them (a UnicodeDecodeError's message)
PYTHON_WORDS = re.compile(r"'utf-8' codec can't decode byte 0x[0-9a-f]+ in position \d+[:：] ?[a-z ]+")
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?(?:e[+-]?\d+)?")

LLAMA: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "intermediate_size": 1024,
    "vocab_size": 1000,
}


#: a small Nemotron-H config (one Mamba, attention, MLP and MoE layer)
_NEMOTRON: dict[str, Any] = {
    "model_type": "nemotron_h", "hybrid_override_pattern": "M*-E", "num_hidden_layers": 4, "hidden_size": 256,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
    "mamba_num_heads": 8, "mamba_head_dim": 32, "ssm_state_size": 16, "n_groups": 2, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "moe_intermediate_size": 128,
}  # fmt: skip


_DSA: dict[str, Any] = {
    "model_type": "glm_moe_dsa", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 512, "vocab_size": 1000, "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32,
    "qk_rope_head_dim": 16, "v_head_dim": 32, "index_n_heads": 4, "index_head_dim": 32,
}  # fmt: skip

#: a small DeciLM (nemotron-nas) config: two layers, attention and FFN in each
_NAS_BLOCK: dict[str, Any] = {"attention": {"n_heads_in_group": 2, "no_op": False}, "ffn": {"ffn_mult": 2.0}}
_NAS: dict[str, Any] = {
    "model_type": "nemotron-nas", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
    "vocab_size": 1000, "block_configs": [_NAS_BLOCK, _NAS_BLOCK],
}  # fmt: skip


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _raised(call: Callable[[], object], error: type[BaseException] = ValueError) -> Text:
    with pytest.raises(error) as info:
        call()
    message = info.value.args[0]
    assert isinstance(message, Text), f"{type(info.value).__name__}: {info.value}"
    assert str(info.value) == message  # str(err) is the English sentence
    return message


# ------------------------------------------------------------------------------------------ the texts


def _scenario_errors() -> list[Text]:
    """The window's error line (describe_error) for invalid scenarios: validators' Texts and pydantic's own."""
    base: dict[str, Any] = {"model": {"id": "x"}}
    bad: list[dict[str, Any]] = [
        {"model": {"id": " "}},
        {"model": {"id": ""}},
        {},
        {**base, "zzz": 1},
        {**base, "workload": {"kind": "bogus"}},
        {**base, "workload": 5},
        {**base, "workload": {"kind": "inference", "batch": "q"}},
        {**base, "workload": {"kind": "inference", "batch": 1.5}},
        {**base, "workload": {"kind": "inference", "batch": 0, "input_len": -1}},
        {**base, "workload": {"kind": "inference", "attention": "bogus"}},
        {**base, "workload": {"kind": "inference", "vllm": {"gpu_memory_utilization": 2}}},
        {**base, "workload": {"kind": "inference", "vllm": {"gpu_memory_utilization": 0}}},
        {**base, "hardware": {"gpu_count": 4096, "nodes": 4096}},
        {**base, "parallelism": {"tp": 4}},
        {**base, "parallelism": {"tp": 2, "pp": 2}, "hardware": {"gpu_count": 1, "nodes": 2}},
        {**base, "parallelism": {"tp": 2}, "hardware": {"gpu_count": 1, "nodes": 2}},
        {**base, "workload": {"kind": "finetune", "modules_to_save": ["foo"]}},
        {**base, "workload": {"kind": "finetune", "seq_len": 100, "mean_seq_len": 200}},
        {**base, "workload": {"kind": "finetune", "method": "full", "lora_bias": "all"}},
        {**base, "workload": {"kind": "finetune", "method": "lora", "optimizer": "galore-adamw"}},
        {**base, "workload": {"kind": "finetune", "method": "full", "optimizer": "lomo", "grad_accum": 4}},
        {**base, "workload": {"kind": "finetune", "method": "lora", "block_training": "lisa"}},
        {**base, "workload": {"kind": "finetune", "method": "full", "block_training": "badam", "optimizer": "lomo"}},
        {**base, "name": "x" * 300},
    ]
    out = []
    for data in bad:
        with pytest.raises(ValidationError) as info:
            Scenario.model_validate(data)
        shown = describe_error(info.value)
        assert isinstance(shown, Text)
        assert shown == _old_describe(info.value)  # the English the window always showed
        out.append(shown)
    return out


def _old_describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"])
        msg = str(e["msg"]).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


#: a small Gemma 4 text config: three sliding layers, then a global one
_GEMMA4: dict[str, Any] = {
    "model_type": "gemma4_text",
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "intermediate_size": 512,
    "vocab_size": 1000,
    "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
}


def _config_errors() -> list[Text]:
    moe = _with(LLAMA, model_type="mixtral", num_local_experts=8, num_experts_per_tok=2)
    bigcode = {"model_type": "gpt_bigcode", "n_embd": 100, "n_head": 3, "n_layer": 2, "vocab_size": 100}
    scout = CAT.config("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    nxt = CAT.config("Qwen/Qwen3-Next-80B-A3B-Thinking")
    configs: list[object] = [
        [1],
        {"hidden_size": 1},
        _with(LLAMA, rope_theta=float("nan")),
        _with(LLAMA, hidden_size="abc"),
        _with(LLAMA, num_hidden_layers=0),
        _with(LLAMA, num_hidden_layers=5000),
        _with(LLAMA, hidden_size=None),
        _with(bigcode, n_embd=None),
        _with(LLAMA, model_type="mistral", sliding_window=128, use_sliding_window="yes"),
        _with(moe, model_type="qwen2_moe", num_experts=8, mlp_only_layers="x"),
        _with(LLAMA, num_key_value_heads=3),
        bigcode,
        _with(LLAMA, hidden_size=100, num_attention_heads=3, num_key_value_heads=3),
        _with(LLAMA, layer_types=[1, 2, 3, 4]),
        _with(LLAMA, layer_types=["full_attention"]),
        _with(LLAMA, layer_types=["foo"] * 4),
        _with(LLAMA, quantization_config="x"),
        _with(moe, num_experts_per_tok=9),
        _with(LLAMA, layer_types=["sliding_attention"] * 4),
        _with(LLAMA, intermediate_size=None),
        _with(scout, text_config={**scout["text_config"], "no_rope_layers": [1, 0]}),
        _with(scout, text_config={**scout["text_config"], "no_rope_layers": "x"}),
        _with(nxt, linear_num_value_heads=17),
        _with(QWEN7B, intermediate_size=22017),
        _with(LLAMA, model_type="foo_model", hidden_size=None),
        {"model_type": "gemma3_text", **_with(LLAMA, model_type=None, sliding_window=None)},
        {"model_type": "opt", "hidden_size": 96, "num_attention_heads": 3, "layer_norm_elementwise_affine": False},
        _with(LLAMA, model_type="cohere2", sliding_window=128, sliding_window_pattern="LXG"),
        # Nemotron-H: an unknown layer letter, a pattern of the wrong length, Mamba heads that do not split into the
        # groups
        _with(_NEMOTRON, hybrid_override_pattern="M*X-"),
        _with(_NEMOTRON, hybrid_override_pattern="M*"),
        _with(_NEMOTRON, n_groups=3),
        # DeepSeek Sparse Attention: an unknown indexer type, an indexer_types list of the wrong length
        _with(_DSA, indexer_types=["full", "sparse"]),
        _with(_DSA, indexer_types=["full"]),
        # MiniMax-M2 with a lightning-attention layer; DeciLM block_configs of the wrong length, of a kind not
        # supported, not an object, with a bad ffn_mult
        _with(LLAMA, model_type="minimax_m2", num_local_experts=8, num_experts_per_tok=2, attn_type_list=[0, 1, 1, 1]),
        _with(_NAS, block_configs=_NAS["block_configs"][:1]),
        _with(_NAS, block_configs=[_NAS_BLOCK, {**_NAS_BLOCK, "ffn": {"replace_with_linear": True}}]),
        _with(_NAS, block_configs=[_NAS_BLOCK, {"attention": 1, "ffn": {}}]),
        _with(_NAS, block_configs=[_NAS_BLOCK, {**_NAS_BLOCK, "ffn": {"ffn_mult": -1}}]),
        # --- mla --- mlp_layer_types with an unknown entry, of the wrong length
        _with(_DSA, model_type="glm4_moe_lite", mlp_layer_types=["dense", "moe"]),
        _with(_DSA, model_type="glm4_moe_lite", mlp_layer_types=["dense"]),
        # Gemma 4 / 3n: more shared-KV layers than layers, a shared layer kind no earlier layer produces,
        # per_layer_config with a field not read and an entry out of range, per-layer widths of the wrong length
        _with(_GEMMA4, num_kv_shared_layers=9),
        _with(_GEMMA4, num_kv_shared_layers=1),
        _with(_GEMMA4, per_layer_config={"1": {"rope_theta": 1.0}}),
        _with(_GEMMA4, per_layer_config={"7": {"head_dim": 64}}),
        _with(_GEMMA4, intermediate_size=[512, 512]),
        # vision-language families with towers of their own (config_readers/ownvlm.py): a bad mlp_ratio, a
        # merge_kernel_size that is not a pair, per-layer lists of the wrong length or with an unknown entry, a
        # sparse_attention_config that is not an object
        {**LLAMA, "model_type": "qwen2_vl", "vision_config": {"mlp_ratio": "four"}},
        {"model_type": "kimi_k25", "text_config": _DSA, "vision_config": {"merge_kernel_size": [2]}},
        _with(LLAMA, model_type="minimax_m3", moe_layer_freq=[1]),
        _with(LLAMA, model_type="minimax_m3", mlp_layer_types=["moe"] * 4),
        _with(LLAMA, model_type="minimax_m3", sparse_attention_config=[1]),
        # --- ssm --- Mamba-2 heads x head_dim short of expand x hidden; Granite 4.0-H layer_types with an unknown
        # kind, of the wrong length; Bamba attn_layer_indices past the last layer
        {"model_type": "mamba2", "hidden_size": 256, "num_hidden_layers": 2, "num_heads": 8, "head_dim": 32},
        _with(LLAMA, model_type="granitemoehybrid", layer_types=["mamba", "attention", "mamba", "cross_attention"]),
        _with(LLAMA, model_type="granitemoehybrid", layer_types=["mamba", "attention"]),
        _with(LLAMA, model_type="bamba", mamba_n_heads=16, mamba_d_head=64, mamba_d_state=16, attn_layer_indices=[4]),
        # --- recurrent --- LFM2 layer_types not strings, of the wrong length, with an unknown kind; full_attn_idxs past
        # the last layer; a negative block_ffn_dim_multiplier; Kimi Linear's 1-based layer lists past the last layer,
        # leaving a layer without a kind
        _with(LLAMA, model_type="lfm2", layer_types=[0, 1, 0, 1]),
        _with(LLAMA, model_type="lfm2", layer_types=["conv", "full_attention"]),
        _with(LLAMA, model_type="lfm2", layer_types=["conv", "conv", "mamba", "full_attention"]),
        _with(LLAMA, model_type="lfm2", full_attn_idxs=[1, 4]),
        _with(LLAMA, model_type="lfm2", block_ffn_dim_multiplier=-1.5),
        _with(LLAMA, model_type="kimi_linear", linear_attn_config={"full_attn_layers": [5], "kda_layers": [1, 2, 3]}),
        _with(LLAMA, model_type="kimi_linear", linear_attn_config={"full_attn_layers": [4], "kda_layers": [1, 2]}),
        # --- dense2 --- GPT-Neo attention_types with a kind neither global nor local, describing too few layers; MPT
        # attn_config not an object, with an unknown attn_type
        _with(LLAMA, model_type="gpt_neo", attention_types=[[["global", "sliding"], 2]]),
        _with(LLAMA, model_type="gpt_neo", attention_types=[[["global", "local"], 1]]),
        _with(LLAMA, model_type="mpt", attn_config="flash"),
        _with(LLAMA, model_type="mpt", attn_config={"attn_type": "sliding_attention"}),
        # --- moe2 --- Laguna num_attention_heads_per_layer of the wrong length; MiniMax attn_type_list with a 2
        _with(LLAMA, model_type="laguna", num_attention_heads_per_layer=[8, 8]),
        _with(LLAMA, model_type="minimax", attn_type_list=[1, 0, 1, 2]),
        # --- vlm3 --- Janus channel_multiplier not a list
        {"model_type": "janus", "text_config": LLAMA, "vq_config": {"channel_multiplier": 4}},
        # --- ssm2 --- a Zamba2 layers_block_type without a hybrid layer
        _with(LLAMA, model_type="zamba2", num_hidden_layers=2, layers_block_type=["mamba", "mamba"]),
        # --- dense3 --- an unknown model type with 2048 experts and no moe_intermediate_size (refused by the generic
        # path); Doge's CDMoE routing more experts a token than it has
        _with(LLAMA, model_type="foo_model", num_experts=2048, num_experts_per_tok=8),
        _with(LLAMA, model_type="doge", is_moe=True, num_experts=16, num_experts_per_tok=32),
        # an Apertus 1.5 head wider than its vocabulary
        _with(LLAMA, model_type="apertus1p5_text", output_vocab_size=10**6),
        # --- mla2 --- DeepSeek-V4 compress_ratios with a rate no layer kind has, too short; compress_rates not an
        # object
        _with(LLAMA, model_type="deepseek_v4", compress_ratios=[0, 8, 4, 128]),
        _with(LLAMA, model_type="deepseek_v4", compress_ratios=[0, 4]),
        _with(LLAMA, model_type="deepseek_v4", compress_rates=4),
    ]
    out = [_raised(lambda c=c: normalize(c), ConfigError) for c in configs]  # type: ignore[misc]
    out += [_raised(lambda k=k: _check_bound("llama", k, 10**9), ConfigError) for k in _CONFIG_BOUNDS]
    out.append(_raised(lambda: _check_bound("llama", "some_count", 10**9), ConfigError))
    huge = _with(LLAMA, num_hidden_layers=1000, hidden_size=100_000, intermediate_size=1_000_000)
    out.append(_raised(lambda: model_facts(huge), ConfigError))
    warned = normalize(_with(LLAMA, model_type="foo_model")).warnings
    assert len(warned) == 1 and isinstance(warned[0], Text)
    out.append(warned[0])
    # --- mla --- DeepSeek-V2 without num_experts_per_tok
    v2 = _with(_DSA, model_type="deepseek_v2", index_n_heads=None, n_routed_experts=4, moe_intermediate_size=64)
    out.append(normalize(v2).warnings[0])
    # a Gemma 3n / 4 config with towers the estimate leaves out: vision, audio, both
    text_config = {**_GEMMA4, "model_type": "gemma3n_text"}
    for towers in ({"vision_config": {}}, {"audio_config": {}}, {"vision_config": {}, "audio_config": {}}):
        out.extend(normalize({"model_type": "gemma3n", "text_config": text_config, **towers}).warnings)
    # a Llama 4 config without its vision_config; a MiniMax-M3 config with MTP layers transformers does not load
    scout_text = {k: v for k, v in scout.items() if k != "vision_config"}
    out += normalize(scout_text).warnings
    out += normalize(_with(LLAMA, model_type="minimax_m3", num_nextn_predict_layers=1)).warnings
    # --- clipvlm --- LLaVA's original flat config (no text_config, no vision_config), one without vision_config, and
    # a text model its own reader does not read inside a VLM (StarCoder 2, read as a Llama-style decoder)
    llava: list[dict[str, Any]] = [
        _with(LLAMA, model_type="llava"),
        {"model_type": "llava", "text_config": LLAMA},
        {"model_type": "llava", "text_config": _with(LLAMA, model_type="starcoder2"), "vision_config": {}},
    ]
    for config, note in zip(llava, ("no_sub_configs", "no_sub_configs", "text_as_llama"), strict=True):
        (warning,) = normalize(config).warnings
        assert isinstance(warning, Text) and warning.id == f"config.vlm.{note}", warning
        out.append(warning)
    return out


def _header_texts() -> list[Text]:
    """An unknown model type read from its tensor names (config_readers/unknown.py): the warning with each thing it
    could not infer, and why the names were not used or the model refused."""
    t = {k: ("BF16", s) for k, s in ((k, v[1]) for k, v in tiny_llama_tensors().items())}
    tiny = dict(TINY_CONFIG, model_type="mystery")
    moe = {k: v for k, v in t.items() if ".mlp." not in k} | {
        "model.layers.0.mlp.experts.0.up_proj.weight": ("BF16", (128, 64)),
        "model.layers.0.mlp.experts.1.up_proj.weight": ("BF16", (128, 64)),
        "model.layers.1.mixer.in_proj.weight": ("BF16", (64, 64)),
        "model.layers.0.self_attn.kv_a_proj_with_mqa.weight": ("BF16", (40, 64)),
        "model.layers.0.odd.weight": ("BF16", (4,)),
    }
    moe = {k: v for k, v in moe.items() if not k.startswith("model.layers.1.self_attn")}
    chunked = dict(tiny, layer_types=["chunked_attention", "full_attention"])
    no_layers = {"weights.blob": ("BF16", (4, 4))}
    bare = {"model_type": "bare", "num_attention_heads": 4}
    calls: list[Callable[[], object]] = [
        lambda: normalize(dict(tiny, model_type="bare", hidden_size=None), read_inventory(no_layers)),
        lambda: normalize({"model_type": "bare", "hidden_size": 64}, read_inventory(t)),
        lambda: normalize(bare, read_inventory({k: v for k, v in t.items() if "embed" not in k})),
        lambda: normalize(bare | {"num_hidden_layers": 9}, read_inventory(t)),
        lambda: normalize(bare | {"head_dim": 24}, read_inventory(t)),
    ]
    out = [_raised(call, ConfigError) for call in calls]
    out.append(normalize(tiny, read_inventory(t)).warnings[0])
    out.append(normalize(dict(tiny, sliding_window=64), read_inventory(moe)).warnings[0])
    out.append(normalize(chunked, read_inventory(t)).warnings[0])
    out.append(normalize(tiny, read_inventory(no_layers)).warnings[1])
    return out


def _format_errors() -> list[Text]:
    calls: list[Callable[[], object]] = [
        lambda: normalize_dtype(5),  # type: ignore[arg-type]
        lambda: normalize_dtype("foo"),
        lambda: _base_dtype("fp8"),
        lambda: kv_bits("foo"),
        lambda: gguf_tensor_bytes("foo", 32),
        lambda: gguf_tensor_bytes("Q4_0", 33),
        lambda: gguf_mix_type("foo", "blk.0.attn_v.weight", "attn", 0, 4),
        lambda: gguf_mix_type("q4_k_m", "blk.0.attn_v.weight", "bogus", 0, 4),
        lambda: gguf_mix_type("q4_k_m", "attn_v.weight", "attn", None, 4),
        lambda: gguf_mix_type("q4_k_m", "blk.0.attn_v.weight", "attn", 0, None),
        lambda: gguf_mix_type("q4_0", "blk.0.attn_q.weight", "attn", 0, 4, n_cols=33),
    ]
    return [_raised(call, FormatError) for call in calls]


def _quant_errors() -> list[Text]:
    ct: dict[str, Any] = {
        "quant_method": "compressed-tensors",
        "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "group_size": 128, "strategy": "group"}}},
    }

    def weights(**w: Any) -> dict[str, Any]:
        out = copy.deepcopy(ct)
        out["config_groups"]["g"]["weights"].update(w)
        return out

    configs: list[object] = [
        "x",
        {"bits": 4},
        {"quant_method": 4},
        {"quant_method": "hqq"},
        {"quant_method": "gptq", "group_size": 128},
        {"quant_method": "gptq", "bits": "4", "group_size": 128},
        {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": "yes"},
        {"quant_method": "gptq", "bits": 4, "group_size": 128, "checkpoint_format": 5},
        {"quant_method": "gptq", "bits": 4, "group_size": 128, "checkpoint_format": "foo"},
        {"quant_method": "gptq", "bits": 4, "group_size": 128, "modules_to_not_convert": 5},
        {"quant_method": "gptq", "bits": 4, "group_size": 128, "modules_to_not_convert": [5]},
        {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "foo"},
        {"quant_method": "bitsandbytes", "load_in_8bit": True, "load_in_4bit": True},
        {"quant_method": "bitsandbytes"},
        {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "x"},
        {"quant_method": "fp8", "weight_block_size": [128]},
        {"quant_method": "compressed-tensors"},
        {"quant_method": "compressed-tensors", "config_groups": {}},
        {"quant_method": "compressed-tensors", "config_groups": {"g": {}}},
        {"quant_method": "compressed-tensors", "config_groups": {"g": 5}},
        {**ct, "config_groups": {**ct["config_groups"], "h": {"weights": {"num_bits": 8}}}},
        weights(num_bits="4"),
        weights(strategy="foo"),
        weights(group_size=0),
        weights(strategy="block", block_structure=[1]),
        weights(type="float", group_size=32),
        {**weights(type="float", num_bits=8), "format": "foo"},
        weights(type="foo"),
        {**ct, "format": "foo"},
        {"quant_method": "modelopt", "quantization": {}},
        {"quant_method": "modelopt", "quantization": {"quant_algo": "foo"}},
        {"quant_method": "modelopt", "quantization": 5},
        {"quant_method": "modelopt", "quantization": {"quant_algo": "MIXED_PRECISION"}},
    ]
    return [
        _raised(lambda c=c: format_from_quantization_config(c, base_dtype="bf16"), FormatError)  # type: ignore[misc]
        for c in configs
    ]


#: a ModelOpt MIXED_PRECISION config: one module in NVFP4, one in FP8
_MIXED = {
    "quant_algo": "MIXED_PRECISION",
    "quantized_layers": {"model.layers.0.mlp": {"quant_algo": "NVFP4"}, "model.layers.1.mlp": {"quant_algo": "FP8"}},
}


def _quant_labels() -> list[Text]:
    """The labels of the formats read from compressed-tensors and ModelOpt configs alone."""
    group = {"num_bits": 8, "type": "float", "strategy": "channel"}
    configs = [
        {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": group}}},
        {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {**group, "type": "int"}}}},
        {"quant_method": "modelopt", "quantization": {"quant_algo": "FP8"}},
        {"quant_method": "modelopt", "quantization": _MIXED},
    ]
    out = []
    for c in configs:
        label = format_from_quantization_config(c, base_dtype="bf16").label
        assert isinstance(label, Text)
        out.append(label)
    return out


def _quant_layouts(monkeypatch: pytest.MonkeyPatch) -> list[Text]:
    """The layout sentences of those formats (``_finish`` of the weight formats, which adds the bits, stubbed)."""
    from dataclasses import replace

    import vramdesk.core.quant_config as qc

    monkeypatch.setattr(qc, "_finish", lambda fmt, layout: replace(fmt, explain=layout))
    w = {"num_bits": 8, "type": "float", "strategy": "tensor"}
    schemes = [
        w,
        {**w, "strategy": "block", "block_structure": [128, 128]},
        {**w, "type": "int", "num_bits": 4, "strategy": "group", "group_size": 128, "symmetric": False},
        {**w, "type": "int", "strategy": "channel", "actorder": "group"},
    ]
    configs: list[dict[str, Any]] = [
        {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": s}}} for s in schemes
    ]
    configs.append({"quant_method": "modelopt", "quantization": {"quant_algo": "FP8"}})
    configs.append({"quant_method": "modelopt", "quantization": _MIXED})
    out = []
    for c in configs:
        fmt = format_from_quantization_config(c, base_dtype="bf16")
        assert isinstance(fmt.explain, Text) and isinstance(fmt.label, Text)
        out += [fmt.label, fmt.explain]
    return out


def _pydantic_types() -> list[Text]:
    """Each of pydantic's error types the table words, as pydantic words it (``PydanticKnownError``)."""
    from pydantic_core import PydanticKnownError

    from vramdesk.validation_text import PYDANTIC, error_message

    sample = {"gt": 1, "ge": 1.0, "lt": 2.5, "le": 1, "multiple_of": 2, "class_name": "InferenceWorkload"}
    sample |= {"expected": "'a', 'b' or 'c'", "discriminator": "'kind'", "tag": "x", "expected_tags": "'a', 'b'"}
    out = []
    for kind in PYDANTIC:
        for length in (1, 5):
            ctx = {**sample, "min_length": length, "max_length": length}
            known = PydanticKnownError(kind, ctx)  # type: ignore[arg-type]
            message = error_message({"type": kind, "msg": known.message(), "ctx": ctx})
            assert isinstance(message, Text) and message.id.startswith(f"pydantic.{kind}"), (kind, known.message())
            assert message == known.message()
            out.append(message)
    return out


def _safetensors(header: object, file_size: int | None = None, raw: bytes | None = None) -> bytes:
    body = raw if raw is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(body)) + body


def _checkpoint_errors() -> list[Text]:
    ok = {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}
    heads: list[tuple[bytes, int | None]] = [
        (b"1234", 4),
        (struct.pack("<Q", 10**12), None),
        (struct.pack("<Q", 1) + b"{", None),
        (_safetensors({"w": ok}), 20),
        (_safetensors(None, raw=b"{nope}"), None),
        (_safetensors(None, raw=b'{"a": NaN}'), None),
        (_safetensors(None, raw=b'{"a": 1e999}'), None),
        (_safetensors(None, raw=b'{"a": ' + b"1" * 200 + b"}"), None),
        (_safetensors(None, raw=b"[" * 100 + b"]" * 100), None),
        (_safetensors(None, raw=b'{"\\ud800": 1}'), None),
        (_safetensors(None, raw=b'{"a\\u0001": 1}'), None),
        (_safetensors(None, raw=b'{"a": "\\ud800"}'), None),
        (_safetensors(None, raw=b'{"a": "\xff"}'), None),
        (_safetensors(None, raw=b'{"a" 1}'), None),
        (_safetensors(None, raw=b'{"a": 1,}'), None),
        (_safetensors(None, raw=b'{"a": 1} x'), None),
        (_safetensors(None, raw=b'{"a": "\\x"}'), None),
        (_safetensors(None, raw=b'{"a": "abc'), None),
        (_safetensors(None, raw=b'{"a": 1 "b": 2}'), None),
        (_safetensors(None, raw=b'{"a": "\x01"}'), None),
        (_safetensors(None, raw=b'{"a": "\\u12"}'), None),
        (_safetensors([1]), None),
        (_safetensors(None), None),
        (_safetensors("x"), None),
        (_safetensors(12), None),
        (_safetensors(1.5), None),
        (_safetensors(True), None),
        (_safetensors(None, raw=b'{"a": "\xe2\x82'), None),
        (_safetensors(None, raw=b'{"a": "\xc3("}'), None),
        (_safetensors({"w": 5}), None),
        (_safetensors({"w": {"shape": [1]}}), None),
        (_safetensors({"w": {"dtype": "BF16", "shape": [-1]}}), None),
        (_safetensors({"w": {"dtype": "BF16", "shape": [2**30] * 9}}), None),
        (_safetensors({"w": {"dtype": "XX", "shape": [1]}}), None),
        (_safetensors({"w": {**ok, "data_offsets": [0]}}), None),
        (_safetensors({"w": {**ok, "data_offsets": [0, 4]}}), None),
    ]
    out = [_raised(lambda d=d, n=n: parse_safetensors_header(d, file_size=n), CheckpointError) for d, n in heads]  # type: ignore[misc]
    data = _safetensors({"w": ok})
    out.append(_raised(lambda: parse_safetensors_header(data, file_size=len(data) + 4), CheckpointError))
    out.append(_raised(lambda: parse_safetensors_header(data[:10]), CheckpointError))  # NeedMoreBytesError
    return out


def _gguf(version: int = 3, kv: list[tuple[str, int, bytes]] = (), tensors: int = 0, n_kv: int | None = None) -> bytes:  # type: ignore[assignment]
    out = b"GGUF" + struct.pack("<I", version) + struct.pack("<QQ", tensors, len(kv) if n_kv is None else n_kv)
    for key, vtype, value in kv:
        out += struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", vtype) + value
    return out


def _gguf_errors() -> list[Text]:
    u64 = struct.Struct("<Q").pack
    files: list[tuple[bytes, int | None]] = [
        (b"GGML" + bytes(20), None),
        (_gguf(version=1), None),
        (_gguf(n_kv=10**6), None),
        (_gguf(tensors=10**7), None),
        (_gguf(n_kv=100, tensors=100), 1000),
        (_gguf(n_kv=1) + u64(10**9), None),
        (_gguf(kv=[("a", 8, u64(10**9))]), None),
        (_gguf(kv=[("a", 9, struct.pack("<I", 4) + u64(10**9))]), None),
        (_gguf(kv=[("a", 9, struct.pack("<I", 99) + u64(1))]), None),
        (_gguf(kv=[("a", 99, b"")]), None),
        (_gguf(kv=[("a", 9, (struct.pack("<I", 9) + u64(1)) * 6 + struct.pack("<I", 4) + u64(0))]), None),
        (_gguf(kv=[("general.alignment", 4, struct.pack("<I", 3))]), None),
        (_gguf(tensors=1) + u64(1) + b"w" + struct.pack("<I", 99), None),
        (_gguf(tensors=1) + u64(1) + b"w" + struct.pack("<I", 2) + u64(2**30) + u64(2**30), None),
        (_gguf(tensors=1) + u64(10**9), None),
        (_gguf(tensors=1), 100),
        (_gguf(n_kv=1) + u64(100) + b"x" * 20, 52),
    ]
    out = [_raised(lambda d=d, n=n: parse_gguf_header(d, total_size=n), CheckpointError) for d, n in files]  # type: ignore[misc]
    arch = normalize(LLAMA)
    out.append(_raised(lambda: gguf_entry_bytes(99, (32,), "w"), CheckpointError))
    out.append(_raised(lambda: gguf_entry_bytes(2, (33,), "w"), CheckpointError))
    out.append(_raised(lambda: tensors_from_gguf({"w": (99, (32,))}, arch), CheckpointError))
    kv: dict[str, Any] = {"general.architecture": "llama", "llama.embedding_length": 512}
    kv.update({"llama.attention.head_count": 8, "llama.block_count": 4})
    embd = GgufTensorInfo("token_embd.weight", 0, (512, 1000), 0)
    headers = [
        {},
        {"general.architecture": "rwkv"},
        {**kv, "llama.embedding_length": 0},
        kv,
        {**kv, "tokenizer.ggml.tokens": ["a"]},
    ]
    for h in headers:
        header = GgufHeader(version=3, kv=h, tensors=(embd,) if h is headers[-1] else (), header_end=0, alignment=32)
        out.append(_raised(lambda header=header: gguf_to_config(header), CheckpointError))  # type: ignore[misc]
    return out


def _json_errors() -> list[Text]:
    out = [_raised(lambda: jsonsafe.loads(b'{"a": NaN}', source="config.json"), jsonsafe.JsonError)]
    out.append(_raised(lambda: jsonsafe.loads("[1,", source="config.json"), jsonsafe.JsonError))
    return out


def _constant_sources() -> list[Text]:
    """Where the runtime constants come from, as the estimate lists them (the Explain dialog's constants)."""
    scenario = Scenario.model_validate({"model": {"id": "Qwen/Qwen3-4B"}, "workload": {"kind": "finetune"}})
    listed = estimate(scenario, CAT.facts("Qwen/Qwen3-4B"), CAT.gpu("H100 SXM")).constants
    out = [listed[k] for k in K.SOURCES]
    assert all(isinstance(t, Text) and t.id.startswith("config.source.") for t in out)
    return [*out, K.SOURCES_TRAINING, K.SOURCES_TRAINING_EXPANDABLE]  # type: ignore[list-item]


def all_texts(monkeypatch: pytest.MonkeyPatch) -> list[Text]:
    return (
        _constant_sources()
        + _scenario_errors()
        + _pydantic_types()
        + _quant_layouts(monkeypatch)
        + _config_errors()
        + _header_texts()
        + _format_errors()
        + _quant_errors()
        + _quant_labels()
        + _checkpoint_errors()
        + _gguf_errors()
        + _json_errors()
    )


@pytest.fixture(scope="module")
def texts() -> list[Text]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return all_texts(monkeypatch)


def _ids(message: str) -> set[str]:
    if not isinstance(message, Text):
        return set()
    out = {message.id} if message.id else set()
    for part in message.parts:
        out |= _ids(part)
    for value in message.args.values():
        out |= _ids(value)
    return out


# ------------------------------------------------------------------------------------------ the checks


def test_every_piece_has_an_id(texts: list[Text]) -> None:
    assert all(isinstance(t, Text) for t in texts)
    left = {str(t): without_id(t) for t in texts if without_id(t)}
    assert not left, json.dumps(left, indent=1)


def test_the_cases_reach_every_message_of_the_area(texts: list[Text]) -> None:
    used = set().union(*(_ids(t) for t in texts))
    area = {i for i in MESSAGES if i.startswith(AREAS)}
    # the json module's defensive catch-all (no input reaches it)
    assert area - used == {"input.json.invalid"}


def test_every_id_has_a_chinese_template_with_the_same_placeholders(texts: list[Text]) -> None:
    table = message_table(LANG)
    area = {i for i in MESSAGES if i.startswith(AREAS)}
    for mid in sorted(area):
        assert mid in table, f"{mid} has no Chinese template"
        assert fields(table[mid]) == fields(MESSAGES[mid]), mid
    path = [p for p in _message_files() if p.name == f"{LANG}.messages.inputs.json"]
    own = json.loads(path[0].read_text(encoding="utf-8"))
    assert {k for k in own if not k.startswith("_")} == area


def _message_files() -> list[Any]:
    from vramdesk.ui.core_text import message_files

    return message_files(LANG)


def test_the_chinese_reads_without_english_words_and_keeps_the_numbers(texts: list[Text]) -> None:
    problems = []
    for t in texts:
        zh = localize(t, LANG)
        if zh == str(t):
            problems.append(f"not translated: {t}")
            continue
        left = english_left(PYTHON_WORDS.sub(" ", zh), NAMES | _quoted(str(t)) | _names(t), CORE_WHITELIST)
        if left:
            problems.append(f"{t}\n  {zh}\n  English left: {left}")
        missing = [n for n in _NUMBER.findall(str(t)) if n not in zh]
        if missing:
            problems.append(f"{t}\n  {zh}\n  numbers lost: {missing}")
    assert not problems, "\n".join(problems)


def _names(message: str) -> set[str]:
    """The plain-string values of a text and the texts nested in it: names, shown as they are by design (a model
    type, a field, a tensor, the lists of known values, what the case typed)."""
    if not isinstance(message, Text):
        return set()
    out: set[str] = set()
    for part in message.parts:
        out |= _names(part)
    for value in message.args.values():
        if isinstance(value, Text):
            out |= _names(value)
        elif isinstance(value, str):
            out |= {value, *value.split(", ")}
        elif not isinstance(value, int | float):
            out |= {repr(value), str(value)}
    return out


def _quoted(english: str) -> set[str]:
    """What the English quotes (a field, a value, a file's bytes): names, kept as they are."""
    return set(re.findall(r"'([^']*)'", english)) | set(re.findall(r"\"([^\"]*)\"", english))


def test_a_validator_text_survives_pydantic_and_the_window_line() -> None:
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate({"model": {"id": "x"}, "parallelism": {"tp": 4}})
    (e,) = info.value.errors()
    raised = e["ctx"]["error"].args[0]
    assert isinstance(raised, Text) and raised.id == "input.parallel_needs_gpus"
    assert raised.args["where"].id == "input.parallel_needs_gpus.gpu_count"  # type: ignore[union-attr]
    shown = validation_text(info.value)
    assert shown is raised  # no loc: the model validator's own sentence
    assert localize(shown, LANG) == "并行设置：tp (4) x pp (1) 需要 4 块 GPU，但 hardware.gpu_count 为 1"


def test_pydantic_messages_format_to_pydantics_english() -> None:
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate(
            {"model": {"id": "x"}, "workload": {"kind": "inference", "batch": 0, "attention": "bogus"}}
        )
    shown = validation_text(info.value)
    assert [p.id for p in shown.parts] == ["pydantic.at", "pydantic.at"]  # type: ignore[attr-defined]
    assert [p.args["message"].id for p in shown.parts] == [  # type: ignore[attr-defined]
        "pydantic.literal_error",
        "pydantic.greater_than_equal",
    ]
    assert localize(shown, LANG) == (
        "workload.inference.attention：输入值应为 'flash', 'sdpa' 或 'eager'；"
        "workload.inference.batch：输入值应大于或等于 1"
    )


def test_an_unknown_pydantic_wording_stays_a_plain_string() -> None:
    from vramdesk.validation_text import error_message

    assert error_message({"type": "greater_than", "msg": "Input must exceed 0", "ctx": {"gt": 0}}) == (
        "Input must exceed 0"
    )
    assert not isinstance(error_message({"type": "greater_than", "msg": "Input must exceed 0", "ctx": {"gt": 0}}), Text)
    assert not isinstance(error_message({"type": "url_parsing", "msg": "bad url", "ctx": {"error": "x"}}), Text)
    assert error_message(
        {"type": "value_error", "msg": "Value error, plain", "ctx": {"error": ValueError("plain")}}
    ) == ("plain")
