"""GGUF headers -> the tensors a GGUF file stores, and its llama.cpp metadata -> an HF-style config.

Pure, like :mod:`vramdesk.core.checkpoint`: it parses the bytes it is given and never opens a file or a socket.

* :func:`parse_gguf_header` is a skipping GGUF reader: long arrays (the tokenizer's vocabulary and merges)
  are walked, not decoded, so a 150k-token vocabulary costs milliseconds; every count is bounded.
* :func:`tensors_from_gguf` turns the header's tensor infos into :class:`~vramdesk.core.inventory.Tensor` tuples
  with ``stored_bytes`` and ``stored_dtype`` set.
* :func:`gguf_to_config` maps llama.cpp metadata keys (``llama.block_count``, ...) to an HF-style config dict
  for :func:`vramdesk.core.architecture.normalize`.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from math import prod
from typing import Any

from .architecture import Architecture
from .checkpoint import MAX_TENSOR_ELEMENTS, CheckpointError, NeedMoreBytesError, classify
from .gguf import GGUF_TYPE_IDS, FormatError, gguf_tensor_bytes
from .inventory import Tensor
from .messages import Message, error_text

# --------------------------------------------------------------------------------------------------
# GGUF
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GgufArray:
    """A long array the reader walked without decoding: its element type and length."""

    type: int
    length: int


@dataclass(frozen=True, slots=True)
class GgufTensorInfo:
    name: str
    type_id: int
    #: dimensions as the file stores them (ggml order: the row length ``ne0`` first)
    ggml_shape: tuple[int, ...]
    offset: int

    @property
    def numel(self) -> int:
        return prod(self.ggml_shape)


@dataclass(frozen=True, slots=True)
class GgufHeader:
    version: int
    kv: dict[str, Any]
    tensors: tuple[GgufTensorInfo, ...]
    #: offset where the tensor-info records end
    header_end: int
    alignment: int

    @property
    def architecture(self) -> str:
        return str(self.kv.get("general.architecture", ""))

    @property
    def data_start(self) -> int:
        a = self.alignment
        return (self.header_end + a - 1) // a * a

    def entries(self) -> dict[str, tuple[int | str, tuple[int, ...]]]:
        """{name: (ggml type id, ggml shape)} for :func:`tensors_from_gguf`."""
        return {t.name: (t.type_id, t.ggml_shape) for t in self.tensors}

    def data_end(self) -> int:
        """The byte after the last tensor's data (to check a file or download for truncation)."""
        end = self.data_start
        for t in self.tensors:
            end = max(end, self.data_start + t.offset + gguf_entry_bytes(t.type_id, t.ggml_shape, t.name))
        return end


_GGUF_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_SCALAR_SIZE = {t: struct.calcsize(f) for t, f in _GGUF_SCALAR.items()}
_U64 = struct.Struct("<Q")
#: limits: real files have ~50 keys, up to a few thousand tensors, vocabularies below 1M
MAX_GGUF_KV = 65_536
MAX_GGUF_TENSORS = 1_000_000
MAX_GGUF_ARRAY = 64 * 1024 * 1024
MAX_GGUF_STRING = 64 * 1024 * 1024
MAX_GGUF_DIMS = 8

TRUNCATED = Message(
    "gguf.header.truncated", "truncated: the header continues past the end of the file (byte {end:,} of {total:,})"
)
STRING_ABSURD = Message("gguf.header.string_absurd", "{what}: string length {length:,} is absurd")
#: what the absurd string was (else the metadata key whose value it is)
WHAT_KEY = Message("gguf.header.what.key", "metadata key #{index}")
WHAT_TENSOR_NAME = Message("gguf.header.what.tensor_name", "tensor #{index} name")
NESTED_TOO_DEEP = Message("gguf.header.nested_arrays", "key {key!r}: arrays nested too deep")
ARRAY_ABSURD = Message("gguf.header.array_absurd", "key {key!r}: array length {length:,} is absurd")
UNKNOWN_ELEMENT_TYPE = Message("gguf.header.unknown_element_type", "key {key!r}: unknown array element type {type}")
UNKNOWN_VALUE_TYPE = Message("gguf.header.unknown_value_type", "key {key!r}: unknown value type {type}")
BAD_MAGIC = Message("gguf.header.bad_magic", "bad magic {magic!r}: not a GGUF file")
BAD_VERSION = Message("gguf.header.version", "GGUF version {version} is not supported (2 and 3 are)")
TOO_MANY_KEYS = Message("gguf.header.too_many_keys", "{keys:,} metadata keys is absurd (limit {limit:,})")
TOO_MANY_TENSORS = Message("gguf.header.too_many_tensors", "{tensors:,} tensors is absurd (limit {limit:,})")
CANNOT_FIT = Message(
    "gguf.header.cannot_fit",
    "{keys:,} keys and {tensors:,} tensors cannot fit in a {size:,}-byte file (corrupt header)",
)
DIMS_ABSURD = Message("gguf.header.dims_absurd", "tensor {name!r}: {dims} dimensions is absurd")
SHAPE_ABSURD = Message(
    "gguf.header.shape_absurd", "tensor {name!r}: shape {shape} is absurd (over {elements:,} elements)"
)
BAD_ALIGNMENT = Message("gguf.header.alignment", "general.alignment {alignment!r} is not a power of two")
UNKNOWN_TYPE_ID = Message("gguf.header.unknown_type_id", "tensor {name!r}: unknown ggml type id {type_id}")
TENSOR_ERROR = Message("gguf.header.tensor", "tensor {name!r}: {error}")
NO_ARCHITECTURE = Message("gguf.header.no_architecture", "no general.architecture key")
UNSUPPORTED_ARCHITECTURE = Message(
    "gguf.header.unsupported_architecture", "GGUF architecture {arch!r} is not supported yet (supported: {supported})"
)
KEY_NOT_POSITIVE = Message(
    "gguf.header.key_not_positive", "{arch}: metadata key '{key}' is missing or not a positive integer"
)
KEY_MISSING = Message("gguf.header.key_missing", "{arch}: metadata key '{key}' is missing")
NO_VOCABULARY = Message(
    "gguf.header.no_vocabulary", "{arch}: cannot tell the vocabulary size (no token_embd.weight, no tokenizer tokens)"
)


def _what(what: str | Message, index: int) -> str:
    """What a string is, for an error: a metadata key's name, or :data:`WHAT_KEY` / :data:`WHAT_TENSOR_NAME`."""
    return what(index=index) if isinstance(what, Message) else what


class _Reader:
    __slots__ = ("buf", "limit", "off", "total")

    def __init__(self, buf: bytes | bytearray | memoryview, total: int | None) -> None:
        self.buf = buf
        self.off = 0
        self.limit = len(buf)
        self.total = total

    def need(self, n: int) -> None:
        end = self.off + n
        if end > self.limit:
            if self.total is not None and end > self.total:
                raise CheckpointError(TRUNCATED(end=end, total=self.total))
            raise NeedMoreBytesError(end)

    def scalar(self, t: int) -> Any:
        size = _GGUF_SCALAR_SIZE[t]
        self.need(size)
        v = struct.unpack_from(_GGUF_SCALAR[t], self.buf, self.off)[0]
        self.off += size
        return v

    def u32(self) -> int:
        return int(self.scalar(4))

    def u64(self) -> int:
        return int(self.scalar(10))

    def string(self, what: str | Message, index: int = 0) -> str:
        n = self.u64()
        if n > MAX_GGUF_STRING:
            raise CheckpointError(STRING_ABSURD(what=_what(what, index), length=n))
        self.need(n)
        s = bytes(self.buf[self.off : self.off + n]).decode("utf-8", "replace")
        self.off += n
        return s

    def skip_string(self, what: str) -> None:
        n = self.u64()
        if n > MAX_GGUF_STRING:
            raise CheckpointError(STRING_ABSURD(what=what, length=n))
        self.need(n)
        self.off += n

    def skip_strings(self, n: int, what: str) -> None:
        """Walk ``n`` length-prefixed strings (the hot loop of a tokenizer vocabulary: kept tight)."""
        buf, limit, off = self.buf, self.limit, self.off
        unpack = _U64.unpack_from
        for _ in range(n):
            if off + 8 > limit:
                self.off = off
                self.need(8)
            (length,) = unpack(buf, off)
            if length > MAX_GGUF_STRING:
                raise CheckpointError(STRING_ABSURD(what=what, length=length))
            off += 8 + length
        if off > limit:
            need = off - self.off
            self.need(need)
        self.off = off

    def value(self, t: int, key: str, keep: int, depth: int = 0) -> Any:
        if t in _GGUF_SCALAR:
            return self.scalar(t)
        if t == 8:
            return self.string(key)
        if t == 9:
            if depth > 4:
                raise CheckpointError(NESTED_TOO_DEEP(key=key))
            et, n = self.u32(), self.u64()
            if n > MAX_GGUF_ARRAY or (self.total is not None and n > self.total):
                raise CheckpointError(ARRAY_ABSURD(key=key, length=n))
            if et not in _GGUF_SCALAR and et not in (8, 9):
                raise CheckpointError(UNKNOWN_ELEMENT_TYPE(key=key, type=et))
            if n <= keep:
                return [self.value(et, key, keep, depth + 1) for _ in range(n)]
            if et in _GGUF_SCALAR:
                size = _GGUF_SCALAR_SIZE[et] * n
                self.need(size)
                self.off += size
            elif et == 8:
                self.skip_strings(n, key)
            else:
                for _ in range(n):
                    self.value(et, key, 0, depth + 1)
            return GgufArray(et, n)
        raise CheckpointError(UNKNOWN_VALUE_TYPE(key=key, type=t))


def parse_gguf_header(
    buf: bytes | bytearray | memoryview, *, total_size: int | None = None, keep_array: int = 64
) -> GgufHeader:
    """Parse a GGUF header (v2/v3) from the start of a file, without touching tensor data.

    Arrays longer than ``keep_array`` come back as :class:`GgufArray` (type and length only). With
    ``total_size`` (the file's size) a header that runs past it is reported as truncated; without it a short
    ``buf`` raises :class:`NeedMoreBytesError` so a caller doing ranged reads can fetch more.
    """
    r = _Reader(buf, total_size)
    r.need(4)
    if bytes(buf[:4]) != b"GGUF":
        raise CheckpointError(BAD_MAGIC(magic=bytes(buf[:4])))
    r.off = 4
    version = r.u32()
    if version not in (2, 3):
        raise CheckpointError(BAD_VERSION(version=version))
    n_tensors, n_kv = r.u64(), r.u64()
    if n_kv > MAX_GGUF_KV:
        raise CheckpointError(TOO_MANY_KEYS(keys=n_kv, limit=MAX_GGUF_KV))
    if n_tensors > MAX_GGUF_TENSORS:
        raise CheckpointError(TOO_MANY_TENSORS(tensors=n_tensors, limit=MAX_GGUF_TENSORS))
    if total_size is not None and 24 + 12 * n_kv + 32 * n_tensors > total_size:
        raise CheckpointError(CANNOT_FIT(keys=n_kv, tensors=n_tensors, size=total_size))
    kv: dict[str, Any] = {}
    for i in range(n_kv):
        key = r.string(WHAT_KEY, i)
        kv[key] = r.value(r.u32(), key, keep_array)
    tensors = []
    for i in range(n_tensors):
        name = r.string(WHAT_TENSOR_NAME, i)
        n_dims = r.u32()
        if n_dims > MAX_GGUF_DIMS:
            raise CheckpointError(DIMS_ABSURD(name=name, dims=n_dims))
        dims = tuple(r.u64() for _ in range(n_dims))
        if prod(dims) > MAX_TENSOR_ELEMENTS:
            raise CheckpointError(SHAPE_ABSURD(name=name, shape=list(dims), elements=MAX_TENSOR_ELEMENTS))
        ttype = r.u32()
        offset = r.u64()
        tensors.append(GgufTensorInfo(name, ttype, dims, offset))
    align = kv.get("general.alignment", 32)
    if not isinstance(align, int) or align <= 0 or align & (align - 1):
        raise CheckpointError(BAD_ALIGNMENT(alignment=align))
    return GgufHeader(version=version, kv=kv, tensors=tuple(tensors), header_end=r.off, alignment=align)


def _gguf_type_name(type_id: int | str, name: str) -> str:
    if isinstance(type_id, str):
        return type_id.upper()
    t = GGUF_TYPE_IDS.get(type_id)
    if t is None:
        raise CheckpointError(UNKNOWN_TYPE_ID(name=name, type_id=type_id))
    return t


def gguf_entry_bytes(type_id: int | str, ggml_shape: tuple[int, ...], name: str = "?") -> int:
    t = _gguf_type_name(type_id, name)
    try:
        return gguf_tensor_bytes(t, prod(ggml_shape))
    except FormatError as err:
        raise CheckpointError(TENSOR_ERROR(name=name, error=error_text(err))) from err


def tensors_from_gguf(
    entries: Mapping[str, tuple[int | str, tuple[int, ...]]], arch: Architecture
) -> tuple[Tensor, ...]:
    """GGUF tensor infos ({name: (ggml type id or name, shape in ggml order)}) -> stored tensors.

    Shapes come back outermost first (PyTorch order: a (vocab, hidden) embedding, not ggml's (hidden, vocab)).
    """
    out = []
    for name, (type_id, shape) in entries.items():
        tname = _gguf_type_name(type_id, name)
        role, part, layer = classify(name, arch)
        out.append(
            Tensor(
                name=name,
                shape=tuple(reversed(shape)),
                role=role,
                layer=layer,
                part=part,
                stored_bytes=gguf_entry_bytes(tname, tuple(shape), name),
                stored_dtype=tname,
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------------------------------
# GGUF metadata -> HF-style config
# --------------------------------------------------------------------------------------------------

#: llama.cpp architecture -> HF model_type
GGUF_ARCHS: dict[str, str] = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen2moe": "qwen2_moe",
    "qwen3": "qwen3",
    "qwen3moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3_text",
    "olmo2": "olmo2",
    "granite": "granite",
    "smollm3": "smollm3",
}

#: general.file_type -> the dtype of unquantised tensors
_FILE_TYPE_DTYPE = {0: "float32", 1: "float16", 32: "bfloat16"}


def _scalar_or_max(v: Any) -> Any:
    if isinstance(v, list):
        nums = [x for x in v if isinstance(x, int | float)]
        return max(nums) if nums else None
    return v


def gguf_to_config(header: GgufHeader) -> dict[str, Any]:
    """llama.cpp metadata (``{arch}.block_count``, ``{arch}.embedding_length``, ...) -> a config.json-like dict.

    Raises :class:`CheckpointError` naming the architecture or the missing key.
    """
    arch = header.architecture
    if not arch:
        raise CheckpointError(NO_ARCHITECTURE())
    model_type = GGUF_ARCHS.get(arch)
    if model_type is None:
        raise CheckpointError(UNSUPPORTED_ARCHITECTURE(arch=arch, supported=", ".join(sorted(GGUF_ARCHS))))
    kv = header.kv

    def get(key: str, default: Any = None) -> Any:
        return _scalar_or_max(kv.get(f"{arch}.{key}", default))

    def need(key: str) -> int:
        v = get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise CheckpointError(KEY_NOT_POSITIVE(arch=arch, key=f"{arch}.{key}"))
        return v

    names = {t.name for t in header.tensors}
    hidden = need("embedding_length")
    n_heads = need("attention.head_count")
    embd = next((t for t in header.tensors if t.name == "token_embd.weight"), None)
    vocab = get("vocab_size")
    if not isinstance(vocab, int) or vocab <= 0:
        if embd is not None and len(embd.ggml_shape) == 2:
            vocab = embd.ggml_shape[1]
        else:
            tokens = kv.get("tokenizer.ggml.tokens")
            vocab = tokens.length if isinstance(tokens, GgufArray) else len(tokens) if isinstance(tokens, list) else 0
    if not vocab:
        raise CheckpointError(NO_VOCABULARY(arch=arch))
    cfg: dict[str, Any] = {
        "model_type": model_type,
        "architectures": [f"{arch} (from GGUF)"],
        "hidden_size": hidden,
        "num_hidden_layers": need("block_count"),
        "num_attention_heads": n_heads,
        "num_key_value_heads": get("attention.head_count_kv") or n_heads,
        "vocab_size": vocab,
        "tie_word_embeddings": "output.weight" not in names,
        "torch_dtype": _FILE_TYPE_DTYPE.get(kv.get("general.file_type", -1), "bfloat16"),
    }
    ff = get("feed_forward_length")
    if isinstance(ff, int) and ff > 0:
        cfg["intermediate_size"] = ff
    key_len = get("attention.key_length")
    if isinstance(key_len, int) and key_len > 0:
        cfg["head_dim"] = key_len
    for src, dst in (
        ("context_length", "max_position_embeddings"),
        ("rope.freq_base", "rope_theta"),
        ("attention.layer_norm_rms_epsilon", "rms_norm_eps"),
        ("attention.sliding_window", "sliding_window"),
        ("attn_logit_softcapping", "attn_logit_softcapping"),
        ("final_logit_softcapping", "final_logit_softcapping"),
    ):
        v = get(src)
        if v is not None and not isinstance(v, GgufArray):
            cfg[dst] = v
    experts = get("expert_count")
    if isinstance(experts, int) and experts > 0:
        cfg["num_experts"] = experts
        cfg["num_experts_per_tok"] = need("expert_used_count")
        eff = get("expert_feed_forward_length")
        cfg["moe_intermediate_size"] = eff if isinstance(eff, int) and eff > 0 else cfg.get("intermediate_size")
        shared = get("expert_shared_feed_forward_length")
        if isinstance(shared, int) and shared > 0:
            cfg["shared_expert_intermediate_size"] = shared
        cfg.setdefault("intermediate_size", cfg["moe_intermediate_size"])
    if "intermediate_size" not in cfg:
        raise CheckpointError(KEY_MISSING(arch=arch, key=f"{arch}.feed_forward_length"))
    cfg["attention_bias"] = "blk.0.attn_q.bias" in names or "blk.0.attn_qkv.bias" in names
    if model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        cfg["use_sliding_window"] = False
    if model_type == "gemma2":
        cfg["query_pre_attn_scalar"] = cfg.get("head_dim", hidden // n_heads)
    if model_type == "gemma3_text":
        # llama.cpp hard-codes Gemma 3's pattern: five sliding layers, then one global
        cfg["sliding_window_pattern"] = 6
        cfg["query_pre_attn_scalar"] = cfg.get("head_dim", hidden // n_heads)
    return cfg


__all__ = [
    "GgufArray",
    "GgufHeader",
    "GgufTensorInfo",
    "gguf_to_config",
    "parse_gguf_header",
    "tensors_from_gguf",
]
