"""MoE families of config_readers/moe2.py (ERNIE 4.5 MoE, EXAONE MoE, HY-V3, Solar Open, Laguna, AFMoE, MiniMax-Text-01,
JetMoE) and GLM-4.5's default config, against the oracle of benchmarks/data/transformers_families.jsonl: the config
each ``<Family>Config`` of transformers 5.24 writes with its own defaults, and the parameter count of the model
transformers builds from it on the meta device (``transformers_families_gen.py``). The counts are transformers', not
formulas; the tensor names are the checkpoints' (transformers 5's conversion_mapping.py maps them at load time)."""

from __future__ import annotations

from typing import Any

import pytest
from familyoracle import oracle_config as _config
from familyoracle import oracle_records as _records

from vramdesk.core.architecture import AttentionKind, ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.engines import engine
from vramdesk.core.facts import model_facts
from vramdesk.core.inventory import build_inventory
from vramdesk.core.kv_layers import AttentionSpec, LinearAttentionSpec, kv_layer


def _tensors(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in build_inventory(normalize(config))}


@pytest.mark.parametrize("model_type", ["ernie4_5_moe", "laguna", "afmoe", "minimax", "jetmoe"])
def test_the_count_is_transformers_own(model_type: str) -> None:
    facts = model_facts(_config(model_type), f"x/{model_type}")
    assert not facts.arch.warnings
    assert facts.arch.family == model_type
    assert facts.counts.text + facts.counts.vision == _records()[model_type]["total"]


#: where transformers keeps the router's correction bias as a buffer (nn.Buffer: saved in the checkpoint, not a
#: parameter it counts), the checkpoint's total is transformers' count plus one (experts,) bias per MoE layer
_BUFFERED = {
    "exaone_moe": "mlp.e_score_correction_bias",
    "hy_v3": "mlp.expert_bias",
    "solar_open": "mlp.gate.e_score_correction_bias",
    "glm4_moe": "mlp.gate.e_score_correction_bias",
}


@pytest.mark.parametrize("model_type", sorted(_BUFFERED))
def test_the_count_is_transformers_own_plus_the_stored_correction_bias(model_type: str) -> None:
    config = _config(model_type)
    facts = model_facts(config, f"x/{model_type}")
    biases = [t for t in facts.tensors if t.part == "text" and t.name.endswith(_BUFFERED[model_type])]
    moe_layers = [spec for spec in facts.arch.layers if spec.moe is not None]
    assert len(biases) == len(moe_layers) > 0
    assert {t.shape for t in biases} == {(moe_layers[0].moe.num_experts,)}  # type: ignore[union-attr]
    assert facts.counts.text == _records()[model_type]["total"] + sum(t.numel for t in biases)


def test_glm4_moe_defaults_have_heads_narrower_than_hidden_over_heads() -> None:
    # Glm4MoeConfig: 4096 wide, 96 heads, no head_dim: Glm4MoeAttention makes 4096 // 96 = 42-wide heads
    arch = normalize(_config("glm4_moe"))
    assert {(s.n_heads, s.head_dim) for s in arch.layers} == {(96, 42)}
    assert _tensors(_config("glm4_moe"))["model.layers.1.self_attn.q_proj.weight"] == (96 * 42, 4096)


def test_ernie_layers_and_names() -> None:
    names = _tensors(_config("ernie4_5_moe"))
    # layer 0 is dense (moe_layer_start_index 1), the others MoE with 2 x 1536 shared and the stored statics
    assert names["model.layers.0.mlp.gate_proj.weight"] == (12288, 2560)
    assert names["model.layers.27.mlp.shared_experts.gate_proj.weight"] == (2 * 1536, 2560)
    assert names["model.layers.27.mlp.moe_statics.e_score_correction_bias"] == (64,)
    assert names["model.layers.27.mlp.experts.gate_proj.weight"] == (64, 1536, 2560)
    assert "lm_head.weight" not in names  # tied by default


def test_ernie_moe_layer_interval_and_end_index() -> None:
    config = {**_config("ernie4_5_moe"), "moe_layer_interval": 2, "moe_layer_end_index": 20}
    arch = normalize(config)
    assert [s.index for s in arch.layers if s.moe is not None] == list(range(1, 21, 2))


def test_hy_v3_keeps_the_checkpoint_names() -> None:
    names = _tensors(_config("hy_v3"))
    assert names["model.layers.1.mlp.router.gate.weight"] == (192, 4096)
    assert names["model.layers.1.mlp.shared_mlp.down_proj.weight"] == (4096, 1536)
    assert names["model.layers.1.self_attn.q_norm.weight"] == (128,)
    assert "model.layers.0.mlp.router.gate.weight" not in names  # mlp_layer_types[0] is dense


def test_laguna_gate_per_head_or_per_element_and_heads_per_layer() -> None:
    config = _config("laguna")
    config["num_attention_heads_per_layer"] = [48, 32] + [48] * 38
    names = _tensors(config)
    assert names["model.layers.1.self_attn.g_proj.weight"] == (32, 2048)
    assert names["model.layers.1.self_attn.q_proj.weight"] == (32 * 128, 2048)
    assert names["model.layers.1.mlp.experts.e_score_correction_bias"] == (256,)
    assert names["model.layers.1.mlp.shared_expert.up_proj.weight"] == (512, 2048)
    elementwise = _tensors({**_config("laguna"), "gating": "per-element"})
    assert elementwise["model.layers.0.self_attn.g_proj.weight"] == (48 * 128, 2048)


def test_laguna_refuses_a_head_list_of_the_wrong_length() -> None:
    with pytest.raises(ConfigError, match="'num_attention_heads_per_layer' has 2 entries but num_hidden_layers is 40"):
        normalize({**_config("laguna"), "num_attention_heads_per_layer": [48, 48]})


def test_afmoe_four_norms_gate_and_sliding_layers() -> None:
    config = _config("afmoe")
    names = _tensors(config)
    for n in ("input_layernorm", "post_attention_layernorm", "pre_mlp_layernorm", "post_mlp_layernorm"):
        assert names[f"model.layers.3.{n}.weight"] == (2048,)
    assert names["model.layers.3.self_attn.gate_proj.weight"] == (16 * 128, 2048)
    assert names["model.layers.3.mlp.expert_bias"] == (64,)
    arch = normalize(config)
    sliding = [s.index for s in arch.layers if s.attention == AttentionKind.SLIDING]
    assert sliding == [i for i, t in enumerate(config["layer_types"]) if t == "sliding_attention"]
    assert {s.window for s in arch.layers if s.index in sliding} == {1024}


def test_mlp_layer_types_must_say_dense_or_sparse() -> None:
    config = _config("exaone_moe")
    config["mlp_layer_types"] = ["dense", "moe"] + ["sparse"] * 30
    with pytest.raises(ConfigError, match="unknown entry 'moe' in 'mlp_layer_types'"):
        normalize(config)


def test_minimax_lightning_layers_hold_a_head_dim_square_state_per_head() -> None:
    arch = normalize(_config("minimax"))
    lightning = [s for s in arch.layers if s.attention == AttentionKind.LINEAR]
    assert len(lightning) == 16 and all(s.state is not None and s.state.kind == "lightning" for s in lightning)
    names = _tensors(_config("minimax"))
    assert names["model.layers.1.self_attn.qkv_proj.weight"] == (3 * 4096, 4096)
    assert names["model.layers.1.self_attn.output_gate.weight"] == (4096, 4096)
    assert names["model.layers.0.block_sparse_moe.experts.w1.weight"] == (8, 14336, 4096)
    state = kv_layer(lightning[0])
    assert isinstance(state, LinearAttentionSpec)
    # 32 heads of a 128 x 128 K^T V matrix: bf16 in transformers' MiniMaxCache and vLLM's "auto" mamba_cache_dtype;
    # llama.cpp's recurrent rule keeps F32 rows
    elements = 32 * 128 * 128
    assert state.state_bytes_per_sequence(engine("transformers"), 2) == 2 * elements
    assert state.state_bytes_per_sequence(engine("vllm"), 2) == 2 * elements
    assert state.state_bytes_per_sequence(engine("llamacpp"), 2) == 4 * elements
    # softmax layers keep K and V of 8 heads of 128
    full = kv_layer(arch.layers[0])
    assert isinstance(full, AttentionSpec)
    assert full.elements_per_token(engine("transformers")) == 2 * 8 * 128


def test_minimax_reads_the_original_attn_type_list() -> None:
    config = _config("minimax")
    del config["layer_types"]
    config["attn_type_list"] = [0] * 7 + [1] + [0] * 24
    arch = normalize(config)
    assert [s.index for s in arch.layers if s.attention == AttentionKind.FULL] == [7]
    with pytest.raises(ConfigError, match=r"'attn_type_list' entries are 0 \(lightning attention\) or 1"):
        normalize({**config, "attn_type_list": [2] * 32})


def test_jetmoe_attention_experts_share_one_kv() -> None:
    arch = normalize(_config("jetmoe"))
    # top 2 of 8 attention experts, each 16 query heads of 128 over the layer's 16 KV heads
    assert {(s.n_heads, s.n_kv_heads, s.head_dim) for s in arch.layers} == {(32, 16, 128)}
    kv = kv_layer(arch.layers[0])
    assert isinstance(kv, AttentionSpec)
    assert kv.elements_per_token(engine("vllm")) == 2 * 16 * 128
    names = _tensors(_config("jetmoe"))
    assert names["model.layers.0.self_attention.kv_proj.weight"] == (2 * 16 * 128, 2048)
    assert names["model.layers.0.self_attention.experts.input_linear.weight"] == (8, 16 * 128, 2048)
    assert names["model.layers.0.mlp.input_linear.weight"] == (8, 2 * 5632, 2048)
    assert names["model.layers.0.mlp.bias"] == (2048,)
