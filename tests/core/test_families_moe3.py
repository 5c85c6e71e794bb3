"""MoE and multimodal families of config_readers/moe3.py (ERNIE 4.5 VL MoE) against the oracle of
benchmarks/data/transformers_families.jsonl: the config each ``<Family>Config`` of transformers 5.24 writes with its
own defaults, and the parameter count of the model transformers builds from it on the meta device. The counts are
transformers', not formulas; the tensor names are the checkpoints' (transformers 5's conversion_mapping.py maps them
at load time)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from familyoracle import oracle_config as _config
from familyoracle import oracle_records as _records

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.inventory import build_inventory
from vramdesk.core.scenario import Scenario


def _tensors(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in build_inventory(normalize(config))}


@pytest.mark.parametrize("model_type", ["ernie4_5_vl_moe"])
def test_the_count_is_transformers_own(model_type: str) -> None:
    facts = model_facts(_config(model_type), f"x/{model_type}")
    assert not facts.arch.warnings
    assert facts.arch.family == model_type
    assert facts.counts.text + facts.counts.vision == _records()[model_type]["total"]


def test_ernie_vl_names_both_expert_sets_as_the_checkpoint_stores_them() -> None:
    shapes = _tensors(_config("ernie4_5_vl_moe"))
    layer = "model.layers.1.mlp"
    # both routers transposed (hidden x experts), both correction biases in one (2, E) tensor
    assert shapes[f"{layer}.gate.weight"] == (2560, 64)
    assert shapes[f"{layer}.gate.weight_1"] == (2560, 64)
    assert shapes[f"{layer}.moe_statics.e_score_correction_bias"] == (2, 64)
    # text experts of moe_intermediate_size[0], vision experts of [1], shared experts 2 x [0]
    assert shapes[f"{layer}.experts.gate_proj.weight"] == (64, 1536, 2560)
    assert shapes[f"{layer}.experts.vision.down_proj.weight"] == (64, 2560, 512)
    assert shapes[f"{layer}.shared_experts.up_proj.weight"] == (3072, 2560)
    # layer 0 is dense (mlp_layer_types), the embedding tied
    assert shapes["model.layers.0.mlp.gate_proj.weight"] == (12288, 2560)
    assert "model.layers.0.mlp.gate.weight_1" not in shapes
    assert "lm_head.weight" not in shapes
    # the tower under vision_model., the resampler's Sequential indices under model.resampler_model.
    assert shapes["vision_model.patch_embed.proj.weight"] == (1280, 3 * 14 * 14)
    assert shapes["model.resampler_model.temporal_linear.0.weight"] == (5120, 10240)
    assert shapes["model.resampler_model.after_norm.weight"] == (2560,)


def test_ernie_vl_original_spellings_read_as_the_same_model() -> None:
    """The original release spells the two expert sets as [text, vision] pairs and the MoE layers as
    moe_layer_start_index / moe_layer_end_index pairs (an end past the last layer: the last), the tower's width as
    embed_dim and its MLP as mlp_ratio, flat at the top of the config: the same geometry, the same count."""
    cfg = _config("ernie4_5_vl_moe")
    text = {k: v for k, v in cfg["text_config"].items() if k not in ("mlp_layer_types", "model_type")}
    vision = {k: v for k, v in cfg["vision_config"].items() if k not in ("hidden_size", "intermediate_size")}
    flat = {
        **text,
        "model_type": "ernie4_5_moe_vl",
        "moe_num_experts": [64, 64],
        "moe_intermediate_size": [1536, 512],
        "moe_layer_start_index": [1, 1],
        "moe_layer_end_index": [29, 28],
        "moe_layer_interval": 1,
        "vision_config": {**vision, "embed_dim": 1280, "mlp_ratio": 4},
    }
    facts = model_facts(flat, "x/ernie-original")
    assert facts.arch.family == "ernie4_5_vl_moe"
    assert facts.counts.text + facts.counts.vision == _records()["ernie4_5_vl_moe"]["total"]


def test_ernie_vl_vision_experts_are_not_active_for_a_text_token() -> None:
    cfg = _config("ernie4_5_vl_moe")
    wider = copy.deepcopy(cfg)
    wider["text_config"]["moe_intermediate_size"] = [1536, 1024]
    base, more = model_facts(cfg, "x/a").counts, model_facts(wider, "x/b").counts
    # 27 MoE layers x 64 experts x 3 matrices x 512 more rows of 2560
    assert more.text - base.text == 27 * 64 * 3 * 512 * 2560
    assert more.active == base.active


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"moe_intermediate_size": [1536]}, "'moe_intermediate_size' must be a list of two integers"),
        ({"moe_k": 65}, "65"),
        ({"moe_num_experts": [64, "many"]}, "moe_num_experts[1]"),
    ],
)
def test_ernie_vl_bad_expert_fields_are_refused(change: dict[str, Any], message: str) -> None:
    cfg = _config("ernie4_5_vl_moe")
    cfg["text_config"].update(change)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        normalize(cfg)


_SCENARIOS = {
    "transformers": {"workload": {"engine": "transformers", "input_len": 1024}},
    "vllm": {"workload": {"engine": "vllm", "input_len": 1024}},
    "llamacpp": {"weights": "q4_k_m", "workload": {"engine": "llamacpp", "input_len": 1024}},
    "lora": {"workload": {"kind": "finetune", "method": "lora"}},
}


@pytest.mark.parametrize("run", sorted(_SCENARIOS))
def test_ernie_vl_estimates_on_every_engine(run: str) -> None:
    scenario = Scenario.model_validate({"model": {"id": "x/ernie-vl"}, **_SCENARIOS[run]})
    facts = model_facts(_config("ernie4_5_vl_moe"), "x/ernie-vl")
    est = estimate(scenario, facts, None)
    parts = [*est.components, *(c for phase in est.phases for c in phase.components)]
    weights = max(c.bytes for c in parts if c.name == "weights")
    kv = max(c.bytes for c in parts if c.name in {"KV cache", "activations"})
    assert kv > 0
    if run in ("transformers", "vllm"):
        # BF16: two bytes for every stored parameter, both expert sets and the tower included
        assert weights == 2 * (facts.counts.text + facts.counts.vision)
    else:
        assert weights > facts.counts.text // 2
