"""Qwen v1 (remote-code ``QWenLMHeadModel``) read from its own config.json, its 16-bit loss head under DeepSpeed,
and the step terms of the 2023 stack: PyTorch 2.0's foreach AdamW and DeepSpeed ZeRO-1/2's gradient flattening."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from qwen1config import QWEN7B

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.core.weight_format import parse_weight_format
from vramdesk.services.catalog import default_catalog

LLAMA = "meta-llama/Llama-3.1-8B"
GIB = 2**30


def _train(
    config_or_id: dict[str, Any] | str, parallel: dict[str, Any] | None = None, gpus: int = 1, **work: Any
) -> Estimate:
    cat = default_catalog()
    if isinstance(config_or_id, str):
        facts, model_id = cat.facts(config_or_id), config_or_id
    else:
        model_id = "Qwen/Qwen-7B"
        facts = model_facts(config_or_id, model_id)
    w = {"kind": "finetune", "seq_len": 1024, "micro_batch": 1, **work}
    s = Scenario.model_validate(
        {
            "model": {"id": model_id},
            "workload": w,
            "parallelism": parallel or {},
            "hardware": {"gpu": "A100 80GB SXM", "gpu_count": gpus},
        }
    )
    return estimate(s, facts, cat.gpu("A100 80GB SXM"))


def _comp(est: Estimate, phase: str, name: str) -> int:
    return sum(c.bytes for p in est.phases if p.name == phase for c in p.components if c.name == name)


def test_qwen_v1_config_gives_the_published_total_and_its_own_tensor_names() -> None:
    facts = model_facts(QWEN7B, "Qwen/Qwen-7B")
    # the model page (safetensors) says 7.72B; without halving intermediate_size it would be 11.3B
    assert facts.counts.checkpoint == 7_721_324_544
    assert facts.arch.family == "qwen" and not facts.arch.warnings
    names = {t.name for t in facts.tensors}
    assert {"transformer.wte.weight", "lm_head.weight", "transformer.ln_f.weight"} <= names
    layer0 = {n.removeprefix("transformer.h.0.") for n in names if n.startswith("transformer.h.0.")}
    assert layer0 == {
        "attn.c_attn.weight",
        "attn.c_attn.bias",
        "attn.c_proj.weight",
        "mlp.w1.weight",
        "mlp.w2.weight",
        "mlp.c_proj.weight",
        "ln_1.weight",
        "ln_2.weight",
    }
    shapes = {t.name: t.shape for t in facts.tensors}
    assert shapes["transformer.h.0.mlp.w1.weight"] == (11008, 4096)
    assert shapes["transformer.h.0.attn.c_attn.weight"] == (3 * 4096, 4096)
    assert facts.arch.dtype == "bf16" and facts.arch.max_position == 8192
    assert facts.arch.logits_fp32 is False


def test_qwen_v1_dtype_flags_and_bad_fields() -> None:
    fp16 = dict(QWEN7B, fp16=True)
    assert normalize(fp16).dtype == "fp16"
    biased = dict(QWEN7B, no_bias=False)
    extra = model_facts(biased, "q").counts.checkpoint - model_facts(QWEN7B, "q").counts.checkpoint
    # every linear layer but c_attn (biased anyway) gains a bias: c_proj h, w1 and w2 I/2 each, mlp.c_proj h
    assert extra == 32 * (4096 + 2 * 11008 + 4096)
    odd = copy.deepcopy(QWEN7B)
    odd["intermediate_size"] = 22017
    with pytest.raises(ConfigError, match="intermediate_size"):
        normalize(odd)
    missing = copy.deepcopy(QWEN7B)
    del missing["num_attention_heads"]
    with pytest.raises(ConfigError, match="num_attention_heads"):
        normalize(missing)


def test_lora_on_qwen_v1_adapts_the_fused_projection_once() -> None:
    named = _train(QWEN7B, method="lora", lora_rank=64, lora_targets=["c_attn", "c_proj", "w1", "w2"])
    every = _train(QWEN7B, method="lora", lora_rank=64, lora_targets=["all-linear"])
    # c_attn r(h + 3h), attn.c_proj r(2h), w1/w2 r(h + I/2) each, mlp.c_proj r(I/2 + h): Qwen's finetune.py targets
    h, i = 4096, 11008
    per_layer = 64 * (4 * h + 2 * h + 3 * (h + i))
    assert named.params.trainable == every.params.trainable == 32 * per_layer
    with pytest.raises(EstimateError, match="module names in this model: c_attn, c_proj, w1, w2"):
        _train(QWEN7B, method="lora", lora_targets=["q_proj"])


def test_the_loss_head_is_sixteen_bit_only_for_own_loss_code_without_autocast() -> None:
    b, s, vocab = 1, 4096, 151936
    trainer = _train(QWEN7B, method="lora", seq_len=s, precision="bf16")
    deepspeed = _train(QWEN7B, method="lora", seq_len=s, precision="fp16", parallel={"zero": 2})
    # HF Trainer autocasts the cross-entropy to fp32 whatever the model code does
    assert _comp(trainer, "loss + start of backward", "loss head") == 12 * b * s * vocab
    # Qwen v1's loss on fp16 logits under DeepSpeed (no autocast): log-softmax, its gradient, the input gradient
    assert _comp(deepspeed, "loss + start of backward", "loss head") == 6 * b * s * vocab
    assert "16 bits" in next(c.explain for p in deepspeed.phases for c in p.components if c.name == "loss head")
    # transformers' own classes upcast the logits in their loss: fp32 under DeepSpeed too
    llama = _train(LLAMA, method="lora", seq_len=s, precision="fp16", parallel={"zero": 2})
    assert _comp(llama, "loss + start of backward", "loss head") == 12 * b * s * 128256


def test_pytorch_2_0_foreach_adamw_holds_two_intermediates() -> None:
    today = _train(LLAMA, method="full", optimizer="adamw", grad_checkpointing=True)
    legacy = _train(LLAMA, method="full", optimizer="adamw-torch2.0", grad_checkpointing=True)
    one = _comp(today, "optimizer step", "optimizer step temporaries")
    assert one > 0
    assert _comp(legacy, "optimizer step", "optimizer step temporaries") == 2 * one
    assert _comp(legacy, "optimizer step", "optimizer states") == _comp(today, "optimizer step", "optimizer states")
    assert legacy.peak_phase == "optimizer step"
    assert legacy.peak_allocated_bytes - today.peak_allocated_bytes == one


def test_deepspeed_zero2_flattens_the_gradient_partition_and_accumulates_in_a_second_buffer() -> None:
    n = default_catalog().facts(LLAMA).counts.checkpoint
    one = _train(LLAMA, method="full", precision="bf16", parallel={"zero": 2}, grad_checkpointing=True)
    # model states as DeepSpeed's estimator counts them (2 + 2 + 16 B), and the step's flattened 16-bit copy
    assert _comp(one, "optimizer step", "optimizer states") == 16 * n
    assert _comp(one, "optimizer step", "optimizer step temporaries") == 2 * n
    eight = _train(LLAMA, method="full", precision="bf16", parallel={"zero": 2}, grad_checkpointing=True, grad_accum=8)
    assert _comp(eight, "backward (end)", "fresh gradient") == 2 * n
    assert _comp(one, "backward (end)", "fresh gradient") == 0
    # the flattened copy is of this GPU's partition
    four = _train(LLAMA, method="full", precision="bf16", parallel={"zero": 2}, gpus=4, grad_checkpointing=True)
    assert _comp(four, "optimizer step", "optimizer step temporaries") == pytest.approx(2 * n / 4, abs=1)
    three = _train(LLAMA, method="full", precision="bf16", parallel={"zero": 3}, grad_checkpointing=True)
    assert _comp(three, "optimizer step", "optimizer step temporaries") == 0
    assert one.peak_allocated_bytes > 20 * n


def test_fsdp_gathers_a_quantised_base_as_stored_and_keeps_the_root_unit_whole() -> None:
    cat = default_catalog()
    facts = cat.facts(LLAMA)
    fsdp = {"fsdp": True, "fsdp_strategy": "full"}
    qlora = _train(LLAMA, method="qlora", parallel=fsdp, gpus=2, grad_checkpointing=True)
    lora = _train(LLAMA, method="lora", parallel=fsdp, gpus=2, grad_checkpointing=True)
    gathered_q = _comp(qlora, "forward", "gathered layer parameters")
    gathered_l = _comp(lora, "forward", "gathered layer parameters")
    # one decoder layer of Llama-3.1-8B in bf16 (x2: current + prefetched) plus half of the root unit
    bf16 = facts.weights(parse_weight_format("bf16"), frozenset({"text"}))
    layer = max(bf16.per_layer.values())
    root = bf16.embedding + bf16.head + bf16.other
    assert gathered_l == pytest.approx(2 * layer + root / 2, rel=1e-6)
    # the 4-bit base is gathered in its packed storage: about a quarter of the bf16 layers
    assert gathered_q < 2 * layer / 3 + root / 2
    assert "root unit" in next(
        c.explain for p in lora.phases for c in p.components if c.name == "gathered layer parameters"
    )
    # no fp32 cast of the unquantised parameters for sharded QLoRA (TRL skips prepare_model_for_kbit_training)
    assert "prepare_model_for_kbit_training" not in next(
        c.explain for p in qlora.phases for c in p.components if c.name == "weights"
    )
    one_gpu = _train(LLAMA, method="qlora", grad_checkpointing=True)
    assert "prepare_model_for_kbit_training" in next(
        c.explain for p in one_gpu.phases for c in p.components if c.name == "weights"
    )


def test_qlora_checkpoints_are_fp32_after_the_kbit_cast() -> None:
    s = 2048
    qlora = _train(LLAMA, method="qlora", seq_len=s, grad_checkpointing=True)
    lora = _train(LLAMA, method="lora", seq_len=s, grad_checkpointing=True)
    q = _comp(qlora, "loss + start of backward", "activations")
    l_ = _comp(lora, "loss + start of backward", "activations")
    # 32 layer inputs + embedding / final-norm outputs: 4 B per element instead of 2
    assert q == pytest.approx(2 * l_, rel=1e-6)
    assert l_ == pytest.approx((32 * 2 + 8) * 4096 * s, rel=1e-6)


def test_fsdp_lora_with_reentrant_checkpointing_keeps_every_layer_input_gradient() -> None:
    s = 4096
    fsdp = {"fsdp": True, "fsdp_strategy": "full"}
    lora = _train(LLAMA, method="lora", seq_len=s, micro_batch=2, parallel=fsdp, gpus=2, grad_checkpointing=True)
    retained = _comp(lora, "backward (recompute)", "retained input gradients")
    # 31 of Llama-3.1-8B's 32 layers x 2 B x hidden 4096 x 8192 tokens, on top of the checkpointed inputs
    assert retained == 31 * 2 * 4096 * 2 * s
    assert _comp(lora, "loss + start of backward", "retained input gradients") == 0
    # a full fine-tune's decoder units hold trainable parameters: no such hook, nothing retained
    full = _train(LLAMA, method="full", seq_len=s, micro_batch=2, parallel=fsdp, gpus=2, grad_checkpointing=True)
    assert _comp(full, "backward (recompute)", "retained input gradients") == 0
    # and one GPU without FSDP keeps none either
    alone = _train(LLAMA, method="lora", seq_len=s, micro_batch=2, grad_checkpointing=True)
    assert _comp(alone, "backward (recompute)", "retained input gradients") == 0


def test_fsdp2_lora_keeps_frozen_layers_frozen() -> None:
    """FSDP2's fully_shard leaves frozen parameters frozen (a CPU check with two gloo ranks matched plain LoRA byte
    for byte): frozen linears keep no inputs and no input gradient is retained, unlike FSDP1's flat parameters.
    Model states and gathers are the same for both versions. (With adapters on every linear layer the two rules
    save the same tensors; on q and v only, FSDP1's frozen linears keep inputs LoRA would not.)"""
    s = 4096
    qv = {"lora_targets": ["q", "v"]}

    def run(version: int, method: str = "lora") -> Any:
        par = {"fsdp": True, "fsdp_version": version}
        extra = qv if method == "lora" else {}
        return _train(
            LLAMA, method=method, seq_len=s, micro_batch=2, parallel=par, gpus=2, grad_checkpointing=True, **extra
        )

    v1, v2 = run(1), run(2)
    assert _comp(v2, "backward (recompute)", "retained input gradients") == 0
    assert _comp(v2, "backward (recompute)", "activations") < _comp(v1, "backward (recompute)", "activations")
    # per GPU, FSDP2 LoRA saves exactly what LoRA on one GPU saves
    alone = _train(LLAMA, method="lora", seq_len=s, micro_batch=2, grad_checkpointing=True, **qv)
    assert _comp(v2, "backward (recompute)", "activations") == _comp(alone, "backward (recompute)", "activations")
    for name in ("weights", "optimizer states", "gathered layer parameters"):
        assert _comp(v2, "optimizer step" if name != "gathered layer parameters" else "forward", name) == _comp(
            v1, "optimizer step" if name != "gathered layer parameters" else "forward", name
        )
    # a full fine-tune trains every parameter: the two versions agree
    assert run(1, "full").peak_allocated_bytes == run(2, "full").peak_allocated_bytes
    assert "FSDP2 full" in next(c.explain for c in v2.components if c.name == "weights")
