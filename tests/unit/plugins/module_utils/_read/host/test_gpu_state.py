# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for gpu_state: one device's state through a fake ``pynvml`` (no GPU here; the names say so)."""

from __future__ import annotations

import types

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host import gpu
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.gpu_state import clock_event_names, device_state


class FakeNVMLError(Exception):
    pass


class FakeNotSupported(FakeNVMLError):
    """pynvml raises NVMLError_NotSupported (a subclass of NVMLError) for fields a board lacks."""


# An H200 under load at its power cap, as nvidia-smi -q shows one (docs/ACCEPTANCE.md has the idle figures).
H200 = {
    "nvmlDeviceGetClockInfo": {1: 1755, 2: 3201},
    "nvmlDeviceGetMaxClockInfo": {1: 1980, 2: 3201},
    "nvmlDeviceGetCurrentClocksEventReasons": 0x4,
    "nvmlDeviceGetPerformanceState": 0,
    "nvmlDeviceGetTemperature": 61,
    "nvmlDeviceGetEnforcedPowerLimit": 700000,
    "nvmlDeviceGetPowerManagementDefaultLimit": 700000,
    "nvmlDeviceGetPowerUsage": 698123,
    "nvmlDeviceGetCurrPcieLinkGeneration": 5,
    "nvmlDeviceGetMaxPcieLinkGeneration": 5,
    "nvmlDeviceGetCurrPcieLinkWidth": 16,
    "nvmlDeviceGetMaxPcieLinkWidth": 16,
    "nvmlDeviceGetEccMode": (1, 1),
    "nvmlDeviceGetTotalEccErrors": {0: 0, 1: 2},
    "nvmlDeviceGetRetiredPagesPendingStatus": 0,
    "nvmlDeviceGetRemappedRows": (0, 0, 0, 0),
    "nvmlDeviceGetPersistenceMode": 1,
    "nvmlDeviceGetMigMode": (0, 0),
    "nvmlDeviceGetComputeRunningProcesses": [types.SimpleNamespace(pid=4242, usedGpuMemory=81920 * 1024 * 1024),
                                             types.SimpleNamespace(pid=77, usedGpuMemory=None)],
}


def fake_pynvml(answers, calls=None):
    """A pynvml stand-in answering each function from ``answers``: a value, a dict keyed by the call's second argument
    (clock type, ECC counter type), or an exception to raise. Functions absent from ``answers`` do not exist."""
    fake = types.ModuleType("pynvml")
    fake.NVMLError = FakeNVMLError
    calls = [] if calls is None else calls

    def function(name, answer):
        def call(handle, *args):
            calls.append((name, handle) + args)
            if isinstance(answer, Exception):
                raise answer
            if isinstance(answer, dict):
                return answer[args[-1]] if name == "nvmlDeviceGetTotalEccErrors" else answer[args[0]]
            return answer
        return call
    for name, answer in answers.items():
        setattr(fake, name, function(name, answer))
    return fake


def test_device_state_of_a_loaded_h200_fake_nvml():
    calls = []
    state = device_state(fake_pynvml(H200, calls), "h0")
    assert state == {
        "clocks_mhz": {"sm": 1755, "sm_max": 1980, "memory": 3201, "memory_max": 3201},
        "clock_event_reasons": ["sw_power_cap"],
        "performance_state": 0,
        "temperature_c": 61,
        "power_w": {"limit": 700.0, "default_limit": 700.0, "usage": 698.1},
        "pcie": {"generation": 5, "generation_max": 5, "width": 16, "width_max": 16},
        "ecc": {"enabled": True, "uncorrected_volatile": 0, "uncorrected_aggregate": 2, "retired_pages_pending": False,
                "remapped_rows_pending": False, "remapping_failed": False},
        "persistence_mode": True,
        "mig_mode": {"current": False, "pending": False},
        "processes": [{"pid": 77, "used_memory_mib": None}, {"pid": 4242, "used_memory_mib": 81920}],
        "unsupported": [],
    }
    assert ("nvmlDeviceGetTotalEccErrors", "h0", 1, 0) in calls and ("nvmlDeviceGetClockInfo", "h0", 1) in calls


def test_each_call_is_guarded_fake_nvml():
    """A consumer board: no ECC, no remapping, no MIG (NotSupported); an old nvidia-ml-py without the new name of the
    clock reasons call but with the old one."""
    answers = dict(H200)
    answers.update(nvmlDeviceGetEccMode=FakeNotSupported("Not Supported"), nvmlDeviceGetTotalEccErrors=FakeNotSupported("x"),
                   nvmlDeviceGetRetiredPagesPendingStatus=FakeNotSupported("x"), nvmlDeviceGetRemappedRows=FakeNotSupported("x"),
                   nvmlDeviceGetMigMode=FakeNotSupported("x"), nvmlDeviceGetCurrentClocksThrottleReasons=0x1 | 0x40 | 0x4000)
    del answers["nvmlDeviceGetCurrentClocksEventReasons"]
    del answers["nvmlDeviceGetPowerManagementDefaultLimit"]
    state = device_state(fake_pynvml(answers), "h1")
    assert state["clock_event_reasons"] == ["gpu_idle", "hw_thermal_slowdown", "0x4000"]
    assert state["ecc"] == {"enabled": None, "uncorrected_volatile": None, "uncorrected_aggregate": None,
                            "retired_pages_pending": None, "remapped_rows_pending": None, "remapping_failed": None}
    assert state["mig_mode"] is None and state["power_w"] == {"limit": 700.0, "default_limit": None, "usage": 698.1}
    assert state["unsupported"] == ["ecc_mode", "mig_mode", "remapped_rows", "power_default_limit",
                                    "ecc_uncorrected_volatile", "ecc_uncorrected_aggregate", "retired_pages_pending"]


def test_ecc_off_reads_no_counters_fake_nvml():
    answers = dict(H200, nvmlDeviceGetEccMode=(0, 0), nvmlDeviceGetTotalEccErrors=FakeNotSupported("x"))
    state = device_state(fake_pynvml(answers), "h")
    assert state["ecc"]["enabled"] is False and state["ecc"]["uncorrected_volatile"] is None
    assert state["unsupported"] == []


def test_clock_event_names():
    assert clock_event_names(0) == []
    assert clock_event_names(0x1FF) == ["gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
                                        "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                                        "display_clock_setting"]


def test_gpu_facts_with_state_reads_it_in_the_same_session_fake_nvml(monkeypatch):
    calls = []
    fake = fake_pynvml(H200, calls)
    for name, value in (("nvmlInit", None), ("nvmlShutdown", None), ("nvmlSystemGetDriverVersion", "580.159.04"),
                        ("nvmlSystemGetCudaDriverVersion_v2", 13000), ("nvmlDeviceGetCount", 1)):
        setattr(fake, name, lambda *args, _name=name, _value=value: calls.append((_name,)) or _value)
    fake.nvmlDeviceGetHandleByIndex = lambda index: "h%d" % index
    fake.nvmlDeviceGetName = lambda handle: "NVIDIA H200"
    fake.nvmlDeviceGetUUID = lambda handle: "GPU-1"
    fake.nvmlDeviceGetMemoryInfo = lambda handle: types.SimpleNamespace(total=143771 * 1024 * 1024)
    fake.nvmlDeviceGetCudaComputeCapability = lambda handle: (9, 0)
    monkeypatch.setattr(gpu, "pynvml", fake)
    monkeypatch.setattr(gpu, "HAS_PYNVML", True)
    facts = gpu.gpu_facts(with_state=True)
    assert facts.as_dict()["devices"] == [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "memory_total_mib": 143771,
                                           "compute_capability": "9.0"}]
    assert facts.states == (device_state(fake_pynvml(H200), "h0"),)
    assert facts.as_dict()["states"] == [device_state(fake_pynvml(H200), "h0")]
    names = [c[0] for c in calls]
    assert names.count("nvmlInit") == names.count("nvmlShutdown") == 1
    assert names.index("nvmlDeviceGetClockInfo") < names.index("nvmlShutdown")
    without = gpu.gpu_facts()
    assert without.states is None and "states" not in without.as_dict()
