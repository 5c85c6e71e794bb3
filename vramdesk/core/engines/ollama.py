"""Ollama: a named profile over the llama.cpp engine. Its runner is llama.cpp (or Ollama's own ggml engine, which
allocates the same tensors), so the weights, the KV cache and the compute buffer are llama.cpp's; what Ollama adds
are its defaults, by release (``BANDS``), and its own fit of the layers to the GPUs' free memory.

Facts read in Ollama's source (github.com/ollama/ollama, at the tags named):

* num_ctx: OLLAMA_CONTEXT_LENGTH's default is 2048 up to v0.6.6 and 4096 from v0.6.7 (envconfig/config.go); from
  v0.15.5 it is 0 and the server picks it from the GPUs' total memory less OLLAMA_GPU_OVERHEAD: 262144 from 47 GiB,
  32768 from 23 GiB, else 4096 (server/routes.go, v0.15.6). From v0.9.3 a num_ctx above the model's trained
  context is cut to it (llm/server.go NewLlamaServer); num_batch (512, api/types.go) is at most num_ctx.
* Parallel slots: the runner gets ``KvSize = num_ctx x num_parallel`` (llm/server.go); OLLAMA_NUM_PARALLEL is 0 =
  auto from v0.2 to v0.9: the scheduler tries defaultParallel (4 up to v0.6.6, 2 from v0.6.7) and keeps it when the
  whole model then fits, else 1 (server/sched.go, numParallelToTry); from v0.10 the default is 1.
* Flash attention: off unless OLLAMA_FLASH_ATTENTION=1 up to v0.12.3; from v0.12.4 (BoolWithDefault) the model
  decides, on where it supports it: K and V heads of one size, not gemma2 (fs/ggml/ggml.go SupportsFlashAttention).
  (Ollama's own engine turns it on for a list of architectures, its llama.cpp runner gets "auto" and llama.cpp
  turns it on where the GPU and the model allow it; both are read here as "on where the model supports it".)
* OLLAMA_KV_CACHE_TYPE f16 / q8_0 / q4_0; a quantized type needs flash attention, else Ollama warns and keeps f16
  (llm/server.go).
* The layer fit: each GPU's free memory less a minimum of 457 MiB for CUDA (discover/gpu.go cudaMinimumMemory up to
  v0.12; ml/device.go MinimumMemory from v0.13), less OLLAMA_GPU_OVERHEAD, less the graph (the compute buffer);
  layers go on from the last one while they fit, the output layer only when every repeating layer does. Up to
  v0.12.11 (llm/memory.go EstimateGPULayers) one more layer's size (block 0's weights and KV) is held back first;
  from v0.13 (llm/server.go buildLayout / greedyFit) the layers fill what the runner measured. What does not fit
  runs on the CPU, and the log says "offloaded N/M layers to GPU" (M = the blocks + the output layer).
  Several GPUs: the offloaded layers are divided evenly (the llama.cpp engine's layer split) and every GPU must hold
  its share, where Ollama splits them by each GPU's free memory: the same on equal GPUs.

Not modelled: Ollama from v0.30 starts llama.cpp's own llama-server and leaves the layers to its --fit
(LLAMA_ARG_FIT, llm/llama_server.go); the bands stop at v0.24.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..architecture import Architecture
from ..dtype_names import kv_bits
from ..engine_options import LlamaCppOptions, OllamaOptions
from ..gpu import GIB, MIB
from ..messages import Message, Text, join
from ..result import Component, Phase
from ..scenario import InferenceWorkload
from . import llamacpp
from .base import Context, EngineRun

#: the VRAM tiers of the default context from v0.15.5: (total GiB at least, num_ctx)
VRAM_TIERS = ((47, 262144), (23, 32768), (0, 4096))
#: what Ollama sets aside on every CUDA GPU before it fits layers
MINIMUM_MEMORY = 457 * MIB
#: api/types.go DefaultOptions: NumBatch
NUM_BATCH = 512


@dataclass(frozen=True, slots=True)
class Band:
    """What one span of Ollama releases does by default."""

    #: OLLAMA_CONTEXT_LENGTH's default; None = from the GPUs' memory (VRAM_TIERS)
    num_ctx: int | None
    #: the parallel slots tried when OLLAMA_NUM_PARALLEL is unset (kept when the model then fits, else 1)
    parallel: int
    #: flash attention is on by default where the model supports it
    flash: bool
    #: the fit holds one more layer's size back (llm/memory.go)
    holds_a_layer: bool
    #: a num_ctx above the model's trained context is cut to it
    caps_context: bool = True


BANDS: dict[str, Band] = {
    "0.2-0.6.6": Band(2048, 4, False, True, caps_context=False),
    "0.6.7-0.9.2": Band(4096, 2, False, True, caps_context=False),
    "0.9.3-0.9.6": Band(4096, 2, False, True),
    "0.10-0.12.3": Band(4096, 1, False, True),
    "0.12.4-0.12.11": Band(4096, 1, True, True),
    "0.13-0.15.4": Band(4096, 1, True, False),
    "0.15.5-0.24": Band(None, 1, True, False),
}

OFFLOADED = Message("ollama.offloaded", "offloaded {layers}/{total} layers to GPU")
FIT_BASIS = Message(
    "ollama.fit",
    "Ollama's fit: {free:.2f} GiB free less {minimum} MiB minimum, {overhead} MiB OLLAMA_GPU_OVERHEAD and the "
    "graph{held}",
)
HELD_LAYER = Message("ollama.fit.held_layer", ", one layer held back ({mib:,.0f} MiB)")
NUM_GPU = Message("ollama.num_gpu", "num_gpu {layers}")
CONTEXT = Message("ollama.context", "num_ctx {num_ctx} x num_parallel {parallel} (Ollama {version}{why})")
CUT_TO_TRAINED = Message("ollama.context.trained", ": the model's trained context")
VRAM_DEFAULT = Message("ollama.context.vram", ": the default for {gib:.0f} GiB of GPU memory")
PARTIAL = Message(
    "ollama.partial",
    "Ollama: the model does not fit in the GPU's free memory less its reserve; offloaded {layers}/{total} layers "
    "to GPU, the rest run on the CPU",
)
TOO_LONG = Message(
    "ollama.request.too_long",
    "Ollama: a request of {tokens:,} tokens is longer than num_ctx {num_ctx:,}: Ollama truncates the prompt or "
    "shifts the context to fit it",
)
QUEUED = Message(
    "ollama.queued",
    "Ollama serves {parallel} requests at once (num_parallel); {waiting} of the {batch} wait in its queue",
)
KV_NEEDS_FLASH = Message(
    "ollama.kv.needs_flash",
    "OLLAMA_KV_CACHE_TYPE {kv}: a quantized KV cache needs flash attention, so Ollama keeps f16",
)
KV_SETTING = Message(
    "ollama.kv.setting",
    "Ollama sets the KV cache type with OLLAMA_KV_CACHE_TYPE (kv_cache_type: {kv}); the KV cache setting {dtype} "
    "is not read",
)
KV_TYPE = Message("ollama.kv_type", "OLLAMA_KV_CACHE_TYPE {kv}")


@dataclass(frozen=True, slots=True)
class Settings:
    """What the Ollama server runs with: its context, slots, batch, flash attention and KV type."""

    num_ctx: int
    parallel: int
    #: the parallel slots are Ollama's choice (tried, kept only when the model then fits)
    parallel_auto: bool
    num_batch: int
    flash: bool
    kv_type: str
    why_ctx: Text


def supports_flash(arch: Architecture) -> bool:
    """fs/ggml/ggml.go SupportsFlashAttention: K and V heads of one size, not gemma2."""
    return arch.model_type != "gemma2" and all(
        layer.head_dim == layer.v_head_dim for layer in arch.layers if layer.n_heads
    )


def _num_ctx(opts: OllamaOptions, band: Band, ctx: Context) -> tuple[int, Text]:
    why = Text("")
    if opts.num_ctx is not None:
        n = max(4, opts.num_ctx)  # (server/sched.go GetRunner: at least 4)
    elif band.num_ctx is not None:
        n = band.num_ctx
    else:
        total = 0 if ctx.gpu is None else (ctx.gpu.memory_bytes - opts.gpu_overhead_mib * MIB) * ctx.gpu_count
        n = next(n for gib, n in VRAM_TIERS if total >= gib * GIB)
        why = VRAM_DEFAULT(gib=max(0, total) / GIB)
    trained = ctx.arch.max_position
    if band.caps_context and trained and n > trained:
        n, why = trained, CUT_TO_TRAINED()
    return n, why


def settings(ctx: Context) -> tuple[Settings, list[Text]]:
    """Ollama's settings for ``ctx`` (its release's defaults where the plan leaves them), and what it warns of."""
    opts = ctx.work.ollama
    band = BANDS[opts.ollama_version]
    num_ctx, why = _num_ctx(opts, band, ctx)
    flash = {"on": True, "off": False, "auto": band.flash}[opts.flash_attention] and supports_flash(ctx.arch)
    warnings: list[Text] = []
    kv = opts.kv_cache_type
    if kv != "f16" and not flash:
        warnings.append(KV_NEEDS_FLASH(kv=kv))
        kv = "f16"
    if ctx.work.kv_dtype != "auto":
        warnings.append(KV_SETTING(kv=opts.kv_cache_type, dtype=ctx.work.kv_dtype))
    parallel = opts.num_parallel or band.parallel
    auto = opts.num_parallel is None and band.parallel > 1
    s = Settings(num_ctx, parallel, auto, min(NUM_BATCH, num_ctx), flash, kv, why)
    return s, warnings


def llama_context(ctx: Context, s: Settings, parallel: int, n_gpu_layers: int) -> Context:
    """The llama.cpp run Ollama starts: -c num_ctx x parallel over ``parallel`` sequences, -b / -ub num_batch,
    -ngl, flash attention and the KV type."""
    opts = LlamaCppOptions(n_gpu_layers=n_gpu_layers, n_ubatch=s.num_batch, flash_attn=s.flash)
    work = ctx.work.model_copy(update={"batch": parallel, "input_len": s.num_ctx, "output_len": 0, "llamacpp": opts})
    return replace(ctx, work=work, input_len=s.num_ctx, kv_bits=kv_bits(s.kv_type), kv_label=KV_TYPE(kv=s.kv_type))


def _gpu_phases(run: EngineRun) -> list[list[Phase]]:
    return run.per_gpu_phases or [run.phases]


def _held_layer(ctx: Context) -> int:
    """llm/memory.go: block 0's weights and its KV, held back before the layers are placed."""
    first = ctx.arch.layers[0]
    return ctx.weights.per_layer.get(first.index, 0) + llamacpp.kv_for(ctx, (first,)).kv_bytes


def _graph(phases: list[Phase]) -> int:
    """The compute buffer one GPU's run holds (ggml's graph; 0 without one)."""
    return max((c.bytes for p in phases for c in p.components if c.name == "compute buffer"), default=0)


def _fits(ctx: Context, run: EngineRun, opts: OllamaOptions, held: int, graph: int | None = None) -> bool:
    """Every GPU's layers and graph fit in its free memory less Ollama's minimum, OLLAMA_GPU_OVERHEAD and ``held``.
    ``graph``: the graph Ollama reserves on every GPU whatever the layers (None: each run's own compute buffer)."""
    if ctx.gpu is None:
        return True
    room = _free(ctx) - MINIMUM_MEMORY - opts.gpu_overhead_mib * MIB - held
    return all(
        max(p.allocated_bytes for p in phases) - (0 if graph is None else _graph(phases) - graph) <= room
        for phases in _gpu_phases(run)
    )


def fitted_layers(ctx: Context, s: Settings, parallel: int) -> tuple[int, EngineRun]:
    """The most layers (the output layer counted last) Ollama's fit puts on the GPUs with ``parallel`` slots, and
    that run. Fewer layers never need more memory, so the search halves the range."""
    opts = ctx.work.ollama
    total = ctx.arch.n_layers + 1
    held = _held(ctx, s, parallel)

    def run(n: int) -> EngineRun:
        return llamacpp.llamacpp_run(llama_context(ctx, s, parallel, n))

    best = run(total)
    # up to v0.12.11 (llm/memory.go EstimateGPULayers) every placement is checked against
    # max(graphPartialOffload, graphFullOffload), the larger of the full run's graph and a partial one's
    graph = None
    if BANDS[opts.ollama_version].holds_a_layer:
        graph = max(_graph(_gpu_phases(best)[0]), _graph(_gpu_phases(run(ctx.arch.n_layers))[0]))
    if _fits(ctx, best, opts, held, graph):
        return total, best
    lo, hi = 0, ctx.arch.n_layers  # the output layer goes only with every repeating layer
    best = run(lo)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        r = run(mid)
        if _fits(ctx, r, opts, held, graph):
            lo, best = mid, r
        else:
            hi = mid - 1
    return lo, best


def _plan(ctx: Context, s: Settings) -> tuple[int, int, EngineRun]:
    """The slots, the layers on the GPU and the llama.cpp run Ollama ends up with: the release's parallel slots
    are kept when the model then fits (all its layers, or num_gpu of them), else one slot."""
    total = ctx.arch.n_layers + 1
    given = ctx.work.ollama.num_gpu
    want = total if given is None else min(given, total)
    parallel = s.parallel
    if s.parallel_auto:
        layers, run = fitted_layers(ctx, s, parallel)
        if layers >= want and given is None:
            return parallel, layers, run
        if layers < want:
            parallel = 1
    if given is not None:
        return parallel, want, llamacpp.llamacpp_run(llama_context(ctx, s, parallel, want))
    layers, run = fitted_layers(ctx, s, parallel)
    return parallel, layers, run


def _free(ctx: Context) -> int:
    """The memory Ollama sees free on a GPU (the detected free figure, else the total; 0 without a GPU)."""
    gpu = ctx.gpu
    if gpu is None:
        return 0
    return gpu.memory_bytes if gpu.free_bytes is None else min(gpu.memory_bytes, gpu.free_bytes)


def _held(ctx: Context, s: Settings, parallel: int) -> int:
    if not BANDS[ctx.work.ollama.ollama_version].holds_a_layer:
        return 0
    return _held_layer(llama_context(ctx, s, parallel, ctx.arch.n_layers + 1))


def ollama_run(ctx: Context) -> EngineRun:
    opts = ctx.work.ollama
    s, warnings = settings(ctx)
    parallel, layers, run = _plan(ctx, s)
    total = ctx.arch.n_layers + 1
    offloaded = OFFLOADED(layers=layers, total=total)
    if opts.num_gpu is not None:
        how: Text = NUM_GPU(layers=opts.num_gpu)
    else:
        held = _held(ctx, s, parallel)
        how = FIT_BASIS(
            free=_free(ctx) / GIB,
            minimum=MINIMUM_MEMORY // MIB,
            overhead=opts.gpu_overhead_mib,
            held=HELD_LAYER(mib=held / MIB) if held else Text(""),
        )
        if layers < total and ctx.gpu is not None:
            warnings.append(PARTIAL(layers=layers, total=total))
    context = CONTEXT(num_ctx=s.num_ctx, parallel=parallel, version=opts.ollama_version, why=s.why_ctx)
    tokens = ctx.input_len + ctx.work.output_len
    if tokens > s.num_ctx:
        warnings.append(TOO_LONG(tokens=tokens, num_ctx=s.num_ctx))
    if ctx.work.batch > parallel:
        warnings.append(QUEUED(parallel=parallel, waiting=ctx.work.batch - parallel, batch=ctx.work.batch))
    run = _annotated(run, offloaded, how, context)
    run.warnings[:0] = warnings
    return run


def _annotated(run: EngineRun, offloaded: Text, how: Text, context: Text) -> EngineRun:
    """The run with Ollama's words: the weights say how many layers it offloaded and why, the KV cache its
    num_ctx x num_parallel."""

    words = {"weights": (offloaded, how), "KV cache": (context,)}

    def noted(c: Component) -> Component:
        if c.name not in words:
            return c
        return c.model_copy(update={"explain": join("; ", *words[c.name], c.explain)})

    def note(phases: list[Phase]) -> list[Phase]:
        return [p.model_copy(update={"components": tuple(noted(c) for c in p.components)}) for p in phases]

    per_gpu = [note(p) for p in run.per_gpu_phases]
    info = run.info.model_copy(update={"engine": "ollama"})
    return replace(run, phases=per_gpu[0] if per_gpu else note(run.phases), per_gpu_phases=per_gpu, info=info)


class OllamaEngine(llamacpp.LlamacppEngine):
    """Ollama: llama.cpp's numbers (its KV rules and capabilities, inherited) with Ollama's defaults and its own fit
    of the layers to the GPU."""

    name = "ollama"
    display_name = "Ollama"
    # (its own fit chooses the layers: llama.cpp's n_gpu_layers is not an Ollama setting)
    offloads_gpu_layers = False
    form_group = "ollama"
    options_section = "ollama"
    # (OLLAMA_KV_CACHE_TYPE is Ollama's own setting, not the plan's KV dtype)
    lighter_kv = ()

    def run(self, ctx: Context) -> EngineRun:
        return ollama_run(ctx)

    def options_problem(self, arch: Architecture, work: InferenceWorkload) -> Text | None:
        return None  # (llama.cpp's options are not Ollama's)

    def prefill_chunk(self, work: InferenceWorkload, input_len: int) -> int:
        # the prompt is processed num_batch (512) tokens at a time
        return NUM_BATCH


ENGINE = OllamaEngine()
