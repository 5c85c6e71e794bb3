"""Planning with a DeepSpeed config in the window (File > Apply DeepSpeed config…) and on the command line: the
file's settings reach the form and the estimate is the core's own for them; a file that cannot be used is named
with its key and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from uiwindow import make_window, scenario_for

from vramdesk.cli import main
from vramdesk.core.estimate import estimate
from vramdesk.core.scenario import Scenario
from vramdesk.services.catalog import default_catalog
from vramdesk.services.deepspeed import (
    DeepSpeedConfigError,
    apply_deepspeed,
    describe_plan,
    looks_like_deepspeed,
    parse_deepspeed,
)
from vramdesk.ui import window_actions
from vramdesk.ui.presenter import gib

MODEL = "meta-llama/Llama-3.1-8B"
ZERO3 = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 4,
    "bf16": {"enabled": True},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme"}, "reduce_bucket_size": 200_000_000},
}


def _write(tmp_path: Path, config: object, name: str = "ds_config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_the_file_sets_what_it_says_and_keeps_the_rest() -> None:
    base = Scenario.model_validate(
        {
            "model": {"id": MODEL},
            "hardware": {"gpu": "H100 SXM", "gpu_count": 8},
            "workload": {"kind": "finetune", "method": "full", "seq_len": 4096, "optimizer": "sgd"},
        }
    )
    plan = parse_deepspeed(ZERO3)
    planned = apply_deepspeed(base, plan)
    assert planned.model == base.model and planned.hardware == base.hardware
    w = planned.workload
    assert (w.kind, w.method, w.seq_len) == ("finetune", "full", 4096)
    assert (w.micro_batch, w.grad_accum, w.precision, w.optimizer) == (2, 4, "amp-bf16", "sgd")
    p = planned.parallelism
    assert (p.zero, p.offload, p.zero_bucket) == (3, "optimizer", 200_000_000)
    assert describe_plan(plan).startswith("ZeRO-3, optimizer offload, amp-bf16")
    # an inference plan becomes a fine-tuning one (a DeepSpeed file describes training)
    inference = Scenario.model_validate({"model": {"id": MODEL}, "hardware": {"gpu_count": 8}})
    assert apply_deepspeed(inference, plan).workload.kind == "finetune"


def test_applying_a_file_fills_the_form_and_estimates_it(qtbot: Any, tmp_path: Path) -> None:
    w = make_window(qtbot, scenario_for(MODEL, "H100 SXM"))
    before_any = scenario_for(MODEL, "H100 SXM")  # (while the form is re-estimated)
    w.form.widget("gpu_count").setValue(8)
    qtbot.waitUntil(lambda: (w.current_scenario() or before_any).hardware.gpu_count == 8)
    before = w.current_scenario()
    assert before is not None and before.workload.kind == "inference"
    assert not w.stat_host.isVisible()  # nothing kept in CPU memory
    assert w.apply_deepspeed_file(_write(tmp_path, ZERO3))
    form = w.form.values()
    assert (form.mode, form.zero, form.offload, form.precision) == ("finetune", 3, "optimizer", "amp-bf16")
    assert (form.micro_batch, form.grad_accum, form.zero_bucket, form.gpu_count) == (2, 4, 200_000_000, 8)
    assert w.tabs.currentIndex() == 1
    # the window's figure is the core's for the same plan
    expected = apply_deepspeed(before, parse_deepspeed(ZERO3))
    cat = default_catalog()
    core = estimate(expected, cat.facts(MODEL), cat.gpu("H100 SXM"))
    assert w.evaluation.view is not None
    assert w.evaluation.view.device_bytes == core.device_bytes
    assert "ZeRO-3" in w.statusBar().currentMessage()
    # the offloaded optimizer shows as the machine's host memory, the core's figure
    assert core.host_bytes > 0 and w.stat_host.isVisible()
    assert w.stat_host.value.text() == gib(core.host_bytes)
    # what the file says about itself (NVMe offload is planned as host offload) stays beside the estimate
    assert "NVMe" in w.warnings_label.text()


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"zero_optimisation": {"stage": 2}}, "zero_optimisation"),
        ({"zero_optimization": {"stage": 7}}, "zero_optimization.stage"),
        ("{not json", "not valid JSON"),
    ],
)
def test_a_file_that_cannot_be_used_is_named_and_changes_nothing(
    qtbot: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: object, named: str
) -> None:
    shown: list[str] = []
    monkeypatch.setattr(window_actions.QMessageBox, "warning", lambda _parent, _title, text: shown.append(text))
    w = make_window(qtbot, scenario_for(MODEL, "H100 SXM"))
    before = w.current_scenario()
    path = tmp_path / "bad.json"
    path.write_text(config if isinstance(config, str) else json.dumps(config), encoding="utf-8")
    assert not w.apply_deepspeed_file(path)
    assert len(shown) == 1 and named in shown[0] and "bad.json" in shown[0]
    assert w.current_scenario() == before


def test_a_zero_stage_replaces_fsdp_and_impossible_values_are_refused() -> None:
    fsdp = Scenario.model_validate(
        {
            "model": {"id": MODEL},
            "hardware": {"gpu_count": 8},
            "parallelism": {"fsdp": True},
            "workload": {"kind": "finetune"},
        }
    )
    planned = apply_deepspeed(fsdp, parse_deepspeed(ZERO3)).parallelism
    assert (planned.zero, planned.fsdp) == (3, False)
    too_big = {"zero_optimization": {"stage": 2, "reduce_bucket_size": 10**15}}
    with pytest.raises(DeepSpeedConfigError, match=r"do not fit this plan: 'zero_optimization.reduce_bucket_size'"):
        apply_deepspeed(fsdp, parse_deepspeed(too_big))


def test_the_command_line_prints_the_file_notes_and_refuses_inference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, ZERO3)
    assert main(["estimate", MODEL, "--gpus", "8", "--deepspeed", str(path), "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["scenario"]["parallelism"]["zero"] == 3
    assert "NVMe" in out.err and "ds_config.json" in out.err
    assert main(["estimate", MODEL, "--deepspeed", str(path), "--mode", "inference"]) != 0
    assert "--mode inference" in capsys.readouterr().err


def test_a_dropped_deepspeed_config_is_applied_and_other_json_is_not_taken_for_one(qtbot: Any, tmp_path: Path) -> None:
    w = make_window(qtbot, scenario_for(MODEL, "H100 SXM"))
    w.drop_path(_write(tmp_path, ZERO3, "ds_z3.json"))
    assert w.form.values().zero == 3 and w.form.values().mode == "finetune"
    assert not looks_like_deepspeed(_write(tmp_path, {"model_type": "llama", "hidden_size": 8}, "cfg.json"))
    assert not looks_like_deepspeed(_write(tmp_path, {"model": {"id": MODEL}}, "plan.json"))
    assert looks_like_deepspeed(_write(tmp_path, {"train_batch_size": 64}, "ds.json"))


def test_gpus_that_hold_different_amounts_label_the_figures_as_gpu_0s(qtbot: Any, capsys: Any) -> None:
    """Tensor x pipeline parallel: the stages differ; the cards, breakdown and phase chart are GPU 0's and say so,
    while the verdict is the busiest GPU's (the chips show each). Data parallel alike: no label."""
    data = scenario_for(MODEL, "H100 SXM").model_dump(mode="json")
    data["workload"] = {"kind": "finetune", "method": "full", "precision": "amp-bf16", "seq_len": 4096}
    data["hardware"]["gpu_count"] = 4
    data["parallelism"] = {"tp": 2, "pp": 2}
    staged = Scenario.model_validate(data)
    w = make_window(qtbot, staged)
    view = w.evaluation.view
    assert view is not None and view.uneven
    assert view.device_bytes == view.estimate.per_gpu[0].device_bytes < max(g.device_bytes for g in view.per_gpu)
    assert w.stat_device.caption.text() == "On the device · GPU 0"
    assert w.breakdown.title.text().endswith("· GPU 0") and w.phase_chart.title.text() == "Memory by phase · GPU 0"
    w.set_scenario(Scenario.model_validate({**data, "parallelism": {"zero": 3}}))
    qtbot.waitUntil(lambda: w.evaluation.view is not None and not w.evaluation.view.uneven, timeout=5000)
    assert w.stat_device.caption.text() == "On the device" and w.phase_chart.title.text() == "Memory by phase"
    assert w.stat_host.caption.text() == "Host memory per machine"
    # the command line lists each group of GPUs under GPU 0's breakdown
    assert main(["estimate", MODEL, "--mode", "finetune", "--method", "full", "--precision", "amp-bf16", "--gpu",
                 "H100 SXM", "--seq-len", "4096", "--gpus", "4", "--tp", "2", "--pp", "2"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "At the peak (optimizer step), GPU 0 (the GPUs differ; each below):" in out
    assert "GPU 0-1 (each)" in out and "GPU 2-3 (each)" in out
