"""KV bytes per token per engine for the families naive tools get wrong (anchors-mission §3.2 worked examples)."""

from __future__ import annotations

import pytest

from vramdesk.core.architecture import AttentionKind
from vramdesk.core.engines import ENGINES
from vramdesk.core.kv import plan_kv, tokens_kept
from vramdesk.services.catalog import default_catalog

TRANSFORMERS, VLLM, LLAMACPP = ENGINES["transformers"], ENGINES["vllm"], ENGINES["llamacpp"]


def _arch(model_id: str):  # type: ignore[no-untyped-def]
    return default_catalog().facts(model_id).arch


def _per_token(model_id: str, engine: str, tokens: int = 1 << 20, bits: float = 16) -> float:
    plan = plan_kv(_arch(model_id), ENGINES[engine], tokens=tokens, seqs=1, kv_bits=bits, compute_bytes=2)
    return plan.bytes_per_token_all_layers


def test_gqa_llama_8b_is_128_kib_per_token() -> None:
    assert _per_token("meta-llama/Llama-3.1-8B", "transformers") == 32 * 8 * 128 * 2 * 2 == 131072


def test_explicit_head_dim_wins_over_hidden_by_heads() -> None:
    # Mistral-Nemo: hidden 5120 / 32 heads = 160, but head_dim is 128
    assert _per_token("mistralai/Mistral-Nemo-Instruct-2407", "vllm") == 40 * 8 * 128 * 2 * 2
    # Qwen3-0.6B: hidden 1024 / 16 heads = 64, head_dim 128
    assert _per_token("Qwen/Qwen3-0.6B", "transformers") == 28 * 8 * 128 * 2 * 2


def test_mla_latent_in_vllm_and_llamacpp_expanded_in_transformers() -> None:
    assert _per_token("deepseek-ai/DeepSeek-V3", "vllm") == 61 * (512 + 64) * 2 == 70272
    assert _per_token("deepseek-ai/DeepSeek-V3", "llamacpp") == 70272
    # transformers' DeepseekV3 attention caches K (nope+rope) and V per head: 71x the latent
    assert _per_token("deepseek-ai/DeepSeek-V3", "transformers") == 61 * 128 * (192 + 128) * 2


def test_hybrid_linear_attention_counts_only_full_layers_plus_constant_state() -> None:
    arch = _arch("Qwen/Qwen3-Next-80B-A3B-Thinking")
    assert arch.count(AttentionKind.LINEAR) == 36 and arch.count(AttentionKind.FULL) == 12
    assert _per_token("Qwen/Qwen3-Next-80B-A3B-Thinking", "vllm") == 12 * 2 * 256 * 2 * 2  # 24 KiB, not 96
    short = plan_kv(arch, VLLM, tokens=16, seqs=1, kv_bits=16, compute_bytes=2)
    long = plan_kv(arch, VLLM, tokens=65536, seqs=1, kv_bits=16, compute_bytes=2)
    assert short.state_bytes == long.state_bytes > 0  # constant per sequence
    # 36 layers x recurrent 32 x 128 x 128 fp32 + conv (kernel-1) x conv_dim x bf16
    assert short.state_bytes_per_sequence == 36 * (32 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 32 * 128) * 2)
    two = plan_kv(arch, VLLM, tokens=16, seqs=2, kv_bits=16, compute_bytes=2)
    assert two.state_bytes == 2 * short.state_bytes


def test_pure_linear_layer_has_no_kv() -> None:
    arch = _arch("Qwen/Qwen3.5-27B")
    lin = [layer for layer in arch.layers if layer.attention == AttentionKind.LINEAR]
    plan = plan_kv(arch, TRANSFORMERS, tokens=1000, seqs=1, kv_bits=16, compute_bytes=2, layers=tuple(lin))
    assert plan.kv_bytes == 0 and plan.state_bytes > 0


def test_gpt_oss_alternation_and_vllm_pool_accounting() -> None:
    arch = _arch("openai/gpt-oss-120b")
    kinds = [layer.attention for layer in arch.layers]
    assert kinds[0] == AttentionKind.SLIDING and kinds[1] == AttentionKind.FULL
    assert kinds.count(AttentionKind.SLIDING) == 18
    # vLLM reports pool capacity as if every layer paid every token: 36 x 8 x 64 x 2 x 2 B (hf-mem #60)
    assert _per_token("openai/gpt-oss-120b", "vllm") == 73728
    # what a long sequence really costs: full layers grow, sliding layers stay at the window
    plan = plan_kv(arch, TRANSFORMERS, tokens=100_000, seqs=1, kv_bits=16, compute_bytes=2)
    assert plan.bytes_per_token_growing == 18 * 8 * 64 * 2 * 2
    assert plan.kv_bytes == 18 * 2048 * 100_000 + 18 * 2048 * 128


def test_sliding_window_rules_per_engine() -> None:
    layer = next(x for x in _arch("google/gemma-2-9b-it").layers if x.attention == AttentionKind.SLIDING)
    assert layer.window == 4096
    assert tokens_kept(layer, TRANSFORMERS, 100_000, 1) == 4096
    # vLLM: window - 1 + max_num_batched_tokens, in 16-token pages, plus one page
    assert tokens_kept(layer, VLLM, 100_000, 1, batched_tokens=8192) == 12288 + 16
    # llama.cpp: min(n_ctx, window x seqs + ubatch) padded to 256 cells
    assert tokens_kept(layer, LLAMACPP, 100_000, 1, n_ubatch=512) == 4608
    assert tokens_kept(layer, LLAMACPP, 100_000, 1, n_ubatch=512, swa_full=True) == 100_096
    assert tokens_kept(layer, TRANSFORMERS, 1000, 1) == 1000


def test_qwen2_sliding_window_ignored_unless_enabled() -> None:
    arch = _arch("Qwen/Qwen2.5-7B")
    assert arch.count(AttentionKind.FULL) == arch.n_layers


def test_gemma3_pattern_and_llama4_chunked_layers() -> None:
    g = _arch("google/gemma-3-1b-it")
    assert [layer.index for layer in g.layers if layer.attention == AttentionKind.FULL] == [5, 11, 17, 23]
    llama4 = _arch("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert llama4.count(AttentionKind.CHUNKED) == 36 and llama4.count(AttentionKind.FULL) == 12
    chunked = next(x for x in llama4.layers if x.attention == AttentionKind.CHUNKED)
    assert chunked.window == 8192


@pytest.mark.parametrize(("bits", "name"), [(8, "fp8"), (8.5, "q8_0"), (4.5, "q4_0")])
def test_kv_dtype_scales_bytes(bits: float, name: str) -> None:
    full = _per_token("meta-llama/Llama-3.1-8B", "llamacpp")
    assert _per_token("meta-llama/Llama-3.1-8B", "llamacpp", bits=bits) == pytest.approx(full * bits / 16)


def test_kv_monotone_in_tokens_and_sequences() -> None:
    arch = _arch("google/gemma-2-2b-it")
    prev = -1
    for tokens in (1, 100, 4096, 5000, 70000):
        for engine in (TRANSFORMERS, VLLM, LLAMACPP):
            plan = plan_kv(arch, engine, tokens=tokens, seqs=1, kv_bits=16, compute_bytes=2)
            assert plan.kv_bytes >= 0
        cur = plan_kv(arch, TRANSFORMERS, tokens=tokens, seqs=1, kv_bits=16, compute_bytes=2).kv_bytes
        assert cur >= prev
        prev = cur
    one = plan_kv(arch, TRANSFORMERS, tokens=4096, seqs=1, kv_bits=16, compute_bytes=2).kv_bytes
    three = plan_kv(arch, TRANSFORMERS, tokens=4096, seqs=3, kv_bits=16, compute_bytes=2).kv_bytes
    assert three == 3 * one
