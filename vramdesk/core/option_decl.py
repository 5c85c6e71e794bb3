"""How a setting a user chooses is declared: :func:`option`, the one declaration the command line, the form, the
comparison and saved files read back (``vramdesk.core.options``), and the frozen base of every settings model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict


def option(
    default: Any,
    *,
    label: str,
    help: str,
    group: str,
    flag: str | None = None,
    shown: str | None = None,
    choices: dict[str, tuple[str, str]] | None = None,
    form: JsonDict | None = None,
    **bounds: Any,
) -> Any:
    """One setting a user chooses, declared once: its default and bounds (pydantic's ``ge`` / ``gt`` / ``le`` /
    ``lt``) and what the command line, the form and the comparison show for it (``vramdesk.core.options`` reads
    these back as the option table).

    ``label``: the form's label (``&`` marks the keyboard shortcut); ``help``: the tooltip and the command line's
    help; ``group``: the form box it sits in ("model", "inference", "vllm", "llamacpp", "sglang", "device_map",
    "finetune", "hardware"; "hidden" = scripts and saved files only); ``flag``: the long option when it is not the
    field's name (``--gpus`` for ``gpu_count``); ``shown``: the default in words when it is None ("auto", "all");
    ``choices``: value -> (label, tip) for a choice the form names in words (a tip for each value it offers);
    ``form``: how the form's widget shows it (``values``: the values it offers, in its order; ``step``,
    ``decimals``, ``minimum``, ``prefix``, ``suffix``; ``special``: the text at the minimum; ``readout``: a
    "largest that fits" label beside it; ``beside``: shown on the row of that option; ``accessible``: the name a
    screen reader says; ``each``: a name per value of a list). Every text is English; the window translates it.
    The order of the declarations is the order of the form and of the command line's help."""
    named: JsonDict = {str(k): [label_, tip] for k, (label_, tip) in (choices or {}).items()}
    extra: JsonDict = {"group": group, "flag": flag, "shown": shown, "choices": named, "form": form or {}}
    return Field(default, title=label, description=help, json_schema_extra=extra, **bounds)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
