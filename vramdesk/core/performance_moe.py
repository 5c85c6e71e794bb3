"""The speed model's share of llama.cpp's MoE experts kept in host memory (``--n-cpu-moe`` / ``--cpu-moe``).

Two stated rules, no fitted figure:

* decode (a batch below 32 tokens stays on the CPU, ggml_backend_cuda_device_offload_op): the CPU runs the expert
  products of those layers, so the bytes of the experts one token routes to (top_k / experts of each tensor) are
  read from host memory at the host bandwidth instead of from GPU memory;
* prefill (ubatches of 32 tokens or more): ggml's scheduler runs the expert products on the first GPU and copies
  over PCIe the experts the ubatch routes to (ggml-backend.cpp, ggml_backend_sched_compute_splits); with routing
  taken as uniform, a ubatch of u tokens routes to 1 - (1 - top_k / experts)^u of a layer's experts.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import constants as K
from .engines.llamacpp import cpu_moe_layers
from .facts import ModelFacts
from .messages import Message, Text
from .result import Estimate
from .scenario import InferenceWorkload
from .weights import WeightBytes

DECODE_CPU_MOE = Message(
    "speed.decode.llamacpp_cpu_moe",
    "llama.cpp keeps the MoE experts of {layers} layers in host memory: the CPU reads the {gb:.2f} GB of them a "
    "token routes to from host RAM at {gbps:g} GB/s",
)
PREFILL_CPU_MOE = Message(
    "speed.prefill.llamacpp_cpu_moe",
    "prefill: each ubatch of {ubatch} tokens copies the experts it routes to ({percent:.0f} % of {gb:.2f} GB with "
    "uniform routing) over PCIe at {gbps:g} GB/s to the GPU",
)


@dataclass(frozen=True, slots=True)
class HostExperts:
    """The experts a llama.cpp plan keeps in host memory, as the speed model reads them."""

    layers: int
    #: bytes of those expert tensors, and the share of them one token routes to
    total_bytes: int
    active_share: float

    @property
    def decode_bytes(self) -> float:
        """Bytes of host experts one decode token reads."""
        return self.total_bytes * self.active_share

    def routed_share(self, tokens: int) -> float:
        """The share of the experts a ubatch of ``tokens`` tokens routes to, routing taken as uniform."""
        return 1.0 - (1.0 - self.active_share) ** max(1, tokens)


def host_experts(est: Estimate, work: InferenceWorkload, facts: ModelFacts, wb: WeightBytes) -> HostExperts | None:
    """The experts ``est`` keeps in host memory (the first n_cpu_moe of its offloaded layers); None when none."""
    n = work.llamacpp.n_cpu_moe
    gpu_layers, total = est.engine.gpu_layers, est.engine.total_layers
    if work.engine != "llamacpp" or not n or gpu_layers is None or not total:
        return None
    layers = cpu_moe_layers(wb.experts_per_layer, n, set(range(total - gpu_layers, total)))
    if not layers:
        return None
    specs = [layer.moe for layer in facts.arch.layers if layer.index in layers and layer.moe is not None]
    share = sum(m.top_k / m.num_experts for m in specs) / len(specs) if specs else 1.0
    return HostExperts(len(layers), sum(wb.experts_per_layer[i] for i in layers), share)


def decode_note(h: HostExperts, host_gbps: float) -> Text:
    return DECODE_CPU_MOE(layers=h.layers, gb=h.decode_bytes / 1e9, gbps=host_gbps)


def prefill_host_s(h: HostExperts, ubatch: int, passes: int, host_gbps: float, pcie_gbps: float) -> tuple[float, Text]:
    """Seconds a prompt of ``passes`` ubatches spends moving host experts, and the note that says how: copied over
    PCIe when the ubatch is large enough for the GPU to run them, else read by the CPU from host RAM."""
    moved = h.total_bytes * h.routed_share(ubatch)
    if ubatch >= K.GGML_OFFLOAD_MIN_BATCH:
        note = PREFILL_CPU_MOE(
            ubatch=ubatch, percent=100 * h.routed_share(ubatch), gb=h.total_bytes / 1e9, gbps=pcie_gbps
        )
        return passes * moved / (pcie_gbps * 1e9), note
    return passes * moved / (host_gbps * 1e9), Text("")
