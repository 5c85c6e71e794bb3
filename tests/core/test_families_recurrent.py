"""Recurrent hybrids (LFM2, Kimi Linear): each published config reads its layer kinds, names the checkpoint's tensors,
counts the published total, holds the per-sequence state each engine's own code allocates, and estimates on every
engine.

Configs: the published values. Copies were found with the index's exact-string search of public code
(``find_string``), whose hits carry a file id but no repository or path; the id is given. Fields no reader looks at
(token ids, init scales, rope settings) are left out.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vramdesk.core.architecture import AttentionKind, ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.engines import ENGINES
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.families import family_of
from vramdesk.core.inventory import build_inventory, count_params
from vramdesk.core.kv import plan_kv, state_bytes_per_sequence
from vramdesk.core.scenario import Scenario

#: LiquidAI/LFM2-1.2B's config.json, the original spelling (block_ff_dim, full_attn_idxs, no layer_types), as a Rust
#: port's test quotes it "read from the Hub" (find_string id 59124207504)
LFM2_1_2B: dict[str, Any] = {
    "architectures": ["Lfm2ForCausalLM"],
    "block_auto_adjust_ff_dim": True,
    "block_dim": 2048,
    "block_ff_dim": 12288,
    "block_multiple_of": 256,
    "block_ffn_dim_multiplier": 1.0,
    "conv_L_cache": 3,
    "conv_bias": False,
    "full_attn_idxs": [2, 5, 8, 10, 12, 14],
    "hidden_size": 2048,
    "max_position_embeddings": 128000,
    "model_type": "lfm2",
    "norm_eps": 1e-05,
    "num_attention_heads": 32,
    "num_hidden_layers": 16,
    "num_key_value_heads": 8,
    "torch_dtype": "bfloat16",
    "vocab_size": 65536,
}

#: moonshotai/Kimi-Linear-48B-A3B-Instruct's config (a Rust port's "released_48b_config" test, find_string id
#: 68953713753; the kda_layers list as a conversion preflight test quotes it, find_string id 60758563596)
KIMI_LINEAR_48B: dict[str, Any] = {
    "architectures": ["KimiLinearForCausalLM"],
    "model_type": "kimi_linear",
    "q_lora_rank": None,
    "mla_use_nope": True,
    "moe_router_activation_func": "sigmoid",
    "tie_word_embeddings": False,
    "hidden_size": 2304,
    "num_hidden_layers": 27,
    "vocab_size": 163840,
    "num_attention_heads": 32,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "num_experts": 256,
    "num_experts_per_token": 8,
    "num_shared_experts": 1,
    "moe_intermediate_size": 1024,
    "first_k_dense_replace": 1,
    "intermediate_size": 9216,
    "torch_dtype": "bfloat16",
    "linear_attn_config": {
        "full_attn_layers": [4, 8, 12, 16, 20, 24, 27],
        "kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26],
        "head_dim": 128,
        "num_heads": 32,
        "short_conv_kernel_size": 4,
    },
}


def test_lfm2_reads_its_original_config_and_counts_the_model_card_total() -> None:
    arch = normalize(LFM2_1_2B)
    assert family_of(arch).name == "lfm2" and not arch.warnings
    kinds = [layer.attention for layer in arch.layers]
    assert [i for i, k in enumerate(kinds) if k == AttentionKind.FULL] == [2, 5, 8, 10, 12, 14]
    # block_ff_dim 12288 -> int(2/3 x 12288) = 8192, already a multiple of 256
    assert {layer.intermediate for layer in arch.layers} == {8192}
    assert arch.tie_embeddings
    # the LFM2-1.2B model card's "Parameters: 1,170,340,608" (exact; transformers 5.24 builds the same count)
    assert count_params(build_inventory(arch)).text == 1_170_340_608


def test_lfm2_names_the_checkpoint_tensors() -> None:
    names = {t.name: t.shape for t in build_inventory(normalize(LFM2_1_2B))}
    assert names["model.layers.0.conv.in_proj.weight"] == (3 * 2048, 2048)
    assert names["model.layers.0.conv.conv.weight"] == (2048, 1, 3)
    assert names["model.layers.0.conv.out_proj.weight"] == (2048, 2048)
    assert names["model.layers.2.self_attn.out_proj.weight"] == (2048, 2048)
    assert names["model.layers.2.self_attn.q_layernorm.weight"] == (64,)
    assert names["model.layers.2.feed_forward.w1.weight"] == (8192, 2048)
    assert names["model.layers.2.ffn_norm.weight"] == (2048,)
    assert "model.embedding_norm.weight" in names and "lm_head.weight" not in names
    assert "model.layers.0.self_attn.q_proj.weight" not in names
    assert "model.layers.0.conv.conv.bias" not in names


def test_lfm2_layer_types_and_conv_bias() -> None:
    cfg = {**copy.deepcopy(LFM2_1_2B), "conv_bias": True, "layer_types": ["conv", "full_attention"] * 8}
    del cfg["full_attn_idxs"]
    arch = normalize(cfg)
    assert arch.count(AttentionKind.FULL) == 8
    names = {t.name for t in build_inventory(arch)}
    assert {"model.layers.0.conv.in_proj.bias", "model.layers.0.conv.conv.bias"} <= names


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"layer_types": ["conv", "mamba"] * 8}, "unknown entry 'mamba' in 'layer_types'"),
        ({"layer_types": ["conv"] * 3}, "'layer_types' has 3 entries but num_hidden_layers is 16"),
        ({"full_attn_idxs": [2, 16]}, "'full_attn_idxs' names layer 16, but the model has 16 layers"),
        ({"block_ffn_dim_multiplier": "x"}, "block_ffn_dim_multiplier must be a positive number"),
    ],
)
def test_lfm2_bad_configs_are_named(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        normalize({**copy.deepcopy(LFM2_1_2B), **change})


def test_lfm2_conv_state_per_engine() -> None:
    arch = normalize(LFM2_1_2B)
    # ten short-conv layers, each a conv window of hidden (2048) channels, no recurrent state
    # transformers (LinearAttentionLayer.update_conv_state): conv_L_cache columns in the model dtype
    assert state_bytes_per_sequence(arch, ENGINES["transformers"], 2) == 10 * 3 * 2048 * 2
    # vLLM (MambaStateShapeCalculator.short_conv_state_shape): conv_kernel - 1 columns in the model dtype
    assert state_bytes_per_sequence(arch, ENGINES["vllm"], 2) == 10 * 2 * 2048 * 2
    # llama.cpp (n_embd_r = n_embd x (n_shortconv_l_cache - 1), F32)
    assert state_bytes_per_sequence(arch, ENGINES["llamacpp"], 2) == 10 * 2 * 2048 * 4


def test_kimi_linear_reads_the_released_config() -> None:
    arch = normalize(KIMI_LINEAR_48B)
    assert family_of(arch).name == "kimi_linear" and not arch.warnings
    mla = [i for i, layer in enumerate(arch.layers) if layer.attention == AttentionKind.MLA]
    assert mla == [3, 7, 11, 15, 19, 23, 26]
    assert arch.layers[0].mlp == "dense" and all(layer.mlp == "moe" for layer in arch.layers[1:])
    counts = count_params(build_inventory(arch))
    # transformers 5.24 builds 49,122,675,072 from this config; the checkpoint also stores the 26 MoE layers' 256
    # e_score_correction_bias entries (a buffer in transformers): exact
    assert counts.text == 49_122_675_072 + 26 * 256
    # the model's name and README ("48B total parameters", "3B activated") round both figures: within 3 %
    assert counts.text == pytest.approx(48e9, rel=0.03)
    assert counts.active == pytest.approx(3e9, rel=0.17)


def test_kimi_linear_names_the_checkpoint_tensors() -> None:
    names = {t.name: t.shape for t in build_inventory(normalize(KIMI_LINEAR_48B))}
    p = "model.layers.1"
    assert names[f"{p}.self_attn.q_conv1d.weight"] == (4096, 1, 4)
    assert names[f"{p}.self_attn.A_log"] == (1, 1, 32, 1)
    assert names[f"{p}.self_attn.f_b_proj.weight"] == (4096, 128)
    assert names[f"{p}.block_sparse_moe.experts.w1.weight"] == (256, 1024, 2304)
    assert names[f"{p}.block_sparse_moe.shared_experts.down_proj.weight"] == (2304, 1024)
    assert names["model.layers.3.self_attn.kv_a_proj_with_mqa.weight"] == (512 + 64, 2304)
    assert names["model.layers.0.mlp.gate_proj.weight"] == (9216, 2304)


def test_kimi_linear_state_and_latent_cache_per_engine() -> None:
    arch = normalize(KIMI_LINEAR_48B)
    conv, state = 3 * 4096, 32 * 128 * 128
    # transformers: conv_kernel columns of q/k/v in the model dtype, the state stored .to(torch.float32)
    assert state_bytes_per_sequence(arch, ENGINES["transformers"], 2) == 20 * (4 * conv * 2 + state * 4)
    # vLLM (kda_state_shape / kda_state_dtype): kernel - 1 conv columns in the model dtype, the state in float32
    assert state_bytes_per_sequence(arch, ENGINES["vllm"], 2) == 20 * (3 * conv * 2 + state * 4)
    assert state_bytes_per_sequence(arch, ENGINES["llamacpp"], 2) == 20 * 4 * (3 * conv + state)
    # vLLM caches the 7 MLA layers' latent (kv_lora_rank + qk_rope_head_dim); transformers does from 5.17
    # (KimiLinearAttention: cache.update before expand_kv; tests/core/test_mla_cache_versions.py)
    plan = plan_kv(arch, ENGINES["vllm"], tokens=1000, seqs=1, kv_bits=16, compute_bytes=2)
    assert plan.bytes_per_token_growing == 7 * (512 + 64) * 2


_RUNS = [
    {"workload": {"engine": "transformers"}},
    {"workload": {"engine": "vllm"}},
    {"workload": {"engine": "llamacpp"}, "weights": "q4_k_m"},
    {"workload": {"engine": "sglang"}},
    {"workload": {"kind": "finetune", "method": "lora"}},
]


@pytest.mark.parametrize("config", [LFM2_1_2B, KIMI_LINEAR_48B], ids=["lfm2", "kimi_linear"])
@pytest.mark.parametrize("run", range(len(_RUNS)))
def test_every_engine_and_a_lora_fine_tune_estimate_each_model(config: dict[str, Any], run: int) -> None:
    scenario = Scenario.model_validate({"model": {"id": "x/y"}, **_RUNS[run]})
    facts = model_facts(copy.deepcopy(config))
    est = estimate(scenario, facts, None)
    assert est.peak_allocated_bytes > facts.counts.text // 4
    assert "weights" in {c.name for c in est.components}
