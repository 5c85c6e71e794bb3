"""GaLore / APOLLO, Adam-mini, torchao's low-bit AdamW, LOMO / AdaLomo and the optimizer in the backward: state
bytes against figures worked out by hand from each package's code (cited per test), the phases when the step runs
in the backward, the refusals, and a saved scenario with the new options read back."""

from __future__ import annotations

import json
from math import ceil
from pathlib import Path

import pytest
from pydantic import ValidationError

from vramdesk.core import optimizers
from vramdesk.core.estimate import EstimateError, estimate
from vramdesk.core.inventory import Tensor
from vramdesk.core.messages import MESSAGES, Message, Text, fields
from vramdesk.core.optimizers import adam_mini, fused, in_backward, projected, torchao
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog
from vramdesk.storage.scenarios import parse_scenario, save_scenario
from vramdesk.ui.core_text import message_table

CAT = default_catalog()
L8 = "meta-llama/Llama-3.1-8B"
#: one decoder layer's q (4096 x 4096) and down (4096 x 14336) projections, a norm and the embedding
LAYER = [
    Tensor("model.layers.0.self_attn.q_proj.weight", (4096, 4096), "attn", 0),
    Tensor("model.layers.0.mlp.down_proj.weight", (4096, 14336), "mlp", 0),
    Tensor("model.layers.0.input_layernorm.weight", (4096,), "norm", 0),
    Tensor("model.embed_tokens.weight", (128256, 4096), "embedding"),
]


def _scenario(**work: object) -> Scenario:
    data = {"kind": "finetune", "method": "full", "seq_len": 2048, **work}
    return Scenario.model_validate({"model": {"id": L8}, "workload": data, "hardware": {"gpu": "H100-80GB"}})


def _phase(scenario: Scenario, name: str) -> dict[str, int]:
    est = estimate(scenario, CAT.facts(L8))
    return {c.name: c.bytes for p in est.phases if p.name == name for c in p.components}


def test_galore_keeps_rank_r_moments_and_the_projection() -> None:
    # galore_torch/galore_projector.py GaLoreProjector.project ('std'): q (m = n) projects on the right to
    # (4096, r), down (m < n) on the left to (r, 14336); adamw.py AdamW.step: exp_avg / exp_avg_sq =
    # zeros_like(low-rank grad); the kept ortho_matrix is Vh[:r] (r, 4096) and U[:, :r] (4096, r). The norm and
    # the embedding get full Adam states. bf16: 2 B an element
    states, temp, _, _ = optimizers.optimizer_bytes("galore-adamw", 0, 2, 0, (), LAYER, (128, 200))
    moments = 2 * (128 * 4096 + 128 * 14336)
    kept = 128 * 4096 + 128 * 4096
    others = 2 * (4096 + 128256 * 4096)
    assert states == 2 * (moments + kept + others)
    # the embedding's for-loop AdamW step (denom and norm_grad: 2 x 2 B x 525 M) outweighs down's SVD in fp32
    # (copy 4096 x 14336, U 4096 x 4096, s, Vh 4096 x 14336, diag r x r, B r x 14336: 4 B each)
    svd_down = 4 * (4096 * 14336 + 4096 * 4096 + 4096 + 4096 * 14336 + 128 * 128 + 128 * 14336)
    assert temp == max(2 * 2 * 128256 * 4096, svd_down)
    # without the embedding the SVD is the step's largest moment
    assert optimizers.optimizer_bytes("galore-adamw", 0, 2, 0, (), LAYER[:3], (128, 200))[1] == svd_down


def test_apollo_mini_is_rank_one_and_the_8bit_galore_uses_bitsandbytes_blocks() -> None:
    # apollo_torch/random_projector.py: a (r, n) or (m, r) Gaussian matrix whatever r is; APOLLO-Mini: r = 1
    states = optimizers.optimizer_bytes("apollo-mini", 0, 2, 0, (), LAYER[:2], (256, 200))[0]
    assert states == 2 * (2 * (4096 + 14336) + 4096 + 4096)
    # galore_torch/adamw8bit.py: bitsandbytes' Optimizer2State over the projected gradient: 2 x 1 B + fp32 absmax
    low = 64 * 4096 + 64 * 14336
    states8 = optimizers.optimizer_bytes("galore-adamw-8bit", 0, 2, 0, (), LAYER[:2], (64, 200))[0]
    assert states8 == 2 * low + ceil(low / 2048) * 8 + 2 * (64 * 4096 * 2)
    assert [t.name for t in LAYER if projected.projected(t)] == [t.name for t in LAYER[:2]]


def test_adam_mini_keeps_one_second_moment_per_row_or_block() -> None:
    # adam_mini/adam_mini.py Adam_mini.step: m = zeros_like(p) everywhere; vmean one per row for the embedding,
    # v / o / mlp (and per head for q / k: counted per row), one value for a norm
    states, temp, _, _ = optimizers.optimizer_bytes("adam-mini", 0, 2, 0, (), LAYER, (128, 200))
    first = sum(t.numel for t in LAYER)
    assert states == 2 * (first + 4096 + 4096 + 1 + 128256)
    assert temp == 2 * 2 * 128256 * 4096
    assert adam_mini.second_moments(Tensor("model.layers.0.self_attn.q_proj.bias", (4096,), "bias", 0)) == 4096


def test_torchao_quantises_large_tensors_only() -> None:
    # torchao/optim/adam.py _AdamBase._new_buffer: numel >= 4096 and divisible by the block; else zeros_like(p)
    sizes = [4096 * 4096, 1000]
    eight = torchao.torchao_bytes("adamw-torchao-8bit", 2, sizes)[0]
    assert eight == 2 * (4096 * 4096 + 4 * 4096 * 4096 // 256 + 4 * 256) + 2 * 1000 * 2
    four = torchao.torchao_bytes("adamw-torchao-4bit", 2, sizes)[0]
    assert four == 2 * (4096 * 4096 // 2 + 4 * 4096 * 4096 // 128 + 4 * 16) + 2 * 1000 * 2
    fp8 = torchao.torchao_bytes("adamw-torchao-fp8", 2, sizes)[0]
    assert fp8 == 2 * (4096 * 4096 + 4 * 4096 * 4096 // 256) + 2 * 1000 * 2


def test_lomo_has_no_states_and_adalomo_factored_ones() -> None:
    # lomo_optim/lomo.py: no state; grad_fp32 and p_fp32 copies of a bf16 parameter (aliases when fp32)
    assert fused.fused_bytes("lomo", 10, 2, 10, ())[:2] == (0, 2 * 4 * 10)
    assert fused.fused_bytes("lomo", 10, 4, 10, ())[:2] == (0, 0)
    # lomo_optim/adalomo.py: exp_avg_sq_row (m) + exp_avg_sq_col (n) for matrices, exp_avg_sq (n) for vectors
    states = fused.fused_bytes("adalomo", 64 * 32 + 7, 2, 64 * 32, [(64, 32)])[0]
    assert states == 4 * (64 + 32 + 7)


def test_the_step_in_the_backward_holds_one_gradient() -> None:
    plain = _phase(_scenario(), "optimizer step")
    in_bwd = _phase(_scenario(optimizer_in_backward=True), "optimizer step")
    embed = 128256 * 4096
    assert plain["gradients"] == 2 * 8030261248
    # torchtune's register_optim_in_bwd_hooks: one parameter's gradient (the largest, the embedding) at a time,
    # and a foreach AdamW over that one tensor
    assert in_bwd["gradients"] == 2 * embed
    assert in_bwd["optimizer step temporaries"] == 2 * embed
    assert in_bwd["optimizer states"] == plain["optimizer states"]
    lomo = _phase(_scenario(optimizer="lomo"), "backward (first layer)")
    assert lomo["gradients"] == 2 * 2 * embed and lomo["optimizer states"] == 0


@pytest.mark.parametrize(
    ("work", "words"),
    [
        ({"method": "lora", "optimizer": "galore-adamw"}, "galore-adamw projects or partitions"),
        ({"optimizer": "lomo", "grad_accum": 4}, "lomo steps each parameter in the backward"),
        ({"optimizer_in_backward": True, "grad_accum": 2}, "accumulation (2) must be 1"),
    ],
)
def test_plans_that_cannot_run_are_refused(work: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words.replace("(", r"\(").replace(")", r"\)")):
        _scenario(**work)


def test_sharded_plans_refuse_the_step_in_the_backward() -> None:
    scenario = Scenario.model_validate(
        {
            "model": {"id": L8},
            "workload": {"kind": "finetune", "method": "full", "optimizer": "lomo"},
            "hardware": {"gpu": "H100-80GB", "gpu_count": 2},
            "parallelism": {"zero": 3},
        }
    )
    with pytest.raises(EstimateError, match="lomo in the backward is modelled on one GPU"):
        estimate(scenario, CAT.facts(L8))


def test_a_saved_scenario_keeps_the_new_options(tmp_path: Path) -> None:
    scenario = _scenario(
        optimizer="galore-adamw-8bit", projection_rank=64, projection_gap=500, optimizer_in_backward=True
    )
    path = tmp_path / "plan.json"
    save_scenario(scenario, path)
    work = json.loads(path.read_text(encoding="utf-8"))["workload"]
    assert (work["optimizer"], work["projection_rank"], work["projection_gap"]) == ("galore-adamw-8bit", 64, 500)
    back = parse_scenario(json.loads(path.read_text(encoding="utf-8")))
    assert back == scenario


def test_every_new_message_has_chinese_and_is_reached() -> None:
    table = message_table("zh_CN")
    modules = (projected, adam_mini, torchao, fused, in_backward)
    ids = {v.id for m in modules for v in vars(m).values() if isinstance(v, Message | Text) and v.id}
    assert len(ids) == 12
    for mid in ids:
        assert mid in table and fields(table[mid]) == fields(MESSAGES[mid]), mid
    reached: set[str] = set()
    for work in (
        {"optimizer": "galore-adamw"},
        {"optimizer": "apollo"},
        {"optimizer": "adam-mini"},
        {"optimizer": "adamw-torchao-4bit"},
        {"optimizer": "lomo"},
        {"optimizer": "adalomo"},
    ):
        est = estimate(_scenario(**work), CAT.facts(L8))
        reached |= {c.explain.id for p in est.phases for c in p.components if isinstance(c.explain, Text)}
        reached |= {
            a.id
            for p in est.phases
            for c in p.components
            if isinstance(c.explain, Text)
            for a in c.explain.parts
            if isinstance(a, Text) and a.id
        }
    assert ids - reached - {"optimizer.in_backward.sharded"} == set(), ids - reached
