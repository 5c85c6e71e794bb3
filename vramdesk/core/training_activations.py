"""Saved activations of a fine-tuning step and its loss head, per GPU.

Activations follow the per-token rule of HF Llama-style layers (16h + 4 q + 4 kv + 8 I + 4 heads bytes per token
and layer in bf16; ``shared/research/trace-oracle.md`` §4), LoRA's fp32 input copies, top-k token copies in MoE
layers and eager attention's s² terms, then gradient checkpointing (every layer or every k-th), activation offload
and tensor parallel. The loss head is the 12 x b x s x V bytes of fp32 log-softmax and gradients at the start of
backward, or what a model's own 16-bit loss, soft-capping or chunked cross-entropy leave of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import constants as K
from .architecture import Architecture, AttentionKind, LayerSpec
from .gpu import GIB, MIB
from .inventory import Tensor
from .messages import Message, Text, join, text
from .peft.common import MethodSaved
from .peft.prompts import prefix_keys, virtual_tokens
from .scenario import FinetuneWorkload
from .trainers import profile
from .training_state import Precision

# what one layer keeps per token (the per-token rule's parts, joined with "; ")
LINEAR_ATTENTION = text(
    "training.layer.linear_attention",
    "Gated DeltaNet: projections, conv output, fp32 q/k/v of the delta rule, gated norm",
)
MLA_ATTENTION = text("training.layer.mla", "MLA: latent and expanded q/k/v, attention output, log-sum-exp")
ATTENTION = text("training.layer.attention", "q/k after RoPE, v, output (4q + 4kv) + log-sum-exp")
QK_NORMS = text("training.layer.qk_norms", "q/k norms 6 B per q and k element")
MOE = Message("training.layer.moe", "MoE: top-{k} copies x (5h + 8 x {intermediate}) + router")
SWIGLU = Message("training.layer.swiglu", "SwiGLU 8 x intermediate {intermediate}")
MLP = Message("training.layer.mlp", "MLP 6 x intermediate {intermediate}")
LORA_FROZEN = text(
    "training.layer.lora_frozen_base",
    "LoRA on a frozen base: norms 4h each, MLP 6I, each adapter's input copy, 4 B x its width in fp32",
)
LORA_FP32_INPUTS = text("training.layer.lora_fp32_inputs", "LoRA: fp32 copies of adapted inputs (+12h + 4q + 2I)")
#: the frozen weights a GPTQ base's layers keep for backward (the default of :func:`activations`)
GPTQ_KEPT = text(
    "training.activations.kept.gptq",
    "GPTQ base: each layer keeps its dequantised 16-bit matrices (2 B per parameter) for backward",
)
# what the layers keep, with or without checkpointing (the explanation's first clause)
LAYERS = Message("training.activations.layers", "{layers} layers x {tokens} tokens ({rule})")
SELECTIVE = Message(
    "training.activations.selective",
    "selective checkpointing every {k} layers: {inputs} layer inputs ({bytes} B x h x {tokens} tokens each) + "
    "{full} layers with all their activations (up to {layer_mib:.0f} MiB each) + one layer recomputed",
)
SELECTIVE_RESIDENT = Message(
    "training.activations.selective.resident",
    "selective checkpointing every {k} layers: {inputs} layer inputs ({bytes} B x h x {tokens} tokens each) + "
    "{full} layers with all their activations; no layer recomputed yet",
)
CHECKPOINTING = Message(
    "training.activations.checkpointing",
    "gradient checkpointing: {layers} layer inputs ({bytes} B x h x {tokens} tokens each) + one layer recomputed "
    "({recompute_mib:.0f} MiB)",
)
CHECKPOINTING_RESIDENT = Message(
    "training.activations.checkpointing.resident",
    "gradient checkpointing: {layers} layer inputs ({bytes} B x h x {tokens} tokens each); no layer recomputed yet",
)
# what else the explanation says, each a clause after "; "
OUTSIDE = Message(
    "training.activations.outside", "the embedding output and the final norm: {bytes} B x h x {tokens} tokens"
)
TENSOR_PARALLEL = Message(
    "training.activations.tensor_parallel",
    "tensor parallel {tp}: attention and MLP activations split, norms and residual (16h) whole",
)
OFFLOADED = Message(
    "training.activations.offloaded",
    "activation offloading: {gib:.2f} GiB moved to CPU memory, the current layer and the one in transfer stay",
)
DROPOUT_MASKS = text("training.activations.dropout_masks", "LoRA dropout masks (1 B per adapted input)")
DORA_OUTPUTS = Message(
    "training.activations.dora_outputs",
    "DoRA's saved base, adapter and scaled outputs ({bytes} B per adapted output)",
)
MERGED_EXPERTS = text(
    "training.activations.merged_experts",
    "LoRA on experts: each layer's merged expert weights (W + BA, 2 B per parameter) kept for backward",
)
EAGER = text("training.activations.eager", "eager attention adds 6.2 B x heads x s x kept keys per layer")
EAGER_SOFTCAP = text(
    "training.activations.eager.softcap",
    "eager attention adds 6.2 B x heads x s x kept keys per layer (+2 B for the soft-capped scores)",
)
AMP_RESIDUAL = Message("training.activations.amp", "AMP: fp32 residual stream (x{scale})")
AMP_RESIDUAL_COPIES = Message(
    "training.activations.amp.weight_copies", "AMP: fp32 residual stream (x{scale}) and autocast's bf16 weight copies"
)
# the loss head, at the end of forward and at the start of backward
LOSS_FORWARD = text(
    "training.loss.forward", "10 x batch x seq x vocab B at the end of forward: 16-bit logits, fp32 upcast, log-softmax"
)
LOSS_BACKWARD = Message(
    "training.loss.backward",
    "12 x batch {batch} x seq {seq} x vocab {vocab} B at the start of backward: fp32 log-softmax saved, its gradient "
    "and the nll gradient (HF Trainer drops the 16-bit logits)",
)
LOSS_FORWARD_16BIT = text(
    "training.loss.forward.16bit",
    "6 x batch x seq x vocab B at the end of forward: 16-bit logits, shifted copy, log-softmax",
)
LOSS_BACKWARD_16BIT = Message(
    "training.loss.backward.16bit",
    "6 x batch {batch} x seq {seq} x vocab {vocab} B at the start of backward: the model's loss keeps the logits in "
    "16 bits and DeepSpeed runs without autocast (16-bit logits, shifted copy and log-softmax; then the log-softmax, "
    "its gradient and the input gradient)",
)
SOFTCAP_FORWARD = text("training.loss.softcap.forward", "the soft-capping's tanh output (2 B)")
SOFTCAP_BACKWARD = Message(
    "training.loss.softcap.backward", "the soft-capping's tanh output (2 x batch {batch} x seq {seq} x vocab {vocab} B)"
)
CHUNKED_FORWARD = text(
    "training.loss.chunked.forward",
    "chunked cross-entropy at the end of forward: 16-bit logits and one chunk's fp32 loss terms",
)
CHUNKED_BACKWARD = Message(
    "training.loss.chunked.backward",
    "chunked cross-entropy: 16-bit logits (2 x batch {batch} x seq {seq} x vocab {vocab} B) and the fp32 "
    "log-softmax and gradients of one chunk in 8",
)


def _as_run(work: FinetuneWorkload) -> FinetuneWorkload:
    """The workload as the model runs it: prompt tuning and p-tuning put their virtual tokens before every sequence
    (peft's PeftModelForCausalLM.forward), so every layer and the loss see seq_len + that many."""
    n = virtual_tokens(work)
    return work.model_copy(update={"seq_len": work.seq_len + n}) if n else work


def _layer_bytes_per_token(
    arch: Architecture, layer: LayerSpec, lora: bool, adapter_inputs: int | None = None
) -> tuple[float, Text]:
    """Saved-for-backward bytes per token of one decoder layer in bf16 (trace-oracle §4). ``adapter_inputs``: for
    LoRA on a frozen 16-bit base, the bytes per token the layer's adapters keep of their inputs."""
    h = arch.hidden
    heads = layer.n_heads
    q = heads * layer.head_dim
    kv = layer.n_kv_heads * layer.head_dim
    if layer.attention == AttentionKind.LINEAR and layer.linear is not None:
        lin = layer.linear
        proj = 2 * lin.key_dim + 2 * lin.value_dim + 2 * lin.num_v_heads
        attn = 2 * proj + 2 * lin.conv_dim + 4 * (2 * lin.key_dim + lin.value_dim) + 8 * lin.value_dim
        parts: list[Text] = [LINEAR_ATTENTION]
    elif layer.attention == AttentionKind.MLA and layer.mla is not None:
        m = layer.mla
        qk = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        attn = (
            2
            * (
                (m.q_lora_rank or 0)
                + qk
                + m.kv_lora_rank
                + m.qk_rope_head_dim
                + heads * (m.qk_nope_head_dim + m.v_head_dim)
            )
            + 4 * qk
            + 4 * heads * m.v_head_dim
            + 4 * heads
        )
        parts = [MLA_ATTENTION]
    else:
        attn = 4 * q + 4 * kv + 4 * heads
        parts = [ATTENTION]
    # two pre-norms: fp32 input copy, normalised copy (weight grad), output (next linear's input); a post-norm
    # (Gemma 2/3 sandwich norms) feeds a residual add, not a linear: 6h
    extra_norms = max(0, arch.norms_per_layer - 2)
    norms = 16 * h + 6 * h * extra_norms
    # q/k norms (Qwen3, Gemma3 per head; OLMo2 full width): fp32 input copy and normalised copy of q and k
    qk = q + kv if arch.qk_norm != "none" and layer.attention not in (AttentionKind.MLA, AttentionKind.LINEAR) else 0
    attn += 6 * qk
    if qk:
        parts.append(QK_NORMS)
    if layer.moe is not None:
        moe = layer.moe
        k = moe.top_k
        mlp = k * (5 * h + 8 * moe.expert_intermediate) + 8 * moe.num_experts
        if moe.shared_intermediate:
            mlp += 8 * moe.shared_intermediate + 2 * h
        parts.append(MOE(k=k, intermediate=moe.expert_intermediate))
    elif arch.mlp_gated:
        mlp = 8 * layer.intermediate
        parts.append(SWIGLU(intermediate=layer.intermediate))
    else:
        mlp = 6 * layer.intermediate
        parts.append(MLP(intermediate=layer.intermediate))
    total = norms + attn + mlp
    standard = layer.attention not in (AttentionKind.LINEAR, AttentionKind.MLA) and layer.moe is None
    if adapter_inputs is not None and standard and arch.mlp_gated:
        # LoRA on a frozen 16-bit base, traced (transformers 5.24 / peft 0.21, benchmarks/allocator): a frozen
        # linear keeps no input and a frozen norm weight no normalised copy, so the layer keeps 8h (the norms'
        # fp32 inputs) + attention + 6I (gate, up, SiLU outputs), plus each adapter's own copy of its input
        # (frozen norms keep only their fp32 input: 4h each, 4(q + kv) for q/k norms)
        total = 4 * h * arch.norms_per_layer + (attn - 2 * qk) + 6 * layer.intermediate + adapter_inputs
        parts.append(LORA_FROZEN)
    elif lora:
        # peft casts every adapted layer's input to the adapter dtype (fp32) and keeps it for the weight grads:
        # per layer 28h + 8q + 4kv + 10I instead of 16h + 4q + 4kv + 8I (trace-oracle §4)
        width = layer.intermediate or (layer.moe.expert_intermediate if layer.moe else 0)
        total += 12 * h + 4 * q + 2 * width
        parts.append(LORA_FP32_INPUTS)
    return float(total), join("; ", *parts)


#: module names that read the same tensor in a decoder layer: the attention input (q, k, v) and the MLP input
#: (gate, up)
SHARED_INPUT = {"q_proj": "attn", "k_proj": "attn", "v_proj": "attn", "gate_proj": "mlp", "up_proj": "mlp"}


@dataclass(frozen=True)
class Activations:
    total: int
    per_layer_max: int
    explain: str
    #: bytes moved to CPU memory (activation offloading)
    host: int = 0
    #: with gradient checkpointing: what lives outside the one recomputed layer (the checkpointed layer inputs and
    #: the embedding / final-norm outputs), i.e. the activations at the loss head, before any layer is recomputed
    resident: int = 0
    resident_explain: str = ""
    #: late in backward, while the first layer is (recomputed and) back-propagated: that layer's activations and
    #: its input; every other layer's activations are gone by then
    first_layer: int = 0
    #: with checkpointing under AMP: autocast's cached 16-bit weight copies of the layers that save nothing, alive
    #: until the forward's autocast region ends
    forward_cache: int = 0


def _adapter_extras(work: FinetuneWorkload, adapted: Sequence[Tensor], adapter_bytes: int = 4) -> dict[int, float]:
    """Per layer, extra saved bytes per token from LoRA dropout masks and DoRA's rescaled outputs."""
    extra: dict[int, float] = {}
    for t in adapted:
        if t.layer is None:
            continue
        out_f, in_f = t.shape[-2], t.shape[-1]
        add = 0.0
        if work.lora_dropout > 0:
            add += in_f  # a 1-byte mask per adapted input element (the dropped copy replaces the fp32 copy)
        if work.dora:
            # DoRA's (m / ||W + BA|| - 1) x base + m / ||.|| x BA x: the products keep the 16-bit base output and
            # the adapter's output and its scaled copy in the adapter dtype for backward (traced, fp32 adapters on a
            # bf16 base: 10.5 B per output element, fitted over q/k/v/o and over the MLP of Qwen2.5-1.5B)
            add += (2 + 2 * adapter_bytes) * out_f
        extra[t.layer] = extra.get(t.layer, 0.0) + add
    return extra


def activations(
    arch: Architecture,
    work: FinetuneWorkload,
    prec: Precision,
    lora: bool,
    linear_params: int,
    adapted: Sequence[Tensor] | None = None,
    tp: int = 1,
    residual_bytes: int = 2,
    adapter_copy_bytes: int = 0,
    kept_weights: Mapping[int, int] | None = None,
    adapter_bytes: int = 4,
    kept_label: str = GPTQ_KEPT,
    method_saved: MethodSaved | None = None,
) -> Activations:
    """Saved activations per GPU. ``lora``: adapters in fp32 under 16-bit compute, so peft keeps an fp32 copy
    of every adapted input. ``tp``: tensor parallel without sequence parallelism splits the attention and MLP
    activations; the norms and residual stream (16h bytes per token) stay whole on every GPU (Korthikanti et
    al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4.2.2). ``residual_bytes``: the
    dtype of the residual stream, which is what checkpointing keeps per layer: the embedding's dtype (4 under
    AMP / fp32, and for QLoRA after prepare_model_for_kbit_training made the embedding fp32).
    ``adapter_copy_bytes``: LoRA on a frozen 16-bit base: the bytes per element each adapter keeps of its input
    (4: peft casts it to the fp32 adapter's dtype; 2: a 16-bit adapter keeps a 16-bit one); 0 for the general
    rule (full fine-tuning, quantised bases). ``kept_weights``: per layer, bytes of weights that layer's backward
    keeps besides its activations (a GPTQ base's dequantised 16-bit matrices); ``kept_label``: the explanation's
    clause for them. ``method_saved``: what a peft method other than LoRA keeps of its own operations."""
    work = _as_run(work)
    tokens = work.micro_batch * work.seq_len
    kept_w = kept_weights or {}
    own = method_saved or MethodSaved()
    layers = _saved_per_layer(
        arch, work, prec, lora, adapted or (), tp, adapter_copy_bytes, kept_w, adapter_bytes, own.per_token
    )
    per_layer = layers.per_layer
    rb = residual_bytes
    # embedding output, final norm (and what a trained final norm keeps: LN tuning's, h wide)
    out_b = 4 * rb + round(own.outside_per_token / arch.hidden)
    outside = out_b * arch.hidden * tokens
    amp_copies = 2 * linear_params / tp if prec.amp else 0
    #: autocast's 16-bit weight copies: autograd keeps those of layers that save their activations until their
    #: backward; a checkpointed layer's forward runs without grad, so its copies live only in autocast's cache,
    #: which is cleared when the forward's autocast region ends; a recomputed layer makes its own again
    amp_layer = amp_copies / max(1, len(per_layer))
    # the backward of a recomputed layer with adapted experts also holds the gradient of its merged weights, and
    # a peft method's module the short-lived tensors of its own backward
    merged_grad = max(layers.merged.values(), default=0) / tp + own.backward_per_token * tokens / tp
    kept = _kept_for_backward(arch, work, layers, tokens, rb, (outside, amp_copies, amp_layer, merged_grad))
    total = kept.total
    # (the figure's share outside the layers, so that the text adds up to it)
    how: list[str] = [OUTSIDE(bytes=out_b, tokens=tokens)]
    if tp > 1:
        how.append(TENSOR_PARALLEL(tp=tp))
    host = 0.0
    if work.activation_offload:
        # saved tensors stream to CPU memory as the forward goes; the GPU keeps the layer being computed (or
        # recomputed, with checkpointing) and the one in transfer
        in_transfer = rb * arch.hidden * tokens if work.grad_checkpointing else max(per_layer)
        on_gpu = min(total, max(per_layer) + in_transfer + outside + amp_copies)
        host = total - on_gpu
        total = on_gpu
        how.append(OFFLOADED(gib=host / GIB))
    if own.text:
        how.append(own.text)
    how += _what_else_is_kept(arch, work, prec, layers, bool(kept_w), amp_copies, adapter_bytes, kept_label)
    resident = max(0.0, total - kept.recompute - amp_layer) if work.grad_checkpointing else total
    # (autocast's cache of 16-bit weight copies is cleared when the forward's autocast region ends; backward
    # re-creates the copies of the one layer it recomputes)
    first = per_layer[0] + (merged_grad if work.grad_checkpointing else 0.0) + rb * arch.hidden * tokens + amp_layer
    return Activations(
        total=round(total),
        per_layer_max=round(max(per_layer)),
        explain=join("; ", kept.how, *how),
        host=round(host) if work.activation_offload else 0,
        resident=round(resident),
        resident_explain=join("; ", kept.resident_how or kept.how, *how),
        first_layer=round(min(first, total)),
        forward_cache=round(amp_copies - kept.amp_saved) if work.grad_checkpointing else 0,
    )


@dataclass(frozen=True)
class _Layers:
    """Saved bytes of each decoder layer, and what went into them."""

    per_layer: list[float]
    #: the (last) layer's per-token rule, for the explanation
    text: Text
    #: per layer, LoRA dropout masks and DoRA outputs per token
    extras: dict[int, float]
    #: per layer: merged expert weights kept for backward
    merged: dict[int, int]


def _saved_per_layer(
    arch: Architecture,
    work: FinetuneWorkload,
    prec: Precision,
    lora: bool,
    adapted: Sequence[Tensor],
    tp: int,
    adapter_copy_bytes: int,
    kept_w: Mapping[int, int],
    adapter_bytes: int,
    method_saved: Mapping[int, float],
) -> _Layers:
    """Each layer's saved bytes for the whole micro-batch, on one GPU of a tensor-parallel group."""
    b, s = work.micro_batch, work.seq_len
    tokens = b * s
    per_layer = []
    rule = Text("")
    extras = _adapter_extras(work, adapted, adapter_bytes)
    inputs: dict[int, int] = {}
    merged: dict[int, int] = {}  # per layer: merged expert weights kept for backward
    shared = profile(work.trainer).shared_adapter_inputs
    seen: set[tuple[int, str]] = set()
    for t in adapted:
        if adapter_copy_bytes and t.layer is not None and t.part == "text":
            # (a trainer whose adapters take the layer's input as it is keeps one copy per input it reads)
            key = (t.layer, SHARED_INPUT.get(t.name.removesuffix(".weight").rsplit(".", 1)[-1], t.name))
            if not (shared and key in seen):
                inputs[t.layer] = inputs.get(t.layer, 0) + adapter_copy_bytes * t.shape[-1]
            seen.add(key)
        if t.layer is not None and t.part == "text" and len(t.shape) == 3:
            # experts stored as one (E, out, in) parameter (transformers 5): peft adapts the parameter itself,
            # builds W + B A for every expert in the forward and the grouped matmul keeps it for backward
            # (traced: Qwen3-30B-A3B, 2.0 B per adapted expert parameter and layer)
            merged[t.layer] = merged.get(t.layer, 0) + 2 * t.numel
    for layer in arch.layers:
        per_tok, rule = _layer_bytes_per_token(
            arch, layer, lora, inputs.get(layer.index, 0) if adapter_copy_bytes else None
        )
        per_tok += extras.get(layer.index, 0.0) + method_saved.get(layer.index, 0.0)
        replicated = 16 * arch.hidden
        per_tok = (per_tok - replicated) / tp + replicated
        layer_b = per_tok * tokens * prec.activ_scale
        if work.attention == "eager" and layer.attention not in (AttentionKind.LINEAR,):
            # (eager attention scores every key and masks the ones outside a sliding window: s x s in every layer)
            kept = s + prefix_keys(work)
            # (+2 B: Gemma 2's tanh soft-capping of the scores keeps its output; gpt-oss keeps only its 16-bit
            # softmax output, which the scores' matmul reads as a view: K.EAGER_SAVED_BYTES_SINKS)
            per = K.EAGER_SAVED_BYTES_SINKS if arch.attention_sinks else 6.2 + (2 if arch.attn_softcap else 0)
            layer_b += per * layer.n_heads * s * kept * b / tp
        layer_b += (merged.get(layer.index, 0) + kept_w.get(layer.index, 0)) / tp
        per_layer.append(layer_b)
    return _Layers(per_layer, rule, extras, merged)


@dataclass(frozen=True)
class _Kept:
    """What the forward leaves for backward, with or without checkpointing."""

    total: float
    #: the one recomputed layer (with checkpointing)
    recompute: float
    #: autocast's weight copies autograd keeps (the rest only autocast's cache holds)
    amp_saved: float
    how: Text
    #: with checkpointing, the explanation before any layer is recomputed (else "")
    resident_how: str


def _kept_for_backward(
    arch: Architecture,
    work: FinetuneWorkload,
    layers: _Layers,
    tokens: int,
    rb: int,
    figures: tuple[float, float, float, float],
) -> _Kept:
    """Every layer's activations, or with (selective) gradient checkpointing the layer inputs and one recomputed
    layer. ``figures``: the bytes outside the layers, autocast's weight copies (all, and one layer's) and the
    merged expert weights' gradient of a recomputed layer."""
    outside, amp_copies, amp_layer, merged_grad = figures
    per_layer = layers.per_layer
    amp_saved = amp_copies
    k = work.checkpoint_every
    recompute = 0.0
    resident_how = ""
    if work.grad_checkpointing and k > 1:
        # selective: every k-th layer keeps only its input, the others all their activations; in backward one
        # checkpointed layer is recomputed at a time
        kept_layers = [a for i, a in enumerate(per_layer) if i % k]
        ckpt = [a for i, a in enumerate(per_layer) if not i % k]
        recompute = max(ckpt) + merged_grad
        amp_saved = amp_copies * len(kept_layers) / max(1, len(per_layer))
        total = sum(kept_layers) + rb * arch.hidden * tokens * len(ckpt) + recompute + outside + amp_saved + amp_layer
        how = SELECTIVE(
            k=k, inputs=len(ckpt), bytes=rb, tokens=tokens, full=len(kept_layers), layer_mib=max(per_layer) / MIB
        )
        resident_how = SELECTIVE_RESIDENT(k=k, inputs=len(ckpt), bytes=rb, tokens=tokens, full=len(kept_layers))
    elif work.grad_checkpointing:
        # only each layer's input survives the forward; one layer is recomputed at a time in backward
        recompute = max(per_layer) + merged_grad
        amp_saved = 0.0
        total = sum(rb * arch.hidden * tokens for _ in per_layer) + recompute + outside + amp_layer
        how = CHECKPOINTING(layers=arch.n_layers, bytes=rb, tokens=tokens, recompute_mib=recompute / MIB)
        resident_how = CHECKPOINTING_RESIDENT(layers=arch.n_layers, bytes=rb, tokens=tokens)
    else:
        total = sum(per_layer) + outside + amp_copies
        how = LAYERS(layers=arch.n_layers, tokens=tokens, rule=layers.text)
    return _Kept(total, recompute, amp_saved, how, resident_how)


def _what_else_is_kept(
    arch: Architecture,
    work: FinetuneWorkload,
    prec: Precision,
    layers: _Layers,
    kept_w: bool,
    amp_copies: float,
    adapter_bytes: int,
    kept_label: str,
) -> list[str]:
    """The explanation's notes on what the layers keep besides the per-token rule (its clauses)."""
    how: list[str] = []
    extras, merged = layers.extras, layers.merged
    if extras:
        if work.lora_dropout > 0:
            how.append(DROPOUT_MASKS)
        if work.dora:
            how.append(DORA_OUTPUTS(bytes=2 + 2 * adapter_bytes))
    if kept_w:
        how.append(kept_label)
    if merged:
        how.append(MERGED_EXPERTS)
    if work.attention == "eager":
        how.append(EAGER_SOFTCAP if arch.attn_softcap else EAGER)
    if prec.amp:
        how.append((AMP_RESIDUAL_COPIES if amp_copies else AMP_RESIDUAL)(scale=prec.activ_scale))
    return how


@dataclass(frozen=True)
class LossHead:
    """The loss head's bytes at the start of backward (``loss``) and at the end of forward (``forward``)."""

    loss: int
    forward: int
    loss_text: str
    forward_text: str
    #: bytes per element of its largest tensor, the log-softmax (4 in fp32, 2 where it stays 16-bit or chunked)
    elem_bytes: int = 4


def loss_head(arch: Architecture, work: FinetuneWorkload, deepspeed: bool, prec: Precision | None = None) -> LossHead:
    """Logits, log-softmax and their gradients as the model's loss code and the precision make them: fp32 in
    transformers' classes, 16-bit where a model's own loss keeps them so and DeepSpeed runs without autocast,
    Gemma 2's soft-capping, or one chunk in 8 with chunked cross-entropy; or as the trainer's own loss keeps them
    (``work.trainer``'s profile: a fused 16-bit kernel, or LitGPT's 128-token chunks of lm_head and loss)."""
    work = _as_run(work)
    b, s = work.micro_batch, work.seq_len
    kind = profile(work.trainer).loss
    if kind != "model":
        return _trainer_loss(arch, work, kind, prec)
    loss = 12 * b * s * arch.vocab
    loss_fwd = 10 * b * s * arch.vocab
    fwd_text: str = LOSS_FORWARD
    loss_text: str = LOSS_BACKWARD(batch=b, seq=s, vocab=arch.vocab)
    elem = 4
    if not arch.logits_fp32 and deepspeed and not work.chunked_loss:
        elem = 2
        # the model's own loss keeps the logits in 16 bits and DeepSpeed runs without autocast (which would cast
        # the cross-entropy to fp32): log-softmax, its gradient and the input gradient are all 16-bit
        loss = 6 * b * s * arch.vocab
        loss_fwd = 6 * b * s * arch.vocab
        fwd_text = LOSS_FORWARD_16BIT
        loss_text = LOSS_BACKWARD_16BIT(batch=b, seq=s, vocab=arch.vocab)
    if arch.logit_softcap and not work.chunked_loss:
        # Gemma 2: logits / cap -> tanh -> x cap before the loss; tanh keeps its 16-bit output for backward
        loss += 2 * b * s * arch.vocab
        loss_fwd += 2 * b * s * arch.vocab
        fwd_text = join("; ", fwd_text, SOFTCAP_FORWARD)
        loss_text = join("; ", loss_text, SOFTCAP_BACKWARD(batch=b, seq=s, vocab=arch.vocab))
    if work.chunked_loss:
        # 16-bit logits of the whole sequence, and the fp32 loss terms for one of 8 chunks at a time
        elem = 2
        loss = 2 * b * s * arch.vocab + 12 * b * s * arch.vocab // 8
        loss_fwd = 2 * b * s * arch.vocab + 10 * b * s * arch.vocab // 8
        fwd_text = CHUNKED_FORWARD
        loss_text = CHUNKED_BACKWARD(batch=b, seq=s, vocab=arch.vocab)
    return LossHead(loss, loss_fwd, loss_text, fwd_text, elem)


FUSED_16BIT = Message(
    "training.loss.fused_16bit",
    "fused cross-entropy: the 16-bit logits (2 x batch {batch} x seq {seq} x vocab {vocab} B) kept for "
    "backward, their gradient written into them",
)
CHUNKED_HEAD = Message(
    "training.loss.chunked_head",
    "lm_head and loss in 128-token chunks: each chunk keeps its log-softmax, {bytes} x batch {batch} x "
    "seq {seq} x vocab {vocab} B in all",
)


def _trainer_loss(arch: Architecture, work: FinetuneWorkload, kind: str, prec: Precision | None) -> LossHead:
    """The loss head of a trainer with its own loss: Unsloth's Fast_CrossEntropyLoss keeps the 16-bit logits and
    writes their gradient in place; LitGPT's chunked lm_head and chunked_cross_entropy keep each 128-token
    chunk's log-softmax (in the compute dtype, fp32 under autocast) and free its logits."""
    b, s, v = work.micro_batch, work.seq_len, arch.vocab
    if kind == "fused-16bit":
        kept = 2 * b * s * v
        text_ = FUSED_16BIT(batch=b, seq=s, vocab=v)
        return LossHead(kept, kept, text_, text_, 2)
    elem = 4 if prec is not None and (prec.amp or prec.weights == 4) else 2
    kept = elem * b * s * v
    text_ = CHUNKED_HEAD(bytes=elem, batch=b, seq=s, vocab=v)
    return LossHead(kept, kept, text_, text_, elem)
