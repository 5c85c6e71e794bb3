"""Fine-tuning as phases: forward -> loss head and start of backward -> backward -> optimizer step.

The model follows the tensor-level trace of real Hugging Face code (``shared/research/trace-oracle.md``
§3-4), not the "sum everything" rule:

* gradients do not exist at the activation peak (the loss head at the start of backward);
* PyTorch's default ``foreach`` AdamW allocates one more state-sized copy of every parameter in the step
  (10 B/param in pure bf16, 20 with AMP), so the optimizer step is often the peak and gradient
  checkpointing then does not lower it;
* activations follow the per-token rule of HF Llama-style layers (16h + 4 q + 4 kv + 8 I + 4 heads bytes per
  token and layer in bf16), LoRA's fp32 input copies, top-k token copies in MoE layers, eager attention's
  s² terms, and the loss head's 12 x b x s x V bytes of fp32 log-softmax and gradients.

Peak = max(W + S + A + loss head, W + S + G, W + G + S + T_optimizer) on one GPU; sharding (ZeRO, FSDP,
TP, PP) and offload divide the terms per GPU (:mod:`vramdesk.core.parallel`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .architecture import Architecture, AttentionKind, LayerSpec
from .dtypes import FormatError, WeightFormat, parse_weight_format
from .gpu import GIB, MIB
from .inventory import Tensor
from .lora import LINEAR_ROLES, LoraTargetError, lora_parameters, lora_targets
from .optimizers import optimizer_bytes
from .parallel import (
    DEEPSPEED_FLAT_TEXT,
    ModelStates,
    comm_buckets,
    deepspeed_states,
    gathered_layers,
    pipeline_stages,
    place_states,
    shards,
)
from .result import Category, Component, Phase
from .scenario import FinetuneWorkload, Parallelism

if TYPE_CHECKING:
    from .facts import ModelFacts


#: weight-format kinds peft trains adapters on as stored (its GPTQ, AWQ and bitsandbytes LoRA layers); other
#: quantised checkpoints (FP8, MXFP4, ...) load dequantised for training
TRAINABLE_BASES = frozenset({"gptq", "awq", "bnb4", "int8"})


class TrainingError(ValueError):
    """Options that cannot go together, named on both sides."""


@dataclass(frozen=True)
class Precision:
    weights: int  # bytes per trainable parameter stored
    grads: int
    state: int  # bytes per optimizer state element
    activ_scale: float  # activations relative to the bf16 rule
    amp: bool
    label: str


def precision(name: str) -> Precision:
    if name in ("bf16", "fp16"):
        return Precision(2, 2, 2, 1.0, False, f"pure {name}: parameters, gradients and optimizer states in {name}")
    if name == "fp32":
        return Precision(4, 4, 4, 2.0, False, "fp32 everywhere")
    return Precision(
        4, 4, 4, 1.15, True, f"{name}: fp32 parameters (master weights), fp32 gradients and states, autocast to 16 bits"
    )


# ------------------------------------------------------------------------------------------ activations


def _layer_bytes_per_token(
    arch: Architecture, layer: LayerSpec, lora: bool, adapter_inputs: int | None = None
) -> tuple[float, str]:
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
        text = "Gated DeltaNet: projections, conv output, fp32 q/k/v of the delta rule, gated norm"
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
        text = "MLA: latent and expanded q/k/v, attention output, log-sum-exp"
    else:
        attn = 4 * q + 4 * kv + 4 * heads
        text = "q/k after RoPE, v, output (4q + 4kv) + log-sum-exp"
    # two pre-norms: fp32 input copy, normalised copy (weight grad), output (next linear's input); a post-norm
    # (Gemma 2/3 sandwich norms) feeds a residual add, not a linear: 6h
    extra_norms = max(0, arch.norms_per_layer - 2)
    norms = 16 * h + 6 * h * extra_norms
    # q/k norms (Qwen3, Gemma3 per head; OLMo2 full width): fp32 input copy and normalised copy of q and k
    qk = q + kv if arch.qk_norm != "none" and layer.attention not in (AttentionKind.MLA, AttentionKind.LINEAR) else 0
    attn += 6 * qk
    if qk:
        text += "; q/k norms 6 B per q and k element"
    if layer.moe is not None:
        moe = layer.moe
        k = moe.top_k
        mlp = k * (5 * h + 8 * moe.expert_intermediate) + 8 * moe.num_experts
        if moe.shared_intermediate:
            mlp += 8 * moe.shared_intermediate + 2 * h
        text += f"; MoE: top-{k} copies x (5h + 8 x {moe.expert_intermediate}) + router"
    elif arch.mlp_gated:
        mlp = 8 * layer.intermediate
        text += f"; SwiGLU 8 x intermediate {layer.intermediate}"
    else:
        mlp = 6 * layer.intermediate
        text += f"; MLP 6 x intermediate {layer.intermediate}"
    total = norms + attn + mlp
    standard = layer.attention not in (AttentionKind.LINEAR, AttentionKind.MLA) and layer.moe is None
    if adapter_inputs is not None and standard and arch.mlp_gated:
        # LoRA on a frozen 16-bit base, traced (transformers 5.24 / peft 0.21, benchmarks/allocator): a frozen
        # linear keeps no input and a frozen norm weight no normalised copy, so the layer keeps 8h (the norms'
        # fp32 inputs) + attention + 6I (gate, up, SiLU outputs), plus each adapter's own copy of its input
        # (frozen norms keep only their fp32 input: 4h each, 4(q + kv) for q/k norms)
        total = 4 * h * arch.norms_per_layer + (attn - 2 * qk) + 6 * layer.intermediate + adapter_inputs
        text += "; LoRA on a frozen base: norms 4h each, MLP 6I, each adapter's input copy, 4 B x its width in fp32"
    elif lora:
        # peft casts every adapted layer's input to the adapter dtype (fp32) and keeps it for the weight grads:
        # per layer 28h + 8q + 4kv + 10I instead of 16h + 4q + 4kv + 8I (trace-oracle §4)
        width = layer.intermediate or (layer.moe.expert_intermediate if layer.moe else 0)
        total += 12 * h + 4 * q + 2 * width
        text += "; LoRA: fp32 copies of adapted inputs (+12h + 4q + 2I)"
    return float(total), text


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


def _adapter_extras(work: FinetuneWorkload, adapted: list[Tensor], adapter_bytes: int = 4) -> dict[int, float]:
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
    adapted: list[Tensor] | None = None,
    tp: int = 1,
    residual_bytes: int = 2,
    adapter_copy_bytes: int = 0,
    kept_weights: dict[int, int] | None = None,
    adapter_bytes: int = 4,
    kept_label: str = "GPTQ base: each layer keeps its dequantised 16-bit matrices",
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
    keeps besides its activations (a GPTQ base's dequantised 16-bit matrices)."""
    b, s = work.micro_batch, work.seq_len
    tokens = b * s
    per_layer = []
    text = ""
    extras = _adapter_extras(work, adapted or [], adapter_bytes)
    inputs: dict[int, int] = {}
    merged: dict[int, int] = {}  # per layer: merged expert weights kept for backward
    kept_w = kept_weights or {}
    for t in adapted or []:
        if adapter_copy_bytes and t.layer is not None and t.part == "text":
            inputs[t.layer] = inputs.get(t.layer, 0) + adapter_copy_bytes * t.shape[-1]
        if t.layer is not None and t.part == "text" and len(t.shape) == 3:
            # experts stored as one (E, out, in) parameter (transformers 5): peft adapts the parameter itself,
            # builds W + B A for every expert in the forward and the grouped matmul keeps it for backward
            # (traced: Qwen3-30B-A3B, 2.0 B per adapted expert parameter and layer)
            merged[t.layer] = merged.get(t.layer, 0) + 2 * t.numel
    host = 0.0
    for layer in arch.layers:
        per_tok, text = _layer_bytes_per_token(
            arch, layer, lora, inputs.get(layer.index, 0) if adapter_copy_bytes else None
        )
        per_tok += extras.get(layer.index, 0.0)
        replicated = 16 * arch.hidden
        per_tok = (per_tok - replicated) / tp + replicated
        layer_b = per_tok * tokens * prec.activ_scale
        if work.attention == "eager" and layer.attention not in (AttentionKind.LINEAR,):
            kept = min(s, layer.window or s)
            # (+2 B: Gemma 2's tanh soft-capping of the scores keeps its output)
            layer_b += (6.2 + (2 if arch.attn_softcap else 0)) * layer.n_heads * s * kept * b / tp
        layer_b += (merged.get(layer.index, 0) + kept_w.get(layer.index, 0)) / tp
        per_layer.append(layer_b)
    rb = residual_bytes
    outside = 4 * rb * arch.hidden * tokens  # embedding output, final norm
    amp_copies = 2 * linear_params / tp if prec.amp else 0
    #: autocast's 16-bit weight copies: autograd keeps those of layers that save their activations until their
    #: backward; a checkpointed layer's forward runs without grad, so its copies live only in autocast's cache,
    #: which is cleared when the forward's autocast region ends; a recomputed layer makes its own again
    amp_layer = amp_copies / max(1, len(per_layer))
    amp_saved = amp_copies
    k = work.checkpoint_every
    # the backward of a recomputed layer with adapted experts also holds the gradient of its merged weights
    merged_grad = max(merged.values(), default=0) / tp
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
        how = (
            f"selective checkpointing every {k} layers: {len(ckpt)} layer inputs ({rb} B x h x {tokens} tokens each) + "
            f"{len(kept_layers)} layers with all their activations (up to {max(per_layer) / MIB:.0f} MiB each) + "
            "one layer recomputed"
        )
        resident_how = (
            f"selective checkpointing every {k} layers: {len(ckpt)} layer inputs ({rb} B x h x {tokens} tokens each) + "
            f"{len(kept_layers)} layers with all their activations; no layer recomputed yet"
        )
    elif work.grad_checkpointing:
        # only each layer's input survives the forward; one layer is recomputed at a time in backward
        recompute = max(per_layer) + merged_grad
        amp_saved = 0.0
        total = sum(rb * arch.hidden * tokens for _ in per_layer) + recompute + outside + amp_layer
        how = (
            f"gradient checkpointing: {arch.n_layers} layer inputs ({rb} B x h x {tokens} tokens each) + one layer "
            f"recomputed ({recompute / MIB:.0f} MiB)"
        )
        resident_how = (
            f"gradient checkpointing: {arch.n_layers} layer inputs ({rb} B x h x {tokens} tokens each); no layer "
            "recomputed yet"
        )
    else:
        total = sum(per_layer) + outside + amp_copies
        how = f"{arch.n_layers} layers x {tokens} tokens ({text})"
    plain = len(how)
    # (the figure's share outside the layers, so that the text adds up to it)
    how += f"; the embedding output and the final norm: {4 * rb} B x h x {tokens} tokens"
    if tp > 1:
        how += f"; tensor parallel {tp}: attention and MLP activations split, norms and residual (16h) whole"
    if work.activation_offload:
        # saved tensors stream to CPU memory as the forward goes; the GPU keeps the layer being computed (or
        # recomputed, with checkpointing) and the one in transfer
        in_transfer = rb * arch.hidden * tokens if work.grad_checkpointing else max(per_layer)
        on_gpu = min(total, max(per_layer) + in_transfer + outside + amp_copies)
        host = total - on_gpu
        total = on_gpu
        how += (
            f"; activation offloading: {host / GIB:.2f} GiB moved to CPU memory, the current layer and the one in "
            "transfer stay"
        )
    if extras:
        how += "; LoRA dropout masks (1 B per adapted input)" if work.lora_dropout > 0 else ""
        how += (
            f"; DoRA's saved base, adapter and scaled outputs ({2 + 2 * adapter_bytes} B per adapted output)"
            if work.dora
            else ""
        )
    if kept_w:
        how += f"; {kept_label} (2 B per parameter) for backward"
    if merged:
        how += "; LoRA on experts: each layer's merged expert weights (W + BA, 2 B per parameter) kept for backward"
    if work.attention == "eager":
        how += "; eager attention adds 6.2 B x heads x s x kept keys per layer"
        how += " (+2 B for the soft-capped scores)" if arch.attn_softcap else ""
    if prec.amp:
        how += f"; AMP: fp32 residual stream (x{prec.activ_scale})" + (
            " and autocast's bf16 weight copies" if amp_copies else ""
        )
    resident = max(0.0, total - recompute - amp_layer) if work.grad_checkpointing else total
    # (autocast's cache of 16-bit weight copies is cleared when the forward's autocast region ends; backward
    # re-creates the copies of the one layer it recomputes)
    first = per_layer[0] + (merged_grad if work.grad_checkpointing else 0.0) + rb * arch.hidden * tokens + amp_layer
    return Activations(
        total=round(total),
        per_layer_max=round(max(per_layer)),
        explain=how,
        host=round(host) if work.activation_offload else 0,
        resident=round(resident),
        resident_explain=(resident_how + how[plain:]) if resident_how else how,
        first_layer=round(min(first, total)),
        forward_cache=round(amp_copies - amp_saved) if work.grad_checkpointing else 0,
    )


@dataclass(frozen=True)
class LossHead:
    """The loss head's bytes at the start of backward (``loss``) and at the end of forward (``forward``)."""

    loss: int
    forward: int
    loss_text: str
    forward_text: str
    #: bytes per element of its largest tensor, the log-softmax (4 in fp32, 2 where it stays 16-bit or chunked)
    elem_bytes: int = 4


def loss_head(arch: Architecture, work: FinetuneWorkload, deepspeed: bool) -> LossHead:
    """Logits, log-softmax and their gradients as the model's loss code and the precision make them: fp32 in
    transformers' classes, 16-bit where a model's own loss keeps them so and DeepSpeed runs without autocast,
    Gemma 2's soft-capping, or one chunk in 8 with chunked cross-entropy."""
    b, s = work.micro_batch, work.seq_len
    loss = 12 * b * s * arch.vocab
    loss_fwd = 10 * b * s * arch.vocab
    fwd_text = "10 x batch x seq x vocab B at the end of forward: 16-bit logits, fp32 upcast, log-softmax"
    loss_text = (
        f"12 x batch {b} x seq {s} x vocab {arch.vocab} B at the start of backward: fp32 log-softmax saved, "
        "its gradient and the nll gradient (HF Trainer drops the 16-bit logits)"
    )
    elem = 4
    if not arch.logits_fp32 and deepspeed and not work.chunked_loss:
        elem = 2
        # the model's own loss keeps the logits in 16 bits and DeepSpeed runs without autocast (which would cast
        # the cross-entropy to fp32): log-softmax, its gradient and the input gradient are all 16-bit
        loss = 6 * b * s * arch.vocab
        loss_fwd = 6 * b * s * arch.vocab
        fwd_text = "6 x batch x seq x vocab B at the end of forward: 16-bit logits, shifted copy, log-softmax"
        loss_text = (
            f"6 x batch {b} x seq {s} x vocab {arch.vocab} B at the start of backward: the model's loss keeps the "
            "logits in 16 bits and DeepSpeed runs without autocast (16-bit logits, shifted copy and log-softmax; "
            "then the log-softmax, its gradient and the input gradient)"
        )
    if arch.logit_softcap and not work.chunked_loss:
        # Gemma 2: logits / cap -> tanh -> x cap before the loss; tanh keeps its 16-bit output for backward
        loss += 2 * b * s * arch.vocab
        loss_fwd += 2 * b * s * arch.vocab
        fwd_text += "; the soft-capping's tanh output (2 B)"
        loss_text += f"; the soft-capping's tanh output (2 x batch {b} x seq {s} x vocab {arch.vocab} B)"
    if work.chunked_loss:
        # 16-bit logits of the whole sequence, and the fp32 loss terms for one of 8 chunks at a time
        elem = 2
        loss = 2 * b * s * arch.vocab + 12 * b * s * arch.vocab // 8
        loss_fwd = 2 * b * s * arch.vocab + 10 * b * s * arch.vocab // 8
        fwd_text = "chunked cross-entropy at the end of forward: 16-bit logits and one chunk's fp32 loss terms"
        loss_text = (
            f"chunked cross-entropy: 16-bit logits (2 x batch {b} x seq {s} x vocab {arch.vocab} B) and the fp32 "
            "log-softmax and gradients of one chunk in 8"
        )
    return LossHead(loss, loss_fwd, loss_text, fwd_text, elem)


def comp(name: str, value: float, cat: Category, explain: str) -> Component:
    return Component(name=name, bytes=round(value), category=cat, explain=explain)


def _matmul_transients(
    text_tensors: list[Tensor],
    chosen: list[Tensor],
    work: FinetuneWorkload,
    base_kind: str,
    gptq: tuple[int, int],
    adapter_copy_b: int,
    tp: int,
) -> tuple[list[Component], tuple[Component, ...], list[Component]]:
    """Short-lived tensors of one matmul at a time: (a quantised base's dequantised matrix, in every phase; what a
    forward matmul makes, in the forward and in a checkpointed layer's recompute; what only the forward makes).
    ``gptq``: the largest GPTQ matrix's elements and its bits (0, 0 without a GPTQ base)."""
    b, s = work.micro_batch, work.seq_len
    gptq_largest, gptq_bits = gptq
    dequantised: list[Component] = []
    forward_only: list[Component] = []
    widest_matrix = max(
        (t.numel // (t.shape[0] if len(t.shape) == 3 else 1) for t in text_tensors if t.role in LINEAR_ROLES),
        default=0,
    )
    if base_kind == "bnb4":
        dequantised.append(
            comp(
                "dequantised matrix",
                2 * widest_matrix,
                "activations",
                "bitsandbytes dequantises one 4-bit matrix to 16 bits per matmul",
            )
        )
    elif base_kind == "awq":
        # AutoAWQ's WQLinearMMFunction keeps the input for backward (the general rule) and dequantises the weight
        # again there, then multiplies by it repeated once per sequence of the micro-batch
        dequantised.append(
            comp(
                "dequantised matrix",
                2 * (1 + b) * widest_matrix,
                "activations",
                f"AutoAWQ dequantises one 4-bit matrix to 16 bits in backward and repeats it for each of the {b} "
                "sequences of the micro-batch",
            )
        )
    #: transient tensors of a forward matmul, in the forward and in the recompute of a checkpointed layer
    unpack: tuple[Component, ...] = ()
    if gptq_largest:
        # the shifted int32 words, then their int8 (int16 for 8 bits) copy, both alive for a moment
        narrow = 2 if gptq_bits == 8 else 1
        unpack = (
            comp(
                "GPTQ unpacking",
                (4 + narrow) * gptq_largest,
                "activations",
                f"auto_gptq unpacks the largest {gptq_bits}-bit matrix ({gptq_largest:,} elements) to int32 and "
                f"int{8 * narrow} before scaling it to 16 bits: {4 + narrow} B per element for a moment",
            ),
        )
    if adapter_copy_b == 4 and work.lora_dropout > 0 and chosen:
        # peft casts the adapted input to fp32 and then drops out of that copy: the cast lives next to the dropped
        # copy (which lora_A keeps) until the layer returns (traced: the MLP down projection's input, 4 B x I)
        widest = max(t.shape[-1] for t in chosen)
        unpack += (
            comp(
                "LoRA input cast",
                4 * widest * b * s / tp,
                "activations",
                f"peft's fp32 cast of the widest adapted input ({widest:,} features x {b * s:,} tokens), alive next "
                "to its dropout copy while the layer runs",
            ),
        )
    if chosen and work.dora:
        biggest = max((t.shape[-2] * t.shape[-1] for t in chosen), default=0)
        forward_only.append(
            comp(
                "DoRA weight norm",
                4 * biggest,
                "activations",
                "DoRA builds W + scale x BA in fp32 for the column norms of one adapted matrix at a time",
            )
        )
    return dequantised, unpack, forward_only


@dataclass
class Trained:
    """What a fine-tuning method trains and how the model is stored for it (full fine-tuning or adapters)."""

    trainable: int  # parameters the optimizer updates (adapters, DoRA magnitudes; every parameter in a full fine-tune)
    base_bytes: int  # the frozen base (or the whole model) as stored
    adapter_bytes: int  # adapters and trained copies of modules_to_save
    grads: int  # gradient bytes of everything trained
    state_b: int  # bytes per optimizer state element
    w_explain: str  # what the weights are, for the explanation
    matrices: list[tuple[int, ...]]  # shapes of the trained matrices (Adafactor factors them)
    opt_largest: int  # elements of the largest trained tensor (per-parameter optimizer temporaries)
    act_lin: int  # trained linear parameters whose inputs a full fine-tune keeps
    residual_b: int  # bytes per element of the residual stream (the embedding output dtype)
    chosen: list[Tensor]  # the linear weights the adapters wrap
    saved: list[tuple[str, int]]  # modules_to_save copies: (name, parameters)
    saved_params: int  # parameters of those copies
    bias_params: int  # trained bias parameters (lora_bias)
    a_b: int  # bytes per adapter parameter
    e_b: int  # bytes per other trained parameter (copies, biases)
    extra_states: int  # optimizer states of copies and biases
    extra_temp: int  # their optimizer step temporaries
    amp_fp32: bool  # LoRA under AMP on an fp32 base
    base_kind: str  # the frozen base format's kind ("float" unless quantised)
    gather_fmt: WeightFormat | None  # a quantised frozen base is gathered (FSDP / ZeRO-3) as stored
    lora_fp32_inputs: bool  # adapters keep fp32 copies of their inputs
    adapter_copy_b: int  # LoRA on a frozen 16-bit base: bytes per element of each adapter's saved input
    frozen_kept: dict[int, int]  # per layer, bytes of 16-bit copies of frozen weights its backward keeps
    gptq_largest: int  # elements of the largest GPTQ matrix
    gptq_bits: int  # its bits


def what_trains(
    facts: ModelFacts,
    work: FinetuneWorkload,
    par: Parallelism,
    base_weights: str | WeightFormat,
    deepspeed: bool,
    tensors: tuple[list[Tensor], list[Tensor]],
) -> Trained:
    """The trained parameters, their bytes and the frozen base's storage for full fine-tuning or adapters.
    ``tensors``: the text model's tensors (the vision tower's too when it trains in full) and the vision tower's."""
    prec = precision(work.precision)
    lora = work.method in ("lora", "qlora")
    text_tensors, vision_tensors = tensors
    train_vision = work.vision_tower == "trained"
    all_params = sum(t.numel for t in text_tensors)
    linear = sum(t.numel for t in text_tensors if t.role in LINEAR_ROLES and len(t.shape) >= 2)
    largest = max(t.numel for t in text_tensors)
    # what the adapters branch sets (the fields of Trained say what each holds)
    chosen: list[Tensor] = []
    saved: list[tuple[str, int]] = []
    extra_states = extra_temp = adapter_copy_b = gptq_largest = gptq_bits = a_b = e_b = 0
    lora_fp32_inputs = amp_fp32 = False
    gather_fmt: WeightFormat | None = None
    frozen_kept: dict[int, int] = {}
    base_kind = "float"
    # DeepSpeed casts the module to 16 bits; FSDP's mixed precision gathers 16-bit parameters for the forward:
    # either way the embedding's output, and so the residual stream, is 16-bit (autocast over fp32 weights only
    # without them). Checked on the CPU with FSDP2 (benchmarks/allocator/fsdp_mixed_precision.py): AMP under
    # FSDP saved what pure bf16 saved within 2 %, AMP without FSDP 26 % more
    residual_b = 4 if work.precision == "fp32" or (prec.amp and not (deepspeed or par.fsdp)) else 2
    if lora:
        try:
            chosen = lora_targets(facts, work.lora_targets)
        except LoraTargetError as err:
            raise TrainingError(str(err)) from err
        if train_vision:
            # peft's target names reach the vision tower's linear layers too; all-linear adapts all of them
            chosen = chosen + [t for t in vision_tensors if t.role == "vision" and len(t.shape) == 2]
        trainable = lora_parameters(chosen, work.lora_rank)
        if work.dora:
            # DoRA adds one trainable magnitude per output feature of every adapted matrix
            trainable += sum((t.shape[0] if len(t.shape) == 3 else 1) * t.shape[-2] for t in chosen)
        # AMP keeps the parameters in fp32 and lets autocast make 16-bit copies (DeepSpeed casts the module instead)
        amp_fp32 = prec.amp and not deepspeed
        base_fmt = "nf4-dq" if work.method == "qlora" else ("fp32" if work.precision == "fp32" or amp_fp32 else "bf16")
        if isinstance(base_weights, WeightFormat):
            fmt = base_weights
        else:
            try:
                fmt = parse_weight_format(base_fmt if base_weights == "auto" else base_weights, base_dtype="bf16")
            except FormatError as err:  # pragma: no cover - names checked by the scenario
                raise TrainingError(str(err)) from err
        base = facts.weights(fmt, frozenset({"text"}))
        base_bytes = base.total
        quantised = fmt.kind not in ("float",)
        base_kind = fmt.kind
        gather_fmt = fmt if quantised else None
        #: bytes of one unquantised base parameter (embeddings, norms, lm_head, biases) as training sees it
        base_float = 4 if work.precision == "fp32" or (amp_fp32 and not quantised) else 2
        kbit_note = ""
        if quantised and fmt.kind != "gptq" and not deepspeed and not par.fsdp:
            # peft's prepare_model_for_kbit_training (the usual QLoRA recipe) casts every parameter that is not
            # quantised (embeddings, lm_head, norms, biases) from 16 to 32 bits; it skips GPTQ models, and TRL
            # never calls it for sharded QLoRA (FSDP / ZeRO-3: the 4-bit weights must keep one storage dtype)
            unquantised = base.params - base.quantized_params
            base_bytes += 2 * unquantised
            base_float = 4
            residual_b = 4  # the fp32 embedding makes the residual stream fp32
            kbit_note = f"; {unquantised:,} unquantised parameters cast to fp32 by prepare_model_for_kbit_training"
        # adapters: fp32 (peft >= 0.12 autocast_adapter_dtype, and always on a quantised base whose weight is not
        # a float tensor), else the base's dtype; DeepSpeed makes them 16-bit with fp32 master copies
        if deepspeed:
            a_b, state_b, adapter_label = 2, 4, "16-bit (DeepSpeed) with fp32 master weights"
        elif work.adapter_dtype == "fp32" or quantised:
            a_b, state_b, adapter_label = 4, 4, "fp32"
        else:
            a_b = state_b = base_float
            adapter_label = f"the base dtype ({'fp32' if a_b == 4 else '16-bit'})"
        lora_fp32_inputs = a_b == 4 and work.precision != "fp32"
        if fmt.kind == "gptq":
            # auto_gptq's QuantLinear (the torch path peft trains through: exllama off, and its CUDA kernel only
            # below 128 rows) unpacks the 4-bit weight to int32, then int8, scales it to a 16-bit matrix and
            # multiplies; autograd keeps that matrix, not the input, for the input's gradient. Checked with
            # auto_gptq 0.7.1's qlinear_cuda_old on the CPU: the saved tensor is the (in, out) fp16 weight, and the
            # unpacking peaks at about 5 B per weight element
            gptq_bits = fmt.bits or 4
            for t in text_tensors:
                if t.layer is not None and fmt.is_quantized(t.name, t.role, shape=t.shape):
                    frozen_kept[t.layer] = frozen_kept.get(t.layer, 0) + 2 * t.numel
                    gptq_largest = max(gptq_largest, t.shape[-2] * t.shape[-1])
        if amp_fp32 and not quantised and not par.fsdp:
            # autocast casts each frozen fp32 weight to 16 bits for its matmul (not cached: it needs no grad) and
            # autograd keeps that copy, not the input, for the input's gradient; peft leaves the adapters' inputs
            # in the compute dtype under autocast (traced: Qwen2.5-1.5B LoRA, AMP)
            for t in text_tensors:
                if t.layer is not None and t.role in LINEAR_ROLES and len(t.shape) >= 2:
                    frozen_kept[t.layer] = frozen_kept.get(t.layer, 0) + 2 * t.numel
            lora_fp32_inputs = False
        if amp_fp32 and par.fsdp:
            # FSDP's mixed precision (what accelerate sets for AMP) casts every unit, the adapters' too, to 16 bits
            # for the forward: the adapters see their inputs as they are
            lora_fp32_inputs = False
        fsdp1 = par.fsdp and par.fsdp_version == 1
        frozen_rule = work.precision in ("bf16", "fp16") or (amp_fp32 and not quantised)
        if (not quantised or fmt.kind == "gptq") and frozen_rule and not fsdp1:
            # (under FSDP1 with use_orig_params, as accelerate wraps PEFT models, a frozen weight is a view of a
            # flat parameter that requires grad, so frozen linears keep their inputs as in a full fine-tune: the
            # general rule applies. Checked on CPU with two gloo ranks and torch 2.13: +78 % saved activations
            # in a LoRA block; FSDP2's fully_shard keeps the frozen weights frozen and matches plain LoRA byte
            # for byte, so it takes this rule)
            adapter_copy_b = 4 if lora_fp32_inputs else 2
        saved, bias_params = _saved_modules(facts, work, chosen)
        saved_params = sum(n for _, n in saved)
        e_b = 2 if deepspeed else base_float
        adapter_bytes = trainable * a_b + saved_params * e_b  # the trainable copies of modules_to_save
        grads = trainable * a_b + (saved_params + bias_params) * e_b
        w_explain = (
            f"frozen base {all_params:,} params in {fmt.label} + {trainable:,} LoRA parameters "
            f"(rank {work.lora_rank}, {len(chosen)} target matrices) in {adapter_label}{kbit_note}"
        )
        if saved:
            w_explain += "; trained copies of " + ", ".join(f"{name} ({n:,} parameters)" for name, n in saved)
        if bias_params:
            w_explain += f"; {bias_params:,} bias parameters trained (lora_bias={work.lora_bias})"
        matrices: list[tuple[int, ...]] = []
        for t in chosen:
            matrices += [(work.lora_rank, t.shape[-1]), (t.shape[-2], work.lora_rank)]
        opt_largest = max((work.lora_rank * t.shape[-1] for t in chosen), default=0)
        act_lin = 0
        if saved_params + bias_params and not deepspeed:
            extra_states, extra_temp, _, _ = optimizer_bytes(
                work.optimizer,
                saved_params + bias_params,
                e_b,
                max((n for _, n in saved), default=bias_params),
                [],
            )
    else:
        if work.method != "full":  # pragma: no cover - Literal
            raise TrainingError(f"unknown method {work.method}")
        trainable = all_params
        base_bytes = all_params * prec.weights
        adapter_bytes = 0
        grads = trainable * prec.grads
        state_b = prec.state
        w_explain = f"{all_params:,} parameters x {prec.weights} B ({prec.label})"
        matrices = [t.shape for t in text_tensors if len(t.shape) >= 2]
        opt_largest = largest
        act_lin = linear
        saved_params = bias_params = 0
    return Trained(
        trainable=trainable,
        base_bytes=base_bytes,
        adapter_bytes=adapter_bytes,
        grads=grads,
        state_b=state_b,
        w_explain=w_explain,
        matrices=matrices,
        opt_largest=opt_largest,
        act_lin=act_lin,
        residual_b=residual_b,
        chosen=chosen,
        saved=saved,
        saved_params=saved_params,
        bias_params=bias_params,
        a_b=a_b,
        e_b=e_b,
        extra_states=extra_states,
        extra_temp=extra_temp,
        amp_fp32=amp_fp32,
        base_kind=base_kind,
        gather_fmt=gather_fmt,
        lora_fp32_inputs=lora_fp32_inputs,
        adapter_copy_b=adapter_copy_b,
        frozen_kept=frozen_kept,
        gptq_largest=gptq_largest,
        gptq_bits=gptq_bits,
    )


def largest_cached_block(arch: Architecture, work: FinetuneWorkload, head: LossHead) -> int:
    """Bytes of the largest tensor the forward and backward free: what the caching allocator keeps as its largest
    cached block when the optimizer step starts. The loss head's fp32 log-softmax (4 B x batch x seq x vocab; the
    16-bit one where the loss head is 16-bit or chunked), or eager attention's fp32 scores when larger."""
    b, s = work.micro_batch, work.seq_len
    block = head.elem_bytes * b * s * arch.vocab
    if work.attention == "eager":
        heads = max((layer.n_heads for layer in arch.layers), default=0)
        block = max(block, 4 * b * heads * s * s)
    return block


def step_new_segments(optimizer: str, sizes: list[int], elem_bytes: int, block: int) -> tuple[int, int]:
    """(bytes, tensors) of optimizer-step temporaries larger than ``block``, the largest block the activations
    left cached: the caching allocator has nowhere to put them but new segments, reserved on top of what the
    forward and backward reserved and kept after the step (the first step makes the states of those tensors the
    same way). ``sizes``: elements of each trained tensor; ``elem_bytes``: bytes of a state element. Replayed
    trace (benchmarks/allocator): Qwen2.5-1.5B's full fine-tune with Adafactor at 1,024 tokens, four fp32 copies of
    the embedding (890 MiB each) beside 594 MiB log-softmax blocks. Not modelled: the same model's LoRA with
    trained embedding / lm_head copies, whose 445 MiB states and temporaries would fit those blocks but find them
    taken by the copies' gradients at the first step (the estimate warns)."""
    if optimizer == "adafactor":
        # the per-parameter fp32 copies of the largest tensor (optimizer_bytes' temporary), one tensor at a time
        largest = max(sizes, default=0)
        copies = 2 if elem_bytes >= 4 else 4
        return (copies * largest * 4, 1) if largest * 4 > block else (0, 0)
    big = [n for n in sizes if n * elem_bytes > block]
    if not big:
        return 0, 0
    if optimizer in ("adamw", "lion"):
        return sum(n * elem_bytes for n in big), len(big)
    if optimizer == "adamw-torch2.0":
        return 2 * sum(n * elem_bytes for n in big), len(big)
    if optimizer == "adamw-forloop":
        return max(big) * elem_bytes, 1
    return 0, 0  # fused, 8-bit, paged and SGD steps make no temporaries


# ------------------------------------------------------------------------------------------ the run


@dataclass
class TrainingRun:
    phases: list[Phase]
    trainable: int
    host_bytes: int
    warnings: list[str]
    gpus: int
    #: pipeline parallel: phases of each stage (every GPU of a stage alike); empty when pp = 1
    stages: list[list[Phase]] = field(default_factory=list)
    #: optimizer-step temporaries that take new segments of the caching allocator (step_new_segments), per GPU,
    #: and what they are
    step_segments: int = 0
    step_segments_text: str = ""


def training_phases(
    facts: ModelFacts,
    work: FinetuneWorkload,
    par: Parallelism,
    gpu_count: int,
    base_weights: str | WeightFormat = "auto",
    gpus_per_node: int | None = None,
) -> TrainingRun:
    """``base_weights``: the frozen base's storage for LoRA / QLoRA ("auto" = bf16 for LoRA, nf4 with double
    quantisation for QLoRA; a GPTQ / AWQ / bnb name or format trains adapters on that quantised base).
    ``gpus_per_node``: GPUs of one machine (hybrid FSDP shards inside a machine); None = all of them."""
    arch = facts.arch
    if work.method == "qlora" and work.precision in ("fp32",):
        raise TrainingError("QLoRA keeps the base in 4 bits and computes in 16 bits: --precision fp32 does not apply")
    prec = precision(work.precision)
    lora = work.method in ("lora", "qlora")
    warnings: list[str] = []
    text_tensors = [t for t in facts.tensors if t.part == "text"]
    vision_tensors = [t for t in facts.tensors if t.part == "vision"]
    if work.vision_tower == "trained" and not vision_tensors:
        raise TrainingError(f"{facts.model_id} has no vision tower to train (vision_tower=trained)")
    train_vision = work.vision_tower == "trained"
    if train_vision and work.method == "full":
        # the vision tower's parameters train like the text model's
        text_tensors = text_tensors + vision_tensors
    all_params = sum(t.numel for t in text_tensors)
    #: frozen vision weights kept on the GPU next to the text model (16-bit; fp32 with fp32 training)
    vision_frozen = 0
    if vision_tensors and work.vision_tower != "absent" and not (train_vision and work.method == "full"):
        vision_frozen = sum(t.numel for t in vision_tensors) * (4 if work.precision == "fp32" else 2)

    # DeepSpeed (any ZeRO stage) casts the whole module to its 16-bit dtype and keeps fp32 master weights, Adam
    # moments and an fp32 gradient partition for every trainable parameter: 2 + 2 + 16 B
    deepspeed = par.zero > 0 and work.precision != "fp32"
    tr = what_trains(facts, work, par, base_weights, deepspeed, (text_tensors, vision_tensors))
    trainable, chosen, saved, bias_params = tr.trainable, tr.chosen, tr.saved, tr.bias_params
    a_b, base_kind, grads, residual_b = tr.a_b, tr.base_kind, tr.grads, tr.residual_b
    states, temp, s_text, t_text = optimizer_bytes(work.optimizer, trainable, tr.state_b, tr.opt_largest, tr.matrices)
    states += tr.extra_states
    temp += tr.extra_temp
    if lora and deepspeed:
        lora_trained = trainable + tr.saved_params + bias_params
        states, temp = 16 * lora_trained, (0 if par.zero == 3 else 2 * lora_trained)
        s_text = (
            "DeepSpeed mixed precision: fp32 master, Adam moments and gradient partition (16 B/param) of the "
            "trainable parameters"
        )
        t_text = "DeepSpeed's fused Adam step: no step temporaries" if par.zero == 3 else DEEPSPEED_FLAT_TEXT
    trained = trainable + tr.saved_params + bias_params
    acts = activations(
        arch,
        work,
        precision("bf16") if prec.amp and (deepspeed or par.fsdp) else prec,
        tr.lora_fp32_inputs,
        tr.act_lin,
        chosen,
        tp=par.tp,
        residual_bytes=residual_b,
        adapter_copy_bytes=tr.adapter_copy_b,
        kept_weights=tr.frozen_kept,
        adapter_bytes=a_b or 4,
        kept_label=(
            "AMP: each layer keeps autocast's 16-bit copies of its frozen fp32 weights"
            if base_kind == "float"
            else "GPTQ base: each layer keeps its dequantised 16-bit matrices"
        ),
    )
    b, s = work.micro_batch, work.seq_len
    head = loss_head(arch, work, deepspeed)
    loss, loss_fwd, loss_text, fwd_text = head.loss, head.forward, head.loss_text, head.forward_text

    # --- sharding and offload (per GPU)
    sh = shards(par, gpu_count, gpus_per_node)
    tp, pp = sh.tp, sh.pp
    if par.zero and not lora and work.precision != "fp32":
        client = (
            None
            if work.optimizer in ("adamw", "adamw-fused")
            else optimizer_bytes(work.optimizer, all_params, 4, tr.opt_largest, tr.matrices)
        )
        ds = deepspeed_states(all_params, par.zero, client)
        model = replace(ds, weights=ds.weights + vision_frozen)
    else:
        model = ModelStates(
            weights=tr.base_bytes + tr.adapter_bytes + vision_frozen,
            grads=grads,
            states=states,
            temp=temp,
            weights_text=tr.w_explain,
            states_text=s_text,
            temp_text=t_text,
        )
    grads = round(model.grads)
    per = place_states(model, sh, par)
    if vision_frozen:
        per.notes.insert(0, f"frozen vision tower {vision_frozen / GIB:.2f} GiB")
    w_gpu, g_gpu, s_gpu, t_gpu = per.weights, per.grads, per.states, per.temp
    host = float(acts.host) + per.host
    # the step's temporaries of tensors too large for any block the activations left cached take new segments
    # (one rank holding whole tensors: sharded and flat-buffer optimizers are not modelled this way)
    step_segments, step_text = 0, ""
    if not work.expandable_segments and par.zero == 0 and not par.fsdp and tp == 1 and pp == 1:
        block = largest_cached_block(arch, work, head)
        if lora:
            sizes, elem = [n for _, n in saved], tr.e_b
        else:
            sizes, elem = [t.numel for t in text_tensors], tr.state_b
        step_segments, count = step_new_segments(work.optimizer, sizes, elem, block)
        if step_segments:
            step_text = (
                f"optimizer step: temporaries of {count} tensor(s) larger than the largest block the activations "
                f"leave cached ({block / MIB:,.0f} MiB) take new segments, {step_segments / GIB:.2f} GiB more "
                "reserved"
            )
    gathered, gathered_text = gathered_layers(facts, sh, par, tr.gather_fmt)
    buckets, bucket_text = comm_buckets(par, sh, work.precision)
    # with pipeline parallel (1F1B) the first stage holds 1/pp of the layers but pp micro-batches in flight:
    # the same activation bytes as one micro-batch through every layer
    a_gpu = acts.total
    loss_gpu = loss / tp

    shard_note = sh.note
    notes = per.notes
    c_weights = comp(
        "weights", w_gpu, "weights", model.weights_text + shard_note + (f"; {', '.join(notes)}" if notes else "")
    )
    states_text = model.states_text + shard_note
    if par.offload in ("optimizer", "params"):
        # nothing of the states stays on the GPU: say where they are, not only how they would be split
        states_text = (
            f"in CPU memory (offload): {model.states / sh.states / GIB:.2f} GiB per GPU, the step runs there; "
            + states_text
        )
    c_states = comp("optimizer states", s_gpu, "optimizer", states_text)
    c_grads = comp(
        "gradients",
        g_gpu,
        "gradients",
        (
            f"{'trainable parameters' if lora else 'all parameters'} ({trained:,}) x {grads // max(1, trained)} B"
            + shard_note
        ),
    )
    c_acts = comp("activations", a_gpu, "activations", acts.explain)
    c_loss = comp(
        "loss head",
        loss_gpu,
        "logits",
        loss_text,
    )
    c_logits = comp(
        "logits and loss",
        loss_fwd / tp,
        "logits",
        fwd_text,
    )
    c_temp = comp("optimizer step temporaries", t_gpu, "optimizer", model.temp_text)
    extra = []
    if gathered:
        extra.append(
            comp(
                "gathered layer parameters",
                gathered,
                "weights",
                gathered_text,
            )
        )
    if buckets:
        extra.append(comp("communication buckets", buckets, "overhead", bucket_text))
    dequantised, unpack, forward_only = _matmul_transients(
        text_tensors, chosen, work, base_kind, (tr.gptq_largest, tr.gptq_bits), tr.adapter_copy_b, par.tp
    )
    extra += dequantised
    # ZeRO-3 gathers a module's parameters whole for its forward: at the logits that is the lm_head (the tied
    # embedding), held through the loss into its own backward; a large vocabulary outweighs two decoder layers
    # (Gemma-2-2B: 590 M parameters against 2 x 85 M). FSDP keeps its root unit instead (gathered_layers)
    extra_at_head = extra
    if gathered and par.zero == 3 and not par.fsdp:
        lm_head = 2 * arch.vocab * arch.hidden / par.tp
        if lm_head > gathered:
            extra_at_head = [
                comp(
                    "gathered layer parameters",
                    lm_head,
                    "weights",
                    "ZeRO-3: the lm_head gathered whole for the logits, held until its backward (larger than the "
                    "current and prefetched layer)",
                )
                if c.name == "gathered layer parameters"
                else c
                for c in extra
            ]
    forward_extra = [*unpack, *forward_only]
    if train_vision:
        warnings.append(
            "vision tower trained: its activations depend on the images per sample, which this estimate does "
            "not include"
        )
    # benchmarks/allocator: a traced 48-step Yi-6B LoRA run with lengths drawn up to 8192 tokens, replayed through
    # the caching-allocator model, reserved 35.6 GiB for a 19.3 GiB allocated peak (20.7 with expandable segments);
    # the same run at one fixed length reserves what the fixed-shape rule above gives
    if not work.expandable_segments and work.mean_seq_len is None:
        warnings.append(
            "if the batches vary in length (no packing), PyTorch's cache grows over the steps: in a simulated LoRA "
            "run with lengths up to 8192 it reserved 1.8 x the allocated peak; give their mean length to count it, "
            "or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (it kept that run within 7 %)"
        )
    elif work.mean_seq_len is not None and not work.expandable_segments:
        warnings.append(
            f"batches of varying length (mean {work.mean_seq_len} of at most {work.seq_len} tokens): the reserved "
            "level includes the cache they leave, which nvidia-smi shows; the run itself needs little more than "
            "the allocated peak, since PyTorch gives cached blocks back before it runs out"
        )
    # benchmarks/data/device: on an H200 the reserve rule (allocated + a x loss head + b x one layer) was within
    # 2.3 % median of max_memory_reserved, but 13-18 % low for these two kinds of step, whose large per-tensor
    # optimizer allocations the rule does not see (their allocator replays match the GPU within 1 % and 6.5 %)
    # (Adafactor's run is modelled since: its fp32 copies of the embedding take new segments, step_new_segments)
    if saved and not work.expandable_segments:
        warnings.append(
            "trained embedding / head copies: a measured run of this kind reserved 18 % more than the reserved "
            "level here (PyTorch's cache; nvidia-smi shows it); the allocated peak, which decides whether the step "
            "runs, was within 2 %"
        )
    held: tuple[Component, ...] = ()  # gradients kept between micro-batches
    fresh: tuple[Component, ...] = ()  # a new gradient next to the stored one, for a moment in backward
    fresh_end: tuple[Component, ...] = ()  # ... or filled through backward and added at its end
    if work.grad_accum > 1:
        warnings.append(
            f"gradient accumulation {work.grad_accum}: gradients stay allocated between micro-batches; "
            "the forward of the next micro-batch runs with them"
        )
        held = (c_grads,)
        if par.zero == 2 and work.precision != "fp32":
            # stage_1_and_2.py: each micro-batch's backward fills a new 16-bit grads_in_partition buffer while the
            # accumulated partition is still held, and adds it at the end of backward
            fresh_end = (
                comp(
                    "fresh gradient",
                    model.grads / sh.states,
                    "gradients",
                    "DeepSpeed ZeRO-2 with gradient accumulation: the next micro-batch's gradient partition fills a "
                    "new 16-bit buffer before it is added to the accumulated one",
                ),
            )
        elif not (par.zero or par.fsdp):
            # autograd's AccumulateGrad computes a parameter's new gradient in a fresh tensor and then adds it to
            # the stored .grad: the largest trainable tensor's gradient exists twice for a moment (DeepSpeed and
            # FSDP reduce into their own buckets instead)
            largest_grad = (
                max(
                    [n * tr.e_b for _, n in saved] + [t.shape[-1] * work.lora_rank * a_b for t in chosen],
                    default=0,
                )
                if lora
                else tr.opt_largest * prec.grads
            )
            fresh = (
                comp(
                    "fresh gradient",
                    largest_grad / per.grads_div,
                    "gradients",
                    f"the newly computed gradient of the largest trainable tensor ({largest_grad:,} B), "
                    "before gradient accumulation adds it to the stored one",
                ),
            )
            fresh_end = fresh
    tied = not any(t.role == "lm_head" for t in text_tensors)
    if work.method == "full" and tied and not (par.zero or par.fsdp):
        # a tied embedding gets two gradients: the lm_head's at the loss head, stored, and the embedding's at the
        # very end of backward, computed in a fresh tensor and summed out of place into a third (traced:
        # Qwen2.5-1.5B under AMP, 2 x 0.87 GiB of fp32 over weights + states + gradients). With gradient
        # accumulation the sum is then added to the stored .grad in place: the same two over the held gradients
        # (autograd buffers a node's inputs until all have arrived, whether or not .grad exists)
        embed = next((t for t in text_tensors if t.role == "embedding"), None)
        if embed is not None:
            fresh_end += (
                comp(
                    "tied embedding gradient",
                    2 * embed.numel * prec.grads / per.grads_div,
                    "gradients",
                    "the tied embedding's second gradient and its sum with the lm_head's, at the end of backward",
                ),
            )
    head_copy: tuple[Component, ...] = ()
    if lora and tr.amp_fp32 and base_kind == "float" and not par.fsdp:
        # the lm_head's (or tied embedding's) 16-bit copy, kept by the logits matmul until the loss head's backward
        head_copy = (
            comp(
                "lm_head 16-bit copy",
                2 * arch.vocab * arch.hidden / par.tp,
                "activations",
                "autocast's 16-bit copy of the fp32 lm_head, kept for the logits' backward until the loss head is done",
            ),
        )
    if acts.forward_cache:
        forward_extra.append(
            comp(
                "autocast weight cache",
                acts.forward_cache,
                "activations",
                "autocast's 16-bit copies of the fp32 weights of layers whose forward runs without grad "
                "(checkpointed), cached until the forward's autocast region ends",
            )
        )
    # with checkpointing, the forward and the loss head see only the checkpointed layer inputs; the loss head's
    # tensors are freed (its backward done) before the last layer is recomputed, so the two do not add up
    early = (
        comp("activations", acts.resident, "activations", acts.resident_explain) if work.grad_checkpointing else c_acts
    )
    phases = [
        Phase(
            name="forward",
            components=(c_weights, c_states, *held, early, c_logits, *head_copy, *extra_at_head, *forward_extra),
        ),
        Phase(
            name="loss + start of backward",
            components=(c_weights, c_states, *held, early, c_loss, *head_copy, *fresh, *extra_at_head),
        ),
    ]
    retained: tuple[Component, ...] = ()
    if work.grad_checkpointing:
        if par.fsdp and par.fsdp_version == 1 and lora:
            # FSDP1 frozen units (peft's wrap policy puts the adapters in their own units) register a reshard-only
            # post-backward hook on each layer's input; under reentrant checkpointing that input is the recompute's
            # detached copy, and the hook's closure keeps it and its gradient alive until _finalize_params at the
            # end of backward: every layer's 16-bit input gradient piles up, the peak moves to layer 0's backward
            kept = (arch.n_layers - 1) * residual_b * arch.hidden * b * s
            retained = (
                comp(
                    "retained input gradients",
                    kept,
                    "activations",
                    f"FSDP with a frozen base and reentrant checkpointing: the input gradients of {arch.n_layers - 1} "
                    f"layers ({residual_b} B x h x {b * s} tokens each) stay alive until the end of backward",
                ),
            )
        phases.append(
            Phase(
                name="backward (recompute)",
                components=(c_weights, c_states, *held, c_acts, *retained, *fresh, *extra, *unpack),
            )
        )
    # late in backward the first layer is recomputed and back-propagated while the gradients of every later layer
    # (and of the lm_head) are already allocated: with a small loss head and gradients about the size of the
    # checkpoints, this is the peak of the backward (traced: a GPTQ LoRA step peaks here, at the unpacking of the
    # first layer's last matrix)
    if lora:
        raw_grads = trainable * a_b + (tr.saved_params + bias_params) * tr.e_b
        embed_names = {t.name for t in text_tensors if t.role == "embedding"}
        first_grads = lora_parameters([t for t in chosen if t.layer == 0 and t.part == "text"], work.lora_rank) * a_b
        first_grads += sum(n for name, n in saved if name in embed_names) * tr.e_b
    else:
        raw_grads = all_params * prec.grads
        first_grads = prec.grads * sum(
            t.numel for t in text_tensors if t.layer == 0 or (t.role == "embedding" and not tied)
        )
    later = g_gpu * max(0.0, 1 - first_grads / max(1, raw_grads))
    c_later = comp(
        "gradients",
        later,
        "gradients",
        "gradients of every layer after the first (and of the lm_head), already computed" + shard_note,
    )
    c_first = comp(
        "activations",
        acts.first_layer,
        "activations",
        "the first layer's input and activations"
        + (" (recomputed)" if work.grad_checkpointing else "")
        + "; the other layers' are freed by now",
    )
    phases.append(
        Phase(
            name="backward (first layer)",
            components=(c_weights, c_states, *(held or (c_later,)), c_first, *retained, *fresh, *extra, *unpack),
        )
    )
    phases += [
        Phase(name="backward (end)", components=(c_weights, c_states, c_grads, *fresh_end, *extra)),
        Phase(name="optimizer step", components=(c_weights, c_grads, c_states, c_temp, *extra)),
    ]
    if tp > 1 and arch.layers[0].n_kv_heads % tp and arch.layers[0].attention != AttentionKind.MLA:
        raise TrainingError(
            f"tensor parallel {tp} does not divide the {arch.layers[0].n_kv_heads} KV heads of {facts.model_id}"
        )
    if par.fsdp and par.zero:
        # (refused here, not by the scenario: a plan saved with both still opens, and says what to change)
        raise TrainingError(
            f"FSDP and DeepSpeed ZeRO-{par.zero} both shard the model and cannot run together; choose one "
            "(--fsdp or --zero)"
        )
    if par.offload == "optimizer" and not (par.zero or par.fsdp):
        # DeepSpeed's offload_optimizer (ZeRO-Offload, one GPU is enough) or FSDP's CPU offload move the states;
        # plain PyTorch has nothing that does
        raise TrainingError(
            "CPU offload of the optimizer is a DeepSpeed ZeRO (or FSDP) feature: add ZeRO-2 (--zero 2; one GPU is "
            "enough) or FSDP (--fsdp)"
        )
    if par.offload == "params" and not (par.zero == 3 or par.fsdp):
        raise TrainingError(
            "CPU offload of the parameters needs DeepSpeed ZeRO-3 (offload_param) or FSDP: use --zero 3 or --fsdp"
            + (f", not ZeRO-{par.zero}" if par.zero else "")
        )
    if pp > 1 and (par.zero >= 2):
        raise TrainingError(
            f"ZeRO-{par.zero} shards gradients across data-parallel ranks, which DeepSpeed does not "
            "combine with pipeline parallel (--pp); use ZeRO-1"
        )
    if work.method == "qlora" and (par.zero == 3 or par.fsdp):
        warnings.append("QLoRA with ZeRO-3/FSDP needs bnb_4bit_quant_storage matching the compute dtype")
    per_machine = min(gpus_per_node or sh.n, sh.n)
    if par.offload in ("optimizer", "params") and per.host:
        # DeepSpeed's estimate_zero2/3_model_states_mem_needs multiply their CPU figure by additional_buffer_factor
        # 1.5 (a margin for pinned buffers and fragmentation, not a measured term): say what it would give
        machine = per.host * per_machine / GIB
        warnings.append(
            f"CPU memory for the offload: {machine:,.1f} GiB per machine ({per_machine} GPU shares); DeepSpeed's own "
            f"estimator adds a 1.5 x buffer margin ({1.5 * machine:,.1f} GiB) for pinned buffers, not counted here"
        )
    if per_machine > 1 and not (par.zero == 3 or par.fsdp) and tr.base_kind == "float":
        # every rank builds the whole model on the CPU before moving it to its GPU (DeepSpeed's own ZeRO-1/2
        # estimator counts 4 B x parameters x GPUs per machine of CPU memory for it); ZeRO-3's zero.Init and FSDP's
        # RAM-efficient loading partition the weights as they load
        whole = tr.base_bytes / GIB
        warnings.append(
            f"at start-up each of the {per_machine} processes on a machine loads the whole model ({whole:.1f} GiB) "
            f"into CPU memory before moving it to its GPU: about {per_machine * whole:.0f} GiB of CPU memory per "
            "machine for a moment, unless the weights load partitioned (ZeRO-3, FSDP)"
        )
    stages: list[list[Phase]] = []
    if pp > 1:
        stages = pipeline_stages(facts, phases, pp, work.grad_accum)
        if work.grad_accum < pp:
            warnings.append(
                f"pipeline parallel {pp} with {work.grad_accum} micro-batch(es) per step: the pipeline is mostly "
                "bubble; 1F1B needs at least as many micro-batches as stages to fill it"
            )
    return TrainingRun(
        phases=phases,
        trainable=trained,
        host_bytes=round(host),
        warnings=warnings,
        gpus=sh.n,
        stages=stages,
        step_segments=step_segments,
        step_segments_text=step_text,
    )


def _saved_modules(
    facts: ModelFacts, work: FinetuneWorkload, chosen: list[Tensor]
) -> tuple[list[tuple[str, int]], int]:
    """(modules peft trains in full as copies: (name, parameters)), trainable bias parameters)."""
    text = [t for t in facts.tensors if t.part == "text"]
    vocab = facts.arch.vocab
    embed = [t for t in text if t.role == "embedding" and t.shape and t.shape[0] == vocab]
    saved: list[tuple[str, int]] = []
    for kind in work.modules_to_save:
        if kind == "embed":
            saved += [(t.name, t.numel) for t in embed]
        else:
            head = [t for t in text if t.role == "lm_head"]
            # a tied lm_head shares the embedding matrix; modules_to_save copies it into its own trainable matrix
            saved += [(t.name, t.numel) for t in head] or [("lm_head (tied)", t.numel) for t in embed[:1]]
    biases = [t for t in text if t.role == "bias"]
    if work.lora_bias == "lora_only":
        adapted = {t.name.removesuffix(".weight") for t in chosen}
        biases = [t for t in biases if t.name.removesuffix(".bias") in adapted]
    bias_params = sum(t.numel for t in biases) if work.lora_bias != "none" else 0
    return saved, bias_params
