"""How a comparison reads: the order of its blocks (the verdict and the totals first, then the components at the
peak, then the inputs in groups), each input's group and human label, and the titles of the blocks.

Inputs are named by the option table (:func:`vramdesk.core.options.by_path`: each option's label and form group);
the few scenario fields that are not options (the model, the kind of work) have a written label here. Labels and
titles are :class:`~vramdesk.core.messages.Text` with message ids: the files print their English, the window shows
them in its language. The dotted field path stays the row's machine key (CSV / JSON ``name``).
"""

from __future__ import annotations

from vramdesk.core.messages import Message, Text
from vramdesk.core.options import by_path

#: the blocks of a comparison, top to bottom
RESULT_SECTIONS = ("verdict", "total", "speed", "component")
#: the groups of the inputs, top to bottom (Training only where a compared plan trains)
INPUT_GROUPS = ("model", "workload", "training", "hardware", "engine")

_TITLES: dict[str, Message] = {
    "verdict": Message("compare.title.verdict", "Fit on the GPU"),
    "total": Message("compare.title.totals", "Totals ({unit})"),
    "speed": Message("compare.title.speed", "Speed"),
    "component": Message("compare.title.components", "Components at the peak ({unit})"),
    "input": Message("compare.title.inputs", "Inputs"),
    "model": Message("compare.group.model", "Model"),
    "workload": Message("compare.group.workload", "Workload"),
    "training": Message("compare.group.training", "Training"),
    "hardware": Message("compare.group.hardware", "Hardware"),
    "engine": Message("compare.group.engine", "Engine"),
}

#: the option table's form groups -> the comparison's input groups (fine-tuning options: see _FINETUNE_WORKLOAD)
_FORM_GROUPS = {
    "model": "model",
    "inference": "workload",
    "finetune": "training",
    "hardware": "hardware",
    "vllm": "engine",
    "llamacpp": "engine",
    "ollama": "engine",
    "device_map": "engine",
    "hidden": "engine",
}
#: fine-tuning options that say what the work is (the rest say how it trains)
_FINETUNE_WORKLOAD = frozenset({"method", "micro_batch", "seq_len", "mean_seq_len", "grad_accum"})
#: parallelism options that only training uses (ZeRO, FSDP, offload): Training, not Hardware
TRAINING_PARALLELISM = frozenset(
    {"zero", "zero_bucket", "zero_overlap_comm", "fsdp", "fsdp_strategy", "fsdp_version", "offload"}
)

#: the scenario fields that are not options: their group and label
_WRITTEN: dict[str, tuple[str, Message]] = {
    "model.id": ("model", Message("compare.input.model_id", "Model ID")),
    "model.revision": ("model", Message("compare.input.revision", "Revision")),
    "workload.kind": ("workload", Message("compare.input.kind", "Kind of work")),
}

#: the rows of the results, by machine key
_RESULTS: dict[str, Message] = {
    "GPU": Message("compare.row.gpu", "GPU"),
    "verdict": Message("compare.row.verdict", "Verdict"),
    "error": Message("compare.row.error", "Error"),
    "peak allocated": Message("compare.row.peak_allocated", "Peak allocated"),
    "peak reserved": Message("compare.row.peak_reserved", "Peak reserved"),
    "on the device (per GPU)": Message("compare.row.device", "On the device (per GPU)"),
    "host memory (per machine)": Message("compare.row.host", "Host memory (per machine)"),
    "peak phase": Message("compare.row.peak_phase", "Peak phase"),
    "decode tokens/s": Message("compare.row.decode", "Decode speed (tokens/s)"),
    "training tokens/s": Message("compare.row.training", "Training speed (tokens/s)"),
}
_ONE_GPU = Message("compare.row.one_gpu", "GPU {gpu} on the device")
_GPU_RUN = Message("compare.row.gpu_run", "GPU {first}-{last} on the device, each")


def title(block: str, unit: str = "GiB") -> Text:
    """A block's title (``Totals (GiB)``, ``Hardware``)."""
    return _TITLES[block](unit=unit) if block in ("total", "component") else _TITLES[block]()


def input_group(path: str) -> str:
    """Which group an input (its dotted path) shows in."""
    opt = by_path().get(path)
    if opt is None:
        return _WRITTEN[path][0] if path in _WRITTEN else "model"
    if opt.path[0] == "parallelism" and opt.name in TRAINING_PARALLELISM:
        return "training"
    if opt.group == "finetune" and opt.name in _FINETUNE_WORKLOAD:
        return "workload"
    if opt.name == "engine":
        return "engine"
    return _FORM_GROUPS.get(opt.group, "workload")


def input_label(path: str) -> Text:
    """An input's label in English: its option's (without the keyboard mark), else a written one."""
    opt = by_path().get(path)
    if opt is not None:
        return Text(_capitalized(opt.plain_label.strip()))
    if path in _WRITTEN:
        return _WRITTEN[path][1]()
    # a field that is neither (none today; a test checks): its last name in words, never the dotted path
    return Text(path.rsplit(".", 1)[-1].replace("_", " ").capitalize())


def input_cell(path: str, value: object) -> str | None:
    """What a choice shows in words (``0`` -> ``off`` for ZeRO), or None where the value speaks for itself."""
    opt = by_path().get(path)
    if opt is None or not opt.choices:
        return None
    named = opt.choices.get(str(value))
    return named[0] if named is not None and named[0] != str(value) else None


def _capitalized(label: str) -> str:
    """A check box's label as a row's name: ``gradient checkpointing`` -> ``Gradient checkpointing`` (a name
    such as ``overlap_comm`` stays as it is written)."""
    first = label.split(" ", 1)[0]
    return label[:1].upper() + label[1:] if first.isalpha() and first.islower() else label


def result_label(name: str) -> Text:
    """The label of a result row (``peak allocated`` -> ``Peak allocated``)."""
    return _RESULTS[name]() if name in _RESULTS else Text(name)


def gpu_label(first: int, last: int) -> Text:
    return _ONE_GPU(gpu=first) if first == last else _GPU_RUN(first=first, last=last)


__all__ = [
    "INPUT_GROUPS",
    "RESULT_SECTIONS",
    "TRAINING_PARALLELISM",
    "gpu_label",
    "input_cell",
    "input_group",
    "input_label",
    "result_label",
    "title",
]
