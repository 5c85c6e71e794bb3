"""Every literal the window passes to ``tr()`` has a Simplified Chinese translation (read from the source, so a
new string without one fails here rather than showing English in a Chinese window)."""

from __future__ import annotations

import ast
from pathlib import Path

from vramdesk.core.options import options
from vramdesk.ui import i18n
from vramdesk.ui.option_fields import option_texts

UI = Path(__file__).resolve().parents[2] / "vramdesk" / "ui"


def tr_literals() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(UI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "tr"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.setdefault(node.args[0].value, []).append(f"{path.name}:{node.lineno}")
    return found


def test_every_tr_literal_has_a_chinese_translation() -> None:
    table = i18n.table("zh_CN")
    literals = tr_literals()
    # the form's labels, tooltips and choice names come from the option table, translated where they are shown
    for opt in options():
        if opt.group != "hidden":
            for text in option_texts(opt):
                literals.setdefault(text, []).append(f"option {opt.name}")
    assert len(literals) > 300  # the scan sees the window's strings
    missing = {text: where for text, where in literals.items() if text not in table}
    assert not missing


def test_placeholders_survive_translation() -> None:
    import re

    table = i18n.table("zh_CN")
    for text in tr_literals():
        if text in table:
            assert sorted(re.findall(r"\{\w*\}", text)) == sorted(re.findall(r"\{\w*\}", table[text])), text


def _refusals() -> list[str]:
    """The refusals of absurd input (issue 18) as the window shows them: config bounds, strict JSON, plan bounds."""
    from pydantic import ValidationError

    from vramdesk.core import jsonsafe
    from vramdesk.core.facts import model_facts
    from vramdesk.core.messages import error_text
    from vramdesk.core.scenario import Scenario
    from vramdesk.ui.presenter import describe_error

    base = {
        "model_type": "qwen3",
        "hidden_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
        "intermediate_size": 2048,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
        "head_dim": 128,
    }
    huge = {"hidden_size": 65536, "intermediate_size": 1000000, "num_hidden_layers": 1024}
    out: list[str] = []
    for bad in (
        {"num_hidden_layers": 2**31},  # above 1,024 layers
        {"model_type": "llama", "vocab_size": 9999999},  # a vocabulary above 4,194,304
        {"rope_theta": float("nan")},
        {"model_type": "llama", **huge, "num_attention_heads": 512, "num_key_value_heads": 512},  # 2e14 parameters
    ):
        try:
            model_facts({**base, **bad}, "x/y")
        except ValueError as err:
            out.append(error_text(err))
    try:  # more GPUs than a plan models
        Scenario.model_validate({"model": {"id": "a/b"}, "hardware": {"nodes": 4096, "gpu_count": 4096}})
    except ValidationError as err:
        out.append(describe_error(err))
    for bad in (
        b'{"a": NaN}',
        b"[" * 100 + b"]" * 100,
        b'{"a":"\xff"}',
        b'{"a": 1e999}',
        b'{"a": ' + b"9" * 200 + b"}",
    ):
        try:
            jsonsafe.loads(bad, source="config.json")
        except jsonsafe.JsonError as err:
            out.append(error_text(err))
    assert len(out) == 10
    return out


def test_refusals_of_absurd_input_read_in_chinese() -> None:
    from i18ncheck import english_left

    from vramdesk.ui.core_text import localize

    for text in _refusals():
        zh = localize(text, "zh_CN")
        left = english_left(
            zh,
            ignore={"NaN", "hardware", "rope_theta", "nan", "llama", "qwen3"},
            whitelist={"utf", "EiB", "JSON", "GPU"},
        )
        assert zh != text and not left, (text, zh, left)
