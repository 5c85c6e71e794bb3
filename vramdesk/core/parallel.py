"""Several GPUs and machines: how model states, layers and weights are divided between them.

Training: :func:`shards` turns the parallelism (data / tensor / pipeline parallel, ZeRO, FSDP strategies, nodes)
into the divisor of each model-state term; :func:`deepspeed_states` counts DeepSpeed's mixed-precision model
states as its own estimators do; :func:`place_states` applies the divisors and CPU offload (per GPU, plus
the host RAM offload needs); :func:`comm_buckets` and :func:`gathered_layers` are the extra buffers; and
:func:`pipeline_stages` gives each pipeline stage its share. Inference: :func:`split_layers` and
:func:`place_weights` are accelerate's ``device_map="auto"`` (balanced, or ``max_memory`` with spill to CPU memory
and disk), also used for llama.cpp's layer split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .gpu import MIB
from .memo import derived
from .messages import Message, join, text
from .result import Phase
from .scenario import Parallelism
from .weight_format import WeightFormat, parse_weight_format

if TYPE_CHECKING:
    from .facts import ModelFacts
    from .weights import WeightBytes


# ------------------------------------------------------------------------------------------ training

#: the shard note: how one GPU's share of the model states is split
PER_GPU = Message("parallel.per_gpu", "per GPU with {gpus} GPUs (dp {dp} x tp {tp} x pp {pp})")
PER_GPU_SHARDED = Message(
    "parallel.per_gpu.sharded", "per GPU with {gpus} GPUs (dp {dp} x tp {tp} x pp {pp}, {sharding})"
)
ZERO_STAGE = Message("parallel.zero", "ZeRO-{zero}")
#: ``{version}``: "2" for FSDP2, "" for FSDP1
FSDP = Message("parallel.fsdp", "FSDP{version} {strategy}")
FSDP_STRATEGIES = {
    "full": text("parallel.fsdp.full", "full"),
    "hybrid": text("parallel.fsdp.hybrid", "hybrid"),
    "shard-grad-op": text("parallel.fsdp.shard_grad_op", "shard-grad-op"),
}


def with_note(explain: str, *clauses: str) -> str:
    """``explain``, then each non-empty clause after "; " (a shard note, the notes of what moved): a
    :func:`~vramdesk.core.messages.join` of them, or ``explain`` itself when every clause is empty."""
    kept = [c for c in clauses if c]
    return join("; ", explain, *kept) if kept else explain


@dataclass(frozen=True)
class Shards:
    """How one training run divides its model states: the divisor of each term, per GPU."""

    n: int
    dp: int
    tp: int
    pp: int
    weights: int
    grads: int
    states: int
    #: parameters sharded at rest (ZeRO-3, FSDP full / hybrid): each layer is gathered when it runs
    gathers: bool
    #: "per GPU with 8 GPUs (dp 8 x tp 1 x pp 1, ZeRO-3)", empty on one GPU (the clause after an explanation's "; ")
    note: str


def shards(par: Parallelism, gpu_count: int, gpus_per_node: int | None = None) -> Shards:
    """Data parallel shards what ZeRO / FSDP say; tensor and pipeline parallel divide everything. FSDP full shard
    splits parameters, gradients and states; shard-grad-op keeps whole parameters (like ZeRO-2); hybrid shards
    inside one machine (``gpus_per_node``) and replicates across machines."""
    n = max(1, gpu_count)
    tp, pp = par.tp, par.pp
    dp = max(1, n // (tp * pp))
    fsdp_dp = dp
    if par.fsdp and par.fsdp_strategy == "hybrid":
        fsdp_dp = max(1, min(dp, (gpus_per_node or n) // (tp * pp)))
    gathers = par.zero == 3 or (par.fsdp and par.fsdp_strategy != "shard-grad-op")
    note: str = ""
    if n > 1:
        # (check_plan refuses ZeRO together with FSDP: at most one of them)
        sharding = (
            ZERO_STAGE(zero=par.zero)
            if par.zero
            else FSDP(
                version="2" if par.fsdp_version == 2 else "",
                strategy=FSDP_STRATEGIES.get(par.fsdp_strategy, par.fsdp_strategy),
            )
            if par.fsdp
            else None
        )
        note = (
            PER_GPU_SHARDED(gpus=n, dp=dp, tp=tp, pp=pp, sharding=sharding)
            if sharding is not None
            else PER_GPU(gpus=n, dp=dp, tp=tp, pp=pp)
        )
    return Shards(
        n=n,
        dp=dp,
        tp=tp,
        pp=pp,
        weights=tp * pp * (fsdp_dp if par.fsdp and gathers else dp if gathers else 1),
        grads=tp * pp * (fsdp_dp if par.fsdp else dp if par.zero >= 2 else 1),
        states=tp * pp * (fsdp_dp if par.fsdp else dp if par.zero >= 1 else 1),
        gathers=gathers,
        note=note,
    )


@dataclass(frozen=True)
class ModelStates:
    """Whole-model bytes of a run's model states (before sharding), with what each is."""

    weights: float
    grads: float
    states: float
    temp: float
    weights_text: str
    states_text: str
    temp_text: str
    #: False where DeepSpeed's ZeRO-2 estimator keeps the 16-bit gradients whole on every GPU
    grads_sharded: bool = True


#: DeepSpeed ZeRO-1/2 step() (stage_1_and_2.py, 2023 and current alike): flatten(averaged_gradients).to(fp32)
#: builds a flat 16-bit copy of the gradient partition while the partition buffer is still referenced
DEEPSPEED_FLAT_TEXT = text(
    "parallel.deepspeed.flat_copy",
    "DeepSpeed ZeRO-1/2 step: the 16-bit gradient partition flattened into one copy (2 B/param) before its fp32 "
    "upcast; both are freed before Adam runs",
)
#: ZeRO-3's step (and DeepSpeed's Adam on LoRA under ZeRO-3)
DEEPSPEED_FUSED_TEXT = text("parallel.deepspeed.fused_adam", "DeepSpeed's fused Adam step: no step temporaries")
DEEPSPEED_WEIGHTS = Message(
    "parallel.deepspeed.weights", "{params:,} parameters x 2 B (DeepSpeed's 16-bit working copy)"
)
DEEPSPEED_CLIENT_STATES = Message(
    "parallel.deepspeed.client_states",
    "DeepSpeed ZeRO-{zero}: fp32 master (4 B/param) and fp32 gradient partition (4 B/param) + {optimizer} on the "
    "fp32 partition, sharded",
)
DEEPSPEED_CLIENT_STATES_ZERO3 = Message(
    "parallel.deepspeed.client_states.zero3",
    "DeepSpeed ZeRO-{zero}: fp32 master (4 B/param) + {optimizer} on the fp32 partition, sharded",
)
DEEPSPEED_CLIENT_TEMP = Message(
    "parallel.deepspeed.client_temp",
    "the larger of {step} and DeepSpeed's flattened 16-bit gradient partition (2 B/param), freed before the "
    "optimizer runs",
)
DEEPSPEED_STATES_ZERO3 = text(
    "parallel.deepspeed.states.zero3", "DeepSpeed ZeRO-3: fp32 master + moments (12 B/param) of 18 B/param sharded"
)
DEEPSPEED_STATES = text(
    "parallel.deepspeed.states",
    "DeepSpeed mixed precision: fp32 master, moments and gradient partition (16 B/param), sharded",
)


def deepspeed_states(params: int, zero: int, client: tuple[int, int, str, str] | None = None) -> ModelStates:
    """DeepSpeed's mixed precision (fp16 and bf16 alike) for a full fine-tune with Adam: 16-bit working parameters
    and gradients, fp32 master weights, two fp32 moments and an fp32 gradient partition. ZeRO-1 keeps 2 B of
    parameters and 2 B of gradients per parameter on every GPU and shards 16 B; ZeRO-2 shards the 16-bit gradients
    too (stage_1_and_2.py, reduce_ipg_grads: once a bucket is reduced, the gradients of parameters outside the
    rank's partition are cleared and its own are copied into the partition-sized grads_in_partition buffer), as
    the ZeRO paper's 2 + (2 + 12) / N B counts it; DeepSpeed's estimate_zero2_model_states_mem_needs keeps 4 B
    whole, an upper bound the code does not reach. ZeRO-3 shards all 18 B. The step's temporary is ZeRO-1/2's
    flattened copy of the 16-bit gradient partition, made just before its fp32 upcast (see DEEPSPEED_FLAT_TEXT).

    ``client``: an optimizer other than Adam, which DeepSpeed wraps (HF Trainer passes its own): its state and
    step-temporary bytes for ``params`` fp32 parameters (and their explanations). DeepSpeed still keeps the 16-bit
    module, the fp32 master partition and (ZeRO-1/2) the fp32 gradient partition; the client's states replace
    Adam's two moments, and its step runs after the flattened copy is freed."""
    three = zero == 3
    if client is not None:
        opt_states, opt_temp, opt_text, temp_text = client
        return ModelStates(
            weights=2 * params,
            grads=(4 if three else 2) * params,
            states=(4 if three else 8) * params + opt_states,
            temp=opt_temp if three else max(2 * params, opt_temp),
            weights_text=DEEPSPEED_WEIGHTS(params=params),
            states_text=(DEEPSPEED_CLIENT_STATES_ZERO3 if three else DEEPSPEED_CLIENT_STATES)(
                zero=zero, optimizer=opt_text
            ),
            temp_text=temp_text if three else DEEPSPEED_CLIENT_TEMP(step=temp_text),
            grads_sharded=zero >= 2,
        )
    return ModelStates(
        weights=2 * params,
        grads=(4 if three else 2) * params,
        states=(12 if three else 16) * params,
        temp=0 if three else 2 * params,
        weights_text=DEEPSPEED_WEIGHTS(params=params),
        states_text=DEEPSPEED_STATES_ZERO3 if three else DEEPSPEED_STATES,
        temp_text=DEEPSPEED_FUSED_TEXT if three else DEEPSPEED_FLAT_TEXT,
        grads_sharded=zero >= 2,
    )


OFFLOADED_STATES = text("parallel.offloaded.states", "optimizer states (and the step) on the CPU")
OFFLOADED_PARAMS = text("parallel.offloaded.params", "parameters on the CPU, gathered layer by layer")
GATHERED = text(
    "parallel.gathered", "ZeRO-3 / FSDP / parameter offload: the current and the prefetched layer, unsharded"
)
GATHERED_ROOT = text(
    "parallel.gathered.fsdp_root",
    "FSDP keeps its root unit (embeddings, final norm, lm_head) unsharded from forward to backward",
)
BUCKET_DEEPSPEED = Message(
    "parallel.buckets.deepspeed", "DeepSpeed gradient bucket: reduce_bucket_size {size:,} elements"
)
BUCKETS_DEEPSPEED_OVERLAP = Message(
    "parallel.buckets.deepspeed.overlap",
    "DeepSpeed gradient buckets: reduce_bucket_size {size:,} elements x 2 (overlap_comm)",
)
BUCKETS_DDP = text("parallel.buckets.ddp", "DDP / FSDP gradient buckets (25 MB each, two in flight)")
STAGE = Message(
    "parallel.pipeline_stage",
    "pipeline stage {stage}: 1/{pp} of the layers, {in_flight} micro-batch(es) in flight (1F1B)",
)


@dataclass
class PerGpu:
    """Model states on one GPU, the host RAM offload takes, and what moved."""

    weights: float
    grads: float
    states: float
    temp: float
    host: float
    #: what the gradients were divided by (a fresh gradient on this GPU is divided alike)
    grads_div: int = 1
    #: what moved or stays beside the weights (the weights' explanation lists them, joined with ", ")
    notes: list[str] = field(default_factory=list)


def place_states(m: ModelStates, sh: Shards, par: Parallelism) -> PerGpu:
    """Divide the model states per GPU and move what ``par.offload`` sends to CPU memory."""
    grads_div = sh.grads if m.grads_sharded else sh.tp * sh.pp
    out = PerGpu(
        weights=m.weights / sh.weights,
        grads=m.grads / grads_div,
        states=m.states / sh.states,
        temp=m.temp / sh.states,
        host=0.0,
        grads_div=grads_div,
    )
    if par.offload in ("optimizer", "params"):
        out.host += m.states / sh.states
        if par.zero or par.fsdp:
            # the reduced gradients go straight to the CPU, where the step runs: DeepSpeed's estimators count no
            # gradients on the GPU with offload (ZeRO-1/2: 2 B/param of 16-bit weights only). ZeRO-1/2's fp32
            # gradient partition is already among the states; ZeRO-3's and FSDP's sharded gradients move too
            if par.fsdp or (par.zero == 3 and m.grads_sharded):
                out.host += out.grads
            out.grads = 0
        out.states = out.temp = 0
        out.notes.append(OFFLOADED_STATES)
    if par.offload == "params":
        out.host += m.weights / sh.weights
        out.weights = 0
        out.notes.append(OFFLOADED_PARAMS)
    return out


def gathered_layers(
    facts: ModelFacts, sh: Shards, par: Parallelism, fmt: WeightFormat | None = None
) -> tuple[int, str]:
    """Sharded or offloaded parameters: the current and the prefetched layer, whole, in ``fmt`` (16 bits unless a
    frozen base is stored quantised: FSDP-QLoRA gathers the packed 4-bit storage). FSDP's FULL_SHARD (and
    hybrid) also keeps the root unit (embeddings, final norm, lm_head: outside the wrapped decoder layers)
    unsharded from the end of forward to its backward (torch FSDP does not reshard the root after forward)."""
    if not (sh.gathers or par.offload == "params"):
        return 0, ""
    layout = facts.weights(fmt or parse_weight_format("bf16"), frozenset({"text"}))
    layers = 2 * max(layout.per_layer.values(), default=0)
    if par.fsdp and sh.gathers and sh.weights > 1:
        root = layout.embedding + layout.head + layout.other
        layers += round(root * (1 - 1 / sh.weights))
        return layers, join("; ", GATHERED, GATHERED_ROOT)
    return layers, GATHERED


def comm_buckets(par: Parallelism, sh: Shards, precision: str) -> tuple[int, str]:
    """Gradient communication buffers: DeepSpeed's contiguous bucket(s) of reduce_bucket_size elements (a second
    with overlap_comm; on one GPU too), or DDP / FSDP's 25 MB buckets with several GPUs."""
    if par.zero:
        size = par.zero_bucket or 500_000_000
        overlap = par.zero_overlap_comm if par.zero_overlap_comm is not None else par.zero == 3
        count = 2 if overlap and par.zero < 3 else 1
        explain = (BUCKETS_DEEPSPEED_OVERLAP if count > 1 else BUCKET_DEEPSPEED)(size=size)
        return size * (4 if precision == "fp32" else 2) * count, explain
    if sh.n > 1:
        return (2 if not par.fsdp else 4) * 25 * MIB, BUCKETS_DDP
    return 0, ""


def pipeline_stages(facts: ModelFacts, phases: list[Phase], pp: int, micro_batches: int) -> list[list[Phase]]:
    """Per stage (1F1B): stage s holds its share of the layers (stage 0 also the embedding, the last one the
    lm_head) and min(pp - s, micro-batches) micro-batches of activations in flight; only the last stage
    computes the logits and the loss. The uniform phases describe 1/pp of the parameters and stage 0's
    activations; this scales them per stage."""
    layout = facts.weights(parse_weight_format("bf16"), frozenset({"text"}))
    n_layers = facts.arch.n_layers
    total = max(1, layout.total)
    shares = []
    for s, layers in enumerate(split_layers(n_layers, pp)):
        part = sum(layout.per_layer.get(i, 0) for i in layers)
        part += (layout.embedding + layout.other) if s == 0 else 0
        part += layout.head if s == pp - 1 else 0
        shares.append(part / total)
    out = []
    for s, share in enumerate(shares):
        in_flight = min(pp - s, max(1, micro_batches))
        scaled = []
        for phase in phases:
            comps = []
            for c in phase.components:
                if c.category in ("weights", "gradients", "optimizer") and c.name != "gathered layer parameters":
                    comps.append(c.model_copy(update={"bytes": round(c.bytes * share * pp)}))
                elif c.name == "autocast weight cache":
                    # autocast caches 16-bit copies of the stage's own weights (the component counts all of them)
                    comps.append(c.model_copy(update={"bytes": round(c.bytes * share)}))
                elif c.name == "activations":
                    value = round(c.bytes * in_flight / pp)
                    comps.append(
                        c.model_copy(
                            update={
                                "bytes": value,
                                "explain": join("; ", c.explain, STAGE(stage=s, pp=pp, in_flight=in_flight)),
                            }
                        )
                    )
                elif c.category == "logits" or c.name == "lm_head 16-bit copy":
                    if s == pp - 1:
                        comps.append(c)
                else:
                    comps.append(c)
            scaled.append(Phase(name=phase.name, components=tuple(comps)))
        out.append(scaled)
    return out


# ------------------------------------------------------------------------------------------ inference


def split_layers(n_layers: int, n_gpus: int) -> list[range]:
    """Contiguous layer ranges per GPU, as accelerate's balanced ``device_map="auto"`` assigns them."""
    n_gpus = max(1, min(n_gpus, n_layers))
    base, extra = divmod(n_layers, n_gpus)
    out, start = [], 0
    for g in range(n_gpus):
        size = base + (1 if g < extra else 0)
        out.append(range(start, start + size))
        start += size
    return out


@dataclass(frozen=True)
class Slot:
    """What one GPU holds in a device_map: decoder layers, and whether the embedding and the lm_head."""

    layers: tuple[int, ...]
    embed: bool
    head: bool


@dataclass(frozen=True)
class Placement:
    """accelerate's device_map: the GPUs' slots, then what spilled to CPU memory and to disk."""

    gpus: tuple[Slot, ...]
    cpu: Slot = Slot((), False, False)
    disk: Slot = Slot((), False, False)
    cpu_bytes: int = 0
    disk_bytes: int = 0
    #: the largest module stored off the GPUs (moved to the first GPU for its forward)
    largest_offloaded: int = 0

    @property
    def spilled(self) -> bool:
        return bool(self.cpu.layers or self.disk.layers or self.cpu.embed or self.cpu.head or self.disk.head)


def _balanced(n_layers: int, n_gpus: int) -> Placement:
    """Every GPU its share of the layers, the embedding on the first, the head on the last."""
    ranges = split_layers(n_layers, n_gpus)
    return Placement(tuple(Slot(tuple(r), g == 0, g == len(ranges) - 1) for g, r in enumerate(ranges)))


def place_weights(w: WeightBytes, n_layers: int, n_gpus: int, cap: int | None, cpu_cap: int | None) -> Placement:
    """Layers over GPUs as accelerate's ``device_map="auto"`` places them: a balanced split when every GPU's
    share fits its ``max_memory`` (``cap``), else GPUs filled in order, then CPU memory (up to ``cpu_cap``),
    then disk; when anything spills, the first GPU keeps room for the largest layer, which offloaded layers
    borrow for their forward (accelerate's main-device reserve). Without a cap the balanced split is kept with the
    priced weights."""
    if cap is None:
        return derived(w, ("balanced placement", n_layers, n_gpus), lambda: _balanced(n_layers, n_gpus))
    embed_b = w.embedding + w.other
    ranges = split_layers(n_layers, n_gpus)

    def share(g: int, r: range) -> int:
        return (
            sum(w.per_layer.get(i, 0) for i in r) + (embed_b if g == 0 else 0) + (w.head if g == len(ranges) - 1 else 0)
        )

    if all(share(g, r) <= cap for g, r in enumerate(ranges)):
        return _balanced(n_layers, n_gpus)
    modules: list[tuple[int | str, int]] = [
        ("embed", embed_b),
        *((i, w.per_layer.get(i, 0)) for i in range(n_layers)),
        ("head", w.head),
    ]
    largest = max([w.per_layer.get(i, 0) for i in range(n_layers)] + [w.head])

    def fill(reserve: int) -> Placement:
        where: dict[int | str, str | int] = {}
        used = [0] * n_gpus
        g = 0
        cpu_used = disk_used = 0
        off = False
        for key, size in modules:
            while not off and g < n_gpus and used[g] + size > cap - (reserve if g == 0 else 0):
                g += 1
            if not off and g < n_gpus:
                where[key] = g
                used[g] += size
                continue
            off = True
            if cpu_cap is None or (cpu_used + size <= cpu_cap and disk_used == 0):
                where[key], cpu_used = "cpu", cpu_used + size
            else:
                where[key], disk_used = "disk", disk_used + size

        def slot(dev: str | int) -> Slot:
            return Slot(
                tuple(i for i in range(n_layers) if where[i] == dev), where["embed"] == dev, where["head"] == dev
            )

        gpus = tuple(slot(d) for d in range(n_gpus) if any(v == d for v in where.values()))
        offloaded = [size for key, size in modules if where[key] in ("cpu", "disk")]
        return Placement(
            gpus or (Slot((), False, False),),
            slot("cpu"),
            slot("disk"),
            cpu_used,
            disk_used,
            max(offloaded, default=0),
        )

    first = fill(0)
    return fill(largest) if first.spilled else first
