"""llama.cpp's --fit (issue 20): with ``fit`` on, a plan that would leave a GPU less free memory than the
--fit-target margin gets the layers llama.cpp's fit places itself (common/fit.cpp): whole layers back to front, the
last GPU first; for an MoE model, the experts of the last layers in host memory. A plan with -ngl, --n-cpu-moe or
a row split is left alone, and with ``fit`` off nothing changes."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from vramdesk.cli import main
from vramdesk.core import constants as K
from vramdesk.core.engines import llamacpp
from vramdesk.core.engines.base import Context
from vramdesk.core.estimate import estimate
from vramdesk.core.gpu import GIB, MIB, GpuSpec
from vramdesk.core.llamacpp_fit import Layout, used_per_gpu
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
GPU = CAT.gpu("RTX 4090")
L70 = "meta-llama/Llama-3.1-70B"
QWEN = "Qwen/Qwen3-30B-A3B"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "golden.jsonl"


def plan(model: str = L70, weights: str = "q4_k_m", gpus: int = 1, **llamacpp_opts: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "weights": weights,
            "workload": {"kind": "inference", "engine": "llamacpp", "input_len": 8192, "llamacpp": llamacpp_opts},
            "hardware": {"gpu": "RTX 4090", "gpu_count": gpus},
        }
    )


def run(s: Scenario, gpu: GpuSpec = GPU) -> Estimate:
    return estimate(s, CAT.facts(s.model.id), gpu)


def run_with_context(s: Scenario, monkeypatch: pytest.MonkeyPatch, gpu: GpuSpec = GPU) -> tuple[Estimate, Context]:
    """The estimate and the engine context it priced (to price other layouts of the same plan)."""
    seen: list[Context] = []
    real = llamacpp.ENGINE.run

    def spy(ctx: Context) -> Any:
        seen.append(ctx)
        return real(ctx)

    monkeypatch.setattr(llamacpp.ENGINE, "run", spy)
    est = run(s, gpu)
    monkeypatch.undo()
    return est, seen[0]


def weights_text(est: Estimate, gpu: int | None = None) -> str:
    comps = est.components if gpu is None else est.per_gpu[gpu].components
    return str(next(c.explain for c in comps if c.name == "weights"))


def target(margin_mib: int = 1024, gpu: GpuSpec = GPU) -> int:
    """The most device memory a GPU may hold under --fit (nvidia-smi's figure: the CUDA context included)."""
    seen = gpu.memory_bytes if gpu.free_bytes is None else gpu.free_bytes
    return seen - margin_mib * MIB


def device_bytes(ctx: Context, layout: Layout) -> list[int]:
    """Each GPU's device memory for ``layout`` of the plan (its allocated bytes and the CUDA context)."""
    return [u + K.LLAMACPP_CONTEXT for u in used_per_gpu(llamacpp.llamacpp_run(ctx, layout), max(1, ctx.gpu_count))]


def test_one_gpu_gets_the_most_layers_that_keep_the_margin_and_one_more_would_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    est, ctx = run_with_context(plan(fit=True), monkeypatch)
    text = weights_text(est)
    found = re.match(r"--fit: (\d+) of 81 layers on CUDA0, margin 1,024 MiB; ", text)
    assert found, text
    layers = int(found[1])
    assert 30 < layers < 81  # (a 70B Q4_K_M is about 40 GiB: about half of it fits on a 24 GiB card)
    assert est.device_bytes <= target() < run(plan(fit=False)).device_bytes
    assert device_bytes(ctx, Layout(counts=(layers,))) == [est.device_bytes]
    assert device_bytes(ctx, Layout(counts=(layers + 1,)))[0] > target()
    # llama.cpp's layers: the output layer first, then the last layers ("43 of 80 layers on the GPU + output layer")
    assert f"{layers - 1} of 80 layers on the GPU + output layer" in text
    assert est.fit is not None and est.fit.verdict != "does not fit"


def test_two_gpus_are_filled_back_to_front_each_to_its_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    margin = 8192
    est, ctx = run_with_context(plan(gpus=2, fit=True, fit_target_mib=margin), monkeypatch)
    found = re.match(
        r"--fit: (\d+) of 81 layers \(CUDA0 (\d+), CUDA1 (\d+)\), margin 8,192 MiB per GPU; ", weights_text(est)
    )
    assert found, weights_text(est)
    total, first, last = (int(x) for x in found.groups())
    assert first + last == total < 81
    assert [g.device_bytes for g in est.per_gpu] == device_bytes(ctx, Layout(counts=(first, last)))
    assert all(g.device_bytes <= target(margin) for g in est.per_gpu)
    # the last GPU was filled first, with the first one empty; then the first one with the rest
    assert device_bytes(ctx, Layout(counts=(0, last + 1)))[1] > target(margin)
    assert device_bytes(ctx, Layout(counts=(first + 1, last)))[0] > target(margin)
    # the per-GPU words: GPU 1 holds the last layers and the output layer
    assert "GPU 1: layers " in weights_text(est, 1) and "+ output layer" in weights_text(est, 1)


def test_an_moe_model_keeps_the_experts_of_its_last_layers_in_host_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    est, ctx = run_with_context(plan(QWEN, weights="bf16", fit=True), monkeypatch)
    text = weights_text(est)
    assert text.startswith("--fit: 49 of 49 layers on CUDA0, margin 1,024 MiB; "), text
    found = re.search(r"the MoE experts of (\d+) layers in host memory \(--fit\)", text)
    assert found, text
    n = int(found[1])
    assert 0 < n < 48
    last = frozenset(range(48 - n, 48))
    assert device_bytes(ctx, Layout(counts=(49,), host_experts=last)) == [est.device_bytes]
    assert est.device_bytes <= target()
    # one expert layer fewer in host memory would not keep the margin
    assert device_bytes(ctx, Layout(counts=(49,), host_experts=last - {48 - n}))[0] > target()
    # the same experts kept by --n-cpu-moe (the first layers) would price the same weights, elsewhere
    assert est.host_bytes == run(plan(QWEN, weights="bf16", n_cpu_moe=n)).host_bytes


def test_an_moe_model_over_two_gpus_keeps_every_gpu_within_its_margin() -> None:
    est = run(plan("Qwen/Qwen3-235B-A22B", gpus=2, fit=True))
    assert re.match(r"--fit: 95 of 95 layers \(CUDA0 \d+, CUDA1 \d+\)", weights_text(est)), weights_text(est)
    assert len(est.per_gpu) == 2
    assert all(g.device_bytes <= target() for g in est.per_gpu)


def test_the_detected_free_memory_is_what_fit_fills() -> None:
    busy = GPU.model_copy(update={"free_bytes": 16 * GIB})
    est, whole = run(plan(fit=True), busy), run(plan(fit=True))
    layers = int(re.match(r"--fit: (\d+) of", weights_text(est))[1])  # type: ignore[index]
    assert layers < int(re.match(r"--fit: (\d+) of", weights_text(whole))[1])  # type: ignore[index]
    assert est.device_bytes <= target(gpu=busy)


@pytest.mark.parametrize(
    ("model", "weights", "gpus", "opts", "words"),
    [
        (L70, "q4_k_m", 1, {"n_gpu_layers": 80}, "--fit changes nothing: the GPU layers are set (--n-gpu-layers 80)"),
        (QWEN, "bf16", 1, {"n_cpu_moe": 4}, "--fit changes nothing: --n-cpu-moe 4 sets buffer overrides"),
        (L70, "q8_0", 2, {"split_mode": "row"}, "--fit changes nothing: it does not place layers for --split-mode"),
    ],
)
def test_a_plan_that_places_layers_itself_is_left_alone(
    model: str, weights: str, gpus: int, opts: dict[str, Any], words: str
) -> None:
    fitted, plain = run(plan(model, weights, gpus, fit=True, **opts)), run(plan(model, weights, gpus, **opts))
    assert max(g.device_bytes for g in plain.per_gpu) > target()  # (so that --fit had a reason to act)
    assert fitted.model_dump(exclude={"warnings", "scenario"}) == plain.model_dump(exclude={"warnings", "scenario"})
    assert [w for w in fitted.warnings if str(w).startswith(words)], fitted.warnings


def test_a_plan_that_keeps_the_margin_is_kept_word_for_word() -> None:
    fitted, plain = run(plan(QWEN, fit=True)), run(plan(QWEN))
    assert fitted.device_bytes <= target()
    assert fitted.model_dump(exclude={"scenario"}) == plain.model_dump(exclude={"scenario"})


def test_fit_off_is_the_estimate_of_before() -> None:
    assert plan().workload.llamacpp.fit is False  # (the default: see LlamaCppOptions.fit)
    assert plan().workload.llamacpp.fit_target_mib == 1024
    # the committed golden figures of llama.cpp plans that do not fit did not move (cases.py's variant 2)
    golden = {json.loads(line)["case"]: json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()}
    for model, gpu in ((QWEN, "RTX 4090"), (L70, "A100 40GB PCIe")):
        case = golden[f"{model}|inference|2|{gpu}"]
        s = Scenario.model_validate(
            {
                "model": {"id": model},
                "workload": {"kind": "inference", "engine": "llamacpp", "llamacpp": {"fit": False}},
                "hardware": {"gpu": gpu},
            }
        )
        est = estimate(s, CAT.facts(model), CAT.gpu(gpu))
        assert (est.peak_allocated_bytes, est.device_bytes) == (case["peak"], case["device"])
        assert case["verdict"] == "does not fit"
        assert est.fit is not None and est.fit.verdict == "does not fit"


def test_the_command_line_turns_fit_on_with_its_margin() -> None:
    out = io.StringIO()
    argv = ["estimate", L70, "--engine", "llamacpp", "--weights", "q4_k_m", "--gpu", "RTX 4090"]
    assert main([*argv, "--fit", "--fit-target-mib", "2048", "--json"], out=out) == 0
    data = json.loads(out.getvalue())
    assert data["scenario"]["workload"]["llamacpp"]["fit"] is True
    assert data["scenario"]["workload"]["llamacpp"]["fit_target_mib"] == 2048
    weights = next(c for c in data["components"] if c["name"] == "weights")
    assert re.match(r"--fit: \d+ of 81 layers on CUDA0, margin 2,048 MiB", weights["explain"]), weights["explain"]
    assert data["device_bytes"] <= target(2048)
