"""llama.cpp's MoE experts in host memory (issue 20): ``n_cpu_moe`` keeps the routed-expert tensors of the first N
layers in host memory (``--n-cpu-moe``; N at least the layer count is ``--cpu-moe``) while the rest of the model and
the KV cache stay on the GPU; the compute buffer gains the expert copy ggml's scheduler stages for large batches."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.cli import main
from vramdesk.core.estimate import EstimateError, estimate, resolve_format
from vramdesk.core.gpu import MIB
from vramdesk.core.messages import error_text
from vramdesk.core.performance import performance
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.core.weights import weight_bytes
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
QWEN = "Qwen/Qwen3-30B-A3B"
GPU = CAT.gpu("RTX 4090")
TEXT = frozenset({"text"})


def plan(model: str = QWEN, n: int | None = None, gpus: int = 1, **llamacpp: Any) -> Scenario:
    opts = dict(llamacpp)
    if n is not None:
        opts["n_cpu_moe"] = n
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "weights": "q4_k_m",
            "workload": {"kind": "inference", "engine": "llamacpp", "input_len": 8192, "llamacpp": opts},
            "hardware": {"gpu": "RTX 4090", "gpu_count": gpus},
        }
    )


def run(s: Scenario) -> Estimate:
    return estimate(s, CAT.facts(s.model.id), GPU)


def part(est: Estimate, name: str, gpu: int | None = None) -> int:
    comps = est.components if gpu is None else est.per_gpu[gpu].components
    return next(c.bytes for c in comps if c.name == name)


def priced(s: Scenario, keep: Any) -> int:
    """The bytes of the inventory's tensors ``keep`` picks, priced in the plan's GGUF format tensor by tensor."""
    facts = CAT.facts(s.model.id)
    fmt, _ = resolve_format(s, facts.arch)
    tensors = tuple(t for t in facts.tensors if t.part == "text" and keep(t))
    return weight_bytes(tensors, fmt, TEXT, facts.arch.n_layers).total


def test_the_experts_of_the_first_n_layers_move_from_the_gpu_to_host_memory_exactly() -> None:
    base, moved = run(plan(n=0)), run(plan(n=20))
    experts = priced(plan(), lambda t: t.routed_expert and t.layer is not None and t.layer < 20)
    assert experts > 5 * 2**30  # (20 of 48 layers of a 30B MoE: most of its bytes are experts)
    assert part(base, "weights") - part(moved, "weights") == experts
    assert moved.host_bytes - base.host_bytes == experts
    assert part(moved, "KV cache") == part(base, "KV cache")  # attention and its cache stay on the GPU
    weights = next(c for c in moved.components if c.name == "weights")
    assert "experts of the first 20 layers in host memory (--n-cpu-moe 20)" in str(weights.explain)


def test_no_experts_in_host_memory_is_the_estimate_of_before() -> None:
    without = Scenario.model_validate(plan().model_dump(mode="json", exclude={"workload": {"llamacpp": {"n_cpu_moe"}}}))
    assert without.workload.llamacpp.n_cpu_moe == 0  # the default
    assert run(plan(n=0)).model_dump() == run(without).model_dump()
    # and the committed golden figures of a llama.cpp MoE case did not move (tests/golden: est digest, peak, device)
    s = Scenario.model_validate(
        {
            "model": {"id": QWEN},
            "workload": {"kind": "inference", "engine": "llamacpp"},
            "hardware": {"gpu": "RTX 4090"},
        }
    )
    est = run(s)
    golden = Path(__file__).resolve().parents[1] / "golden" / "golden.jsonl"
    case = next(
        json.loads(line)
        for line in golden.read_text(encoding="utf-8").splitlines()
        if json.loads(line)["case"] == f"{QWEN}|inference|2|RTX 4090"  # (cases.py's variant 2: engine llamacpp)
    )
    assert (est.peak_allocated_bytes, est.device_bytes) == (case["peak"], case["device"])


@pytest.mark.parametrize("n", [48, 999])
def test_all_experts_leave_only_the_other_weights_on_the_gpu(n: int) -> None:
    s = plan(n=n)
    est = run(s)
    # every tensor but the routed experts and the input embedding (the output layer goes with -ngl all)
    others = priced(s, lambda t: not t.routed_expert and t.role != "embedding")
    assert part(est, "weights") == others
    weights = next(c for c in est.components if c.name == "weights")
    assert "MoE experts of all 48 layers in host memory (--cpu-moe)" in str(weights.explain)


def test_layers_left_on_the_cpu_keep_their_experts_there_without_counting_them_twice() -> None:
    # -ngl 30: layers 0-17 on the CPU already; --n-cpu-moe 24 moves the experts of layers 18-23 more
    base, moved = run(plan(n_gpu_layers=30)), run(plan(n=24, n_gpu_layers=30))
    experts = priced(plan(), lambda t: t.routed_expert and t.layer is not None and 18 <= t.layer < 24)
    assert part(base, "weights") - part(moved, "weights") == experts
    assert moved.host_bytes - base.host_bytes == experts


def test_two_gpus_split_the_layers_as_before_and_each_loses_its_own_experts() -> None:
    base, moved = run(plan(n=0, gpus=2)), run(plan(n=30, gpus=2))
    assert len(moved.per_gpu) == 2
    first = priced(plan(), lambda t: t.routed_expert and t.layer is not None and t.layer < 24)
    second = priced(plan(), lambda t: t.routed_expert and t.layer is not None and 24 <= t.layer < 30)
    assert part(base, "weights", 0) - part(moved, "weights", 0) == first
    assert part(base, "weights", 1) - part(moved, "weights", 1) == second
    assert part(moved, "KV cache", 0) == part(base, "KV cache", 0)


def test_the_compute_buffer_holds_the_staged_expert_tensor_for_large_batches() -> None:
    s = plan("Qwen/Qwen3-235B-A22B", n=80)
    facts = CAT.facts(s.model.id)
    arch = facts.arch
    fmt, _ = resolve_format(s, arch)
    largest = max(
        weight_bytes((t,), fmt, TEXT, arch.n_layers).total for t in facts.tensors if t.routed_expert and t.layer == 0
    )
    est = run(s)
    ub = 512
    moe = arch.layers[0].moe
    assert moe is not None
    # ggml's scheduler copies one layer's whole expert tensor into the first GPU's compute buffer, beside the FFN's
    # F32 tensors of the ubatch and its input
    ffn = ub * (3 * moe.expert_intermediate * moe.top_k + 6 * arch.hidden) * 4
    assert part(est, "compute buffer") == largest + ffn + ub * arch.hidden * 4
    buffer = next(c for c in est.components if c.name == "compute buffer")
    assert f"the largest, {largest / MIB:,.2f} MiB" in str(buffer.explain) and "expert tensor" in str(buffer.explain)
    # below 32 tokens the CPU runs the experts itself: nothing staged
    small = run(plan("Qwen/Qwen3-235B-A22B", n=80, n_ubatch=16))
    assert part(small, "compute buffer") == part(run(plan("Qwen/Qwen3-235B-A22B", n_ubatch=16)), "compute buffer")


def test_a_dense_model_is_refused_in_one_line() -> None:
    with pytest.raises(EstimateError) as err:
        run(plan("Qwen/Qwen3-4B", n=4))
    message = error_text(err.value)
    assert message == "--n-cpu-moe 4: qwen3 is a dense model, it has no MoE expert tensors to keep in host memory"
    assert "\n" not in message
    assert run(plan("Qwen/Qwen3-4B", n=0)).device_bytes > 0  # 0 is no change, for every model


def test_the_speed_model_reads_the_routed_experts_from_host_memory() -> None:
    facts = CAT.facts(QWEN)
    speeds = []
    for n in (0, 12, 48):
        s = plan(n=n)
        perf = performance(run(s), s, facts, GPU)
        speeds.append(perf.decode_tokens_per_s)
        notes = " ".join(str(a) for a in perf.assumptions)
        assert ("MoE experts of" in notes) is (n > 0)
    assert speeds[0] > speeds[1] > speeds[2]  # type: ignore[operator]


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


def test_the_command_line_takes_n_cpu_moe() -> None:
    code, text = cli(
        "estimate",
        QWEN,
        "--engine",
        "llamacpp",
        "--weights",
        "q4_k_m",
        "--n-cpu-moe",
        "48",
        "--gpu",
        "RTX 4090",
        "--json",
    )
    assert code == 0
    data = json.loads(text)
    assert data["scenario"]["workload"]["llamacpp"]["n_cpu_moe"] == 48
    weights = next(c for c in data["components"] if c["name"] == "weights")
    assert weights["bytes"] == part(run(plan(n=48)), "weights")
    assert data["host_bytes"] > 16 * 2**30
    assert data["performance"]["decode_tokens_per_s"] > 0
