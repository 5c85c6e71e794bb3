"""Block-wise full fine-tuning, LISA (LMFlow) and BAdam (badam 1.4): the phases' bytes against figures worked out by
hand from each package's code (cited per test), the refusals, the Chinese of the new texts, and a saved scenario
with the new options read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.messages import MESSAGES, Message, Text, fields
from vramdesk.core.optimizers import blockwise
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog
from vramdesk.storage.scenarios import parse_scenario, save_scenario
from vramdesk.ui.core_text import localize, message_table

CAT = default_catalog()
L8, Q15 = "meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-1.5B-Instruct"
#: Llama-3.1-8B: one decoder layer (q, o 4096 x 4096; k, v 1024 x 4096; gate, up, down 4096 x 14336; two norms),
#: the embedding (= the untied lm_head) and the whole model
LAYER = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 4096 * 14336 + 2 * 4096
EMBED = 128256 * 4096
ALL = 32 * LAYER + 2 * EMBED + 4096


def _scenario(model: str = L8, par: dict[str, object] | None = None, gpus: int = 1, **work: object) -> Scenario:
    data = {"kind": "finetune", "method": "full", "seq_len": 2048, **work}
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "workload": data,
            "hardware": {"gpu": "H100-80GB", "gpu_count": gpus},
            "parallelism": par or {},
        }
    )


def _phases(scenario: Scenario) -> dict[str, dict[str, int]]:
    est = estimate(scenario, CAT.facts(scenario.model.id))
    out: dict[str, dict[str, int]] = {}
    for p in est.phases:
        for c in p.components:
            out.setdefault(p.name, {})[c.name] = out.get(p.name, {}).get(c.name, 0) + c.bytes
    return out


def test_the_layer_count_is_what_the_catalog_holds() -> None:
    assert ALL == 8030261248
    layers = blockwise.decoder_layers(CAT.facts(L8).tensors)
    assert len(layers) == 32 and {sum(t.numel for t in ts) for ts in layers.values()} == {LAYER}


def test_badam_trains_one_block_with_fp32_copies_and_states() -> None:
    step = _phases(_scenario(block_training="badam"))["optimizer step"]
    # block_optim.py BlockOptimizer.infer_param_groups: one block per "layers.N." prefix, the embedding and lm_head
    # in none (include_embedding / include_lm_head False); _switch_trainable_params_single_gpu: the other
    # parameters requires_grad False, param_hp = param.clone().float() for the block's: the bf16 model + 4 B a
    # block parameter
    assert step["weights"] == 2 * ALL + 4 * LAYER
    # switch_trainable_params: base_optimizer.state = defaultdict(...) at each switch: AdamW's exp_avg and
    # exp_avg_sq (zeros_like the fp32 copies) of one block
    assert step["optimizer states"] == 2 * 4 * LAYER
    # the block's bf16 gradients; _grad_to_hp makes them fp32 (hp_param.grad = lp_param.grad.float(), then
    # lp_param.grad = None: 2 B more a parameter), then the foreach AdamW over the fp32 copies: one state-sized copy
    assert step["gradients"] == 2 * LAYER
    assert step["optimizer step temporaries"] == 4 * LAYER + 2 * LAYER
    # a block of four layers (a block_prefix_list of four "layers.N." prefixes): four times the block's terms
    four = _phases(_scenario(block_training="badam", active_layers=4))["optimizer step"]
    assert four["optimizer states"] == 4 * step["optimizer states"]
    assert four["weights"] - 2 * ALL == 4 * 4 * LAYER


def test_badam_over_fp32_parameters_copies_them_again() -> None:
    # BlockOptimizer warns on fp32 weights ("additional memory usage"): clone().float() still copies them, while
    # .float() of an fp32 gradient is the gradient itself (no more bytes in _grad_to_hp)
    step = _phases(_scenario(block_training="badam", precision="amp-bf16"))["optimizer step"]
    assert step["weights"] == 4 * ALL + 4 * LAYER
    assert step["gradients"] == 4 * LAYER
    assert step["optimizer step temporaries"] == 4 * LAYER


def test_lisa_keeps_the_states_of_every_layer_ever_active() -> None:
    plain = _phases(_scenario())["optimizer step"]
    lisa = _phases(_scenario(block_training="lisa"))["optimizer step"]
    # lisa_trainer.py DynamicLayerActivationCallback.switch_active_layers: requires_grad False on model.model.layers,
    # True again on lisa_activated_layers of them (args.py: 2); embed_tokens, the final norm and lm_head are never
    # frozen. The weights stay whole
    trained = 2 * LAYER + 2 * EMBED + 4096
    assert lisa["weights"] == plain["weights"] == 2 * ALL
    assert lisa["gradients"] == 2 * trained
    # HF Trainer builds the optimizer once over every parameter (create_optimizer: all require grad then) and
    # LMFlow never resets it; torch.optim.AdamW's _init_group creates a parameter's states at its first gradient
    # and keeps them: after enough intervals every layer's, the whole model's (pure bf16: 2 x 2 B)
    assert lisa["optimizer states"] == plain["optimizer states"] == 2 * 2 * ALL
    # the foreach step over the parameters with a gradient only
    assert lisa["optimizer step temporaries"] == 2 * trained
    one = _phases(_scenario(block_training="lisa", active_layers=1))["optimizer step"]
    assert lisa["gradients"] - one["gradients"] == 2 * LAYER


def test_a_tied_embedding_gets_its_second_gradient_only_where_it_trains() -> None:
    # the tied embedding's two gradients (training.py _gradient_moments) need the embedding to train: LISA keeps it
    # trainable, BAdam leaves it frozen
    lisa = _phases(_scenario(Q15, block_training="lisa"))["backward (end)"]
    badam = _phases(_scenario(Q15, block_training="badam"))["backward (end)"]
    embed = next(t for t in CAT.facts(Q15).tensors if t.role == "embedding").numel
    assert lisa["tied embedding gradient"] == 2 * 2 * embed
    assert "tied embedding gradient" not in badam


@pytest.mark.parametrize(
    ("work", "words"),
    [
        ({"method": "lora", "block_training": "lisa"}, "block_training lisa freezes and trains whole decoder layers"),
        ({"block_training": "badam", "optimizer": "galore-adamw"}, "galore-adamw cannot go with it"),
        ({"block_training": "lisa", "optimizer_in_backward": True}, "optimizer_in_backward cannot go with it"),
        ({"block_training": "badam", "active_layers": 0}, "active_layers"),
    ],
)
def test_plans_that_cannot_run_are_refused(work: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        _scenario(**work)


@pytest.mark.parametrize(
    ("scenario", "line"),
    [
        (
            _scenario(par={"zero": 3}, gpus=2, block_training="lisa"),
            "LISA is modelled on one GPU or data parallel only: ZeRO, FSDP, tensor and pipeline parallel are not",
        ),
        (
            _scenario(block_training="badam", active_layers=40),
            f"BAdam trains 40 layers at a time, but {L8} has 32 decoder layers",
        ),
    ],
)
def test_estimates_that_cannot_be_made_say_why_in_one_line(scenario: Scenario, line: str) -> None:
    with pytest.raises(EstimateError) as info:
        estimate(scenario, CAT.facts(L8))
    assert str(info.value) == line
    assert localize(info.value.args[0], "zh_CN") != line


def test_a_saved_scenario_keeps_the_block_options(tmp_path: Path) -> None:
    scenario = _scenario(block_training="badam", active_layers=3)
    path = tmp_path / "plan.json"
    save_scenario(scenario, path)
    work = json.loads(path.read_text(encoding="utf-8"))["workload"]
    assert (work["block_training"], work["active_layers"]) == ("badam", 3)
    back = parse_scenario(json.loads(path.read_text(encoding="utf-8")))
    assert back == scenario
    assert _phases(back) == _phases(scenario)


def test_every_new_message_has_chinese_and_is_reached() -> None:
    table = message_table("zh_CN")
    ids = {v.id for v in vars(blockwise).values() if isinstance(v, Message | Text) and v.id}
    assert len(ids) == 7
    for mid in ids:
        assert mid in table and fields(table[mid]) == fields(MESSAGES[mid]), mid
    reached: set[str] = {"optimizer.block.sharded", "optimizer.block.too_many_layers"}  # (the refusals above)
    for mode in ("lisa", "badam"):
        est = estimate(_scenario(block_training=mode), CAT.facts(L8))
        for c in (c for p in est.phases for c in p.components if isinstance(c.explain, Text)):
            reached |= {c.explain.id, *(a.id for a in c.explain.parts if isinstance(a, Text))}
            zh = localize(c.explain, "zh_CN")
            assert "LISA (LMFlow)" not in zh and "BAdam: the states" not in zh
    assert ids - reached == set()
