"""The tensors of dense families that no field of their record describes, by ``Family.extras``: what each family's
builder adds to every decoder layer and to the model beside the tensors :mod:`.inventory` names from the record.

Names and shapes from transformers 5.24's ``modeling_<family>.py`` (checked against the model it builds from its
own default config, ``benchmarks/data/transformers_families.jsonl``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .architecture import Architecture, LayerSpec
from .families import Family
from .inventory_llamalike import beam_layer, diffllama_layer
from .inventory_mla2 import hyper_connections, hyper_head
from .tensor_builder import Builder as _Builder

#: (builder, architecture, family, the layer, its prefix, its part)
LayerExtras = Callable[[_Builder, Architecture, Family, LayerSpec, str, str], None]
#: (builder, architecture, family)
ModelExtras = Callable[[_Builder, Architecture, Family], None]


def _no_model_extras(b: _Builder, arch: Architecture, fam: Family) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Extras:
    layer: LayerExtras
    model: ModelExtras = _no_model_extras


def _stablelm_layer(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """StableLmLayerNormPerHead (qk_layernorm): a ModuleList of one bias-free LayerNorm of head_dim per query head
    (q_layernorm) and per key-value head (k_layernorm)."""
    if arch.qk_norm != "per_head_ln":
        return
    for name, heads in (("q_layernorm", spec.n_heads), ("k_layernorm", spec.n_kv_heads)):
        for h in range(heads):
            b.norm(f"{p}.{fam.attn}.{name}.norms.{h}", spec.head_dim, spec.index, part, False)


def _bitnet_layer(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """BitNetAttention.attn_sub_norm (before o_proj, hidden wide) and BitNetMLP.ffn_sub_norm (before down_proj,
    intermediate wide): RMSNorms."""
    b.norm(f"{p}.{fam.attn}.attn_sub_norm", arch.hidden, spec.index, part, False)
    b.norm(f"{p}.{fam.mlp_prefix}ffn_sub_norm", spec.intermediate, spec.index, part, False)


def _apertus_layer(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """XIELUActivation (hidden_act "xielu"): the learned scalars alpha_p and alpha_n of each layer's MLP (its beta
    and eps are buffers)."""
    if arch.details.get("activation") != "xielu":
        return
    for name in ("alpha_p", "alpha_n"):
        b.add(f"{p}.{fam.mlp_prefix}act_fn.{name}", (1,), "state_param", spec.index, part)


def _modernbert_layer(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """attn_norm, an nn.Identity in layer 0 (the embeddings' norm stands in for it): a LayerNorm in every other."""
    if spec.index:
        b.norm(f"{p}.attn_norm", arch.hidden, spec.index, part, arch.norm == "layer")


def _modernbert_model(b: _Builder, arch: Architecture, fam: Family) -> None:
    """ModernBertDecoderEmbeddings.norm after the token embedding; the prediction head ``lm_head`` (dense, with
    classifier_bias, and norm) before the output layer; that layer's bias when its weight is the tied embedding
    (an untied one is the record's lm_head with its bias)."""
    lb = arch.norm == "layer"
    root = fam.embed.rpartition(".")[0]
    b.norm(f"{root}.norm", arch.hidden, None, "text", lb)
    b.linear("lm_head.dense", arch.hidden, arch.hidden, "lm_head", None, "text", bool(arch.details.get("head_bias")))
    b.norm("lm_head.norm", arch.hidden, None, "text", lb)
    if arch.tie_embeddings and arch.lm_head_bias:
        b.add(f"{fam.lm_head}.bias", (arch.vocab,), "bias")


def _gpt_neox_japanese_layer(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """GPTNeoXJapaneseAttention(use_bias=layer_number == num_hidden_layers - 1): only the last layer keeps a
    dense_bias, added to its output."""
    if spec.index == arch.n_layers - 1:
        b.add(f"{p}.{fam.attn}.dense_bias", (arch.hidden,), "bias", spec.index, part)


#: ``Family.extras`` -> the builder of that family's extra tensors
EXTRAS: Mapping[str, Extras] = {
    "stablelm": Extras(_stablelm_layer),
    "bitnet": Extras(_bitnet_layer),
    "apertus": Extras(_apertus_layer),
    "modernbert_decoder": Extras(_modernbert_layer, _modernbert_model),
    "gpt_neox_japanese": Extras(_gpt_neox_japanese_layer),
    "deepseek_v4": Extras(hyper_connections, hyper_head),
    # --- llamalike
    "diffllama": Extras(diffllama_layer),
    "beam": Extras(beam_layer),
}
