"""``--jsonl`` on several processes (vramdesk/cli_jsonl.py): the same bytes as one process, in input order, each
bad line its own error, a dead worker's lines estimated again; when it stays in one process."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vramdesk import cli_jsonl
from vramdesk.cli import main

_ENV = {**os.environ, "VRAMDESK_NO_DETECT": "1", "HF_HUB_OFFLINE": "1"}


def _batch(tmp_path: Path) -> Path:
    """Lines over several models and engines, with bad ones among them (a fixed mix)."""
    good = [
        {"model": "Qwen/Qwen3-4B", "input_len": 2048 + 64 * i, "gpu": "RTX 4090"}
        if i % 3
        else {"model": "meta-llama/Llama-3.2-1B", "engine": "vllm", "batch": 1 + i % 4, "gpu": "H100 SXM"}
        for i in range(150)
    ]
    lines = [json.dumps(g) for g in good]
    lines[7] = "{not json"
    lines[40] = json.dumps({"model": "no/such-model"})
    lines[41] = ""  # a blank line: no result
    lines[99] = json.dumps({"model": "Qwen/Qwen3-4B", "bogus_option": 1})
    path = tmp_path / "batch.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # (a fresh process: forking one that runs threads, as a test process may, is refused by design)
    return subprocess.run(
        [sys.executable, "-m", "vramdesk", *args], capture_output=True, text=True, env=_ENV, check=False
    )


def test_several_processes_write_what_one_process_writes(tmp_path: Path) -> None:
    path = _batch(tmp_path)
    one = _run("estimate", "--jsonl", str(path), "--jobs", "1")
    many = _run("estimate", "--jsonl", str(path), "--jobs", "3")
    assert one.returncode == many.returncode == 1, many.stderr
    assert many.stdout == one.stdout
    results = [json.loads(x) for x in many.stdout.splitlines()]
    assert len(results) == 149  # the blank line has no result
    errors = {r["error"].split(":")[0] for r in results if "error" in r}
    assert errors == {"line 8", "line 41", "line 100"}
    # in input order: the lengths of the Qwen lines come back as they went in
    lengths = [r["scenario"]["workload"]["input_len"] for r in results if r.get("model") == "Qwen/Qwen3-4B"]
    assert lengths == sorted(lengths) and len(lengths) == 97


def test_a_dead_workers_lines_are_estimated_again(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    n = 2 * cli_jsonl.BATCH + 100
    path.write_text("".join(f"{i}\n" for i in range(1, n + 1)), encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import io, os, sys
        from vramdesk import cli_jsonl
        parent = os.getpid()
        def read(line):
            n = int(line)
            if n == {n - 50} and os.getpid() != parent:
                os._exit(9)  # a worker killed in the middle of the batch
            return {{"n": n, "worker": os.getpid() != parent}}
        out = io.StringIO()
        rc = cli_jsonl.run({str(path)!r}, out, read, jobs=2)
        sys.stdout.write(out.getvalue())
        sys.exit(rc)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_ENV, check=False)
    assert done.returncode == 0, done.stderr
    results = [json.loads(x) for x in done.stdout.splitlines()]
    assert [r["n"] for r in results] == list(range(1, n + 1))
    assert all(r["worker"] for r in results[: 2 * cli_jsonl.BATCH])  # workers estimated the first batches ...
    assert not any(r["worker"] for r in results[2 * cli_jsonl.BATCH :])  # ... the broken one ran again here


def test_small_files_standard_input_and_jobs_1_stay_in_this_process(tmp_path: Path) -> None:
    small = tmp_path / "small.jsonl"
    small.write_text('{"model": "Qwen/Qwen3-4B"}\n', encoding="utf-8")
    big = tmp_path / "big.jsonl"
    big.write_bytes(b'{"model": "Qwen/Qwen3-4B"}\n' * (cli_jsonl.PARALLEL_FROM_BYTES // 20))
    assert cli_jsonl.workers_for(str(small), 0) == 1
    assert cli_jsonl.workers_for("-", 0) == 1
    assert cli_jsonl.workers_for(str(big), 1) == 1
    if cli_jsonl.threading.active_count() == 1 and "fork" in cli_jsonl.multiprocessing.get_all_start_methods():
        assert cli_jsonl.workers_for(str(big), 0) == min(cli_jsonl.MOST_JOBS, len(os.sched_getaffinity(0)))
        assert cli_jsonl.workers_for("-", 4) == 4


def test_a_process_with_threads_is_not_forked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"{}\n" * cli_jsonl.PARALLEL_FROM_BYTES)
    monkeypatch.setattr(cli_jsonl.threading, "active_count", lambda: 2)
    assert cli_jsonl.workers_for(str(big), 0) == 1 and cli_jsonl.workers_for(str(big), 4) == 1


def test_jobs_without_jsonl_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "Qwen/Qwen3-4B", "--jobs", "2"], out=io.StringIO()) == 2
    assert "--jobs goes with --jsonl FILE" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["estimate", "--jsonl", "x.jsonl", "--jobs", "-1"], out=io.StringIO())


def test_a_batch_of_long_lines_stays_small_in_memory() -> None:
    # a file of lines near the 1 MiB limit: a batch is cut by bytes long before 2,048 lines
    long = b"x" * (cli_jsonl.MAX_LINE - 1)
    items = iter([(i, long) for i in range(1, 41)])
    batches = list(cli_jsonl._batches(items))
    assert [n for b in batches for n, _ in b] == list(range(1, 41))
    assert all(sum(len(x or b"") for _, x in b) < cli_jsonl.BATCH_BYTES + cli_jsonl.MAX_LINE for b in batches)
    assert len(batches) > 2
    short = list(cli_jsonl._batches(iter([(i, b"{}\n") for i in range(1, cli_jsonl.BATCH + 2)])))
    assert [len(b) for b in short] == [cli_jsonl.BATCH, 1]
