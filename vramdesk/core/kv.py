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
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from .architecture import Architecture, AttentionKind, LayerSpec


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
    explain: str


def _elements_per_token(layer: LayerSpec, engine: str) -> int:
    if layer.attention in (AttentionKind.LINEAR, AttentionKind.NONE):
        return 0
    if layer.attention == AttentionKind.MLA and layer.mla is not None:
        if engine == "transformers":
            return layer.n_heads * (layer.mla.qk_nope_head_dim + layer.mla.qk_rope_head_dim + layer.mla.v_head_dim)
        return layer.mla.kv_lora_rank + layer.mla.qk_rope_head_dim
    return layer.n_kv_heads * (layer.head_dim + layer.v_head_dim)


def _pad(n: int, to: int) -> int:
    return ceil(n / to) * to


def tokens_kept(
    layer: LayerSpec,
    engine: str,
    tokens: int,
    seqs: int,
    *,
    block_size: int = 16,
    batched_tokens: int = 8192,
    n_ubatch: int = 512,
    swa_full: bool = False,
) -> int:
    """Tokens of one sequence a layer holds (llama.cpp: cells for all sequences, divided back per sequence)."""
    kind = layer.attention
    window = layer.window or tokens
    if engine == "transformers":
        if kind in (AttentionKind.SLIDING, AttentionKind.CHUNKED):
            return min(tokens, window)
        return tokens
    if engine == "vllm":
        if kind == AttentionKind.SLIDING:
            return min(_pad(tokens, block_size), _pad(window - 1 + batched_tokens, block_size) + block_size)
        if kind == AttentionKind.CHUNKED:
            return min(_pad(tokens, block_size), _pad(window + batched_tokens, block_size))
        return _pad(tokens, block_size)
    # llama.cpp: one cell pool for all sequences
    total = _pad(tokens * seqs, 256)
    if kind in (AttentionKind.SLIDING, AttentionKind.CHUNKED) and not swa_full:
        total = min(total, _pad(window * seqs + n_ubatch, 256))
    return ceil(total / seqs)


def state_bytes_per_sequence(arch: Architecture, engine: str, compute_bytes: int) -> int:
    total = 0
    for layer in arch.layers:
        lin = layer.linear
        if lin is None:
            continue
        if engine == "llamacpp":
            total += 4 * ((lin.conv_kernel - 1) * lin.conv_dim + lin.recurrent_elements)
            continue
        state_bytes = 4 if lin.state_dtype == "fp32" else 2
        conv_len = lin.conv_kernel if engine == "transformers" else lin.conv_kernel - 1
        total += conv_len * lin.conv_dim * compute_bytes + lin.recurrent_elements * state_bytes
    return total


def plan_kv(
    arch: Architecture,
    engine: str,
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
    bpe = kv_bits / 8.0
    kv = 0.0
    largest = 0.0
    all_layers = 0.0
    growing = 0.0
    kinds: dict[str, int] = {}
    for layer in chosen:
        el = _elements_per_token(layer, engine)
        if not el:
            continue
        kept = tokens_kept(
            layer,
            engine,
            tokens,
            seqs,
            block_size=block_size,
            batched_tokens=batched_tokens,
            n_ubatch=n_ubatch,
            swa_full=swa_full,
        )
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
    engine: str,
    tokens: int,
    seqs: int,
    kv_bits: float,
    state_seq: int,
) -> str:
    parts = []
    groups: dict[tuple[str, int, int, int | None], list[LayerSpec]] = {}
    for layer in layers:
        el = _elements_per_token(layer, engine)
        if el:
            groups.setdefault((layer.attention.value, el, layer.n_kv_heads, layer.window), []).append(layer)
    for members in groups.values():
        layer, n = members[0], len(members)
        if layer.attention == AttentionKind.MLA and layer.mla is not None:
            m = layer.mla
            if engine == "transformers":
                what = (
                    f"{n} MLA layers x {layer.n_heads} heads x (k {m.qk_nope_head_dim}+{m.qk_rope_head_dim} "
                    f"+ v {m.v_head_dim}) (transformers stores the expanded K and V)"
                )
            else:
                what = (
                    f"{n} MLA layers x latent (kv_lora_rank {m.kv_lora_rank} + qk_rope_head_dim {m.qk_rope_head_dim})"
                )
        else:
            what = (
                f"{n} {layer.attention.value} layers x {layer.n_kv_heads} kv heads x "
                f"(k {layer.head_dim} + v {layer.v_head_dim})"
            )
            if layer.window:
                what += f", window {layer.window}"
        parts.append(what)
    text = (
        f"{'; '.join(parts) or 'no attention layers'}; {kv_bits:g} bits per element; "
        f"{seqs} sequence(s) x {tokens} tokens ({engine} rule)"
    )
    if state_seq:
        nlin = sum(1 for x in layers if x.linear is not None)
        text += f"; plus {nlin} linear-attention layers' constant state: {state_seq} B per sequence"
    return text
