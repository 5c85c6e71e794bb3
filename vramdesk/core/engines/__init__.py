"""The serving engines, one module each, behind a small registry.

``ENGINES`` maps the scenario's engine names (``scenario.Engine``) to the engine objects; ``engine(name)`` is the
lookup callers use instead of comparing names. Every engine answers the questions of :class:`Engine`: its run, its
KV rule per layer kind, its tensor-parallel check and the capabilities the estimator, the speed model and the solver
branch on.
"""

from __future__ import annotations

from ..messages import Message
from . import llamacpp, ollama, sglang, transformers, vllm
from .base import Context, Engine, EngineRun, torch_context
from .vllm import vllm_kv_share, vllm_tp_problem

#: name -> engine, in the order the scenario's literal lists them
ENGINES: dict[str, Engine] = {
    e.name: e for e in (transformers.ENGINE, vllm.ENGINE, llamacpp.ENGINE, sglang.ENGINE, ollama.ENGINE)
}

UNKNOWN_ENGINE = Message("engine.unknown", "unknown engine {name!r}: the engines are {known}")


class UnknownEngineError(ValueError):
    """An engine name the registry does not know."""


def engine(name: str) -> Engine:
    """The engine called ``name`` (as ``scenario.Engine`` spells it)."""
    try:
        return ENGINES[name]
    except KeyError:
        known = ", ".join(ENGINES)
        raise UnknownEngineError(UNKNOWN_ENGINE(name=name, known=known)) from None


__all__ = [
    "ENGINES",
    "Context",
    "Engine",
    "EngineRun",
    "UnknownEngineError",
    "engine",
    "torch_context",
    "vllm_kv_share",
    "vllm_tp_problem",
]
