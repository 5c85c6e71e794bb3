"""Trainer profiles: what each fine-tuning stack does, as its own source code does it, that changes memory.

A profile is a small record: the workload values the trainer starts from (``defaults``: the user can still change
them, as the trainer's own config can), the values it always runs with (``fixed``: it has no setting for them), and
named behaviours the phases read (its loss, how its adapters keep their inputs, how its checkpointing meets FSDP,
what its loading leaves cached). Every fact names the file and function of the trainer's source that says it.

``hf`` is HF Trainer / TRL with PEFT: the rules the rest of the estimator states, unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .messages import Message

#: (the order of the form's list and of the command line's help)
TrainerName = Literal["hf", "torchtune", "unsloth", "litgpt", "fsdp-qlora", "axolotl", "llama-factory", "ms-swift"]
#: how the loss keeps the logits for backward: "model" = the model's own loss (HF: fp32 log-softmax and its
#: gradients, or ``chunked_loss``); "fused-16bit" = a kernel that keeps only the 16-bit logits and writes their
#: gradient in place; "chunked-head" = the lm_head and the loss run in 128-token chunks and each chunk keeps only
#: its log-softmax, in the loss's dtype
LossKind = Literal["model", "fused-16bit", "chunked-head"]


@dataclass(frozen=True)
class TrainerProfile:
    name: str
    #: workload values the trainer's configs start from; the user may change them
    defaults: Mapping[str, object] = field(default_factory=dict)
    #: workload values the trainer always runs with (it has no setting for them)
    fixed: Mapping[str, object] = field(default_factory=dict)
    loss: LossKind = "model"
    #: the adapters of one layer that read the same tensor (q, k, v; gate and up) keep it once: they are applied to
    #: the layer's input as it is, with no per-adapter cast or dropout copy
    shared_adapter_inputs: bool = False
    #: activation checkpointing wraps each FSDP-wrapped decoder layer from outside, so FSDP1's frozen-unit
    #: post-backward hook never holds a recomputed layer's input (no "retained input gradients")
    checkpoint_outside_fsdp: bool = False
    #: FSDP1 with use_orig_params=False: frozen weights sit in flat parameters that do not require grad, so frozen
    #: linears keep no input (the frozen-base rule applies under FSDP1 too)
    fsdp_frozen_flat_params: bool = False
    #: low-memory loading with FSDP's sync_module_states: each unit is moved to the GPU whole, flattened and
    #: sharded; the freed whole blocks stay in PyTorch's cache (counted at the reserved level)
    loading_cache: bool = False
    #: the methods it trains (None = all)
    methods: frozenset[str] | None = None
    #: it always wraps the model in FSDP1
    needs_fsdp1: bool = False
    #: a quantised base trains on one GPU only
    quantised_single_gpu: bool = False
    #: it does not run DeepSpeed ZeRO
    no_zero: bool = False
    #: it computes attention with its own code (its own models, or kernels it patches in), not with transformers'
    #: attention implementations: transformers' eager fallback for a model without SDPA does not apply
    own_attention: bool = False
    #: where each fact comes from: repository, file, function
    sources: tuple[str, ...] = ()


PROFILES: dict[str, TrainerProfile] = {
    "hf": TrainerProfile(
        "hf",
        sources=("huggingface/transformers trainer.py Trainer; huggingface/peft tuners/lora/layer.py Linear.forward",),
    ),
    "torchtune": TrainerProfile(
        "torchtune",
        own_attention=True,
        # recipes/configs/*_lora_single_device.yaml: loss CEWithChunkedOutputLoss (8 chunks),
        # enable_activation_checkpointing True, enable_activation_offloading False
        defaults={"chunked_loss": True, "grad_checkpointing": True},
        # the recipe builds the whole model, adapters included, in its one ``dtype`` (training.set_default_dtype)
        fixed={"adapter_dtype": "base"},
        shared_adapter_inputs=True,
        sources=(
            "pytorch/torchtune torchtune/modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss "
            "(num_output_chunks=8)",
            "pytorch/torchtune torchtune/modules/peft/lora.py LoRALinear.forward: lora_a(dropout(x)), dropout "
            "nn.Identity at 0.0, no dtype cast",
            "pytorch/torchtune torchtune/training/activations.py: checkpoint_wrapper(use_reentrant=False) per "
            "TransformerSelfAttentionLayer",
            "pytorch/torchtune recipes/lora_finetune_single_device.py _setup_model (set_default_dtype)",
        ),
    ),
    "axolotl": TrainerProfile(
        "axolotl",
        # HF Trainer underneath; Liger's fused linear cross-entropy only when the config enables liger_* plugins
        sources=(
            "axolotl-ai-cloud/axolotl src/axolotl/core/trainers/base.py AxolotlTrainer (an HF Trainer); "
            "src/axolotl/integrations/liger/ (opt-in plugin: liger_fused_linear_cross_entropy)",
        ),
    ),
    "llama-factory": TrainerProfile(
        "llama-factory",
        sources=(
            "hiyouga/LLaMA-Factory src/llamafactory/train/sft/trainer.py CustomSeq2SeqTrainer (an HF Trainer); "
            "src/llamafactory/model/model_utils/liger_kernel.py apply_liger_kernel (opt-in enable_liger_kernel)",
        ),
    ),
    "ms-swift": TrainerProfile(
        "ms-swift",
        sources=("modelscope/ms-swift swift/trainers/trainers.py Seq2SeqTrainer (an HF Trainer) with PEFT tuners",),
    ),
    "unsloth": TrainerProfile(
        "unsloth",
        own_attention=True,
        # use_gradient_checkpointing="unsloth" (its notebooks' value): checkpointed layer inputs go to CPU memory
        defaults={"grad_checkpointing": True, "activation_offload": True},
        loss="fused-16bit",
        sources=(
            "unslothai/unsloth unsloth/kernels/cross_entropy_loss.py Fast_CrossEntropyLoss: saves the 16-bit "
            "logits and a logsumexp per row, backward writes the gradient into the logits",
            "unslothai/unsloth unsloth/models/_utils.py: Unsloth_Offloaded_Gradient_Checkpointer (unsloth_zoo) "
            "moves each decoder layer's input to CPU memory and back for its backward",
        ),
    ),
    "litgpt": TrainerProfile(
        "litgpt",
        own_attention=True,
        # finetune/lora.py has no activation-checkpointing setting; its LoRA layers are made in the model's dtype
        fixed={"grad_checkpointing": False, "adapter_dtype": "base", "chunked_loss": False},
        loss="chunked-head",
        shared_adapter_inputs=True,
        methods=frozenset({"lora", "qlora"}),
        quantised_single_gpu=True,
        no_zero=True,
        sources=(
            "Lightning-AI/litgpt litgpt/finetune/lora.py fit: model(input_ids, lm_head_chunk_size=128), "
            "chunked_cross_entropy",
            "Lightning-AI/litgpt litgpt/utils.py chunked_cross_entropy (128-token chunks)",
            "Lightning-AI/litgpt litgpt/lora.py LoRALinear.forward / LoRAQKVLinear.forward: one lora_A on the "
            "layer's input for q, k and v, no dtype cast, dropout only when > 0",
            "Lightning-AI/litgpt litgpt/finetune/lora.py setup: quantization is not supported for multi-GPU",
        ),
    ),
    "fsdp-qlora": TrainerProfile(
        "fsdp-qlora",
        # train.py's defaults: use_gradient_checkpointing True, lora_dropout 0.1, lora_rank 64
        defaults={"grad_checkpointing": True, "lora_dropout": 0.1, "lora_rank": 64, "method": "qlora"},
        checkpoint_outside_fsdp=True,
        fsdp_frozen_flat_params=True,
        loading_cache=True,
        methods=frozenset({"lora", "qlora"}),
        needs_fsdp1=True,
        no_zero=True,
        sources=(
            "AnswerDotAI/fsdp_qlora train.py fsdp_main: FSDP(use_orig_params=False, sync_module_states=low_memory, "
            "param_init_fn=to_empty), then apply_activation_checkpointing(check_fn=LlamaDecoderLayer) around the "
            "wrapped layers",
            "AnswerDotAI/fsdp_qlora train.py get_wrapping_policy: trainable leaf modules (the adapters) and whole "
            "decoder layers as units, the embeddings and lm_head in the root unit",
        ),
    ),
}


TRAINER_METHOD = Message(
    "training.trainer.method", "the {trainer} trainer trains {methods}, not {method}: choose --method {methods}"
)
TRAINER_NEEDS_FSDP = Message(
    "training.trainer.needs_fsdp",
    "the {trainer} trainer always wraps the model in FSDP1 (torch.distributed.fsdp): add --fsdp with --fsdp-version 1",
)
TRAINER_NO_ZERO = Message(
    "training.trainer.no_zero", "the {trainer} trainer does not run DeepSpeed ZeRO: drop --zero {zero} (or use --fsdp)"
)
TRAINER_QUANTISED_ONE_GPU = Message(
    "training.trainer.quantised_one_gpu",
    "the {trainer} trainer trains a quantised base on one GPU only ({gpus} asked): use --gpus 1 or an unquantised base",
)


def profile(name: str) -> TrainerProfile:
    """The profile of a trainer name (an unknown one is refused by the workload's Literal before this)."""
    return PROFILES[name]


def with_profile(data: dict[str, object]) -> dict[str, object]:
    """A fine-tuning workload's input with its trainer's profile applied: the defaults where the input does not
    name the field, the fixed values always."""
    name = data.get("trainer", "hf")
    prof = PROFILES.get(str(name))
    if prof is None:
        return data
    out = {**{k: v for k, v in prof.defaults.items() if k not in data}, **data}
    out.update(prof.fixed)
    return out


def trainer_problem(
    name: str, method: str, *, fsdp: bool, fsdp_version: int, zero: int, gpus: int, quantised: bool
) -> str | None:
    """The one-line refusal of a plan the trainer cannot run, or None."""
    prof = PROFILES[name]
    if prof.methods is not None and method not in prof.methods:
        return TRAINER_METHOD(trainer=name, methods=" or ".join(sorted(prof.methods)), method=method)
    if prof.no_zero and zero:
        return TRAINER_NO_ZERO(trainer=name, zero=zero)
    if prof.needs_fsdp1 and not (fsdp and fsdp_version == 1):
        return TRAINER_NEEDS_FSDP(trainer=name)
    if prof.quantised_single_gpu and quantised and gpus > 1:
        return TRAINER_QUANTISED_ONE_GPU(trainer=name, gpus=gpus)
    return None
