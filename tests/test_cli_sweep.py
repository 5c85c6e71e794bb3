"""`vramdesk sweep MODEL --axis ... [-o OUT] [--format F]`: CSV parsed back, JSON loaded, a cell equal to
`vramdesk estimate` for the same settings, and one-line errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from vramdesk import cli
from vramdesk.storage.scenarios import save_scenario

L8 = "meta-llama/Llama-3.1-8B-Instruct"


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(args), out=out), out.getvalue()


def test_csv_on_stdout_one_row_per_cell_and_a_cell_equals_estimate() -> None:
    rc, text = run_cli("sweep", L8, "--gpu", "RTX 4090", "--axis", "input_len=1k..4k", "--axis", "batch=1,8,32")
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["input_len"], r["batch"]) for r in rows] == [
        (i, b) for i in ("1024", "2048", "4096") for b in ("1", "8", "32")
    ]
    assert {r["verdict"] for r in rows} >= {"fits", "does not fit"}
    cell = next(r for r in rows if r["input_len"] == "2048" and r["batch"] == "8")
    rc, est = run_cli("estimate", L8, "--gpu", "RTX 4090", "--input-len", "2048", "--batch", "8", "--json")
    doc = json.loads(est)
    assert rc == 0
    assert int(cell["device_bytes"]) == doc["device_bytes"]
    assert int(cell["peak_allocated_bytes"]) == doc["peak_allocated_bytes"]
    assert int(cell["required_bytes"]) == doc["fit"]["required_bytes"] and cell["verdict"] == doc["fit"]["verdict"]
    assert float(cell["required_gib"]) == pytest.approx(doc["fit"]["required_bytes"] / 2**30, abs=0.001)


def test_json_from_the_suffix_with_a_gpu_axis(tmp_path: Path) -> None:
    out = tmp_path / "grid.json"
    rc, text = run_cli(
        "sweep",
        L8,
        "--axis",
        "gpu=RTX 4090,H100 SXM",
        "--axis",
        "weights=bf16,nf4",
        "--input-len",
        "8192",
        "-o",
        str(out),
    )
    assert rc == 0 and text == f"wrote {out} (JSON, 4 cells)\n"
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["axes"] == [
        {"name": "gpu", "values": ["RTX 4090", "H100 SXM"]},
        {"name": "weights", "values": ["bf16", "nf4"]},
    ]
    assert [c["values"] for c in doc["cells"]][2] == {"gpu": "H100 SXM", "weights": "bf16"}
    assert doc["scenario"]["workload"]["input_len"] == 8192
    bf16, nf4 = doc["cells"][0], doc["cells"][1]
    assert nf4["required_bytes"] < bf16["required_bytes"]
    assert doc["cells"][2]["gpu_memory_bytes"] > bf16["gpu_memory_bytes"]


def test_format_option_wins_and_a_scenario_file_is_never_replaced(tmp_path: Path) -> None:
    from samples import named_plan

    path = tmp_path / "plan.json"
    save_scenario(named_plan("bf16"), path)
    before = path.read_bytes()
    rc, _ = run_cli("sweep", str(path), "--axis", "batch=1,2", "--format", "json", "-o", str(path))
    assert rc == 2 and path.read_bytes() == before
    csv_out = tmp_path / "grid.txt"
    rc, _ = run_cli("sweep", str(path), "--axis", "batch=1,2", "--format", "csv", "-o", str(csv_out))
    assert rc == 0 and csv_out.read_text(encoding="utf-8").startswith("batch,gpu,")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--axis", "batch=0,1"], "axis batch: 0 is less than 1"),
        (["--axis", "seq_len=512"], "axis seq_len: applies to fine-tuning, and this plan is inference"),
        (["--axis", "colour=1"], "axis colour: not a setting a sweep can vary"),
        (["--axis", "gpu=RTX 4090,Nope"], "axis gpu: GPU 'Nope' is not in the GPU catalog"),
        (["--axis", "input_len=1..20000+1"], "20,000 cells (20000) are more than the 10,000 a sweep estimates"),
        (
            ["--axis", "batch=1", "--axis", "input_len=1", "--axis", "output_len=1", "--axis", "gpus=1"],
            "a sweep has at most 3 axes, got 4",
        ),
        (["--axis", "batch=1", "-o", "grid.xlsx"], "grid.xlsx: unknown suffix '.xlsx'; use .csv or .json"),
    ],
)
def test_errors_are_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, text = run_cli("sweep", L8, "--gpu", "RTX 4090", *args)
    err = capsys.readouterr().err
    assert rc == 2 and text == ""
    assert err.startswith("vramdesk: error: ") and message in err and err.count("\n") == 1


def test_without_a_gpu_it_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _ = run_cli("sweep", L8, "--axis", "batch=1,2")
    assert rc == 2
    assert "a sweep needs a GPU to judge the fit" in capsys.readouterr().err


def test_an_axis_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        run_cli("sweep", L8, "--gpu", "RTX 4090")
    assert exit_.value.code == 2
    assert "--axis" in capsys.readouterr().err
