"""VeRA (core/peft/vera.py): the two vectors per adapted module peft trains, its shared frozen projections, what
its adapter path keeps for backward, and the model types refused. The trace test (tests/services/test_trace_peft.py)
runs the real peft code on tiny configs."""

from __future__ import annotations

import pytest

from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.peft.methods import method_params
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import FinetuneWorkload, Parallelism, Scenario
from vramdesk.core.training_plan import TrainingError, check_plan
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()

#: get_peft_model(model, VeraConfig(task_type="CAUSAL_LM")) on the catalog's configs built on the meta device (peft
#: 0.21.2, transformers 5.24): get_nb_trainable_parameters()[0], and the elements of the shared vera_A + vera_B
VERA_PEFT = {
    "meta-llama/Llama-3.1-8B": (180_224, 2_097_152),
    "Qwen/Qwen3-8B": (202_752, 2_097_152),
    "google/gemma-2-2b-it": (93_184, 1_114_112),
    "mistralai/Mixtral-8x7B-v0.1": (180_224, 2_097_152),
    "tiiuae/falcon-7b": (157_696, 2_359_296),  # the fused query_key_value
    "bigscience/bloom-560m": (79_872, 1_048_576),
    "EleutherAI/pythia-1b": (102_400, 2_097_152),
}


@pytest.mark.parametrize("model_id", sorted(VERA_PEFT))
def test_trainable_vectors_and_projections_are_peft_s(model_id: str) -> None:
    facts = CAT.facts(model_id)
    method = method_params(facts, FinetuneWorkload(method="vera"), 4, 2)
    trainable, projection = VERA_PEFT[model_id]
    assert method.trainable == trainable
    assert method.buffer_bytes == 4 * projection
    assert method.params_from_first_layer() * facts.arch.n_layers == trainable


def _est(model_id: str, **work: object) -> Estimate:
    scenario = Scenario.model_validate(
        {"model": {"id": model_id}, "workload": {"kind": "finetune", "method": "vera", **work}}
    )
    return estimate(scenario, CAT.facts(model_id), None)


def test_the_rank_grows_the_kept_activations_and_the_vectors() -> None:
    low, high = _est("meta-llama/Llama-3.1-8B", vera_rank=64), _est("meta-llama/Llama-3.1-8B", vera_rank=1024)
    # lambda_d grows with the rank (2 modules x 32 layers x 960 more), lambda_b does not
    assert high.params.trainable - low.params.trainable == 2 * 32 * 960
    assert high.peak_allocated_bytes > low.peak_allocated_bytes


def test_vera_on_a_type_peft_has_no_defaults_for_is_refused() -> None:
    facts = CAT.facts("allenai/OLMo-2-1124-7B")
    with pytest.raises(TrainingError, match=r"VERA has no default target modules for .* \(model type olmo2\)"):
        check_plan(facts, FinetuneWorkload(method="vera"), Parallelism(), "auto")


def test_a_tiny_config_counts_peft_s_vectors() -> None:
    # 4 layers x (q: 64 + 256, v: 64 + 128) on a GQA config: lambda_d of rank 64, lambda_b of each output width
    config = {
        "model_type": "llama",
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "intermediate_size": 688,
        "vocab_size": 4096,
    }
    method = method_params(model_facts(config, "tiny"), FinetuneWorkload(method="vera", vera_rank=64), 4, 2)
    assert method.trainable == 4 * ((64 + 256) + (64 + 128))
    assert method.buffer_bytes == 4 * 64 * (256 + 256)
