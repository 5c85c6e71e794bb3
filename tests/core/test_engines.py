"""The engine registry and the KV layer classes: every engine answers every question, the registry's names are the
scenario's, and the layer classes keep what the table in ``vramdesk.core.kv``'s docstring says."""

from __future__ import annotations

import inspect
from typing import get_args

import pytest

from vramdesk.core import scenario
from vramdesk.core.architecture import Architecture, AttentionKind, LayerSpec, LinearAttnSpec, MlaSpec
from vramdesk.core.engines import ENGINES, Engine, UnknownEngineError, engine
from vramdesk.core.kv_layers import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KvLayerSpec,
    KvOptions,
    LinearAttentionSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
    kv_layer,
)
from vramdesk.core.scenario import InferenceWorkload

NAMES = ("transformers", "vllm", "llamacpp", "sglang", "ollama")
MLA = MlaSpec(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
DELTANET = LinearAttnSpec(num_k_heads=16, num_v_heads=32, k_head_dim=128, v_head_dim=128, conv_kernel=4)


def _layer(kind: AttentionKind, **extra: object) -> LayerSpec:
    fields: dict[str, object] = {"n_heads": 32, "n_kv_heads": 8, "head_dim": 128, "v_head_dim": 128}
    return LayerSpec.model_validate({"index": 0, "attention": kind, **fields, **extra})


def test_the_registry_holds_the_scenarios_engines() -> None:
    assert tuple(ENGINES) == get_args(scenario.Engine) == NAMES
    for name, eng in ENGINES.items():
        assert eng.name == name and engine(name) is eng and isinstance(eng, Engine)


def test_every_engine_answers_every_question() -> None:
    questions = [name for name in Engine.__annotations__]
    methods = [name for name, _ in inspect.getmembers(Engine, inspect.isfunction) if not name.startswith("_")]
    assert {"loads_vision", "has_pool_budget", "expands_mla"} <= set(questions)
    assert {"run", "tp_problem", "full_tokens", "sliding_tokens", "chunked_tokens", "linear_state_bytes"} <= set(
        methods
    )
    for eng in ENGINES.values():
        missing = [q for q in questions if not hasattr(eng, q)]
        assert missing == [], f"{eng.name} does not answer {missing}"
        assert not type(eng).__abstractmethods__
        assert eng.display_name


def test_an_unknown_engine_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(UnknownEngineError) as err:
        engine("tgi")
    assert str(err.value) == "unknown engine 'tgi': the engines are transformers, vllm, llamacpp, sglang, ollama"
    assert isinstance(err.value, ValueError) and "\n" not in str(err.value)


def test_the_capabilities_are_the_name_comparisons_they_replace() -> None:
    def having(flag: str) -> set[str]:
        return {name for name, eng in ENGINES.items() if getattr(eng, flag)}

    assert having("loads_vision") == {"transformers", "vllm", "sglang"}
    assert having("runs_gguf") == {"llamacpp", "ollama"}
    assert having("serves_across_machines") == having("grows_by_tensor_parallel") == {"vllm", "sglang"}
    # the solver's pool changes are vLLM's settings; SGLang's static share is not one of them
    assert having("has_pool_budget") == {"vllm"}
    assert having("reads_tp") == {"transformers", "vllm", "sglang"}
    assert having("offloads_gpu_layers") == {"llamacpp"}
    assert having("may_leave_gpus_empty") == having("streams_offloaded_weights") == {"transformers"}
    assert having("expands_mla") == {"transformers"}
    assert {n: e.auto_kv_dtype for n, e in ENGINES.items()} == {
        "transformers": None,
        "vllm": None,
        "llamacpp": "fp16",
        "sglang": None,
        "ollama": "fp16",
    }
    assert {n: e.step_overhead_per_layer_s for n, e in ENGINES.items()} == {
        "transformers": 150e-6,
        "vllm": 0.0,
        "llamacpp": 0.0,
        "sglang": 0.0,
        "ollama": 0.0,
    }


def test_prefill_chunk_per_engine() -> None:
    work = InferenceWorkload.model_validate(
        {
            "vllm": {"max_num_batched_tokens": 2048},
            "llamacpp": {"n_ubatch": 256},
            "sglang": {"chunked_prefill_size": 1024},
        }
    )
    assert [engine(n).prefill_chunk(work, 7000) for n in NAMES] == [7000, 2048, 256, 1024, 512]
    assert engine("vllm").prefill_chunk(InferenceWorkload(), 7000) == 8192
    # SGLang's chunked_prefill_size on an 80-160 GiB GPU
    assert engine("sglang").prefill_chunk(InferenceWorkload(), 7000) == 8192


def test_only_vllm_and_sglang_check_tensor_parallel() -> None:
    arch = Architecture.model_construct(layers=(_layer(AttentionKind.FULL, n_heads=30),))
    assert engine("vllm").tp_problem(arch, 4) == "vLLM: tensor parallel 4 does not divide the 30 attention heads"
    assert engine("sglang").tp_problem(arch, 4) == "SGLang: tensor parallel 4 does not divide the 30 attention heads"
    assert engine("transformers").tp_problem(arch, 4) is None and engine("llamacpp").tp_problem(arch, 4) is None


def test_each_layer_kind_has_its_class() -> None:
    assert type(kv_layer(_layer(AttentionKind.FULL))) is FullAttentionSpec
    assert type(kv_layer(_layer(AttentionKind.SLIDING, window=4096))) is SlidingWindowSpec
    assert type(kv_layer(_layer(AttentionKind.CHUNKED, window=8192))) is ChunkedLocalAttentionSpec
    assert type(kv_layer(_layer(AttentionKind.MLA, mla=MLA))) is MLAAttentionSpec
    assert type(kv_layer(_layer(AttentionKind.LINEAR, linear=DELTANET))) is LinearAttentionSpec
    assert type(kv_layer(_layer(AttentionKind.NONE))) is KvLayerSpec
    # an MLA layer without its geometry is priced as full attention over its KV heads
    assert type(kv_layer(_layer(AttentionKind.MLA))) is FullAttentionSpec


# the sliding row of kv.py's table, worked out by hand: window 4096, max_num_batched_tokens 8192, 16-token pages,
# n_ubatch 512, 256-cell llama.cpp padding, two sequences
SLIDING_ROW = [
    # T = 100,000 tokens: transformers min(T, window); vLLM window - 1 + batched tokens in pages, plus one page;
    # llama.cpp min(n_ctx, window x seqs + ubatch) cells over both sequences
    # SGLang (no hybrid SWA pool): every token, one by one (page_size 1); Ollama: llama.cpp's cells
    (
        100_000,
        {
            "transformers": 4096,
            "vllm": 12288 + 16,
            "llamacpp": (4096 * 2 + 512) // 2,
            "sglang": 100_000,
            "ollama": (4096 * 2 + 512) // 2,
        },
    ),
    # T = 1,000 tokens, shorter than the window: every token (vLLM in pages, llama.cpp in 256-cell steps)
    (1000, {"transformers": 1000, "vllm": 1008, "llamacpp": 2048 // 2, "sglang": 1000, "ollama": 2048 // 2}),
]


@pytest.mark.parametrize(("tokens", "kept"), SLIDING_ROW)
def test_a_sliding_layer_keeps_what_the_table_says(tokens: int, kept: dict[str, int]) -> None:
    spec = kv_layer(_layer(AttentionKind.SLIDING, window=4096))
    opts = KvOptions(block_size=16, batched_tokens=8192, n_ubatch=512)
    assert {name: spec.tokens_kept(engine(name), tokens, 2, opts) for name in NAMES} == kept
    # llama.cpp's --swa-full keeps every cell
    assert spec.tokens_kept(engine("llamacpp"), tokens, 2, KvOptions(swa_full=True)) == -(-tokens * 2 // 256) * 256 // 2


def test_chunked_and_full_layers_per_engine() -> None:
    chunked = kv_layer(_layer(AttentionKind.CHUNKED, window=8192))
    full = kv_layer(_layer(AttentionKind.FULL))
    opts = KvOptions()
    # vLLM: chunk + batched tokens, no extra page (a sliding window of the same size keeps one page more)
    assert chunked.tokens_kept(engine("vllm"), 100_000, 1, opts) == 8192 + 8192
    assert kv_layer(_layer(AttentionKind.SLIDING, window=8192)).tokens_kept(engine("vllm"), 100_000, 1, opts) == 16400
    assert chunked.tokens_kept(engine("transformers"), 100_000, 1, opts) == 8192
    assert chunked.tokens_kept(engine("sglang"), 100_000, 1, opts) == 100_000
    assert [full.tokens_kept(engine(n), 1000, 3, opts) for n in NAMES] == [1000, 1008, 1024, 1000, 1024]
    assert [full.elements_per_token(engine(n)) for n in NAMES] == [8 * 256] * 5


def test_mla_stores_the_latent_except_in_transformers() -> None:
    spec = kv_layer(_layer(AttentionKind.MLA, n_heads=128, mla=MLA))
    assert [spec.elements_per_token(engine(n)) for n in NAMES] == [
        128 * (128 + 64 + 128),
        *[512 + 64] * 4,
    ]
    assert "expanded K and V" in spec.describe(61, engine("transformers"))
    assert spec.describe(61, engine("vllm")) == "61 MLA layers x latent (kv_lora_rank 512 + qk_rope_head_dim 64)"


def test_linear_state_per_engine() -> None:
    spec = kv_layer(_layer(AttentionKind.LINEAR, linear=DELTANET))
    conv, rec = DELTANET.conv_dim, DELTANET.recurrent_elements
    assert spec.elements_per_token(engine("vllm")) == 0 and spec.tokens_kept(engine("vllm"), 1000, 1, KvOptions()) == 0
    assert [spec.state_bytes_per_sequence(engine(n), 2) for n in NAMES] == [
        4 * conv * 2 + rec * 4,  # transformers: the whole conv window in the compute dtype, fp32 state
        3 * conv * 2 + rec * 4,  # vLLM: kernel - 1 conv positions
        4 * (3 * conv + rec),  # llama.cpp: F32 conv (kernel - 1) + F32 state
        3 * conv * 2 + rec * 4,  # SGLang: as vLLM
        4 * (3 * conv + rec),  # Ollama: llama.cpp's
    ]
