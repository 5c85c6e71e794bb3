"""SGLang's engine: mem_fraction_static (given, or SGLang's own rule), the token pool it holds
(max_total_num_tokens = what the weights leave of the static share // one token's K + V), the split of KV heads over
tensor parallel, MLA's latent cell, the linear-attention states' share, the concurrency and the refusal when the
weights fill the static share."""

from __future__ import annotations

from typing import Any

import pytest

from vramdesk.core.engine_options import SglangOptions
from vramdesk.core.engines.sglang import memory_settings
from vramdesk.core.estimate import estimate
from vramdesk.core.gpu import MIB
from vramdesk.core.messages import Text
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
L8, L70 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"
#: nvidia-smi's total of an H100 SXM (MiB) and the CUDA context of a PyTorch process on Hopper (760 MiB)
H100_MIB, HOPPER_CONTEXT_MIB = 81559, 760
NCCL_MIB = 768


def _estimate(model: str, gpu: str | None, *, tp: int = 1, **work: Any) -> Estimate:
    scenario = Scenario.model_validate(
        {
            "model": {"id": model},
            "workload": {"kind": "inference", "engine": "sglang", **work},
            "hardware": {"gpu": gpu, "gpu_count": tp},
            "parallelism": {"tp": tp},
        }
    )
    return estimate(scenario, CAT.facts(model), CAT.gpu(gpu) if gpu else None)


def _bytes(est: Estimate, name: str) -> int:
    return sum(c.bytes for c in est.components if c.name == name)


def _ids(texts: tuple[str, ...]) -> set[str]:
    return {t.id for t in texts if isinstance(t, Text) and t.id}


def test_the_pool_is_what_the_weights_leave_of_the_static_share_in_whole_cells() -> None:
    est = _estimate(L8, "H100 SXM", sglang={"mem_fraction_static": 0.85}, input_len=4096, output_len=512)
    # the free memory before loading: the card less the CUDA context; the static share: 0.85 of it
    before = (H100_MIB - HOPPER_CONTEXT_MIB) * MIB
    static = int(0.85 * before)
    weights = _bytes(est, "weights")
    # one token's K + V over 32 layers of 8 KV heads x (128 + 128) in bf16
    cell = 32 * 8 * (128 + 128) * 2
    assert est.engine.kv_bytes_per_token == cell
    assert est.engine.pool_bytes == static
    assert _bytes(est, "KV cache pool") == static - weights
    assert est.engine.kv_capacity_tokens == (static - weights) // cell
    # max_running_requests = min(tokens // 2, the request table's 2,048 rows); this length fits tokens // 4608
    tokens = (static - weights) // cell
    assert est.engine.max_concurrent_sequences == min(tokens // 4608, tokens // 2, 2048)
    assert est.fit is not None and est.fit.verdict == "fits"
    assert est.fit.basis == "within mem_fraction_static 0.85"
    # outside the static share: the request table (2,048 rows of context + 4 int32), activations, CUDA graphs
    context = CAT.facts(L8).arch.max_position or 0
    assert _bytes(est, "req_to_token pool") == 2048 * (context + 4) * 4
    assert _bytes(est, "CUDA graphs") == 256 * 2 * MIB
    assert est.peak_allocated_bytes == sum(c.bytes for c in est.components)


def test_sglangs_own_fraction_follows_the_gpus_memory_and_the_parallel_size() -> None:
    auto = SglangOptions()
    # H100: 8,192-token chunks, 256 graph batch sizes below TP 4 (512 from TP 4); reserved at least 10 GiB
    h100 = memory_settings(auto, H100_MIB, 1, 1)
    assert (h100.chunked_prefill_size, h100.cuda_graph_max_bs, h100.reserved_mib) == (8192, 256, 10 * 1024 * 1.3125)
    assert h100.mem_fraction_static == round((H100_MIB - 13440) / H100_MIB, 3) == 0.835
    tp4 = memory_settings(auto, H100_MIB, 4, 1)
    assert tp4.reserved_mib == 512 + 8192 * 1.5 + 512 * 2 + 4 / 8 * 1024
    assert tp4.mem_fraction_static == 0.824
    # an L4 (23,034 MiB): 2,048-token chunks, 24 graph batch sizes, no 10 GiB floor below 60 GiB
    l4 = memory_settings(auto, 23034, 1, 1)
    assert (l4.chunked_prefill_size, l4.cuda_graph_max_bs) == (2048, 24)
    assert l4.mem_fraction_static == round((23034 - (512 + 2048 * 1.5 + 48 + 128)) / 23034, 3)
    # a small GPU's allowance is below the floor that applies over 60 GiB: a 40 GiB card keeps its own
    a100_40 = memory_settings(auto, 40960, 8, 1)
    assert a100_40.reserved_mib == 512 + 4096 * 1.5 + 160 * 2 + 1024
    # no GPU: SGLang's fallbacks; a given fraction and given sizes are kept
    assert memory_settings(auto, None, 1, 1).mem_fraction_static == 0.88
    given = memory_settings(SglangOptions(mem_fraction_static=0.7, chunked_prefill_size=1024), H100_MIB, 1, 1)
    assert (given.mem_fraction_static, given.chunked_prefill_size, given.reserved_mib) == (0.7, 1024, None)
    est = _estimate(L8, "H100 SXM")
    assert est.engine.pool_bytes == int(0.835 * (H100_MIB - HOPPER_CONTEXT_MIB) * MIB)
    pool = next(c for c in est.components if c.name == "KV cache pool")
    assert "mem_fraction_static 0.835 (SGLang's rule: 81,559 MiB less 13,440 MiB" in pool.explain


@pytest.mark.parametrize(("tp", "heads"), [(4, 2), (8, 1)])
def test_tensor_parallel_splits_the_kv_heads(tp: int, heads: int) -> None:
    est = _estimate(L70, "H100 SXM", tp=tp, sglang={"mem_fraction_static": 0.9})
    cell = 80 * heads * (128 + 128) * 2
    assert est.engine.kv_bytes_per_token == cell
    # each rank: the context and NCCL's buffers before loading, a 1/tp shard of the weights
    before = (H100_MIB - HOPPER_CONTEXT_MIB - NCCL_MIB) * MIB
    static = int(0.9 * before)
    weights = _bytes(est, "weights")
    assert weights == pytest.approx(_bytes(_estimate(L70, None), "weights") / tp, abs=1)
    assert est.engine.kv_capacity_tokens == (static - weights) // cell


def test_an_mla_model_keeps_one_latent_per_token_on_every_rank() -> None:
    # DeepSeek-V3: 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64), whatever the tensor parallel size
    bf16 = _estimate("deepseek-ai/DeepSeek-V3", "H200 SXM", tp=8, sglang={"mem_fraction_static": 0.9})
    fp8 = _estimate("deepseek-ai/DeepSeek-V3", "H200 SXM", tp=8, kv_dtype="fp8", sglang={"mem_fraction_static": 0.9})
    assert bf16.engine.kv_bytes_per_token == 61 * (512 + 64) * 2
    assert fp8.engine.kv_bytes_per_token == 61 * (512 + 64)
    assert fp8.engine.kv_capacity_tokens == _bytes(fp8, "KV cache pool") // (61 * 576)
    assert fp8.engine.kv_capacity_tokens == pytest.approx(2 * (bf16.engine.kv_capacity_tokens or 0), abs=2)


def test_linear_attention_states_take_their_share_of_the_pool() -> None:
    est = _estimate("Qwen/Qwen3-Next-80B-A3B-Thinking", "H100 SXM", tp=4, sglang={"mem_fraction_static": 0.85})
    before = (H100_MIB - HOPPER_CONTEXT_MIB - NCCL_MIB) * MIB
    rest = int(0.85 * before) - _bytes(est, "weights")
    state = est.engine.state_bytes_per_sequence
    assert state > 0
    # mamba_full_memory_ratio 0.9: the states get 0.9 / 1.9 of the rest, in whole slots; the KV the remainder
    slots = int(rest * 0.9 / 1.9) // state
    assert _bytes(est, "KV cache pool") == rest - slots * state
    assert est.engine.kv_capacity_tokens == (rest - slots * state) // est.engine.kv_bytes_per_token
    assert "sglang.mamba_states" in _ids(est.warnings)
    assert (est.engine.max_concurrent_sequences or 0) <= slots // 3


def test_too_small_a_fraction_is_sglangs_refusal() -> None:
    est = _estimate(L8, "H100 SXM", sglang={"mem_fraction_static": 0.15})
    assert est.engine.kv_capacity_tokens == 0 and est.engine.max_concurrent_sequences == 0
    assert est.fit is not None and est.fit.verdict == "does not fit"
    assert "within mem_fraction_static 0.15" in est.fit.message
    refusal = next(w for w in est.warnings if isinstance(w, Text) and w.id == "sglang.not_enough_memory")
    assert "Please try to increase --mem-fraction-static" in refusal


def test_requests_the_pool_cannot_hold_at_once_do_not_fit_and_say_so() -> None:
    est = _estimate(L8, "H100 SXM", sglang={"mem_fraction_static": 0.3}, batch=64, input_len=32000)
    tokens = est.engine.kv_capacity_tokens or 0
    assert 0 < tokens < 64 * 32512
    assert est.fit is not None and est.fit.verdict == "does not fit"
    assert "sglang.kv_pool.too_small" in _ids(est.warnings)
    assert est.engine.max_concurrent_sequences == tokens // 32512


def test_a_fraction_that_leaves_nothing_outside_warns_of_the_graph_capture() -> None:
    full = _estimate(L8, "H100 SXM", sglang={"mem_fraction_static": 0.99})
    assert "sglang.outside.short" in _ids(full.warnings)
    assert "sglang.outside.short" not in _ids(_estimate(L8, "H100 SXM").warnings)
    eager = _estimate(L8, "H100 SXM", sglang={"disable_cuda_graph": True})
    assert (
        _bytes(eager, "CUDA graphs") == 0
        and eager.engine.kv_capacity_tokens == _estimate(L8, "H100 SXM").engine.kv_capacity_tokens
    )


def test_without_a_gpu_the_kv_is_what_the_requests_need() -> None:
    est = _estimate(L8, None, batch=2, input_len=1000, output_len=24)
    assert _bytes(est, "KV cache") == 2 * 1024 * 32 * 8 * 256 * 2
    assert est.engine.kv_capacity_tokens is None and est.fit is None
    assert "sglang.choose_gpu" in _ids(est.warnings)
