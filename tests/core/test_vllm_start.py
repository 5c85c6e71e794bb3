"""vLLM's start-up verdict (issue 20): the MXFP4 experts as vLLM's kernel for the GPU pads them, the fused-MoE buffers
of the profile run, and vLLM's own check that the KV cache left holds one request of max_model_len
(vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vramdesk.core.engines.vllm_moe import mxfp4_backend, mxfp4_expert_layout
from vramdesk.core.estimate import estimate, resolve_format
from vramdesk.core.gpu import GIB
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.core.weights import weight_bytes
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
GPT_OSS = "openai/gpt-oss-120b"
H100 = CAT.gpu("H100 SXM")


def plan(model: str = GPT_OSS, gpu: str = "H100 SXM", gpus: int = 1, **work: Any) -> Scenario:
    vllm = {k: work.pop(k) for k in ("gpu_memory_utilization", "max_num_seqs", "max_model_len") if k in work}
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "workload": {"kind": "inference", "engine": "vllm", "vllm": vllm, **work},
            "hardware": {"gpu": gpu, "gpu_count": gpus},
            "parallelism": {"tp": gpus},
        }
    )


def run(s: Scenario) -> Estimate:
    return estimate(s, CAT.facts(s.model.id), CAT.gpu(s.hardware.gpu))


def part(est: Estimate, name: str) -> int:
    return next(c.bytes for c in est.components if c.name == name)


def at_max_model_len(**kw: Any) -> Scenario:
    """vLLM's defaults: max_model_len is the config's context (131072 for gpt-oss), one request of it, and the
    OpenAI server's max_num_seqs on an H100 (its log: "Setting max_num_seqs to 1024 for OPENAI_API_SERVER usage
    context")."""
    max_model_len = CAT.facts(GPT_OSS).arch.max_position
    assert max_model_len == 131072
    return plan(input_len=max_model_len - 512, output_len=512, max_num_seqs=1024, **kw)


def test_gpt_oss_120b_on_one_h100_at_vllms_defaults_does_not_start_and_says_why() -> None:
    est = run(at_max_model_len())
    assert est.fit is not None
    assert est.fit.verdict == "does not fit"
    reason = est.fit.message
    assert getattr(reason, "id", "") == "vllm.start.one_request"
    args = reason.args
    available = part(est, "KV cache pool") / GIB
    assert args["seq_len"] == 131072
    assert abs(float(args["available"]) - available) < 1e-9  # the KV memory the pool component holds
    # one request's KV, worked out by hand: 18 full-attention layers keep all 131072 tokens, 18 sliding layers keep
    # their 128-token window plus a step of 8192 tokens (in 16-token blocks, one block more); 8 KV heads x (64 + 64)
    # x 2 B per token and layer
    per_token_layer = 8 * (64 + 64) * 2
    sliding = min(131072, -(-(128 - 1 + 8192) // 16) * 16 + 16)
    need = (18 * 131072 + 18 * sliding) * per_token_layer
    assert abs(float(args["need"]) - need / GIB) < 1e-9
    assert float(args["need"]) > float(args["available"])
    assert "vLLM would not start" in str(reason) and "131072" in str(reason)
    assert est.engine.max_concurrency is not None and est.engine.max_concurrency < 1


def test_gpt_oss_120b_with_tensor_parallel_2_on_two_h100_starts() -> None:
    est = run(at_max_model_len(gpus=2))
    assert est.fit is not None and est.fit.verdict == "fits"
    # vLLM's "Maximum concurrency for 131072 tokens per request": the pool over one request's KV
    assert est.engine.max_concurrency is not None and est.engine.max_concurrency > 5
    pool = next(c for c in est.components if c.name == "KV cache pool")
    assert "maximum concurrency for 131072 tokens per request" in str(pool.explain)


def _hopper_layer_by_hand() -> int:
    """One gpt-oss-120b MoE layer (128 experts, hidden 2880, intermediate 2880) as the Triton backend holds it on
    Hopper: create_weights pads the intermediate to 64 (2880 stays), triton_kernels' Hopper layout pads the packed
    input bytes to 64 and the output rows to 256, the scales' rows to 256 and their blocks to 2; biases in fp32."""

    def up(v: int, m: int) -> int:
        return -(-v // m) * m

    def matrix(out: int, in_: int) -> int:
        return up(in_ // 2, 64) * up(out, 256) + up(out, 256) * up(in_ // 32, 2)

    per_expert = matrix(2 * 2880, 2880) + matrix(2880, 2880) + (2 * 2880 + 2880) * 4
    return 128 * per_expert


def test_mxfp4_expert_bytes_with_padding_follow_the_source_rule_for_one_layer() -> None:
    arch = CAT.facts(GPT_OSS).arch
    moe = arch.layers[0].moe
    assert moe is not None
    hopper = mxfp4_expert_layout(moe, arch.hidden, 1, mxfp4_backend(H100))
    assert hopper.bytes == _hopper_layer_by_hand()
    plain = mxfp4_expert_layout(moe, arch.hidden, 1, None)
    # the checkpoint's layout: (E, 2I, H/2) + (E, 2I, H/32) and (E, H, I/2) + (E, H, I/32) uint8, bf16 biases
    assert plain.bytes == 128 * (5760 * (1440 + 90) + 2880 * (1440 + 90) + (5760 + 2880) * 2)
    # the estimate's weights on an H100 are the stored weights plus exactly that padding in all 36 layers
    w = part(run(plan()), "weights")
    facts = CAT.facts(GPT_OSS)
    fmt, _ = resolve_format(plan(), facts.arch)
    tensors = tuple(t for t in facts.tensors if t.part == "text")
    inventory = weight_bytes(tensors, fmt, frozenset({"text"}), facts.arch.n_layers).total
    assert w - inventory == 36 * (hopper.bytes - plain.bytes)
    # Marlin on Ampere: intermediate to 128 (2944), hidden to 256 (3072), no swizzle, bf16 biases
    marlin = mxfp4_expert_layout(moe, arch.hidden, 1, mxfp4_backend(CAT.gpu("A100 80GB SXM")))
    assert (marlin.intermediate, marlin.hidden) == (2944, 3072)
    assert marlin.bytes == 128 * (5888 * (1536 + 96) + 3072 * (1472 + 92) + (5888 + 3072) * 2)


def test_a_dense_models_vllm_estimate_is_unchanged() -> None:
    s = plan("meta-llama/Llama-3.1-8B", gpu="A100 40GB PCIe")
    est = run(s)
    golden = Path(__file__).resolve().parents[1] / "golden" / "golden.jsonl"
    case = next(
        json.loads(line)
        for line in golden.read_text(encoding="utf-8").splitlines()
        if json.loads(line)["case"] == "meta-llama/Llama-3.1-8B|inference|1|A100 40GB PCIe"  # (variant 1: vllm)
    )
    assert (est.peak_allocated_bytes, est.device_bytes, est.fit and est.fit.verdict) == (
        case["peak"],
        case["device"],
        case["verdict"],
    )
    activations = next(c for c in est.components if c.name == "profile-run activations")
    # no fused-MoE term (the default release's profile run peaks in its sampler)
    assert getattr(activations.explain, "id", "") == "vllm.profile_activations.sampler"


# ---------------------------------------------------------------------------------------------- max_model_len

LLAMA_8B = "meta-llama/Llama-3.1-8B"


def _warning(est: Estimate, message_id: str) -> Any:
    return next((w for w in est.warnings if getattr(w, "id", "") == message_id), None)


def test_without_max_model_len_a_plan_that_starts_warns_that_vllms_own_default_would_not() -> None:
    # Llama-3.1-8B on a 24 GB card: 4,608 tokens start; the model's 131,072 (vLLM's default) need 16 GiB of KV
    est = run(plan(LLAMA_8B, gpu="RTX 4090", input_len=4096, output_len=512))
    assert est.fit is not None and est.fit.verdict == "fits"
    warned = _warning(est, "vllm.default_max_model_len")
    assert warned is not None
    assert warned.args["model_len"] == 131072 and warned.args["seq_len"] == 4608
    assert abs(warned.args["need"] - 16.0) < 1e-9  # 32 layers x 8 kv heads x 256 x 2 B x 131,072 tokens
    fits = warned.args["max_len"]
    # the largest length named starts, one more block of tokens does not
    at_most = run(plan(LLAMA_8B, gpu="RTX 4090", input_len=fits - 512, output_len=512, max_model_len=fits))
    assert at_most.fit is not None and at_most.fit.verdict != "does not fit"
    too_long = run(plan(LLAMA_8B, gpu="RTX 4090", input_len=4096, output_len=512, max_model_len=fits + 64))
    assert too_long.fit is not None and too_long.fit.verdict == "does not fit"
    assert getattr(too_long.fit.message, "id", "") == "vllm.start.one_request.set"
    # with max_model_len set, no default warning
    assert _warning(run(plan(LLAMA_8B, gpu="RTX 4090", max_model_len=4608)), "vllm.default_max_model_len") is None


def test_max_model_len_sets_the_start_check_and_the_concurrency_not_the_pool() -> None:
    short = run(plan(LLAMA_8B, gpu="RTX 4090", input_len=4096, output_len=512, max_model_len=4608))
    long = run(plan(LLAMA_8B, gpu="RTX 4090", input_len=4096, output_len=512, max_model_len=16384))
    assert part(short, "KV cache pool") == part(long, "KV cache pool")
    assert short.engine.max_concurrency is not None and long.engine.max_concurrency is not None
    assert abs(short.engine.max_concurrency / long.engine.max_concurrency - 16384 / 4608) < 0.01


def test_a_plan_longer_than_its_max_model_len_is_warned_about() -> None:
    est = run(plan(LLAMA_8B, gpu="RTX 4090", input_len=4096, output_len=512, max_model_len=2048))
    warned = _warning(est, "vllm.request_longer_than_max_model_len")
    assert warned is not None and warned.args["tokens"] == 4608 and warned.args["max_len"] == 2048


def test_a_gpu_polled_again_adds_no_mxfp4_padding_entry() -> None:
    # a detected GPU is a new object (its free memory) at every poll: the padding is kept by kernel and name
    from vramdesk.core import memo

    s = plan(GPT_OSS)  # (its checkpoint is MXFP4)
    facts = CAT.facts(GPT_OSS)
    estimate(s, facts, H100)
    kept = memo.entries(facts.arch)
    for free in range(1, 20):
        estimate(s, facts, H100.model_copy(update={"free_bytes": free * GIB}))
    assert memo.entries(facts.arch) == kept
