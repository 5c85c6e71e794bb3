"""SGLang: the static share of the GPU (``mem_fraction_static``) that holds the weights and the KV token pool, the
pool's token capacity (``max_total_num_tokens``) and concurrency, and what SGLang keeps outside that share.

The rules, as SGLang v0.5 (late 2025) states them (sgl-project/sglang, ``python/sglang/srt/``):

- ``server_args.py`` ``ServerArgs._handle_gpu_memory_settings``: ``chunked_prefill_size`` and ``cuda_graph_max_bs``
  by the GPU's memory (nvidia-smi's total, MiB; :data:`_BANDS`). When ``mem_fraction_static`` is not given:
  reserved = 512 MiB + max(chunked_prefill_size, 2048) x 1.5 MiB + cuda_graph_max_bs x 2 MiB + tp x pp / 8 x
  1024 MiB, at least 10 GiB on a GPU of more than 60 GiB, and mem_fraction_static = round((memory - reserved) /
  memory, 3); without a GPU, 0.88.
- ``model_executor/model_runner_kv_cache_mixin.py`` ``profile_max_num_token``: rest = the free memory after loading
  the weights - the free memory before loading x (1 - mem_fraction_static), so the weights and the pool share
  mem_fraction_static x the free memory before loading; ``max_total_num_tokens`` = rest // the cell, the cell
  (``get_cell_size_per_token``) being one token's K + V over this rank's layers: max(1, KV heads // TP) x (head_dim +
  v_head_dim) x the KV dtype's bytes, or MLA's latent (kv_lora_rank + qk_rope_head_dim) x bytes.
  ``init_memory``: the count is rounded down to ``page_size`` (1 by default); "Not enough memory. Please try to
  increase --mem-fraction-static" when it is not positive; ``max_num_reqs`` = min(max(tokens / context_len x 512,
  2048), 4096) rows of the ``req_to_token`` pool, each of context_len + 4 int32 entries.
- Linear-attention (``mambaish``) models: the cell counts the full-attention layers, and ``handle_max_mamba_cache``
  gives the recurrent states rest x ratio / (1 + ratio) (``mamba_full_memory_ratio`` 0.9), one state per slot;
  ``max_num_reqs`` is at most slots // 3 (``calculate_mamba_ratio`` with the radix cache).
- Scheduler: ``max_running_requests`` = min(max_total_num_tokens // 2, the req_to_token pool's rows); a request
  longer than the pool is refused on its own (``max_req_len`` = min(context_len - 1, max_total_num_tokens - 1)).

The free memory before loading is the GPU's (or what a detected GPU has free) less the CUDA context and, with
tensor parallel, NCCL's buffers (vramdesk's constants, not SGLang's). Outside the static share SGLang keeps the
req_to_token pool (exact), the prefill activations (vramdesk's one-layer transient for chunked_prefill_size tokens)
and the CUDA graphs (SGLang's own allowance, cuda_graph_max_bs x 2 MiB: no measurement of it is sourced here).

Not modelled: hybrid sliding-window pools (``swa_full_tokens_ratio``; sliding layers count as full ones, as in
SGLang's pool for models it does not mark hybrid), DP attention, speculative decoding's draft pools, the multimodal
change to the default fraction (``adjust_mem_fraction_for_vlm``) and DeepSeek-V3.2's indexer cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import constants as K
from ..architecture import Architecture, AttentionKind
from ..engine_options import SglangOptions
from ..gpu import GIB, MIB, GpuSpec
from ..kv import KvPlan, plan_kv
from ..kv_layers import KvOptions
from ..messages import Message, Text
from ..result import Component, EngineInfo, Phase
from ..scenario import InferenceWorkload
from .base import Context, EngineRun, max_layer_transient, torch_context, weights_component
from .vllm import VllmEngine, vllm_kv_share

#: (below this many MiB of GPU memory, chunked_prefill_size, cuda_graph_max_bs below TP 4, at TP 4 and more)
_BANDS = (
    (20 * 1024, 2048, 8, 8),  # T4, RTX 4080
    (35 * 1024, 2048, 24, 80),  # A10, RTX 4090 / 5090
    (60 * 1024, 4096, 32, 160),  # A100 40GB, L40
    (90 * 1024, 8192, 256, 512),  # H100, A100 80GB
    (160 * 1024, 8192, 256, 512),  # H20, H200
)
#: larger GPUs (B200, MI300): chunked_prefill_size, cuda_graph_max_bs
_LARGEST = (16384, 512)
#: no GPU known: chunked_prefill_size, cuda_graph_max_bs, mem_fraction_static
_NO_GPU = (4096, 160, 0.88)
#: linear-attention states : KV memory (``mamba_full_memory_ratio``) and request rows per state slot
MAMBA_FULL_MEMORY_RATIO = 0.9
MAMBA_SLOTS_PER_REQUEST = 3

TP_HEADS = Message("sglang.tp.heads", "SGLang: tensor parallel {tp} does not divide the {heads} attention heads")
TP_KV_HEADS = Message(
    "sglang.tp.kv_heads", "SGLang: tensor parallel {tp} and the {kv_heads} KV heads: one must divide the other"
)
FRACTION_AUTO = Message(
    "sglang.fraction.auto",
    "mem_fraction_static {fraction} (SGLang's rule: {memory:,.0f} MiB less {reserved:,.0f} MiB for activations, "
    "CUDA graphs and parallel buffers)",
)
FRACTION_SET = Message("sglang.fraction.set", "mem_fraction_static {fraction}")
POOL = Message(
    "sglang.kv_pool",
    "{fraction} x {before:.2f} GiB free before loading = {static:.2f} GiB for the weights and the pool; holds "
    "{capacity:,} tokens (max_total_num_tokens) at {cell:,.0f} B/token (K + V of every layer, as SGLang counts it); "
    "your {batch} x {seq_len} tokens need {need:.2f} GiB: {plan}",
)
STATES = Message(
    "sglang.mamba_states",
    "SGLang gives the linear-attention states {slots:,} slots (mamba_full_memory_ratio {ratio} : 1 of the pool's "
    "memory), so at most {rows:,} requests run at once",
)
NOT_ENOUGH = Message(
    "sglang.not_enough_memory",
    "SGLang: the weights ({weights:.2f} GiB) leave no room for a KV pool in {fraction} x {before:.2f} GiB; SGLang "
    "stops with 'Not enough memory. Please try to increase --mem-fraction-static'",
)
POOL_TOO_SMALL = Message(
    "sglang.kv_pool.too_small",
    "SGLang: the KV pool ({capacity:,} tokens) holds fewer than {batch} sequences of {seq_len} tokens; SGLang "
    "queues requests, and refuses one longer than the pool",
)
OUTSIDE = Message(
    "sglang.outside.short",
    "SGLang leaves {rest:.2f} GiB outside mem_fraction_static {fraction}; activations, CUDA graphs and the request "
    "table need about {need:.2f} GiB: the graph capture or a long prefill may run out of memory",
)
NO_POOL = Message(
    "sglang.kv.no_gpu",
    "KV for {batch} x {seq_len} tokens: {plan}; no GPU chosen, so no pool size: this is the minimum the requests need",
)
CHOOSE_GPU = Message(
    "sglang.choose_gpu", "SGLang takes mem_fraction_static x the GPU's free memory: choose a GPU to see the pool"
)
REQ_TO_TOKEN = Message(
    "sglang.req_to_token",
    "req_to_token pool: {rows:,} requests x (context {context:,} + 4) int32 (outside mem_fraction_static)",
)
ACTIVATIONS = Message(
    "sglang.activations",
    "prefill of chunked_prefill_size {chunk} tokens: {layer} (/ TP {tp}), plus the hidden states (outside "
    "mem_fraction_static)",
)
CUDA_GRAPHS = Message(
    "sglang.cuda_graphs",
    "CUDA graphs for decode batches up to cuda_graph_max_bs {bs}: SGLang's own allowance, cuda_graph_max_bs x 2 MiB "
    "(outside mem_fraction_static)",
)
NCCL = Message(
    "sglang.nccl", "NCCL communicator buffers of a tensor-parallel rank (0.5-1.6 GiB reported; 768 MiB used)"
)
SHARD = Message("sglang.weights.shard", "tensor parallel {tp} x pipeline parallel {pp}: one GPU's shard")
RESERVED = Message("sglang.reserved", "SGLang allocates its KV pool in one piece when it starts: reserved = allocated")
BUDGET_LABEL = Message("sglang.fit_basis", "within mem_fraction_static {fraction}")


@dataclass(frozen=True)
class MemorySettings:
    """SGLang's memory settings for one run: given, or chosen by its rule."""

    chunked_prefill_size: int
    cuda_graph_max_bs: int
    mem_fraction_static: float
    #: what SGLang's rule set aside (MiB) when it chose the fraction, else None
    reserved_mib: float | None


def memory_settings(opts: SglangOptions, gpu_mib: float | None, tp: int, pp: int) -> MemorySettings:
    """The settings SGLang runs with on a GPU of ``gpu_mib`` MiB (``_handle_gpu_memory_settings``)."""
    if gpu_mib is None:
        chunk, graph_bs, fraction = _NO_GPU
    else:
        band = next((b for b in _BANDS if gpu_mib < b[0]), None)
        chunk, graph_bs = (band[1], band[2] if tp < 4 else band[3]) if band else _LARGEST
        fraction = 0.0
    chunk = opts.chunked_prefill_size or chunk
    graph_bs = opts.cuda_graph_max_bs or graph_bs
    if opts.mem_fraction_static is not None:
        return MemorySettings(chunk, graph_bs, opts.mem_fraction_static, None)
    if gpu_mib is None:
        return MemorySettings(chunk, graph_bs, fraction, None)
    # the constant metadata of the attention backend, the activations of a large prefill, the CUDA graphs and the
    # buffers of a large parallel layout
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return MemorySettings(chunk, graph_bs, round((gpu_mib - reserved) / gpu_mib, 3), reserved)


def sglang_tp_problem(arch: Architecture, tp: int) -> Text | None:
    """Why SGLang refuses tensor parallel ``tp``: the attention heads split evenly, and the KV heads either split
    evenly or divide ``tp`` (each rank then keeps a copy of one)."""
    if tp <= 1 or not arch.layers:
        return None
    layer = arch.layers[0]
    if layer.n_heads % tp:
        return TP_HEADS(tp=tp, heads=layer.n_heads)
    kv = layer.n_kv_heads
    if layer.attention != AttentionKind.MLA and kv and (kv % tp if kv >= tp else tp % kv):
        return TP_KV_HEADS(tp=tp, kv_heads=kv)
    return None


def _free_before_load(gpu: GpuSpec, tp: int) -> tuple[int, list[Component]]:
    """SGLang's ``total_gpu_memory``: what cudaMemGetInfo reports free once the process and NCCL are up."""
    extra = [torch_context(gpu)]
    if tp > 1:
        extra.append(Component(name="NCCL buffers", bytes=K.NCCL_PER_PROCESS, category="overhead", explain=NCCL()))
    seen = gpu.memory_bytes if gpu.free_bytes is None else min(gpu.memory_bytes, gpu.free_bytes)
    return max(0, seen - sum(c.bytes for c in extra)), extra


@dataclass(frozen=True)
class _Pool:
    """The static share and what it holds."""

    static: int
    kv_bytes: int
    #: max_total_num_tokens
    tokens: int
    #: linear-attention state slots (max_mamba_cache_size), None for a model without linear attention
    state_slots: int | None
    #: rows of the req_to_token pool (max_num_reqs)
    rows: int


def _pool(static: int, weights: int, cell: float, state_per_seq: int, context: int) -> _Pool:
    rest = static - weights
    slots: int | None = None
    kv = rest
    if state_per_seq:
        slots = max(0, int(rest * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)) // state_per_seq)
        kv = rest - slots * state_per_seq
    tokens = max(0, int(kv // cell)) if cell else 0
    rows = min(max(int(tokens / context * 512), 2048), 4096)
    if slots is not None:
        rows = min(rows, slots // MAMBA_SLOTS_PER_REQUEST)
    return _Pool(static=static, kv_bytes=max(0, kv), tokens=tokens, state_slots=slots, rows=rows)


def _outside(ctx: Context, settings: MemorySettings, rows: int, context: int, tp: int) -> list[Component]:
    """What SGLang allocates beyond mem_fraction_static: the request table, prefill activations, CUDA graphs."""
    arch = ctx.arch
    chunk = settings.chunked_prefill_size
    layer_b, layer_text = max_layer_transient(arch, chunk, 1, chunk, ctx.compute_bytes, "flash")
    out = [
        Component(
            name="req_to_token pool",
            bytes=rows * (context + 4) * 4,
            category="overhead",
            explain=REQ_TO_TOKEN(rows=rows, context=context),
        ),
        Component(
            name="prefill activations",
            bytes=round(layer_b / tp) + chunk * arch.hidden * ctx.compute_bytes * 2,
            category="activations",
            explain=ACTIVATIONS(chunk=chunk, layer=layer_text, tp=tp),
        ),
    ]
    if not ctx.work.sglang.disable_cuda_graph:
        bs = settings.cuda_graph_max_bs
        out.append(Component(name="CUDA graphs", bytes=bs * 2 * MIB, category="overhead", explain=CUDA_GRAPHS(bs=bs)))
    return out


def _no_gpu_run(ctx: Context, settings: MemorySettings, weights: Component, plan: KvPlan, need_kv: int,
                info: EngineInfo, context: int, tp: int, pp: int) -> EngineRun:  # fmt: skip
    """With no GPU there is no pool: the KV the requests need, and the least request table SGLang keeps."""
    b, seq_len = ctx.work.batch, ctx.input_len + ctx.work.output_len
    kv = Component(
        name="KV cache",
        bytes=need_kv,
        category="kv_cache",
        explain=NO_POOL(batch=b, seq_len=seq_len, plan=plan.explain),
    )
    serving = (weights, kv, *_outside(ctx, settings, 2048, context, tp))
    return EngineRun(
        phases=[Phase(name="load", components=(weights,)), Phase(name="serving", components=serving)],
        device_extra=[torch_context(None)],
        reserved_slack=0,
        reserved_explain=RESERVED(),
        host_bytes=0,
        info=info,
        warnings=[CHOOSE_GPU()],
        gpu_count=tp * pp,
    )


def sglang_run(ctx: Context) -> EngineRun:
    arch, work = ctx.arch, ctx.work
    tp, pp = max(1, ctx.tp), max(1, ctx.pp)
    b, seq_len = work.batch, ctx.input_len + work.output_len
    gpu = ctx.gpu
    settings = memory_settings(work.sglang, gpu.memory_bytes / MIB if gpu else None, tp, pp)
    weights = weights_component(ctx, 1.0 / (tp * pp), None if tp * pp == 1 else SHARD(tp=tp, pp=pp))
    plan = plan_kv(arch, ENGINE, tokens=seq_len, seqs=b, kv_bits=ctx.kv_bits, compute_bytes=ctx.compute_bytes)
    # one rank's share: max(1, KV heads // TP) heads (MLA's latent whole), 1/PP of the layers
    kv_div = 1 / vllm_kv_share(arch, tp) * pp
    need_kv = round((plan.kv_bytes + plan.state_bytes) / kv_div)
    cell = plan.bytes_per_token_all_layers / kv_div
    # the model's context length sizes the request table (SGLang's context_length defaults to it)
    context = max(arch.max_position or 0, seq_len)
    info = EngineInfo(engine="sglang", kv_bytes_per_token=cell, state_bytes_per_sequence=plan.state_bytes_per_sequence)
    if gpu is None:
        return _no_gpu_run(ctx, settings, weights, plan, need_kv, info, context, tp, pp)
    before, extra = _free_before_load(gpu, tp)
    fraction = settings.mem_fraction_static
    pool = _pool(int(fraction * before), weights.bytes, cell, round(plan.state_bytes_per_sequence / pp), context)
    outside = _outside(ctx, settings, pool.rows, context, tp)
    running = min(pool.tokens // 2, pool.rows)
    served = min(pool.tokens // seq_len if seq_len else running, running)
    info = info.model_copy(
        update={"pool_bytes": pool.static, "kv_capacity_tokens": pool.tokens, "max_concurrent_sequences": served}
    )
    how = (
        FRACTION_SET(fraction=fraction)
        if settings.reserved_mib is None
        else FRACTION_AUTO(fraction=fraction, memory=gpu.memory_bytes / MIB, reserved=settings.reserved_mib)
    )
    kv = Component(
        name="KV cache pool",
        bytes=pool.kv_bytes,
        category="pool",
        explain=POOL(
            fraction=how,
            before=before / GIB,
            static=pool.static / GIB,
            capacity=pool.tokens,
            cell=cell,
            batch=b,
            seq_len=seq_len,
            need=need_kv / GIB,
            plan=plan.explain,
        ),
    )
    return EngineRun(
        phases=[Phase(name="load", components=(weights,)), Phase(name="serving", components=(weights, kv, *outside))],
        device_extra=extra,
        reserved_slack=0,
        reserved_explain=RESERVED(),
        host_bytes=0,
        info=info,
        warnings=_warnings(ctx, fraction, pool, before, weights.bytes, outside),
        gpu_count=tp * pp,
        # the requests' KV must fit what the weights leave of the static share, as vLLM's must fit its pool
        fit_required=weights.bytes + need_kv,
        fit_budget=pool.static,
        fit_budget_label=BUDGET_LABEL(fraction=fraction),
    )


def _warnings(
    ctx: Context, fraction: float, pool: _Pool, before: int, weights: int, outside: list[Component]
) -> list[Text]:
    seq_len = ctx.input_len + ctx.work.output_len
    out: list[Text] = []
    if pool.tokens <= 0:
        out.append(NOT_ENOUGH(weights=weights / GIB, fraction=fraction, before=before / GIB))
    elif pool.tokens < ctx.work.batch * seq_len:
        out.append(POOL_TOO_SMALL(capacity=pool.tokens, batch=ctx.work.batch, seq_len=seq_len))
    if pool.state_slots is not None:
        out.append(STATES(slots=pool.state_slots, ratio=MAMBA_FULL_MEMORY_RATIO, rows=pool.rows))
    rest = before - pool.static
    need = sum(c.bytes for c in outside)
    if need > rest:
        out.append(OUTSIDE(rest=rest / GIB, fraction=fraction, need=need / GIB))
    return out


class SglangEngine(VllmEngine):
    """SGLang: a token pool inside mem_fraction_static x the free memory, tensor and pipeline parallel. It shares
    vLLM's capabilities and its linear-attention state; its pool counts tokens one by one (page_size 1) and keeps
    every token of every attention layer."""

    name = "sglang"
    display_name = "SGLang"
    # the solver's pool changes are vLLM's own settings (gpu_memory_utilization, max_num_batched_tokens)
    has_pool_budget = False
    form_group = "sglang"
    options_section = "sglang"

    def full_tokens(self, tokens: int, seqs: int, opts: KvOptions) -> int:
        return tokens

    def sliding_tokens(self, window: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        return tokens

    def chunked_tokens(self, chunk: int, tokens: int, seqs: int, opts: KvOptions) -> int:
        return tokens

    def run(self, ctx: Context) -> EngineRun:
        return sglang_run(ctx)

    def tp_problem(self, arch: Architecture, tp: int) -> Text | None:
        return sglang_tp_problem(arch, tp)

    def prefill_chunk(self, work: InferenceWorkload, input_len: int) -> int:
        # chunked prefill: chunked_prefill_size per step (8,192 on an 80-160 GiB GPU when not given)
        return work.sglang.chunked_prefill_size or 8192


ENGINE = SglangEngine()
