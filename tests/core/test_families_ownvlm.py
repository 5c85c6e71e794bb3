"""Vision-language families with towers of their own (Qwen2-VL, GLM-4.1V / 4.5V / 4.6V, Kimi K2.5's MoonViT,
MiniMax-M3, Qwen's omni thinkers) and the multimodal fixes beside them (Qwen3-VL-MoE's untied head, a Llama 4
config without its vision_config).

Three kinds of check: (1) the config transformers 5.24 writes for each model type's own defaults
(``benchmarks/data/transformers_families.jsonl``) counts exactly the parameters transformers builds from it, plus
the persistent buffers a checkpoint also stores; (2) published configs read as their family and match published
totals, each source and tolerance stated at the figure; (3) every engine estimates each of them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.families import family_of
from vramdesk.core.inventory import build_inventory, count_params
from vramdesk.core.messages import error_text
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

_DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
_ORACLE = {
    rec["model_type"]: rec for rec in map(json.loads, (_DATA / "transformers_families.jsonl").read_text().splitlines())
}

#: model type -> (family record, the persistent buffers its checkpoints store beside the parameters transformers
#: counts: the sigmoid routers' e_score_correction_bias, nn.Buffer in Glm4vMoeTextTopkRouter and
#: MiniMaxM3VLTopKRouter, one float per expert per MoE layer)
_OWN = {
    "qwen2_vl": ("qwen2_vl", 0),
    "glm4v": ("glm4v", 0),
    "glm46v": ("glm4v", 0),
    "glmga": ("glm4v", 0),
    "glm4v_moe": ("glm4v_moe", 128 * 45),
    "kimi_k25": ("kimi_k25", 0),
    "minimax_m3_vl": ("minimax_m3_vl", 128 * 60),
    "minimax_m3_vl_text": ("minimax_m3", 128 * 60),
    "qwen2_5_omni_thinker": ("qwen2_5_omni", 0),
    "qwen3_omni_moe_thinker": ("qwen3_omni_moe", 0),
    "qwen3_vl_moe": ("qwen3_vl", 0),
    "persimmon": ("persimmon", 0),
    "fuyu": ("fuyu", 0),
    "exaone4_5": ("exaone4_5", 0),
    "youtu": ("youtu", 0),
}


def _counts(config: dict[str, Any]) -> tuple[str, int, int]:
    arch = normalize(copy.deepcopy(config))
    assert not [w for w in arch.warnings if w.startswith("model_type")], arch.warnings
    counts = count_params(build_inventory(arch))
    return family_of(arch).name, counts.text + counts.vision, counts.vision


@pytest.mark.parametrize("model_type", sorted(_OWN))
def test_transformers_own_default_config_counts_what_transformers_builds(model_type: str) -> None:
    record = _ORACLE[model_type]
    family, buffers = _OWN[model_type]
    name, total, _ = _counts(record["config"])
    assert name == family
    assert total == record["total"] + buffers


def test_qwen3_vl_moe_unties_its_head_as_its_outer_config_says() -> None:
    # Qwen3VLMoeConfig's tie_word_embeddings False wins over its text sub-config's default True (transformers 5
    # ties by the model's own config): the checkpoint has an lm_head of vocab x hidden
    tensors = build_inventory(normalize(copy.deepcopy(_ORACLE["qwen3_vl_moe"]["config"])))
    head = [t for t in tensors if t.name == "lm_head.weight"]
    assert [t.shape for t in head] == [(151936, 2048)]


# -- published configs


#: Qwen/Qwen2-VL-7B-Instruct's config.json (its fields as the model's page shows them; the layout of the same
#: config is quoted, with 4 layers, by a model-unfolder test, find_string id 55649131566)
QWEN2_VL_7B = {
    "architectures": ["Qwen2VLForConditionalGeneration"],
    "model_type": "qwen2_vl",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "max_position_embeddings": 32768,
    "sliding_window": 32768,
    "max_window_layers": 28,
    "use_sliding_window": False,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vision_config": {
        "depth": 32,
        "embed_dim": 1280,
        "mlp_ratio": 4,
        "num_heads": 16,
        "in_chans": 3,
        "hidden_size": 3584,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "spatial_patch_size": 14,
        "temporal_patch_size": 2,
    },
}


def test_qwen2_vl_published_totals_are_exact() -> None:
    # exact safetensors totals of a VLM parameter table (find_string id 12439498600):
    # "qwen/qwen2-vl-7b-instruct": 8291375616, "qwen/qwen2-vl-2b-instruct": 2208985600
    assert _counts(QWEN2_VL_7B)[:2] == ("qwen2_vl", 8_291_375_616)
    small = copy.deepcopy(QWEN2_VL_7B)
    small.update(
        hidden_size=1536,
        intermediate_size=8960,
        num_attention_heads=12,
        num_key_value_heads=2,
        vocab_size=151936,
        tie_word_embeddings=True,
    )
    small["vision_config"]["hidden_size"] = 1536
    assert _counts(small)[:2] == ("qwen2_vl", 2_208_985_600)
    names = {t.name for t in build_inventory(normalize(copy.deepcopy(QWEN2_VL_7B)))}
    assert {
        "visual.blocks.31.mlp.fc2.bias",
        "visual.merger.mlp.2.weight",
        "model.layers.27.mlp.up_proj.weight",
    } <= names


def _corpus(name: str) -> dict[str, Any]:
    return json.loads((_DATA / "config_corpus" / f"{name}.json").read_text())


def test_kimi_k25_published_config_reads_its_remote_code_tower() -> None:
    # moonshotai/Kimi-K2.5's config (ai-dynamo/aiconfigurator's copy in the corpus) spells the tower vt_hidden_size,
    # vt_num_hidden_layers ...; the model card quoted in find_string id 68868329676 gives "Total params | 1T" and
    # "Vision encoder | MoonViT (400M)", both rounded to one significant figure: 5 % either way
    arch = normalize(_corpus("moonshotai__Kimi-K2.5"))
    tensors = build_inventory(arch)
    assert family_of(arch).name == "kimi_k25" and not arch.warnings
    tower = sum(t.numel for t in tensors if t.name.startswith("vision_tower."))
    assert abs(tower - 400e6) <= 0.05 * 400e6
    counts = count_params(tensors)
    assert abs(counts.text + counts.vision - 1e12) <= 0.05 * 1e12
    names = {t.name for t in tensors}
    assert {
        "vision_tower.encoder.blocks.26.wqkv.weight",
        "vision_tower.patch_embed.pos_emb.weight",
        "mm_projector.proj.2.weight",
        "language_model.model.layers.60.mlp.experts.down_proj.weight",
        "language_model.lm_head.weight",
    } <= names


def test_minimax_m3_published_config_reads_its_sparse_and_dense_layers() -> None:
    # MiniMaxAI/MiniMax-M3's config (the corpus copy): sparse_attention_config marks layers 3-59 sparse (an
    # indexer each), moe_layer_freq layers 3-59 MoE; transformers 5.24 builds 426,174,565,632 parameters from
    # this config read as minimax_m3_vl_text, and the checkpoint stores 57 x 128 router correction biases beside
    config = _corpus("MiniMaxAI__MiniMax-M3")
    arch = normalize(config)
    assert [layer.indexer is not None for layer in arch.layers] == [False] * 3 + [True] * 57
    assert [layer.mlp for layer in arch.layers] == ["dense"] * 3 + ["moe"] * 57
    assert {layer.indexer.n_heads for layer in arch.layers if layer.indexer} == {4}
    assert any("multi-token-prediction" in w for w in arch.warnings)
    assert _counts(config)[1] == 426_174_565_632 + 57 * 128
    names = {t.name for t in build_inventory(arch)}
    assert {
        "model.layers.3.self_attn.index_k_norm.weight",
        "model.layers.3.block_sparse_moe.experts.w3.weight",
    } <= names
    assert "model.layers.2.self_attn.index_q_proj.weight" not in names


def test_a_llama4_config_without_its_vision_config_says_the_tower_is_not_counted() -> None:
    # ai-dynamo/aiconfigurator's copy of Llama-4-Scout dropped vision_config (the corpus now holds the published file,
    # with it); the catalog's copy has it and counts the Hub's 108,641,793,536 (resources/catalog/models.json
    # published_total) exactly
    abridged = {k: v for k, v in _corpus("meta-llama__Llama-4-Scout-17B-16E-Instruct").items() if k != "vision_config"}
    stripped = normalize(abridged)
    assert stripped.vision is None
    assert any("no vision_config" in w and "Llama4ForConditionalGeneration" in w for w in stripped.warnings)
    full = normalize(default_catalog().config("meta-llama/Llama-4-Scout-17B-16E-Instruct"))
    counts = count_params(build_inventory(full))
    assert not full.warnings and counts.text + counts.vision == 108_641_793_536
    assert counts.vision == 871_932_416


# -- every engine runs them


_SCENARIOS = {
    "transformers": {"workload": {"engine": "transformers", "input_len": 1024}},
    "vllm": {"workload": {"engine": "vllm", "input_len": 1024}},
    "llamacpp": {"weights": "q4_k_m", "workload": {"engine": "llamacpp", "input_len": 1024}},
    "lora": {"workload": {"kind": "finetune", "method": "lora"}},
}


@pytest.mark.parametrize("model_type", sorted(_OWN))
@pytest.mark.parametrize("run", sorted(_SCENARIOS))
def test_every_engine_estimates_them(model_type: str, run: str) -> None:
    scenario = Scenario.model_validate({"model": {"id": f"x/{model_type}"}, **_SCENARIOS[run]})
    facts = model_facts(copy.deepcopy(_ORACLE[model_type]["config"]), f"x/{model_type}")
    est = estimate(scenario, facts, None)
    parts = [*est.components, *(c for phase in est.phases for c in phase.components)]
    kv = max(c.bytes for c in parts if c.name in {"KV cache", "activations"})
    # at least four bits a weight (q4_k_m's are 4.5 and more), and a KV cache (inference) or activations (at some
    # phase of fine-tuning) that are not empty
    assert est.peak_allocated_bytes > facts.counts.text // 2 and kv > 0


# -- bad input


@pytest.mark.parametrize(
    ("model_type", "where", "key", "value", "words"),
    [
        ("kimi_k25", "vision_config", "merge_kernel_size", [2], "'merge_kernel_size' must be a list of two integers"),
        ("qwen2_vl", "vision_config", "mlp_ratio", "four", "'mlp_ratio' must be a positive number"),
        ("minimax_m3_vl", "text_config", "layer_types", ["full_attention"], "'layer_types' has 1 entries"),
        ("minimax_m3_vl", "text_config", "mlp_layer_types", ["moe"] * 60, "unknown entry 'moe' in 'mlp_layer_types'"),
    ],
)
def test_a_bad_field_is_named(model_type: str, where: str, key: str, value: Any, words: str) -> None:
    config = copy.deepcopy(_ORACLE[model_type]["config"])
    config[where][key] = value
    with pytest.raises(ConfigError) as err:
        normalize(config)
    assert words in error_text(err.value)
    assert "generic" not in error_text(err.value)


def _kv_bytes(config: dict[str, Any], engine: str) -> int:
    scenario = Scenario.model_validate({"model": {"id": "x/m3"}, "workload": {"engine": engine, "input_len": 1024}})
    est = estimate(scenario, model_facts(copy.deepcopy(config), "x/m3"), None)
    return next(c.bytes for c in est.components if c.name == "KV cache")


@pytest.mark.parametrize("engine", ["transformers", "vllm"])
def test_minimax_m3_sparse_layers_cache_an_index_key_per_token(engine: str) -> None:
    # transformers' MiniMaxM3VLSparseCacheLayer keeps idx_keys (index_head_dim per token) beside the layer's K and
    # V; vLLM's MiniMaxM3IndexerCache one index_head_dim vector per token: 2 sparse layers x 32 beside 4 layers x
    # K and V of 2 heads x 64, 1,024 + 64 elements a token where the full layers alone hold 1,024
    # (`vramdesk trace` of this config on transformers 5.24 matches the KV cache within 0.1 %)
    sparse = {
        "model_type": "minimax_m3_vl_text",
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "intermediate_size": 128,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "vocab_size": 1000,
        "index_head_dim": 32,
        "layer_types": ["full_attention", "minimax_m3_sparse"] * 2,
    }
    full = {**sparse, "layer_types": ["full_attention"] * 4}
    assert _kv_bytes(sparse, engine) * 1024 == _kv_bytes(full, engine) * (1024 + 64)
