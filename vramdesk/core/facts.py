"""What the estimator derives once per model: its architecture, tensor inventory and parameter counts.

``ModelFacts`` is built by :func:`model_facts` from a config (the catalog, a Hub repo, a local folder or a GGUF
header) and read by every part of the core; it lives here, below them all, so none of them imports the entry
point (``estimate``) back.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .architecture import Architecture, ConfigError
from .config_readers import normalize
from .config_readers.unknown import FROM_HEADERS
from .families import family_of
from .gguf import GgufModelInfo
from .header_inventory import HeaderEntries, inventory_tensors, read_inventory
from .inventory import ParamCounts, Tensor, build_inventory, count_params
from .memo import derived
from .messages import Message
from .weight_format import WeightFormat
from .weights import WeightBytes, weight_bytes

#: most parameters a model may have: 100 trillion, 50x the largest published (Kimi K2 and DeepSeek-V3: ~1T)
MAX_PARAMS = 10**14

TOO_MANY_PARAMS = Message(
    "config.too_many_parameters",
    "{model_type}: {params:.3g} parameters is above {most:.0e} (no real model is that large: check the layer, "
    "width, vocabulary and expert counts)",
)


@dataclass
class ModelFacts:
    """Everything about one model the estimator derives once: architecture, tensors, counts."""

    model_id: str
    arch: Architecture
    tensors: tuple[Tensor, ...]
    counts: ParamCounts
    #: extra facts from the source (e.g. "the checkpoint also stores a tied lm_head")
    notes: tuple[str, ...] = ()
    #: exact stored parameter total when a source (safetensors headers, the catalog) knows it
    stored_total: int | None = None
    #: the checkpoint's own tensors with their stored bytes (safetensors / GGUF headers), when read
    checkpoint: tuple[Tensor, ...] | None = None
    #: where the checkpoint tensors were read ("safetensors headers of owner/name", "GGUF header of x.gguf")
    checkpoint_source: str = ""
    _cache: dict[tuple[str, frozenset[str]], WeightBytes] = field(default_factory=dict, repr=False)

    def weights(self, fmt: WeightFormat, parts: frozenset[str]) -> WeightBytes:
        """The weights priced in ``fmt``: kept per format (by value) and, with the format object itself (the same
        one every estimate resolves: ``estimate.resolve_format``), found without spelling the format out. The
        entry goes with the format object, so formats made and dropped (advice, sweeps) leave nothing behind."""
        owner, wb = derived(fmt, ("priced for", id(self), parts), lambda: (weakref.ref(self), self._priced(fmt, parts)))
        if owner() is self:
            return wb
        return self._priced(fmt, parts)  # (another model under a reused id: priced by value)

    def _priced(self, fmt: WeightFormat, parts: frozenset[str]) -> WeightBytes:
        key = (repr(fmt), parts)
        hit = self._cache.get(key)
        if hit is None:
            if fmt.kind == "gguf":
                fmt = fmt.with_gguf_model(gguf_model_info(self.arch))
            hit = weight_bytes(self.tensors, fmt, parts, self.arch.n_layers)
            self._cache[key] = hit
        return hit


def gguf_model_info(arch: Architecture) -> GgufModelInfo:
    """The hparams llama-quantize looks at when it picks a tensor's type."""
    first = arch.layers[0]
    moe = next((layer.moe for layer in arch.layers if layer.moe is not None), None)
    fam = family_of(arch)
    return GgufModelInfo(
        arch=fam.gguf_arch or arch.model_type,
        n_expert=moe.num_experts if moe else 1,
        n_gqa=max(1, first.n_heads // max(1, first.n_kv_heads)),
        is_70b=fam.gguf_70b_at_80_layers and arch.n_layers == 80 and not arch.is_moe,
        has_output=not arch.tie_embeddings,
    )


def model_facts(
    config: Mapping[str, Any],
    model_id: str = "",
    *,
    notes: tuple[str, ...] = (),
    stored_total: int | None = None,
    checkpoint: tuple[Tensor, ...] | None = None,
    checkpoint_source: str = "",
    headers: HeaderEntries | None = None,
) -> ModelFacts:
    """Normalise a config and build its inventory; ``checkpoint`` = the tensors a checkpoint really stores
    (with ``stored_bytes``), which then price the weights whenever the scenario keeps the checkpoint's format;
    ``headers`` = the checkpoint's header entries, from which an unknown model type's inventory is read."""
    inventory = read_inventory(headers) if headers else None
    arch = normalize(config, inventory)
    if inventory is not None and FROM_HEADERS in arch.sources:
        tensors = inventory_tensors(inventory, arch)
    else:
        tensors = build_inventory(arch)
    if checkpoint is not None and stored_total is None:
        stored_total = sum(t.numel for t in checkpoint)
    counts = count_params(tensors)
    if max(counts.checkpoint, stored_total or 0) > MAX_PARAMS:
        # every field can be within its own bound (architecture._CONFIG_BOUNDS) while their product is not
        params = max(counts.checkpoint, stored_total or 0)
        raise ConfigError(TOO_MANY_PARAMS(model_type=arch.model_type, params=params, most=MAX_PARAMS))
    return ModelFacts(
        model_id=model_id or arch.model_type,
        arch=arch,
        tensors=tensors,
        counts=counts,
        notes=notes,
        stored_total=stored_total,
        checkpoint=checkpoint,
        checkpoint_source=checkpoint_source,
    )
