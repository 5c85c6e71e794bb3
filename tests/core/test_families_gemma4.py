"""Gemma 4, Gemma 4 Unified (and its assistant) and Gemma 3n's text model: each config reads as its family (no generic
path), names the tensors its checkpoint stores, counts what transformers builds or a published figure gives, and
keeps the KV the engines keep (shared-KV layers keep none).

Sources:

* transformers' own defaults: the family oracle ``benchmarks/data/transformers_families.jsonl`` (the config class's
  defaults and the parameter count of the model transformers 5.24 builds from them);
* google/gemma-4-31B-it: a model-information report in the public code index (``find_string`` '"model_type":
  "gemma4_text"', file id 62810419502; hits carry no repository or path) prints the checkpoint's config.json and its
  safetensors listing: "权重张量数: 1,188", "参数总量: 31,273,088,876" (an exact count of every stored tensor);
* google/gemma-4-26B-A4B: the corpus copy (benchmarks/data/config_corpus/INDEX.csv: ai-dynamo/aiconfigurator,
  aic-core/src/aiconfigurator_core/model_configs/google--gemma-4-26B-A4B_config.json); the model card's
  "25.2B total / 3.8B active" as featherless.ai/models/google/gemma-4-26B-A4B-it and
  llmradar.eu/models/gemma-4-26b-a4b-it quote it (rounded to 0.1 B, the text model's figures).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.engines import ENGINES
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.families import family_of
from vramdesk.core.kv import plan_kv
from vramdesk.core.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
ORACLE = ROOT / "benchmarks" / "data" / "transformers_families.jsonl"
CORPUS_26B = ROOT / "benchmarks" / "data" / "config_corpus" / "google__gemma-4-26B-A4B.json"


def _oracle(model_type: str) -> dict[str, Any]:
    for line in ORACLE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["model_type"] == model_type:
            assert isinstance(rec, dict)
            return rec
    raise AssertionError(model_type)


#: google/gemma-4-31B-it's config.json as the report prints it (the fields that size something)
GEMMA4_31B: dict[str, Any] = {
    "architectures": ["Gemma4ForConditionalGeneration"],
    "model_type": "gemma4",
    "audio_config": None,
    "dtype": "bfloat16",
    "tie_word_embeddings": True,
    "text_config": {
        "model_type": "gemma4_text",
        "attention_bias": False,
        "attention_k_eq_v": True,
        "enable_moe_block": False,
        "final_logit_softcapping": 30.0,
        "global_head_dim": 512,
        "head_dim": 256,
        "hidden_size": 5376,
        "hidden_size_per_layer_input": 0,
        "intermediate_size": 21504,
        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 10,
        "max_position_embeddings": 262144,
        "moe_intermediate_size": None,
        "num_attention_heads": 32,
        "num_experts": None,
        "num_global_key_value_heads": 4,
        "num_hidden_layers": 60,
        "num_key_value_heads": 16,
        "num_kv_shared_layers": 0,
        "sliding_window": 1024,
        "tie_word_embeddings": True,
        "top_k_experts": None,
        "use_bidirectional_attention": "vision",
        "use_double_wide_mlp": False,
        "vocab_size": 262144,
        "vocab_size_per_layer_input": 262144,
    },
    "vision_config": {
        "model_type": "gemma4_vision",
        "head_dim": 72,
        "hidden_size": 1152,
        "intermediate_size": 4304,
        "num_attention_heads": 16,
        "num_hidden_layers": 27,
        "num_key_value_heads": 16,
        "patch_size": 16,
        "pooling_kernel_size": 3,
        "position_embedding_size": 10240,
        "standardize": True,
        "use_clipped_linears": False,
    },
}


@pytest.mark.parametrize(
    ("model_type", "family"),
    [
        ("gemma4", "gemma4"),
        ("gemma4_text", "gemma4_text"),
        ("gemma4_unified", "gemma4"),
        ("gemma4_unified_text", "gemma4_text"),
        ("gemma4_unified_assistant", "gemma4_text"),
        ("gemma3n_text", "gemma4_text"),
    ],
)
def test_transformers_defaults_count_what_transformers_builds(model_type: str, family: str) -> None:
    rec = _oracle(model_type)
    facts = model_facts(copy.deepcopy(rec["config"]), f"x/{model_type}")
    assert family_of(facts.arch).name == family
    assert not [w for w in facts.arch.warnings if "generic" in str(w)]
    # transformers counts parameters; the checkpoint also stores Gemma 4's one-element layer_scalar buffers
    scalars = sum(t.name.endswith(".layer_scalar") for t in facts.tensors)
    assert scalars == (0 if model_type == "gemma3n_text" else facts.arch.n_layers)
    assert facts.counts.text + facts.counts.vision == rec["total"] + scalars
    # per block: the PLE table and the layers as transformers' prefixes sum them
    by_prefix = {p: n for p, n in rec["by_prefix"].items() if p.startswith("model.embed_tokens_per_layer")}
    for prefix, n in by_prefix.items():
        assert sum(t.numel for t in facts.tensors if t.name.startswith(prefix)) == n


def test_gemma4_31b_counts_every_tensor_its_safetensors_store() -> None:
    facts = model_facts(copy.deepcopy(GEMMA4_31B), "google/gemma-4-31B-it")
    assert facts.counts.text + facts.counts.vision == 31_273_088_876  # exact: the listing's own total
    assert len(facts.tensors) == 1188
    shapes = {t.name: t.shape for t in facts.tensors}
    # a global layer: head_dim 512, 4 KV heads, keys doubling as values (no v_proj)
    assert shapes["model.language_model.layers.5.self_attn.k_proj.weight"] == (2048, 5376)
    assert shapes["model.language_model.layers.5.self_attn.q_proj.weight"] == (16384, 5376)
    assert "model.language_model.layers.5.self_attn.v_proj.weight" not in shapes
    assert shapes["model.language_model.layers.4.self_attn.v_proj.weight"] == (4096, 5376)
    assert shapes["model.vision_tower.patch_embedder.position_embedding_table"] == (2, 10240, 1152)
    assert shapes["model.embed_vision.embedding_projection.weight"] == (5376, 1152)


def test_gemma4_26b_a4b_reads_its_moe_beside_the_dense_mlp() -> None:
    config = json.loads(CORPUS_26B.read_text(encoding="utf-8"))
    facts = model_facts(config, "google/gemma-4-26B-A4B")
    arch = facts.arch
    assert family_of(arch).name == "gemma4" and not arch.warnings
    layer = arch.layers[0]
    assert layer.moe is not None
    assert (layer.moe.num_experts, layer.moe.top_k, layer.moe.expert_intermediate) == (128, 8, 704)
    assert layer.moe.shared_intermediate == 2112
    shapes = {t.name: t.shape for t in facts.tensors}
    p = "model.language_model.layers.0"
    assert shapes[f"{p}.experts.gate_up_proj"] == (128, 1408, 2816)
    assert shapes[f"{p}.experts.down_proj"] == (128, 2816, 704)
    assert shapes[f"{p}.mlp.gate_proj.weight"] == (2112, 2816)
    assert shapes[f"{p}.router.proj.weight"] == (128, 2816)
    assert shapes[f"{p}.router.per_expert_scale"] == (128,)
    # the model card's figures for the text model, rounded to 0.1 B
    assert round(facts.counts.text / 1e9, 1) == 25.2
    assert round(facts.counts.active / 1e9, 1) == 3.8


def _tiny(**extra: Any) -> dict[str, Any]:
    return {
        "model_type": "gemma4_text",
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "global_head_dim": 128,
        "intermediate_size": 512,
        "vocab_size": 1000,
        "sliding_window": 128,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
        **extra,
    }


def test_shared_kv_layers_store_no_projections_and_no_cache() -> None:
    shared = normalize(_tiny(num_kv_shared_layers=2, use_double_wide_mlp=True))
    own = normalize(_tiny())
    assert [x.kv_shared for x in shared.layers] == [False, False, True, True]
    names = {t.name for t in model_facts(_tiny(num_kv_shared_layers=2), "x/y").tensors}
    assert "model.layers.1.self_attn.k_proj.weight" in names
    assert not {"model.layers.2.self_attn.k_proj.weight", "model.layers.3.self_attn.k_norm.weight"} & names
    # double-wide MLPs on the shared layers only
    assert [x.intermediate for x in shared.layers] == [512, 512, 1024, 1024]
    for name in ("transformers", "vllm", "llamacpp"):
        rule = ENGINES[name]
        a = plan_kv(shared, rule, tokens=64, seqs=1, kv_bits=16, compute_bytes=2)
        b = plan_kv(own, rule, tokens=64, seqs=1, kv_bits=16, compute_bytes=2)
        # the two layers that keep their own KV (one sliding, one global) hold what all four held before
        assert a.kv_bytes > 0 and a.kv_bytes * 2 == b.kv_bytes, name
    # transformers, under the window: every layer keeps the 64 tokens, sliding 2 x 2 x 64, global 2 x 2 x 128 a token
    assert plan_kv(own, ENGINES["transformers"], tokens=64, seqs=1, kv_bits=16, compute_bytes=2).kv_bytes == (
        64 * 2 * (2 * 2 * 64 + 2 * 2 * 128) * 2
    )


def test_every_engine_estimates_gemma4_without_a_traceback() -> None:
    config = json.loads(CORPUS_26B.read_text(encoding="utf-8"))
    facts = model_facts(config, "google/gemma-4-26B-A4B")
    for workload in ({"engine": "transformers"}, {"engine": "vllm"}, {"engine": "llamacpp"}):
        scenario = Scenario.model_validate({"model": {"id": "google/gemma-4-26B-A4B"}, "workload": workload})
        est = estimate(scenario, facts, None)
        assert next(c.bytes for c in est.components if c.name.startswith("KV cache")) > 0


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"num_kv_shared_layers": 9}, "num_kv_shared_layers (9) exceeds num_hidden_layers (4)"),
        ({"num_kv_shared_layers": 1, "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}, "no earlier"),
        ({"per_layer_config": {"1": {"rope_theta": 1.0}}}, "overrides 'rope_theta' for layer 1"),
        ({"per_layer_config": {"7": {"head_dim": 64}}}, "entry '7' must map a layer index below 4"),
        ({"enable_moe_block": True, "num_experts": 4}, "missing the field 'top_k_experts'"),
        ({"intermediate_size": [512, 512]}, "lists 2 widths, expected one per layer (4)"),
    ],
)
def test_bad_gemma4_configs_are_refused_in_one_line(extra: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError) as err:
        normalize(_tiny(**extra))
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_tower_left_out_is_said() -> None:
    config = {"model_type": "gemma3n", "text_config": {**_tiny(), "model_type": "gemma3n_text"}, "audio_config": {}}
    config["vision_config"] = {"model_type": "timm_wrapper"}
    arch = normalize(config)
    assert any("vision and audio towers are not counted" in str(w) for w in arch.warnings)
