"""Checkpoint headers -> the tensors a checkpoint really stores, with their exact bytes: safetensors, and the
tensor naming both formats share.

Pure: it parses the bytes and dicts it is given (a safetensors JSON header, a GGUF header) and never opens a
file or a socket. The services layer does the bounded reads (local files, ranged HTTP) and hands the bytes
here.

* :func:`tensors_from_safetensors` / :func:`~vramdesk.core.gguf_header.tensors_from_gguf` turn header entries
  into :class:`~vramdesk.core.inventory.Tensor` tuples with ``stored_bytes`` and ``stored_dtype`` set; the
  estimator then prices the weights as the sum of those bytes over the parts it loads
  (:func:`vramdesk.core.estimate.model_facts` ``checkpoint=``).
* :func:`stored_parameter_count` counts logical parameters in a safetensors checkpoint (packed quantised
  tensors unpacked, scales / zeros / indices not counted).
* :func:`classify` names a stored tensor's role, part and layer from its name (safetensors and GGUF names).
* GGUF headers are read in :mod:`vramdesk.core.gguf_header`.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Mapping
from math import prod
from typing import Any

from . import jsonsafe
from .architecture import Architecture
from .inventory import Tensor
from .messages import Message, text


class CheckpointError(ValueError):
    """A header that cannot be read; the message says what is wrong (callers add the file name)."""


HEADER_CONTINUES = Message("checkpoint.header_continues", "header continues past byte {needed:,}")
UNKNOWN_DTYPE = Message("checkpoint.unknown_dtype", "unknown safetensors dtype {dtype!r} (known: {known})")
FILE_TOO_SHORT = Message("checkpoint.file_too_short", "{size} bytes is too short for a safetensors file")
HEADER_TOO_LONG = Message(
    "checkpoint.header_too_long",
    "header length {length:,} bytes exceeds the {limit:,}-byte limit (not a safetensors file, or corrupt)",
)
HEADER_TOO_SHORT = Message(
    "checkpoint.header_too_short", "header length {length} is too small for a safetensors JSON header"
)
TRUNCATED_HEADER = Message(
    "checkpoint.truncated_header", "truncated: the header claims {length:,} bytes but the file has only {size:,}"
)
HEADER_NOT_JSON = Message("checkpoint.header_not_json", "header is not valid JSON ({problem})")
HEADER_NOT_OBJECT = Message("checkpoint.header_not_object", "header must be a JSON object, not {type}")
#: what JSON gave instead of an object, by its Python type's name
JSON_TYPES = {
    name: text(f"checkpoint.json_type.{name.lower()}", name) for name in ("list", "str", "int", "float", "bool")
}
JSON_TYPES["NoneType"] = text("checkpoint.json_type.none", "NoneType")
ENTRY_NOT_OBJECT = Message("checkpoint.entry_not_object", "tensor {name!r}: entry must be an object")
ENTRY_DTYPE = Message("checkpoint.entry_dtype", "tensor {name!r}: missing or invalid 'dtype'")
ENTRY_SHAPE = Message("checkpoint.entry_shape", "tensor {name!r}: 'shape' must be a list of non-negative integers")
SHAPE_ABSURD = Message(
    "checkpoint.shape_absurd",
    "tensor {name!r}: shape {shape} is absurd (at most {dims} dimensions and {elements:,} elements)",
)
ENTRY_OFFSETS = Message("checkpoint.entry_offsets", "tensor {name!r}: 'data_offsets' must be [begin, end]")
OFFSETS_SPAN = Message(
    "checkpoint.offsets_span",
    "tensor {name!r}: {dtype} {shape} needs {need:,} bytes but its data_offsets span {span:,}",
)
TRUNCATED_TENSOR = Message(
    "checkpoint.truncated_tensor",
    "truncated: tensor {name!r} ends at data byte {end:,} but the file holds only {size:,} bytes of data "
    "(incomplete download?)",
)


class NeedMoreBytesError(CheckpointError):
    """The buffer ends inside the header; ``needed`` bytes from the start are required to go on."""

    def __init__(self, needed: int) -> None:
        super().__init__(HEADER_CONTINUES(needed=needed))
        self.needed = needed


# --------------------------------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------------------------------

#: safetensors dtype name -> bytes per element (the names the format spells, upper case)
SAFETENSORS_DTYPE_BYTES: dict[str, int] = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
}

#: bit width of the integer storage dtypes packed quantisers use
_INT_BITS = {"I32": 32, "U32": 32, "I16": 16, "U16": 16, "I8": 8, "U8": 8, "I64": 64}

#: a safetensors JSON header larger than this is refused (the format's own readers cap it at 100 MB)
MAX_SAFETENSORS_HEADER = 100 * 1024 * 1024
#: one tensor's bounds: the largest real tensors (embeddings, fused experts) have ~10^10 elements and 3-4 dims
MAX_TENSOR_ELEMENTS = 2**44
MAX_TENSOR_DIMS = 8

SafetensorsEntries = Mapping[str, tuple[str, tuple[int, ...]]]


def safetensors_bytes(dtype: str, shape: tuple[int, ...]) -> int:
    key = dtype.upper()
    size = SAFETENSORS_DTYPE_BYTES.get(key)
    if size is None:
        known = ", ".join(sorted(SAFETENSORS_DTYPE_BYTES))
        raise CheckpointError(UNKNOWN_DTYPE(dtype=dtype, known=known))
    return prod(shape) * size


def parse_safetensors_header(
    data: bytes, *, file_size: int | None = None, max_header: int = MAX_SAFETENSORS_HEADER
) -> tuple[dict[str, tuple[str, tuple[int, ...]]], dict[str, str]]:
    """The start of a safetensors file (8-byte little-endian length + JSON) -> ({name: (dtype, shape)}, metadata).

    Raises :class:`NeedMoreBytesError` when ``data`` stops inside the header, :class:`CheckpointError` for an
    oversized length, invalid JSON, or entries without dtype / shape / offsets; with ``file_size`` the data
    offsets are checked against the file (a truncated download is caught here).
    """
    if len(data) < 8:
        if file_size is not None and file_size < 8:
            raise CheckpointError(FILE_TOO_SHORT(size=file_size))
        raise NeedMoreBytesError(8)
    (n,) = struct.unpack_from("<Q", data, 0)
    if n > max_header:
        raise CheckpointError(HEADER_TOO_LONG(length=n, limit=max_header))
    if n < 2:
        raise CheckpointError(HEADER_TOO_SHORT(length=n))
    if file_size is not None and 8 + n > file_size:
        raise CheckpointError(TRUNCATED_HEADER(length=n, size=file_size))
    if len(data) < 8 + n:
        raise NeedMoreBytesError(8 + n)
    try:
        obj = jsonsafe.loads(bytes(data[8 : 8 + n]), source="header")
    except jsonsafe.JsonError as err:  # NaN, deep nesting, non-UTF-8...: named, one line
        raise CheckpointError(HEADER_NOT_JSON(problem=err.problem)) from err
    return safetensors_entries(obj, data_size=None if file_size is None else file_size - 8 - n)


def safetensors_entries(
    header: object, *, data_size: int | None = None
) -> tuple[dict[str, tuple[str, tuple[int, ...]]], dict[str, str]]:
    """A decoded safetensors JSON header -> ({name: (dtype, shape)}, metadata), validated."""
    if not isinstance(header, dict):
        name = type(header).__name__
        raise CheckpointError(HEADER_NOT_OBJECT(type=JSON_TYPES.get(name, name)))
    entries: dict[str, tuple[str, tuple[int, ...]]] = {}
    metadata: dict[str, str] = {}
    for name, info in header.items():
        if name == "__metadata__":
            if isinstance(info, dict):
                metadata = {str(k): str(v) for k, v in info.items()}
            continue
        if not isinstance(info, dict):
            raise CheckpointError(ENTRY_NOT_OBJECT(name=name))
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype, str):
            raise CheckpointError(ENTRY_DTYPE(name=name))
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        ):
            raise CheckpointError(ENTRY_SHAPE(name=name))
        dims = tuple(int(d) for d in shape)
        if len(dims) > MAX_TENSOR_DIMS or prod(dims) > MAX_TENSOR_ELEMENTS:
            raise CheckpointError(
                SHAPE_ABSURD(
                    name=name,
                    shape=list(dims)[: MAX_TENSOR_DIMS + 1],
                    dims=MAX_TENSOR_DIMS,
                    elements=MAX_TENSOR_ELEMENTS,
                )
            )
        nbytes = safetensors_bytes(dtype, dims)
        if offsets is not None:
            if (
                not isinstance(offsets, list)
                or len(offsets) != 2
                or not all(isinstance(o, int) and o >= 0 for o in offsets)
                or offsets[1] < offsets[0]
            ):
                raise CheckpointError(ENTRY_OFFSETS(name=name))
            if offsets[1] - offsets[0] != nbytes:
                raise CheckpointError(
                    OFFSETS_SPAN(name=name, dtype=dtype, shape=list(dims), need=nbytes, span=offsets[1] - offsets[0])
                )
            if data_size is not None and offsets[1] > data_size:
                raise CheckpointError(TRUNCATED_TENSOR(name=name, end=offsets[1], size=data_size))
        entries[str(name)] = (dtype.upper(), dims)
    return entries, metadata


# --------------------------------------------------------------------------------------------------
# tensor name -> role, part, layer
# --------------------------------------------------------------------------------------------------

_LAYER_RE = re.compile(r"(?:^|\.)(?:layers|layer|h|blk|blocks|block)\.(\d+)(?:\.|$)")
_MTP_LAYER_RE = re.compile(r"(?:^|\.)mtp\.layers\.(\d+)(?:\.|$)")
_VISION_MARKERS = (
    "vision_tower",
    "vision_model",
    "vision_encoder",
    "multi_modal_projector",
    "mm_projector",
    "audio_tower",
    "audio_model",
    "embed_vision",
    "image_newline",
)
#: suffixes of quantisation side tensors: stored, priced, but not parameters
_AUX_SUFFIXES = (
    ".qzeros",
    ".scales",
    ".g_idx",
    ".absmax",
    ".quant_map",
    ".nested_absmax",
    ".nested_quant_map",
    ".SCB",
    ".weight_format",
    ".weight_scale_inv",
    ".weight_scale",
    ".weight_scale_2",
    ".input_scale",
    ".weight_zero_point",
    ".weight_g_idx",
    ".weight_shape",
    ".weight_global_scale",
    ".input_global_scale",
    ".k_scale",
    ".v_scale",
    "_scales",
)
_ATTN_WORDS = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "qkv",
    "query_key_value",
    "c_attn",
    "self_attn",
    "attention",
    "attn",
    "wq",
    "wk",
    "wv",
    "wo",
)
_MLP_WORDS = (
    "gate_proj",
    "up_proj",
    "down_proj",
    "gate_up_proj",
    "mlp",
    "feed_forward",
    "ffn",
    "fc1",
    "fc2",
    "c_fc",
    "dense_h_to_4h",
    "dense_4h_to_h",
    "w1",
    "w2",
    "w3",
)


def is_quant_aux(name: str) -> bool:
    """A quantisation side tensor (scales, zeros, group indices, bitsandbytes state)."""
    return name.endswith(_AUX_SUFFIXES) or ".quant_state." in name


def _module(name: str) -> str:
    """The owning module's last path component ("model.layers.0.input_layernorm.weight" -> "input_layernorm")."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[-1] in ("weight", "bias", "qweight", "weight_packed"):
        return parts[-2]
    return parts[-1]


def _components(name: str) -> set[str]:
    out: set[str] = set()
    for comp in name.lower().split("."):
        out.add(comp)
        out.update(comp.split("_"))
    return out


def _part_and_layer(name: str, arch: Architecture) -> tuple[str, int | None]:
    low = name.lower()
    if (
        low.startswith(("visual.", "v.", "mm.", "mmproj."))
        or ".visual." in low
        or any(marker in low for marker in _VISION_MARKERS)
    ):
        return "vision", None
    m = _MTP_LAYER_RE.search(name)
    if m:
        return "mtp", arch.n_layers + int(m.group(1))
    if low.startswith("mtp.") or ".mtp." in low or ".nextn." in low:
        return "mtp", arch.n_layers
    m = _LAYER_RE.search(name)
    layer = int(m.group(1)) if m else None
    if layer is not None and layer >= arch.n_layers:
        return "mtp", layer
    if arch.tie_embeddings and (name == "lm_head.weight" or name.endswith(".lm_head.weight")):
        return "lm_head_copy", None
    return "text", layer


def _role(name: str, part: str) -> str:
    if is_quant_aux(name):
        return "quant_aux"
    mod = _module(name)
    low_mod = mod.lower()
    if "norm" in low_mod or low_mod.startswith("ln"):
        return "norm"
    if mod in ("dt_bias", "A_log") or low_mod in ("ssm_a", "ssm_dt", "ssm_d"):
        return "state_param"
    if name.endswith(".bias") or low_mod.endswith("_bias"):
        return "bias"
    if part == "vision":
        return "vision"
    comps = _components(name)
    if low_mod in ("embed_tokens", "token_embd", "wte", "wpe", "word_embeddings", "embed_in", "tok_embeddings"):
        return "embedding"
    if low_mod in ("lm_head", "embed_out", "head") or name in ("output.weight", "lm_head.weight"):
        return "lm_head"
    if low_mod in ("eh_proj", "fc") and part == "mtp":
        return "mtp_proj"
    if low_mod in ("router", "ffn_gate_inp", "shared_expert_gate") or (
        low_mod == "gate" and ("mlp" in comps or "block_sparse_moe" in name or "moe" in comps)
    ):
        return "router"
    if "shared_expert" in name or "shared_experts" in name or "shexp" in low_mod:
        return "shared_expert"
    if "experts" in comps or "exps" in comps:
        return "expert"
    if "conv1d" in low_mod or low_mod == "ssm_conv1d":
        return "conv"
    if "linear_attn" in comps or low_mod.startswith("ssm_"):
        return "linear_attn"
    if any(w in comps for w in _MLP_WORDS) or low_mod.startswith("ffn_"):
        return "mlp"
    if any(w in comps for w in _ATTN_WORDS):
        return "attn"
    return "attn"


def classify(name: str, arch: Architecture) -> tuple[str, str, int | None]:
    """(role, part, layer) of a stored tensor, from its name and the architecture's layer count / tying."""
    part, layer = _part_and_layer(name, arch)
    return _role(name, part), part, layer


def tensors_from_safetensors(entries: SafetensorsEntries, arch: Architecture) -> tuple[Tensor, ...]:
    """safetensors header entries ({name: (dtype, shape)}) -> stored tensors with exact bytes."""
    out = []
    for name, (dtype, shape) in entries.items():
        if name == "__metadata__":
            continue
        role, part, layer = classify(name, arch)
        dims = tuple(shape)
        out.append(
            Tensor(
                name=name,
                shape=dims,
                role=role,
                layer=layer,
                part=part,
                stored_bytes=safetensors_bytes(dtype, dims),
                stored_dtype=dtype.upper(),
            )
        )
    return tuple(out)


def _quant_bits(qc: Mapping[str, Any] | None) -> int | None:
    if not qc:
        return None
    for key in ("bits", "w_bit", "num_bits", "weight_bits"):
        v = qc.get(key)
        if isinstance(v, int) and v > 0:
            return v
    groups = qc.get("config_groups")
    if isinstance(groups, Mapping):
        for g in groups.values():
            w = g.get("weights") if isinstance(g, Mapping) else None
            if isinstance(w, Mapping) and isinstance(w.get("num_bits"), int):
                return int(w["num_bits"])
    return None


def stored_parameter_count(entries: SafetensorsEntries, quantization_config: Mapping[str, Any] | None = None) -> int:
    """Logical parameters a safetensors checkpoint stores.

    What is counted: every tensor's element count, except

    * quantisation side tensors (``qzeros``, ``scales``, ``g_idx``, bitsandbytes ``absmax`` / ``quant_map`` /
      ``quant_state.*``, int8 ``SCB``, fp8 ``weight_scale(_inv)`` / ``input_scale``, compressed-tensors
      ``weight_zero_point`` / ``weight_shape``, MXFP4 ``*_scales``): not parameters, counted 0;
    * packed weights, unpacked: GPTQ/AWQ ``qweight`` and compressed-tensors ``weight_packed`` hold
      ``storage bits / quantisation bits`` values per element (bits from ``quantization_config``, 4 if
      absent); MXFP4 ``*_blocks`` and 4-bit bitsandbytes / NVFP4 ``uint8`` weights (recognised by their
      ``absmax`` / ``quant_state`` / ``weight_scale_2`` companions or the config) hold 2 per byte.

    Tied embeddings stored twice are counted twice (this is what the checkpoint holds).
    """
    names = set(entries)
    qc = quantization_config or {}
    bits = _quant_bits(qc) or 4
    method = str(qc.get("quant_method", "")).lower()
    four_bit_u8 = (method == "bitsandbytes" and bool(qc.get("load_in_4bit"))) or (
        method == "modelopt" and "fp4" in json.dumps(qc).lower()
    )
    bnb_state = {n.split(".quant_state.")[0] for n in names if ".quant_state." in n}
    total = 0
    for name, (dtype, shape) in entries.items():
        if name == "__metadata__" or is_quant_aux(name):
            continue
        n = prod(shape)
        dt = dtype.upper()
        if name.endswith((".qweight", ".weight_packed")) and dt in _INT_BITS:
            n *= max(1, _INT_BITS[dt] // bits)
        elif name.endswith("_blocks") and dt == "U8":
            n *= 2
        elif dt == "U8" and name.endswith(".weight"):
            stem = name[: -len(".weight")]
            if four_bit_u8 or name in bnb_state or f"{name}.absmax" in names or f"{stem}.weight_scale_2" in names:
                n *= 2
        total += n
    return total


__all__ = [
    "SAFETENSORS_DTYPE_BYTES",
    "CheckpointError",
    "NeedMoreBytesError",
    "classify",
    "parse_safetensors_header",
    "safetensors_entries",
    "stored_parameter_count",
    "tensors_from_safetensors",
]
