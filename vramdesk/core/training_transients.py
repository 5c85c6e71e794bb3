"""Short-lived tensors of a fine-tuning step and what the caching allocator does with them: one matmul's
transients (a quantised base's dequantised matrix, GPTQ unpacking, peft's fp32 input cast, DoRA's weight norm),
and the optimizer step's temporaries that find no block the forward and backward left cached.
"""

from __future__ import annotations

from collections.abc import Sequence

from .architecture import Architecture
from .inventory import Tensor
from .lora import LINEAR_ROLES
from .messages import Message, text
from .result import Category, Component
from .scenario import FinetuneWorkload
from .training_state import Trained

BNB_DEQUANTISED = text(
    "training.transient.bnb_dequantised", "bitsandbytes dequantises one 4-bit matrix to 16 bits per matmul"
)
AWQ_DEQUANTISED = Message(
    "training.transient.awq_dequantised",
    "AutoAWQ dequantises one 4-bit matrix to 16 bits in backward and repeats it for each of the {batch} sequences "
    "of the micro-batch",
)
GPTQ_UNPACKING = Message(
    "training.transient.gptq_unpacking",
    "auto_gptq unpacks the largest {bits}-bit matrix ({elements:,} elements) to int32 and int{narrow_bits} before "
    "scaling it to 16 bits: {bytes} B per element for a moment",
)
LORA_INPUT_CAST = Message(
    "training.transient.lora_input_cast",
    "peft's fp32 cast of the widest adapted input ({features:,} features x {tokens:,} tokens), alive next to its "
    "dropout copy while the layer runs",
)
DORA_NORM = text(
    "training.transient.dora_norm",
    "DoRA builds W + scale x BA in fp32 for the column norms of one adapted matrix at a time",
)


def comp(name: str, value: float, cat: Category, explain: str) -> Component:
    return Component(name=name, bytes=round(value), category=cat, explain=explain)


def matmul_transients(
    text_tensors: Sequence[Tensor], tr: Trained, work: FinetuneWorkload, tp: int
) -> tuple[list[Component], tuple[Component, ...], list[Component]]:
    """Short-lived tensors of one matmul at a time: (a quantised base's dequantised matrix, in every phase; what a
    forward matmul makes, in the forward and in a checkpointed layer's recompute; what only the forward makes)."""
    b, s = work.micro_batch, work.seq_len
    chosen, base_kind, adapter_copy_b = tr.params.adapted_weights, tr.base.kind, tr.backward.adapter_input_bytes
    gptq_largest, gptq_bits = tr.base.gptq_largest_matrix, tr.base.gptq_bits
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
                BNB_DEQUANTISED,
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
                AWQ_DEQUANTISED(batch=b),
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
                GPTQ_UNPACKING(bits=gptq_bits, elements=gptq_largest, narrow_bits=8 * narrow, bytes=4 + narrow),
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
                LORA_INPUT_CAST(features=widest, tokens=b * s),
            ),
        )
    if chosen and work.dora:
        biggest = max((t.shape[-2] * t.shape[-1] for t in chosen), default=0)
        forward_only.append(
            comp(
                "DoRA weight norm",
                4 * biggest,
                "activations",
                DORA_NORM,
            )
        )
    return dequantised, unpack, forward_only


def largest_cached_block(arch: Architecture, work: FinetuneWorkload, loss_elem_bytes: int) -> int:
    """Bytes of the largest tensor the forward and backward free: what the caching allocator keeps as its largest
    cached block when the optimizer step starts. The loss head's fp32 log-softmax (4 B x batch x seq x vocab; the
    16-bit one where the loss head is 16-bit or chunked: ``loss_elem_bytes``, LossHead.elem_bytes), or eager
    attention's fp32 scores when larger."""
    b, s = work.micro_batch, work.seq_len
    block = loss_elem_bytes * b * s * arch.vocab
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
