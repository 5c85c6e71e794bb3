"""Scenario: what the user wants to run, on what. Frozen, validated, and the saved-file format.

A scenario names a model (it does not embed its config), a workload (inference or fine-tuning),
the weight format, the engine and the hardware. ``schema_version`` lets storage migrate old files.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from .engine_options import MAX_TOKENS, LlamaCppOptions, SplitMode, VllmOptions
from .messages import Message
from .option_decl import _Frozen, option
from .workloads import (
    SAVED_MODULES,
    AdapterDtype,
    Attention,
    Engine,
    FinetuneWorkload,
    FsdpStrategy,
    InferenceWorkload,
    KvDtypeName,
    LoraBias,
    Method,
    Offload,
    Optimizer,
    TrainPrecision,
    VisionTower,
    Workload,
)

SCHEMA_VERSION = 1

#: Most GPUs one plan models (nodes x GPUs per node). An estimate lists every GPU (``per_gpu``), so its cost grows
#: with the count: 4,096 nodes x 4,096 GPUs (each allowed on its own) would be 16.7 million entries, past 120 s and
#: 4 GB. 65,536 is above the largest training jobs published (Llama 3 405B: 16,384 GPUs) and costs under a second.
MAX_TOTAL_GPUS = 65_536

MODEL_ID_EMPTY = Message("input.model_id_empty", "model id is empty")
TOO_MANY_GPUS = Message(
    "input.too_many_gpus",
    "{nodes:,} nodes x {gpus:,} GPUs = {total:,} GPUs: a plan models at most {most:,} GPUs",
)
PARALLEL_NEEDS_GPUS = Message(
    "input.parallel_needs_gpus", "parallelism: tp ({tp}) x pp ({pp}) needs {need} GPUs but {where}"
)
#: what the plan has, in the sentence above: one machine, or several
HAS_GPU_COUNT = Message("input.parallel_needs_gpus.gpu_count", "hardware.gpu_count is {gpus}")
HAS_NODES = Message("input.parallel_needs_gpus.nodes", "{nodes} nodes x {gpus} GPUs give {total}")
TP_SPANS_NODES = Message(
    "input.tp_spans_nodes",
    "parallelism: tp ({tp}) spans more than one node's {gpus} GPUs; tensor parallel needs the GPUs of one machine",
)


class ModelRef(_Frozen):
    """Which model: a Hub repo id (``owner/name``), a local path, or a catalog entry."""

    id: str = Field(min_length=1, max_length=1000)
    revision: str | None = None

    @field_validator("id")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError(MODEL_ID_EMPTY())
        return v


class Hardware(_Frozen):
    #: GPU catalog name (e.g. "RTX 4090"); None = none chosen (detected GPUs may still be used)
    gpu: str | None = option(
        None,
        label="&GPU",
        help="The GPU to plan for: a detected one (free memory) or any from the catalog",
        group="hardware",
        shown="none",
    )
    gpu_count: int = option(
        1, ge=1, le=4096, label="GPU &count", help="Number of GPUs of this kind", group="hardware", flag="gpus"
    )
    #: machines, each with gpu_count GPUs (fine-tuning plans that outgrow one machine)
    nodes: int = option(
        1,
        ge=1,
        le=4096,
        label="Machines",
        help="Machines of this many GPUs each (fine-tuning): data parallel, ZeRO and FSDP spread over all of "
        "them, tensor parallel stays inside one machine, host memory is per machine",
        group="hardware",
        form={"when": {"mode": ["finetune"]}},
    )

    @model_validator(mode="after")
    def _bounded_total(self) -> Hardware:
        total = self.gpu_count * self.nodes
        if total > MAX_TOTAL_GPUS:
            raise ValueError(TOO_MANY_GPUS(nodes=self.nodes, gpus=self.gpu_count, total=total, most=MAX_TOTAL_GPUS))
        return self


class Parallelism(_Frozen):
    tp: int = option(
        1,
        ge=1,
        le=4096,
        label="Tensor parallel",
        help="Tensor parallel: each layer split across this many GPUs",
        group="hardware",
    )
    pp: int = option(
        1,
        ge=1,
        le=4096,
        label="Pipeline parallel",
        help="Pipeline parallel: the layers split into this many stages",
        group="hardware",
    )
    zero: Literal[0, 1, 2, 3] = option(
        0,
        label="ZeRO",
        help="DeepSpeed ZeRO stage (fine-tuning on several GPUs)",
        group="hardware",
        choices={
            "0": ("off", "no sharding"),
            "1": ("ZeRO-1", "optimizer states sharded"),
            "2": ("ZeRO-2", "optimizer states and gradients sharded"),
            "3": ("ZeRO-3", "states, gradients and parameters sharded"),
        },
        form={"when": {"mode": ["finetune"]}},
    )
    #: DeepSpeed reduce_bucket_size (elements); None = DeepSpeed's default 5e8
    zero_bucket: int | None = option(
        None,
        ge=1,
        le=10**12,
        label="ZeRO bucket",
        help="DeepSpeed reduce_bucket_size in elements (ZeRO only): the gradient buckets are this large; "
        "default = DeepSpeed's 500,000,000",
        group="hardware",
        shown="default (5e8)",
        form={
            "when": {"mode": ["finetune"], "zero": ">0"},
            "step": 50_000_000,
            "accessible": "DeepSpeed bucket size (elements)",
        },
    )
    #: DeepSpeed overlap_comm (a second gradient bucket); None = DeepSpeed's default (on for ZeRO-3 only)
    zero_overlap_comm: bool | None = option(
        None,
        label="overlap_comm",
        help="DeepSpeed overlap_comm (ZeRO only)",
        group="hardware",
        shown="default",
        form={"when": {"mode": ["finetune"], "zero": ">0"}, "accessible": "DeepSpeed overlap_comm"},
        choices={
            "None": ("default", "DeepSpeed's default: on for ZeRO-3, off for ZeRO-1 and 2"),
            "True": ("on", "Overlaps gradient reduction with the backward: a second gradient bucket (ZeRO-1 and 2)"),
            "False": ("off", "One gradient bucket; the reduction waits for it"),
        },
    )
    fsdp: bool = option(
        False,
        label="FSDP",
        help="PyTorch FSDP: shards the model over the GPUs (full sharding is like ZeRO-3)",
        group="hardware",
        form={"when": {"mode": ["finetune"]}},
    )
    #: FSDP sharding: full (parameters, gradients, states), shard-grad-op (gradients and states, like ZeRO-2),
    #: hybrid (full sharding inside each node, replicas across nodes)
    fsdp_strategy: FsdpStrategy = option(
        "full",
        label="FSDP strategy",
        help="FSDP sharding strategy (FSDP only)",
        group="hardware",
        choices={
            "full": ("full shard", "FULL_SHARD: parameters, gradients and optimizer states sharded (like ZeRO-3)"),
            "shard-grad-op": (
                "shard grad/op",
                "SHARD_GRAD_OP: gradients and optimizer states sharded, every GPU keeps all the parameters "
                "(like ZeRO-2): more memory, less communication",
            ),
            "hybrid": ("hybrid shard", "HYBRID_SHARD: full sharding inside each node, a replica per node"),
        },
        form={"when": {"mode": ["finetune"], "fsdp": [True]}, "accessible": "FSDP strategy", "beside": "fsdp"},
    )
    #: FSDP1 (FullyShardedDataParallel, flat parameters; accelerate's default) or FSDP2 (fully_shard, per-parameter
    #: DTensors): with LoRA they differ in what frozen layers keep for backward
    fsdp_version: Literal[1, 2] = option(
        1,
        label="FSDP version",
        help="FSDP version (FSDP only)",
        group="hardware",
        choices={
            "1": (
                "FSDP1",
                "FullyShardedDataParallel (accelerate's default): with LoRA, frozen layers keep their inputs for "
                "backward as in a full fine-tune",
            ),
            "2": ("FSDP2", "fully_shard (per-parameter sharding): frozen layers keep only what LoRA needs"),
        },
        form={"when": {"mode": ["finetune"], "fsdp": [True]}, "accessible": "FSDP version"},
    )
    offload: Offload = option(
        "none",
        label="Offload",
        help="Move optimizer states or parameters to CPU memory",
        group="hardware",
        choices={
            "none": ("off", "Nothing is offloaded to CPU memory"),
            "optimizer": ("optimizer states", "Optimizer states live in CPU memory (DeepSpeed / FSDP offload)"),
            "params": ("parameters", "Parameters and optimizer states live in CPU memory"),
        },
        form={"when": {"mode": ["finetune"]}},
    )


class Scenario(_Frozen):
    schema_version: int = SCHEMA_VERSION
    name: str | None = Field(default=None, max_length=200)
    model: ModelRef
    #: weight storage format; "auto" = the checkpoint's own (its quantization_config, else its dtype)
    weights: str = option(
        "auto",
        label="&Weights",
        help="How the weights are stored in memory",
        group="model",
        choices={"auto": ("auto (checkpoint)", "")},
        form={
            "values": [
                "auto",
                "bf16",
                "fp16",
                "fp8",
                "int8",
                "nf4",
                "nf4-dq",
                "gptq-int4",
                "gptq-int8",
                "awq-int4",
                "mxfp4",
                "q8_0",
                "q6_k",
                "q5_k_m",
                "q4_k_m",
                "q4_0",
            ]
        },
    )
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
                HAS_GPU_COUNT(gpus=self.hardware.gpu_count)
                if self.hardware.nodes == 1
                else HAS_NODES(nodes=self.hardware.nodes, gpus=self.hardware.gpu_count, total=total)
            )
            raise ValueError(PARALLEL_NEEDS_GPUS(tp=p.tp, pp=p.pp, need=p.tp * p.pp, where=where))
        if p.tp > self.hardware.gpu_count:
            raise ValueError(TP_SPANS_NODES(tp=p.tp, gpus=self.hardware.gpu_count))
        return self


#: the scenario's vocabulary, for those who import it from here (the workloads are declared in workloads.py)
__all__ = [
    "MAX_TOKENS",
    "MAX_TOTAL_GPUS",
    "SAVED_MODULES",
    "SCHEMA_VERSION",
    "AdapterDtype",
    "Attention",
    "Engine",
    "FinetuneWorkload",
    "FsdpStrategy",
    "Hardware",
    "InferenceWorkload",
    "KvDtypeName",
    "LlamaCppOptions",
    "LoraBias",
    "Method",
    "ModelRef",
    "Offload",
    "Optimizer",
    "Parallelism",
    "Scenario",
    "SplitMode",
    "TrainPrecision",
    "VisionTower",
    "VllmOptions",
    "Workload",
    "option",
]
