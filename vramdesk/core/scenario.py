"""Scenario: what the user wants to run, on what. Frozen, validated, and the saved-file format.

A scenario names a model (it does not embed its config), a workload (inference or fine-tuning),
the weight format, the engine and the hardware. ``schema_version`` lets storage migrate old files.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_VERSION = 1

Engine = Literal["transformers", "vllm", "llamacpp"]
Attention = Literal["flash", "sdpa", "eager"]
KvDtypeName = Literal["auto", "fp32", "bf16", "fp16", "fp8", "int8", "q8_0", "q4_0"]
SplitMode = Literal["layer", "row"]

#: Longest context accepted anywhere (tokens). Longer requests are almost always a typo.
MAX_TOKENS = 16 * 1024 * 1024
#: Most GPUs one plan models (nodes x GPUs per node). An estimate lists every GPU (``per_gpu``), so its cost grows
#: with the count: 4,096 nodes x 4,096 GPUs (each allowed on its own) would be 16.7 million entries, past 120 s and
#: 4 GB. 65,536 is above the largest training jobs published (Llama 3 405B: 16,384 GPUs) and costs under a second.
MAX_TOTAL_GPUS = 65_536


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelRef(_Frozen):
    """Which model: a Hub repo id (``owner/name``), a local path, or a catalog entry."""

    id: str = Field(min_length=1, max_length=1000)
    revision: str | None = None

    @field_validator("id")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("model id is empty")
        return v


class VllmOptions(_Frozen):
    gpu_memory_utilization: float = Field(default=0.9, gt=0.0, le=1.0)
    max_num_seqs: int = Field(default=256, ge=1, le=65536)
    #: tokens per scheduler step; None = vLLM's default for its V1 engine (8192, at least max_model_len
    #: when chunked prefill is off)
    max_num_batched_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    enforce_eager: bool = False
    block_size: int = Field(default=16, ge=1, le=1024)


class LlamaCppOptions(_Frozen):
    #: layers offloaded to the GPU; None = all of them (-ngl 999)
    n_gpu_layers: int | None = Field(default=None, ge=0, le=100000)
    n_ubatch: int = Field(default=512, ge=1, le=MAX_TOKENS)
    flash_attn: bool = True
    swa_full: bool = False
    #: several GPUs: "layer" divides the layers between them (the default); "row" splits every weight matrix by
    #: rows over all of them and keeps the KV cache and the compute buffer on the main GPU
    split_mode: SplitMode = "layer"


class InferenceWorkload(_Frozen):
    kind: Literal["inference"] = "inference"
    engine: Engine = "transformers"
    attention: Attention = "sdpa"
    batch: int = Field(default=1, ge=1, le=65536)
    #: prompt tokens; None = min(model's context, 4096)
    input_len: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    output_len: int = Field(default=512, ge=0, le=MAX_TOKENS)
    kv_dtype: KvDtypeName = "auto"
    #: transformers < 4.45 computed logits for every prompt position in generate(); newer keeps the last
    full_prompt_logits: bool = False
    #: transformers device_map="auto": accelerate's max_memory per GPU for the weights (GiB); what does not fit
    #: on the GPUs goes to CPU memory, then to disk. None = no cap (an even layer split)
    max_memory_gib: float | None = Field(default=None, gt=0.0, le=100_000.0)
    #: accelerate's max_memory for "cpu" (GiB) before weights spill to disk; None = no cap
    cpu_memory_gib: float | None = Field(default=None, ge=0.0, le=1_000_000.0)
    vllm: VllmOptions = VllmOptions()
    llamacpp: LlamaCppOptions = LlamaCppOptions()


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
    method: Method = "lora"
    micro_batch: int = Field(default=1, ge=1, le=65536)
    seq_len: int = Field(default=2048, ge=1, le=MAX_TOKENS)
    #: unpacked batches whose length varies: their mean length (``seq_len`` is then the longest). None = every
    #: batch is ``seq_len`` long (packed, or padded to the maximum)
    mean_seq_len: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    grad_accum: int = Field(default=1, ge=1, le=1_000_000)
    optimizer: Optimizer = "adamw"
    precision: TrainPrecision = "bf16"
    grad_checkpointing: bool = True
    #: with checkpointing: checkpoint every k-th layer (torchtune's selective activation checkpointing); the
    #: layers in between keep all their activations. 1 = every layer
    checkpoint_every: int = Field(default=1, ge=1, le=4096)
    attention: Attention = "sdpa"
    lora_rank: int = Field(default=16, ge=1, le=65536)
    lora_targets: tuple[str, ...] = ("all-linear",)
    #: LoRA dropout probability (> 0 keeps a 1-byte mask per adapted input)
    lora_dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    #: DoRA (weight-decomposed LoRA): magnitude vectors and per-layer weight norms
    dora: bool = False
    #: chunked cross-entropy (torchtune's CEWithChunkedOutputLoss, Liger-style): the fp32 loss head per chunk
    chunked_loss: bool = False
    #: activations moved to CPU memory during the forward (torchtune / DeepSpeed activation offloading)
    activation_offload: bool = False
    #: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator grows segments in place, so its
    #: cache of free blocks (the reserved - allocated gap) stays small
    expandable_segments: bool = False
    #: modules trained in full next to the adapters (peft ``modules_to_save``): "embed", "lm_head"
    modules_to_save: tuple[str, ...] = ()
    #: peft LoRA ``bias``: which biases train ("all" of them, those of adapted layers, or "none")
    lora_bias: LoraBias = "none"
    #: dtype of the adapters: fp32 (peft >= 0.12, autocast_adapter_dtype) or the base weights' dtype (older peft)
    adapter_dtype: AdapterDtype = "fp32"
    #: a multimodal model's vision tower: loaded and frozen, trained (in full, or adapters on its linear layers),
    #: or absent (the text model class alone is loaded)
    vision_tower: VisionTower = "frozen"

    @field_validator("modules_to_save")
    @classmethod
    def _saved_modules(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        out: list[str] = []
        for name in v:
            kind = SAVED_MODULES.get(name.strip())
            if kind is None:
                raise ValueError(
                    f"modules_to_save: '{name}' is not a module this estimator trains in full; "
                    f"known: {', '.join(SAVED_MODULES)}"
                )
            if kind not in out:
                out.append(kind)
        return tuple(out)

    @model_validator(mode="after")
    def _mean_below_max(self) -> FinetuneWorkload:
        if self.mean_seq_len is not None and self.mean_seq_len > self.seq_len:
            raise ValueError(
                f"mean_seq_len {self.mean_seq_len} is longer than seq_len {self.seq_len}: seq_len is the longest "
                "batch, mean_seq_len the average of the varying ones"
            )
        return self

    @model_validator(mode="after")
    def _adapters_only(self) -> FinetuneWorkload:
        if self.method == "full" and (self.modules_to_save or self.lora_bias != "none"):
            raise ValueError(
                "modules_to_save and lora_bias apply to LoRA / QLoRA; a full fine-tune already trains every module"
            )
        return self


Workload = Annotated[InferenceWorkload | FinetuneWorkload, Field(discriminator="kind")]


class Hardware(_Frozen):
    #: GPU catalog name (e.g. "RTX 4090"); None = none chosen (detected GPUs may still be used)
    gpu: str | None = None
    gpu_count: int = Field(default=1, ge=1, le=4096)
    #: machines, each with gpu_count GPUs (fine-tuning plans that outgrow one machine)
    nodes: int = Field(default=1, ge=1, le=4096)

    @model_validator(mode="after")
    def _bounded_total(self) -> Hardware:
        total = self.gpu_count * self.nodes
        if total > MAX_TOTAL_GPUS:
            raise ValueError(
                f"{self.nodes:,} nodes x {self.gpu_count:,} GPUs = {total:,} GPUs: a plan models at most "
                f"{MAX_TOTAL_GPUS:,} GPUs"
            )
        return self


class Parallelism(_Frozen):
    tp: int = Field(default=1, ge=1, le=4096)
    pp: int = Field(default=1, ge=1, le=4096)
    zero: Literal[0, 1, 2, 3] = 0
    fsdp: bool = False
    #: FSDP sharding: full (parameters, gradients, states), shard-grad-op (gradients and states, like ZeRO-2),
    #: hybrid (full sharding inside each node, replicas across nodes)
    fsdp_strategy: FsdpStrategy = "full"
    #: FSDP1 (FullyShardedDataParallel, flat parameters; accelerate's default) or FSDP2 (fully_shard, per-parameter
    #: DTensors): with LoRA they differ in what frozen layers keep for backward
    fsdp_version: Literal[1, 2] = 1
    #: DeepSpeed reduce_bucket_size (elements); None = DeepSpeed's default 5e8
    zero_bucket: int | None = Field(default=None, ge=1, le=10**12)
    #: DeepSpeed overlap_comm (a second gradient bucket); None = DeepSpeed's default (on for ZeRO-3 only)
    zero_overlap_comm: bool | None = None
    offload: Offload = "none"


class Scenario(_Frozen):
    schema_version: int = SCHEMA_VERSION
    name: str | None = Field(default=None, max_length=200)
    model: ModelRef
    #: weight storage format; "auto" = the checkpoint's own (its quantization_config, else its dtype)
    weights: str = "auto"
    workload: Workload = InferenceWorkload()
    hardware: Hardware = Hardware()
    parallelism: Parallelism = Parallelism()

    @model_validator(mode="before")
    @classmethod
    def _default_kind(cls, data: object) -> object:
        """A workload without "kind" is an inference workload unless it names fine-tuning fields."""
        if isinstance(data, dict) and isinstance(data.get("workload"), dict) and "kind" not in data["workload"]:
            work = dict(data["workload"])
            work["kind"] = "finetune" if set(work) & {"method", "micro_batch", "seq_len", "optimizer"} else "inference"
            data = {**data, "workload": work}
        return data

    @field_validator("weights")
    @classmethod
    def _weights_lower(cls, v: str) -> str:
        return v.strip().lower()

    @model_validator(mode="after")
    def _parallel_fits_gpus(self) -> Scenario:
        p = self.parallelism
        total = self.hardware.gpu_count * self.hardware.nodes
        if p.tp * p.pp > total:
            where = (
                f"hardware.gpu_count is {self.hardware.gpu_count}"
                if self.hardware.nodes == 1
                else f"{self.hardware.nodes} nodes x {self.hardware.gpu_count} GPUs give {total}"
            )
            raise ValueError(f"parallelism: tp ({p.tp}) x pp ({p.pp}) needs {p.tp * p.pp} GPUs but {where}")
        if p.tp > self.hardware.gpu_count:
            raise ValueError(
                f"parallelism: tp ({p.tp}) spans more than one node's {self.hardware.gpu_count} GPUs; tensor "
                "parallel needs the GPUs of one machine"
            )
        return self
