"""The option table: every setting a user chooses, read back from its one declaration in ``scenario.py``.

Each field of the scenario's workloads, hardware and parallelism is declared once with
:func:`vramdesk.core.scenario.option` (default, bounds, label, help, form group, command-line flag). This module
turns those declarations into :class:`Option` records, so the command line (its options, key sets and the
``--jsonl`` keys), the window's form values and the comparison's labels are driven by the table instead of
spelling every option again.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from .engine_options import OllamaOptions, SglangOptions
from .scenario import (
    FinetuneWorkload,
    Hardware,
    InferenceWorkload,
    LlamaCppOptions,
    Parallelism,
    Scenario,
    VllmOptions,
)

Kind = Literal["bool", "int", "float", "choice", "text", "list"]

#: where each declaring model sits in a scenario's saved form, and which workload it belongs to (None = both)
_SECTIONS: tuple[tuple[type[BaseModel], tuple[str, ...], str | None], ...] = (
    (Scenario, (), None),
    (InferenceWorkload, ("workload",), "inference"),
    (VllmOptions, ("workload", "vllm"), "inference"),
    (LlamaCppOptions, ("workload", "llamacpp"), "inference"),
    (SglangOptions, ("workload", "sglang"), "inference"),
    (OllamaOptions, ("workload", "ollama"), "inference"),
    (FinetuneWorkload, ("workload",), "finetune"),
    (Hardware, ("hardware",), None),
    (Parallelism, ("parallelism",), None),
)


@dataclass(frozen=True)
class Option:
    """One user-settable option, as the command line and the window see it."""

    #: the field's name (``max_num_seqs``); also the ``--jsonl`` key unless ``flag`` differs
    name: str
    #: where the value sits in the saved scenario (``("workload", "vllm", "max_num_seqs")``)
    path: tuple[str, ...]
    #: the workload it applies to ("inference", "finetune"), or None for both
    mode: str | None
    kind: Kind
    #: the allowed values of a choice, in the declared order
    values: tuple[Any, ...]
    #: None is allowed (the default in words is ``shown``)
    optional: bool
    default: Any
    #: pydantic's bounds: "ge", "gt", "le", "lt" -> number
    bounds: Mapping[str, float]
    label: str
    help: str
    group: str
    #: the long option's name without dashes, and the ``--jsonl`` key (``gpus`` for ``gpu_count``)
    flag: str
    shown: str | None
    #: value (as text) -> (label, tip), for the choices the form names in words
    choices: Mapping[str, tuple[str, str]]
    #: how the form's widget shows it (see ``scenario.option``: values, step, decimals, minimum, prefix, suffix,
    #: special, readout, beside, accessible, each)
    form: Mapping[str, Any]

    @property
    def cli(self) -> str:
        """The long option: ``--max-num-seqs``."""
        return "--" + self.flag.replace("_", "-")

    @property
    def plain_label(self) -> str:
        """The label without its keyboard-shortcut mark (``&Batch`` -> ``Batch``)."""
        return self.label.replace("&&", "\0").replace("&", "").replace("\0", "&")

    def default_text(self) -> str:
        """The default as the command line's help shows it (``1``, ``auto``, ``on``)."""
        if self.default is None:
            return self.shown or "none"
        if isinstance(self.default, bool):
            return "on" if self.default else "off"
        if isinstance(self.default, tuple):
            return ",".join(self.default) or "none"
        return str(self.default)

    def get(self, data: Mapping[str, Any]) -> Any:
        """This option's value in a scenario's saved form (a dict), or None where it has none."""
        node: Any = data
        for key in self.path:
            if not isinstance(node, Mapping) or key not in node:
                return None
            node = node[key]
        return node

    def put(self, data: dict[str, Any], value: Any) -> None:
        """Set this option in a scenario's saved form (a dict), making the sections it needs."""
        node = data
        for key in self.path[:-1]:
            node = node.setdefault(key, {})
        node[self.path[-1]] = value


def _kind(annotation: Any) -> tuple[Kind, tuple[Any, ...], bool]:
    args = get_args(annotation)
    origin = get_origin(annotation)
    optional = False
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        optional = len(inner) < len(args)
        annotation = inner[0]
        origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "choice", args, optional
    if origin is tuple:
        return "list", (), optional
    table: dict[Any, Kind] = {bool: "bool", int: "int", float: "float", str: "text"}
    return table[annotation], (), optional


def _options() -> Iterator[Option]:
    seen: dict[str, Option] = {}
    for model, where, mode in _SECTIONS:
        for name, info in model.model_fields.items():
            extra = info.json_schema_extra
            if not isinstance(extra, dict) or info.title is None:
                continue  # not a user setting (kind, schema_version, name, the nested sections)
            kind, values, optional = _kind(info.annotation)
            bounds = {
                key: float(getattr(m, key))
                for m in info.metadata
                for key in ("ge", "gt", "le", "lt")
                if getattr(m, key, None) is not None
            }
            choices = extra.get("choices")
            named = {
                str(k): (str(v[0]), str(v[1]))
                for k, v in (choices.items() if isinstance(choices, dict) else ())
                if isinstance(v, list)
            }
            opt = Option(
                name=name,
                path=(*where, name),
                mode=mode,
                kind=kind,
                values=values,
                optional=optional,
                default=info.default,
                bounds=bounds,
                label=info.title,
                help=info.description or "",
                group=str(extra["group"]),
                flag=str(extra.get("flag") or name),
                shown=None if extra.get("shown") is None else str(extra["shown"]),
                choices=named,
                form=dict(form) if isinstance(form := extra.get("form"), dict) else {},
            )
            if name in seen:  # declared in both workloads (attention): one option for both
                first = seen[name]
                if (first.label, first.help, first.default, first.values) != (
                    opt.label,
                    opt.help,
                    opt.default,
                    opt.values,
                ):
                    raise AssertionError(f"option '{name}' is declared twice with different texts or values")
                seen[name] = replace(first, mode=None)
                continue
            seen[name] = opt
    yield from seen.values()


@cache
def options() -> tuple[Option, ...]:
    """Every option, in declaration order (the order the command line's help lists them)."""
    return tuple(_options())


@cache
def by_flag() -> dict[str, Option]:
    """Option by its flag / ``--jsonl`` key (``gpus``, ``max_num_seqs``)."""
    return {o.flag: o for o in options()}


@cache
def by_path() -> dict[str, Option]:
    """Option by its dotted place in a saved scenario (``workload.vllm.max_num_seqs``), as comparisons name them."""
    return {".".join(o.path): o for o in options()}


def option(name: str) -> Option:
    """The option of one field name; a KeyError names the known ones."""
    for o in options():
        if o.name == name:
            return o
    raise KeyError(f"no option '{name}'; known: {', '.join(o.name for o in options())}")
