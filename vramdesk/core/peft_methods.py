"""PEFT's methods other than LoRA, as peft 0.21 builds them: which modules each wraps, what it trains (the count
``print_trainable_parameters`` gives and the shapes the optimizer sees) and what its layers keep for backward.

One :class:`MethodParams` per method; :mod:`vramdesk.core.training_state` puts it over the frozen base as it does
LoRA's adapters, and :mod:`vramdesk.core.training_activations` adds what the method's layers save.

IA3 (``peft/tuners/ia3``): a learned vector scales the output of the attention targets (``ia3_l`` of shape
(out, 1)) and the input of the feed-forward ones ((1, in)); targets and feed-forward modules are peft's defaults
for the model type (``TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING`` and ``..._FEEDFORWARD_MODULES_MAPPING``).

Prompt learning (``peft/tuners/prompt_tuning``, ``p_tuning``, ``prefix_tuning``; ``PeftModelForCausalLM.forward``):
prompt tuning and p-tuning put ``num_virtual_tokens`` embeddings before every sequence, so that the model runs over
s + n tokens (its loss too, the virtual tokens' labels -100); prefix tuning hands every layer's attention n more
keys and values as a cache. Their encoders are made in fp32 and stay so (no peft layer wraps them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .architecture import AttentionKind
from .inventory import Tensor
from .lora import LINEAR_ROLES
from .messages import Message

if TYPE_CHECKING:
    from .facts import ModelFacts
    from .workloads import FinetuneWorkload


class MethodError(ValueError):
    """A method the model cannot take as planned: ``args[0]`` is the message's Text."""


#: the prompt-learning methods: virtual tokens, no module of the model wrapped
PROMPT_METHODS = ("prompt-tuning", "p-tuning", "prefix-tuning")
#: the methods whose base is frozen (everything but a full fine-tune)
ADAPTER_METHODS = frozenset({"lora", "qlora", "ia3", *PROMPT_METHODS})
#: the methods whose adapters are LoRA's (rank, targets, dropout, bias, DoRA, modules_to_save)
LORA_METHODS = ("lora", "qlora")

#: peft 0.21 ``TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING`` (decoder models vramdesk reads)
IA3_TARGETS: dict[str, tuple[str, ...]] = {
    "gpt2": ("c_attn", "mlp.c_proj"),
    "bloom": ("query_key_value", "mlp.dense_4h_to_h"),
    "opt": ("q_proj", "k_proj", "fc2"),
    "gptj": ("q_proj", "v_proj", "fc_out"),
    "gpt_neox": ("query_key_value", "dense_4h_to_h"),
    "gpt_neo": ("q_proj", "v_proj", "c_proj"),
    "gpt_bigcode": ("c_attn", "mlp.c_proj"),
    "llama": ("k_proj", "v_proj", "down_proj"),
    "llama4": ("q_proj", "v_proj", "down_proj"),
    "mistral": ("k_proj", "v_proj", "down_proj"),
    "mixtral": ("k_proj", "v_proj", "w2"),
    "falcon": ("query_key_value", "dense_4h_to_h"),
    "phi": ("q_proj", "v_proj", "fc2"),
    "gemma": ("q_proj", "v_proj", "down_proj"),
    "gemma2": ("q_proj", "v_proj", "down_proj"),
    "gemma3_text": ("q_proj", "v_proj", "down_proj"),
    "qwen2": ("q_proj", "v_proj", "down_proj"),
    "qwen3": ("q_proj", "v_proj", "down_proj"),
}
#: peft 0.21 ``TRANSFORMERS_MODELS_TO_IA3_FEEDFORWARD_MODULES_MAPPING``: the targets scaled at their input
IA3_FEEDFORWARD: dict[str, tuple[str, ...]] = {
    "gpt2": ("mlp.c_proj",),
    "bloom": ("mlp.dense_4h_to_h",),
    "opt": ("fc2",),
    "gptj": ("fc_out",),
    "gpt_neox": ("dense_4h_to_h",),
    "gpt_neo": ("c_proj",),
    "gpt_bigcode": ("mlp.c_proj",),
    "llama": ("down_proj",),
    "llama4": ("down_proj",),
    "mistral": ("down_proj",),
    "mixtral": ("w2",),
    "falcon": ("dense_4h_to_h",),
    "phi": ("fc2",),
    "gemma": ("down_proj",),
    "gemma2": ("down_proj",),
    "gemma3_text": ("down_proj",),
    "qwen2": ("down_proj",),
    "qwen3": ("down_proj",),
}

#: the methods' names as peft writes them (its PeftType), in messages
METHOD_NAMES = {
    "ia3": "IA3",
    "prompt-tuning": "PROMPT_TUNING",
    "p-tuning": "P_TUNING",
    "prefix-tuning": "PREFIX_TUNING",
}

#: ``{method}``: the method's name (METHOD_NAMES); ``{known}``: the model types it has targets for, joined with ", "
NO_DEFAULT_TARGETS = Message(
    "peft.no_default_targets",
    "{method} has no default target modules for {model} (model type {model_type}); peft knows them for: {known}",
)
NOT_ON_QUANTISED = Message(
    "peft.not_on_quantised",
    "{method} is estimated over a 16-bit or fp32 base, but the weights are {weights}: leave the weights on auto "
    "(or bf16), or train LoRA / QLoRA on this quantised base",
)
IA3_WEIGHTS = Message(
    "peft.ia3.weights",
    "{trainable:,} IA3 scaling parameters ({matrices} scaled modules, {feedforward} of them at their input)",
)
PROMPT_WEIGHTS = Message(
    "peft.prompt.weights",
    "{trainable:,} parameters of {tokens} virtual tokens' embeddings ({width} wide)",
)
P_TUNING_WEIGHTS = Message(
    "peft.p_tuning.weights",
    "{trainable:,} parameters of {tokens} virtual tokens' embeddings and the MLP that encodes them ({width} wide)",
)
PREFIX_WEIGHTS = Message(
    "peft.prefix.weights",
    "{trainable:,} parameters of {tokens} virtual tokens' keys and values in {layers} layers ({width} wide each)",
)
PREFIX_PROJECTION_WEIGHTS = Message(
    "peft.prefix.projection_weights",
    "{trainable:,} parameters of {tokens} virtual tokens' embeddings and the MLP that makes their keys and values "
    "in {layers} layers ({width} wide each)",
)
VIRTUAL_TOKENS = Message(
    "peft.prompt.saved", "the model runs over {tokens} virtual tokens before every sequence ({length} tokens)"
)
PREFIX_SAVED = Message(
    "peft.prefix.saved",
    "prefix tuning: every layer's attention keeps its keys and values {tokens} longer, repeated for every query "
    "head, and the 16-bit mask the prefix needs",
)
PREFIX_CHECKPOINTING = Message(
    "peft.prefix.checkpointing",
    "prefix tuning does not work with gradient checkpointing (peft refuses it: its prefix is a cache the recompute "
    "would extend again): turn checkpointing off (--no-grad-checkpointing)",
)
#: a model with layers whose cache is not standard attention's keys and values, by their kind
PREFIX_ATTENTION = {
    AttentionKind.MLA: Message(
        "peft.prefix.attention.mla",
        "prefix tuning hands every layer the keys and values of standard attention; {model} has MLA (latent "
        "attention) layers, whose cache has another shape",
    ),
    AttentionKind.LINEAR: Message(
        "peft.prefix.attention.linear",
        "prefix tuning hands every layer the keys and values of standard attention; {model} has linear-attention "
        "layers, whose state is no such cache",
    ),
}
IA3_SAVED = Message(
    "peft.ia3.saved",
    "IA3: each scaled attention output kept in {out_bytes} B, each feed-forward input in {in_bytes} B, for the "
    "vectors' gradients; the backward of a scaling holds {backward_bytes} B per scaled element for a moment",
)


def frozen_base(method: str) -> bool:
    """Whether the method trains something over a frozen base (adapters), rather than every weight."""
    return method in ADAPTER_METHODS


@dataclass(frozen=True)
class MethodSaved:
    """What a method's own operations keep for backward, beside the frozen layers' rule."""

    #: per decoder layer: bytes per token kept from the forward to the layer's backward
    per_token: Mapping[int, float] = field(default_factory=dict)
    #: bytes per token of the largest short-lived tensors of one wrapped module's backward (in the recomputed or
    #: first layer's backward, next to that layer's activations)
    backward_per_token: float = 0.0
    #: the activations' explanation clause ("" for none)
    text: str = ""


@dataclass(frozen=True)
class MethodParams:
    """What a method other than LoRA trains, and what its layers save."""

    #: the base weights the method wraps
    adapted: tuple[Tensor, ...]
    #: parameters the optimizer updates, as peft's print_trainable_parameters counts them
    trainable: int
    #: the shapes of the trained tensors (Adafactor factors those with two dimensions)
    shapes: tuple[tuple[int, ...], ...]
    #: what its own operations keep for backward
    saved: MethodSaved
    #: the weights' explanation
    weights_text: str
    #: bytes of one trained parameter where the method fixes it (prompt encoders stay fp32); None: the adapter
    #: dtype's
    param_bytes: int | None = None

    @property
    def largest(self) -> int:
        """Elements of the largest trained tensor (per-tensor optimizer temporaries)."""
        return max((_numel(s) for s in self.shapes), default=0)

    def params_from_first_layer(self) -> int:
        """Trained parameters whose gradients the backward makes at the first decoder layer or after it: that
        layer's (one tensor per wrapped weight, in ``shapes``'s order), or all of a prompt encoder's, which feeds
        the first layer."""
        if not self.adapted:
            return self.trainable
        return sum(_numel(s) for t, s in zip(self.adapted, self.shapes, strict=True) if t.layer == 0)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _module(t: Tensor) -> str:
    return t.name.removesuffix(".weight")


def _peft_matches(t: Tensor, targets: Sequence[str]) -> bool:
    """peft's ``check_target_module_exists`` for a list: the module's name is a target or ends with "." + it."""
    name = _module(t)
    return any(name == key or name.endswith("." + key) for key in targets)


def _text_linears(facts: ModelFacts) -> list[Tensor]:
    """The text model's linear weights as peft's layers wrap them: nn.Linear modules, not experts stored as one
    (E, out, in) parameter (IA3 has no ParamWrapper: Mixtral's w2 is left alone, as peft leaves it)."""
    return [
        t
        for t in facts.tensors
        if t.part == "text" and t.role in LINEAR_ROLES and len(t.shape) == 2 and t.name.endswith(".weight")
    ]


def virtual_tokens(work: FinetuneWorkload) -> int:
    """The tokens prompt tuning and p-tuning put before every sequence (0 for other methods): the model runs over
    ``seq_len`` + this many."""
    return work.num_virtual_tokens if work.method in ("prompt-tuning", "p-tuning") else 0


def prefix_keys(work: FinetuneWorkload) -> int:
    """The keys and values prefix tuning adds to every layer's attention, per sequence (0 for other methods)."""
    return work.num_virtual_tokens if work.method == "prefix-tuning" else 0


def check_method(facts: ModelFacts, work: FinetuneWorkload) -> None:
    """Refuse a method the model has no default targets for, naming the method and the model type, and a method
    with an option peft refuses it with."""
    method = work.method
    if method == "prefix-tuning" and work.grad_checkpointing:
        raise MethodError(PREFIX_CHECKPOINTING())
    if method == "prefix-tuning":
        other = [x.attention for x in facts.arch.layers if x.attention in PREFIX_ATTENTION]
        if other:
            raise MethodError(PREFIX_ATTENTION[other[0]](model=facts.model_id))
    if method == "ia3":
        model_type = facts.arch.model_type
        if model_type not in IA3_TARGETS or not any(
            _peft_matches(t, IA3_TARGETS[model_type]) for t in _text_linears(facts)
        ):
            raise MethodError(
                NO_DEFAULT_TARGETS(
                    method=METHOD_NAMES[method],
                    model=facts.model_id,
                    model_type=model_type,
                    known=", ".join(sorted(IA3_TARGETS)),
                )
            )


def method_params(facts: ModelFacts, work: FinetuneWorkload, adapter_bytes: int, output_bytes: int) -> MethodParams:
    """What ``work.method`` (not LoRA, not a full fine-tune; :func:`check_method` has passed) trains on ``facts``;
    ``adapter_bytes``: bytes of one of its parameters (4 with peft's fp32 adapters); ``output_bytes``: of one
    element of a frozen linear's output."""
    if work.method in PROMPT_METHODS:
        return _prompt_learning(facts, work)
    return _ia3(facts, adapter_bytes, output_bytes)


def _ia3(facts: ModelFacts, adapter_bytes: int, output_bytes: int) -> MethodParams:
    model_type = facts.arch.model_type
    targets, feedforward = IA3_TARGETS[model_type], IA3_FEEDFORWARD[model_type]
    chosen = [t for t in _text_linears(facts) if _peft_matches(t, targets)]
    shapes: list[tuple[int, ...]] = []
    saved: dict[int, float] = {}
    widest = n_ff = 0
    for t in chosen:
        out_f, in_f = t.shape[-2], t.shape[-1]
        if _peft_matches(t, feedforward):
            # (1, in): x.to(ia3 dtype) * ia3 keeps the cast input for the vector's gradient (layer.py forward)
            shapes.append((1, in_f))
            add, width = adapter_bytes * in_f, in_f
            n_ff += 1
        else:
            # (out, 1): base(x) * ia3 keeps the frozen linear's output, in its dtype, for the vector's gradient
            shapes.append((out_f, 1))
            add, width = output_bytes * out_f, out_f
        widest = max(widest, width)
        if t.layer is not None:
            saved[t.layer] = saved.get(t.layer, 0.0) + add
    # the scaling's backward: the incoming gradient cast to the vector's dtype (when the two differ), its product
    # with the saved tensor (summed into the vector's gradient) and with the vector (the input's gradient), alive
    # together (traced, tiny Llama and Qwen3, fp32 vectors on bf16: 12 B per element of the down projection's input)
    backward_b = 2 * adapter_bytes + (adapter_bytes if adapter_bytes != output_bytes else 0)
    trainable = sum(_numel(s) for s in shapes)
    return MethodParams(
        adapted=tuple(chosen),
        trainable=trainable,
        shapes=tuple(shapes),
        saved=MethodSaved(
            per_token=saved,
            backward_per_token=float(backward_b * widest),
            text=IA3_SAVED(out_bytes=output_bytes, in_bytes=adapter_bytes, backward_bytes=backward_b),
        ),
        weights_text=IA3_WEIGHTS(trainable=trainable, matrices=len(chosen), feedforward=n_ff),
    )


def _prompt_learning(facts: ModelFacts, work: FinetuneWorkload) -> MethodParams:
    """Prompt tuning, p-tuning and prefix tuning: their encoder's tensors (peft's _prepare_prompt_learning_config
    gives the widths) and what the virtual tokens add to the layers."""
    arch = facts.arch
    n, h = work.num_virtual_tokens, arch.hidden
    saved = MethodSaved(text=VIRTUAL_TOKENS(tokens=n, length=work.seq_len + n))
    if work.method == "prompt-tuning":
        shapes: list[tuple[int, ...]] = [(n, h)]
        what = PROMPT_WEIGHTS(trainable=n * h, tokens=n, width=h)
    elif work.method == "p-tuning":
        # PromptEncoder, MLP reparametrisation (peft's default): embedding (n, h), Linear(h, e), ReLU,
        # Linear(e, e), ReLU, Linear(e, h), encoder_hidden_size e = the token dim. (Its own activations, on n
        # tokens per sequence, are left out: 4 B x n x (h + 2e), 0.3 % of a tiny Llama's at 512 tokens)
        shapes = [(n, h), (h, h), (h,), (h, h), (h,), (h, h), (h,)]
        what = P_TUNING_WEIGHTS(trainable=sum(_numel(x) for x in shapes), tokens=n, width=h)
    else:
        # the keys' width: head_dim x KV heads (GQA), as peft sets token_dim for a config with num_key_value_heads
        layer = arch.layers[0]
        kv = layer.n_kv_heads * layer.head_dim
        layers = arch.n_layers
        if work.prefix_projection:
            # embedding (n, kv), Linear(kv, e), Tanh, Linear(e, layers x 2 x kv), e = the token dim
            shapes = [(n, kv), (kv, kv), (kv,), (2 * layers * kv, kv), (2 * layers * kv,)]
            what = PREFIX_PROJECTION_WEIGHTS(
                trainable=sum(_numel(x) for x in shapes), tokens=n, layers=layers, width=kv
            )
        else:
            shapes = [(n, 2 * layers * kv)]
            what = PREFIX_WEIGHTS(trainable=n * 2 * layers * kv, tokens=n, layers=layers, width=kv)
        # each layer's attention runs over the cache's s + n keys with an explicit mask (the prefix breaks the
        # pure causal shape): transformers repeats the KV heads for SDPA (no GQA with a mask), the memory-efficient
        # kernel keeps those (2 x 2 B x q width x (s + n)) in place of the rule's 4 B x kv x s, and its 16-bit bias,
        # padded to a multiple of 8 keys (traced on fake tensors with the CUDA kernel choice; the cache's own
        # concatenated keys and values die with the forward and are left out)
        s = work.seq_len
        padded = -(-(s + n) // 8) * 8
        per_token = {
            x.index: (4 * x.n_heads * x.head_dim * (s + n) - 4 * x.n_kv_heads * x.head_dim * s + 2 * s * padded) / s
            for x in arch.layers
        }
        # the first layer's input needs no gradient (nothing before the prefix trains, and checkpointing, which
        # would make it require one, is refused): its input norm keeps no fp32 copy, nor do q / k norms on
        # projections of it (traced: Qwen3's first layer, 4 B x (h + q + kv) per token)
        first = arch.layers[0]
        qk = first.n_heads * first.head_dim + first.n_kv_heads * first.head_dim if arch.qk_norm != "none" else 0
        per_token[first.index] -= 4 * (h + qk)
        saved = MethodSaved(per_token=per_token, text=PREFIX_SAVED(tokens=n))
    return MethodParams(
        adapted=(),
        trainable=sum(_numel(x) for x in shapes),
        shapes=tuple(shapes),
        saved=saved,
        weights_text=what,
        param_bytes=4,
    )
