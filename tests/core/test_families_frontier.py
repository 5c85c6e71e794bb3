"""Recent decoder families (OLMo 3, Phi-MoE, MiniMax-M2, Llama-Nemotron / DeciLM): each published config reads as its
family, names the tensors its modeling code has, counts the parameters a published figure gives, keeps the KV its
attention layers keep, and estimates on every engine.

Configs: the published config.json files of the coverage corpus (benchmarks/data/config_corpus/, INDEX.csv names the
repository and path each copy was found at), read from the corpus file. Published totals were found with the index's
exact-string search of public text (``find_string``), whose hits carry a file id but no repository or path; the id
is given with each figure.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vramdesk.core.architecture import AttentionKind, ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.families import family_of
from vramdesk.core.inventory import Tensor, build_inventory, count_params
from vramdesk.core.scenario import Scenario

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "config_corpus"


def _corpus(name: str) -> dict[str, Any]:
    config = json.loads((CORPUS / f"{name}.json").read_text(encoding="utf-8"))
    assert isinstance(config, dict)
    return config


OLMO3_32B = "allenai__Olmo-3.1-32B-Instruct"
PHI_MINI_MOE = "microsoft__Phi-mini-MoE-instruct"
MINIMAX_M27 = "MiniMaxAI__MiniMax-M2.7"
NEMOTRON_SUPER = "nvidia__Llama-3_3-Nemotron-Super-49B-v1"

#: corpus file -> (family record, published total, where it was found). All exact counts of the checkpoint's tensors.
_PUBLISHED = {
    # OLMo-3-32B (OLMo 3.1 keeps its geometry): "olmo3_32b_bits = 32233522176 * 16" in a study's script of model
    # sizes in bits (find_string "32233522176", id 53559420034)
    OLMO3_32B: ("olmo3", 32_233_522_176, "olmo3_32b_bits = 32233522176 * 16, find_string id 53559420034"),
    # llama.cpp's own count of a Phi-mini-MoE GGUF ("phimoe 16x3.8B Q4_K - Medium ... model_n_params = 7647632704,
    # expert_count 16, feed_forward_length 960, embedding_length 4096"; id 67412151079)
    PHI_MINI_MOE: ("phimoe", 7_647_632_704, "llama.cpp model_n_params, find_string id 67412151079"),
    # llama-bench on unsloth/MiniMax-M2.7-GGUF: "minimax-m2 230B.A10B ... model_n_params: 228689764864"
    # (id 58464340977); the NVFP4 re-quantisations keep the geometry
    MINIMAX_M27: ("minimax_m2", 228_689_764_864, "llama-bench model_n_params, find_string id 58464340977"),
    "nvidia__MiniMax-M2.5-NVFP4": ("minimax_m2", 228_689_764_864, "as MiniMax-M2.7: the same config geometry"),
    "nvidia__MiniMax-M2.7-NVFP4": ("minimax_m2", 228_689_764_864, "as MiniMax-M2.7: the same config geometry"),
    # "Confirmed size 49,867,145,216 bf16 params" of nvidia/Llama-3_3-Nemotron-Super-49B-v1 (id 63224824488), also the
    # figure the issue quotes
    NEMOTRON_SUPER: ("nemotron_nas", 49_867_145_216, "49,867,145,216 bf16 params, find_string id 63224824488"),
}


def _tensors(name: str) -> dict[str, Tensor]:
    return {t.name: t for t in build_inventory(normalize(_corpus(name)))}


@pytest.mark.parametrize("name", list(_PUBLISHED))
def test_each_model_reads_as_its_family_and_counts_the_published_total(name: str) -> None:
    family, total, _source = _PUBLISHED[name]
    arch = normalize(_corpus(name))
    assert family_of(arch).name == family
    assert arch.warnings == ()  # no longer the generic Llama path
    assert count_params(build_inventory(arch)).checkpoint == total


# ----------------------------------------------------------------------------------------------- OLMo 3


def test_olmo3_normalises_whole_projections_after_attention_and_mlp_and_slides_three_layers_in_four() -> None:
    config = _corpus(OLMO3_32B)
    arch = normalize(config)
    kinds = [layer.attention for layer in arch.layers]
    assert kinds == [
        AttentionKind.FULL if t == "full_attention" else AttentionKind.SLIDING for t in config["layer_types"]
    ]
    assert kinds[:4] == [AttentionKind.SLIDING] * 3 + [AttentionKind.FULL]
    assert {layer.window for layer in arch.layers if layer.attention == AttentionKind.SLIDING} == {4096}
    t = _tensors(OLMO3_32B)
    # q_norm over 40 heads x 128, k_norm over 8 KV heads x 128 (Olmo2Attention)
    assert t["model.layers.0.self_attn.q_norm.weight"].shape == (5120,)
    assert t["model.layers.0.self_attn.k_norm.weight"].shape == (1024,)
    layer0 = {n.removeprefix("model.layers.0.") for n in t if n.startswith("model.layers.0.")}
    assert {"post_attention_layernorm.weight", "post_feedforward_layernorm.weight"} <= layer0
    assert "input_layernorm.weight" not in layer0


def test_olmo3_without_layer_types_takes_its_configs_default() -> None:
    config = {k: v for k, v in _corpus(OLMO3_32B).items() if k != "layer_types"}
    arch = normalize(config)
    assert [layer.attention for layer in arch.layers] == [
        AttentionKind.FULL if (i + 1) % 4 == 0 else AttentionKind.SLIDING for i in range(64)
    ]


# ----------------------------------------------------------------------------------------------- Phi-MoE


def test_phimoe_has_layernorms_biased_attention_and_head_and_mixtrals_experts() -> None:
    arch = normalize(_corpus(PHI_MINI_MOE))
    assert arch.norm == "layer" and arch.lm_head_bias
    assert {(layer.attention, layer.window) for layer in arch.layers} == {(AttentionKind.SLIDING, 2047)}
    t = _tensors(PHI_MINI_MOE)
    p = "model.layers.0"
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        assert f"{p}.self_attn.{name}.bias" in t
    for name in ("input_layernorm", "post_attention_layernorm"):
        assert f"{p}.{name}.bias" in t
    assert t["model.norm.bias"].shape == (4096,)
    assert t["lm_head.bias"].shape == (32064,)
    assert t[f"{p}.block_sparse_moe.gate.weight"].shape == (16, 4096)
    assert t[f"{p}.block_sparse_moe.experts.w1.weight"].shape == (16, 960, 4096)
    assert t[f"{p}.block_sparse_moe.experts.w2.weight"].shape == (16, 4096, 960)
    # 2 of 16 experts a token; the model card's "2.4B activated"
    assert round(count_params(tuple(t.values())).active / 1e9, 1) == 2.4


# ----------------------------------------------------------------------------------------------- MiniMax-M2


def test_minimax_m2_has_full_width_qk_norms_and_a_correction_bias_beside_the_router() -> None:
    t = _tensors(MINIMAX_M27)
    p = "model.layers.61"
    assert t[f"{p}.self_attn.q_norm.weight"].shape == (48 * 128,)
    assert t[f"{p}.self_attn.k_norm.weight"].shape == (8 * 128,)
    assert t[f"{p}.block_sparse_moe.gate.weight"].shape == (256, 3072)
    assert t[f"{p}.block_sparse_moe.e_score_correction_bias"].shape == (256,)
    assert f"{p}.block_sparse_moe.gate.e_score_correction_bias" not in t
    assert t[f"{p}.block_sparse_moe.experts.w3.weight"].shape == (256, 1536, 3072)
    assert not any(n.startswith("model.mtp") or ".mtp" in n for n in t)
    # "230B total parameters with 10B active" (model card): 8 of 256 experts a token
    assert round(count_params(tuple(t.values())).active / 1e9) == 11


def test_minimax_m2_switches_follow_the_config() -> None:
    config = {**_corpus(MINIMAX_M27), "use_qk_norm": False, "use_routing_bias": False}
    names = {t.name for t in build_inventory(normalize(config))}
    assert not any(n.endswith(("q_norm.weight", "e_score_correction_bias")) for n in names)


def test_minimax_lightning_attention_layers_are_refused_by_name() -> None:
    config = _corpus(MINIMAX_M27)
    config["attn_type_list"] = [0, 1] * 31
    with pytest.raises(ConfigError) as err:
        normalize(config)
    assert str(err.value) == (
        "minimax_m2: 'attn_type_list' has 31 lightning-attention layers (type 0), which are not supported yet"
    )


# ----------------------------------------------------------------------------------------------- Llama-Nemotron


def test_nemotron_super_layers_follow_block_configs() -> None:
    config = _corpus(NEMOTRON_SUPER)
    arch = normalize(config)
    blocks = config["block_configs"]
    assert arch.count(AttentionKind.NONE) == sum(b["attention"]["no_op"] for b in blocks) == 31
    assert arch.count(AttentionKind.FULL) == 49
    assert {layer.n_kv_heads for layer in arch.layers if layer.attention == AttentionKind.FULL} == {64 // 8}
    # _ffn_mult_to_intermediate_size: int(2 x ffn_mult x 8192 / 3) rounded up to a multiple of 256
    widths = {b["ffn"]["ffn_mult"]: layer.intermediate for b, layer in zip(blocks, arch.layers, strict=True)}
    assert widths == {0.5: 2816, 1.0: 5632, 1.3125: 7168, 2.625: 14336, 3.28125: 17920, 5.25: 28672}
    t = _tensors(NEMOTRON_SUPER)
    no_op = next(i for i, b in enumerate(blocks) if b["attention"]["no_op"])
    layer = {n.removeprefix(f"model.layers.{no_op}.") for n in t if n.startswith(f"model.layers.{no_op}.")}
    # no attention and no norm before it; the FFN and its norm stay
    assert layer == {
        "post_attention_layernorm.weight",
        "mlp.gate_proj.weight",
        "mlp.up_proj.weight",
        "mlp.down_proj.weight",
    }


def test_nemotron_super_keeps_kv_only_for_its_attention_layers() -> None:
    config = _corpus(NEMOTRON_SUPER)
    every = copy.deepcopy(config)
    for block in every["block_configs"]:
        block["attention"] = {**block["attention"], "no_op": False, "n_heads_in_group": 8}
    scenario = Scenario.model_validate({"model": {"id": "x/y"}, "workload": {"input_len": 8192}})

    def kv(c: dict[str, Any]) -> int:
        return next(x.bytes for x in estimate(scenario, model_facts(c), None).components if x.name == "KV cache")

    # 49 of 80 layers keep K and V (8 heads x 128, bf16)
    assert kv(config) * 80 == kv(every) * 49
    assert kv(config) >= 49 * 2 * 8 * 128 * 2 * 8192


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda b: b.pop(),
            "nemotron-nas: 'block_configs' has 79 entries but num_hidden_layers is 80",
        ),
        (
            lambda b: b[3]["ffn"].update(replace_with_linear=True),
            "nemotron-nas: block_configs[3] uses ffn.replace_with_linear, which is not supported yet",
        ),
        (
            lambda b: b[5]["attention"].update(window_length=4096),
            "nemotron-nas: block_configs[5] uses attention.window_length, which is not supported yet",
        ),
        (
            lambda b: b[2]["ffn"].update(ffn_mult="big"),
            "nemotron-nas: block_configs[2].ffn.ffn_mult must be a positive number, got 'big'",
        ),
        (
            lambda b: b[0].update(attention=None),
            "nemotron-nas: block_configs[0].attention must be an object",
        ),
    ],
)
def test_nemotron_block_configs_that_cannot_be_read_are_refused_by_name(change: Any, message: str) -> None:
    config = _corpus(NEMOTRON_SUPER)
    change(config["block_configs"])
    with pytest.raises(ConfigError) as err:
        normalize(config)
    assert str(err.value) == message


# ----------------------------------------------------------------------------------------------
# the whole estimate, on every engine and for a LoRA fine-tune


_SCENARIOS = {
    "transformers": {"workload": {"engine": "transformers"}},
    "vllm": {"workload": {"engine": "vllm"}},
    "llamacpp": {"weights": "q4_k_m", "workload": {"engine": "llamacpp"}},
    "lora": {"workload": {"kind": "finetune", "method": "lora"}},
}


@pytest.mark.parametrize("name", [OLMO3_32B, PHI_MINI_MOE, MINIMAX_M27, NEMOTRON_SUPER])
@pytest.mark.parametrize("run", list(_SCENARIOS))
def test_every_new_family_estimates_on_every_engine(name: str, run: str) -> None:
    facts = model_facts(_corpus(name))
    scenario = Scenario.model_validate({"model": {"id": "x/y"}, **_SCENARIOS[run]})
    est = estimate(scenario, facts, None)
    weights = next(c.bytes for c in est.components if c.name == "weights")
    assert weights > facts.counts.text // 4
    assert est.peak_allocated_bytes > weights
