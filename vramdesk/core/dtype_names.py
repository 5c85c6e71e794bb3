"""Dtype names and what every other storage module builds on.

Canonical dtype names and their spellings (torch, HF config, safetensors, GGUF) with their bytes per element,
the base dtypes unquantised tensors may keep, the bits of one KV-cache element, the tensor roles the
inventory gives tensors, and :class:`FormatError`, which every format module raises for what it does not know.
"""

from __future__ import annotations

from collections.abc import Iterable

from .messages import Message

__all__ = [
    "DTYPE_BYTES",
    "ROLES",
    "FormatError",
    "kv_bits",
    "normalize_dtype",
]


class FormatError(ValueError):
    """A dtype, weight format, ggml type or quantization_config the format modules do not know."""


DTYPE_NOT_STRING = Message("format.dtype_not_string", "dtype must be a string, got {name!r}")
UNKNOWN_DTYPE = Message("format.unknown_dtype", "unknown dtype {name!r} (known: {known})")
NOT_BASE_DTYPE = Message("format.not_base_dtype", "base dtype must be one of fp32, bf16, fp16, got {name!r}")
UNKNOWN_KV_DTYPE = Message("format.unknown_kv_dtype", "unknown KV-cache dtype {name!r} (known: {known})")


# --------------------------------------------------------------------------------------------------
# Plain dtypes
# --------------------------------------------------------------------------------------------------

#: bytes per element of the canonical dtype names (sub-byte types are fractions)
DTYPE_BYTES: dict[str, float] = {
    "fp64": 8,
    "fp32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,  # generic 8-bit float (e4m3 unless said otherwise)
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,  # MX block scale exponent
    "fp6_e2m3": 0.75,
    "fp6_e3m2": 0.75,
    "fp4_e2m1": 0.5,
    "float4_e2m1fn_x2": 1,  # torch's packed pair: one element of this dtype holds two fp4 values
    "c64": 8,
    "i64": 8,
    "u64": 8,
    "i32": 4,
    "u32": 4,
    "i16": 2,
    "u16": 2,
    "int8": 1,
    "uint8": 1,
    "int4": 0.5,
    "uint4": 0.5,
    "bool": 1,
}

_DTYPE_ALIASES: dict[str, str] = {
    # floats (torch / HF config spellings, safetensors and GGUF spellings)
    "fp64": "fp64",
    "float64": "fp64",
    "double": "fp64",
    "f64": "fp64",
    "fp32": "fp32",
    "float32": "fp32",
    "float": "fp32",
    "f32": "fp32",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "fp8": "fp8",
    "float8": "fp8",
    "float8_e4m3fn": "float8_e4m3fn",
    "f8_e4m3": "float8_e4m3fn",
    "fp8_e4m3": "float8_e4m3fn",
    "float8_e4m3": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "fp8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "f8_e5m2": "float8_e5m2",
    "fp8_e5m2": "float8_e5m2",
    "e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz",
    "float8_e8m0fnu": "float8_e8m0fnu",
    "f8_e8m0": "float8_e8m0fnu",
    "e8m0": "float8_e8m0fnu",
    "fp8_e8m0": "float8_e8m0fnu",
    "fp6_e2m3": "fp6_e2m3",
    "f6_e2m3": "fp6_e2m3",
    "fp6_e3m2": "fp6_e3m2",
    "f6_e3m2": "fp6_e3m2",
    "fp4_e2m1": "fp4_e2m1",
    "f4": "fp4_e2m1",
    "float4_e2m1fn": "fp4_e2m1",
    "e2m1": "fp4_e2m1",
    "float4_e2m1fn_x2": "float4_e2m1fn_x2",
    "c64": "c64",
    "complex64": "c64",
    # integers
    "i64": "i64",
    "int64": "i64",
    "long": "i64",
    "u64": "u64",
    "uint64": "u64",
    "i32": "i32",
    "int32": "i32",
    "int": "i32",
    "u32": "u32",
    "uint32": "u32",
    "i16": "i16",
    "int16": "i16",
    "short": "i16",
    "u16": "u16",
    "uint16": "u16",
    "int8": "int8",
    "i8": "int8",
    "uint8": "uint8",
    "u8": "uint8",
    "int4": "int4",
    "uint4": "uint4",
    "bool": "bool",
}


def _known(names: Iterable[object]) -> str:
    return ", ".join(sorted(str(n) for n in names))


def normalize_dtype(name: str) -> str:
    """Canonical dtype name for torch, HF config, safetensors and GGUF spellings.

    ``"bfloat16"``/``"torch.bfloat16"``/``"BF16"`` -> ``"bf16"``, ``"float16"``/``"half"``/``"F16"`` ->
    ``"fp16"``, ``"float32"``/``"float"``/``"F32"`` -> ``"fp32"``, ``"F8_E4M3"``/``"float8_e4m3fn"`` ->
    ``"float8_e4m3fn"``, ``"I8"`` -> ``"int8"``, ``"U8"`` -> ``"uint8"``, ``"I32"`` -> ``"i32"``.
    Raises :class:`FormatError` for anything else.
    """
    if not isinstance(name, str):
        raise FormatError(DTYPE_NOT_STRING(name=name))
    key = name.strip().lower()
    if key.startswith("torch."):
        key = key[len("torch.") :]
    if key in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[key]
    raise FormatError(UNKNOWN_DTYPE(name=name, known=_known(_DTYPE_ALIASES)))


_BASE_DTYPES = ("fp32", "bf16", "fp16")


def _base_dtype(name: str) -> str:
    d = normalize_dtype(name)
    if d not in _BASE_DTYPES:
        raise FormatError(NOT_BASE_DTYPE(name=name))
    return d


# --------------------------------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------------------------------

_KV_BITS: dict[str, float] = {
    "fp32": 32,
    "f32": 32,
    "bf16": 16,
    "fp16": 16,
    "f16": 16,
    "fp8": 8,
    "fp8_e4m3": 8,
    "fp8_e5m2": 8,
    "int8": 8,
    "q8_0": 34 * 8 / 32,  # 8.5
    "q4_0": 18 * 8 / 32,  # 4.5
    "q4_1": 20 * 8 / 32,  # 5.0
    "q5_0": 22 * 8 / 32,  # 5.5
    "q5_1": 24 * 8 / 32,  # 6.0
    "iq4_nl": 18 * 8 / 32,  # 4.5
}


def kv_bits(name: str) -> float:
    """Bits one KV-cache element occupies, block scales included (llama.cpp types use their blocks)."""
    key = name.strip().lower()
    if key in _KV_BITS:
        return _KV_BITS[key]
    try:
        d = normalize_dtype(key)
    except FormatError:
        d = ""
    if d in ("fp32", "bf16", "fp16", "int8") or d.startswith("float8_e4m3") or d.startswith("float8_e5m2"):
        return DTYPE_BYTES[d] * 8
    raise FormatError(UNKNOWN_KV_DTYPE(name=name, known=_known(_KV_BITS)))


# --------------------------------------------------------------------------------------------------
# Tensor roles
# --------------------------------------------------------------------------------------------------

#: the roles the inventory gives tensors (which ones each weight format quantises: :mod:`vramdesk.core.weight_format`)
ROLES: frozenset[str] = frozenset(
    {
        "embedding",
        "lm_head",
        "norm",
        "bias",
        "attn",
        "mlp",
        "expert",
        "shared_expert",
        "router",
        "linear_attn",
        "conv",
        "state_param",
        "vision",
        "vision_other",
        "mtp",
        "mtp_proj",
    }
)
