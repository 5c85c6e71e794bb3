"""A plan's generated name ("Qwen3-4B on an RTX 4090", "Llama-3.1-70B QLoRA, 4k seq on 8 x H100 SXM").

A scenario whose name is :func:`plan_name` of itself has a generated name: it follows the plan when the plan
changes (:func:`renamed`), until the user types a name of their own. The name is data (saved in files, shown in
titles, reports and comparisons), so it is English like a file name, whatever the window's language.
"""

from __future__ import annotations

from .engines import engine
from .gpu import hardware_text
from .scenario import FinetuneWorkload, Scenario

#: GPU names that start with the sound of a vowel take "an" ("an RTX 4090", "an H100 SXM", "an MI300X")
_AN = frozenset("AEFHILMNORSX8")
_METHODS = {"full": "full fine-tune", "lora": "LoRA", "qlora": "QLoRA"}
#: the longest name a scenario takes (``Scenario.name``); a generated one is cut to fit
NAME_MOST = 200


def tokens_text(n: int) -> str:
    """A token count as a name says it: 4096 -> "4k", 7680 -> "7.5k", 500 -> "500"."""
    if n < 1024:
        return f"{n:,}"
    k = n / 1024
    return f"{k:.0f}k" if k == int(k) else f"{k:.1f}k".replace(".0k", "k")


def plan_name(scenario: Scenario) -> str:
    """What the plan is, in a few words: the model (and its weights when they are not the checkpoint's), the
    engine when not transformers, the workload's length and batch, and the GPUs."""
    model = _model_words(scenario.model.id)
    head = model if scenario.weights == "auto" else f"{model} {scenario.weights.upper()}"
    parts: list[str] = []
    w = scenario.workload
    if isinstance(w, FinetuneWorkload):
        head = f"{head} {_METHODS.get(w.method, w.method)}"
        parts.append(f"{tokens_text(w.seq_len)} seq")
        if w.micro_batch > 1:
            parts.append(f"micro-batch {w.micro_batch:,}")
        par = scenario.parallelism
        if par.fsdp:
            parts.append("FSDP")
        elif par.zero:
            parts.append(f"ZeRO-{par.zero}")
    else:
        if w.engine != "transformers":
            parts.append(engine(w.engine).display_name)
        if w.input_len:
            parts.append(f"{tokens_text(w.input_len)} prompt")
        if w.batch > 1:
            parts.append(f"batch {w.batch:,}")
    hw = scenario.hardware
    if hw.gpu:
        gpus = str(hardware_text(hw.gpu, hw.gpu_count, hw.nodes))
        article = "" if gpus[0].isdigit() and " x " in gpus else ("an " if gpus[0] in _AN else "a ")
        where = f" on {article}{gpus}"
    else:
        where = ""
    return _shortened(", ".join([head, *parts]) + where, NAME_MOST)


def _model_words(model_id: str) -> str:
    """The model as a name says it: the repo's name, or a local file's folder ("./my-model/config.json" ->
    "my-model"), at most 80 characters."""
    path = model_id.replace("\\", "/").rstrip("/").split("/")
    while len(path) > 1 and path[-1] in ("config.json", "", "."):
        path.pop()
    return _shortened(path[-1] or model_id, 80)


def _shortened(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"


def has_generated_name(scenario: Scenario) -> bool:
    """The scenario's name is the one :func:`plan_name` gives it (not one the user typed)."""
    return scenario.name == plan_name(scenario)


def renamed(before: Scenario, after: Scenario) -> Scenario:
    """``after`` with its generated name brought up to date when ``before`` had a generated one; a name the user
    typed (or no name) is kept as it is."""
    if before.name and has_generated_name(before):
        name = plan_name(after)
        if after.name != name:
            return after.model_copy(update={"name": name})
    return after


__all__ = ["has_generated_name", "plan_name", "renamed", "tokens_text"]
