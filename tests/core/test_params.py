"""Parameter totals against the published figures (shared/catalog/INDEX.md is the oracle).

Each row: catalog id -> (published figure, which count it is). "text" = unique parameters of the language
model; "checkpoint" = what the safetensors store (MTP layers, vision tower); "text+vision" = what keras-hub
lists for the Qwen3.5 multimodal models (vision tower, no MTP).
"""

from __future__ import annotations

import pytest

from vramdesk.core.estimate import estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

PUBLISHED: dict[str, tuple[int, str]] = {
    "meta-llama/Llama-3.2-1B": (1_235_814_400, "text"),
    "meta-llama/Llama-3.2-3B": (3_212_749_824, "text"),
    "meta-llama/Llama-3.1-8B": (8_030_261_248, "text"),
    "meta-llama/Llama-3.1-70B": (70_553_706_496, "text"),
    "meta-llama/Llama-3.1-405B": (405_853_388_800, "text"),
    "meta-llama/Llama-3.3-70B-Instruct": (70_553_706_496, "text"),
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": (108_641_793_536, "checkpoint"),
    "Qwen/Qwen2.5-0.5B": (494_032_768, "text"),
    "Qwen/Qwen2.5-3B": (3_085_938_688, "text"),
    "Qwen/Qwen2.5-3B-Instruct": (3_085_938_688, "text"),
    "Qwen/Qwen2.5-7B": (7_615_616_512, "text"),
    "Qwen/Qwen2.5-7B-Instruct": (7_615_616_512, "text"),
    "Qwen/Qwen2.5-14B": (14_770_033_664, "text"),
    "Qwen/Qwen2.5-32B": (32_763_876_352, "text"),
    "Qwen/Qwen3-0.6B": (596_049_920, "text"),
    "Qwen/Qwen3-1.7B": (1_720_574_976, "text"),
    "Qwen/Qwen3-4B": (4_022_468_096, "text"),
    "Qwen/Qwen3-8B": (8_190_735_360, "text"),
    "Qwen/Qwen3-14B": (14_768_307_200, "text"),
    "Qwen/Qwen3-32B": (32_762_123_264, "text"),
    "Qwen/Qwen3-30B-A3B": (30_532_122_624, "text"),
    "Qwen/Qwen3-235B-A22B": (235_093_634_560, "text"),
    "Qwen/Qwen3-Next-80B-A3B-Thinking": (81_324_862_720, "checkpoint"),
    "Qwen/Qwen3.5-27B": (27_356_728_560, "text+vision"),
    "Qwen/Qwen3.5-35B-A3B": (35_107_181_936, "text+vision"),
    "Qwen/Qwen3.5-4B": (4_659_865_088, "checkpoint"),
    "mistralai/Mistral-7B-v0.3": (7_248_023_552, "text"),
    "mistralai/Mistral-Nemo-Instruct-2407": (12_247_782_400, "text"),
    "mistralai/Mixtral-8x7B-v0.1": (46_702_792_704, "text"),
    "mistralai/Mixtral-8x22B-v0.1": (140_620_634_112, "text"),
    "google/gemma-2-2b-it": (2_614_341_888, "text"),
    "google/gemma-2-9b-it": (9_241_705_984, "text"),
    "google/gemma-2-27b": (27_227_128_320, "text"),
    "google/gemma-3-1b-it": (999_885_952, "text"),
    "microsoft/phi-4": (14_659_507_200, "text"),
    "microsoft/Phi-3.5-mini-instruct": (3_821_079_552, "text"),
    "openai/gpt-oss-20b": (20_914_757_184, "text"),
    "openai/gpt-oss-120b": (116_829_156_672, "text"),
    "TinyLlama/TinyLlama-1.1B-Chat-v1.0": (1_100_048_384, "text"),
    "HuggingFaceTB/SmolLM2-135M": (134_515_008, "text"),
    "HuggingFaceTB/SmolLM2-360M": (361_821_120, "text"),
    "HuggingFaceTB/SmolLM2-1.7B": (1_711_376_384, "text"),
    "allenai/OLMo-2-1124-7B": (7_298_617_344, "text"),
    "allenai/OLMo-2-1124-13B": (13_716_198_400, "text"),
    # DeepSeek: 671B main model (card) + one MTP layer; the Hub's 684,531,386,000 also counts the F32 block
    # scales of the FP8 weights (checked in test_dtypes_in_models)
    "deepseek-ai/DeepSeek-V3": (684_489_845_504, "checkpoint"),
    "deepseek-ai/DeepSeek-R1": (684_489_845_504, "checkpoint"),
}


@pytest.mark.parametrize(("model_id", "expected"), sorted(PUBLISHED.items()))
def test_parameter_totals_match_published(model_id: str, expected: tuple[int, str]) -> None:
    total, kind = expected
    c = default_catalog().facts(model_id).counts
    got = {"text": c.text, "checkpoint": c.checkpoint, "text+vision": c.text + c.vision}[kind]
    assert got == total


def test_every_shared_catalog_config_is_covered() -> None:
    cat = default_catalog()
    shared = {m.id for m in cat.models() if not m.derived_from and ".assembled." not in m.file}
    unpublished = {"Qwen/Qwen3.5-122B-A10B", "Qwen/Qwen3.5-397B-A17B"}
    assert shared - unpublished == set(PUBLISHED)


def test_every_published_total_in_the_catalog_is_reproduced() -> None:
    cat = default_catalog()
    checked = 0
    for m in cat.models():
        if m.published_total is None:
            continue
        f = cat.facts(m.id)
        c = f.counts
        assert m.published_total in {c.text, c.checkpoint, c.text + c.vision, f.stored_total}, m.id
        checked += 1
    assert checked >= 55


def test_variants_share_their_base_architecture() -> None:
    cat = default_catalog()
    variants = [m for m in cat.models() if m.derived_from]
    assert len(variants) >= 20
    for m in variants:
        assert cat.facts(m.id).counts.text == cat.facts(m.derived_from or "").counts.text, m.id
    assert cat.facts("Qwen/Qwen2.5-7B-Instruct-AWQ").arch.quantization_config is not None


@pytest.mark.parametrize(
    ("model_id", "active"),
    [
        ("Qwen/Qwen3-30B-A3B", 3_353_032_704),  # INDEX: computed incl. embeddings + lm_head
        ("Qwen/Qwen3-235B-A22B", 22_190_763_520),
        ("mistralai/Mixtral-8x7B-v0.1", 12_879_925_248),
        ("mistralai/Mixtral-8x22B-v0.1", 39_152_031_744),
    ],
)
def test_active_parameters(model_id: str, active: int) -> None:
    assert default_catalog().facts(model_id).counts.active == active


def test_gpt_oss_active_matches_card_without_input_embedding() -> None:
    # model card: 21B total with 3.6B active; 117B with 5.1B active (the lookup table is not compute)
    for model_id, card in (("openai/gpt-oss-20b", 3.6e9), ("openai/gpt-oss-120b", 5.1e9)):
        f = default_catalog().facts(model_id)
        emb = f.arch.vocab * f.arch.hidden
        assert abs((f.counts.active - emb) - card) / card < 0.01


def test_dense_models_are_fully_active() -> None:
    c = default_catalog().facts("meta-llama/Llama-3.1-8B").counts
    assert c.active == c.text
    assert c.mtp == 0 and c.vision == 0


def test_both_figures_reported_when_checkpoint_stores_more() -> None:
    cat = default_catalog()
    f = cat.facts("Qwen/Qwen3-0.6B")
    s = Scenario.model_validate({"model": {"id": "Qwen/Qwen3-0.6B"}})
    p = estimate(s, f).params
    assert p.total == 596_049_920
    assert p.checkpoint_total == 751_632_384  # the Hub's figure: a tied lm_head stored anyway
    assert any("lm_head" in n for n in p.notes)
    deepseek = estimate(
        Scenario.model_validate({"model": {"id": "deepseek-ai/DeepSeek-V3"}}), cat.facts("deepseek-ai/DeepSeek-V3")
    ).params
    assert deepseek.total == 671_026_419_200
    # the Hub's 684,531,386,000 = main model + MTP layer + 41,540,496 fp32 block scales of the fp8 weights
    assert deepseek.checkpoint_total == 684_531_386_000
    assert deepseek.checkpoint_total - deepseek.total == deepseek.parts["mtp"] + 41_540_496
    assert any("scale" in n for n in deepseek.notes)
    assert any("MTP" in n for n in deepseek.notes)


def test_vision_tower_counted_once_and_named() -> None:
    f = default_catalog().facts("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert f.counts.vision == 871_932_416
    assert f.counts.text == 108_641_793_536 - 871_932_416
