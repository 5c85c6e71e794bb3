"""Mamba-2 hybrids (Nemotron-H, Nemotron-Nano-v2, Nemotron 3 Nano): each config reads one mixer per layer from its
``hybrid_override_pattern``, names the tensors modular_nemotron_h.py builds, counts the published total, holds the
recurrent state each engine's own code allocates, and estimates on every engine.

Configs: the published values (full size). Copies were found with the index's exact-string search of public code
(``find_string``), whose hits carry a file id but no repository or path; the id is given. Where no config.json copy
is stored, the geometry is NVIDIA's own Megatron-Bridge provider (NVIDIA-NeMo/Megatron-Bridge,
src/megatron/bridge/models/nemotronh/nemotron_h_provider.py: hybrid_layer_pattern, hidden_size, mamba_num_heads,
mamba_head_dim 64 / 80, mamba_state_dim, mamba_num_groups 8, num_query_groups 8, kv_channels 128,
ffn_hidden_size, num_attention_heads; vocabulary 131072 as every Nemotron-H config). Fields no reader looks at
(token ids, rope settings, dropout, time-step limits) are left out.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vramdesk.core.architecture import AttentionKind, ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.engines import ENGINES
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.families import family_of
from vramdesk.core.inventory import Tensor, build_inventory, count_params
from vramdesk.core.kv import state_bytes_per_sequence
from vramdesk.core.scenario import Scenario

_NEMOTRON_H: dict[str, Any] = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "attention_bias": False,
    "conv_kernel": 4,
    "mamba_proj_bias": False,
    "mlp_bias": False,
    "n_groups": 8,
    "num_key_value_heads": 8,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_bias": False,
    "use_conv_bias": True,
    "vocab_size": 131072,
}

#: nvidia/Nemotron-H-8B-Base-8K (config as a TensorRT-LLM unit test quotes it whole, find_string id 6259304594)
NEMOTRON_H_8B = {
    **_NEMOTRON_H,
    "attention_head_dim": 128,
    "hidden_size": 4096,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "intermediate_size": 21504,
    "mamba_head_dim": 64,
    "mamba_num_heads": 128,
    "max_position_embeddings": 8192,
    "num_attention_heads": 32,
    "num_hidden_layers": 52,
    "ssm_state_size": 128,
}

#: nvidia/Nemotron-H-56B-Base-8K (Megatron-Bridge's NemotronHModelProvider56B; 118 layers: 54 Mamba-2, 54 MLP and 10
#: attention, as NVIDIA's Nemotron-H page states)
NEMOTRON_H_56B = {
    **_NEMOTRON_H,
    "head_dim": 128,
    "hidden_size": 8192,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
    "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
    "intermediate_size": 32768,
    "mamba_head_dim": 64,
    "mamba_num_heads": 256,
    "num_attention_heads": 64,
    "num_hidden_layers": 118,
    "ssm_state_size": 256,
}

#: nvidia/Nemotron-H-47B-Base-8K (Megatron-Bridge's NemotronHModelProvider47B: the 56B pruned by MiniPuzzle)
NEMOTRON_H_47B = {
    **NEMOTRON_H_56B,
    "hybrid_override_pattern": "M-M-M-M-M-M-M-M-M*-M-M-M-M-M-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-M-M---MM---M-M*"
    "-M-M-M-M-M-",
    "intermediate_size": 30720,
    "num_hidden_layers": 98,
}

#: nvidia/NVIDIA-Nemotron-Nano-9B-v2 (Megatron-Bridge's NemotronNanoModelProvider9Bv2; the same geometry in a
#: trimmed copy of its config.json, find_string id 60558215653)
NEMOTRON_NANO_9B_V2 = {
    **_NEMOTRON_H,
    "head_dim": 128,
    "hidden_size": 4480,
    "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
    "intermediate_size": 15680,
    "mamba_head_dim": 80,
    "mamba_num_heads": 128,
    "max_position_embeddings": 131072,
    "num_attention_heads": 40,
    "num_hidden_layers": 56,
    "ssm_state_size": 128,
}

#: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 (its config.json quoted verbatim in a bring-up note, find_string id
#: 59685165993)
NEMOTRON_3_NANO_30B = {
    **_NEMOTRON_H,
    "head_dim": 128,
    "hidden_size": 2688,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "intermediate_size": 1856,
    "mamba_head_dim": 64,
    "mamba_num_heads": 64,
    "mamba_ssm_cache_dtype": "float32",
    "max_position_embeddings": 262144,
    "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712,
    "n_group": 1,
    "n_routed_experts": 128,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 32,
    "num_experts_per_tok": 6,
    "num_hidden_layers": 52,
    "num_key_value_heads": 2,
    "routed_scaling_factor": 2.5,
    "ssm_state_size": 128,
    "topk_group": 1,
}

#: (config, published total, tolerance, source). Exact figures are counts of the checkpoints' own tensors; the
#: model cards' "56B" / "47B" are rounded to the billion (tolerance half a billion)
TOTALS: dict[str, tuple[dict[str, Any], int, int, str]] = {
    "Nemotron-H-8B-Base-8K": (
        NEMOTRON_H_8B,
        8_100_852_736,
        0,
        "a stored analysis of the checkpoint's backbone.* tensors, 'Total Parameters: 8.1B (8,100,852,736)' "
        "(code search: 'Nemotron-H-8B-Base-8K Architecture Analysis Summary')",
    ),
    "NVIDIA-Nemotron-Nano-9B-v2": (
        NEMOTRON_NANO_9B_V2,
        8_888_227_328,
        0,
        "a fixture table of safetensors totals (find_string '8888227328', id 70911651117, beside GLM-4.5-Air's "
        "110,468,824,832)",
    ),
    "Nemotron-H-56B-Base-8K": (
        NEMOTRON_H_56B,
        56_000_000_000,
        500_000_000,
        "huggingface.co/nvidia/Nemotron-H-56B-Base-8K: 'This model has 56B model parameters.'",
    ),
    "Nemotron-H-47B-Base-8K": (
        NEMOTRON_H_47B,
        47_000_000_000,
        500_000_000,
        "huggingface.co/nvidia/Nemotron-H-47B-Base-8K: 'This model has 47B model parameters.'",
    ),
    "NVIDIA-Nemotron-3-Nano-30B-A3B": (
        NEMOTRON_3_NANO_30B,
        31_577_940_288,
        0,
        "llama.cpp's count of its GGUF (llama-bench model_n_params 31577940288 for unsloth/Nemotron-3-Nano-30B-A3B-"
        "GGUF, find_string id 58091926432; llama-server's n_params, id 36988296767)",
    ),
}


def _arch(config: dict[str, Any]) -> Any:
    return normalize(copy.deepcopy(config))


def _by_name(config: dict[str, Any]) -> dict[str, Tensor]:
    return {t.name: t for t in build_inventory(_arch(config))}


@pytest.mark.parametrize("name", list(TOTALS))
def test_each_model_reads_as_nemotron_h_and_counts_the_published_total(name: str) -> None:
    config, published, tolerance, _source = TOTALS[name]
    arch = _arch(config)
    assert (arch.family, family_of(arch).name, arch.warnings) == ("nemotron_h", "nemotron_h", ())
    total = count_params(build_inventory(arch)).text
    assert abs(total - published) <= tolerance, f"{name}: {total:,} vs {published:,}"
    if tolerance == 0:
        assert total == published


def test_the_56b_is_no_longer_counted_as_118_llama_layers() -> None:
    # issue 24: read as a generic Llama stack it counted 114.99 B; each layer has one mixer
    arch = _arch(NEMOTRON_H_56B)
    assert [arch.count(k) for k in (AttentionKind.LINEAR, AttentionKind.FULL, AttentionKind.NONE)] == [54, 10, 54]
    assert count_params(build_inventory(arch)).text == 56_324_350_464


def test_nemotron_3_nano_active_parameters_match_the_model_card() -> None:
    # the model card: "31.6B total parameters, approximately 3.2B active (3.6B including embeddings)": routed experts
    # count top_k / n_routed_experts; without the 131072 x 2688 token embedding (the head is a matmul every token)
    counts = count_params(build_inventory(_arch(NEMOTRON_3_NANO_30B)))
    assert counts.active == 3_580_076_352
    assert round((counts.active - 131072 * 2688) / 1e9, 1) == 3.2
    assert round(counts.active / 1e9, 1) == 3.6


def test_a_mamba_layer_has_the_mixers_tensors_and_nothing_else() -> None:
    # 8B layer 0 ("M"): in_proj = intermediate 8192 + conv_dim (8192 + 2 x 8 x 128) + 128 heads = 18560 rows, as the
    # checkpoint's backbone.layers.0.mixer.in_proj (18560 x 4096)
    layer0 = {n: t.shape for n, t in _by_name(NEMOTRON_H_8B).items() if n.startswith("backbone.layers.0.")}
    m = "backbone.layers.0.mixer"
    assert layer0 == {
        f"{m}.in_proj.weight": (18560, 4096),
        f"{m}.conv1d.weight": (10240, 1, 4),
        f"{m}.conv1d.bias": (10240,),
        f"{m}.dt_bias": (128,),
        f"{m}.A_log": (128,),
        f"{m}.D": (128,),
        f"{m}.norm.weight": (8192,),
        f"{m}.out_proj.weight": (4096, 8192),
        "backbone.layers.0.norm.weight": (4096,),
    }


def test_mlp_attention_and_moe_layers_have_one_mixer_each() -> None:
    names = _by_name(NEMOTRON_H_8B)
    # layer 1 ("-"): relu2 MLP with up and down only; layer 7 ("*"): q/k/v/o without biases
    assert sorted(n for n in names if n.startswith("backbone.layers.1.")) == [
        "backbone.layers.1.mixer.down_proj.weight",
        "backbone.layers.1.mixer.up_proj.weight",
        "backbone.layers.1.norm.weight",
    ]
    assert sorted(n for n in names if n.startswith("backbone.layers.7.")) == [
        f"backbone.layers.7.mixer.{p}_proj.weight" for p in "koqv"
    ] + ["backbone.layers.7.norm.weight"]
    assert names["backbone.layers.7.mixer.k_proj.weight"].shape == (1024, 4096)
    assert {"backbone.embeddings.weight", "backbone.norm_f.weight", "lm_head.weight"} <= set(names)
    moe = {n: t.shape for n, t in _by_name(NEMOTRON_3_NANO_30B).items() if n.startswith("backbone.layers.1.")}
    e = "backbone.layers.1.mixer"
    assert moe == {
        f"{e}.gate.weight": (128, 2688),
        f"{e}.gate.e_score_correction_bias": (128,),
        f"{e}.experts.up_proj.weight": (128, 1856, 2688),
        f"{e}.experts.down_proj.weight": (128, 2688, 1856),
        f"{e}.shared_experts.up_proj.weight": (3712, 2688),
        f"{e}.shared_experts.down_proj.weight": (2688, 3712),
        "backbone.layers.1.norm.weight": (2688,),
    }


def test_the_recurrent_state_per_sequence_is_what_each_engines_code_allocates() -> None:
    # Nemotron 3 Nano, 23 Mamba layers: conv_dim = 64 x 64 + 2 x 8 x 128 = 6144, SSM state 64 x 64 x 128 = 524288
    arch = _arch(NEMOTRON_3_NANO_30B)
    layers = 23
    conv_dim, ssm = 6144, 524_288
    # transformers' NemotronHHybridDynamicCache: conv (conv_dim, conv_kernel) and ssm states in the input's dtype
    assert state_bytes_per_sequence(arch, ENGINES["transformers"], 2) == layers * (4 * conv_dim * 2 + ssm * 2)
    # vLLM's MambaSpec: conv (conv_dim, conv_kernel - 1) in the model dtype, the SSM state in mamba_ssm_cache_dtype
    assert state_bytes_per_sequence(arch, ENGINES["vllm"], 2) == layers * (3 * conv_dim * 2 + ssm * 4)
    # llama.cpp's llama_memory_recurrent: r = (d_conv - 1) x conv_dim and s = d_state x d_inner, both F32
    assert state_bytes_per_sequence(arch, ENGINES["llamacpp"], 2) == layers * 4 * (3 * conv_dim + ssm)
    assert [state_bytes_per_sequence(arch, ENGINES[e], 2) for e in ("transformers", "vllm", "llamacpp")] == [
        25_247_744,
        49_082_368,
        49_930_240,
    ]


def test_an_auto_ssm_cache_dtype_follows_the_model_dtype_in_vllm() -> None:
    config = {**NEMOTRON_3_NANO_30B, "mamba_ssm_cache_dtype": "bfloat16"}
    assert state_bytes_per_sequence(_arch(config), ENGINES["vllm"], 2) == 23 * (3 * 6144 * 2 + 524_288 * 2)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"hybrid_override_pattern": "M*X"}, "unknown layer 'X' in 'hybrid_override_pattern'"),
        ({"hybrid_override_pattern": "M*-"}, "'hybrid_override_pattern' has 3 layers but num_hidden_layers is 52"),
        ({"layers_block_type": ["mamba", "conv"], "num_hidden_layers": 2}, "unknown layer 'conv' in 'layers_block"),
        ({"hybrid_override_pattern": None}, "missing the field 'hybrid_override_pattern' or 'layers_block_type'"),
    ],
)
def test_a_config_the_reader_cannot_follow_is_refused_by_name(change: dict[str, Any], words: str) -> None:
    config = {k: v for k, v in {**NEMOTRON_3_NANO_30B, **change}.items() if v is not None}
    with pytest.raises(ConfigError) as err:
        normalize(config)
    assert words in str(err.value)
    assert str(err.value).startswith("nemotron_h: ")


def test_layers_block_type_reads_as_the_pattern() -> None:
    names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    pattern = str(NEMOTRON_3_NANO_30B["hybrid_override_pattern"])
    listed = {**NEMOTRON_3_NANO_30B, "layers_block_type": [names[ch] for ch in pattern]}
    del listed["hybrid_override_pattern"]
    assert _arch(listed).layers == _arch(NEMOTRON_3_NANO_30B).layers


def test_an_unbounded_time_step_limit_reads_but_a_nan_does_not() -> None:
    # published Nemotron-H configs write Mamba2Config's default dt clamp (0.0, inf) as [0.0, Infinity]
    assert _arch({**NEMOTRON_3_NANO_30B, "time_step_limit": [0.0, float("inf")]}) == _arch(NEMOTRON_3_NANO_30B)
    for bad in ([0.0, float("nan")], [float("-inf"), 1.0]):
        with pytest.raises(ConfigError, match=r"time_step_limit\[\d\] = \S+ is not a finite number"):
            normalize({**NEMOTRON_3_NANO_30B, "time_step_limit": bad})
    with pytest.raises(ConfigError, match="hidden_size = inf is not a finite number"):
        normalize({**NEMOTRON_3_NANO_30B, "hidden_size": float("inf")})


_RUNS = [
    {"workload": {"engine": "transformers"}},
    {"workload": {"engine": "vllm"}},
    {"workload": {"engine": "llamacpp"}, "weights": "q4_k_m"},
    {"workload": {"kind": "finetune", "method": "lora"}},
]


@pytest.mark.parametrize("name", list(TOTALS))
@pytest.mark.parametrize("run", range(len(_RUNS)))
def test_every_engine_and_a_lora_fine_tune_estimate_each_model(name: str, run: int) -> None:
    scenario = Scenario.model_validate({"model": {"id": "x/y"}, **_RUNS[run]})
    est = estimate(scenario, model_facts(copy.deepcopy(TOTALS[name][0])), None)
    assert est.peak_allocated_bytes > 0
    names = {c.name for c in est.components}
    assert "weights" in names
