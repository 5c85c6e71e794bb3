"""Dense and odd decoders of the third round (Doge, NanoChat, Apertus 1.5): their family records
(:class:`~.family_record.Family`), gathered by :mod:`.families`. Names and shapes from transformers 5.24's
``modeling_<family>.py``, checked against the model it builds from its own default config
(``benchmarks/data/transformers_families.jsonl``)."""

from __future__ import annotations

from dataclasses import replace

from .families_dense import APERTUS
from .family_record import Family

#: Doge (modeling_doge.py): Llama's names, per-head q/k norms, and what the extras add: the dynamic mask's ``A`` and
#: ``dt_proj`` under self_attn, the two residual scales of each layer and, with ``is_moe``, the CDMoE block's
#: router_gate and its single-neuron experts ``down_embed`` / ``up_embed`` beside the shared MLP
DOGE = Family(name="doge", reader="doge", model_types=("doge",), extras="doge")

#: NanoChat (modeling_nanochat.py): Llama's attention names, fc1 -> ReLU^2 -> fc2, and every RMSNorm (the layers',
#: the per-head q/k ones, the final one) without a weight
NANOCHAT = Family(
    name="nanochat",
    reader="nanochat",
    model_types=("nanochat",),
    mlp="plain",
    mlp_names=("fc1", "fc2"),
    weightless_norms=True,
)

#: Apertus 1.5 (modeling_apertus1p5.py): the Apertus text model, stored under model.language_model by the multimodal
#: checkpoint (Apertus1p5ForConditionalGeneration; no conversion mapping); the reader gives a text-only checkpoint
#: (apertus1p5_text, its modules under model.) Apertus's record
APERTUS1P5 = replace(
    APERTUS,
    name="apertus1p5",
    reader="apertus1p5",
    model_types=("apertus1p5",),
    layers="model.language_model.layers",
    embed="model.language_model.embed_tokens",
    final_norm="model.language_model.norm",
)
