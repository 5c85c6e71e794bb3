"""The tensors of a Mamba-1 mixer (Mamba, Falcon-Mamba, Jamba), named as the checkpoints store them.

Kept apart from :mod:`.inventory`, which calls :func:`mamba1_mixer` for a layer whose ``LayerSpec.mamba1`` is set.
Module names and shapes from transformers 5.24's ``MambaMixer`` (modeling_mamba.py), ``FalconMambaMixer``
(modular_falcon_mamba.py: Mamba's modules; its B / C / dt RMSNorms have no weight) and ``JambaMambaMixer``
(modeling_jamba.py: the same modules plus ``dt_layernorm``, ``b_layernorm`` and ``c_layernorm``) and
``ZambaMambaMixer`` (modeling_zamba.py: x_proj / dt_proj stacked per Mamba head).
"""

from __future__ import annotations

from .architecture import Architecture, LayerSpec, Mamba1Spec
from .families import Family
from .tensor_builder import Builder


def mamba1_mixer(b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """in_proj (x and z), the depthwise conv1d over x (bias: ``use_conv_bias``), x_proj (dt, B, C; no bias),
    dt_proj (with a bias), A_log (intermediate x state), D, out_proj; in_proj / out_proj biases: ``use_bias``."""
    assert spec.mamba1 is not None
    m, h, i = spec.mamba1, arch.hidden, spec.index
    a = f"{p}.{fam.mamba_mixer}"
    b.linear(f"{a}.in_proj", m.in_proj_width, h, "linear_attn", i, part, m.proj_bias)
    b.add(f"{a}.conv1d.weight", (m.intermediate, 1, m.conv_kernel), "conv", i, part)
    if m.conv_bias:
        b.add(f"{a}.conv1d.bias", (m.intermediate,), "bias", i, part)
    if m.heads > 1:
        _multi_head(b, m, a, i, part)
    else:
        b.linear(f"{a}.x_proj", m.dt_rank + 2 * m.state_size, m.intermediate, "linear_attn", i, part)
        b.linear(f"{a}.dt_proj", m.intermediate, m.dt_rank, "linear_attn", i, part, True)
        b.add(f"{a}.A_log", (m.intermediate, m.state_size), "state_param", i, part)
        b.add(f"{a}.D", (m.intermediate,), "state_param", i, part)
    if m.inner_norms:
        b.norm(f"{a}.dt_layernorm", m.dt_rank, i, part, False)
        b.norm(f"{a}.b_layernorm", m.state_size, i, part, False)
        b.norm(f"{a}.c_layernorm", m.state_size, i, part, False)
    b.linear(f"{a}.out_proj", h, m.intermediate, "linear_attn", i, part, m.proj_bias)


def _multi_head(b: Builder, m: Mamba1Spec, a: str, i: int, part: str) -> None:
    """ZambaMambaMixer (modeling_zamba.py): x_proj and dt_proj as one stacked parameter per Mamba head
    (x_proj_weight (heads, dt_rank + 2 x state, head_dim), dt_proj_weight (heads, head_dim, dt_rank) and
    dt_proj_bias), A_log and D split by head."""
    hd = m.intermediate // m.heads
    b.add(f"{a}.x_proj_weight", (m.heads, m.dt_rank + 2 * m.state_size, hd), "linear_attn", i, part)
    b.add(f"{a}.dt_proj_weight", (m.heads, hd, m.dt_rank), "linear_attn", i, part)
    b.add(f"{a}.dt_proj_bias", (m.heads, hd), "bias", i, part)
    b.add(f"{a}.A_log", (m.heads, hd, m.state_size), "state_param", i, part)
    b.add(f"{a}.D", (m.heads, hd), "state_param", i, part)
