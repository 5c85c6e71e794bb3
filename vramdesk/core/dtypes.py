"""Storage formats -> exact bytes per tensor, including scales, zero points and index tensors.

Everything here is arithmetic on shapes: no file I/O, no numpy. The layouts are written from the
public descriptions of each format (the tensors a checkpoint or a loaded module really holds); the
module or file each one follows is named next to its formula below.

Shape conventions
-----------------
* A linear weight is ``(out_features, in_features)`` (``nn.Linear.weight``).
* A stacked expert weight is ``(num_experts, out, in)``; every expert's 2-D matrix is quantised on its
  own (groups and blocks never straddle experts). More leading dimensions are treated the same way.
* 1-D tensors (norms, biases, ``A_log``, sinks) are never quantised.

Which tensors each method quantises (by the *role* the inventory gives a tensor)
-------------------------------------------------------------------------------
Roles: ``embedding lm_head norm bias attn mlp expert shared_expert router linear_attn conv state_param
vision vision_other mtp mtp_proj``. ``mtp_proj`` is the MTP fusion projection (DeepSeek ``eh_proj``,
``mtp.fc``): FP8 checkpoints keep it in bf16 (DeepSeek-V3's 41,540,496 published scale elements match
only without it), so no Hugging Face method quantises it; GGUF quantises it like any 2-D weight.

* gptq / awq / generic int4: ``attn mlp expert shared_expert linear_attn``. Not the router, embeddings,
  lm_head, norms, biases or a vision tower (usually skipped), and not MTP layers: GPTQ/AWQ exports go
  through transformers, which drops MTP layers. gptqmodel's ``"lm_head": true`` adds ``lm_head``;
  ``modules_in_block_to_quantize`` restricts quantisation to the named modules.
* bitsandbytes (int8, nf4, fp4): every ``nn.Linear`` transformers replaces: ``attn mlp expert
  shared_expert router linear_attn vision``, never ``lm_head``. Experts stored as stacked 3-D
  Parameters are not ``nn.Linear`` modules, so bitsandbytes leaves them unquantised; a 2-D (per-expert
  Linear) ``expert`` tensor is quantised.
* fp8 / fp8-block (DeepSeek-V3, Qwen3 FP8): ``attn mlp expert shared_expert linear_attn mtp``
  (the MTP layers ship in FP8 in those checkpoints). Not the router, embeddings, lm_head, norms, vision.
* fbgemm_fp8, compressed-tensors and modelopt quantise the ``nn.Linear`` modules their target list
  covers, minus their ignore list: ``attn mlp expert shared_expert router linear_attn vision``.
* mxfp4 (gpt-oss): ``expert`` only.
* GGUF mixes: every 2-D+ weight including ``token_embd`` and ``output``; see :func:`gguf_mix_type`.
* Plain float formats quantise nothing; their ``base_dtype`` is the format itself.
* ``conv`` and ``state_param`` are never quantised (GGUF stores them as F32).

Skip patterns (``modules_to_not_convert``, ``llm_int8_skip_modules``, compressed-tensors ``ignore``,
modelopt ``exclude_modules``) are matched against the tensor name and each of its dotted prefixes
(the module names), like transformers does:

* ``re:<regex>`` (compressed-tensors): ``re.match`` on a module name;
* a pattern containing ``*``, ``?`` or ``[``: ``fnmatch`` on a module name, so
  ``model.layers.*.self_attn`` matches ``model.layers.3.self_attn.q_proj.weight``;
* anything else: a run of whole dotted components, so ``lm_head`` matches ``lm_head.weight`` and
  ``mlp.gate`` matches ``model.layers.0.mlp.gate.weight`` but not ``...mlp.gate_proj.weight``, and
  ``model.layers.1`` does not match ``model.layers.10...`` (older transformers used a raw substring
  test, which had exactly those false hits).

VLM checkpoints that nest the language model (``model.language_model.layers...``) are also matched
with that wrapper removed, so patterns written as ``model.layers...`` still apply.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache

__all__ = [
    "DTYPE_BYTES",
    "GGUF_TYPES",
    "GGUF_TYPE_IDS",
    "ROLES",
    "FormatError",
    "GgufModelInfo",
    "WeightFormat",
    "format_from_quantization_config",
    "gguf_mix_type",
    "gguf_tensor_bytes",
    "known_weight_formats",
    "kv_bits",
    "normalize_dtype",
    "parse_weight_format",
]


class FormatError(ValueError):
    """A dtype, weight format, ggml type or quantization_config this module does not know."""


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
        raise FormatError(f"dtype must be a string, got {name!r}")
    key = name.strip().lower()
    if key.startswith("torch."):
        key = key[len("torch.") :]
    if key in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[key]
    raise FormatError(f"unknown dtype {name!r} (known: {_known(_DTYPE_ALIASES)})")


_BASE_DTYPES = ("fp32", "bf16", "fp16")


def _base_dtype(name: str) -> str:
    d = normalize_dtype(name)
    if d not in _BASE_DTYPES:
        raise FormatError(f"base dtype must be one of fp32, bf16, fp16, got {name!r}")
    return d


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# --------------------------------------------------------------------------------------------------
# GGUF block types (ggml.c type traits: elements per block, bytes per block)
# --------------------------------------------------------------------------------------------------

#: ggml type -> (elements per block, bytes per block), from the block structs in ggml-common.h
GGUF_TYPES: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "F64": (1, 8),
    "I8": (1, 1),
    "I16": (1, 2),
    "I32": (1, 4),
    "I64": (1, 8),
    "Q4_0": (32, 18),  # fp16 d + 16 B of nibbles
    "Q4_1": (32, 20),  # fp16 d, m + 16 B
    "Q5_0": (32, 22),  # fp16 d + 4 B high bits + 16 B
    "Q5_1": (32, 24),  # fp16 d, m + 4 B + 16 B
    "Q8_0": (32, 34),  # fp16 d + 32 int8
    "Q8_1": (32, 36),  # fp16 d, s + 32 int8
    "Q2_K": (256, 84),  # 16 B scales + 64 B quants + fp16 d, dmin
    "Q3_K": (256, 110),  # 32 B hmask + 64 B quants + 12 B scales + fp16 d
    "Q4_K": (256, 144),  # fp16 d, dmin + 12 B scales + 128 B quants
    "Q5_K": (256, 176),  # fp16 d, dmin + 12 B scales + 32 B high bits + 128 B quants
    "Q6_K": (256, 210),  # 128 B low + 64 B high + 16 int8 scales + fp16 d
    "Q8_K": (256, 292),  # fp32 d + 256 int8 + 16 int16 bsums
    "IQ2_XXS": (256, 66),
    "IQ2_XS": (256, 74),
    "IQ2_S": (256, 82),
    "IQ3_XXS": (256, 98),
    "IQ3_S": (256, 110),
    "IQ1_S": (256, 50),
    "IQ1_M": (256, 56),
    "IQ4_NL": (32, 18),
    "IQ4_XS": (256, 136),
    "TQ1_0": (256, 54),
    "TQ2_0": (256, 66),
    "MXFP4": (32, 17),  # one E8M0 exponent byte + 16 B of e2m1 nibbles
}

#: ggml type id (the number stored in a GGUF tensor-info record) -> type name
GGUF_TYPE_IDS: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    6: "Q5_0",
    7: "Q5_1",
    8: "Q8_0",
    9: "Q8_1",
    10: "Q2_K",
    11: "Q3_K",
    12: "Q4_K",
    13: "Q5_K",
    14: "Q6_K",
    15: "Q8_K",
    16: "IQ2_XXS",
    17: "IQ2_XS",
    18: "IQ3_XXS",
    19: "IQ1_S",
    20: "IQ4_NL",
    21: "IQ3_S",
    22: "IQ2_S",
    23: "IQ4_XS",
    24: "I8",
    25: "I16",
    26: "I32",
    27: "I64",
    28: "F64",
    29: "IQ1_M",
    30: "BF16",
    34: "TQ1_0",
    35: "TQ2_0",
    39: "MXFP4",
}


def _ggml_type(name: str) -> str:
    key = name.strip().upper()
    if key not in GGUF_TYPES:
        raise FormatError(f"unknown ggml type {name!r} (known: {_known(GGUF_TYPES)})")
    return key


def gguf_tensor_bytes(ggml_type: str, n_elements: int) -> int:
    """Bytes of ``n_elements`` stored as ``ggml_type``: ``n / block_elements * block_bytes``.

    ``n_elements`` must be a whole number of blocks (rows are padded by the caller, not here).
    """
    t = _ggml_type(ggml_type)
    blk, nbytes = GGUF_TYPES[t]
    if n_elements < 0 or n_elements % blk:
        raise FormatError(f"{n_elements} elements is not a whole number of {t} blocks of {blk}")
    return n_elements // blk * nbytes


#: llama-quantize file types (mixes) -> the default ggml type of the mix (llama_model_quantize_impl)
_GGUF_MIXES: dict[str, str] = {
    "f32": "F32",
    "f16": "F16",
    "bf16": "BF16",
    "q8_0": "Q8_0",
    "q4_0": "Q4_0",
    "q4_1": "Q4_1",
    "q5_0": "Q5_0",
    "q5_1": "Q5_1",
    "q2_k": "Q2_K",
    "q2_k_s": "Q2_K",
    "q3_k_s": "Q3_K",
    "q3_k_m": "Q3_K",
    "q3_k_l": "Q3_K",
    "q4_k_s": "Q4_K",
    "q4_k_m": "Q4_K",
    "q5_k_s": "Q5_K",
    "q5_k_m": "Q5_K",
    "q6_k": "Q6_K",
    "iq4_nl": "IQ4_NL",
    "iq4_xs": "IQ4_XS",
    "mxfp4_moe": "MXFP4",
}
#: llama-quantize accepts the bare K names for the _M mixes
_GGUF_MIX_ALIASES = {"q3_k": "q3_k_m", "q4_k": "q4_k_m", "q5_k": "q5_k_m"}


def _gguf_mix(mix: str) -> str:
    key = mix.strip().lower()
    if key.startswith("gguf-"):
        key = key[len("gguf-") :]
    key = _GGUF_MIX_ALIASES.get(key, key)
    if key not in _GGUF_MIXES:
        raise FormatError(f"unknown GGUF file type {mix!r} (known: {_known(_GGUF_MIXES)})")
    return key


@dataclass(frozen=True)
class GgufModelInfo:
    """Model facts that change llama-quantize's choices (hparams llama.cpp reads)."""

    #: llama.cpp arch name; only "falcon" changes the rules implemented here
    arch: str = ""
    #: hparams.n_expert (8 = Mixtral-style: attn_v/attn_k -> Q8_0, attn_output -> Q5_K)
    n_expert: int = 1
    #: n_head / n_head_kv (Q2_K and IQ4 mixes give attn_v more bits when >= 4)
    n_gqa: int = 1
    #: llama.cpp's LLM_TYPE_70B (e.g. 80-layer Llama / Qwen2): attn_v Q3_K/Q4_K -> Q5_K
    is_70b: bool = False
    #: False when the file has no output.weight (tied embeddings): token_embd then gets the output rules
    has_output: bool = True
    #: an importance matrix was used (only changes the Q4_0/Q5_0 and IQ4 ffn_down rules)
    has_imatrix: bool = False


_GGUF_FLOAT_ONLY_ROLES = frozenset({"norm", "bias", "state_param", "conv", "router"})

_GGUF_NAME_KINDS: dict[str, str] = {
    # GGUF names
    "attn_v": "attn_v",
    "attn_k": "attn_k",
    "attn_q": "attn_q",
    "attn_output": "attn_output",
    "attn_qkv": "attn_qkv",
    # HF names
    "v_proj": "attn_v",
    "k_proj": "attn_k",
    "q_proj": "attn_q",
    "o_proj": "attn_output",
    "qkv_proj": "attn_qkv",
    "query_key_value": "attn_qkv",
    "c_attn": "attn_qkv",
    "wqkv": "attn_qkv",
    "down_proj": "ffn_down",
    "w2": "ffn_down",
    "fc2": "ffn_down",
    "dense_4h_to_h": "ffn_down",
    "gate_proj": "ffn_gate",
    "w1": "ffn_gate",
    "up_proj": "ffn_up",
    "w3": "ffn_up",
    "gate_up_proj": "ffn_up",
    "fc1": "ffn_up",
    "dense_h_to_4h": "ffn_up",
}
_PARAM_SUFFIXES = ("_blocks", "_scales", "_bias", "_weight")


def _gguf_tensor_kind(tensor_name: str, role: str) -> str:
    """Classify a tensor the way llama_tensor_get_type's name tests do (GGUF or HF spelling)."""
    if role == "lm_head":
        return "output"
    if role == "embedding":
        return "token_embd"
    name = tensor_name.lower()
    if name in ("output.weight", "lm_head.weight"):
        return "output"
    if name == "token_embd.weight":
        return "token_embd"
    if "_norm." in name or name.endswith("_norm"):
        return "norm"
    for comp in name.split("."):
        if comp.startswith("ffn_down"):
            return "ffn_down"
        if comp.startswith("ffn_gate_inp"):
            return "router"
        if comp.startswith("ffn_gate"):
            return "ffn_gate"
        if comp.startswith("ffn_up"):
            return "ffn_up"
        base = comp
        for suf in _PARAM_SUFFIXES:
            if base.endswith(suf):
                base = base[: -len(suf)]
                break
        if base in _GGUF_NAME_KINDS:
            return _GGUF_NAME_KINDS[base]
    return "other"


_LAYER_RE = re.compile(r"(?:^|\.)(?:blk|layers|layer|h|blocks|block)\.(\d+)(?:\.|$)")


def _use_more_bits(i: int, n: int) -> bool:
    # llama.cpp use_more_bits(): first n/8, last n/8, and every third layer in between
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _incompatible_fallback(t: str, n_cols: int) -> str:
    """llama-quantize's fallback when a row is not a whole number of blocks (convert_incompatible_tensor)."""
    if n_cols % GGUF_TYPES[t][0] == 0:
        return t
    if t in ("TQ1_0", "TQ2_0"):
        new = "Q4_0"
    elif t in ("IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "Q2_K", "Q3_K", "IQ4_XS"):
        new = "IQ4_NL"
    elif t == "Q4_K":
        new = "Q5_0"
    elif t == "Q5_K":
        new = "Q5_1"
    elif t == "Q6_K":
        new = "Q8_0"
    else:
        raise FormatError(f"a row of {n_cols} elements cannot be stored as {t} (block {GGUF_TYPES[t][0]})")
    return new if n_cols % GGUF_TYPES[new][0] == 0 else "F16"


def gguf_mix_type(
    mix: str,
    tensor_name: str,
    role: str,
    layer: int | None,
    n_layers: int | None,
    *,
    n_cols: int | None = None,
    model: GgufModelInfo | None = None,
) -> str:
    """The ggml type llama-quantize gives one tensor for a file type (``q4_k_m``, ``q8_0``, ...).

    Follows ``llama_tensor_get_type`` (llama.cpp ``src/llama-quant.cpp``) for the mixes offered here
    (legacy Q4_0..Q8_0, all K mixes, IQ4_NL/IQ4_XS, MXFP4_MOE, F32/F16/BF16):

    * ``output.weight`` (role ``lm_head``; also ``token_embd`` when ``model.has_output`` is False, i.e.
      tied embeddings): Q8_0 for falcon or when the row does not fit the mix's block, else Q8_0 for the
      q8_0 mix and Q6_K for every other mix.
    * MXFP4_MOE: 3-D expert tensors (role ``expert``) MXFP4, everything else Q8_0.
    * ``token_embd``: the mix's default type.
    * ``attn_v``: Q2_K -> Q4_K (n_gqa >= 4) or Q3_K; Q2_K_S with n_gqa >= 4 -> Q4_K; IQ4_NL/IQ4_XS with
      n_gqa >= 4 -> Q5_K; Q3_K_M -> Q5_K for the first two, Q4_K after; Q3_K_L -> Q5_K; Q4_K_M/Q5_K_M
      -> Q6_K on ``use_more_bits`` layers; Q4_K_S -> Q5_K for the first four; then 70B models bump
      Q3_K/Q4_K to Q5_K and 8-expert models use Q8_0. For attn_v, ``layer``/``n_layers`` are what
      llama.cpp counts: the index among attn_v tensors and their number (on hybrid models such as
      Qwen3-Next only the full-attention layers have one).
    * ``attn_k``: Q8_0 for 8-expert models.
    * ``ffn_down`` (also ``ffn_down_exps``/``_shexp``; ``layer`` is the block index): Q2_K -> Q3_K;
      Q2_K_S -> Q4_K in the first n/8; Q3_K_M -> Q5_K in the first n/16 else Q4_K (falcon: Q4_K only on
      use_more_bits layers); Q3_K_L -> Q5_K (falcon Q4_K); Q4_K_M -> Q6_K on use_more_bits layers
      (falcon: Q6_K first n/16, Q5_K use_more_bits); IQ4 without imatrix -> Q5_K in the first n/8;
      Q5_K_M -> Q6_K on use_more_bits; Q4_K_S -> Q5_K in the first n/8; Q4_0/Q5_0 with imatrix ->
      Q4_1/Q5_1 in the first n/8.
    * ``attn_output``: 8-expert models -> Q5_K for Q2_K/Q3_K_S/Q3_K_M/IQ4_NL/Q4_K_S/Q4_K_M/IQ4_XS;
      otherwise Q2_K -> Q3_K, Q3_K_M -> Q4_K, Q3_K_L -> Q5_K (falcon: Q3_K_L -> Q4_K).
    * ``attn_qkv``: Q3_K_M/Q3_K_L -> Q4_K, Q4_K_M -> Q5_K, Q5_K_M -> Q6_K.
    * Not quantised (kept as convert_hf_to_gguf writes them): norms, biases, 1-D params, the MoE router
      (``ffn_gate_inp``) and conv1d weights -> F32. A vision tower lives in the separate mmproj file,
      written F16 here.
    * With ``n_cols`` (the row length, ``in_features``), the row-fit fallback of llama-quantize is
      applied: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K/IQ4_XS -> IQ4_NL, then F16.

    Simplified: the IQ1/IQ2/IQ3 and TQ mixes are not offered; the per-arch token-embedding overrides
    only concern those mixes; tensors are recognised by GGUF names (``blk.N.attn_v.weight``) or HF
    names (``...self_attn.v_proj.weight``, ``...experts.down_proj``); fused or linear-attention
    projections that llama.cpp names differently get the mix's default type.
    """
    m = _gguf_mix(mix)
    if role not in ROLES:
        raise FormatError(f"unknown tensor role {role!r} (known: {_known(ROLES)})")
    base = _GGUF_MIXES[m]
    info = model if model is not None else GgufModelInfo()
    if role in _GGUF_FLOAT_ONLY_ROLES:
        return "F32"
    if role in ("vision", "vision_other"):
        return "F16"
    kind = _gguf_tensor_kind(tensor_name, role)
    if kind in ("norm", "router"):
        return "F32"
    if base in ("F32", "F16", "BF16"):
        return base
    falcon = info.arch.lower() == "falcon"

    def idx() -> int:
        if layer is not None:
            return layer
        found = _LAYER_RE.search(tensor_name.lower())
        if found is None:
            raise FormatError(f"GGUF mix {m}: need the layer index of {tensor_name!r}")
        return int(found.group(1))

    def count() -> int:
        if n_layers is None or n_layers <= 0:
            raise FormatError(f"GGUF mix {m}: need n_layers for {tensor_name!r}")
        return n_layers

    t = base
    if kind == "output" or (kind == "token_embd" and not info.has_output):
        if falcon or (n_cols is not None and n_cols % GGUF_TYPES[base][0] != 0):
            t = "Q8_0"
        else:
            t = "Q8_0" if base == "Q8_0" else "Q6_K"
    elif m == "mxfp4_moe":
        t = "MXFP4" if role == "expert" else "Q8_0"
    elif kind == "token_embd":
        t = base
    elif kind == "attn_v":
        if m == "q2_k":
            t = "Q4_K" if info.n_gqa >= 4 else "Q3_K"
        elif m == "q2_k_s" and info.n_gqa >= 4:
            t = "Q4_K"
        elif m in ("iq4_nl", "iq4_xs") and info.n_gqa >= 4:
            t = "Q5_K"
        elif m == "q3_k_m":
            t = "Q5_K" if idx() < 2 else "Q4_K"
        elif m == "q3_k_l":
            t = "Q5_K"
        elif m in ("q4_k_m", "q5_k_m") and _use_more_bits(idx(), count()):
            t = "Q6_K"
        elif m == "q4_k_s" and idx() < 4:
            t = "Q5_K"
        if info.is_70b and t in ("Q3_K", "Q4_K"):
            t = "Q5_K"
        if info.n_expert == 8:
            t = "Q8_0"
    elif kind == "attn_k":
        if info.n_expert == 8:
            t = "Q8_0"
    elif kind == "ffn_down":
        if m == "q2_k":
            t = "Q3_K"
        elif m == "q2_k_s":
            if idx() < count() // 8:
                t = "Q4_K"
        elif m == "q3_k_m":
            i, n = idx(), count()
            if i < n // 16:
                t = "Q5_K"
            elif not falcon or _use_more_bits(i, n):
                t = "Q4_K"
            else:
                t = "Q3_K"
        elif m == "q3_k_l":
            t = "Q4_K" if falcon else "Q5_K"
        elif m == "q4_k_m":
            i, n = idx(), count()
            if falcon:
                t = "Q6_K" if i < n // 16 else ("Q5_K" if _use_more_bits(i, n) else "Q4_K")
            elif _use_more_bits(i, n):
                t = "Q6_K"
        elif m in ("iq4_nl", "iq4_xs") and not info.has_imatrix and idx() < count() // 8:
            t = "Q5_K"
        elif m == "q5_k_m" and _use_more_bits(idx(), count()):
            t = "Q6_K"
        elif m == "q4_k_s" and not falcon and idx() < count() // 8:
            t = "Q5_K"
        elif m in ("q4_0", "q5_0") and info.has_imatrix and idx() < count() // 8:
            t = "Q4_1" if m == "q4_0" else "Q5_1"
    elif kind == "attn_output":
        if not falcon:
            if info.n_expert == 8:
                if m in ("q2_k", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s", "q4_k_m", "iq4_xs"):
                    t = "Q5_K"
            elif m == "q2_k":
                t = "Q3_K"
            elif m == "q3_k_m":
                t = "Q4_K"
            elif m == "q3_k_l":
                t = "Q5_K"
        elif m == "q3_k_l":
            t = "Q4_K"
    elif kind == "attn_qkv":
        if m in ("q3_k_m", "q3_k_l"):
            t = "Q4_K"
        elif m == "q4_k_m":
            t = "Q5_K"
        elif m == "q5_k_m":
            t = "Q6_K"
    if n_cols is not None:
        t = _incompatible_fallback(t, n_cols)
    return t


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
    raise FormatError(f"unknown KV-cache dtype {name!r} (known: {_known(_KV_BITS)})")


# --------------------------------------------------------------------------------------------------
# Weight formats
# --------------------------------------------------------------------------------------------------

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

_KINDS = frozenset({"float", "fp8", "int8", "gptq", "awq", "bnb4", "mxfp4", "nvfp4", "ct-int", "gguf"})

_GPTQ_ROLES = frozenset({"attn", "mlp", "expert", "shared_expert", "linear_attn"})
_BNB_ROLES = frozenset({"attn", "mlp", "expert", "shared_expert", "router", "linear_attn", "vision"})
_FP8_ROLES = frozenset({"attn", "mlp", "expert", "shared_expert", "linear_attn", "mtp"})
_LINEAR_ROLES = frozenset({"attn", "mlp", "expert", "shared_expert", "router", "linear_attn", "vision"})
_MXFP4_ROLES = frozenset({"expert"})
_GGUF_ROLES = frozenset(
    {"embedding", "lm_head", "attn", "mlp", "expert", "shared_expert", "linear_attn", "mtp", "mtp_proj"}
)

#: bitsandbytes 4-bit: blockwise absmax over 64 values, double quant nests 256 absmax per block
_BNB4_BLOCK = 64
_BNB4_NESTED_BLOCK = 256
_BNB4_QUANT_MAP_BYTES = 16 * 4  # fp32 16-entry nf4/fp4 code table ("quant_map")
_BNB4_NESTED_MAP_BYTES = 256 * 4  # fp32 256-entry dynamic map of the nested quantiser ("nested_quant_map")
_BNB4_NESTED_OFFSET_BYTES = 4  # fp32 mean subtracted before the nested quantisation


def _name_variants(name: str) -> list[str]:
    out = [name]
    for wrapper, repl in (
        ("model.language_model.", "model."),
        ("language_model.model.", "model."),
        ("language_model.", ""),
    ):
        if name.startswith(wrapper):
            out.append(repl + name[len(wrapper) :])
    return out


@dataclass(frozen=True)
class _Matcher:
    """A list of module-name patterns compiled once (skip lists can hold hundreds of names)."""

    plain: frozenset[str]
    prefix_rx: tuple[re.Pattern[str], ...]  # globs (full match) and re: patterns (re.match)

    def __call__(self, name: str) -> bool:
        for variant in _name_variants(name):
            parts = variant.split(".")
            if self.plain:
                for i in range(len(parts)):
                    for j in range(i + 1, len(parts) + 1):
                        if ".".join(parts[i:j]) in self.plain:
                            return True
            for rx in self.prefix_rx:
                if any(rx.match(".".join(parts[: i + 1])) for i in range(len(parts))):
                    return True
        return False


@lru_cache(maxsize=256)
def _matcher(patterns: tuple[str, ...]) -> _Matcher:
    plain: set[str] = set()
    compiled: list[re.Pattern[str]] = []
    for raw in patterns:
        p = raw.strip()
        if not p:
            continue
        source = p[3:] if p.startswith("re:") else fnmatch.translate(p) if any(c in p for c in "*?[") else ""
        if not source:
            plain.add(p.strip("."))
            continue
        try:
            compiled.append(re.compile(source))
        except re.error as exc:
            raise FormatError(f"bad module pattern {p!r}: {exc}") from None
    return _Matcher(frozenset(plain), tuple(compiled))


def _check_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise FormatError(f"shape must be a tuple of non-negative ints, got {shape!r}")
    return shape


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise FormatError(f"unknown tensor role {role!r} (known: {_known(ROLES)})")


@dataclass(frozen=True)
class WeightFormat:
    """How a checkpoint stores its weights, with exact per-tensor byte counts.

    Build one with :func:`parse_weight_format` or :func:`format_from_quantization_config`; the fields
    after ``explain`` are layout details those functions fill in.
    """

    #: canonical id, e.g. "bf16", "fp8-block", "gptq-int4", "nf4-dq", "mxfp4", "q4_k_m"
    name: str
    #: human text, e.g. "GPTQ 4-bit, group 128"
    label: str
    #: "float" | "fp8" | "int8" | "gptq" | "awq" | "bnb4" | "mxfp4" | "nvfp4" | "ct-int" | "gguf"
    kind: str
    #: dtype of tensors that stay unquantised: "bf16" / "fp16" / "fp32"
    base_dtype: str
    #: weight bits of the quantised tensors (None for float formats and GGUF mixes)
    bits: int | None
    #: quantisation group along in_features (-1 = one group per row; None = no groups)
    group_size: int | None
    #: tensor roles this format quantises
    quantized_roles: frozenset[str]
    #: module-name patterns that stay at base_dtype
    skip_patterns: tuple[str, ...]
    #: one sentence: the exact layout and bits per element including scales and zeros
    explain: str
    #: when not empty, only modules matching one of these are quantised (GPTQ modules_in_block_to_quantize)
    include_patterns: tuple[str, ...] = ()
    #: sub-layout: awq "gemm"/"gemv"/"gemv_fast"; ct-int "pack"/"byte"; bnb4 "nf4"/"fp4"; gguf: the mix name
    layout: str = ""
    #: how weight scales are laid out (fp8, ct-int): "tensor" | "channel" | "group" | "block"
    scale_layout: str = ""
    #: block (out, in) for scale_layout "block"
    block: tuple[int, int] | None = None
    #: dtype of the fp8 / compressed-tensors scales
    scale_dtype: str = "fp32"
    #: compressed-tensors: asymmetric integer quantisation stores zero points
    zero_points: bool = False
    #: compressed-tensors: activation-order g_idx (int32 per input column) is stored
    g_idx: bool = False
    #: per-matrix scalars besides the weight scales (static input_scale, global scales), in bytes
    extra_bytes: int = 0
    #: bitsandbytes 4-bit double quantisation (absmax stored as uint8 + nested fp32 absmax)
    double_quant: bool = False
    #: model facts for GGUF mixes (tied embeddings, 8 experts, GQA, ...)
    gguf_model: GgufModelInfo = field(default_factory=GgufModelInfo)

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise FormatError(f"unknown format kind {self.kind!r} (known: {_known(_KINDS)})")
        if self.base_dtype not in _BASE_DTYPES:
            raise FormatError(f"base dtype must be one of fp32, bf16, fp16, got {self.base_dtype!r}")
        bad = self.quantized_roles - ROLES
        if bad:
            raise FormatError(f"unknown tensor roles {_known(bad)} (known: {_known(ROLES)})")
        if self.kind == "gguf" and self.layout not in _GGUF_MIXES:
            raise FormatError(f"unknown GGUF file type {self.layout!r} (known: {_known(_GGUF_MIXES)})")
        for p in (*self.skip_patterns, *self.include_patterns):
            if not isinstance(p, str):
                raise FormatError(f"module patterns must be strings, got {p!r}")
            if p.startswith("re:"):
                try:
                    re.compile(p[3:])
                except re.error as exc:
                    raise FormatError(f"bad regular expression in module pattern {p!r}: {exc}") from None

    # -- which tensors ------------------------------------------------------------------------------

    def is_skipped(self, tensor_name: str) -> bool:
        """True when a skip pattern (or a missing include pattern) keeps this tensor unquantised."""
        if self.skip_patterns and _matcher(self.skip_patterns)(tensor_name):
            return True
        return bool(self.include_patterns) and not _matcher(self.include_patterns)(tensor_name)

    def is_quantized(self, tensor_name: str, role: str, *, shape: tuple[int, ...] | None = None) -> bool:
        """True when this format stores the tensor quantised (role rules, skip patterns, ndim)."""
        _check_role(role)
        if role not in self.quantized_roles:
            return False
        if shape is not None and len(_check_shape(shape)) < 2:
            return False
        if self.kind == "gguf":
            return _GGUF_MIXES[self.layout] not in ("F32", "F16", "BF16")
        if self.kind in ("int8", "bnb4") and role == "expert" and shape is not None and len(shape) >= 3:
            return False  # stacked expert Parameters are not nn.Linear: bitsandbytes leaves them alone
        return not self.is_skipped(tensor_name)

    # -- how many bytes -----------------------------------------------------------------------------

    def _scale_count(self, out: int, in_: int) -> int:
        if self.scale_layout == "tensor":
            return 1
        if self.scale_layout == "channel":
            return out
        if self.scale_layout == "block":
            bo, bi = self.block if self.block is not None else (128, 128)
            return _ceil_div(out, bo) * _ceil_div(in_, bi)
        if self.scale_layout == "group":
            g = self.group_size if self.group_size is not None and self.group_size > 0 else in_
            return out * _ceil_div(in_, g)
        raise FormatError(f"format {self.name}: unknown scale layout {self.scale_layout!r}")

    def _n_groups(self, in_: int) -> int:
        g = self.group_size if self.group_size is not None and self.group_size > 0 else in_
        return _ceil_div(in_, g) if in_ else 0

    def _matrix_bytes(self, out: int, in_: int) -> int:
        """Exact bytes of one quantised (out, in) matrix, everything its module stores for it."""
        n = out * in_
        b = self.bits or 0
        if self.kind == "fp8":
            # weight: 1 B per element; scales: fp32 (transformers FP8/fbgemm) or the checkpoint's dtype
            # (compressed-tensors)
            scale = int(DTYPE_BYTES[self.scale_dtype])
            return n + self._scale_count(out, in_) * scale + self.extra_bytes
        if self.kind == "int8":
            # bitsandbytes Linear8bitLt: int8 weight (out, in) + fp32 SCB (one absmax per output row)
            return n + out * 4
        if self.kind == "gptq":
            # AutoGPTQ / gptqmodel QuantLinear: qweight int32 (in*b/32, out), qzeros int32
            # (groups, out*b/32), scales fp16 (groups, out), g_idx int32 (in,) - stored even without act-order
            ng = self._n_groups(in_)
            return _ceil_div(in_ * b, 32) * out * 4 + ng * _ceil_div(out * b, 32) * 4 + ng * out * 2 + in_ * 4
        if self.kind == "awq":
            ng = self._n_groups(in_)
            if self.layout in ("gemv", "gemv_fast"):
                # AutoAWQ calculate_zeros_width(): groups padded to pack_num (x size multiplier for g < 128)
                pack = 32 // b
                g = self.group_size or 128
                mult = 1 if g >= 128 else {64: 2, 32: 4}.get(g, 0)
                if not mult:
                    raise FormatError(f"AWQ {self.layout} supports group sizes 32, 64 and >= 128, not {g}")
                zw = _ceil_div(_ceil_div(in_ // g, pack), mult) * mult
                if self.layout == "gemv":
                    # WQLinear_GEMV: qweight int32 (out, in/pack), qzeros int32 (out, zw),
                    # scales fp16 (out, zw*pack)
                    return _ceil_div(in_ * b, 32) * out * 4 + out * zw * 4 + out * zw * pack * 2
                # WQLinear_GEMVFast: qweight int16 (out/4, in*b/16*4), scales and zeros fp16 (zw*pack, out)
                return _ceil_div(in_ * b, 16) * out * 2 + 2 * zw * pack * out * 2
            # WQLinear_GEMM: qweight int32 (in, out*b/32), qzeros int32 (groups, out*b/32), scales fp16
            # (groups, out); no g_idx
            return in_ * _ceil_div(out * b, 32) * 4 + ng * _ceil_div(out * b, 32) * 4 + ng * out * 2
        if self.kind == "bnb4":
            # bitsandbytes Params4bit: uint8 packs two 4-bit codes; one absmax per 64 values; per-tensor
            # quant_map (16 fp32). Double quant: absmax as uint8 + fp32 nested absmax per 256 absmax +
            # fp32 offset + 256-entry fp32 nested_quant_map (serialized per tensor by bitsandbytes).
            blocks = _ceil_div(n, _BNB4_BLOCK)
            total = _ceil_div(n, 2) + _BNB4_QUANT_MAP_BYTES
            if self.double_quant:
                total += blocks + _ceil_div(blocks, _BNB4_NESTED_BLOCK) * 4
                total += _BNB4_NESTED_OFFSET_BYTES + _BNB4_NESTED_MAP_BYTES
            else:
                total += blocks * 4
            return total
        if self.kind == "mxfp4":
            # OCP MX: per row, blocks of 32 along in: 16 B of e2m1 nibbles ("_blocks") + 1 B E8M0 ("_scales")
            nb = _ceil_div(in_, 32)
            return out * nb * 16 + out * nb
        if self.kind == "nvfp4":
            # NVFP4: e2m1 nibbles (out, in/2) + one fp8-e4m3 scale per 16 along in + fp32 global scale(s)
            return out * _ceil_div(in_, 2) + out * _ceil_div(in_, 16) + self.extra_bytes
        if self.kind == "ct-int":
            # compressed-tensors: "pack" = pack-quantized (int32 words along in + int64 weight_shape (2,));
            # "byte" = int-/naive-quantized (one int8 per value). Scales (out, groups) in scale_dtype; zero
            # points when asymmetric (packed int32 along out, or int8); g_idx int32 (in,) for group act-order.
            scales = self._scale_count(out, in_)
            scale = int(DTYPE_BYTES[self.scale_dtype])
            if self.layout == "pack":
                total = out * _ceil_div(in_ * b, 32) * 4 + 16 + scales * scale
                if self.zero_points and self.scale_layout in ("channel", "group"):
                    total += _ceil_div(out * b, 32) * 4 * (scales // out if out else 0)
                elif self.zero_points:
                    total += scales
            else:
                total = n + scales * scale + (scales if self.zero_points else 0)
            return total + (in_ * 4 if self.g_idx else 0) + self.extra_bytes
        raise FormatError(f"format {self.name} has no quantised layout")

    def tensor_bytes(
        self,
        tensor_name: str,
        role: str,
        shape: tuple[int, ...],
        layer: int | None = None,
        n_layers: int | None = None,
    ) -> int:
        """Exact bytes this format stores for one tensor, including scales, zeros, g_idx, absmax.

        Unquantised tensors take ``numel * bytes(base_dtype)``. A 3-D+ quantised tensor is a stack of
        independent (out, in) matrices. GGUF tensors follow :func:`gguf_mix_type` (1-D tensors F32).
        """
        _check_role(role)
        shape = _check_shape(shape)
        numel = math.prod(shape)
        if self.kind == "gguf":
            return self._gguf_bytes(tensor_name, role, shape, layer, n_layers)
        if not self.is_quantized(tensor_name, role, shape=shape):
            return int(numel * DTYPE_BYTES[self.base_dtype])
        stack = math.prod(shape[:-2])
        return stack * self._matrix_bytes(shape[-2], shape[-1])

    def ggml_type(
        self,
        tensor_name: str,
        role: str,
        shape: tuple[int, ...],
        layer: int | None = None,
        n_layers: int | None = None,
    ) -> str:
        """GGUF formats: the ggml type this tensor gets (1-D tensors are F32)."""
        if self.kind != "gguf":
            raise FormatError(f"format {self.name} is not a GGUF mix")
        _check_role(role)
        if len(_check_shape(shape)) < 2:
            return "F32"
        return gguf_mix_type(self.layout, tensor_name, role, layer, n_layers, n_cols=shape[-1], model=self.gguf_model)

    def _gguf_bytes(
        self, tensor_name: str, role: str, shape: tuple[int, ...], layer: int | None, n_layers: int | None
    ) -> int:
        t = self.ggml_type(tensor_name, role, shape, layer, n_layers)
        if not shape:
            return gguf_tensor_bytes(t, 1)
        row = shape[-1]
        if row == 0:
            return 0
        return math.prod(shape[:-1]) * gguf_tensor_bytes(t, row)

    def with_gguf_model(self, info: GgufModelInfo) -> WeightFormat:
        """A copy with the model facts GGUF mixes need (tied embeddings, expert count, GQA ratio)."""
        return replace(self, gguf_model=info)

    def bits_per_element(self, shape: tuple[int, ...] = (4096, 4096)) -> float:
        """Stored bits per weight of one quantised matrix of ``shape`` (for display), scales included."""
        shape = _check_shape(shape)
        numel = math.prod(shape)
        if numel == 0:
            return 0.0
        if len(shape) < 2 or self.kind == "float":
            return DTYPE_BYTES[self.base_dtype] * 8
        if self.kind == "gguf":
            role = "expert" if self.layout == "mxfp4_moe" else "mlp"
            t = gguf_mix_type(self.layout, "blk.0.ffn_gate.weight", role, 0, 1, n_cols=shape[-1], model=self.gguf_model)
            return math.prod(shape[:-1]) * gguf_tensor_bytes(t, shape[-1]) * 8 / numel
        return math.prod(shape[:-2]) * self._matrix_bytes(shape[-2], shape[-1]) * 8 / numel


# --------------------------------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------------------------------


def _bits_text(fmt: WeightFormat, shape: tuple[int, int] = (4096, 4096)) -> str:
    return f"{fmt.bits_per_element(shape):.4g} bits per weight at {shape[0]}x{shape[1]}"


def _finish(fmt: WeightFormat, layout_text: str) -> WeightFormat:
    """Fill in ``explain`` with the layout sentence and the bits it works out to."""
    if fmt.kind == "float" or (fmt.kind == "gguf" and _GGUF_MIXES[fmt.layout] in ("F32", "F16", "BF16")):
        return replace(fmt, explain=layout_text)
    return replace(fmt, explain=f"{layout_text} (= {_bits_text(fmt)}).")


def _float_format(dtype: str) -> WeightFormat:
    nbytes = int(DTYPE_BYTES[dtype])
    return _finish(
        WeightFormat(dtype, f"{dtype.upper()} (unquantised)", "float", dtype, None, None, frozenset(), (), ""),
        f"every tensor stored as {dtype}: {nbytes} bytes ({nbytes * 8} bits) per element.",
    )


def _fp8_format(
    base: str,
    *,
    block: tuple[int, int] | None,
    skip: tuple[str, ...] = (),
    static_act: bool = False,
) -> WeightFormat:
    extra = 4 if static_act else 0
    act = " + one fp32 activation scale per Linear" if static_act else ""
    if block is None:
        fmt = WeightFormat(
            "fp8",
            "FP8 (e4m3), per-tensor scale",
            "fp8",
            base,
            8,
            None,
            _FP8_ROLES,
            skip,
            "",
            scale_layout="tensor",
            extra_bytes=extra,
        )
        text = f"fp8 e4m3 weight (1 B per element) + one fp32 weight_scale per matrix{act}"
    else:
        bo, bi = block
        name = "fp8-block" if block == (128, 128) else f"fp8-block-{bo}x{bi}"
        fmt = WeightFormat(
            name,
            f"FP8 (e4m3), {bo}x{bi} block scales",
            "fp8",
            base,
            8,
            None,
            _FP8_ROLES,
            skip,
            "",
            scale_layout="block",
            block=block,
            extra_bytes=extra,
        )
        text = (
            f"fp8 e4m3 weight (1 B per element) + fp32 weight_scale_inv per {bo}x{bi} block "
            f"(ceil(out/{bo})*ceil(in/{bi}) scales, DeepSeek-V3 / Qwen FP8 layout){act}"
        )
    return _finish(fmt, text)


def _fbgemm_fp8_format(base: str, skip: tuple[str, ...]) -> WeightFormat:
    fmt = WeightFormat(
        "fp8-channel",
        "FP8 (e4m3), per-channel scale (fbgemm)",
        "fp8",
        base,
        8,
        None,
        _LINEAR_ROLES,
        skip,
        "",
        scale_layout="channel",
    )
    return _finish(fmt, "fbgemm_fp8: fp8 e4m3 weight (1 B per element) + fp32 weight_scale per output row")


def _int8_format(base: str, skip: tuple[str, ...] = ()) -> WeightFormat:
    fmt = WeightFormat("int8", "bitsandbytes LLM.int8 (8-bit)", "int8", base, 8, None, _BNB_ROLES, skip, "")
    return _finish(fmt, "bitsandbytes LLM.int8: int8 weight (1 B per element) + fp32 SCB absmax per output row")


def _bnb4_format(base: str, quant_type: str, double: bool, skip: tuple[str, ...] = ()) -> WeightFormat:
    name = quant_type + ("-dq" if double else "")
    label = f"bitsandbytes {quant_type.upper()} 4-bit" + (", double quant" if double else "")
    fmt = WeightFormat(
        name,
        label,
        "bnb4",
        base,
        4,
        _BNB4_BLOCK,
        _BNB_ROLES,
        skip,
        "",
        layout=quant_type,
        double_quant=double,
    )
    if double:
        text = (
            f"bitsandbytes {quant_type}: 4-bit codes (2 per uint8) + uint8 absmax per 64 values + fp32 "
            "nested absmax per 256 absmax + fp32 offset, 16-entry quant_map and 256-entry "
            "nested_quant_map per tensor"
        )
    else:
        text = (
            f"bitsandbytes {quant_type}: 4-bit codes (2 per uint8) + fp32 absmax per 64 values + "
            "16-entry fp32 quant_map per tensor"
        )
    return _finish(fmt, text)


def _group_text(g: int) -> str:
    return "per-channel" if g == -1 else f"group {g}"


def _gptq_format(
    base: str,
    bits: int,
    group: int,
    *,
    skip: tuple[str, ...] = (),
    include: tuple[str, ...] = (),
    lm_head: bool = False,
    desc_act: bool = False,
) -> WeightFormat:
    if bits not in (2, 3, 4, 8):
        raise FormatError(f"GPTQ bits must be 2, 3, 4 or 8, got {bits}")
    if group == 0 or group < -1:
        raise FormatError(f"GPTQ group_size must be a positive integer or -1, got {group}")
    name = f"gptq-int{bits}" + ("" if group == 128 else f"-g{group}")
    roles = _GPTQ_ROLES | {"lm_head"} if lm_head else _GPTQ_ROLES
    label = f"GPTQ {bits}-bit, {_group_text(group)}" + (", act-order" if desc_act else "")
    fmt = WeightFormat(name, label, "gptq", base, bits, group, roles, skip, "", include_patterns=include)
    g = "in" if group == -1 else str(group)
    return _finish(
        fmt,
        f"GPTQ (AutoGPTQ/gptqmodel): qweight int32 packing {bits}-bit values along in "
        f"+ qzeros int32 packed along out and fp16 scales per {g} inputs per output "
        f"row + int32 g_idx per input column: {bits} + ({bits}+16)/{g} bits per weight + 32 bits per column",
    )


def _awq_format(
    base: str,
    bits: int,
    group: int,
    *,
    version: str = "gemm",
    skip: tuple[str, ...] = (),
    name: str | None = None,
    label: str | None = None,
) -> WeightFormat:
    if bits != 4:
        raise FormatError(f"AWQ supports 4-bit weights only, got bits={bits}")
    if group <= 0:
        raise FormatError(f"AWQ group_size must be a positive integer, got {group}")
    canonical = "awq-int4" + ("" if group == 128 else f"-g{group}")
    if version != "gemm":
        canonical += f"-{version.replace('_', '-')}"
    fmt = WeightFormat(
        name or canonical,
        label or f"AWQ 4-bit, group {group}" + ("" if version == "gemm" else f" ({version.upper()})"),
        "awq",
        base,
        bits,
        group,
        _GPTQ_ROLES,
        skip,
        "",
        layout=version,
    )
    if version == "gemm":
        text = (
            f"AWQ GEMM (AutoAWQ WQLinear_GEMM): qweight int32 (in, out/8) + qzeros int32 packed along out "
            f"and fp16 scales per {group} inputs per output row, no g_idx: 4 + 20/{group} bits per weight"
        )
    elif version == "gemv":
        text = (
            f"AWQ GEMV (AutoAWQ WQLinear_GEMV): qweight int32 (out, in/8) + qzeros int32 and fp16 scales "
            f"per {group} inputs per output row, group count padded to a multiple of 8"
        )
    else:
        text = (
            f"AWQ GEMV_FAST (AutoAWQ WQLinear_GEMVFast): interleaved int16 qweight + fp16 scales and fp16 "
            f"zeros per {group} inputs per output row, group count padded to a multiple of 8"
        )
    return _finish(fmt, text)


def _generic_int4_format(base: str) -> WeightFormat:
    return _awq_format(base, 4, 128, name="int4", label="INT4 weight-only, group 128 (AWQ layout)")


def _mxfp4_format(base: str, skip: tuple[str, ...] = ()) -> WeightFormat:
    fmt = WeightFormat("mxfp4", "MXFP4 experts (gpt-oss)", "mxfp4", base, 4, 32, _MXFP4_ROLES, skip, "")
    return _finish(
        fmt,
        "MXFP4 (OCP MX) on expert weights only: e2m1 4-bit values (16 B per 32, '_blocks') + one uint8 "
        "E8M0 scale per 32 along in ('_scales'): 4 + 8/32 bits per weight",
    )


def _nvfp4_format(base: str, skip: tuple[str, ...], extra: int, origin: str) -> WeightFormat:
    fmt = WeightFormat("nvfp4", f"NVFP4 ({origin})", "nvfp4", base, 4, 16, _LINEAR_ROLES, skip, "", extra_bytes=extra)
    return _finish(
        fmt,
        f"NVFP4 ({origin}): e2m1 4-bit values (2 per byte) + one fp8-e4m3 scale per 16 along in "
        f"+ {extra} B of fp32 global/input scales per matrix: 4 + 8/16 bits per weight",
    )


def _gguf_format(mix: str) -> WeightFormat:
    m = _gguf_mix(mix)
    base = _GGUF_MIXES[m]
    name = f"gguf-{m}" if base in ("F32", "F16", "BF16") else m
    fmt = WeightFormat(name, f"GGUF {m.upper()}", "gguf", "fp32", None, None, _GGUF_ROLES, (), "", layout=m)
    blk, nbytes = GGUF_TYPES[base]
    if base in ("F32", "F16", "BF16"):
        text = (
            f"GGUF {base}: every 2-D+ weight {base}, 1-D tensors, norms, MoE router and conv1d F32 "
            f"({nbytes * 8} bits per weight, 32 for the F32 ones)"
        )
    elif m == "mxfp4_moe":
        text = (
            "GGUF MXFP4_MOE: expert tensors MXFP4 (17 B per 32), other weights Q8_0 (34 B per 32), "
            "output Q6_K, 1-D tensors F32"
        )
    else:
        text = (
            f"GGUF {m.upper()} (llama-quantize mix): default {base} ({nbytes} B per {blk} values), output "
            f"{'Q8_0' if base == 'Q8_0' else 'Q6_K'}, attn_v/ffn_down/attn_output/attn_qkv raised per "
            "llama_tensor_get_type, norms, router and 1-D tensors F32"
        )
    return _finish(fmt, text)


_GPTQ_RE = re.compile(r"^gptq-int(\d+)(?:-g(-1|\d+))?$")
_AWQ_RE = re.compile(r"^awq-int(\d+)(?:-g(\d+))?(?:-(gemm|gemv|gemv-fast))?$")
_FP8_BLOCK_RE = re.compile(r"^fp8-block(?:-(\d+)x(\d+))?$")

_SIMPLE_NAMES = (
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "fp8-block",
    "fp8-channel",
    "int8",
    "int4",
    "nf4",
    "nf4-dq",
    "fp4",
    "fp4-dq",
    "gptq-int8",
    "gptq-int4",
    "gptq-int3",
    "gptq-int2",
    "awq-int4",
    "mxfp4",
)


def known_weight_formats() -> tuple[str, ...]:
    """Names :func:`parse_weight_format` accepts (group / block suffixes aside)."""
    gguf = tuple(f"gguf-{m}" if _GGUF_MIXES[m] in ("F32", "F16", "BF16") else m for m in _GGUF_MIXES)
    return _SIMPLE_NAMES + gguf


def parse_weight_format(name: str, *, base_dtype: str = "bf16") -> WeightFormat:
    """A weight format from its name (case-insensitive).

    Plain: ``fp32 bf16 fp16``. FP8: ``fp8`` (per-tensor fp32 scale), ``fp8-block`` (128x128 block
    scales; ``fp8-block-64x64`` style sets the block), ``fp8-channel`` (fbgemm per-row scale).
    bitsandbytes: ``int8`` (LLM.int8), ``nf4``, ``nf4-dq``, ``fp4``, ``fp4-dq``. GPTQ: ``gptq-int{2,3,4,8}``
    with group 128, ``-g32`` style suffix for another group, ``-g-1`` for per-channel. AWQ: ``awq-int4``
    (GEMM, group 128, ``-g64`` style suffix). ``int4`` is a generic 4-bit weight-only integer format
    with group-128 fp16 scales and packed zero points, stored in the AWQ GEMM layout (the common
    denominator of AWQ/GPTQ-style int4 checkpoints, without GPTQ's g_idx). ``mxfp4`` (experts only).
    GGUF mixes: ``q8_0 q6_k q5_k_m q5_k_s q4_k_m q4_k_s q4_0 q4_1 q5_0 q5_1 q3_k_m q3_k_s q3_k_l q2_k
    q2_k_s iq4_xs iq4_nl mxfp4_moe`` and ``gguf-f32 gguf-f16 gguf-bf16``.
    ``base_dtype`` is the dtype of what stays unquantised (GGUF mixes use F32 for those).
    """
    if not isinstance(name, str):
        raise FormatError(f"weight format must be a string, got {name!r}")
    key = name.strip().lower()
    base = _base_dtype(base_dtype)
    if key in ("fp32", "bf16", "fp16", "float32", "bfloat16", "float16"):
        return _float_format(normalize_dtype(key))
    if key == "fp8":
        return _fp8_format(base, block=None)
    if key == "fp8-channel":
        return _fbgemm_fp8_format(base, ())
    match = _FP8_BLOCK_RE.match(key)
    if match:
        bo, bi = (int(match.group(1)), int(match.group(2))) if match.group(1) else (128, 128)
        if bo <= 0 or bi <= 0:
            raise FormatError(f"fp8 block sizes must be positive in {name!r}")
        return _fp8_format(base, block=(bo, bi))
    if key == "int8":
        return _int8_format(base)
    if key == "int4":
        return _generic_int4_format(base)
    if key in ("nf4", "nf4-dq", "fp4", "fp4-dq"):
        return _bnb4_format(base, key[:3], key.endswith("-dq"))
    match = _GPTQ_RE.match(key)
    if match:
        bits = int(match.group(1))
        if bits not in (2, 3, 4, 8):
            raise FormatError(f"unknown weight format {name!r}: GPTQ bits must be 2, 3, 4 or 8")
        return _gptq_format(base, bits, int(match.group(2)) if match.group(2) else 128)
    match = _AWQ_RE.match(key)
    if match:
        bits = int(match.group(1))
        version = (match.group(3) or "gemm").replace("-", "_")
        return _awq_format(base, bits, int(match.group(2)) if match.group(2) else 128, version=version)
    if key == "mxfp4":
        return _mxfp4_format(base)
    gguf_key = key[len("gguf-") :] if key.startswith("gguf-") else key
    gguf_key = _GGUF_MIX_ALIASES.get(gguf_key, gguf_key)
    if gguf_key in _GGUF_MIXES and (key.startswith("gguf-") or _GGUF_MIXES[gguf_key] not in ("F32", "F16", "BF16")):
        return _gguf_format(gguf_key)
    raise FormatError(f"unknown weight format {name!r} (known: {', '.join(known_weight_formats())})")


# --------------------------------------------------------------------------------------------------
# config.json quantization_config
# --------------------------------------------------------------------------------------------------

_KNOWN_METHODS = (
    "awq",
    "bitsandbytes",
    "compressed-tensors",
    "fbgemm_fp8",
    "fp8",
    "gptq",
    "modelopt",
    "mxfp4",
)
_MISSING = object()


def _field(qc: Mapping[str, object], keys: tuple[str, ...]) -> object:
    for k in keys:
        if k in qc and qc[k] is not None:
            return qc[k]
    return _MISSING


def _cfg_int(qc: Mapping[str, object], keys: tuple[str, ...], where: str, default: int | None = None) -> int:
    v = _field(qc, keys)
    if v is _MISSING:
        if default is None:
            raise FormatError(f"{where}: missing field '{keys[0]}'")
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise FormatError(f"{where}: field '{keys[0]}' must be an integer, got {v!r}")
    return v


def _cfg_bool(qc: Mapping[str, object], keys: tuple[str, ...], where: str, default: bool) -> bool:
    v = _field(qc, keys)
    if v is _MISSING:
        return default
    if not isinstance(v, bool):
        raise FormatError(f"{where}: field '{keys[0]}' must be true or false, got {v!r}")
    return v


def _cfg_str(qc: Mapping[str, object], keys: tuple[str, ...], where: str, default: str) -> str:
    v = _field(qc, keys)
    if v is _MISSING:
        return default
    if not isinstance(v, str):
        raise FormatError(f"{where}: field '{keys[0]}' must be a string, got {v!r}")
    return v.strip().lower()


def _cfg_names(qc: Mapping[str, object], keys: tuple[str, ...], where: str) -> tuple[str, ...]:
    """A list of module names / patterns; nested lists (GPTQ modules_in_block_to_quantize) are flattened."""
    v = _field(qc, keys)
    if v is _MISSING:
        return ()
    if isinstance(v, str):
        return (v,)
    if not isinstance(v, list | tuple):
        raise FormatError(f"{where}: field '{keys[0]}' must be a list of module names, got {v!r}")
    out: list[str] = []
    for item in v:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, list | tuple) and all(isinstance(x, str) for x in item):
            out.extend(str(x) for x in item)
        else:
            raise FormatError(f"{where}: field '{keys[0]}' must hold module names, got {item!r}")
    return tuple(out)


def _cfg_map(v: object, where: str, key: str) -> Mapping[str, object]:
    if not isinstance(v, Mapping) or not all(isinstance(k, str) for k in v):
        raise FormatError(f"{where}: field '{key}' must be an object, got {v!r}")
    return v


def _from_gptq(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "gptq quantization_config"
    bits = _cfg_int(qc, ("bits",), where)
    group = _cfg_int(qc, ("group_size",), where)
    fmt_name = _cfg_str(qc, ("checkpoint_format", "format"), where, "gptq")
    if fmt_name not in ("gptq", "gptq_v2"):
        raise FormatError(f"{where}: unsupported checkpoint_format {fmt_name!r} (known: gptq, gptq_v2)")
    desc_act = _cfg_bool(qc, ("desc_act",), where, False)
    _cfg_bool(qc, ("sym",), where, True)  # validated; qzeros are stored either way
    lm_head = _cfg_bool(qc, ("lm_head",), where, False)
    include = _cfg_names(qc, ("modules_in_block_to_quantize",), where)
    skip = _cfg_names(qc, ("modules_to_not_convert",), where)
    return _gptq_format(base, bits, group, skip=skip, include=include, lm_head=lm_head, desc_act=desc_act)


def _from_awq(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "awq quantization_config"
    bits = _cfg_int(qc, ("bits", "w_bit"), where)
    group = _cfg_int(qc, ("group_size", "q_group_size"), where)
    version = _cfg_str(qc, ("version",), where, "gemm")
    if version in ("exllama", "ipex"):
        version = "gemm"  # these kernels load the GEMM checkpoint layout
    if version not in ("gemm", "gemv", "gemv_fast"):
        raise FormatError(f"{where}: unsupported AWQ version {version!r} (known: gemm, gemv, gemv_fast, exllama, ipex)")
    skip = _cfg_names(qc, ("modules_to_not_convert",), where)
    return _awq_format(base, bits, group, version=version, skip=skip)


def _from_bnb(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "bitsandbytes quantization_config"
    in8 = _cfg_bool(qc, ("load_in_8bit", "_load_in_8bit"), where, False)
    in4 = _cfg_bool(qc, ("load_in_4bit", "_load_in_4bit"), where, False)
    skip = _cfg_names(qc, ("llm_int8_skip_modules",), where)
    if in8 and in4:
        raise FormatError(f"{where}: both 'load_in_8bit' and 'load_in_4bit' are true")
    if in8:
        return _int8_format(base, skip)
    if not in4:
        raise FormatError(f"{where}: neither 'load_in_8bit' nor 'load_in_4bit' is true")
    qtype = _cfg_str(qc, ("bnb_4bit_quant_type",), where, "fp4")  # BitsAndBytesConfig's default
    if qtype not in ("nf4", "fp4"):
        raise FormatError(f"{where}: field 'bnb_4bit_quant_type' must be nf4 or fp4, got {qtype!r}")
    double = _cfg_bool(qc, ("bnb_4bit_use_double_quant",), where, False)
    return _bnb4_format(base, qtype, double, skip)


def _from_fp8(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "fp8 quantization_config"
    skip = _cfg_names(qc, ("modules_to_not_convert",), where)
    static = _cfg_str(qc, ("activation_scheme",), where, "dynamic") == "static"
    raw = _field(qc, ("weight_block_size",))
    if raw is _MISSING:
        return _fp8_format(base, block=None, skip=skip, static_act=static)
    if (
        not isinstance(raw, list | tuple)
        or len(raw) != 2
        or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in raw)
    ):
        raise FormatError(f"{where}: field 'weight_block_size' must be two positive integers, got {raw!r}")
    return _fp8_format(base, block=(int(raw[0]), int(raw[1])), skip=skip, static_act=static)


def _ct_scheme(weights: Mapping[str, object], where: str) -> tuple[object, ...]:
    return (
        _cfg_int(weights, ("num_bits",), where),
        _cfg_str(weights, ("type",), where, "int"),
        _cfg_int(weights, ("group_size",), where, 0),
        _cfg_str(weights, ("strategy",), where, ""),
        _cfg_bool(weights, ("symmetric",), where, True),
        str(_field(weights, ("actorder",))).lower(),
        repr(_field(weights, ("block_structure",))),
    )


def _from_compressed_tensors(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "compressed-tensors quantization_config"
    groups_raw = _field(qc, ("config_groups",))
    if groups_raw is _MISSING:
        raise FormatError(f"{where}: missing field 'config_groups'")
    groups = _cfg_map(groups_raw, where, "config_groups")
    if not groups:
        raise FormatError(f"{where}: field 'config_groups' is empty")
    schemes: list[tuple[Mapping[str, object], Mapping[str, object]]] = []
    for gname, g in groups.items():
        gm = _cfg_map(g, where, f"config_groups.{gname}")
        w = _field(gm, ("weights",))
        if w is _MISSING:
            raise FormatError(f"{where}: missing field 'config_groups.{gname}.weights'")
        schemes.append((_cfg_map(w, where, f"config_groups.{gname}.weights"), gm))
    first_w, first_g = schemes[0]
    key = _ct_scheme(first_w, where + " weights")
    if any(_ct_scheme(w, where + " weights") != key for w, _ in schemes[1:]):
        raise FormatError(f"{where}: config_groups with different weight schemes are not supported")
    bits = _cfg_int(first_w, ("num_bits",), where + " weights")
    wtype = _cfg_str(first_w, ("type",), where + " weights", "int")
    group = _cfg_int(first_w, ("group_size",), where + " weights", 0)
    strategy = _cfg_str(first_w, ("strategy",), where + " weights", "group" if group > 0 else "channel")
    symmetric = _cfg_bool(first_w, ("symmetric",), where + " weights", True)
    actorder = _field(first_w, ("actorder",))
    has_gidx = actorder is True or (isinstance(actorder, str) and actorder.lower() == "group")
    skip = _cfg_names(qc, ("ignore",), where)
    fmt_name = _cfg_str(qc, ("format",), where, "")
    acts = _field(first_g, ("input_activations",))
    static_act = isinstance(acts, Mapping) and acts.get("dynamic") is False
    if strategy not in ("tensor", "channel", "group", "block", "tensor_group"):
        raise FormatError(f"{where}: unsupported weights strategy {strategy!r} (known: tensor, channel, group, block)")
    if strategy in ("group", "tensor_group") and group <= 0:
        raise FormatError(f"{where}: field 'group_size' must be a positive integer for strategy {strategy!r}")
    block: tuple[int, int] | None = None
    if strategy == "block":
        raw = _field(first_w, ("block_structure",))
        if (
            not isinstance(raw, list | tuple)
            or len(raw) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in raw)
        ):
            raise FormatError(f"{where}: field 'block_structure' must be two positive integers, got {raw!r}")
        block = (int(raw[0]), int(raw[1]))
    if wtype == "float" and bits == 4:
        if group != 16 or fmt_name not in ("", "nvfp4-pack-quantized"):
            raise FormatError(f"{where}: only NVFP4 (group 16, nvfp4-pack-quantized) is supported for 4-bit floats")
        extra = 4 + (4 if isinstance(acts, Mapping) else 0)  # weight_global_scale (+ input_global_scale)
        return _nvfp4_format(base, skip, extra, "compressed-tensors")
    layout = "group" if strategy in ("group", "tensor_group") else strategy
    act_bytes = int(DTYPE_BYTES[base]) if static_act else 0  # one input_scale per Linear
    if wtype == "float" and bits == 8:
        if fmt_name not in ("", "float-quantized", "naive-quantized"):
            raise FormatError(f"{where}: unsupported format {fmt_name!r} for fp8 weights")
        name = "ct-fp8-" + (f"g{group}" if layout == "group" else layout)
        fmt = WeightFormat(
            name,
            f"FP8 (compressed-tensors, {layout} scales)",
            "fp8",
            base,
            8,
            group if layout == "group" else None,
            _LINEAR_ROLES,
            skip,
            "",
            scale_layout=layout,
            block=block,
            scale_dtype=base,
            extra_bytes=act_bytes,
        )
        return _finish(
            fmt,
            f"compressed-tensors fp8: e4m3 weight (1 B per element) + {base} weight_scale per "
            f"{'block' if block else layout}",
        )
    if wtype != "int" or bits not in (2, 3, 4, 8):
        raise FormatError(f"{where}: unsupported weights type {wtype!r} with num_bits {bits}")
    if fmt_name in ("", "pack-quantized"):
        storage = "pack" if (fmt_name == "pack-quantized" or bits < 8) else "byte"
    elif fmt_name in ("int-quantized", "naive-quantized"):
        storage = "byte"
    else:
        raise FormatError(
            f"{where}: unsupported format {fmt_name!r} (known: pack-quantized, int-quantized, "
            "naive-quantized, float-quantized, nvfp4-pack-quantized)"
        )
    name = f"ct-int{bits}-" + (f"g{group}" if layout == "group" else layout)
    fmt = WeightFormat(
        name,
        f"INT{bits} (compressed-tensors, {_group_text(group) if layout == 'group' else layout})",
        "ct-int",
        base,
        bits,
        group if layout == "group" else None,
        _LINEAR_ROLES,
        skip,
        "",
        layout=storage,
        scale_layout=layout,
        block=block,
        scale_dtype=base,
        zero_points=not symmetric,
        g_idx=has_gidx,
        extra_bytes=act_bytes,
    )
    return _finish(
        fmt,
        f"compressed-tensors int{bits} ({'packed in int32' if storage == 'pack' else 'int8 per value'}"
        f") + {base} scales per {layout}"
        + ("" if symmetric else " + zero points")
        + (" + int32 g_idx" if has_gidx else ""),
    )


def _from_modelopt(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "modelopt quantization_config"
    inner_raw = _field(qc, ("quantization",))
    inner = _cfg_map(inner_raw, where, "quantization") if inner_raw is not _MISSING else qc
    algo = _cfg_str(inner, ("quant_algo",), where, "")
    if not algo:
        raise FormatError(f"{where}: missing field 'quant_algo'")
    skip = _cfg_names(inner, ("exclude_modules", "ignore"), where)
    if algo == "fp8":
        # ModelOpt FP8: fp8 weight + fp32 weight_scale + fp32 input_scale per Linear
        fmt = WeightFormat(
            "modelopt-fp8",
            "FP8 (ModelOpt), per-tensor scales",
            "fp8",
            base,
            8,
            None,
            _LINEAR_ROLES,
            skip,
            "",
            scale_layout="tensor",
            extra_bytes=4,
        )
        return _finish(fmt, "ModelOpt FP8: e4m3 weight (1 B per element) + fp32 weight_scale + fp32 input_scale")
    if algo == "nvfp4":
        # ModelOpt NVFP4: packed e2m1 + fp8 weight_scale per 16 + fp32 weight_scale_2 + fp32 input_scale
        return _nvfp4_format(base, skip, 8, "ModelOpt")
    raise FormatError(f"{where}: unsupported quant_algo {algo!r} (known: FP8, NVFP4)")


def format_from_quantization_config(qc: Mapping[str, object], *, base_dtype: str) -> WeightFormat:
    """The weight format a config.json ``quantization_config`` (or ``compression_config``) describes.

    A whole config.json is accepted too: its ``quantization_config``/``compression_config`` is used.
    Supported ``quant_method``: gptq, awq, bitsandbytes, fp8, fbgemm_fp8, mxfp4, compressed-tensors,
    modelopt. Others (hqq, eetq, torchao, ...) and missing or malformed fields raise
    :class:`FormatError` naming the method or field.
    """
    if not isinstance(qc, Mapping):
        raise FormatError(f"quantization_config must be an object, got {qc!r}")
    if "quant_method" not in qc:
        for nested in ("quantization_config", "compression_config"):
            if isinstance(qc.get(nested), Mapping):
                return format_from_quantization_config(_cfg_map(qc[nested], "config", nested), base_dtype=base_dtype)
    base = _base_dtype(base_dtype)
    method_raw = qc.get("quant_method")
    if method_raw is None and "config_groups" in qc:
        method_raw = "compressed-tensors"
    if method_raw is None:
        raise FormatError("quantization_config: missing field 'quant_method'")
    if not isinstance(method_raw, str):
        raise FormatError(f"quantization_config: field 'quant_method' must be a string, got {method_raw!r}")
    method = method_raw.strip().lower().replace("_", "-")
    if method == "gptq":
        return _from_gptq(qc, base)
    if method == "awq":
        return _from_awq(qc, base)
    if method == "bitsandbytes":
        return _from_bnb(qc, base)
    if method == "fp8":
        return _from_fp8(qc, base)
    if method == "fbgemm-fp8":
        return _fbgemm_fp8_format(base, _cfg_names(qc, ("modules_to_not_convert",), "fbgemm_fp8 quantization_config"))
    if method == "mxfp4":
        return _mxfp4_format(base, _cfg_names(qc, ("modules_to_not_convert",), "mxfp4 quantization_config"))
    if method in ("compressed-tensors", "sparseml"):
        return _from_compressed_tensors(qc, base)
    if method == "modelopt":
        return _from_modelopt(qc, base)
    raise FormatError(f"unsupported quantisation method {method_raw!r} (known: {', '.join(_KNOWN_METHODS)})")
