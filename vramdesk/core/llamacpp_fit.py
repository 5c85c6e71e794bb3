"""llama.cpp's --fit (common/fit.cpp, ``common_params_fit_impl``): before the model loads, llama.cpp prices the plan
against every GPU's free memory and, when one of them would keep less than the --fit-target margin (1024 MiB by
default), places fewer layers on the GPUs. Its order of decisions, followed here:

1. the plan stays as it is when every GPU keeps its margin (and the estimate says nothing of --fit);
2. the context shrinks only when -c was left unset (a vramdesk plan always sets it: never);
3. it gives up when the user set -ngl or buffer overrides (--n-cpu-moe), or splits several GPUs by rows;
4. it fills whole layers back to front, the last GPU first, each GPU the most layers that keep its margin
   (the method of false position between a low and a high layer count, as llama.cpp searches);
5. MoE models: step 4 counts layers whose routed experts stay in host memory ("dense-only" layers; the first layer
   of the last GPU's share stays whole); when every such layer fits with room to spare, the dense-only layers at
   the back become whole layers at the front, GPU by GPU from the first, so that the experts left in host memory
   are those of the last layers of each GPU's share.

Not followed: the last refinement of step 5, which puts part of one more layer's FFN on a GPU (its up or gate
tensors; vramdesk prices a layer's experts whole). The candidates are priced by the llama.cpp engine (``price``:
``llamacpp_run`` with a :class:`Layout`); a GPU's use is its allocated bytes, its free memory the detected free
figure (else its total) less the process's CUDA context, which llama.cpp's own free figure already excludes.
The layer counts are those of the llama.cpp that has --fit: the last ngl of the n_layer + 1 layers, the output layer
offloaded first (src/llama-model.cpp ``i_gpu_start = n_layer + 1 - n_gpu_layers``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from . import constants as K
from .engines.base import Context, EngineRun
from .gpu import MIB, GpuSpec
from .messages import Message, Text, join
from .result import Phase

CHOSEN_ONE = Message("llamacpp.fit.chosen.one", "--fit: {layers} of {total} layers on CUDA0, margin {margin:,} MiB")
CHOSEN_SEVERAL = Message(
    "llamacpp.fit.chosen.several", "--fit: {layers} of {total} layers ({devices}), margin {margin:,} MiB per GPU"
)
DEVICE = Message("llamacpp.fit.device", "CUDA{index} {layers}")
GAVE_UP_NGL = Message(
    "llamacpp.fit.gave_up.ngl",
    "--fit changes nothing: the GPU layers are set (--n-gpu-layers {layers}), and the plan leaves a GPU less than the "
    "{margin:,} MiB margin",
)
GAVE_UP_CPU_MOE = Message(
    "llamacpp.fit.gave_up.cpu_moe",
    "--fit changes nothing: --n-cpu-moe {layers} sets buffer overrides, and the plan leaves a GPU less than the "
    "{margin:,} MiB margin",
)
GAVE_UP_ROW = Message(
    "llamacpp.fit.gave_up.row",
    "--fit changes nothing: it does not place layers for --split-mode row, and the plan leaves a GPU less than the "
    "{margin:,} MiB margin",
)


@dataclass(frozen=True, slots=True)
class Layout:
    """Where --fit puts the model: each GPU's layer count in order (llama.cpp's tensor split; the output layer
    counts as the last layer of the last GPU's share) and the layers whose routed experts stay in host memory.
    None: the engine's own choice (-ngl and the even split; --n-cpu-moe's layers)."""

    counts: tuple[int, ...] | None = None
    host_experts: frozenset[int] | None = None


#: the llama.cpp run of a context with a layout (``engines.llamacpp.llamacpp_run``)
Price = Callable[[Context, Layout | None], EngineRun]


@dataclass(slots=True)
class _Ngl:
    """One GPU's share (llama.cpp's ``ngl_t``): ``n_layer`` layers, of which the last ``n_part`` keep their routed
    experts in host memory."""

    n_layer: int = 0
    n_part: int = 0

    @property
    def n_full(self) -> int:
        return self.n_layer - self.n_part


def _copy(ngls: list[_Ngl]) -> list[_Ngl]:
    return [_Ngl(n.n_layer, n.n_part) for n in ngls]


def free_for_fit(gpu: GpuSpec) -> int:
    """The memory llama.cpp sees free on a GPU: the detected free figure (else the total) less its CUDA context."""
    seen = gpu.memory_bytes if gpu.free_bytes is None else max(0, min(gpu.memory_bytes, gpu.free_bytes))
    return seen - K.LLAMACPP_CONTEXT


def used_per_gpu(run: EngineRun, nd: int) -> list[int]:
    """What each of ``nd`` GPUs holds at its peak (allocated bytes; 0 for a GPU the run leaves empty)."""
    phases = run.per_gpu_phases or [run.phases]
    used = [max(p.allocated_bytes for p in ph) for ph in phases]
    return (used + [0] * nd)[:nd]


def layout_of(ngls: list[_Ngl], n_layers: int) -> Layout:
    """llama.cpp's ``set_ngl_tensor_split_tbo``: the offloaded layers are the last of the n_layers + 1 (the output
    layer, index n_layers, last); each GPU's share holds its whole layers first, then its dense-only ones."""
    il0 = n_layers + 1 - sum(n.n_layer for n in ngls)
    host: set[int] = set()
    for n in ngls:
        il0 += n.n_full
        host.update(range(il0, min(il0 + n.n_part, n_layers)))
        il0 += n.n_part
    return Layout(counts=tuple(n.n_layer for n in ngls), host_experts=frozenset(host))


class _Search:
    """The candidates' prices for one plan (each a llama.cpp run) and the GPUs' targets."""

    def __init__(self, ctx: Context, price: Price, nd: int, targets: list[int]) -> None:
        self.ctx, self.price, self.nd, self.targets = ctx, price, nd, targets
        self.n_layers = ctx.arch.n_layers

    def mem(self, ngls: list[_Ngl]) -> list[int]:
        return used_per_gpu(self.price(self.ctx, layout_of(ngls, self.n_layers)), self.nd)

    def step(self, delta: int, low: int, high: int, target: int) -> int:
        """llama.cpp's false-position step between ``low`` and ``high`` bytes ``delta`` layers apart."""
        headroom = high - low
        # (llama.cpp: delta - 1 for a degenerate step, or for a negative one, which wraps around as uint32)
        step = delta * (target - low) // headroom if headroom > 0 and target >= low else delta - 1
        return min(max(step, 1), delta - 1)


def fill_back_to_front(s: _Search, moe: bool) -> tuple[list[_Ngl], list[int]]:
    """Step 4: each GPU from the last gets the most layers (MoE: dense-only layers) that keep its margin."""
    nd, total = s.nd, s.n_layers + 1
    ngls = [_Ngl() for _ in range(nd)]
    mem = s.mem(ngls)
    for d in reversed(range(nd)):
        high = _copy(ngls)
        high[d].n_layer = total - sum(n.n_layer for n in ngls[d + 1 :])
        if moe:
            high[d].n_part = high[d].n_layer if d < nd - 1 else high[d].n_layer - 1
        if high[d].n_layer == 0:
            continue
        mem_high = s.mem(high)
        if mem_high[d] <= s.targets[d]:
            ngls, mem = high, mem_high
            continue
        delta = high[d].n_layer - ngls[d].n_layer
        while delta > 1:
            step = s.step(delta, mem[d], mem_high[d], s.targets[d])
            test = _copy(ngls)
            test[d].n_layer += step
            if moe:  # (the last GPU's first layer is kept whole)
                test[d].n_part += step - 1 if d == nd - 1 and test[d].n_part == 0 else step
            mem_test = s.mem(test)
            if mem_test[d] <= s.targets[d]:
                ngls, mem = test, mem_test
            else:
                high, mem_high = test, mem_test
            delta = high[d].n_layer - ngls[d].n_layer
    return ngls, mem


def _converted(ngls: list[_Ngl], d: int, start: int, step: int) -> tuple[list[_Ngl], int]:
    """``step`` dense-only layers from GPU ``start`` on made whole layers of GPU ``d``; the new first GPU with
    dense-only layers."""
    test, done = _copy(ngls), 0
    while start < len(test):
        n = min(step - done, test[start].n_part)
        test[start].n_layer -= n
        test[start].n_part -= n
        test[d].n_layer += n
        done += n
        if test[start].n_part > 0:
            break
        start += 1
    return test, start


def whole_front_to_back(s: _Search, ngls: list[_Ngl], mem: list[int]) -> list[_Ngl]:
    """Step 5: dense-only layers at the back become whole layers at the front, each GPU from the first taking the
    most that keep its margin."""
    nd = s.nd
    start = nd
    for d in reversed(range(nd)):
        if ngls[d].n_layer == 0:
            break
        start = d
    d = 0
    while d <= start < nd:
        high = _copy(ngls)
        for j in range(start, nd):
            move = high[j].n_layer if j < nd - 1 else high[j].n_layer - 1
            high[d].n_layer += move
            high[j].n_layer -= move
            high[j].n_part = 0
        start_high, mem_high = nd - 1, s.mem(high)
        if mem_high[d] <= s.targets[d]:
            ngls, mem, start = high, mem_high, start_high
        else:
            delta = high[d].n_full - ngls[d].n_full
            while delta > 1:
                test, start_test = _converted(ngls, d, start, s.step(delta, mem[d], mem_high[d], s.targets[d]))
                mem_test = s.mem(test)
                if mem_test[d] <= s.targets[d]:
                    ngls, mem, start = test, mem_test, start_test
                else:
                    high, mem_high, start_high = test, mem_test, start_test
                delta = high[d].n_full - ngls[d].n_full
        d += 1
    return ngls


def _gave_up(ctx: Context, nd: int) -> Text | None:
    """Step 3: what makes llama.cpp's fit give up (n_ctx is always set, so step 2 never changes it)."""
    opts = ctx.work.llamacpp
    if opts.n_gpu_layers is not None:
        return GAVE_UP_NGL(layers=opts.n_gpu_layers, margin=opts.fit_target_mib)
    if nd > 1 and opts.split_mode == "row":
        return GAVE_UP_ROW(margin=opts.fit_target_mib)
    if opts.n_cpu_moe:
        return GAVE_UP_CPU_MOE(layers=opts.n_cpu_moe, margin=opts.fit_target_mib)
    return None


def _noted(run: EngineRun, note: Text) -> EngineRun:
    """The run with what --fit did said first in its weights' explanation (on every GPU)."""

    def phases(ps: list[Phase]) -> list[Phase]:
        return [
            p.model_copy(
                update={
                    "components": tuple(
                        c.model_copy(update={"explain": join("; ", note, c.explain)}) if c.name == "weights" else c
                        for c in p.components
                    )
                }
            )
            for p in ps
        ]

    per_gpu = [phases(p) for p in run.per_gpu_phases]
    return replace(run, phases=per_gpu[0] if per_gpu else phases(run.phases), per_gpu_phases=per_gpu)


def _chosen(ngls: list[_Ngl], n_layers: int, margin: int) -> Text:
    layers, total = sum(n.n_layer for n in ngls), n_layers + 1
    if len(ngls) == 1:
        return CHOSEN_ONE(layers=layers, total=total, margin=margin)
    devices = join(", ", *(DEVICE(index=i, layers=n.n_layer) for i, n in enumerate(ngls)))
    return CHOSEN_SEVERAL(layers=layers, total=total, devices=devices, margin=margin)


def fitted_run(ctx: Context, price: Price) -> EngineRun:
    """The llama.cpp run of ``ctx`` as --fit leaves it (``price``: the engine's run of a layout); the plan itself
    when --fit is off or there is no GPU to fit to."""
    opts = ctx.work.llamacpp
    run = price(ctx, None)
    if not opts.fit or ctx.gpu is None:
        return run
    nd = max(1, ctx.gpu_count)
    targets = [free_for_fit(ctx.gpu) - opts.fit_target_mib * MIB] * nd
    if all(u <= t for u, t in zip(used_per_gpu(run, nd), targets, strict=True)):
        return run  # (step 1: no change, and no word of it, so that the estimate is the plan's own)
    gave_up = _gave_up(ctx, nd)
    if gave_up is not None:
        run.warnings.append(gave_up)
        return run
    s = _Search(ctx, price, nd, targets)
    moe = ctx.arch.is_moe  # (llama.cpp: hp_nex > 0)
    ngls, mem = fill_back_to_front(s, moe)
    if moe and _surplus_with_experts_in_host(s):
        ngls = whole_front_to_back(s, ngls, mem)
    return _noted(price(ctx, layout_of(ngls, s.n_layers)), _chosen(ngls, s.n_layers, opts.fit_target_mib))


def _surplus_with_experts_in_host(s: _Search) -> bool:
    """Whether every layer on the GPUs with all routed experts in host memory leaves room beyond the margins in
    total (llama.cpp's ``global_surplus_cpu_moe``, which step 5 needs)."""
    every = Layout(host_experts=frozenset(range(s.n_layers)))
    used = used_per_gpu(s.price(s.ctx, every), s.nd)
    return sum(t - u for t, u in zip(s.targets, used, strict=True)) > 0
