"""LN tuning (core/peft/ln_tuning.py): the trainable copies of the norms peft targets by default, counted as peft
counts them, kept in the base dtype, what a trained norm keeps for its weight's gradient, and the model types
refused. The trace test (tests/services/test_trace_peft.py) runs the real peft code on tiny configs."""

from __future__ import annotations

from typing import Any

import pytest

from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.peft.common import frozen_base
from vramdesk.core.peft.methods import method_params
from vramdesk.core.scenario import FinetuneWorkload, Parallelism, Scenario
from vramdesk.core.training import training_phases
from vramdesk.core.training_plan import TrainingError, check_plan
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
LN = FinetuneWorkload(method="ln-tuning")

#: get_peft_model(model, LNTuningConfig(task_type="CAUSAL_LM")).get_nb_trainable_parameters()[0], peft 0.21.2
#: with transformers 5.24, the catalog's configs built on the meta device
LN_TRAINABLE_PEFT = {
    "meta-llama/Llama-3.1-8B": 266_240,  # 32 x 2 pre-norms + the final norm, 4096 wide
    "Qwen/Qwen3-8B": 147_456,  # post_attention_layernorm only: 36 x 4096
    "google/gemma-2-2b-it": 241_920,  # 26 x 4 sandwich norms + the final norm, 2304 wide
    "bigscience/bloom-560m": 100_352,  # LayerNorm weights and biases; not word_embeddings_layernorm
    "microsoft/phi-2": 168_960,
    "tiiuae/falcon-7b": 299_904,
}
_TINY = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 4096}
#: the same, on tiny configs (their other fields transformers' defaults)
TINY_LN_TRAINABLE_PEFT: list[tuple[dict[str, Any], int]] = [
    ({**_TINY, "model_type": "llama", "intermediate_size": 688, "num_key_value_heads": 4}, 2_304),
    ({**_TINY, "model_type": "qwen3", "intermediate_size": 768, "num_key_value_heads": 4, "head_dim": 64}, 1_024),
    (
        {
            **_TINY,
            "model_type": "gemma2",
            "intermediate_size": 768,
            "num_key_value_heads": 4,
            "head_dim": 32,
            "sliding_window": 4096,
        },
        4_352,
    ),
    ({"model_type": "gpt2", "n_embd": 256, "n_layer": 4, "n_head": 8, "vocab_size": 4096, "n_positions": 1024}, 4_608),
]


@pytest.mark.parametrize("model", sorted(LN_TRAINABLE_PEFT))
def test_ln_tuning_trains_what_peft_counts(model: str) -> None:
    scenario = Scenario.model_validate(
        {
            "model": {"id": model},
            "workload": {"kind": "finetune", "method": "ln-tuning"},
            "hardware": {"gpu": "H100 SXM"},
        }
    )
    assert estimate(scenario, CAT.facts(model), CAT.gpu("H100 SXM")).params.trainable == LN_TRAINABLE_PEFT[model]


@pytest.mark.parametrize(
    ("config", "trainable"), TINY_LN_TRAINABLE_PEFT, ids=[c["model_type"] for c, _ in TINY_LN_TRAINABLE_PEFT]
)
def test_ln_tuning_on_tiny_configs(config: dict[str, Any], trainable: int) -> None:
    assert method_params(model_facts(config, "tiny"), LN, 4, 2).trainable == trainable


def _part(run: Any, phase: str, name: str) -> Any:
    return next(c for c in next(p for p in run.phases if p.name == phase).components if c.name == name)


def test_the_copies_stay_in_the_base_dtype_beside_the_frozen_norms() -> None:
    facts = CAT.facts("meta-llama/Llama-3.1-8B")
    ln = training_phases(facts, FinetuneWorkload(method="ln-tuning"), Parallelism(), 1)
    ia3 = training_phases(facts, FinetuneWorkload(method="ia3"), Parallelism(), 1)
    assert frozen_base("ln-tuning") and ln.trainable == 266_240
    # the same bf16 base; the copies in bf16 (the adapter dtype's fp32 is not applied), their bf16 gradients and
    # two bf16 AdamW states, where IA3's vectors are fp32
    weights = _part(ln, "optimizer step", "weights")
    assert weights.bytes - _part(ia3, "optimizer step", "weights").bytes == 2 * 266_240 - 4 * 524_288
    assert (
        "266,240 parameters in trainable copies of 65 norm modules (input_layernorm, post_attention_layernorm, "
        "norm), beside the frozen originals, in the base dtype"
    ) in weights.explain
    assert "in the base dtype (16-bit)" in weights.explain
    assert _part(ln, "optimizer step", "gradients").bytes == 2 * 266_240
    assert _part(ln, "optimizer step", "optimizer states").bytes == 4 * 266_240


def test_a_trained_rms_norm_keeps_its_normalised_input() -> None:
    facts = CAT.facts("meta-llama/Llama-3.1-8B")
    p = method_params(facts, LN, 4, 2, 2)
    # weight * x.to(bf16): the two pre-norms of a layer keep their 16-bit normalised inputs; the final norm's
    # lies outside the layers
    assert p.saved.per_token[0] == 2 * 2 * 4096 and p.saved.outside_per_token == 2 * 4096
    assert p.params_from_first_layer() == 2 * 4096
    assert p.largest == 4096 and p.base_dtype
    # in an AMP run the stream, and so the kept copy, is fp32
    assert method_params(facts, LN, 4, 2, 4).saved.per_token[0] == 4 * 2 * 4096
    run = training_phases(facts, FinetuneWorkload(method="ln-tuning", seq_len=4096), Parallelism(), 1)
    acts = _part(run, "loss + start of backward", "activations")
    assert "LN tuning: each trained RMSNorm keeps its normalised input in 2 B per element" in acts.explain
    # the embedding output and the final norm (8 B x h at bf16), and the final norm's trained copy's 2 B
    assert "the embedding output and the final norm: 10 B x h x 4096 tokens" in acts.explain


def test_gemma_scales_in_fp32_and_layer_norms_keep_nothing_more() -> None:
    gemma = method_params(CAT.facts("google/gemma-2-2b-it"), LN, 4, 2, 2)
    # (1 + weight.float()) x the fp32 normalised input: 4 B for each of the four sandwich norms
    assert gemma.saved.per_token[0] == 4 * 4 * 2304
    bloom = method_params(CAT.facts("bigscience/bloom-560m"), LN, 4, 2, 2)
    assert not any(bloom.saved.per_token.values()) and bloom.saved.outside_per_token == 0
    assert bloom.saved.text.startswith("LN tuning: a trained LayerNorm keeps nothing more than a frozen one")


def test_a_model_type_without_ln_tuning_defaults_is_named() -> None:
    with pytest.raises(TrainingError) as info:
        check_plan(CAT.facts("allenai/OLMo-2-1124-7B"), LN, Parallelism())
    message = str(info.value)
    assert message.startswith(
        "LN_TUNING has no default target modules for allenai/OLMo-2-1124-7B (model type olmo2); peft knows them "
        "for: bloom, falcon, gemma, gemma2, gemma3_text, gpt2, gptj, llama, mistral, phi, qwen2, qwen3"
    )
    assert "\n" not in message


def test_ln_tuning_over_a_quantised_base_and_with_loras_options_is_refused() -> None:
    facts = CAT.facts("meta-llama/Llama-3.1-8B")
    with pytest.raises(TrainingError) as info:
        check_plan(facts, LN, Parallelism(), "nf4")
    assert str(info.value).startswith("LN_TUNING is estimated over a 16-bit or fp32 base, but the weights are ")
    with pytest.raises(TrainingError) as info:
        check_plan(facts, FinetuneWorkload(method="ln-tuning", dora=True), Parallelism())
    assert str(info.value).startswith("--method ln-tuning does not take dora: those are LoRA's options")
