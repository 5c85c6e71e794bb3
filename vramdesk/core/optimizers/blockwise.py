"""Block-wise training of a full fine-tune: a few decoder layers train at a time, the rest of the model frozen.

* LISA, as LMFlow runs it (``src/lmflow/pipeline/utils/lisa_trainer.py`` ``DynamicLayerActivationCallback``, wired
  in ``pipeline/finetuner.py``): every ``lisa_interval_steps`` its ``switch_active_layers`` sets
  ``requires_grad = False`` on every parameter of ``model.model.layers`` and back to True on ``lisa_activated_layers``
  layers drawn at random (``args.py``: 2 by default). The embeddings, the final norm and lm_head are never frozen.
  The optimizer is HF Trainer's, built once over every parameter and never reset; PyTorch's AdamW creates a
  parameter's states the first time it has a gradient and keeps them, so the states of every layer ever active
  pile up: after enough intervals, the states of the whole model (the peak counted here). Gradients and the step's
  temporaries are those of the active layers and the always-trained parts. (A ``LISATrainer`` that rebuilt the
  optimizer at each switch, keeping only the states of the parts outside the decoder layers, lived on a development
  branch of LMFlow in 2024-11 to 2025-01; LMFlow's main line, April 2026, and Axolotl's and ms-swift's LISA callbacks
  are the form above, so that is the one modelled.)
* BAdam (the badam package, 1.4, ``badam/block_optim.py`` ``BlockOptimizer``): ``infer_param_groups`` makes a block
  of each ``layers.N.`` prefix, the embeddings and lm_head only when ``include_embedding`` / ``include_lm_head``
  (False by default). ``_switch_trainable_params_single_gpu`` freezes every other parameter and gives the base
  optimizer fp32 copies of the block's (``param.clone().float()``); ``step_single_gpu`` turns the block's gradients
  into fp32 ones on those copies (``_grad_to_hp``), steps the base optimizer over them and copies back; each switch
  empties the base optimizer's state (``base_optimizer.state = defaultdict(...)``): one block's states at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..inventory import Tensor
from ..messages import Message, join
from . import optimizer_bytes

#: the ``block_training`` values that train a few layers at a time
BLOCK_MODES = ("lisa", "badam")
#: layers trained at once when the plan does not say: LMFlow's ``lisa_activated_layers`` default (args.py), BAdam's
#: one ``layers.N.`` prefix a block
DEFAULT_LAYERS = {"lisa": 2, "badam": 1}

LISA_STATES = Message(
    "optimizer.block.lisa.states",
    "LISA (LMFlow): {active} of {layers} decoder layers train in each interval with the embeddings and lm_head; the "
    "optimizer is never reset, so the states of every layer ever active stay: all {layers} at the peak",
)
LISA_TEMP = Message(
    "optimizer.block.lisa.temp",
    "the step of the {params:,} parameters with gradients ({active} active layers, the embeddings and lm_head)",
)
BADAM_STATES = Message(
    "optimizer.block.badam.states",
    "BAdam: the states of one block of {active} of {layers} decoder layers ({params:,} parameters, fp32), emptied at "
    "each switch; the embeddings and lm_head do not train",
)
BADAM_TEMP = Message(
    "optimizer.block.badam.temp",
    "the block's step over its fp32 copies, and its gradients made fp32 before it ({bytes} B per parameter more)",
)
BADAM_MASTER = Message("optimizer.block.badam.master", "BAdam's fp32 copy of the active block ({params:,} parameters)")
BLOCK_SHARDED = Message(
    "optimizer.block.sharded",
    "{mode} is modelled on one GPU or data parallel only: ZeRO, FSDP, tensor and pipeline parallel are not",
)
BLOCK_TOO_MANY = Message(
    "optimizer.block.too_many_layers",
    "{mode} trains {active} layers at a time, but {model} has {layers} decoder layers",
)


@dataclass(frozen=True)
class BlockPlan:
    """What trains in one interval of a block-wise run, at its largest."""

    mode: str
    #: decoder layers trained at once, and of the model
    layers: int
    total_layers: int
    #: tensors with gradients (and a step) in one interval
    active: tuple[Tensor, ...]
    #: tensors whose optimizer states exist at the peak
    stated: tuple[Tensor, ...]

    @property
    def active_params(self) -> int:
        return sum(t.numel for t in self.active)

    @property
    def master_bytes(self) -> int:
        """BAdam's fp32 copies of the block (``param.clone().float()``: a copy even of fp32 parameters)."""
        return 4 * self.active_params if self.mode == "badam" else 0


def decoder_layers(tensors: Sequence[Tensor]) -> dict[int, list[Tensor]]:
    """The text model's decoder layers by index (what ``model.model.layers`` / ``layers.N.`` hold)."""
    out: dict[int, list[Tensor]] = {}
    for t in tensors:
        if t.layer is not None and t.part == "text":
            out.setdefault(t.layer, []).append(t)
    return out


def layers_at_once(mode: str, active_layers: int | None) -> int:
    """The plan's layers at a time, or the package's default."""
    return active_layers if active_layers is not None else DEFAULT_LAYERS[mode]


def block_plan(mode: str, active_layers: int | None, tensors: Sequence[Tensor]) -> BlockPlan:
    """The largest interval: the ``k`` largest decoder layers (LISA draws any; BAdam's blocks are alike but for
    a model's dense first layers), plus, for LISA, every tensor outside the decoder layers."""
    layers = decoder_layers(tensors)
    k = layers_at_once(mode, active_layers)
    # (among equal layers the last ones: BAdam's default "descending" order starts there, and the backward's
    # first layer then has no gradient of its own, the larger case late in the backward)
    by_size = sorted(layers, key=lambda i: (-sum(t.numel for t in layers[i]), -i))
    chosen = set(by_size[:k])
    in_layers = [t for i in sorted(chosen) for t in layers[i]]
    if mode == "lisa":
        rest = [t for t in tensors if not (t.layer is not None and t.part == "text")]
        return BlockPlan(mode, k, len(layers), tuple(in_layers + rest), tuple(tensors))
    return BlockPlan(mode, k, len(layers), tuple(in_layers), tuple(in_layers))


def block_refusal(
    mode: str, active_layers: int | None, sharded: bool, tensors: Sequence[Tensor], model: str
) -> str | None:
    """Why a block-wise plan cannot be estimated, or None."""
    name = "LISA" if mode == "lisa" else "BAdam"
    if sharded:
        return BLOCK_SHARDED(mode=name)
    layers = len(decoder_layers(tensors))
    k = layers_at_once(mode, active_layers)
    if k > layers:
        return BLOCK_TOO_MANY(mode=name, active=k, model=model, layers=layers)
    return None


def block_optimizer_bytes(
    name: str, plan: BlockPlan, state_bytes: int, grad_bytes: int, projection: tuple[int, int]
) -> tuple[int, int, str, str]:
    """(state bytes, step temporary bytes, their explanations) of the base optimizer ``name`` in a block-wise run.
    ``state_bytes``: the model's bytes per state element (BAdam's base optimizer sees fp32 copies instead);
    ``grad_bytes``: per gradient element of the model."""
    bytes_ = 4 if plan.mode == "badam" else state_bytes
    stated = _base(name, plan.stated, bytes_, projection)
    stepped = _base(name, plan.active, bytes_, projection)
    if plan.mode == "lisa":
        s_text = join("; ", stated[2], LISA_STATES(active=plan.layers, layers=plan.total_layers))
        t_text = join("; ", stepped[3], LISA_TEMP(params=plan.active_params, active=plan.layers))
        return stated[0], stepped[1], s_text, t_text
    # _grad_to_hp: hp_param.grad = lp_param.grad.float(), then lp_param.grad = None, one tensor after the other: the
    # fp32 gradients of the block replace the 16-bit ones (.float() of an fp32 gradient is that gradient)
    more = 4 - grad_bytes
    s_text = join(
        "; ", stated[2], BADAM_STATES(active=plan.layers, layers=plan.total_layers, params=plan.active_params)
    )
    return stated[0], stepped[1] + more * plan.active_params, s_text, join("; ", stepped[3], BADAM_TEMP(bytes=more))


def _base(
    name: str, tensors: Sequence[Tensor], state_bytes: int, projection: tuple[int, int]
) -> tuple[int, int, str, str]:
    """The base optimizer over ``tensors`` alone (its states, or its step's temporaries)."""
    largest = max((t.numel for t in tensors), default=0)
    shapes = [t.shape for t in tensors if len(t.shape) >= 2]
    return optimizer_bytes(name, sum(t.numel for t in tensors), state_bytes, largest, shapes, tensors, projection)
