"""The normaliser: families without a catalog config, config plumbing, and bad input named precisely."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vramdesk.core.architecture import AttentionKind, ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.facts import model_facts
from vramdesk.services.catalog import default_catalog

# Published totals of families whose configs are not in the catalog (hand-written configs with the
# published geometry): bloom-560m (keras-hub, INDEX.md), Pythia non-embedding counts (Pythia paper table 1,
# quoted in INDEX.md), falcon-7b/40b and phi-2 (their model cards' parameter counts).
FAMILIES: list[tuple[str, dict[str, Any], int, str]] = [
    (
        "bloom-560m",
        {"model_type": "bloom", "hidden_size": 1024, "n_layer": 24, "n_head": 16, "vocab_size": 250880},
        559_214_592,
        "total",
    ),
    (
        "pythia-70m",
        {
            "model_type": "gpt_neox",
            "hidden_size": 512,
            "num_hidden_layers": 6,
            "num_attention_heads": 8,
            "intermediate_size": 2048,
            "vocab_size": 50304,
        },
        18_915_328,
        "non-embedding",
    ),
    (
        "pythia-1b",
        {
            "model_type": "gpt_neox",
            "hidden_size": 2048,
            "num_hidden_layers": 16,
            "num_attention_heads": 8,
            "intermediate_size": 8192,
            "vocab_size": 50304,
        },
        805_736_448,
        "non-embedding",
    ),
    (
        "falcon-7b",
        {
            "model_type": "falcon",
            "hidden_size": 4544,
            "num_hidden_layers": 32,
            "num_attention_heads": 71,
            "multi_query": True,
            "parallel_attn": True,
            "bias": False,
            "vocab_size": 65024,
        },
        6_921_720_704,
        "total",
    ),
    (
        "falcon-40b",
        {
            "model_type": "falcon",
            "hidden_size": 8192,
            "num_hidden_layers": 60,
            "num_attention_heads": 128,
            "num_kv_heads": 8,
            "new_decoder_architecture": True,
            "parallel_attn": True,
            "bias": False,
            "vocab_size": 65024,
        },
        41_303_293_952,
        "total",
    ),
    (
        "phi-2",
        {
            "model_type": "phi",
            "hidden_size": 2560,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "intermediate_size": 10240,
            "vocab_size": 51200,
            "partial_rotary_factor": 0.4,
        },
        2_779_683_840,
        "total",
    ),
]


@pytest.mark.parametrize(("name", "config", "published", "kind"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_families_without_catalog_configs(name: str, config: dict[str, Any], published: int, kind: str) -> None:
    facts = model_facts(config)
    got = facts.counts.text
    if kind == "non-embedding":  # Pythia: untied embed_in and embed_out
        got -= 2 * config["vocab_size"] * config["hidden_size"]
    assert got == published


def test_falcon_mqa_and_gpt_bigcode_mqa_have_one_kv_head() -> None:
    falcon = normalize(FAMILIES[3][1])
    assert {layer.n_kv_heads for layer in falcon.layers} == {1}
    bigcode = normalize(
        {
            "model_type": "gpt_bigcode",
            "n_embd": 6144,
            "n_layer": 40,
            "n_head": 48,
            "n_inner": 24576,
            "vocab_size": 49152,
            "n_positions": 8192,
            "multi_query": True,
        }
    )
    assert bigcode.layers[0].n_kv_heads == 1 and bigcode.layers[0].head_dim == 128


def _qwen3() -> dict[str, Any]:
    return copy.deepcopy(default_catalog().config("Qwen/Qwen3-4B"))


def test_nested_text_config_and_renamed_dtype() -> None:
    cfg = _qwen3()
    nested = {"model_type": "qwen3_vl_like", "text_config": {**cfg, "dtype": "float16"}, "tie_word_embeddings": True}
    nested["text_config"].pop("torch_dtype", None)
    nested["text_config"]["model_type"] = "qwen3"
    nested["model_type"] = "qwen3"
    arch = normalize(nested)
    assert arch.dtype == "fp16" and arch.n_layers == 36
    assert model_facts(nested).counts.text == 4_022_468_096


def test_qwen35_multimodal_reads_text_config_layer_types_and_vision() -> None:
    arch = default_catalog().facts("Qwen/Qwen3.5-27B").arch
    assert arch.count(AttentionKind.LINEAR) == 48 and arch.count(AttentionKind.FULL) == 16
    assert arch.vision is not None and arch.vision.depth == 27
    assert arch.mtp_layers == 1
    lin = next(layer.linear for layer in arch.layers if layer.linear is not None)
    assert lin.num_v_heads == 48 and lin.state_dtype == "fp32"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.pop("hidden_size"), "qwen3: config is missing the field 'hidden_size'"),
        (lambda c: c.pop("vocab_size"), "'vocab_size'"),
        (lambda c: c.update(num_key_value_heads=5), "not a multiple of num_key_value_heads (5)"),
        (lambda c: c.update(hidden_size=0), "'hidden_size' must be >= 1"),
        (lambda c: c.update(num_hidden_layers=-3), "'num_hidden_layers' must be >= 1"),
        (lambda c: c.update(hidden_size="big"), "'hidden_size' must be an integer"),
        (lambda c: c.update(tie_word_embeddings="yes"), "'tie_word_embeddings' must be true or false"),
        (lambda c: c.update(layer_types=["full_attention"] * 3), "'layer_types' has 3 entries"),
        (lambda c: c.update(layer_types=["weird"] * 36), "unknown entry 'weird'"),
        (lambda c: c.update(quantization_config="gptq"), "'quantization_config' must be an object"),
    ],
)
def test_bad_configs_name_the_field_and_model_type(mutate: Any, message: str) -> None:
    cfg = _qwen3()
    mutate(cfg)
    with pytest.raises(ConfigError, match=None) as exc:
        normalize(cfg)
    assert message in str(exc.value)


def test_heads_that_do_not_divide_hidden_without_head_dim() -> None:
    with pytest.raises(ConfigError, match=r"hidden_size \(1000\) is not divisible by num_attention_heads \(7\)"):
        normalize(
            {
                "model_type": "llama",
                "hidden_size": 1000,
                "num_hidden_layers": 2,
                "num_attention_heads": 7,
                "intermediate_size": 10,
                "vocab_size": 10,
            }
        )


def test_unknown_model_type_generic_path_warns_or_names_missing_fields() -> None:
    ok = normalize(
        {
            "model_type": "mystery",
            "hidden_size": 256,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 512,
            "vocab_size": 100,
        }
    )
    assert any("mystery" in w and "generic" in w for w in ok.warnings)
    with pytest.raises(ConfigError, match=r"unsupported model_type 'mystery'.*num_attention_heads"):
        normalize({"model_type": "mystery", "hidden_size": 256})
    with pytest.raises(ConfigError, match="model_type"):
        normalize({"hidden_size": 256})


def test_unknown_quantisation_method_is_named() -> None:
    from vramdesk.core.estimate import EstimateError, estimate
    from vramdesk.core.scenario import Scenario

    cfg = _qwen3()
    cfg["quantization_config"] = {"quant_method": "quantumfloat", "bits": 3}
    facts = model_facts(cfg, "x/y")
    with pytest.raises(EstimateError, match="quantumfloat"):
        estimate(Scenario.model_validate({"model": {"id": "x/y"}}), facts)


def test_no_code_from_repositories_is_executed() -> None:
    # auto_map / trust_remote_code entries are data: DeepSeek's config names modeling_deepseek.py, we never run it
    cfg = default_catalog().config("deepseek-ai/DeepSeek-V3")
    assert "auto_map" in cfg
    assert normalize(cfg).family == "deepseek_v3"
