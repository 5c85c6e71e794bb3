"""Fine-tuning as phases: forward -> loss head and start of backward -> backward -> optimizer step.

The model follows the tensor-level trace of real Hugging Face code (``shared/research/trace-oracle.md``
§3-4), not the "sum everything" rule:

* gradients do not exist at the activation peak (the loss head at the start of backward);
* PyTorch's default ``foreach`` AdamW allocates one more state-sized copy of every parameter in the step
  (10 B/param in pure bf16, 20 with AMP), so the optimizer step is often the peak and gradient
  checkpointing then does not lower it;
* activations follow the per-token rule of HF Llama-style layers (16h + 4 q + 4 kv + 8 I + 4 heads bytes per
  token and layer in bf16), LoRA's fp32 input copies, top-k token copies in MoE layers, eager attention's
  s² terms, and the loss head's 12 x b x s x V bytes of fp32 log-softmax and gradients.

Peak = max(W + S + A + loss head, W + S + G, W + G + S + T_optimizer) on one GPU; sharding (ZeRO, FSDP,
TP, PP) and offload divide the terms per GPU (:mod:`vramdesk.core.parallel`).

The parts live in sibling modules: which plans can run at all (:mod:`~vramdesk.core.training_plan`), what trains
and how the model is stored for it (:mod:`~vramdesk.core.training_state`), the activations and the loss head
(:mod:`~vramdesk.core.training_activations`) and the step's short-lived tensors
(:mod:`~vramdesk.core.training_transients`); this module puts them per GPU and into phases.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from . import training_text as T
from .attention_impl import effective_attention
from .gpu import GIB, MIB
from .inventory import Tensor
from .lora import lora_parameters
from .messages import join
from .optimizers import IN_BACKWARD, optimizer_bytes
from .optimizers.blockwise import block_optimizer_bytes, block_refusal
from .optimizers.in_backward import IN_BACKWARD_SHARDED, ONE_GRADIENT, in_backward_step
from .parallel import (
    DEEPSPEED_FLAT_TEXT,
    DEEPSPEED_FUSED_TEXT,
    ModelStates,
    PerGpu,
    Shards,
    comm_buckets,
    deepspeed_states,
    gathered_layers,
    pipeline_stages,
    place_states,
    shards,
    with_note,
)
from .peft.common import frozen_base
from .result import Component, Phase
from .scenario import FinetuneWorkload, Parallelism
from .trainers import profile
from .training_activations import GPTQ_KEPT, Activations, LossHead, activations, loss_head
from .training_plan import TrainingError, check_plan
from .training_state import Trained, precision, what_trains
from .training_transients import comp, largest_cached_block, matmul_transients, step_new_segments
from .weight_format import WeightFormat

if TYPE_CHECKING:
    from .architecture import Architecture
    from .facts import ModelFacts


@dataclass
class TrainingRun:
    phases: list[Phase]
    trainable: int
    host_bytes: int
    warnings: list[str]
    gpus: int
    #: pipeline parallel: phases of each stage (every GPU of a stage alike); empty when pp = 1
    stages: list[list[Phase]] = field(default_factory=list)
    #: optimizer-step temporaries that take new segments of the caching allocator (step_new_segments), per GPU,
    #: and what they are (a message Text, "" when there are none)
    step_segments: int = 0
    step_segments_text: str = ""
    #: blocks the trainer's loading left in PyTorch's cache before the first step (reserved, never allocated)
    loading_cache: int = 0


def training_phases(
    facts: ModelFacts,
    work: FinetuneWorkload,
    par: Parallelism,
    gpu_count: int,
    base_weights: str | WeightFormat = "auto",
    gpus_per_node: int | None = None,
) -> TrainingRun:
    """``base_weights``: the frozen base's storage for LoRA / QLoRA ("auto" = bf16 for LoRA, nf4 with double
    quantisation for QLoRA; a GPTQ / AWQ / bnb name or format trains adapters on that quantised base).
    ``gpus_per_node``: GPUs of one machine (hybrid FSDP shards inside a machine); None = all of them.
    A plan that cannot run is refused first, by :func:`~vramdesk.core.training_plan.check_plan`."""
    check_plan(facts, work, par, base_weights, gpu_count)
    # (the attention transformers' model code runs: "sdpa" is eager where the model has no SDPA path)
    attention, attention_note = (
        (work.attention, None)
        if profile(work.trainer).own_attention
        else effective_attention(facts.arch.model_type, work.attention)
    )
    if attention != work.attention:
        work = work.model_copy(update={"attention": attention})
    if _in_backward(work) and (par.zero or par.fsdp):
        raise TrainingError(IN_BACKWARD_SHARDED(optimizer=work.optimizer))
    model = _model_tensors(facts, work)
    if work.block_training != "off":
        sharded = bool(par.zero or par.fsdp) or par.tp > 1 or par.pp > 1
        why = block_refusal(work.block_training, work.active_layers, sharded, model.text, facts.model_id)
        if why:
            raise TrainingError(why)
    # DeepSpeed (any ZeRO stage) casts the whole module to its 16-bit dtype and keeps fp32 master weights, Adam
    # moments and an fp32 gradient partition for every trainable parameter: 2 + 2 + 16 B
    deepspeed = par.zero > 0 and work.precision != "fp32"
    tr = what_trains(facts, work, par, base_weights, deepspeed, (model.text, model.vision))
    acts = _activations(facts.arch, work, par, tr, deepspeed)
    head = loss_head(facts.arch, work, deepspeed, precision(work.precision))
    # --- sharding and offload (per GPU)
    sh = shards(par, gpu_count, gpus_per_node)
    states = _model_states(work, par, tr, deepspeed, model)
    per = place_states(states, sh, par)
    if model.vision_frozen:
        per.notes.insert(0, T.FROZEN_VISION(gib=model.vision_frozen / GIB))
    parts = _components(work, par, tr, (acts, head), sh, states, per)
    if _in_backward(work):
        parts = _one_gradient(work, tr, parts, model)
    transients = _transients(facts, work, par, tr, sh, acts, model.text)
    grads = _gradient_moments(work, par, tr, sh, states, per, parts.gradients, model.text)
    phases = _phases(facts.arch, work, par, tr, acts, parts, transients, grads, (sh, per), model)
    step_segments, step_text = _step_segments(facts.arch, work, par, sh, head, tr, model.text)
    return TrainingRun(
        phases=phases,
        trainable=_trained_count(tr),
        host_bytes=round(float(acts.host) + per.host),
        warnings=[*([attention_note] if attention_note else []), *_warnings(work, par, tr, sh, per, gpus_per_node)],
        gpus=sh.n,
        stages=pipeline_stages(facts, phases, sh.pp, work.grad_accum) if sh.pp > 1 else [],
        step_segments=step_segments,
        step_segments_text=step_text,
        loading_cache=_loading_cache(work, par, model.text),
    )


def _loading_cache(work: FinetuneWorkload, par: Parallelism, text_tensors: list[Tensor]) -> int:
    """fsdp_qlora's low-memory loading: FSDP's sync_module_states moves each unit to the GPU whole and flattens it
    into a new flat parameter before sharding it (torch.distributed.fsdp _init_param_handle_from_module,
    FlatParamHandle.flatten_tensors); the freed whole unit and flat copy stay cached. The largest unit is the root
    one (embeddings, lm_head, final norm: fsdp_qlora leaves them unquantised, in 16 bits): twice its bytes."""
    if not (profile(work.trainer).loading_cache and par.fsdp):
        return 0
    return 2 * 2 * sum(t.numel for t in text_tensors if t.layer is None)


# ------------------------------------------------------------------------------------------ weights and adapters


@dataclass(frozen=True)
class _Model:
    """The model's tensors as the method sees them."""

    #: the text model's tensors, and the vision tower's when it trains in full
    text: list[Tensor]
    vision: list[Tensor]
    #: frozen vision weights kept on the GPU next to the text model (16-bit; fp32 with fp32 training)
    vision_frozen: int
    #: parameters of ``text``
    all_params: int


def _model_tensors(facts: ModelFacts, work: FinetuneWorkload) -> _Model:
    text_tensors = [t for t in facts.tensors if t.part == "text"]
    vision_tensors = [t for t in facts.tensors if t.part == "vision"]
    train_vision = work.vision_tower == "trained"
    if train_vision and work.method == "full":
        # the vision tower's parameters train like the text model's
        text_tensors = text_tensors + vision_tensors
    vision_frozen = 0
    if vision_tensors and work.vision_tower != "absent" and not (train_vision and work.method == "full"):
        vision_frozen = sum(t.numel for t in vision_tensors) * (4 if work.precision == "fp32" else 2)
    return _Model(text_tensors, vision_tensors, vision_frozen, sum(t.numel for t in text_tensors))


def _trained_count(tr: Trained) -> int:
    """Every trained parameter: adapters (or the whole model), trained copies and biases."""
    return tr.params.trainable + tr.params.saved_copy_params + tr.params.bias_params


# ------------------------------------------------------------------------------------------ optimizer states


def _optimizer_states(
    work: FinetuneWorkload, par: Parallelism, tr: Trained, deepspeed: bool, model: _Model
) -> tuple[int, int, str, str]:
    """(state bytes, step temporary bytes, their explanations) of what trains, before any sharding."""
    p, st = tr.params, tr.storage
    if tr.block is not None:
        grad_b = round(st.gradient_bytes / max(1, p.trainable))
        projection = (work.projection_rank, work.projection_gap)
        return block_optimizer_bytes(work.optimizer, tr.block, st.state_element_bytes, grad_b, projection)
    states, temp, s_text, t_text = optimizer_bytes(
        work.optimizer,
        p.trainable,
        st.state_element_bytes,
        p.largest_tensor_elements,
        p.matrix_shapes,
        model.text if work.method == "full" else (),
        (work.projection_rank, work.projection_gap),
    )
    states += st.other_state_bytes
    temp += st.other_step_temp_bytes
    if frozen_base(work.method) and deepspeed:
        lora_trained = _trained_count(tr)
        states, temp = 16 * lora_trained, (0 if par.zero == 3 else 2 * lora_trained)
        s_text = T.DEEPSPEED_LORA_STATES
        t_text = DEEPSPEED_FUSED_TEXT if par.zero == 3 else DEEPSPEED_FLAT_TEXT
    return states, temp, s_text, t_text


def _model_states(work: FinetuneWorkload, par: Parallelism, tr: Trained, deepspeed: bool, model: _Model) -> ModelStates:
    """Weights, gradients, optimizer states and step temporaries of the whole run, before sharding."""
    p = tr.params
    if par.zero and not frozen_base(work.method) and work.precision != "fp32":
        client = (
            None
            if work.optimizer in ("adamw", "adamw-fused")
            else optimizer_bytes(
                work.optimizer,
                model.all_params,
                4,
                p.largest_tensor_elements,
                p.matrix_shapes,
                model.text,
                (work.projection_rank, work.projection_gap),
            )
        )
        ds = deepspeed_states(model.all_params, par.zero, client)
        return replace(ds, weights=ds.weights + model.vision_frozen)
    states, temp, s_text, t_text = _optimizer_states(work, par, tr, deepspeed, model)
    return ModelStates(
        weights=tr.storage.base_weight_bytes + tr.storage.adapter_weight_bytes + model.vision_frozen,
        grads=tr.storage.gradient_bytes,
        states=states,
        temp=temp,
        weights_text=tr.storage.weights_explain,
        states_text=s_text,
        temp_text=t_text,
    )


# ------------------------------------------------------------------------------------------ optimizer in backward


def _in_backward(work: FinetuneWorkload) -> bool:
    """Each parameter stepped in its gradient hook (torchtune optimizer_in_bwd, layer-wise GaLore, LOMO)."""
    return work.optimizer_in_backward or work.optimizer in IN_BACKWARD


def _one_gradient(work: FinetuneWorkload, tr: Trained, parts: _Parts, model: _Model) -> _Parts:
    """The gradients and step temporaries when the step runs in the backward, one parameter at a time."""
    p, st = tr.params, tr.storage
    grad_bytes = round(st.gradient_bytes / max(1, _trained_count(tr)))
    largest = max([p.largest_tensor_elements] + [n for _, n in p.saved_copies])
    tensor = max(model.text, key=lambda t: t.numel) if work.method == "full" else None
    count, temp = in_backward_step(
        work.optimizer,
        largest,
        st.state_element_bytes,
        tensor,
        (work.projection_rank, work.projection_gap),
    )
    gradients = comp("gradients", count * largest * grad_bytes, "gradients", ONE_GRADIENT(count=count))
    old = parts.step_temporaries
    step = comp(old.name, temp, old.category, old.explain)
    return replace(parts, gradients=gradients, step_temporaries=step)


# ------------------------------------------------------------------------------------------ activations


def _activations(
    arch: Architecture, work: FinetuneWorkload, par: Parallelism, tr: Trained, deepspeed: bool
) -> Activations:
    prec = precision(work.precision)
    keeps = tr.backward
    return activations(
        arch,
        work,
        precision("bf16") if prec.amp and (deepspeed or par.fsdp) else prec,
        keeps.fp32_adapter_inputs,
        tr.params.linear_params,
        # (LoRA's adapters keep their inputs; another method's layers what BackwardKeeps.method_saved says)
        tr.params.adapted_weights if tr.method is None else (),
        tp=par.tp,
        residual_bytes=keeps.residual_bytes,
        adapter_copy_bytes=keeps.adapter_input_bytes,
        kept_weights=keeps.frozen_weight_bytes,
        adapter_bytes=tr.storage.adapter_param_bytes or 4,
        kept_label=T.AMP_KEPT if tr.base.kind == "float" else GPTQ_KEPT,
        method_saved=keeps.method_saved,
    )


# ------------------------------------------------------------------------------------------ components per GPU


@dataclass(frozen=True)
class _Parts:
    """The step's terms on one GPU, as components."""

    weights: Component
    states: Component
    gradients: Component
    activations: Component
    loss_head: Component
    logits: Component
    step_temporaries: Component


def _components(
    work: FinetuneWorkload,
    par: Parallelism,
    tr: Trained,
    saved: tuple[Activations, LossHead],
    sh: Shards,
    model: ModelStates,
    per: PerGpu,
) -> _Parts:
    """The weights, gradients, optimizer states, activations, loss head and step temporaries per GPU."""
    acts, head = saved
    grads_text = T.GRADIENTS_TRAINABLE if frozen_base(work.method) or tr.block else T.GRADIENTS_ALL
    trained = _trained_count(tr)
    grads = round(model.grads)
    # with pipeline parallel (1F1B) the first stage holds 1/pp of the layers but pp micro-batches in flight:
    # the same activation bytes as one micro-batch through every layer
    a_gpu = acts.total
    loss_gpu = head.loss / sh.tp
    shard_note = sh.note
    notes = per.notes
    c_weights = comp(
        "weights",
        per.weights,
        "weights",
        with_note(model.weights_text, shard_note, join(", ", *notes) if notes else ""),
    )
    states_text = with_note(model.states_text, shard_note)
    if par.offload in ("optimizer", "params"):
        # nothing of the states stays on the GPU: say where they are, not only how they would be split
        states_text = join("; ", T.STATES_OFFLOADED(gib=model.states / sh.states / GIB), states_text)
    return _Parts(
        weights=c_weights,
        states=comp("optimizer states", per.states, "optimizer", states_text),
        gradients=comp(
            "gradients",
            per.grads,
            "gradients",
            with_note(
                grads_text(params=trained, bytes=grads // max(1, trained)),
                shard_note,
            ),
        ),
        activations=comp("activations", a_gpu, "activations", acts.explain),
        loss_head=comp(
            "loss head",
            loss_gpu,
            "logits",
            head.loss_text,
        ),
        logits=comp(
            "logits and loss",
            head.forward / sh.tp,
            "logits",
            head.forward_text,
        ),
        step_temporaries=comp("optimizer step temporaries", per.temp, "optimizer", model.temp_text),
    )


# ------------------------------------------------------------------------------------------ the step's transients


@dataclass(frozen=True)
class _Transients:
    """Short-lived and communication tensors beside the step's terms."""

    #: in every phase: gathered layer parameters, communication buckets, a quantised base's dequantised matrix
    extra: tuple[Component, ...]
    #: the same in the forward and at the loss head (ZeRO-3 may hold the lm_head gathered instead of two layers)
    at_head: tuple[Component, ...]
    #: what a forward matmul makes, in the forward and in the recompute of a checkpointed layer
    unpack: tuple[Component, ...]
    #: what only the forward makes (and autocast's weight cache of checkpointed layers)
    forward: tuple[Component, ...]


def _transients(
    facts: ModelFacts,
    work: FinetuneWorkload,
    par: Parallelism,
    tr: Trained,
    sh: Shards,
    acts: Activations,
    text_tensors: list[Tensor],
) -> _Transients:
    arch = facts.arch
    gathered, gathered_text = gathered_layers(facts, sh, par, tr.base.gather_format)
    buckets, bucket_text = comm_buckets(par, sh, work.precision)
    extra = []
    if gathered:
        extra.append(
            comp(
                "gathered layer parameters",
                gathered,
                "weights",
                gathered_text,
            )
        )
    if buckets:
        extra.append(comp("communication buckets", buckets, "overhead", bucket_text))
    dequantised, unpack, forward_only = matmul_transients(text_tensors, tr, work, par.tp)
    extra += dequantised
    # ZeRO-3 gathers a module's parameters whole for its forward: at the logits that is the lm_head (the tied
    # embedding), held through the loss into its own backward; a large vocabulary outweighs two decoder layers
    # (Gemma-2-2B: 590 M parameters against 2 x 85 M). FSDP keeps its root unit instead (gathered_layers)
    extra_at_head = extra
    if gathered and par.zero == 3 and not par.fsdp:
        lm_head = 2 * arch.vocab * arch.hidden / par.tp
        if lm_head > gathered:
            extra_at_head = [
                comp(
                    "gathered layer parameters",
                    lm_head,
                    "weights",
                    T.LM_HEAD_GATHERED,
                )
                if c.name == "gathered layer parameters"
                else c
                for c in extra
            ]
    forward_extra = [*unpack, *forward_only]
    if acts.forward_cache:
        forward_extra.append(
            comp(
                "autocast weight cache",
                acts.forward_cache,
                "activations",
                T.AUTOCAST_CACHE,
            )
        )
    return _Transients(tuple(extra), tuple(extra_at_head), unpack, tuple(forward_extra))


# ------------------------------------------------------------------------------------------ gradients


@dataclass(frozen=True)
class _Gradients:
    """Gradients beside the step's terms at moments of the backward."""

    #: gradients kept between micro-batches
    held: tuple[Component, ...] = ()
    #: a new gradient next to the stored one, for a moment in backward
    fresh: tuple[Component, ...] = ()
    #: ... or filled through backward and added at its end
    fresh_end: tuple[Component, ...] = ()


def _gradient_moments(
    work: FinetuneWorkload,
    par: Parallelism,
    tr: Trained,
    sh: Shards,
    model: ModelStates,
    per: PerGpu,
    c_grads: Component,
    text_tensors: list[Tensor],
) -> _Gradients:
    """Gradient accumulation's held and fresh gradients, and a tied embedding's second gradient."""
    prec = precision(work.precision)
    adapters = frozen_base(work.method)
    held: tuple[Component, ...] = ()
    fresh: tuple[Component, ...] = ()
    fresh_end: tuple[Component, ...] = ()
    if work.grad_accum > 1:
        held = (c_grads,)
        if par.zero == 2 and work.precision != "fp32":
            # stage_1_and_2.py: each micro-batch's backward fills a new 16-bit grads_in_partition buffer while the
            # accumulated partition is still held, and adds it at the end of backward
            fresh_end = (
                comp(
                    "fresh gradient",
                    model.grads / sh.states,
                    "gradients",
                    T.FRESH_ZERO2,
                ),
            )
        elif not (par.zero or par.fsdp):
            # autograd's AccumulateGrad computes a parameter's new gradient in a fresh tensor and then adds it to
            # the stored .grad: the largest trainable tensor's gradient exists twice for a moment (DeepSpeed and
            # FSDP reduce into their own buckets instead)
            largest_grad = (
                max(
                    [n * tr.storage.other_param_bytes for _, n in tr.params.saved_copies]
                    + [tr.params.largest_tensor_elements * tr.storage.adapter_param_bytes],
                    default=0,
                )
                if adapters
                else tr.params.largest_tensor_elements * prec.grads
            )
            fresh = (
                comp(
                    "fresh gradient",
                    largest_grad / per.grads_div,
                    "gradients",
                    T.FRESH(bytes=largest_grad),
                ),
            )
            fresh_end = fresh
    tied = not any(t.role == "lm_head" for t in text_tensors)
    # (BAdam leaves the embedding frozen)
    embed_trains = tr.block is None or any(t.role == "embedding" for t in tr.block.active)
    if work.method == "full" and tied and embed_trains and not (par.zero or par.fsdp):
        # a tied embedding gets two gradients: the lm_head's at the loss head, stored, and the embedding's at the
        # very end of backward, computed in a fresh tensor and summed out of place into a third (traced:
        # Qwen2.5-1.5B under AMP, 2 x 0.87 GiB of fp32 over weights + states + gradients). With gradient
        # accumulation the sum is then added to the stored .grad in place: the same two over the held gradients
        # (autograd buffers a node's inputs until all have arrived, whether or not .grad exists)
        embed = next((t for t in text_tensors if t.role == "embedding"), None)
        if embed is not None:
            fresh_end += (
                comp(
                    "tied embedding gradient",
                    2 * embed.numel * prec.grads / per.grads_div,
                    "gradients",
                    T.TIED_GRADIENT,
                ),
            )
    return _Gradients(held, fresh, fresh_end)


def _first_layer(
    work: FinetuneWorkload, tr: Trained, acts: Activations, per: PerGpu, sh: Shards, text_tensors: list[Tensor]
) -> tuple[Component, Component]:
    """(the gradients of every later layer, the first layer's activations) late in backward."""
    prec = precision(work.precision)
    p, a_b, e_b = tr.params, tr.storage.adapter_param_bytes, tr.storage.other_param_bytes
    tied = not any(t.role == "lm_head" for t in text_tensors)
    if frozen_base(work.method):
        raw_grads = p.trainable * a_b + (p.saved_copy_params + p.bias_params) * e_b
        embed_names = {t.name for t in text_tensors if t.role == "embedding"}
        if tr.method is not None:
            first_grads = tr.method.params_from_first_layer() * a_b
        else:
            first_layer = [t for t in p.adapted_weights if t.layer == 0 and t.part == "text"]
            first_grads = lora_parameters(first_layer, work.lora_rank) * a_b
        first_grads += sum(n for name, n in p.saved_copies if name in embed_names) * e_b
    else:
        trained = tr.block.active if tr.block else text_tensors
        raw_grads = sum(t.numel for t in trained) * prec.grads
        first_grads = prec.grads * sum(t.numel for t in trained if t.layer == 0 or (t.role == "embedding" and not tied))
    later = per.grads * max(0.0, 1 - first_grads / max(1, raw_grads))
    c_later = comp(
        "gradients",
        later,
        "gradients",
        with_note(T.LATER_GRADIENTS, sh.note),
    )
    c_first = comp(
        "activations",
        acts.first_layer,
        "activations",
        join("; ", T.FIRST_LAYER_RECOMPUTED if work.grad_checkpointing else T.FIRST_LAYER, T.OTHERS_FREED),
    )
    return c_later, c_first


# ------------------------------------------------------------------------------------------ the phases


def _phases(
    arch: Architecture,
    work: FinetuneWorkload,
    par: Parallelism,
    tr: Trained,
    acts: Activations,
    parts: _Parts,
    transients: _Transients,
    grads: _Gradients,
    placed: tuple[Shards, PerGpu],
    model: _Model,
) -> list[Phase]:
    """Forward, loss head and start of backward, backward (recompute, first layer, end), optimizer step."""
    sh, per = placed
    b, s = work.micro_batch, work.seq_len
    adapters = frozen_base(work.method)
    c_weights, c_states, c_grads = parts.weights, parts.states, parts.gradients
    held, fresh, extra, unpack = grads.held, grads.fresh, transients.extra, transients.unpack
    head_copy: tuple[Component, ...] = ()
    if adapters and tr.base.fp32_under_amp and tr.base.kind == "float" and not par.fsdp:
        # the lm_head's (or tied embedding's) 16-bit copy, kept by the logits matmul until the loss head's backward
        head_copy = (
            comp(
                "lm_head 16-bit copy",
                2 * arch.vocab * arch.hidden / par.tp,
                "activations",
                T.LM_HEAD_COPY,
            ),
        )
    # with checkpointing, the forward and the loss head see only the checkpointed layer inputs; the loss head's
    # tensors are freed (its backward done) before the last layer is recomputed, so the two do not add up
    early = (
        comp("activations", acts.resident, "activations", acts.resident_explain)
        if work.grad_checkpointing
        else parts.activations
    )
    at_head = transients.at_head
    phases = [
        Phase(
            name="forward",
            components=(c_weights, c_states, *held, early, parts.logits, *head_copy, *at_head, *transients.forward),
        ),
        Phase(
            name="loss + start of backward",
            components=(c_weights, c_states, *held, early, parts.loss_head, *head_copy, *fresh, *at_head),
        ),
    ]
    retained: tuple[Component, ...] = ()
    if work.grad_checkpointing:
        if par.fsdp and par.fsdp_version == 1 and adapters and not profile(work.trainer).checkpoint_outside_fsdp:
            # FSDP1 frozen units (peft's wrap policy puts the adapters in their own units) register a reshard-only
            # post-backward hook on each layer's input; under reentrant checkpointing that input is the recompute's
            # detached copy, and the hook's closure keeps it and its gradient alive until _finalize_params at the
            # end of backward: every layer's 16-bit input gradient piles up, the peak moves to layer 0's backward
            residual_b = tr.backward.residual_bytes
            kept = (arch.n_layers - 1) * residual_b * arch.hidden * b * s
            retained = (
                comp(
                    "retained input gradients",
                    kept,
                    "activations",
                    T.RETAINED_GRADIENTS(layers=arch.n_layers - 1, bytes=residual_b, tokens=b * s),
                ),
            )
        phases.append(
            Phase(
                name="backward (recompute)",
                components=(c_weights, c_states, *held, parts.activations, *retained, *fresh, *extra, *unpack),
            )
        )
    # late in backward the first layer is recomputed and back-propagated while the gradients of every later layer
    # (and of the lm_head) are already allocated: with a small loss head and gradients about the size of the
    # checkpoints, this is the peak of the backward (traced: a GPTQ LoRA step peaks here, at the unpacking of the
    # first layer's last matrix)
    c_later, c_first = _first_layer(work, tr, acts, per, sh, model.text)
    if _in_backward(work):
        # the later layers' gradients are already stepped and freed: one parameter's gradient and its step
        c_later = c_grads
        unpack = (*unpack, parts.step_temporaries)
    phases.append(
        Phase(
            name="backward (first layer)",
            components=(c_weights, c_states, *(held or (c_later,)), c_first, *retained, *fresh, *extra, *unpack),
        )
    )
    phases += [
        Phase(name="backward (end)", components=(c_weights, c_states, c_grads, *grads.fresh_end, *extra)),
        Phase(name="optimizer step", components=(c_weights, c_grads, c_states, parts.step_temporaries, *extra)),
    ]
    return phases


# ------------------------------------------------------------------------------------------ the allocator cache


def _step_segments(
    arch: Architecture,
    work: FinetuneWorkload,
    par: Parallelism,
    sh: Shards,
    head: LossHead,
    tr: Trained,
    text_tensors: list[Tensor],
) -> tuple[int, str]:
    """(bytes, explanation) of the optimizer step's temporaries that take new segments of the caching allocator."""
    # the step's temporaries of tensors too large for any block the activations left cached take new segments
    # (one rank holding whole tensors: sharded and flat-buffer optimizers are not modelled this way)
    step_segments, step_text = 0, ""
    if not work.expandable_segments and par.zero == 0 and not par.fsdp and sh.tp == 1 and sh.pp == 1:
        block = largest_cached_block(arch, work, head.elem_bytes)
        if frozen_base(work.method):
            sizes, elem = [n for _, n in tr.params.saved_copies], tr.storage.other_param_bytes
        else:
            trained = tr.block.active if tr.block else text_tensors
            sizes, elem = [t.numel for t in trained], tr.storage.state_element_bytes
        step_segments, count = step_new_segments(work.optimizer, sizes, elem, block)
        if step_segments:
            step_text = T.STEP_SEGMENTS(count=count, block_mib=block / MIB, gib=step_segments / GIB)
    return step_segments, step_text


# ------------------------------------------------------------------------------------------ warnings


def _warnings(
    work: FinetuneWorkload, par: Parallelism, tr: Trained, sh: Shards, per: PerGpu, gpus_per_node: int | None
) -> list[str]:
    """What the estimate says beside its figures, in the order the run's parts raise it."""
    warnings: list[str] = []
    fixed = profile(work.trainer).fixed
    if fixed:
        # a trainer's fixed values replace what the plan said (core/trainers.py with_profile): say which
        settings = ", ".join(f"{name} {str(value).lower()}" for name, value in fixed.items())
        warnings.append(T.TRAINER_FIXED(trainer=work.trainer, settings=settings))
    if work.vision_tower == "trained":
        warnings.append(T.VISION_TRAINED)
    # benchmarks/allocator: a traced 48-step Yi-6B LoRA run with lengths drawn up to 8192 tokens, replayed through
    # the caching-allocator model, reserved 35.6 GiB for a 19.3 GiB allocated peak (20.7 with expandable segments);
    # the same run at one fixed length reserves what the fixed-shape rule above gives
    if not work.expandable_segments and work.mean_seq_len is None:
        warnings.append(T.VARYING_LENGTHS)
    elif work.mean_seq_len is not None and not work.expandable_segments:
        warnings.append(T.MEAN_LENGTH(mean=work.mean_seq_len, longest=work.seq_len))
    # benchmarks/data/device: on an H200 the reserve rule (allocated + a x loss head + b x one layer) was within
    # 2.3 % median of max_memory_reserved, but 13-18 % low for these two kinds of step, whose large per-tensor
    # optimizer allocations the rule does not see (their allocator replays match the GPU within 1 % and 6.5 %)
    # (Adafactor's run is modelled since: its fp32 copies of the embedding take new segments, step_new_segments)
    if tr.params.saved_copies and not work.expandable_segments:
        warnings.append(T.SAVED_COPIES_RESERVED)
    if work.grad_accum > 1:
        warnings.append(T.GRAD_ACCUM(steps=work.grad_accum))
    if work.method == "qlora" and (par.zero == 3 or par.fsdp):
        warnings.append(T.QLORA_SHARDED)
    per_machine = min(gpus_per_node or sh.n, sh.n)
    if par.offload in ("optimizer", "params") and per.host:
        # DeepSpeed's estimate_zero2/3_model_states_mem_needs multiply their CPU figure by additional_buffer_factor
        # 1.5 (a margin for pinned buffers and fragmentation, not a measured term): say what it would give
        machine = per.host * per_machine / GIB
        warnings.append(T.OFFLOAD_CPU_MEMORY(gib=machine, gpus=per_machine, margin_gib=1.5 * machine))
    if per_machine > 1 and not (par.zero == 3 or par.fsdp) and tr.base.kind == "float":
        # every rank builds the whole model on the CPU before moving it to its GPU (DeepSpeed's own ZeRO-1/2
        # estimator counts 4 B x parameters x GPUs per machine of CPU memory for it); ZeRO-3's zero.Init and FSDP's
        # RAM-efficient loading partition the weights as they load
        whole = tr.storage.base_weight_bytes / GIB
        warnings.append(T.STARTUP_CPU_MEMORY(gpus=per_machine, gib=whole, total_gib=per_machine * whole))
    if sh.pp > 1 and work.grad_accum < sh.pp:
        warnings.append(T.PIPELINE_BUBBLE(pp=sh.pp, micro_batches=work.grad_accum))
    return warnings
