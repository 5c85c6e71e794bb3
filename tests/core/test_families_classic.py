"""GPT-2, GPT-J, OPT and CodeGen (``config_readers/classic.py``): real configs, full size, read into tensor
inventories whose totals equal published parameter counts, and estimated on every engine.

Configs are the Hub's config.json values as stored copies in the code index show them (each comment says where);
published totals are quoted with their source. A source that counts differently from transformers (keras-hub's
OPT) is compared after the difference, which the modeling code explains."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import normalize
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import model_facts
from vramdesk.core.families import CODEGEN, GPT2, GPTJ, OPT, family_of
from vramdesk.core.scenario import Scenario

#: GPT-2 small: GPT2Config(...) of the "gpt2" checkpoint in spencerbraun/editable_nlp src/config.py
GPT2_SMALL: dict[str, Any] = {
    "model_type": "gpt2",
    "architectures": ["GPT2LMHeadModel"],
    "vocab_size": 50257,
    "n_positions": 1024,
    "n_ctx": 1024,
    "n_embd": 768,
    "n_layer": 12,
    "n_head": 12,
    "n_inner": None,
    "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-05,
}
#: gpt2-medium: the GPT2Config printout of "gpt2-medium" in a MAGMA fork's language-model loader (code index
#: file 44347156050, "6.7 OPTConfig" beside it) and LoRA's e2e GPT-2 code (code index file 29218111372)
GPT2_MEDIUM = {**GPT2_SMALL, "n_embd": 1024, "n_layer": 24, "n_head": 16}
#: gpt2-large and gpt2-xl: emb_dim / n_layers / n_heads of GPT_2_large and GPT_2_xl in urmi22/LLM-sebastian
#: ch04/GPT_CONFIG_124M.py (vocabulary 50,257 and context 1,024 as the other sizes)
GPT2_LARGE = {**GPT2_SMALL, "n_embd": 1280, "n_layer": 36, "n_head": 20}
GPT2_XL = {**GPT2_SMALL, "n_embd": 1600, "n_layer": 48, "n_head": 25}
#: distilgpt2: CaliberAI/elasticbeanstalk-gpt2-api distilgpt2/config.json; that old copy has no model_type (the
#: Hub's current one says "gpt2"), so it is added here
DISTILGPT2: dict[str, Any] = {
    "model_type": "gpt2",
    "architectures": ["GPT2LMHeadModel"],
    "n_ctx": 1024,
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 6,
    "n_positions": 1024,
    "vocab_size": 50257,
}
#: EleutherAI/gpt-j-6b config.json as copied into an architecture map (code index file 4881146369, "gptj_6b")
GPTJ_6B: dict[str, Any] = {
    "model_type": "gptj",
    "architectures": ["GPTJForCausalLM"],
    "activation_function": "gelu_new",
    "n_embd": 4096,
    "n_head": 16,
    "n_inner": None,
    "n_layer": 28,
    "n_positions": 2048,
    "rotary": True,
    "rotary_dim": 64,
    "tie_word_embeddings": False,
    "vocab_size": 50400,
}
#: facebook/opt-125m and opt-1.3b: the config fields of the _MODEL_CASES of an OPT inference profile's tests
#: (code index file 59078898864), with the fields every OPT config.json has (model_type, architectures)
OPT_125M: dict[str, Any] = {
    "model_type": "opt",
    "architectures": ["OPTForCausalLM"],
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "ffn_dim": 3072,
    "max_position_embeddings": 2048,
    "vocab_size": 50272,
    "word_embed_proj_dim": 768,
    "do_layer_norm_before": True,
}
OPT_1_3B = {
    **OPT_125M,
    "hidden_size": 2048,
    "num_hidden_layers": 24,
    "num_attention_heads": 32,
    "ffn_dim": 8192,
    "word_embed_proj_dim": 2048,
}
#: facebook/opt-350m config.json as an OPTConfig(**{...}) in a TorchScript tracing script (code index file
#: 10041950342); its module tree (embed_tokens 512 wide, project_in / project_out, no decoder final_layer_norm)
#: is printed in if001/alpaca-lora gomi.md
OPT_350M: dict[str, Any] = {
    "_name_or_path": "facebook/opt-350m",
    "model_type": "opt",
    "architectures": ["OPTForCausalLM"],
    "activation_function": "relu",
    "do_layer_norm_before": False,
    "ffn_dim": 4096,
    "hidden_size": 1024,
    "max_position_embeddings": 2048,
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
    "pad_token_id": 1,
    "torch_dtype": "float16",
    "vocab_size": 50272,
    "word_embed_proj_dim": 512,
}
#: facebook/opt-6.7b: the "6.7 OPTConfig" printout in the MAGMA fork's loader (code index file 44347156050)
OPT_6_7B: dict[str, Any] = {
    "_name_or_path": "facebook/opt-6.7b",
    "_remove_final_layer_norm": False,
    "model_type": "opt",
    "architectures": ["OPTForCausalLM"],
    "do_layer_norm_before": True,
    "ffn_dim": 16384,
    "hidden_size": 4096,
    "max_position_embeddings": 2048,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "torch_dtype": "float16",
    "vocab_size": 50272,
    "word_embed_proj_dim": 4096,
}
#: a CodeGen-350M-shaped config (n_embd 1,024, 20 layers, 16 heads, rotary_dim 32, vocabulary 51,200); no
#: published total found to check it against, so only its layout is tested
CODEGEN_350M: dict[str, Any] = {
    "model_type": "codegen",
    "architectures": ["CodeGenForCausalLM"],
    "n_ctx": 2048,
    "n_embd": 1024,
    "n_head": 16,
    "n_layer": 20,
    "n_positions": 2048,
    "rotary_dim": 32,
    "tie_word_embeddings": False,
    "vocab_size": 51200,
}

_KERAS_GPT2 = "keras-team/keras-hub keras_hub/src/models/gpt2/gpt2_presets.py"
_KERAS_OPT = "keras-team/keras-hub keras_hub/src/models/opt/opt_presets.py"

#: (config, published total, source): exact counts, asserted equal
_EXACT = {
    "gpt2": (GPT2_SMALL, 124_439_808, f"{_KERAS_GPT2} gpt2_base_en"),
    "gpt2-medium": (GPT2_MEDIUM, 354_823_168, f"{_KERAS_GPT2} gpt2_medium_en"),
    "gpt2-large": (GPT2_LARGE, 774_030_080, f"{_KERAS_GPT2} gpt2_large_en"),
    "gpt2-xl": (GPT2_XL, 1_557_611_200, f"{_KERAS_GPT2} gpt2_extra_large_en"),
    # model.num_parameters() as BishopFox/BrokenHill docs/memory_requirements.md quotes it ("gpt-j-6b
    # (6,050,882,784 parameters)"): it counts lm_head.bias (50,400)
    "gpt-j-6b": (GPTJ_6B, 6_050_882_784, "BishopFox/BrokenHill docs/memory_requirements.md"),
}


@pytest.mark.parametrize("name", list(_EXACT))
def test_the_total_equals_the_published_count(name: str) -> None:
    config, published, _source = _EXACT[name]
    assert model_facts(copy.deepcopy(config)).counts.text == published


#: keras-hub's OPTBackbone keeps max_sequence_length (2,048) position rows; transformers'
#: OPTLearnedPositionalEmbedding keeps 2 more ("offset the embedding ids by 2"), hidden_size wide each
_KERAS_OPT_PRESETS = {
    "opt-125m": (OPT_125M, 125_237_760, f"{_KERAS_OPT} opt_125m_en"),
    "opt-1.3b": (OPT_1_3B, 1_315_753_984, f"{_KERAS_OPT} opt_1.3b_en"),
}


@pytest.mark.parametrize("name", list(_KERAS_OPT_PRESETS))
def test_opt_equals_keras_hub_plus_the_two_offset_position_rows(name: str) -> None:
    config, keras, _source = _KERAS_OPT_PRESETS[name]
    facts = model_facts(copy.deepcopy(config))
    positions = next(t for t in facts.tensors if t.name == "model.decoder.embed_positions.weight")
    assert positions.shape == (2048 + 2, config["hidden_size"])
    assert facts.counts.text == keras + 2 * config["hidden_size"]


def test_opt_6_7b_is_within_keras_hubs_rounded_figure() -> None:
    # opt_6.7b_en "params": 6700000000 (keras-hub opt_presets.py), rounded to two significant figures: the
    # true count lies in [6.65e9, 6.75e9)
    total = model_facts(copy.deepcopy(OPT_6_7B)).counts.text
    assert 6_650_000_000 <= total < 6_750_000_000


def test_distilgpt2_is_the_model_cards_82_million_and_the_measured_count() -> None:
    # "DistilGPT2, which has 82 million parameters" (the distilbert/distilgpt2 model card, quoted in
    # ssfc/huggingface-tutorial GPT.md): rounded to the million
    total = model_facts(copy.deepcopy(DISTILGPT2)).counts.text
    assert 81_500_000 <= total < 82_500_000
    # a memory study's table of measured models (code index file 63598308565: "| distilgpt2 | 81912576 |")
    assert total == 81_912_576


def test_opt_350m_has_its_projections_and_no_final_norm() -> None:
    facts = model_facts(copy.deepcopy(OPT_350M))
    shapes = {t.name: t.shape for t in facts.tensors}
    assert shapes["model.decoder.embed_tokens.weight"] == (50272, 512)
    assert shapes["model.decoder.project_in.weight"] == (1024, 512)
    assert shapes["model.decoder.project_out.weight"] == (512, 1024)
    assert "model.decoder.final_layer_norm.weight" not in shapes
    assert "lm_head.weight" not in shapes  # tied to embed_tokens
    layer = {n.removeprefix("model.decoder.layers.0.") for n in shapes if n.startswith("model.decoder.layers.0.")}
    assert layer == {
        *(f"self_attn.{p}_proj.{k}" for p in "qkv" for k in ("weight", "bias")),
        "self_attn.out_proj.weight",
        "self_attn.out_proj.bias",
        *(f"{m}.{k}" for m in ("fc1", "fc2", "self_attn_layer_norm", "final_layer_norm") for k in ("weight", "bias")),
    }
    # a study's table of models measured with transformers 4.39.3 (code index file 66461905649:
    # "| OPT-350M | B | 331,196,416 | 24 | 1024 | learned absolute |")
    assert facts.counts.text == 331_196_416


def test_gptj_names_and_biases_follow_modeling_gptj() -> None:
    facts = model_facts(copy.deepcopy(GPTJ_6B))
    names = {t.name for t in facts.tensors}
    layer = {n.removeprefix("transformer.h.0.") for n in names if n.startswith("transformer.h.0.")}
    assert layer == {
        "ln_1.weight",
        "ln_1.bias",
        *(f"attn.{p}.weight" for p in ("q_proj", "k_proj", "v_proj", "out_proj")),
        *(f"mlp.{m}.{k}" for m in ("fc_in", "fc_out") for k in ("weight", "bias")),
    }
    assert {"lm_head.weight", "lm_head.bias", "transformer.ln_f.bias"} <= names
    assert not any("wpe" in n for n in names)  # rotary: no position table


def test_codegen_fuses_qkv_without_bias() -> None:
    facts = model_facts(copy.deepcopy(CODEGEN_350M))
    shapes = {t.name: t.shape for t in facts.tensors}
    assert shapes["transformer.h.0.attn.qkv_proj.weight"] == (3 * 1024, 1024)
    assert "transformer.h.0.attn.qkv_proj.bias" not in shapes
    assert shapes["lm_head.bias"] == (51200,)
    # the same parameters as GPT-J's three separate projections of that geometry
    as_gptj = {**CODEGEN_350M, "model_type": "gptj"}
    assert facts.counts.text == model_facts(as_gptj).counts.text


@pytest.mark.parametrize(
    ("config", "family"),
    [(GPT2_SMALL, GPT2), (DISTILGPT2, GPT2), (GPTJ_6B, GPTJ), (CODEGEN_350M, CODEGEN), (OPT_350M, OPT)],
)
def test_each_config_reads_as_its_family_without_the_generic_warning(config: dict[str, Any], family: Any) -> None:
    arch = normalize(copy.deepcopy(config))
    assert family_of(arch) is family
    assert arch.warnings == ()


def test_gpt2_keeps_a_key_and_value_per_head() -> None:
    arch = normalize(copy.deepcopy(GPT2_SMALL))
    assert {(s.n_heads, s.n_kv_heads, s.head_dim, s.intermediate) for s in arch.layers} == {(12, 12, 64, 3072)}


_RUNS = [
    {"workload": {"engine": "transformers"}},
    {"workload": {"engine": "vllm"}},
    {"weights": "q4_k_m", "workload": {"engine": "llamacpp"}},
    {"workload": {"kind": "finetune", "method": "lora"}},
]


@pytest.mark.parametrize("config", [GPT2_SMALL, GPTJ_6B, OPT_350M, OPT_1_3B, CODEGEN_350M])
@pytest.mark.parametrize("run", _RUNS)
def test_every_engine_estimates_them(config: dict[str, Any], run: dict[str, Any]) -> None:
    facts = model_facts(copy.deepcopy(config))
    scenario = Scenario.model_validate({"model": {"id": "x/y"}, **run})
    est = estimate(scenario, facts, None)
    weights = next(c.bytes for c in est.components if c.name.lower().startswith("weights"))
    # at least 4 bits per parameter (q4_k_m); the device holds more than the weights
    assert est.device_bytes > weights >= facts.counts.text / 2


def test_an_opt_config_with_weightless_norms_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as err:
        normalize({**OPT_125M, "layer_norm_elementwise_affine": False})
    assert str(err.value) == ("opt: layer_norm_elementwise_affine false (LayerNorms without weights) is not supported")


def test_gpt2_heads_that_do_not_divide_the_width_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"n_embd \(768\) is not divisible by n_head \(7\)"):
        normalize({**GPT2_SMALL, "n_head": 7})
