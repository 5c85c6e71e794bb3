"""DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5 / 5.2) and Nemotron 3's latent MoE, read from the real published
configs of the coverage corpus (benchmarks/data/config_corpus/, INDEX.csv names where each copy was found) and
checked against published parameter totals.

Published totals (Hugging Face safetensors totals, exact):
* DeepSeek-V3.2 685,355,329,792 weights (+ FP32 block scales = 685,396,921,376 indexed elements) and GLM-5 /
  GLM-5.1 753,864,139,008, GLM-5.2 753,329,940,480: a table of Hub totals stored in the code index (the
  "JOURNAL_AUDIT" of MoE variants, file id 69468411049; it lists DeepSeek-V3's 684,531,386,000 and Qwen3-235B-A22B's
  235,093,634,560 as the catalog does);
* DeepSeek-V3.2's 685,396,921,376 elements split by dtype (FP8 681,408,069,632 + BF16 3,946,184,704 + FP32
  1,052,416 + 23,040, and 41,591,584 FP32 block scales): a header audit of deepseek-ai/DeepSeek-V3.2 at revision
  a7e62ac0 (92,425 tensors in 163 shards; code index file id 70151817556), which also says every layer's indexer,
  the MTP layer's included, is stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import estimate, resolve_format
from vramdesk.core.facts import model_facts
from vramdesk.core.inventory import build_inventory, count_params
from vramdesk.core.scenario import Scenario

_CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "config_corpus"


def _corpus(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((_CORPUS / f"{name}.json").read_text(encoding="utf-8"))
    return config


def _shapes(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in build_inventory(normalize(config))}


@pytest.mark.parametrize(
    ("name", "published"),
    [
        ("deepseek-ai__DeepSeek-V3.2", 685_355_329_792),
        ("nvidia__DeepSeek-V3.2-NVFP4", 685_355_329_792),
        ("zai-org__GLM-5", 753_864_139_008),
        ("zai-org__GLM-5.1", 753_864_139_008),
        ("zai-org__GLM-5.2", 753_329_940_480),
    ],
)
def test_dsa_checkpoints_count_their_published_totals(name: str, published: int) -> None:
    arch = normalize(_corpus(name))
    assert arch.family == "deepseek_dsa" and arch.warnings == ()
    assert count_params(build_inventory(arch)).checkpoint == published


def test_deepseek_v32_fp8_weights_price_the_indexer_scales_too() -> None:
    facts = model_facts(_corpus("deepseek-ai__DeepSeek-V3.2"))
    fmt, on_load = resolve_format(Scenario.model_validate({"model": {"id": "deepseek-ai/DeepSeek-V3.2"}}), facts.arch)
    assert fmt.kind == "fp8" and not on_load
    wb = facts.weights(fmt, frozenset({"text", "mtp"}))
    # the header audit: 41,591,584 FP32 block scales beside the FP8 matrices, the indexers' wq_b and wk among them
    scales = 685_396_921_376 - 685_355_329_792
    assert scales == 41_591_584
    fp8 = wb.quantized_params
    assert fp8 == 681_408_069_632
    assert wb.total == fp8 + 2 * (wb.params - fp8) + 4 * scales


def test_deepseek_v32_has_an_indexer_on_every_layer_and_the_mtp_layer() -> None:
    shapes = _shapes(_corpus("deepseek-ai__DeepSeek-V3.2"))
    for layer in (0, 60, 61):
        x = f"model.layers.{layer}.self_attn.indexer"
        # index_n_heads 64 x index_head_dim 128 from q_lora_rank 1536; one key of 128 from hidden 7168
        assert shapes[f"{x}.wq_b.weight"] == (64 * 128, 1536)
        assert shapes[f"{x}.wk.weight"] == (128, 7168)
        assert shapes[f"{x}.k_norm.weight"] == shapes[f"{x}.k_norm.bias"] == (128,)
        assert shapes[f"{x}.weights_proj.weight"] == (64, 7168)
    assert not any(".indexer." in n and n.endswith(".bias") and "k_norm" not in n for n in shapes)


def test_glm52_indexers_follow_indexer_types_and_the_mtp_layer_keeps_one() -> None:
    config = _corpus("zai-org__GLM-5.2")
    arch = normalize(config)
    full = [i for i, layer in enumerate(arch.layers) if layer.indexer is not None]
    assert full == [i for i, t in enumerate(config["indexer_types"]) if t == "full"]
    assert len(full) == 21
    shapes = _shapes(config)
    assert "model.layers.3.self_attn.indexer.wk.weight" not in shapes
    assert shapes["model.layers.6.self_attn.indexer.wq_b.weight"] == (32 * 128, 2048)
    # layer 77 reuses layer 74's choice, the MTP layer 78 has an indexer of its own (the Hub total says so)
    assert "model.layers.77.self_attn.indexer.wq_b.weight" not in shapes
    assert "model.layers.78.self_attn.indexer.wq_b.weight" in shapes
    # and no embedding or head of its own
    assert "model.layers.78.embed_tokens.weight" not in shapes
    assert "model.layers.78.shared_head.head.weight" not in shapes


def test_the_glm_indexer_schedule_without_indexer_types_is_glm_moe_dsa_configs() -> None:
    config = {k: v for k, v in _corpus("zai-org__GLM-5.2").items() if k != "indexer_types"}
    from_freq = [layer.indexer is not None for layer in normalize(config).layers]
    # GlmMoeDsaConfig: full where max(i - offset + 1, 0) % freq == 0 (offset 3, freq 4)
    assert from_freq == [max(i - 2, 0) % 4 == 0 for i in range(78)]
    pattern = "".join("F" if f else "S" for f in from_freq)
    assert [x.indexer is not None for x in normalize({**config, "index_topk_pattern": pattern}).layers] == from_freq


def test_bad_indexer_types_are_named() -> None:
    config = _corpus("zai-org__GLM-5.2")
    with pytest.raises(ConfigError, match=r"glm_moe_dsa: 'indexer_types' has 77 entries but num_hidden_layers is 78"):
        normalize({**config, "indexer_types": config["indexer_types"][1:]})
    bad = ["full"] * 77 + ["sparse"]
    with pytest.raises(ConfigError, match=r"unknown indexer type 'sparse' in 'indexer_types'"):
        normalize({**config, "indexer_types": bad})


def test_indexer_keys_are_cached_beside_the_mla_latent() -> None:
    with_dsa = _corpus("deepseek-ai__DeepSeek-V3.2")
    plain = {k: v for k, v in with_dsa.items() if not k.startswith("index_")}

    def kv(config: dict[str, Any], engine: str, **work: str) -> int:
        s = Scenario.model_validate(
            {"model": {"id": "x/y"}, "weights": "bf16", "workload": {"engine": engine, "input_len": 4096, **work}}
        )
        return next(c.bytes for c in estimate(s, model_facts(config), None).components if c.name == "KV cache")

    # per token and layer, index_head_dim 128 keys beside the latent (512 + 64) vLLM and transformers >= 5.18 cache,
    # or beside the expanded K and V (128 heads x (192 + 128)) transformers cached up to 5.14, for the same tokens
    latent = pytest.approx((576 + 128) / 576, rel=1e-9)
    assert kv(with_dsa, "vllm") / kv(plain, "vllm") == latent
    assert kv(with_dsa, "transformers") / kv(plain, "transformers") == latent
    old = {"transformers_version": "5.0-5.14"}
    assert kv(with_dsa, "transformers", **old) / kv(plain, "transformers", **old) == pytest.approx(
        (128 * 320 + 128) / (128 * 320), rel=1e-9
    )


# -- Nemotron 3 Super / Ultra: latent MoE (transformers' NemotronHMoE: fc1_latent_proj / fc2_latent_proj)


def test_nemotron3_super_latent_experts_have_the_latent_width() -> None:
    config = _corpus("nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    shapes = _shapes(config)
    layer = next(i for i, ch in enumerate(config["hybrid_override_pattern"]) if ch == "E")
    m = f"backbone.layers.{layer}.mixer"
    assert shapes[f"{m}.fc1_latent_proj.weight"] == (1024, 4096)
    assert shapes[f"{m}.fc2_latent_proj.weight"] == (4096, 1024)
    # 512 experts of up (2688 x latent 1024) and down (latent 1024 x 2688); router and shared expert on hidden 4096
    assert shapes[f"{m}.experts.up_proj.weight"] == (512, 2688, 1024)
    assert shapes[f"{m}.experts.down_proj.weight"] == (512, 1024, 2688)
    assert shapes[f"{m}.gate.weight"] == (512, 4096)
    assert shapes[f"{m}.shared_experts.up_proj.weight"] == (5376, 4096)


@pytest.mark.parametrize(
    ("name", "total_b"),
    [("nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8", 120), ("nvidia__NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 550)],
)
def test_nemotron3_latent_moe_totals_match_the_names(name: str, total_b: int) -> None:
    # only rounded figures are published for the decoder alone: the names' "120B" / "550B" (within 1 %); the Hub's
    # BF16 total of Super, 123,611,012,096, also counts its MTP block (mtp_hybrid_override_pattern "*E"), which
    # vramdesk does not read for nemotron_h yet
    c = count_params(build_inventory(normalize(_corpus(name))))
    assert c.text == pytest.approx(total_b * 1e9, rel=0.01)
    assert c.mtp == 0
