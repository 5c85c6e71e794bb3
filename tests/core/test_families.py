"""The family records (``vramdesk.core.families``): every catalog model has one, every field of a record changes
something (no dead quirk), and a model type no record claims still takes the generic path with today's words."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from qwen1config import QWEN7B

from vramdesk.core import families
from vramdesk.core.architecture import ConfigError
from vramdesk.core.config_readers import _READERS, normalize
from vramdesk.core.estimate import estimate
from vramdesk.core.facts import gguf_model_info, model_facts
from vramdesk.core.families import FAMILIES, Family, MtpNames, family_for_model_type, family_of
from vramdesk.core.inventory import build_inventory
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog

#: the geometry of the small sample configs below
_SMALL: dict[str, Any] = {
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
    "vocab_size": 1000,
}

#: a one-layer SigLIP tower for the VLM samples
_TOWER: dict[str, Any] = {"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4}

#: records the catalog has no config for: hand-written configs with their geometry (small, to stay fast)
_LEGACY: dict[str, dict[str, Any]] = {
    "qwen": QWEN7B,
    "gpt_bigcode": {
        "model_type": "gpt_bigcode",
        "n_embd": 256,
        "n_layer": 2,
        "n_head": 4,
        "n_positions": 512,
        "vocab_size": 1000,
    },
    "gpt_neox": {
        "model_type": "gpt_neox",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 1024,
        "vocab_size": 1000,
    },
    "falcon": {
        "model_type": "falcon",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_kv_heads": 2,
        "new_decoder_architecture": True,
        "vocab_size": 1000,
    },
    "bloom": {"model_type": "bloom", "hidden_size": 256, "n_layer": 2, "n_head": 4, "vocab_size": 1000},
    "phi": {
        "model_type": "phi",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 1024,
        "vocab_size": 1000,
    },
    # GPT-2-era families (config_readers/classic.py; full-size configs in test_families_classic.py)
    "gpt2": {"model_type": "gpt2", "n_embd": 256, "n_layer": 2, "n_head": 4, "n_positions": 512, "vocab_size": 1000},
    "gptj": {"model_type": "gptj", "n_embd": 256, "n_layer": 2, "n_head": 4, "rotary_dim": 16, "vocab_size": 1000},
    "codegen": {"model_type": "codegen", "n_embd": 256, "n_layer": 2, "n_head": 4, "vocab_size": 1000},
    # OPT-350m's shape: a narrower embedding (project_in / project_out) and post-attention norms
    "opt": {
        "model_type": "opt",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "ffn_dim": 1024,
        "max_position_embeddings": 512,
        "word_embed_proj_dim": 128,
        "do_layer_norm_before": False,
        "vocab_size": 1000,
    },
    # current decoders with layouts of their own (full-size configs: tests/core/test_families_modern.py)
    "glm4": {**_SMALL, "model_type": "glm4", "attention_bias": True, "num_key_value_heads": 2},
    "glm4_moe": {
        **_SMALL,
        "model_type": "glm4_moe",
        "num_hidden_layers": 3,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "num_nextn_predict_layers": 1,
    },
    "olmoe": {**_SMALL, "model_type": "olmoe", "num_experts": 4, "num_experts_per_tok": 2},
    "granitemoe": {**_SMALL, "model_type": "granitemoe", "num_local_experts": 4, "num_experts_per_tok": 2},
    "exaone4": {**_SMALL, "model_type": "exaone4", "num_hidden_layers": 4, "sliding_window": 128},
    "cohere": {**_SMALL, "model_type": "cohere2", "num_hidden_layers": 4, "sliding_window": 128},
    "starcoder2": {**_SMALL, "model_type": "starcoder2", "sliding_window": 128},
    # vision-language models (full-size configs: tests/core/test_multimodal_configs.py)
    "qwen3_vl": {
        "model_type": "qwen3_vl_moe",
        "text_config": {**_SMALL, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128},
        "vision_config": {"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 4, "patch_size": 16},
    },
    "qwen2_5_vl": {
        **_SMALL,
        "model_type": "qwen2_5_vl",
        "vision_config": {"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 4, "patch_size": 14},
    },
    # Mamba-2 hybrids (config_readers/hybrid.py; full-size configs in test_families_hybrid.py): one layer of each
    # mixer, Mamba, attention, MLP and MoE
    "nemotron_h": {
        **_SMALL,
        "model_type": "nemotron_h",
        "hybrid_override_pattern": "M*-E",
        "num_hidden_layers": 4,
        "num_key_value_heads": 2,
        "mamba_num_heads": 8,
        "mamba_head_dim": 64,
        "ssm_state_size": 16,
        "n_groups": 2,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "moe_shared_expert_intermediate_size": 256,
    },
    # MLA with DeepSeek Sparse Attention indexers (config_readers/mla.py; full-size configs in test_families_mla.py)
    "deepseek_dsa": {
        **_SMALL,
        "model_type": "deepseek_v32",
        "num_hidden_layers": 3,
        "q_lora_rank": 64,
        "kv_lora_rank": 32,
        "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 16,
        "v_head_dim": 32,
        "index_n_heads": 4,
        "index_head_dim": 32,
        "first_k_dense_replace": 1,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "num_nextn_predict_layers": 1,
    },
    # recent decoders (config_readers/frontier.py; the published configs in tests/core/test_families_frontier.py)
    "olmo3": {**_SMALL, "model_type": "olmo3", "num_hidden_layers": 4, "sliding_window": 128},
    "phimoe": {
        **_SMALL,
        "model_type": "phimoe",
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "attention_bias": True,
        "lm_head_bias": True,
    },
    "minimax_m2": {**_SMALL, "model_type": "minimax_m2", "num_local_experts": 4, "num_experts_per_tok": 2},
    # one layer with attention and FFN, one whose attention is no_op
    "nemotron_nas": {
        **_SMALL,
        "model_type": "nemotron-nas",
        "intermediate_size": None,
        "block_configs": [
            {"attention": {"n_heads_in_group": 2, "no_op": False}, "ffn": {"ffn_mult": 2.0}},
            {"attention": {"no_op": True}, "ffn": {"ffn_mult": 1.0}},
        ],
    },
    # --- ssm --- (config_readers/ssm.py; the oracle's full configs and published ones in test_families_ssm.py)
    "mamba": {"model_type": "mamba", "hidden_size": 256, "num_hidden_layers": 2, "vocab_size": 1000},
    "mamba2": {
        "model_type": "mamba2",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "vocab_size": 1000,
        "num_heads": 8,
        "head_dim": 64,
        "state_size": 16,
    },
    # one Mamba-1 layer with a MoE block, one attention layer with a dense MLP
    "jamba": {
        **_SMALL,
        "model_type": "jamba",
        "attn_layer_period": 2,
        "attn_layer_offset": 1,
        "expert_layer_period": 2,
        "expert_layer_offset": 0,
        "num_experts": 4,
    },
    "bamba": {
        **_SMALL,
        "model_type": "bamba",
        "attn_layer_indices": [1],
        "mamba_n_heads": 8,
        "mamba_d_head": 64,
        "mamba_d_state": 16,
    },
    "falcon_h1": {
        **_SMALL,
        "model_type": "falcon_h1",
        "mamba_n_heads": 8,
        "mamba_d_head": 32,
        "mamba_d_ssm": 256,
        "mamba_d_state": 16,
    },
    "granitemoehybrid": {
        **_SMALL,
        "model_type": "granitemoehybrid",
        "layer_types": ["mamba", "attention"],
        "mamba_n_heads": 8,
        "mamba_d_head": 64,
        "mamba_d_state": 16,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "shared_intermediate_size": 512,
    },
    # --- recurrent --- (config_readers/recurrent.py; the published configs in tests/core/test_families_recurrent.py)
    "lfm2": {
        **_SMALL,
        "model_type": "lfm2",
        "layer_types": ["conv", "full_attention"],
        "conv_L_cache": 3,
        "conv_bias": True,
    },
    "kimi_linear": {
        **_SMALL,
        "model_type": "kimi_linear",
        "num_hidden_layers": 2,
        "kv_lora_rank": 32,
        "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 16,
        "v_head_dim": 32,
        "num_experts": 4,
        "num_experts_per_token": 2,
        "moe_intermediate_size": 64,
        "linear_attn_config": {"full_attn_layers": [2], "kda_layers": [1], "head_dim": 32, "num_heads": 4},
    },
    # --- clipvlm ---
    "llava": {
        "model_type": "llava",
        "text_config": {**_SMALL, "model_type": "llama"},
        "vision_config": {**_SMALL, "model_type": "clip_vision_model", "image_size": 64, "patch_size": 16},
    },
    "idefics3": {
        "model_type": "idefics3",
        "text_config": {**_SMALL, "model_type": "llama"},
        "vision_config": {**_SMALL, "model_type": "idefics3_vision", "image_size": 64, "patch_size": 16},
    },
    # --- moe2 --- (layer 0 dense where the family has dense layers first, layer 1 MoE)
    "ernie4_5_moe": {
        **_SMALL,
        "model_type": "ernie4_5_moe",
        "moe_num_experts": 4,
        "moe_k": 2,
        "moe_intermediate_size": 128,
        "moe_num_shared_experts": 1,
    },
    "exaone_moe": {
        **_SMALL,
        "model_type": "exaone_moe",
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
    },
    "hy_v3": {
        **_SMALL,
        "model_type": "hy_v3",
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
    },
    "solar_open": {
        **_SMALL,
        "model_type": "solar_open",
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
    },
    "laguna": {
        **_SMALL,
        "model_type": "laguna",
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "shared_expert_intermediate_size": 128,
    },
    "afmoe": {
        **_SMALL,
        "model_type": "afmoe",
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
    },
    # layer 0 softmax attention, layer 1 lightning attention (MiniMaxConfig's default pattern)
    "minimax": {**_SMALL, "model_type": "minimax", "num_local_experts": 4, "num_experts_per_tok": 2},
    "jetmoe": {
        **_SMALL,
        "model_type": "jetmoe",
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "num_key_value_heads": 2,
        "kv_channels": 64,
    },
    # --- mla --- (DeepSeek-style MLA; the second layer MoE)
    **{
        mt: {
            **_SMALL,
            "model_type": mt,
            "q_lora_rank": 64,
            "kv_lora_rank": 32,
            "qk_nope_head_dim": 32,
            "qk_rope_head_dim": 16,
            "v_head_dim": 32,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 128,
            "n_shared_experts": 1,
            "first_k_dense_replace": 1,
            "num_nextn_predict_layers": 1,
        }
        for mt in ("deepseek_v2", "glm4_moe_lite", "sarvam_mla", "axk1")
    },
    "minicpm3": {
        **_SMALL,
        "model_type": "minicpm3",
        "q_lora_rank": 64,
        "kv_lora_rank": 32,
        "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 16,
    },
    # --- gemma --- (Gemma 4: a multimodal config with a MoE text model and a vision tower; its text-only form)
    "gemma4": {
        "model_type": "gemma4",
        "text_config": {
            **_SMALL,
            "model_type": "gemma4_text",
            "num_hidden_layers": 6,
            "num_key_value_heads": 2,
            "head_dim": 64,
            "enable_moe_block": True,
            "num_experts": 4,
            "top_k_experts": 2,
            "moe_intermediate_size": 128,
            "attention_k_eq_v": True,
            "num_global_key_value_heads": 1,
        },
        "vision_config": {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
        },
    },
    "gemma4_text": {
        **_SMALL,
        "model_type": "gemma4_text",
        "num_hidden_layers": 12,
        "head_dim": 64,
        "num_kv_shared_layers": 2,
        "use_double_wide_mlp": True,
    },
    # --- ownvlm ---
    "qwen2_vl": {
        **_SMALL,
        "model_type": "qwen2_vl",
        "vision_config": {"depth": 1, "embed_dim": 64, "mlp_ratio": 2, "num_heads": 2, "hidden_size": 256},
    },
    "glm4v": {
        "model_type": "glm4v",
        "text_config": {**_SMALL, "num_key_value_heads": 2},
        "vision_config": {"depth": 1, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2, "image_size": 56},
    },
    "glm4v_moe": {
        "model_type": "glm4v_moe",
        "text_config": {**_SMALL, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64},
        "vision_config": {"depth": 1, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2, "image_size": 56},
    },
    "kimi_k25": {
        "model_type": "kimi_k25",
        "text_config": {
            **_SMALL,
            "model_type": "kimi_k2",
            "q_lora_rank": 64,
            "kv_lora_rank": 32,
            "qk_nope_head_dim": 32,
            "qk_rope_head_dim": 16,
            "v_head_dim": 32,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 64,
            "first_k_dense_replace": 1,
        },
        "vision_config": {"vt_hidden_size": 64, "vt_num_hidden_layers": 1, "vt_intermediate_size": 128},
        "projection_hidden_size": 64,
    },
    "minimax_m3": {
        **_SMALL,
        "model_type": "minimax_m3",
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "head_dim": 64,
        "moe_layer_freq": [0, 1],
        "sparse_attention_config": {"sparse_attention_freq": [0, 1], "sparse_index_dim": 32},
    },
    "minimax_m3_vl": {
        "model_type": "minimax_m3_vl",
        "text_config": {**_SMALL, "num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 64},
        "vision_config": {"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128},
        "projector_hidden_size": 128,
    },
    "qwen2_5_omni": {
        "model_type": "qwen2_5_omni_thinker",
        "text_config": _SMALL,
        "vision_config": {"depth": 1, "hidden_size": 64, "intermediate_size": 128, "out_hidden_size": 256},
        "audio_config": {"encoder_layers": 1, "d_model": 64, "encoder_ffn_dim": 128, "num_mel_bins": 16},
    },
    "qwen3_omni_moe": {
        "model_type": "qwen3_omni_moe_thinker",
        "text_config": {**_SMALL, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64},
        "vision_config": {"depth": 1, "hidden_size": 64, "intermediate_size": 128, "deepstack_visual_indexes": [0]},
        "audio_config": {"encoder_layers": 1, "d_model": 64, "encoder_ffn_dim": 128, "downsample_hidden_size": 8},
    },
    "persimmon": {**_SMALL, "model_type": "persimmon"},
    "fuyu": {"model_type": "fuyu", "text_config": {**_SMALL, "model_type": "persimmon"}, "patch_size": 4},
    "exaone4_5": {
        "model_type": "exaone4_5",
        "text_config": {**_SMALL, "model_type": "exaone4"},
        "vision_config": {"depth": 1, "hidden_size": 64, "intermediate_size": 128, "num_heads": 4},
    },
    "youtu": {
        **_SMALL,
        "model_type": "youtu",
        "q_lora_rank": 64,
        "kv_lora_rank": 32,
        "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 16,
        "v_head_dim": 32,
    },
    # --- dense2: dense decoders outside the Llama mould (config_readers/dense2.py; oracle and published configs in
    # tests/core/test_families_dense2.py)
    "gpt_sw3": {
        "model_type": "gpt-sw3",
        "n_embd": 256,
        "n_layer": 2,
        "n_head": 4,
        "n_positions": 512,
        "vocab_size": 1000,
    },
    "gpt_neo": {
        "model_type": "gpt_neo",
        "hidden_size": 256,
        "num_layers": 2,
        "num_heads": 4,
        "attention_types": [[["global", "local"], 1]],
        "max_position_embeddings": 512,
        "vocab_size": 1000,
    },
    "mpt": {"model_type": "mpt", "d_model": 256, "n_layers": 2, "n_heads": 4, "max_seq_len": 512, "vocab_size": 1000},
    "stablelm": {**_SMALL, "model_type": "stablelm", "qk_layernorm": True, "num_key_value_heads": 2},
    "bitnet": {**_SMALL, "model_type": "bitnet"},
    "arcee": {**_SMALL, "model_type": "arcee"},
    "apertus": {**_SMALL, "model_type": "apertus"},
    "xglm": {
        "model_type": "xglm",
        "d_model": 256,
        "num_layers": 2,
        "attention_heads": 4,
        "ffn_dim": 1024,
        "vocab_size": 1000,
    },
    "biogpt": {**_SMALL, "model_type": "biogpt", "max_position_embeddings": 512},
    "modernbert_decoder": {**_SMALL, "model_type": "modernbert-decoder", "num_hidden_layers": 3},
    "mistral4": {
        **_SMALL,
        "model_type": "mistral4",
        "q_lora_rank": 64,
        "kv_lora_rank": 32,
        "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 16,
        "v_head_dim": 32,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "n_shared_experts": 1,
        "moe_intermediate_size": 128,
    },
    "openai_gpt": {
        "model_type": "openai-gpt",
        "n_embd": 256,
        "n_layer": 2,
        "n_head": 4,
        "n_positions": 512,
        "vocab_size": 1000,
    },
    "gpt_neox_japanese": {**_SMALL, "model_type": "gpt_neox_japanese"},
    "jais2": {**_SMALL, "model_type": "jais2"},
    # --- vlm3: DeepSeek-VL, DeepSeek-VL hybrid, Janus (config_readers/vlm3.py; oracle checks in
    # tests/core/test_families_vlm3.py)
    "deepseek_vl": {
        "model_type": "deepseek_vl",
        "text_config": {**_SMALL, "model_type": "llama"},
        "vision_config": _TOWER,
    },
    "deepseek_vl_hybrid": {
        "model_type": "deepseek_vl_hybrid",
        "text_config": {**_SMALL, "model_type": "llama"},
        "vision_config": _TOWER,
        "high_res_vision_config": {"num_hidden_layers": 2, "hidden_size": 64, "global_attn_indexes": [1]},
    },
    "janus": {
        "model_type": "janus",
        "text_config": {**_SMALL, "model_type": "llama"},
        "vision_config": {"num_hidden_layers": 1, "hidden_size": 64, "image_size": 64},
        "vq_config": {"base_channels": 32, "channel_multiplier": [1, 2], "num_embeddings": 64},
    },
    # --- vlm2: SigLIP / SigLIP 2 / Idefics-style vision-language models (config_readers/vlm2.py; oracle checks in
    # tests/core/test_families_vlm2.py)
    "shieldgemma2": {
        "model_type": "shieldgemma2",
        "text_config": {**_SMALL, "model_type": "gemma3_text", "head_dim": 64, "sliding_window": 128},
        "vision_config": {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 1,
            "num_attention_heads": 4,
        },
    },
    "idefics2": {
        "model_type": "idefics2",
        "text_config": {**_SMALL, "model_type": "mistral", "num_key_value_heads": 2},
        "vision_config": {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 1,
            "num_attention_heads": 4,
        },
        "perceiver_config": {"resampler_depth": 1, "resampler_n_latents": 8},
    },
    "lfm2_vl": {
        "model_type": "lfm2_vl",
        "text_config": {
            **_SMALL,
            "model_type": "lfm2",
            "num_key_value_heads": 2,
            "layer_types": ["conv", "full_attention"],
        },
        "vision_config": {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 1,
            "num_attention_heads": 4,
        },
        "projector_hidden_size": 128,
    },
    "cohere2_vision": {
        "model_type": "cohere2_vision",
        "text_config": {**_SMALL, "model_type": "cohere2", "sliding_window": 128},
        "vision_config": {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 1,
            "num_attention_heads": 4,
        },
        "alignment_intermediate_size": 256,
    },
    "zamba": {
        **_SMALL,
        "model_type": "zamba",
        "num_hidden_layers": 3,
        "n_mamba_heads": 2,
        "mamba_dt_rank": 32,
        "layers_block_type": ["mamba", "hybrid", "hybrid"],
    },
    "zamba2": {
        **_SMALL,
        "model_type": "zamba2",
        "num_hidden_layers": 3,
        "n_mamba_heads": 8,
        "adapter_rank": 32,
        "use_shared_attention_adapter": True,
        "layers_block_type": ["mamba", "hybrid", "hybrid"],
    },
    "doge": {**_SMALL, "model_type": "doge", "is_moe": True, "num_experts": 64, "num_experts_per_tok": 4},
    "nanochat": {**_SMALL, "model_type": "nanochat"},
    "apertus1p5": {"model_type": "apertus1p5", "text_config": {**_SMALL, "model_type": "apertus1p5_text"}},
    "ernie4_5_vl_moe": {
        "model_type": "ernie4_5_vl_moe",
        "text_config": {
            **_SMALL,
            "moe_num_experts": 4,
            "moe_k": 2,
            "moe_intermediate_size": [128, 64],
            "moe_num_shared_experts": 1,
        },
        "vision_config": {"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2},
    },
    "deepseek_v4": {
        "model_type": "deepseek_v4",
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "head_dim": 128,
        "q_lora_rank": 64,
        "o_groups": 2,
        "o_lora_rank": 64,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "vocab_size": 1000,
        "index_n_heads": 4,
        "index_head_dim": 32,
        "sliding_window": 32,
        "compress_ratios": [0, 4, 128, 4, 0],
    },
    # --- llamalike: Llama's names with a twist (config_readers/llamalike.py; oracle and published configs in
    # tests/core/test_families_llamalike.py)
    "internlm3": {**_SMALL, "model_type": "internlm3", "qkv_bias": True, "bias": True},
    "iquestcoder": {**_SMALL, "model_type": "iquestcoder"},
    "ministral3": {**_SMALL, "model_type": "ministral3", "sliding_window": 128},
    "cwm": {**_SMALL, "model_type": "cwm", "sliding_window": 128},
    "helium": {**_SMALL, "model_type": "helium", "attention_bias": True},
    "ernie4_5": {**_SMALL, "model_type": "ernie4_5", "use_bias": True},
    "seed_oss": {**_SMALL, "model_type": "seed_oss"},
    "hyperclovax": {**_SMALL, "model_type": "hyperclovax"},
    "olmo": {**_SMALL, "model_type": "olmo"},
    "diffllama": {**_SMALL, "model_type": "diffllama"},
    "vaultgemma": {**_SMALL, "model_type": "vaultgemma", "head_dim": 64, "sliding_window": 128},
    "granite_swa": {**_SMALL, "model_type": "granite_swa"},
    "granitemoe_swa": {
        **_SMALL,
        "model_type": "granitemoe_swa",
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "shared_intermediate_size": 128,
    },
    "granitemoeshared": {
        **_SMALL,
        "model_type": "granitemoeshared",
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "shared_intermediate_size": 128,
    },
    "flex_olmo": {**_SMALL, "model_type": "flex_olmo", "num_experts": 4, "num_experts_per_tok": 2},
    "mellum": {
        **_SMALL,
        "model_type": "mellum",
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "mlp_layer_types": ["dense", "sparse"],
    },
    "flint": {
        **_SMALL,
        "model_type": "flint",
        "num_hidden_layers": 3,
        "sliding_window": 128,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "shared_expert_intermediate_size": 128,
        "mlp_only_layers": [0],
    },
    "kolibri1": {
        **_SMALL,
        "model_type": "kolibri1",
        "sliding_window": 128,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
    },
    "cohere2_moe": {
        **_SMALL,
        "model_type": "cohere2_moe",
        "sliding_window": 128,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "num_shared_experts": 1,
        "first_k_dense_replace": 1,
        "prefix_dense_intermediate_size": 512,
    },
    "sarvam_moe": {
        **_SMALL,
        "model_type": "sarvam_moe",
        "num_key_value_heads": 2,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
    },
    "mimo_v2_flash": {
        **_SMALL,
        "model_type": "mimo_v2_flash",
        "num_key_value_heads": 2,
        "head_dim": 64,
        "v_head_dim": 32,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
    },
    "beam": {
        **_SMALL,
        "model_type": "beam",
        "num_hidden_layers": 4,
        "head_dim": 64,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
    },
    "lara_mini": {
        **_SMALL,
        "model_type": "lara_mini",
        "head_dim": 64,
        "linear_key_head_dim": 32,
        "linear_value_head_dim": 32,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "shared_expert_intermediate_size": 128,
    },
}

#: one catalog model per record the catalog covers (the 80-layer Llama exercises llama.cpp's 70B rule)
_FROM_CATALOG = {
    "llama": "meta-llama/Llama-3.1-70B",
    "phi3": "microsoft/Phi-3.5-mini-instruct",
    "mixtral": "mistralai/Mixtral-8x7B-v0.1",
    "olmo2": "allenai/OLMo-2-1124-7B",
    "gemma": "google/gemma-2-2b-it",
    "gpt_oss": "openai/gpt-oss-20b",
    "llama4": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "deepseek_v3": "deepseek-ai/DeepSeek-V3",
    "qwen_hybrid": "Qwen/Qwen3-Next-80B-A3B-Thinking",
}

_GENERIC = {
    "model_type": "mystery",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
    "vocab_size": 1000,
}


def _config(name: str) -> dict[str, Any]:
    if name in _LEGACY:
        return copy.deepcopy(_LEGACY[name])
    return copy.deepcopy(default_catalog().config(_FROM_CATALOG[name]))


def test_every_record_has_a_sample_config_that_reads_as_it() -> None:
    assert set(_LEGACY) | set(_FROM_CATALOG) == set(FAMILIES)
    for name in FAMILIES:
        assert family_of(normalize(_config(name))).name == name


def test_every_catalog_model_has_a_family_record() -> None:
    cat = default_catalog()
    seen = set()
    for model in cat.models():
        facts = cat.facts(model.id)
        arch = facts.arch
        fam = family_of(arch)
        seen.add(fam.name)
        assert FAMILIES[fam.name] is fam, model.id
        # the reader applied the record's constants
        assert (arch.family, arch.norm, arch.mlp_gated) == (fam.reader, fam.norm, fam.mlp != "plain"), model.id
        names = {t.name for t in facts.tensors}
        assert f"{fam.embed}.weight" in names, model.id
        assert any(n.startswith(f"{fam.layers}.") and f".{fam.attn}." in n for n in names), model.id
    assert {"llama", "phi3", "mixtral", "olmo2", "gemma", "gpt_oss", "llama4", "deepseek_v3"} <= seen


def test_every_record_names_a_reader_and_its_model_types_read_as_it() -> None:
    assert set(_READERS) == {fam.reader for fam in FAMILIES.values()}
    for fam in FAMILIES.values():
        assert FAMILIES[fam.reader].reader == fam.reader, fam.name
        for mt in fam.model_types:
            assert family_for_model_type(mt) is fam
            assert mt == mt.lower() and not mt.endswith("_text")


def test_a_model_type_claimed_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    twice = dataclasses.replace(families.GEMMA, name="gemma_again")
    monkeypatch.setattr(families, "FAMILIES", {**FAMILIES, "gemma_again": twice})
    with pytest.raises(ValueError, match="model_type 'gemma' is claimed by the families gemma and gemma_again"):
        families._by_model_type()


def test_a_record_whose_mlp_names_do_not_fit_its_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="a plain MLP names 2 projections"):
        dataclasses.replace(families.PHI, mlp_names=("fc1", "fc1b", "fc2"))
    with pytest.raises(ValueError, match="fused experts name 2 tensors"):
        dataclasses.replace(families.GPT_OSS, fused_experts=False)


# ----------------------------------------------------------------------------------------------
# no dead quirk: changing any one field of one record changes what the core produces for its model


def _mutated(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if value is None:
        return "x"
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, tuple):
        return tuple(_mutated(v) for v in value)
    if isinstance(value, MtpNames):
        return MtpNames(**{f.name: _mutated(getattr(value, f.name)) for f in dataclasses.fields(MtpNames)})
    raise TypeError(f"no mutation for {value!r}")


def _with_field(fam: Family, field: str, value: Any) -> Family:
    """``fam`` with one field changed, past the record's own consistency checks (a dead field stays dead)."""
    out = copy.copy(fam)
    object.__setattr__(out, field, value)
    return out


def _outcome(config: dict[str, Any]) -> Any:
    try:
        arch = normalize(copy.deepcopy(config))
        tensors = build_inventory(arch)
        return (
            arch.model_dump_json(),
            [(t.name, t.shape, t.role, t.part) for t in tensors],
            gguf_model_info(arch),
            _llamacpp_kv(config),
        )
    except (ConfigError, KeyError, ValueError, TypeError) as err:
        return repr(err)


def _llamacpp_kv(config: dict[str, Any]) -> int:
    """llama.cpp's KV cache for the model at 32k cells (its view of sliding windows is a family quirk)."""
    scenario = Scenario.model_validate(
        {"model": {"id": "x/y"}, "weights": "q8_0", "workload": {"engine": "llamacpp", "input_len": 32768}}
    )
    est = estimate(scenario, model_facts(copy.deepcopy(config)), None)
    return next(c.bytes for c in est.components if c.name == "KV cache")


def _use(mp: pytest.MonkeyPatch, key: str, fam: Family) -> None:
    """Make ``fam`` the registry's record under ``key``, with the lookups rebuilt from the registry."""
    registry = {**FAMILIES, key: fam}
    mp.setattr(families, "FAMILIES", registry)
    mp.setattr(families, "_BY_MODEL_TYPE", families._by_model_type())
    mp.setattr(families, "_VARIANTS", {mt: f for f in registry.values() if f.reader != f.name for mt in f.model_types})


def _first_record_changed_by(field: str, records: dict[str, Family]) -> str | None:
    """The first record whose sample config comes out differently (architecture, tensors, GGUF hparams or the
    error) when ``field`` of that record is changed; None when no record's does: nothing reads the field."""
    for key, fam in records.items():
        config = _config(key)
        with pytest.MonkeyPatch.context() as mp:
            _use(mp, key, fam)
            before = _outcome(config)
            _use(mp, key, _with_field(fam, field, _mutated(getattr(fam, field))))
            after = _outcome(config)
        if after != before:
            return key
    return None


#: the registry key: the record's identity, not a quirk (test_every_record_is_filed_under_its_name)
_IDENTITY = {"name"}


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(Family) if f.name not in _IDENTITY])
def test_every_family_field_changes_something(field: str) -> None:
    assert _first_record_changed_by(field, dict(FAMILIES)) is not None, f"Family.{field} changes nothing"


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(MtpNames)])
def test_every_mtp_name_changes_something(field: str) -> None:
    # the split joining projection: only DeepSeek-V4's records have one
    keys = ("deepseek_v4",) if field == "split_proj" else ("deepseek_v3", "qwen_hybrid")
    for key in keys:
        fam = FAMILIES[key]
        value = getattr(fam.mtp, field)
        changed = tuple(v + "_x" for v in value) if isinstance(value, tuple) else value + "_x"
        mtp = dataclasses.replace(fam.mtp, **{field: changed})
        config = _config(key)
        with pytest.MonkeyPatch.context() as mp:
            before = _outcome(config)
            _use(mp, key, dataclasses.replace(fam, mtp=mtp))
            assert _outcome(config) != before, f"{key}: MtpNames.{field} changes nothing"


@dataclasses.dataclass(frozen=True, slots=True)
class _WithDeadQuirk(Family):
    #: a field no code reads
    dead_quirk: bool = False


def test_the_dead_quirk_check_finds_a_field_nobody_reads() -> None:
    records = {
        key: _WithDeadQuirk(**{f.name: getattr(fam, f.name) for f in dataclasses.fields(Family)})
        for key, fam in FAMILIES.items()
    }
    assert _first_record_changed_by("dead_quirk", records) is None
    assert _first_record_changed_by("embed", records) is not None


def test_every_record_is_filed_under_its_name() -> None:
    assert all(key == fam.name for key, fam in FAMILIES.items())
    variants = {fam.name for fam in FAMILIES.values() if fam.reader != fam.name}
    assert variants == {"phi3", "mixtral", "olmo2", "granitemoe", "sarvam_mla", "minimax_m3_vl", "fuyu"}


# ----------------------------------------------------------------------------------------------
# a model type no record claims


def test_an_unknown_model_type_still_takes_the_generic_path_with_the_same_words() -> None:
    assert family_for_model_type("mystery") is None
    arch = normalize(_GENERIC)
    assert family_of(arch) is families.LLAMA
    assert arch.warnings == (
        "model_type 'mystery' is not one vramdesk knows: estimated as a generic Llama-style decoder (RMSNorm, "
        "gated MLP, rotary); check the parameter total against the checkpoint",
    )
    with pytest.raises(ConfigError) as err:
        normalize({k: v for k, v in _GENERIC.items() if k != "hidden_size"})
    assert str(err.value) == (
        "unsupported model_type 'mystery': not a known architecture, and the generic decoder path needs "
        "hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and vocab_size "
        "(mystery: config is missing the field 'hidden_size')"
    )


def test_a_variant_is_matched_on_the_model_type_as_the_config_spells_it() -> None:
    phi3 = _config("phi3")
    assert family_of(normalize(phi3)) is families.PHI3
    # read by the same reader, but the inventory has always named "PHI3" tensors as Llama's
    shouting = normalize({**phi3, "model_type": "PHI3"})
    assert shouting.family == "llama" and family_of(shouting) is families.LLAMA
