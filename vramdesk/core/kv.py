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
from .kv_layers import KvOptions, KvRule, kv_layer
from .messages import Message, Text, join

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
    explain: Text


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


def state_bytes_per_sequence(arch: Architecture, engine: KvRule, compute_bytes: int) -> int:
    return sum(kv_layer(layer).state_bytes_per_sequence(engine, compute_bytes) for layer in arch.layers)


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
    chosen = arch.layers if layers is None else layers
    opts = KvOptions(block_size=block_size, batched_tokens=batched_tokens, n_ubatch=n_ubatch, swa_full=swa_full)
    bpe = kv_bits / 8.0
    kv = 0.0
    largest = 0.0
    all_layers = 0.0
    growing = 0.0
    kinds: dict[str, int] = {}
    for layer in chosen:
        spec = kv_layer(layer)
        el = spec.elements_per_token(engine)
        if not el:
            continue
        kept = spec.tokens_kept(engine, tokens, seqs, opts)
        b = el * bpe * kept * seqs
        kv += b
        largest = max(largest, b)
        all_layers += el * bpe
        if kept >= tokens:
            growing += el * bpe
        kinds[layer.attention.value] = kinds.get(layer.attention.value, 0) + 1
    state_seq = 0
    if any(layer.linear is not None for layer in chosen):
        sub = arch if layers is None else arch.model_copy(update={"layers": chosen})
        state_seq = state_bytes_per_sequence(sub, engine, compute_bytes)
    explain = _explain(arch, chosen, engine, tokens, seqs, kv_bits, state_seq)
    return KvPlan(
        kv_bytes=round(kv),
        state_bytes=state_seq * seqs,
        largest_layer_bytes=round(largest),
        bytes_per_token_all_layers=all_layers,
        bytes_per_token_growing=growing,
        state_bytes_per_sequence=state_seq,
        explain=explain,
    )


def _explain(
    arch: Architecture,
    layers: tuple[LayerSpec, ...],
    engine: KvRule,
    tokens: int,
    seqs: int,
    kv_bits: float,
    state_seq: int,
) -> Text:
    groups: dict[tuple[str, int, int, int | None], list[LayerSpec]] = {}
    for layer in layers:
        el = kv_layer(layer).elements_per_token(engine)
        if el:
            groups.setdefault((layer.attention.value, el, layer.n_kv_heads, layer.window), []).append(layer)
    parts: list[Text] = [kv_layer(members[0]).describe(len(members), engine) for members in groups.values()]
    parts = parts or [NO_ATTENTION()]
    parts += [BITS(bits=kv_bits), SEQUENCES(seqs=seqs, tokens=tokens, engine=engine.name)]
    if state_seq:
        nlin = sum(1 for x in layers if x.linear is not None)
        parts.append(LINEAR_STATE(layers=nlin, bytes=state_seq))
    return join("; ", *parts)
