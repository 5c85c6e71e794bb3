"""Architecture -> tensor inventory: every tensor the checkpoint stores, with its shape and role.

Parameter counts are sums over this list, so they are exact wherever the architecture table is. Tensor
names follow the Hugging Face module paths of the family, as its record in :mod:`.families` spells them (they
are matched against ``modules_to_not_convert``-style skip lists); shapes follow ``nn.Linear`` (out, in).
Stacked expert tensors are (experts, out, in).

Parts: ``text`` (what decoding uses), ``mtp`` (multi-token-prediction layers a checkpoint carries),
``vision`` (vision tower and projector), ``lm_head_copy`` (a tied lm_head the checkpoint stores anyway).
"""

from __future__ import annotations

from dataclasses import dataclass

from .architecture import Architecture, AttentionKind, LayerSpec
from .families import Family, family_of
from .inventory_dense2 import EXTRAS as _DENSE2_EXTRAS
from .inventory_dense3 import DENSE3_EXTRAS
from .inventory_gemma4 import gemma_layer_extras, gemma_model_extras
from .inventory_mla2 import compressed_attention
from .inventory_moe2 import moa_attention
from .inventory_moe3 import vision_experts
from .inventory_ownvlm import attention_indexer
from .inventory_recurrent import state_mixer
from .inventory_ssm import mamba1_mixer
from .inventory_ssm2 import shared_block_call
from .tensor_builder import Builder as _Builder
from .tensor_builder import Tensor
from .vision_inventory import vision_tower

EXTRAS = {**_DENSE2_EXTRAS, **DENSE3_EXTRAS}


def _attention(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    h = arch.hidden
    i = spec.index
    if spec.attention == AttentionKind.LINEAR and spec.linear is not None:
        lin = spec.linear
        a = f"{p}.linear_attn"
        # in_proj_qkvz (2 key_dim + 2 value_dim) and in_proj_ba (2 x value heads), as Qwen3-Next stores them;
        # Qwen3.5 splits the same rows into in_proj_qkv / in_proj_z / in_proj_b / in_proj_a
        rows = (2 * lin.key_dim + 2 * lin.value_dim, 2 * lin.num_v_heads)
        if len(fam.linear_in_proj) == 1:
            # all six stacked in one in_proj (Lara Mini's checkpoints: rows q | k | v | z | b | a)
            b.linear(f"{a}.{fam.linear_in_proj[0]}", sum(rows), h, "linear_attn", i, part)
        else:
            for name, n in zip(fam.linear_in_proj, rows, strict=True):
                b.linear(f"{a}.{name}", n, h, "linear_attn", i, part)
        b.add(f"{a}.conv1d.weight", (lin.conv_dim, 1, lin.conv_kernel), "conv", i, part)
        b.add(f"{a}.dt_bias", (lin.num_v_heads,), "state_param", i, part)
        b.add(f"{a}.A_log", (lin.num_v_heads,), "state_param", i, part)
        b.add(f"{a}.{fam.linear_norm}.weight", (lin.v_head_dim,), "norm", i, part)
        b.linear(f"{a}.out_proj", h, lin.value_dim, "linear_attn", i, part)
        return
    if spec.mamba is not None or spec.mamba1 is not None:
        if spec.mamba is not None:
            _mamba2(b, arch, fam, spec, p, part)
        else:
            mamba1_mixer(b, arch, fam, spec, p, part)
        if spec.attention != AttentionKind.FULL:
            return
        # a Falcon-H1 layer runs attention beside its Mamba-2 mixer
    if spec.state is not None:
        state_mixer(b, arch, fam, spec, f"{p}.{fam.state_mixer}", part)
        return
    if spec.moa is not None:
        moa_attention(b, arch, fam, spec, p, part)
        return
    if spec.attention == AttentionKind.NONE:
        # a Nemotron-H MLP or MoE layer: no attention module
        return
    if spec.compressed is not None:
        compressed_attention(b, arch, fam, spec, p, part)
        return
    a = f"{p}.{fam.attn}"
    if spec.attention == AttentionKind.MLA and spec.mla is not None:
        m = spec.mla
        qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim
        if m.q_lora_rank:
            b.linear(f"{a}.q_a_proj", m.q_lora_rank, h, "attn", i, part, arch.qkv_bias)
            b.norm(f"{a}.q_a_layernorm", m.q_lora_rank, i, part, False)
            b.linear(f"{a}.q_b_proj", spec.n_heads * qk_head, m.q_lora_rank, "attn", i, part)
        else:
            b.linear(f"{a}.q_proj", spec.n_heads * qk_head, h, "attn", i, part)
        # attention_bias: q_a_proj, kv_a_proj_with_mqa and o_proj (DeepseekV3Attention and its copies)
        b.linear(f"{a}.kv_a_proj_with_mqa", m.kv_lora_rank + m.qk_rope_head_dim, h, "attn", i, part, arch.qkv_bias)
        b.norm(f"{a}.kv_a_layernorm", m.kv_lora_rank, i, part, False)
        b.linear(f"{a}.kv_b_proj", spec.n_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, "attn", i, part)
        b.linear(f"{a}.o_proj", h, spec.n_heads * m.v_head_dim, "attn", i, part, arch.o_bias)
        if spec.indexer is not None and m.q_lora_rank:
            _dsa_indexer(b, arch, spec, f"{a}.indexer", m.q_lora_rank, part)
        return
    q_out = spec.n_heads * spec.head_dim
    kv_out = spec.n_kv_heads * spec.head_dim
    # values narrower than the keys (MiMo-V2-Flash's v_head_dim) narrow v_proj and o_proj's input
    v_out = spec.n_kv_heads * spec.v_head_dim
    if fam.qkv_proj is not None:
        # q, k and v stacked in one projection (GPT-2's c_attn, NeoX / Falcon / BLOOM query_key_value; Phi-3
        # stores, and peft adapts, them as one qkv_proj)
        b.linear(f"{a}.{fam.qkv_proj}", q_out + kv_out + v_out, h, "attn", i, part, arch.qkv_bias)
    else:
        b.linear(f"{a}.q_proj", q_out * (2 if spec.attn_output_gate else 1), h, "attn", i, part, arch.qkv_bias)
        # a Gemma 3n / 4 layer sharing another's KV has no k / v projections; one whose values are its keys no v
        if not spec.kv_shared:
            b.linear(f"{a}.k_proj", kv_out, h, "attn", i, part, arch.qkv_bias)
        if not (spec.kv_shared or spec.k_eq_v):
            b.linear(f"{a}.v_proj", v_out, h, "attn", i, part, arch.qkv_bias)
    b.linear(f"{a}.{fam.o_proj}", h, spec.n_heads * spec.v_head_dim, "attn", i, part, arch.o_bias)
    if spec.attn_gate:
        b.linear(f"{a}.{fam.attn_gate}", spec.attn_gate, h, "attn", i, part)
    if arch.qk_norm == "head":
        q_norm, k_norm = fam.qk_norms
        b.norm(f"{a}.{q_norm}", spec.head_dim, i, part, False)
        if not spec.kv_shared:
            b.norm(f"{a}.{k_norm}", spec.head_dim, i, part, False)
    elif arch.qk_norm == "head_ln":
        b.norm(f"{a}.q_layernorm", spec.head_dim, i, part, True)
        b.norm(f"{a}.k_layernorm", spec.head_dim, i, part, True)
    elif arch.qk_norm == "full":
        b.norm(f"{a}.q_norm", q_out, i, part, False)
        b.norm(f"{a}.k_norm", kv_out, i, part, False)
    if arch.attention_sinks and (spec.attention == AttentionKind.SLIDING or not fam.sinks_on_sliding_only):
        b.add(f"{a}.{fam.sinks}", (spec.n_heads,), "state_param", i, part)
    if spec.indexer is not None:
        attention_indexer(b, spec, a, h, part)


def _dsa_indexer(b: _Builder, arch: Architecture, spec: LayerSpec, a: str, q_lora_rank: int, part: str) -> None:
    """DeepSeek Sparse Attention's lightning indexer (transformers' DeepseekV32Indexer, GLM-5's GlmMoeDsaIndexer):
    wq_b from the layer's q latent to the indexer heads, wk to its one shared key, a LayerNorm k_norm (weight and
    bias) over that key and weights_proj, a weight per indexer head; no biases. weights_proj scores like a router
    and is stored like one: BF16 beside FP8 wq_b / wk in DeepSeek-V3.2's checkpoint (kept in fp32 by transformers)."""
    assert spec.indexer is not None
    x, h, i = spec.indexer, arch.hidden, spec.index
    b.linear(f"{a}.wq_b", x.n_heads * x.head_dim, q_lora_rank, "attn", i, part)
    b.linear(f"{a}.wk", x.head_dim, h, "attn", i, part)
    b.norm(f"{a}.k_norm", x.head_dim, i, part, True)
    b.linear(f"{a}.weights_proj", x.n_heads, h, "router", i, part)


def _mamba2(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    """A Mamba-2 mixer (transformers' Mamba2Mixer; Zamba2MambaMixer / BambaMixer / FalconH1Mixer lay it out alike):
    in_proj (z, x, B, C, dt), the depthwise conv1d over x, B and C, per-head dt_bias / A_log / D, the gated RMSNorm
    over the intermediate width and out_proj."""
    assert spec.mamba is not None
    m, h, i = spec.mamba, arch.hidden, spec.index
    a = f"{p}.{fam.mamba_mixer}"
    b.linear(f"{a}.in_proj", m.in_proj_width, h, "linear_attn", i, part, m.proj_bias)
    b.add(f"{a}.conv1d.weight", (m.conv_dim, 1, m.conv_kernel), "conv", i, part)
    if m.conv_bias:
        b.add(f"{a}.conv1d.bias", (m.conv_dim,), "bias", i, part)
    for name in ("dt_bias", "A_log", "D"):
        b.add(f"{a}.{name}", (m.num_heads,), "state_param", i, part)
    if m.gated_norm:
        b.add(f"{a}.norm.weight", (m.intermediate,), "norm", i, part)
    b.linear(f"{a}.out_proj", h, m.intermediate, "linear_attn", i, part, m.proj_bias)


def _mlp(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    h = arch.hidden
    i = spec.index
    if spec.mlp == "none":
        return
    if spec.moe is None:
        inter = spec.intermediate
        # gated: gate and up (Qwen v1: w1 and w2, c_proj(w1(x) * silu(w2(x)))), plain: up; fused: gate and up
        # stacked as one (Phi-3's gate_up_proj); then the down projection
        *ins, down = fam.mlp_names
        width = 2 * inter if fam.mlp == "fused" else inter
        for name in ins:
            b.linear(f"{p}.{fam.mlp_prefix}{name}", width, h, "mlp", i, part, arch.mlp_bias)
        b.linear(f"{p}.{fam.mlp_prefix}{down}", h, inter, "mlp", i, part, arch.mlp_bias)
        return
    moe = spec.moe
    e, inter = moe.num_experts, moe.expert_intermediate
    frac = moe.top_k / e
    router = f"{p}.{fam.router}"
    b.linear(router, e, h, "router", i, part, moe.router_bias)
    if moe.router_correction_bias:
        bias = f"{p}.{fam.correction_bias}" if fam.correction_bias else f"{router}.e_score_correction_bias"
        b.add(bias, (e,), "bias", i, part)
    ex = f"{p}.{fam.experts}"
    if moe.latent:
        # latent MoE (NemotronHMoE): beside the experts, fc1_latent_proj takes the hidden state down to the
        # latent width the routed experts read and write, fc2_latent_proj back up (biases: mlp_bias)
        block = ex.rpartition(".")[0]
        b.linear(f"{block}.fc1_latent_proj", moe.latent, h, "mlp", i, part, arch.mlp_bias)
        b.linear(f"{block}.fc2_latent_proj", h, moe.latent, "mlp", i, part, arch.mlp_bias)
    # the width the routed experts read and write
    xw = moe.latent or h
    if fam.fused_experts:
        gate_up, down = fam.expert_names
        # stored fused and stacked: gate_up (E, 2I, H) and down (E, H, I)
        b.add(f"{ex}.{gate_up}", (e, 2 * inter, xw), "expert", i, part, frac)
        b.add(f"{ex}.{down}", (e, xw, inter), "expert", i, part, frac)
        if moe.expert_bias:
            b.add(f"{ex}.{gate_up}_bias", (e, 2 * inter), "bias", i, part, frac)
            b.add(f"{ex}.{down}_bias", (e, xw), "bias", i, part, frac)
    else:
        # gate, up and down (or up and down: Nemotron-H's plain experts); one (out, in) matrix per expert in the
        # checkpoint, recorded stacked, quantised per expert
        *ins, down = fam.expert_names
        for name in ins:
            b.add(f"{ex}.{name}.weight", (e, inter, xw), "expert", i, part, frac)
        b.add(f"{ex}.{down}.weight", (e, xw, inter), "expert", i, part, frac)
    if moe.shared_intermediate:
        se = f"{p}.{fam.shared_expert}"
        s = moe.shared_intermediate
        # laid out as the family's dense MLP (gate, up, down; Nemotron-H: up, down)
        *shared_ins, shared_down = fam.mlp_names
        # a fused MLP stacks gate and up (Granite 4.0-H's shared_mlp.input_linear)
        sw = 2 * s if fam.mlp == "fused" else s
        for name in shared_ins:
            b.linear(f"{se}.{name}", sw, h, "shared_expert", i, part)
        b.linear(f"{se}.{shared_down}", h, s, "shared_expert", i, part)
        if moe.shared_gate:
            b.linear(f"{p}.mlp.shared_expert_gate", 1, h, "router", i, part)
    if fam.moe_output_norm is not None:
        b.norm(f"{p}.{fam.moe_output_norm}", h, i, part, False)


def _norms(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, p: str, part: str) -> None:
    if fam.weightless_norms:
        return
    lb = arch.norm == "layer"
    if arch.norms_per_layer == 4:
        # both sides of attention and of the MLP (Gemma 2 / 3, GLM-4)
        names: tuple[str, ...] = fam.sandwich_norms
    elif arch.norms_per_layer == 1:
        # one norm feeds attention and MLP in parallel (Phi-1 / Phi-2, Falcon-7B, GPT-J's ln_1)
        names = (fam.single_norm,)
    else:
        names = fam.layer_norms
        if spec.attention == AttentionKind.NONE or spec.mlp == "none":
            # a DeciLM layer whose attention or FFN is no_op has no norm before it either
            attn_norm, mlp_norm = names
            names = tuple(
                n
                for n, kept in ((attn_norm, spec.attention != AttentionKind.NONE), (mlp_norm, spec.mlp != "none"))
                if kept
            )
    for n in names:
        b.norm(f"{p}.{n}", arch.hidden, spec.index, part, lb)


def _decoder_layer(b: _Builder, arch: Architecture, fam: Family, spec: LayerSpec, prefix: str, part: str) -> None:
    if spec.shared is not None:
        # a Zamba hybrid layer: its call of a shared block, then its Mamba decoder layer
        spec, prefix = shared_block_call(b, arch, fam, spec, prefix, part)
    _attention(b, arch, fam, spec, prefix, part)
    _mlp(b, arch, fam, spec, prefix, part)
    if spec.vision_moe is not None:
        vision_experts(b, arch, fam, spec, prefix, part)
    _norms(b, arch, fam, spec, prefix, part)
    if fam.extras is not None:
        EXTRAS[fam.extras].layer(b, arch, fam, spec, prefix, part)
    if arch.gemma_n is not None:
        gemma_layer_extras(b, arch, spec, prefix, part)


def build_inventory(arch: Architecture) -> tuple[Tensor, ...]:
    b = _Builder()
    fam = family_of(arch)
    h, vocab = arch.hidden, arch.vocab
    width = arch.embed_width or h
    b.add(f"{fam.embed}.weight", (vocab, width), "embedding")
    if arch.learned_positions:
        b.add(f"{fam.positions}.weight", (arch.learned_positions, h), "embedding")
    if width != h:
        # into the decoder after the token embedding, and back out before the head (no bias)
        if fam.embed_projections is None:
            raise ValueError(f"{arch.model_type}: family {fam.name} has no projections for a {width}-wide embedding")
        proj_in, proj_out = fam.embed_projections
        b.linear(proj_in, h, width, "embedding", None, "text")
        b.linear(proj_out, width, h, "embedding", None, "text")
    if arch.embedding_norm:
        b.norm("transformer.word_embeddings_layernorm", h, None, "text", True)
    for spec in arch.layers:
        _decoder_layer(b, arch, fam, spec, f"{fam.layers}.{spec.index}", "text")
    if arch.final_norm and not fam.weightless_norms:
        b.norm(fam.final_norm, h, None, "text", arch.norm == "layer")
    if arch.gemma_n is not None:
        gemma_model_extras(b, arch, fam)
    head = fam.lm_head
    if not arch.tie_embeddings:
        b.add(f"{head}.weight", (arch.head_vocab or vocab, width), "lm_head")
        if arch.lm_head_bias:
            b.add(f"{head}.bias", (vocab,), "bias")
    if fam.extras is not None:
        EXTRAS[fam.extras].model(b, arch, fam)
    # MTP layers: a full decoder layer (attention kind of a global layer, the MoE/dense MLP of the last layer)
    # plus the projection that joins the embedding and the hidden state
    if arch.mtp_layers:
        last = arch.layers[-1]
        mtp = fam.mtp
        global_layer = next((s for s in reversed(arch.layers) if s.attention != AttentionKind.LINEAR), last)
        template = arch.mtp_layer or global_layer
        # an MTP layer runs a sparse-attention indexer of its own where the model has any (GLM-5.2's checkpoint
        # stores one for model.layers.78 although its last decoder layer reuses the previous layer's choice)
        indexer = next((s.indexer for s in arch.layers if s.indexer is not None), None)
        for k in range(arch.mtp_layers):
            idx = arch.n_layers + k
            spec = template.model_copy(
                update={
                    "index": idx,
                    "mlp": last.mlp,
                    "moe": last.moe,
                    "intermediate": last.intermediate,
                    "indexer": indexer,
                }
            )
            p = mtp.layer.format(idx=idx, k=k)
            _decoder_layer(b, arch, fam, spec, p, "mtp")
            # the joining projection stays unquantised in FP8 checkpoints (DeepSeek-V3 stores it in BF16)
            # (DeepSeek-V4 splits it in two: e_proj over the embedding, h_proj over the hidden state)
            joins = [(name, h) for name in mtp.split_proj] if mtp.split_proj else [(mtp.proj, 2 * h)]
            for proj, width in joins:
                b.linear(proj.format(p=p), h, width, "mtp_proj", idx, "mtp")
            b.norm(mtp.embed_norm.format(p=p), h, idx, "mtp", False)
            b.norm(mtp.hidden_norm.format(p=p), h, idx, "mtp", False)
            b.norm(mtp.final_norm.format(p=p), h, idx, "mtp", False)
            if arch.mtp_own_embeddings:
                b.add(f"{p}.embed_tokens.weight", (vocab, h), "embedding", idx, "mtp")
                b.add(f"{p}.shared_head.head.weight", (vocab, h), "lm_head", idx, "mtp")
    if arch.vision is not None:
        vision_tower(b, arch.vision)
    return tuple(b.tensors)


@dataclass(frozen=True, slots=True)
class ParamCounts:
    text: int
    active: int
    mtp: int
    vision: int
    embeddings: int

    @property
    def checkpoint(self) -> int:
        return self.text + self.mtp + self.vision


def count_params(tensors: tuple[Tensor, ...]) -> ParamCounts:
    text = active = mtp = vision = emb = 0
    for t in tensors:
        n = t.numel
        if t.part == "text":
            text += n
            active += round(n * t.active)
            if t.role in {"embedding", "lm_head"}:
                emb += n
        elif t.part == "mtp":
            mtp += n
        elif t.part == "vision":
            vision += n
    return ParamCounts(text=text, active=active, mtp=mtp, vision=vision, embeddings=emb)


__all__ = ["ParamCounts", "Tensor", "build_inventory", "count_params"]
