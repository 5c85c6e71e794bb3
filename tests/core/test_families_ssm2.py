"""Zamba and Zamba2 (config_readers/ssm2.py, inventory_ssm2.py): shared transformer blocks counted once, adapters
and KV per call, checked against the models transformers 5.24 builds (benchmarks/data/transformers_families.jsonl:
exact parameter counts of the meta-device models)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import AttentionKind, ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.inventory import build_inventory, count_params
from vramdesk.core.kv_layers import FullAttentionWithStateSpec, LinearAttentionSpec, kv_layer
from vramdesk.core.scenario import Scenario

_ORACLE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "transformers_families.jsonl"


def _oracle(model_type: str) -> dict[str, Any]:
    for line in _ORACLE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["model_type"] == model_type:
            return row
    raise AssertionError(f"{model_type} is not in the oracle")


@pytest.mark.parametrize("model_type", ["zamba", "zamba2"])
def test_the_default_configs_count_what_transformers_builds(model_type: str) -> None:
    row = _oracle(model_type)
    arch = normalize(row["config"])
    assert arch.family == model_type and not arch.warnings
    tensors = build_inventory(arch)
    # exact: transformers' own count of the model it builds from ZambaConfig() / Zamba2Config() (tied blocks once)
    assert count_params(tensors).text == row["total"]
    assert len(tensors) == row["tensors"]
    by_prefix = {p: sum(t.numel for t in tensors if t.name.startswith(p + ".")) for p in row["by_prefix"]}
    assert by_prefix == row["by_prefix"]


def test_zamba2_stores_its_one_block_at_the_first_hybrid_layer_with_an_adapter_per_call() -> None:
    arch = normalize(_oracle("zamba2")["config"])
    names = {t.name for t in build_inventory(arch)}
    calls = [s.index for s in arch.layers if s.shared is not None]
    assert calls == [6, 12, 18, 24, 30, 36, 42, 47, 51]
    first = "model.layers.6.shared_transformer"
    assert f"{first}.self_attn.q_proj.weight" in names
    assert not any(n.startswith("model.layers.12.shared_transformer") for n in names)
    # one gate_up adapter per call, in the owner's list; each call its own linear and Mamba decoder
    adapters = {n for n in names if "gate_up_proj_adapter_list" in n}
    assert len(adapters) == 2 * len(calls)
    assert f"{first}.feed_forward.gate_up_proj_adapter_list.8.1.weight" in names
    assert "model.layers.51.linear.weight" in names
    assert "model.layers.51.mamba_decoder.mamba.in_proj.weight" in names
    assert "model.layers.50.mamba.in_proj.weight" in names


def test_zamba2_blocks_alternate_between_their_owners() -> None:
    """Two shared blocks with q / k / v adapters: calls 0 and 2 use block 0 (stored at layer 1), calls 1 and 3 block 1
    (layer 3). transformers 5.24 builds 6,231,552 parameters from this config (meta device, tied blocks once)."""
    config = {
        "model_type": "zamba2",
        "hidden_size": 256,
        "num_hidden_layers": 8,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "n_mamba_heads": 8,
        "mamba_d_state": 16,
        "mamba_ngroups": 2,
        "num_mem_blocks": 2,
        "use_shared_attention_adapter": True,
        "adapter_rank": 16,
        "add_bias_linear": True,
        "vocab_size": 1000,
        "intermediate_size": 512,
        "layers_block_type": ["mamba", "hybrid"] * 4,
        "tie_word_embeddings": True,
    }
    arch = normalize(config)
    tensors = build_inventory(arch)
    assert count_params(tensors).text == 6_231_552
    owners = {t.name.split(".")[2] for t in tensors if ".shared_transformer." in t.name}
    assert owners == {"1", "3"}
    names = {t.name for t in tensors}
    assert "model.layers.3.shared_transformer.self_attn.linear_v_adapter_list.3.0.weight" in names
    assert "model.layers.1.shared_transformer.feed_forward.down_proj.bias" in names


def test_each_call_of_a_shared_block_keeps_its_own_kv_and_every_layer_a_mamba_state() -> None:
    arch = normalize(_oracle("zamba2")["config"])
    specs = [kv_layer(layer) for layer in arch.layers]
    assert sum(isinstance(s, FullAttentionWithStateSpec) for s in specs) == 9
    assert sum(type(s) is LinearAttentionSpec for s in specs) == 45
    assert arch.count(AttentionKind.FULL) == 9
    hybrid = next(s for s in arch.layers if s.shared is not None)
    # 32 KV heads of attention_head_dim 2 x 2560 / 32 = 160
    assert (hybrid.n_kv_heads, hybrid.head_dim) == (32, 160)
    facts = model_facts(_oracle("zamba2")["config"], "x/zamba2")
    scenario = Scenario.model_validate(
        {"model": {"id": "x/zamba2"}, "weights": "bf16", "workload": {"input_len": 1000, "output_len": 24}}
    )
    parts = {c.name: c.bytes for c in estimate(scenario, facts, None).components}
    # transformers at the prefill peak: 1,000 tokens x 9 calls x K and V x 32 heads x 160 x 2 bytes ...
    assert parts["KV cache"] == 1000 * 9 * 2 * 32 * 160 * 2
    # ... and 54 Mamba-2 states: the conv window (x, B, C: 5,120 + 2 x 64 channels x 4 taps) and 8 heads x 640 x 64,
    # in the model's dtype (LinearAttentionAndFullAttentionLayer / the Mamba-2 cache)
    assert parts["linear-attention state"] == 54 * ((5120 + 2 * 64) * 4 + 8 * 640 * 64) * 2


@pytest.mark.parametrize("engine", ["transformers", "vllm", "llamacpp"])
def test_every_engine_completes_for_zamba(engine: str) -> None:
    config = _oracle("zamba")["config"]
    facts = model_facts(config, "x/zamba")
    weights = "q4_k_m" if engine == "llamacpp" else "bf16"
    scenario = Scenario.model_validate(
        {"model": {"id": "x/zamba"}, "weights": weights, "workload": {"engine": engine, "input_len": 2048}}
    )
    est = estimate(scenario, facts, None)
    kv = sum(c.bytes for c in est.components if c.name.startswith("KV cache"))
    assert kv > 0


def test_a_zamba_config_without_a_hybrid_layer_is_refused() -> None:
    config = {**_oracle("zamba2")["config"], "layers_block_type": ["mamba"] * 54}
    with pytest.raises(ConfigError, match="no 'hybrid' layer"):
        normalize(config)
