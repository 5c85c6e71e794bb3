"""GPU detection that cannot hang or crash the app: NVML probed in a child process with a deadline, drivers that
hang, crash or report figures that do not add up (the C shim of tests/fake_nvml/), a GPU with no free memory,
and the window and `vramdesk gpus` over all of them."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import fake_nvml
import pytest
from i18ncheck import CORE_WHITELIST, english_left
from uiwindow import make_window, scenario_for

from vramdesk import cli
from vramdesk import main as entry
from vramdesk.core.defaults import DEFAULT_SCENARIO
from vramdesk.core.estimate import estimate
from vramdesk.core.fit import verdict
from vramdesk.core.gpu import GIB, MIB, GpuSpec
from vramdesk.core.messages import Text
from vramdesk.error_words import os_error
from vramdesk.services import nvml as nv
from vramdesk.services.catalog import default_catalog
from vramdesk.ui.core_text import localize
from vramdesk.ui.forms import DETECTED_PREFIX

#: a GPU another job fills: used + reserved = total (v2), so NVML says 0 bytes free
FULL = "NVIDIA GeForce RTX 4090|24564|24264|300|0"
FULL_PROCS = "0:4242:22000;0:4243:1500"
#: used + reserved above total: the shim's unsigned subtraction underflows to ~16 EiB free, as a broken driver's
UNDERFLOW = "NVIDIA GeForce RTX 4090|24564|25000|300|0"
#: a free figure above the total (the 6th field)
FREE_ABOVE_TOTAL = "NVIDIA GeForce RTX 4090|24564|1000|300|0|50000"
#: the words a Chinese text keeps: the core sweep's identifiers, NVIDIA's names and Errno (of an OSError)
WHITELIST = CORE_WHITELIST | {"NVIDIA", "NVML", "Errno"}
#: how long a test waits for what must happen long before a probe's 60 s deadline (generous: a loaded machine)
SLACK = 30.0


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = fake_nvml.build(tmp_path_factory.mktemp("nvml"))
    if out is None:
        pytest.skip("no C compiler (or not Linux)")
    return out


@pytest.fixture
def driver(shim: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """``driver(hang="init", gpus=...)``: the probe child loads the shim, configured so; returns the pid file."""

    def use(**fake: str) -> Path:
        pidfile = tmp_path / "probe.pid"
        fake.setdefault("pidfile", str(pidfile))
        for k in [k for k in os.environ if k.startswith("FAKE_NVML_")]:
            monkeypatch.delenv(k)
        for k, v in fake_nvml.child_env(shim, **fake).items():
            if os.environ.get(k) != v:
                monkeypatch.setenv(k, v)
        return pidfile

    return use


def gone(pidfile: Path) -> bool:
    """The probe child that wrote ``pidfile`` no longer exists (killed and reaped: not even a zombie)."""
    pid = int(pidfile.read_text())
    return not Path(f"/proc/{pid}").exists()


# ---------------------------------------------------------------------------------------------- the probe child


def test_the_child_reads_what_the_in_process_probe_reads(driver) -> None:
    driver(gpus="NVIDIA H100 80GB HBM3|81559|4000|600|1;NVIDIA GeForce RTX 4090|24564|1200|300|2", procs="0:4242:3500")
    found = nv.detect_gpus()  # the default: isolated
    assert found.reason is None and found.driver_version == "575.51.03-fake"
    h100, rtx = found.gpus
    assert (h100.total, h100.used, h100.reserved, h100.free) == (81559 * MIB, 4000 * MIB, 600 * MIB, 76959 * MIB)
    assert h100.mig and not rtx.mig and h100.processes[0].pid == 4242 and h100.processes[0].used_bytes == 3500 * MIB
    assert h100.uuid == "GPU-fake-0000" and h100.compute_capability == "8.9" and h100.note is None


@pytest.mark.parametrize("where", ["init", "memory"])
def test_a_hung_driver_is_given_up_at_the_deadline_and_the_child_killed(driver, where: str) -> None:
    pidfile = driver(hang=where)
    t0 = time.perf_counter()
    found = nv.detect_gpus_isolated(timeout=1)
    took = time.perf_counter() - t0
    assert found.gpus == []
    assert found.reason == "NVML did not answer within 1 s (the NVIDIA driver may be hung); GPU detection skipped"
    assert took >= 1 and gone(pidfile)  # the reason says the deadline ended it, not the child


def test_the_deadline_comes_from_the_environment(driver, monkeypatch) -> None:
    driver(hang="init")
    monkeypatch.setenv(nv.TIMEOUT_ENV, "0.5")
    assert "within 0.5 s" in (nv.detect_gpus().reason or "")
    monkeypatch.setenv(nv.TIMEOUT_ENV, "soon")
    assert nv.probe_timeout() == nv.PROBE_TIMEOUT_S == 5


@pytest.mark.parametrize("where", ["init", "memory"])
def test_a_crashing_driver_takes_only_the_child_along(driver, where: str) -> None:
    driver(crash=where)
    found = nv.detect_gpus_isolated(timeout=10)
    assert found.gpus == []
    assert found.reason == "NVML crashed while probing GPUs (signal 11: SIGSEGV); GPU detection skipped"


def test_cancel_kills_the_probe_at_once(driver) -> None:
    pidfile = driver(hang="init")
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    found = nv.detect_gpus_isolated(timeout=60, cancel=cancel)
    assert found.reason == "GPU detection was cancelled"  # the cancel ended it, not the 60 s deadline
    assert gone(pidfile)


def test_an_orphaned_probe_ends_by_itself(shim: Path) -> None:
    """Should the parent die without killing it (SIGKILL, power button), the child's own alarm ends a hung probe."""
    env = {**fake_nvml.child_env(shim, hang="init"), nv.TIMEOUT_ENV: "0.5"}
    proc = subprocess.run(nv.probe_command(), capture_output=True, env=env, timeout=30, check=False)
    assert proc.returncode == -signal.SIGALRM  # its own alarm, well before the 30 s the test waits


def test_a_probe_that_fails_or_says_nothing_is_a_reason() -> None:
    assert nv._answer(1, "", "Traceback ...\nModuleNotFoundError: No module named 'pynvml'\n").reason == (
        "the GPU probe failed with exit status 1 (ModuleNotFoundError: No module named 'pynvml'); GPU detection skipped"
    )
    assert nv._answer(0, "hello\n", "").reason == "the GPU probe gave no answer; GPU detection skipped"
    assert nv._answer(-9, "", "").reason == "NVML crashed while probing GPUs (signal 9: SIGKILL); GPU detection skipped"
    ok = nv.DetectionResult(gpus=[nv.DetectedGpu(index=0, name="X", total=8 * GIB, free=GIB, used=7 * GIB)])
    assert nv._answer(0, "driver noise\n" + json.dumps(ok.to_json()) + "\n", "") == ok


def test_the_frozen_app_answers_the_probe_command_line(capsys) -> None:
    """A PyInstaller build has no `python -m`: vramdesk.main answers `-m vramdesk.services.nvml --probe` itself."""
    assert nv.probe_command()[1:] == ["-m", "vramdesk.services.nvml", "--probe"]
    assert entry.main(["-m", "vramdesk.services.nvml", "--probe"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"gpus", "reason", "driver_version", "reason_text"}  # (the reason's message id, if any)


# ---------------------------------------------------------------------------------------------- figures


def test_consistent_figures_are_kept() -> None:
    assert nv.checked_free(24 * GIB, 20 * GIB, 4 * GIB) == (20 * GIB, None)
    assert nv.checked_free(24 * GIB, 8 * GIB, 15 * GIB) == (8 * GIB, None)  # memory nobody accounts for: fine
    assert nv.checked_free(24 * GIB, 0, 23 * GIB, GIB) == (0, None)


@pytest.mark.parametrize(
    ("figures", "planned"),
    [
        ((24 * GIB, (1 << 64) - GIB, 24 * GIB, GIB), 0),  # used + reserved > total: free underflowed
        ((24 * GIB, 40 * GIB, 2 * GIB, None), 22 * GIB),  # free > total: total - used
        ((24 * GIB, 20 * GIB, 10 * GIB, None), 14 * GIB),  # the sum is 30 of 24 GiB: the least the figures allow
        ((24 * GIB, 20 * GIB, 23 * GIB, 2 * GIB), GIB),  # reserved is the odd one: total - used
        ((24 * GIB, 4 * GIB, -GIB, None), 0),  # a negative figure
        ((1 << 64, 4 * GIB, GIB, None), 0),  # an absurd total
        ((24 * GIB, 4 * GIB, 30 * GIB, None), 0),  # more used than there is: the GPU counts as full
    ],
)
def test_figures_that_do_not_add_up_are_flagged_and_planned_with_the_least_they_allow(figures, planned) -> None:
    free, note = nv.checked_free(*figures)
    assert free == planned and note is not None and note.startswith("NVML figures do not add up (total ")


def test_an_underflowed_free_figure_never_fits(driver) -> None:
    driver(gpus=UNDERFLOW)
    found = nv.detect_gpus()
    (g,) = found.gpus
    assert g.free == 0 and g.reported_free is not None and g.reported_free > 16 << 40
    assert g.note == (
        "NVML figures do not add up (total 23.99 GiB, free 17179869183.28 GiB, used 24.41 GiB, reserved 0.29 GiB): "
        "planning with 0.00 GiB free, the least they allow"
    )
    assert found.reason == f"GPU 0: {g.note}"  # the window and `vramdesk gpus` show the reason
    fit = verdict(GIB, nv.to_gpu_spec(g))
    assert fit.verdict == "does not fit" and fit.available_bytes == 0 and g.note in fit.message


def test_a_free_figure_above_the_total_is_not_believed(driver) -> None:
    driver(gpus=FREE_ABOVE_TOTAL)
    (g,) = nv.detect_gpus().gpus
    assert g.free == (24564 - 1300) * MIB and g.reported_free == 50000 * MIB and g.note
    # the note came from the probe child with its message id (the window translates it by id)
    assert isinstance(g.note, Text) and g.note.id == "nvml.free_note.reserved"
    spec = nv.to_gpu_spec(g)
    assert spec.free_bytes == g.free and spec.free_note == g.note
    # 23.5 GiB is less than the total but more than total - used - reserved: today's min(total, free) said "tight"
    fit = verdict(int(23.5 * GIB), spec)
    assert fit.verdict == "does not fit" and fit.basis == "free" and "planning with 22.72 GiB free" in fit.message


def test_a_gpu_made_elsewhere_is_checked_again() -> None:
    odd = nv.DetectedGpu(index=0, name="Mystery", total=8 * GIB, free=(1 << 64) - GIB, used=9 * GIB)
    spec = nv.to_gpu_spec(odd)
    assert spec.free_bytes == 0 and spec.free_note and "17179869183" in spec.free_note
    with pytest.raises(ValueError, match="NVML reports a total"):
        nv.to_gpu_spec(nv.DetectedGpu(index=1, name="Mystery", total=1 << 64, free=0, used=0))


# ---------------------------------------------------------------------------------------------- no free memory


def test_a_gpu_with_no_free_memory_does_not_fit_and_says_who_holds_it(driver) -> None:
    driver(gpus=FULL, procs=FULL_PROCS)
    (g,) = nv.detect_gpus().gpus
    assert g.free == 0 and g.note is None
    spec = nv.to_gpu_spec(g)
    cat = default_catalog()
    est = estimate(DEFAULT_SCENARIO, cat.facts(DEFAULT_SCENARIO.model.id), spec)
    fit = est.fit
    assert fit is not None and fit.verdict == "does not fit" and math.isfinite(fit.margin_fraction)
    assert fit.message.startswith(
        "no free memory on GPU 0 (the RTX 4090): other processes hold 23.70 GiB (process 4242 holds 21.48 GiB); needs "
    )
    assert fit.available_bytes == 0 and fit.short_bytes == fit.required_bytes and fit.basis == "free"
    json.dumps(est.model_dump(mode="json"), allow_nan=False)  # the JSON contract: finite numbers
    vllm = scenario_for(DEFAULT_SCENARIO.model.id, engine="vllm")  # the engine's budget is below the total
    vllm_fit = estimate(vllm, cat.facts(DEFAULT_SCENARIO.model.id), spec).fit
    assert vllm_fit is not None and vllm_fit.verdict == "does not fit" and vllm_fit.message.startswith("no free memory")


def test_no_free_memory_names_the_process_by_name() -> None:
    me = nv.process_name(os.getpid())
    gpu = nv.DetectedGpu(
        index=1,
        name="NVIDIA GeForce RTX 4090",
        total=24 * GIB,
        free=0,
        used=24 * GIB,
        processes=(nv.GpuProcess(17, "", None), nv.GpuProcess(os.getpid(), me, 22 * GIB)),
    )
    fit = verdict(GIB, nv.to_gpu_spec(gpu))
    assert f"(process {os.getpid()} {me} holds 22.00 GiB)" in fit.message and fit.margin_fraction == -1.0
    catalog_gpu = GpuSpec(name="Tiny", memory_bytes=GIB, free_bytes=0)
    assert verdict(GIB, catalog_gpu).message.startswith("no free memory on the Tiny; needs 1.00 GiB per GPU")


# ---------------------------------------------------------------------------------------------- vramdesk gpus


def test_vramdesk_gpus_exits_at_the_deadline_under_a_hung_driver(shim: Path, tmp_path: Path) -> None:
    env = fake_nvml.child_env(shim, hang="init", pidfile=str(tmp_path / "probe.pid"))
    env[nv.TIMEOUT_ENV] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "vramdesk", "gpus", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["gpus"] == [] and doc["reason"].startswith("NVML did not answer within 1 s")
    assert gone(tmp_path / "probe.pid")


def test_vramdesk_gpus_shows_the_planned_free_memory_and_why(driver, capsys) -> None:
    import io

    driver(gpus=UNDERFLOW)
    out = io.StringIO()
    assert cli.main(["gpus"], out=out) == 0
    text = out.getvalue()
    assert "free 0.00 GiB" in text and "note: GPU 0: NVML figures do not add up" in text
    assert "free 17179869183" not in text.splitlines()[0]
    out = io.StringIO()
    assert cli.main(["gpus", "--json"], out=out) == 0
    (g,) = json.loads(out.getvalue())["gpus"]
    assert g["free_bytes"] == 0 and g["reported_free_bytes"] > 16 << 40 and g["note"].startswith("NVML figures")


# ---------------------------------------------------------------------------------------------- the window


def test_the_window_estimates_and_closes_at_once_while_the_driver_hangs(qtbot, driver) -> None:
    pidfile = driver(hang="init")
    done = threading.Event()

    def detect(cancel: threading.Event | None = None) -> nv.DetectionResult:
        try:
            return nv.detect_gpus_isolated(timeout=60, cancel=cancel)
        finally:
            done.set()

    w = make_window(qtbot, detect=detect, wait=False)
    qtbot.waitUntil(lambda: w.view is not None and pidfile.exists(), timeout=10_000)
    assert w.detect_runner.busy and w.gpu_combo.currentData() == "RTX 4090" and w.view is not None
    w.close()
    assert done.wait(SLACK)  # the close cancelled the probe: far sooner than its 60 s deadline
    assert gone(pidfile)


@pytest.mark.parametrize(
    ("fake", "words"),
    [({"hang": "memory"}, "NVML did not answer within 1 s"), ({"crash": "init"}, "NVML crashed while probing GPUs")],
)
def test_the_window_says_what_happened_to_the_detection(qtbot, driver, fake: dict[str, str], words: str) -> None:
    driver(**fake)
    w = make_window(qtbot, detect=lambda: nv.detect_gpus_isolated(timeout=1), wait=False)
    qtbot.waitUntil(lambda: w.detection is not None, timeout=int((1 + SLACK) * 1000))
    text = w.form.detected_label.text()
    assert "No NVIDIA GPU detected" in text and words in text and "GPU detection skipped" in text
    assert w.view is not None and w.gpu_combo.currentData() == "RTX 4090"


def test_the_window_opens_on_a_full_gpu_without_choosing_it(qtbot) -> None:
    gpu = nv.DetectedGpu(
        index=0,
        name="NVIDIA GeForce RTX 4090",
        total=24564 * MIB,
        free=0,
        used=24264 * MIB,
        reserved=300 * MIB,
        processes=(nv.GpuProcess(4242, "python", 22000 * MIB),),
    )
    w = make_window(qtbot, detect=lambda: nv.DetectionResult(gpus=[gpu]))
    key = f"{DETECTED_PREFIX}0"
    assert w.gpu_combo.findData(key) >= 0 and w.gpu_combo.currentData() == "RTX 4090"  # not the full one
    assert w.view is not None and w.view.verdict == "fits"
    with qtbot.waitSignal(w.estimated, timeout=5000):
        w.gpu_combo.setCurrentIndex(w.gpu_combo.findData(key))
    assert w.view is not None and w.view.verdict == "does not fit"
    assert "no free memory on GPU 0 (the RTX 4090)" in w.message_label.text()
    assert "process 4242 python holds 21.48 GiB" in w.message_label.text()


# ---------------------------------------------------------------------------------------------- Chinese


def test_the_new_texts_are_chinese_in_the_window(driver) -> None:
    texts: list[str] = []
    for fake in ({"hang": "init"}, {"crash": "memory"}):
        driver(**fake)
        texts.append(nv.detect_gpus_isolated(timeout=0.5).reason or "")
    texts += [
        nv._answer(3, "", "boom\n").reason or "",
        nv._answer(3, "", "").reason or "",
        nv._answer(0, "", "").reason or "",
        nv._skipped(nv.PROBE_NOT_STARTED(error=os_error(FileNotFoundError(2, "No such file or directory")))).reason
        or "",
        nv.CANCELLED(),
        nv.checked_free(24 * GIB, 40 * GIB, 2 * GIB)[1] or "",
        nv.checked_free(24 * GIB, 40 * GIB, 2 * GIB, GIB)[1] or "",
    ]
    rtx = nv.DetectedGpu(index=0, name="NVIDIA GeForce RTX 4090", total=24 * GIB, free=0, used=24 * GIB)
    held = replace(rtx, processes=(nv.GpuProcess(4242, "python3", 22 * GIB),))
    odd = replace(rtx, free=40 * GIB, used=2 * GIB)
    texts += [verdict(GIB, nv.to_gpu_spec(g)).message for g in (held, replace(rtx, used=0))]
    texts.append(verdict(30 * GIB, nv.to_gpu_spec(odd)).message)
    keep = {"boom", "No such file or directory", "python3", "RTX 4090", "SIGSEGV"}  # quoted, names, signal
    left = {t: english_left(localize(t, "zh_CN"), keep, WHITELIST) for t in texts}
    assert not any(left.values()), {t: (localize(t, "zh_CN"), w) for t, w in left.items() if w}
    assert localize(texts[0], "zh_CN") == "NVML 在 0.5 秒内没有响应（NVIDIA 驱动可能已挂起）；已跳过 GPU 检测"
