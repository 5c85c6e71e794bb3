"""DeepSeek-style MLA families read as themselves (config_readers/mlamoe.py): DeepSeek-V2, GLM-4.7-Flash
(glm4_moe_lite), MiniCPM3, Sarvam's sarvam_mla and A.X-K1, checked against what transformers 5.24 builds from each
config class's defaults (benchmarks/data/transformers_families.jsonl) and against published configs and totals.

Published configs and totals (code index file ids, find_string / read_file):
* deepseek-ai/DeepSeek-V2-Lite-Chat's config as DeepseekV2Config prints it (a model report, file id 62526029280);
  its Hugging Face parameter count 15,706,484,224 BF16 parameters, exact (a MAX deployment note, file id
  57362008828; the same figure in a torchtitan run log, file id 54584736809);
* zai-org/GLM-4.7-Flash's config.json (an sglang-kt preflight test's copy of the published file, file id
  67159551111); its safetensors total 31,221,488,576, exact (a table of Hub ``safetensors.total`` values, file id
  70957423560; the index's metadata.total_size, file id 56685666571, which also says the MTP layer 47 stores its
  own embedding and shared head).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.inventory import build_inventory, count_params
from vramdesk.core.scenario import Scenario

_ORACLE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "transformers_families.jsonl"


def _oracle(model_type: str) -> dict[str, Any]:
    with _ORACLE.open(encoding="utf-8") as fh:
        for line in fh:
            rec: dict[str, Any] = json.loads(line)
            if rec["model_type"] == model_type:
                return rec
    raise KeyError(model_type)


#: deepseek-ai/DeepSeek-V2-Lite-Chat (file id 62526029280), without its rope and token-id fields
V2_LITE: dict[str, Any] = {
    "architectures": ["DeepseekV2ForCausalLM"],
    "attention_bias": False,
    "dtype": "bfloat16",
    "first_k_dense_replace": 1,
    "head_dim": 64,
    "hidden_size": 2048,
    "intermediate_size": 10944,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "mlp_bias": False,
    "model_type": "deepseek_v2",
    "moe_intermediate_size": 1408,
    "moe_layer_freq": 1,
    "n_group": 1,
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "norm_topk_prob": False,
    "num_attention_heads": 16,
    "num_experts_per_tok": 6,
    "num_hidden_layers": 27,
    "num_key_value_heads": 16,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "routed_scaling_factor": 1.0,
    "scoring_func": "softmax",
    "tie_word_embeddings": False,
    "topk_group": 1,
    "topk_method": "greedy",
    "v_head_dim": 128,
    "vocab_size": 102400,
}

#: zai-org/GLM-4.7-Flash config.json (file id 67159551111), without its token ids
GLM47_FLASH: dict[str, Any] = {
    "architectures": ["Glm4MoeLiteForCausalLM"],
    "attention_bias": False,
    "hidden_size": 2048,
    "intermediate_size": 10240,
    "max_position_embeddings": 202752,
    "model_type": "glm4_moe_lite",
    "moe_intermediate_size": 1536,
    "topk_method": "noaux_tc",
    "norm_topk_prob": True,
    "num_attention_heads": 20,
    "n_group": 1,
    "topk_group": 1,
    "n_routed_experts": 64,
    "n_shared_experts": 1,
    "routed_scaling_factor": 1.8,
    "num_experts_per_tok": 4,
    "first_k_dense_replace": 1,
    "num_hidden_layers": 47,
    "num_key_value_heads": 20,
    "num_nextn_predict_layers": 1,
    "partial_rotary_factor": 1.0,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
    "dtype": "bfloat16",
    "q_lora_rank": 768,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 192,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "vocab_size": 154880,
}


@pytest.mark.parametrize(
    ("model_type", "family", "buffers"),
    [
        ("deepseek_v2", "deepseek_v2", 0),
        ("minicpm3", "minicpm3", 0),
        ("sarvam_mla", "deepseek_v3", 0),
        # transformers counts no buffer: the routers' e_score_correction_bias (one per expert and MoE layer), which
        # the checkpoints store, is the whole difference
        ("glm4_moe_lite", "glm4_moe_lite", 46 * 64),
        ("axk1", "axk1", 60 * 192),
    ],
)
def test_transformers_defaults_count_what_transformers_builds(model_type: str, family: str, buffers: int) -> None:
    rec = _oracle(model_type)
    arch = normalize(rec["config"])
    assert arch.family == family
    assert not any(w.id == "config.generic_decoder" for w in arch.warnings)
    c = count_params(build_inventory(arch))
    assert c.text + c.vision - buffers == rec["total"]


def test_deepseek_v2_defaults_assume_six_routed_experts_and_say_so() -> None:
    arch = normalize(_oracle("deepseek_v2")["config"])
    assert [w.id for w in arch.warnings] == ["config.mla.top_k_assumed"]
    assert "6 experts a token assumed" in arch.warnings[0]
    assert {layer.moe.top_k for layer in arch.layers if layer.moe is not None} == {6}
    # a config that names it is read silently
    assert normalize(V2_LITE).warnings == ()


def test_deepseek_v2_lite_counts_its_published_total() -> None:
    arch = normalize(V2_LITE)
    assert arch.family == "deepseek_v2"
    shapes = {t.name: t.shape for t in build_inventory(arch)}
    # no q latent (q_lora_rank null): one q_proj; layer 0 dense, layers 1-26 MoE with a softmax router (no bias)
    assert shapes["model.layers.0.self_attn.q_proj.weight"] == (16 * 192, 2048)
    assert shapes["model.layers.0.mlp.gate_proj.weight"] == (10944, 2048)
    assert shapes["model.layers.1.mlp.experts.gate_proj.weight"] == (64, 1408, 2048)
    assert shapes["model.layers.1.mlp.shared_experts.gate_proj.weight"] == (2 * 1408, 2048)
    assert not any("e_score_correction_bias" in n for n in shapes)
    assert count_params(build_inventory(arch)).checkpoint == 15_706_484_224


def test_glm47_flash_counts_its_published_safetensors_total() -> None:
    arch = normalize(GLM47_FLASH)
    assert arch.family == "glm4_moe_lite" and arch.warnings == ()
    tensors = build_inventory(arch)
    shapes = {t.name: t.shape for t in tensors}
    assert shapes["model.layers.1.mlp.gate.e_score_correction_bias"] == (64,)
    assert "model.layers.0.mlp.gate.weight" not in shapes
    # the MTP layer continues the numbering with its own embedding and head
    assert shapes["model.layers.47.embed_tokens.weight"] == (154880, 2048)
    assert shapes["model.layers.47.shared_head.head.weight"] == (154880, 2048)
    assert shapes["model.layers.47.eh_proj.weight"] == (2048, 4096)
    assert count_params(tensors).checkpoint == 31_221_488_576


def test_mlp_layer_types_choose_the_moe_layers() -> None:
    config = {**GLM47_FLASH, "num_hidden_layers": 4, "mlp_layer_types": ["dense", "sparse", "dense", "sparse"]}
    arch = normalize(config)
    assert [layer.mlp for layer in arch.layers] == ["dense", "moe", "dense", "moe"]
    assert arch.layers[2].intermediate == 10240
    with pytest.raises(ConfigError, match=r"glm4_moe_lite: unknown entry 'moe' in 'mlp_layer_types'"):
        normalize({**config, "mlp_layer_types": ["dense", "moe", "dense", "sparse"]})
    with pytest.raises(ConfigError, match=r"'mlp_layer_types' has 3 entries but num_hidden_layers is 4"):
        normalize({**config, "mlp_layer_types": ["dense", "sparse", "sparse"]})
    with pytest.raises(ConfigError, match=r"field 'mlp_layer_types' must be a list"):
        normalize({**config, "mlp_layer_types": "dense"})


def test_attention_bias_adds_the_mla_biases() -> None:
    shapes = {t.name: t.shape for t in build_inventory(normalize({**GLM47_FLASH, "attention_bias": True}))}
    a = "model.layers.0.self_attn"
    # q_a_proj, kv_a_proj_with_mqa and o_proj (Glm4MoeLiteAttention: bias=config.attention_bias); not q_b / kv_b
    assert shapes[f"{a}.q_a_proj.bias"] == (768,)
    assert shapes[f"{a}.kv_a_proj_with_mqa.bias"] == (512 + 64,)
    assert shapes[f"{a}.o_proj.bias"] == (2048,)
    assert f"{a}.q_b_proj.bias" not in shapes and f"{a}.kv_b_proj.bias" not in shapes


def test_axk1_normalises_the_moe_output_on_its_sparse_layers() -> None:
    shapes = {t.name: t.shape for t in build_inventory(normalize(_oracle("axk1")["config"]))}
    assert shapes["model.layers.1.post_mlp_layernorm.weight"] == (7168,)
    assert "model.layers.0.post_mlp_layernorm.weight" not in shapes


def test_minicpm3_ties_its_embeddings_and_derives_v_head_dim() -> None:
    arch = normalize(_oracle("minicpm3")["config"] | {"v_head_dim": None})
    assert arch.tie_embeddings
    # MiniCPM3Config: v_head_dim = hidden_size // num_attention_heads = 2560 // 40
    assert {layer.v_head_dim for layer in arch.layers} == {64}
    assert not arch.is_moe


def _kv(config: dict[str, Any], engine: str, **workload: Any) -> int:
    s = Scenario.model_validate(
        {"model": {"id": "x/y"}, "weights": "bf16", "workload": {"engine": engine, "input_len": 4096, **workload}}
    )
    est = estimate(s, model_facts(config), None)
    return next(c.bytes for c in est.components if c.name in ("KV cache", "KV cache pool"))


@pytest.mark.parametrize("engine", ["vllm", "llamacpp"])
def test_latent_engines_cache_the_mla_latent_per_token(engine: str) -> None:
    # vLLM's MLA backends and llama.cpp's deepseek2 graph cache kv_lora_rank + qk_rope_head_dim per token and layer
    # (47 x 576 x 2 bytes for GLM-4.7-Flash)
    short, long = (_kv(GLM47_FLASH, engine, input_len=n, output_len=0) for n in (4096, 8192))
    assert (long - short) / 4096 == 47 * 576 * 2
