"""GPU detection through NVML (``nvidia-ml-py``, module ``pynvml``), Qt-free and never raising.

:func:`detect_gpus` returns a :class:`DetectionResult`: the GPUs with their memory (v2 where the driver
has it: ``used`` then excludes the memory the driver reserves), the processes holding memory on each, and
MIG mode; or an empty list with a reason in words ("no NVIDIA driver found (libnvidia-ml.so.1)").

By default NVML is probed in a child process (:func:`detect_gpus_isolated`: ``python -m vramdesk.services.nvml
--probe``, which prints the result as JSON) with a deadline, so that a hung driver cannot hang the command line or
the window and a driver that crashes (a segfault inside libnvidia-ml) takes only the child along. Free memory is
checked against the other figures (:func:`checked_free`): figures that do not add up never make a plan "fit".

Tests inject a fake module through ``nvml=`` (any object with pynvml's function names and exception classes;
probed in-process), or point the child at the C shim of ``tests/fake_nvml/`` through ``LD_LIBRARY_PATH``.
:func:`to_gpu_spec` maps a detected GPU to a catalog :class:`GpuSpec` (by name) that keeps the detected
total and free memory, so the fit verdict uses free memory and says so.

This module imports neither the catalog nor the GPU spec at import time: the probe child starts in ~0.1 s. Its
texts carry message ids (:mod:`vramdesk.core.messages`), and the child's answer carries them over to the parent.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vramdesk.core.messages import MESSAGES, Message, Text, free, join
from vramdesk.error_words import os_error

if TYPE_CHECKING:
    import threading

    from vramdesk.core.gpu import GpuSpec

    from .catalog import Catalog

LIBRARY_NAME = "nvml.dll" if sys.platform.startswith("win") else "libnvidia-ml.so.1"
_GIB = 1 << 30
_MIB = 1 << 20
#: seconds the probe child may take before the driver counts as hung; VRAMDESK_NVML_TIMEOUT overrides it
PROBE_TIMEOUT_S = 5.0
TIMEOUT_ENV = "VRAMDESK_NVML_TIMEOUT"
#: a memory figure above this is garbage, not a size (an unsigned underflow reads as ~16 EiB)
ABSURD_BYTES = 16 << 40

FREE_NOTE = Message(
    "nvml.free_note",
    "NVML figures do not add up (total {total:.2f} GiB, free {free:.2f} GiB, used {used:.2f} GiB): planning with "
    "{left:.2f} GiB free, the least they allow",
)
FREE_NOTE_RESERVED = Message(
    "nvml.free_note.reserved",
    "NVML figures do not add up (total {total:.2f} GiB, free {free:.2f} GiB, used {used:.2f} GiB, reserved "
    "{reserved:.2f} GiB): planning with {left:.2f} GiB free, the least they allow",
)
NO_DRIVER = Message("nvml.no_driver", "no NVIDIA driver found ({library})")
NOT_LOADED = Message("nvml.not_loaded", "the NVIDIA driver is installed but not loaded")
NO_PERMISSION = Message("nvml.no_permission", "no permission to query the NVIDIA driver")
COULD_NOT_START = Message("nvml.could_not_start", "NVML could not start: {error}")
QUERY_FAILED = Message("nvml.query_failed", "NVML query failed: {error}")
NO_GPU = Message("nvml.no_gpu", "the NVIDIA driver reports no GPU")
NOT_INSTALLED = Message("nvml.not_installed", "nvidia-ml-py is not installed (no GPU detection)")
GPU_PROBLEM = Message("nvml.gpu_problem", "GPU {index}: {problem}")
SKIPPED = Message("nvml.skipped", "GPU detection skipped")
PROBE_NOT_STARTED = Message("nvml.probe_not_started", "could not start the GPU probe ({error})")
CANCELLED = Message("nvml.cancelled", "GPU detection was cancelled")
HUNG = Message("nvml.hung", "NVML did not answer within {seconds:g} s (the NVIDIA driver may be hung)")
CRASHED_SIGNAL = Message("nvml.crashed.signal", "NVML crashed while probing GPUs (signal {signal}: {name})")
CRASHED_UNKNOWN_SIGNAL = Message(
    "nvml.crashed.unknown_signal", "NVML crashed while probing GPUs (signal {signal}: unknown signal)"
)
CRASHED_EXCEPTION = Message("nvml.crashed.exception", "NVML crashed while probing GPUs (exception 0x{code:08X})")
PROBE_FAILED = Message("nvml.probe_failed", "the GPU probe failed with exit status {code}")
PROBE_FAILED_SAID = Message("nvml.probe_failed.said", "the GPU probe failed with exit status {code} ({last})")
NO_ANSWER = Message("nvml.no_answer", "the GPU probe gave no answer")
ABSURD_TOTAL = Message("nvml.absurd_total", "GPU {index}: NVML reports a total of {total} bytes")
HOLDER_NAMED = Message("nvml.holder.named", "process {pid} {name} holds {gib:.2f} GiB")
HOLDER = Message("nvml.holder", "process {pid} holds {gib:.2f} GiB")
#: pynvml's words for its errors (nvmlErrorString), each with an id; other words stay as the driver says them
_NVML_ERRORS = {
    m.template: m
    for m in (
        Message("nvml.error.library_not_found", "NVML Shared Library Not Found"),
        Message("nvml.error.driver_not_loaded", "Driver Not Loaded"),
        Message("nvml.error.no_permission", "Insufficient Permissions"),
        Message("nvml.error.unknown", "Unknown Error"),
        Message("nvml.error.gpu_lost", "GPU is lost"),
        Message("nvml.error.not_supported", "Not Supported"),
        Message("nvml.error.uninitialized", "Uninitialized"),
        Message("nvml.error.function_not_found", "Function Not Found"),
    )
}


def nvml_error(err: BaseException) -> str:
    """What an NVML exception says (``str(err)``), with the id of pynvml's wording where it has one."""
    words = str(err)
    known = _NVML_ERRORS.get(words)
    return known() if known is not None else free(words)


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
    #: free memory to plan with: NVML's figure, or the safe estimate of :func:`checked_free` (then ``note`` says why)
    free: int
    used: int
    processes: tuple[GpuProcess, ...] = ()
    #: MIG mode is on (memory is then split between instances)
    mig: bool = False
    compute_capability: str | None = None
    #: memory the driver/firmware sets aside (NVML memory v2), None with v1
    reserved: int | None = None
    uuid: str | None = None
    #: NVML's own free figure when it did not add up and ``free`` is the estimate instead; None otherwise
    reported_free: int | None = None
    #: why ``free`` is not NVML's figure ("NVML figures do not add up ..."); None when it is
    note: str | None = None

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
            "reported_free_bytes": self.reported_free,
            "note": self.note,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DetectedGpu:
        """The inverse of :meth:`to_json` (the probe child's answer); raises KeyError/TypeError/ValueError."""

        def opt_int(v: Any) -> int | None:
            return None if v is None else int(v)

        return cls(
            index=int(d["index"]),
            name=str(d["name"]),
            total=int(d["total_bytes"]),
            free=int(d["free_bytes"]),
            used=int(d["used_bytes"]),
            processes=tuple(
                GpuProcess(pid=int(p["pid"]), name=str(p["name"]), used_bytes=opt_int(p["used_bytes"]))
                for p in d["processes"]
            ),
            mig=bool(d["mig"]),
            compute_capability=None if d["compute_capability"] is None else str(d["compute_capability"]),
            reserved=opt_int(d["reserved_bytes"]),
            uuid=None if d["uuid"] is None else str(d["uuid"]),
            reported_free=opt_int(d.get("reported_free_bytes")),
            note=None if d.get("note") is None else load_text(d.get("note_text"), str(d["note"])),
        )


@dataclass(frozen=True)
class DetectionResult:
    gpus: list[DetectedGpu] = field(default_factory=list)
    #: why the list is empty (or partial, or a GPU's figures do not add up); None when detection worked
    reason: str | None = None
    driver_version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": [g.to_json() for g in self.gpus],
            "reason": self.reason,
            "driver_version": self.driver_version,
        }

    def to_probe_json(self) -> dict[str, Any]:
        """:meth:`to_json` plus the message ids of the reason and the notes (``reason_text``, ``note_text``): the
        probe child's answer, so that the window translates them by id."""
        out = self.to_json()
        out["reason_text"] = dump_text(self.reason)
        for g, d in zip(self.gpus, out["gpus"], strict=True):
            d["note_text"] = dump_text(g.note)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DetectionResult:
        return cls(
            gpus=[DetectedGpu.from_json(g) for g in d["gpus"]],
            reason=None if d["reason"] is None else load_text(d.get("reason_text"), str(d["reason"])),
            driver_version=None if d["driver_version"] is None else str(d["driver_version"]),
        )


def dump_text(text: str | None) -> Any:
    """A :class:`Text` as JSON (its English, id, arguments and parts, nested texts in turn); None for anything
    else."""
    if not isinstance(text, Text):
        return None

    def value(v: object) -> Any:
        return {"text": dump_text(v)} if isinstance(v, Text) else {"value": v}

    return {
        "english": str(text),
        "id": text.id,
        "args": {k: value(v) for k, v in text.args.items()},
        "parts": [value(p) for p in text.parts],
        "separator": text.separator,
    }


def load_text(data: Any, english: str) -> str:
    """The :class:`Text` :func:`dump_text` wrote, when it reads back as exactly ``english`` (every message known,
    formatting again to the same English); else ``english`` as a plain string."""
    try:
        text = _load(data)
    except (TypeError, KeyError, ValueError, AttributeError, IndexError):
        return english
    return text if text is not None and text == english else english


def _load(data: Any) -> Text | None:
    if data is None:
        return None

    def value(v: dict[str, Any]) -> Any:
        if "text" in v:
            return _load(v["text"])
        if not isinstance(v["value"], str | int | float | None):
            raise TypeError("not a plain value")
        return v["value"]

    english, mid = str(data["english"]), str(data["id"])
    args = {str(k): value(v) for k, v in dict(data["args"]).items()}
    parts = tuple(value(p) for p in data["parts"])
    separator = str(data["separator"])
    if parts:
        if not all(isinstance(p, str) for p in parts) or separator.join(parts) != english:
            raise ValueError("parts")
        return join(separator, *parts)
    if not mid:
        return Text(english, "", args)
    if mid not in MESSAGES or MESSAGES[mid].format(**args) != english:
        raise ValueError("message")
    return Text(english, mid, args)


def checked_free(total: int, free: int, used: int, reserved: int | None = None) -> tuple[int, str | None]:
    """The free memory to plan with, always in [0, total], and a note when NVML's figures do not add up.

    NVML derives free by subtraction, so an unsigned underflow (in a driver, a vGPU layer or a shim) turns "less
    than nothing" into ~16 EiB free, and that must never make a plan "fit". Figures agree when free, used and
    reserved each lie in [0, total] and free + used is at most total (plus 1% / 64 MiB of rounding; reserved is left
    out of the sum because drivers differ on whether used includes it, and a sum below total only means memory
    nobody accounts for, where free is the cautious figure anyway). When they do not agree, the plan uses the least
    free memory the figures allow: total - used - reserved (total - used when reserved is the odd one), and never
    more than NVML's own free figure when that one is in range. When used is itself out of range, or total is
    absurd, the GPU counts as full (0 free). Why not plan against the total instead: a wrong "does not fit" costs a
    look at the catalog GPU (which plans against the total), a wrong "fits" costs an out-of-memory crash an hour
    into a job.
    """
    r = reserved or 0

    def ok(v: int) -> bool:
        return 0 <= v <= total

    sane_total = 0 < total <= ABSURD_BYTES
    if sane_total and ok(free) and ok(used) and ok(r) and free + used <= total + max(64 * _MIB, total // 100):
        return free, None
    if sane_total and ok(used):
        left = total - used - r if ok(r) and used + r <= total else total - used
        if ok(free):
            left = min(left, free)
    else:
        left = 0
    figures: dict[str, float] = {"total": total / _GIB, "free": free / _GIB, "used": used / _GIB, "left": left / _GIB}
    if reserved is not None:
        return left, FREE_NOTE_RESERVED(reserved=reserved / _GIB, **figures)
    return left, FREE_NOTE(**figures)


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
        return NO_DRIVER(library=LIBRARY_NAME)
    if is_a("NVMLError_DriverNotLoaded"):
        return NOT_LOADED()
    if is_a("NVMLError_NoPermission"):
        return NO_PERMISSION()
    return COULD_NOT_START(error=nvml_error(err))


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


def detect_gpus(
    nvml: Any = None, *, timeout: float | None = None, cancel: threading.Event | None = None
) -> DetectionResult:
    """The NVIDIA GPUs of this machine; never raises (no library / driver / GPU -> empty list + reason).

    With ``nvml`` (a pynvml-like module) the probe runs in this process; without, in a child process with a
    deadline (:func:`detect_gpus_isolated`; ``timeout`` and ``cancel`` go there).
    """
    if nvml is None:
        return detect_gpus_isolated(timeout, cancel)
    return _detect_in_process(nvml)


def detect_gpus_in_process() -> DetectionResult:
    """The probe itself, with the real bindings, in this process (what the child runs)."""
    try:
        nvml = _load_pynvml()
    except ImportError:
        return DetectionResult(reason=NOT_INSTALLED())
    return _detect_in_process(nvml)


def _detect_in_process(nvml: Any) -> DetectionResult:
    try:
        nvml.nvmlInit()
    except Exception as err:
        return DetectionResult(reason=_reason(nvml, err))
    try:
        driver = _optional(nvml.nvmlSystemGetDriverVersion)
        count = int(nvml.nvmlDeviceGetCount())
        gpus: list[DetectedGpu] = []
        problems: list[Text] = []
        for i in range(count):
            try:
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                total, reported, used, reserved = _memory(nvml, h)
                free, note = checked_free(total, reported, used, reserved)
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
                        reported_free=reported if note else None,
                        note=note,
                    )
                )
                if note:  # the window and `vramdesk gpus` show the reason: the user learns why free looks low
                    problems.append(GPU_PROBLEM(index=i, problem=note))
            except Exception as err:
                problems.append(GPU_PROBLEM(index=i, problem=nvml_error(err)))
        reason: str | None = None
        if not gpus:
            reason = _joined(problems) if problems else NO_GPU()
        elif problems:
            reason = _joined(problems)
        return DetectionResult(gpus=gpus, reason=reason, driver_version=_text(driver) if driver else None)
    except Exception as err:
        return DetectionResult(reason=QUERY_FAILED(error=nvml_error(err)))
    finally:
        _optional(nvml.nvmlShutdown)


# ---------------------------------------------------------------------------------------------- the probe child


def probe_timeout() -> float:
    """The probe's deadline in seconds: $VRAMDESK_NVML_TIMEOUT when it is a sane number, else 5."""
    try:
        t = float(os.environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return PROBE_TIMEOUT_S
    return t if 0 < t <= 600 else PROBE_TIMEOUT_S  # NaN fails the comparison too


def probe_command() -> list[str]:
    """The child's command line. A frozen (PyInstaller) app has no ``python -m``: its executable is the app, and
    vramdesk.main answers this very command line (as it does for ``-m vramdesk.ui.export``)."""
    return [sys.executable, "-m", "vramdesk.services.nvml", "--probe"]


def _joined(problems: list[Text]) -> Text:
    return problems[0] if len(problems) == 1 else join("; ", *problems)


def _skipped(why: Text) -> DetectionResult:
    return DetectionResult(reason=join("; ", why, SKIPPED()))


def detect_gpus_isolated(timeout: float | None = None, cancel: threading.Event | None = None) -> DetectionResult:
    """Probe NVML in a child process that is killed at the deadline (``timeout`` s, default :func:`probe_timeout`)
    or as soon as ``cancel`` is set; never raises, never leaves the child behind."""
    limit = probe_timeout() if timeout is None else timeout
    try:
        proc = subprocess.Popen(
            probe_command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            # its own process group, so that the kill reaches anything it started; no console window on Windows
            start_new_session=os.name == "posix",
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
            env={**os.environ, TIMEOUT_ENV: f"{limit:g}"},  # the child's own alarm (probe_main)
        )
    except OSError as err:
        return _skipped(PROBE_NOT_STARTED(error=os_error(err)))
    deadline = time.monotonic() + limit
    try:
        while True:
            try:  # short waits, so that a cancel (the window closing) kills the child at once
                out, err_text = proc.communicate(timeout=max(0.001, min(0.05, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    return DetectionResult(reason=CANCELLED())
                if time.monotonic() >= deadline:
                    return _skipped(HUNG(seconds=limit))
    finally:
        _stop(proc)
    return _answer(proc.returncode, out, err_text)


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill the child (and its group) if it still runs, then reap it and close its pipes."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):  # it ended meanwhile
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
    # stuck in the kernel (uninterruptible sleep) it cannot be reaped: nothing more can be done from here
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=2)


def _answer(code: int, out: str, err_text: str) -> DetectionResult:
    """The child's exit status and output as a DetectionResult."""
    if code < 0:  # POSIX: killed by a signal
        try:
            name = signal.Signals(-code).name
        except ValueError:
            return _skipped(CRASHED_UNKNOWN_SIGNAL(signal=-code))
        return _skipped(CRASHED_SIGNAL(signal=-code, name=name))
    if os.name == "nt" and code >= 0xC0000000:  # Windows: an unhandled exception (0xC0000005: access violation)
        return _skipped(CRASHED_EXCEPTION(code=code))
    if code != 0:
        last = next((ln.strip() for ln in reversed(err_text.splitlines()) if ln.strip()), "")
        return _skipped(PROBE_FAILED_SAID(code=code, last=last) if last else PROBE_FAILED(code=code))
    # the answer is the last JSON line (a driver may print its own lines first)
    line = next((ln for ln in reversed(out.splitlines()) if ln.startswith("{")), "")
    try:
        return DetectionResult.from_json(json.loads(line))
    except (ValueError, KeyError, TypeError, AttributeError):
        return _skipped(NO_ANSWER())


def probe_main(argv: list[str]) -> int:
    """``python -m vramdesk.services.nvml --probe``: probe NVML here and print the result as one JSON line."""
    if argv != ["--probe"]:
        print("usage: python -m vramdesk.services.nvml --probe", file=sys.stderr)
        return 2
    alarm = getattr(signal, "alarm", None)  # POSIX: should the parent die without killing it, a hung probe still ends
    if alarm is not None:
        alarm(math.ceil(probe_timeout()) + 1)
    try:
        data = json.dumps(detect_gpus_in_process().to_probe_json()) + "\n"
    finally:
        if alarm is not None:
            alarm(0)
    if sys.stdout is not None:
        sys.stdout.write(data)
        sys.stdout.flush()
    else:  # a windowed (console-less) frozen app: stdout is still the parent's pipe at the OS level
        os.write(1, data.encode("utf-8"))
    return 0


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
    from .catalog import CatalogError, default_catalog

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


def _holder(gpu: DetectedGpu) -> Text | None:
    """The process that holds the most memory on ``gpu``, in words ("process 4242 python holds 22.10 GiB")."""
    known = [p for p in gpu.processes if p.used_bytes]
    if not known:
        return None
    p = max(known, key=lambda p: p.used_bytes or 0)
    gib = (p.used_bytes or 0) / _GIB
    return HOLDER_NAMED(pid=p.pid, name=p.name, gib=gib) if p.name else HOLDER(pid=p.pid, gib=gib)


def to_gpu_spec(gpu: DetectedGpu, catalog: Catalog | None = None) -> GpuSpec:
    """The catalog's spec of this GPU (bandwidth, compute) with the detected total and free memory.

    Free memory is re-checked (:func:`checked_free`), so a DetectedGpu made elsewhere cannot plan with more than
    its figures allow. Raises ValueError when the GPU has no usable total (absurd, and not in the catalog).
    """
    from vramdesk.core.gpu import GpuSpec

    from .catalog import default_catalog

    cat = catalog or default_catalog()
    free, note = checked_free(gpu.total, gpu.free, gpu.used, gpu.reserved)
    detected: dict[str, Any] = {
        "free_bytes": free,
        "device_index": gpu.index,
        "used_bytes": gpu.used if 0 <= gpu.used <= gpu.total else None,
        "held_by": _holder(gpu),
        "free_note": gpu.note or note,
        "compute_capability": gpu.compute_capability,
    }
    sane_total = 0 < gpu.total <= ABSURD_BYTES
    name = catalog_name(gpu.name, cat)
    if name is None:
        if not sane_total:
            raise ValueError(ABSURD_TOTAL(index=gpu.index, total=gpu.total))
        return GpuSpec(name=gpu.name, memory_bytes=gpu.total, **detected)
    spec = cat.gpu(name)
    detected["memory_bytes"] = gpu.total if sane_total else spec.memory_bytes
    detected["compute_capability"] = gpu.compute_capability or spec.compute_capability
    return spec.model_copy(update=detected)


MACHINE_GPU = Message("nvml.machine_gpu", "no --gpu: judged against GPU 0 of this machine ({gpu}, {free:.2f} GiB free)")
MACHINE_GPUS = Message(
    "nvml.machine_gpus",
    "no --gpu: judged against GPU 0 of this machine ({gpu}, {free:.2f} GiB free, {count} GPUs found)",
)


def machine_gpu(
    catalog: Catalog | None = None, found: DetectionResult | None = None
) -> tuple[GpuSpec | None, Text | None]:
    """GPU 0 of this machine (``found``, else :func:`detect_gpus`) as the window plans with it (the catalog's
    figures, the detected total and free memory), and a sentence saying so; (None, None) without a usable GPU
    (none, or one without a usable total: no verdict rather than a wrong one). A probe that hung or crashed
    gives (None, its reason): the caller waited for it and is told why there is no verdict."""
    found = found if found is not None else detect_gpus()
    if not found.gpus:
        reason = found.reason
        if isinstance(reason, Text) and any(getattr(p, "id", "") == SKIPPED.id for p in reason.parts):
            return None, reason
        return None, None
    try:
        spec = to_gpu_spec(found.gpus[0], catalog)
    except ValueError:
        return None, None
    free = (spec.free_bytes or 0) / _GIB
    count = len(found.gpus)
    note = MACHINE_GPUS(gpu=spec.name, free=free, count=count) if count > 1 else MACHINE_GPU(gpu=spec.name, free=free)
    return spec, note


__all__ = [
    "DetectedGpu",
    "DetectionResult",
    "GpuProcess",
    "catalog_name",
    "checked_free",
    "detect_gpus",
    "detect_gpus_in_process",
    "detect_gpus_isolated",
    "machine_gpu",
    "probe_main",
    "process_name",
    "to_gpu_spec",
]


if __name__ == "__main__":
    sys.exit(probe_main(sys.argv[1:]))
