"""What an exported chart says about itself: a title (the plan's name), a subtitle (model, weights, workload,
GPU) and a source line (vramdesk's version and the date), so a picture pasted into a report still tells what it
shows. Qt-free: the chart exports draw these texts, the report writers print them.

The pieces are :class:`~vramdesk.core.messages.Text` with message ids, so the window shows them in its
language; data (the model id, a GPU's name, the plan's name) stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vramdesk import __version__
from vramdesk.core.gpu import hardware_text
from vramdesk.core.messages import Message, Text, join
from vramdesk.core.plan_name import tokens_text
from vramdesk.core.scenario import FinetuneWorkload, Scenario

from .tables import now_text

_SOURCE = Message("caption.source", "vramdesk {version} · {date}")
_CHECKPOINT = Message("caption.checkpoint_weights", "checkpoint weights")
_WEIGHTS = Message("caption.weights", "{weights} weights")
_INFERENCE = Message("caption.inference", "inference ({engine}), {prompt} prompt + {output} out, batch {batch:,}")
_AUTO_PROMPT = Message("caption.inference_auto", "inference ({engine}), {output} out, batch {batch:,}")
_FINETUNE = Message("caption.finetune", "{method}, {seq} seq, micro-batch {micro_batch:,}")
_NO_GPU = Message("caption.no_gpu", "no GPU chosen")
_COMPARISON = Message("caption.comparison", "Comparison of {n} plans")
_METHODS = {
    "full": Message("caption.method_full", "full fine-tune"),
    "lora": Message("caption.method_lora", "LoRA fine-tune"),
    "qlora": Message("caption.method_qlora", "QLoRA fine-tune"),
}
#: what stands between the subtitle's pieces
SEPARATOR = " · "


@dataclass(frozen=True)
class Caption:
    """The three lines around an exported chart."""

    title: str
    subtitle: str
    source: str


def source_line(created: str | None = None) -> Text:
    """``vramdesk 0.9.0 · 2026-12-02 10:00 UTC``."""
    return _SOURCE(version=__version__, date=created or now_text())


def subtitle(scenario: Scenario) -> Text:
    """Model · weights · workload · GPU, from the scenario as the user set it."""
    from vramdesk.core.engines import engine

    weights = _CHECKPOINT() if scenario.weights == "auto" else _WEIGHTS(weights=scenario.weights.upper())
    w = scenario.workload
    if isinstance(w, FinetuneWorkload):
        method = _METHODS[w.method]() if w.method in _METHODS else Text(w.method)
        work = _FINETUNE(method=method, seq=tokens_text(w.seq_len), micro_batch=w.micro_batch)
    else:
        name = str(engine(w.engine).display_name)
        output = tokens_text(w.output_len)
        if w.input_len:
            work = _INFERENCE(engine=name, prompt=tokens_text(w.input_len), output=output, batch=w.batch)
        else:
            work = _AUTO_PROMPT(engine=name, output=output, batch=w.batch)
    hw = scenario.hardware
    gpus = str(hardware_text(hw.gpu, hw.gpu_count, hw.nodes)) if hw.gpu else _NO_GPU()
    return join(SEPARATOR, scenario.model.id, weights, work, gpus)


def caption(scenario: Scenario, created: str | None = None) -> Caption:
    """The caption of one plan's chart: its name (the model when it has none), what it is, where it came from."""
    return Caption(scenario.name or scenario.model.id, subtitle(scenario), source_line(created))


def comparison_caption(labels: Sequence[str], created: str | None = None) -> Caption:
    """The caption of a comparison's chart: how many plans, their names, where it came from."""
    return Caption(_COMPARISON(n=len(labels)), join(SEPARATOR, *labels), source_line(created))


__all__ = ["SEPARATOR", "Caption", "caption", "comparison_caption", "source_line", "subtitle"]
