# ruff: noqa: E501  (FAKE_NVML_C is the C shim of shared/research/ecosystem.md Appendix B, verbatim)
"""GPU detection (services/nvml.py): a pure-Python fake, the real bindings over a C shim, and no NVML at all."""

from __future__ import annotations

import ctypes
import io
import json
import shutil
import subprocess
from types import SimpleNamespace
from typing import Any

import pytest

from vramdesk import cli
from vramdesk.core.gpu import GIB, MIB
from vramdesk.services import nvml as nv

FAKE_NVML_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int nvmlReturn_t;
enum { OK = 0, UNINIT = 1, INVALID_ARG = 2, NOT_SUPPORTED = 3, INSUFF = 7, DRIVER_NOT_LOADED = 9 };
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } nvmlProcessInfo_t;
#define MAXG 8
struct gpu { char name[96]; unsigned long long total, used, reserved; unsigned int mig; };
static struct gpu gpus[MAXG]; static unsigned int ngpus; static int inited;
static const unsigned long long MiB = 1024ULL * 1024ULL;
/* FAKE_NVML_GPUS="name|total_MiB|used_MiB|reserved_MiB|mig(0,1; 2=not supported);..." */
static void load(void) {
    const char *s = getenv("FAKE_NVML_GPUS");
    if (!s || !*s) s = "NVIDIA GeForce RTX 4090|24564|1200|300|0";
    char *buf = strdup(s), *save = NULL; ngpus = 0;
    for (char *t = strtok_r(buf, ";", &save); t && ngpus < MAXG; t = strtok_r(NULL, ";", &save)) {
        struct gpu *g = &gpus[ngpus]; unsigned long long tt = 0, u = 0, r = 0; unsigned int m = 0; char name[96] = {0};
        if (sscanf(t, "%95[^|]|%llu|%llu|%llu|%u", name, &tt, &u, &r, &m) >= 2) {
            snprintf(g->name, sizeof g->name, "%s", name);
            g->total = tt * MiB; g->used = u * MiB; g->reserved = r * MiB; g->mig = m; ngpus++; } }
    free(buf);
}
nvmlReturn_t nvmlInitWithFlags(unsigned int f) {
    const char *e = getenv("FAKE_NVML_INIT_ERROR");
    (void)f;
    if (e && *e) return atoi(e);
    load(); inited = 1; return OK; }
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlShutdown(void) { if (!inited) return UNINIT; inited = 0; return OK; }
const char *nvmlErrorString(nvmlReturn_t r) { switch (r) { case OK: return "Success"; case UNINIT: return "Uninitialized";
    case INVALID_ARG: return "Invalid Argument"; case NOT_SUPPORTED: return "Not Supported"; case INSUFF: return "Insufficient Size";
    case DRIVER_NOT_LOADED: return "Driver Not Loaded"; default: return "Unknown Error"; } }
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n) { if (!inited) return UNINIT; snprintf(v, n, "575.51.03-fake"); return OK; }
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = 12090; return OK; }
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { *v = 12090; return OK; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *c) { if (!inited) return UNINIT; *c = ngpus; return OK; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h) {
    if (!inited) return UNINIT;
    if (i >= ngpus) return INVALID_ARG;
    *h = &gpus[i]; return OK; }
nvmlReturn_t nvmlDeviceGetName(void *h, char *n, unsigned int l) { snprintf(n, l, "%s", ((struct gpu *)h)->name); return OK; }
nvmlReturn_t nvmlDeviceGetUUID(void *h, char *u, unsigned int l) { snprintf(u, l, "GPU-fake-%04d", (int)((struct gpu *)h - gpus)); return OK; }
nvmlReturn_t nvmlDeviceGetMemoryInfo(void *h, nvmlMemory_t *m) {           /* v1: used includes reserved */
    struct gpu *g = h; m->total = g->total; m->used = g->used + g->reserved; m->free = g->total - m->used; return OK; }
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void *h, nvmlMemory_v2_t *m) {     /* v2: reserved separate */
    struct gpu *g = h; if (m->version != (unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24))) return 25;
    m->total = g->total; m->reserved = g->reserved; m->used = g->used; m->free = g->total - g->used - g->reserved; return OK; }
nvmlReturn_t nvmlDeviceGetMigMode(void *h, unsigned int *cur, unsigned int *pend) {
    struct gpu *g = h; if (g->mig > 1) return NOT_SUPPORTED; *cur = *pend = g->mig; return OK; }
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(void *h, int *maj, int *min) { (void)h; *maj = 8; *min = 9; return OK; }
/* FAKE_NVML_PROCS="gpu_index:pid:used_MiB;..." */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count, nvmlProcessInfo_t *infos) {
    unsigned int idx = (unsigned int)((struct gpu *)h - gpus), n = 0; const char *s = getenv("FAKE_NVML_PROCS"); nvmlProcessInfo_t tmp[32];
    if (s && *s) { char *buf = strdup(s), *save = NULL;
        for (char *t = strtok_r(buf, ";", &save); t && n < 32; t = strtok_r(NULL, ";", &save)) {
            unsigned int gi, pid; unsigned long long mib;
            if (sscanf(t, "%u:%u:%llu", &gi, &pid, &mib) == 3 && gi == idx) { tmp[n].pid = pid; tmp[n].usedGpuMemory = mib * MiB;
                tmp[n].gpuInstanceId = tmp[n].computeInstanceId = 0xFFFFFFFFu; n++; } }
        free(buf); }
    if (n == 0) { *count = 0; return OK; }
    if (!infos || *count < n) { *count = n; return INSUFF; }
    memcpy(infos, tmp, n * sizeof *tmp); *count = n; return OK;
}
"""


class NVMLError(Exception):
    pass


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801, N818 - pynvml's name
    pass


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801, N818
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801, N818
    pass


class FakeNvml:
    """The pynvml functions detect_gpus calls, over a list of dicts."""

    NVMLError = NVMLError
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    nvmlMemory_v2 = 0x02000028

    def __init__(self, gpus: list[dict[str, Any]], init_error: Exception | None = None, v2: bool = True) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.v2 = v2
        self.inited = False
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.inited = True

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return "575.00-fake"

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> dict[str, Any]:
        return self.gpus[i]

    def nvmlDeviceGetName(self, h: dict[str, Any]) -> str:
        return str(h["name"])

    def nvmlDeviceGetUUID(self, h: dict[str, Any]) -> str:
        return "GPU-" + str(h["name"]).replace(" ", "-")

    def nvmlDeviceGetMemoryInfo(self, h: dict[str, Any], version: int | None = None) -> SimpleNamespace:
        total, used, reserved = h["total"], h["used"], h.get("reserved", 0)
        if version is not None:
            if not self.v2:
                raise NVMLError("Function Not Found")
            return SimpleNamespace(total=total, reserved=reserved, used=used, free=total - used - reserved)
        return SimpleNamespace(total=total, used=used + reserved, free=total - used - reserved)

    def nvmlDeviceGetMigMode(self, h: dict[str, Any]) -> list[int]:
        if "mig" not in h:
            raise NVMLError_NotSupported("Not Supported")
        return [h["mig"], h["mig"]]

    def nvmlDeviceGetCudaComputeCapability(self, h: dict[str, Any]) -> tuple[int, int]:
        return (8, 9)

    def nvmlDeviceGetComputeRunningProcesses(self, h: dict[str, Any]) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in h.get("procs", [])]


RTX = {"name": "NVIDIA GeForce RTX 4090", "total": 24564 * MIB, "used": 1200 * MIB, "reserved": 300 * MIB}


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


def test_cli_gpus_without_a_driver(monkeypatch) -> None:
    monkeypatch.setattr(nv, "_load_pynvml", lambda: FakeNvml([], init_error=NVMLError_LibraryNotFound("x")))
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
    monkeypatch.setattr(nv, "_load_pynvml", lambda: FakeNvml([{**RTX, "procs": [(4242, 3500 * MIB)]}]))
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
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("nvml")
    src = folder / "fake_nvml.c"
    src.write_text(FAKE_NVML_C, encoding="utf-8")
    out = folder / "libnvidia-ml.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), str(src)], check=True)
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
