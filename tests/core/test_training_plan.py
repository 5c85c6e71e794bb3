"""check_plan: every rule that refuses a fine-tuning plan, its message, and which one a plan breaking two of them
gets (the order the estimate has always refused them in)."""

from __future__ import annotations

from typing import Any

import pytest

from vramdesk.core import training
from vramdesk.core.dtype_names import FormatError
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.facts import ModelFacts, model_facts
from vramdesk.core.scenario import FinetuneWorkload, Parallelism, Scenario
from vramdesk.core.training import training_phases
from vramdesk.core.training_plan import TrainingError, check_plan
from vramdesk.services.catalog import default_catalog

LLAMA, MLA = "meta-llama/Llama-3.1-8B", "deepseek-ai/DeepSeek-V3"

#: a model whose rows (1,000 and 2,000 elements) are no whole number of Q8_0's 32-element blocks
ODD_ROWS = {
    "model_type": "llama",
    "hidden_size": 1000,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "intermediate_size": 2000,
    "vocab_size": 1000,
}


@pytest.fixture(scope="module")
def llama() -> ModelFacts:
    return default_catalog().facts(LLAMA)


@pytest.fixture(scope="module")
def odd() -> ModelFacts:
    return model_facts(ODD_ROWS, "tiny/odd-rows")


def refused(facts: ModelFacts, base: str = "auto", par: dict[str, Any] | None = None, **work: Any) -> str:
    with pytest.raises((TrainingError, FormatError)) as info:
        check_plan(facts, FinetuneWorkload(**work), Parallelism(**(par or {})), base)
    return str(info.value)


# ------------------------------------------------------------------------------------------ each rule


def test_qlora_needs_a_quantised_base(llama: ModelFacts) -> None:
    assert refused(llama, "bf16", method="qlora").startswith(
        "QLoRA trains adapters on a quantised base, but the weights are bf16: that is LoRA (--method lora)"
    )


def test_a_full_fine_tune_needs_16_or_32_bit_weights(llama: ModelFacts) -> None:
    message = refused(llama, "awq-int4", method="full")
    assert message.startswith("a full fine-tune trains every weight in 16 or 32 bits, but the weights are AWQ")
    assert message.endswith("or plan the full fine-tune of the dequantised model with weights bf16")


def test_a_full_fine_tune_on_an_unknown_weight_name_says_so(llama: ModelFacts) -> None:
    assert refused(llama, "bogus", method="full").startswith("unknown weight format 'bogus'")


def test_qlora_computes_in_16_bits(llama: ModelFacts) -> None:
    assert refused(llama, method="qlora", precision="fp32") == (
        "QLoRA keeps the base in 4 bits and computes in 16 bits: --precision fp32 does not apply"
    )


def test_a_vision_tower_to_train_must_exist(llama: ModelFacts) -> None:
    assert refused(llama, vision_tower="trained") == f"{LLAMA} has no vision tower to train (vision_tower=trained)"


def test_an_unknown_method_is_named(llama: ModelFacts) -> None:
    work = FinetuneWorkload().model_copy(update={"method": "adapter-x"})  # (past the Literal, as a built object may be)
    with pytest.raises(TrainingError, match=r"^unknown method adapter-x$"):
        check_plan(llama, work, Parallelism())


def test_lora_targets_must_exist(llama: ModelFacts) -> None:
    assert refused(llama, method="lora", lora_targets=("q", "wqkv")).startswith(
        f"LoRA target(s) wqkv not found in {LLAMA} (llama); known short names: q, k, v, o, gate, up, down"
    )


def test_a_lora_base_name_must_parse(llama: ModelFacts) -> None:
    assert refused(llama, "bogus", method="lora").startswith("unknown weight format 'bogus'")


def test_a_lora_base_must_be_storable_in_its_format(odd: ModelFacts) -> None:
    # (the format's own error, as when the weights are priced: the estimate turns both kinds into EstimateError)
    with pytest.raises(FormatError, match=r"^a row of 1000 elements cannot be stored as Q8_0 \(block 32\)$"):
        check_plan(odd, FinetuneWorkload(method="lora"), Parallelism(), "q8_0")


def test_tensor_parallel_divides_the_kv_heads(llama: ModelFacts) -> None:
    assert refused(llama, par={"tp": 3}) == f"tensor parallel 3 does not divide the 8 KV heads of {LLAMA}"


def test_fsdp_and_zero_do_not_go_together(llama: ModelFacts) -> None:
    assert refused(llama, par={"fsdp": True, "zero": 2}).startswith(
        "FSDP and DeepSpeed ZeRO-2 both shard the model and cannot run together; choose one (--fsdp or --zero)"
    )


def test_optimizer_offload_needs_zero_or_fsdp(llama: ModelFacts) -> None:
    assert refused(llama, par={"offload": "optimizer"}).startswith(
        "CPU offload of the optimizer is a DeepSpeed ZeRO (or FSDP) feature: add ZeRO-2 (--zero 2; one GPU is enough)"
    )


def test_parameter_offload_needs_zero_3_or_fsdp(llama: ModelFacts) -> None:
    start = "CPU offload of the parameters needs DeepSpeed ZeRO-3 (offload_param) or FSDP: use --zero 3 or --fsdp"
    assert refused(llama, par={"offload": "params"}) == start
    assert refused(llama, par={"offload": "params", "zero": 2}) == start + ", not ZeRO-2"


def test_pipeline_parallel_takes_zero_1_at_most(llama: ModelFacts) -> None:
    assert refused(llama, par={"pp": 2, "zero": 2}).startswith(
        "ZeRO-2 shards gradients across data-parallel ranks, which DeepSpeed does not combine with pipeline parallel"
    )


# ------------------------------------------------------------------------------------------ plans that run


@pytest.mark.parametrize(
    ("base", "work", "par"),
    [
        ("auto", {}, {}),
        ("auto", {"method": "qlora"}, {"zero": 3}),
        ("nf4", {"method": "qlora", "lora_targets": ("q", "v")}, {"fsdp": True, "offload": "params"}),
        ("gptq-int4", {"method": "lora"}, {"tp": 2}),
        ("bf16", {"method": "full", "precision": "amp-bf16"}, {"zero": 3, "offload": "params"}),
        ("fp32", {"method": "full", "precision": "fp32"}, {"zero": 2, "offload": "optimizer"}),
        ("auto", {"method": "full"}, {"pp": 2, "zero": 1}),
    ],
)
def test_a_plan_that_can_run_passes(llama: ModelFacts, base: str, work: dict[str, Any], par: dict[str, Any]) -> None:
    assert check_plan(llama, FinetuneWorkload(**work), Parallelism(**par), base) is None


def test_mla_attention_has_no_kv_heads_to_divide() -> None:
    check_plan(default_catalog().facts(MLA), FinetuneWorkload(), Parallelism(tp=3))


# ------------------------------------------------------------------------------------------ which rule wins


def test_the_rule_that_fired_first_still_wins(llama: ModelFacts, odd: ModelFacts) -> None:
    # the base against the method, before the precision
    assert refused(llama, "bf16", method="qlora", precision="fp32").startswith("QLoRA trains adapters")
    # the method against the model, before the parallelism
    assert refused(llama, par={"fsdp": True, "zero": 2}, lora_targets=("wqkv",)).startswith("LoRA target(s) wqkv")
    # a base its format cannot store, before the parallelism (it was priced before those rules ran)
    assert refused(odd, "q8_0", par={"fsdp": True, "zero": 1}).startswith("a row of 1000 elements")
    # the parallelism rules in their order
    assert refused(llama, par={"tp": 3, "fsdp": True, "zero": 2}).startswith("tensor parallel 3")
    assert refused(llama, par={"fsdp": True, "zero": 2, "pp": 2}).startswith("FSDP and DeepSpeed ZeRO-2")
    assert refused(llama, par={"offload": "params", "zero": 2, "pp": 2}).startswith("CPU offload of the parameters")


def test_training_phases_refuses_before_working_anything_out(
    llama: ModelFacts, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_memory(*_: object) -> None:
        raise AssertionError("what_trains ran for a plan that cannot run")

    monkeypatch.setattr(training, "what_trains", no_memory)
    with pytest.raises(TrainingError, match=r"^FSDP and DeepSpeed ZeRO-2"):
        training_phases(llama, FinetuneWorkload(), Parallelism(fsdp=True, zero=2), gpu_count=2)


def test_the_estimate_refuses_with_the_same_message(llama: ModelFacts) -> None:
    scenario = Scenario.model_validate(
        {"model": {"id": LLAMA}, "weights": "bf16", "workload": {"kind": "finetune", "method": "qlora"}}
    )
    with pytest.raises(EstimateError, match=r"^QLoRA trains adapters on a quantised base, but the weights are bf16"):
        estimate(scenario, llama)
