"""Doge, NanoChat and Apertus 1.5 read as themselves (config_readers/dense3.py), and the generic path's guard
against expert fields it would misread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.facts import model_facts
from vramdesk.core.families import family_of

_ORACLE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "transformers_families.jsonl"


def _oracle(model_type: str) -> dict[str, Any]:
    for line in _ORACLE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["model_type"] == model_type:
            return dict(rec)
    raise AssertionError(model_type)


def _names(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in model_facts(config, "x/y").tensors}


@pytest.mark.parametrize("model_type", ["doge", "nanochat", "apertus1p5_text", "apertus1p5"])
def test_the_default_config_counts_what_transformers_builds(model_type: str) -> None:
    """Exact: transformers 5.24's parameter count of the model it builds from the class's defaults (the oracle;
    Apertus 1.5's with its image and audio tokenizers)."""
    rec = _oracle(model_type)
    facts = model_facts(rec["config"], "x/y")
    assert not facts.arch.warnings
    assert facts.counts.text + facts.counts.vision == rec["total"]


def test_doge_is_read_as_itself_and_its_expert_count_means_nothing_without_is_moe() -> None:
    config = _oracle("doge")["config"]
    assert config["is_moe"] is False and config["num_experts"] == 16384
    arch = normalize(config)
    assert family_of(arch).name == "doge" and not arch.is_moe
    names = _names(config)
    assert names["model.layers.0.self_attn.dt_proj.weight"] == (8, 1024)
    assert names["model.layers.0.self_attn.A"] == (8,)
    assert names["model.layers.31.post_attention_residual"] == (1024,)
    assert not any("embed" in n and ".mlp." in n for n in names)


def test_doge_cdmoe_has_single_neuron_experts_and_product_key_router() -> None:
    """Exact: DogeForCausalLM built by transformers 5.24 on the meta device from this config has 105,420,832
    parameters (94 tensors; transformers 5.24 built on the meta device)."""
    config = {
        **_oracle("doge")["config"],
        "is_moe": True,
        "num_experts": 4096,
        "num_experts_per_tok": 32,
        "num_hidden_layers": 4,
        "num_key_value_heads": 4,
        "attention_bias": True,
        "tie_word_embeddings": True,
    }
    facts = model_facts(config, "x/y")
    assert facts.counts.text == 105_420_832
    names = {t.name: t for t in facts.tensors}
    assert names["model.layers.0.mlp.router_gate.weight"].shape == (128, 1024)
    assert names["model.layers.3.mlp.up_embed.weight"].shape == (4096, 1024)
    assert names["model.layers.3.mlp.down_embed.weight"].active == 32 / 4096
    assert names["model.layers.0.self_attn.dt_proj.bias"].shape == (4,)
    # a token reads 32 of the 4096 single-neuron experts: far fewer active than stored
    assert facts.counts.active < facts.counts.text - 30_000_000


def test_doge_320m_recipe_is_near_its_published_size() -> None:
    """SmallDoges/small-doge recipes/doge/Doge-320M/config_full.yaml (model_config; rope_scaling spelled the old
    way). Published: "Doge-320M | 335M" in recipes/doge/README.md's table, rounded to 1 M and counted for the
    remote-code model of that time: 2 % tolerance."""
    config = {
        "model_type": "doge",
        "vocab_size": 32768,
        "hidden_size": 1024,
        "intermediate_size": 2048,
        "num_hidden_layers": 32,
        "hidden_act": "silu",
        "tie_word_embeddings": True,
        "max_position_embeddings": 2048,
        "rope_theta": 10000.0,
        "rope_scaling": {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 2048},
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
    }
    total = model_facts(config, "SmallDoge/Doge-320M").counts.text
    assert total == pytest.approx(335e6, rel=0.02)


def test_nanochat_norms_store_nothing_and_its_logits_are_soft_capped() -> None:
    """A NanoChat export's config (the d20 geometry: a converter's build_config in the code index, hidden_act
    relu2, final_logit_softcapping 15); the checkpoint stores 20 x 6 + 2 tensors and no norm (that converter's
    own note, verified there against nanochat-students/nanochat-d20): exact."""
    config = {
        "architectures": ["NanoChatForCausalLM"],
        "model_type": "nanochat",
        "vocab_size": 65536,
        "hidden_size": 1280,
        "intermediate_size": 5120,
        "num_hidden_layers": 20,
        "num_attention_heads": 10,
        "num_key_value_heads": 10,
        "max_position_embeddings": 2048,
        "hidden_act": "relu2",
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "final_logit_softcapping": 15.0,
        "rope_parameters": {"rope_type": "default", "rope_theta": 100000.0},
        "torch_dtype": "bfloat16",
    }
    arch = normalize(config)
    assert arch.logit_softcap and arch.qk_norm == "none"
    names = _names(config)
    assert len(names) == 20 * 6 + 2
    assert not any("norm" in n for n in names)
    assert names["model.layers.19.mlp.fc1.weight"] == (5120, 1280)


def test_apertus1p5_tokenizers_are_named_as_transformers_builds_them() -> None:
    """Names and shapes read from the model transformers 5.24 builds from Apertus1p5Config() (696 tensors)."""
    names = _names(_oracle("apertus1p5")["config"])
    assert names["model.vision_tokenizer.encoder.stages.4.layers.0.attention.q.weight"] == (1024, 1024, 1, 1)
    assert names["model.vision_tokenizer.encoder.stages.2.layers.0.resnet.nin_shortcut.weight"] == (512, 256, 1, 1)
    assert "model.vision_tokenizer.encoder.stages.4.downsample.conv.weight" not in names
    assert names["model.vision_tokenizer.quantize.embedding.weight"] == (131072, 256)
    audio = "model.audio_tokenizer.encoder.layers"
    assert names[f"{audio}.12.conv.parametrizations.weight.original1"] == (512, 256, 12)
    assert names[f"{audio}.13.lstm.weight_hh_l1"] == (2048, 512)
    assert names[f"{audio}.15.conv.parametrizations.weight.original1"] == (512, 512, 7)
    # without an audio_config, no audio tokenizer
    config = {k: v for k, v in _oracle("apertus1p5")["config"].items() if k != "audio_config"}
    assert not any(n.startswith("model.audio_tokenizer") for n in _names(config))


def test_apertus1p5_prunes_its_head_and_names_the_text_model_as_its_checkpoints_do() -> None:
    """Apertus 1.5 8B's config as ollama's Go test TestParseConfigApertus1p5Exact8B quotes it (github.com/ollama/
    ollama, the MLX runner's apertus package): the head keeps the 131072 text rows of a 266752-row vocabulary."""
    text = {
        "attention_bias": False,
        "dtype": "bfloat16",
        "hidden_act": "xielu",
        "hidden_size": 4096,
        "intermediate_size": 21504,
        "max_position_embeddings": 262144,
        "mlp_bias": False,
        "model_type": "apertus1p5_text",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "output_vocab_size": 131072,
        "post_norm": False,
        "qk_norm": True,
        "rms_norm_eps": 0.00001,
        "rope_parameters": {"factor": 32.0, "rope_theta": 4000000, "rope_type": "llama3"},
        "tie_word_embeddings": False,
        "vocab_size": 266752,
    }
    config = {"architectures": ["Apertus1p5ForConditionalGeneration"], "model_type": "apertus1p5", "text_config": text}
    facts = model_facts(config, "swiss-ai/Apertus-1.5-8B")
    names = {t.name: t.shape for t in facts.tensors}
    assert names["lm_head.weight"] == (131072, 4096)
    assert names["model.language_model.embed_tokens.weight"] == (266752, 4096)
    assert names["model.language_model.layers.31.mlp.act_fn.alpha_p"] == (1,)
    assert not facts.arch.warnings
    # the text-only checkpoint: Apertus's names, the same head
    only_text = _names(text)
    assert only_text["lm_head.weight"] == (131072, 4096) and "model.layers.0.self_attn.q_norm.weight" in only_text
    with pytest.raises(ConfigError, match=r"output_vocab_size \(300000\) exceeds vocab_size \(266752\)"):
        normalize({**text, "output_vocab_size": 300000})


# ----------------------------------------------------------------------------------------------
# the generic path


_MYSTERY = {
    "model_type": "mystery",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
    "vocab_size": 1000,
}


def test_the_generic_path_honours_is_moe_false() -> None:
    dense = model_facts(_MYSTERY, "x/y").counts.text
    said_dense = {**_MYSTERY, "is_moe": False, "num_experts": 16384, "num_experts_per_tok": 64}
    arch = normalize(said_dense)
    assert not arch.is_moe
    assert model_facts(said_dense, "x/y").counts.text == dense


def test_the_generic_path_refuses_many_experts_without_a_width_of_their_own() -> None:
    with pytest.raises(ConfigError) as err:
        normalize({**_MYSTERY, "num_experts": 16384, "num_experts_per_tok": 64})
    assert str(err.value) == (
        "mystery: num_experts is 16384 but the config has no moe_intermediate_size: the generic decoder path would "
        "make every expert intermediate_size (1024) wide; set moe_intermediate_size, or is_moe false for a dense model"
    )
    # with a width of their own, or as few as Mixtral's, the experts are read as before
    sized = normalize({**_MYSTERY, "num_experts": 2048, "num_experts_per_tok": 8, "moe_intermediate_size": 16})
    assert sized.layers[0].moe is not None and sized.layers[0].moe.expert_intermediate == 16
    few = normalize({**_MYSTERY, "num_local_experts": 8, "num_experts_per_tok": 2})
    assert few.layers[0].moe is not None and few.layers[0].moe.expert_intermediate == 1024


def test_the_guard_leaves_known_families_alone() -> None:
    """A known family's reader never meets the guard: a Qwen2-MoE config with an is_moe false it does not read
    keeps its experts."""
    qwen = {**_MYSTERY, "model_type": "qwen2_moe", "num_experts": 60, "num_experts_per_tok": 4, "is_moe": False}
    qwen["moe_intermediate_size"] = 64
    assert normalize(qwen).is_moe
