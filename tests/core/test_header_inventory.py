"""An unknown model type read from its tensor names (core/header_inventory.py, config_readers/unknown.py).

The known-model check: a catalog model's own inventory written out as header entries, its model_type renamed to one
vramdesk does not know, must count exactly the same parameters (total, active, MTP, vision) and the same KV cache.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakehub import TINY_CONFIG, tiny_llama_tensors

from vramdesk.core.architecture import AttentionKind, ConfigError
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import ModelFacts, model_facts
from vramdesk.core.header_inventory import read_inventory
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

Entries = dict[str, tuple[str, tuple[int, ...]]]


def renamed(config: dict[str, Any], model_type: str = "mystery") -> dict[str, Any]:
    out = dict(config, model_type=model_type)
    if isinstance(out.get("text_config"), dict):
        out["text_config"] = dict(out["text_config"], model_type=f"{model_type}_text")
    return out


def as_headers(facts: ModelFacts) -> Entries:
    return {t.name: ("BF16", t.shape) for t in facts.tensors}


def engine_scenario(engine: str) -> Scenario:
    data = DEFAULT_SCENARIO.model_dump(mode="json")
    data["workload"]["engine"] = engine
    return Scenario.model_validate(data)


def kv_figures(facts: ModelFacts) -> list[tuple[float, int]]:
    out = []
    for engine in ("transformers", "vllm", "llamacpp"):
        e = estimate(engine_scenario(engine), facts)
        kv = next(c.bytes for c in e.components if c.category == "kv_cache")
        out.append((e.engine.kv_bytes_per_token, kv))
    return out


# ---------------------------------------------------------------------------------------------- the known-model check

KNOWN = [
    "meta-llama/Llama-3.1-8B",  # Llama names, GQA
    "Qwen/Qwen3-30B-A3B",  # per-expert stacked tensors, top-8 of 128, q/k norms
    "openai/gpt-oss-20b",  # fused experts with biases, sinks, layer_types sliding / full
    "google/gemma-3-1b-it",  # four norms, sliding_window_pattern 6
    "deepseek-ai/DeepSeek-V3",  # MLA, dense first layers, shared experts, an MTP layer with its own head
    "microsoft/Phi-3.5-mini-instruct",  # fused qkv_proj and gate_up_proj
    "EleutherAI/pythia-1b",  # gpt_neox.layers., LayerNorm biases, query_key_value
]


@pytest.mark.parametrize("model_id", KNOWN)
def test_a_known_model_under_an_unknown_name_counts_the_same(model_id: str) -> None:
    cat = default_catalog()
    known = cat.facts(model_id)
    unknown = model_facts(renamed(cat.config(model_id)), model_id, headers=as_headers(known))
    assert unknown.counts == known.counts
    assert kv_figures(unknown) == kv_figures(known)
    [warning] = unknown.arch.warnings
    assert warning.startswith("approximate: unknown architecture 'mystery', inferred from tensor names")
    assert f"{known.arch.n_layers} decoder layers" in warning


def test_the_known_model_check_can_fail_without_the_headers() -> None:
    # gpt-oss read by the generic Llama path (no headers): its fused experts and biases are not there
    cat = default_catalog()
    known = cat.facts("openai/gpt-oss-20b")
    generic = model_facts(renamed(cat.config("openai/gpt-oss-20b")))
    assert generic.counts.checkpoint != known.counts.checkpoint
    assert "generic Llama-style decoder" in generic.arch.warnings[-1]


def test_a_hybrid_model_counts_the_same_and_names_the_recurrent_state_it_did_not_infer() -> None:
    cat = default_catalog()
    known = cat.facts("Qwen/Qwen3-Next-80B-A3B-Thinking")
    unknown = model_facts(renamed(cat.config("Qwen/Qwen3-Next-80B-A3B-Thinking")), headers=as_headers(known))
    assert unknown.counts == known.counts  # 81,324,862,720 with the MTP layer
    assert unknown.counts.mtp == known.counts.mtp > 0
    assert [s.attention == AttentionKind.NONE for s in unknown.arch.layers] == [
        s.attention == AttentionKind.LINEAR for s in known.arch.layers
    ]
    assert "not inferred: the recurrent state of 36 layers without attention" in unknown.arch.warnings[0]
    # the attention layers' KV is the same; the Gated DeltaNet state is what is missing
    assert kv_figures(unknown)[0][0] == kv_figures(known)[0][0]


# ---------------------------------------------------------------------------------------------- roles from names


def unknown_moe(layers: int = 3, experts: int = 4) -> Entries:
    """A MoE whose names follow no family vramdesk knows: fused wqkv, Mixtral's w1/w2/w3 experts, a router."""
    h, inter, vocab = 64, 32, 256
    t: Entries = {"model.embed_tokens.weight": ("BF16", (vocab, h))}
    for i in range(layers):
        p = f"model.layers.{i}"
        t[f"{p}.attention_norm.weight"] = ("BF16", (h,))
        t[f"{p}.ffn_norm.weight"] = ("BF16", (h,))
        t[f"{p}.attention.wqkv.weight"] = ("BF16", (h + 2 * 32, h))
        t[f"{p}.attention.wo.weight"] = ("BF16", (h, h))
        t[f"{p}.feed_forward.router.weight"] = ("BF16", (experts, h))
        for e in range(experts):
            for n, shape in (("w1", (inter, h)), ("w3", (inter, h)), ("w2", (h, inter))):
                t[f"{p}.feed_forward.experts.{e}.{n}.weight"] = ("BF16", shape)
    t["model.layers.1.attention.rotary_inv_freq"] = ("F32", (8,))
    t["model.norm.weight"] = ("BF16", (h,))
    t["lm_head.weight"] = ("BF16", (vocab, h))
    return t


MOE_CONFIG = {
    "model_type": "mystery_moe",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 3,
    "vocab_size": 256,
    "num_experts_per_tok": 2,
}


def test_roles_layers_and_stacked_experts_from_unknown_names() -> None:
    inv = read_inventory(unknown_moe())
    roles = {t.name: t.role for t in inv.tensors}
    assert inv.n_layers == 3 and inv.layer_prefix == "model.layers" and inv.attention_layers == (0, 1, 2)
    assert roles["model.embed_tokens.weight"] == "embedding" and roles["lm_head.weight"] == "lm_head"
    assert roles["model.norm.weight"] == "final_norm" and roles["model.layers.0.ffn_norm.weight"] == "norm"
    assert roles["model.layers.0.attention.wqkv.weight"] == "qkv" and roles["model.layers.0.attention.wo.weight"] == "o"
    assert roles["model.layers.0.feed_forward.router.weight"] == "router"
    stacked = {t.name: t.shape for t in inv.tensors if t.role.startswith("expert_")}
    assert stacked["model.layers.2.feed_forward.experts.w1.weight"] == (4, 32, 64)
    assert stacked["model.layers.2.feed_forward.experts.w2.weight"] == (4, 64, 32)
    assert roles["model.layers.2.feed_forward.experts.w3.weight"] == "expert_up"
    assert len(stacked) == 9  # 3 layers x gate, up, down: the 36 per-expert matrices stacked
    assert inv.unplaced_by_prefix() == {"model.layers.#.attention.rotary_inv_freq": 1}


def test_an_unknown_moe_is_estimated_from_its_names_with_what_was_not_inferred() -> None:
    entries = unknown_moe()
    facts = model_facts(MOE_CONFIG, headers=entries)
    stored = sum(s[0] * s[1] if len(s) == 2 else s[0] for _, s in entries.values())
    assert facts.counts.checkpoint == stored == 144_584
    expert_params = 3 * 4 * 3 * 32 * 64
    assert facts.counts.active == stored - expert_params // 2  # top-2 of 4 experts
    assert facts.arch.is_moe and facts.arch.layers[0].moe is not None
    assert facts.arch.layers[0].moe.expert_intermediate == 32
    layer = facts.arch.layers[0]
    assert (layer.n_heads, layer.n_kv_heads, layer.head_dim) == (4, 2, 16)
    assert facts.arch.warnings == (
        "approximate: unknown architecture 'mystery_moe', inferred from tensor names (55 tensors, 3 decoder "
        "layers, 3 with attention); not inferred: the role of 1 tensor(s) (model.layers.#.attention.rotary_inv_freq "
        "x1), priced at the checkpoint's dtype",
    )


def test_without_experts_per_token_every_expert_counts_active_and_the_warning_says_so() -> None:
    config = {k: v for k, v in MOE_CONFIG.items() if k != "num_experts_per_tok"}
    facts = model_facts(config, headers=unknown_moe())
    assert facts.counts.active == facts.counts.text
    assert "experts per token (no num_experts_per_tok in the config): all 4 counted active" in facts.arch.warnings[0]


def test_kv_heads_come_from_the_projection_widths_when_the_config_leaves_them_out() -> None:
    config = renamed(TINY_CONFIG)
    del config["num_key_value_heads"]
    facts = model_facts(config, headers=tiny_llama_tensors())
    assert facts.arch.layers[0].n_kv_heads == 2  # k_proj is 32 rows of 16-wide heads
    generic = model_facts(config)  # the config alone reads it as multi-head attention
    assert generic.arch.layers[0].n_kv_heads == 4
    assert kv_figures(facts)[0][0] == kv_figures(generic)[0][0] / 2


def test_width_vocabulary_and_layers_come_from_the_tensors_when_the_config_has_only_heads() -> None:
    facts = model_facts({"model_type": "bare", "num_attention_heads": 4}, headers=tiny_llama_tensors())
    assert (facts.arch.hidden, facts.arch.vocab, facts.arch.n_layers) == (64, 256, 2)
    assert facts.counts.checkpoint == model_facts(TINY_CONFIG).counts.checkpoint


def test_a_sliding_window_alone_is_counted_as_full_attention_and_said() -> None:
    config = renamed(TINY_CONFIG) | {"sliding_window": 1024}
    facts = model_facts(config, headers=tiny_llama_tensors())
    assert all(s.attention == AttentionKind.FULL for s in facts.arch.layers)
    assert "which layers slide (sliding_window 1024 without layer_types" in facts.arch.warnings[0]
    typed = model_facts(config | {"layer_types": ["sliding_attention", "full_attention"]}, headers=tiny_llama_tensors())
    assert [s.attention for s in typed.arch.layers] == [AttentionKind.SLIDING, AttentionKind.FULL]
    assert typed.arch.layers[0].window == 1024 and "every tensor placed" in typed.arch.warnings[0]


# ---------------------------------------------------------------------------------------------- GGUF names


def gguf_named(layers: int = 2, experts: int = 4) -> Entries:
    """llama.cpp's names, shapes outermost first (as tensors_from_gguf turns them): stacked experts, a shared one."""
    h, inter, vocab = 64, 32, 256
    t: Entries = {"token_embd.weight": ("Q8_0", (vocab, h)), "output_norm.weight": ("F32", (h,))}
    for i in range(layers):
        p = f"blk.{i}"
        t[f"{p}.attn_norm.weight"] = ("F32", (h,))
        t[f"{p}.attn_q.weight"] = ("Q8_0", (h, h))
        t[f"{p}.attn_k.weight"] = ("Q8_0", (32, h))
        t[f"{p}.attn_v.weight"] = ("Q8_0", (32, h))
        t[f"{p}.attn_output.weight"] = ("Q8_0", (h, h))
        t[f"{p}.ffn_norm.weight"] = ("F32", (h,))
        t[f"{p}.ffn_gate_inp.weight"] = ("F32", (experts, h))
        t[f"{p}.ffn_gate_exps.weight"] = ("Q8_0", (experts, inter, h))
        t[f"{p}.ffn_up_exps.weight"] = ("Q8_0", (experts, inter, h))
        t[f"{p}.ffn_down_exps.weight"] = ("Q8_0", (experts, h, inter))
        t[f"{p}.ffn_up_shexp.weight"] = ("Q8_0", (48, h))
        t[f"{p}.ffn_down_shexp.weight"] = ("Q8_0", (h, 48))
    t["output.weight"] = ("Q8_0", (vocab, h))
    return t


def test_gguf_names_are_placed() -> None:
    inv = read_inventory(gguf_named())
    roles = {t.name: t.role for t in inv.tensors}
    assert inv.layer_prefix == "blk" and inv.n_layers == 2 and inv.attention_layers == (0, 1)
    assert roles["token_embd.weight"] == "embedding" and roles["output.weight"] == "lm_head"
    assert roles["output_norm.weight"] == "final_norm" and roles["blk.1.attn_norm.weight"] == "norm"
    assert [roles[f"blk.0.attn_{n}.weight"] for n in ("q", "k", "v", "output")] == ["q", "k", "v", "o"]
    assert roles["blk.0.ffn_gate_inp.weight"] == "router"
    assert [roles[f"blk.0.ffn_{n}_exps.weight"] for n in ("gate", "up", "down")] == [
        "expert_gate",
        "expert_up",
        "expert_down",
    ]
    assert roles["blk.0.ffn_up_shexp.weight"] == "shared_up" and not inv.unplaced


def test_an_unknown_model_with_gguf_names_has_its_experts_and_shared_expert() -> None:
    config = {"model_type": "mystery", "num_attention_heads": 4, "num_experts_per_tok": 1}
    facts = model_facts(config, headers=gguf_named())
    moe = facts.arch.layers[1].moe
    assert moe is not None and (moe.num_experts, moe.top_k, moe.expert_intermediate) == (4, 1, 32)
    assert moe.shared_intermediate == 48
    assert facts.arch.layers[0].n_kv_heads == 2 and not facts.arch.tie_embeddings
    experts = 2 * 3 * 4 * 32 * 64
    assert facts.counts.text - facts.counts.active == experts * 3 // 4


# ---------------------------------------------------------------------------------------------- refusals


def test_names_that_say_too_little_fall_back_to_the_generic_path_and_say_why() -> None:
    entries: Entries = {"weights.blob": ("BF16", (64, 64))}
    facts = model_facts(renamed(TINY_CONFIG), headers=entries)
    assert "generic Llama-style decoder" in facts.arch.warnings[0]
    assert facts.arch.warnings[1] == (
        "the checkpoint's tensor names were not used: none of its 1 tensor names lies in a decoder layer "
        "(layers.N, h.N, blocks.N or blk.N)"
    )


def test_refused_only_when_neither_the_names_nor_the_config_read_it_with_both_reasons() -> None:
    heads_only = {k: v for k, v in tiny_llama_tensors().items() if "layers" in k}
    with pytest.raises(ConfigError) as err:
        model_facts({"model_type": "bare", "num_attention_heads": 4}, headers=heads_only)
    message = str(err.value)
    assert message.startswith("unsupported model_type 'bare': not a known architecture; its tensor names do not")
    assert "no token embedding among the tensors, and the config gives no hidden_size" in message
    assert "config is missing the field 'hidden_size'" in message
    with pytest.raises(ConfigError, match="neither num_attention_heads nor head_dim"):
        model_facts({"model_type": "bare", "hidden_size": 64}, headers=tiny_llama_tensors())
