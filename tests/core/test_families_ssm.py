"""State-space models and their hybrids (config_readers/ssm.py): Mamba, Falcon-Mamba, Mamba-2, Jamba, Bamba,
Falcon-H1, Granite 4.0-H, and Nemotron-H's transformers-5 layer names.

The parameter totals are transformers' own: ``benchmarks/data/transformers_families.jsonl`` holds, for each model
type, the config class's defaults and the parameter count of the model transformers 5.24 builds from them (meta
device); vramdesk must match them exactly. The per-sequence state is checked against each engine's cache code,
cited at each test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import AttentionKind, ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.engines import ENGINES
from vramdesk.core.facts import model_facts
from vramdesk.core.kv import plan_kv, state_bytes_per_sequence

_ORACLE = Path(__file__).parents[2] / "benchmarks" / "data" / "transformers_families.jsonl"
_TYPES = ("mamba", "falcon_mamba", "mamba2", "jamba", "bamba", "falcon_h1", "granitemoehybrid", "nemotron_h")


def _oracle() -> dict[str, dict[str, Any]]:
    rows = (json.loads(line) for line in _ORACLE.read_text().splitlines() if line.strip())
    return {r["model_type"]: r for r in rows if r["model_type"] in _TYPES}


_ROWS = _oracle()


@pytest.mark.parametrize("model_type", _TYPES)
def test_the_oracle_config_counts_what_transformers_builds(model_type: str) -> None:
    row = _ROWS[model_type]
    facts = model_facts(row["config"], f"oracle/{model_type}")
    assert facts.arch.warnings == ()
    text = facts.counts.text + facts.counts.vision
    if model_type == "nemotron_h":
        # the checkpoints store each MoE router's e_score_correction_bias, a buffer transformers does not count:
        # 8 experts on the one MoE layer of NemotronHConfig's default pattern
        assert text == row["total"] + 8
    else:
        assert text == row["total"]


def _names(cfg: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in model_facts(cfg, "x/y").tensors}


def test_mamba1_layers_are_named_and_shaped_as_the_checkpoints() -> None:
    names = _names(_ROWS["mamba"]["config"])
    # MambaMixer (modeling_mamba.py): 768 hidden, 1536 intermediate, state 16, dt rank 48, kernel 4
    assert names["backbone.layers.0.mixer.in_proj.weight"] == (3072, 768)
    assert names["backbone.layers.0.mixer.x_proj.weight"] == (48 + 2 * 16, 1536)
    assert names["backbone.layers.0.mixer.dt_proj.weight"] == (1536, 48)
    assert names["backbone.layers.0.mixer.dt_proj.bias"] == (1536,)
    assert names["backbone.layers.0.mixer.A_log"] == (1536, 16)
    assert names["backbone.layers.0.mixer.conv1d.weight"] == (1536, 1, 4)
    assert names["backbone.layers.31.norm.weight"] == (768,)
    # MambaConfig ties the head to the embedding
    assert "lm_head.weight" not in names


def test_jamba_stores_its_experts_one_by_one_and_its_mamba_norms() -> None:
    names = _names(_ROWS["jamba"]["config"])
    # conversion_mapping.py "jamba": the checkpoints hold feed_forward.experts.{e}.gate_proj / up_proj / down_proj
    assert names["model.layers.1.feed_forward.experts.gate_proj.weight"] == (16, 14336, 4096)
    assert names["model.layers.1.feed_forward.router.weight"] == (16, 4096)
    assert names["model.layers.0.feed_forward.down_proj.weight"] == (4096, 14336)
    assert names["model.layers.0.mamba.dt_layernorm.weight"] == (256,)
    assert names["model.layers.0.mamba.b_layernorm.weight"] == (16,)
    # attention on layer 4, 12, 20, 28 (attn_layer_offset 4, period 8)
    attn = sorted(int(n.split(".")[2]) for n in names if n.endswith("self_attn.q_proj.weight"))
    assert attn == [4, 12, 20, 28]


def test_granite_hybrid_keeps_the_checkpoint_names_and_a_fused_shared_mlp() -> None:
    names = _names(_ROWS["granitemoehybrid"]["config"])
    assert names["model.layers.0.block_sparse_moe.input_linear.weight"] == (8, 2 * 11008, 4096)
    assert names["model.layers.0.block_sparse_moe.router.layer.weight"] == (8, 4096)
    # GraniteMoeHybridMLP: input_linear holds gate and up (2 x shared_intermediate_size 1024)
    assert names["model.layers.0.shared_mlp.input_linear.weight"] == (2048, 4096)
    assert names["model.layers.0.shared_mlp.output_linear.weight"] == (4096, 1024)


def test_granite_hybrid_without_experts_is_its_shared_mlp_alone() -> None:
    cfg = {**_ROWS["granitemoehybrid"]["config"], "num_local_experts": 0, "num_hidden_layers": 2}
    cfg["layer_types"] = ["mamba", "attention"]
    names = _names(cfg)
    assert not any("block_sparse_moe" in n for n in names)
    assert names["model.layers.1.shared_mlp.input_linear.weight"] == (2048, 4096)
    assert names["model.layers.1.self_attn.q_proj.weight"] == (4096, 4096)


def test_falcon_h1_runs_attention_and_mamba_in_every_layer() -> None:
    names = _names(_ROWS["falcon_h1"]["config"])
    for i in (0, 31):
        assert f"model.layers.{i}.self_attn.q_proj.weight" in names
        # mamba_d_ssm 1024 + 2 x 256 state (conv) + 1024 + 128 heads (in_proj)
        assert names[f"model.layers.{i}.mamba.in_proj.weight"] == (1024 + 1536 + 128, 4096)
    # mamba_rms_norm false: no gated norm
    assert not any(n.endswith("mamba.norm.weight") for n in names)
    with_norm = _names({**_ROWS["falcon_h1"]["config"], "mamba_rms_norm": True})
    assert with_norm["model.layers.0.mamba.norm.weight"] == (1024,)


def test_nemotron_h_reads_transformers_5_layer_names() -> None:
    arch = normalize(_ROWS["nemotron_h"]["config"])
    kinds = [(layer.attention, layer.mlp) for layer in arch.layers]
    assert kinds == [
        (AttentionKind.LINEAR, "none"),
        (AttentionKind.NONE, "moe"),
        (AttentionKind.FULL, "none"),
        (AttentionKind.NONE, "dense"),
    ]


#: tiiuae/falcon-mamba-7b's config.json (https://huggingface.co/tiiuae/falcon-mamba-7b/blob/main/config.json), as
#: quoted with that link by a public repository's model helper (get_falcon_mamba_7b; code index id 32332034728)
FALCON_MAMBA_7B: dict[str, Any] = {
    "architectures": ["FalconMambaForCausalLM"],
    "conv_kernel": 4,
    "expand": 16,
    "hidden_size": 4096,
    "intermediate_size": 8192,
    "model_type": "falcon_mamba",
    "num_hidden_layers": 64,
    "state_size": 16,
    "tie_word_embeddings": False,
    "time_step_rank": 256,
    "torch_dtype": "bfloat16",
    "use_bias": False,
    "use_conv_bias": True,
    "vocab_size": 65024,
}


def test_falcon_mamba_7b_matches_its_published_size() -> None:
    facts = model_facts(FALCON_MAMBA_7B, "tiiuae/falcon-mamba-7b")
    # the Hub page gives "7.27B params", rounded to 10 M: within half of that
    assert abs(facts.counts.text - 7.27e9) <= 5e6
    # the "expand" of 16 in this config is stale: intermediate_size (8192 = 2 x hidden) is what MambaMixer reads
    assert facts.arch.layers[0].mamba1 is not None
    assert facts.arch.layers[0].mamba1.intermediate == 8192


def test_mamba1_state_per_engine() -> None:
    arch = model_facts(FALCON_MAMBA_7B, "tiiuae/falcon-mamba-7b").arch
    layers, inter, state, kernel = 64, 8192, 16, 4
    # transformers 5.24 LinearAttentionLayer: conv_kernel columns in bf16, the fp32 state of mamba_selective_scan
    transformers = layers * (kernel * inter * 2 + inter * state * 4)
    assert state_bytes_per_sequence(arch, ENGINES["transformers"], 2) == transformers
    # vLLM MambaStateShapeCalculator.mamba1_state_shape: conv (kernel - 1, intermediate), temporal (intermediate,
    # state), both in the model's dtype when mamba_ssm_cache_dtype is "auto"
    assert state_bytes_per_sequence(arch, ENGINES["vllm"], 2) == layers * ((kernel - 1) * inter * 2 + inter * state * 2)
    # llama.cpp llama-memory-recurrent: n_embd_r = (d_conv - 1) x d_inner, n_embd_s = d_state x d_inner, F32
    assert state_bytes_per_sequence(arch, ENGINES["llamacpp"], 2) == layers * 4 * ((kernel - 1) * inter + state * inter)
    # no K or V: the cache does not grow with the context
    plan = plan_kv(arch, ENGINES["vllm"], tokens=4096, seqs=2, kv_bits=16, compute_bytes=2)
    assert plan.kv_bytes == 0 and plan.state_bytes == 2 * plan.state_bytes_per_sequence


def test_falcon_h1_keeps_kv_and_a_mamba_state_in_every_layer() -> None:
    arch = normalize(_ROWS["falcon_h1"]["config"])
    engine = ENGINES["vllm"]
    plan = plan_kv(arch, engine, tokens=1024, seqs=1, kv_bits=16, compute_bytes=2)
    # 32 layers x 8 KV heads x (128 + 128) x 2 B per token, every token
    assert plan.bytes_per_token_growing == 32 * 8 * 256 * 2
    conv_dim, heads, head_dim, d_state = 1536, 128, 8, 256
    assert plan.state_bytes_per_sequence == 32 * (3 * conv_dim * 2 + heads * head_dim * d_state * 2)
    assert "32 linear-attention layers" in str(plan.explain)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mamba_d_head": 48}, "mamba_n_heads (128) x mamba_d_head (48) is not the Mamba width 8192"),
        ({"attn_layer_indices": [40]}, "attn_layer_indices names layer 40, but the model has 32 layers"),
    ],
)
def test_a_bamba_config_that_does_not_fit_is_refused_by_name(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        normalize({**_ROWS["bamba"]["config"], **change})


def test_an_unknown_granite_layer_kind_is_refused() -> None:
    cfg = {**_ROWS["granitemoehybrid"]["config"], "layer_types": ["mamba"] * 31 + ["conv"]}
    with pytest.raises(ConfigError, match="unknown layer 'conv' in 'layer_types'"):
        normalize(cfg)
