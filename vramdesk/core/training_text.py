"""The sentences of the fine-tuning phases (:mod:`vramdesk.core.training`): what its components are, and the
warnings the estimate gives beside its figures. Each is a message with an id (:mod:`vramdesk.core.messages`), so
that the window translates it by its id; the English is the estimate's, byte for byte.
"""

from __future__ import annotations

from .messages import Message, text

# ------------------------------------------------------------------------------------------ components

TRAINER_FIXED = Message(
    "training.trainer.fixed",
    "{trainer} has no setting for these and always runs with them, whatever the plan says: {settings}",
)
FROZEN_VISION = Message("training.weights.frozen_vision", "frozen vision tower {gib:.2f} GiB")
DEEPSPEED_LORA_STATES = text(
    "training.states.deepspeed_lora",
    "DeepSpeed mixed precision: fp32 master, Adam moments and gradient partition (16 B/param) of the trainable "
    "parameters",
)
STATES_OFFLOADED = Message(
    "training.states.offloaded", "in CPU memory (offload): {gib:.2f} GiB per GPU, the step runs there"
)
GRADIENTS_TRAINABLE = Message("training.gradients.trainable", "trainable parameters ({params:,}) x {bytes} B")
GRADIENTS_ALL = Message("training.gradients.all", "all parameters ({params:,}) x {bytes} B")
#: what the layers' backward keeps of frozen weights (:func:`~vramdesk.core.training_activations.activations`)
AMP_KEPT = text(
    "training.activations.kept.amp",
    "AMP: each layer keeps autocast's 16-bit copies of its frozen fp32 weights (2 B per parameter) for backward",
)
LM_HEAD_GATHERED = text(
    "training.gathered.lm_head",
    "ZeRO-3: the lm_head gathered whole for the logits, held until its backward (larger than the current and "
    "prefetched layer)",
)
AUTOCAST_CACHE = text(
    "training.activations.autocast_cache",
    "autocast's 16-bit copies of the fp32 weights of layers whose forward runs without grad (checkpointed), cached "
    "until the forward's autocast region ends",
)
FRESH_ZERO2 = text(
    "training.gradients.fresh.zero2",
    "DeepSpeed ZeRO-2 with gradient accumulation: the next micro-batch's gradient partition fills a new 16-bit "
    "buffer before it is added to the accumulated one",
)
FRESH = Message(
    "training.gradients.fresh",
    "the newly computed gradient of the largest trainable tensor ({bytes:,} B), before gradient accumulation adds "
    "it to the stored one",
)
TIED_GRADIENT = text(
    "training.gradients.tied_embedding",
    "the tied embedding's second gradient and its sum with the lm_head's, at the end of backward",
)
LATER_GRADIENTS = text(
    "training.gradients.later_layers",
    "gradients of every layer after the first (and of the lm_head), already computed",
)
FIRST_LAYER = text("training.activations.first_layer", "the first layer's input and activations")
FIRST_LAYER_RECOMPUTED = text(
    "training.activations.first_layer.recomputed", "the first layer's input and activations (recomputed)"
)
OTHERS_FREED = text("training.activations.others_freed", "the other layers' are freed by now")
LM_HEAD_COPY = text(
    "training.activations.lm_head_copy",
    "autocast's 16-bit copy of the fp32 lm_head, kept for the logits' backward until the loss head is done",
)
RETAINED_GRADIENTS = Message(
    "training.activations.retained_gradients",
    "FSDP with a frozen base and reentrant checkpointing: the input gradients of {layers} layers ({bytes} B x h x "
    "{tokens} tokens each) stay alive until the end of backward",
)
STEP_SEGMENTS = Message(
    "training.step_segments",
    "optimizer step: temporaries of {count} tensor(s) larger than the largest block the activations leave cached "
    "({block_mib:,.0f} MiB) take new segments, {gib:.2f} GiB more reserved",
)

# ------------------------------------------------------------------------------------------ warnings

VISION_TRAINED = text(
    "training.warn.vision_trained",
    "vision tower trained: its activations depend on the images per sample, which this estimate does not include",
)
VARYING_LENGTHS = text(
    "training.warn.varying_lengths",
    "if the batches vary in length (no packing), PyTorch's cache grows over the steps: in a simulated LoRA run with "
    "lengths up to 8192 it reserved 1.8 x the allocated peak; give their mean length to count it, or set "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (it kept that run within 7 %)",
)
MEAN_LENGTH = Message(
    "training.warn.mean_length",
    "batches of varying length (mean {mean} of at most {longest} tokens): the reserved level includes the cache "
    "they leave, which nvidia-smi shows; the run itself needs little more than the allocated peak, since PyTorch "
    "gives cached blocks back before it runs out",
)
SAVED_COPIES_RESERVED = text(
    "training.warn.saved_copies_reserved",
    "trained embedding / head copies: a measured run of this kind reserved 18 % more than the reserved level here "
    "(PyTorch's cache; nvidia-smi shows it); the allocated peak, which decides whether the step runs, was within 2 %",
)
GRAD_ACCUM = Message(
    "training.warn.grad_accum",
    "gradient accumulation {steps}: gradients stay allocated between micro-batches; the forward of the next "
    "micro-batch runs with them",
)
QLORA_SHARDED = text(
    "training.warn.qlora_sharded", "QLoRA with ZeRO-3/FSDP needs bnb_4bit_quant_storage matching the compute dtype"
)
OFFLOAD_CPU_MEMORY = Message(
    "training.warn.offload_cpu_memory",
    "CPU memory for the offload: {gib:,.1f} GiB per machine ({gpus} GPU shares); DeepSpeed's own estimator adds a "
    "1.5 x buffer margin ({margin_gib:,.1f} GiB) for pinned buffers, not counted here",
)
STARTUP_CPU_MEMORY = Message(
    "training.warn.startup_cpu_memory",
    "at start-up each of the {gpus} processes on a machine loads the whole model ({gib:.1f} GiB) into CPU memory "
    "before moving it to its GPU: about {total_gib:.0f} GiB of CPU memory per machine for a moment, unless the "
    "weights load partitioned (ZeRO-3, FSDP)",
)
PIPELINE_BUBBLE = Message(
    "training.warn.pipeline_bubble",
    "pipeline parallel {pp} with {micro_batches} micro-batch(es) per step: the pipeline is mostly bubble; 1F1B "
    "needs at least as many micro-batches as stages to fill it",
)
