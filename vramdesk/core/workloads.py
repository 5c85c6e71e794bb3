"""The workloads a scenario names, inference (and each engine's own settings) or fine-tuning, and
:func:`option`, the one declaration of every setting a user chooses (read back by ``vramdesk.core.options``).

The order of the declarations is the order of the window's form, the command line's help and saved files.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.config import JsonDict

from .messages import Message
from .trainers import TrainerName, with_profile

Engine = Literal["transformers", "vllm", "llamacpp", "sglang"]
Attention = Literal["flash", "sdpa", "eager"]
KvDtypeName = Literal["auto", "fp32", "bf16", "fp16", "fp8", "int8", "q8_0", "q4_0"]
SplitMode = Literal["layer", "row"]
TransformersVersion = Literal["<=4.35", "4.36-4.44", ">=4.45", "5.x"]

#: Longest context accepted anywhere (tokens). Longer requests are almost always a typo.
MAX_TOKENS = 16 * 1024 * 1024

UNKNOWN_SAVED_MODULE = Message(
    "input.modules_to_save.unknown",
    "modules_to_save: '{name}' is not a module this estimator trains in full; known: {known}",
)
MEAN_ABOVE_MAX = Message(
    "input.mean_seq_len_above_seq_len",
    "mean_seq_len {mean} is longer than seq_len {seq_len}: seq_len is the longest batch, mean_seq_len the average "
    "of the varying ones",
)
ADAPTERS_ONLY = Message(
    "input.adapter_options_with_full",
    "modules_to_save and lora_bias apply to LoRA / QLoRA; a full fine-tune already trains every module",
)


def option(
    default: Any,
    *,
    label: str,
    help: str,
    group: str,
    flag: str | None = None,
    shown: str | None = None,
    choices: dict[str, tuple[str, str]] | None = None,
    form: JsonDict | None = None,
    **bounds: Any,
) -> Any:
    """One setting a user chooses, declared once: its default and bounds (pydantic's ``ge`` / ``gt`` / ``le`` /
    ``lt``) and what the command line, the form and the comparison show for it (``vramdesk.core.options`` reads
    these back as the option table).

    ``label``: the form's label (``&`` marks the keyboard shortcut); ``help``: the tooltip and the command line's
    help; ``group``: the form box it sits in ("model", "inference", "vllm", "llamacpp", "sglang", "device_map",
    "finetune", "hardware"; "hidden" = scripts and saved files only); ``flag``: the long option when it is not the
    field's name (``--gpus`` for ``gpu_count``); ``shown``: the default in words when it is None ("auto", "all");
    ``choices``: value -> (label, tip) for a choice the form names in words (a tip for each value it offers);
    ``form``: how the form's widget shows it (``values``: the values it offers, in its order; ``step``,
    ``decimals``, ``minimum``, ``prefix``, ``suffix``; ``special``: the text at the minimum; ``readout``: a
    "largest that fits" label beside it; ``beside``: shown on the row of that option; ``accessible``: the name a
    screen reader says; ``each``: a name per value of a list). Every text is English; the window translates it.
    The order of the declarations is the order of the form and of the command line's help."""
    named: JsonDict = {str(k): [label_, tip] for k, (label_, tip) in (choices or {}).items()}
    extra: JsonDict = {"group": group, "flag": flag, "shown": shown, "choices": named, "form": form or {}}
    return Field(default, title=label, description=help, json_schema_extra=extra, **bounds)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class VllmOptions(_Frozen):
    gpu_memory_utilization: float = option(
        0.9,
        gt=0.0,
        le=1.0,
        label="GPU memory utilization",
        help="Fraction of the GPU's memory vLLM takes for weights, activations and the KV pool",
        group="vllm",
        form={"minimum": 0.05, "step": 0.05, "decimals": 2},
    )
    max_num_seqs: int = option(
        256,
        ge=1,
        le=65536,
        label="Max sequences",
        help="Most sequences scheduled at once (--max-num-seqs)",
        group="vllm",
    )
    #: tokens per scheduler step; None = vLLM's default for its V1 engine (8192, at least max_model_len
    #: when chunked prefill is off)
    max_num_batched_tokens: int | None = option(
        None,
        ge=1,
        le=MAX_TOKENS,
        label="Max batched tokens",
        help="vLLM: tokens per scheduler step",
        group="hidden",
        shown="8192",
    )
    #: None = the plan's input + output (what --max-model-len should be set to for this plan); vLLM's own default
    #: is the model's context (max_position_embeddings), which the estimate checks and warns about
    max_model_len: int | None = option(
        None,
        ge=1,
        le=MAX_TOKENS,
        label="Max model length",
        help="vLLM: the longest request it accepts (--max-model-len); its start-up check needs room for one request "
        "this long. Auto = this plan's input + output (vLLM's own default is the model's context)",
        group="vllm",
        shown="plan",
    )
    enforce_eager: bool = option(
        False,
        label="enforce eager (no CUDA graphs)",
        help="Skips CUDA graph capture: less memory, slower decoding",
        group="vllm",
    )
    block_size: int = option(
        16, ge=1, le=1024, label="Block size", help="vLLM: tokens per KV cache page", group="hidden"
    )


class SglangOptions(_Frozen):
    #: None = SGLang's own rule (server_args.py ``_handle_gpu_memory_settings``): the GPU's memory less an allowance
    #: for activations, CUDA graphs and parallel buffers
    mem_fraction_static: float | None = option(
        None,
        gt=0.0,
        le=1.0,
        label="Static memory fraction",
        help="Fraction of the GPU's free memory SGLang takes up front for the weights and the KV token pool "
        "(--mem-fraction-static); auto = SGLang's rule from the GPU's memory, the prefill chunk and the CUDA-graph "
        "batch size",
        group="sglang",
        shown="auto",
        form={"minimum": 0.05, "step": 0.01, "decimals": 3},
    )
    #: None = SGLang's default for the GPU's memory (2,048 tokens below 35 GiB, 4,096 below 60 GiB, 8,192 below
    #: 160 GiB, else 16,384)
    chunked_prefill_size: int | None = option(
        None,
        ge=1,
        le=MAX_TOKENS,
        label="Chunked prefill",
        help="Prompt tokens one prefill step takes (--chunked-prefill-size); auto = SGLang's default for the GPU's "
        "memory",
        group="sglang",
        shown="auto",
        form={"step": 1024, "suffix": " tokens"},
    )
    #: None = SGLang's default for the GPU's memory and TP (8 to 512)
    cuda_graph_max_bs: int | None = option(
        None,
        ge=1,
        le=4096,
        label="CUDA-graph batch",
        help="Largest decode batch SGLang captures as a CUDA graph (--cuda-graph-max-bs); auto = SGLang's default "
        "for the GPU's memory and tensor parallel size",
        group="sglang",
        shown="auto",
        form={"step": 8, "accessible": "Largest CUDA-graph batch size"},
    )
    disable_cuda_graph: bool = option(
        False,
        label="disable CUDA graphs",
        help="SGLang --disable-cuda-graph: no graph capture, less memory outside the static fraction, slower decoding",
        group="sglang",
    )


class LlamaCppOptions(_Frozen):
    #: layers offloaded to the GPU; None = all of them (-ngl 999)
    n_gpu_layers: int | None = option(
        None,
        ge=0,
        le=100000,
        label="GPU layers",
        help="Layers on the GPU (-ngl); all = every layer, the rest run from CPU memory",
        group="llamacpp",
        shown="all",
    )
    #: MoE models: the routed-expert tensors of the first N layers stay in host memory while the rest of those
    #: layers (attention, router, shared expert) and their KV cache stay on the GPU (llama.cpp's --n-cpu-moe);
    #: N at least the layer count keeps every layer's experts there, which is llama.cpp's --cpu-moe (its pattern
    #: names the same tensors of every layer). 0 = none. One number rather than a second switch: both llama.cpp
    #: flags place the same tensors, and a plan or a comparison then has one setting for it
    n_cpu_moe: int = option(
        0,
        ge=0,
        le=100000,
        label="MoE experts in CPU memory",
        help="MoE models: the expert tensors of the first N layers stay in CPU memory (--n-cpu-moe); a number at "
        "least the layer count keeps them all there (--cpu-moe)",
        group="llamacpp",
        form={"special": "none", "suffix": " layers", "accessible": "Layers whose MoE experts stay in CPU memory"},
    )
    n_ubatch: int = option(
        512,
        ge=1,
        le=MAX_TOKENS,
        label="Micro-batch",
        help="Physical batch (-ub): sizes the compute buffer",
        group="llamacpp",
        form={"step": 128},
    )
    #: several GPUs: "layer" divides the layers between them (the default); "row" splits every weight matrix by
    #: rows over all of them and keeps the KV cache and the compute buffer on the main GPU
    split_mode: SplitMode = option(
        "layer",
        label="Split mode",
        help="How several GPUs share the model (--split-mode)",
        group="llamacpp",
        choices={
            "layer": ("layers", "Each GPU holds whole layers and their KV cache (the default)"),
            "row": (
                "rows",
                "Every matrix is split by rows over the GPUs; the KV cache and the compute buffer stay on the main GPU",
            ),
        },
        form={"when": {"gpu_count": ">1"}, "accessible": "llama.cpp split mode"},
    )
    flash_attn: bool = option(
        True,
        label="flash attention (-fa)",
        help="Smaller compute buffer; also allows a quantized V cache",
        group="llamacpp",
    )
    swa_full: bool = option(
        False,
        label="full SWA cache",
        help="llama.cpp --swa-full: sliding-window layers keep a cache for the whole context",
        group="hidden",
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
        },
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
        form={"values": ["auto", "bf16", "fp16", "fp8", "q8_0", "q4_0"]},
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
        label="transformers version",
        help="The transformers release: before 4.36 generate() held the old and the new key/value tuples together "
        "in every decode step; before 4.45 every attention layer kept its own rotary cos/sin tables and the logits "
        "of the whole prompt",
        group="inference",
        choices={
            "<=4.35": ("≤ 4.35", "Tuple cache: each decode step holds the old and the new keys and values (2 x KV)"),
            "4.36-4.44": (
                "4.36 - 4.44",
                "DynamicCache; rotary cos/sin tables per layer at the model's longest context; logits for the "
                "whole prompt",
            ),
            ">=4.45": ("≥ 4.45", "One rotary module per model, logits for the last prompt position only"),
            "5.x": ("5.x", "As 4.45 and later (the default)"),
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


Method = Literal["full", "lora", "qlora"]
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
]
TrainPrecision = Literal["bf16", "fp16", "fp32", "amp-bf16", "amp-fp16"]
LoraBias = Literal["none", "all", "lora_only"]
AdapterDtype = Literal["fp32", "base"]
FsdpStrategy = Literal["full", "shard-grad-op", "hybrid"]
VisionTower = Literal["frozen", "trained", "absent"]
Offload = Literal["none", "optimizer", "params"]

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
        help="Full fine-tuning or adapters (LoRA / QLoRA)",
        group="finetune",
        choices={
            "lora": (
                "lora",
                "LoRA: the base model frozen in bf16, small trainable adapters with their own gradients and optimizer",
            ),
            "qlora": ("qlora", "QLoRA: the base model in 4-bit NF4, adapters in bf16"),
            "full": ("full", "Full fine-tuning: gradients and optimizer states for every parameter"),
        },
        form={"values": ["lora", "qlora", "full"]},
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
        },
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
            "when": {"method": ["lora", "qlora"]},
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
        form={"when": {"method": ["lora", "qlora"]}, "accessible": "Adapter dtype"},
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
    def _adapters_only(self) -> FinetuneWorkload:
        if self.method == "full" and (self.modules_to_save or self.lora_bias != "none"):
            raise ValueError(ADAPTERS_ONLY())
        return self


Workload = Annotated[InferenceWorkload | FinetuneWorkload, Field(discriminator="kind")]
