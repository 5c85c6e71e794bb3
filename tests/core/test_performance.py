"""Speed estimates: the roofline rules, their monotonicity, and decode speed against public reports."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.estimate import estimate
from vramdesk.core.performance import Efficiency, Performance, PerformanceError, link_for, performance
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

LLAMA8 = "meta-llama/Llama-3.1-8B"


def _load_reports() -> Any:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "speed_reports.py"
    spec = importlib.util.spec_from_file_location("speed_reports", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["speed_reports"] = mod
    spec.loader.exec_module(mod)
    return mod


def perf(
    model: str,
    gpu: str,
    weights: str = "auto",
    gpus: int = 1,
    par: dict[str, Any] | None = None,
    eff: Efficiency | None = None,
    dataset_tokens: int | None = None,
    nodes: int = 1,
    **work: Any,
) -> Performance:
    cat = default_catalog()
    s = Scenario.model_validate(
        {
            "model": {"id": model},
            "weights": weights,
            "workload": work,
            "hardware": {"gpu": gpu, "gpu_count": gpus, "nodes": nodes},
            "parallelism": par or {},
        }
    )
    g = cat.gpu(gpu)
    f = cat.facts(model)
    return performance(estimate(s, f, g), s, f, g, eff, dataset_tokens=dataset_tokens)


REPORTS = _load_reports()


@pytest.mark.parametrize("row", REPORTS.REPORTS, ids=lambda r: f"{r.gpu}-{r.weights}-{r.tokens_per_s}")
def test_decode_speed_within_public_reports(row: Any) -> None:
    est = REPORTS.estimated_tokens_per_s(row)
    assert abs(est / row.tokens_per_s - 1) <= REPORTS.TOLERANCE, (est, row.tokens_per_s, row.source)
    assert row.source  # every row cites where it comes from


def test_llama8b_q4km_rtx4090_in_reported_range() -> None:
    rows = [r for r in REPORTS.REPORTS if r.gpu == "RTX 4090" and r.weights == "q4_k_m"]
    p = perf(LLAMA8, "RTX 4090", "q4_k_m", engine="llamacpp", input_len=1, output_len=512)
    lo = min(r.tokens_per_s for r in rows) * 0.8
    hi = max(r.tokens_per_s for r in rows) * 1.2
    assert p.decode_tokens_per_s is not None and lo <= p.decode_tokens_per_s <= hi
    assert p.decode_bound == "memory bandwidth" and p.bound == "memory bandwidth"
    assert p.bandwidth_efficiency == 0.65  # block-quantised default, stated
    assert any("GB of weights" in a for a in p.assumptions)


def test_decode_is_bandwidth_over_bytes() -> None:
    p = perf(LLAMA8, "H100 SXM", engine="vllm", input_len=1, output_len=2)
    assert p.decode_bytes_per_step is not None and p.decode_step_s is not None
    # bf16: ~15 GB read per token (input embedding excluded) over 3350 GB/s x 0.8
    assert 14.5e9 < p.decode_bytes_per_step < 15.5e9
    assert p.decode_step_s == pytest.approx(p.decode_bytes_per_step / (3350e9 * 0.8), rel=0.02)


def test_batch_raises_total_not_per_sequence_and_turns_compute_bound() -> None:
    one = perf(LLAMA8, "H100 SXM", engine="vllm", batch=1, input_len=512, output_len=128)
    many = perf(LLAMA8, "H100 SXM", engine="vllm", batch=64, input_len=512, output_len=128)
    huge = perf(LLAMA8, "H100 SXM", engine="vllm", batch=1024, input_len=16, output_len=16)
    assert many.decode_tokens_per_s_total is not None and one.decode_tokens_per_s_total is not None
    assert many.decode_tokens_per_s_total > 10 * one.decode_tokens_per_s_total
    assert many.decode_tokens_per_s is not None and one.decode_tokens_per_s is not None
    assert many.decode_tokens_per_s <= one.decode_tokens_per_s
    assert huge.decode_bound == "compute"


def test_longer_context_is_slower() -> None:
    speeds = [
        perf(LLAMA8, "RTX 4090", "q4_k_m", engine="llamacpp", input_len=n, output_len=256).decode_tokens_per_s
        for n in (512, 4096, 32768)
    ]
    assert speeds[0] is not None and speeds[1] is not None and speeds[2] is not None
    assert speeds[0] > speeds[1] > speeds[2]


def test_moe_reads_only_the_active_experts() -> None:
    moe = perf("Qwen/Qwen3-30B-A3B", "H100 SXM", engine="vllm", input_len=1, output_len=2)
    dense = perf("Qwen/Qwen3-32B", "H100 SXM", engine="vllm", input_len=1, output_len=2)
    assert moe.decode_bytes_per_step is not None and dense.decode_bytes_per_step is not None
    assert moe.decode_bytes_per_step < dense.decode_bytes_per_step / 6  # ~3.3 B active of 30.5 B
    assert moe.decode_tokens_per_s is not None and dense.decode_tokens_per_s is not None
    assert moe.decode_tokens_per_s > 5 * dense.decode_tokens_per_s


def test_prefill_is_compute_bound_and_ttft_grows_with_prompt() -> None:
    short = perf(LLAMA8, "H100 SXM", engine="vllm", input_len=1024)
    long = perf(LLAMA8, "H100 SXM", engine="vllm", input_len=32768)
    assert short.prefill_bound == "compute"
    assert short.time_to_first_token_s is not None and long.time_to_first_token_s is not None
    assert long.time_to_first_token_s > 32 * short.time_to_first_token_s  # attention is quadratic
    assert short.prefill_tokens_per_s is not None and long.prefill_tokens_per_s is not None
    assert long.prefill_tokens_per_s < short.prefill_tokens_per_s


def test_int4_weights_still_compute_in_16_bits() -> None:
    bf16 = perf(LLAMA8, "H100 SXM", engine="vllm", input_len=4096)
    awq = perf(LLAMA8, "H100 SXM", "awq-int4", engine="vllm", input_len=4096)
    assert awq.prefill_tokens_per_s == pytest.approx(bf16.prefill_tokens_per_s, rel=0.01)
    assert awq.decode_tokens_per_s is not None and bf16.decode_tokens_per_s is not None
    assert awq.decode_tokens_per_s > 2 * bf16.decode_tokens_per_s


def test_efficiency_overrides_are_used() -> None:
    base = perf(LLAMA8, "H100 SXM", engine="vllm", input_len=1, output_len=2)
    slow = perf(LLAMA8, "H100 SXM", engine="vllm", input_len=1, output_len=2, eff=Efficiency(bandwidth=0.4, mfu=0.25))
    assert base.decode_tokens_per_s is not None and slow.decode_tokens_per_s is not None
    assert slow.decode_tokens_per_s == pytest.approx(base.decode_tokens_per_s / 2, rel=0.02)
    assert slow.mfu == 0.25 and slow.bandwidth_efficiency == 0.4


def test_tensor_parallel_speeds_up_decode_and_states_communication() -> None:
    one = perf("meta-llama/Llama-3.1-70B", "H100 SXM", "fp8", engine="vllm", input_len=512, output_len=128)
    four = perf(
        "meta-llama/Llama-3.1-70B", "H100 SXM", gpus=4, par={"tp": 4}, engine="vllm", input_len=512, output_len=128
    )
    assert four.decode_tokens_per_s is not None and one.decode_tokens_per_s is not None
    assert four.decode_tokens_per_s > one.decode_tokens_per_s
    assert any("all-reduce" in a and "NVLink" in a for a in four.assumptions)
    assert four.link_gbps == 450.0
    assert link_for(default_catalog().gpu("RTX 4090"))[0] == 25.0


def test_training_rules_6n_8n_and_lora() -> None:
    full = perf(LLAMA8, "H100 SXM", kind="finetune", method="full", grad_checkpointing=False, seq_len=512)
    ckpt = perf(LLAMA8, "H100 SXM", kind="finetune", method="full", grad_checkpointing=True, seq_len=512)
    lora = perf(LLAMA8, "H100 SXM", kind="finetune", method="lora", grad_checkpointing=False, seq_len=512)
    assert full.flops_per_token is not None and ckpt.flops_per_token is not None and lora.flops_per_token is not None
    n = 7.5e9
    assert full.flops_per_token == pytest.approx(6 * n, rel=0.05)
    assert ckpt.flops_per_token == pytest.approx(8 * n, rel=0.05)
    assert lora.flops_per_token == pytest.approx(4 * n, rel=0.05)
    assert full.bound == "compute"
    assert full.step_time_s is not None and full.tokens_per_step == 512
    assert full.step_time_s == pytest.approx(512 * full.flops_per_token / (989.5e12 * 0.4), rel=0.01)


def test_epoch_time_and_data_parallel_communication() -> None:
    one = perf(LLAMA8, "H100 SXM", kind="finetune", method="lora", dataset_tokens=10_000_000)
    eight = perf(LLAMA8, "H100 SXM", gpus=8, kind="finetune", method="lora", dataset_tokens=10_000_000)
    assert one.epoch_time_s is not None and one.train_tokens_per_s is not None
    assert one.epoch_time_s == pytest.approx(10_000_000 / one.train_tokens_per_s, rel=0.01)
    assert eight.train_tokens_per_s is not None and eight.communication_s_per_step is not None
    assert 6 * one.train_tokens_per_s < eight.train_tokens_per_s <= 8 * one.train_tokens_per_s
    assert eight.communication_s_per_step > 0
    assert any("data parallel 8" in a for a in eight.assumptions)


def test_qlora_and_offload_are_slower() -> None:
    lora = perf(LLAMA8, "RTX 4090", kind="finetune", method="lora")
    qlora = perf(LLAMA8, "RTX 4090", kind="finetune", method="qlora")
    off = perf(LLAMA8, "RTX 4090", par={"zero": 2, "offload": "optimizer"}, kind="finetune", method="full")
    assert lora.train_tokens_per_s is not None and qlora.train_tokens_per_s is not None
    assert qlora.train_tokens_per_s < lora.train_tokens_per_s
    assert off.offload_s_per_step is not None and off.offload_s_per_step > 1.0  # 8 B params through the CPU


def test_gpu_without_compute_figure() -> None:
    p = perf(LLAMA8, "Apple M3 Max", "q4_k_m", engine="llamacpp")
    assert p.decode_tokens_per_s is not None and p.prefill_tokens_per_s is None
    with pytest.raises(PerformanceError):
        perf(LLAMA8, "Apple M3 Max", kind="finetune", method="qlora")


def test_device_map_spill_to_cpu_memory_makes_decode_pcie_bound() -> None:
    on_gpu = perf("Qwen/Qwen3-8B", "H100 SXM", kind="inference", input_len=1024, output_len=128)
    spilled = perf("Qwen/Qwen3-8B", "H100 SXM", kind="inference", input_len=1024, output_len=128, max_memory_gib=8)
    assert spilled.decode_bound == "host transfer"
    # about half of 16.4 GB of bf16 weights cross PCIe 4.0 (25 GB/s) every step: a few tokens per second
    assert spilled.decode_tokens_per_s is not None and on_gpu.decode_tokens_per_s is not None
    assert 1.5 < spilled.decode_tokens_per_s < 5 < on_gpu.decode_tokens_per_s
    assert any("cross PCIe" in n for n in spilled.assumptions)


def test_machines_multiply_the_data_parallel_ranks_and_cross_the_network() -> None:
    def run(nodes: int, eff: Efficiency | None = None) -> Performance:
        return perf(LLAMA8, "H100 SXM", gpus=8, nodes=nodes, par={"zero": 3}, eff=eff, kind="finetune", method="full")

    one, two = run(1), run(2)
    assert (one.gpu_count, two.gpu_count) == (8, 16)
    assert one.tokens_per_step is not None and two.tokens_per_step == 2 * one.tokens_per_step
    # the gradient ring crosses 25 GB/s per GPU between machines instead of 450 GB/s NVLink
    assert two.communication_s_per_step is not None and one.communication_s_per_step is not None
    assert two.communication_s_per_step > 10 * one.communication_s_per_step
    assert any("network between 2 machines (25 GB/s per GPU assumed)" in a for a in two.assumptions)
    fast = run(2, Efficiency(internode_gbps=450.0, internode_latency_us=10.0))
    assert fast.train_tokens_per_s is not None and one.train_tokens_per_s is not None
    assert fast.train_tokens_per_s == pytest.approx(2 * one.train_tokens_per_s, rel=0.02)
