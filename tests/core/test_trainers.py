"""Trainer profiles (core/trainers.py) and transformers version profiles (engines/transformers.py): each one's effect
on a real estimate, worked out by hand from what the profile's source does, its refusals, and saved scenarios."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import FinetuneWorkload, Parallelism, Scenario
from vramdesk.core.trainers import PROFILES
from vramdesk.core.training import training_phases
from vramdesk.services.catalog import default_catalog
from vramdesk.storage.scenarios import dump_scenario, parse_scenario

QWEN = "Qwen/Qwen2.5-0.5B"
CAT = default_catalog()


def train(model: str = QWEN, parallel: dict[str, Any] | None = None, gpus: int = 1, **work: Any) -> Estimate:
    w = {"kind": "finetune", "seq_len": 1024, "micro_batch": 1, **work}
    s = Scenario.model_validate(
        {
            "model": {"id": model},
            "workload": w,
            "hardware": {"gpu": "A100 80GB SXM", "gpu_count": gpus},
            "parallelism": parallel or {},
        }
    )
    return estimate(s, CAT.facts(model), CAT.gpu("A100 80GB SXM"))


def part(est: Estimate, phase: str, name: str) -> int:
    ph = next(p for p in est.phases if p.name == phase)
    return sum(c.bytes for c in ph.components if c.name == name)


def test_every_profile_names_its_sources() -> None:
    for name, prof in PROFILES.items():
        assert prof.name == name
        assert prof.sources and all("/" in s for s in prof.sources)


def test_defaults_fill_what_the_plan_does_not_set_and_the_user_still_wins() -> None:
    tune = FinetuneWorkload.model_validate({"trainer": "torchtune"})
    assert tune.chunked_loss and tune.grad_checkpointing and tune.adapter_dtype == "base"
    # a default the user changes stays changed; a fixed behaviour does not
    mine = FinetuneWorkload.model_validate({"trainer": "torchtune", "chunked_loss": False, "adapter_dtype": "fp32"})
    assert not mine.chunked_loss and mine.adapter_dtype == "base"
    assert FinetuneWorkload.model_validate({"trainer": "unsloth"}).activation_offload
    assert FinetuneWorkload.model_validate({"trainer": "hf"}) == FinetuneWorkload()


def test_torchtune_loss_head_is_the_chunked_rule() -> None:
    est = train(trainer="torchtune")
    v = CAT.facts(QWEN).arch.vocab
    # CEWithChunkedOutputLoss: 16-bit logits of the sequence + one chunk in 8 of fp32 log-softmax and gradients
    assert part(est, "loss + start of backward", "loss head") == 2 * 1024 * v + 12 * 1024 * v // 8
    hf = train()
    assert part(hf, "loss + start of backward", "loss head") == 12 * 1024 * v


def test_unsloth_keeps_the_16bit_logits_and_moves_layer_inputs_to_cpu() -> None:
    v = CAT.facts(QWEN).arch.vocab
    est = train(trainer="unsloth")
    # Fast_CrossEntropyLoss saves the 16-bit logits and writes their gradient into them: 2 B per logit
    assert part(est, "loss + start of backward", "loss head") == 2 * 1024 * v
    # the offloaded checkpointer: the checkpointed inputs are host memory, not GPU memory
    assert est.host_bytes > 0
    on_gpu = train(trainer="unsloth", activation_offload=False)
    assert part(est, "backward (recompute)", "activations") < part(on_gpu, "backward (recompute)", "activations")


def test_litgpt_chunked_head_and_shared_adapter_inputs() -> None:
    facts = CAT.facts(QWEN)
    arch = facts.arch
    v, h = arch.vocab, arch.hidden
    est = train(trainer="litgpt", lora_targets=["q", "v"])
    # chunked_cross_entropy keeps each 128-token chunk's bf16 log-softmax: 2 B per logit in all
    assert part(est, "loss + start of backward", "loss head") == 2 * 1024 * v
    # no checkpointing in finetune/lora.py, adapters in bf16
    assert est.peak_phase != "backward (recompute)"
    hf16 = train(lora_targets=["q", "v"], adapter_dtype="base", grad_checkpointing=False)
    # q and v read the same input: LitGPT keeps it once per layer, peft's bf16 adapters once each (2 B x h)
    diff = part(hf16, "loss + start of backward", "activations") - part(est, "loss + start of backward", "activations")
    assert diff == 2 * h * 1024 * arch.n_layers


def _fsdp_plan(trainer: str) -> Estimate:
    return train(
        "meta-llama/Llama-3.1-8B",
        parallel={"fsdp": True, "fsdp_version": 1},
        gpus=2,
        trainer=trainer,
        method="qlora",
        grad_checkpointing=True,
        lora_rank=64,
        lora_dropout=0.1,
    )


def test_fsdp_qlora_has_no_retained_input_gradients_and_a_loading_cache() -> None:
    hf, fq = _fsdp_plan("hf"), _fsdp_plan("fsdp-qlora")
    assert part(hf, "backward (first layer)", "retained input gradients") > 0
    assert part(fq, "backward (first layer)", "retained input gradients") == 0
    facts = CAT.facts("meta-llama/Llama-3.1-8B")
    root = sum(t.numel for t in facts.tensors if t.part == "text" and t.layer is None)
    # sync_module_states: the root unit (embeddings, lm_head, final norm in 16 bits) and its flat copy stay cached
    work = FinetuneWorkload.model_validate(
        {"trainer": "fsdp-qlora", "method": "qlora", "grad_checkpointing": True, "seq_len": 1024}
    )
    run = training_phases(facts, work, Parallelism(fsdp=True, fsdp_version=1), 2)
    assert run.loading_cache == 2 * 2 * root
    assert fq.peak_reserved_bytes - fq.peak_allocated_bytes >= run.loading_cache
    plain = work.model_copy(update={"trainer": "hf"})
    assert training_phases(facts, plain, Parallelism(fsdp=True), 2).loading_cache == 0


@pytest.mark.parametrize(
    ("work", "parallel", "gpus", "words"),
    [
        ({"trainer": "fsdp-qlora", "method": "full"}, {"fsdp": True}, 2, "trains lora or qlora, not full"),
        ({"trainer": "fsdp-qlora"}, {}, 1, "add --fsdp"),
        ({"trainer": "fsdp-qlora"}, {"fsdp": True, "fsdp_version": 2}, 2, "FSDP1"),
        ({"trainer": "litgpt"}, {"zero": 2}, 2, "does not run DeepSpeed ZeRO"),
        ({"trainer": "litgpt", "method": "qlora"}, {}, 2, "on one GPU only"),
    ],
)
def test_what_a_trainer_cannot_run_is_refused_in_one_line(
    work: dict[str, Any], parallel: dict[str, Any], gpus: int, words: str
) -> None:
    with pytest.raises(EstimateError) as err:
        train(parallel=parallel, gpus=gpus, **work)
    message = str(err.value)
    assert words in message and "\n" not in message


def infer(version: str | None = None, **work: Any) -> Estimate:
    w: dict[str, Any] = {"kind": "inference", "engine": "transformers", "input_len": 128, "output_len": 512, **work}
    if version is not None:
        w["transformers_version"] = version
    s = Scenario.model_validate({"model": {"id": QWEN}, "workload": w, "hardware": {"gpu": "A100 80GB SXM"}})
    return estimate(s, CAT.facts(QWEN), CAT.gpu("A100 80GB SXM"))


def test_old_generate_holds_two_caches_in_decode() -> None:
    new, old = infer("5.x"), infer("<=4.35")
    kv = part(new, "decode", "KV cache")
    assert part(old, "decode", "KV cache") == kv
    previous = part(old, "decode", "previous KV tuples")
    # the previous step's tuples: one token fewer than the cache at the end of the step
    arch = CAT.facts(QWEN).arch
    per_token = 2 * arch.n_layers * arch.layers[0].n_kv_heads * arch.layers[0].head_dim * 2
    assert previous == kv - per_token
    assert part(infer("4.36-4.44"), "decode", "previous KV tuples") == 0


def test_releases_before_4_45_keep_rotary_tables_per_layer_and_the_prompt_logits() -> None:
    arch = CAT.facts(QWEN).arch
    tables = arch.n_layers * 2 * arch.max_position * arch.layers[0].head_dim * 2
    for version in ("<=4.35", "4.36-4.44"):
        est = infer(version)
        assert part(est, "load", "rotary tables") == tables
        assert part(est, "decode", "rotary tables") == tables
        assert part(est, "prefill", "logits") == 128 * arch.vocab * (2 + 4)
    assert part(infer(">=4.45"), "load", "rotary tables") == 0
    assert infer(">=4.45").peak_allocated_bytes == infer().peak_allocated_bytes
    # the old option still asks for the prompt's logits in the newest release
    assert part(infer(full_prompt_logits=True), "prefill", "logits") == 128 * arch.vocab * (2 + 4)
    assert tables / infer("4.36-4.44").peak_allocated_bytes > 0.12


def test_saved_scenarios_round_trip_and_old_ones_still_load() -> None:
    s = Scenario.model_validate(
        {"model": {"id": QWEN}, "workload": {"kind": "finetune", "trainer": "litgpt"}, "hardware": {"gpu": "A100"}}
    )
    back = parse_scenario(json.loads(dump_scenario(s)))
    assert back == s and back.workload.trainer == "litgpt"  # type: ignore[union-attr]
    inf = Scenario.model_validate(
        {"model": {"id": QWEN}, "workload": {"kind": "inference", "transformers_version": "<=4.35"}}
    )
    assert parse_scenario(json.loads(dump_scenario(inf))) == inf
    # files written before these options: the defaults (HF Trainer, the newest transformers)
    old = json.loads(dump_scenario(s))
    del old["workload"]["trainer"]
    assert parse_scenario(old).workload.trainer == "hf"  # type: ignore[union-attr]
    old_inf = json.loads(dump_scenario(inf))
    del old_inf["workload"]["transformers_version"]
    old_inf["workload"]["full_prompt_logits"] = True
    loaded = parse_scenario(old_inf).workload
    assert loaded.transformers_version == "5.x" and loaded.full_prompt_logits  # type: ignore[union-attr]
