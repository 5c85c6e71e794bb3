"""GPU facts the estimator needs (pure data; the catalog and NVML services fill it in)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .messages import Message, MessageText, Text

GIB = 1 << 30
MIB = 1 << 20


class GpuSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    #: memory the driver reports as total (NVML ``memory.total``), bytes
    memory_bytes: int = Field(gt=0)
    #: CUDA compute capability as "major.minor" ("9.0" for Hopper); None when unknown (AMD, Apple)
    compute_capability: str | None = None
    bandwidth_gbps: float | None = None
    bf16_tflops: float | None = None
    vendor: str = "NVIDIA"
    #: free memory right now (only for detected GPUs)
    free_bytes: int | None = None
    #: detected GPUs only: NVML's index, the memory other processes hold, the biggest holder in words
    #: ("process 4242 python holds 22.10 GiB"), and a note on the free figure ("NVML figures do not add up ...")
    #: that the fit verdict repeats; all None for catalog GPUs
    device_index: int | None = None
    used_bytes: int | None = None
    held_by: MessageText | None = None
    free_note: MessageText | None = None

    @property
    def sm_major(self) -> int:
        if not self.compute_capability:
            return 0
        try:
            return int(self.compute_capability.split(".")[0])
        except ValueError:
            return 0


#: the GPUs a plan runs on (:func:`hardware_text`)
HARDWARE_ONE = Message("gpu.hardware.one", "{gpu}")
HARDWARE_SEVERAL = Message("gpu.hardware.several", "{count} x {gpu}")
HARDWARE_MACHINES = Message("gpu.hardware.machines", "{machines} machines x {gpus}")


def hardware_text(gpu: str, gpus_per_machine: int, machines: int = 1) -> str:
    """The GPUs a plan runs on: "H100 SXM", "8 x H100 SXM", or "16 machines x 8 x H100 SXM" (a
    :class:`~vramdesk.core.messages.Text`, so that a sentence it goes into keeps its id)."""
    gpus: Text = HARDWARE_SEVERAL(count=gpus_per_machine, gpu=gpu) if gpus_per_machine > 1 else HARDWARE_ONE(gpu=gpu)
    return HARDWARE_MACHINES(machines=machines, gpus=gpus) if machines > 1 else gpus
