"""Vision-language models on SigLIP / SigLIP 2 / Idefics-style towers (config_readers/vlm2.py,
vision_towers_vlm2.py): ShieldGemma 2, Idefics2, LFM2-VL and Command A Vision are each read as themselves and count
what transformers builds from their config classes' defaults; every engine estimates them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.config_readers import normalize
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.families import family_of
from vramdesk.core.gpu import GpuSpec
from vramdesk.services.catalog import default_catalog

ORACLE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "transformers_families.jsonl"
TYPES = ("shieldgemma2", "idefics2", "lfm2_vl", "cohere2_vision")


def _oracle() -> dict[str, dict[str, Any]]:
    rows = (json.loads(line) for line in ORACLE.read_text(encoding="utf-8").splitlines() if line.strip())
    return {r["model_type"]: r for r in rows if r["model_type"] in TYPES}


_ROWS = _oracle()


def _config(model_type: str) -> dict[str, Any]:
    return copy.deepcopy(_ROWS[model_type]["config"])


@pytest.mark.parametrize("model_type", TYPES)
def test_each_type_counts_exactly_what_transformers_builds_from_its_defaults(model_type: str) -> None:
    # the oracle: transformers 5.24 built on the meta device from the config class's own defaults; its
    # by_prefix split puts the language model (and lm_head) on one side and the tower + projector on the other
    row = _ROWS[model_type]
    facts = model_facts(_config(model_type), f"x/{model_type}")
    assert not facts.arch.warnings, facts.arch.warnings
    assert family_of(facts.arch).name == model_type
    assert facts.counts.text + facts.counts.vision == row["total"]
    vision = sum(n for prefix, n in row["by_prefix"].items() if "vision" in prefix or "connector" in prefix)
    vision += sum(n for prefix, n in row["by_prefix"].items() if "multi_modal_projector" in prefix)
    assert facts.counts.vision == vision


def test_the_tensors_are_named_as_the_published_checkpoints_store_them() -> None:
    def names(model_type: str) -> set[str]:
        return {t.name for t in model_facts(_config(model_type), "x/y").tensors}

    # ShieldGemma 2: Gemma3ForConditionalGeneration's checkpoint names (the shieldgemma2 mapping adds model.)
    shield = names("shieldgemma2")
    assert "language_model.model.layers.5.self_attn.q_norm.weight" in shield
    assert "vision_tower.vision_model.head.probe" in shield
    assert "multi_modal_projector.mm_input_projection_weight" in shield
    idefics2 = names("idefics2")
    assert "model.connector.perceiver_resampler.layers.2.self_attn.k_proj.weight" in idefics2
    assert "model.connector.modality_projection.down_proj.weight" in idefics2
    assert "model.text_model.layers.31.mlp.up_proj.weight" in idefics2 and "lm_head.weight" in idefics2
    # SigLIP / SigLIP 2 towers keep vision_model (transformers 5's CLIPVisionModel mapping removes it at load time)
    lfm = names("lfm2_vl")
    assert "model.vision_tower.vision_model.embeddings.patch_embedding.bias" in lfm
    assert "model.language_model.layers.0.feed_forward.w3.weight" in lfm
    assert "model.language_model.embedding_norm.weight" in lfm and "lm_head.weight" not in lfm
    cohere = names("cohere2_vision")
    assert "model.multi_modal_projector.linear_2.bias" in cohere
    assert "model.vision_tower.vision_model.encoder.layers.26.mlp.fc2.weight" in cohere


def test_idefics2_counts_its_perceiver_from_the_perceiver_config() -> None:
    base = model_facts(_config("idefics2"), "x/y").counts.vision
    cfg = _config("idefics2")
    cfg["perceiver_config"] = {"resampler_depth": 4, "resampler_n_latents": 32}
    more = model_facts(cfg, "x/y").counts.vision
    h, q, kv = 4096, 16 * 96, 4 * 96
    layer = 3 * h + (h * q + 2 * h * kv + q * h) + 3 * (4 * h * h)
    # one more resampler layer, 32 fewer latents
    assert more - base == layer - 32 * h


def test_lfm2_vl_projector_and_pooling_head_follow_the_config() -> None:
    base = model_facts(_config("lfm2_vl"), "x/y").counts.vision
    cfg = _config("lfm2_vl")
    cfg["projector_use_layernorm"] = False
    cfg["vision_config"]["vision_use_head"] = False
    lean = model_facts(cfg, "x/y")
    h = 768
    head = h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + 2 * (4 * h * h) + 4 * h + h
    assert base - lean.counts.vision == head + 2 * (4 * h)
    assert not any(".head." in t.name or "projector.layer_norm" in t.name for t in lean.tensors)


def test_shieldgemma2_ties_its_head_when_either_config_does() -> None:
    cfg = _config("shieldgemma2")
    cfg["tie_word_embeddings"] = False
    del cfg["text_config"]["tie_word_embeddings"]
    # ShieldGemma2Config.__post_init__: an outer false takes Gemma3TextConfig's default true
    assert normalize(cfg).tie_embeddings
    cfg["text_config"]["tie_word_embeddings"] = False
    assert not normalize(cfg).tie_embeddings


def test_text_fields_the_config_leaves_out_are_the_text_class_defaults() -> None:
    # save_pretrained writes the difference from the sub-config class's defaults: an empty text_config is
    # Lfm2Config's / Cohere2Config's / Gemma3TextConfig's model
    for model_type in ("lfm2_vl", "cohere2_vision", "shieldgemma2"):
        full = model_facts(_config(model_type), "x/y").counts
        cfg = _config(model_type)
        cfg["text_config"] = {"model_type": cfg["text_config"]["model_type"]}
        assert model_facts(cfg, "x/y").counts.text == full.text, model_type


def test_a_config_without_a_tower_is_read_as_its_text_model_with_a_warning() -> None:
    for model_type in TYPES:
        cfg = _config(model_type)
        del cfg["vision_config"]
        arch = normalize(cfg)
        assert arch.vision is None
        assert [w.id for w in arch.warnings] == ["config.vlm.no_sub_configs"], model_type


@pytest.mark.parametrize("model_type", TYPES)
def test_every_engine_estimates_it_and_llamacpp_leaves_the_tower_to_mmproj(model_type: str) -> None:
    facts = model_facts(_config(model_type), f"x/{model_type}")
    gpu: GpuSpec = default_catalog().gpu("RTX 4090")
    weights = {}
    for engine, fmt in (("transformers", "bf16"), ("vllm", "bf16"), ("llamacpp", "gguf-bf16")):
        scenario = DEFAULT_SCENARIO.model_copy(
            update={
                "weights": fmt,
                "workload": DEFAULT_SCENARIO.workload.model_copy(update={"engine": engine}),
            }
        )
        est = estimate(scenario, facts, gpu)
        weights[engine] = next(c.bytes for c in est.components if c.name == "weights")
    # 16-bit weights: transformers and vLLM load the tower (2 bytes a parameter), llama.cpp's GGUF holds the text
    assert weights["transformers"] - weights["llamacpp"] >= 2 * facts.counts.vision * 0.99
    assert weights["vllm"] >= 2 * (facts.counts.text + facts.counts.vision) * 0.99
