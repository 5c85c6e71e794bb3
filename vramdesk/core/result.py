"""What an estimate returns: components at the peak, the phases, the three memory levels, the fit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from .messages import Later, MessageText, read_when_built

Category = Literal[
    "weights", "kv_cache", "state", "activations", "logits", "gradients", "optimizer", "overhead", "pool"
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Component(_Frozen):
    """One part of the memory at one moment, with where its number comes from."""

    name: str
    bytes: int = Field(ge=0)
    category: Category
    #: formula, the config fields and constants used, in words a user can check; given as a
    #: :class:`~vramdesk.core.messages.Later`, it is formatted when first read
    explain: MessageText

    if TYPE_CHECKING:

        def __init__(self, *, name: str, bytes: int, category: Category, explain: str | Later) -> None: ...


read_when_built(Component, "explain")


class Phase(_Frozen):
    name: str
    components: tuple[Component, ...]

    @property
    def allocated_bytes(self) -> int:
        return sum([c.bytes for c in self.components])


class Params(_Frozen):
    #: unique parameters of the model the engine runs (tied embeddings once; no MTP head, no vision tower
    #: unless it is loaded)
    total: int
    #: parameters touched per token (MoE: routed top-k + shared); equals total for dense models
    active: int
    trainable: int
    #: what the checkpoint stores, when that differs (a duplicated tied lm_head, MTP layers, a vision tower)
    checkpoint_total: int
    #: per-part figures: text, vision, mtp, embeddings, duplicate_lm_head, ...
    parts: dict[str, int]
    notes: tuple[MessageText, ...] = ()


class Fit(_Frozen):
    gpu: str
    gpu_count: int
    memory_bytes: int
    #: free memory right now, when the GPU was detected
    free_bytes: int | None = None
    required_bytes: int
    #: bytes kept free for safety (display, fragmentation spikes): part of the verdict
    headroom_bytes: int
    verdict: Literal["fits", "tight", "does not fit"]
    #: (available - required) / available
    margin_fraction: float
    #: a :class:`~vramdesk.core.messages.Text` (message id and values) when the core built it
    message: MessageText
    #: what the verdict compared against, and which figure that was ("total", "free" or the engine's budget)
    available_bytes: int = 0
    basis: MessageText = "total"
    #: how much is missing (0 when it fits)
    short_bytes: int = 0
    #: training: the live tensors' part of ``required_bytes`` (the rest is PyTorch's cache of free blocks), when
    #: the verdict is "tight" because only that cache overflows the GPU; None otherwise
    live_bytes: int | None = None


class GpuShare(_Frozen):
    index: int
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    device_bytes: int
    #: this GPU's components at its own peak, when the model is split unevenly
    components: tuple[Component, ...] = ()
    #: this GPU's verdict (the engine's budget included)
    fit: Fit | None = None


class EngineInfo(_Frozen):
    """Engine-specific answers (vLLM: how many tokens the pool holds; llama.cpp: the host share)."""

    engine: str
    kv_bytes_per_token: float
    #: bytes of constant per-sequence state (linear attention / SSM)
    state_bytes_per_sequence: int = 0
    #: vLLM: tokens of KV the pool holds, and how many sequences of input+output length fit at once
    pool_bytes: int | None = None
    kv_capacity_tokens: int | None = None
    max_concurrent_sequences: int | None = None
    #: vLLM: "Maximum concurrency for <max_model_len> tokens per request": the KV pool over one request's KV
    max_concurrency: float | None = None
    #: llama.cpp: layers on the GPU
    gpu_layers: int | None = None
    total_layers: int | None = None


class Estimate(_Frozen):
    model_id: str
    params: Params
    peak_phase: str
    phases: tuple[Phase, ...]
    #: the peak phase's components (what max_memory_allocated sees), per GPU 0
    components: tuple[Component, ...]
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    #: what nvidia-smi / NVML shows for the process on GPU 0
    device_bytes: int
    #: components nvidia-smi sees beyond the allocator (CUDA context, non-torch memory), on GPU 0
    device_overheads: tuple[Component, ...]
    per_gpu: tuple[GpuShare, ...]
    #: CPU memory one machine needs for what the plan keeps there (offloaded optimizer states, parameters or
    #: activations of every GPU of the machine; device_map's spilled layers; llama.cpp's CPU layers)
    host_bytes: int
    engine: EngineInfo
    warnings: tuple[MessageText, ...] = ()
    fit: Fit | None = None
    #: constants used, with their sources, so every number can be traced
    constants: dict[str, MessageText] = Field(default_factory=dict)

    @property
    def gpus_differ(self) -> bool:
        """The GPUs hold different amounts (pipeline stages, llama.cpp / device_map splits): the top-level figures
        are GPU 0's and ``per_gpu`` has the others."""
        return len({g.device_bytes for g in self.per_gpu}) > 1
