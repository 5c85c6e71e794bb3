"""LLaVA-style vision-language models (config_readers/clipvlm.py, vision_towers_clip.py): each model type is read as
itself, tower and projector included, and counts what transformers builds; a published config counts what its
checkpoint holds; every engine estimates it."""

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
TYPES = (
    "llava",
    "llava_next",
    "llava_next_video",
    "llava_onevision",
    "vipllava",
    "video_llava",
    "mistral3",
    "internvl",
    "paligemma",
    "gemma3",
    "idefics3",
    "smolvlm",
)


def _oracle() -> dict[str, dict[str, Any]]:
    rows = (json.loads(line) for line in ORACLE.read_text(encoding="utf-8").splitlines() if line.strip())
    return {r["model_type"]: r for r in rows if r["model_type"] in TYPES}


_ROWS = _oracle()


@pytest.mark.parametrize("model_type", TYPES)
def test_each_type_counts_exactly_what_transformers_builds_from_its_defaults(model_type: str) -> None:
    # the oracle: transformers 5.24 built on the meta device from the config class's own defaults
    row = _ROWS[model_type]
    facts = model_facts(copy.deepcopy(row["config"]), f"x/{model_type}")
    assert not facts.arch.warnings, facts.arch.warnings
    assert facts.arch.vision is not None
    assert facts.counts.text + facts.counts.vision == row["total"]


def test_the_projector_and_tower_are_named_as_the_published_checkpoints_store_them() -> None:
    names = {t.name for t in model_facts(copy.deepcopy(_ROWS["llava_next"]["config"]), "x/y").tensors}
    # llava-hf checkpoints keep the layout transformers 5 renames at load time (conversion_mapping.py "llava_next")
    assert "language_model.model.layers.0.self_attn.q_proj.weight" in names
    assert "language_model.lm_head.weight" in names
    assert "vision_tower.vision_model.pre_layrnorm.weight" in names
    assert "multi_modal_projector.linear_2.bias" in names and "image_newline" in names
    smol = {t.name for t in model_facts(copy.deepcopy(_ROWS["smolvlm"]["config"]), "x/y").tensors}
    assert "model.connector.modality_projection.proj.weight" in smol and "lm_head.weight" in smol


#: llava-hf/llava-1.5-7b-hf's config.json as transformers 4.41.1 logged it when loading the checkpoint (snapshot
#: 05ae2434cbb430be33edcba0c5203e7023f785b7, a LLaMA-Factory LoRA run's log in the code index): its text_config
#: names no width or depth (LlamaConfig's defaults) and a 32,064-token vocabulary
LLAVA_15_7B: dict[str, Any] = {
    "architectures": ["LlavaForConditionalGeneration"],
    "ignore_index": -100,
    "image_token_index": 32000,
    "model_type": "llava",
    "pad_token_id": 32001,
    "projector_hidden_act": "gelu",
    "text_config": {
        "_name_or_path": "lmsys/vicuna-7b-v1.5",
        "architectures": ["LlamaForCausalLM"],
        "max_position_embeddings": 4096,
        "model_type": "llama",
        "rms_norm_eps": 1e-05,
        "torch_dtype": "float16",
        "vocab_size": 32064,
    },
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
    "transformers_version": "4.41.1",
    "vision_config": {
        "hidden_size": 1024,
        "image_size": 336,
        "intermediate_size": 4096,
        "model_type": "clip_vision_model",
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "patch_size": 14,
        "projection_dim": 768,
        "vocab_size": 32000,
    },
    "vision_feature_layer": -2,
    "vision_feature_select_strategy": "default",
}


def test_llava_1_5_7b_counts_its_published_total() -> None:
    # the same log: peft's "trainable params: 4194304 || all params: 7067621376" for a rank-8 LoRA on q_proj and
    # v_proj of the 32 layers, so the checkpoint holds 7,067,621,376 - 4,194,304 = 7,063,427,072 parameters (exact)
    facts = model_facts(copy.deepcopy(LLAVA_15_7B), "llava-hf/llava-1.5-7b-hf")
    assert facts.arch.family == "llava" and not facts.arch.warnings
    assert facts.counts.text + facts.counts.vision == 7_063_427_072
    assert "text class defaults" in facts.arch.sources


def test_the_outer_tie_decides_as_transformers_5_does_and_a_text_tie_forwards() -> None:
    cfg = copy.deepcopy(LLAVA_15_7B)
    untied = model_facts(copy.deepcopy(cfg), "x/y").counts.text
    cfg["text_config"]["tie_word_embeddings"] = True
    # LlavaConfig.__post_init__: an outer false takes the text config's true
    assert model_facts(copy.deepcopy(cfg), "x/y").counts.text == untied - 32064 * 4096


def test_gemma3_counts_the_siglip_pooling_head_only_when_the_config_keeps_it() -> None:
    with_head = model_facts(copy.deepcopy(_ROWS["gemma3"]["config"]), "x/y")
    cfg = copy.deepcopy(_ROWS["gemma3"]["config"])
    cfg["vision_config"]["vision_use_head"] = False
    without = model_facts(cfg, "x/y")
    h = 768
    head = h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + 2 * (4 * h * h) + 4 * h + h
    assert with_head.counts.vision - without.counts.vision == head
    assert not any(".head." in t.name for t in without.tensors)


def test_the_original_repositorys_flat_config_is_read_with_a_warning_not_silently() -> None:
    flat = {
        "model_type": "llava",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 1024,
        "vocab_size": 1000,
        "mm_vision_tower": "openai/clip-vit-large-patch14-336",
    }
    arch = normalize(flat)
    assert arch.vision is None
    assert [w.id for w in arch.warnings] == ["config.vlm.no_sub_configs"]
    assert "vision tower and projector are not counted" in arch.warnings[0]


def test_a_text_model_of_another_layout_is_read_with_a_warning() -> None:
    cfg = copy.deepcopy(_ROWS["llava"]["config"])
    cfg["text_config"]["model_type"] = "mystery"
    arch = normalize(cfg)
    assert family_of(arch).name == "llava"
    assert [w.id for w in arch.warnings] == ["config.vlm.text_as_llama"]


@pytest.mark.parametrize("model_type", ["llava_onevision", "mistral3", "internvl", "paligemma", "smolvlm"])
def test_every_engine_estimates_it_and_llamacpp_leaves_the_tower_to_mmproj(model_type: str) -> None:
    facts = model_facts(copy.deepcopy(_ROWS[model_type]["config"]), f"x/{model_type}")
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
