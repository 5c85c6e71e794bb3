"""Ollama's engine: llama.cpp's numbers with Ollama's defaults by release (num_ctx, parallel slots, flash attention,
the KV type) and its own fit of the layers to the GPU's free memory (457 MiB minimum, OLLAMA_GPU_OVERHEAD, the
graph; one layer held back up to 0.12.11), checked against the llama.cpp engine's own estimate of the same run."""

from __future__ import annotations

from typing import Any

import pytest

from vramdesk.core.engines.ollama import supports_flash
from vramdesk.core.estimate import estimate
from vramdesk.core.gpu import MIB
from vramdesk.core.messages import Text
from vramdesk.core.result import Estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

CAT = default_catalog()
L8, L70 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"
#: Llama-3.1-8B: one token's F16 K + V over 32 layers of 8 KV heads x (128 + 128)
L8_CELL = 32 * 8 * 256 * 2
#: what Ollama sets aside on a CUDA GPU before it places layers
MINIMUM = 457 * MIB


def _scenario(model: str, gpu: str | None, engine: str = "ollama", weights: str = "q4_k_m", **work: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "model": {"id": model},
            "weights": weights,
            "workload": {"kind": "inference", "engine": engine, **work},
            "hardware": {"gpu": gpu},
        }
    )


def _estimate(model: str, gpu: str | None, engine: str = "ollama", **work: Any) -> Estimate:
    s = _scenario(model, gpu, engine, **work)
    return estimate(s, CAT.facts(model), CAT.gpu(gpu) if gpu else None)


def _llamacpp(model: str, gpu: str | None, cells: int, slots: int, **llamacpp: Any) -> Estimate:
    """llama.cpp's own estimate of the server Ollama starts: -c cells x slots over ``slots`` sequences."""
    work = {"batch": slots, "input_len": cells, "output_len": 0, "llamacpp": llamacpp}
    return _estimate(model, gpu, "llamacpp", **work)


def _bytes(est: Estimate, name: str) -> int:
    return sum(c.bytes for c in est.components if c.name == name)


def _ids(est: Estimate) -> set[str]:
    return {t.id for t in est.warnings if isinstance(t, Text) and t.id}


@pytest.mark.parametrize(
    ("version", "num_ctx", "slots", "flash"),
    [
        # 2048 tokens and 4 slots (the whole 8B model fits with them); 4096 and 2 slots from 0.6.7; one slot from
        # 0.10; flash attention by default from 0.12.4; from 0.15.5 a 24 GiB card gets 32k
        ("0.2-0.6.6", 2048, 4, False),
        ("0.6.7-0.9.2", 4096, 2, False),
        ("0.9.3-0.9.6", 4096, 2, False),
        ("0.10-0.12.3", 4096, 1, False),
        ("0.12.4-0.12.11", 4096, 1, True),
        ("0.13-0.15.4", 4096, 1, True),
        ("0.15.5-0.24", 32768, 1, True),
    ],
)
def test_each_release_runs_llama_cpp_with_its_own_defaults(version: str, num_ctx: int, slots: int, flash: bool) -> None:
    est = _estimate(L8, "RTX 4090", ollama={"ollama_version": version})
    assert _bytes(est, "KV cache") == num_ctx * slots * L8_CELL
    same = _llamacpp(L8, "RTX 4090", num_ctx, slots, flash_attn=flash)
    for name in ("weights", "KV cache", "compute buffer"):
        assert _bytes(est, name) == _bytes(same, name), name
    assert est.device_bytes == same.device_bytes
    kv = next(c for c in est.components if c.name == "KV cache")
    assert f"num_ctx {num_ctx} x num_parallel {slots} (Ollama {version}" in kv.explain
    assert est.engine.engine == "ollama" and est.engine.gpu_layers == 32


@pytest.mark.parametrize("kv", ["f16", "q8_0", "q4_0"])
def test_the_kv_cache_type_prices_as_llama_cpps_cache_type(kv: str) -> None:
    est = _estimate(L8, "RTX 4090", ollama={"num_ctx": 8192, "num_parallel": 3, "kv_cache_type": kv})
    llama_kv = {"f16": "fp16", "q8_0": "q8_0", "q4_0": "q4_0"}[kv]
    same = _estimate(
        L8,
        "RTX 4090",
        "llamacpp",
        batch=3,
        input_len=8192,
        output_len=0,
        kv_dtype=llama_kv,
        llamacpp={"flash_attn": True},
    )
    assert _bytes(est, "KV cache") == _bytes(same, "KV cache")
    # q8_0: 34 bytes per 32 elements, q4_0: 18
    per_element = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}[kv]
    assert _bytes(est, "KV cache") == round(8192 * 3 * L8_CELL / 2 * per_element)


def test_a_quantized_kv_cache_without_flash_attention_stays_f16() -> None:
    est = _estimate(L8, "RTX 4090", ollama={"num_ctx": 4096, "kv_cache_type": "q8_0", "flash_attention": "off"})
    assert _bytes(est, "KV cache") == 4096 * L8_CELL
    assert "ollama.kv.needs_flash" in _ids(est)
    # the workload's own KV setting is not Ollama's: it is named and left out
    est = _estimate(L8, "RTX 4090", kv_dtype="q4_0", ollama={"num_ctx": 4096})
    assert _bytes(est, "KV cache") == 4096 * L8_CELL and "ollama.kv.setting" in _ids(est)


@pytest.mark.parametrize(
    ("gpu", "overhead_mib", "num_ctx"),
    [
        ("RTX 4060 Ti 16GB", 0, 4096),
        ("RTX 4090", 0, 32768),
        # OLLAMA_GPU_OVERHEAD counts against the tier: 24 GiB less 2 GiB is below 23 GiB
        ("RTX 4090", 2048, 4096),
        # 256k on an 80 GB card, cut to the model's trained 128k
        ("H100 SXM", 0, 131072),
    ],
)
def test_newer_releases_take_the_context_from_the_gpus_memory(gpu: str, overhead_mib: int, num_ctx: int) -> None:
    est = _estimate(L8, gpu, ollama={"gpu_overhead_mib": overhead_mib})
    assert est.engine.kv_bytes_per_token == L8_CELL
    assert _bytes(est, "KV cache") == num_ctx * L8_CELL


@pytest.mark.parametrize(
    ("gpu", "num_ctx"),
    [(gpu, n) for gpu in ("RTX 3080", "RTX 4080", "RTX 4090") for n in (2048, 6144, 12288, 20480, 32768, 49152)],
)
def test_the_fit_takes_the_most_layers_that_leave_ollamas_reserve(gpu: str, num_ctx: int) -> None:
    est = _estimate(L70, gpu, ollama={"num_ctx": num_ctx})
    layers = est.engine.gpu_layers
    assert layers is not None and 0 < layers < 80
    room = CAT.gpu(gpu).memory_bytes - MINIMUM
    here = _llamacpp(L70, gpu, num_ctx, 1, n_gpu_layers=layers, flash_attn=True)
    more = _llamacpp(L70, gpu, num_ctx, 1, n_gpu_layers=layers + 1, flash_attn=True)
    assert here.peak_allocated_bytes <= room < more.peak_allocated_bytes
    assert est.device_bytes == here.device_bytes


def test_a_model_that_fits_puts_every_layer_and_the_output_layer_on_the_gpu() -> None:
    est = _estimate(L70, "L40S", ollama={"num_ctx": 2048})
    assert est.engine.gpu_layers == 80 and "ollama.partial" not in _ids(est)
    assert next(c for c in est.components if c.name == "weights").explain.startswith("offloaded 81/81 layers")
    assert est.device_bytes == _llamacpp(L70, "L40S", 2048, 1, flash_attn=True).device_bytes


def test_a_model_that_does_not_fit_gets_the_most_layers_the_reserve_leaves_room_for() -> None:
    est = _estimate(L70, "RTX 4090")
    gpu = CAT.gpu("RTX 4090")
    layers = est.engine.gpu_layers
    assert layers is not None and 0 < layers < 80
    assert est.engine.total_layers == 80
    room = gpu.memory_bytes - MINIMUM
    # the same llama.cpp run with that many layers fits in the room; one layer more does not
    here = _llamacpp(L70, "RTX 4090", 32768, 1, n_gpu_layers=layers, flash_attn=True)
    more = _llamacpp(L70, "RTX 4090", 32768, 1, n_gpu_layers=layers + 1, flash_attn=True)
    assert here.peak_allocated_bytes <= room < more.peak_allocated_bytes
    assert est.peak_allocated_bytes == here.peak_allocated_bytes
    assert _bytes(est, "weights") == _bytes(here, "weights")
    said = f"offloaded {layers}/81 layers to GPU"
    assert any(said in w for w in est.warnings) and "ollama.partial" in _ids(est)
    weights = next(c for c in est.components if c.name == "weights")
    assert weights.explain.startswith(said)
    # OLLAMA_GPU_OVERHEAD leaves that much more free: fewer layers for the same context (left to the release, the
    # context drops to 4k below 23 GiB, and more layers fit)
    spare = _estimate(L70, "RTX 4090", ollama={"gpu_overhead_mib": 2048, "num_ctx": 32768}).engine.gpu_layers
    assert spare is not None and spare < layers
    short = _estimate(L70, "RTX 4090", ollama={"gpu_overhead_mib": 2048}).engine.gpu_layers
    assert short is not None and short > layers


def test_releases_up_to_0_12_hold_one_layer_back() -> None:
    work = {"num_ctx": 8192, "flash_attention": "on"}
    old = _estimate(L70, "RTX 4090", ollama={"ollama_version": "0.12.4-0.12.11", **work})
    new = _estimate(L70, "RTX 4090", ollama={"ollama_version": "0.13-0.15.4", **work})
    assert old.engine.gpu_layers is not None and new.engine.gpu_layers is not None
    assert old.engine.gpu_layers < new.engine.gpu_layers
    # block 0's weights and its KV (8192 cells of 8 KV heads x 256 in F16) are held back
    assert "one layer held back" in next(c for c in old.components if c.name == "weights").explain
    ngl = old.engine.gpu_layers
    room = CAT.gpu("RTX 4090").memory_bytes - MINIMUM
    here = _llamacpp(L70, "RTX 4090", 8192, 1, n_gpu_layers=ngl, flash_attn=True)
    more = _llamacpp(L70, "RTX 4090", 8192, 1, n_gpu_layers=ngl + 1, flash_attn=True)
    kv_layer = 8192 * 8 * 256 * 2
    one = _bytes(_llamacpp(L70, "RTX 4090", 8192, 1, n_gpu_layers=1, flash_attn=True), "weights")
    assert here.peak_allocated_bytes + one + kv_layer <= room < more.peak_allocated_bytes + one + kv_layer


def test_parallel_slots_are_kept_only_when_the_model_then_fits() -> None:
    # 0.2-0.6.6 tries 4 slots: the 70B model does not fit with them, so it gets one
    est = _estimate(L70, "RTX 4090", batch=3, ollama={"ollama_version": "0.2-0.6.6"})
    assert _bytes(est, "KV cache") < 2048 * 2 * 80 * 8 * 256 * 2 and est.engine.kv_bytes_per_token
    assert "num_parallel 1" in next(c for c in est.components if c.name == "KV cache").explain
    assert "ollama.queued" in _ids(est)
    assert any("2 of the 3 wait in its queue" in w for w in est.warnings)
    # set slots are kept whatever the fit
    four = _estimate(L8, "RTX 4090", batch=3, ollama={"num_parallel": 4, "num_ctx": 2048})
    assert _bytes(four, "KV cache") == 4 * 2048 * L8_CELL and "ollama.queued" not in _ids(four)


def test_num_gpu_places_the_layers_asked_for() -> None:
    est = _estimate(L70, "RTX 4090", ollama={"num_gpu": 20, "num_ctx": 4096})
    same = _llamacpp(L70, "RTX 4090", 4096, 1, n_gpu_layers=20, flash_attn=True)
    assert est.engine.gpu_layers == 20 and est.device_bytes == same.device_bytes
    assert "ollama.partial" not in _ids(est)
    assert next(c for c in est.components if c.name == "weights").explain.startswith("offloaded 20/81 layers")


def test_a_request_longer_than_num_ctx_is_named() -> None:
    est = _estimate(L8, "RTX 4090", input_len=4000, output_len=200, ollama={"num_ctx": 4096})
    assert "ollama.request.too_long" in _ids(est)
    assert any("a request of 4,200 tokens is longer than num_ctx 4,096" in w for w in est.warnings)
    # the KV cache is the server's, whatever the request
    assert _bytes(est, "KV cache") == 4096 * L8_CELL


def test_no_gpu_keeps_every_layer_and_the_smallest_default_context() -> None:
    est = _estimate(L8, None)
    assert est.engine.gpu_layers == 32 and _bytes(est, "KV cache") == 4096 * L8_CELL
    assert est.fit is None


def test_mla_heads_of_two_sizes_turn_flash_attention_off() -> None:
    assert supports_flash(CAT.facts(L8).arch)
    assert not supports_flash(CAT.facts("deepseek-ai/DeepSeek-V3").arch)


def test_the_cut_to_the_trained_context_came_in_0_9_3() -> None:
    # Llama-3.1-8B is trained on 131,072 tokens; 0.6.7-0.9.2 allocate what was asked (in 256-cell steps)
    asked = {"num_ctx": 200_000, "num_parallel": 1}
    old = _estimate(L8, "H100 SXM", ollama={"ollama_version": "0.6.7-0.9.2", **asked})
    new = _estimate(L8, "H100 SXM", ollama={"ollama_version": "0.9.3-0.9.6", **asked})
    assert _bytes(old, "KV cache") == 200_192 * L8_CELL
    assert _bytes(new, "KV cache") == 131_072 * L8_CELL
    assert "the model's trained context" in next(c for c in new.components if c.name == "KV cache").explain


def test_releases_up_to_0_12_reserve_the_larger_graph_for_every_placement() -> None:
    """llm/memory.go EstimateGPULayers checks each layer against max(graphPartialOffload, graphFullOffload). Gemma 2
    9B Q4_0 with 6.9 GiB free (ollama/ollama#5821, a 0.2 release): the partial graph (1.2 GiB) is larger than the
    full one (507 MiB), so Ollama placed 42 of 43 layers; with each run's own graph the output layer fits too."""
    model, gpu = "google/gemma-2-9b-it", CAT.gpu("RTX 3060 12GB")
    free = gpu.model_copy(update={"free_bytes": int(6.9 * 1024 * MIB)})

    def run(version: str) -> Estimate:
        s = _scenario(model, "RTX 3060 12GB", weights="q4_0", ollama={"ollama_version": version})
        return estimate(s, CAT.facts(model), free)

    old = run("0.2-0.6.6")
    assert old.engine.gpu_layers == 42 and "offloaded 42/43 layers" in str(_weights_text(old))
    full = _llamacpp(model, "RTX 3060 12GB", 2048, 1, n_gpu_layers=43)
    partial = _llamacpp(model, "RTX 3060 12GB", 2048, 1, n_gpu_layers=42)
    assert _bytes(partial, "compute buffer") > _bytes(full, "compute buffer")


def _weights_text(est: Estimate) -> str:
    return next(c.explain for c in est.components if c.name == "weights")
