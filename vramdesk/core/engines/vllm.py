"""vLLM: the profile run, the KV pool inside gpu_memory_utilization, tensor / pipeline parallel shards, and
vLLM's KV rule (paged KV, hybrid allocator windows, MLA latent)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import constants as K
from ..architecture import Architecture, AttentionKind, RecurrentState
from ..fit import BUDGET_LABEL
from ..gpu import GIB
from ..kv import KvPlan, plan_kv
from ..kv_layers import KvOptions, pad
from ..memo import derived
from ..messages import Explanation, Message, Text, join, later
from ..result import Component, EngineInfo, Phase
from ..scenario import InferenceWorkload, VllmOptions
from .base import Context, Engine, EngineRun, max_layer_transient, torch_context, weights_component
from .vllm_moe import fused_moe_transient, mxfp4_backend, mxfp4_padding
from .vllm_versions import RULES, VllmRules, sampler_bytes_per_logit, sampler_kind

TP_HEADS = Message("vllm.tp.heads", "vLLM: tensor parallel {tp} does not divide the {heads} attention heads")
TP_KV_HEADS = Message(
    "vllm.tp.kv_heads", "vLLM: tensor parallel {tp} and the {kv_heads} KV heads: one must divide the other"
)
PROFILE = Message(
    "vllm.profile_activations",
    "vLLM profiles one step of max_num_batched_tokens {batched}: {layer} (/ TP {tp}), plus fp32 logits and sampler "
    "buffers for max_num_seqs {seqs} x vocab {vocab}",
)
PROFILE_MOE = Message(
    "vllm.profile_activations.moe",
    "vLLM profiles one step of max_num_batched_tokens {batched}: {layer} (one GPU's), plus fp32 logits and sampler "
    "buffers for max_num_seqs {seqs} x vocab {vocab}",
)
PROFILE_SAMPLER = Message(
    "vllm.profile_activations.sampler",
    "vLLM {version} profiles one step of max_num_batched_tokens {batched} ({layer}; {forward:.2f} GiB with the "
    "step's hidden states), then samples {seqs} dummy requests with top-k and top-p over the vocabulary of {vocab}: "
    "{how}, {per} B per logit, {sampler:.2f} GiB with the hidden states; the peak is the larger of the two",
)
SAMPLER_SORT = Message(
    "vllm.sampler.sort",
    "the logits ({c} B each), their fp32 copy, the sorted values and int64 indices and torch's sort buffers",
)
SAMPLER_TRITON = Message(
    "vllm.sampler.triton",
    "the logits ({c} B each), their fp32 copy (masked in place by the Triton top-k/top-p kernel), the fp32 "
    "probabilities and the exponential noise",
)
CUDA_GRAPHS = Message(
    "vllm.cuda_graphs", "CUDA-graph capture pool (enforce_eager=False); vLLM budgets it inside gpu_memory_utilization"
)
CUDA_GRAPHS_AFTER = Message(
    "vllm.cuda_graphs.after_pool",
    "CUDA-graph capture pool (enforce_eager=False): vLLM {version} captures the graphs after it has sized the KV "
    "pool, so they take the memory gpu_memory_utilization leaves, not the pool's",
)
NON_TORCH = Message(
    "vllm.non_torch", "CUDA context, cuBLAS/NCCL handles (vLLM counts it inside gpu_memory_utilization)"
)
NON_TORCH_TP = Message(
    "vllm.non_torch.tp",
    "CUDA context, cuBLAS/NCCL handles and custom all-reduce buffers (vLLM counts it inside gpu_memory_utilization)",
)
NON_TORCH_INCREASE = Message(
    "vllm.non_torch.increase",
    "cuBLAS/NCCL handles and the other non-torch memory the profile run adds, inside gpu_memory_utilization (the "
    "CUDA context is counted apart: vLLM {version} measures from a snapshot taken after it exists)",
)
NON_TORCH_INCREASE_TP = Message(
    "vllm.non_torch.increase.tp",
    "cuBLAS/NCCL handles, custom all-reduce buffers and the other non-torch memory the profile run adds, inside "
    "gpu_memory_utilization (the CUDA context is counted apart: vLLM {version} measures from a snapshot taken after "
    "it exists)",
)
POOL_GRAPHS_AFTER = Message(
    "vllm.kv_pool.graphs_after",
    "gpu_memory_utilization {utilization} x {memory:.2f} GiB = {pool:.2f} GiB, minus weights, profile activations "
    "and non-torch memory (the CUDA graphs come later, outside it); holds {capacity:,} tokens at {per_token:,.0f} "
    "B/token (every layer counted, as vLLM reports it); your {batch} x {seq_len} tokens need {need:.2f} GiB: {plan}",
)
POOL = Message(
    "vllm.kv_pool",
    "gpu_memory_utilization {utilization} x {memory:.2f} GiB = {pool:.2f} GiB, minus weights, profile activations, "
    "graphs and non-torch memory; holds {capacity:,} tokens at {per_token:,.0f} B/token (every layer counted, as vLLM "
    "reports it); your {batch} x {seq_len} tokens need {need:.2f} GiB: {plan}",
)
POOL_TOO_SMALL = Message(
    "vllm.kv_pool.too_small",
    "vLLM: the KV pool ({pool:.2f} GiB) is smaller than {batch} sequences of {seq_len} tokens need ({need:.2f} GiB); "
    "vLLM will queue requests or refuse max_model_len {seq_len}",
)
NO_POOL = Message(
    "vllm.kv.no_gpu",
    "paged KV for {batch} x {seq_len} tokens in {block}-token blocks: {plan}; no GPU chosen, so no pool size: this is "
    "the minimum the requests need",
)
CHOOSE_GPU = Message(
    "vllm.choose_gpu",
    "vLLM pre-allocates gpu_memory_utilization x the GPU's memory: choose a GPU to see the pool",
)
SHARD = Message("vllm.weights.shard", "tensor parallel {tp} x pipeline parallel {pp}: one GPU's shard")
RESERVED = Message("vllm.reserved", "vLLM allocates its KV pool in one piece: reserved = allocated")
#: vLLM's start-up check (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory): no memory left for the KV
#: cache at all, or less than one request of max_model_len needs
NO_CACHE_ROOM = Message(
    "vllm.start.no_cache_room",
    'vLLM would not start ("No available memory for the cache blocks"): weights, profile activations, graphs and '
    "non-torch memory take {fixed:.2f} GiB of the {pool:.2f} GiB gpu_memory_utilization {utilization} gives, "
    "{available:.2f} GiB left for the KV cache; one request of max_model_len {seq_len} tokens needs {need:.2f} GiB",
)
NO_CACHE_ROOM_GRAPHS_AFTER = Message(
    "vllm.start.no_cache_room.graphs_after",
    'vLLM would not start ("No available memory for the cache blocks"): weights, profile activations and non-torch '
    "memory take {fixed:.2f} GiB of the {pool:.2f} GiB gpu_memory_utilization {utilization} gives, "
    "{available:.2f} GiB left for the KV cache; one request of max_model_len {seq_len} tokens needs {need:.2f} GiB",
)
#: gpu_worker.py init_device (vLLM 0.10 on): the memory free when the worker starts, the CUDA context already made,
#: must be at least gpu_memory_utilization x the GPU's memory
INIT_FREE = Message(
    "vllm.start.init_free",
    "vLLM would not start (free memory on the device at start-up is less than the desired GPU memory "
    "utilization): gpu_memory_utilization {utilization} asks for {pool:.2f} GiB of the GPU's {memory:.2f} GiB, and "
    "once the CUDA context ({context:.2f} GiB) exists only {free:.2f} GiB are free",
)
#: the CUDA graphs (and, from vLLM 0.10, the CUDA context) take the memory outside gpu_memory_utilization: capture_model
#: runs after the KV pool is allocated (gpu_worker.py compile_or_warm_up_model)
GRAPHS_OOM = Message(
    "vllm.start.graphs_oom",
    "vLLM would run out of memory capturing the CUDA graphs: the KV pool fills gpu_memory_utilization {utilization} "
    "({pool:.2f} GiB), and the {outside:.2f} GiB that must sit outside it (CUDA graphs {graphs:.2f} GiB, CUDA "
    "context {context:.2f} GiB) is more than the {headroom:.2f} GiB the GPU has left; lower "
    "gpu_memory_utilization or set enforce_eager",
)
ONE_REQUEST = Message(
    "vllm.start.one_request",
    "vLLM would not start: one request of max_model_len {seq_len} tokens (this plan's input + output) needs "
    "{need:.2f} GiB of KV cache, more than the {available:.2f} GiB available (gpu_memory_utilization {utilization}); "
    "that memory holds {max_len:,} tokens",
)
ONE_REQUEST_SET = Message(
    "vllm.start.one_request.set",
    "vLLM would not start: one request of max_model_len {seq_len:,} tokens (--max-model-len) needs {need:.2f} GiB of "
    "KV cache, more than the {available:.2f} GiB available (gpu_memory_utilization {utilization}); that memory holds "
    "{max_len:,} tokens",
)
LONGER_THAN_MAX_LEN = Message(
    "vllm.request_longer_than_max_model_len",
    "this plan's requests of {tokens:,} tokens (input + output) are longer than max_model_len {max_len:,}: vLLM "
    "rejects them",
)
DEFAULT_MAX_LEN = Message(
    "vllm.default_max_model_len",
    "started without --max-model-len, vLLM takes the model's context of {model_len:,} tokens and would not start "
    "(one such request needs {need:.2f} GiB of KV cache, {available:.2f} GiB are left): pass --max-model-len "
    "{seq_len} (at most {max_len:,} fits)",
)
CONCURRENCY = Message(
    "vllm.max_concurrency", "maximum concurrency for {seq_len} tokens per request: {concurrency:.2f} x"
)


def vllm_tp_problem(arch: Architecture, tp: int) -> Text | None:
    """Why vLLM refuses tensor parallel ``tp`` for this model (its config checks), or None: the attention heads
    must split evenly, and the KV heads either split evenly or divide ``tp`` (each rank then keeps a copy)."""
    if tp <= 1 or not arch.layers:
        return None
    layer = arch.layers[0]
    if layer.n_heads % tp:
        return TP_HEADS(tp=tp, heads=layer.n_heads)
    kv = layer.n_kv_heads
    if layer.attention != AttentionKind.MLA and kv and (kv % tp if kv >= tp else tp % kv):
        return TP_KV_HEADS(tp=tp, kv_heads=kv)
    return None


def vllm_kv_share(arch: Architecture, tp: int) -> float:
    """The fraction of a layer's KV one tensor-parallel rank holds: 1/tp while the KV heads split, else one head
    (vLLM replicates KV heads when there are fewer than ranks); MLA's latent is whole on every rank. Kept per
    model and tensor-parallel size."""
    return derived(arch, ("vLLM KV share", tp), lambda: _kv_share(arch, tp))


def _kv_share(arch: Architecture, tp: int) -> float:
    shares = [
        max(1, layer.n_kv_heads // tp) / layer.n_kv_heads
        for layer in arch.layers
        if layer.attention != AttentionKind.MLA and layer.n_kv_heads
    ]
    return max(shares, default=1.0)


def _profile_activations(ctx: Context, batched: int, tp: int, rules: VllmRules) -> Component:
    arch, opts = ctx.arch, ctx.work.vllm
    c = ctx.compute_bytes
    seq_len = ctx.input_len + ctx.work.output_len
    # profile run: one forward of max_num_batched_tokens tokens (split over sequences) + the sampler for
    # max_num_seqs sequences; activations are sharded by TP for the MLP/attention widths
    layer_b, layer_text = max_layer_transient(arch, batched, 1, min(batched, seq_len), c, "flash")
    layer_b = round(layer_b / tp)
    # an MoE layer runs vLLM's fused-MoE kernel: its buffers per rank (not split by TP along the tokens)
    mxfp4 = mxfp4_backend(ctx.gpu) if ctx.weight_kind == "mxfp4" else None
    moe_b, moe_text = fused_moe_transient(arch, batched, tp, c, mxfp4)
    moe = moe_text is not None and moe_b > layer_b
    hidden = batched * arch.hidden * c * 2
    # gpu_model_runner.py profile_run: _dummy_sampler_run samples the last position of min(max_num_seqs,
    # max_num_batched_tokens) dummy requests after the forward's activations are freed; the step's hidden states stay
    seqs = min(opts.max_num_seqs, batched)
    kind = sampler_kind(rules, seqs)
    if kind != "light":
        forward = (moe_b if moe else layer_b) + hidden
        per = sampler_bytes_per_logit(kind, c)
        sampler = seqs * arch.vocab * per + hidden
        explain: Explanation = PROFILE_SAMPLER.later(
            version=rules.label, batched=batched, layer=moe_text if moe else layer_text, forward=forward / GIB,
            seqs=seqs, vocab=arch.vocab, how=(SAMPLER_SORT if kind == "sort" else SAMPLER_TRITON)(c=c), per=per,
            sampler=sampler / GIB,
        )  # fmt: skip
        return Component(
            name="profile-run activations", bytes=max(forward, sampler), category="activations", explain=explain
        )
    # the releases not read: the fp32 logits twice for max_num_seqs sequences, added to the forward's peak
    rest = opts.max_num_seqs * arch.vocab * 4 * 2 + hidden
    if moe:
        explain = PROFILE_MOE.later(batched=batched, layer=moe_text, seqs=opts.max_num_seqs, vocab=arch.vocab)
        return Component(name="profile-run activations", bytes=moe_b + rest, category="activations", explain=explain)
    explain = PROFILE.later(batched=batched, layer=layer_text, tp=tp, seqs=opts.max_num_seqs, vocab=arch.vocab)
    return Component(name="profile-run activations", bytes=layer_b + rest, category="activations", explain=explain)


def _cuda_graphs(opts: VllmOptions, rules: VllmRules) -> list[Component]:
    if opts.enforce_eager:
        return []
    inside = _graphs_in_pool(opts, rules)
    return [
        Component(
            name="CUDA graphs",
            bytes=K.VLLM_CUDA_GRAPHS,
            category="overhead",
            explain=CUDA_GRAPHS() if inside else CUDA_GRAPHS_AFTER(version=rules.label),
        )
    ]


def _graphs_in_pool(opts: VllmOptions, rules: VllmRules) -> bool:
    """Whether the CUDA graphs' memory comes out of the KV pool: only where vLLM profiles it before sizing the pool
    (0.19 on, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1); every other release captures them after the pool is
    allocated (gpu_worker.py compile_or_warm_up_model; V0: Worker._warm_up_model after initialize_cache)."""
    return rules.can_estimate_graphs and opts.estimate_cudagraphs


def _non_torch(tp: int, context: Component | None, rules: VllmRules) -> Component:
    """The non-torch memory inside gpu_memory_utilization: today's allowance, less the CUDA context where vLLM
    leaves that outside (``context``; its own component then)."""
    non_torch = K.VLLM_NON_TORCH + (K.VLLM_NON_TORCH_TP_EXTRA if tp > 1 else 0)
    if context is None:
        explain = NON_TORCH_TP() if tp > 1 else NON_TORCH()
        return Component(name="non-torch memory", bytes=non_torch, category="overhead", explain=explain)
    explain = (NON_TORCH_INCREASE_TP if tp > 1 else NON_TORCH_INCREASE)(version=rules.label)
    return Component(
        name="non-torch memory", bytes=max(0, non_torch - context.bytes), category="overhead", explain=explain
    )


def _kv_pool(
    ctx: Context,
    plan: KvPlan,
    need_kv: int,
    fixed: int,
    per_tok: float,
    one_request: int,
    model_len: int,
    graphs_after: bool,
) -> tuple[Component, dict[str, Any], list[Text]]:
    """The KV pool gpu_memory_utilization leaves (or, with no GPU chosen, the KV the requests need), the pool's
    answers (the concurrency is vLLM's: for requests of max_model_len, ``model_len``) and its warnings;
    ``graphs_after``: the CUDA graphs are captured after the pool, outside ``fixed``."""
    opts = ctx.work.vllm
    b = ctx.work.batch
    seq_len = ctx.input_len + ctx.work.output_len
    warnings: list[Text] = []
    info_kwargs: dict[str, Any] = {}
    if ctx.gpu is not None:
        pool = int(opts.gpu_memory_utilization * ctx.gpu.memory_bytes)
        kv_pool = max(0, pool - fixed)
        capacity = int(kv_pool // per_tok) if per_tok else None
        per_seq = (need_kv / b) if b else 0
        max_seqs = int(kv_pool // per_seq) if per_seq else opts.max_num_seqs
        # vLLM's "Maximum concurrency for max_model_len tokens per request": the pool over one request's KV
        concurrency = kv_pool / one_request if one_request else None
        info_kwargs = {
            "pool_bytes": pool,
            "kv_capacity_tokens": capacity,
            "max_concurrent_sequences": min(max_seqs, opts.max_num_seqs),
            "max_concurrency": round(concurrency, 4) if concurrency is not None else None,
        }
        explain: Explanation = (POOL_GRAPHS_AFTER if graphs_after else POOL).later(
            utilization=opts.gpu_memory_utilization,
            memory=ctx.gpu.memory_bytes / GIB,
            pool=pool / GIB,
            capacity=capacity,
            per_token=per_tok,
            batch=b,
            seq_len=seq_len,
            need=need_kv / GIB,
            plan=plan.explain,
        )
        if concurrency is not None:
            explain = later(join, "; ", explain, CONCURRENCY.later(seq_len=model_len, concurrency=concurrency))
        kv = Component(name="KV cache pool", bytes=kv_pool, category="pool", explain=explain)
        if need_kv > kv_pool:
            warnings.append(POOL_TOO_SMALL(pool=kv_pool / GIB, batch=b, seq_len=seq_len, need=need_kv / GIB))
    else:
        kv = Component(
            name="KV cache",
            bytes=need_kv,
            category="kv_cache",
            explain=NO_POOL.later(batch=b, seq_len=seq_len, block=opts.block_size, plan=plan.explain),
        )
        warnings.append(CHOOSE_GPU())
    return kv, info_kwargs, warnings


def _weights(ctx: Context, share: float, tp: int, pp: int) -> Component:
    """One GPU's shard of the weights; MXFP4 experts as vLLM's kernel for this GPU pads them."""
    weights = weights_component(ctx, share, None if tp * pp == 1 else SHARD(tp=tp, pp=pp))
    if ctx.weight_kind != "mxfp4":
        return weights
    arch, gpu = ctx.arch, ctx.gpu
    # (keyed on what the padding depends on, the kernel and the GPU's name: a detected GPU is a new object, with its
    # free memory, at every poll)
    key = ("MXFP4 padding", mxfp4_backend(gpu), gpu.name if gpu is not None else None, tp, pp)
    extra, note = derived(arch, key, lambda: mxfp4_padding(arch, gpu, tp, pp))
    if note is None:
        return weights
    return weights.model_copy(update={"bytes": weights.bytes + extra, "explain": join("; ", weights.explain, note)})


def _start_check(
    ctx: Context, fixed: int, one_request: int, per_tok: float, seq_len: int, outside: _Outside
) -> Text | None:
    """Why vLLM would refuse to start, in the order it checks, or None when it starts: the memory free at start-up
    below the budget (``outside``: what sits outside gpu_memory_utilization); the memory left for the KV cache not
    positive, or smaller than one request of max_model_len (``seq_len``) needs (kv_cache_utils.py,
    check_enough_kv_cache_memory); then the graphs captured after the pool not fitting beside it."""
    assert ctx.gpu is not None
    opts = ctx.work.vllm
    memory = ctx.gpu.memory_bytes
    pool = int(opts.gpu_memory_utilization * memory)
    headroom = memory - pool
    if outside.context > headroom:
        return INIT_FREE(
            utilization=opts.gpu_memory_utilization, pool=pool / GIB, memory=memory / GIB,
            context=outside.context / GIB, free=(memory - outside.context) / GIB,
        )  # fmt: skip
    available = pool - fixed
    if available <= 0:
        return (NO_CACHE_ROOM_GRAPHS_AFTER if outside.graphs_after else NO_CACHE_ROOM)(
            fixed=fixed / GIB, pool=pool / GIB, utilization=opts.gpu_memory_utilization,
            available=available / GIB, seq_len=seq_len, need=one_request / GIB,
        )  # fmt: skip
    if one_request > available:
        return (ONE_REQUEST_SET if opts.max_model_len else ONE_REQUEST)(
            seq_len=seq_len, need=one_request / GIB, available=available / GIB,
            utilization=opts.gpu_memory_utilization, max_len=_longest(available, per_tok, opts.block_size),
        )  # fmt: skip
    if outside.graphs and outside.total > headroom:
        return GRAPHS_OOM(
            utilization=opts.gpu_memory_utilization, pool=pool / GIB, outside=outside.total / GIB,
            graphs=outside.graphs / GIB, context=outside.context / GIB, headroom=headroom / GIB,
        )  # fmt: skip
    return None


@dataclass(frozen=True)
class _Outside:
    """What vLLM needs beside gpu_memory_utilization's budget on one GPU: the CUDA graphs captured after the pool
    (0 where they come out of it, or with enforce_eager) and the CUDA context where the profile does not count it."""

    graphs: int
    context: int
    #: the CUDA graphs are captured after the pool is sized (their memory is not in the pool's ``fixed``)
    graphs_after: bool

    @property
    def total(self) -> int:
        return self.graphs + self.context


def _longest(available: int, per_tok: float, block_size: int) -> int:
    """The longest request ``available`` bytes hold, in whole KV pages (vLLM's "estimated maximum model length")."""
    return int(available // per_tok) // block_size * block_size if per_tok else 0


def _length_warnings(
    ctx: Context, fixed: int, per_tok: float, seq_len: int, one_kv: Callable[[int], int]
) -> list[Text]:
    """A plan longer than the max_model_len it sets; and, when it sets none, vLLM's own default (the model's
    context) that would not start where this plan's length would."""
    opts, arch = ctx.work.vllm, ctx.arch
    if opts.max_model_len:
        return [LONGER_THAN_MAX_LEN(tokens=seq_len, max_len=opts.max_model_len)] if seq_len > opts.max_model_len else []
    model_len = arch.max_position or 0
    if ctx.gpu is None or model_len <= seq_len:
        return []
    available = int(opts.gpu_memory_utilization * ctx.gpu.memory_bytes) - fixed
    need = one_kv(model_len)
    if available <= 0 or need <= available:
        return []  # (already refused at this plan's length, or the default starts too)
    fits = _longest(available, per_tok, opts.block_size)
    return [
        DEFAULT_MAX_LEN(
            model_len=model_len,
            need=need / GIB,
            available=available / GIB,
            seq_len=seq_len,
            max_len=min(fits, model_len),
        )
    ]


def vllm_run(ctx: Context) -> EngineRun:
    arch, work = ctx.arch, ctx.work
    opts = work.vllm
    c = ctx.compute_bytes
    tp = max(1, ctx.tp)
    pp = max(1, ctx.pp)
    b, s_in, s_out = work.batch, ctx.input_len, work.output_len
    seq_len = s_in + s_out
    batched = opts.max_num_batched_tokens or max(8192, 0)
    warnings: list[Text] = []
    # tensor parallel shards every layer; pipeline parallel gives each stage 1/pp of the layers
    w_share = 1.0 / (tp * pp)
    weights = _weights(ctx, w_share, tp, pp)
    rules = RULES[opts.version]
    activations = _profile_activations(ctx, batched, tp, rules)
    act = activations.bytes
    graphs = _cuda_graphs(opts, rules)
    kv_bits = ctx.kv_bits
    kv_layers = arch.layers
    plan = plan_kv(
        arch,
        ENGINE,
        tokens=seq_len,
        seqs=b,
        kv_bits=kv_bits,
        compute_bytes=c,
        block_size=opts.block_size,
        batched_tokens=batched,
        layers=kv_layers,
    )
    kv_div = 1 / vllm_kv_share(arch, tp) * pp
    need_kv = round((plan.kv_bytes + plan.state_bytes) / kv_div)

    def one_kv(tokens: int) -> int:
        """KV bytes of one request of ``tokens`` tokens on one rank."""
        one = plan_kv(
            arch, ENGINE, tokens=tokens, seqs=1, kv_bits=kv_bits, compute_bytes=c, block_size=opts.block_size,
            batched_tokens=batched, layers=kv_layers,
        )  # fmt: skip
        return round((one.kv_bytes + one.state_bytes) / kv_div)

    model_len = opts.max_model_len or seq_len
    one_request = one_kv(model_len)
    context = torch_context(ctx.gpu) if rules.context_outside_budget else None
    non_torch_c = _non_torch(tp, context, rules)
    graph_bytes = sum(g.bytes for g in graphs)
    in_pool = _graphs_in_pool(opts, rules)
    outside = _Outside(
        graphs=0 if in_pool else graph_bytes,
        context=context.bytes if context is not None else 0,
        graphs_after=not in_pool,
    )
    fixed = weights.bytes + act + non_torch_c.bytes + (graph_bytes if in_pool else 0)
    per_tok = plan.bytes_per_token_all_layers / kv_div
    kv, info_kwargs, pool_warnings = _kv_pool(
        ctx, plan, need_kv, fixed, per_tok, one_request, model_len, graphs_after=not in_pool
    )
    warnings.extend(pool_warnings)
    refusal = _start_check(ctx, fixed, one_request, per_tok, model_len, outside) if ctx.gpu is not None else None
    if refusal is None:
        warnings.extend(_length_warnings(ctx, fixed, per_tok, seq_len, one_kv))
    serving = [weights, activations, *graphs, kv]
    phases = [
        Phase(name="load", components=(weights,)),
        Phase(name="profile", components=(weights, activations)),
        Phase(name="serving", components=tuple(serving)),
    ]
    info = EngineInfo(
        engine="vllm",
        kv_bytes_per_token=per_tok,
        state_bytes_per_sequence=plan.state_bytes_per_sequence,
        **info_kwargs,
    )
    return EngineRun(
        phases=phases,
        device_extra=[non_torch_c] if context is None else [non_torch_c, context],
        reserved_slack=0,
        reserved_explain=RESERVED(),
        host_bytes=0,
        info=info,
        warnings=warnings,
        gpu_count=tp * pp,
        fit_required=fixed + need_kv,
        fit_budget=info_kwargs.get("pool_bytes"),
        fit_budget_label=BUDGET_LABEL(utilization=opts.gpu_memory_utilization),
        fit_refusal=refusal,
    )


class VllmEngine(Engine):
    """vLLM: paged KV in a pool pre-allocated inside gpu_memory_utilization, tensor and pipeline parallel."""

    name = "vllm"
    display_name = "vLLM"
    # transformers and vLLM load the vision tower of a multimodal checkpoint
    loads_vision = True
    runs_gguf = False
    auto_kv_dtype = None
    # vLLM runs tensor parallel inside a machine and pipeline stages across machines (Ray)
    serves_across_machines = True
    grows_by_tensor_parallel = True
    reads_tp = True
    may_leave_gpus_empty = False
    streams_offloaded_weights = False
    offloads_gpu_layers = False
    has_pool_budget = True
    step_overhead_per_layer_s = 0.0
    form_group = "vllm"
    options_section = "vllm"
    level_labels = ("torch.cuda.max_memory_allocated", "torch.cuda.max_memory_reserved")
    lighter_weights = (("fp8", 1.0, 0.0), ("awq-int4", 3.0, 0.0))
    lighter_kv = (("fp8", 1.0),)
    expands_mla = False

    def full_tokens(self, tokens: int, seqs: int, opts: KvOptions) -> int:
        return pad(tokens, opts.block_size)

    def sliding_tokens(self, window: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        block_size = opts.block_size
        return min(pad(tokens, block_size), pad(window - 1 + opts.batched_tokens, block_size) + block_size)

    def chunked_tokens(self, chunk: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        block_size = opts.block_size
        return min(pad(tokens, block_size), pad(chunk + opts.batched_tokens, block_size))

    def linear_state_bytes(self, linear: RecurrentState, compute_bytes: int) -> int:
        # MambaStateShapeCalculator: conv (conv_dim, conv_kernel - 1) in the model's dtype, the temporal state in
        # mamba_ssm_cache_dtype (MambaStateDtypeCalculator)
        lin = linear
        state_bytes = lin.state_element_bytes(compute_bytes)
        conv_len = lin.conv_kernel - 1
        return conv_len * lin.conv_dim * compute_bytes + lin.recurrent_elements * state_bytes

    def run(self, ctx: Context) -> EngineRun:
        return vllm_run(ctx)

    def tp_problem(self, arch: Architecture, tp: int) -> Text | None:
        return vllm_tp_problem(arch, tp)

    def prefill_chunk(self, work: InferenceWorkload, input_len: int) -> int:
        # chunked prefill: max_num_batched_tokens per step
        return work.vllm.max_num_batched_tokens or 8192


ENGINE = VllmEngine()
