"""Dense decoders outside the Llama mould (``config_readers/dense2.py``, ``inventory_dense2.py``): each model type read
as itself, its tensor total equal to the one transformers 5.24 builds from the config class's own defaults (the oracle
``benchmarks/data/transformers_families.jsonl``, counted on the meta device), published configs within their published
totals, the layouts' quirks by tensor name, and an estimate on every engine."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import AttentionKind, ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.families import family_of
from vramdesk.core.scenario import Scenario

_ORACLE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "transformers_families.jsonl"
#: model type -> the family record that reads it
_TYPES = {
    "gpt-sw3": "gpt_sw3",
    "gpt_neo": "gpt_neo",
    "mpt": "mpt",
    "stablelm": "stablelm",
    "bitnet": "bitnet",
    "arcee": "arcee",
    "apertus": "apertus",
    "xglm": "xglm",
    "biogpt": "biogpt",
    "modernbert-decoder": "modernbert_decoder",
    "mistral4": "mistral4",
    "openai-gpt": "openai_gpt",
    "gpt_neox_japanese": "gpt_neox_japanese",
    "jais2": "jais2",
}


def _oracle() -> dict[str, dict[str, Any]]:
    rows = (json.loads(line) for line in _ORACLE.read_text(encoding="utf-8").splitlines() if line.strip())
    return {row["model_type"]: row for row in rows if row["model_type"] in _TYPES}


_ROWS = _oracle()

#: EleutherAI/gpt-neo-125M's config.json as quoted in a model-builder example (code index file 5795215158,
#: "hf_model_name": "EleutherAI/gpt-neo-125M")
GPT_NEO_125M: dict[str, Any] = {
    "model_type": "gpt_neo",
    "activation_function": "gelu_new",
    "architectures": ["GPTNeoForCausalLM"],
    "attention_layers": ["global", "local"] * 6,
    "attention_types": [[["global", "local"], 6]],
    "hidden_size": 768,
    "intermediate_size": None,
    "max_position_embeddings": 2048,
    "num_heads": 12,
    "num_layers": 12,
    "vocab_size": 50257,
    "window_size": 256,
}
#: mosaicml/mpt-7b-instruct's config.json ("The original config for the model", code index file 40807555979, an MLC
#: Relax port's notes on MPT-7b-instruct)
MPT_7B: dict[str, Any] = {
    "architectures": ["MPTForCausalLM"],
    "attn_config": {
        "alibi": True,
        "alibi_bias_max": 8,
        "attn_impl": "torch",
        "attn_type": "multihead_attention",
        "clip_qkv": None,
        "qk_ln": False,
    },
    "d_model": 4096,
    "expansion_ratio": 4,
    "learned_pos_emb": True,
    "max_seq_len": 2048,
    "model_type": "mpt",
    "n_heads": 32,
    "n_layers": 32,
    "no_bias": True,
    "norm_type": "low_precision_layernorm",
    "torch_dtype": "bfloat16",
    "vocab_size": 50432,
}


def test_the_oracle_has_every_type() -> None:
    assert set(_ROWS) == set(_TYPES)


@pytest.mark.parametrize("model_type", sorted(_TYPES))
def test_the_total_equals_transformers_count_of_its_default_config(model_type: str) -> None:
    row = _ROWS[model_type]
    facts = model_facts(copy.deepcopy(row["config"]), f"x/{model_type}")
    assert facts.arch.warnings == ()
    assert family_of(facts.arch).name == _TYPES[model_type]
    assert facts.counts.text + facts.counts.vision == row["total"]


def test_the_tensor_names_are_transformers_by_block() -> None:
    """The oracle's totals per top-level block, summed over vramdesk's tensors of the same names."""
    for model_type, row in _ROWS.items():
        facts = model_facts(copy.deepcopy(row["config"]), f"x/{model_type}")
        ours: dict[str, int] = {}
        for t in facts.tensors:
            block = next((p for p in row["by_prefix"] if t.name == p or t.name.startswith(p + ".")), t.name)
            ours[block] = ours.get(block, 0) + t.numel
        assert ours == row["by_prefix"], model_type


def test_gpt_neo_125m_is_its_published_125_million() -> None:
    # the model card's "125M" is rounded to the million: within 0.5 %
    facts = model_facts(copy.deepcopy(GPT_NEO_125M), "EleutherAI/gpt-neo-125M")
    assert facts.counts.text == pytest.approx(125e6, rel=5e-3)


def test_gpt_neo_caches_every_layer_whole_as_transformers_does() -> None:
    arch = normalize(copy.deepcopy(GPT_NEO_125M))
    assert {layer.attention for layer in arch.layers} == {AttentionKind.FULL}
    assert "6 local layers (window_size 256)" in arch.sources["attention kinds"]


def test_mpt_7b_is_its_published_6_7_billion() -> None:
    # MosaicML's model card: "n_parameters 6.7B", rounded to a tenth of a billion: within 1 %
    facts = model_facts(copy.deepcopy(MPT_7B), "mosaicml/mpt-7b-instruct")
    assert facts.counts.text == pytest.approx(6.7e9, rel=1e-2)
    names = {t.name for t in facts.tensors}
    assert "transformer.wpe.weight" not in names  # ALiBi
    assert "transformer.norm_f.bias" not in names  # no_bias: weight-only LayerNorms


def test_mpt_grouped_query_attention_narrows_wqkv() -> None:
    cfg = {**MPT_7B, "attn_config": {"attn_type": "grouped_query_attention", "kv_n_heads": 8}}
    wqkv = next(t for t in model_facts(cfg, "x/y").tensors if t.name == "transformer.blocks.0.attn.Wqkv.weight")
    assert wqkv.shape == (4096 + 2 * 8 * 128, 4096)


def test_mpt_refuses_an_unknown_attention_type_by_name() -> None:
    with pytest.raises(ConfigError, match=r"attn_config\.attn_type 'sparse' is not multihead_attention"):
        normalize({**MPT_7B, "attn_config": {"attn_type": "sparse"}})
    with pytest.raises(ConfigError, match="field 'attn_config' must be an object"):
        normalize({**MPT_7B, "attn_config": [1]})


def test_gpt_neo_refuses_attention_types_that_miss_layers() -> None:
    with pytest.raises(ConfigError, match="attention_types describe 12 layers but num_layers is 13"):
        normalize({**GPT_NEO_125M, "num_layers": 13})
    with pytest.raises(ConfigError, match="entry 'dense' is neither 'global' nor 'local'"):
        normalize({**GPT_NEO_125M, "attention_types": [[["global", "dense"], 6]]})


def _names(config: dict[str, Any]) -> set[str]:
    return {t.name for t in model_facts(copy.deepcopy(config), "x/y").tensors}


def test_stablelm_per_head_qk_layernorms() -> None:
    cfg = {**_ROWS["stablelm"]["config"], "qk_layernorm": True, "num_key_value_heads": 8}
    names = _names(cfg)
    assert "model.layers.0.self_attn.q_layernorm.norms.31.weight" in names
    assert "model.layers.0.self_attn.k_layernorm.norms.7.weight" in names
    assert "model.layers.0.self_attn.k_layernorm.norms.8.weight" not in names
    assert "model.layers.0.self_attn.q_layernorm.norms.0.bias" not in names
    parallel = _names({**cfg, "use_parallel_residual": True})
    assert "model.layers.0.post_attention_layernorm.weight" not in parallel


def test_modernbert_decoder_layer_0_has_no_attn_norm_and_the_head_is_there() -> None:
    names = _names(_ROWS["modernbert-decoder"]["config"])
    assert "model.layers.0.attn_norm.weight" not in names
    assert "model.layers.1.attn_norm.weight" in names
    assert {"model.embeddings.norm.weight", "lm_head.dense.weight", "lm_head.norm.weight", "decoder.bias"} <= names
    arch = normalize(copy.deepcopy(_ROWS["modernbert-decoder"]["config"]))
    assert {layer.window for layer in arch.layers if layer.attention == AttentionKind.SLIDING} == {64}


def test_gpt_neox_japanese_keeps_a_dense_bias_in_its_last_layer_only() -> None:
    names = _names(_ROWS["gpt_neox_japanese"]["config"])
    assert [n for n in names if n.endswith("dense_bias")] == ["gpt_neox_japanese.layers.31.attention.dense_bias"]


def test_apertus_learns_its_activation_only_with_xielu() -> None:
    cfg = _ROWS["apertus"]["config"]
    assert "model.layers.0.mlp.act_fn.alpha_p" in _names(cfg)
    assert "model.layers.0.mlp.act_fn.alpha_p" not in _names({**cfg, "hidden_act": "relu2"})


_RUNS = {
    "transformers": {"workload": {"engine": "transformers"}},
    "vllm": {"workload": {"engine": "vllm"}},
    "llamacpp": {"weights": "q4_k_m", "workload": {"engine": "llamacpp"}},
    "lora": {"workload": {"kind": "finetune", "method": "lora"}},
}


@pytest.mark.parametrize("model_type", sorted(_TYPES))
@pytest.mark.parametrize("run", sorted(_RUNS))
def test_every_engine_estimates_them(model_type: str, run: str) -> None:
    facts = model_facts(copy.deepcopy(_ROWS[model_type]["config"]), "x/y")
    est = estimate(Scenario.model_validate({"model": {"id": "x/y"}, **_RUNS[run]}), facts, None)
    weights = next(c.bytes for c in est.components if c.name.lower().startswith("weights"))
    # at least 4 bits per parameter (q4_k_m); the device holds more than the weights
    assert est.device_bytes > weights >= facts.counts.text / 2
