"""The sentences of :mod:`vramdesk.core.weight_format` (labels, layout explanations and errors), as messages with an
id (:mod:`vramdesk.core.messages`): kept apart so that the format module stays within its size."""

from __future__ import annotations

from .messages import Message

# ------------------------------------------------------------------------------------------------ labels
LABEL_FLOAT = Message("weights.label.float", "{dtype} (unquantised)")
LABEL_FP8 = Message("weights.label.fp8", "FP8 (e4m3), per-tensor scale")
LABEL_FP8_BLOCK = Message("weights.label.fp8_block", "FP8 (e4m3), {rows}x{cols} block scales")
LABEL_FP8_CHANNEL = Message("weights.label.fp8_channel", "FP8 (e4m3), per-channel scale (fbgemm)")
LABEL_INT8 = Message("weights.label.int8", "bitsandbytes LLM.int8 (8-bit)")
LABEL_BNB4 = Message("weights.label.bnb4", "bitsandbytes {quant_type} 4-bit")
LABEL_BNB4_DQ = Message("weights.label.bnb4_double_quant", "bitsandbytes {quant_type} 4-bit, double quant")
GROUP = Message("weights.group", "group {group}")
PER_CHANNEL = Message("weights.group.per_channel", "per-channel")
LABEL_GPTQ = Message("weights.label.gptq", "GPTQ {bits}-bit, group {group}")
LABEL_GPTQ_CHANNEL = Message("weights.label.gptq_per_channel", "GPTQ {bits}-bit, per-channel")
LABEL_ACT_ORDER = Message("weights.label.act_order", "{label}, act-order")
LABEL_AWQ = Message("weights.label.awq", "AWQ 4-bit, group {group}")
LABEL_AWQ_VERSION = Message("weights.label.awq_version", "AWQ 4-bit, group {group} ({version})")
LABEL_INT4 = Message("weights.label.int4", "INT4 weight-only, group 128 (AWQ layout)")
LABEL_MXFP4 = Message("weights.label.mxfp4", "MXFP4 experts (gpt-oss)")
LABEL_NVFP4 = Message("weights.label.nvfp4", "NVFP4 ({origin})")
LABEL_GGUF = Message("weights.label.gguf", "GGUF {mix}")

# ------------------------------------------------------------------------------------------------ layouts
#: a quantised layout with the bits it works out to (``WeightFormat.explain``)
WITH_BITS = Message("weights.layout.with_bits", "{layout} (= {bits:.4g} bits per weight at {rows}x{cols}).")
FLOAT = Message("weights.layout.float", "every tensor stored as {dtype}: {bytes} bytes ({bits} bits) per element.")
FP8_TENSOR = Message("weights.layout.fp8", "fp8 e4m3 weight (1 B per element) + one fp32 weight_scale per matrix")
FP8_BLOCK = Message(
    "weights.layout.fp8_block",
    "fp8 e4m3 weight (1 B per element) + fp32 weight_scale_inv per {rows}x{cols} block (ceil(out/{rows})*ceil(in/"
    "{cols}) scales, DeepSeek-V3 / Qwen FP8 layout)",
)
FP8_ACTIVATION_SCALE = Message("weights.layout.fp8_activation_scale", "{layout} + one fp32 activation scale per Linear")
FP8_CHANNEL = Message(
    "weights.layout.fp8_channel", "fbgemm_fp8: fp8 e4m3 weight (1 B per element) + fp32 weight_scale per output row"
)
INT8 = Message(
    "weights.layout.int8", "bitsandbytes LLM.int8: int8 weight (1 B per element) + fp32 SCB absmax per output row"
)
BNB4 = Message(
    "weights.layout.bnb4",
    "bitsandbytes {quant_type}: 4-bit codes (2 per uint8) + fp32 absmax per 64 values + 16-entry fp32 quant_map per "
    "tensor",
)
BNB4_DQ = Message(
    "weights.layout.bnb4_double_quant",
    "bitsandbytes {quant_type}: 4-bit codes (2 per uint8) + uint8 absmax per 64 values + fp32 nested absmax per 256 "
    "absmax + fp32 offset, 16-entry quant_map and 256-entry nested_quant_map per tensor",
)
GPTQ = Message(
    "weights.layout.gptq",
    "GPTQ (AutoGPTQ/gptqmodel): qweight int32 packing {bits}-bit values along in + qzeros int32 packed along out and "
    "fp16 scales per {group} inputs per output row + int32 g_idx per input column: {bits} + ({bits}+16)/{group} bits "
    "per weight + 32 bits per column",
)
AWQ_GEMM = Message(
    "weights.layout.awq_gemm",
    "AWQ GEMM (AutoAWQ WQLinear_GEMM): qweight int32 (in, out/8) + qzeros int32 packed along out and fp16 scales per "
    "{group} inputs per output row, no g_idx: 4 + 20/{group} bits per weight",
)
AWQ_GEMV = Message(
    "weights.layout.awq_gemv",
    "AWQ GEMV (AutoAWQ WQLinear_GEMV): qweight int32 (out, in/8) + qzeros int32 and fp16 scales per {group} inputs "
    "per output row, group count padded to a multiple of 8",
)
AWQ_GEMV_FAST = Message(
    "weights.layout.awq_gemv_fast",
    "AWQ GEMV_FAST (AutoAWQ WQLinear_GEMVFast): interleaved int16 qweight + fp16 scales and fp16 zeros per {group} "
    "inputs per output row, group count padded to a multiple of 8",
)
MXFP4 = Message(
    "weights.layout.mxfp4",
    "MXFP4 (OCP MX) on expert weights only: e2m1 4-bit values (16 B per 32, '_blocks') + one uint8 E8M0 scale per 32 "
    "along in ('_scales'): 4 + 8/32 bits per weight",
)
NVFP4 = Message(
    "weights.layout.nvfp4",
    "NVFP4 ({origin}): e2m1 4-bit values (2 per byte) + one fp8-e4m3 scale per 16 along in + {extra} B of fp32 "
    "global/input scales per matrix: 4 + 8/16 bits per weight",
)
GGUF_FLOAT = Message(
    "weights.layout.gguf_float",
    "GGUF {base}: every 2-D+ weight {base}, 1-D tensors, norms, MoE router and conv1d F32 ({bits} bits per weight, "
    "32 for the F32 ones)",
)
GGUF_MXFP4_MOE = Message(
    "weights.layout.gguf_mxfp4_moe",
    "GGUF MXFP4_MOE: expert tensors MXFP4 (17 B per 32), other weights Q8_0 (34 B per 32), output Q6_K, 1-D tensors "
    "F32",
)
GGUF_MIX = Message(
    "weights.layout.gguf_mix",
    "GGUF {mix} (llama-quantize mix): default {base} ({bytes} B per {block} values), output {output}, "
    "attn_v/ffn_down/attn_output/attn_qkv raised per llama_tensor_get_type, norms, router and 1-D tensors F32",
)

# ------------------------------------------------------------------------------------------------ errors
BAD_PATTERN = Message("weights.error.bad_pattern", "bad module pattern {pattern!r}: {error}")
BAD_SHAPE = Message("weights.error.bad_shape", "shape must be a tuple of non-negative ints, got {shape!r}")
UNKNOWN_ROLE = Message("weights.error.unknown_role", "unknown tensor role {role!r} (known: {known})")
UNKNOWN_KIND = Message("weights.error.unknown_kind", "unknown format kind {kind!r} (known: {known})")
BAD_BASE_DTYPE = Message("weights.error.base_dtype", "base dtype must be one of fp32, bf16, fp16, got {dtype!r}")
UNKNOWN_ROLES = Message("weights.error.unknown_roles", "unknown tensor roles {roles} (known: {known})")
UNKNOWN_GGUF_TYPE = Message("weights.error.unknown_gguf_type", "unknown GGUF file type {layout!r} (known: {known})")
PATTERN_NOT_STR = Message("weights.error.pattern_not_str", "module patterns must be strings, got {pattern!r}")
BAD_REGEX = Message("weights.error.bad_regex", "bad regular expression in module pattern {pattern!r}: {error}")
UNKNOWN_SCALE_LAYOUT = Message("weights.error.scale_layout", "format {name}: unknown scale layout {layout!r}")
AWQ_GEMV_GROUP = Message(
    "weights.error.awq_gemv_group", "AWQ {layout} supports group sizes 32, 64 and >= 128, not {group}"
)
NO_QUANTISED_LAYOUT = Message("weights.error.no_quantised_layout", "format {name} has no quantised layout")
NOT_GGUF = Message("weights.error.not_gguf", "format {name} is not a GGUF mix")
GPTQ_BITS = Message("weights.error.gptq_bits", "GPTQ bits must be 2, 3, 4 or 8, got {bits}")
GPTQ_GROUP = Message("weights.error.gptq_group", "GPTQ group_size must be a positive integer or -1, got {group}")
AWQ_BITS = Message("weights.error.awq_bits", "AWQ supports 4-bit weights only, got bits={bits}")
AWQ_GROUP = Message("weights.error.awq_group", "AWQ group_size must be a positive integer, got {group}")
NAME_NOT_STR = Message("weights.error.name_not_str", "weight format must be a string, got {name!r}")
FP8_BLOCK_SIZES = Message("weights.error.fp8_block", "fp8 block sizes must be positive in {name!r}")
UNKNOWN_GPTQ_BITS = Message(
    "weights.error.unknown_gptq_bits", "unknown weight format {name!r}: GPTQ bits must be 2, 3, 4 or 8"
)
UNKNOWN_FORMAT = Message("weights.error.unknown_format", "unknown weight format {name!r} (known: {known})")
