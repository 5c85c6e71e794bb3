"""DeepSeek-VL, DeepSeek-VL hybrid and Janus (``config_readers/vlm3.py``, towers in ``vision_towers_vlm3.py``):
(1) each model type's default config from transformers' own oracle (``benchmarks/data/transformers_families.jsonl``)
counts exactly the parameters transformers builds from it; (2) the tensor names are the checkpoints'; (3) a
published configuration reads as its family; (4) every engine estimates each of them; (5) bad fields are named.
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

_DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
_ORACLE = {
    rec["model_type"]: rec for rec in map(json.loads, (_DATA / "transformers_families.jsonl").read_text().splitlines())
}
_TYPES = ("deepseek_vl", "deepseek_vl_hybrid", "janus")


def _names(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in build_inventory(normalize(copy.deepcopy(config)))}


@pytest.mark.parametrize("model_type", _TYPES)
def test_transformers_own_default_config_counts_what_transformers_builds(model_type: str) -> None:
    record = _ORACLE[model_type]
    arch = normalize(copy.deepcopy(record["config"]))
    assert arch.warnings == ()
    assert family_of(arch).name == model_type
    counts = count_params(build_inventory(arch))
    assert counts.text + counts.vision == record["total"]
    # the oracle's per-module totals: the text model is transformers' LlamaModel (the head is tied), the rest vision
    assert counts.text == record["by_prefix"]["model.language_model"]
    assert counts.vision == sum(n for p, n in record["by_prefix"].items() if p != "model.language_model")


def test_deepseek_vl_names_siglip_as_its_checkpoints_store_it() -> None:
    names = _names(_ORACLE["deepseek_vl"]["config"])
    # deepseek-community checkpoints were saved by transformers 4, whose SiglipVisionModel held a vision_model
    assert names["model.vision_model.vision_model.embeddings.position_embedding.weight"] == (196, 768)
    assert names["model.vision_model.vision_model.head.attention.in_proj_weight"] == (2304, 768)
    assert names["model.aligner.linear1.weight"] == (4096, 768)
    assert names["model.language_model.layers.31.mlp.down_proj.weight"] == (4096, 11008)
    assert "lm_head.weight" not in names  # DeepseekVLConfig ties by default


def test_the_outer_tie_word_embeddings_decides_the_head() -> None:
    config = copy.deepcopy(_ORACLE["janus"]["config"])
    config["tie_word_embeddings"] = False
    names = _names(config)
    assert names["lm_head.weight"] == (32000, 4096)
    del config["tie_word_embeddings"]  # JanusConfig's default: tied, whatever the text config says
    assert config["text_config"]["tie_word_embeddings"] is False
    assert "lm_head.weight" not in _names(config)


def test_hybrid_sam_layers_take_the_window_or_the_grid_for_their_relative_positions() -> None:
    names = _names(_ORACLE["deepseek_vl_hybrid"]["config"])
    sam = "model.high_res_vision_model.vision_encoder"
    assert names[f"{sam}.layers.0.attn.rel_pos_h"] == (27, 64)  # a window of 14
    assert names[f"{sam}.layers.2.attn.rel_pos_w"] == (127, 64)  # global: the 64 x 64 patch grid
    assert names[f"{sam}.pos_embed"] == (1, 64, 64, 768)
    assert names["model.high_res_vision_proj.conv2.weight"] == (1024, 512, 3, 3)
    assert names["model.aligner.high_res_vision_proj.weight"] == (2048, 1024)


def test_janus_counts_the_vq_gan_it_loads_for_image_generation() -> None:
    names = _names(_ORACLE["janus"]["config"])
    vq = "model.vqmodel"
    assert names[f"{vq}.quantize.embedding.weight"] == (16384, 8)
    assert names[f"{vq}.encoder.down.4.attn.1.proj_out.weight"] == (512, 512, 1, 1)
    assert names[f"{vq}.decoder.up.1.block.0.nin_shortcut.weight"] == (256, 512, 1, 1)
    assert f"{vq}.decoder.up.4.upsample.conv.weight" not in names  # the last level does not upsample
    assert names["model.generation_head.vision_head.weight"] == (16384, 2048)
    assert names["model.vision_model.encoder.layers.23.self_attn.projection_layer.bias"] == (1024,)


#: deepseek-community/deepseek-vl-7b-chat as a config snapshot in the code index lists it (code index file
#: 56795873769, "Config snapshot: deepseek_vl_hybrid", from the Hub's config.json page): no outer
#: tie_word_embeddings is listed, so DeepseekVLHybridConfig's default (tied) stands
DEEPSEEK_VL_7B: dict[str, Any] = {
    "architectures": ["DeepseekVLHybridForConditionalGeneration"],
    "model_type": "deepseek_vl_hybrid",
    "torch_dtype": "float16",
    "image_token_id": 100015,
    "text_config": {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 30,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "head_dim": 128,
        "max_position_embeddings": 16384,
        "vocab_size": 102400,
        "rms_norm_eps": 1e-6,
    },
    "vision_config": {
        "model_type": "siglip_vision_model",
        "image_size": 384,
        "patch_size": 16,
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "vision_use_head": False,
    },
    "high_res_vision_config": {
        "model_type": "sam_vision_model",
        "image_size": 1024,
        "patch_size": 16,
        "hidden_size": 768,
        "mlp_dim": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "output_channels": 256,
        "global_attn_indexes": [2, 5, 8, 11],
        "window_size": 14,
    },
}


def test_deepseek_vl_7b_published_config_counts_what_transformers_builds() -> None:
    arch = normalize(copy.deepcopy(DEEPSEEK_VL_7B))
    assert arch.warnings == () and family_of(arch).name == "deepseek_vl_hybrid"
    counts = count_params(build_inventory(arch))
    # exact: DeepseekVLHybridForConditionalGeneration built by transformers 5.24 from this config on the meta
    # device has 6,911,960,321 parameters (the real code's count, not a published model-card figure)
    assert counts.text + counts.vision == 6_911_960_321
    assert len(arch.layers) == 30 and arch.vocab == 102400 and arch.tie_embeddings


# -- every engine runs them

_SCENARIOS = {
    "transformers": {"workload": {"engine": "transformers", "input_len": 1024}},
    "vllm": {"workload": {"engine": "vllm", "input_len": 1024}},
    "llamacpp": {"weights": "q4_k_m", "workload": {"engine": "llamacpp", "input_len": 1024}},
    "lora": {"workload": {"kind": "finetune", "method": "lora"}},
}


@pytest.mark.parametrize("model_type", _TYPES)
@pytest.mark.parametrize("run", sorted(_SCENARIOS))
def test_every_engine_estimates_them(model_type: str, run: str) -> None:
    scenario = Scenario.model_validate({"model": {"id": f"x/{model_type}"}, **_SCENARIOS[run]})
    facts = model_facts(copy.deepcopy(_ORACLE[model_type]["config"]), f"x/{model_type}")
    est = estimate(scenario, facts, None)
    parts = [*est.components, *(c for phase in est.phases for c in phase.components)]
    kv = max(c.bytes for c in parts if c.name in {"KV cache", "activations"})
    assert est.peak_allocated_bytes > facts.counts.text // 2 and kv > 0


# -- bad input


@pytest.mark.parametrize(
    ("model_type", "where", "key", "value", "words"),
    [
        ("janus", "vq_config", "channel_multiplier", 4, "'channel_multiplier' must be a list of integers"),
        ("janus", "vq_config", "channel_multiplier", [1, "x"], "channel_multiplier[1]"),
        ("janus", "vision_config", "mlp_ratio", "four", "'mlp_ratio' must be a positive number"),
        ("deepseek_vl_hybrid", "high_res_vision_config", "global_attn_indexes", [2, -1], "global_attn_indexes[1]"),
    ],
)
def test_a_bad_field_is_named(model_type: str, where: str, key: str, value: Any, words: str) -> None:
    config = copy.deepcopy(_ORACLE[model_type]["config"])
    config[where][key] = value
    with pytest.raises(ConfigError) as err:
        normalize(config)
    assert words in error_text(err.value)


def test_a_sub_config_that_is_not_an_object_is_named() -> None:
    config = {**copy.deepcopy(_ORACLE["deepseek_vl_hybrid"]["config"]), "high_res_vision_config": [1]}
    with pytest.raises(ConfigError) as err:
        normalize(config)
    assert "field 'high_res_vision_config' must be an object" in error_text(err.value)
