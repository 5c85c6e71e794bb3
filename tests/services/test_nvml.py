"""GPU detection (services/nvml.py): a pure-Python fake, the real bindings over a C shim, and no NVML at all."""

from __future__ import annotations

import ctypes
import io
import json

import fake_nvml
import pytest
from fake_nvml.pyfake import (
    RTX,
    FakeNvml,
    NVMLError_DriverNotLoaded,
    NVMLError_LibraryNotFound,
)

from vramdesk import cli
from vramdesk.core.gpu import GIB, MIB
from vramdesk.services import nvml as nv


def test_fake_gpu_is_detected_with_memory_v2_and_processes() -> None:
    fake = FakeNvml(
        [
            {**RTX, "procs": [(4242, 3500 * MIB), (17, None)]},
            {"name": "NVIDIA H100 80GB HBM3", "total": 80 * GIB, "used": 0, "mig": 1},
        ]
    )
    found = nv.detect_gpus(fake)
    assert found.reason is None and found.driver_version == "575.00-fake"
    a, b = found.gpus
    assert (a.index, a.name, a.total, a.used, a.reserved) == (0, RTX["name"], 24564 * MIB, 1200 * MIB, 300 * MIB)
    assert a.free == (24564 - 1500) * MIB
    assert [(p.pid, p.used_bytes) for p in a.processes] == [(4242, 3500 * MIB), (17, None)]
    assert a.mig is False and b.mig is True and a.compute_capability == "8.9"
    assert fake.shutdowns == 1
    assert json.loads(json.dumps(found.to_json()))["gpus"][0]["free_bytes"] == a.free


def test_memory_v1_fallback_counts_reserved_as_used() -> None:
    found = nv.detect_gpus(FakeNvml([RTX], v2=False))
    g = found.gpus[0]
    assert g.reserved is None and g.used == 1500 * MIB and g.free == (24564 - 1500) * MIB


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (NVMLError_LibraryNotFound("NVML Shared Library Not Found"), "no NVIDIA driver found (libnvidia-ml.so.1)"),
        (NVMLError_DriverNotLoaded("Driver Not Loaded"), "not loaded"),
        (RuntimeError("weird"), "weird"),
    ],
)
def test_init_failures_become_reasons(error: Exception, words: str) -> None:
    found = nv.detect_gpus(FakeNvml([RTX], init_error=error))
    assert found.gpus == [] and found.reason is not None and words in found.reason


def test_no_gpu_is_a_reason_not_an_error() -> None:
    found = nv.detect_gpus(FakeNvml([]))
    assert found.gpus == [] and found.reason == "the NVIDIA driver reports no GPU"


def test_real_bindings_without_a_driver_give_the_library_reason() -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound:
        pass
    else:  # pragma: no cover - a machine with a driver
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    found = nv.detect_gpus()
    assert found.gpus == [] and found.reason == "no NVIDIA driver found (libnvidia-ml.so.1)"


@pytest.mark.parametrize(
    ("detected", "catalog"),
    [
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("Tesla T4", "T4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA H200", "H200 SXM"),  # what a real H200's driver (580.159) reported to `vramdesk gpus`
        ("Mystery Accelerator 9000", None),
    ],
)
def test_detected_names_map_to_the_catalog(detected: str, catalog: str | None) -> None:
    assert nv.catalog_name(detected) == catalog


def test_gpu_spec_keeps_detected_total_and_free() -> None:
    g = nv.detect_gpus(FakeNvml([RTX])).gpus[0]
    spec = nv.to_gpu_spec(g)
    assert spec.name == "RTX 4090" and spec.memory_bytes == g.total and spec.free_bytes == g.free
    assert spec.bandwidth_gbps  # the catalog's figures come along
    odd = nv.to_gpu_spec(nv.DetectedGpu(index=0, name="Mystery", total=8 * GIB, free=7 * GIB, used=GIB))
    assert (odd.name, odd.memory_bytes, odd.free_bytes) == ("Mystery", 8 * GIB, 7 * GIB)


def _probe_with(monkeypatch, fake: FakeNvml) -> None:
    """`vramdesk gpus` probes in a child process; here it probes ``fake`` in this one instead."""
    monkeypatch.setattr(nv, "detect_gpus_isolated", lambda timeout=None, cancel=None: nv.detect_gpus(fake))


def test_cli_gpus_without_a_driver(monkeypatch) -> None:
    _probe_with(monkeypatch, FakeNvml([], init_error=NVMLError_LibraryNotFound("x")))
    out = io.StringIO()
    assert cli.main(["gpus"], out=out) == 0
    assert out.getvalue() == "no NVIDIA GPU detected: no NVIDIA driver found (libnvidia-ml.so.1)\n"
    out = io.StringIO()
    assert cli.main(["gpus", "--json"], out=out) == 0
    assert json.loads(out.getvalue()) == {
        "gpus": [],
        "reason": "no NVIDIA driver found (libnvidia-ml.so.1)",
        "driver_version": None,
    }


def test_cli_gpus_with_a_fake_gpu(monkeypatch) -> None:
    _probe_with(monkeypatch, FakeNvml([{**RTX, "procs": [(4242, 3500 * MIB)]}]))
    out = io.StringIO()
    assert cli.main(["gpus"], out=out) == 0
    text = out.getvalue()
    assert "GPU 0: NVIDIA GeForce RTX 4090" in text and "catalog: RTX 4090" in text and "pid 4242" in text
    out = io.StringIO()
    cli.main(["gpus", "--json"], out=out)
    doc = json.loads(out.getvalue())
    assert doc["gpus"][0]["catalog_name"] == "RTX 4090" and doc["gpus"][0]["processes"][0]["pid"] == 4242


@pytest.fixture(scope="session")
def nvml_shim(tmp_path_factory) -> str:
    """The C shim of tests/fake_nvml/ (shared/research/ecosystem.md Appendix B, plus hangs, crashes, odd figures)."""
    out = fake_nvml.build(tmp_path_factory.mktemp("nvml"))
    if out is None:
        pytest.skip("no C compiler")
    return str(out)


def test_real_bindings_over_the_c_shim(monkeypatch, nvml_shim: str) -> None:
    pynvml = pytest.importorskip("pynvml")
    monkeypatch.setenv(
        "FAKE_NVML_GPUS", "NVIDIA H100 80GB HBM3|81559|4000|600|1;NVIDIA GeForce RTX 4090|24564|1200|300|2"
    )
    monkeypatch.setenv("FAKE_NVML_PROCS", "0:4242:3500;0:4243:500")
    monkeypatch.setattr(pynvml, "nvmlLib", ctypes.CDLL(nvml_shim))
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    found = nv.detect_gpus(pynvml)
    assert found.reason is None, found.reason
    h100, rtx = found.gpus
    assert (h100.total, h100.used, h100.reserved) == (81559 * MIB, 4000 * MIB, 600 * MIB)
    assert h100.free == (81559 - 4600) * MIB and h100.mig is True and rtx.mig is False
    assert [(p.pid, p.used_bytes) for p in h100.processes] == [(4242, 3500 * MIB), (4243, 500 * MIB)]
    assert h100.compute_capability == "8.9" and found.driver_version == "575.51.03-fake"
    assert nv.to_gpu_spec(h100).name == "H100 SXM"


def test_real_bindings_over_the_c_shim_without_a_driver(monkeypatch, nvml_shim: str) -> None:
    pynvml = pytest.importorskip("pynvml")
    monkeypatch.setenv("FAKE_NVML_INIT_ERROR", "9")
    monkeypatch.setattr(pynvml, "nvmlLib", ctypes.CDLL(nvml_shim))
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    found = nv.detect_gpus(pynvml)
    assert found.gpus == [] and found.reason == "the NVIDIA driver is installed but not loaded"
