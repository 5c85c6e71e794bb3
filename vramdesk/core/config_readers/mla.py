"""DeepSeek Sparse Attention (DSA) on DeepSeek's MLA layers: which layers carry a lightning indexer and its geometry.

DeepSeek-V3.2 (transformers' modular_deepseek_v32.py: ``DeepseekV32Attention`` gives every layer a
``DeepseekV32Indexer``) and GLM-5 (modular_glm_moe_dsa.py: ``GlmMoeDsaAttention`` gives one only to the layers
``indexer_types`` calls "full"; "shared" layers reuse the previous full layer's top-k). ``GlmMoeDsaConfig`` derives
``indexer_types``, when a config has none, from ``index_topk_pattern`` ("F" / "S" per layer) or else from
``index_topk_freq`` (default 1) and ``index_skip_topk_offset`` (default 2): layer i is "full" when
max(i - offset + 1, 0) is a multiple of freq, so a config with neither (GLM-5, GLM-5.1) has an indexer on every layer.
"""

from __future__ import annotations

from ..architecture import ConfigError, DsaIndexerSpec
from ..messages import Message
from .fields import NOT_LIST, _Cfg

INDEXER_TYPE_UNKNOWN = Message(
    "config.indexer_types.unknown",
    "{model_type}: unknown indexer type '{name}' in '{key}' (known: 'full' or F, 'shared' or S)",
)
INDEXER_TYPE_COUNT = Message(
    "config.indexer_types.count", "{model_type}: '{key}' has {entries} entries but num_hidden_layers is {layers}"
)

_INDEXER_TYPES = {"full": "full", "shared": "shared", "F": "full", "S": "shared"}


def _indexer_types(c: _Cfg, n_layers: int) -> tuple[list[str], str]:
    """Each layer's indexer mode ("full" or "shared") and the field that said so."""
    for key in ("indexer_types", "index_topk_pattern"):
        raw = c.get(key)
        if raw is None:
            continue
        if not isinstance(raw, (list, str)):
            raise ConfigError(NOT_LIST(model_type=c.model_type, key=key))
        names = [str(x) for x in raw]
        if len(names) != n_layers:
            raise ConfigError(INDEXER_TYPE_COUNT(model_type=c.model_type, key=key, entries=len(names), layers=n_layers))
        for name in names:
            if name not in _INDEXER_TYPES:
                raise ConfigError(INDEXER_TYPE_UNKNOWN(model_type=c.model_type, name=name, key=key))
        return [_INDEXER_TYPES[n] for n in names], key
    if not (c.has("index_topk_freq") or c.has("index_skip_topk_offset")):
        return ["full"] * n_layers, "every layer"
    freq = c.int("index_topk_freq", default=1)
    offset = c.int("index_skip_topk_offset", default=2, min_value=0)
    types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n_layers)]
    return types, f"index_topk_freq {freq} / index_skip_topk_offset {offset}"


def dsa_indexers(c: _Cfg, n_layers: int) -> tuple[list[DsaIndexerSpec | None], str | None]:
    """The indexer of each layer (None: no DSA, or a "shared" layer) and where the layout came from; a config
    without ``index_n_heads`` is plain MLA (DeepSeek-V2 / V3, Kimi K2)."""
    if not c.has("index_n_heads"):
        return [None] * n_layers, None
    # the indexer's queries read the layer's q latent (wq_b: q_lora_rank -> index_n_heads x index_head_dim)
    c.int("q_lora_rank")
    spec = DsaIndexerSpec(
        n_heads=c.int("index_n_heads"), head_dim=c.int("index_head_dim"), topk=c.int("index_topk", default=2048)
    )
    types, src = _indexer_types(c, n_layers)
    return [spec if t == "full" else None for t in types], src
