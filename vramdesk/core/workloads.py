"""The workloads a scenario names, inference or fine-tuning (each engine's own settings in
:mod:`.engine_options`; every setting declared with :func:`~.option_decl.option`).

The order of the declarations is the order of the window's form, the command line's help and saved files.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .engine_options import MAX_TOKENS, LlamaCppOptions, OllamaOptions, SglangOptions, VllmOptions
from .messages import Message
from .option_decl import _Frozen, option
from .trainers import TrainerName, with_profile

Engine = Literal["transformers", "vllm", "llamacpp", "sglang", "ollama"]
Attention = Literal["flash", "sdpa", "eager"]
KvDtypeName = Literal["auto", "fp32", "bf16", "fp16", "fp8", "int8", "q8_0", "q4_0"]
TransformersVersion = Literal["<=4.35", "4.36-4.44", ">=4.45", "5.0-5.14", "5.15-5.17", "5.x"]


UNKNOWN_SAVED_MODULE = Message(
    "input.modules_to_save.unknown",
    "modules_to_save: '{name}' is not a module this estimator trains in full; known: {known}",
)
MEAN_ABOVE_MAX = Message(
    "input.mean_seq_len_above_seq_len",
    "mean_seq_len {mean} is longer than seq_len {seq_len}: seq_len is the longest batch, mean_seq_len the average "
    "of the varying ones",
)
FULL_ONLY_OPTIMIZER = Message(
    "input.optimizer_full_only",
    "optimizer {optimizer} projects or partitions the matrices of the model: it needs a full fine-tune ('full'), "
    "not '{method}'",
)
IN_BACKWARD_ACCUM = Message(
    "input.optimizer_in_backward_accumulation",
    "{what} steps each parameter in the backward and frees its gradient: gradient accumulation ({steps}) must be 1",
)
BLOCK_FULL_ONLY = Message(
    "input.block_training_full_only",
    "block_training {mode} freezes and trains whole decoder layers of a full fine-tune ('full'), not '{method}'",
)
BLOCK_OPTIMIZER = Message(
    "input.block_training_optimizer",
    "block_training {mode} steps an ordinary optimizer over the active layers after the backward; {what} cannot "
    "go with it",
)
ADAPTERS_ONLY = Message(
    "input.adapter_options_with_full",
    "modules_to_save and lora_bias apply to LoRA / QLoRA; a full fine-tune already trains every module",
)


#: the attention implementation, the same option in both workloads
_ATTENTION: dict[str, Any] = {
    "label": "&Attention",
    "help": "The attention implementation: eager keeps n x n scores",
    "group": "model",
    "choices": {
        "sdpa": ("sdpa", "PyTorch scaled_dot_product_attention: no n x n score matrix in memory"),
        "flash": ("flash", "FlashAttention 2: no n x n score matrix in memory"),
        "eager": (
            "eager",
            "Eager attention materialises the n x n attention scores per head: large for long sequences",
        ),
    },
    "form": {"values": ["sdpa", "flash", "eager"]},
}


class InferenceWorkload(_Frozen):
    kind: Literal["inference"] = "inference"
    engine: Engine = option(
        "transformers",
        label="&Engine",
        help="The inference engine: its memory rules differ",
        group="inference",
        choices={
            "transformers": (
                "transformers",
                "Hugging Face transformers generate(): the KV cache grows with every token",
            ),
            "vllm": (
                "vllm",
                "vLLM pre-allocates gpu_memory_utilization x the GPU's memory; the question is how many tokens fit",
            ),
            "llamacpp": (
                "llamacpp",
                "llama.cpp: GGUF block formats, KV cache sized for n_ctx, layers may stay on the CPU",
            ),
            "sglang": (
                "sglang",
                "SGLang takes mem_fraction_static of the GPU for the weights and a token pool; the question is how "
                "many tokens fit",
            ),
            "ollama": (
                "ollama",
                "Ollama: llama.cpp with Ollama's defaults (num_ctx x parallel slots) and its own fit of the layers "
                "to the GPU",
            ),
        },
        form={"names": True},
    )
    attention: Attention = option("sdpa", **_ATTENTION)
    batch: int = option(1, ge=1, le=65536, label="&Batch", help="Sequences generated at once", group="inference")
    #: prompt tokens; None = min(model's context, 4096)
    input_len: int | None = option(
        None,
        ge=1,
        le=MAX_TOKENS,
        label="&Input tokens",
        help="Prompt tokens per sequence; auto = the model's context, at most 4,096",
        group="inference",
        shown="auto",
        form={"step": 512, "readout": True},
    )
    output_len: int = option(
        512,
        ge=0,
        le=MAX_TOKENS,
        label="&Output tokens",
        help="Generated tokens per sequence",
        group="inference",
        form={"step": 128},
    )
    kv_dtype: KvDtypeName = option(
        "auto",
        label="&KV cache",
        help="Data type of the KV cache (fp8 / q8_0 halve it)",
        group="inference",
        choices={"auto": ("auto (compute)", "")},
        # (Ollama's KV type is its own setting, OLLAMA_KV_CACHE_TYPE)
        form={
            "values": ["auto", "bf16", "fp16", "fp8", "q8_0", "q4_0"],
            "when": {"engine": ["transformers", "vllm", "llamacpp", "sglang"]},
        },
    )
    #: transformers < 4.45 computed logits for every prompt position in generate(); newer keeps the last
    full_prompt_logits: bool = option(
        False,
        label="logits for the whole prompt",
        help="logits for every prompt position, as generate() did before transformers 4.45",
        group="hidden",
    )
    #: the transformers release generate() runs as (its cache and rotary code); full_prompt_logits above still
    #: asks for the prompt's logits in any of them
    transformers_version: TransformersVersion = option(
        "5.x",
        label="transformers",
        help="The transformers release: before 4.36 generate() held the old and the new key/value tuples together "
        "in every decode step; before 4.45 every attention layer kept its own rotary cos/sin tables and the logits "
        "of the whole prompt; before 5.15 (5.18 for DeepSeek-V3.2 / GLM-5) multi-head latent attention cached the "
        "expanded keys and values of every head",
        group="inference",
        choices={
            "<=4.35": ("≤ 4.35", "Tuple cache: each decode step holds the old and the new keys and values (2 x KV)"),
            "4.36-4.44": (
                "4.36 - 4.44",
                "DynamicCache; rotary cos/sin tables per layer at the model's longest context; logits for the "
                "whole prompt",
            ),
            ">=4.45": ("≥ 4.45", "One rotary module per model, logits for the last prompt position only"),
            "5.0-5.14": (
                "5.0 - 5.14",
                "As 4.45; multi-head latent attention still caches the expanded keys and values",
            ),
            "5.15-5.17": (
                "5.15 - 5.17",
                "DeepSeek-style multi-head latent attention caches its compressed latent; the sparse-attention models "
                "(DeepSeek-V3.2, GLM-5) and Kimi Linear still cache the expanded keys and values",
            ),
            "5.x": ("≥ 5.18", "Every multi-head latent attention model caches its compressed latent (the default)"),
        },
        form={"when": {"engine": ["transformers"]}, "accessible": "transformers version"},
    )
    #: transformers device_map="auto": accelerate's max_memory per GPU for the weights (GiB); what does not fit
    #: on the GPUs goes to CPU memory, then to disk. None = no cap (an even layer split)
    max_memory_gib: float | None = option(
        None,
        gt=0.0,
        le=100_000.0,
        label="GPU memory cap",
        help="accelerate's max_memory per GPU for the weights. Weights that do not fit spill to CPU memory, "
        "then to disk, and cross PCIe on every forward; no cap = an even split over the GPUs",
        group="device_map",
        shown="no cap",
        form={"suffix": " GiB", "decimals": 2, "step": 1.0, "accessible": "Max memory per GPU"},
    )
    #: accelerate's max_memory for "cpu" (GiB) before weights spill to disk; None = no cap
    cpu_memory_gib: float | None = option(
        None,
        ge=0.0,
        le=1_000_000.0,
        label="CPU memory cap",
        help="accelerate's max_memory for the CPU: spilled weights beyond it go to disk (offload_folder). "
        "0 GiB sends every spilled weight to disk; only matters with a max memory per GPU",
        group="device_map",
        shown="no cap",
        form={
            "when": {"max_memory_gib": "set"},
            "suffix": " GiB",
            "decimals": 2,
            "step": 1.0,
            "accessible": "CPU memory for spilled weights",
        },
    )
    vllm: VllmOptions = VllmOptions()
    llamacpp: LlamaCppOptions = LlamaCppOptions()
    sglang: SglangOptions = SglangOptions()
    ollama: OllamaOptions = OllamaOptions()


Method = Literal["full", "lora", "qlora", "ia3", "prompt-tuning", "p-tuning", "prefix-tuning", "ln-tuning", "vera"]
Optimizer = Literal[
    "adamw",
    "adamw-fused",
    "adamw-forloop",
    "adamw-torch2.0",
    "adamw-8bit",
    "paged-adamw-8bit",
    "paged-adamw-32bit",
    "sgd",
    "adafactor",
    "lion",
    "galore-adamw",
    "galore-adamw-8bit",
    "apollo",
    "apollo-mini",
    "adam-mini",
    "adamw-torchao-8bit",
    "adamw-torchao-4bit",
    "adamw-torchao-fp8",
    "lomo",
    "adalomo",
]
#: optimizers that project or partition a full model's tensors (core/optimizers NEEDS_FULL), and those fused into
#: the backward by their own code (IN_BACKWARD)
_FULL_ONLY = ("galore-adamw", "galore-adamw-8bit", "apollo", "apollo-mini", "adam-mini")
_FUSED = ("lomo", "adalomo")
TrainPrecision = Literal["bf16", "fp16", "fp32", "amp-bf16", "amp-fp16"]
LoraBias = Literal["none", "all", "lora_only"]
AdapterDtype = Literal["fp32", "base"]
FsdpStrategy = Literal["full", "shard-grad-op", "hybrid"]
VisionTower = Literal["frozen", "trained", "absent"]
Offload = Literal["none", "optimizer", "params"]
#: block-wise training of a full fine-tune (core/optimizers/blockwise.py)
BlockTraining = Literal["off", "lisa", "badam"]

#: peft ``modules_to_save`` names -> the module kind they train in full ("embed" or "lm_head")
SAVED_MODULES: dict[str, str] = {
    "embed": "embed",
    "embed_tokens": "embed",
    "wte": "embed",
    "word_embeddings": "embed",
    "tok_embeddings": "embed",
    "lm_head": "lm_head",
    "embed_out": "lm_head",
    "output": "lm_head",
}


class FinetuneWorkload(_Frozen):
    kind: Literal["finetune"] = "finetune"
    #: the training stack (core/trainers.py): its defaults where the plan does not say, its fixed behaviours always
    trainer: TrainerName = option(
        "hf",
        label="T&rainer",
        help="The training stack: its loss, checkpointing, adapter dtype and FSDP loading change memory; "
        "its defaults fill what the plan does not set, and what it has no setting for is fixed",
        group="finetune",
        choices={
            "hf": ("HF Trainer / TRL", "Hugging Face Trainer or TRL with PEFT (the default)"),
            "torchtune": (
                "torchtune",
                "Chunked cross-entropy, adapters in the model's dtype, non-reentrant checkpointing per layer",
            ),
            "unsloth": (
                "Unsloth",
                "Fused cross-entropy on 16-bit logits; its checkpointing moves layer inputs to CPU memory",
            ),
            "litgpt": (
                "LitGPT",
                "Its own model and LoRA layers: 128-token chunks of lm_head and loss, adapters in the model's "
                "dtype, no activation checkpointing",
            ),
            "fsdp-qlora": (
                "fsdp_qlora (Answer.AI)",
                "FSDP1 with checkpointing around whole decoder layers; low-memory loading leaves blocks cached",
            ),
            "axolotl": ("Axolotl", "HF Trainer underneath; Liger's fused loss only when enabled (chunked loss)"),
            "llama-factory": (
                "LLaMA-Factory",
                "HF Trainer underneath; Liger's fused loss only when enabled (chunked loss)",
            ),
            "ms-swift": ("ms-swift", "HF Trainer underneath with PEFT"),
        },
        form={"accessible": "Trainer"},
    )
    method: Method = option(
        "lora",
        label="Me&thod",
        help="Full fine-tuning, or adapters over a frozen base (LoRA / QLoRA, or another PEFT method)",
        group="finetune",
        choices={
            "lora": (
                "lora",
                "LoRA: the base model frozen in bf16, small trainable adapters with their own gradients and optimizer",
            ),
            "qlora": ("qlora", "QLoRA: the base model in 4-bit NF4, adapters in bf16"),
            "full": ("full", "Full fine-tuning: gradients and optimizer states for every parameter"),
            "ia3": (
                "ia3",
                "PEFT IA3: learned vectors scale the outputs of two attention projections and the input of the MLP's "
                "down projection (peft's defaults for the model type: k, v and down for Llama); the fewest trainable "
                "parameters",
            ),
            "prompt-tuning": (
                "prompt-tuning",
                "PEFT prompt tuning: trainable embeddings of virtual tokens put before every sequence, which the "
                "whole model then runs over",
            ),
            "p-tuning": (
                "p-tuning",
                "PEFT p-tuning: virtual tokens made by a small trainable MLP (PromptEncoder) and put before every "
                "sequence",
            ),
            "prefix-tuning": (
                "prefix-tuning",
                "PEFT prefix tuning: trainable keys and values of virtual tokens in every layer's attention; peft "
                "refuses it with gradient checkpointing",
            ),
            "ln-tuning": (
                "ln-tuning",
                "PEFT LN tuning: trainable copies of the norm layers (peft's defaults for the model type: both "
                "pre-norms and the final norm for Llama), in the base dtype",
            ),
            "vera": (
                "vera",
                "PEFT VeRA: two trainable vectors per adapted layer over one pair of frozen random projections shared "
                "by all (peft's default targets for the model type: q_proj and v_proj for Llama)",
            ),
        },
        form={
            "values": [
                "lora",
                "qlora",
                "full",
                "ia3",
                "prompt-tuning",
                "p-tuning",
                "prefix-tuning",
                "ln-tuning",
                "vera",
            ]
        },
    )
    micro_batch: int = option(
        1, ge=1, le=65536, label="Micro-batch", help="Sequences per forward/backward pass on each GPU", group="finetune"
    )
    seq_len: int = option(
        2048,
        ge=1,
        le=MAX_TOKENS,
        label="Sequence length",
        help="Tokens per training sequence",
        group="finetune",
        form={"step": 256, "readout": True},
    )
    #: unpacked batches whose length varies: their mean length (``seq_len`` is then the longest). None = every
    #: batch is ``seq_len`` long (packed, or padded to the maximum)
    mean_seq_len: int | None = option(
        None,
        ge=1,
        le=MAX_TOKENS,
        label="Mean length",
        help="Unpacked batches of varying length: their mean length (the sequence length is then the longest). "
        "Each new length leaves blocks of other sizes in PyTorch's cache, which nvidia-smi shows",
        group="finetune",
        shown="packed",
        form={"step": 256, "accessible": "Mean length of unpacked batches"},
    )
    grad_accum: int = option(
        1,
        ge=1,
        le=1_000_000,
        label="Grad. accum.",
        help="Micro-batches per optimizer step (no extra memory)",
        group="finetune",
        form={"accessible": "Gradient accumulation steps"},
    )
    optimizer: Optimizer = option(
        "adamw",
        label="O&ptimizer",
        help="The optimizer: its states are often the largest part",
        group="finetune",
        choices={
            "adamw": (
                "adamw",
                "AdamW: two fp32 states per trainable parameter; PyTorch's foreach step briefly copies them",
            ),
            "adamw-fused": ("adamw-fused", "Fused AdamW: two fp32 states, no extra copy during the step"),
            "adamw-forloop": (
                "adamw-forloop",
                "AdamW with foreach=False: one parameter at a time, a temporary the size of one tensor",
            ),
            "adamw-torch2.0": (
                "adamw-torch2.0",
                "AdamW as PyTorch 2.0 and older ran it (foreach): two state-sized copies during the step",
            ),
            "adamw-8bit": ("adamw-8bit", "bitsandbytes 8-bit AdamW: two 8-bit states with block-wise scales"),
            "paged-adamw-8bit": ("paged-adamw-8bit", "8-bit AdamW with states that can page out to CPU memory"),
            "paged-adamw-32bit": (
                "paged-adamw-32bit",
                "bitsandbytes paged AdamW: two fp32 states that can page out to CPU memory",
            ),
            "sgd": ("sgd", "SGD with momentum: one state per trainable parameter"),
            "adafactor": ("adafactor", "Adafactor: factored second moments, much smaller than Adam's"),
            "lion": ("lion", "Lion: one momentum state per trainable parameter"),
            "galore-adamw": (
                "galore-adamw",
                "GaLore AdamW (galore-torch): Adam moments of a low-rank projection of each layer matrix's "
                "gradient, refreshed by an SVD; full fine-tuning only",
            ),
            "galore-adamw-8bit": (
                "galore-adamw-8bit",
                "GaLore with bitsandbytes 8-bit moments of the projected gradients; full fine-tuning only",
            ),
            "apollo": (
                "apollo",
                "APOLLO (apollo-torch): Adam moments of a random low-rank projection, used only to scale the "
                "gradient per channel; full fine-tuning only",
            ),
            "apollo-mini": (
                "apollo-mini",
                "APOLLO-Mini: a rank-1 random projection with one scale per tensor; full fine-tuning only",
            ),
            "adam-mini": (
                "adam-mini",
                "Adam-mini: Adam's first moment, and one second-moment value per head, row or norm instead "
                "of one per parameter; full fine-tuning only",
            ),
            "adamw-torchao-8bit": ("adamw-torchao-8bit", "torchao AdamW8bit: two 8-bit states, a scale per 256"),
            "adamw-torchao-4bit": ("adamw-torchao-4bit", "torchao AdamW4bit: two 4-bit states, a scale per 128"),
            "adamw-torchao-fp8": ("adamw-torchao-fp8", "torchao AdamWFp8: two FP8 states, a scale per 256"),
            "lomo": (
                "lomo",
                "LOMO (lomo-optim): SGD fused into the backward, no states, one gradient alive at a time",
            ),
            "adalomo": (
                "adalomo",
                "AdaLomo: LOMO with factored fp32 second moments, fused into the backward",
            ),
        },
    )
    projection_rank: int = option(
        128,
        ge=1,
        le=65536,
        label="Projection rank",
        help="GaLore / APOLLO rank r: the projected gradient and its moments are r x the longer side of each "
        "matrix (APOLLO-Mini is always rank 1)",
        group="finetune",
        form={"when": {"optimizer": ["galore-adamw", "galore-adamw-8bit", "apollo"]}},
    )
    projection_gap: int = option(
        200,
        ge=1,
        le=1_000_000,
        label="Projection refresh",
        help="GaLore / APOLLO update_proj_gap: steps between two projections (SVD or random); a step that "
        "refreshes it holds the SVD's temporaries",
        group="finetune",
        form={
            "when": {"optimizer": ["galore-adamw", "galore-adamw-8bit", "apollo", "apollo-mini"]},
            "prefix": "every ",
            "suffix": " steps",
        },
    )
    optimizer_in_backward: bool = option(
        False,
        label="optimizer in backward",
        help="Each parameter is stepped in its gradient hook and its gradient freed (torchtune optimizer_in_bwd, "
        "HF Trainer's layer-wise GaLore): one gradient at a time instead of all; no gradient accumulation",
        group="finetune",
    )
    #: a few decoder layers train at a time, the others frozen: LISA (LMFlow's callback) or BAdam (BlockOptimizer)
    block_training: BlockTraining = option(
        "off",
        label="Block-wise",
        help="A full fine-tune where a few decoder layers train at a time and the others are frozen: gradients "
        "and the optimizer's step for the active layers only",
        group="finetune",
        choices={
            "off": ("off", "Every parameter trains in every step"),
            "lisa": (
                "LISA",
                "LISA: a few layers drawn at random train in each interval with the embeddings and lm_head; the "
                "optimizer is never reset, so the states of every layer once active accumulate",
            ),
            "badam": (
                "BAdam",
                "BAdam (BlockOptimizer): one block of layers trains at a time with fp32 copies and optimizer "
                "states for that block only; the embeddings and lm_head stay frozen",
            ),
        },
        form={"when": {"method": ["full"]}, "accessible": "Block-wise training"},
    )
    #: decoder layers trained at once: LISA's lisa_activated_layers, BAdam's layers per block; None = the
    #: package's default (LMFlow 2, BAdam 1)
    active_layers: int | None = option(
        None,
        ge=1,
        le=4096,
        label="Active layers",
        help="Decoder layers that train at once: LISA's lisa_activated_layers (LMFlow's default 2), BAdam's "
        "layers per block (1 by default)",
        group="finetune",
        shown="default",
        form={"when": {"block_training": ["lisa", "badam"]}, "accessible": "Layers trained at once"},
    )
    precision: TrainPrecision = option(
        "bf16",
        label="Precision",
        help="Training precision",
        group="finetune",
        choices={
            "bf16": ("bf16", "Weights and gradients in bfloat16"),
            "fp16": ("fp16", "Weights and gradients in float16"),
            "fp32": ("fp32", "Everything in float32 (4 bytes per parameter)"),
            "amp-bf16": ("amp-bf16", "Mixed precision: fp32 master weights, bf16 compute (more memory than pure bf16)"),
            "amp-fp16": ("amp-fp16", "Mixed precision: fp32 master weights, fp16 compute"),
        },
    )
    grad_checkpointing: bool = option(
        True,
        label="gradient checkpointing",
        help="Recompute activations in backward: keeps one tensor per layer",
        group="finetune",
    )
    #: with checkpointing: checkpoint every k-th layer (torchtune's selective activation checkpointing); the
    #: layers in between keep all their activations. 1 = every layer
    checkpoint_every: int = option(
        1,
        ge=1,
        le=4096,
        label="Checkpoints",
        help="Selective checkpointing (torchtune): checkpoint every k-th layer; the layers in between keep all "
        "their activations, trading memory for less recomputation",
        group="finetune",
        form={
            "when": {"grad_checkpointing": [True]},
            "prefix": "every ",
            "suffix": " layers",
            "special": "every layer",
            "accessible": "Checkpoint every k-th layer",
        },
    )
    attention: Attention = option("sdpa", **_ATTENTION)
    lora_rank: int = option(
        16,
        ge=1,
        le=65536,
        label="LoRA rank",
        help="LoRA rank r: adapter size grows linearly with it",
        group="finetune",
        form={"when": {"method": ["lora", "qlora"]}},
    )
    lora_targets: tuple[str, ...] = option(
        ("all-linear",),
        label="LoRA targets",
        help="all-linear, or a comma list of modules: q,k,v,o,gate,up,down",
        group="finetune",
        form={"when": {"method": ["lora", "qlora"]}},
    )
    #: LoRA dropout probability (> 0 keeps a 1-byte mask per adapted input)
    lora_dropout: float = option(
        0.0,
        ge=0.0,
        lt=1.0,
        label="LoRA dropout",
        help="LoRA dropout probability. Above 0, PEFT saves a 1-byte dropout mask per adapted input "
        "element for backward: more activation memory",
        group="finetune",
        form={"when": {"method": ["lora", "qlora"]}, "decimals": 2, "step": 0.05, "special": "off"},
    )
    #: peft LoRA ``bias``: which biases train ("all" of them, those of adapted layers, or "none")
    lora_bias: LoraBias = option(
        "none",
        label="LoRA bias",
        help="peft LoRA bias: which bias vectors train (each with its gradient and optimizer states)",
        group="finetune",
        choices={
            "none": ("none", "No bias trains (peft's default)"),
            "all": ("all", "Every bias of the model trains"),
            "lora_only": ("LoRA layers only", "Only the biases of the adapted layers train"),
        },
        form={"when": {"method": ["lora", "qlora"]}, "accessible": "LoRA bias"},
    )
    #: modules trained in full next to the adapters (peft ``modules_to_save``): "embed", "lm_head"
    modules_to_save: tuple[str, ...] = option(
        (),
        label="Trained in full",
        help="Modules trained in full next to the adapters (peft modules_to_save)",
        group="finetune",
        choices={
            "embed": (
                "embeddings",
                "peft modules_to_save: the input embeddings train in full next to the adapters, as a trainable "
                "copy with its gradients and optimizer states (needed when new tokens are added)",
            ),
            "lm_head": (
                "lm_head",
                "peft modules_to_save: the output head trains in full next to the adapters, as a trainable copy "
                "with its gradients and optimizer states (a tied head gets its own copy)",
            ),
        },
        form={
            "when": {
                "method": ["lora", "qlora", "ia3", "prompt-tuning", "p-tuning", "prefix-tuning", "ln-tuning", "vera"]
            },
            "values": ["embed", "lm_head"],
            "each": {"embed": "Train the embeddings in full", "lm_head": "Train lm_head in full"},
        },
    )
    #: dtype of the adapters: fp32 (peft >= 0.12, autocast_adapter_dtype) or the base weights' dtype (older peft)
    adapter_dtype: AdapterDtype = option(
        "fp32",
        label="Adapter dtype",
        help="The dtype peft keeps the adapters in: fp32 since peft 0.12, the base weights' dtype before",
        group="finetune",
        choices={
            "fp32": (
                "fp32 (peft ≥ 0.12)",
                "peft ≥ 0.12 upcasts the adapters to fp32 (autocast_adapter_dtype): 4 bytes a parameter",
            ),
            "base": (
                "base dtype (older peft)",
                "Older peft keeps the adapters in the base weights' dtype (2 bytes in bf16): smaller; "
                "QLoRA adapters stay fp32",
            ),
        },
        form={"when": {"method": ["lora", "qlora", "ia3"]}, "accessible": "Adapter dtype"},
    )
    #: prompt tuning, p-tuning, prefix tuning: peft's num_virtual_tokens
    num_virtual_tokens: int = option(
        20,
        ge=1,
        le=65536,
        label="Virtual tokens",
        help="peft num_virtual_tokens: prompt and p-tuning put them before every sequence (the model runs over "
        "that many more tokens); prefix tuning adds their keys and values to every layer's attention",
        group="finetune",
        form={"when": {"method": ["prompt-tuning", "p-tuning", "prefix-tuning"]}},
    )
    #: VeRA: VeraConfig's r, the rank of the shared projections (256 by default)
    vera_rank: int = option(
        256,
        ge=1,
        le=65536,
        label="VeRA rank",
        help="peft VeraConfig r: the rank of the frozen projections every adapted layer shares; each layer trains "
        "lambda_d of this length and lambda_b of its output width",
        group="finetune",
        form={"when": {"method": ["vera"]}},
    )
    #: prefix tuning's reparametrisation: an MLP (token dim -> token dim -> layers x 2 x token dim) makes the prefix
    prefix_projection: bool = option(
        False,
        label="prefix projection",
        help="peft prefix_projection: an MLP makes every layer's prefix keys and values from one embedding per "
        "virtual token (more trainable parameters: its output layer has layers x 2 x the key width rows)",
        group="finetune",
        form={"when": {"method": ["prefix-tuning"]}},
    )
    #: DoRA (weight-decomposed LoRA): magnitude vectors and per-layer weight norms
    dora: bool = option(
        False,
        label="DoRA (weight-decomposed LoRA)",
        help="DoRA adds a magnitude vector per adapted matrix, keeps the base and rescaled outputs for "
        "backward (4 B per adapted output) and builds one fp32 weight for its norm: more memory than LoRA",
        group="finetune",
        form={"when": {"method": ["lora", "qlora"]}},
    )
    #: chunked cross-entropy (torchtune's CEWithChunkedOutputLoss, Liger-style): the fp32 loss head per chunk
    chunked_loss: bool = option(
        False,
        label="chunked cross-entropy",
        help="Computes the loss in 8 chunks (torchtune, Liger): the fp32 log-softmax and its gradient exist "
        "for one chunk at a time, so the loss head shrinks (most with large vocabularies)",
        group="finetune",
    )
    #: activations moved to CPU memory during the forward (torchtune / DeepSpeed activation offloading)
    activation_offload: bool = option(
        False,
        label="activation offloading",
        help="Saved activations move to CPU memory during the forward (torchtune, DeepSpeed): the GPU keeps "
        "about two layers' worth; the rest counts as host memory, and steps get slower",
        group="finetune",
    )
    #: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator grows segments in place, so its
    #: cache of free blocks (the reserved - allocated gap) stays small
    expandable_segments: bool = option(
        False,
        label="expandable segments",
        help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: PyTorch's allocator grows its memory in place "
        "instead of keeping blocks it cannot reuse, so nvidia-smi shows less above the allocated peak",
        group="finetune",
    )
    #: a multimodal model's vision tower: loaded and frozen, trained (in full, or adapters on its linear layers),
    #: or absent (the text model class alone is loaded)
    vision_tower: VisionTower = option(
        "frozen",
        label="Vision tower",
        help="A multimodal model's vision tower; only for models that have one",
        group="finetune",
        choices={
            "frozen": ("frozen", "Loaded and frozen: its weights count, no gradients or optimizer states"),
            "trained": (
                "trained",
                "Trained with the language model (in full, or adapters on its linear layers): more "
                "trainable parameters; its activations depend on the images and are not counted",
            ),
            "absent": ("not loaded", "Not loaded: the text model class alone (text-only training), no vision weights"),
        },
        form={"accessible": "Vision tower"},
    )

    @model_validator(mode="before")
    @classmethod
    def _trainer_profile(cls, data: Any) -> Any:
        return with_profile(data) if isinstance(data, dict) else data

    @field_validator("modules_to_save")
    @classmethod
    def _saved_modules(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        out: list[str] = []
        for name in v:
            kind = SAVED_MODULES.get(name.strip())
            if kind is None:
                raise ValueError(UNKNOWN_SAVED_MODULE(name=name, known=", ".join(SAVED_MODULES)))
            if kind not in out:
                out.append(kind)
        return tuple(out)

    @model_validator(mode="after")
    def _mean_below_max(self) -> FinetuneWorkload:
        if self.mean_seq_len is not None and self.mean_seq_len > self.seq_len:
            raise ValueError(MEAN_ABOVE_MAX(mean=self.mean_seq_len, seq_len=self.seq_len))
        return self

    @model_validator(mode="after")
    def _optimizer_fits(self) -> FinetuneWorkload:
        if self.optimizer in _FULL_ONLY and self.method != "full":
            raise ValueError(FULL_ONLY_OPTIMIZER(optimizer=self.optimizer, method=self.method))
        in_backward = self.optimizer_in_backward or self.optimizer in _FUSED
        if in_backward and self.grad_accum > 1:
            what = self.optimizer if self.optimizer in _FUSED else "optimizer_in_backward"
            raise ValueError(IN_BACKWARD_ACCUM(what=what, steps=self.grad_accum))
        if self.block_training != "off":
            if self.method != "full":
                raise ValueError(BLOCK_FULL_ONLY(mode=self.block_training, method=self.method))
            if self.optimizer in _FULL_ONLY or in_backward:
                what = "optimizer_in_backward" if self.optimizer_in_backward else self.optimizer
                raise ValueError(BLOCK_OPTIMIZER(mode=self.block_training, what=what))
        return self

    @model_validator(mode="after")
    def _adapters_only(self) -> FinetuneWorkload:
        if self.method == "full" and (self.modules_to_save or self.lora_bias != "none"):
            raise ValueError(ADAPTERS_ONLY())
        return self


Workload = Annotated[InferenceWorkload | FinetuneWorkload, Field(discriminator="kind")]
