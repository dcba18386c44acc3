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


def gpu_facts(with_state: bool = False) -> dict:
    """Driver and devices as NVML reports them; ``available`` False with a ``reason`` when it cannot.

    Shape: available, reason, driver_version, cuda_driver_version (e.g. 13000),
    max_cuda (e.g. "13.0"), devices (index, name, uuid, memory_total_mib,
    compute_capability).  What was read before a failure is kept.  ``with_state``: also ``states``, each device's
    state in the same NVML session (gpu_state.device_state), by device index.
    """
    facts = {"available": False, "reason": None, "driver_version": None, "cuda_driver_version": None, "max_cuda": None, "devices": []}
    if not HAS_PYNVML:
        facts["reason"] = "pynvml (nvidia-ml-py) is not installed"
        return facts
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        facts["reason"] = "NVML could not be initialised: %s" % _text(str(exc))
        return facts
    try:
        _read(facts, with_state)
    except pynvml.NVMLError as exc:
        facts["reason"] = "NVML query failed: %s" % _text(str(exc))
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
    return facts


def _read(facts: dict, with_state: bool) -> None:
    facts["driver_version"] = _text(pynvml.nvmlSystemGetDriverVersion())
    facts["cuda_driver_version"] = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
    facts["max_cuda"] = cuda_version_text(facts["cuda_driver_version"])
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        facts["devices"].append({
            "index": index,
            "name": _text(pynvml.nvmlDeviceGetName(handle)),
            "uuid": _text(pynvml.nvmlDeviceGetUUID(handle)),
            "memory_total_mib": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total) // _MIB,
            "compute_capability": "%d.%d" % (major, minor),
        })
        if with_state:
            facts.setdefault("states", []).append(device_state(pynvml, handle))
    if facts["devices"]:
        facts["available"] = True
    else:
        facts["reason"] = "NVML found no GPU device"


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
