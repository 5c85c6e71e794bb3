"""Tensors of the llamalike families that no field of their record describes (hooked in as
``inventory_dense2.EXTRAS`` entries): DiffLlama's differential-attention lambdas, Beam's output-gate bias.

Names and shapes from transformers 5.24's ``models/<type>/modeling_<type>.py``.
"""

from __future__ import annotations

from .architecture import Architecture, LayerSpec
from .families import Family
from .tensor_builder import Builder


def diffllama_layer(b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """DiffLlamaAttention's lambda_q1, lambda_k1, lambda_q2 and lambda_k2: head_dim-long parameters (its groupnorm,
    an RMSNorm of 2 x head_dim without elementwise_affine, stores none)."""
    for name in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"):
        b.add(f"{p}.{fam.attn}.{name}", (spec.head_dim,), "state_param", spec.index, part)


def beam_layer(b: Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """BeamAttention.gate_bias: one per query head, added to the output gate (its gate_proj is the layer's
    attn_gate)."""
    b.add(f"{p}.{fam.attn}.gate_bias", (spec.n_heads,), "bias", spec.index, part)
