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


def vit_blocks(
    b: Builder,
    prefix: str,
    depth: int,
    hidden: int,
    inter: int,
    part: str,
    *,
    mlp: tuple[str, ...] = ("fc1", "fc2"),
    norm_bias: bool = True,
    qkv_bias: bool = True,
    proj_bias: bool = True,
    mlp_bias: bool = True,
) -> None:
    """``depth`` vision-transformer blocks under ``prefix``.{i}: norm1 / norm2, a fused ``attn.qkv`` and
    ``attn.proj``, then the MLP ``mlp`` names (two: up and down; three: gate, up and down), as the Qwen-VL family's
    towers and their copies name them."""
    *ins, down = mlp
    for i in range(depth):
        p = f"{prefix}.{i}"
        b.norm(f"{p}.norm1", hidden, None, part, norm_bias)
        b.norm(f"{p}.norm2", hidden, None, part, norm_bias)
        b.linear(f"{p}.attn.qkv", 3 * hidden, hidden, "vision", None, part, qkv_bias)
        b.linear(f"{p}.attn.proj", hidden, hidden, "vision", None, part, proj_bias)
        for name in ins:
            b.linear(f"{p}.mlp.{name}", inter, hidden, "vision", None, part, mlp_bias)
        b.linear(f"{p}.mlp.{down}", hidden, inter, "vision", None, part, mlp_bias)
