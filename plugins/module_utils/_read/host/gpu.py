# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU facts from NVML (driver version, the newest CUDA it supports, devices) and driver rules.

Private to the gpuops.cuda_venv collection: not a public API.

NVML is read through ``pynvml`` from nvidia-ml-py in the tools' Python, never
in the venv under diagnosis.  The driver rules follow CUDA minor version
compatibility (https://docs.nvidia.com/deploy/cuda-compatibility/): a CUDA
X.y build runs on any driver that supports CUDA X.0, which for 12.x means
driver 525 or newer and for 13.x driver 580 or newer (docs/FINDINGS.md, DRIVER_TOO_OLD).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.gpu_state import device_state

try:
    import pynvml
except ImportError:
    pynvml = None
    HAS_PYNVML = False
    PYNVML_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_PYNVML = True
    PYNVML_IMPORT_ERROR = None

# Oldest driver branch for each CUDA major (minor version compatibility).
MINIMUM_DRIVER = {11: "450", 12: "525", 13: "580"}

_MIB = 1024 * 1024


class GpuError(CudaVenvError, ValueError):
    """A CUDA version string that cannot be read, or a CUDA major with no known driver rule."""


@dataclass(frozen=True)
class GpuDevice:
    """One GPU as NVML reports it."""

    index: int
    name: str
    uuid: str
    memory_total_mib: int
    compute_capability: str  # "9.0"

    def as_dict(self) -> dict:
        return {"index": self.index, "name": self.name, "uuid": self.uuid, "memory_total_mib": self.memory_total_mib,
                "compute_capability": self.compute_capability}


@dataclass(frozen=True)
class GpuFacts:
    """The driver and devices as NVML reports them; ``available`` False with a ``reason`` when it cannot.

    What was read before a failure is kept. ``states``: each device's state read in the same NVML session
    (gpu_state.device_state, a dict each), by device index; None when not asked for or no device was read.
    """

    available: bool = False
    reason: Optional[str] = None
    driver_version: Optional[str] = None
    cuda_driver_version: Optional[int] = None  # e.g. 13000
    max_cuda: Optional[str] = None  # e.g. "13.0"
    devices: Tuple[GpuDevice, ...] = ()
    states: Optional[Tuple[dict, ...]] = None
    pynvml_installed: bool = True  # the Python running the module has pynvml (the role fills its tools venv when not)

    def as_dict(self) -> dict:
        """The facts as the modules return them: available, reason, driver_version, cuda_driver_version, max_cuda,
        devices (index, name, uuid, memory_total_mib, compute_capability), pynvml_installed, and ``states`` when read."""
        facts = {"available": self.available, "reason": self.reason, "driver_version": self.driver_version,
                 "cuda_driver_version": self.cuda_driver_version, "max_cuda": self.max_cuda,
                 "devices": [d.as_dict() for d in self.devices], "pynvml_installed": self.pynvml_installed}
        if self.states is not None:
            facts["states"] = list(self.states)
        return facts


def gpu_facts(with_state: bool = False) -> GpuFacts:
    """Driver and devices as NVML reports them (GpuFacts); ``available`` False with a ``reason`` when it cannot.

    What was read before a failure is kept.  ``with_state``: also ``states``, each device's state in the same NVML
    session (gpu_state.device_state), by device index.
    """
    if not HAS_PYNVML:
        return GpuFacts(reason="pynvml (nvidia-ml-py) is not installed", pynvml_installed=False)
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return GpuFacts(reason="NVML could not be initialised: %s" % _text(str(exc)))
    read = {"devices": [], "states": []}
    try:
        _read(read, with_state)
    except pynvml.NVMLError as exc:
        read["reason"] = "NVML query failed: %s" % _text(str(exc))
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
    return GpuFacts(available=read.get("available", False), reason=read.get("reason"),
                    driver_version=read.get("driver_version"), cuda_driver_version=read.get("cuda_driver_version"),
                    max_cuda=read.get("max_cuda"), devices=tuple(read["devices"]),
                    states=tuple(read["states"]) if read["states"] else None)


def _read(read: dict, with_state: bool) -> None:
    """Fill ``read`` (GpuFacts' fields) as NVML answers, so that what came before a failure is kept."""
    read["driver_version"] = _text(pynvml.nvmlSystemGetDriverVersion())
    read["cuda_driver_version"] = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
    read["max_cuda"] = cuda_version_text(read["cuda_driver_version"])
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        read["devices"].append(GpuDevice(
            index=index,
            name=_text(pynvml.nvmlDeviceGetName(handle)),
            uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
            memory_total_mib=int(pynvml.nvmlDeviceGetMemoryInfo(handle).total) // _MIB,
            compute_capability="%d.%d" % (major, minor),
        ))
        if with_state:
            read["states"].append(device_state(pynvml, handle))
    if read["devices"]:
        read["available"] = True
    else:
        read["reason"] = "NVML found no GPU device"


def cuda_version_text(value: int) -> str:
    """NVML's integer CUDA version as text: 13000 -> "13.0", 12080 -> "12.8"."""
    return "%d.%d" % (value // 1000, (value % 1000) // 10)


# driver_compatibility() verdicts
COMPATIBLE = "compatible"
MINOR_BEHIND = "minor_behind"
MAJOR_BEHIND = "major_behind"


def driver_compatibility(max_cuda: str, needed_cuda: str) -> str:
    """How a driver whose newest CUDA is ``max_cuda`` runs a build for ``needed_cuda`` (CUDA's compatibility rules).

    COMPATIBLE: the driver's CUDA is the same or newer ("13.0" runs "12.8" and "13.0").
    MINOR_BEHIND: same major, older minor ("12.4" for "12.8"): minor version compatibility runs it, but
    features of the newer minor (PTX JIT of newer code, new APIs) may fail.
    MAJOR_BEHIND: older major ("12.8" for "13.0"): the build cannot run.
    """
    have, need = parse_cuda_version(max_cuda), parse_cuda_version(needed_cuda)
    if have >= need:
        return COMPATIBLE
    return MINOR_BEHIND if have[0] == need[0] else MAJOR_BEHIND


def minimum_driver_for(cuda: str) -> str:
    """The oldest driver branch that runs CUDA ``cuda`` builds: "13.0" -> "580", "12.8" -> "525"."""
    major = parse_cuda_version(cuda)[0]
    if major not in MINIMUM_DRIVER:
        raise GpuError(
            "no minimum driver is known for CUDA %s: known majors are %s" % (cuda, ", ".join(str(known) for known in sorted(MINIMUM_DRIVER)))
        )
    return MINIMUM_DRIVER[major]


def parse_cuda_version(text: str) -> tuple:
    """ "12.8" -> (12, 8); "13" -> (13, 0); a patch part ("12.8.1") is ignored."""
    parts = text.split(".") if isinstance(text, str) else []
    if not 1 <= len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise GpuError("CUDA version %r is not MAJOR.MINOR: pass one such as '12.8'" % (text,))
    return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0


def _text(value) -> str:
    # Old nvidia-ml-py releases return bytes.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
