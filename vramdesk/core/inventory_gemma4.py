"""The tensors Gemma 3n and Gemma 4 add to a decoder layer and to the model (``Architecture.gemma_n``), named as
their checkpoints store them (transformers' modeling_gemma3n.py / modeling_gemma4.py, the module paths of
Gemma3nTextModel / Gemma4TextModel under the family's prefix).

* per-layer input embeddings (PLE): the packed ``embed_tokens_per_layer`` table (its rows
  ``vocab_size_per_layer_input``, one ``hidden_size_per_layer_input`` slice per layer), ``per_layer_model_projection``
  and ``per_layer_projection_norm`` beside the token embedding, and in each layer ``per_layer_input_gate``,
  ``per_layer_projection`` and ``post_per_layer_input_norm``;
* Gemma 3n's AltUp (``altup``: correct_output_scale, correction_coefs, prediction_coefs, modality_router,
  router_norm; the model's ``altup_projections`` / ``altup_unembed_projections``, one fewer than the streams) and
  Laurel (``laurel``: linear_left, linear_right, post_laurel_norm);
* Gemma 4's MoE layers: the router's ``scale`` and ``per_expert_scale`` beside ``router.proj``, and the norms
  around the experts (``post_feedforward_layernorm_1`` / ``_2``, ``pre_feedforward_layernorm_2``); its layers'
  one-element ``layer_scalar`` (a persistent buffer the checkpoints store: gemma-4-31B-it's safetensors list 60).
"""

from __future__ import annotations

from .architecture import Architecture, GemmaNSpec, LayerSpec
from .families import Family
from .tensor_builder import Builder


def _model_prefix(fam: Family) -> str:
    """The text model's prefix ("model" or "model.language_model"): where its layers live."""
    return fam.layers.rpartition(".")[0]


def gemma_layer_extras(b: Builder, arch: Architecture, spec: LayerSpec, p: str, part: str) -> None:
    """The tensors of one decoder layer outside attention, MLP and the four sandwich norms."""
    g = arch.gemma_n
    assert g is not None
    h, i = arch.hidden, spec.index
    if spec.moe is not None:
        b.add(f"{p}.router.scale", (h,), "router", i, part)
        b.add(f"{p}.router.per_expert_scale", (spec.moe.num_experts,), "router", i, part)
        for n in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"):
            b.norm(f"{p}.{n}", h, i, part, False)
    if g.altup_inputs:
        k = g.altup_inputs
        b.add(f"{p}.altup.correct_output_scale", (h,), "state_param", i, part)
        b.linear(f"{p}.altup.correction_coefs", k, k, "router", i, part)
        b.linear(f"{p}.altup.prediction_coefs", k * k, k, "router", i, part)
        b.linear(f"{p}.altup.modality_router", k, h, "router", i, part)
        b.norm(f"{p}.altup.router_norm", h, i, part, False)
    if g.laurel_rank:
        b.linear(f"{p}.laurel.linear_left", g.laurel_rank, h, "mlp", i, part)
        b.linear(f"{p}.laurel.linear_right", h, g.laurel_rank, "mlp", i, part)
        b.norm(f"{p}.laurel.post_laurel_norm", h, i, part, False)
    if g.per_layer_input:
        b.linear(f"{p}.per_layer_input_gate", g.per_layer_input, h, "mlp", i, part)
        b.linear(f"{p}.per_layer_projection", h, g.per_layer_input, "mlp", i, part)
        b.norm(f"{p}.post_per_layer_input_norm", h, i, part, False)
    if g.layer_scalar:
        b.add(f"{p}.layer_scalar", (1,), "state_param", i, part)


def gemma_model_extras(b: Builder, arch: Architecture, fam: Family) -> None:
    """The model-level tensors: the PLE table and its projection, an assistant's projections, AltUp's stream
    projections."""
    g: GemmaNSpec | None = arch.gemma_n
    assert g is not None
    h, m = arch.hidden, _model_prefix(fam)
    if g.per_layer_input:
        width = arch.n_layers * g.per_layer_input
        b.add(f"{fam.embed}_per_layer.weight", (g.per_layer_vocab, width), "embedding")
        b.linear(f"{m}.per_layer_model_projection", width, h, "mlp", None, "text")
        b.norm(f"{m}.per_layer_projection_norm", g.per_layer_input, None, "text", False)
    if g.backbone_hidden:
        # an assistant (draft) model: top-level projections from and back to its target's width
        b.linear("pre_projection", h, 2 * g.backbone_hidden, "mlp", None, "text")
        b.linear("post_projection", g.backbone_hidden, h, "mlp", None, "text")
    if g.centroids:
        b.linear("masked_embedding.centroids", g.centroids, h, "mlp", None, "text")
    for k in range(max(0, g.altup_inputs - 1)):
        b.linear(f"{m}.altup_projections.{k}", h, h, "mlp", None, "text")
        b.linear(f"{m}.altup_unembed_projections.{k}", h, h, "mlp", None, "text")
