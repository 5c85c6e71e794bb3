"""A pure-Python stand-in for the pynvml module: the GPUs, memory figures and failures a test gives it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from vramdesk.core.gpu import MIB


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
