"""The option table (vramdesk/core/options.py): every setting declared once in scenario.py reaches the command
line, ``--jsonl``, the form's values and back, with its bounds and texts, without being spelled again."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from vramdesk import cli
from vramdesk.core import scenario as sc
from vramdesk.core.engine_options import OllamaOptions, SglangOptions
from vramdesk.core.options import Option, by_flag, option, options
from vramdesk.ui import i18n
from vramdesk.ui.presenter import FormValues, form_from_scenario, scenario_from_form

MODEL = "Qwen/Qwen3-8B"


def _fields(model: type[sc.BaseModel]) -> set[str]:
    return {n for n, f in model.model_fields.items() if n != "kind" and f.json_schema_extra is not None}


def test_every_setting_of_a_scenario_is_in_the_table_once() -> None:
    declared = set().union(
        *(
            _fields(m)
            for m in (
                sc.InferenceWorkload,
                sc.FinetuneWorkload,
                sc.VllmOptions,
                sc.LlamaCppOptions,
                SglangOptions,
                OllamaOptions,
                sc.Hardware,
                sc.Parallelism,
                sc.Scenario,
            )
        )
    )
    names = [o.name for o in options()]
    assert sorted(names) == sorted(declared) and len(names) == len(set(names))
    # the nested sections and the bookkeeping fields are not settings
    assert not {"vllm", "llamacpp", "sglang", "ollama", "schema_version", "model", "workload", "kind"} & set(names)
    for o in options():
        assert o.label and o.help and o.group, o.name
        assert o.kind != "choice" or o.default in o.values, o.name


def test_attention_is_one_option_for_both_workloads() -> None:
    att = option("attention")
    assert att.mode is None and att.path == ("workload", "attention")
    assert option("batch").mode == "inference" and option("micro_batch").mode == "finetune"
    assert option("gpu_count").cli == "--gpus" and by_flag()["gpus"].name == "gpu_count"
    with pytest.raises(KeyError, match="no option 'bogus'; known: weights, engine"):
        option("bogus")


def _other_value(o: Option) -> tuple[str, Any]:
    """A valid value other than the default: (command-line text, the value the scenario then holds)."""
    if o.kind == "bool":
        return ("", True) if o.default in (False, None) else ("", False)
    if o.kind == "choice":
        # the last other value (vision_tower "absent" works for every model, where "trained" needs a vision tower);
        # a method that runs with the other defaults (prefix tuning needs gradient checkpointing off)
        others = [v for v in o.values if v != o.default and not (o.name == "method" and v == "prefix-tuning")]
        v = others[-1]
        return str(v), v
    if o.kind == "list":
        return ("q,v", ("q", "v")) if o.name == "lora_targets" else ("lm_head", ("lm_head",))
    if o.kind == "text":
        return ("bf16", "bf16") if o.name == "weights" else ("RTX 4090", "RTX 4090")
    if o.kind == "float":
        v = 1.0 if o.default is None else (o.default / 2 if o.default else 0.5)
        return str(v), v
    v = 2 if o.default in (None, 1) else o.default + 1
    return str(v), v


@pytest.mark.parametrize("opt", options(), ids=lambda o: o.name)
def test_every_option_reaches_the_scenario_from_the_command_line(opt: Option) -> None:
    text, value = _other_value(opt)
    argv = ["estimate", MODEL, "--gpus", "4", "--mode", opt.mode or "finetune"]
    if opt.kind == "bool":
        argv.append(opt.cli if value else opt.cli.replace("--", "--no-", 1))
    else:
        argv += [opt.cli, text]
    if opt.name == "gpu_count":
        argv[3] = text
    if opt.name == "block_training":  # (LISA and BAdam train the layers of a full fine-tune)
        argv += ["--method", "full"]
    ns = cli.build_parser().parse_args(argv)
    scenario = cli.scenario_from(MODEL, cli._options_dict(ns))
    assert opt.get(scenario.model_dump()) == value


@pytest.mark.parametrize("opt", options(), ids=lambda o: o.name)
def test_every_option_is_a_jsonl_key(opt: Option) -> None:
    _, value = _other_value(opt)
    line = {
        "model": MODEL,
        "gpus": 4,
        "mode": opt.mode or "finetune",
        # offloading parameters is a ZeRO-3 feature: the plan must have it to be estimated
        **({"zero": 3} if opt.name == "offload" else {}),
        **({"method": "full"} if opt.name == "block_training" else {}),
        opt.flag: list(value) if isinstance(value, tuple) else value,
    }
    out = io.StringIO()
    path = io.BytesIO((json.dumps(line) + "\n").encode())
    stdin = type("S", (), {"buffer": path, "read": lambda self: ""})()
    saved = cli.sys.stdin
    cli.sys.stdin = stdin  # type: ignore[assignment]
    try:
        rc = cli._jsonl("-", out)
    finally:
        cli.sys.stdin = saved
    result = json.loads(out.getvalue())
    assert rc == 0, result
    got = opt.get(result["scenario"])
    assert (tuple(got) if isinstance(got, list) else got) == value


def test_a_setting_of_the_other_workload_is_refused_by_name() -> None:
    err = io.StringIO()
    saved = cli.sys.stderr
    cli.sys.stderr = err
    try:
        assert cli.main(["estimate", MODEL, "--batch", "4", "--mode", "finetune"], out=io.StringIO()) == 2
    finally:
        cli.sys.stderr = saved
    assert err.getvalue().strip() == "vramdesk: error: --batch does not apply to --mode finetune"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch", "0"], "argument --batch: must be at least 1, got 0"),
        (["--output-len", "-1"], "argument --output-len: must be 0 or more, got -1"),
        (["--gpu-memory-utilization", "1.5"], "argument --gpu-memory-utilization: must be in (0, 1], got 1.5"),
        (["--cpu-memory-gib", "-1"], "argument --cpu-memory-gib: must be 0 or more, got -1.0"),
        (["--max-memory-gib", "0"], "argument --max-memory-gib: must be more than 0, got 0.0"),
    ],
)
def test_bounds_come_from_the_declaration(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["estimate", MODEL, *args])
    assert message in capsys.readouterr().err


def test_an_upper_bound_is_the_scenarios_to_name() -> None:
    ns = cli.build_parser().parse_args(["estimate", MODEL, "--batch", "70000"])
    with pytest.raises(cli.CliError, match=r"workload\.inference\.batch: Input should be less than or equal to 65536"):
        cli.scenario_from(MODEL, cli._options_dict(ns))


FORM_OPTIONS = [o for o in options() if o.name in FormValues.names()]


@pytest.mark.parametrize("opt", FORM_OPTIONS, ids=lambda o: o.name)
def test_every_form_option_round_trips_through_the_form(opt: Option) -> None:
    _, value = _other_value(opt)
    mode = opt.mode or "finetune"
    data: dict[str, Any] = {"model": {"id": MODEL}, "workload": {"kind": mode}, "hardware": {"gpu_count": 4}}
    opt.put(data, value)
    if opt.name == "block_training":
        data["workload"]["method"] = "full"
    scenario = sc.Scenario.model_validate(data)
    form = form_from_scenario(scenario)
    back = scenario_from_form(scenario, form)
    assert back == scenario


def test_the_form_shows_every_option_a_user_sets_in_the_window() -> None:
    shown = {o.name for o in options() if o.group != "hidden"}
    assert shown <= set(FormValues.names())


def test_every_text_the_window_shows_for_an_option_has_a_chinese_translation() -> None:
    from vramdesk.ui.option_fields import option_texts

    table = i18n.table("zh_CN")
    missing = sorted(
        (o.name, text) for o in options() if o.group != "hidden" for text in option_texts(o) if text not in table
    )
    assert missing == []
