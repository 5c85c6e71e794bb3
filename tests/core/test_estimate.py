"""The estimator end to end: phases, levels, formats, engines, invariants and the fit verdict."""

from __future__ import annotations

from typing import Any

import pytest

from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.gpu import GIB, MIB
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog


def run(model: str, gpu: str | None = "H100 SXM", weights: str = "auto", **work: Any) -> Estimate:
    cat = default_catalog()
    s = Scenario.model_validate({"model": {"id": model}, "weights": weights, "workload": {"kind": "inference", **work}})
    return estimate(s, cat.facts(model), cat.gpu(gpu) if gpu else None)


def comp(est: Estimate, name: str) -> int:
    return next(c.bytes for c in est.components if c.name == name)


def test_default_scenario_is_estimated_offline() -> None:
    cat = default_catalog()
    est = estimate(DEFAULT_SCENARIO, cat.facts(DEFAULT_SCENARIO.model.id), cat.gpu("RTX 4090"))
    assert est.fit is not None and est.fit.verdict == "fits"
    assert 8 * GIB < est.device_bytes < 11 * GIB
    assert all(c.explain for c in est.components)


def test_short_prompt_is_weights_plus_kv_plus_workspace() -> None:
    # Qwen3-8B bf16, 1 prompt token + 2048 new: the peak is the end of decoding
    est = run("Qwen/Qwen3-8B", "H20", input_len=1, output_len=2048, attention="flash")
    assert est.peak_phase == "decode"
    assert comp(est, "weights") == 8_190_735_360 * 2
    assert comp(est, "KV cache") == 2049 * 36 * 8 * 128 * 2 * 2
    assert comp(est, "cuBLAS workspace") == 8 * 4096 * 1024 + 8 * 16 * 1024  # Hopper


def test_levels_are_ordered_and_explained() -> None:
    est = run("meta-llama/Llama-3.1-8B", input_len=8192, output_len=512)
    assert est.peak_allocated_bytes < est.peak_reserved_bytes < est.device_bytes
    assert est.peak_allocated_bytes == sum(c.bytes for c in est.components)
    assert any(c.name == "CUDA context" for c in est.device_overheads)
    assert "reserved" in est.constants


@pytest.mark.parametrize("engine", ["transformers", "vllm", "llamacpp"])
def test_monotone_in_context_and_batch(engine: str) -> None:
    def required(**kw: Any) -> int:
        est = run("Qwen/Qwen3-4B", None, engine=engine, **kw)
        return est.peak_allocated_bytes

    lens = [required(input_len=n, output_len=256) for n in (128, 2048, 16384, 32000)]
    assert lens == sorted(lens) and lens[0] < lens[-1]
    batches = [required(input_len=2048, output_len=256, batch=b) for b in (1, 2, 8)]
    assert batches == sorted(batches) and batches[0] < batches[-1]


def test_long_prompt_peak_is_prefill_with_one_layer_transient() -> None:
    est = run("Qwen/Qwen3-8B", input_len=30720, output_len=16)
    assert est.peak_phase == "prefill"
    act = comp(est, "prefill activations")
    # gated MLP of one layer: 30720 x (3 x 12288 + 3 x 4096) x 2 B; earlier layers' activations are freed
    assert act == 30720 * (3 * 12288 + 3 * 4096) * 2


def test_full_prompt_logits_option_and_eager_scores() -> None:
    new = run("Qwen/Qwen2.5-0.5B", input_len=4096, output_len=16)
    old = run("Qwen/Qwen2.5-0.5B", input_len=4096, output_len=16, full_prompt_logits=True)
    assert old.peak_allocated_bytes - new.peak_allocated_bytes > 4096 * 151936 * 5
    eager = run("Qwen/Qwen2.5-0.5B", input_len=4096, output_len=16, attention="eager")
    # the one-layer s^2 transient (10.3 B per head x s^2 element) replaces the smaller MLP transient
    assert eager.peak_allocated_bytes > new.peak_allocated_bytes + 14 * 4096 * 4096 * 9


def test_quantisation_config_is_the_default_and_explicit_format_overrides() -> None:
    oss = run("openai/gpt-oss-20b", input_len=1, output_len=1)
    w = comp(oss, "weights")
    assert 12.5 * GIB < w < 13.5 * GIB  # MXFP4 experts, bf16 attention / router / embeddings / lm_head
    bf16 = comp(run("openai/gpt-oss-20b", weights="bf16", input_len=1, output_len=1), "weights")
    assert bf16 == 20_914_757_184 * 2


def test_deepseek_fp8_block_weights_include_the_scales() -> None:
    cat = default_catalog()
    facts = cat.facts("deepseek-ai/DeepSeek-V3")
    from vramdesk.core.estimate import resolve_format

    s = Scenario.model_validate({"model": {"id": "deepseek-ai/DeepSeek-V3"}})
    fmt, on_load = resolve_format(s, facts.arch)
    assert fmt.kind == "fp8" and not on_load
    wb = facts.weights(fmt, frozenset({"text", "mtp"}))
    # the Hub total 684,531,386,000 counts 41,540,496 F32 scale elements next to the FP8 weights
    scales = 684_531_386_000 - 684_489_845_504
    fp8 = wb.quantized_params
    bf16 = wb.params - fp8
    assert wb.total == fp8 + 2 * bf16 + 4 * scales


@pytest.mark.parametrize(
    ("weights", "lo", "hi"),
    [("bf16", 14.9, 15.0), ("int8", 8.4, 8.5), ("nf4", 5.55, 5.7), ("gptq-int4", 5.0, 5.7), ("q4_k_m", 4.4, 5.0)],
)
def test_weight_formats_for_llama_8b(weights: str, lo: float, hi: float) -> None:
    est = run(
        "meta-llama/Llama-3.1-8B",
        weights=weights,
        engine="llamacpp" if weights.startswith("q") else "transformers",
        input_len=16,
        output_len=1,
    )
    w = comp(est, "weights")
    if weights.startswith("q"):
        w += (
            default_catalog()
            .facts("meta-llama/Llama-3.1-8B")
            .weights(
                __import__("vramdesk.core.weight_format", fromlist=["x"]).parse_weight_format(weights),
                frozenset({"text"}),
            )
            .embedding
        )
    assert lo * GIB < w < hi * GIB


def test_vllm_pool_capacity_and_concurrency() -> None:
    est = run("meta-llama/Llama-3.1-8B", "H100 SXM", engine="vllm", input_len=4096, output_len=1024, batch=8)
    e = est.engine
    assert e.pool_bytes is not None and e.kv_capacity_tokens is not None and e.max_concurrent_sequences is not None
    assert e.pool_bytes == int(0.9 * default_catalog().gpu("H100 SXM").memory_bytes)
    pool = comp(est, "KV cache pool")
    assert e.kv_capacity_tokens == pool // 131072
    assert e.max_concurrent_sequences == min(256, pool // (5120 * 131072))
    # vLLM >= 0.10: the budget, and beside it the CUDA context (there before the profile's baseline) and the graphs
    # (captured after the pool is sized)
    outside = comp(est, "CUDA graphs") + next(c.bytes for c in est.device_overheads if c.name == "CUDA context")
    assert est.device_bytes == pytest.approx(e.pool_bytes + outside, rel=0.001)
    # vLLM 0.8-0.9 counted every non-torch byte, the context too, inside the budget
    old = run(
        "meta-llama/Llama-3.1-8B",
        "H100 SXM",
        engine="vllm",
        input_len=4096,
        output_len=1024,
        batch=8,
        vllm={"version": "0.8"},
    )
    assert old.device_bytes == pytest.approx(e.pool_bytes + comp(old, "CUDA graphs"), rel=0.001)


def test_vllm_reports_when_the_pool_is_too_small() -> None:
    est = run("meta-llama/Llama-3.1-8B", "RTX 4090", engine="vllm", input_len=100_000, output_len=1000, batch=4)
    assert any("KV pool" in w for w in est.warnings)


def test_llamacpp_partial_offload_splits_vram_and_host() -> None:
    full = run(
        "meta-llama/Llama-3.1-8B", "RTX 4090", weights="q4_k_m", engine="llamacpp", input_len=4096, output_len=512
    )
    half = run(
        "meta-llama/Llama-3.1-8B",
        "RTX 4090",
        weights="q4_k_m",
        engine="llamacpp",
        input_len=4096,
        output_len=512,
        llamacpp={"n_gpu_layers": 16},
    )
    assert half.engine.gpu_layers == 16 and half.engine.total_layers == 32
    assert comp(half, "weights") < 0.55 * comp(full, "weights")
    assert half.host_bytes > full.host_bytes
    assert comp(half, "KV cache") == comp(full, "KV cache") // 2
    # everything is somewhere: GPU + host = the whole model (host also holds half the KV and the output buffer)
    all_weights = comp(full, "weights") + full.host_bytes
    host_extra = comp(full, "KV cache") // 2 + 512 * 128256 * 4
    assert comp(half, "weights") + half.host_bytes - host_extra == all_weights


def test_fit_verdicts() -> None:
    assert run("Qwen/Qwen3-4B", "RTX 4090", input_len=4096).fit.verdict == "fits"  # type: ignore[union-attr]
    big = run("meta-llama/Llama-3.1-70B", "RTX 4090", input_len=4096)
    assert big.fit is not None and big.fit.verdict == "does not fit" and "short by" in big.fit.message


def test_fine_tuning_goes_through_the_training_phases() -> None:
    s = Scenario.model_validate({"model": {"id": "Qwen/Qwen3-4B"}, "workload": {"kind": "finetune"}})
    est = estimate(s, default_catalog().facts("Qwen/Qwen3-4B"))
    assert [p.name for p in est.phases][-1] == "optimizer step"
    assert est.params.trainable > 0


def test_unknown_weight_format_is_named() -> None:
    with pytest.raises(EstimateError, match="q9_z"):
        run("Qwen/Qwen3-4B", weights="q9_z")


def test_multimodal_checkpoint_loads_vision_tower_in_transformers_not_llamacpp() -> None:
    tf = run("Qwen/Qwen3.5-27B", input_len=16, output_len=1)
    cpp = run("Qwen/Qwen3.5-27B", engine="llamacpp", weights="q8_0", input_len=16, output_len=1)
    assert tf.params.total == 27_356_728_560
    assert cpp.params.total == 27_356_728_560 - 460_730_096
    assert any("vision" in n for n in tf.params.notes)


def test_workspace_smaller_before_hopper() -> None:
    est = run("Qwen/Qwen3-0.6B", "A100 80GB SXM", input_len=8, output_len=8)
    assert comp(est, "cuBLAS workspace") < 9 * MIB


def test_llamacpp_buffers_for_llama_8b_q4_k_m() -> None:
    # llama.cpp's load log for Llama-3.1-8B Q4_K_M, -ngl 99, n_ctx 8192, flash attention, n_ubatch 512:
    # CUDA0 model buffer 4403.49 MiB, CPU (token embeddings) 281.81 MiB, KV 1024.00 MiB, compute 258.50 MiB
    est = run(
        "meta-llama/Llama-3.1-8B", "RTX 4090", weights="q4_k_m", engine="llamacpp", input_len=7680, output_len=512
    )
    assert round(comp(est, "weights") / MIB, 2) == 4403.49
    assert round(est.host_bytes / MIB, 2) == 281.81
    assert comp(est, "KV cache") == 1024 * MIB
    assert comp(est, "compute buffer") == int(258.5 * MIB)


def test_llamacpp_stages_a_host_weight_in_the_gpu_compute_buffer() -> None:
    """Partial offload: ggml's CUDA backend runs the output layer's product on the GPU for a ubatch of 32 tokens or
    more, with a copy of the weight (the log of Pythia-2.8B Q4_0 -ngl 10, benchmarks/serving/llamacpp_logs.yaml:
    203.99 MiB = output weight + F32 logits + the input); a 16-token ubatch stays on the CPU."""
    facts = default_catalog().facts("meta-llama/Llama-3.1-8B")
    base = {"weights": "q4_k_m", "engine": "llamacpp", "input_len": 4096, "output_len": 512}
    part = run("meta-llama/Llama-3.1-8B", "RTX 4090", **base, llamacpp={"n_gpu_layers": 16})
    full = run("meta-llama/Llama-3.1-8B", "RTX 4090", **base)
    arch, ub = facts.arch, 512
    staged = comp(part, "compute buffer")
    assert staged > comp(full, "compute buffer")
    # Q4_K_M keeps output.weight in Q6_K: 210 bytes per 256 values
    assert staged - ub * arch.vocab * 4 - ub * arch.hidden * 4 == arch.vocab * arch.hidden // 256 * 210
    small = run("meta-llama/Llama-3.1-8B", "RTX 4090", **base, llamacpp={"n_gpu_layers": 16, "n_ubatch": 16})
    assert comp(small, "compute buffer") < 20 * MIB  # no copy for a 16-token ubatch
    zero = run("meta-llama/Llama-3.1-8B", "RTX 4090", **base, llamacpp={"n_gpu_layers": 0})
    assert comp(zero, "compute buffer") >= staged  # 0 layers: the same copy (the output layer stays in host memory)


def test_llamacpp_keeps_phi_sliding_window_layers_whole() -> None:
    """llama.cpp disables Phi-3 / Phi-4's sliding window (llama-model.cpp, ggml-org/llama.cpp#13676): the KV of
    every layer covers all n_ctx cells, where transformers keeps phi-4's 16k window."""
    work = {"input_len": 32000, "output_len": 768}
    lcpp = run("microsoft/phi-4", "H100 SXM", weights="q4_k_m", engine="llamacpp", **work)
    assert comp(lcpp, "KV cache") == 40 * 10 * (128 + 128) * 2 * 32768  # 40 layers, 10 KV heads, F16, 32k cells
    assert any("sliding window is disabled in llama.cpp" in w for w in lcpp.warnings)
    hf = run("microsoft/phi-4", "H100 SXM", **work)
    assert comp(hf, "KV cache") < 0.6 * comp(lcpp, "KV cache")  # the window bounds transformers' cache
    gemma = run("google/gemma-2-9b-it", "H100 SXM", weights="q4_k_m", engine="llamacpp", **work)
    assert not any("sliding window is disabled" in w for w in gemma.warnings)  # llama.cpp keeps Gemma's window


def test_gptq_4bit_exllama_scratch_only_for_4_bit() -> None:
    int4 = run("Qwen/Qwen2.5-7B", "A100 80GB SXM", weights="gptq-int4", input_len=1, output_len=8)
    int8 = run("Qwen/Qwen2.5-7B", "A100 80GB SXM", weights="gptq-int8", input_len=1, output_len=8)
    # the largest matrix (18944 x 3584) dequantised to fp16 + 2048 x 18944 fp16 state
    assert comp(int4, "GPTQ kernel scratch") == 18944 * 3584 * 2 + 2048 * 18944 * 2
    assert all(c.name != "GPTQ kernel scratch" for c in int8.components)


def test_device_map_split_over_gpus() -> None:
    cat = default_catalog()
    facts = cat.facts("Qwen/Qwen3-8B")
    one = run("Qwen/Qwen3-8B", "RTX 4090", input_len=4096, output_len=256)
    s = Scenario.model_validate(
        {
            "model": {"id": "Qwen/Qwen3-8B"},
            "hardware": {"gpu": "RTX 4090", "gpu_count": 3},
            "workload": {"kind": "inference", "input_len": 4096, "output_len": 256},
        }
    )
    three = estimate(s, facts, cat.gpu("RTX 4090"))
    assert len(three.per_gpu) == 3
    w_total = comp(one, "weights")
    split = [
        next(c.bytes for c in max(p, key=lambda ph: ph.allocated_bytes).components if c.name == "weights")
        for p in (three.phases,)
    ]
    assert split[0] < w_total / 2
    # every GPU needs less than the single GPU did, and the verdict uses the busiest one
    assert max(g.device_bytes for g in three.per_gpu) < one.device_bytes
    assert three.fit is not None and three.fit.required_bytes == max(g.device_bytes for g in three.per_gpu)


def test_vllm_verdict_uses_the_requests_against_the_utilisation_budget() -> None:
    ok = run("meta-llama/Llama-3.1-8B", "RTX 4090", engine="vllm", input_len=4000, output_len=96)
    assert ok.fit is not None and ok.fit.verdict == "fits" and "gpu_memory_utilization" in ok.fit.message
    # the pool cannot hold four 101k-token sequences: no "fits" just because util x total < total
    bad = run("meta-llama/Llama-3.1-8B", "RTX 4090", engine="vllm", input_len=100_000, output_len=1000, batch=4)
    assert bad.fit is not None and bad.fit.verdict == "does not fit"
    assert bad.device_bytes < default_catalog().gpu("RTX 4090").memory_bytes


@pytest.mark.parametrize("weights", ["bf16", "gptq-int4", "awq-int4", "nf4-dq", "int8", "fp8-block", "q4_k_m"])
def test_weight_pricing_equals_a_tensor_by_tensor_sum(weights: str) -> None:
    from vramdesk.core.weight_format import parse_weight_format
    from vramdesk.core.weights import gguf_name, weight_bytes

    facts = default_catalog().facts("Qwen/Qwen3-30B-A3B")
    fmt = parse_weight_format(weights)
    got = weight_bytes(facts.tensors, fmt, frozenset({"text"}), facts.arch.n_layers).total
    expected = 0
    for t in facts.tensors:
        name = gguf_name(t.name) if fmt.kind == "gguf" else t.name
        if fmt.kind != "gguf" and len(t.shape) == 3:
            expected += t.shape[0] * fmt.tensor_bytes(name, t.role, t.shape[1:], t.layer, facts.arch.n_layers)
        else:
            expected += fmt.tensor_bytes(name, t.role, t.shape, t.layer, facts.arch.n_layers)
    assert got == expected


def test_structured_fit_and_headroom_override() -> None:
    cat = default_catalog()
    facts = cat.facts("meta-llama/Llama-3.1-70B")
    s = Scenario.model_validate({"model": {"id": "meta-llama/Llama-3.1-70B"}, "workload": {"input_len": 1024}})
    est = estimate(s, facts, cat.gpu("RTX 4090"))
    assert est.fit is not None and est.fit.short_bytes == est.fit.required_bytes - est.fit.available_bytes > 0
    assert est.fit.basis == "total" and est.per_gpu[0].fit == est.fit
    small = cat.facts("Qwen/Qwen3-4B")
    s4 = Scenario.model_validate({"model": {"id": "Qwen/Qwen3-4B"}, "workload": {"input_len": 1024}})
    relaxed = estimate(s4, small, cat.gpu("RTX 4090"), headroom_fraction=0.0)
    strict = estimate(s4, small, cat.gpu("RTX 4090"), headroom_fraction=0.7)
    assert relaxed.fit is not None and relaxed.fit.verdict == "fits" and relaxed.fit.headroom_bytes == 0
    assert strict.fit is not None and strict.fit.verdict == "tight"


def test_per_gpu_components_when_split() -> None:
    s = Scenario.model_validate(
        {
            "model": {"id": "Qwen/Qwen3-8B"},
            "hardware": {"gpu": "RTX 4090", "gpu_count": 2},
            "workload": {"kind": "inference", "input_len": 2048, "output_len": 64},
        }
    )
    est = estimate(s, default_catalog().facts("Qwen/Qwen3-8B"), default_catalog().gpu("RTX 4090"))
    for share in est.per_gpu:
        assert sum(c.bytes for c in share.components) == share.peak_allocated_bytes
        assert share.fit is not None
    # GPU 0 holds the embedding, the last GPU the lm_head: their weights differ by the split, not by zero
    w0, w1 = (next(c.bytes for c in g.components if c.name == "weights") for g in est.per_gpu)
    assert w0 > 0 and w1 > 0 and w0 + w1 == 8_190_735_360 * 2


def test_llamacpp_layer_split_over_two_gpus() -> None:
    one = run(
        "meta-llama/Llama-3.1-70B", "RTX 4090", weights="q4_k_m", engine="llamacpp", input_len=4096, output_len=512
    )
    cat = default_catalog()
    s = Scenario.model_validate(
        {
            "model": {"id": "meta-llama/Llama-3.1-70B"},
            "weights": "q4_k_m",
            "hardware": {"gpu": "RTX 4090", "gpu_count": 2},
            "workload": {"engine": "llamacpp", "input_len": 4096, "output_len": 512},
        }
    )
    two = estimate(s, cat.facts("meta-llama/Llama-3.1-70B"), cat.gpu("RTX 4090"))
    assert len(two.per_gpu) == 2
    weights = [next(c.bytes for c in g.components if c.name == "weights") for g in two.per_gpu]
    kvs = [next(c.bytes for c in g.components if c.name == "KV cache") for g in two.per_gpu]
    assert sum(weights) == comp(one, "weights") and sum(kvs) == comp(one, "KV cache")
    assert two.fit is not None and two.fit.required_bytes == max(g.device_bytes for g in two.per_gpu)
    assert max(g.device_bytes for g in two.per_gpu) < one.device_bytes


def test_vllm_tensor_and_pipeline_parallel_shard_weights_and_kv() -> None:
    cat = default_catalog()
    facts = cat.facts("meta-llama/Llama-3.1-70B")

    def v(tp: int, pp: int) -> Estimate:
        s = Scenario.model_validate(
            {
                "model": {"id": "meta-llama/Llama-3.1-70B"},
                "hardware": {"gpu": "H100 SXM", "gpu_count": tp * pp},
                "parallelism": {"tp": tp, "pp": pp},
                "workload": {"engine": "vllm", "input_len": 8192, "output_len": 512},
            }
        )
        return estimate(s, facts, cat.gpu("H100 SXM"))

    tp4, pp4, tp2pp2 = v(4, 1), v(1, 4), v(2, 2)
    for e in (tp4, pp4, tp2pp2):
        assert comp(e, "weights") == pytest.approx(70_553_706_496 * 2 / 4, rel=1e-6)
        assert len(e.per_gpu) == 4
    assert tp4.engine.kv_bytes_per_token == pytest.approx(80 * 8 * 128 * 2 * 2 / 4)
    assert pp4.engine.kv_bytes_per_token == tp4.engine.kv_bytes_per_token


def _vllm_tp(model: str, tp: int) -> Estimate:
    s = Scenario.model_validate(
        {
            "model": {"id": model},
            "hardware": {"gpu": "H100 SXM", "gpu_count": tp},
            "parallelism": {"tp": tp},
            "workload": {"engine": "vllm"},
        }
    )
    return estimate(s, default_catalog().facts(model), default_catalog().gpu("H100 SXM"))


def test_vllm_keeps_one_kv_head_per_rank_when_there_are_fewer_kv_heads_than_ranks() -> None:
    # Qwen2.5-3B: 36 layers, 2 KV heads of 128: with tp 4 each rank holds one head (vLLM replicates them), not
    # all of them (the estimate once put the whole KV on every rank and halved the pool's capacity)
    one_head = 36 * 1 * 128 * 2 * 2
    assert _vllm_tp("Qwen/Qwen2.5-3B-Instruct", 2).engine.kv_bytes_per_token == pytest.approx(one_head)
    assert _vllm_tp("Qwen/Qwen2.5-3B-Instruct", 4).engine.kv_bytes_per_token == pytest.approx(one_head)


def test_vllm_refuses_a_tensor_parallel_size_it_cannot_shard() -> None:
    # Qwen2.5-7B has 28 attention heads and 4 KV heads
    with pytest.raises(EstimateError, match="tensor parallel 8 does not divide the 28 attention heads"):
        _vllm_tp("Qwen/Qwen2.5-7B-Instruct", 8)
    with pytest.raises(EstimateError, match="tensor parallel 3 does not divide"):
        _vllm_tp("Qwen/Qwen2.5-7B-Instruct", 3)


def test_device_map_max_memory_fills_gpus_in_order_then_spills_to_cpu_and_disk() -> None:
    from vramdesk.core.parallel import place_weights
    from vramdesk.core.weight_format import parse_weight_format

    cat = default_catalog()
    model = "Qwen/Qwen3-8B"
    facts = cat.facts(model)

    def scen(gpus: int, **work: Any) -> Estimate:
        s = Scenario.model_validate(
            {
                "model": {"id": model},
                "hardware": {"gpu": "RTX 4090", "gpu_count": gpus},
                "workload": {"kind": "inference", "input_len": 1024, "output_len": 64, **work},
            }
        )
        return estimate(s, facts, cat.gpu("RTX 4090"))

    # a cap every GPU's balanced share fits under changes nothing
    assert scen(2, max_memory_gib=20).per_gpu == scen(2).per_gpu
    # 16.4 GB of bf16 weights on one GPU capped at 10 GiB: the rest goes to CPU memory
    spill = scen(1, max_memory_gib=10)
    weights = next(c.bytes for c in spill.components if c.name == "weights")
    assert weights <= 10 * GIB
    assert spill.host_bytes > 5 * GIB
    assert any("CPU memory" in x for x in spill.warnings)
    moving = next(c.bytes for c in spill.components if c.name == "offloaded layer")
    assert moving > 0
    # a CPU cap sends the remainder to disk, which is neither GPU nor host memory
    disk = scen(1, max_memory_gib=10, cpu_memory_gib=2)
    assert disk.host_bytes <= 2 * GIB and any("on disk" in x for x in disk.warnings)
    # the placement itself: layers stay in order, GPU 0 keeps room for the largest layer when anything spills
    wb = facts.weights(parse_weight_format("bf16"), frozenset({"text"}))
    place = place_weights(wb, facts.arch.n_layers, 2, 6 * GIB, None)
    held = [i for slot in place.gpus for i in slot.layers] + list(place.cpu.layers)
    assert held == list(range(facts.arch.n_layers))
    gpu0 = sum(wb.per_layer[i] for i in place.gpus[0].layers) + wb.embedding + wb.other
    largest = max(*wb.per_layer.values(), wb.head)
    assert gpu0 + largest <= 6 * GIB


def test_llamacpp_row_split_divides_matrices_and_keeps_kv_on_the_main_gpu() -> None:
    cat = default_catalog()
    model = "meta-llama/Llama-3.1-70B"

    def split(mode: str) -> Estimate:
        s = Scenario.model_validate(
            {
                "model": {"id": model},
                "weights": "q4_k_m",
                "hardware": {"gpu": "RTX 4090", "gpu_count": 3},
                "workload": {
                    "engine": "llamacpp",
                    "input_len": 8192,
                    "output_len": 512,
                    "llamacpp": {"split_mode": mode},
                },
            }
        )
        return estimate(s, cat.facts(model), cat.gpu("RTX 4090"))

    row, layer = split("row"), split("layer")
    assert len(row.per_gpu) == 3

    def part(e: Estimate, g: int, name: str) -> int:
        return next((c.bytes for c in e.per_gpu[g].components if c.name == name), 0)

    weights = [part(row, g, "weights") for g in range(3)]
    assert max(weights) - min(weights) <= 1
    assert sum(weights) == pytest.approx(sum(part(layer, g, "weights") for g in range(3)), abs=3)
    # all of the KV cache on GPU 0 with row split; shared by layer split
    assert part(row, 0, "KV cache") == sum(part(layer, g, "KV cache") for g in range(3))
    assert part(row, 1, "KV cache") == 0 and part(row, 1, "row-split scratch") > 0
    assert row.per_gpu[0].device_bytes > row.per_gpu[1].device_bytes


def test_inference_says_it_is_planned_on_one_machine() -> None:
    s = Scenario.model_validate({"model": {"id": "Qwen/Qwen3-8B"}, "hardware": {"gpu_count": 2, "nodes": 3}})
    est = estimate(s, default_catalog().facts("Qwen/Qwen3-8B"))
    assert any("inference is planned on one machine: its 2 GPU(s)" in w for w in est.warnings)


def test_vllm_pipeline_stages_may_span_machines_other_engines_may_not() -> None:
    cat = default_catalog()
    model = "Qwen/Qwen2.5-72B-Instruct"

    def plan(engine: str) -> Scenario:
        return Scenario.model_validate(
            {
                "model": {"id": model},
                "workload": {"kind": "inference", "engine": engine},
                "hardware": {"gpu": "H100 SXM", "gpu_count": 8, "nodes": 2},
                "parallelism": {"tp": 8, "pp": 2},
            }
        )

    est = estimate(plan("vllm"), cat.facts(model), cat.gpu("H100 SXM"))
    assert len(est.per_gpu) == 16
    assert "served across machines: tp 8 x pp 2 = 16 GPUs on 2 machines of 8" in est.warnings
    assert not any("planned on one machine" in w for w in est.warnings)
    with pytest.raises(EstimateError, match="transformers serves on one machine: tp 8 x pp 2 needs 16 GPUs"):
        estimate(plan("transformers"), cat.facts(model), cat.gpu("H100 SXM"))


def test_a_device_map_split_says_each_gpus_share_of_the_weights_first() -> None:
    cat = default_catalog()
    model = "Qwen/Qwen2.5-32B-Instruct"
    s = Scenario.model_validate({"model": {"id": model}, "hardware": {"gpu": "L40S", "gpu_count": 2}})
    est = estimate(s, cat.facts(model), cat.gpu("L40S"))
    whole = estimate(
        s.model_copy(update={"hardware": s.hardware.model_copy(update={"gpu_count": 1})}), cat.facts(model)
    )
    total = next(c.bytes for c in whole.components if c.name == "weights")
    for share in est.per_gpu:
        w = next(c for c in share.components if c.name == "weights")
        assert w.explain.startswith(f"this GPU's share, {w.bytes / GIB:.2f} GiB of {total / GIB:.2f} GiB: ")
