"""KV cache and recurrent state per layer kind, by each engine's rule.

Per layer and token, an attention layer stores ``n_kv_heads x (k_head_dim + v_head_dim)`` elements.
What differs between engines is *how many tokens* a layer keeps and *what* an MLA layer stores:

============  ===========================  ================================  ==================================
layer kind    transformers                 vLLM                              llama.cpp
============  ===========================  ================================  ==================================
full          every token                  every token, in 16-token pages    n_ctx cells (padded to 256)
sliding       min(T, window)               window - 1 + batched tokens       min(n_ctx, window x seqs + ubatch)
chunked       min(T, chunk)                chunk + batched tokens            as sliding (chunked SWA type)
MLA           expanded K and V per head    one latent (kv_lora + rope)       one latent (V is a view of K)
linear        conv window + state (fixed)  conv (kernel-1) + state           F32 conv (kernel-1) + F32 state
============  ===========================  ================================  ==================================

Each row is a class of :mod:`vramdesk.core.kv_layers` (``FullAttentionSpec``, ``SlidingWindowSpec``, ...); each
column is an engine of :mod:`vramdesk.core.engines`, whose :class:`~vramdesk.core.kv_layers.KvRule` methods
(``full_tokens``, ``sliding_tokens``, ``chunked_tokens``, ``expands_mla``, ``linear_state_bytes``) are the cells.
"""

from __future__ import annotations

from dataclasses import dataclass

from .architecture import Architecture, LayerSpec
from .kv_layers import FullAttentionWithStateSpec, KvLayerSpec, KvOptions, KvRule, LinearAttentionSpec, kv_layer
from .memo import derived
from .messages import Later, Message, Text, join, later

NO_ATTENTION = Message("kv.no_attention_layers", "no attention layers")
BITS = Message("kv.bits_per_element", "{bits:g} bits per element")
SEQUENCES = Message("kv.sequences", "{seqs} sequence(s) x {tokens} tokens ({engine} rule)")
LINEAR_STATE = Message(
    "kv.linear_state", "plus {layers} linear-attention layers' constant state: {bytes} B per sequence"
)


@dataclass(frozen=True, slots=True)
class KvPlan:
    #: K/V bytes of all sequences at the planned length
    kv_bytes: int
    #: constant per-sequence state (linear attention / SSM), all sequences
    state_bytes: int
    #: the largest single layer's K/V, all sequences (DynamicCache concatenation transient)
    largest_layer_bytes: int
    #: bytes per token if every attention layer kept every token (vLLM's "KV cache size in tokens" basis)
    bytes_per_token_all_layers: float
    #: bytes per token of the layers that grow with the context (what an extra token costs)
    bytes_per_token_growing: float
    state_bytes_per_sequence: int
    #: the plan in words, built when first read
    explain: Later


def tokens_kept(
    layer: LayerSpec,
    engine: KvRule,
    tokens: int,
    seqs: int,
    *,
    block_size: int = 16,
    batched_tokens: int = 8192,
    n_ubatch: int = 512,
    swa_full: bool = False,
) -> int:
    """Tokens of one sequence a layer holds (llama.cpp: cells for all sequences, divided back per sequence)."""
    opts = KvOptions(block_size=block_size, batched_tokens=batched_tokens, n_ubatch=n_ubatch, swa_full=swa_full)
    return kv_layer(layer).tokens_kept(engine, tokens, seqs, opts)


@dataclass(frozen=True, slots=True)
class _KvGroup:
    """Layers of one KV class (equal specs), in the order the first of them appears."""

    spec: KvLayerSpec
    count: int
    #: the layers' attention kind, heads and window: what the explanation groups by
    kind: str
    n_kv_heads: int
    window: int | None


@dataclass(frozen=True, slots=True, weakref_slot=True)
class _KvLayout:
    """Layers grouped by KV class (and the words that describe them, kept with the layout per engine)."""

    groups: tuple[_KvGroup, ...]


def _build_layout(layers: tuple[LayerSpec, ...]) -> _KvLayout:
    counts: dict[tuple[KvLayerSpec, str, int, int | None], int] = {}
    for layer in layers:
        key = (kv_layer(layer), layer.attention.value, layer.n_kv_heads, layer.window)
        counts[key] = counts.get(key, 0) + 1
    return _KvLayout(tuple(_KvGroup(spec, n, kind, heads, window) for (spec, kind, heads, window), n in counts.items()))


def _layout(arch: Architecture, layers: tuple[LayerSpec, ...] | None) -> _KvLayout:
    """``layers`` (all of ``arch``'s when None) grouped by KV class: a model has a few kinds of layer, so a plan
    costs a few multiplications, not one per layer. Kept per architecture and subset of its layers."""
    if layers is None or layers is arch.layers:
        return derived(arch, "kv_layout", lambda: _build_layout(arch.layers))
    own = arch.layers
    n = len(own)
    if all(0 <= x.index < n and own[x.index] is x for x in layers):
        chosen = layers
        return derived(arch, ("kv_layout", tuple(x.index for x in layers)), lambda: _build_layout(chosen))
    return _build_layout(layers)


def state_bytes_per_sequence(arch: Architecture, engine: KvRule, compute_bytes: int) -> int:
    return sum(g.count * g.spec.state_bytes_per_sequence(engine, compute_bytes) for g in _layout(arch, None).groups)


def plan_kv(
    arch: Architecture,
    engine: KvRule,
    *,
    tokens: int,
    seqs: int,
    kv_bits: float,
    compute_bytes: int,
    block_size: int = 16,
    batched_tokens: int = 8192,
    n_ubatch: int = 512,
    swa_full: bool = False,
    layers: tuple[LayerSpec, ...] | None = None,
) -> KvPlan:
    """K/V bytes for ``seqs`` sequences of ``tokens`` tokens each (``layers``: a subset, e.g. one GPU's)."""
    layout = _layout(arch, layers)
    opts = KvOptions(block_size=block_size, batched_tokens=batched_tokens, n_ubatch=n_ubatch, swa_full=swa_full)
    bpe = kv_bits / 8.0
    kv = 0.0
    largest = 0.0
    all_layers = 0.0
    growing = 0.0
    state_seq = 0
    for g in layout.groups:
        spec = g.spec
        state_seq += g.count * spec.state_bytes_per_sequence(engine, compute_bytes)
        el = spec.elements_per_token(engine)
        if not el:
            continue
        kept = spec.tokens_kept(engine, tokens, seqs, opts)
        b = el * bpe * kept * seqs
        kv += b * g.count
        largest = max(largest, b)
        all_layers += el * bpe * g.count
        if kept >= tokens:
            growing += el * bpe * g.count
    explain = later(_explain, layout, engine, tokens, seqs, kv_bits, state_seq)
    return KvPlan(
        kv_bytes=round(kv),
        state_bytes=state_seq * seqs,
        largest_layer_bytes=round(largest),
        bytes_per_token_all_layers=all_layers,
        bytes_per_token_growing=growing,
        state_bytes_per_sequence=state_seq,
        explain=explain,
    )


def _layer_words(groups: tuple[_KvGroup, ...], engine: KvRule) -> tuple[Text, ...]:
    """The layers' part of the explanation: one clause per kind of attention layer the engine stores."""
    merged: dict[tuple[str, int, int, int | None, str], list[_KvGroup]] = {}
    for g in groups:
        el = g.spec.elements_per_token(engine)
        if el:
            # layers whose one-layer clause differs stay apart (DeepSeek-V4's sliding, CSA and HCA layers)
            clause = str(g.spec.describe(1, engine))
            merged.setdefault((g.kind, el, g.n_kv_heads, g.window, clause), []).append(g)
    parts = [members[0].spec.describe(sum(m.count for m in members), engine) for members in merged.values()]
    return tuple(parts or [NO_ATTENTION()])


#: "16 bits per element" by bit width (a few KV dtypes: built once each)
_BITS_WORDS: dict[float, Text] = {}


def _explain(layout: _KvLayout, engine: KvRule, tokens: int, seqs: int, kv_bits: float, state_seq: int) -> Text:
    groups = layout.groups
    layer_words = derived(layout, ("words", engine.name), lambda: _layer_words(groups, engine))
    bits = _BITS_WORDS.get(kv_bits) or _BITS_WORDS.setdefault(kv_bits, BITS(bits=kv_bits))
    parts = [*layer_words, bits, SEQUENCES(seqs=seqs, tokens=tokens, engine=engine.name)]
    if state_seq:
        nlin = sum(g.count for g in groups if isinstance(g.spec, LinearAttentionSpec | FullAttentionWithStateSpec))
        parts.append(LINEAR_STATE(layers=nlin, bytes=state_seq))
    return join("; ", *parts)
