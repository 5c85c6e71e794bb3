"""MoE and multimodal families of the third round (ERNIE 4.5 VL MoE ...): their family records, gathered by
:mod:`.families`; read by :mod:`.config_readers.moe3`."""

from __future__ import annotations

from dataclasses import replace

from .families_moe import ERNIE4_5_MOE

#: ERNIE 4.5 VL MoE (modeling_ernie4_5_vl_moe.py), under the names the published checkpoints store and
#: transformers 5's ernie4_5_vl_moe conversion mapping renames at load time: ERNIE 4.5 MoE's text layers under
#: model.layers (to model.language_model.layers), the text router mlp.gate and the vision router's
#: mlp.gate.weight_1 (to mlp.text_moe.gate / mlp.vision_moe.gate), both routers' correction biases as one (2, E)
#: mlp.moe_statics.e_score_correction_bias, the text experts and then the vision experts numbered in one list
#: mlp.experts.{0 .. 2E-1} (split into text_moe.experts / vision_moe.experts), mlp.shared_experts; the tower under
#: vision_model. and the resampler under model.resampler_model. (vision_towers_moe3.py); tied embeddings by default
ERNIE4_5_VL_MOE = replace(
    ERNIE4_5_MOE,
    name="ernie4_5_vl_moe",
    reader="ernie4_5_vl_moe",
    model_types=("ernie4_5_vl_moe", "ernie4_5_moe_vl"),
)
