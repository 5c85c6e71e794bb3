"""Readers of the vision-language families whose text model is a known decoder: Qwen3-VL (dense and MoE) and
Qwen2.5-VL. The text part is read by :func:`.decoders._llama_like` as the decoder it is (Qwen3 with per-head q/k
norms and, for ``qwen3_vl_moe``, Qwen3-MoE experts; Qwen2 with q/k/v biases); the tower by :mod:`.vision`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..architecture import Architecture
from ..families import Family
from .decoders import _llama_like
from .fields import _Cfg
from .vision import qwen2_5_vl_tower, qwen3_vl_tower


def _qwen3_vl(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Qwen3-VL and Qwen3-VL-MoE: a Qwen3 (per-head q/k norms) or Qwen3-MoE text model under
    ``model.language_model`` and the Qwen3-VL tower with its deepstack mergers."""
    arch = _llama_like(c, outer, "qwen3_moe" if base == "qwen3_vl_moe" else "qwen3", fam)
    return arch.model_copy(update={"vision": qwen3_vl_tower(c, outer, arch.hidden)})


def _qwen2_5_vl(c: _Cfg, outer: Mapping[str, Any], base: str, fam: Family) -> Architecture:
    """Qwen2.5-VL: a Qwen2 text model (q/k/v biases) and the Qwen2.5-VL tower; the text fields sit at the top of
    the original configs and under ``text_config`` in those transformers 4.5x re-saves."""
    arch = _llama_like(c, outer, "qwen2", fam)
    return arch.model_copy(update={"vision": qwen2_5_vl_tower(c, outer, arch.hidden)})
