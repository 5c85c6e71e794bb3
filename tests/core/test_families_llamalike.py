"""Decoders with Llama's names and a twist of their own (``config_readers/llamalike.py``, ``families_llamalike.py``):
each model type read as itself (no generic-path warning), its tensor total equal to the one transformers 5.24 builds
from the config class's own defaults (the oracle ``benchmarks/data/transformers_families.jsonl``, counted on the meta
device), published configs at their published totals, each twist by tensor name, and an estimate on every engine."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import AttentionKind
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.families import family_of
from vramdesk.core.scenario import Scenario

_ORACLE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "transformers_families.jsonl"
#: the model types (each read by the record of its own name)
_TYPES = (
    "beam",
    "cohere2_moe",
    "cwm",
    "diffllama",
    "ernie4_5",
    "flex_olmo",
    "flint",
    "granite_swa",
    "granitemoe_swa",
    "granitemoeshared",
    "helium",
    "hyperclovax",
    "internlm3",
    "iquestcoder",
    "kolibri1",
    "lara_mini",
    "mellum",
    "mimo_v2_flash",
    "ministral3",
    "olmo",
    "sarvam_moe",
    "seed_oss",
    "vaultgemma",
)


def _oracle() -> dict[str, dict[str, Any]]:
    rows = (json.loads(line) for line in _ORACLE.read_text(encoding="utf-8").splitlines() if line.strip())
    return {row["model_type"]: row for row in rows if row["model_type"] in _TYPES}


_ROWS = _oracle()

#: allenai/OLMo-1B-hf's config.json, "byte-for-byte the arch block of the real allenai/OLMo-1B-hf config.json" in a
#: Rust engine's OLMo tests (code index file 60615877156)
OLMO_1B: dict[str, Any] = {
    "architectures": ["OlmoForCausalLM"],
    "attention_bias": False,
    "clip_qkv": None,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "max_position_embeddings": 2048,
    "model_type": "olmo",
    "num_attention_heads": 16,
    "num_hidden_layers": 16,
    "num_key_value_heads": 16,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "vocab_size": 50304,
}
#: internlm/internlm3-8b-instruct's config.json (remote code: qkv_bias / bias), the "realConfigJSON" of a Swift port's
#: tests (code index file 55463440875)
INTERNLM3_8B: dict[str, Any] = {
    "architectures": ["InternLM3ForCausalLM"],
    "bias": False,
    "head_dim": 128,
    "hidden_size": 4096,
    "intermediate_size": 10240,
    "max_position_embeddings": 32768,
    "model_type": "internlm3",
    "num_attention_heads": 32,
    "num_hidden_layers": 48,
    "num_key_value_heads": 2,
    "qkv_bias": False,
    "rms_norm_eps": 0.00001,
    "rope_scaling": {"factor": 6.0, "rope_type": "dynamic"},
    "rope_theta": 50000000,
    "tie_word_embeddings": False,
    "vocab_size": 128512,
}
#: ByteDance-Seed/Seed-OSS-36B's geometry as a Swift port's tests quote its config.json (code index file 55089675296);
#: it leaves attention_bias out, so SeedOssConfig's default (true) applies
SEED_OSS_36B: dict[str, Any] = {
    "model_type": "seed_oss",
    "hidden_size": 5120,
    "num_hidden_layers": 64,
    "intermediate_size": 27648,
    "num_attention_heads": 80,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "rms_norm_eps": 0.000001,
    "vocab_size": 155136,
    "rope_theta": 10000000.0,
    "rope_scaling": {"rope_type": "default"},
    "max_position_embeddings": 524288,
    "tie_word_embeddings": False,
}


#: the routers' correction biases (buffers in transformers' modules): MiMo-V2-Flash's and Beam's names, Sarvam's
_ROUTER_BUFFERS = ("mlp.gate.e_score_correction_bias", "mlp.gate.expert_bias")


#: Sarvam-MoE's checkpoint name for the embedding and the module transformers 5 loads it into
_RENAMED = ("model.word_embeddings", "model.embed_tokens")


def _names(config: dict[str, Any]) -> set[str]:
    return {t.name for t in model_facts(copy.deepcopy(config), "x/y").tensors}


def _config(model_type: str, **changes: Any) -> dict[str, Any]:
    return {**copy.deepcopy(_ROWS[model_type]["config"]), **changes}


def test_the_oracle_has_every_type() -> None:
    assert set(_ROWS) == set(_TYPES)


@pytest.mark.parametrize("model_type", _TYPES)
def test_the_total_equals_transformers_count_of_its_default_config(model_type: str) -> None:
    row = _ROWS[model_type]
    facts = model_facts(copy.deepcopy(row["config"]), f"x/{model_type}")
    assert facts.arch.warnings == ()
    assert family_of(facts.arch).name == model_type
    # transformers counts parameters; the routers' e_score_correction_bias is a persistent buffer (one float per
    # expert on every MoE layer) that the checkpoints store beside them, and vramdesk counts it
    buffers = sum(t.numel for t in facts.tensors if t.name.endswith(_ROUTER_BUFFERS))
    assert facts.counts.text + facts.counts.vision - buffers == row["total"]


def test_the_tensor_names_are_transformers_by_block() -> None:
    """The oracle's totals per top-level block, summed over vramdesk's tensors of the same names."""
    for model_type, row in _ROWS.items():
        facts = model_facts(copy.deepcopy(row["config"]), f"x/{model_type}")
        ours: dict[str, int] = {}
        for t in facts.tensors:
            name = t.name.replace(*_RENAMED) if t.name.startswith(_RENAMED[0]) else t.name
            block = next((p for p in row["by_prefix"] if name == p or name.startswith(p + ".")), name)
            ours[block] = ours.get(block, 0) + t.numel
        layers = next(p for p in row["by_prefix"] if p.endswith("layers"))
        ours[layers] -= sum(t.numel for t in facts.tensors if t.name.endswith(_ROUTER_BUFFERS))
        assert ours == row["by_prefix"], model_type


def test_olmo_1b_is_its_published_1_18_billion() -> None:
    # the Hub's safetensors total for allenai/OLMo-1B-hf, as its model page rounds it: 1.18B (to 0.01B, so 0.5 %)
    facts = model_facts(copy.deepcopy(OLMO_1B), "allenai/OLMo-1B-hf")
    assert facts.counts.text == pytest.approx(1.18e9, rel=5e-3)
    # non-parametric LayerNorms: no norm tensor at all; the head is the tied embedding
    assert not any("norm" in t.name for t in facts.tensors)
    assert "lm_head.weight" not in {t.name for t in facts.tensors}


def test_internlm3_8b_is_its_published_8_8_billion() -> None:
    # the model page's safetensors total for internlm/internlm3-8b-instruct, 8.8B (to 0.1B, so 0.6 %)
    facts = model_facts(copy.deepcopy(INTERNLM3_8B), "internlm/internlm3-8b-instruct")
    assert facts.counts.text == pytest.approx(8.8e9, rel=6e-3)
    assert facts.arch.warnings == ()


def test_seed_oss_36b_is_its_published_36_billion() -> None:
    # the model name's "36B" (rounded to the billion, so within 1.4 %); q/k/v biases by SeedOssConfig's default, none
    # on o_proj
    facts = model_facts(copy.deepcopy(SEED_OSS_36B), "ByteDance-Seed/Seed-OSS-36B-Instruct")
    assert facts.counts.text == pytest.approx(36e9, rel=0.014)
    names = {t.name for t in facts.tensors}
    assert "model.layers.0.self_attn.q_proj.bias" in names
    assert "model.layers.0.self_attn.o_proj.bias" not in names
    assert "model.layers.0.self_attn.o_proj.bias" in _names({**SEED_OSS_36B, "attention_out_bias": True})


def test_internlm3_reads_its_remote_code_bias_names() -> None:
    names = _names({**INTERNLM3_8B, "qkv_bias": True, "bias": True})
    assert {"model.layers.0.self_attn.o_proj.bias", "model.layers.0.mlp.down_proj.bias"} <= names


def test_the_checkpoints_names_where_transformers_renames_them() -> None:
    flint = _names(_ROWS["flint"]["config"])
    assert "model.layers.0.self_attn.softmax_offset" in flint and "model.layers.0.self_attn.sinks" not in flint
    kolibri = _names(_ROWS["kolibri1"]["config"])
    assert {"model.layers.0.post_attn_norm.weight", "model.layers.0.post_ffn_norm.weight"} <= kolibri
    granite = _names(_config("granitemoeshared", shared_intermediate_size=1024))
    assert {
        "model.layers.0.block_sparse_moe.input_linear.weight",
        "model.layers.0.block_sparse_moe.router.layer.weight",
        "model.layers.0.shared_mlp.input_linear.weight",
    } <= granite
    # per-expert checkpoints (the qwen2_moe pattern), recorded stacked under their per-expert names
    assert "model.layers.0.mlp.experts.gate_proj.weight" in _names(_ROWS["mellum"]["config"])


def test_the_extra_tensors_by_name() -> None:
    assert "model.layers.3.self_attn.lambda_k2" in _names(_ROWS["diffllama"]["config"])
    assert "model.layers.0.post_norm2.weight" in _names(_ROWS["hyperclovax"]["config"])
    assert "model.layers.0.post_norm2.weight" not in _names(_config("hyperclovax", use_post_norm=False))
    assert "model.layers.0.self_attn.sinks" in _names(_ROWS["granite_swa"]["config"])
    vault = _names(_ROWS["vaultgemma"]["config"])
    assert "model.layers.0.pre_feedforward_layernorm.weight" in vault
    assert "model.layers.0.post_attention_layernorm.weight" not in vault


def test_a_config_without_layer_types_gets_its_class_default() -> None:
    def kinds(model_type: str) -> str:
        cfg = {k: v for k, v in _ROWS[model_type]["config"].items() if k != "layer_types"}
        arch = model_facts(cfg, "x/y").arch
        return "".join("G" if s.attention == AttentionKind.FULL else "L" for s in arch.layers)

    assert kinds("cwm")[:8] == "GLLLGLLL"
    assert kinds("granite_swa")[:8] == "GLLLGLLL"
    assert kinds("kolibri1")[:10] == "LLLLGLLLLG"
    assert kinds("flint")[:10] == "GGLLLGLLLG" and kinds("flint")[-1] == "G"
    # Mellum's sliding_window alone does not make a layer slide (MellumConfig: every layer global)
    assert set(kinds("mellum")) == {"G"}
    assert set(kinds("cohere2_moe")[:8]) == {"L", "G"} and kinds("cohere2_moe")[3] == "G"


def test_mimo_v2_flash_doubles_the_kv_heads_and_keeps_sinks_on_sliding_layers() -> None:
    facts = model_facts(copy.deepcopy(_ROWS["mimo_v2_flash"]["config"]), "x/y")
    full, sliding = facts.arch.layers[0], facts.arch.layers[1]
    assert (full.attention, sliding.attention) == (AttentionKind.FULL, AttentionKind.SLIDING)
    assert (full.n_kv_heads, sliding.n_kv_heads) == (4, 8)
    assert (sliding.head_dim, sliding.v_head_dim, sliding.window) == (192, 128, 129)
    shapes = {t.name: t.shape for t in facts.tensors}
    assert shapes["model.layers.1.self_attn.v_proj.weight"] == (8 * 128, 4096)
    assert shapes["model.layers.1.self_attn.o_proj.weight"] == (4096, 64 * 128)
    assert "model.layers.1.self_attn.attention_sink_bias" in shapes
    assert "model.layers.0.self_attn.attention_sink_bias" not in shapes
    # the Hub configs' sliding_window_size counts the previous tokens, not the query
    cfg = {**_ROWS["mimo_v2_flash"]["config"], "sliding_window_size": 128}
    del cfg["sliding_window"]
    assert model_facts(cfg, "x/y").arch.layers[1].window == 129


def test_lara_mini_stacks_its_deltanet_projections_and_slides() -> None:
    facts = model_facts(copy.deepcopy(_ROWS["lara_mini"]["config"]), "x/y")
    kinds = [s.attention for s in facts.arch.layers[:5]]
    assert kinds == [
        AttentionKind.LINEAR,
        AttentionKind.SLIDING,
        AttentionKind.LINEAR,
        AttentionKind.FULL,
        AttentionKind.SLIDING,
    ]
    assert facts.arch.layers[1].window == 512 and not facts.arch.layers[3].attn_output_gate
    shapes = {t.name: t.shape for t in facts.tensors}
    # q, k (8 x 128 each), v and z (16 x 128 each), b and a (16 each): one matrix
    assert shapes["model.layers.0.linear_attn.in_proj.weight"] == (6176, 1024)
    assert "model.layers.0.linear_attn.out_norm.weight" in shapes
    assert "model.layers.0.mlp.shared_expert_gate.weight" not in shapes


def test_beam_gates_its_attention_output() -> None:
    shapes = {t.name: t.shape for t in model_facts(copy.deepcopy(_ROWS["beam"]["config"]), "x/y").tensors}
    assert shapes["model.layers.0.self_attn.gate_proj.weight"] == (48 * 128, 5120)
    assert shapes["model.layers.0.self_attn.gate_bias"] == (48,)


def test_flint_keeps_its_first_layers_dense() -> None:
    arch = model_facts(copy.deepcopy(_ROWS["flint"]["config"]), "x/y").arch
    assert [s.mlp for s in arch.layers[:3]] == ["dense", "dense", "moe"]
    assert all(s.moe is None or not s.moe.shared_gate for s in arch.layers)


_RUNS = {
    "transformers": {"workload": {"engine": "transformers"}},
    "vllm": {"workload": {"engine": "vllm"}},
    "llamacpp": {"weights": "q4_k_m", "workload": {"engine": "llamacpp"}},
    "lora": {"workload": {"kind": "finetune", "method": "lora"}},
}


@pytest.mark.parametrize("model_type", _TYPES)
@pytest.mark.parametrize("run", sorted(_RUNS))
def test_every_engine_estimates_them(model_type: str, run: str) -> None:
    facts = model_facts(copy.deepcopy(_ROWS[model_type]["config"]), "x/y")
    est = estimate(Scenario.model_validate({"model": {"id": "x/y"}, **_RUNS[run]}), facts, None)
    weights = next(c.bytes for c in est.components if c.name.lower().startswith("weights"))
    # at least 4 bits per parameter (q4_k_m); the device holds more than the weights
    assert est.device_bytes > weights >= facts.counts.text / 2
