"""The command-line contract: `vramdesk estimate` with --json / --jsonl / --save, --version, errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from vramdesk.cli import main
from vramdesk.storage.scenarios import load_scenario


def cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(args), out=out)
    return code, out.getvalue()


def test_estimate_json_has_the_contract_keys() -> None:
    code, text = cli("estimate", "Qwen/Qwen3-8B", "--gpu", "RTX 4090", "--input-len", "8192", "--json")
    assert code == 0
    data = json.loads(text)
    for key in (
        "params",
        "components",
        "peak_phase",
        "phases",
        "peak_allocated_bytes",
        "peak_reserved_bytes",
        "device_bytes",
        "per_gpu",
        "host_bytes",
        "fit",
        "performance",
    ):
        assert key in data
    assert set(data["params"]) >= {"total", "active", "trainable"}
    assert data["params"]["total"] == 8_190_735_360
    assert all(isinstance(c["bytes"], int) and c["explain"] for c in data["components"])
    assert data["peak_allocated_bytes"] == sum(c["bytes"] for c in data["components"])
    assert data["fit"]["verdict"] in ("fits", "tight", "does not fit")
    assert data["scenario"]["workload"]["input_len"] == 8192


def test_text_output_names_levels_and_verdict() -> None:
    code, text = cli("estimate", "meta-llama/Llama-3.1-70B", "--gpu", "RTX 4090")
    assert code == 0
    assert "max_memory_allocated" in text and "nvidia-smi" in text
    assert "DOES NOT FIT on RTX 4090" in text


def test_options_reach_the_estimate() -> None:
    _, small = cli("estimate", "Qwen/Qwen3-8B", "--input-len", "1024", "--json")
    _, big = cli("estimate", "Qwen/Qwen3-8B", "--input-len", "1024", "--batch", "8", "--json")
    _, fp8 = cli("estimate", "Qwen/Qwen3-8B", "--input-len", "1024", "--kv-dtype", "fp8", "--json")
    kv = lambda t: next(c["bytes"] for c in json.loads(t)["components"] if c["name"] == "KV cache")  # noqa: E731
    assert kv(big) > 7 * kv(small)
    assert kv(fp8) == kv(small) // 2


def test_save_then_reload_scenario(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    code, first = cli(
        "estimate",
        "Qwen/Qwen3-4B",
        "--engine",
        "vllm",
        "--gpu",
        "H100 SXM",
        "--batch",
        "4",
        "--save",
        str(path),
        "--json",
    )
    assert code == 0
    s = load_scenario(path)
    assert s.workload.kind == "inference" and s.workload.engine == "vllm" and s.workload.batch == 4
    code, again = cli("estimate", str(path), "--json")
    assert code == 0
    assert json.loads(again)["device_bytes"] == json.loads(first)["device_bytes"]
    code, changed = cli("estimate", str(path), "--batch", "16", "--json")
    assert json.loads(changed)["scenario"]["workload"]["batch"] == 16


def test_jsonl_bad_line_reports_and_the_rest_go_on(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        "\n".join(
            [
                json.dumps({"model": "Qwen/Qwen3-4B", "input_len": 2048}),
                "{not json",
                json.dumps({"model": "no/such-model"}),
                json.dumps({"model": "Qwen/Qwen3-4B", "engine": "llamacpp", "weights": "q4_k_m", "gpu": "RTX 3090"}),
                json.dumps({"model": "Qwen/Qwen3-4B", "bogus_option": 1}),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    code, text = cli("estimate", "--jsonl", str(src))
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 5 and code == 1
    assert "params" in lines[0] and "params" in lines[3]
    assert "error" in lines[1] and "line 2" in lines[1]["error"]
    assert "no/such-model" in lines[2]["error"]
    assert "bogus_option" in lines[4]["error"]


def test_config_json_path_and_generic_warning(tmp_path: Path) -> None:
    cfg = {
        "model_type": "brandnew",
        "hidden_size": 512,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "intermediate_size": 1024,
        "vocab_size": 1000,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    code, text = cli("estimate", str(path), "--json")
    assert code == 0
    data = json.loads(text)
    assert any("brandnew" in w for w in data["warnings"])
    code, _ = cli("estimate", str(tmp_path), "--json")  # the folder works too
    assert code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("estimate", "Qwen/Qwen3-4B", "--weights", "int3x"), "int3x"),
        (("estimate", "Qwen/Qwen3-4B", "--gpu", "GTX 9999"), "GTX 9999"),
        (("estimate", "Qwen/Qwen3-4B", "--tp", "4"), "tp (4)"),
        (("estimate", "Qwen/Qwen3-4B", "--mode", "finetune", "--method", "qlora", "--precision", "fp32"), "QLoRA"),
        (("estimate", "Qwen/Qwen3-4B", "--mode", "inference", "--lora-rank", "8"), "--lora-rank"),
        # (these two once fell through to "invalid scenario: ... Extra inputs are not permitted")
        (("estimate", "Qwen/Qwen3-4B", "--lora-targets", "q,v"), "--lora-targets does not apply to --mode inference"),
        (("estimate", "Qwen/Qwen3-4B", "--mode", "finetune", "--n-gpu-layers", "9"), "--n-gpu-layers does not apply"),
        (("estimate", "Qwen/Qwen3-4B", "--mode", "finetune", "--gpus", "2", "--fsdp", "--zero", "2"), "FSDP and"),
        (("estimate", "./missing/config.json"), "no such file"),
        (("estimate",), "needs a MODEL"),
    ],
)
def test_errors_exit_2_with_one_clear_line(
    args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = cli(*args)
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1 and err.startswith("vramdesk: error:")


def test_argparse_rejects_impossible_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli("estimate", "Qwen/Qwen3-4B", "--batch", "0")
    assert exc.value.code == 2
    assert "--batch" in capsys.readouterr().err


def test_installed_entry_point_version_and_estimate() -> None:
    exe = Path(sys.executable).with_name("vramdesk")
    if not exe.exists():
        pytest.skip("entry point not installed in this environment")
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("vramdesk ")
    res = subprocess.run(
        [str(exe), "estimate", "Qwen/Qwen3-0.6B", "--json"], capture_output=True, text=True, check=True
    )
    assert json.loads(res.stdout)["params"]["total"] == 596_049_920


def test_deepspeed_file_sets_the_plan_and_explicit_options_win(tmp_path: Path) -> None:
    ds = tmp_path / "ds_z3.json"
    ds.write_text(
        json.dumps(
            {
                "bf16": {"enabled": True},
                "train_micro_batch_size_per_gpu": 2,
                "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}},
            }
        )
    )
    code, text = cli(
        "estimate",
        "meta-llama/Llama-3.1-8B",
        "--deepspeed",
        str(ds),
        "--method",
        "full",
        "--gpus",
        "4",
        "--micro-batch",
        "1",
        "--json",
    )
    assert code == 0
    work = json.loads(text)["scenario"]
    assert work["parallelism"]["zero"] == 3 and work["parallelism"]["offload"] == "optimizer"
    assert work["workload"]["precision"] == "amp-bf16" and work["workload"]["micro_batch"] == 1
    assert json.loads(text)["host_bytes"] > 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"zero_optimisation": {"stage": 3}}))
    code, _ = cli("estimate", "meta-llama/Llama-3.1-8B", "--deepspeed", str(bad))
    assert code == 2


def test_finetune_options_reach_the_training_estimate() -> None:
    base = ("estimate", "meta-llama/Llama-3.1-8B", "--mode", "finetune", "--method", "lora", "--seq-len", "4096")
    _, plain = cli(*base, "--json")
    _, dora = cli(*base, "--dora", "--lora-dropout", "0.1", "--chunked-loss", "--activation-offload", "--json")
    p, d = json.loads(plain), json.loads(dora)
    assert d["params"]["trainable"] > p["params"]["trainable"]
    assert d["host_bytes"] > 0 and d["scenario"]["workload"]["lora_dropout"] == 0.1
    code, text = cli(*base)
    assert code == 0 and "trainable" in text
    # expandable segments: the same live tensors, a smaller allocator cache on top
    _, exp = cli(*base, "--expandable-segments", "--json")
    e = json.loads(exp)
    assert e["peak_allocated_bytes"] == p["peak_allocated_bytes"]
    assert p["peak_allocated_bytes"] < e["peak_reserved_bytes"] < p["peak_reserved_bytes"]
    assert e["scenario"]["workload"]["expandable_segments"] is True
    # unpacked batches of varying length: the longest sets the live tensors, the mix adds cache
    _, var = cli(*base, "--mean-seq-len", "1500", "--json")
    v = json.loads(var)
    assert v["peak_allocated_bytes"] == p["peak_allocated_bytes"]
    assert v["peak_reserved_bytes"] > p["peak_reserved_bytes"]
    code, _ = cli(*base, "--mean-seq-len", "5000")
    assert code == 2


def test_nodes_option() -> None:
    code, text = cli(
        "estimate",
        "meta-llama/Llama-3.1-70B",
        "--mode",
        "finetune",
        "--method",
        "full",
        "--zero",
        "3",
        "--gpus",
        "8",
        "--nodes",
        "2",
        "--json",
    )
    assert code == 0
    data = json.loads(text)
    assert data["scenario"]["hardware"]["nodes"] == 2 and len(data["per_gpu"]) == 16


def test_adapter_and_fsdp_options_reach_the_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("estimate", "meta-llama/Llama-3.1-8B", "--mode", "finetune", "--method", "lora", "--json")
    _, plain = cli(*base)
    code, out = cli(*base, "--modules-to-save", "wte,lm_head", "--lora-bias", "all", "--adapter-dtype", "base")
    assert cli("estimate", "Qwen/Qwen3.5-4B", "--mode", "finetune", "--vision-tower", "absent")[0] == 0
    assert code == 0
    d = json.loads(out)
    assert d["scenario"]["workload"]["modules_to_save"] == ["embed", "lm_head"]
    assert d["params"]["trainable"] > json.loads(plain)["params"]["trainable"] + 2 * 128256 * 4096 - 1
    code, out = cli(
        "estimate", "meta-llama/Llama-3.1-8B", "--mode", "finetune", "--method", "full", "--gpus", "8",
        "--nodes", "2", "--fsdp", "--fsdp-strategy", "hybrid", "--gpu", "H100 SXM", "--json",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["scenario"]["parallelism"]["fsdp_strategy"] == "hybrid"
    code, out = cli(
        "estimate", "meta-llama/Llama-3.1-8B", "--mode", "finetune", "--gpus", "8", "--fsdp", "--fsdp-version", "2",
        "--lora-targets", "q,v", "--gpu", "H100 SXM", "--json",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["scenario"]["parallelism"]["fsdp_version"] == 2
    with pytest.raises(SystemExit):
        cli("estimate", "meta-llama/Llama-3.1-8B", "--mode", "finetune", "--fsdp-version", "3")
    assert "invalid choice: 3" in capsys.readouterr().err
    code, _ = cli(*base, "--modules-to-save", "mlp")
    assert code == 2 and "modules_to_save: 'mlp'" in capsys.readouterr().err


def test_max_memory_spills_to_host(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = cli("estimate", "Qwen/Qwen3-8B", "--gpu", "RTX 4090", "--max-memory-gib", "10", "--json")
    assert code == 0 and json.loads(out)["host_bytes"] > 5 * 2**30
    with pytest.raises(SystemExit) as exc:
        cli("estimate", "Qwen/Qwen3-8B", "--max-memory-gib", "0")
    assert exc.value.code == 2 and "--max-memory-gib" in capsys.readouterr().err


def test_argument_errors_are_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """The contract: errors exit non-zero with one clear line on stderr (argparse printed its whole usage first)."""
    for argv in (
        ["estimate", "Qwen/Qwen3-8B", "--batch", "-1"],
        ["estimate", "Qwen/Qwen3-8B", "--engine", "foo"],
        ["bogus"],
    ):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error: argument" in err and "--help)" in err, err


def test_a_jsonl_line_that_is_not_json_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = tmp_path / "plans.jsonl"
    batch.write_text('{"model": "Qwen/Qwen3-8B"}\nnot json\n', encoding="utf-8")
    assert main(["estimate", "--jsonl", str(batch)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert json.loads(lines[1]) == {"error": "line 2: not a JSON object (Expecting value at column 1)"}


# ---------------------------------------------------------------------------------------------- this machine's GPU


def _fake_machine(monkeypatch: pytest.MonkeyPatch, gpus: list[dict]) -> None:
    """``estimate`` probes NVML (a fake one here) as the window does; tests/conftest.py turns that off elsewhere."""
    from fake_nvml.pyfake import FakeNvml

    from vramdesk import cli
    from vramdesk.services import nvml as nv

    monkeypatch.delenv(cli.NO_DETECT_ENV, raising=False)
    fake = FakeNvml(gpus)
    monkeypatch.setattr(nv, "detect_gpus_isolated", lambda timeout=None, cancel=None: nv.detect_gpus(fake))


def test_estimate_without_gpu_judges_against_this_machines_gpu(monkeypatch, capsys) -> None:
    from fake_nvml.pyfake import RTX

    from vramdesk.core.gpu import GIB

    _fake_machine(monkeypatch, [{**RTX, "procs": [(4242, 4 * GIB)]}])
    out = io.StringIO()
    assert main(["estimate", "Qwen/Qwen3-4B", "--json"], out=out) == 0
    fit = json.loads(out.getvalue())["fit"]
    assert fit["gpu"] == "RTX 4090" and fit["free_bytes"] is not None and fit["free_bytes"] < fit["memory_bytes"]
    assert "free" in fit["message"]  # the verdict compares with the free memory, as in the window
    err = capsys.readouterr().err
    assert "judged against GPU 0 of this machine (RTX 4090" in err and "--no-detect" in err
    # --no-detect, or a --gpu, plans without the machine
    out = io.StringIO()
    assert main(["estimate", "Qwen/Qwen3-4B", "--json", "--no-detect"], out=out) == 0
    assert json.loads(out.getvalue())["fit"] is None and "this machine" not in capsys.readouterr().err
    out = io.StringIO()
    assert main(["estimate", "Qwen/Qwen3-4B", "--json", "--gpu", "H100 SXM"], out=out) == 0
    assert json.loads(out.getvalue())["fit"]["gpu"] == "H100 SXM" and "this machine" not in capsys.readouterr().err


def test_estimate_on_a_machine_without_gpu_gives_no_verdict(monkeypatch, capsys) -> None:
    _fake_machine(monkeypatch, [])
    out = io.StringIO()
    assert main(["estimate", "Qwen/Qwen3-4B", "--json"], out=out) == 0
    assert json.loads(out.getvalue())["fit"] is None and capsys.readouterr().err == ""


def test_estimate_says_why_when_the_gpu_probe_hangs(monkeypatch, capsys) -> None:
    """A hung driver: the probe is killed at its deadline and the answer, without a verdict, says why."""
    from vramdesk import cli
    from vramdesk.services import nvml as nv

    monkeypatch.delenv(cli.NO_DETECT_ENV, raising=False)
    hung = nv._skipped(nv.HUNG(seconds=5.0))
    monkeypatch.setattr(nv, "detect_gpus_isolated", lambda timeout=None, cancel=None: hung)
    out = io.StringIO()
    assert main(["estimate", "Qwen/Qwen3-4B", "--json"], out=out) == 0
    assert json.loads(out.getvalue())["fit"] is None
    assert "NVML did not answer within 5 s" in capsys.readouterr().err


def test_the_window_and_the_command_line_start_with_one_prompt_length() -> None:
    from vramdesk.cli import scenario_from
    from vramdesk.core.defaults import DEFAULT_SCENARIO

    cli_default = scenario_from(DEFAULT_SCENARIO.model.id, {}).workload
    assert DEFAULT_SCENARIO.workload.input_len == cli_default.input_len is None  # type: ignore[union-attr]
    assert DEFAULT_SCENARIO.workload.output_len == cli_default.output_len  # type: ignore[union-attr]


def test_help_says_fine_tuning_too() -> None:
    from vramdesk.cli import build_parser

    parser = build_parser()
    assert "fine-tuning" in parser.description
    assert "fine-tuning" in parser.format_help()


# ---------------------------------------------------------------------------------------------- export (no Qt)


def test_export_of_a_model_with_estimate_options_takes_the_format_from_the_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv

    for name in ("r.md", "r.csv", "r.json", "r.markdown.txt"):
        fmt = ["--format", "md"] if name.endswith(".txt") else []
        args = ["export", "Qwen/Qwen3-8B", "--gpu", "RTX 4090", "--batch", "4", "-o", str(tmp_path / name), *fmt]
        assert cli(*args)[0] == 0
        out = capsys.readouterr().out
        assert out.count("\n") == 1 and out.startswith(f"wrote {tmp_path / name} (")
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("# vramdesk report: Qwen3-8B, batch 4 on an RTX 4090\n")  # the plan's generated name
    # --format wins over the suffix
    assert (tmp_path / "r.markdown.txt").read_text().splitlines()[0] == md.splitlines()[0]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert rows[0]["name"] == "weights"
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["scenario"]["workload"]["batch"] == 4 and doc["scenario"]["hardware"]["gpu"] == "RTX 4090"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("Qwen/Qwen3-8B", "-o", "x.bmp"), "x.bmp: unknown suffix '.bmp'; use .png .svg .pdf"),
        (("Qwen/Qwen3-8B", "-o", "plan"), "plan: no suffix to tell the format from"),
        (
            ("nobody/no-such-model-here", "-o", "x.md"),
            "model 'nobody/no-such-model-here' is not in the bundled catalog",
        ),
        (("./missing.gguf", "-o", "x.md"), "missing.gguf: no such file"),
        (("Qwen/Qwen3-8B", "--batch", "4", "--mode", "finetune", "-o", "x.md"), "--batch does not apply to --mode"),
    ],
)
def test_export_errors_are_one_line_naming_what_is_wrong(
    args: tuple[str, ...], message: str, tmp_path: Path, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli("export", *args)[0] == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err, captured.err
    assert list(tmp_path.iterdir()) == []


def test_export_never_writes_over_the_model_config_it_plans(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2}))
    before = config.read_bytes()
    assert cli("export", str(config), "--format", "json", "-o", str(config))[0] == 2
    assert "would replace" in capsys.readouterr().err and config.read_bytes() == before
