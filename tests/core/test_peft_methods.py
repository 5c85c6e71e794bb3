"""PEFT's methods other than LoRA (core/peft/): what each trains, counted as peft counts it, what its
layers keep, and the plans refused for it. The trace tests (tests/services/test_trace_peft.py) run the real peft
code on tiny configs; the counts here are peft's own on the catalog's configs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.estimate import estimate
from vramdesk.core.facts import ModelFacts, model_facts
from vramdesk.core.peft.common import frozen_base
from vramdesk.core.peft.methods import check_method, method_params
from vramdesk.core.scenario import FinetuneWorkload, Parallelism, Scenario
from vramdesk.core.training import training_phases
from vramdesk.core.training_plan import TrainingError, check_plan
from vramdesk.services.catalog import default_catalog
from vramdesk.storage.scenarios import load_scenario, save_scenario

CAT = default_catalog()
IA3 = FinetuneWorkload(method="ia3")

#: get_peft_model(model, IA3Config(task_type="CAUSAL_LM")) then print_trainable_parameters(), peft 0.21.2 with
#: transformers 5.24 (the catalog's configs built on the meta device; the tiny ones are tests/services' configs)
IA3_TRAINABLE_PEFT = {
    "meta-llama/Llama-3.1-8B": 524_288,
    "Qwen/Qwen3-0.6B": 172_032,
    "Qwen/Qwen3-8B": 626_688,
    # transformers 5 stores the experts as one (E, out, in) parameter: IA3 scales k and v only, as peft does
    "mistralai/Mixtral-8x7B-v0.1": 65_536,
}
_TINY = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 4096}
TINY_IA3_TRAINABLE_PEFT: list[tuple[dict[str, Any], int]] = [
    ({**_TINY, "model_type": "llama", "intermediate_size": 688, "num_key_value_heads": 4}, 3_776),
    ({**_TINY, "model_type": "qwen3", "intermediate_size": 768, "num_key_value_heads": 4, "head_dim": 64}, 6_144),
    ({**_TINY, "model_type": "gpt_neox", "intermediate_size": 1024, "rotary_pct": 0.25}, 7_168),
]


def _finetune(model: str, **work: Any) -> Scenario:
    return Scenario.model_validate(
        {"model": {"id": model}, "workload": {"kind": "finetune", **work}, "hardware": {"gpu": "H100 SXM"}}
    )


@pytest.mark.parametrize("model", sorted(IA3_TRAINABLE_PEFT))
def test_ia3_trains_what_peft_counts(model: str) -> None:
    est = estimate(_finetune(model, method="ia3"), CAT.facts(model), CAT.gpu("H100 SXM"))
    assert est.params.trainable == IA3_TRAINABLE_PEFT[model]


@pytest.mark.parametrize(("config", "trainable"), TINY_IA3_TRAINABLE_PEFT, ids=["llama", "qwen3", "gpt_neox"])
def test_ia3_on_tiny_configs(config: dict[str, Any], trainable: int) -> None:
    assert method_params(model_facts(config, "tiny"), IA3, 4, 2).trainable == trainable


def test_ia3_scales_attention_outputs_and_the_down_projections_input() -> None:
    facts = CAT.facts("meta-llama/Llama-3.1-8B")
    p = method_params(facts, IA3, 4, 2)
    first = {t.name.rsplit(".", 2)[-2]: s for t, s in zip(p.adapted, p.shapes, strict=True) if t.layer == 0}
    # ia3_l is (out, 1) on k_proj / v_proj and (1, in) on down_proj (peft/tuners/ia3/layer.py update_layer)
    assert first == {"k_proj": (1024, 1), "v_proj": (1024, 1), "down_proj": (1, 14336)}
    assert p.largest == 14336
    assert p.params_from_first_layer() == 1024 + 1024 + 14336
    # saved per token in layer 0: the bf16 outputs of k and v (2 B x 1024 each) and the fp32 input of down
    assert p.saved.per_token[0] == 2 * 1024 + 2 * 1024 + 4 * 14336
    # its backward: the fp32 cast of the incoming gradient and two fp32 products over the widest scaled tensor
    assert p.saved.backward_per_token == 12 * 14336


def test_ia3_over_a_frozen_base_costs_less_than_lora() -> None:
    facts = CAT.facts("meta-llama/Llama-3.1-8B")
    par = Parallelism()
    ia3 = training_phases(facts, FinetuneWorkload(method="ia3", seq_len=4096), par, 1)
    lora = training_phases(facts, FinetuneWorkload(method="lora", seq_len=4096), par, 1)
    assert frozen_base("ia3") and not frozen_base("full")
    assert ia3.trainable == 524_288 < lora.trainable

    def part(run: Any, phase: str, name: str) -> Any:
        return next(c for c in next(p for p in run.phases if p.name == phase).components if c.name == name)

    # the same bf16 base; fp32 vectors, their fp32 gradients and two AdamW states: 16 B per parameter
    ia3_weights = part(ia3, "optimizer step", "weights")
    assert ia3_weights.bytes - part(lora, "optimizer step", "weights").bytes == 4 * (524_288 - lora.trainable)
    assert "524,288 IA3 scaling parameters (96 scaled modules, 32 of them at their input)" in ia3_weights.explain
    assert part(ia3, "optimizer step", "gradients").bytes == 4 * 524_288
    assert part(ia3, "optimizer step", "optimizer states").bytes == 8 * 524_288
    # the recomputed layer keeps IA3's scaled tensors, not LoRA's fp32 input copies, and holds the short-lived
    # tensors of one scaling's backward (12 B per element of the down projection's input)
    acts = part(ia3, "backward (recompute)", "activations")
    lora_acts = part(lora, "backward (recompute)", "activations")
    per_token_lora_only = 4 * (6 * 4096 + 14336) - (2 * 1024 + 2 * 1024 + 4 * 14336)
    assert acts.bytes - lora_acts.bytes == 4096 * (12 * 14336 - per_token_lora_only)
    assert "IA3: each scaled attention output kept in 2 B, each feed-forward input in 4 B" in acts.explain


def test_base_dtype_vectors_keep_16_bit_inputs() -> None:
    facts = CAT.facts("meta-llama/Llama-3.1-8B")
    p = method_params(facts, IA3, 2, 2)
    assert p.saved.per_token[0] == 2 * (1024 + 1024 + 14336)
    # no cast of the gradient: two 16-bit products
    assert p.saved.backward_per_token == 4 * 14336


# ------------------------------------------------------------------------------------------ refusals


def _refused(facts: ModelFacts, base: str = "auto", **work: Any) -> str:
    with pytest.raises(TrainingError) as info:
        check_plan(facts, FinetuneWorkload(**work), Parallelism(), base)
    return str(info.value)


def test_a_model_type_without_ia3_defaults_is_named() -> None:
    message = _refused(CAT.facts("allenai/OLMo-2-1124-7B"), method="ia3")
    assert message.startswith(
        "IA3 has no default target modules for allenai/OLMo-2-1124-7B (model type olmo2); peft knows them for: bloom, "
    )
    assert "\n" not in message


def test_ia3_over_a_quantised_base_is_refused() -> None:
    message = _refused(CAT.facts("meta-llama/Llama-3.1-8B"), "nf4", method="ia3")
    assert message.startswith("IA3 is estimated over a 16-bit or fp32 base, but the weights are ")
    assert message.endswith("train LoRA / QLoRA on this quantised base")


def test_loras_own_options_are_refused_on_ia3() -> None:
    facts = CAT.facts("meta-llama/Llama-3.1-8B")
    assert _refused(facts, method="ia3", dora=True, lora_dropout=0.1) == (
        "--method ia3 does not take lora_dropout, dora: those are LoRA's options (a trained vision tower: LoRA or a "
        "full fine-tune)"
    )
    # LoRA's rank and targets keep their defaults and are not read
    check_plan(facts, FinetuneWorkload(method="ia3", lora_rank=64, lora_targets=("q",)), Parallelism())


def test_check_method_passes_a_model_with_defaults() -> None:
    check_method(CAT.facts("Qwen/Qwen3-8B"), IA3)


# ------------------------------------------------------------------------------------------ files and the CLI


def test_a_saved_ia3_scenario_reads_back(tmp_path: Path) -> None:
    scenario = _finetune("Qwen/Qwen3-8B", method="ia3", adapter_dtype="base", modules_to_save=["lm_head"])
    path = tmp_path / "ia3.json"
    save_scenario(scenario, path)
    assert json.loads(path.read_text(encoding="utf-8"))["workload"]["method"] == "ia3"
    back = load_scenario(path)
    assert back == scenario
    assert isinstance(back.workload, FinetuneWorkload) and back.workload.method == "ia3"
