"""Recurrent hybrids of the second round (Zamba, Zamba2): their family records (:class:`~.family_record.Family`),
gathered by :mod:`.families`. Tensor names from transformers 5.24's ``models/<type>/modeling_<type>.py``, which the
published checkpoints spell alike (no ``conversion_mapping.py`` entry)."""

from __future__ import annotations

from dataclasses import replace

from .family_record import Family

#: Zamba (modeling_zamba.py): ZambaMambaDecoderLayer = input_layernorm -> mamba (ZambaMambaMixer: Mamba-1 with
#: x_proj / dt_proj per Mamba head); ZambaHybridLayer = the shared ``shared_transf`` block (ZambaAttentionDecoderLayer:
#: input_layernorm over the concatenated 2 x hidden input, self_attn, pre_ff_layernorm, feed_forward gate / up /
#: down), its own ``linear`` and a ``mamba_decoder``; the block's weights are tied to the first hybrid layer's
#: (``_tied_weights_keys``); final_layernorm; the head tied to the embedding
ZAMBA = Family(
    name="zamba",
    reader="zamba",
    model_types=("zamba",),
    tied_by_default=True,
    final_norm="model.final_layernorm",
    layer_norms=("input_layernorm", "pre_ff_layernorm"),
    mlp_prefix="feed_forward.",
    mamba_mixer="mamba",
    shared_block="shared_transf",
)

#: Zamba2 (modeling_zamba2.py): Zamba's layout with a Mamba-2 mixer, num_mem_blocks shared blocks called in turn
#: (each stored under its first caller's ``shared_transformer``), the MLP's fused gate_up_proj and, per caller, a
#: low-rank gate_up_proj_adapter_list entry (q / k / v adapters too with use_shared_attention_adapter)
ZAMBA2 = replace(
    ZAMBA,
    name="zamba2",
    reader="zamba2",
    model_types=("zamba2",),
    mlp="fused",
    mlp_names=("gate_up_proj", "down_proj"),
    shared_block="shared_transformer",
)
