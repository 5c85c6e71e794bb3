"""Speed from first principles: decode is bound by memory bandwidth, prefill and training by arithmetic.

Every figure is a roofline: time = max(bytes moved / effective bandwidth, FLOPs / effective compute), plus
the communication a multi-GPU layout adds. The efficiencies (fraction of the datasheet figure reached in
practice) are stated in :class:`Efficiency` and can be overridden; every rule used is written into
``Performance.assumptions`` so a user can check it.

Rules (per token unless stated):

* decode reads the active weights once per step (MoE: the routed top-k share of the experts plus all dense
  parts; the input embedding is a row lookup and is not counted) plus the KV cache of every sequence at its
  current length; FLOPs = 2 x active matmul parameters + attention (2 x heads x (d_k + d_v) x context).
* prefill FLOPs = 2 x active matmul parameters x tokens + attention (2 x heads x (d_k + d_v) x causal pairs,
  sliding windows cap the pairs); weight-only int4 / fp8 formats still multiply in 16 bits.
* training FLOPs = 6 x N (full), 8 x N with activation checkpointing (the forward runs twice); LoRA / QLoRA:
  4 x N through the frozen base (forward + the backward for activation gradients, no weight gradients),
  6 x N with checkpointing, plus 6 x the adapter parameters; attention x 3 (x 4 with checkpointing).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .architecture import Architecture, AttentionKind
from .engines import Engine, engine
from .estimate import resolve_format
from .facts import ModelFacts
from .gpu import GpuSpec
from .memo import derived
from .messages import Message, MessageText, Text, free, join
from .peft.common import frozen_base
from .performance_moe import decode_note, host_experts, prefill_host_s
from .result import Estimate
from .scenario import FinetuneWorkload, InferenceWorkload, Parallelism, Scenario
from .weight_format import WeightFormat
from .weights import WeightBytes, stored_weight_bytes

Bound = Literal["memory bandwidth", "compute", "communication", "host transfer"]

#: weight formats whose kernels dequantise blocks on the fly (lower achieved bandwidth at batch 1)
_BLOCK_QUANT_KINDS = frozenset({"gguf", "gptq", "awq", "bnb4", "mxfp4", "nvfp4", "ct-int"})

# ---------------------------------------------------------------------------------------------- texts

NO_BANDWIDTH = Message(
    "speed.error.no_bandwidth", "the GPU catalog has no memory bandwidth for {gpu}: no speed estimate"
)
NO_TRAINING_TFLOPS = Message(
    "speed.error.no_training_tflops", "the GPU catalog has no 16-bit TFLOPS for {gpu}: no training speed estimate"
)
#: the GPU-to-GPU link assumed (:func:`link_for`)
LINK_NVLINK = Message("speed.link.nvlink", "NVLink {generation} ({gbps:g} GB/s per direction)")
LINK_NVL_PAIR = Message("speed.link.h100_nvl", "NVLink bridge of an H100 NVL pair ({gbps:g} GB/s per direction)")
LINK_INFINITY_FABRIC = Message(
    "speed.link.infinity_fabric", "AMD Infinity Fabric (about {gbps:g} GB/s per direction to peers, assumed)"
)
LINK_PCIE = Message("speed.link.pcie", "PCIe {generation} x16 (about {gbps:g} GB/s achieved, no NVLink)")
LINK_GIVEN = Message("speed.link.given", "{gbps:g} GB/s per direction (given)")
LINK_NETWORK = Message("speed.link.network", "the network between {machines} machines ({gbps:g} GB/s per GPU assumed)")
#: the weights' format when the checkpoint's own dtypes are priced
CHECKPOINT_DTYPES = Message("speed.weights.checkpoint", "the checkpoint's stored dtypes")
# inference
LLAMACPP_CPU_LAYERS = Message(
    "speed.decode.llamacpp_cpu_layers",
    "llama.cpp keeps {cpu_layers} of {total} layers on the CPU: their share is read from host RAM at {gbps:g} GB/s",
)
DEVICE_MAP_CPU = Message(
    "speed.decode.device_map_cpu",
    "device_map keeps {gib:.2f} GiB of weights in CPU memory: {percent:.0f} % of the weights cross PCIe at {gbps:g} "
    "GB/s every step",
)
DECODE_READS = Message(
    "speed.decode.reads",
    "decode step reads {weights_gb:.2f} GB of weights ({label}; input embedding not read) + KV {kv:,.0f} B/token x "
    "{context:,} tokens (mean context: input + output/2) x batch {batch} = {kv_gb:.2f} GB",
)
DECODE_READS_MOE = Message(
    "speed.decode.reads.moe",
    "decode step reads {weights_gb:.2f} GB of weights ({label}; routed top-k share of the experts, input embedding "
    "not read) + KV {kv:,.0f} B/token x {context:,} tokens (mean context: input + output/2) x batch {batch} = "
    "{kv_gb:.2f} GB",
)
DECODE_STATE = Message("speed.decode.state", "+ recurrent state read and written {gb:.3f} GB")
BANDWIDTH = Message("speed.bandwidth", "effective bandwidth = {gbps:g} GB/s x {efficiency:g}")
BANDWIDTH_BLOCK = Message(
    "speed.bandwidth.block",
    "effective bandwidth = {gbps:g} GB/s x {efficiency:g} (block-quantised kernels dequantise on the fly)",
)
DECODE_TP = Message(
    "speed.decode.tensor_parallel",
    "tensor parallel {tp}: 2 all-reduces per layer of batch x hidden x 2 B over {link}, {latency_us:g} us latency "
    "each: {ms:.2f} ms per step",
)
DECODE_LAYER_SPLIT = Message(
    "speed.decode.layer_split", "{gpus} GPUs split by layers run one after another: no speed-up for one sequence"
)
CPU_OVERHEAD = Message(
    "speed.decode.cpu_overhead", "CPU overhead {us:g} us per layer per step ({engine}, eager launches)"
)
PREFILL = Message(
    "speed.prefill",
    "prefill: 2 x {params_b:.2f} B matmul parameters x {tokens:,} tokens + causal attention = {tflop:.1f} TFLOP over "
    "{tflops:g} TFLOPS x MFU {mfu:g} (16-bit tensor cores; weight-only int4/fp8 formats still multiply in 16 bits)",
)
NO_PREFILL_TFLOPS = Message(
    "speed.prefill.no_tflops", "the GPU catalog has no 16-bit TFLOPS for {gpu}: prefill speed not estimated"
)
# training
OPTIMIZER_ON_CPU = Message(
    "speed.train.optimizer_offload",
    "optimizer on the CPU: gradients down and parameters up over PCIe at {gbps:g} GB/s, CPU AdamW at {rate:.1e} "
    "parameters/s",
)
PARAMS_ON_CPU = Message(
    "speed.train.params_offload", "parameters on the CPU: streamed over PCIe {passes} times per micro-step"
)
RULE_LORA = Message(
    "speed.train.rule.lora", "{k:g} x N (LoRA: forward + activation-gradient backward through the frozen base)"
)
RULE_LORA_CKPT = Message(
    "speed.train.rule.lora_checkpointing",
    "{k:g} x N (LoRA: forward + activation-gradient backward through the frozen base, + the recomputed forward)",
)
RULE_FULL = Message("speed.train.rule.full", "{k:g} x N (forward 2 N + backward 4 N)")
RULE_FULL_CKPT = Message(
    "speed.train.rule.full_checkpointing", "{k:g} x N (6 N + the recomputed forward with checkpointing)"
)
TRAIN_FLOPS = Message(
    "speed.train.flops",
    "training FLOPs per token = {rule} with N = {params_b:.2f} B active matmul parameters, + attention x "
    "{attention:g} = {gflop:.1f} GFLOP",
)
TRAIN_COMPUTE = Message("speed.train.compute", "{tflops:g} TFLOPS x MFU {mfu:g}")
TRAIN_COMPUTE_FP32 = Message(
    "speed.train.compute.fp32", "{tflops:g} TFLOPS / 2 (fp32 runs on TF32 tensor cores) x MFU {mfu:g}"
)
TRAIN_COMPUTE_QLORA = Message(
    "speed.train.compute.qlora",
    "{tflops:g} TFLOPS x MFU {mfu:g} x {qlora:g} (QLoRA dequantises the 4-bit base in every matmul)",
)
TRAIN_COMPUTE_FP32_QLORA = Message(
    "speed.train.compute.fp32_qlora",
    "{tflops:g} TFLOPS / 2 (fp32 runs on TF32 tensor cores) x MFU {mfu:g} x {qlora:g} (QLoRA dequantises the 4-bit "
    "base in every matmul)",
)
PIPELINE = Message(
    "speed.train.pipeline", "pipeline {pp} stages, 1F1B bubble: x (1 + (pp-1)/grad_accum) = x {bubble:.2f}"
)
DATA_PARALLEL = Message(
    "speed.train.data_parallel",
    "data parallel {dp}: gradient all-reduce of {gb:.2f} GB per step over {link}, not overlapped with the backward "
    "(an upper bound)",
)
DATA_PARALLEL_SHARDED = Message(
    "speed.train.data_parallel.sharded",
    "data parallel {dp}: gradient all-reduce of {gb:.2f} GB per step over {link}, x 1.5 for ZeRO-3 / FSDP parameter "
    "gathers (3 x Psi traffic instead of 2 x Psi), not overlapped with the backward (an upper bound)",
)
TRAIN_TP = Message(
    "speed.train.tensor_parallel",
    "tensor parallel {tp}: {all_reduces} all-reduces of micro_batch x seq x hidden x 2 B per micro-step",
)
TOKENS_PER_STEP = Message(
    "speed.train.tokens_per_step",
    "tokens per optimizer step = micro_batch {micro_batch} x seq_len {seq_len} x grad_accum {grad_accum} x "
    "data-parallel ranks {dp} = {tokens:,}",
)


class Efficiency(BaseModel):
    """Fractions of datasheet figures reached in practice, and the links between GPUs. None = the default
    stated next to the field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: decode: achieved / spec memory bandwidth. None = 0.8 for 16/8-bit float weights, 0.65 for block-quantised
    #: formats (GGUF k-quants, GPTQ, AWQ, bnb4, MXFP4), whose kernels dequantise on the fly
    bandwidth: float | None = Field(default=None, gt=0.0, le=1.0)
    #: prefill: model FLOPs utilisation of the dense 16-bit tensor-core figure
    mfu: float = Field(default=0.5, gt=0.0, le=1.0)
    #: training: model FLOPs utilisation
    train_mfu: float = Field(default=0.4, gt=0.0, le=1.0)
    #: GPU-to-GPU bandwidth per direction in GB/s; None = by GPU (NVLink parts 450/300/900, PCIe 4.0 25, 5.0 50)
    link_gbps: float | None = Field(default=None, gt=0.0)
    #: latency of one collective (all-reduce) in microseconds; None = 10 on NVLink, 25 on PCIe
    link_latency_us: float | None = Field(default=None, ge=0.0)
    #: between machines: network bandwidth per GPU and direction in GB/s (a 200-400 Gb/s InfiniBand or RoCE
    #: adapter per GPU reaches about 25-45 GB/s; 25 assumed) and the latency of one collective across them
    internode_gbps: float = Field(default=25.0, gt=0.0)
    internode_latency_us: float = Field(default=30.0, ge=0.0)
    #: host RAM bandwidth for layers a llama.cpp run keeps on the CPU, GB/s (dual-channel DDR5, achieved)
    host_gbps: float = Field(default=60.0, gt=0.0)
    #: PCIe bandwidth for CPU offload in training, GB/s (PCIe 4.0 x16 achieved)
    pcie_gbps: float = Field(default=25.0, gt=0.0)
    #: per decode step CPU overhead in seconds per decoder layer; None = 150 us for transformers (eager kernel
    #: launches, no CUDA graphs), 0 for vLLM (CUDA graphs) and llama.cpp (folded into its bandwidth efficiency)
    step_overhead_per_layer_s: float | None = Field(default=None, ge=0.0)
    #: QLoRA: share of LoRA's speed left after dequantising the 4-bit base in every matmul
    qlora_speed: float = Field(default=0.7, gt=0.0, le=1.0)
    #: CPU optimizer (offloaded AdamW): parameters updated per second
    cpu_adam_params_per_s: float = Field(default=1.0e9, gt=0.0)


class Performance(BaseModel):
    """Speed estimate for one scenario on one GPU type (per replica unless stated). Times in seconds."""

    model_config = ConfigDict(frozen=True)

    gpu: str
    gpu_count: int
    workload: Literal["inference", "finetune"]
    #: what limits the headline figure (decode for inference, the training step for fine-tuning)
    bound: Bound
    bandwidth_efficiency: float
    mfu: float
    effective_bandwidth_gbps: float
    effective_tflops: float | None
    link_gbps: float | None = None
    # ---- inference
    decode_tokens_per_s: float | None = None
    """tokens per second of one sequence (what a chat user sees)"""
    decode_tokens_per_s_total: float | None = None
    """all sequences of the batch together"""
    decode_bound: Bound | None = None
    decode_bytes_per_step: int | None = None
    decode_step_s: float | None = None
    prefill_tokens_per_s: float | None = None
    prefill_bound: Bound | None = None
    time_to_first_token_s: float | None = None
    #: time to first token + output_len decode steps, at the mean context
    generation_s: float | None = None
    # ---- training
    train_tokens_per_s: float | None = None
    step_time_s: float | None = None
    tokens_per_step: int | None = None
    flops_per_token: float | None = None
    communication_s_per_step: float | None = None
    offload_s_per_step: float | None = None
    dataset_tokens: int | None = None
    epoch_time_s: float | None = None
    #: every rule and number used, in words
    assumptions: tuple[MessageText, ...] = ()


class PerformanceError(ValueError):
    """A GPU without the figures a speed estimate needs; ``args[0]`` is the message's
    :class:`~vramdesk.core.messages.Text`."""


# ---------------------------------------------------------------------------------------------- helpers


def link_for(gpu: GpuSpec) -> tuple[float, float, Text]:
    """(GB/s per direction, collective latency in us, description) of the GPU-to-GPU link assumed."""
    n = gpu.name
    if any(k in n for k in ("B200", "GB200")):
        return 900.0, 10.0, LINK_NVLINK(generation=5, gbps=900)
    if any(k in n for k in ("H100 SXM", "H200", "H800", "H20", "GH200")):
        return 450.0, 10.0, LINK_NVLINK(generation=4, gbps=450)
    if "H100 NVL" in n:
        return 300.0, 10.0, LINK_NVL_PAIR(gbps=300)
    if "SXM" in n and ("A100" in n or "A800" in n):
        return 300.0, 10.0, LINK_NVLINK(generation=3, gbps=300)
    if "V100" in n and "SXM" in n:
        return 150.0, 10.0, LINK_NVLINK(generation=2, gbps=150)
    if n.startswith("MI3") or n.startswith("MI2"):
        return 300.0, 10.0, LINK_INFINITY_FABRIC(gbps=300)
    if any(k in n for k in ("RTX 50", "RTX PRO 6000", "H100 PCIe")):
        return 50.0, 25.0, LINK_PCIE(generation="5.0", gbps=50)
    return 25.0, 25.0, LINK_PCIE(generation="4.0", gbps=25)


def _text_weights(scenario: Scenario, facts: ModelFacts) -> tuple[WeightBytes, Text, bool]:
    """Text-model weight bytes as the estimator prices them; the format label; block-quantised or not."""
    fmt, _ = resolve_format(scenario, facts.arch)
    parts = frozenset({"text"})
    checkpoint = facts.checkpoint
    if scenario.weights == "auto" and checkpoint is not None:
        wb = derived(facts, ("stored weights", parts), lambda: stored_weight_bytes(checkpoint, parts))
        block = derived(
            facts,
            "block-quantised checkpoint",
            lambda: any(
                t.stored_dtype and t.stored_dtype.upper().startswith(("Q", "IQ", "TQ", "MXFP4")) for t in checkpoint
            ),
        )
        return wb, CHECKPOINT_DTYPES(), block or _is_block(fmt)
    # the format's label comes from the weight formats (its own Text once it has one)
    return facts.weights(fmt, parts), free(fmt.label), _is_block(fmt)


def _is_block(fmt: WeightFormat) -> bool:
    return fmt.kind in _BLOCK_QUANT_KINDS and fmt.name not in ("gguf-f32", "gguf-f16", "gguf-bf16")


def _role_activity(facts: ModelFacts) -> dict[str, float]:
    """Each text role's active share of its parameters (MoE experts: top-k of all), kept per model."""
    return derived(facts, "role activity", lambda: _count_role_activity(facts))


def _count_role_activity(facts: ModelFacts) -> dict[str, float]:
    num: dict[str, float] = {}
    den: dict[str, int] = {}
    for t in facts.tensors:
        if t.part != "text":
            continue
        num[t.role] = num.get(t.role, 0.0) + t.numel * t.active
        den[t.role] = den.get(t.role, 0) + t.numel
    return {r: (num[r] / den[r] if den[r] else 1.0) for r in den}


def active_read_bytes(wb: WeightBytes, facts: ModelFacts) -> int:
    """Weight bytes one decode step reads: every role times its active share; the input embedding is a row
    lookup (unless tied, when the output head reads it whole)."""
    act = _role_activity(facts)
    total = 0.0
    for role, b in wb.by_role.items():
        if role == "embedding" and not facts.arch.tie_embeddings:
            continue
        total += b * act.get(role, 1.0)
    return round(total)


def matmul_params(facts: ModelFacts) -> float:
    """Active parameters that take part in a matrix multiply per token (the output head counted once,
    through the embedding when tied; norms and the input lookup excluded); kept per model."""
    return derived(facts, "matmul params", lambda: _count_matmul_params(facts))


def _count_matmul_params(facts: ModelFacts) -> float:
    arch = facts.arch
    n = 0.0
    for t in facts.tensors:
        if t.part != "text" or t.role in ("embedding", "norm") or len(t.shape) < 2:
            continue
        n += t.numel * t.active
    if arch.tie_embeddings:
        n += arch.vocab * arch.hidden
    return n


def _attn_width(arch: Architecture) -> tuple[tuple[int, int | None, int], ...]:
    """The attention layers grouped by heads x (d_k + d_v) and window (None = full): (width, window, layers);
    linear-attention layers skipped; kept per architecture."""
    return derived(arch, "attention widths", lambda: _attention_widths(arch))


def _attention_widths(arch: Architecture) -> tuple[tuple[int, int | None, int], ...]:
    counts: dict[tuple[int, int | None], int] = {}
    for layer in arch.layers:
        if layer.attention == AttentionKind.LINEAR or layer.linear is not None:
            continue
        if layer.attention.value == "none":
            continue
        window = layer.window if layer.attention in (AttentionKind.SLIDING, AttentionKind.CHUNKED) else None
        key = (layer.n_heads * (layer.head_dim + layer.v_head_dim), window)
        counts[key] = counts.get(key, 0) + 1
    return tuple((width, window, n) for (width, window), n in counts.items())


def attention_flops_prefill(arch: Architecture, length: int) -> float:
    """FLOPs of QK^T and PV over a causal prompt of ``length`` tokens, one sequence."""
    total = 0.0
    for width, window, n in _attn_width(arch):
        w = length if window is None else min(window, length)
        pairs = length * (length + 1) / 2 if w >= length else w * length - w * (w - 1) / 2
        total += 2.0 * width * pairs * n
    return total


def attention_flops_decode(arch: Architecture, context: int) -> float:
    """FLOPs of attention for one new token against ``context`` cached tokens."""
    return sum(
        2.0 * width * (context if window is None else min(window, context)) * n
        for width, window, n in _attn_width(arch)
    )


@dataclass(frozen=True)
class _Hw:
    bw: float  # effective bytes/s
    flops: float | None  # effective FLOP/s
    link: float  # bytes/s
    latency: float  # s
    link_text: Text


def _hardware(gpu: GpuSpec, eff: Efficiency, bw_eff: float, mfu: float, fp32: bool) -> _Hw:
    if not gpu.bandwidth_gbps:
        raise PerformanceError(NO_BANDWIDTH(gpu=gpu.name))
    flops = None
    if gpu.bf16_tflops:
        flops = gpu.bf16_tflops * 1e12 * mfu * (0.5 if fp32 else 1.0)
    link, lat, text = link_for(gpu)
    if eff.link_gbps is not None:
        link, text = eff.link_gbps, LINK_GIVEN(gbps=eff.link_gbps)
    if eff.link_latency_us is not None:
        lat = eff.link_latency_us
    return _Hw(gpu.bandwidth_gbps * 1e9 * bw_eff, flops, link * 1e9, lat * 1e-6, text)


def _allreduce_s(n: int, nbytes: float, hw: _Hw) -> float:
    """Ring all-reduce: 2 (n-1)/n x bytes over the link, plus one latency."""
    if n <= 1:
        return 0.0
    return hw.latency + 2.0 * (n - 1) / n * nbytes / hw.link


# ---------------------------------------------------------------------------------------------- inference


def performance(
    est: Estimate,
    scenario: Scenario,
    facts: ModelFacts,
    gpu: GpuSpec,
    efficiency: Efficiency | None = None,
    *,
    dataset_tokens: int | None = None,
) -> Performance:
    """Speed of ``scenario`` on ``gpu`` (``est`` is the memory estimate of the same scenario)."""
    eff = efficiency or Efficiency()
    work = scenario.workload
    if isinstance(work, InferenceWorkload):
        return _inference(est, scenario, work, facts, gpu, eff)
    return _training(est, scenario, work, facts, gpu, eff, dataset_tokens)


def _decode_memory_s(
    est: Estimate,
    eng: Engine,
    eff: Efficiency,
    hw: _Hw,
    wb: WeightBytes,
    step_bytes: float,
    w_read: float,
    tp: int,
    notes: list[Text],
) -> tuple[float, float, float]:
    """Where a decode step's bytes are read from: (the share of the weights on the GPU, seconds reading GPU memory,
    seconds reading host memory), with the note that says so."""
    # split of the bytes: TP divides them across GPUs that work at once; a layer split (transformers
    # device_map, llama.cpp) runs the GPUs one after another, so the step still reads everything in sequence
    gpu_share = 1.0
    if est.engine.gpu_layers is not None and est.engine.total_layers:  # (llama.cpp and Ollama over it)
        gpu_share = est.engine.gpu_layers / est.engine.total_layers
    t_mem_gpu = step_bytes * gpu_share / tp / hw.bw
    t_host = step_bytes * (1.0 - gpu_share) / (eff.host_gbps * 1e9)
    if gpu_share < 1.0:
        notes.append(
            LLAMACPP_CPU_LAYERS(
                cpu_layers=(est.engine.total_layers or 0) - (est.engine.gpu_layers or 0),
                total=est.engine.total_layers,
                gbps=eff.host_gbps,
            )
        )
    elif eng.streams_offloaded_weights and est.host_bytes:
        # device_map spilled weights to CPU memory: accelerate copies each offloaded layer to the GPU for every
        # forward, so their share of the weights crosses PCIe each step (the KV cache stays on the GPU)
        off = min(1.0, est.host_bytes / max(1, wb.total))
        gpu_share = 1.0 - off
        t_mem_gpu = (step_bytes - w_read * off) / tp / hw.bw
        t_host = w_read * off / (eff.pcie_gbps * 1e9)
        notes.append(DEVICE_MAP_CPU(gib=est.host_bytes / 2**30, percent=100 * off, gbps=eff.pcie_gbps))
    return gpu_share, t_mem_gpu, t_host


def _inference(
    est: Estimate, scenario: Scenario, work: InferenceWorkload, facts: ModelFacts, gpu: GpuSpec, eff: Efficiency
) -> Performance:
    arch, eng = facts.arch, engine(work.engine)
    wb, label, block = _text_weights(scenario, facts)
    bw_eff = eff.bandwidth if eff.bandwidth is not None else (0.65 if block else 0.8)
    hw = _hardware(gpu, eff, bw_eff, eff.mfu, fp32=False)
    notes: list[Text] = []
    n_gpu = scenario.hardware.gpu_count
    tp = scenario.parallelism.tp if eng.reads_tp else 1
    batch = work.batch
    input_len = work.input_len or min(arch.max_position or 4096, 4096)
    mean_ctx = input_len + work.output_len // 2
    w_read = active_read_bytes(wb, facts)
    kv_tok = est.engine.kv_bytes_per_token
    kv_read = kv_tok * mean_ctx * batch
    state_rw = 2 * est.engine.state_bytes_per_sequence * batch
    step_bytes = w_read + kv_read + state_rw
    n_mm = matmul_params(facts)
    dec_flops = batch * (2.0 * n_mm + attention_flops_decode(arch, mean_ctx))
    reads = (DECODE_READS_MOE if arch.is_moe else DECODE_READS)(
        weights_gb=w_read / 1e9, label=label, kv=kv_tok, context=mean_ctx, batch=batch, kv_gb=kv_read / 1e9
    )
    notes.append(join(" ", reads, DECODE_STATE(gb=state_rw / 1e9)) if state_rw else reads)
    notes.append(
        (BANDWIDTH_BLOCK if eff.bandwidth is None and block else BANDWIDTH)(gbps=gpu.bandwidth_gbps, efficiency=bw_eff)
    )
    gpu_share, t_mem_gpu, t_host = _decode_memory_s(est, eng, eff, hw, wb, step_bytes, w_read, tp, notes)
    # llama.cpp's MoE experts in host memory (--n-cpu-moe): the CPU reads the routed ones (performance_moe)
    moe = host_experts(est, work, facts, wb)
    moe_read = moe.decode_bytes if moe is not None else 0.0
    t_moe = moe_read / (eff.host_gbps * 1e9)
    if moe is not None:
        t_mem_gpu -= moe_read / tp / hw.bw
        notes.append(decode_note(moe, eff.host_gbps))
    t_comp = dec_flops / tp / hw.flops if hw.flops else 0.0
    comm = 0.0
    if tp > 1:
        per = _allreduce_s(tp, batch * arch.hidden * 2, hw)
        comm = 2 * arch.n_layers * per
        notes.append(DECODE_TP(tp=tp, link=hw.link_text, latency_us=hw.latency * 1e6, ms=comm * 1e3))
    elif n_gpu > 1:
        comm = (n_gpu - 1) * (hw.latency + batch * arch.hidden * 2 / hw.link)
        notes.append(DECODE_LAYER_SPLIT(gpus=n_gpu))
    overhead_per_layer = eff.step_overhead_per_layer_s
    if overhead_per_layer is None:
        overhead_per_layer = eng.step_overhead_per_layer_s
    overhead = overhead_per_layer * arch.n_layers
    if overhead:
        notes.append(CPU_OVERHEAD(us=overhead_per_layer * 1e6, engine=work.engine))
    t_mem = t_mem_gpu + t_host + t_moe
    step = max(t_mem, t_comp) + comm + overhead
    dec_bound: Bound = (
        "compute" if t_comp > t_mem else ("host transfer" if t_host + t_moe > t_mem_gpu else "memory bandwidth")
    )
    if comm > max(t_mem, t_comp):
        dec_bound = "communication"
    # ---- prefill (all prompts of the batch)
    prefill_flops = batch * (2.0 * n_mm * input_len + attention_flops_prefill(arch, input_len))
    chunk = eng.prefill_chunk(work, input_len)
    passes = max(1, -(-input_len * batch // chunk))
    t_pre_mem = passes * (w_read * gpu_share - moe_read) / tp / hw.bw + t_host * passes
    if moe is not None:
        pre_moe, pre_note = prefill_host_s(moe, min(chunk, input_len * batch), passes, eff.host_gbps, eff.pcie_gbps)
        t_pre_mem += pre_moe
        if pre_note:
            notes.append(pre_note)
    prefill_s: float | None
    prefill_tps: float | None
    pre_bound: Bound | None
    if hw.flops:
        t_pre_comp = prefill_flops / tp / hw.flops
        pre_comm = 2 * arch.n_layers * _allreduce_s(tp, input_len * batch * arch.hidden * 2, hw) if tp > 1 else 0.0
        prefill_s = max(t_pre_comp, t_pre_mem) + pre_comm + overhead
        pre_bound = "compute" if t_pre_comp >= t_pre_mem else "memory bandwidth"
        prefill_tps = input_len * batch / prefill_s
        notes.append(
            PREFILL(
                params_b=n_mm / 1e9, tokens=input_len, tflop=prefill_flops / 1e12, tflops=gpu.bf16_tflops, mfu=eff.mfu
            )
        )
    else:
        prefill_s = prefill_tps = None
        pre_bound = None
        notes.append(NO_PREFILL_TFLOPS(gpu=gpu.name))
    gen = (prefill_s or 0.0) + work.output_len * step
    return Performance(
        gpu=gpu.name,
        gpu_count=n_gpu,
        workload="inference",
        bound=dec_bound,
        bandwidth_efficiency=bw_eff,
        mfu=eff.mfu,
        effective_bandwidth_gbps=round(hw.bw / 1e9, 1),
        effective_tflops=round(hw.flops / 1e12, 1) if hw.flops else None,
        link_gbps=hw.link / 1e9 if n_gpu > 1 else None,
        decode_tokens_per_s=round(1.0 / step, 2),
        decode_tokens_per_s_total=round(batch / step, 2),
        decode_bound=dec_bound,
        decode_bytes_per_step=round(step_bytes),
        decode_step_s=step,
        prefill_tokens_per_s=round(prefill_tps, 1) if prefill_tps else None,
        prefill_bound=pre_bound,
        time_to_first_token_s=prefill_s,
        generation_s=gen,
        assumptions=tuple(notes),
    )


# ---------------------------------------------------------------------------------------------- training


def _data_parallel_link(hw: _Hw, eff: Efficiency, machines: int) -> _Hw:
    """The link the data-parallel ring runs over: the GPUs' own inside one machine, else the network's."""
    dp_hw = hw
    if machines > 1:
        # the data-parallel ring crosses the network between machines, its slowest hop (tensor parallel stays
        # inside a machine, on its own link)
        dp_hw = replace(
            hw,
            link=min(hw.link, eff.internode_gbps * 1e9),
            latency=max(hw.latency, eff.internode_latency_us * 1e-6),
            link_text=LINK_NETWORK(machines=machines, gbps=eff.internode_gbps),
        )
    return dp_hw


def _offload_s(
    est: Estimate, work: FinetuneWorkload, par: Parallelism, eff: Efficiency, trainable: int, dp: int, notes: list[Text]
) -> float:
    """Seconds per optimizer step that CPU offload adds (the optimizer's PCIe traffic and CPU AdamW, the
    parameters streamed), with the notes that say so."""
    ckpt = work.grad_checkpointing
    offload = 0.0
    if par.offload in ("optimizer", "params"):
        share = trainable / max(1, dp)
        offload += share * 4 / (eff.pcie_gbps * 1e9) + share / eff.cpu_adam_params_per_s
        notes.append(OPTIMIZER_ON_CPU(gbps=eff.pcie_gbps, rate=eff.cpu_adam_params_per_s))
    if par.offload == "params":
        w_bytes = sum(c.bytes for c in est.components if c.category == "weights") or 2 * est.params.total
        passes = 3 if ckpt else 2
        offload += passes * work.grad_accum * max(w_bytes, 2 * est.params.total // max(1, dp)) / (eff.pcie_gbps * 1e9)
        notes.append(PARAMS_ON_CPU(passes=passes))
    return offload


def _training(
    est: Estimate,
    scenario: Scenario,
    work: FinetuneWorkload,
    facts: ModelFacts,
    gpu: GpuSpec,
    eff: Efficiency,
    dataset_tokens: int | None,
) -> Performance:
    arch = facts.arch
    par = scenario.parallelism
    fp32 = work.precision == "fp32"
    hw = _hardware(gpu, eff, eff.bandwidth or 0.8, eff.train_mfu, fp32=fp32)
    if hw.flops is None:
        raise PerformanceError(NO_TRAINING_TFLOPS(gpu=gpu.name))
    notes: list[Text] = []
    machines = scenario.hardware.nodes
    n = scenario.hardware.gpu_count * machines
    tp, pp = par.tp, par.pp
    dp = max(1, n // (tp * pp))
    dp_hw = _data_parallel_link(hw, eff, machines)
    lora = frozen_base(work.method)
    ckpt = work.grad_checkpointing
    n_mm = matmul_params(facts)
    trainable = est.params.trainable
    if lora:
        k = 6.0 if ckpt else 4.0
        rule = (RULE_LORA_CKPT if ckpt else RULE_LORA)(k=k)
        flops_tok = k * n_mm + 6.0 * trainable
    else:
        k = 8.0 if ckpt else 6.0
        rule = (RULE_FULL_CKPT if ckpt else RULE_FULL)(k=k)
        flops_tok = k * n_mm
    attn_mult = 4.0 if ckpt else 3.0
    flops_tok += attn_mult * attention_flops_prefill(arch, work.seq_len) / work.seq_len
    speed = eff.qlora_speed if work.method == "qlora" else 1.0
    tokens_rank = work.micro_batch * work.seq_len * work.grad_accum
    tokens_step = tokens_rank * dp
    bubble = 1.0 + (pp - 1) / work.grad_accum if pp > 1 else 1.0
    t_comp = tokens_rank * flops_tok / (tp * pp * hw.flops * speed) * bubble
    compute = (
        (TRAIN_COMPUTE_FP32_QLORA if fp32 else TRAIN_COMPUTE_QLORA)(
            tflops=gpu.bf16_tflops, mfu=eff.train_mfu, qlora=eff.qlora_speed
        )
        if speed < 1
        else (TRAIN_COMPUTE_FP32 if fp32 else TRAIN_COMPUTE)(tflops=gpu.bf16_tflops, mfu=eff.train_mfu)
    )
    flops = TRAIN_FLOPS(rule=rule, params_b=n_mm / 1e9, attention=attn_mult, gflop=flops_tok / 1e9)
    notes.append(join("; ", flops, compute))
    if pp > 1:
        notes.append(PIPELINE(pp=pp, bubble=bubble))
    comm = 0.0
    grad_bytes = trainable * (4 if (lora or fp32 or work.precision.startswith("amp")) else 2)
    if dp > 1:
        factor = 1.5 if (par.zero == 3 or par.fsdp) else 1.0
        comm += factor * _allreduce_s(dp, grad_bytes / (tp * pp), dp_hw)
        notes.append(
            (DATA_PARALLEL_SHARDED if factor > 1 else DATA_PARALLEL)(dp=dp, gb=grad_bytes / 1e9, link=dp_hw.link_text)
        )
    if tp > 1:
        per = _allreduce_s(tp, work.micro_batch * work.seq_len * arch.hidden * 2, hw)
        n_ar = (6 if ckpt else 4) * arch.n_layers // pp
        comm += per * n_ar * work.grad_accum
        notes.append(TRAIN_TP(tp=tp, all_reduces=n_ar))
    offload = _offload_s(est, work, par, eff, trainable, dp, notes)
    step = t_comp + comm + offload
    bound: Bound = "compute"
    if comm > t_comp and comm >= offload:
        bound = "communication"
    elif offload > t_comp:
        bound = "host transfer"
    tps = tokens_step / step
    epoch = dataset_tokens / tps if dataset_tokens else None
    notes.append(
        TOKENS_PER_STEP(
            micro_batch=work.micro_batch, seq_len=work.seq_len, grad_accum=work.grad_accum, dp=dp, tokens=tokens_step
        )
    )
    return Performance(
        gpu=gpu.name,
        gpu_count=n,
        workload="finetune",
        bound=bound,
        bandwidth_efficiency=eff.bandwidth or 0.8,
        mfu=eff.train_mfu,
        effective_bandwidth_gbps=round(hw.bw / 1e9, 1),
        effective_tflops=round(hw.flops * speed / 1e12, 1),
        link_gbps=hw.link / 1e9 if n > 1 else None,
        train_tokens_per_s=round(tps, 1),
        step_time_s=step,
        tokens_per_step=tokens_step,
        flops_per_token=flops_tok,
        communication_s_per_step=comm,
        offload_s_per_step=offload,
        dataset_tokens=dataset_tokens,
        epoch_time_s=epoch,
        assumptions=tuple(notes),
    )


__all__ = ["Efficiency", "Performance", "PerformanceError", "link_for", "performance"]
