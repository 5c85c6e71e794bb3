"""Qwen/Qwen-7B's published config.json (remote-code QWenLMHeadModel): Qwen v1 is not in the catalog."""

from __future__ import annotations

from typing import Any

#: Qwen/Qwen-7B's config.json as published (transformers 4.32 era, trust_remote_code)
QWEN7B: dict[str, Any] = {
    "architectures": ["QWenLMHeadModel"],
    "auto_map": {
        "AutoConfig": "configuration_qwen.QWenConfig",
        "AutoModelForCausalLM": "modeling_qwen.QWenLMHeadModel",
    },
    "attn_dropout_prob": 0.0,
    "bf16": False,
    "emb_dropout_prob": 0.0,
    "fp16": False,
    "fp32": False,
    "hidden_size": 4096,
    "intermediate_size": 22016,
    "initializer_range": 0.02,
    "kv_channels": 128,
    "layer_norm_epsilon": 1e-06,
    "max_position_embeddings": 8192,
    "model_type": "qwen",
    "no_bias": True,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "rotary_emb_base": 10000,
    "rotary_pct": 1.0,
    "seq_length": 8192,
    "tie_word_embeddings": False,
    "use_flash_attn": "auto",
    "vocab_size": 151936,
}
