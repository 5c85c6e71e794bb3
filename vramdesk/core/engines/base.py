"""Inference as phases, per engine: load -> prefill -> decode. The peak is the maximum over phases.

Each engine's run returns an :class:`EngineRun` for GPU 0 (the busiest one): the phases with their
components (what ``torch.cuda.max_memory_allocated`` would see), the device-level extras (CUDA context,
non-torch memory), reserved-pool slack, host memory and engine-specific answers.

This module holds what the engines share: the :class:`Context` a run reads, the :class:`EngineRun` it returns, the
pieces more than one engine prices (weights, one layer's transient, the CUDA context of a PyTorch process) and the
:class:`Engine` every engine module implements: the questions the estimator asks of an engine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from math import ceil

from .. import constants as K
from ..architecture import Architecture, AttentionKind, LayerSpec, RecurrentState
from ..gpu import GpuSpec
from ..kv_layers import KvOptions
from ..memo import derived
from ..messages import Explanation, Message, Text, join, later
from ..result import Component, EngineInfo, Phase
from ..scenario import InferenceWorkload
from ..weights import WeightBytes
from .state_mixers import state_mixer_transient

CUDA_CONTEXT_HOPPER = Message(
    "engine.cuda_context.hopper",
    "CUDA driver context and lazily loaded kernels of torch/cuBLAS: outside torch's allocator, visible in nvidia-smi "
    "(760 MiB measured on an H200 with torch 2.11 / CUDA 13)",
)
CUDA_CONTEXT = Message(
    "engine.cuda_context",
    "CUDA driver context and lazily loaded kernels of torch/cuBLAS: outside torch's allocator, visible in nvidia-smi "
    "(0.3-0.8 GiB reported; 500 MiB used)",
)
_WEIGHTS = (
    "{params:,} parameters in {label}: {bits:.3f} bits per parameter on average, summed tensor by tensor over the "
    "inventory ({quantized:,} quantised)"
)
WEIGHTS = Message("engine.weights", _WEIGHTS)
#: (the same English for the checkpoint's stored tensors: "in the checkpoint's stored dtypes (...)" reads otherwise)
WEIGHTS_STORED = Message("engine.weights.stored", _WEIGHTS)
GATED_MLP = Message(
    "engine.transient.gated_mlp", "gated MLP: n x (3 x intermediate {width} + 3 x hidden {hidden}) x {c} B"
)
MLP = Message("engine.transient.mlp", "MLP: n x (2 x intermediate {width} + 3 x hidden {hidden}) x {c} B")
MOE = Message(
    "engine.transient.moe",
    "MoE (expert loop, balanced routing): router logits n x {experts} x 4 B + accumulator n x hidden + the larger of "
    "one expert's {routed} tokens x (3 x {expert_intermediate} + 2 x {hidden}) and the shared expert",
)
DELTANET = Message(
    "engine.transient.gated_deltanet", "Gated DeltaNet: projections + fp32 q/k/v/output of the chunked delta rule"
)
MAMBA2 = Message(
    "engine.transient.mamba2",
    "Mamba-2 mixer (fused mamba_ssm kernels): n x (in_proj {in_proj} + 2 x intermediate {intermediate} + 2 x hidden "
    "{hidden}) x {c} B (transformers' torch fallback without the kernels materialises far more)",
)
MAMBA1 = Message(
    "engine.transient.mamba1",
    "Mamba-1 mixer (fused mamba_ssm kernels): n x (in_proj {in_proj} + 3 x intermediate {intermediate} + 2 x hidden "
    "{hidden}) x {c} B: x and z, the conv output, dt and the scan output",
)
ATTENTION = Message(
    "engine.transient.attention",
    "attention: q, k, v before and after RoPE and the output, n x (3 q + 2 kv + 2 hidden) widths",
)
EAGER_SCORES = Message("engine.transient.eager_scores", "eager scores {bytes} B x heads {heads} x s x kept keys")


@dataclass
class Context:
    arch: Architecture
    weights: WeightBytes
    #: the weight format's label (a :class:`~vramdesk.core.messages.Text`)
    weights_label: str
    on_the_fly: bool
    compute_bytes: int
    kv_bits: float
    kv_label: str
    work: InferenceWorkload
    input_len: int
    gpu: GpuSpec | None
    gpu_count: int
    tp: int
    weight_kind: str
    pp: int = 1
    weight_bits: int | None = None
    #: the weights are the checkpoint's stored tensors (``weights_label`` names where they were read)
    weights_stored: bool = False


@dataclass
class EngineRun:
    phases: list[Phase]
    #: beyond the allocator: CUDA context, non-torch memory (GPU 0)
    device_extra: list[Component]
    #: reserved-minus-allocated slack at the peak (allocator rounding, fragmentation)
    reserved_slack: int
    reserved_explain: Text
    host_bytes: int
    info: EngineInfo
    warnings: list[Text] = field(default_factory=list)
    #: fraction of the model GPU 0 holds when it is split over several GPUs (for per-GPU figures)
    gpu_count: int = 1
    #: phases of every GPU when the model is split (GPU 0 first); empty = all GPUs alike
    per_gpu_phases: list[list[Phase]] = field(default_factory=list)
    per_gpu_slack: list[int] = field(default_factory=list)
    #: engines with a fixed budget (vLLM): the least memory the requests need, and the budget it must fit
    fit_required: int | None = None
    fit_budget: int | None = None
    fit_budget_label: str = ""
    #: engines with a start-up check (vLLM): why the engine would not start, which makes the verdict "does not fit"
    fit_refusal: Text | None = None


def torch_context(gpu: GpuSpec | None) -> Component:
    """The CUDA context of a PyTorch process: outside the caching allocator, inside nvidia-smi's figure (one
    component per GPU, kept with it)."""
    if gpu is None:
        return _NO_GPU_CONTEXT
    return derived(gpu, "torch context", lambda: _torch_context(gpu))


def _torch_context(gpu: GpuSpec | None) -> Component:
    if gpu is not None and gpu.sm_major >= 9:
        return Component(
            name="CUDA context",
            bytes=K.CUDA_CONTEXT_TORCH_HOPPER,
            category="overhead",
            explain=CUDA_CONTEXT_HOPPER.later(),
        )
    return Component(
        name="CUDA context",
        bytes=K.CUDA_CONTEXT_TORCH,
        category="overhead",
        explain=CUDA_CONTEXT.later(),
    )


#: the CUDA context of a plan judged against no GPU (a pre-Hopper card's)
_NO_GPU_CONTEXT = _torch_context(None)


def weights_component(ctx: Context, share: float = 1.0, note: Explanation | None = None) -> Component:
    """The weights one GPU holds (``share`` of them), with ``note`` on how they are split. Without a note the
    component is kept with the model's priced weights (one per label and share: a window's changes reuse it)."""
    if note is None:
        label = ctx.weights_label
        key = ("component", share, str(label), getattr(label, "id", ""), ctx.weights_stored)
        return derived(ctx.weights, key, lambda: _weights_component(ctx, share, None))
    return _weights_component(ctx, share, note)


def _weights_component(ctx: Context, share: float, note: Explanation | None) -> Component:
    w = ctx.weights
    message = WEIGHTS_STORED if ctx.weights_stored else WEIGHTS
    explain = message.later(
        params=w.params, label=ctx.weights_label, bits=w.bits_per_param, quantized=w.quantized_params
    )
    return Component(
        name="weights",
        bytes=round(w.total * share),
        category="weights",
        explain=later(join, "; ", explain, note) if note else explain,
    )


def _dense_layer_transient(
    arch: Architecture, layer: LayerSpec, n: int, c: int, *, moe_loop: bool
) -> tuple[int, Explanation]:
    """Bytes alive inside one decoder layer's MLP during a forward of ``n`` tokens (beyond weights and cache)."""
    h = arch.hidden
    if layer.mlp == "none":
        # a Nemotron-H attention or Mamba layer: its one mixer is not an MLP
        return 0, join("")
    if layer.moe is None:
        width = layer.intermediate
        if arch.mlp_gated:
            b = n * (3 * width + 3 * h) * c
            return b, GATED_MLP.later(width=width, hidden=h, c=c)
        b = n * (2 * width + 3 * h) * c
        return b, MLP.later(width=width, hidden=h, c=c)
    moe = layer.moe
    routed = ceil(n * moe.top_k / moe.num_experts)
    expert = routed * (3 * moe.expert_intermediate + 2 * h) * c
    shared = n * (3 * moe.shared_intermediate + 2 * h) * c if moe.shared_intermediate else 0
    b = n * h * c * 2 + n * moe.num_experts * 4 + max(expert, shared)
    return b, MOE.later(experts=moe.num_experts, routed=routed, expert_intermediate=moe.expert_intermediate, hidden=h)


def _attention_transient(
    arch: Architecture, layer: LayerSpec, n: int, seqs: int, s: int, c: int, attention: str
) -> tuple[int, Explanation]:
    h = arch.hidden
    if layer.attention == AttentionKind.LINEAR and layer.linear is not None:
        lin = layer.linear
        proj = 2 * lin.key_dim + 2 * lin.value_dim + 2 * lin.num_v_heads
        b = n * (proj * c + (2 * lin.key_dim + 2 * lin.value_dim) * 4 + 2 * h * c)
        return b, DELTANET.later()
    if layer.mamba is not None:
        # cuda_kernels_forward: in_proj's z | xBC | dt, then mamba_split_conv1d_scan_combined's scan output and the
        # gated RMSNorm's output (intermediate each), out_proj's output and the residual; the chunked scan's own
        # scratch lives inside the kernel
        m = layer.mamba
        b = n * (m.in_proj_width + 2 * m.intermediate + 2 * h) * c
        return b, MAMBA2.later(in_proj=m.in_proj_width, intermediate=m.intermediate, hidden=h, c=c)
    if layer.state is not None and (mixer := state_mixer_transient(layer.state, n, h, c)) is not None:
        return mixer
    if layer.mamba1 is not None:
        # mamba_inner_fn: in_proj's x | z, the conv output, dt widened by dt_proj and the scan output (intermediate
        # each), out_proj's output and the residual
        m1 = layer.mamba1
        b = n * (m1.in_proj_width + 3 * m1.intermediate + 2 * h) * c
        return b, MAMBA1.later(in_proj=m1.in_proj_width, intermediate=m1.intermediate, hidden=h, c=c)
    if layer.attention == AttentionKind.NONE:
        return 0, join("")
    q_w = layer.n_heads * layer.head_dim
    if layer.attention == AttentionKind.MLA:
        kv_w = layer.n_heads * (layer.head_dim + layer.v_head_dim)
    else:
        kv_w = layer.n_kv_heads * (layer.head_dim + layer.v_head_dim)
    b = n * (3 * q_w + 2 * kv_w + 2 * h) * c
    text: Explanation = ATTENTION.later()
    if attention == "eager":
        kept = min(s, layer.window or s)
        per = K.EAGER_SCORES_BYTES_SINKS if arch.attention_sinks else K.EAGER_SCORES_BYTES
        scores = round(per * seqs * layer.n_heads * s * kept)
        b += scores
        text = later(join, "; ", text, EAGER_SCORES.later(bytes=per, heads=layer.n_heads))
    return b, text


def _distinct_layers(arch: Architecture) -> tuple[LayerSpec, ...]:
    """The first layer of each kind whose transients differ (attention, MLP, width, window, experts)."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for layer in arch.layers:
        key = (
            layer.attention,
            layer.mlp,
            layer.intermediate,
            layer.window,
            layer.moe,
            layer.mamba,
            layer.mamba1,
            layer.state,
        )
        if key not in seen:
            seen.add(key)
            out.append(layer)
    return tuple(out)


#: the words of a layer with no transient (an empty join, made once)
_NO_TRANSIENT = join("")


def max_layer_transient(
    arch: Architecture, n: int, seqs: int, s: int, c: int, attention: str
) -> tuple[int, Explanation]:
    best = 0
    text: Explanation = _NO_TRANSIENT
    for layer in derived(arch, "distinct layers", lambda: _distinct_layers(arch)):
        m, mt = _dense_layer_transient(arch, layer, n, c, moe_loop=True)
        a, at = _attention_transient(arch, layer, n, seqs, s, c, attention)
        if m > best:
            best, text = m, mt
        if a > best:
            best, text = a, at
    return best, text


class Engine(ABC):
    """A serving engine: its run, the KV rule it answers per layer kind (:class:`~vramdesk.core.kv_layers.KvRule`),
    its tensor-parallel check and the capabilities the estimator, the speed model and the solver ask about.

    Every engine module (``transformers``, ``vllm``, ``llamacpp``) answers every question; the registry in
    :mod:`vramdesk.core.engines` holds one instance of each."""

    #: the scenario's name (``scenario.Engine``)
    name: str
    #: the name in words
    display_name: str

    # ---- capabilities the callers branch on
    #: loads the vision tower of a multimodal checkpoint (llama.cpp keeps it in a separate mmproj file)
    loads_vision: bool
    #: runs GGUF files as they are (the others dequantise them on load)
    runs_gguf: bool
    #: KV dtype that kv_dtype "auto" means, or None for the compute dtype
    auto_kv_dtype: str | None
    #: serves across machines (pipeline stages over Ray): tp x pp may exceed one machine's GPUs
    serves_across_machines: bool
    #: more GPUs serve it as tensor parallel over all of them (else the layers are split across them)
    grows_by_tensor_parallel: bool
    #: reads parallelism.tp (llama.cpp has no tensor parallel: its multi-GPU split is --split-mode)
    reads_tp: bool
    #: device_map fills the GPUs in order, so more GPUs than the model needs may get no layers
    may_leave_gpus_empty: bool
    #: weights spilled to CPU memory are copied to the GPU for every forward (accelerate's offload)
    streams_offloaded_weights: bool
    #: offloads n_gpu_layers of the layers to the GPU and runs the others on the CPU
    offloads_gpu_layers: bool
    #: pre-allocates a pool of gpu_memory_utilization x the GPU (weights, activations, graphs and KV inside it)
    has_pool_budget: bool
    #: CPU launch overhead per layer and decode step (s), unless the efficiency settings give one
    step_overhead_per_layer_s: float
    #: the option table's form group of this engine's own settings (the window shows that box for this engine)
    form_group: str
    #: the workload's section of this engine's own settings (``workload.vllm``), None when they sit in the
    #: workload itself; a comparison leaves out the sections of the engines a plan does not use
    options_section: str | None
    #: what the allocated and the reserved levels are for this engine's process (the reports' labels)
    level_labels: tuple[str, str]
    #: lighter weight formats the solver may suggest: (format, quality cost, speed cost)
    lighter_weights: tuple[tuple[str, float, float], ...]
    #: lighter KV dtypes the solver may suggest: (dtype, quality cost)
    lighter_kv: tuple[tuple[str, float], ...]

    # ---- the KV rule (kv_layers.KvRule)
    #: MLA layers: the cache holds the expanded K and V of every head (else one latent per token)
    expands_mla: bool

    @abstractmethod
    def full_tokens(self, tokens: int, seqs: int, opts: KvOptions) -> int:
        """Tokens of one sequence a full-attention layer keeps."""

    @abstractmethod
    def sliding_tokens(self, window: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        """Tokens of one sequence a sliding-window layer keeps."""

    @abstractmethod
    def chunked_tokens(self, chunk: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        """Tokens of one sequence a chunked-local-attention layer keeps."""

    @abstractmethod
    def linear_state_bytes(self, linear: RecurrentState, compute_bytes: int) -> int:
        """Bytes of one sequence's constant state of a linear-attention layer."""

    # ---- the run
    @abstractmethod
    def run(self, ctx: Context) -> EngineRun:
        """The phases of GPU 0 (and of every GPU when they differ) for ``ctx``."""

    @abstractmethod
    def tp_problem(self, arch: Architecture, tp: int) -> Text | None:
        """Why the engine refuses tensor parallel ``tp`` for this model, or None."""

    def options_problem(self, arch: Architecture, work: InferenceWorkload) -> Text | None:
        """Why the engine refuses its own options of ``work`` for this model (llama.cpp: experts in host memory for a
        model without experts), or None."""
        return None

    @abstractmethod
    def prefill_chunk(self, work: InferenceWorkload, input_len: int) -> int:
        """Prompt tokens one prefill forward takes (the speed model's passes over the weights)."""

    def __repr__(self) -> str:
        return f"<engine {self.name}>"
