"""Storage formats: exact bytes per tensor, hand-computed from each format's stored tensors."""

from __future__ import annotations

import dataclasses
import math

import pytest

from vramdesk.core.dtype_names import DTYPE_BYTES, FormatError, kv_bits, normalize_dtype
from vramdesk.core.gguf import GGUF_TYPE_IDS, GGUF_TYPES, GgufModelInfo, gguf_mix_type, gguf_tensor_bytes
from vramdesk.core.quant_config import format_from_quantization_config
from vramdesk.core.weight_format import WeightFormat, known_weight_formats, parse_weight_format

SQ = (4096, 4096)
N_SQ = 4096 * 4096


# -- plain dtypes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("bfloat16", "bf16"),
        ("torch.bfloat16", "bf16"),
        ("BF16", "bf16"),
        ("float16", "fp16"),
        ("half", "fp16"),
        ("F16", "fp16"),
        ("float32", "fp32"),
        ("float", "fp32"),
        ("F32", "fp32"),
        ("torch.float32", "fp32"),
        ("F8_E4M3", "float8_e4m3fn"),
        ("float8_e4m3fn", "float8_e4m3fn"),
        ("F8_E5M2", "float8_e5m2"),
        ("I8", "int8"),
        ("U8", "uint8"),
        ("I32", "i32"),
        ("int64", "i64"),
        ("fp8", "fp8"),
        (" bf16 ", "bf16"),
    ],
)
def test_normalize_dtype(spelling: str, canonical: str) -> None:
    assert normalize_dtype(spelling) == canonical
    assert canonical in DTYPE_BYTES


def test_dtype_bytes_values() -> None:
    assert DTYPE_BYTES["fp32"] == 4
    assert DTYPE_BYTES["bf16"] == 2
    assert DTYPE_BYTES["fp16"] == 2
    assert DTYPE_BYTES["fp8"] == 1
    assert DTYPE_BYTES["float8_e4m3fn"] == 1
    assert DTYPE_BYTES["int8"] == 1
    assert DTYPE_BYTES["i32"] == 4
    assert DTYPE_BYTES["fp4_e2m1"] == 0.5
    assert DTYPE_BYTES[normalize_dtype("U8")] == 1


@pytest.mark.parametrize("bad", ["bfloat17", "", "auto", "q4_k_m"])
def test_normalize_dtype_unknown(bad: str) -> None:
    with pytest.raises(FormatError) as err:
        normalize_dtype(bad)
    assert repr(bad) in str(err.value)
    assert "bf16" in str(err.value)  # lists the known names


# -- plain float formats ---------------------------------------------------------------------------


def test_bf16_plain() -> None:
    fmt = parse_weight_format("bf16")
    assert fmt.kind == "float"
    assert fmt.base_dtype == "bf16"
    assert fmt.tensor_bytes("model.layers.0.mlp.down_proj.weight", "mlp", SQ) == 33554432
    assert fmt.tensor_bytes("model.norm.weight", "norm", (4096,)) == 8192
    assert not fmt.is_quantized("model.layers.0.mlp.down_proj.weight", "mlp")
    assert fmt.bits_per_element() == 16


def test_fp32_ignores_base_dtype_argument() -> None:
    fmt = parse_weight_format("FLOAT32", base_dtype="bf16")
    assert fmt.name == "fp32"
    assert fmt.tensor_bytes("lm_head.weight", "lm_head", (1000, 64)) == 1000 * 64 * 4


def test_weight_format_is_frozen() -> None:
    fmt = parse_weight_format("bf16")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fmt.name = "x"  # type: ignore[misc]


# -- fp8 ---------------------------------------------------------------------------------------------


def test_fp8_per_tensor() -> None:
    fmt = parse_weight_format("fp8")
    assert fmt.tensor_bytes("model.layers.0.self_attn.q_proj.weight", "attn", SQ) == N_SQ + 4
    # embeddings, lm_head, router, vision stay at the base dtype
    assert fmt.tensor_bytes("model.embed_tokens.weight", "embedding", (32000, 4096)) == 32000 * 4096 * 2
    assert fmt.tensor_bytes("model.layers.0.mlp.gate.weight", "router", (64, 4096)) == 64 * 4096 * 2
    assert not fmt.is_quantized("visual.blocks.0.attn.qkv.weight", "vision")
    assert fmt.is_quantized("model.layers.61.eh_proj.weight", "mtp")


def test_fp8_block_rounds_blocks_up() -> None:
    fmt = parse_weight_format("fp8-block")
    assert fmt.block == (128, 128)
    # 1000 x 300: ceil(1000/128) = 8 row blocks, ceil(300/128) = 3 column blocks, fp32 each
    assert fmt.tensor_bytes("x.weight", "mlp", (1000, 300)) == 1000 * 300 + 8 * 3 * 4
    assert fmt.tensor_bytes("x.weight", "mlp", SQ) == N_SQ + 32 * 32 * 4
    assert fmt.bits_per_element() == pytest.approx(8 + 32 * 32 * 4 * 8 / N_SQ)


def test_fp8_block_stacked_experts_per_expert_blocks() -> None:
    fmt = parse_weight_format("fp8-block")
    # blocks never straddle experts: each (200, 300) expert has 2 x 3 blocks
    assert fmt.tensor_bytes("model.layers.3.mlp.experts.down_proj", "expert", (4, 200, 300)) == 4 * (
        200 * 300 + 2 * 3 * 4
    )


def test_fp8_block_custom_block_name() -> None:
    fmt = parse_weight_format("fp8-block-64x32")
    assert fmt.block == (64, 32)
    assert fmt.tensor_bytes("x.weight", "attn", (100, 100)) == 10000 + 2 * 4 * 4


# -- bitsandbytes --------------------------------------------------------------------------------------


def test_int8_llm_int8() -> None:
    fmt = parse_weight_format("int8")
    assert fmt.kind == "int8"
    assert fmt.tensor_bytes("model.layers.0.mlp.up_proj.weight", "mlp", (11008, 4096)) == 11008 * 4096 + 11008 * 4
    # bitsandbytes keeps lm_head unquantised
    assert fmt.tensor_bytes("lm_head.weight", "lm_head", (32000, 4096)) == 32000 * 4096 * 2
    # router and vision Linear layers are nn.Linear: quantised
    assert fmt.is_quantized("model.layers.0.mlp.gate.weight", "router")
    assert fmt.is_quantized("visual.blocks.0.mlp.fc1.weight", "vision")


def test_nf4_bits() -> None:
    fmt = parse_weight_format("nf4")
    packed = N_SQ // 2
    absmax = (N_SQ // 64) * 4
    quant_map = 16 * 4
    expected = packed + absmax + quant_map
    assert expected == 9437248
    assert fmt.tensor_bytes("model.layers.0.mlp.up_proj.weight", "mlp", SQ) == expected
    assert fmt.bits_per_element() == pytest.approx(expected * 8 / N_SQ)
    assert fmt.bits_per_element() == pytest.approx(4.5, abs=1e-4)


def test_nf4_double_quant_bits() -> None:
    fmt = parse_weight_format("nf4-dq")
    assert fmt.double_quant
    blocks = N_SQ // 64  # 262144 absmax values, stored as uint8
    nested = math.ceil(blocks / 256) * 4  # fp32 absmax of the absmax, 1024 of them
    expected = N_SQ // 2 + blocks + nested + 4 + 256 * 4 + 16 * 4
    assert expected == 8655940
    assert fmt.tensor_bytes("model.layers.0.mlp.up_proj.weight", "mlp", SQ) == expected
    assert fmt.bits_per_element() == pytest.approx(4.12747, abs=1e-5)


def test_bnb4_odd_size_rounds_up() -> None:
    fmt = parse_weight_format("fp4")
    # 3 x 43 = 129 values: 65 bytes of codes, 3 absmax blocks
    assert fmt.tensor_bytes("x.weight", "attn", (3, 43)) == 65 + 3 * 4 + 64


def test_bnb_stacked_experts_stay_unquantised() -> None:
    fmt = parse_weight_format("nf4", base_dtype="bf16")
    stacked = (8, 1024, 2048)
    assert not fmt.is_quantized("model.layers.0.mlp.experts.gate_up_proj", "expert", shape=stacked)
    assert fmt.tensor_bytes("model.layers.0.mlp.experts.gate_up_proj", "expert", stacked) == 8 * 1024 * 2048 * 2
    per_expert = (1024, 2048)
    n = 1024 * 2048
    assert fmt.tensor_bytes("model.layers.0.mlp.experts.3.up_proj.weight", "expert", per_expert) == (
        n // 2 + n // 64 * 4 + 64
    )


# -- GPTQ / AWQ --------------------------------------------------------------------------------------


def test_gptq_int4_g128() -> None:
    fmt = parse_weight_format("gptq-int4")
    assert (fmt.kind, fmt.bits, fmt.group_size) == ("gptq", 4, 128)
    qweight = (4096 * 4 // 32) * 4096 * 4
    qzeros = 32 * (4096 * 4 // 32) * 4
    scales = 32 * 4096 * 2
    g_idx = 4096 * 4
    expected = qweight + qzeros + scales + g_idx
    assert fmt.tensor_bytes("model.layers.0.self_attn.q_proj.weight", "attn", SQ) == expected
    assert fmt.bits_per_element() == 4 + (16 + 4) / 128 + 32 / 4096


def test_gptq_group_suffixes() -> None:
    g32 = parse_weight_format("GPTQ-INT4-G32")
    assert (g32.name, g32.group_size) == ("gptq-int4-g32", 32)
    per_channel = parse_weight_format("gptq-int8-g-1")
    assert per_channel.group_size == -1
    out, in_ = 4096, 11008
    expected = (in_ * 8 // 32) * out * 4 + 1 * (out * 8 // 32) * 4 + 1 * out * 2 + in_ * 4
    assert per_channel.tensor_bytes("model.layers.0.mlp.down_proj.weight", "mlp", (out, in_)) == expected


def test_gptq_int3_packing_rounds_up() -> None:
    fmt = parse_weight_format("gptq-int3")
    out, in_ = 100, 200
    n_groups = 2  # ceil(200 / 128)
    expected = math.ceil(in_ * 3 / 32) * out * 4 + n_groups * math.ceil(out * 3 / 32) * 4 + n_groups * out * 2 + in_ * 4
    assert fmt.tensor_bytes("x.weight", "mlp", (out, in_)) == expected


def test_gptq_roles() -> None:
    fmt = parse_weight_format("gptq-int4")
    assert fmt.is_quantized("model.layers.0.linear_attn.in_proj_qkvz.weight", "linear_attn")
    assert fmt.is_quantized("model.layers.0.mlp.shared_expert.up_proj.weight", "shared_expert")
    for role in ("router", "embedding", "lm_head", "norm", "bias", "vision", "mtp", "conv", "state_param"):
        assert not fmt.is_quantized("x.weight", role), role
    assert fmt.tensor_bytes("mtp.layers.0.mlp.up_proj.weight", "mtp", (8, 16)) == 8 * 16 * 2


def test_gptq_stacked_experts() -> None:
    fmt = parse_weight_format("gptq-int4")
    one = fmt.tensor_bytes("e.weight", "expert", (768, 2048))
    assert fmt.tensor_bytes("model.layers.0.mlp.experts.down_proj", "expert", (128, 768, 2048)) == 128 * one


def test_awq_int4() -> None:
    fmt = parse_weight_format("awq-int4")
    qweight = 4096 * (4096 * 4 // 32) * 4
    qzeros = 32 * (4096 * 4 // 32) * 4
    scales = 32 * 4096 * 2
    assert fmt.tensor_bytes("model.layers.0.self_attn.o_proj.weight", "attn", SQ) == qweight + qzeros + scales
    assert fmt.bits_per_element() == 4 + (16 + 4) / 128
    g64 = parse_weight_format("awq-int4-g64")
    assert g64.group_size == 64
    assert g64.bits_per_element() == 4 + (16 + 4) / 64


def test_awq_gemv_pads_groups() -> None:
    gemv = format_from_quantization_config(
        {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"}, base_dtype="fp16"
    )
    # in = 1280 -> 10 groups, zeros width ceil(10/8) = 2 words, scales 2*8 = 16 columns (6 padding)
    out, in_ = 64, 1280
    assert gemv.tensor_bytes("x.weight", "mlp", (out, in_)) == out * in_ // 2 + out * 2 * 4 + out * 16 * 2
    gemm = parse_weight_format("awq-int4")
    assert gemm.tensor_bytes("x.weight", "mlp", (out, in_)) == in_ * (out * 4 // 32) * 4 + 10 * 8 * 4 + 10 * out * 2


def test_int4_is_generic_awq_layout() -> None:
    fmt = parse_weight_format("int4")
    assert fmt.name == "int4"
    assert fmt.kind == "awq"
    assert (fmt.bits, fmt.group_size) == (4, 128)
    assert fmt.tensor_bytes("x.weight", "mlp", SQ) == parse_weight_format("awq-int4").tensor_bytes(
        "x.weight", "mlp", SQ
    )


# -- MXFP4 -------------------------------------------------------------------------------------------


def test_mxfp4() -> None:
    fmt = parse_weight_format("mxfp4")
    assert fmt.bits_per_element() == 4.25
    assert fmt.tensor_bytes("e", "expert", SQ) == N_SQ // 2 + 4096 * 128
    # only experts: attention stays bf16
    assert fmt.tensor_bytes("model.layers.0.self_attn.q_proj.weight", "attn", SQ) == N_SQ * 2


# -- skip patterns -------------------------------------------------------------------------------------


def _with_skips(fmt: WeightFormat, *patterns: str) -> WeightFormat:
    return dataclasses.replace(fmt, skip_patterns=patterns)


def test_skip_pattern_glob_and_plain() -> None:
    fmt = _with_skips(parse_weight_format("int8"), "model.layers.*.self_attn", "lm_head")
    assert fmt.is_skipped("model.layers.3.self_attn.q_proj.weight")
    assert not fmt.is_quantized("model.layers.3.self_attn.q_proj.weight", "attn")
    assert fmt.is_quantized("model.layers.3.mlp.up_proj.weight", "mlp")
    assert fmt.is_skipped("lm_head.weight")
    assert fmt.tensor_bytes("model.layers.3.self_attn.q_proj.weight", "attn", (8, 8)) == 8 * 8 * 2


def test_skip_pattern_whole_components_only() -> None:
    fmt = _with_skips(parse_weight_format("int8"), "mlp.gate", "model.layers.1")
    assert fmt.is_skipped("model.layers.0.mlp.gate.weight")
    assert not fmt.is_skipped("model.layers.0.mlp.gate_proj.weight")
    assert fmt.is_skipped("model.layers.1.self_attn.q_proj.weight")
    assert not fmt.is_skipped("model.layers.10.self_attn.q_proj.weight")


def test_skip_pattern_regex_and_vlm_prefix() -> None:
    fmt = _with_skips(parse_weight_format("int8"), "re:.*mlp\\.gate$", "model.layers.0.self_attn")
    assert fmt.is_skipped("model.layers.5.mlp.gate.weight")
    assert not fmt.is_skipped("model.layers.5.mlp.gate_proj.weight")
    # a VLM checkpoint nests the text model under model.language_model
    assert fmt.is_skipped("model.language_model.layers.0.self_attn.k_proj.weight")


def test_bad_regex_pattern_is_format_error() -> None:
    with pytest.raises(FormatError, match="regular expression"):
        _with_skips(parse_weight_format("int8"), "re:(")


# -- quantization_config ---------------------------------------------------------------------------


def test_config_gpt_oss_mxfp4() -> None:
    qc: dict[str, object] = {
        "quant_method": "mxfp4",
        "modules_to_not_convert": [
            "model.layers.*.self_attn",
            "model.layers.*.mlp.router",
            "model.embed_tokens",
            "lm_head",
        ],
    }
    fmt = format_from_quantization_config(qc, base_dtype="bfloat16")
    assert fmt.name == "mxfp4"
    assert fmt.base_dtype == "bf16"
    assert fmt.is_skipped("model.layers.7.mlp.router.weight")
    assert fmt.is_skipped("model.embed_tokens.weight")
    assert not fmt.is_quantized("model.layers.7.self_attn.q_proj.weight", "attn")
    # gpt-oss-20b experts: 32 x (5760, 2880) gate_up; 90 blocks of 32 per row, 17 bytes each
    shape = (32, 5760, 2880)
    assert fmt.tensor_bytes("model.layers.0.mlp.experts.gate_up_proj", "expert", shape) == 32 * 5760 * 90 * 17
    assert fmt.tensor_bytes("model.layers.0.mlp.experts.gate_up_proj_bias", "bias", (32, 5760)) == 32 * 5760 * 2


def test_config_deepseek_fp8_block() -> None:
    qc: dict[str, object] = {
        "quant_method": "fp8",
        "fmt": "e4m3",
        "activation_scheme": "dynamic",
        "weight_block_size": [128, 128],
    }
    fmt = format_from_quantization_config(qc, base_dtype="bf16")
    assert fmt.name == "fp8-block"
    assert fmt.block == (128, 128)
    # kv_b_proj (32768, 512): 256 x 4 blocks
    assert fmt.tensor_bytes("model.layers.0.self_attn.kv_b_proj.weight", "attn", (32768, 512)) == (
        32768 * 512 + 256 * 4 * 4
    )
    assert fmt.tensor_bytes("model.layers.3.mlp.gate.weight", "router", (256, 7168)) == 256 * 7168 * 2


def test_mtp_fusion_projection_stays_bf16_in_fp8_but_not_in_gguf() -> None:
    fp8 = parse_weight_format("fp8-block")
    assert fp8.is_quantized("model.layers.61.self_attn.q_a_proj.weight", "mtp")
    assert fp8.tensor_bytes("model.layers.61.eh_proj.weight", "mtp_proj", (7168, 14336)) == 7168 * 14336 * 2
    q8 = parse_weight_format("q8_0")
    assert q8.tensor_bytes("blk.61.nextn.eh_proj.weight", "mtp_proj", (7168, 14336), 61, 62) == 7168 * 448 * 34


def test_config_fp8_per_tensor_and_static_activation() -> None:
    fmt = format_from_quantization_config(
        {"quant_method": "fp8", "activation_scheme": "static", "modules_to_not_convert": ["lm_head"]},
        base_dtype="bf16",
    )
    assert fmt.name == "fp8"
    assert fmt.tensor_bytes("x.weight", "mlp", (10, 20)) == 200 + 4 + 4


def test_config_qwen_gptq_int8() -> None:
    qc: dict[str, object] = {"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": False, "sym": True}
    fmt = format_from_quantization_config(qc, base_dtype="fp16")
    assert fmt.name == "gptq-int8"
    assert (fmt.bits, fmt.group_size, fmt.base_dtype) == (8, 128, "fp16")
    assert fmt.bits_per_element() == 8 + (16 + 8) / 128 + 32 / 4096


def test_config_gptq_modules_in_block_and_lm_head() -> None:
    qc: dict[str, object] = {
        "quant_method": "gptq",
        "bits": 4,
        "group_size": 128,
        "lm_head": True,
        "modules_in_block_to_quantize": [["self_attn.q_proj", "self_attn.k_proj"], ["mlp.down_proj"]],
    }
    fmt = format_from_quantization_config(qc, base_dtype="bf16")
    assert fmt.is_quantized("model.layers.0.self_attn.q_proj.weight", "attn")
    assert not fmt.is_quantized("model.layers.0.self_attn.v_proj.weight", "attn")
    assert fmt.is_quantized("model.layers.0.mlp.down_proj.weight", "mlp")
    assert "lm_head" in fmt.quantized_roles


def test_config_qwen_awq() -> None:
    qc: dict[str, object] = {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm", "zero_point": True}
    fmt = format_from_quantization_config(qc, base_dtype="fp16")
    assert fmt.name == "awq-int4"
    assert fmt.kind == "awq"
    assert fmt.tensor_bytes("x.weight", "mlp", SQ) == parse_weight_format("awq-int4").tensor_bytes(
        "x.weight", "mlp", SQ
    )


def test_config_autoawq_spelling() -> None:
    fmt = format_from_quantization_config(
        {"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "version": "GEMM", "modules_to_not_convert": None},
        base_dtype="fp16",
    )
    assert (fmt.name, fmt.group_size) == ("awq-int4-g64", 64)


def test_config_bnb_4bit_double_quant() -> None:
    qc: dict[str, object] = {
        "quant_method": "bitsandbytes",
        "_load_in_4bit": True,
        "load_in_4bit": True,
        "load_in_8bit": False,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True,
        "bnb_4bit_compute_dtype": "bfloat16",
        "llm_int8_skip_modules": ["vision_tower"],
    }
    fmt = format_from_quantization_config(qc, base_dtype="bf16")
    assert fmt.name == "nf4-dq"
    assert fmt.tensor_bytes("model.layers.0.mlp.up_proj.weight", "mlp", SQ) == 8655940
    assert not fmt.is_quantized("model.vision_tower.blocks.0.fc1.weight", "vision")


def test_config_bnb_8bit_and_default_4bit_type() -> None:
    int8 = format_from_quantization_config({"quant_method": "bitsandbytes", "load_in_8bit": True}, base_dtype="fp16")
    assert int8.name == "int8"
    fp4 = format_from_quantization_config({"quant_method": "bitsandbytes", "load_in_4bit": True}, base_dtype="fp16")
    assert fp4.name == "fp4"  # BitsAndBytesConfig's default quant type


def test_config_fbgemm_fp8() -> None:
    fmt = format_from_quantization_config(
        {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ["lm_head"]},
        base_dtype="bf16",
    )
    assert fmt.tensor_bytes("model.layers.0.mlp.up_proj.weight", "mlp", (53248, 16384)) == 53248 * 16384 + 53248 * 4


def test_config_compressed_tensors_w4a16() -> None:
    qc: dict[str, object] = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "int", "symmetric": True, "group_size": 128, "strategy": "group"},
                "input_activations": None,
            }
        },
        "ignore": ["lm_head", "re:.*mlp.gate$"],
    }
    fmt = format_from_quantization_config(qc, base_dtype="bf16")
    assert fmt.kind == "ct-int"
    packed = 4096 * (4096 * 4 // 32) * 4
    weight_shape = 2 * 8
    scales = 4096 * 32 * 2
    assert fmt.tensor_bytes("model.layers.0.mlp.up_proj.weight", "mlp", SQ) == packed + weight_shape + scales
    assert not fmt.is_quantized("model.layers.0.mlp.gate.weight", "router")
    assert fmt.is_quantized("model.layers.0.mlp.experts.0.up_proj.weight", "expert")


def test_config_compressed_tensors_fp8_channel() -> None:
    qc: dict[str, object] = {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
                "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True},
            }
        },
        "ignore": ["lm_head"],
    }
    fmt = format_from_quantization_config(qc, base_dtype="bf16")
    assert fmt.kind == "fp8"
    assert fmt.tensor_bytes("x.weight", "attn", (1024, 4096)) == 1024 * 4096 + 1024 * 2


def test_config_nested_in_full_config_json() -> None:
    config: dict[str, object] = {
        "model_type": "qwen2",
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 32},
    }
    assert format_from_quantization_config(config, base_dtype="bf16").name == "gptq-int4-g32"
    compression: dict[str, object] = {"compression_config": {"quant_method": "fp8"}}
    assert format_from_quantization_config(compression, base_dtype="bf16").name == "fp8"


def test_config_modelopt_nvfp4() -> None:
    fmt = format_from_quantization_config(
        {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]},
        base_dtype="bf16",
    )
    assert fmt.kind == "nvfp4"
    assert fmt.tensor_bytes("x.weight", "mlp", SQ) == N_SQ // 2 + 4096 * 256 + 8


_MIXED_LAYERS = {
    "model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16},
    "model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"},
}


def test_config_modelopt_mixed_precision_prices_each_named_module_in_its_own_format() -> None:
    """ModelOpt MIXED_PRECISION (hf_quant_config's quantization.quantized_layers): each named module in its
    quant_algo, every other tensor unquantised."""
    fmt = format_from_quantization_config(
        {
            "quant_method": "modelopt",
            "quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": _MIXED_LAYERS},
        },
        base_dtype="bf16",
    )
    nvfp4 = N_SQ // 2 + 4096 * 256 + 8  # e2m1 nibbles, fp8 scale per 16, fp32 scales
    fp8 = N_SQ + 4 + 4  # e4m3, fp32 weight_scale and input_scale
    assert fmt.tensor_bytes("model.layers.0.mlp.experts.3.up_proj.weight", "expert", SQ) == nvfp4
    assert fmt.tensor_bytes("model.layers.0.self_attn.q_proj.weight", "attn", SQ) == fp8
    assert fmt.tensor_bytes("model.layers.0.self_attn.k_proj.weight", "attn", SQ) == 2 * N_SQ
    assert fmt.tensor_bytes("model.layers.1.mlp.experts.3.up_proj.weight", "expert", SQ) == 2 * N_SQ
    assert fmt.is_quantized("model.layers.0.mlp.experts.3.up_proj.weight", "expert", shape=SQ)
    assert not fmt.is_quantized("model.layers.1.mlp.experts.3.up_proj.weight", "expert", shape=SQ)


def test_config_fp8_mixed_precision_keeps_the_rest_in_fp8_and_the_ignored_modules_unquantised() -> None:
    """NVIDIA's DeepSeek-V4 NVFP4 exports: quant_method fp8, quant_algo MIXED_PRECISION, the experts named in
    quantized_layers as NVFP4, 'ignore' modules at the base dtype, the rest FP8 as the method stores it."""
    qc = {
        "quant_method": "fp8",
        "quant_algo": "MIXED_PRECISION",
        "quantized_layers": {"layers.0.ffn.experts": {"quant_algo": "NVFP4"}},
        "ignore": ["*.attn.*"],
        "weight_block_size": [128, 128],
    }
    fmt = format_from_quantization_config(qc, base_dtype="bf16")
    assert fmt.tensor_bytes("layers.0.ffn.experts.7.w1.weight", "expert", SQ) == N_SQ // 2 + 4096 * 256 + 8
    assert fmt.tensor_bytes("layers.0.attn.wq_a.weight", "attn", SQ) == 2 * N_SQ
    assert fmt.tensor_bytes("layers.0.ffn.shared_experts.w1.weight", "mlp", SQ) == N_SQ + 32 * 32 * 4


@pytest.mark.parametrize(
    "layers",
    [None, {}, {"m": 5}, {"m": {"quant_algo": "INT4_AWQ"}}],
    ids=["missing", "empty", "not-an-object", "unknown-algo"],
)
def test_config_mixed_precision_refuses_what_it_cannot_price(layers: object) -> None:
    inner: dict[str, object] = {"quant_algo": "MIXED_PRECISION"}
    if layers is not None:
        inner["quantized_layers"] = layers
    with pytest.raises(FormatError) as err:
        format_from_quantization_config({"quant_method": "modelopt", "quantization": inner}, base_dtype="bf16")
    assert "quantized_layers" in str(err.value) or "INT4_AWQ" in str(err.value).upper()


@pytest.mark.parametrize("method", ["foo", "hqq", "eetq"])
def test_config_unknown_method(method: str) -> None:
    with pytest.raises(FormatError) as err:
        format_from_quantization_config({"quant_method": method}, base_dtype="bf16")
    assert f"'{method}'" in str(err.value)
    assert "gptq" in str(err.value)


@pytest.mark.parametrize(
    ("qc", "field"),
    [
        ({"quant_method": "gptq", "group_size": 128}, "bits"),
        ({"quant_method": "gptq", "bits": "4", "group_size": 128}, "bits"),
        ({"quant_method": "awq", "bits": 4}, "group_size"),
        ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size"),
        ({"quant_method": "bitsandbytes"}, "load_in_8bit"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf3"}, "bnb_4bit_quant_type"),
        ({"quant_method": "compressed-tensors"}, "config_groups"),
        ({"quant_method": "mxfp4", "modules_to_not_convert": "lm_head,x"}, ""),
        ({"bits": 4}, "quant_method"),
    ],
)
def test_config_missing_or_malformed_field(qc: dict[str, object], field: str) -> None:
    if not field:  # a single string is accepted as one pattern
        assert format_from_quantization_config(qc, base_dtype="bf16").skip_patterns == ("lm_head,x",)
        return
    with pytest.raises(FormatError, match=field):
        format_from_quantization_config(qc, base_dtype="bf16")


# -- parse_weight_format -------------------------------------------------------------------------------


def test_parse_every_known_name() -> None:
    for name in known_weight_formats():
        fmt = parse_weight_format(name)
        assert fmt.name == name
        assert fmt.explain
        assert fmt.bits_per_element() > 0


def test_parse_unknown_lists_known_names() -> None:
    with pytest.raises(FormatError) as err:
        parse_weight_format("int5")
    message = str(err.value)
    assert "'int5'" in message
    for known in ("gptq-int4", "awq-int4", "nf4-dq", "q4_k_m", "mxfp4"):
        assert known in message


def test_parse_bad_base_dtype() -> None:
    with pytest.raises(FormatError, match="base dtype"):
        parse_weight_format("nf4", base_dtype="int8")


def test_parse_case_insensitive_and_aliases() -> None:
    assert parse_weight_format("Q4_K_M").name == "q4_k_m"
    assert parse_weight_format("q4_k").name == "q4_k_m"  # llama-quantize's alias
    assert parse_weight_format("NF4-DQ").name == "nf4-dq"
    assert parse_weight_format("gguf-f16").kind == "gguf"
    assert parse_weight_format("bf16").kind == "float"


# -- GGUF --------------------------------------------------------------------------------------------


def test_gguf_block_table() -> None:
    assert GGUF_TYPES["Q8_0"] == (32, 34)
    assert GGUF_TYPES["Q4_K"] == (256, 144)
    assert GGUF_TYPES["Q6_K"] == (256, 210)
    assert GGUF_TYPES["IQ4_XS"] == (256, 136)
    assert GGUF_TYPES["MXFP4"] == (32, 17)
    bits = {t: b * 8 / e for t, (e, b) in GGUF_TYPES.items()}
    assert bits["Q8_0"] == 8.5
    assert bits["Q4_0"] == 4.5
    assert bits["Q4_K"] == 4.5
    assert bits["Q6_K"] == 6.5625
    assert bits["Q2_K"] == 2.625
    assert bits["Q3_K"] == 3.4375
    assert bits["Q5_K"] == 5.5


def test_gguf_type_ids() -> None:
    expected = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 10: "Q2_K", 11: "Q3_K"}
    expected |= {12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 20: "IQ4_NL", 23: "IQ4_XS", 30: "BF16", 39: "MXFP4"}
    for type_id, name in expected.items():
        assert GGUF_TYPE_IDS[type_id] == name
    assert all(name in GGUF_TYPES for name in GGUF_TYPE_IDS.values())


def test_gguf_tensor_bytes() -> None:
    assert gguf_tensor_bytes("Q8_0", 4096) == 128 * 34
    assert gguf_tensor_bytes("q6_k", 4096 * 4096) == 65536 * 210
    assert gguf_tensor_bytes("F32", 7) == 28
    with pytest.raises(FormatError, match="Q8_0"):
        gguf_tensor_bytes("Q8_0", 33)
    with pytest.raises(FormatError, match="Q9_K"):
        gguf_tensor_bytes("Q9_K", 256)


def test_gguf_q4_k_m_mix_rules() -> None:
    n = 32
    assert gguf_mix_type("q4_k_m", "output.weight", "lm_head", None, n) == "Q6_K"
    assert gguf_mix_type("q4_k_m", "token_embd.weight", "embedding", None, n) == "Q4_K"
    # use_more_bits(i, 32): i < 4, i >= 28, (i - 4) % 3 == 2
    assert gguf_mix_type("q4_k_m", "blk.0.attn_v.weight", "attn", 0, n) == "Q6_K"
    assert gguf_mix_type("q4_k_m", "blk.5.attn_v.weight", "attn", 5, n) == "Q4_K"
    assert gguf_mix_type("q4_k_m", "blk.6.attn_v.weight", "attn", 6, n) == "Q6_K"
    assert gguf_mix_type("q4_k_m", "blk.31.attn_v.weight", "attn", 31, n) == "Q6_K"
    assert gguf_mix_type("q4_k_m", "blk.5.ffn_down.weight", "mlp", 5, n) == "Q4_K"
    assert gguf_mix_type("q4_k_m", "blk.9.ffn_down.weight", "mlp", 9, n) == "Q6_K"
    assert gguf_mix_type("q4_k_m", "blk.5.attn_q.weight", "attn", 5, n) == "Q4_K"
    assert gguf_mix_type("q4_k_m", "blk.5.attn_norm.weight", "norm", 5, n) == "F32"
    assert gguf_mix_type("q4_k_m", "blk.5.ffn_gate_inp.weight", "router", 5, n) == "F32"
    # layer index read from the name when not given; HF spelling recognised
    assert gguf_mix_type("q4_k_m", "model.layers.6.self_attn.v_proj.weight", "attn", None, n) == "Q6_K"
    assert gguf_mix_type("q4_k_m", "model.layers.5.mlp.down_proj.weight", "mlp", None, n) == "Q4_K"


def test_gguf_other_mixes() -> None:
    n = 32
    assert gguf_mix_type("q8_0", "output.weight", "lm_head", None, n) == "Q8_0"
    assert gguf_mix_type("q4_0", "output.weight", "lm_head", None, n) == "Q6_K"
    assert gguf_mix_type("q4_0", "blk.0.attn_v.weight", "attn", 0, n) == "Q4_0"
    assert gguf_mix_type("q3_k_m", "blk.1.attn_v.weight", "attn", 1, n) == "Q5_K"
    assert gguf_mix_type("q3_k_m", "blk.2.attn_v.weight", "attn", 2, n) == "Q4_K"
    assert gguf_mix_type("q3_k_m", "blk.1.ffn_down.weight", "mlp", 1, n) == "Q5_K"  # 1 < 32/16
    assert gguf_mix_type("q3_k_m", "blk.10.ffn_down.weight", "mlp", 10, n) == "Q4_K"
    assert gguf_mix_type("q3_k_m", "blk.10.attn_output.weight", "attn", 10, n) == "Q4_K"
    assert gguf_mix_type("q3_k_m", "blk.10.ffn_up.weight", "mlp", 10, n) == "Q3_K"
    assert gguf_mix_type("q2_k", "blk.10.ffn_down.weight", "mlp", 10, n) == "Q3_K"
    assert gguf_mix_type("q6_k", "blk.0.attn_v.weight", "attn", 0, n) == "Q6_K"
    assert gguf_mix_type("q5_k_s", "blk.0.attn_v.weight", "attn", 0, n) == "Q5_K"
    assert gguf_mix_type("q4_k_s", "blk.3.attn_v.weight", "attn", 3, n) == "Q5_K"
    assert gguf_mix_type("q4_k_s", "blk.4.attn_v.weight", "attn", 4, n) == "Q4_K"
    assert gguf_mix_type("gguf-f16", "blk.4.attn_v.weight", "attn", 4, n) == "F16"
    assert gguf_mix_type("f16", "blk.4.attn_norm.weight", "norm", 4, n) == "F32"


def test_gguf_model_facts() -> None:
    mixtral = GgufModelInfo(n_expert=8)
    assert gguf_mix_type("q4_k_m", "blk.5.attn_v.weight", "attn", 5, 32, model=mixtral) == "Q8_0"
    assert gguf_mix_type("q4_k_m", "blk.5.attn_k.weight", "attn", 5, 32, model=mixtral) == "Q8_0"
    assert gguf_mix_type("q4_k_m", "blk.5.attn_output.weight", "attn", 5, 32, model=mixtral) == "Q5_K"
    llama70 = GgufModelInfo(is_70b=True)
    assert gguf_mix_type("q4_k_m", "blk.11.attn_v.weight", "attn", 11, 80) == "Q4_K"
    assert gguf_mix_type("q4_k_m", "blk.11.attn_v.weight", "attn", 11, 80, model=llama70) == "Q5_K"
    tied = GgufModelInfo(has_output=False)
    assert gguf_mix_type("q4_k_m", "token_embd.weight", "embedding", None, 16, model=tied) == "Q6_K"
    assert gguf_mix_type("q2_k", "blk.0.attn_v.weight", "attn", 0, 16, model=GgufModelInfo(n_gqa=4)) == "Q4_K"


def test_gguf_row_fallbacks() -> None:
    # gpt-oss hidden size 2880 is not a multiple of 256: K types fall back
    assert gguf_mix_type("q4_k_m", "blk.3.attn_q.weight", "attn", 3, 24, n_cols=2880) == "Q5_0"
    assert gguf_mix_type("q4_k_m", "output.weight", "lm_head", None, 24, n_cols=2880) == "Q8_0"
    assert gguf_mix_type("q6_k", "blk.3.attn_q.weight", "attn", 3, 24, n_cols=2880) == "Q8_0"
    assert gguf_mix_type("q4_k_m", "blk.3.attn_q.weight", "attn", 3, 24, n_cols=100) == "F16"
    assert gguf_mix_type("mxfp4_moe", "blk.3.ffn_down_exps.weight", "expert", 3, 24, n_cols=2880) == "MXFP4"
    assert gguf_mix_type("mxfp4_moe", "blk.3.attn_q.weight", "attn", 3, 24, n_cols=2880) == "Q8_0"


def test_gguf_mix_needs_layer_count() -> None:
    with pytest.raises(FormatError, match="n_layers"):
        gguf_mix_type("q4_k_m", "blk.6.attn_v.weight", "attn", 6, None)
    with pytest.raises(FormatError, match="q7_k"):
        gguf_mix_type("q7_k", "blk.6.attn_v.weight", "attn", 6, 32)


def test_gguf_weight_format_bytes() -> None:
    fmt = parse_weight_format("q4_k_m")
    assert fmt.kind == "gguf"
    n = 32
    assert fmt.tensor_bytes("output.weight", "lm_head", (128256, 4096), None, n) == 128256 * 16 * 210
    assert fmt.tensor_bytes("token_embd.weight", "embedding", (128256, 4096), None, n) == 128256 * 16 * 144
    assert fmt.tensor_bytes("blk.0.attn_v.weight", "attn", (1024, 4096), 0, n) == 1024 * 16 * 210
    assert fmt.tensor_bytes("blk.5.attn_v.weight", "attn", (1024, 4096), 5, n) == 1024 * 16 * 144
    assert fmt.tensor_bytes("blk.5.attn_norm.weight", "norm", (4096,), 5, n) == 4096 * 4
    assert fmt.tensor_bytes("blk.5.ffn_gate_inp.weight", "router", (8, 4096), 5, n) == 8 * 4096 * 4
    assert fmt.ggml_type("blk.5.attn_norm.weight", "norm", (4096,)) == "F32"
    # stacked experts: rows = experts x out
    assert fmt.tensor_bytes("blk.5.ffn_up_exps.weight", "expert", (8, 14336, 4096), 5, n) == 8 * 14336 * 16 * 144
    assert fmt.is_quantized("blk.5.attn_q.weight", "attn")
    assert not fmt.is_quantized("blk.5.attn_norm.weight", "norm")


def test_gguf_format_with_model_facts() -> None:
    fmt = parse_weight_format("q4_k_m").with_gguf_model(GgufModelInfo(has_output=False))
    assert fmt.tensor_bytes("token_embd.weight", "embedding", (151936, 1024), None, 28) == 151936 * 4 * 210


# -- KV cache ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "bits"),
    [
        ("fp32", 32),
        ("bf16", 16),
        ("fp16", 16),
        ("fp8", 8),
        ("int8", 8),
        ("q8_0", 8.5),
        ("q4_0", 4.5),
        ("q4_1", 5),
        ("q5_0", 5.5),
        ("q5_1", 6),
        ("iq4_nl", 4.5),
        ("F16", 16),
        ("float8_e4m3fn", 8),
        ("bfloat16", 16),
    ],
)
def test_kv_bits(name: str, bits: float) -> None:
    assert kv_bits(name) == bits


def test_kv_bits_unknown() -> None:
    with pytest.raises(FormatError) as err:
        kv_bits("q3_k")
    assert "'q3_k'" in str(err.value)
    assert "q8_0" in str(err.value)


# -- validation --------------------------------------------------------------------------------------


def test_unknown_role_and_bad_shape() -> None:
    fmt = parse_weight_format("nf4")
    with pytest.raises(FormatError, match="role"):
        fmt.tensor_bytes("x.weight", "ffn", (4, 4))
    with pytest.raises(FormatError, match="shape"):
        fmt.tensor_bytes("x.weight", "mlp", (4, -1))


def test_one_dimensional_tensors_never_quantised() -> None:
    for name in ("int8", "nf4", "gptq-int4", "awq-int4", "fp8-block", "mxfp4"):
        fmt = parse_weight_format(name, base_dtype="fp16")
        assert fmt.tensor_bytes("model.layers.0.mlp.experts.down_proj_bias", "expert", (4096,)) == 4096 * 2, name
