"""config.json ``quantization_config`` -> the weight format it describes.

One reader per ``quant_method`` (gptq, awq, bitsandbytes, fp8, fbgemm_fp8, mxfp4, compressed-tensors,
modelopt), each checking its fields (``_cfg_*``) and building the format with the constructors of
:mod:`vramdesk.core.weight_format`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from .dtype_names import DTYPE_BYTES, FormatError, _base_dtype
from .messages import Message, Text, free, join, text
from .weight_format import (
    _LINEAR_ROLES,
    WeightFormat,
    _awq_format,
    _bnb4_format,
    _fbgemm_fp8_format,
    _finish,
    _fp8_format,
    _gptq_format,
    _group_text,
    _int8_format,
    _mxfp4_format,
    _nvfp4_format,
    parse_weight_format,
)

__all__ = ["format_from_quantization_config"]


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

# the errors: ``where`` names the quantization_config ("gptq quantization_config"), ``field`` the key in it
MISSING_FIELD = Message("quant.missing_field", "{where}: missing field '{field}'")
NOT_INTEGER = Message("quant.not_integer", "{where}: field '{field}' must be an integer, got {value!r}")
NOT_BOOL = Message("quant.not_bool", "{where}: field '{field}' must be true or false, got {value!r}")
NOT_STRING = Message("quant.not_string", "{where}: field '{field}' must be a string, got {value!r}")
NOT_MODULE_LIST = Message(
    "quant.not_module_list", "{where}: field '{field}' must be a list of module names, got {value!r}"
)
NOT_MODULE_NAME = Message("quant.not_module_name", "{where}: field '{field}' must hold module names, got {value!r}")
NOT_OBJECT = Message("quant.not_object", "{where}: field '{field}' must be an object, got {value!r}")
NOT_TWO_POSITIVE = Message(
    "quant.not_two_positive_integers", "{where}: field '{field}' must be two positive integers, got {value!r}"
)
#: the weights scheme of a compressed-tensors config group
WHERE_WEIGHTS = Message("quant.where.weights", "{where} weights")
GPTQ_FORMAT = Message(
    "quant.gptq.checkpoint_format", "{where}: unsupported checkpoint_format {format!r} (known: gptq, gptq_v2)"
)
AWQ_VERSION = Message(
    "quant.awq.version", "{where}: unsupported AWQ version {version!r} (known: gemm, gemv, gemv_fast, exllama, ipex)"
)
BNB_BOTH = Message("quant.bnb.both", "{where}: both 'load_in_8bit' and 'load_in_4bit' are true")
BNB_NEITHER = Message("quant.bnb.neither", "{where}: neither 'load_in_8bit' nor 'load_in_4bit' is true")
BNB_QUANT_TYPE = Message(
    "quant.bnb.quant_type", "{where}: field 'bnb_4bit_quant_type' must be nf4 or fp4, got {value!r}"
)
CT_GROUPS_EMPTY = Message("quant.ct.config_groups_empty", "{where}: field 'config_groups' is empty")
CT_MIXED = Message("quant.ct.mixed_schemes", "{where}: config_groups with different weight schemes are not supported")
CT_STRATEGY = Message(
    "quant.ct.strategy", "{where}: unsupported weights strategy {strategy!r} (known: tensor, channel, group, block)"
)
CT_GROUP_SIZE = Message(
    "quant.ct.group_size", "{where}: field 'group_size' must be a positive integer for strategy {strategy!r}"
)
CT_NVFP4_ONLY = Message(
    "quant.ct.nvfp4_only", "{where}: only NVFP4 (group 16, nvfp4-pack-quantized) is supported for 4-bit floats"
)
CT_FP8_FORMAT = Message("quant.ct.fp8_format", "{where}: unsupported format {format!r} for fp8 weights")
CT_WEIGHTS_TYPE = Message("quant.ct.weights_type", "{where}: unsupported weights type {type!r} with num_bits {bits}")
CT_FORMAT = Message(
    "quant.ct.format",
    "{where}: unsupported format {format!r} (known: pack-quantized, int-quantized, naive-quantized, "
    "float-quantized, nvfp4-pack-quantized)",
)
MODELOPT_ALGO = Message(
    "quant.modelopt.algo", "{where}: unsupported quant_algo {algo!r} (known: FP8, NVFP4, MIXED_PRECISION)"
)
MIXED_LAYERS = Message(
    "quant.modelopt.mixed.layers",
    "{where}: quant_algo MIXED_PRECISION needs 'quantized_layers', an object of module names -> {{\"quant_algo\": "
    '"FP8" | "NVFP4"}}',
)
MIXED_LABEL = Message(
    "quant.modelopt.mixed.label", "{base} with {layers} modules in {algos} (ModelOpt mixed precision)"
)
MIXED_LAYOUT = Message(
    "quant.modelopt.mixed.layout",
    "ModelOpt mixed precision: the modules 'quantized_layers' names ({layers}) stored as {algos}; the others as {base}",
)
CONFIG_NOT_OBJECT = Message("quant.config_not_object", "quantization_config must be an object, got {value!r}")
UNKNOWN_METHOD = Message("quant.unknown_method", "unsupported quantisation method {method!r} (known: {known})")

# the formats read here alone (compressed-tensors, ModelOpt FP8): their labels and layout sentences
#: what one scale covers (compressed-tensors ``strategy``), as the label and the layout sentence name it
SCALE_LAYOUT = {
    "tensor": text("quant.layout.tensor", "tensor"),
    "channel": text("quant.layout.channel", "channel"),
    "group": text("quant.layout.group", "group"),
    "block": text("quant.layout.block", "block"),
}
CT_FP8_LABEL = Message("quant.ct.fp8.label", "FP8 (compressed-tensors, {layout} scales)")
CT_FP8_LAYOUT = Message(
    "quant.ct.fp8.layout", "compressed-tensors fp8: e4m3 weight (1 B per element) + {base} weight_scale per {layout}"
)
CT_INT_LABEL = Message("quant.ct.int.label", "INT{bits} (compressed-tensors, {layout})")
CT_INT_LAYOUT = Message("quant.ct.int.layout", "compressed-tensors int{bits} ({storage}) + {base} scales per {layout}")
CT_INT_PACKED = text("quant.ct.int.packed", "packed in int32")
CT_INT_BYTES = text("quant.ct.int.bytes", "int8 per value")
CT_INT_ZERO_POINTS = text("quant.ct.int.zero_points", "zero points")
CT_INT_G_IDX = text("quant.ct.int.g_idx", "int32 g_idx")
MODELOPT_FP8_LABEL = text("quant.modelopt.fp8.label", "FP8 (ModelOpt), per-tensor scales")
MODELOPT_FP8_LAYOUT = text(
    "quant.modelopt.fp8.layout", "ModelOpt FP8: e4m3 weight (1 B per element) + fp32 weight_scale + fp32 input_scale"
)


def _field(qc: Mapping[str, object], keys: tuple[str, ...]) -> object:
    for k in keys:
        if k in qc and qc[k] is not None:
            return qc[k]
    return _MISSING


def _cfg_int(qc: Mapping[str, object], keys: tuple[str, ...], where: str, default: int | None = None) -> int:
    v = _field(qc, keys)
    if v is _MISSING:
        if default is None:
            raise FormatError(MISSING_FIELD(where=where, field=keys[0]))
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise FormatError(NOT_INTEGER(where=where, field=keys[0], value=v))
    return v


def _cfg_bool(qc: Mapping[str, object], keys: tuple[str, ...], where: str, default: bool) -> bool:
    v = _field(qc, keys)
    if v is _MISSING:
        return default
    if not isinstance(v, bool):
        raise FormatError(NOT_BOOL(where=where, field=keys[0], value=v))
    return v


def _cfg_str(qc: Mapping[str, object], keys: tuple[str, ...], where: str, default: str) -> str:
    v = _field(qc, keys)
    if v is _MISSING:
        return default
    if not isinstance(v, str):
        raise FormatError(NOT_STRING(where=where, field=keys[0], value=v))
    return v.strip().lower()


def _cfg_names(qc: Mapping[str, object], keys: tuple[str, ...], where: str) -> tuple[str, ...]:
    """A list of module names / patterns; nested lists (GPTQ modules_in_block_to_quantize) are flattened."""
    v = _field(qc, keys)
    if v is _MISSING:
        return ()
    if isinstance(v, str):
        return (v,)
    if not isinstance(v, list | tuple):
        raise FormatError(NOT_MODULE_LIST(where=where, field=keys[0], value=v))
    out: list[str] = []
    for item in v:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, list | tuple) and all(isinstance(x, str) for x in item):
            out.extend(str(x) for x in item)
        else:
            raise FormatError(NOT_MODULE_NAME(where=where, field=keys[0], value=item))
    return tuple(out)


def _cfg_map(v: object, where: str, key: str) -> Mapping[str, object]:
    if not isinstance(v, Mapping) or not all(isinstance(k, str) for k in v):
        raise FormatError(NOT_OBJECT(where=where, field=key, value=v))
    return v


def _from_gptq(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "gptq quantization_config"
    bits = _cfg_int(qc, ("bits",), where)
    group = _cfg_int(qc, ("group_size",), where)
    fmt_name = _cfg_str(qc, ("checkpoint_format", "format"), where, "gptq")
    if fmt_name not in ("gptq", "gptq_v2"):
        raise FormatError(GPTQ_FORMAT(where=where, format=fmt_name))
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
        raise FormatError(AWQ_VERSION(where=where, version=version))
    skip = _cfg_names(qc, ("modules_to_not_convert",), where)
    return _awq_format(base, bits, group, version=version, skip=skip)


def _from_bnb(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "bitsandbytes quantization_config"
    in8 = _cfg_bool(qc, ("load_in_8bit", "_load_in_8bit"), where, False)
    in4 = _cfg_bool(qc, ("load_in_4bit", "_load_in_4bit"), where, False)
    skip = _cfg_names(qc, ("llm_int8_skip_modules",), where)
    if in8 and in4:
        raise FormatError(BNB_BOTH(where=where))
    if in8:
        return _int8_format(base, skip)
    if not in4:
        raise FormatError(BNB_NEITHER(where=where))
    qtype = _cfg_str(qc, ("bnb_4bit_quant_type",), where, "fp4")  # BitsAndBytesConfig's default
    if qtype not in ("nf4", "fp4"):
        raise FormatError(BNB_QUANT_TYPE(where=where, value=qtype))
    double = _cfg_bool(qc, ("bnb_4bit_use_double_quant",), where, False)
    return _bnb4_format(base, qtype, double, skip)


def _from_fp8(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "fp8 quantization_config"
    if _cfg_str(qc, ("quant_algo",), where, "").lower() == "mixed_precision":
        # (NVIDIA's ModelOpt exports of FP8 models: the modules 'quantized_layers' names re-quantised, the rest as
        # the fp8 method stores it, 'ignore' kept unquantised)
        plain = {k: v for k, v in qc.items() if k not in ("quant_algo", "quantized_layers")}
        rest = _from_fp8(
            {**plain, "modules_to_not_convert": _cfg_names(qc, ("modules_to_not_convert", "ignore"), where)}, base
        )
        return _mixed(qc, where, base, rest)
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
        raise FormatError(NOT_TWO_POSITIVE(where=where, field="weight_block_size", value=raw))
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
        raise FormatError(MISSING_FIELD(where=where, field="config_groups"))
    groups = _cfg_map(groups_raw, where, "config_groups")
    if not groups:
        raise FormatError(CT_GROUPS_EMPTY(where=where))
    schemes: list[tuple[Mapping[str, object], Mapping[str, object]]] = []
    for gname, g in groups.items():
        gm = _cfg_map(g, where, f"config_groups.{gname}")
        w = _field(gm, ("weights",))
        if w is _MISSING:
            raise FormatError(MISSING_FIELD(where=where, field=f"config_groups.{gname}.weights"))
        schemes.append((_cfg_map(w, where, f"config_groups.{gname}.weights"), gm))
    first_w, first_g = schemes[0]
    in_weights = WHERE_WEIGHTS(where=where)
    key = _ct_scheme(first_w, in_weights)
    if any(_ct_scheme(w, in_weights) != key for w, _ in schemes[1:]):
        raise FormatError(CT_MIXED(where=where))
    bits = _cfg_int(first_w, ("num_bits",), in_weights)
    wtype = _cfg_str(first_w, ("type",), in_weights, "int")
    group = _cfg_int(first_w, ("group_size",), in_weights, 0)
    strategy = _cfg_str(first_w, ("strategy",), in_weights, "group" if group > 0 else "channel")
    symmetric = _cfg_bool(first_w, ("symmetric",), in_weights, True)
    actorder = _field(first_w, ("actorder",))
    has_gidx = actorder is True or (isinstance(actorder, str) and actorder.lower() == "group")
    skip = _cfg_names(qc, ("ignore",), where)
    fmt_name = _cfg_str(qc, ("format",), where, "")
    acts = _field(first_g, ("input_activations",))
    static_act = isinstance(acts, Mapping) and acts.get("dynamic") is False
    if strategy not in ("tensor", "channel", "group", "block", "tensor_group"):
        raise FormatError(CT_STRATEGY(where=where, strategy=strategy))
    if strategy in ("group", "tensor_group") and group <= 0:
        raise FormatError(CT_GROUP_SIZE(where=where, strategy=strategy))
    block: tuple[int, int] | None = None
    if strategy == "block":
        raw = _field(first_w, ("block_structure",))
        if (
            not isinstance(raw, list | tuple)
            or len(raw) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in raw)
        ):
            raise FormatError(NOT_TWO_POSITIVE(where=where, field="block_structure", value=raw))
        block = (int(raw[0]), int(raw[1]))
    if wtype == "float" and bits == 4:
        if group != 16 or fmt_name not in ("", "nvfp4-pack-quantized"):
            raise FormatError(CT_NVFP4_ONLY(where=where))
        extra = 4 + (4 if isinstance(acts, Mapping) else 0)  # weight_global_scale (+ input_global_scale)
        return _nvfp4_format(base, skip, extra, "compressed-tensors")
    layout = "group" if strategy in ("group", "tensor_group") else strategy
    act_bytes = int(DTYPE_BYTES[base]) if static_act else 0  # one input_scale per Linear
    if wtype == "float" and bits == 8:
        if fmt_name not in ("", "float-quantized", "naive-quantized"):
            raise FormatError(CT_FP8_FORMAT(where=where, format=fmt_name))
        name = "ct-fp8-" + (f"g{group}" if layout == "group" else layout)
        fmt = WeightFormat(
            name,
            CT_FP8_LABEL(layout=SCALE_LAYOUT[layout]),
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
        return _finish(fmt, CT_FP8_LAYOUT(base=base, layout=SCALE_LAYOUT["block" if block else layout]))
    if wtype != "int" or bits not in (2, 3, 4, 8):
        raise FormatError(CT_WEIGHTS_TYPE(where=where, type=wtype, bits=bits))
    if fmt_name in ("", "pack-quantized"):
        storage = "pack" if (fmt_name == "pack-quantized" or bits < 8) else "byte"
    elif fmt_name in ("int-quantized", "naive-quantized"):
        storage = "byte"
    else:
        raise FormatError(CT_FORMAT(where=where, format=fmt_name))
    name = f"ct-int{bits}-" + (f"g{group}" if layout == "group" else layout)
    fmt = WeightFormat(
        name,
        CT_INT_LABEL(bits=bits, layout=_group_text(group) if layout == "group" else SCALE_LAYOUT[layout]),
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
    sentence: Text = CT_INT_LAYOUT(
        bits=bits, storage=CT_INT_PACKED if storage == "pack" else CT_INT_BYTES, base=base, layout=SCALE_LAYOUT[layout]
    )
    extras = ([] if symmetric else [CT_INT_ZERO_POINTS]) + ([CT_INT_G_IDX] if has_gidx else [])
    return _finish(fmt, join(" + ", sentence, *extras) if extras else sentence)


def _modelopt_fp8(base: str, skip: tuple[str, ...]) -> WeightFormat:
    """ModelOpt FP8: fp8 weight + fp32 weight_scale + fp32 input_scale per Linear."""
    fmt = WeightFormat(
        "modelopt-fp8",
        MODELOPT_FP8_LABEL,
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
    return _finish(fmt, MODELOPT_FP8_LAYOUT)


def _mixed(qc: Mapping[str, object], where: str, base: str, rest: WeightFormat) -> WeightFormat:
    """ModelOpt MIXED_PRECISION: each module ``quantized_layers`` names in its own ``quant_algo`` (NVFP4 or FP8),
    every other tensor as ``rest`` says (unquantised for quant_method modelopt; the fp8 format of a quant_method
    fp8 config, such as NVIDIA's DeepSeek-V4 NVFP4 exports, whose experts alone are NVFP4)."""
    raw = _field(qc, ("quantized_layers",))
    if raw is _MISSING or not isinstance(raw, Mapping) or not raw:
        raise FormatError(MIXED_LAYERS(where=where))
    by_algo: dict[str, list[str]] = {}
    for module, spec in raw.items():
        if not isinstance(spec, Mapping):
            raise FormatError(MIXED_LAYERS(where=where))
        algo = _cfg_str(spec, ("quant_algo",), f"{where} quantized_layers.{module}", "").lower()
        if algo not in ("nvfp4", "fp8"):
            raise FormatError(MODELOPT_ALGO(where=f"{where} quantized_layers.{module}", algo=algo))
        by_algo.setdefault(algo, []).append(str(module))
    formats = {"nvfp4": _nvfp4_format(base, (), 8, "ModelOpt"), "fp8": _modelopt_fp8(base, ())}
    overrides = tuple((tuple(mods), formats[algo]) for algo, mods in sorted(by_algo.items()))
    algos = " / ".join(a.upper() for a in sorted(by_algo))
    layers = sum(len(m) for m in by_algo.values())
    label = MIXED_LABEL(base=free(rest.label), layers=layers, algos=algos)
    return replace(
        rest,
        name=f"modelopt-mixed-{rest.name}",
        label=label,
        overrides=overrides,
        explain=MIXED_LAYOUT(layers=layers, algos=algos, base=free(rest.explain)),
    )


def _from_modelopt(qc: Mapping[str, object], base: str) -> WeightFormat:
    where = "modelopt quantization_config"
    inner_raw = _field(qc, ("quantization",))
    inner = _cfg_map(inner_raw, where, "quantization") if inner_raw is not _MISSING else qc
    algo = _cfg_str(inner, ("quant_algo",), where, "")
    if not algo:
        raise FormatError(MISSING_FIELD(where=where, field="quant_algo"))
    skip = _cfg_names(inner, ("exclude_modules", "ignore"), where)
    if algo == "fp8":
        return _modelopt_fp8(base, skip)
    if algo == "mixed_precision":
        return _mixed(inner, where, base, parse_weight_format(base))
    if algo == "nvfp4":
        # ModelOpt NVFP4: packed e2m1 + fp8 weight_scale per 16 + fp32 weight_scale_2 + fp32 input_scale
        return _nvfp4_format(base, skip, 8, "ModelOpt")
    raise FormatError(MODELOPT_ALGO(where=where, algo=algo))


def format_from_quantization_config(qc: Mapping[str, object], *, base_dtype: str) -> WeightFormat:
    """The weight format a config.json ``quantization_config`` (or ``compression_config``) describes.

    A whole config.json is accepted too: its ``quantization_config``/``compression_config`` is used.
    Supported ``quant_method``: gptq, awq, bitsandbytes, fp8, fbgemm_fp8, mxfp4, compressed-tensors,
    modelopt. Others (hqq, eetq, torchao, ...) and missing or malformed fields raise
    :class:`FormatError` naming the method or field.
    """
    if not isinstance(qc, Mapping):
        raise FormatError(CONFIG_NOT_OBJECT(value=qc))
    if "quant_method" not in qc:
        for nested in ("quantization_config", "compression_config"):
            if isinstance(qc.get(nested), Mapping):
                return format_from_quantization_config(_cfg_map(qc[nested], "config", nested), base_dtype=base_dtype)
    base = _base_dtype(base_dtype)
    method_raw = qc.get("quant_method")
    if method_raw is None and "config_groups" in qc:
        method_raw = "compressed-tensors"
    if method_raw is None:
        raise FormatError(MISSING_FIELD(where="quantization_config", field="quant_method"))
    if not isinstance(method_raw, str):
        raise FormatError(NOT_STRING(where="quantization_config", field="quant_method", value=method_raw))
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
    raise FormatError(UNKNOWN_METHOD(method=method_raw, known=", ".join(_KNOWN_METHODS)))
