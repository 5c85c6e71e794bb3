"""Prompt learning (``peft/tuners/prompt_tuning``, ``p_tuning``, ``prefix_tuning``; ``PeftModelForCausalLM.forward``):
prompt tuning and p-tuning put ``num_virtual_tokens`` embeddings before every sequence, so that the model runs over
s + n tokens (its loss too, the virtual tokens' labels -100); prefix tuning hands every layer's attention n more
keys and values as a cache. Their encoders are made in fp32 and stay so (no peft layer wraps them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..architecture import AttentionKind
from ..messages import Message
from .common import MethodError, MethodParams, MethodSaved, numel

if TYPE_CHECKING:
    from ..facts import ModelFacts
    from ..workloads import FinetuneWorkload

PROMPT_WEIGHTS = Message(
    "peft.prompt.weights",
    "{trainable:,} parameters of {tokens} virtual tokens' embeddings ({width} wide)",
)
P_TUNING_WEIGHTS = Message(
    "peft.p_tuning.weights",
    "{trainable:,} parameters of {tokens} virtual tokens' embeddings and the MLP that encodes them ({width} wide)",
)
PREFIX_WEIGHTS = Message(
    "peft.prefix.weights",
    "{trainable:,} parameters of {tokens} virtual tokens' keys and values in {layers} layers ({width} wide each)",
)
PREFIX_PROJECTION_WEIGHTS = Message(
    "peft.prefix.projection_weights",
    "{trainable:,} parameters of {tokens} virtual tokens' embeddings and the MLP that makes their keys and values "
    "in {layers} layers ({width} wide each)",
)
VIRTUAL_TOKENS = Message(
    "peft.prompt.saved", "the model runs over {tokens} virtual tokens before every sequence ({length} tokens)"
)
PREFIX_SAVED = Message(
    "peft.prefix.saved",
    "prefix tuning: every layer's attention keeps its keys and values {tokens} longer, repeated for every query "
    "head, and the 16-bit mask the prefix needs",
)
PREFIX_CHECKPOINTING = Message(
    "peft.prefix.checkpointing",
    "prefix tuning does not work with gradient checkpointing (peft refuses it: its prefix is a cache the recompute "
    "would extend again): turn checkpointing off (--no-grad-checkpointing)",
)
#: a model with layers whose cache is not standard attention's keys and values, by their kind
PREFIX_ATTENTION = {
    AttentionKind.MLA: Message(
        "peft.prefix.attention.mla",
        "prefix tuning hands every layer the keys and values of standard attention; {model} has MLA (latent "
        "attention) layers, whose cache has another shape",
    ),
    AttentionKind.LINEAR: Message(
        "peft.prefix.attention.linear",
        "prefix tuning hands every layer the keys and values of standard attention; {model} has linear-attention "
        "layers, whose state is no such cache",
    ),
}


def virtual_tokens(work: FinetuneWorkload) -> int:
    """The tokens prompt tuning and p-tuning put before every sequence (0 for other methods): the model runs over
    ``seq_len`` + this many."""
    return work.num_virtual_tokens if work.method in ("prompt-tuning", "p-tuning") else 0


def prefix_keys(work: FinetuneWorkload) -> int:
    """The keys and values prefix tuning adds to every layer's attention, per sequence (0 for other methods)."""
    return work.num_virtual_tokens if work.method == "prefix-tuning" else 0


def check_prefix(facts: ModelFacts, work: FinetuneWorkload) -> None:
    """Refuse prefix tuning with gradient checkpointing (peft does) and on layers without standard attention."""
    if work.grad_checkpointing:
        raise MethodError(PREFIX_CHECKPOINTING())
    other = [x.attention for x in facts.arch.layers if x.attention in PREFIX_ATTENTION]
    if other:
        raise MethodError(PREFIX_ATTENTION[other[0]](model=facts.model_id))


def prompt_learning(facts: ModelFacts, work: FinetuneWorkload) -> MethodParams:
    """Prompt tuning, p-tuning and prefix tuning: their encoder's tensors (peft's _prepare_prompt_learning_config
    gives the widths) and what the virtual tokens add to the layers."""
    arch = facts.arch
    n, h = work.num_virtual_tokens, arch.hidden
    saved = MethodSaved(text=VIRTUAL_TOKENS(tokens=n, length=work.seq_len + n))
    if work.method == "prompt-tuning":
        shapes: list[tuple[int, ...]] = [(n, h)]
        what = PROMPT_WEIGHTS(trainable=n * h, tokens=n, width=h)
    elif work.method == "p-tuning":
        # PromptEncoder, MLP reparametrisation (peft's default): embedding (n, h), Linear(h, e), ReLU,
        # Linear(e, e), ReLU, Linear(e, h), encoder_hidden_size e = the token dim. (Its own activations, on n
        # tokens per sequence, are left out: 4 B x n x (h + 2e), 0.3 % of a tiny Llama's at 512 tokens)
        shapes = [(n, h), (h, h), (h,), (h, h), (h,), (h, h), (h,)]
        what = P_TUNING_WEIGHTS(trainable=sum(numel(x) for x in shapes), tokens=n, width=h)
    else:
        # the keys' width: head_dim x KV heads (GQA), as peft sets token_dim for a config with num_key_value_heads
        layer = arch.layers[0]
        kv = layer.n_kv_heads * layer.head_dim
        layers = arch.n_layers
        if work.prefix_projection:
            # embedding (n, kv), Linear(kv, e), Tanh, Linear(e, layers x 2 x kv), e = the token dim
            shapes = [(n, kv), (kv, kv), (kv,), (2 * layers * kv, kv), (2 * layers * kv,)]
            what = PREFIX_PROJECTION_WEIGHTS(trainable=sum(numel(x) for x in shapes), tokens=n, layers=layers, width=kv)
        else:
            shapes = [(n, 2 * layers * kv)]
            what = PREFIX_WEIGHTS(trainable=n * 2 * layers * kv, tokens=n, layers=layers, width=kv)
        # each layer's attention runs over the cache's s + n keys with an explicit mask (the prefix breaks the
        # pure causal shape): transformers repeats the KV heads for SDPA (no GQA with a mask), the memory-efficient
        # kernel keeps those (2 x 2 B x q width x (s + n)) in place of the rule's 4 B x kv x s, and its 16-bit bias,
        # padded to a multiple of 8 keys (traced on fake tensors with the CUDA kernel choice; the cache's own
        # concatenated keys and values die with the forward and are left out)
        s = work.seq_len
        padded = -(-(s + n) // 8) * 8
        per_token = {
            x.index: (4 * x.n_heads * x.head_dim * (s + n) - 4 * x.n_kv_heads * x.head_dim * s + 2 * s * padded) / s
            for x in arch.layers
        }
        # the first layer's input needs no gradient (nothing before the prefix trains, and checkpointing, which
        # would make it require one, is refused): its input norm keeps no fp32 copy, nor do q / k norms on
        # projections of it (traced: Qwen3's first layer, 4 B x (h + q + kv) per token)
        first = arch.layers[0]
        qk = first.n_heads * first.head_dim + first.n_kv_heads * first.head_dim if arch.qk_norm != "none" else 0
        per_token[first.index] -= 4 * (h + qk)
        saved = MethodSaved(per_token=per_token, text=PREFIX_SAVED(tokens=n))
    return MethodParams(
        adapted=(),
        trainable=sum(numel(x) for x in shapes),
        shapes=tuple(shapes),
        saved=saved,
        weights_text=what,
        param_bytes=4,
    )
