"""DeepSeek-V4 (families_mla2, config_readers/mla2.py, inventory_mla2.py): counts against transformers' own model
and the published totals, the checkpoints' tensor names, the compressed layers' KV per engine and refusals."""

from __future__ import annotations

import json
from math import ceil
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.engines import ENGINES
from vramdesk.core.facts import model_facts
from vramdesk.core.kv import plan_kv
from vramdesk.core.kv_layers import CompressedAttentionSpec, KvOptions, SlidingWindowSpec, kv_layer

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "benchmarks" / "data" / "config_corpus"


def _oracle(model_type: str) -> dict[str, Any]:
    for line in (ROOT / "benchmarks" / "data" / "transformers_families.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["model_type"] == model_type:
            return rec
    raise AssertionError(model_type)


def _corpus(name: str) -> dict[str, Any]:
    return json.loads((CORPUS / name).read_text(encoding="utf-8"))


def test_defaults_count_as_transformers_builds_them() -> None:
    rec = _oracle("deepseek_v4")
    facts = model_facts(rec["config"], "x/deepseek_v4")
    assert facts.arch.family == "deepseek_v4" and not facts.arch.warnings
    # exact: transformers' parameters (meta device) and, beside them, the e_score_correction_bias of the 40
    # learned-routing layers, a buffer transformers does not count as a parameter but the checkpoint stores
    # (ffn.gate.bias); the 3 hash-routed layers have none
    assert facts.counts.text == rec["total"] + 40 * 256
    assert facts.counts.vision == 0


def test_flash_published_config() -> None:
    # nvidia/DeepSeek-V4-Flash-NVFP4 config.json: compress_ratios with 44 entries (the last the MTP layer's),
    # num_hash_layers 3. transformers 5.24 builds 284,332,230,231 parameters from it (meta device); the model
    # card's "284B total, 13B activated" (deepseek-ai/DeepSeek-V4-Flash) is rounded to 1B, so 0.5 % either way
    facts = model_facts(_corpus("nvidia__DeepSeek-V4-Flash-NVFP4.json"), "nvidia/DeepSeek-V4-Flash-NVFP4")
    assert facts.counts.text == 284_332_230_231 + 40 * 256
    assert facts.counts.text == pytest.approx(284e9, rel=0.005)
    names = {t.name: t.shape for t in facts.tensors}
    # sliding layers 0, 1 and 42 have no compressor; layer 2 is CSA (rate 4, two series), layer 3 HCA (rate 128)
    assert not any(n.startswith("layers.0.attn.compressor") for n in names)
    assert names["layers.2.attn.compressor.ape"] == (4, 1024)
    assert names["layers.2.attn.indexer.compressor.wkv.weight"] == (256, 4096)
    assert names["layers.3.attn.compressor.ape"] == (128, 512)
    assert "layers.3.attn.indexer.wq_b.weight" not in names
    assert names["layers.0.attn.wo_a.weight"] == (8192, 4096)
    assert names["layers.0.hc_attn_fn"] == (24, 16384)
    assert names["hc_head_fn"] == (4, 16384)
    # the 3 hash-routed layers have no score correction bias; the others store it as gate.bias
    assert "layers.2.ffn.gate.bias" not in names and names["layers.3.ffn.gate.bias"] == (256,)
    # the MTP layer: sliding (compress_ratios[43] = 0), e_proj / h_proj, its own hc_head
    assert names["mtp.0.e_proj.weight"] == (4096, 4096) and names["mtp.0.h_proj.weight"] == (4096, 4096)
    assert names["mtp.0.hc_head_fn"] == (4, 16384)
    assert not any(n.startswith("mtp.0.attn.compressor") for n in names)


def test_pro_published_config() -> None:
    # nvidia/DeepSeek-V4-Pro-NVFP4: transformers builds 1,572,997,179,491 parameters (58 learned-routing layers of
    # 384 experts beside them); the card's "1.6T total" is rounded to 0.1T and counts the MTP layer's weights too
    facts = model_facts(_corpus("nvidia__DeepSeek-V4-Pro-NVFP4.json"), "nvidia/DeepSeek-V4-Pro-NVFP4")
    assert facts.counts.text == 1_572_997_179_491 + 58 * 384
    assert facts.counts.text + facts.counts.mtp == pytest.approx(1.6e12, abs=0.05e12)


def _tiny(**extra: Any) -> dict[str, Any]:
    return {
        "model_type": "deepseek_v4",
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "head_dim": 128,
        "q_lora_rank": 64,
        "o_groups": 2,
        "o_lora_rank": 64,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "vocab_size": 1000,
        "index_n_heads": 4,
        "index_head_dim": 32,
        "sliding_window": 32,
        "compress_ratios": [0, 4, 128, 4],
        **extra,
    }


def test_layer_kinds_from_each_field() -> None:
    by_ratio = normalize(_tiny())
    assert [x.compressed.compress_rate for x in by_ratio.layers if x.compressed] == [0, 4, 128, 4]
    by_type = normalize(
        _tiny(
            compress_ratios=None,
            layer_types=["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"] * 2,
            compress_rates={"compressed_sparse_attention": 8},
        )
    )
    assert [x.compressed.compress_rate for x in by_type.layers if x.compressed] == [0, 8, 128, 0]
    default = normalize(_tiny(compress_ratios=None))
    assert [x.compressed.compress_rate for x in default.layers if x.compressed] == [128, 128, 128, 4]
    hashed = normalize(_tiny(mlp_layer_types=["moe", "hash_moe", "moe", "moe"]))
    assert [x.moe.router_correction_bias for x in hashed.layers if x.moe] == [True, False, True, True]


def test_compressed_kv_per_engine() -> None:
    arch = normalize(_tiny())
    csa, hca = kv_layer(arch.layers[1]), kv_layer(arch.layers[2])
    assert isinstance(csa, CompressedAttentionSpec) and isinstance(hca, CompressedAttentionSpec)
    assert type(kv_layer(arch.layers[0])) is SlidingWindowSpec
    opts = KvOptions()
    tokens = 1000
    for name in ("transformers", "vllm", "llamacpp"):
        rule = ENGINES[name]
        window = rule.sliding_tokens(32, tokens, 1, opts)
        full = rule.full_tokens(tokens, 1, opts)
        # one K = V head of 128 a token: the window, then one entry per 4 (CSA, with the indexer's 32-wide key) or
        # per 128 tokens (HCA)
        assert csa.elements_per_token(rule) == 128
        assert csa.tokens_kept(rule, tokens, 1, opts) == window + ceil(ceil(full / 4) * 160 / 128)
        assert hca.tokens_kept(rule, tokens, 1, opts) == window + ceil(full / 128)
        plan = plan_kv(arch, rule, tokens=tokens, seqs=1, kv_bits=16, compute_bytes=2)
        # layers: sliding, CSA, HCA, CSA; 2 bytes an element
        kept = window + 2 * csa.tokens_kept(rule, tokens, 1, opts) + hca.tokens_kept(rule, tokens, 1, opts)
        assert plan.kv_bytes == 2 * 128 * kept
        assert "compressed layers" in str(plan.explain)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"compress_ratios": [0, 8, 4, 128]}, "unknown entry 8 in 'compress_ratios'"),
        ({"compress_ratios": [0, 4]}, "'compress_ratios' has 2 entries but num_hidden_layers is 4"),
        ({"compress_rates": 4}, "field 'compress_rates' must be an object"),
        ({"mlp_layer_types": ["moe", "dense", "moe", "moe"]}, "unknown entry 'dense' in 'mlp_layer_types'"),
        ({"layer_types": ["full_attention"] * 4, "compress_ratios": None}, "unknown entry 'full_attention'"),
        ({"num_experts_per_tok": 9}, "num_experts_per_tok (9) exceeds the number of experts (8)"),
    ],
)
def test_refusals_name_the_field(extra: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError) as err:
        normalize(_tiny(**extra))
    assert words in str(err.value)
