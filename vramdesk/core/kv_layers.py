"""One small frozen class per KV layer kind, after vLLM's ``vllm/v1/kv_cache_interface.py`` (``FullAttentionSpec``,
``SlidingWindowSpec``, ``ChunkedLocalAttentionSpec``, ``MLAAttentionSpec``, ``MambaSpec``).

Each class answers two questions for its kind: the elements one token stores, and the tokens one sequence keeps
under an engine. The engine's part of the answer (the columns of the table in :mod:`vramdesk.core.kv`) is a
:class:`KvRule`, which every engine of :mod:`vramdesk.core.engines` implements: a layer kind asks the rule the
question for its kind, so neither the kind nor the engine is compared by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Protocol

from .architecture import AttentionKind, LayerSpec, MlaSpec, RecurrentState
from .messages import Message, Text, join

#: ``n`` attention layers of one kind in the KV explanation: "36 full layers x 8 kv heads x (k 128 + v 128)"
_LAYERS = {
    kind: Message(f"kv.layers.{kind}", f"{{n}} {kind} layers x {{kv_heads}} kv heads x (k {{k}} + v {{v}})")
    for kind in ("full", "sliding", "chunked", "mla")
}
WINDOW = Message("kv.layers.window", "window {window}")
MLA_EXPANDED = Message(
    "kv.layers.mla.expanded",
    "{n} MLA layers x {heads} heads x (k {nope}+{rope} + v {v}) (transformers stores the expanded K and V)",
)
MLA_LATENT = Message("kv.layers.mla.latent", "{n} MLA layers x latent (kv_lora_rank {rank} + qk_rope_head_dim {rope})")
MLA_INDEXER = Message("kv.layers.mla.indexer", "+ sparse-attention indexer key {dim}")
COMPRESSED = Message(
    "kv.layers.compressed",
    "{n} compressed layers x 1 shared K=V head x {dim}, window {window} + 1 entry per {rate} tokens",
)


def pad(n: int, to: int) -> int:
    """``n`` rounded up to a multiple of ``to`` (pages, cells)."""
    return ceil(n / to) * to


@dataclass(frozen=True, slots=True)
class KvOptions:
    """The engine settings the KV rules read: vLLM's page size (``block_size``) and ``max_num_batched_tokens``,
    llama.cpp's ``n_ubatch`` and ``--swa-full``."""

    block_size: int = 16
    batched_tokens: int = 8192
    n_ubatch: int = 512
    swa_full: bool = False


class KvRule(Protocol):
    """An engine's answers to the KV questions, one per layer kind."""

    @property
    def name(self) -> str:
        """The engine's name, as the scenario spells it."""
        ...

    @property
    def expands_mla(self) -> bool:
        """MLA layers: whether the cache holds the expanded K and V of every head (else one latent per token)."""
        ...

    def full_tokens(self, tokens: int, seqs: int, opts: KvOptions) -> int:
        """Tokens of one sequence a full-attention layer keeps."""
        ...

    def sliding_tokens(self, window: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        """Tokens of one sequence a sliding-window layer keeps."""
        ...

    def chunked_tokens(self, chunk: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        """Tokens of one sequence a chunked-local-attention layer keeps."""
        ...

    def linear_state_bytes(self, linear: RecurrentState, compute_bytes: int) -> int:
        """Bytes of one sequence's constant state (conv window + recurrent state) of a linear-attention layer."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class KvLayerSpec:
    """A layer that stores nothing per token and no state (no attention)."""

    def elements_per_token(self, rule: KvRule) -> int:
        return 0

    def tokens_kept(self, rule: KvRule, tokens: int, seqs: int, opts: KvOptions) -> int:
        return 0

    def state_bytes_per_sequence(self, rule: KvRule, compute_bytes: int) -> int:
        return 0

    def describe(self, n: int, rule: KvRule) -> Text:
        """``n`` layers of this kind, in the words of the KV explanation."""
        return join("")


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionSpec(KvLayerSpec):
    """K and V of every KV head: ``n_kv_heads x (k_head_dim + v_head_dim)`` elements per token."""

    #: the layer kind's name in the explanation ("full", "sliding", ...)
    kind: str
    n_kv_heads: int
    head_dim: int
    v_head_dim: int
    #: sliding window or attention chunk size (tokens)
    window: int | None = None

    def elements_per_token(self, rule: KvRule) -> int:
        return self.n_kv_heads * (self.head_dim + self.v_head_dim)

    def describe(self, n: int, rule: KvRule) -> Text:
        what = _LAYERS[self.kind](n=n, kv_heads=self.n_kv_heads, k=self.head_dim, v=self.v_head_dim)
        if self.window:
            return join(", ", what, WINDOW(window=self.window))
        return what


@dataclass(frozen=True, slots=True, kw_only=True)
class FullAttentionSpec(AttentionSpec):
    """Every token of the context."""

    def tokens_kept(self, rule: KvRule, tokens: int, seqs: int, opts: KvOptions) -> int:
        return rule.full_tokens(tokens, seqs, opts)


@dataclass(frozen=True, slots=True, kw_only=True)
class SlidingWindowSpec(AttentionSpec):
    """The last ``window`` tokens (and what the engine keeps beyond them)."""

    def tokens_kept(self, rule: KvRule, tokens: int, seqs: int, opts: KvOptions) -> int:
        return rule.sliding_tokens(self.window or tokens, tokens, seqs, opts)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkedLocalAttentionSpec(AttentionSpec):
    """The tokens of the current ``window``-token chunk (Llama 4's chunked attention)."""

    def tokens_kept(self, rule: KvRule, tokens: int, seqs: int, opts: KvOptions) -> int:
        return rule.chunked_tokens(self.window or tokens, tokens, seqs, opts)


@dataclass(frozen=True, slots=True, kw_only=True)
class MLAAttentionSpec(AttentionSpec):
    """Multi-head latent attention: one latent per token, or the expanded K and V where the engine stores those."""

    n_heads: int
    mla: MlaSpec
    #: DeepSeek Sparse Attention's indexer key per token (index_head_dim; 0: no indexer): transformers caches it
    #: beside the layer's K and V (``update_indexer``), vLLM in a cache of its own (``DeepseekV32IndexerCache``,
    #: FP8 keys with a scale per 128, which this counts at the KV dtype)
    indexer_key: int = 0

    def elements_per_token(self, rule: KvRule) -> int:
        m = self.mla
        if rule.expands_mla and not m.latent_cache:
            return self.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) + self.indexer_key
        return m.kv_lora_rank + m.qk_rope_head_dim + self.indexer_key

    def tokens_kept(self, rule: KvRule, tokens: int, seqs: int, opts: KvOptions) -> int:
        return rule.full_tokens(tokens, seqs, opts)

    def describe(self, n: int, rule: KvRule) -> Text:
        m = self.mla
        if rule.expands_mla and not m.latent_cache:
            what = MLA_EXPANDED(
                n=n, heads=self.n_heads, nope=m.qk_nope_head_dim, rope=m.qk_rope_head_dim, v=m.v_head_dim
            )
        else:
            what = MLA_LATENT(n=n, rank=m.kv_lora_rank, rope=m.qk_rope_head_dim)
        return join(" ", what, MLA_INDEXER(dim=self.indexer_key)) if self.indexer_key else what


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexedAttentionSpec(FullAttentionSpec):
    """A full-attention layer with a sparse-attention indexer beside it (MiniMax-M3's sparse layers): its K and V
    and one index key of ``indexer_key`` per token. transformers' MiniMaxM3VLSparseCacheLayer concatenates the
    keys (``idx_keys``) beside the layer's K and V; vLLM's MiniMaxM3IndexerCache keeps them in a side cache of
    their own (one head of index_head_dim per token, BF16 by default), which this counts at the KV dtype."""

    indexer_key: int

    def elements_per_token(self, rule: KvRule) -> int:
        return self.n_kv_heads * (self.head_dim + self.v_head_dim) + self.indexer_key

    def describe(self, n: int, rule: KvRule) -> Text:
        return join(" ", AttentionSpec.describe(self, n, rule), MLA_INDEXER(dim=self.indexer_key))


@dataclass(frozen=True, slots=True, kw_only=True)
class LinearAttentionSpec(KvLayerSpec):
    """Linear attention or a Mamba-2 mixer (Gated DeltaNet, Mamba-2; vLLM's ``MambaSpec``): no per-token KV, a
    constant state per sequence."""

    linear: RecurrentState

    def state_bytes_per_sequence(self, rule: KvRule, compute_bytes: int) -> int:
        return rule.linear_state_bytes(self.linear, compute_bytes)


@dataclass(frozen=True, slots=True, kw_only=True)
class FullAttentionWithStateSpec(FullAttentionSpec):
    """Full attention and a recurrent mixer in one layer (Falcon-H1's parallel attention and Mamba-2; a Zamba
    hybrid layer's shared attention block before its Mamba mixer): every token's K and V, and the mixer's constant
    state per sequence, as :class:`LinearAttentionSpec` counts it."""

    state: RecurrentState

    def state_bytes_per_sequence(self, rule: KvRule, compute_bytes: int) -> int:
        return rule.linear_state_bytes(self.state, compute_bytes)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompressedAttentionSpec(SlidingWindowSpec):
    """DeepSeek-V4's compressed layers: the sliding window of one shared K = V head (``head_dim`` per token) and
    one pooled entry of the same width per ``compress_rate`` tokens of the whole context, plus on CSA layers the
    indexer's pooled key (``indexer_key``) per entry. transformers' DeepseekV4HCACache / DeepseekV4CSACache keep
    the window (``sliding_window - 1`` tokens) and grow ``compressed_kv`` by concatenation (its buffers of fewer
    than ``compress_rate`` tokens waiting for a window are counted as one more entry); vLLM gives the window a cache
    of its own (DeepseekV4SWACache) and the pooled entries an ``MLAAttentionSpec`` with ``compress_ratio`` and the
    indexer a DeepseekV4IndexerCache (both FP8 in its fp8_ds_mla format, counted here at the KV dtype). The pooled
    entries are returned as extra window tokens: ``tokens_kept`` x ``head_dim`` is the layer's cache."""

    compress_rate: int
    indexer_key: int = 0

    def tokens_kept(self, rule: KvRule, tokens: int, seqs: int, opts: KvOptions) -> int:
        window = rule.sliding_tokens(self.window or tokens, tokens, seqs, opts)
        entries = ceil(rule.full_tokens(tokens, seqs, opts) / self.compress_rate)
        return window + ceil(entries * (self.head_dim + self.indexer_key) / self.head_dim)

    def describe(self, n: int, rule: KvRule) -> Text:
        what = COMPRESSED(n=n, dim=self.head_dim, window=self.window, rate=self.compress_rate)
        return join(" ", what, MLA_INDEXER(dim=self.indexer_key)) if self.indexer_key else what


_ATTENTION_SPECS: dict[AttentionKind, type[AttentionSpec]] = {
    AttentionKind.FULL: FullAttentionSpec,
    AttentionKind.SLIDING: SlidingWindowSpec,
    AttentionKind.CHUNKED: ChunkedLocalAttentionSpec,
    # an MLA layer without its MLA geometry stores K and V per KV head, every token
    AttentionKind.MLA: FullAttentionSpec,
}


def kv_layer(layer: LayerSpec) -> KvLayerSpec:
    """The KV class of one decoder layer (the architecture sets ``linear``, ``mamba``, ``mamba1`` or ``state`` on
    linear-attention layers, and a Mamba mixer on the full-attention layers that run one beside
    attention)."""
    kind = layer.attention
    mixers = (layer.linear, layer.mamba, layer.mamba1, layer.state)
    state = next((s for s in mixers if s is not None), None)
    if layer.kv_shared:
        # Gemma 3n / 4 layers reading an earlier layer's K and V: transformers gives them a "dummy" cache layer
        # (cache_utils: kv_sharing_modes "reuse"), vLLM a kv_sharing_target_layer_name, llama.cpp no KV past
        # n_layer_kv_from_start
        return KvLayerSpec()
    if layer.compressed is not None and layer.compressed.compress_rate:
        return CompressedAttentionSpec(
            kind=kind.value,
            n_kv_heads=layer.n_kv_heads,
            head_dim=layer.head_dim,
            v_head_dim=layer.v_head_dim,
            window=layer.window,
            compress_rate=layer.compressed.compress_rate,
            indexer_key=layer.indexer.head_dim if layer.indexer is not None else 0,
        )
    if kind in (AttentionKind.LINEAR, AttentionKind.NONE):
        return LinearAttentionSpec(linear=state) if state is not None else KvLayerSpec()
    if kind == AttentionKind.FULL and state is not None:
        return FullAttentionWithStateSpec(
            kind=kind.value,
            n_kv_heads=layer.n_kv_heads,
            head_dim=layer.head_dim,
            v_head_dim=layer.v_head_dim,
            state=state,
        )
    if kind == AttentionKind.MLA and layer.mla is not None:
        return MLAAttentionSpec(
            kind=kind.value,
            n_kv_heads=layer.n_kv_heads,
            head_dim=layer.head_dim,
            v_head_dim=layer.v_head_dim,
            window=layer.window,
            n_heads=layer.n_heads,
            mla=layer.mla,
            indexer_key=layer.indexer.head_dim if layer.indexer is not None else 0,
        )
    if kind == AttentionKind.FULL and layer.indexer is not None:
        return IndexedAttentionSpec(
            kind=kind.value,
            n_kv_heads=layer.n_kv_heads,
            head_dim=layer.head_dim,
            v_head_dim=layer.v_head_dim,
            indexer_key=layer.indexer.head_dim,
        )
    spec = _ATTENTION_SPECS[kind]
    return spec(
        kind=kind.value,
        n_kv_heads=layer.n_kv_heads,
        head_dim=layer.head_dim,
        v_head_dim=layer.v_head_dim,
        window=layer.window,
    )
