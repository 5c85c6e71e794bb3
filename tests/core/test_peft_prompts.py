"""Prompt tuning, p-tuning and prefix tuning (core/peft/prompts.py): their encoders' parameters as peft counts
them, the virtual tokens every layer and the loss then run over, and prefix tuning's refusal of checkpointing.
The trace tests (tests/services/test_trace_peft.py) run the real peft code on tiny configs."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.cli import main
from vramdesk.core.facts import ModelFacts, model_facts
from vramdesk.core.peft.methods import method_params
from vramdesk.core.peft.prompts import prefix_keys, virtual_tokens
from vramdesk.core.scenario import FinetuneWorkload, Parallelism
from vramdesk.core.training import training_phases
from vramdesk.core.training_plan import TrainingError, check_plan
from vramdesk.services.catalog import default_catalog
from vramdesk.storage.scenarios import load_scenario

CAT = default_catalog()
_TINY = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 4096}
LLAMA = {**_TINY, "model_type": "llama", "intermediate_size": 688, "num_key_value_heads": 4}
QWEN3 = {**_TINY, "model_type": "qwen3", "intermediate_size": 768, "num_key_value_heads": 4, "head_dim": 64}

#: get_peft_model(model, <Config>(task_type="CAUSAL_LM", num_virtual_tokens=20, ...)).get_nb_trainable_parameters(),
#: peft 0.21.2 with transformers 5.24 on the tiny configs above (prefix tuning's keys are head_dim x KV heads wide)
TRAINABLE_PEFT: list[tuple[dict[str, Any], dict[str, Any], int]] = [
    (LLAMA, {"method": "prompt-tuning"}, 5_120),
    (LLAMA, {"method": "p-tuning"}, 202_496),
    (LLAMA, {"method": "prefix-tuning"}, 20_480),
    (LLAMA, {"method": "prefix-tuning", "prefix_projection": True}, 151_168),
    (QWEN3, {"method": "prompt-tuning"}, 5_120),
    (QWEN3, {"method": "p-tuning"}, 202_496),
    (QWEN3, {"method": "prefix-tuning"}, 40_960),
    (QWEN3, {"method": "prefix-tuning", "prefix_projection": True}, 597_248),
]


@pytest.mark.parametrize(
    ("config", "work", "trainable"),
    TRAINABLE_PEFT,
    ids=[f"{c['model_type']}-{w['method']}{'-projection' if len(w) > 1 else ''}" for c, w, _ in TRAINABLE_PEFT],
)
def test_prompt_learning_trains_what_peft_counts(config: dict[str, Any], work: dict[str, Any], trainable: int) -> None:
    facts = model_facts(config, "tiny")
    p = method_params(facts, FinetuneWorkload(**work, grad_checkpointing=False), 2, 2)
    assert p.trainable == trainable
    # the encoders stay fp32 whatever the adapter dtype, and feed the first layer: their gradients come last
    assert p.param_bytes == 4
    assert p.params_from_first_layer() == trainable


def _phase(facts: ModelFacts, work: FinetuneWorkload, name: str, component: str) -> int:
    run = training_phases(facts, work, Parallelism(), 1)
    phase = next(p for p in run.phases if p.name == name)
    return next(c.bytes for c in phase.components if c.name == component)


def test_prompt_tuning_runs_the_model_over_the_virtual_tokens() -> None:
    facts = CAT.facts("meta-llama/Llama-3.1-8B")
    prompt = FinetuneWorkload(method="prompt-tuning", num_virtual_tokens=100, seq_len=1948)
    assert virtual_tokens(prompt) == 100 and prefix_keys(prompt) == 0
    # a frozen base with nothing wrapped keeps what a 2048-token sequence keeps: LoRA's frozen layers without
    # adapters, the loss over 2048 positions
    longer = FinetuneWorkload(method="prompt-tuning", num_virtual_tokens=1, seq_len=2047)
    for name, component in (("loss + start of backward", "loss head"), ("backward (recompute)", "activations")):
        assert _phase(facts, prompt, name, component) == _phase(facts, longer, name, component)
    assert _phase(facts, prompt, "loss + start of backward", "loss head") == 12 * 2048 * 128_256


def test_prefix_tuning_lengthens_every_layers_keys() -> None:
    facts = model_facts(LLAMA, "tiny")
    work = FinetuneWorkload(method="prefix-tuning", seq_len=512, grad_checkpointing=False)
    assert prefix_keys(work) == 20 and virtual_tokens(work) == 0
    p = method_params(facts, work, 4, 2)
    # repeated k and v over 532 keys in place of 4 B x kv x 512, and the 16-bit mask padded to 536 keys
    per_layer = 4 * 256 * 532 - 4 * 128 * 512 + 2 * 512 * 536
    assert p.saved.per_token[1] * 512 == per_layer
    # the first layer's input norm keeps no fp32 copy (its input needs no gradient)
    assert p.saved.per_token[0] * 512 == per_layer - 4 * 256 * 512
    loss = _phase(facts, work, "loss + start of backward", "loss head")
    assert loss == 12 * 512 * 4096  # the sequence itself is not longer


def test_prefix_tuning_with_checkpointing_is_refused() -> None:
    with pytest.raises(TrainingError) as info:
        check_plan(CAT.facts("meta-llama/Llama-3.1-8B"), FinetuneWorkload(method="prefix-tuning"), Parallelism())
    assert str(info.value) == (
        "prefix tuning does not work with gradient checkpointing (peft refuses it: its prefix is a cache the "
        "recompute would extend again): turn checkpointing off (--no-grad-checkpointing)"
    )


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("deepseek-ai/DeepSeek-V3", "has MLA (latent attention) layers, whose cache has another shape"),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", "has linear-attention layers, whose state is no such cache"),
    ],
)
def test_prefix_tuning_needs_standard_attention(model: str, words: str) -> None:
    work = FinetuneWorkload(method="prefix-tuning", grad_checkpointing=False)
    with pytest.raises(TrainingError) as info:
        check_plan(CAT.facts(model), work, Parallelism())
    assert str(info.value) == (
        f"prefix tuning hands every layer the keys and values of standard attention; {model} {words}"
    )


def test_p_tuning_under_adafactor_factors_its_matrices_only() -> None:
    facts = model_facts(LLAMA, "tiny")
    work = FinetuneWorkload(method="p-tuning", optimizer="adafactor")
    states = _phase(facts, work, "optimizer step", "optimizer states")
    # the embedding and the three (256, 256) matrices factored (rows + columns), the three biases in full, fp32
    assert states == 4 * ((20 + 256) + 3 * (256 + 256) + 3 * 256)


def test_the_command_line_and_a_saved_file_carry_the_virtual_tokens(tmp_path: Path) -> None:
    path = tmp_path / "prefix.json"
    args = ["--mode", "finetune", "--method", "prefix-tuning", "--no-grad-checkpointing", "--num-virtual-tokens", "8"]
    args += ["--prefix-projection", "--save", str(path), "--json"]
    out = io.StringIO()
    assert main(["estimate", "Qwen/Qwen3-4B", *args], out=out) == 0
    first = json.loads(out.getvalue())
    # 8 x 1024 + (1024 x 1024 + 1024) + (36 x 2 x 1024 x 1024 + 73,728): the KV width of Qwen3-4B's 8 x 128 heads
    assert first["params"]["trainable"] == 76_628_992
    saved = load_scenario(path).workload
    assert isinstance(saved, FinetuneWorkload)
    assert (saved.method, saved.num_virtual_tokens, saved.prefix_projection) == ("prefix-tuning", 8, True)
    again = io.StringIO()
    assert main(["estimate", str(path), "--json"], out=again) == 0
    assert json.loads(again.getvalue())["peak_allocated_bytes"] == first["peak_allocated_bytes"]
