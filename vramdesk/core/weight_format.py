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
* GGUF mixes: every 2-D+ weight including ``token_embd`` and ``output``; see
  :func:`vramdesk.core.gguf.gguf_mix_type`.
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
from dataclasses import dataclass, field, replace
from functools import lru_cache

from . import weight_format_text as T
from .dtype_names import _BASE_DTYPES, DTYPE_BYTES, ROLES, FormatError, _base_dtype, _known, normalize_dtype
from .gguf import _GGUF_MIX_ALIASES, _GGUF_MIXES, GGUF_TYPES, GgufModelInfo, _gguf_mix, gguf_mix_type, gguf_tensor_bytes
from .messages import Text, free

__all__ = [
    "WeightFormat",
    "known_weight_formats",
    "parse_weight_format",
]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# --------------------------------------------------------------------------------------------------
# Weight formats
# --------------------------------------------------------------------------------------------------

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
            raise FormatError(T.BAD_PATTERN(pattern=p, error=str(exc))) from None
    return _Matcher(frozenset(plain), tuple(compiled))


def _check_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise FormatError(T.BAD_SHAPE(shape=shape))
    return shape


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise FormatError(T.UNKNOWN_ROLE(role=role, known=_known(ROLES)))


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
    #: module-name patterns -> the format their tensors are stored in instead of this one (ModelOpt
    #: MIXED_PRECISION's ``quantized_layers``: NVFP4 experts beside FP8 or unquantised attention); the first entry
    #: whose patterns match a tensor's name prices it
    overrides: tuple[tuple[tuple[str, ...], WeightFormat], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise FormatError(T.UNKNOWN_KIND(kind=self.kind, known=_known(_KINDS)))
        if self.base_dtype not in _BASE_DTYPES:
            raise FormatError(T.BAD_BASE_DTYPE(dtype=self.base_dtype))
        bad = self.quantized_roles - ROLES
        if bad:
            raise FormatError(T.UNKNOWN_ROLES(roles=_known(bad), known=_known(ROLES)))
        if self.kind == "gguf" and self.layout not in _GGUF_MIXES:
            raise FormatError(T.UNKNOWN_GGUF_TYPE(layout=self.layout, known=_known(_GGUF_MIXES)))
        for p in (*self.skip_patterns, *self.include_patterns, *(q for ps, _ in self.overrides for q in ps)):
            if not isinstance(p, str):
                raise FormatError(T.PATTERN_NOT_STR(pattern=p))
            if p.startswith("re:"):
                try:
                    re.compile(p[3:])
                except re.error as exc:
                    raise FormatError(T.BAD_REGEX(pattern=p, error=str(exc))) from None

    # -- which tensors ------------------------------------------------------------------------------

    def is_skipped(self, tensor_name: str) -> bool:
        """True when a skip pattern (or a missing include pattern) keeps this tensor unquantised."""
        if self.skip_patterns and _matcher(self.skip_patterns)(tensor_name):
            return True
        return bool(self.include_patterns) and not _matcher(self.include_patterns)(tensor_name)

    def stored_as(self, tensor_name: str) -> WeightFormat:
        """The format this tensor is stored in: an override's whose patterns name it, else this one."""
        for patterns, sub in self.overrides:
            if _matcher(patterns)(tensor_name):
                return sub
        return self

    def is_quantized(self, tensor_name: str, role: str, *, shape: tuple[int, ...] | None = None) -> bool:
        """True when this format stores the tensor quantised (role rules, skip patterns, ndim)."""
        _check_role(role)
        if self.overrides and (sub := self.stored_as(tensor_name)) is not self:
            return sub.is_quantized(tensor_name, role, shape=shape)
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
        raise FormatError(T.UNKNOWN_SCALE_LAYOUT(name=self.name, layout=self.scale_layout))

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
                    raise FormatError(T.AWQ_GEMV_GROUP(layout=self.layout, group=g))
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
        raise FormatError(T.NO_QUANTISED_LAYOUT(name=self.name))

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
        if self.overrides and (sub := self.stored_as(tensor_name)) is not self:
            return sub.tensor_bytes(tensor_name, role, shape, layer, n_layers)
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
            raise FormatError(T.NOT_GGUF(name=self.name))
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


def _finish(fmt: WeightFormat, layout_text: str) -> WeightFormat:
    """Fill in ``explain`` with the layout sentence and the bits it works out to (at 4096 x 4096)."""
    if fmt.kind == "float" or (fmt.kind == "gguf" and _GGUF_MIXES[fmt.layout] in ("F32", "F16", "BF16")):
        return replace(fmt, explain=layout_text)
    rows, cols = 4096, 4096
    bits = fmt.bits_per_element((rows, cols))
    return replace(fmt, explain=T.WITH_BITS(layout=free(layout_text), bits=bits, rows=rows, cols=cols))


def _float_format(dtype: str) -> WeightFormat:
    nbytes = int(DTYPE_BYTES[dtype])
    label = T.LABEL_FLOAT(dtype=dtype.upper())
    return _finish(
        WeightFormat(dtype, label, "float", dtype, None, None, frozenset(), (), ""),
        T.FLOAT(dtype=dtype, bytes=nbytes, bits=nbytes * 8),
    )


def _fp8_format(
    base: str,
    *,
    block: tuple[int, int] | None,
    skip: tuple[str, ...] = (),
    static_act: bool = False,
) -> WeightFormat:
    extra = 4 if static_act else 0
    text: Text
    if block is None:
        fmt = WeightFormat(
            "fp8",
            T.LABEL_FP8(),
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
        text = T.FP8_TENSOR()
    else:
        bo, bi = block
        name = "fp8-block" if block == (128, 128) else f"fp8-block-{bo}x{bi}"
        fmt = WeightFormat(
            name,
            T.LABEL_FP8_BLOCK(rows=bo, cols=bi),
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
        text = T.FP8_BLOCK(rows=bo, cols=bi)
    return _finish(fmt, T.FP8_ACTIVATION_SCALE(layout=text) if static_act else text)


def _fbgemm_fp8_format(base: str, skip: tuple[str, ...]) -> WeightFormat:
    fmt = WeightFormat(
        "fp8-channel",
        T.LABEL_FP8_CHANNEL(),
        "fp8",
        base,
        8,
        None,
        _LINEAR_ROLES,
        skip,
        "",
        scale_layout="channel",
    )
    return _finish(fmt, T.FP8_CHANNEL())


def _int8_format(base: str, skip: tuple[str, ...] = ()) -> WeightFormat:
    fmt = WeightFormat("int8", T.LABEL_INT8(), "int8", base, 8, None, _BNB_ROLES, skip, "")
    return _finish(fmt, T.INT8())


def _bnb4_format(base: str, quant_type: str, double: bool, skip: tuple[str, ...] = ()) -> WeightFormat:
    name = quant_type + ("-dq" if double else "")
    label = (T.LABEL_BNB4_DQ if double else T.LABEL_BNB4)(quant_type=quant_type.upper())
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
    return _finish(fmt, (T.BNB4_DQ if double else T.BNB4)(quant_type=quant_type))


def _group_text(g: int) -> Text:
    """ "group 128", or "per-channel" for -1 (one group per row)."""
    return T.PER_CHANNEL() if g == -1 else T.GROUP(group=g)


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
        raise FormatError(T.GPTQ_BITS(bits=bits))
    if group == 0 or group < -1:
        raise FormatError(T.GPTQ_GROUP(group=group))
    name = f"gptq-int{bits}" + ("" if group == 128 else f"-g{group}")
    roles = _GPTQ_ROLES | {"lm_head"} if lm_head else _GPTQ_ROLES
    label = T.LABEL_GPTQ_CHANNEL(bits=bits) if group == -1 else T.LABEL_GPTQ(bits=bits, group=group)
    if desc_act:
        label = T.LABEL_ACT_ORDER(label=label)
    fmt = WeightFormat(name, label, "gptq", base, bits, group, roles, skip, "", include_patterns=include)
    # (per-channel: one group spans the in features)
    return _finish(fmt, T.GPTQ(bits=bits, group="in" if group == -1 else str(group)))


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
        raise FormatError(T.AWQ_BITS(bits=bits))
    if group <= 0:
        raise FormatError(T.AWQ_GROUP(group=group))
    canonical = "awq-int4" + ("" if group == 128 else f"-g{group}")
    if version != "gemm":
        canonical += f"-{version.replace('_', '-')}"
    fmt = WeightFormat(
        name or canonical,
        label
        or (
            T.LABEL_AWQ(group=group) if version == "gemm" else T.LABEL_AWQ_VERSION(group=group, version=version.upper())
        ),
        "awq",
        base,
        bits,
        group,
        _GPTQ_ROLES,
        skip,
        "",
        layout=version,
    )
    layout = T.AWQ_GEMM if version == "gemm" else T.AWQ_GEMV if version == "gemv" else T.AWQ_GEMV_FAST
    return _finish(fmt, layout(group=group))


def _generic_int4_format(base: str) -> WeightFormat:
    return _awq_format(base, 4, 128, name="int4", label=T.LABEL_INT4())


def _mxfp4_format(base: str, skip: tuple[str, ...] = ()) -> WeightFormat:
    fmt = WeightFormat("mxfp4", T.LABEL_MXFP4(), "mxfp4", base, 4, 32, _MXFP4_ROLES, skip, "")
    return _finish(fmt, T.MXFP4())


def _nvfp4_format(base: str, skip: tuple[str, ...], extra: int, origin: str) -> WeightFormat:
    label = T.LABEL_NVFP4(origin=origin)
    fmt = WeightFormat("nvfp4", label, "nvfp4", base, 4, 16, _LINEAR_ROLES, skip, "", extra_bytes=extra)
    return _finish(fmt, T.NVFP4(origin=origin, extra=extra))


def _gguf_format(mix: str) -> WeightFormat:
    m = _gguf_mix(mix)
    base = _GGUF_MIXES[m]
    name = f"gguf-{m}" if base in ("F32", "F16", "BF16") else m
    fmt = WeightFormat(name, T.LABEL_GGUF(mix=m.upper()), "gguf", "fp32", None, None, _GGUF_ROLES, (), "", layout=m)
    blk, nbytes = GGUF_TYPES[base]
    if base in ("F32", "F16", "BF16"):
        text = T.GGUF_FLOAT(base=base, bits=nbytes * 8)
    elif m == "mxfp4_moe":
        text = T.GGUF_MXFP4_MOE()
    else:
        output = "Q8_0" if base == "Q8_0" else "Q6_K"
        text = T.GGUF_MIX(mix=m.upper(), base=base, bytes=nbytes, block=blk, output=output)
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
        raise FormatError(T.NAME_NOT_STR(name=name))
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
            raise FormatError(T.FP8_BLOCK_SIZES(name=name))
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
            raise FormatError(T.UNKNOWN_GPTQ_BITS(name=name))
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
    raise FormatError(T.UNKNOWN_FORMAT(name=name, known=", ".join(known_weight_formats())))
