"""Checkpoint header entries -> a tensor inventory with roles, for a model type no family record describes.

Pure: it reads the names, shapes and dtypes a safetensors or GGUF header lists (the services read the headers) and
never opens a file. Roles come from name patterns over the conventions the families of :mod:`.families` use and
common others: Hugging Face module paths under ``model.layers.N`` / ``transformer.h.N`` / ``backbone.layers.N`` /
``gpt_neox.layers.N`` (``self_attn.q_proj``, ``attn.c_attn``, ``attention.query_key_value``, ``mlp.gate_proj``,
``feed_forward.w1``, ``mlp.experts.E.down_proj``, ``block_sparse_moe.gate``, ...) and llama.cpp's ``blk.N``
names (``attn_q``, ``ffn_gate_exps``, ``ffn_gate_inp``, ...). Per-expert matrices are stacked into one
(experts, out, in) tensor as :mod:`.inventory` records them. What no pattern places is kept (its bytes count) and
listed by name prefix.

:mod:`.config_readers.unknown` reads an :class:`~.architecture.Architecture` from this inventory and the config's
standard fields; :func:`inventory_tensors` turns it into the tensors the estimator prices.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from math import prod

from .architecture import Architecture
from .checkpoint import _VISION_MARKERS, is_quant_aux
from .inventory import Tensor

#: name -> (dtype, shape outermost first): a safetensors header's entries (GGUF shapes reversed to this order)
HeaderEntries = Mapping[str, tuple[str, tuple[int, ...]]]

#: a decoder layer: the first ``<container>.<index>.`` of a name (``model.layers.3.``, ``transformer.h.3.``,
#: ``blk.3.``); vision towers are recognised before this is tried
_LAYER = re.compile(r"^(?P<prefix>(?:[\w-]+\.)*?(?:layers|layer|h|blocks|block|blk|decoder_layers))\.(?P<i>\d+)\.")
_EXPERT_INDEX = re.compile(r"(?:^|\.)experts\.(\d+)\.")
#: multi-token-prediction layers stored apart from the decoder's (Qwen3-Next / Qwen3.5: ``mtp.layers.K``)
_MTP_LAYER = re.compile(r"^(?:[\w-]+\.)*?mtp\.layers\.(?P<i>\d+)\.")
_VISION_PREFIXES = ("visual.", "v.", "mm.", "mmproj.", "vision.")

#: fine roles -> the inventory's role (:data:`vramdesk.core.dtype_names.ROLES`)
COARSE: dict[str, str] = {
    "embedding": "embedding",
    "positions": "embedding",
    "lm_head": "lm_head",
    "norm": "norm",
    "final_norm": "norm",
    "q": "attn",
    "k": "attn",
    "v": "attn",
    "o": "attn",
    "qkv": "attn",
    "attn_other": "attn",
    "kv_a": "attn",
    "gate": "mlp",
    "up": "mlp",
    "down": "mlp",
    "gate_up": "mlp",
    "expert_gate": "expert",
    "expert_up": "expert",
    "expert_down": "expert",
    "expert_gate_up": "expert",
    "shared_gate": "shared_expert",
    "shared_up": "shared_expert",
    "shared_down": "shared_expert",
    "shared_gate_up": "shared_expert",
    "router": "router",
    "mtp_proj": "mtp_proj",
    "mixer": "linear_attn",
    "conv": "conv",
    "state": "state_param",
    "vision": "vision",
    # a tensor no pattern places: kept in the checkpoint's dtype by every weight format (never assumed quantisable)
    "other": "state_param",
}
ATTENTION_ROLES = frozenset({"q", "k", "v", "o", "qkv", "attn_other", "kv_a"})

_ATTN_CONTEXT = frozenset({"self_attn", "attn", "attention", "self_attention", "mha", "multi_head_attention"})
_MLP_CONTEXT = frozenset({"mlp", "feed_forward", "ffn", "ff", "moe", "block_sparse_moe", "dense_layer"})
_MIXER_CONTEXT = frozenset({"mixer", "mamba", "linear_attn", "ssm", "mamba2"})
#: module names by role inside an attention module, an MLP (or one expert) and at the top level
_ATTN_MODULES = {
    **dict.fromkeys(("q_proj", "wq", "query", "q", "attn_q"), "q"),
    **dict.fromkeys(("k_proj", "wk", "key", "k", "attn_k"), "k"),
    **dict.fromkeys(("v_proj", "wv", "value", "v", "attn_v"), "v"),
    **dict.fromkeys(("o_proj", "wo", "out_proj", "dense", "c_proj", "proj", "o", "attn_output", "out"), "o"),
    **dict.fromkeys(("qkv_proj", "query_key_value", "c_attn", "wqkv", "qkv", "w_pack", "attn_qkv"), "qkv"),
    **dict.fromkeys(("q_a_proj", "q_b_proj", "kv_b_proj", "attn_q_a", "attn_q_b", "attn_kv_b"), "attn_other"),
    # MLA's joint compression of K and V (DeepSeek-V2 / V3, Kimi K2)
    **dict.fromkeys(("kv_a_proj_with_mqa", "attn_kv_a_mqa"), "kv_a"),
}
_MLP_MODULES = {
    **dict.fromkeys(("gate_proj", "w1", "ffn_gate", "gate"), "gate"),
    **dict.fromkeys(("up_proj", "w3", "fc1", "c_fc", "dense_h_to_4h", "fc_in", "linear_fc1", "ffn_up"), "up"),
    **dict.fromkeys(("down_proj", "w2", "fc2", "c_proj", "dense_4h_to_h", "fc_out", "linear_fc2", "ffn_down"), "down"),
    **dict.fromkeys(("gate_up_proj", "ffn_gate_up", "w13"), "gate_up"),
}
#: llama.cpp's MoE names: ffn_<kind>_exps (routed experts), ffn_<kind>_shexp (the shared expert)
_GGUF_MOE = re.compile(r"^ffn_(gate|up|down|gate_up)_(exps|chexps|shexp)$")
_ROUTERS = frozenset(
    {"router", "ffn_gate_inp", "ffn_gate_inp_shexp", "shared_expert_gate", "e_score_correction", "exp_probs_b"}
)
#: projections a recurrent mixer's module does not have: an attention layer whose module is named "mixer"
_MIXER_ATTN = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "qkv_proj": "qkv"}
#: per-head constants of recurrent mixers and attention sinks: never quantised
_STATE = frozenset({"a_log", "d", "dt_bias", "ssm_a", "ssm_d", "ssm_dt", "sinks"})
_EMBEDDINGS = frozenset({"embed_tokens", "wte", "word_embeddings", "embed_in", "tok_embeddings", "token_embd"})
_POSITIONS = frozenset({"wpe", "embed_positions", "position_embeddings", "position_embd"})
_HEADS = frozenset({"lm_head", "embed_out", "output"})


@dataclass(frozen=True, slots=True)
class Placed:
    """One tensor of the inventory: its name (per-expert matrices stacked under the name without the expert
    index), shape, fine role (a key of :data:`COARSE`), decoder layer, whether it is a bias, and its dtype."""

    name: str
    shape: tuple[int, ...]
    role: str
    layer: int | None
    bias: bool = False
    vision: bool = False
    dtype: str = ""
    #: a multi-token-prediction layer stored under its own container (``mtp.layers.K``; ``layer`` = K)
    mtp: bool = False

    @property
    def numel(self) -> int:
        return prod(self.shape)


@dataclass(frozen=True)
class HeaderInventory:
    """What a checkpoint's tensor names say: the placed tensors, the decoder layers and what was not placed."""

    tensors: tuple[Placed, ...]
    #: decoder layers: one past the largest layer index among the names (0: none found)
    n_layers: int
    #: the layer container the names use ("model.layers", "transformer.h", "blk")
    layer_prefix: str
    #: quantisation side tensors (scales, zeros, indices): stored, not parameters
    aux: int = 0
    #: multi-token-prediction layers under their own container (``mtp.layers.K``)
    mtp_layers: int = 0
    #: tensors the header lists (per-expert matrices one by one, side tensors included)
    stored: int = 0

    def in_layer(self, layer: int) -> tuple[Placed, ...]:
        return tuple(t for t in self.tensors if t.layer == layer and not t.mtp)

    def roles(self, layer: int | None) -> frozenset[str]:
        return frozenset(t.role for t in self.tensors if t.layer == layer and not t.bias and not t.mtp)

    @property
    def attention_layers(self) -> tuple[int, ...]:
        """The decoder layers that hold attention projections."""
        return tuple(i for i in range(self.n_layers) if self.roles(i) & ATTENTION_ROLES)

    @property
    def unplaced(self) -> tuple[Placed, ...]:
        return tuple(t for t in self.tensors if t.role == "other")

    def unplaced_by_prefix(self) -> dict[str, int]:
        """Unplaced tensors counted by their name with the layer and expert indices as ``#`` and without ``.weight``
        ("model.layers.#.mixer.foo"), in first-seen order."""
        out: dict[str, int] = {}
        for t in self.unplaced:
            key = re.sub(r"\.\d+(?=\.|$)", ".#", t.name.removesuffix(".weight"))
            out[key] = out.get(key, 0) + 1
        return out

    def first(self, role: str, layer: int | None = None) -> Placed | None:
        return next((t for t in self.tensors if t.role == role and not t.bias and t.layer == layer and not t.mtp), None)

    @property
    def dtypes(self) -> dict[str, int]:
        """Parameters per stored dtype."""
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.dtype] = out.get(t.dtype, 0) + t.numel
        return out


def _is_vision(name: str) -> bool:
    low = name.lower()
    return low.startswith(_VISION_PREFIXES) or ".visual." in low or any(m in low for m in _VISION_MARKERS)


def _split(rest: str) -> tuple[list[str], str, bool]:
    """(context components, module, is a bias) of a name's part after its layer (or of a top-level name)."""
    parts = rest.split(".")
    bias = False
    if parts[-1] in ("weight", "bias") and len(parts) > 1:
        bias = parts.pop() == "bias"
    module = parts.pop()
    if module.endswith("_bias") and module.lower() != "dt_bias":
        module, bias = module.removesuffix("_bias"), True
    return [p.lower() for p in parts], module.lower(), bias


def _layer_role(context: list[str], module: str) -> str:
    """The fine role of a tensor inside a decoder layer."""
    ctx = set(context)
    if "norm" in module or module.startswith("ln") or module.endswith("layernorm"):
        return "norm"
    if module in _STATE:
        return "state"
    if module in _EMBEDDINGS:
        return "embedding"  # DeepSeek-V3's MTP layer carries its own embedding and head
    if module == "head" and "shared_head" in ctx:
        return "lm_head"
    if module == "eh_proj":
        return "mtp_proj"
    if "conv1d" in module:
        return "conv"
    gguf = _GGUF_MOE.match(module)
    if gguf:
        return ("shared_" if gguf.group(2) == "shexp" else "expert_") + gguf.group(1)
    if ctx & {"shared_expert", "shared_experts", "shared_mlp"}:
        return f"shared_{_MLP_MODULES[module]}" if module in _MLP_MODULES else "other"
    if "experts" in ctx:
        return f"expert_{_MLP_MODULES[module]}" if module in _MLP_MODULES else "other"
    if module in _ROUTERS or (module == "gate" and ctx & (_MLP_CONTEXT | _MIXER_CONTEXT)):
        return "router"
    if ctx & _MIXER_CONTEXT:
        # Nemotron-H's attention, MLP and Mamba layers all call their one module "mixer"
        return _MIXER_ATTN.get(module) or _MLP_MODULES.get(module) or "mixer"
    if module.startswith("ssm_"):
        return "mixer"
    if ctx & _ATTN_CONTEXT or module.startswith("attn_"):
        return _ATTN_MODULES.get(module, "other")
    if ctx & _MLP_CONTEXT or module.startswith("ffn_"):
        return _MLP_MODULES.get(module, "other")
    return _ATTN_MODULES.get(module) or _MLP_MODULES.get(module) or "other"


def _top_role(context: list[str], module: str) -> str:
    """The fine role of a tensor outside the decoder layers."""
    if module in _EMBEDDINGS or (module == "embeddings" and len(context) <= 1):
        return "embedding"
    if module in _POSITIONS:
        return "positions"
    if module in _HEADS and len(context) <= 1:
        return "lm_head"
    if "norm" in module or module in ("ln_f", "ln_out"):
        return "final_norm"
    return "other"


def read_inventory(entries: HeaderEntries) -> HeaderInventory:
    """Header entries ({name: (dtype, shape)}, shapes outermost first) -> the inventory with roles."""
    prefixes: dict[str, int] = {}
    for name in entries:
        m = _LAYER.match(name)
        if m and not _is_vision(name):
            prefixes[m.group("prefix")] = prefixes.get(m.group("prefix"), 0) + 1
    layer_prefix = max(prefixes, key=lambda p: prefixes[p]) if prefixes else ""
    stacks: dict[str, tuple[list[Placed], set[int]]] = {}
    placed: list[Placed] = []
    aux = 0
    n_layers = n_mtp = 0
    for name, (dtype, shape) in entries.items():
        if name == "__metadata__":
            continue
        if is_quant_aux(name):
            aux += 1
            continue
        if _is_vision(name):
            placed.append(Placed(name, tuple(shape), "vision", None, name.endswith(".bias"), True, dtype))
            continue
        m = _LAYER.match(name)
        mtp_match = _MTP_LAYER.match(name)
        mtp = mtp_match is not None
        if mtp_match:
            layer: int | None = int(mtp_match.group("i"))
            n_mtp = max(n_mtp, int(mtp_match.group("i")) + 1)
            context, module, bias = _split(name[mtp_match.end() :])
            role = _layer_role(context, module)
        elif m and m.group("prefix") == layer_prefix:
            layer = int(m.group("i"))
            n_layers = max(n_layers, int(m.group("i")) + 1)
            context, module, bias = _split(name[m.end() :])
            role = _layer_role(context, module)
        else:
            layer = None
            context, module, bias = _split(name)
            role = _top_role(context, module)
            if "mtp" in context:  # Qwen3-Next's mtp.fc and the MTP block's norms: the first MTP layer's
                layer, role, mtp = 0, "mtp_proj" if module == "fc" else _layer_role(context, module), True
                n_mtp = max(n_mtp, 1)
        if role in {"norm", "final_norm"}:
            bias = False  # a LayerNorm's bias is part of the norm (the inventory's "norm" role)
        expert = _EXPERT_INDEX.search(name)
        if expert and role.startswith("expert_"):
            stem = name[: expert.start()] + name[expert.start() :].replace(f"experts.{expert.group(1)}.", "experts.", 1)
            group = stacks.setdefault(stem, ([], set()))
            group[0].append(Placed(stem, tuple(shape), role, layer, bias, False, dtype, mtp))
            group[1].add(int(expert.group(1)))
            continue
        placed.append(Placed(name, tuple(shape), role, layer, bias, False, dtype, mtp))
    for stem, (parts, indices) in stacks.items():
        first = parts[0]
        stacked = (len(indices), *first.shape)
        placed.append(Placed(stem, stacked, first.role, first.layer, first.bias, False, first.dtype, first.mtp))
    stored = sum(1 for name in entries if name != "__metadata__")
    return HeaderInventory(tuple(placed), n_layers, layer_prefix, aux=aux, mtp_layers=n_mtp, stored=stored)


def inventory_tensors(inv: HeaderInventory, arch: Architecture) -> tuple[Tensor, ...]:
    """The inventory as the estimator's tensors: routed experts active at top_k / experts of their layer, layers
    past the architecture's decoder layers as MTP layers, vision tensors apart."""
    out = []
    for t in inv.tensors:
        role = "bias" if t.bias else COARSE[t.role]
        part = "vision" if t.vision else "text"
        active = 1.0
        layer = t.layer
        if t.mtp and layer is not None:
            part, layer = "mtp", arch.n_layers + layer
        elif layer is not None and layer >= arch.n_layers:
            part = "mtp"
        elif layer is not None and t.role.startswith("expert_"):
            moe = arch.layers[layer].moe
            if moe is not None:
                active = moe.top_k / moe.num_experts
        out.append(Tensor(t.name, t.shape, role, layer, part, active))
    return tuple(out)


__all__ = ["COARSE", "HeaderEntries", "HeaderInventory", "Placed", "inventory_tensors", "read_inventory"]
