# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One GPU's state as NVML reports it: what can slow work on it (what ``nvidia-smi -q`` shows).

Private to the gpuops.cuda_venv collection: not a public API.

Clocks against their maximum and the reasons they are held down, the power limit against the default, the PCIe
link against its maximum, ECC errors and pending page retirement or row remapping, persistence and MIG mode, and
the compute processes with their memory. Called by ``gpu.gpu_facts`` inside its NVML session with the ``pynvml``
module and a device handle. Every call is guarded on its own: NVMLError_NotSupported is common (no ECC on a
consumer board, no remapping before Ampere) and an old nvidia-ml-py lacks newer functions; a field that cannot be
read is None and named in ``unsupported``. Constants are NVML's own numbers (nvml.h), so that no pynvml name is
needed for them.
"""

from __future__ import annotations

from typing import Callable, List, Optional

_MIB = 1024 * 1024
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM = 0, 1, 2
MEMORY_ERROR_UNCORRECTED = 1
VOLATILE_ECC, AGGREGATE_ECC = 0, 1
TEMPERATURE_GPU = 0

# nvmlClocksEventReason* bits (formerly nvmlClocksThrottleReason*).
CLOCK_EVENT_REASONS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)


def clock_event_names(mask: int) -> List[str]:
    """The names of the reason bits set in ``mask``; an unknown bit as its hex value."""
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    known = sum(bit for bit, _name in CLOCK_EVENT_REASONS)
    if mask & ~known:
        names.append("0x%x" % (mask & ~known))
    return names


def device_state(nvml, handle) -> dict:
    """What slows work on one device; a field NVML cannot give is None and listed in ``unsupported``."""
    unsupported: List[str] = []

    def ask(field: str, names, *args):
        """getattr(nvml, name)(*args) for the first of ``names`` pynvml has (a newer name first)."""
        try:
            return _first(nvml, (names,) if isinstance(names, str) else names)(*args)
        except (nvml.NVMLError, AttributeError, TypeError, ValueError):
            unsupported.append(field)
            return None

    reasons = ask("clock_event_reasons", ("nvmlDeviceGetCurrentClocksEventReasons",
                                          "nvmlDeviceGetCurrentClocksThrottleReasons"), handle)
    ecc = ask("ecc_mode", "nvmlDeviceGetEccMode", handle)
    mig = ask("mig_mode", "nvmlDeviceGetMigMode", handle)
    remapped = ask("remapped_rows", "nvmlDeviceGetRemappedRows", handle)
    limit = ask("power_limit", "nvmlDeviceGetEnforcedPowerLimit", handle)
    default = ask("power_default_limit", "nvmlDeviceGetPowerManagementDefaultLimit", handle)
    usage = ask("power_usage", "nvmlDeviceGetPowerUsage", handle)
    state = {
        "clocks_mhz": {
            "sm": ask("clock_sm", "nvmlDeviceGetClockInfo", handle, CLOCK_SM),
            "sm_max": ask("clock_sm_max", "nvmlDeviceGetMaxClockInfo", handle, CLOCK_SM),
            "memory": ask("clock_memory", "nvmlDeviceGetClockInfo", handle, CLOCK_MEM),
            "memory_max": ask("clock_memory_max", "nvmlDeviceGetMaxClockInfo", handle, CLOCK_MEM),
        },
        "clock_event_reasons": clock_event_names(int(reasons)) if reasons is not None else None,
        "performance_state": ask("performance_state", "nvmlDeviceGetPerformanceState", handle),
        "temperature_c": ask("temperature", "nvmlDeviceGetTemperature", handle, TEMPERATURE_GPU),
        "power_w": {"limit": _watts(limit), "default_limit": _watts(default), "usage": _watts(usage)},
        "pcie": {
            "generation": ask("pcie_generation", "nvmlDeviceGetCurrPcieLinkGeneration", handle),
            "generation_max": ask("pcie_generation_max", "nvmlDeviceGetMaxPcieLinkGeneration", handle),
            "width": ask("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", handle),
            "width_max": ask("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth", handle),
        },
        "ecc": {
            "enabled": bool(ecc[0]) if ecc is not None else None,
            "uncorrected_volatile": ask("ecc_uncorrected_volatile", "nvmlDeviceGetTotalEccErrors", handle, MEMORY_ERROR_UNCORRECTED, VOLATILE_ECC),
            "uncorrected_aggregate": ask("ecc_uncorrected_aggregate", "nvmlDeviceGetTotalEccErrors", handle, MEMORY_ERROR_UNCORRECTED, AGGREGATE_ECC),
            "retired_pages_pending": _flag(ask("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus", handle)),
            "remapped_rows_pending": bool(remapped[2]) if remapped is not None else None,
            "remapping_failed": bool(remapped[3]) if remapped is not None else None,
        },
        "persistence_mode": _flag(ask("persistence_mode", "nvmlDeviceGetPersistenceMode", handle)),
        "mig_mode": {"current": _flag(mig[0]), "pending": _flag(mig[1])} if mig is not None else None,
        "processes": _processes(ask("processes", "nvmlDeviceGetComputeRunningProcesses", handle)),
    }
    if ecc is not None and not ecc[0]:
        unsupported = [f for f in unsupported if not f.startswith("ecc_")]  # ECC off: no counters to read
    state["unsupported"] = unsupported
    return state


def _first(nvml, names) -> Callable:
    for name in names:
        if hasattr(nvml, name):
            return getattr(nvml, name)
    raise AttributeError(names[0])


def _watts(milliwatts) -> Optional[float]:
    return None if milliwatts is None else round(int(milliwatts) / 1000.0, 1)


def _flag(value) -> Optional[bool]:
    return None if value is None else bool(int(value))


def _processes(found) -> Optional[List[dict]]:
    if found is None:
        return None
    rows = []
    for proc in found:
        used = getattr(proc, "usedGpuMemory", None)
        rows.append({"pid": int(proc.pid), "used_memory_mib": int(used) // _MIB if isinstance(used, int) else None})
    return sorted(rows, key=lambda row: row["pid"])
