"""The method's module for a plan: its refusals and what it trains."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .common import PROMPT_METHODS, MethodParams
from .ia3 import check_ia3, ia3_params
from .ln_tuning import check_ln_tuning, ln_tuning_params
from .prompts import check_prefix, prompt_learning
from .vera import check_vera, vera_params

if TYPE_CHECKING:
    from ..facts import ModelFacts
    from ..workloads import FinetuneWorkload


def check_method(facts: ModelFacts, work: FinetuneWorkload) -> None:
    """Refuse a method the model has no default targets for, naming the method and the model type, and a method
    with an option peft refuses it with."""
    if work.method == "prefix-tuning":
        check_prefix(facts, work)
    elif work.method == "ia3":
        check_ia3(facts)
    elif work.method == "ln-tuning":
        check_ln_tuning(facts)
    elif work.method == "vera":
        check_vera(facts)


def method_params(
    facts: ModelFacts, work: FinetuneWorkload, adapter_bytes: int, output_bytes: int, stream_bytes: int = 2
) -> MethodParams:
    """What ``work.method`` (not LoRA, not a full fine-tune; :func:`check_method` has passed) trains on ``facts``;
    ``adapter_bytes``: bytes of one of its parameters (4 with peft's fp32 adapters); ``output_bytes``: of one
    element of a frozen linear's output; ``stream_bytes``: of one element of the residual stream."""
    if work.method in PROMPT_METHODS:
        return prompt_learning(facts, work)
    if work.method == "ln-tuning":
        return ln_tuning_params(facts, stream_bytes)
    if work.method == "vera":
        return vera_params(facts, work.vera_rank, adapter_bytes, output_bytes)
    return ia3_params(facts, adapter_bytes, output_bytes)
