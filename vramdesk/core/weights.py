"""Weight bytes: the tensor inventory priced in a storage format, tensor by tensor.

Quantised formats only touch the tensors their method converts (see :mod:`vramdesk.core.weight_format`); the rest
stays at the base dtype. GGUF files are priced with llama-quantize's per-tensor type choice, so the names
are translated to GGUF names first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .inventory import Tensor
from .weight_format import WeightFormat

_GGUF_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), r)
    for p, r in (
        (
            r"^(?:model\.)?embed_tokens\.weight$|^transformer\.(?:wte|word_embeddings)\.weight$|^gpt_neox\.embed_in"
            r"\.weight$",
            "token_embd.weight",
        ),
        (r"^(?:lm_head|embed_out)\.weight$", "output.weight"),
        (r"layers?\.(\d+)\.self_attn\.q_proj\.weight$", r"blk.\1.attn_q.weight"),
        (r"layers?\.(\d+)\.self_attn\.k_proj\.weight$", r"blk.\1.attn_k.weight"),
        (r"layers?\.(\d+)\.self_attn\.v_proj\.weight$", r"blk.\1.attn_v.weight"),
        (r"layers?\.(\d+)\.self_attn\.(?:o_proj|dense)\.weight$", r"blk.\1.attn_output.weight"),
        (
            r"\.(\d+)\.(?:attn\.c_attn|attention\.query_key_value|self_attention\.query_key_value)\.weight$",
            r"blk.\1.attn_qkv.weight",
        ),
        (r"\.(\d+)\.(?:attn\.c_proj|attention\.dense|self_attention\.dense)\.weight$", r"blk.\1.attn_output.weight"),
        (r"\.(\d+)\.mlp\.(?:gate_proj)\.weight$", r"blk.\1.ffn_gate.weight"),
        (r"\.(\d+)\.mlp\.(?:up_proj|c_fc|dense_h_to_4h|fc1)\.weight$", r"blk.\1.ffn_up.weight"),
        (r"\.(\d+)\.mlp\.(?:down_proj|c_proj|dense_4h_to_h|fc2)\.weight$", r"blk.\1.ffn_down.weight"),
        (r"\.(\d+)\..*experts\.(?:gate_proj|w1)\.weight$", r"blk.\1.ffn_gate_exps.weight"),
        (r"\.(\d+)\..*experts\.(?:up_proj|w3)\.weight$", r"blk.\1.ffn_up_exps.weight"),
        (r"\.(\d+)\..*experts\.gate_up_proj$", r"blk.\1.ffn_gate_up_exps.weight"),
        (r"\.(\d+)\..*experts\.(?:down_proj|w2)(?:\.weight)?$", r"blk.\1.ffn_down_exps.weight"),
        (r"\.(\d+)\..*shared_experts?\.gate_proj\.weight$", r"blk.\1.ffn_gate_shexp.weight"),
        (r"\.(\d+)\..*shared_experts?\.up_proj\.weight$", r"blk.\1.ffn_up_shexp.weight"),
        (r"\.(\d+)\..*shared_experts?\.down_proj\.weight$", r"blk.\1.ffn_down_shexp.weight"),
        (
            r"\.(\d+)\.(?:mlp\.gate|mlp\.router|block_sparse_moe\.gate|feed_forward\.router)\.weight$",
            r"blk.\1.ffn_gate_inp.weight",
        ),
    )
)


def gguf_name(hf_name: str) -> str:
    for pattern, repl in _GGUF_NAMES:
        m = pattern.search(hf_name)
        if m:
            return m.expand(repl)
    return hf_name


_LAYER_INDEX = re.compile(r"\.\d+\.")
#: a skip / include pattern that names one layer ("model.layers.0.mlp") makes pricing layer-specific
_LAYER_COMPONENT = re.compile(r"(^|\.)\d+(\.|$)")


@dataclass(frozen=True, slots=True, weakref_slot=True)
class WeightBytes:
    total: int
    by_role: dict[str, int]
    params: int
    quantized_params: int
    #: the largest single stored tensor (load-time transients)
    largest_tensor: int
    #: the largest quantised matrix dequantised to 16-bit (kernels that dequantise a whole layer)
    largest_dequant: int
    #: bytes per decoder layer index (MTP layers included with their own index)
    per_layer: dict[int, int] = field(default_factory=dict)
    #: the largest single stored tensor of each decoder layer (what a backend copies whole to run it elsewhere)
    largest_in_layer: dict[int, int] = field(default_factory=dict)
    #: bytes of the routed-expert tensors of each MoE decoder layer, and the largest of them (llama.cpp's
    #: ``--n-cpu-moe`` keeps these in host memory)
    experts_per_layer: dict[int, int] = field(default_factory=dict)
    largest_expert_in_layer: dict[int, int] = field(default_factory=dict)
    #: bytes outside decoder layers: embedding, final norm, lm_head, vision
    embedding: int = 0
    head: int = 0
    other: int = 0

    @property
    def bits_per_param(self) -> float:
        return 8.0 * self.total / self.params if self.params else 0.0


class _Tally:
    """Sums priced tensors into a :class:`WeightBytes` (by role, by layer, embedding / head / rest)."""

    def __init__(self) -> None:
        self.total = self.params = self.quantized = self.largest = self.largest_dq = 0
        self.by_role: dict[str, int] = {}
        self.per_layer: dict[int, int] = {}
        self.largest_in_layer: dict[int, int] = {}
        self.experts: dict[int, int] = {}
        self.largest_expert: dict[int, int] = {}
        self.embedding = self.head = self.other = 0

    def add(self, t: Tensor, nbytes: int, quantized: bool) -> None:
        n = t.numel
        self.params += n
        if quantized:
            self.quantized += n
            self.largest_dq = max(self.largest_dq, 2 * (n // t.shape[0] if len(t.shape) == 3 else n))
        self.total += nbytes
        self.by_role[t.role] = self.by_role.get(t.role, 0) + nbytes
        self.largest = max(self.largest, nbytes)
        if t.layer is not None:
            self.per_layer[t.layer] = self.per_layer.get(t.layer, 0) + nbytes
            self.largest_in_layer[t.layer] = max(self.largest_in_layer.get(t.layer, 0), nbytes)
            if t.routed_expert:
                self.experts[t.layer] = self.experts.get(t.layer, 0) + nbytes
                self.largest_expert[t.layer] = max(self.largest_expert.get(t.layer, 0), nbytes)
        elif t.role == "embedding":
            self.embedding += nbytes
        elif t.role == "lm_head" or (t.role == "bias" and t.name.startswith(("lm_head", "embed_out"))):
            self.head += nbytes
        else:
            self.other += nbytes

    def result(self) -> WeightBytes:
        return WeightBytes(
            total=self.total,
            by_role=self.by_role,
            params=self.params,
            quantized_params=self.quantized,
            largest_tensor=self.largest,
            largest_dequant=self.largest_dq,
            per_layer=self.per_layer,
            largest_in_layer=self.largest_in_layer,
            experts_per_layer=self.experts,
            largest_expert_in_layer=self.largest_expert,
            embedding=self.embedding,
            head=self.head,
            other=self.other,
        )


def stored_weight_bytes(tensors: tuple[Tensor, ...], parts: frozenset[str]) -> WeightBytes:
    """Bytes exactly as a checkpoint stores them (tensors read from safetensors / GGUF headers carry
    ``stored_bytes``; any without it count 2 bytes per element)."""
    tally = _Tally()
    for t in tensors:
        if t.part not in parts:
            continue
        nbytes = t.stored_bytes if t.stored_bytes is not None else 2 * t.numel
        quantized = bool(t.stored_dtype) and str(t.stored_dtype).upper() not in ("BF16", "F16", "F32", "F64")
        tally.add(t, nbytes, quantized)
    return tally.result()


def weight_bytes(tensors: tuple[Tensor, ...], fmt: WeightFormat, parts: frozenset[str], n_layers: int) -> WeightBytes:
    tally = _Tally()
    gguf = fmt.kind == "gguf"
    # Outside GGUF a tensor's bytes depend on its layer index only through skip patterns that name a layer;
    # when none does, identical tensors of different layers are priced once (cold estimates 1.1 -> 0.7 ms)
    patterns = (
        *fmt.skip_patterns,
        *getattr(fmt, "include_patterns", ()),
        *(p for ps, _ in getattr(fmt, "overrides", ()) for p in ps),
    )
    memo: dict[tuple[str, str, tuple[int, ...]], tuple[int, bool]] | None = (
        None if gguf or any(_LAYER_COMPONENT.search(p) for p in patterns) else {}
    )
    for t in tensors:
        if t.part not in parts:
            continue
        name = gguf_name(t.name) if gguf else t.name
        key = (_LAYER_INDEX.sub(".#.", name), t.role, t.shape) if memo is not None else None
        hit = memo.get(key) if memo is not None and key is not None else None
        if hit is not None:
            nbytes, q = hit
        elif not gguf and len(t.shape) == 3 and t.name.endswith(".weight"):
            # one nn.Linear per expert in the checkpoint (Mixtral, Qwen-MoE, DeepSeek): quantised matrix by matrix,
            # bitsandbytes included; GGUF files and gpt-oss / Llama 4 keep experts stacked in one tensor
            shape2 = t.shape[1:]
            nbytes = t.shape[0] * fmt.tensor_bytes(name, t.role, shape2, t.layer, n_layers)
            q = fmt.is_quantized(name, t.role, shape=shape2)
        else:
            nbytes = fmt.tensor_bytes(name, t.role, t.shape, t.layer, n_layers)
            q = fmt.is_quantized(name, t.role, shape=t.shape)
        if memo is not None and key is not None and hit is None:
            memo[key] = (nbytes, q)
        tally.add(t, nbytes, q)
    return tally.result()
