"""GPU detection through NVML (``nvidia-ml-py``, module ``pynvml``), Qt-free and never raising.

:func:`detect_gpus` returns a :class:`DetectionResult`: the GPUs with their memory (v2 where the driver
has it: ``used`` then excludes the memory the driver reserves), the processes holding memory on each, and
MIG mode; or an empty list with a reason in words ("no NVIDIA driver found (libnvidia-ml.so.1)").

Tests inject a fake module through ``nvml=`` (any object with pynvml's function names and exception
classes), or load the C shim of ``shared/research/ecosystem.md`` Appendix B into the real bindings.
:func:`to_gpu_spec` maps a detected GPU to a catalog :class:`GpuSpec` (by name) that keeps the detected
total and free memory, so the fit verdict uses free memory and says so.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vramdesk.core.gpu import GpuSpec

from .catalog import Catalog, CatalogError, default_catalog

LIBRARY_NAME = "nvml.dll" if sys.platform.startswith("win") else "libnvidia-ml.so.1"


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    name: str
    #: bytes; None when the driver does not say (Windows WDDM)
    used_bytes: int | None


@dataclass(frozen=True)
class DetectedGpu:
    index: int
    name: str
    total: int
    free: int
    used: int
    processes: tuple[GpuProcess, ...] = ()
    #: MIG mode is on (memory is then split between instances)
    mig: bool = False
    compute_capability: str | None = None
    #: memory the driver/firmware sets aside (NVML memory v2), None with v1
    reserved: int | None = None
    uuid: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "total_bytes": self.total,
            "free_bytes": self.free,
            "used_bytes": self.used,
            "reserved_bytes": self.reserved,
            "mig": self.mig,
            "compute_capability": self.compute_capability,
            "processes": [{"pid": p.pid, "name": p.name, "used_bytes": p.used_bytes} for p in self.processes],
        }


@dataclass(frozen=True)
class DetectionResult:
    gpus: list[DetectedGpu] = field(default_factory=list)
    #: why the list is empty (or partial); None when detection worked
    reason: str | None = None
    driver_version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": [g.to_json() for g in self.gpus],
            "reason": self.reason,
            "driver_version": self.driver_version,
        }


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def process_name(pid: int) -> str:
    """A process's command name from /proc (empty when unknown: other OS, another namespace, gone)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _reason(nvml: Any, err: Exception) -> str:
    """Words for an nvmlInit failure."""

    def is_a(name: str) -> bool:
        cls = getattr(nvml, name, None)
        return isinstance(cls, type) and isinstance(err, cls)

    if is_a("NVMLError_LibraryNotFound"):
        return f"no NVIDIA driver found ({LIBRARY_NAME})"
    if is_a("NVMLError_DriverNotLoaded"):
        return "the NVIDIA driver is installed but not loaded"
    if is_a("NVMLError_NoPermission"):
        return "no permission to query the NVIDIA driver"
    return f"NVML could not start: {err}"


def _memory(nvml: Any, handle: Any) -> tuple[int, int, int, int | None]:
    """(total, free, used, reserved) with memory v2 when the driver has it, else v1 (reserved None)."""
    v2 = getattr(nvml, "nvmlMemory_v2", None)
    if v2 is not None:
        try:
            m = nvml.nvmlDeviceGetMemoryInfo(handle, version=v2)
            return int(m.total), int(m.free), int(m.used), int(getattr(m, "reserved", 0))
        except Exception:
            pass
    m = nvml.nvmlDeviceGetMemoryInfo(handle)
    return int(m.total), int(m.free), int(m.used), None


def _optional(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:
        return None


def _processes(nvml: Any, handle: Any) -> tuple[GpuProcess, ...]:
    out: dict[int, GpuProcess] = {}
    for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
        fn = getattr(nvml, getter, None)
        procs = _optional(fn, handle) if fn else None
        for p in procs or ():
            pid = int(p.pid)
            used = getattr(p, "usedGpuMemory", None)
            if pid not in out:
                out[pid] = GpuProcess(
                    pid=pid, name=process_name(pid), used_bytes=int(used) if used is not None else None
                )
    return tuple(sorted(out.values(), key=lambda p: -(p.used_bytes or 0)))


def _load_pynvml() -> Any:
    import pynvml

    return pynvml


def detect_gpus(nvml: Any = None) -> DetectionResult:
    """The NVIDIA GPUs of this machine; never raises (no library / driver / GPU -> empty list + reason)."""
    if nvml is None:
        try:
            nvml = _load_pynvml()
        except ImportError:
            return DetectionResult(reason="nvidia-ml-py is not installed (no GPU detection)")
    try:
        nvml.nvmlInit()
    except Exception as err:
        return DetectionResult(reason=_reason(nvml, err))
    try:
        driver = _optional(nvml.nvmlSystemGetDriverVersion)
        count = int(nvml.nvmlDeviceGetCount())
        gpus: list[DetectedGpu] = []
        problems: list[str] = []
        for i in range(count):
            try:
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                total, free, used, reserved = _memory(nvml, h)
                mig_mode = _optional(nvml.nvmlDeviceGetMigMode, h)
                cc = _optional(nvml.nvmlDeviceGetCudaComputeCapability, h)
                gpus.append(
                    DetectedGpu(
                        index=i,
                        name=_text(nvml.nvmlDeviceGetName(h)),
                        total=total,
                        free=free,
                        used=used,
                        reserved=reserved,
                        processes=_processes(nvml, h),
                        mig=bool(mig_mode and int(mig_mode[0]) == 1),
                        compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
                        uuid=_optional(lambda h=h: _text(nvml.nvmlDeviceGetUUID(h))),
                    )
                )
            except Exception as err:
                problems.append(f"GPU {i}: {err}")
        reason = None
        if not gpus:
            reason = "; ".join(problems) if problems else "the NVIDIA driver reports no GPU"
        elif problems:
            reason = "; ".join(problems)
        return DetectionResult(gpus=gpus, reason=reason, driver_version=_text(driver) if driver else None)
    except Exception as err:
        return DetectionResult(reason=f"NVML query failed: {err}")
    finally:
        _optional(nvml.nvmlShutdown)


_NOISE = re.compile(r"\b(nvidia|geforce|tesla|quadro)\b", re.IGNORECASE)
#: names NVML reports that the catalog spells differently (lower case, without "NVIDIA ")
_NVML_NAMES = {
    "h100 80gb hbm3": "H100 SXM",
    "h100 pcie": "H100 PCIe",
    "h100 nvl": "H100 NVL",
    "h200": "H200 SXM",
    "a100-sxm4-80gb": "A100 80GB SXM",
    "a100-sxm4-40gb": "A100 40GB SXM",
    "a100 80gb pcie": "A100 80GB PCIe",
    "a100-pcie-40gb": "A100 40GB PCIe",
    "v100-sxm2-32gb": "V100 32GB SXM",
    "b200": "B200 (HGX; per GPU)",
}


def catalog_name(detected_name: str, catalog: Catalog | None = None) -> str | None:
    """The catalog GPU that a detected name ("NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3") is."""
    cat = catalog or default_catalog()
    key = " ".join(_NOISE.sub(" ", detected_name).split())
    known = _NVML_NAMES.get(key.lower())
    if known is not None:
        try:
            return cat.gpu(known).name
        except CatalogError:
            pass
    try:
        return cat.gpu(key).name
    except CatalogError:
        pass
    words = key.split()
    # "H100 80GB HBM3" -> "H100 80GB" -> "H100": the longest prefix the catalog knows without ambiguity
    for n in range(len(words) - 1, 0, -1):
        try:
            return cat.gpu(" ".join(words[:n])).name
        except CatalogError:
            continue
    return None


def to_gpu_spec(gpu: DetectedGpu, catalog: Catalog | None = None) -> GpuSpec:
    """The catalog's spec of this GPU (bandwidth, compute) with the detected total and free memory."""
    cat = catalog or default_catalog()
    name = catalog_name(gpu.name, cat)
    if name is None:
        return GpuSpec(
            name=gpu.name, memory_bytes=gpu.total, free_bytes=gpu.free, compute_capability=gpu.compute_capability
        )
    spec = cat.gpu(name)
    return spec.model_copy(
        update={
            "memory_bytes": gpu.total,
            "free_bytes": gpu.free,
            "compute_capability": gpu.compute_capability or spec.compute_capability,
        }
    )


__all__ = [
    "DetectedGpu",
    "DetectionResult",
    "GpuProcess",
    "catalog_name",
    "detect_gpus",
    "process_name",
    "to_gpu_spec",
]
