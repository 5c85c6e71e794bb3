"""Changes that keep the user's GPU (issue 21): a plan that does not fit is first offered what runs on the GPU it
has (llama.cpp with a GGUF quant and part of the layers on the CPU, device_map spilling weights to CPU memory,
lighter weights), each estimated and with the speed model's figure, before anything that adds GPUs; the rule that
orders them is stated."""

from __future__ import annotations

import io
import math

from vramdesk.cli import main
from vramdesk.core.estimate import estimate
from vramdesk.core.performance import performance
from vramdesk.core.scenario import Scenario
from vramdesk.core.solve import RANK_RULE, ChangesResult, Option, with_data, with_work
from vramdesk.core.solve_changes import smallest_changes
from vramdesk.core.solve_same_gpu import CPU_COST_BASE, CPU_COST_PER_HALVING, ENGINE_SWITCH_COST, cpu_speed_cost
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
L70 = "meta-llama/Llama-3.1-70B-Instruct"
GPU = CAT.gpu("RTX 4090")


def plan(model: str, **work: object) -> Scenario:
    return Scenario.model_validate(
        {"model": {"id": model}, "workload": {"kind": "inference", **work}, "hardware": {"gpu": "RTX 4090"}}
    )


def changes(s: Scenario, **kw: object) -> ChangesResult:
    return smallest_changes(s, CAT.facts(s.model.id), GPU, **kw)  # type: ignore[arg-type]


def verdict(s: Scenario) -> str | None:
    fit = estimate(s, CAT.facts(s.model.id), GPU).fit
    return fit.verdict if fit else None


def _llamacpp_offloads(res: ChangesResult) -> list[tuple[Option, Scenario]]:
    out = []
    for o in res.options:
        s = Scenario.model_validate(o.scenario)
        if s.workload.kind == "inference" and s.workload.engine == "llamacpp" and s.workload.llamacpp.n_gpu_layers:
            out.append((o, s))
    return out


def test_a_70b_model_on_one_4090_is_first_offered_what_runs_on_that_4090() -> None:
    s = plan(L70)
    facts = CAT.facts(L70)
    assert verdict(s) == "does not fit"
    res = changes(s)
    assert res.current_verdict == "does not fit"
    # the first-ranked changes all stay on the one RTX 4090; those that add GPUs come after every one of them
    tiers = [o.more_gpus > 0 for o in res.options]
    assert not tiers[0] and tiers == sorted(tiers) and any(tiers)
    for o in res.options:
        planned = Scenario.model_validate(o.scenario)
        on_one = planned.hardware.gpu_count == 1 and planned.hardware.gpu == "RTX 4090"
        assert on_one is (o.more_gpus == 0), o.summary
        assert verdict(planned) == "fits", o.summary
    # among them llama.cpp with a GGUF quant and part of the layers on the CPU, with its layers and its speed
    offloads = _llamacpp_offloads(res)
    assert offloads, [o.summary for o in res.options]
    best, planned = offloads[0]
    layers = planned.workload.llamacpp.n_gpu_layers
    total = facts.arch.n_layers + 1
    assert planned.weights.startswith("q") and 0 < layers < total
    assert f"{layers} of {total} layers on the GPU" in best.summary and "GGUF" in best.summary
    # the most layers that fit: one more does not
    more = with_data(planned, lambda d: d["workload"]["llamacpp"].update(n_gpu_layers=layers + 1))
    assert verdict(more) != "fits"
    # its speed is the speed model's, and the CPU layers' speed cost is the stated slowdown rule
    perf = performance(estimate(planned, facts, GPU), planned, facts, GPU)
    assert best.tokens_per_s == perf.decode_tokens_per_s and best.tokens_per_s > 0
    base = performance(estimate(s, facts, GPU), s, facts, GPU).decode_tokens_per_s
    assert base is not None and base > best.tokens_per_s
    cpu = next(c for c in best.changes if c.key == "n_gpu_layers")
    expected = CPU_COST_BASE + CPU_COST_PER_HALVING * math.log2(base / best.tokens_per_s)
    assert math.isclose(cpu.speed_cost, expected, abs_tol=0.01)
    switch = next(c for c in best.changes if c.key.startswith("engine=llamacpp"))
    assert switch.reason and "llama.cpp" in switch.reason
    assert math.isclose(best.cost, switch.quality_cost + cpu.speed_cost + ENGINE_SWITCH_COST, abs_tol=0.01)
    assert best.host_bytes is not None and best.host_bytes > 10 * 2**30  # the CPU layers live in CPU memory


def test_device_map_spill_is_offered_with_its_speed_and_cpu_memory() -> None:
    res = changes(plan(L70))
    spills = [o for o in res.options if [c.key for c in o.changes] == ["max_memory_gib"]]
    assert len(spills) == 1, [o.summary for o in res.options]
    (spill,) = spills
    planned = Scenario.model_validate(spill.scenario)
    cap = planned.workload.max_memory_gib
    assert planned.workload.engine == "transformers" and cap is not None and cap.is_integer()
    assert verdict(planned) == "fits" and all(c.quality_cost == 0 for c in spill.changes)
    # the largest whole GiB cap: one more does not fit
    above = with_work(planned, max_memory_gib=cap + 1)
    assert verdict(above) != "fits"
    assert spill.host_bytes and f"{spill.host_bytes / 2**30:.1f} GiB of weights in CPU memory" in spill.summary
    # every token waits for PCIe: slower than llama.cpp's CPU layers, so it ranks below the first of them
    first_llamacpp = _llamacpp_offloads(res)[0][0]
    assert spill.tokens_per_s is not None and spill.tokens_per_s < first_llamacpp.tokens_per_s  # type: ignore[operator]
    assert res.options.index(spill) > res.options.index(first_llamacpp)


def test_a_moe_whose_gguf_fits_whole_is_offered_llamacpp_with_every_layer_on_the_gpu() -> None:
    s = plan("Qwen/Qwen3-30B-A3B")
    res = changes(s)
    whole = [o for o in res.options if "all 49 layers on the GPU" in o.summary]
    assert whole and all(o.more_gpus == 0 for o in whole)
    planned = Scenario.model_validate(whole[0].scenario)
    assert planned.workload.engine == "llamacpp" and planned.workload.llamacpp.n_gpu_layers is None
    assert all(c.speed_cost == 0 for c in whole[0].changes)  # nothing on the CPU: no speed cost


def test_a_plan_that_fits_gets_no_changes() -> None:
    s = plan("Qwen/Qwen3-4B")
    assert verdict(s) == "fits"
    res = changes(s)
    assert res.current_verdict == "fits" and res.options == ()
    code, text = cli("solve", "Qwen/Qwen3-4B", "--gpu", "RTX 4090", "--changes")
    assert code == 0 and "it fits as it is: no change needed" in text


def test_the_cpu_speed_cost_rule() -> None:
    assert cpu_speed_cost(0.0, 1.0, 10.0) == 0  # nothing on the CPU
    assert cpu_speed_cost(0.5, 2.5, 5.0) == CPU_COST_BASE + CPU_COST_PER_HALVING  # half the speed
    assert cpu_speed_cost(0.5, 6.0, 5.0) == CPU_COST_BASE  # not slower than the plan as asked
    assert cpu_speed_cost(0.9, 0.001, 100.0) == 20.0  # capped
    assert cpu_speed_cost(0.5, None, None) == CPU_COST_BASE + 3.5  # no speed figures: by the share on the CPU


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


def test_the_cli_states_the_rule_and_groups_the_changes() -> None:
    code, text = cli("solve", L70, "--gpu", "RTX 4090", "--changes")
    assert code == 0
    lines = text.splitlines()
    assert lines[1] == "on your 1 x RTX 4090:" and "with more GPUs:" in lines
    mine = lines[2 : lines.index("with more GPUs:")]
    assert mine and any("llama.cpp with GGUF" in line and "tok/s" in line for line in mine)
    assert f"ranking: {RANK_RULE}" in lines and "keep your GPUs come first" in RANK_RULE


QWEN_MOE = "Qwen/Qwen3-30B-A3B"
RTX_3060 = CAT.gpu("RTX 3060 12GB")


def _on(s: Scenario, gpu: str) -> Scenario:
    return with_data(s, lambda d: d["hardware"].update(gpu=gpu))


def _cpu_moe_options(res: ChangesResult) -> list[tuple[Option, Scenario]]:
    out = []
    for o in res.options:
        s = Scenario.model_validate(o.scenario)
        if s.workload.kind == "inference" and s.workload.llamacpp.n_cpu_moe:
            out.append((o, s))
    return out


def test_a_moe_that_does_not_fit_a_12_gb_card_is_offered_its_experts_in_host_memory() -> None:
    s = _on(plan(QWEN_MOE), "RTX 3060 12GB")
    facts = CAT.facts(QWEN_MOE)
    res = smallest_changes(s, facts, RTX_3060)
    assert res.current_verdict == "does not fit"
    moe = _cpu_moe_options(res)
    assert {p.weights for _o, p in moe} >= {"q4_k_m", "q8_0"}, [o.summary for o in res.options]
    total = facts.arch.n_layers
    for option, planned in moe:
        n = planned.workload.llamacpp.n_cpu_moe
        # every layer stays on the GPU, the experts of the first n layers in host memory: the fewest that fit
        assert planned.workload.engine == "llamacpp" and planned.workload.llamacpp.n_gpu_layers is None
        assert 0 < n < total and option.more_gpus == 0
        assert (
            f"experts of the first {n} of {total} layers in host memory" in option.summary and "GGUF" in option.summary
        )
        fewer = with_data(planned, lambda d, n=n: d["workload"]["llamacpp"].update(n_cpu_moe=n - 1))
        assert estimate(planned, facts, RTX_3060).fit.verdict == "fits"  # type: ignore[union-attr]
        assert estimate(fewer, facts, RTX_3060).fit.verdict != "fits"  # type: ignore[union-attr]
        # its speed is the speed model's and its cost the stated rule: switch + quant quality + CPU speed cost
        est = estimate(planned, facts, RTX_3060)
        assert option.tokens_per_s == performance(est, planned, facts, RTX_3060).decode_tokens_per_s
        assert option.host_bytes == est.host_bytes and est.host_bytes > 5 * 2**30
        cpu = next(c for c in option.changes if c.key == "n_cpu_moe")
        switch = next(c for c in option.changes if c.key.startswith("engine=llamacpp"))
        assert math.isclose(option.cost, ENGINE_SWITCH_COST + switch.quality_cost + cpu.speed_cost, abs_tol=0.01)
    # the same quant with whole layers on the CPU instead moves more of each token's bytes to host memory: slower
    by_quant = {p.weights: o for o, p in moe}
    layer_cut = {p.weights: o for o, p in _llamacpp_offloads(res) if not p.workload.llamacpp.n_cpu_moe}
    for quant in by_quant.keys() & layer_cut.keys():
        assert by_quant[quant].tokens_per_s > layer_cut[quant].tokens_per_s  # type: ignore[operator]
    # ranked by the one cost rule among the options on this card
    mine = [o.cost for o in res.options if o.more_gpus == 0]
    assert mine == sorted(mine)


def test_a_llamacpp_moe_plan_is_offered_its_own_quant_with_experts_in_host_memory() -> None:
    s = with_data(
        _on(plan(QWEN_MOE), "RTX 3060 12GB"),
        lambda d: (d.update(weights="q4_k_m"), d["workload"].update(engine="llamacpp")),
    )
    res = smallest_changes(s, CAT.facts(QWEN_MOE), RTX_3060)
    ((option, planned),) = _cpu_moe_options(res)
    assert planned.weights == "q4_k_m" and [c.key for c in option.changes] == ["n_cpu_moe"]


def test_a_dense_model_is_never_offered_experts_in_host_memory() -> None:
    res = changes(plan(L70))
    assert not _cpu_moe_options(res) and not any(c.key == "n_cpu_moe" for o in res.options for c in o.changes)
