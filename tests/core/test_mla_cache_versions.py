"""What transformers' multi-head latent attention caches, by release (read in the published wheels'
modeling_<type>.py): the expanded keys and values of every head up to 5.14; from 5.15 DeepSeek-V2 / V3 and their
copies cache the compressed latent (kv_lora_rank + qk_rope_head_dim per token and layer) and expand it after the
cache read; the sparse-attention models (DeepSeek-V3.2, GLM-5) from 5.18, Kimi Linear's MLA layers from 5.17."""

from __future__ import annotations

from typing import Any

import pytest
from familyoracle import oracle_records

from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
_DEFAULTS = {mt: rec["config"] for mt, rec in oracle_records().items() if "config" in rec}


def _kv_per_token(config: dict[str, Any], version: str, engine: str = "transformers") -> float:
    facts = model_facts(config, "test/mla")
    work = {"kind": "inference", "engine": engine, "input_len": 1024, "output_len": 16}
    if engine == "transformers":
        work["transformers_version"] = version
    scenario = Scenario.model_validate({"model": {"id": "test/mla"}, "workload": work})
    return estimate(scenario, facts).engine.kv_bytes_per_token


def _bytes(config: dict[str, Any], *, latent: bool) -> int:
    """Per token at bf16, from the config's own fields: 61 layers of DeepSeek-V3 x (512 + 64) latent, or
    128 heads x (128 + 64 + 128) expanded."""
    text = config.get("text_config", config)
    layers = text["num_hidden_layers"]
    if latent:
        return layers * (text["kv_lora_rank"] + text["qk_rope_head_dim"]) * 2
    per_head = text["qk_nope_head_dim"] + text["qk_rope_head_dim"] + text["v_head_dim"]
    return layers * text["num_attention_heads"] * per_head * 2


DEEPSEEK_V3 = CAT.config("deepseek-ai/DeepSeek-V3")


@pytest.mark.parametrize(
    ("version", "latent"),
    [("<=4.35", False), (">=4.45", False), ("5.0-5.14", False), ("5.15-5.17", True), ("5.x", True)],
)
def test_deepseek_v3_caches_the_latent_from_5_15(version: str, latent: bool) -> None:
    assert _kv_per_token(DEEPSEEK_V3, version) == _bytes(DEEPSEEK_V3, latent=latent)


def test_vllm_caches_the_latent_whatever_the_transformers_setting() -> None:
    assert _kv_per_token(DEEPSEEK_V3, "5.0-5.14", engine="vllm") == _bytes(DEEPSEEK_V3, latent=True)


def test_the_latent_is_57_times_smaller_for_deepseek_v3() -> None:
    # 128 x 320 = 40,960 values against 576: the estimate of a long prompt moves by tens of GiB
    assert _bytes(DEEPSEEK_V3, latent=False) / _bytes(DEEPSEEK_V3, latent=True) == pytest.approx(40960 / 576)


@pytest.mark.parametrize(
    ("model_type", "version", "latent"),
    [
        ("deepseek_v32", "5.15-5.17", False),
        ("deepseek_v32", "5.x", True),
        ("glm_moe_dsa", "5.15-5.17", False),
        ("glm_moe_dsa", "5.x", True),
        ("kimi_linear", "5.15-5.17", False),
        ("kimi_linear", "5.x", True),
    ],
)
def test_sparse_attention_models_and_kimi_linear_cache_the_latent_later(
    model_type: str, version: str, latent: bool
) -> None:
    """The MLA part of each per-token figure, from the transformers default config of the model type; DSA models
    also cache the indexer's key per token in every release (index_head_dim) and Kimi Linear's DeltaNet layers
    hold no per-token state, so only the MLA layers' bytes are compared."""
    config = _DEFAULTS[model_type]
    facts = model_facts(config, "test/mla")
    mla_layers = [lay for lay in facts.arch.layers if lay.mla is not None]
    indexer = sum(lay.indexer.head_dim for lay in mla_layers if lay.indexer is not None) * 2
    lay = mla_layers[0]
    assert lay.mla is not None
    m = lay.mla
    per_layer = (
        (m.kv_lora_rank + m.qk_rope_head_dim)
        if latent
        else lay.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    )
    assert _kv_per_token(config, version) == len(mla_layers) * per_layer * 2 + indexer


@pytest.mark.parametrize("config", [DEEPSEEK_V3, CAT.config("Qwen/Qwen3-4B")], ids=["mla", "no-mla"])
def test_the_latent_copy_kept_per_model_goes_with_the_model(config: dict[str, Any]) -> None:
    import gc
    import weakref

    facts = model_facts(config, "test/mla")
    _kv_per_token(config, "5.x")
    scenario = Scenario.model_validate({"model": {"id": "test/mla"}, "workload": {"kind": "inference"}})
    estimate(scenario, facts)
    ref = weakref.ref(facts.arch)
    del facts
    gc.collect()
    assert ref() is None
