"""Trace one inference request or one training step of a plan in the user's own Python (``vramdesk trace``).

Run as a script by the interpreter the user names (``PATH child.py``): it imports only the standard library,
torch, transformers and peft -- never vramdesk, which that environment need not have. It reads one JSON object on
stdin, ``{"config": {...config.json...}, "plan": {...}}``, builds the model from its config inside
``torch._subclasses.FakeTensorMode`` (no weights are downloaded or allocated; transformers' own classes only, never
``trust_remote_code``), runs the plan's real transformers / peft code with the places where a CUDA run differs
emulated (``apply_cuda_emulation``), and writes one JSON object on stdout: the versions, the parameter counts and
the ordered allocation stream a ``TorchDispatchMode`` saw (``["a", id, nbytes]``, ``["f", id]``, ``["p", phase]``).
vramdesk replays that stream through its caching-allocator model (``vramdesk.tracing.replay``).

Phases. Inference: ``load`` (the weights), ``prefill`` (the prompt, only the last position's logits kept, as
``generate()`` does), ``decode`` (``decode_steps`` greedy steps on the DynamicCache). A few decode steps are enough:
the first step already holds every per-step temporary (the one-token activations, the cache's concatenation, the
float32 logits of the last position), and each later step only adds one token per layer to the cache; the parent
compares with an estimate for the same number of new tokens. Training: ``load``, ``optimizer warm-up`` (the states
made by a step on zero gradients, so that the measured step is the steady one, as from the second step on),
``forward`` (to the loss), ``loss + start of backward`` (to the logits' gradient), ``backward``,
``optimizer step``.

Plan keys. Inference: ``mode`` "inference", ``batch``, ``input_len``, ``decode_steps``, ``dtype`` (bf16 | fp16 | fp32),
``attention`` (sdpa | eager). Training: ``mode`` "finetune", ``method`` (full | lora | ia3 | prompt-tuning | p-tuning |
prefix-tuning | ln-tuning | vera), ``micro_batch``, ``seq_len``, ``precision`` (bf16 | fp16 | fp32 | amp-bf16 | amp-
fp16), ``optimizer`` (adamw | adamw-fused | adamw-forloop | sgd | adafactor), ``grad_checkpointing``, ``attention``,
and for LoRA ``lora_rank``, ``lora_alpha``, ``lora_dropout``, ``lora_targets`` (a list of module names or "all-
linear"), and for a peft method ``adapter_dtype`` (fp32 | base); IA3 and LN tuning take peft's default modules for the
model type; prompt tuning, p-tuning and prefix tuning ``num_virtual_tokens``, prefix tuning ``prefix_projection``; VeRA
(peft's default modules) ``vera_rank``.

Errors: one line on stderr and exit status 3 (``EXIT_REFUSED``) for a plan or config it refuses, 4
(``EXIT_MISSING``) when torch, transformers or peft cannot be imported, naming them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import sys
import traceback
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

FORMAT = "vramdesk-trace-child/1"
EXIT_REFUSED = 3
EXIT_MISSING = 4
NEEDED = ("torch", "transformers", "peft")
SDPA_FUSED_FWD = {
    "aten._scaled_dot_product_flash_attention.default",
    "aten._scaled_dot_product_efficient_attention.default",
}
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


class RefusedError(Exception):
    """A plan or config the trace does not run (one line, exit status 3)."""


def round512(n: int) -> int:
    return 512 * ((n + 511) // 512)


def missing_modules() -> list[str]:
    return [m for m in NEEDED if importlib.util.find_spec(m) is None]


HAVE_TORCH = not missing_modules()
if __name__ == "__main__" and not HAVE_TORCH:  # before the imports below fail with a traceback
    print(f"missing: {' '.join(missing_modules())}", file=sys.stderr)
    sys.exit(EXIT_MISSING)

_Mode: Any = object
if HAVE_TORCH:
    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    _Mode = TorchDispatchMode
    aten = torch.ops.aten
    _ORIG_DROPOUT = F.dropout
# (without torch -- vramdesk's own environment, which lists this module among its own -- nothing below runs)


# --------------------------------------------------------------------------------------
# The tracker
# --------------------------------------------------------------------------------------
class AllocTracker(_Mode):  # type: ignore[misc]  # torch is Any where it is not installed
    """Sees every aten op below autograd; records new storages and their deaths."""

    def __init__(self, with_ops: bool = True) -> None:
        super().__init__()
        self.events: list[list[Any]] = []
        self.live: dict[int, tuple[int, int, weakref.ref[Any]]] = {}  # id(storage) -> (event id, nbytes, weakref)
        self.next_id = 0
        self.cur = 0  # live bytes, 512-rounded
        self.phase: str | None = None
        self.phase_peak = 0
        self.summary: list[tuple[str, int]] = []  # (phase, peak live bytes)
        self.scalar_reads: Counter[str] = Counter()
        self.skip_scalar_allocs = False  # host-side 0-dim tensors (AdamW step, non-fused)
        self.n_alloc = 0
        self.with_ops = with_ops  # allocation events name their aten op (the research trace) or not (compact)

    def mark(self, name: str) -> None:
        self._close_phase()
        self.phase = name
        self.phase_peak = self.cur
        self.events.append(["p", name])

    def _close_phase(self) -> None:
        if self.phase is not None:
            self.summary.append((self.phase, self.phase_peak))

    def _free(self, key: int) -> None:
        rec = self.live.pop(key, None)
        if rec is None:
            return
        self.cur -= round512(rec[1])
        self.events.append(["f", rec[0]])

    def see(self, t: Any, op: str) -> None:
        try:
            st = t.untyped_storage()
        except Exception:
            return
        key = id(st)
        if key in self.live:
            return
        nb = int(st.nbytes())
        if nb == 0:
            return
        eid = self.next_id
        self.next_id += 1

        def _on_dead(_r: weakref.ref[Any], k: int = key) -> None:
            self._free(k)

        self.live[key] = (eid, nb, weakref.ref(st, _on_dead))
        self.events.append(["a", eid, nb, op] if self.with_ops else ["a", eid, nb])
        self.n_alloc += 1
        self.cur += round512(nb)
        self.phase_peak = max(self.phase_peak, self.cur)

    def forget(self, t: Any) -> None:
        """Drop a storage from the books without a free event (host-side tensor seen by mistake)."""
        rec = self.live.pop(id(t.untyped_storage()), None)
        if rec is None:
            return
        self.cur -= round512(rec[1])
        for i in range(len(self.events) - 1, -1, -1):
            e = self.events[i]
            if e[0] == "a" and e[1] == rec[0]:
                del self.events[i]
                break

    def __torch_dispatch__(
        self,
        func: Any,
        types: tuple[type, ...],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func is aten._local_scalar_dense.default:
            x = args[0]
            if is_fake(x):
                # data-dependent read on a fake tensor: answer with a fixed policy
                self.scalar_reads[call_site()] += 1
                if x.dtype == torch.bool:
                    return True
                if x.dtype.is_floating_point:
                    return 1.0
                return 1
        out = func(*args, **kwargs)
        if getattr(func, "is_view", False):
            # a view never allocates; FakeTensorMode can hand one a storage of its own (peft's ModulesToSaveWrapper
            # on a tied lm_head made aten.t look like a 445 MiB copy that a real CPU run does not make)
            return out
        op = str(func)
        fused_sdpa = op in SDPA_FUSED_FWD
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                if t.dim() == 0 and (fused_sdpa or self.skip_scalar_allocs):
                    # flash/mem-efficient philox seed/offset and AdamW's `step` are host (CPU) tensors on a CUDA
                    # run: not GPU memory
                    continue
                if t.device.type == "meta" and not is_fake(t):
                    continue
                self.see(t, op)
        return out

    def finish(self) -> None:
        if self.phase != "end":
            self.mark("end")
        self._close_phase()


def is_fake(t: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def call_site() -> str:
    for fr in reversed(traceback.extract_stack()[:-3]):
        f = fr.filename
        if "/torch/" in f and "/torch/optim/" not in f:
            continue
        if f.endswith(("child.py", "trace_hf.py")):
            continue
        return f"{f.split('site-packages/')[-1]}:{fr.lineno}"
    return "?"


# --------------------------------------------------------------------------------------
# CUDA emulation patches
# --------------------------------------------------------------------------------------
def _sdpa_cuda_policy(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Any:
    """What torch's CUDA scaled_dot_product_attention does on sm80+ (flash > efficient > math).

    Mirrors aten/src/ATen/native/transformers/attention.cpp: backend choice, the bool mask converted to an additive
    mask of the query dtype (where(mask, 0, -inf)), the mem-efficient mask alignment/expand (preprocess_mask), and
    the autocast cast (SDPA is on the autocast lower-precision list).
    """
    if torch.is_autocast_enabled("cpu"):
        dt = torch.get_autocast_dtype("cpu")
        query, key, value = (t.to(dt) if t.is_floating_point() else t for t in (query, key, value))
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.to(dt)
    hd = query.shape[-1]
    low = query.dtype in (torch.float16, torch.bfloat16)
    same_hd = key.shape[-1] == hd and value.shape[-1] == hd
    hq, hk = query.shape[-3], key.shape[-3]
    gqa_ok = hq == hk or (enable_gqa and hq % hk == 0)
    if attn_mask is None and low and same_hd and hd <= 256 and hd % 8 == 0 and gqa_ok:
        return aten._scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, False, scale=scale)[0]
    if hq == hk and same_hd and hd % (8 if low else 4) == 0 and query.dtype != torch.float64:
        bias = attn_mask
        if bias is not None:
            if bias.dtype == torch.bool:
                neg = torch.scalar_tensor(float("-inf"), dtype=query.dtype, device=bias.device)
                bias = torch.where(bias, 0.0, neg)
            # preprocess_mask: strides of all but the last dim must be multiples of 8
            aligned = bias.stride(-1) == 1 and all(bias.stride(i) % 8 == 0 for i in range(bias.dim() - 1))
            if not aligned:
                last = bias.shape[-1]
                pad = 8 - last % 8
                bias = F.pad(bias, (0, pad))[..., :last]
            bias = bias.expand(query.shape[0], query.shape[1], query.shape[2], key.shape[2])
        need_lse = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
        return aten._scaled_dot_product_efficient_attention(
            query, key, value, bias, need_lse, dropout_p, is_causal, scale=scale
        )[0]
    mask = attn_mask
    if mask is not None and mask.dtype == torch.bool:
        neg = torch.scalar_tensor(float("-inf"), dtype=query.dtype, device=mask.device)
        mask = torch.where(mask, 0.0, neg)
    return aten._scaled_dot_product_attention_math(
        query, key, value, mask, dropout_p, is_causal, None, scale=scale, enable_gqa=enable_gqa
    )[0]


def _dropout_cuda(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
    """CUDA dropout = fused native_dropout (output + 1-byte bool mask)."""
    if not training or p == 0.0:
        return input
    if p == 1.0 or input.numel() == 0:
        return _ORIG_DROPOUT(input, p, training, inplace)
    out = aten.native_dropout(input, p, True)[0]
    if inplace:
        return input.copy_(out)
    return out


def apply_cuda_emulation(native_sdpa: bool) -> list[str]:
    """Patches so that the fake-CPU run takes the code paths of a CUDA run. Returns their names."""
    applied: list[str] = []
    import transformers.masking_utils as mu
    from transformers.utils import import_utils as iu

    # transformers treats FakeTensors as "tracing": it then keeps all-ones/causal masks and assumes packed
    # sequences. On a GPU the tensors are real: let masking_utils read values (the tracker answers data-dependent
    # reads: bool -> True, i.e. "no padding / no packing"), which is the unpadded-batch answer.
    orig_is_tracing: Callable[[Any], bool] = iu.is_tracing

    def is_tracing_no_fake(tensor: Any = None) -> bool:
        return orig_is_tracing(None)

    mu.is_tracing = is_tracing_no_fake
    applied.append("masking_utils.is_tracing ignores FakeTensors (mask skip + packed-seq detection as on GPU)")
    if not native_sdpa:
        F.scaled_dot_product_attention = _sdpa_cuda_policy
        applied.append("F.scaled_dot_product_attention -> CUDA backend policy (flash > mem-efficient > math)")
    F.dropout = _dropout_cuda
    applied.append("F.dropout -> aten.native_dropout (bool mask)")
    return applied


@contextlib.contextmanager
def module_to_noop() -> Iterator[None]:
    """nn.Module.to does nothing (peft moves/casts adapters; FakeTensor params cannot be swapped)."""
    orig = torch.nn.Module.to
    torch.nn.Module.to = lambda self, *a, **k: self
    try:
        yield
    finally:
        torch.nn.Module.to = orig


def decay_param_groups(params_named: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    """HF Trainer.create_optimizer grouping: weight-decay group, then no-decay (bias / norms)."""
    import re

    norm_pat = re.compile(r"(bias|layernorm|rmsnorm|(?:^|\.)norm(?:$|\.)|_norm(?:$|\.))", re.I)
    decay = [p for n, p in params_named if not norm_pat.search(n)]
    nodecay = [p for n, p in params_named if norm_pat.search(n)]
    return [
        g for g in ({"params": decay, "weight_decay": 0.0}, {"params": nodecay, "weight_decay": 0.0}) if g["params"]
    ]


#: optimizer -> (the package that ships it, the name pip installs it by)
OPTIMIZER_PACKAGES = {
    "galore-adamw": ("galore_torch", "galore-torch"),
    "apollo": ("apollo_torch", "apollo-torch"),
    "apollo-mini": ("apollo_torch", "apollo-torch"),
    "adam-mini": ("adam_mini", "adam-mini"),
}


def _import_optimizer_package(name: str) -> Any:
    import importlib

    module, pip_name = OPTIMIZER_PACKAGES[name]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise RefusedError(f"{pip_name} is not installed in that Python: pip install {pip_name}") from err


def projected_groups(named: Sequence[tuple[str, Any]], plan: dict[str, Any]) -> list[dict[str, Any]]:
    """GaLore's / APOLLO's examples (torchrun_main.py): the nn.Linear weights of modules named attn / mlp in one
    group with the projection's settings, every other parameter in a plain group."""
    name = str(plan.get("optimizer"))
    rank = 1 if name == "apollo-mini" else int(plan.get("projection_rank", 128))
    proj = [p for n, p in named if ("attn" in n or "mlp" in n) and p.dim() == 2]
    ids = {id(p) for p in proj}
    rest = [p for _, p in named if id(p) not in ids]
    group: dict[str, Any] = {"params": proj, "rank": rank, "update_proj_gap": int(plan.get("projection_gap", 200))}
    group.update(scale=0.25, proj_type="std")
    if name.startswith("apollo"):
        group.update(proj="random", scale_type="tensor" if name == "apollo-mini" else "channel")
        group["scale"] = 128.0 if name == "apollo-mini" else 1.0
    return [g for g in ({"params": rest}, group) if g["params"]]


def make_optimizer(name: str, named: Sequence[tuple[str, Any]], plan: dict[str, Any] | None = None) -> Any:
    """The optimizer over the trainable ``named`` parameters, built as its own package's examples build it."""
    okw: dict[str, Any] = {"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-8}
    if name in OPTIMIZER_PACKAGES:
        package = _import_optimizer_package(name)
        if name == "adam-mini":
            cfg = (plan or {}).get("model_dims", {})
            return package.Adam_mini(
                named_parameters=list(named),
                lr=1e-4,
                dim=int(cfg.get("dim", 2048)),
                n_heads=int(cfg.get("n_heads", 32)),
                n_kv_heads=cfg.get("n_kv_heads"),
                verbose=False,
            )
        groups = projected_groups(named, plan or {"optimizer": name})
        if name == "galore-adamw":
            return package.GaLoreAdamW(groups, lr=1e-4)
        return package.APOLLOAdamW(groups, lr=1e-4)
    groups = decay_param_groups(named)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=1e-4, momentum=0.9, foreach=True)
    if name == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(groups, lr=1e-4, scale_parameter=False, relative_step=False, warmup_init=False)
    if name in ("adamw", "adamw-foreach"):
        return torch.optim.AdamW(groups, foreach=True, **okw)
    if name == "adamw-fused":
        return torch.optim.AdamW(groups, fused=True, **okw)
    if name in ("adamw-forloop", "adamw-torch"):
        return torch.optim.AdamW(groups, foreach=False, **okw)
    raise RefusedError(
        f"optimizer {name!r} is not traced (adamw, adamw-fused, adamw-forloop, sgd, adafactor, galore-adamw, "
        "apollo, apollo-mini or adam-mini)"
    )


def decoder_layers(model: Any) -> Any:
    """The decoder layers' ModuleList (``model.model.layers``, GPT-NeoX's ``gpt_neox.layers``): what LISA freezes."""
    layers = getattr(model.get_decoder(), "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise RefusedError("block-wise training is traced only for models whose decoder keeps its layers in .layers")
    return layers


def lisa_interval(model: Any, active: int) -> None:
    """One interval of LMFlow's ``DynamicLayerActivationCallback.switch_active_layers``: every decoder layer frozen,
    then ``active`` of them trainable again (the last ones: the estimate's choice among equal layers); the
    embeddings, final norm and lm_head keep training."""
    layers = decoder_layers(model)
    if active > len(layers):
        raise RefusedError(f"LISA trains {active} layers at a time, but the model has {len(layers)}")
    for i, layer in enumerate(layers):
        for p in layer.parameters():
            p.requires_grad = i >= len(layers) - active


def badam_optimizer(model: Any, plan: dict[str, Any]) -> Any:
    """badam's ``BlockOptimizer`` over AdamW as its README wraps it: blocks of ``active_layers`` decoder layers
    (one ``layers.N.`` prefix by default), embeddings and lm_head frozen; traced at the first block, the run's
    largest interval (the later layers keep their activations for its gradients; with the embeddings frozen,
    nothing before the active block does)."""
    try:
        from badam import BlockOptimizer
    except ImportError as err:
        raise RefusedError("badam is not installed in that Python: pip install badam") from err
    n = len(decoder_layers(model))
    active = int(plan.get("active_layers") or 1)
    if active > n:
        raise RefusedError(f"BAdam trains {active} layers at a time, but the model has {n}")
    named = list(model.named_parameters())
    base = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)
    prefixes = BlockOptimizer.infer_param_groups(None, [name for name, _ in named], False, False)
    blocks = [[p for group in prefixes[i : i + active] for p in group] for i in range(0, len(prefixes), active)]
    return BlockOptimizer(
        base_optimizer=base,
        named_parameters_list=named,
        block_prefix_list=blocks,
        switch_block_every=1000,
        start_block=0,
        switch_mode="descending",
        verbose=0,
    )


def label_weights(tracker: AllocTracker, model: Any) -> tuple[int, int]:
    """Name the parameters' and buffers' allocation events and add any the mode did not see; returns the parameter
    count and the trainable count."""
    seen: dict[int, int] = {e[1]: i for i, e in enumerate(tracker.events) if e[0] == "a"}
    n_param = n_train = 0
    for kind, tensors in (("param", list(model.parameters())), ("buffer", list(model.buffers()))):
        for t in tensors:
            if kind == "param":
                n_param += t.numel()
                n_train += t.numel() if t.requires_grad else 0
            rec = tracker.live.get(id(t.untyped_storage()))
            if rec is not None and rec[0] in seen:
                if tracker.with_ops:
                    tracker.events[seen[rec[0]]][3] = kind
            else:
                tracker.see(t, kind)
    return int(n_param), int(n_train)


# --------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------
def build_config(config: dict[str, Any]) -> Any:
    """transformers' own config class for ``model_type`` (never remote code); a refusal names what is wrong."""
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise RefusedError("the config has no model_type")
    if model_type not in CONFIG_MAPPING:
        raise RefusedError(
            f"model_type {model_type!r} is not an architecture transformers ships (it would need "
            "trust_remote_code, which the trace never uses)"
        )
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise RefusedError(f"model_type {model_type!r} has no causal-LM class in transformers")
    if config.get("quantization_config"):
        raise RefusedError("quantised checkpoints (quantization_config) are not traced yet")
    clean = {k: v for k, v in config.items() if k not in ("auto_map", "_name_or_path", "_provenance")}
    return CONFIG_MAPPING[model_type].from_dict(clean)


def build_model(cfg: Any, dtype: Any, attention: str) -> Any:
    from transformers import AutoModelForCausalLM

    if attention not in ("sdpa", "eager"):
        raise RefusedError(f"attention {attention!r} is not traced (sdpa or eager)")
    try:
        return AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=attention)
    except ValueError as err:
        if attention != "sdpa" or "attention implementation" not in str(err):
            raise
        # a model without SDPA support (Mamba has no attention at all): its own implementation, as from_pretrained
        return AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="eager")


def run_inference(tracker: AllocTracker, cfg: Any, plan: dict[str, Any]) -> tuple[int, int]:
    from transformers import DynamicCache

    dtype = getattr(torch, DTYPES.get(str(plan.get("dtype", "bf16")), "bfloat16"))
    batch, input_len, steps = int(plan["batch"]), int(plan["input_len"]), int(plan.get("decode_steps", 4))
    tracker.mark("load")
    model = build_model(cfg, dtype, str(plan.get("attention", "sdpa")))
    model.eval()
    counts = label_weights(tracker, model)
    with torch.no_grad():
        tracker.mark("prefill")
        ids = torch.ones((batch, input_len), dtype=torch.long)
        cache = DynamicCache(config=model.config)
        # transformers 5.2x renames past_key_values to cache
        cache_key = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        out = model(input_ids=ids, **{cache_key: cache}, use_cache=True, logits_to_keep=1)
        # generate(): the last position's logits, copied to float32, then the next token
        nxt = out.logits[:, -1, :].to(copy=True, dtype=torch.float32).argmax(-1, keepdim=True)
        del out, ids
        for _ in range(steps):
            tracker.mark("decode")
            out = model(input_ids=nxt, **{cache_key: cache}, use_cache=True, logits_to_keep=1)
            nxt = out.logits[:, -1, :].to(copy=True, dtype=torch.float32).argmax(-1, keepdim=True)
            del out
        tracker.mark("end")  # the cache of input_len + decode_steps tokens, still alive
        del cache, nxt
    return counts


#: the plan's methods the trace runs through peft (full fine-tuning needs none)
PEFT_METHODS = ("lora", "ia3", "prompt-tuning", "p-tuning", "prefix-tuning", "ln-tuning", "vera")


def _peft_config(plan: dict[str, Any]) -> Any:
    """peft's config for the plan's method, with peft's own defaults for what the plan does not set."""
    import peft

    method = plan.get("method", "lora")
    if method == "ia3":
        # target_modules / feedforward_modules None: peft's defaults for the model type
        return peft.IA3Config(task_type="CAUSAL_LM")
    if method == "ln-tuning":
        # target_modules None: peft's default norms for the model type
        return peft.LNTuningConfig(task_type="CAUSAL_LM")
    if method == "vera":
        # target_modules None: peft's defaults for the model type
        return peft.VeraConfig(task_type="CAUSAL_LM", r=int(plan.get("vera_rank", 256)))
    tokens = int(plan.get("num_virtual_tokens", 20))
    if method == "prompt-tuning":
        return peft.PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=tokens)
    if method == "p-tuning":
        return peft.PromptEncoderConfig(task_type="CAUSAL_LM", num_virtual_tokens=tokens)
    if method == "prefix-tuning":
        projection = bool(plan.get("prefix_projection", False))
        return peft.PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=tokens, prefix_projection=projection)
    targets = plan.get("lora_targets", "all-linear")
    return peft.LoraConfig(
        r=int(plan.get("lora_rank", 16)),
        lora_alpha=int(plan.get("lora_alpha", 32)),
        lora_dropout=float(plan.get("lora_dropout", 0.0)),
        target_modules=targets if targets == "all-linear" else list(targets),
        task_type="CAUSAL_LM",
        bias="none",
    )


@contextlib.contextmanager
def _fake_safe_deepcopy() -> Iterator[None]:
    """LN tuning's ``deepcopy(layer)`` as a real run makes it: a fake parameter is a FakeTensor, not a Parameter,
    so Tensor.__deepcopy__ would copy its storage's (absent) bytes outside the dispatcher, unseen by the tracker,
    and corrupt the heap at exit; seeded with clones (what Parameter.__deepcopy__ makes), the copy allocates
    through FakeTensorMode as a CPU run's does."""
    import copy

    from peft.tuners.ln_tuning import layer as ln_layer

    def deepcopy(module: Any) -> Any:
        memo: dict[int, Any] = {
            id(p): torch.nn.Parameter(p.detach().clone(), requires_grad=p.requires_grad) for p in module.parameters()
        }
        memo.update({id(b): b.clone() for b in module.buffers()})
        return copy.deepcopy(module, memo)

    original = ln_layer.deepcopy
    ln_layer.deepcopy = deepcopy
    try:
        yield
    finally:
        ln_layer.deepcopy = original


def _peft_model(model: Any, plan: dict[str, Any]) -> Any:
    from peft import get_peft_model

    copies = _fake_safe_deepcopy() if plan.get("method") == "ln-tuning" else contextlib.nullcontext()
    with module_to_noop(), copies:
        return get_peft_model(
            model, _peft_config(plan), autocast_adapter_dtype=plan.get("adapter_dtype", "fp32") == "fp32"
        )


def _mark_loss_phases(tracker: AllocTracker, model: Any) -> Any:
    """A phase marker at the logits' gradient (a hook the output embedding's forward hook puts on the logits)."""

    def at_logits(_module: Any, _inputs: Any, output: Any) -> None:
        if isinstance(output, torch.Tensor) and output.requires_grad:
            output.register_hook(lambda _g: tracker.mark("backward"))

    return model.get_output_embeddings().register_forward_hook(at_logits)


def run_training(tracker: AllocTracker, cfg: Any, plan: dict[str, Any]) -> tuple[int, int]:
    precision = str(plan.get("precision", "bf16"))
    if precision not in ("bf16", "fp16", "fp32", "amp-bf16", "amp-fp16"):
        raise RefusedError(f"precision {precision!r} is not traced")
    method = str(plan.get("method", "lora"))
    if method not in ("full", *PEFT_METHODS):
        raise RefusedError(f"method {method!r} is not traced yet (full, {', '.join(PEFT_METHODS)})")
    param_dtype = getattr(torch, DTYPES.get(precision, "float32"))
    ckpt = bool(plan.get("grad_checkpointing", True))
    if method == "prefix-tuning" and ckpt:
        # (peft refuses it when checkpointing is on before get_peft_model; the trace turns it on after)
        raise RefusedError("prefix tuning does not work with gradient checkpointing (peft refuses it)")
    batch, seq = int(plan["micro_batch"]), int(plan["seq_len"])
    tracker.mark("load")
    model = build_model(cfg, param_dtype, str(plan.get("attention", "sdpa")))
    if method in PEFT_METHODS:
        model = _peft_model(model, plan)
        if ckpt:
            model.enable_input_require_grads()  # as HF Trainer / peft do for reentrant checkpointing
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    block = str(plan.get("block_training", "off"))
    if block != "off" and method != "full":
        raise RefusedError(f"block-wise training ({block}) is traced for full fine-tuning only")
    if block != "off" and ckpt:
        model.enable_input_require_grads()  # as LLaMA-Factory does for frozen embeddings under reentrant checkpoints
    model.train()
    counts = label_weights(tracker, model)
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if block == "badam":
        opt = badam_optimizer(model, plan)
    elif block in ("off", "lisa"):
        # (LISA: HF Trainer's optimizer, built over every parameter before the first switch)
        opt = make_optimizer(str(plan.get("optimizer", "adamw")), trainable, plan)
    else:
        raise RefusedError(f"block_training {block!r} is not traced (off, lisa or badam)")
    skip_scalars = plan.get("optimizer") != "adamw-fused"

    def step() -> None:
        tracker.skip_scalar_allocs = skip_scalars
        opt.step()
        opt.zero_grad(set_to_none=True)
        tracker.skip_scalar_allocs = False

    tracker.mark("optimizer warm-up")
    # (LISA: states for every parameter, what the optimizer holds once every layer has been active)
    for _, p in trainable if block != "badam" else [(n, p) for n, p in model.named_parameters() if p.requires_grad]:
        p.grad = torch.zeros_like(p)
    step()
    if block == "lisa":
        lisa_interval(model, int(plan.get("active_layers") or 2))
    if block != "off":
        counts = (counts[0], sum(p.numel() for p in model.parameters() if p.requires_grad))
    amp_dtype = torch.float16 if precision == "amp-fp16" else torch.bfloat16
    amp = torch.autocast("cpu", dtype=amp_dtype) if precision.startswith("amp") else contextlib.nullcontext()
    hook = _mark_loss_phases(tracker, model)
    tracker.mark("forward")
    ids = torch.ones((batch, seq), dtype=torch.long)
    with amp:
        loss = model(input_ids=ids, labels=ids).loss
    tracker.mark("loss + start of backward")
    loss.backward()
    del loss, ids
    hook.remove()
    tracker.mark("optimizer step")
    step()
    return counts


def trace(request: dict[str, Any]) -> dict[str, Any]:
    """The answer for one request (see the module's docstring)."""
    import peft
    import transformers

    config, plan = request.get("config"), request.get("plan")
    if not isinstance(config, dict) or not isinstance(plan, dict):
        raise RefusedError("the request needs a 'config' object and a 'plan' object")
    mode = plan.get("mode")
    if mode not in ("inference", "finetune"):
        raise RefusedError(f"plan mode {mode!r} is not inference or finetune")
    cfg = build_config(config)
    torch.manual_seed(0)
    patches = apply_cuda_emulation(native_sdpa=False)
    from torch._subclasses.fake_tensor import FakeTensorMode

    tracker = AllocTracker(with_ops=False)
    # (what a library prints, badam's "Parameters with the following prefix will be trainable", goes to stderr:
    # stdout carries the answer alone)
    with contextlib.redirect_stdout(sys.stderr), FakeTensorMode(allow_non_fake_inputs=True), tracker:
        run = run_inference if mode == "inference" else run_training
        n_param, n_train = run(tracker, cfg, plan)
        tracker.finish()
    return {
        "format": FORMAT,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__},
        "model_type": config["model_type"],
        "params": n_param,
        "trainable": n_train,
        "patches": patches,
        "scalar_reads": sum(tracker.scalar_reads.values()),
        "events": tracker.events,
    }


def main() -> int:
    warnings.simplefilter("ignore", FutureWarning)  # transformers' deprecation notes are not the trace's answer
    try:
        request = json.loads(sys.stdin.read())
        if not isinstance(request, dict):
            raise RefusedError("the request on stdin is not a JSON object")
        answer = trace(request)
    except json.JSONDecodeError as err:
        print(f"the request on stdin is not JSON ({err})", file=sys.stderr)
        return EXIT_REFUSED
    except RefusedError as err:
        print(str(err), file=sys.stderr)
        return EXIT_REFUSED
    json.dump(answer, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
