"""Tensors of the MoE layouts of the third round that the shared MoE builder does not name: ERNIE 4.5 VL's vision
experts (transformers' ``Ernie4_5_VLMoeMoeBlock.vision_moe``), which :func:`.inventory.build_inventory` names
through :func:`vision_experts`."""

from __future__ import annotations

from .architecture import Architecture, LayerSpec
from .families import Family
from .tensor_builder import Builder, Tensor


def vision_experts(b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """The vision experts beside a layer's text experts, as the checkpoints store them: their router
    ``{router}.weight_1``, the experts numbered after the text ones in the same ``{experts}.{e}`` list, recorded
    stacked under ``{experts}.vision`` (gate, up, down); both routers are kept transposed (hidden x experts), and
    both sets' correction biases are one (2, E) tensor, so the text router's and text bias's shapes the shared
    builder wrote are restated. A text token touches none of the vision experts (``active`` 0)."""
    assert spec.vision_moe is not None and spec.moe is not None
    v, h, i = spec.vision_moe, arch.hidden, spec.index
    n_text, n_vision = spec.moe.num_experts, v.num_experts
    router = f"{p}.{fam.router}"
    shapes: dict[str, tuple[int, ...]] = {f"{router}.weight": (h, n_text)}
    if v.router_correction_bias and fam.correction_bias is not None:
        both = (2, n_text) if n_text == n_vision else (n_text + n_vision,)
        shapes[f"{p}.{fam.correction_bias}"] = both
    b.tensors = [Tensor(t.name, shapes[t.name], t.role, i, part) if t.name in shapes else t for t in b.tensors]
    b.add(f"{router}.weight_1", (h, n_vision), "router", i, part)
    *ins, down = fam.expert_names
    ex = f"{p}.{fam.experts}.vision"
    for name in ins:
        b.add(f"{ex}.{name}.weight", (n_vision, v.expert_intermediate, h), "expert", i, part, 0.0)
    b.add(f"{ex}.{down}.weight", (n_vision, h, v.expert_intermediate), "expert", i, part, 0.0)
