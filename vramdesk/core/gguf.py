"""GGUF: ggml block types and their bytes, and the ggml type llama-quantize gives each tensor of a mix.

The block sizes of every ggml type (``GGUF_TYPES``) and the type ids a GGUF file stores (``GGUF_TYPE_IDS``),
the bytes of a run of elements (:func:`gguf_tensor_bytes`), llama-quantize's file types (mixes), the model
facts that change its choices (:class:`GgufModelInfo`) and its per-tensor choice itself
(:func:`gguf_mix_type`, after ``llama_tensor_get_type`` in llama.cpp ``src/llama-quant.cpp``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .dtype_names import ROLES, FormatError, _known
from .messages import Message

__all__ = [
    "GGUF_TYPES",
    "GGUF_TYPE_IDS",
    "FormatError",  # defined in dtype_names; what these functions raise, so readers of GGUF files catch it from here
    "GgufModelInfo",
    "gguf_mix_type",
    "gguf_tensor_bytes",
]


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


UNKNOWN_TYPE = Message("gguf.unknown_type", "unknown ggml type {name!r} (known: {known})")
PARTIAL_BLOCKS = Message("gguf.partial_blocks", "{elements} elements is not a whole number of {type} blocks of {block}")
UNKNOWN_MIX = Message("gguf.unknown_file_type", "unknown GGUF file type {mix!r} (known: {known})")
ROW_DOES_NOT_FIT = Message(
    "gguf.row_does_not_fit", "a row of {cols} elements cannot be stored as {type} (block {block})"
)
UNKNOWN_ROLE = Message("gguf.unknown_role", "unknown tensor role {role!r} (known: {known})")
NEEDS_LAYER_INDEX = Message("gguf.needs_layer_index", "GGUF mix {mix}: need the layer index of {tensor!r}")
NEEDS_LAYER_COUNT = Message("gguf.needs_layer_count", "GGUF mix {mix}: need n_layers for {tensor!r}")


def _ggml_type(name: str) -> str:
    key = name.strip().upper()
    if key not in GGUF_TYPES:
        raise FormatError(UNKNOWN_TYPE(name=name, known=_known(GGUF_TYPES)))
    return key


def gguf_tensor_bytes(ggml_type: str, n_elements: int) -> int:
    """Bytes of ``n_elements`` stored as ``ggml_type``: ``n / block_elements * block_bytes``.

    ``n_elements`` must be a whole number of blocks (rows are padded by the caller, not here).
    """
    t = _ggml_type(ggml_type)
    blk, nbytes = GGUF_TYPES[t]
    if n_elements < 0 or n_elements % blk:
        raise FormatError(PARTIAL_BLOCKS(elements=n_elements, type=t, block=blk))
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
        raise FormatError(UNKNOWN_MIX(mix=mix, known=_known(_GGUF_MIXES)))
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
        raise FormatError(ROW_DOES_NOT_FIT(cols=n_cols, type=t, block=GGUF_TYPES[t][0]))
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
        raise FormatError(UNKNOWN_ROLE(role=role, known=_known(ROLES)))
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
    t = _mix_rule_type(m, base, kind, role, info, _LayerPosition(m, tensor_name, layer, n_layers), n_cols)
    if n_cols is not None:
        t = _incompatible_fallback(t, n_cols)
    return t


@dataclass(frozen=True)
class _LayerPosition:
    """Where a tensor sits, asked for only by the rules that need it (so a missing layer index fails only there)."""

    mix: str
    tensor_name: str
    layer: int | None
    n_layers: int | None

    def idx(self) -> int:
        if self.layer is not None:
            return self.layer
        found = _LAYER_RE.search(self.tensor_name.lower())
        if found is None:
            raise FormatError(NEEDS_LAYER_INDEX(mix=self.mix, tensor=self.tensor_name))
        return int(found.group(1))

    def count(self) -> int:
        if self.n_layers is None or self.n_layers <= 0:
            raise FormatError(NEEDS_LAYER_COUNT(mix=self.mix, tensor=self.tensor_name))
        return self.n_layers


def _mix_rule_type(
    m: str, base: str, kind: str, role: str, info: GgufModelInfo, pos: _LayerPosition, n_cols: int | None
) -> str:
    """llama_tensor_get_type's choice for a quantised mix, before the row-fit fallback (its rules in its order)."""
    falcon = info.arch.lower() == "falcon"
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
        t = _attn_v_type(m, t, info, pos)
    elif kind == "attn_k":
        if info.n_expert == 8:
            t = "Q8_0"
    elif kind == "ffn_down":
        t = _ffn_down_type(m, t, info, falcon, pos)
    elif kind == "attn_output":
        t = _attn_output_type(m, t, info, falcon)
    elif kind == "attn_qkv":
        t = _attn_qkv_type(m, t)
    return t


def _attn_v_type(m: str, t: str, info: GgufModelInfo, pos: _LayerPosition) -> str:
    """attn_v: ``pos`` counts attn_v tensors, as llama.cpp does (see :func:`gguf_mix_type`)."""
    if m == "q2_k":
        t = "Q4_K" if info.n_gqa >= 4 else "Q3_K"
    elif m == "q2_k_s" and info.n_gqa >= 4:
        t = "Q4_K"
    elif m in ("iq4_nl", "iq4_xs") and info.n_gqa >= 4:
        t = "Q5_K"
    elif m == "q3_k_m":
        t = "Q5_K" if pos.idx() < 2 else "Q4_K"
    elif m == "q3_k_l":
        t = "Q5_K"
    elif m in ("q4_k_m", "q5_k_m") and _use_more_bits(pos.idx(), pos.count()):
        t = "Q6_K"
    elif m == "q4_k_s" and pos.idx() < 4:
        t = "Q5_K"
    if info.is_70b and t in ("Q3_K", "Q4_K"):
        t = "Q5_K"
    if info.n_expert == 8:
        t = "Q8_0"
    return t


def _ffn_down_type(m: str, t: str, info: GgufModelInfo, falcon: bool, pos: _LayerPosition) -> str:
    """ffn_down (also ffn_down_exps / _shexp): ``pos`` is the block index."""
    if m == "q2_k":
        t = "Q3_K"
    elif m == "q2_k_s":
        if pos.idx() < pos.count() // 8:
            t = "Q4_K"
    elif m == "q3_k_m":
        i, n = pos.idx(), pos.count()
        if i < n // 16:
            t = "Q5_K"
        elif not falcon or _use_more_bits(i, n):
            t = "Q4_K"
        else:
            t = "Q3_K"
    elif m == "q3_k_l":
        t = "Q4_K" if falcon else "Q5_K"
    elif m == "q4_k_m":
        i, n = pos.idx(), pos.count()
        if falcon:
            t = "Q6_K" if i < n // 16 else ("Q5_K" if _use_more_bits(i, n) else "Q4_K")
        elif _use_more_bits(i, n):
            t = "Q6_K"
    elif m in ("iq4_nl", "iq4_xs") and not info.has_imatrix and pos.idx() < pos.count() // 8:
        t = "Q5_K"
    elif m == "q5_k_m" and _use_more_bits(pos.idx(), pos.count()):
        t = "Q6_K"
    elif m == "q4_k_s" and not falcon and pos.idx() < pos.count() // 8:
        t = "Q5_K"
    elif m in ("q4_0", "q5_0") and info.has_imatrix and pos.idx() < pos.count() // 8:
        t = "Q4_1" if m == "q4_0" else "Q5_1"
    return t


def _attn_output_type(m: str, t: str, info: GgufModelInfo, falcon: bool) -> str:
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
    return t


def _attn_qkv_type(m: str, t: str) -> str:
    if m in ("q3_k_m", "q3_k_l"):
        t = "Q4_K"
    elif m == "q4_k_m":
        t = "Q5_K"
    elif m == "q5_k_m":
        t = "Q6_K"
    return t
