"""vLLM by release (issue 20): the sampler of the profile run, where the CUDA graphs and the CUDA context are paid
for, and the start-up checks of the memory outside gpu_memory_utilization, each against the figure its rule in
vramdesk/core/engines/vllm_versions.py predicts from vLLM's (and PyTorch's) source."""

from __future__ import annotations

from typing import Any

import pytest

from vramdesk.cli import scenario_from
from vramdesk.core import constants as K
from vramdesk.core.engines.vllm_versions import RULES, band_of, sampler_kind, sort_sampler_bytes
from vramdesk.core.estimate import estimate
from vramdesk.core.options import option
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
LLAMA_8B = "meta-llama/Llama-3.1-8B"
GPT_OSS_120B = "openai/gpt-oss-120b"
H100 = CAT.gpu("H100 SXM")
VERSIONS = ("0.7", "0.8", "0.10", "0.17", "0.19")


def plan(model: str = LLAMA_8B, gpus: int = 1, input_len: int = 4095, **vllm: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "workload": {"kind": "inference", "engine": "vllm", "input_len": input_len, "output_len": 1, "vllm": vllm},
            "hardware": {"gpu": "H100 SXM", "gpu_count": gpus},
            "parallelism": {"tp": gpus},
        }
    )


def run(s: Scenario) -> Estimate:
    return estimate(s, CAT.facts(s.model.id), H100)


def part(est: Estimate, name: str) -> int:
    return next(c.bytes for c in (*est.components, *est.device_overheads) if c.name == name)


def has(est: Estimate, name: str) -> bool:
    return any(c.name == name for c in (*est.components, *est.device_overheads))


@pytest.mark.parametrize(
    ("logged", "band"),
    [
        ("0.6.4.x", "0.7"),
        ("0.7.x (V0)", "0.7"),
        ("~0.8.5 (V1)", "0.8"),
        ("~0.9.2", "0.8"),
        ("~0.10.1", "0.10"),
        ("0.11.2", "0.10"),
        ("0.16.0", "0.10"),
        ("0.17.0", "0.17"),
        ("0.18.0", "0.17"),
        ("0.19.0", "0.19"),
        ("1.2", "0.19"),
    ],
)
def test_a_logged_release_falls_in_its_band(logged: str, band: str) -> None:
    assert band_of(logged) == band


def test_a_string_with_no_release_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'main'"):
        band_of("main")


def test_the_version_is_an_option_of_the_vllm_box_and_of_the_command_line() -> None:
    opt = option("version")
    assert (opt.group, opt.flag, opt.default, opt.kind) == ("vllm", "vllm_version", "0.19", "choice")
    assert set(opt.values) == set(RULES) == set(opt.choices)
    s = scenario_from(LLAMA_8B, {"engine": "vllm", "gpu": "H100 SXM", "vllm_version": "0.10"})
    assert s.workload.vllm.version == "0.10"
    # the graph estimate is a setting of the releases that have it, with CUDA graphs on
    assert option("estimate_cudagraphs").form["when"] == {"version": ["0.19"], "enforce_eager": [False]}


def activations(**vllm: Any) -> tuple[int, str]:
    est = run(plan(**vllm))
    c = next(c for c in est.components if c.name == "profile-run activations")
    return c.bytes, getattr(c.explain, "id", "")


#: Llama-3.1-8B's step of 8192 batched tokens: its hidden states, 8192 x 4096 x 2 B, twice
HIDDEN = 8192 * 4096 * 2 * 2


def test_the_sort_sampler_of_0_10_takes_38_bytes_a_bf16_logit_beside_the_hidden_states() -> None:
    # 1024 sequences x 128256 logits x (2 B bf16 + 4 B fp32 copy + 4 + 8 B sorted values and indices + 8 B reverse
    # indices + 4 + 8 B cub's alternate buffers)
    got, message = activations(version="0.10", max_num_seqs=1024)
    assert got == 1024 * 128256 * 38 + HIDDEN
    assert message == "vllm.profile_activations.sampler"
    est = run(plan(version="0.10", max_num_seqs=1024))
    text = str(next(c for c in est.components if c.name == "profile-run activations").explain)
    assert "sorted values" in text and "38 B per logit" in text
    # fp32 logits need no copy: 36 B; the requests are at most max_num_batched_tokens
    assert sort_sampler_bytes(10, 1000, 4) == 10 * 1000 * 36
    got, _ = activations(version="0.10", max_num_seqs=1024, max_num_batched_tokens=512, input_len=511)
    assert got == 512 * 128256 * 38 + 512 * 4096 * 2 * 2


@pytest.mark.parametrize("version", ["0.17", "0.19"])
def test_the_triton_top_k_top_p_of_0_17_takes_14_bytes_a_bf16_logit(version: str) -> None:
    # the bf16 logits, their fp32 copy masked in place, the fp32 probabilities and the exponential noise
    got, message = activations(version=version, max_num_seqs=1024)
    assert got == 1024 * 128256 * 14 + HIDDEN
    assert message == "vllm.profile_activations.sampler"
    half, _ = activations(version=version, max_num_seqs=512)
    assert got - half == 512 * 128256 * 14
    # below 8 rows apply_top_k_top_p sorts with PyTorch again
    assert sampler_kind(RULES[version], 7) == "sort" and sampler_kind(RULES[version], 8) == "triton"


@pytest.mark.parametrize("version", ["0.7", "0.8"])
def test_the_releases_not_read_keep_the_light_sampler_added_to_the_forward(version: str) -> None:
    got, message = activations(version=version, max_num_seqs=1024)
    assert message == "vllm.profile_activations"
    half, _ = activations(version=version, max_num_seqs=512)
    assert got - half == 512 * 128256 * 4 * 2  # the fp32 logits twice
    assert sampler_kind(RULES[version], 1024) == "light"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_graphs_come_out_of_the_pool_only_where_vllm_profiles_them_first(version: str) -> None:
    after = run(plan(version=version))
    estimated = run(plan(version=version, estimate_cudagraphs=True))
    eager = run(plan(version=version, enforce_eager=True))
    pool = part(after, "KV cache pool")
    assert has(after, "CUDA graphs") and not has(eager, "CUDA graphs")
    # captured after the pool is sized: enforce_eager leaves the pool as it is
    assert part(eager, "KV cache pool") == pool
    graphs = next(c for c in after.components if c.name == "CUDA graphs")
    assert getattr(graphs.explain, "id", "") == "vllm.cuda_graphs.after_pool"
    if version == "0.19":
        # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1: the estimate comes out of the pool
        assert pool - part(estimated, "KV cache pool") == K.VLLM_CUDA_GRAPHS
    else:
        assert part(estimated, "KV cache pool") == pool  # no such estimate in this release


def test_the_cuda_context_leaves_the_budget_from_0_10() -> None:
    inside = run(plan(version="0.8"))
    outside = run(plan(version="0.17"))
    # 0.8-0.9 count every non-torch byte, the context included, inside gpu_memory_utilization
    assert part(inside, "non-torch memory") == K.VLLM_NON_TORCH and not has(inside, "CUDA context")
    # 0.10 on measure from a snapshot taken after the context exists: the context (Hopper's) is apart
    assert part(outside, "CUDA context") == K.CUDA_CONTEXT_TORCH_HOPPER
    assert part(outside, "non-torch memory") == K.VLLM_NON_TORCH - K.CUDA_CONTEXT_TORCH_HOPPER
    # the pool gains the context (less what the two releases' samplers take apart)
    sampler = part(outside, "profile-run activations") - part(inside, "profile-run activations")
    gained = part(outside, "KV cache pool") - part(inside, "KV cache pool")
    assert gained == K.CUDA_CONTEXT_TORCH_HOPPER - sampler
    # the pool fills the budget either way; from 0.10 the context sits beside it on the GPU
    assert outside.device_bytes == inside.device_bytes + K.CUDA_CONTEXT_TORCH_HOPPER


def _refusal(est: Estimate) -> str:
    assert est.fit is not None
    return getattr(est.fit.message, "id", "") if est.fit.verdict == "does not fit" else ""


def test_the_graphs_captured_after_the_pool_must_fit_what_the_budget_leaves() -> None:
    # utilization 0.99 of an H100 leaves 0.80 GiB: the context (0.74 GiB) fits, the context and the graphs do not
    headroom = H100.memory_bytes - int(0.99 * H100.memory_bytes)
    assert K.CUDA_CONTEXT_TORCH_HOPPER < headroom < K.CUDA_CONTEXT_TORCH_HOPPER + K.VLLM_CUDA_GRAPHS
    est = run(plan(gpu_memory_utilization=0.99))
    assert _refusal(est) == "vllm.start.graphs_oom"
    assert est.fit is not None
    assert abs(float(est.fit.message.args["headroom"]) - headroom / 2**30) < 1e-9
    # without graphs it starts; with the estimate the graphs sit in the pool instead
    assert _refusal(run(plan(gpu_memory_utilization=0.99, enforce_eager=True))) == ""
    assert _refusal(run(plan(gpu_memory_utilization=0.99, estimate_cudagraphs=True))) == ""
    # 0.8 keeps the context inside the budget: 0.80 GiB holds the graphs alone
    assert _refusal(run(plan(gpu_memory_utilization=0.99, version="0.8"))) == ""


def test_a_budget_the_context_does_not_leave_room_for_is_refused_at_start_up() -> None:
    # utilization 0.995 leaves 0.40 GiB, less than the context: vLLM's init_device check (0.10 on)
    est = run(plan(gpu_memory_utilization=0.995, enforce_eager=True))
    assert _refusal(est) == "vllm.start.init_free"
    assert _refusal(run(plan(gpu_memory_utilization=0.995, enforce_eager=True, version="0.8"))) == ""


def _i27508(version: str) -> Estimate:
    """vllm-project/vllm issue 27508: gpt-oss-120b on one H100 at utilization 0.95, max_num_batched_tokens 1024, the
    config's context of 131072 tokens and the H100 default of 1024 sequences."""
    return run(
        plan(
            GPT_OSS_120B, input_len=131071, version=version, gpu_memory_utilization=0.95, max_num_batched_tokens=1024,
            max_num_seqs=1024,
        )
    )  # fmt: skip


def test_gpt_oss_120b_on_one_h100_does_not_start_where_its_sampler_sorts_the_vocabulary() -> None:
    # logged with ~0.11.0: refused, 1.71 GiB of KV cache left for a context that needs more
    refused = _i27508("0.10")
    assert _refusal(refused) == "vllm.start.one_request"
    sampler = 1024 * 201088 * 38  # gpt-oss's vocabulary, bf16 logits
    assert part(refused, "profile-run activations") >= sampler
    # the same plan starts where top-k / top-p no longer sort (0.17 on) and in 0.8-0.9
    for version in ("0.8", "0.17", "0.19"):
        assert _refusal(_i27508(version)) == "", version
