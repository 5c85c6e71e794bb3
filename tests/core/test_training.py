"""Fine-tuning estimates against the tensor-level trace of real HF code (shared/research/trace-oracle.md §3).

The trace ran transformers + PyTorch on fake tensors (byte-exact against real CPU execution); its peaks are
the oracle here: micro-batch 1 x 1024 tokens, sdpa, LoRA r=16 on q,k,v,o,gate,up,down.
"""

from __future__ import annotations

from typing import Any

import pytest

from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.gpu import GIB
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import FinetuneWorkload, Parallelism, Scenario
from vramdesk.core.training import training_phases
from vramdesk.services.catalog import default_catalog

QWEN, TINY, LLAMA = "Qwen/Qwen2.5-0.5B", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "meta-llama/Llama-3.1-8B"


def train(
    model: str, gpu: str | None = None, parallel: dict[str, Any] | None = None, gpus: int = 1, **work: Any
) -> Estimate:
    w = {"kind": "finetune", "seq_len": 1024, "micro_batch": 1, "lora_rank": 16, "grad_checkpointing": False, **work}
    s = Scenario.model_validate(
        {
            "model": {"id": model},
            "workload": w,
            "parallelism": parallel or {},
            "hardware": {"gpu": gpu, "gpu_count": gpus},
        }
    )
    cat = default_catalog()
    return estimate(s, cat.facts(model), cat.gpu(gpu) if gpu else None)


TRACE = [
    # model, method, precision, optimizer, checkpointing, traced peak GiB, traced peak phase
    (QWEN, "full", "bf16", "adamw", False, 5.82, "loss"),
    (QWEN, "full", "bf16", "adamw", True, 4.60, None),
    (QWEN, "full", "amp-bf16", "adamw", True, 9.20, "optimizer"),
    (QWEN, "lora", "bf16", "adamw", False, 4.63, "loss"),
    (TINY, "full", "bf16", "adamw", False, 10.25, "optimizer"),
    (TINY, "full", "bf16", "adamw", True, 10.25, "optimizer"),
    (TINY, "full", "bf16", "adamw-fused", False, 8.36, "loss"),
    (TINY, "full", "amp-bf16", "adamw", False, 20.49, "optimizer"),
    (TINY, "lora", "bf16", "adamw", False, 5.32, "loss"),
    (LLAMA, "full", "bf16", "adamw", False, 74.79, "optimizer"),
    (LLAMA, "lora", "bf16", "adamw", False, 25.91, "loss"),
    ("Qwen/Qwen3-30B-A3B", "full", "bf16", "adamw", False, 284.35, "optimizer"),
    ("mistralai/Mixtral-8x7B-v0.1", "full", "bf16", "adamw", False, 434.95, "optimizer"),
]


@pytest.mark.parametrize(("model", "method", "prec", "opt", "ckpt", "peak", "phase"), TRACE)
def test_matches_the_traced_peak(
    model: str, method: str, prec: str, opt: str, ckpt: bool, peak: float, phase: str | None
) -> None:
    est = train(model, method=method, precision=prec, optimizer=opt, grad_checkpointing=ckpt)
    assert est.peak_allocated_bytes / GIB == pytest.approx(peak, rel=0.02)
    if phase:
        assert est.peak_phase.startswith(phase)


def test_gradients_are_not_alive_at_the_activation_peak() -> None:
    est = train(QWEN, method="full")
    assert est.peak_phase.startswith("loss")
    assert all(c.category != "gradients" for c in est.components)
    # loss head: 12 x b x s x V at the start of backward
    assert next(c.bytes for c in est.components if c.name == "loss head") == 12 * 1024 * 151936


def test_foreach_adamw_adds_one_state_copy_and_checkpointing_then_does_not_help() -> None:
    plain = train(TINY, method="full")
    ckpt = train(TINY, method="full", grad_checkpointing=True)
    assert plain.peak_phase == ckpt.peak_phase == "optimizer step"
    assert plain.peak_allocated_bytes == ckpt.peak_allocated_bytes
    temp = next(c.bytes for c in plain.components if c.name == "optimizer step temporaries")
    assert temp == 1_100_048_384 * 2  # one bf16 copy of every parameter
    # where activations are the peak, checkpointing lowers it
    assert (
        train(QWEN, method="lora", grad_checkpointing=True).peak_allocated_bytes
        < train(QWEN, method="lora").peak_allocated_bytes
    )


def test_lora_trainable_parameters_and_targets() -> None:
    est = train(LLAMA, method="lora", lora_rank=16)
    # per layer: q (4096+4096) + k (4096+1024) + v (4096+1024) + o (4096+4096) + gate/up (4096+14336) x2 + down
    per_layer = 16 * ((4096 + 4096) * 2 + (4096 + 1024) * 2 + (4096 + 14336) * 3)
    assert est.params.trainable == 32 * per_layer
    qv = train(LLAMA, method="lora", lora_rank=8, lora_targets=("q", "v"))
    assert qv.params.trainable == 32 * 8 * ((4096 + 4096) + (4096 + 1024))
    with pytest.raises(EstimateError, match="wqkv"):
        train(LLAMA, method="lora", lora_targets=("wqkv",))


def test_moe_lora_on_experts_multiplies_by_expert_count() -> None:
    dense_like = train("mistralai/Mixtral-8x7B-v0.1", method="lora", lora_rank=8, lora_targets=("q",))
    experts = train("mistralai/Mixtral-8x7B-v0.1", method="lora", lora_rank=8, lora_targets=("down",))
    assert dense_like.params.trainable == 32 * 8 * (4096 + 4096)
    assert experts.params.trainable == 32 * 8 * 8 * (14336 + 4096)


def test_qlora_base_is_four_bit_and_adapters_fp32() -> None:
    q = train(LLAMA, method="qlora")
    lora = train(LLAMA, method="lora")
    wq = next(c.bytes for c in q.components if c.name == "weights")
    wl = next(c.bytes for c in lora.components if c.name == "weights")
    # 4-bit linear layers + embeddings / lm_head / norms cast to fp32 by prepare_model_for_kbit_training
    linear = 8_030_261_248 - 2 * 128256 * 4096 - 65 * 4096
    assert wq == pytest.approx(linear * 4.127 / 8 + (8_030_261_248 - linear) * 4 + 4 * q.params.trainable, rel=0.01)
    assert wq < 0.5 * wl
    assert any("prepare_model_for_kbit_training" in c.explain for c in q.components)
    with pytest.raises(EstimateError, match="QLoRA"):
        train(LLAMA, method="qlora", precision="fp32")


@pytest.mark.parametrize(("opt", "bytes_per_param"), [("adamw", 4), ("sgd", 2), ("lion", 2)])
def test_optimizer_state_sizes_pure_bf16(opt: str, bytes_per_param: int) -> None:
    est = train(QWEN, method="full", optimizer=opt)
    states = next(c.bytes for p in est.phases for c in p.components if c.name == "optimizer states")
    assert states == 494_032_768 * bytes_per_param


def test_eight_bit_adam_is_smaller_than_adamw() -> None:
    a = train(LLAMA, method="full", optimizer="adamw")
    b = train(LLAMA, method="full", optimizer="adamw-8bit")
    assert b.peak_allocated_bytes < a.peak_allocated_bytes - 20 * GIB


def test_zero_sharding_matches_deepspeed_model_state_formulas() -> None:
    # deepspeed.runtime.zero estimate_zero{2,3}_model_states_mem_needs (no offload), per GPU:
    #   ZeRO-2: 4 x P + 16 x P / N          ZeRO-3: 4 x largest_layer_params + 18 x P / N
    # The ZeRO-2 estimator keeps the 16-bit gradients whole, which is what ZeRO-1 does; ZeRO-2's code clears the
    # gradients outside a rank's partition once their bucket is reduced (stage_1_and_2.py reduce_ipg_grads), so
    # its per-GPU states are the ZeRO paper's 2 x P + (2 + 16) x P / N (the fp32 gradient partition among the 16)
    p, n = 8_030_261_248, 8
    cat = default_catalog()
    largest_layer = max(sum(t.numel for t in cat.facts(LLAMA).tensors if t.layer == i) for i in range(32))

    def model_states(zero: int) -> int:
        est = train(LLAMA, method="full", precision="bf16", parallel={"zero": zero}, gpus=n, grad_checkpointing=True)
        step = next(ph for ph in est.phases if ph.name == "optimizer step")
        keep = {"weights", "gradients", "optimizer states", "gathered layer parameters"}
        return sum(c.bytes for c in step.components if c.name in keep)

    assert model_states(1) == pytest.approx(4 * p + 16 * p / n, rel=1e-6)
    assert model_states(2) == pytest.approx(2 * p + 18 * p / n, rel=1e-6)
    assert model_states(3) == pytest.approx(4 * largest_layer + 18 * p / n, rel=1e-6)
    z3 = train(LLAMA, method="full", precision="bf16", parallel={"zero": 3}, gpus=n)
    assert len(z3.per_gpu) == n
    assert any(c.name == "NCCL buffers" for c in z3.device_overheads)


def test_fsdp_without_deepspeed_shards_torch_amp_states() -> None:
    p, n = 8_030_261_248, 8
    est = train(LLAMA, method="full", precision="amp-bf16", parallel={"fsdp": True}, gpus=n, grad_checkpointing=True)
    comps = {c.name: c.bytes for c in next(ph for ph in est.phases if ph.name == "optimizer step").components}
    assert comps["weights"] == pytest.approx(4 * p / n, rel=1e-6)
    assert comps["optimizer states"] == pytest.approx(8 * p / n, rel=1e-6)


def test_optimizer_offload_moves_states_to_host() -> None:
    off = train(LLAMA, method="full", precision="amp-bf16", parallel={"zero": 2, "offload": "optimizer"}, gpus=2)
    assert off.host_bytes >= 8 * 8_030_261_248 / 2
    assert all(c.name != "optimizer states" or c.bytes == 0 for p in off.phases for c in p.components)


@pytest.mark.parametrize(("zero", "offload"), [(2, "optimizer"), (3, "optimizer"), (3, "params")])
def test_offload_matches_deepspeed_estimators_per_gpu_and_per_machine(zero: int, offload: str) -> None:
    # estimate_zero2/3_model_states_mem_needs with cpu_offload (zero.Init for ZeRO-3): the GPU keeps the 16-bit
    # weights (ZeRO-2: all of them; ZeRO-3: its shard and the gathered layers), no gradients and no states; each
    # machine's CPU holds 16 B per parameter / machines (before DeepSpeed's own 1.5 x buffer factor). Gradients
    # were once counted on the GPU as well, and the CPU figure was one GPU's share, not the machine's.
    p, gpus, nodes = 8_030_261_248, 4, 2
    s = Scenario.model_validate(
        {
            "model": {"id": LLAMA},
            "hardware": {"gpu_count": gpus, "nodes": nodes},
            "parallelism": {"zero": zero, "offload": offload},
            "workload": {"kind": "finetune", "method": "full", "precision": "amp-bf16"},
        }
    )
    est = estimate(s, default_catalog().facts(LLAMA))
    # (ZeRO-Infinity's parameter offload moves the 16-bit shard too: 18 B per parameter / machines)
    assert est.host_bytes == pytest.approx((18 if offload == "params" else 16) * p / nodes, rel=1e-6)
    step = {c.name: c.bytes for c in next(ph for ph in est.phases if ph.name == "optimizer step").components}
    assert step["gradients"] == step["optimizer states"] == 0
    on_gpu = 0 if offload == "params" else 2 * p / (gpus * nodes if zero == 3 else 1)
    assert step["weights"] == pytest.approx(on_gpu, rel=1e-6)


def test_bad_combinations_are_named() -> None:
    with pytest.raises(EstimateError, match="pipeline"):
        train(LLAMA, method="full", parallel={"zero": 2, "pp": 2}, gpus=2)
    with pytest.raises(EstimateError, match="KV heads"):
        train(LLAMA, method="full", parallel={"tp": 3}, gpus=3)
    with pytest.raises(EstimateError, match="FSDP and DeepSpeed ZeRO-2"):
        train(LLAMA, method="full", parallel={"zero": 2, "fsdp": True}, gpus=2)


def test_levels_for_training() -> None:
    est = train(LLAMA, "H100 SXM", method="lora", grad_checkpointing=True)
    assert est.peak_allocated_bytes < est.peak_reserved_bytes < est.device_bytes
    assert est.fit is not None and est.fit.verdict == "fits"


def test_lora_dropout_adds_one_byte_per_adapted_input_like_the_trace() -> None:
    # trace: Qwen 0.5B LoRA r=16, dropout 0.05 -> activations 2154 MiB vs 1916 MiB without (+238 MiB)
    plain = train(QWEN, method="lora")
    drop = train(QWEN, method="lora", lora_dropout=0.05)
    acts = [next(c.bytes for c in e.components if c.name == "activations") for e in (plain, drop)]
    assert (acts[1] - acts[0]) / 2**20 == pytest.approx(238, rel=0.05)
    assert drop.peak_allocated_bytes / GIB == pytest.approx(4.86, rel=0.02)  # traced peak


def test_dora_chunked_loss_and_activation_offload() -> None:
    lora = train(LLAMA, method="lora", seq_len=4096)
    dora = train(LLAMA, method="lora", seq_len=4096, dora=True)
    assert dora.params.trainable > lora.params.trainable and dora.peak_allocated_bytes > lora.peak_allocated_bytes
    chunked = train(LLAMA, method="lora", seq_len=4096, chunked_loss=True)
    full_head, chunked_head = (
        next(c.bytes for p in e.phases for c in p.components if c.name == "loss head") for e in (lora, chunked)
    )
    assert chunked_head < full_head / 3
    off = train(LLAMA, method="lora", seq_len=4096, activation_offload=True)
    assert off.host_bytes > 0 and off.peak_allocated_bytes < lora.peak_allocated_bytes


def test_pipeline_stages_hold_embedding_head_and_in_flight_micro_batches() -> None:
    # long sequences: every stage peaks with its activations (not at ZeRO-1's optimizer step)
    est = train(
        LLAMA, method="full", precision="bf16", parallel={"pp": 4, "zero": 1}, gpus=4, grad_accum=8, seq_len=8192
    )
    assert len(est.per_gpu) == 4
    first, last = est.per_gpu[0], est.per_gpu[-1]

    def part(g: Any, name: str) -> int:
        return sum(c.bytes for c in g.components if c.name == name)

    # stage 0 keeps 4 micro-batches of its layers' activations, the last stage 1, plus the loss head
    assert part(first, "activations") == 4 * part(last, "activations")
    assert part(last, "loss head") > 0 and part(first, "loss head") == 0
    assert est.fit is None or est.fit.required_bytes == max(g.device_bytes for g in est.per_gpu)


def _all(est: Estimate, name: str) -> list[int]:
    return [c.bytes for p in est.phases for c in p.components if c.name == name]


@pytest.mark.parametrize("parallel", [{"zero": 2}, {"zero": 3}, {"fsdp": True}])
def test_sharded_mixed_precision_runs_no_autocast_over_fp32_weights(parallel: dict[str, Any]) -> None:
    # DeepSpeed casts the module to 16 bits and FSDP's mixed precision gathers 16-bit parameters: there are no
    # fp32 weights for autocast to copy, and the residual stream is 16-bit; the activations are those of a
    # pure bf16 run (this once added 13 GiB of "autocast weight cache" to an 8-GPU Llama-3.1-8B plan)
    amp = train(LLAMA, method="full", precision="amp-bf16", parallel=parallel, gpus=8, grad_checkpointing=True)
    pure = train(LLAMA, method="full", precision="bf16", parallel=parallel, gpus=8, grad_checkpointing=True)
    assert _all(amp, "autocast weight cache") == []
    assert _all(amp, "activations") == _all(pure, "activations")
    # one GPU, no sharding: autocast does copy the fp32 weights (traced, see TRACE)
    plain = train(LLAMA, method="full", precision="amp-bf16", grad_checkpointing=True)
    assert max(_all(plain, "autocast weight cache")) > 10 * GIB


def test_pipeline_stages_cache_autocast_copies_of_their_own_weights_only() -> None:
    whole = train(LLAMA, method="full", precision="amp-bf16", grad_checkpointing=True)
    run = training_phases(
        default_catalog().facts(LLAMA),
        FinetuneWorkload(kind="finetune", method="full", precision="amp-bf16", grad_checkpointing=True, seq_len=1024),
        Parallelism(pp=2),
        gpu_count=2,
    )
    cache = [sum(c.bytes for p in st for c in p.components if c.name == "autocast weight cache") for st in run.stages]
    assert sum(cache) == pytest.approx(max(_all(whole, "autocast weight cache")), rel=0.02)
    assert all(0.4 < c / sum(cache) < 0.6 for c in cache)


def test_deepspeed_wraps_other_optimizers_around_its_fp32_partition() -> None:
    # HF Trainer hands DeepSpeed its own optimizer; DeepSpeed keeps the 16-bit module, the fp32 master and
    # gradient partitions, and the optimizer's states replace Adam's two moments (SGD once counted fp32 weights
    # whole on every GPU and came out above AdamW)
    p, n = 8_030_261_248, 8

    def states(opt: str, zero: int) -> int:
        est = train(LLAMA, method="full", precision="amp-bf16", optimizer=opt, parallel={"zero": zero}, gpus=n)
        return max(_all(est, "optimizer states"))

    assert states("sgd", 1) == pytest.approx((8 + 4) * p / n, rel=1e-6)
    assert states("adamw-8bit", 2) == pytest.approx((8 + 2) * p / n, rel=1e-3)
    assert states("sgd", 3) == pytest.approx((4 + 4) * p / n, rel=1e-6)
    for zero in (1, 2, 3):
        assert states("sgd", zero) < states("adamw", zero)
        sgd = train(LLAMA, method="full", precision="amp-bf16", optimizer="sgd", parallel={"zero": zero}, gpus=n)
        assert max(_all(sgd, "weights")) == pytest.approx(2 * p / (n if zero == 3 else 1), rel=1e-6)


def test_fsdp_mixed_precision_runs_fp32_adapters_in_16_bits() -> None:
    # accelerate gives FSDP a mixed-precision policy under AMP, which casts the adapters' units too: no fp32 copies
    # of their inputs; without it (pure bf16 weights, fp32 adapters: the fms-acceleration runs) the copies stay
    def acts(precision: str, adapter_dtype: str) -> int:
        est = train(
            LLAMA,
            method="lora",
            precision=precision,
            adapter_dtype=adapter_dtype,
            parallel={"fsdp": True, "fsdp_version": 2},
            gpus=2,
            grad_checkpointing=False,
        )
        return max(_all(est, "activations"))

    assert acts("amp-bf16", "fp32") == acts("bf16", "base") < acts("bf16", "fp32")


def test_nodes_multiply_the_data_parallel_shards() -> None:
    one_node = train(LLAMA, method="full", precision="bf16", parallel={"zero": 3}, gpus=8)
    s = Scenario.model_validate(
        {
            "model": {"id": LLAMA},
            "hardware": {"gpu_count": 8, "nodes": 4},
            "parallelism": {"zero": 3},
            "workload": {"kind": "finetune", "method": "full", "seq_len": 1024},
        }
    )
    four = estimate(s, default_catalog().facts(LLAMA))
    assert len(four.per_gpu) == 32
    states = [
        next(c.bytes for p in e.phases for c in p.components if c.name == "optimizer states") for e in (one_node, four)
    ]
    assert states[1] == pytest.approx(states[0] / 4, rel=1e-6)
    with pytest.raises(ValueError, match="one machine"):
        Scenario.model_validate(
            {"model": {"id": LLAMA}, "hardware": {"gpu_count": 8, "nodes": 2}, "parallelism": {"tp": 16}}
        )


@pytest.mark.parametrize("ckpt", [True, False])
def test_activation_offload_never_raises_gpu_activations(ckpt: bool) -> None:
    def acts(offload: bool) -> tuple[int, int]:
        e = train(QWEN, method="lora", seq_len=4096, grad_checkpointing=ckpt, activation_offload=offload)
        return next(c.bytes for p in e.phases for c in p.components if c.name == "activations"), e.host_bytes

    (kept, _), (gpu, host) = acts(False), acts(True)
    assert gpu <= kept and host > 0 and gpu + host == kept


def _comp(est: Estimate, phase: str, name: str) -> int:
    return next(c.bytes for p in est.phases if p.name == phase for c in p.components if c.name == name)


def test_modules_to_save_train_full_copies_of_embedding_and_lm_head() -> None:
    plain = train(LLAMA, method="lora", lora_rank=8, lora_targets=("q", "v"))
    saved = train(LLAMA, method="lora", lora_rank=8, lora_targets=("q", "v"), modules_to_save=("wte", "lm_head"))
    matrix = 128256 * 4096  # Llama-3.1-8B: untied embedding and lm_head of the same shape
    assert saved.params.trainable == plain.params.trainable + 2 * matrix
    # the trainable copies sit next to the frozen originals, in the base's bf16
    grow = _comp(saved, "optimizer step", "weights") - _comp(plain, "optimizer step", "weights")
    assert grow == 2 * matrix * 2
    # foreach AdamW in bf16: two states + one temporary per trained parameter
    assert _comp(saved, "optimizer step", "optimizer states") - _comp(plain, "optimizer step", "optimizer states") == (
        2 * 2 * matrix * 2
    )
    tied = train(QWEN, method="lora", lora_rank=8, modules_to_save=("lm_head",))
    assert tied.params.trainable == train(QWEN, method="lora", lora_rank=8).params.trainable + 151936 * 896
    with pytest.raises(ValueError, match="modules_to_save: 'mlp'"):
        train(LLAMA, method="lora", modules_to_save=("mlp",))
    with pytest.raises(ValueError, match="LoRA / QLoRA"):
        train(LLAMA, method="full", modules_to_save=("embed",))


def test_lora_bias_trains_all_or_the_adapted_layers_biases() -> None:
    base = train(QWEN, method="lora", lora_rank=8, lora_targets=("q", "o"))
    every = train(QWEN, method="lora", lora_rank=8, lora_targets=("q", "o"), lora_bias="all")
    adapted = train(QWEN, method="lora", lora_rank=8, lora_targets=("q", "o"), lora_bias="lora_only")
    # Qwen2.5-0.5B: q/k/v carry biases (896 + 128 + 128 per layer, 24 layers), o does not
    assert every.params.trainable - base.params.trainable == 24 * (896 + 128 + 128)
    assert adapted.params.trainable - base.params.trainable == 24 * 896


def test_adapter_dtype_base_halves_adapters_and_drops_the_fp32_input_copies() -> None:
    fp32 = train(LLAMA, method="lora")
    base = train(LLAMA, method="lora", adapter_dtype="base")
    n = fp32.params.trainable
    assert _comp(fp32, "optimizer step", "weights") - _comp(base, "optimizer step", "weights") == 2 * n
    assert _comp(base, "optimizer step", "optimizer states") == 2 * 2 * n
    assert _comp(base, "forward", "activations") < _comp(fp32, "forward", "activations")
    # on a quantised base the adapters stay fp32 whatever peft version: the base weight is not a float tensor
    q_fp32 = train(LLAMA, method="qlora")
    q_base = train(LLAMA, method="qlora", adapter_dtype="base")
    assert q_base.peak_allocated_bytes == q_fp32.peak_allocated_bytes


def test_gptq_base_is_not_cast_to_fp32_but_awq_and_bnb_are() -> None:
    def weights(fmt: str) -> tuple[int, str]:
        s = Scenario.model_validate(
            {"model": {"id": LLAMA}, "weights": fmt, "workload": {"kind": "finetune", "method": "lora"}}
        )
        cat = default_catalog()
        est = estimate(s, cat.facts(LLAMA), None)
        c = next(c for c in est.components if c.name == "weights")
        return c.bytes, c.explain

    gptq, gptq_text = weights("gptq-int4")
    awq, awq_text = weights("awq-int4")
    assert "prepare_model_for_kbit_training" not in gptq_text  # peft skips GPTQ models
    assert "prepare_model_for_kbit_training" in awq_text
    unquantised = 2 * 128256 * 4096 + 65 * 4096
    assert awq - gptq == pytest.approx(2 * unquantised, rel=0.02)


def _gptq_lora(ckpt: bool, **work: Any) -> Estimate:
    s = Scenario.model_validate(
        {
            "model": {"id": LLAMA},
            "weights": "gptq-int4",
            "workload": {
                "kind": "finetune",
                "method": "lora",
                "precision": "fp16",
                "seq_len": 1024,
                "grad_checkpointing": ckpt,
                **work,
            },
        }
    )
    cat = default_catalog()
    return estimate(s, cat.facts(LLAMA), None)


def test_gptq_layers_keep_their_dequantised_weights_for_backward() -> None:
    """auto_gptq's QuantLinear dequantises its weight to fp16 for every matmul and autograd keeps that matrix:
    each layer holds 2 B per quantised parameter until its backward. Without checkpointing that is the whole
    model dequantised; with it, the one recomputed layer's."""
    facts = default_catalog().facts(LLAMA)
    per_layer = sum(t.numel for t in facts.tensors if t.layer == 0 and t.role in ("attn", "mlp"))
    n_layers = facts.arch.n_layers
    ckpt, plain = _gptq_lora(True), _gptq_lora(False)
    acts_plain = _comp(plain, "forward", "activations")
    # the dequantised matrices alone: 2 B x every layer's linear parameters, on top of the per-token activations
    assert acts_plain > 2 * per_layer * n_layers
    recompute = _comp(ckpt, "backward (recompute)", "activations") - _comp(ckpt, "forward", "activations")
    assert 2 * per_layer < recompute < 2 * per_layer + 2 * GIB
    # the unpacking goes through int32 and int8: 5 B per element of the largest matrix (gate/up: 14336 x 4096)
    assert _comp(ckpt, "forward", "GPTQ unpacking") == 5 * 14336 * 4096
    assert _comp(ckpt, "backward (recompute)", "GPTQ unpacking") == 5 * 14336 * 4096
    # 8-bit words unpack through int16
    int8 = _explicit(LLAMA, "gptq-int8", method="lora", precision="fp16", seq_len=1024, grad_checkpointing=True)
    assert _comp(int8, "forward", "GPTQ unpacking") == 6 * 14336 * 4096
    # a bitsandbytes base keeps the 4-bit weight and dequantises again in backward: none of this
    bnb = train(LLAMA, method="qlora", seq_len=1024)
    assert all(c.name != "GPTQ unpacking" for p in bnb.phases for c in p.components)


def _auto(model: str, **work: Any) -> Estimate:
    s = Scenario.model_validate({"model": {"id": model}, "workload": {"kind": "finetune", **work}})
    cat = default_catalog()
    return estimate(s, cat.facts(model), None)


def test_adapters_train_on_a_quantised_checkpoint_as_stored() -> None:
    """weights "auto" on a GPTQ / AWQ checkpoint: LoRA trains on the 4-bit base as it loads (the window used to
    price it as the bf16 model); a full fine-tune of it is refused naming both sides; FP8 and MXFP4 checkpoints,
    which peft has no trainable layers for, load dequantised, with a warning saying so."""
    gptq = "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4"
    lora = _auto(gptq, method="lora")
    w = next(c for c in lora.components if c.name == "weights")
    assert "GPTQ 4-bit" in w.explain and w.bytes < 6 * GIB  # bf16 would be 14.2 GiB
    assert any(c.name == "GPTQ unpacking" for p in lora.phases for c in p.components)
    # "QLoRA" on a GPTQ checkpoint is LoRA on that base: no bitsandbytes format, no bitsandbytes dequantisation
    qlora = _auto(gptq, method="qlora")
    assert qlora.peak_allocated_bytes == lora.peak_allocated_bytes
    assert all(c.name != "dequantised matrix" for p in qlora.phases for c in p.components)
    with pytest.raises(EstimateError, match=r"full fine-tune.*AWQ 4-bit.*weights bf16"):
        _auto("Qwen/Qwen2.5-7B-Instruct-AWQ", method="full")
    with pytest.raises(EstimateError, match=r"full fine-tune.*GPTQ"):
        _explicit(LLAMA, "gptq-int4", method="full")
    assert _explicit("Qwen/Qwen2.5-7B-Instruct-AWQ", "bf16", method="full").peak_allocated_bytes > 50 * GIB
    # AutoAWQ dequantises again in backward and repeats the matrix per sequence: 2 B x (1 + batch) x the widest
    awq = _auto("Qwen/Qwen2.5-7B-Instruct-AWQ", method="lora", micro_batch=2)
    widest = 18944 * 3584  # Qwen2.5-7B's gate / up / down projections
    assert _comp(awq, "backward (end)", "dequantised matrix") == 2 * 3 * widest
    fp8 = _auto("Qwen/Qwen3-8B-FP8", method="lora")
    assert any("dequantised to 16 bits" in x for x in fp8.warnings)
    assert next(c for c in fp8.components if c.name == "weights").bytes > 15 * GIB


def _explicit(model: str, weights: str, **work: Any) -> Estimate:
    s = Scenario.model_validate({"model": {"id": model}, "weights": weights, "workload": {"kind": "finetune", **work}})
    cat = default_catalog()
    return estimate(s, cat.facts(model), None)


def test_the_first_layer_backward_holds_every_later_layers_gradients() -> None:
    """Late in backward the first layer is recomputed while the gradients of all later layers exist: with few
    tokens and many adapters that is the peak (a traced GPTQ LoRA step at 512 tokens peaks there)."""
    est = _gptq_lora(True, seq_len=512, lora_rank=64, lora_targets=("all-linear",))
    assert est.peak_phase == "backward (first layer)"
    full = _comp(est, "backward (end)", "gradients")
    later = _comp(est, "backward (first layer)", "gradients")
    n_layers = default_catalog().facts(LLAMA).arch.n_layers
    assert later == pytest.approx(full * (n_layers - 1) / n_layers, rel=1e-6)
    # with gradient accumulation the gradients are all there from the start: the phase keeps them whole
    accum = _gptq_lora(True, seq_len=512, grad_accum=4)
    assert _comp(accum, "backward (first layer)", "gradients") == _comp(accum, "backward (end)", "gradients")
    # full fine-tuning: the first layer's and the (untied) embedding's gradients are not computed yet
    ft = train(TINY, method="full", grad_checkpointing=True)
    facts = default_catalog().facts(TINY)
    missing = 2 * sum(t.numel for t in facts.tensors if t.layer == 0 or t.role == "embedding")
    assert _comp(ft, "backward (end)", "gradients") - _comp(ft, "backward (first layer)", "gradients") == pytest.approx(
        missing, abs=2
    )


def test_deepspeed_lora_keeps_sixteen_bit_adapters_with_fp32_master_states() -> None:
    est = train(LLAMA, method="lora", precision="fp16", parallel={"zero": 2})
    n = est.params.trainable
    assert _comp(est, "optimizer step", "optimizer states") == 16 * n
    assert _comp(est, "optimizer step", "gradients") == 2 * n
    # ZeRO-1/2 flatten the 16-bit gradient partition into one copy before the fp32 upcast; ZeRO-3 does not
    assert _comp(est, "optimizer step", "optimizer step temporaries") == 2 * n
    three = train(LLAMA, method="lora", precision="fp16", parallel={"zero": 3})
    assert all(c.name != "optimizer step temporaries" or c.bytes == 0 for c in three.phases[-1].components)


def test_fsdp_strategies_shard_what_they_say() -> None:
    p = 8_030_261_248

    def comps(strategy: str, gpus: int = 8, nodes: int = 1) -> dict[str, int]:
        s = Scenario.model_validate(
            {
                "model": {"id": LLAMA},
                "workload": {"kind": "finetune", "method": "full", "precision": "amp-bf16", "seq_len": 1024},
                "parallelism": {"fsdp": True, "fsdp_strategy": strategy},
                "hardware": {"gpu": "H100 SXM", "gpu_count": gpus, "nodes": nodes},
            }
        )
        cat = default_catalog()
        est = estimate(s, cat.facts(LLAMA), cat.gpu("H100 SXM"))
        step = next(ph for ph in est.phases if ph.name == "optimizer step")
        return {c.name: c.bytes for c in step.components}

    full, sgo = comps("full"), comps("shard-grad-op")
    assert full["weights"] == pytest.approx(4 * p / 8, rel=1e-6)
    assert sgo["weights"] == pytest.approx(4 * p, rel=1e-6)  # whole parameters on every GPU, like ZeRO-2
    assert sgo["optimizer states"] == full["optimizer states"]
    # hybrid over 2 nodes x 8: shards inside a node (8), replicas across nodes; full shards over all 16
    hybrid, full16 = comps("hybrid", 8, 2), comps("full", 8, 2)
    assert hybrid["weights"] == pytest.approx(4 * p / 8, rel=1e-6)
    assert full16["weights"] == pytest.approx(4 * p / 16, rel=1e-6)


def test_gradient_accumulation_adds_the_fresh_gradient_of_the_largest_trainable_tensor() -> None:
    one = train(LLAMA, method="lora", lora_rank=8, modules_to_save=("lm_head",))
    acc = train(LLAMA, method="lora", lora_rank=8, modules_to_save=("lm_head",), grad_accum=4)
    assert all(c.name != "fresh gradient" for p in one.phases for c in p.components)
    assert _comp(acc, "backward (end)", "fresh gradient") == 128256 * 4096 * 2


def test_vision_tower_frozen_trained_or_absent() -> None:
    vlm = "Qwen/Qwen3.5-4B"
    vision = 333_514_240  # the vision tower of Qwen3.5-4B (catalog inventory)
    absent = train(vlm, method="lora", vision_tower="absent")
    frozen = train(vlm, method="lora")
    assert _comp(frozen, "optimizer step", "weights") - _comp(absent, "optimizer step", "weights") == 2 * vision
    assert frozen.params.trainable == absent.params.trainable
    lora = train(vlm, method="lora", vision_tower="trained")
    assert lora.params.trainable > frozen.params.trainable  # adapters on the vision tower's linear layers too
    assert any("vision tower trained" in w for w in lora.warnings)
    full = train(vlm, method="full", vision_tower="trained")
    text_only = train(vlm, method="full", vision_tower="absent")
    assert full.params.trainable - text_only.params.trainable == vision
    with pytest.raises(EstimateError, match="no vision tower"):
        train(LLAMA, method="full", vision_tower="trained")


def test_selective_checkpointing_sits_between_none_and_every_layer() -> None:
    def acts(phase: str, **kw: Any) -> int:
        return _comp(train(LLAMA, method="full", seq_len=4096, **kw), phase, "activations")

    none = acts("forward", grad_checkpointing=False)
    every = acts("backward (recompute)", grad_checkpointing=True)
    half = acts("backward (recompute)", grad_checkpointing=True, checkpoint_every=2)
    assert every < half < none
    # 16 layers keep everything, 16 keep their input (2h per token), one is recomputed in backward
    h, tokens = 4096, 4096
    outside = 8 * h * tokens
    layer = (none - outside) / 32
    assert half == pytest.approx(16 * layer + 16 * 2 * h * tokens + layer + outside, rel=1e-3)
    # before any layer is recomputed (forward, loss head) only the kept activations exist
    assert acts("forward", grad_checkpointing=True, checkpoint_every=2) == pytest.approx(half - layer, rel=1e-3)
    assert acts("loss + start of backward", grad_checkpointing=True) == pytest.approx(
        32 * 2 * h * tokens + outside, rel=1e-3
    )


def test_tensor_parallel_splits_attention_and_mlp_activations_but_not_the_norms() -> None:
    one = _comp(train(LLAMA, method="full", seq_len=4096), "forward", "activations")
    est = train(LLAMA, "H100 SXM", method="full", seq_len=4096, parallel={"tp": 2}, gpus=2)
    two = _comp(est, "forward", "activations")
    # per token and layer: 16h of norms and residual stay whole, the rest halves
    h, tokens, layers = 4096, 4096, 32
    assert two == pytest.approx(one / 2 + layers * 16 * h * tokens / 2, rel=0.02)
    assert "norms and residual" in next(c.explain for c in est.components if c.name == "activations")


def test_forloop_and_paged_32bit_adamw() -> None:
    foreach = train(LLAMA, method="full", optimizer="adamw")
    loop = train(LLAMA, method="full", optimizer="adamw-forloop")
    paged = train(LLAMA, method="full", optimizer="paged-adamw-32bit")
    p, largest = 8_030_261_248, 128256 * 4096
    # same states; the for-loop step holds one tensor's temporary instead of a copy of every state
    assert _comp(loop, "optimizer step", "optimizer states") == _comp(foreach, "optimizer step", "optimizer states")
    assert _comp(loop, "optimizer step", "optimizer step temporaries") == largest * 2
    assert _comp(foreach, "optimizer step", "optimizer step temporaries") == p * 2
    # bitsandbytes paged 32-bit: fp32 states whatever the training precision, no step temporary
    assert _comp(paged, "optimizer step", "optimizer states") == 2 * 4 * p
    assert _comp(paged, "optimizer step", "optimizer step temporaries") == 0


def test_the_reserved_level_is_flagged_where_gpu_runs_showed_the_rule_low() -> None:
    """Trained embedding / head copies reserved 18 % more on an H200 than the rule gives; the estimate says so
    there, and only there (nor with expandable segments, whose rule is another). Adafactor's gap is modelled."""

    def flagged(**work: Any) -> bool:
        return any("measured run of this kind reserved" in w for w in train("Qwen/Qwen2.5-1.5B", **work).warnings)

    assert flagged(method="lora", modules_to_save=["lm_head"])
    assert not flagged(method="full", optimizer="adamw")
    assert not flagged(method="lora")
    assert not flagged(method="full", optimizer="adafactor")
    assert not flagged(method="lora", modules_to_save=["lm_head"], expandable_segments=True)


def test_step_temporaries_larger_than_any_cached_block_take_new_segments() -> None:
    """Adafactor steps Qwen2.5-1.5B's tied embedding (233 M parameters) in fp32 copies of 890 MiB, larger than the
    594 MiB log-softmax blocks 1,024 tokens leave cached: the replayed trace reserves them on top of the backward's
    reservation. At 8,192 tokens the cached blocks are larger and nothing is added."""
    embed = 151936 * 1536

    def run(**work: Any) -> Estimate:
        return train("Qwen/Qwen2.5-1.5B", method="full", **work)

    def step_part(est: Estimate) -> str:
        return est.constants["training fragmentation"]

    short = run(optimizer="adafactor")
    backward_peak = max(p.allocated_bytes for p in short.phases if p.name != "optimizer step")
    # bf16 parameters: the gradient's, the parameter's, grad^2 + eps and the update, all fp32
    assert short.peak_reserved_bytes >= backward_peak + 4 * embed * 4
    assert "take new segments, 3.48 GiB more reserved" in step_part(short)
    for other in (
        run(optimizer="adafactor", seq_len=8192),
        run(optimizer="adafactor", expandable_segments=True),
        run(optimizer="adamw"),  # bf16 foreach temporaries of 445 MiB fit the cached blocks
        run(optimizer="adamw-fused"),
        run(optimizer="sgd"),
        train("Qwen/Qwen2.5-1.5B", parallel={"zero": 2}, gpus=2, method="full", optimizer="adafactor"),
    ):
        assert "new segments" not in step_part(other)
        top = max(p.allocated_bytes for p in other.phases)
        assert other.peak_reserved_bytes >= top


def test_step_new_segments_per_optimizer() -> None:
    from vramdesk.core.training_transients import step_new_segments

    sizes, block = [1000, 600, 10], 1000  # elements; a 1,000-byte cached block
    assert step_new_segments("adamw", sizes, 2, block) == (2000 + 1200, 2)
    assert step_new_segments("adamw-torch2.0", sizes, 2, block) == (2 * 3200, 2)
    assert step_new_segments("adamw-forloop", sizes, 2, block) == (2000, 1)
    assert step_new_segments("adamw-fused", sizes, 2, block) == (0, 0)
    assert step_new_segments("adamw-8bit", sizes, 2, block) == (0, 0)
    # Adafactor: fp32 copies of the largest tensor, 4 of them for 16-bit parameters, 2 for fp32 ones
    assert step_new_segments("adafactor", sizes, 2, block) == (4 * 1000 * 4, 1)
    assert step_new_segments("adafactor", sizes, 4, block) == (2 * 1000 * 4, 1)
    assert step_new_segments("adafactor", sizes, 2, 4000) == (0, 0)
    assert step_new_segments("adamw", sizes, 2, 2000) == (0, 0)


def test_start_up_cpu_memory_of_processes_that_each_load_the_whole_model() -> None:
    # DeepSpeed's ZeRO-2 estimator counts 4 B x parameters x GPUs per machine of CPU memory at start-up: every
    # process builds the whole model on the CPU first (here in fp32, AMP's parameter dtype)
    p = 8_030_261_248

    def said(parallel: dict[str, Any], gpus: int) -> list[str]:
        est = train(LLAMA, method="full", precision="amp-bf16", parallel=parallel, gpus=gpus)
        return [w for w in est.warnings if w.startswith("at start-up")]

    (line,) = said({"zero": 2}, 8)
    assert f"about {8 * 4 * p / GIB:.0f} GiB of CPU memory per machine" in line
    assert said({"zero": 3}, 8) == said({"fsdp": True}, 8) == said({}, 1) == []


def test_zero3_holds_the_whole_lm_head_from_the_logits_into_its_backward() -> None:
    # DeepSpeed gathers a module's parameters whole for its forward; Gemma-2-2B's tied 256k x 2304 head (590 M
    # parameters) is far larger than the two decoder layers the gather term counts elsewhere
    est = train("google/gemma-2-2b-it", method="full", parallel={"zero": 3}, gpus=8)
    arch = default_catalog().facts("google/gemma-2-2b-it").arch
    gathered = {p.name: c.bytes for p in est.phases for c in p.components if c.name == "gathered layer parameters"}
    assert gathered["forward"] == gathered["loss + start of backward"] == pytest.approx(2 * arch.vocab * arch.hidden)
    assert gathered["backward (end)"] < gathered["forward"] / 2


def test_qlora_on_16_bit_weights_and_offload_without_a_sharding_framework_are_refused() -> None:
    cat = default_catalog()
    s = Scenario.model_validate(
        {"model": {"id": LLAMA}, "weights": "bf16", "workload": {"kind": "finetune", "method": "qlora"}}
    )
    with pytest.raises(EstimateError, match="QLoRA trains adapters on a quantised base, but the weights are bf16"):
        estimate(s, cat.facts(LLAMA), None)
    nf4 = s.model_copy(update={"weights": "nf4"})
    assert estimate(nf4, cat.facts(LLAMA), None).peak_allocated_bytes > 0
    # plain PyTorch moves nothing to the CPU: optimizer offload is DeepSpeed's (any stage) or FSDP's, parameter
    # offload ZeRO-3's or FSDP's
    with pytest.raises(EstimateError, match="add ZeRO-2"):
        train(LLAMA, method="full", parallel={"offload": "optimizer"})
    with pytest.raises(EstimateError, match="use --zero 3 or --fsdp, not ZeRO-2"):
        train(LLAMA, method="full", parallel={"zero": 2, "offload": "params"})
    assert train(LLAMA, method="full", parallel={"zero": 1, "offload": "optimizer"}).host_bytes > 0
    assert train(LLAMA, method="full", parallel={"zero": 3, "offload": "params"}).host_bytes > 0


def test_offload_says_deepspeeds_buffer_margin_it_leaves_out() -> None:
    est = train(LLAMA, method="full", precision="amp-bf16", parallel={"zero": 3, "offload": "optimizer"}, gpus=8)
    (line,) = [w for w in est.warnings if w.startswith("CPU memory for the offload")]
    machine = est.host_bytes / GIB
    assert f"{machine:,.1f} GiB per machine (8 GPU shares)" in line and f"({1.5 * machine:,.1f} GiB)" in line
    assert not [w for w in train(LLAMA, method="full", parallel={"zero": 3}, gpus=8).warnings if "offload" in w]
