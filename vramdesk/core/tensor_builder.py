"""The tensor record of an inventory and the builder that appends them (shapes follow ``nn.Linear``: (out, in)).

Kept apart from :mod:`.inventory` so that the modules naming one part of a checkpoint (the vision towers:
:mod:`.vision_inventory`) build with it without importing the decoder's inventory.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod


@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    role: str
    layer: int | None = None
    part: str = "text"
    #: fraction of this tensor one token touches (MoE routed experts: top_k / num_experts)
    active: float = 1.0
    #: exact bytes as stored in a checkpoint (safetensors / GGUF header); None for tensors derived from a config
    stored_bytes: int | None = None
    #: storage dtype as the checkpoint names it ("BF16", "F8_E4M3", "I32", "Q4_K", ...)
    stored_dtype: str | None = None

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def routed_expert(self) -> bool:
        """One of a MoE layer's stacked routed-expert tensors (or their biases): what llama.cpp's ``--cpu-moe`` /
        ``--n-cpu-moe`` pattern ``ffn_(up|down|gate|gate_up)_(ch|)exps`` names; the shared expert and the router
        are not."""
        return self.role == "expert" or (self.role == "bias" and self.active < 1.0)


class Builder:
    def __init__(self) -> None:
        self.tensors: list[Tensor] = []

    def add(
        self,
        name: str,
        shape: tuple[int, ...],
        role: str,
        layer: int | None = None,
        part: str = "text",
        active: float = 1.0,
    ) -> None:
        self.tensors.append(Tensor(name, shape, role, layer, part, active))

    def linear(
        self, prefix: str, out_f: int, in_f: int, role: str, layer: int | None, part: str, bias: bool = False
    ) -> None:
        self.add(f"{prefix}.weight", (out_f, in_f), role, layer, part)
        if bias:
            self.add(f"{prefix}.bias", (out_f,), "bias", layer, part)

    def norm(self, prefix: str, width: int, layer: int | None, part: str, with_bias: bool) -> None:
        self.add(f"{prefix}.weight", (width,), "norm", layer, part)
        if with_bias:
            self.add(f"{prefix}.bias", (width,), "norm", layer, part)
