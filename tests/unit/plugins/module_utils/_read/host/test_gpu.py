# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for gpu: NVML facts (real pynvml; a fake one only where no GPU exists) and driver rules."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import types

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host import gpu


def _nvml_loadable() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


UNAVAILABLE = {"available": False, "reason": None, "driver_version": None, "cuda_driver_version": None, "max_cuda": None, "devices": [],
               "pynvml_installed": True}


@pytest.mark.skipif(_nvml_loadable(), reason="this machine has libnvidia-ml.so.1")
def test_gpu_facts_without_the_nvml_library():
    assert gpu.HAS_PYNVML is True
    assert gpu.gpu_facts().as_dict() == dict(UNAVAILABLE, reason="NVML could not be initialised: NVML Shared Library Not Found")


@pytest.mark.skipif(not _nvml_loadable(), reason="this machine has no libnvidia-ml.so.1")
def test_gpu_facts_with_a_real_driver():
    facts = gpu.gpu_facts().as_dict()
    assert sorted(facts) == sorted(UNAVAILABLE)
    if facts["available"]:
        assert facts["max_cuda"] == gpu.cuda_version_text(facts["cuda_driver_version"])
        assert [device["index"] for device in facts["devices"]] == list(range(len(facts["devices"])))
        assert all(sorted(device) == ["compute_capability", "index", "memory_total_mib", "name", "uuid"] for device in facts["devices"])


def test_gpu_facts_without_pynvml():
    # A real guarded import in a fresh interpreter where pynvml cannot be imported.
    code = (
        "import sys, json; sys.modules['pynvml'] = None\n"
        "from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host import gpu\n"
        "print(json.dumps([gpu.HAS_PYNVML, gpu.PYNVML_IMPORT_ERROR, gpu.gpu_facts().as_dict()]))\n"
    )
    collections = gpu.__file__
    for _level in range(8):  # .../ansible_collections/gpuops/cuda_venv/plugins/module_utils/_read/host/gpu.py
        collections = os.path.dirname(collections)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": collections}
    out = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    has, error, facts = json.loads(out)
    assert has is False
    assert error.startswith("Traceback (most recent call last):")
    assert error.endswith("ModuleNotFoundError: import of pynvml halted; None in sys.modules\n")
    assert facts == dict(UNAVAILABLE, reason="pynvml (nvidia-ml-py) is not installed", pynvml_installed=False)


class _FakeNVMLError(Exception):
    pass


def _fake_pynvml(calls, devices, fail_on=None):
    """A stand-in pynvml (there is no GPU here) answering like an H200 node on driver 580."""
    fake = types.ModuleType("pynvml")
    fake.NVMLError = _FakeNVMLError

    def record(name, value):
        def call(*args):
            calls.append(name)
            if name == fail_on:
                raise _FakeNVMLError("Unknown Error")
            return value(*args) if callable(value) else value
        return call

    fake.nvmlInit = record("nvmlInit", None)
    fake.nvmlShutdown = record("nvmlShutdown", None)
    fake.nvmlSystemGetDriverVersion = record("nvmlSystemGetDriverVersion", "580.95.05")
    fake.nvmlSystemGetCudaDriverVersion_v2 = record("nvmlSystemGetCudaDriverVersion_v2", 13000)
    fake.nvmlDeviceGetCount = record("nvmlDeviceGetCount", len(devices))
    fake.nvmlDeviceGetHandleByIndex = record("nvmlDeviceGetHandleByIndex", lambda index: devices[index])
    fake.nvmlDeviceGetName = record("nvmlDeviceGetName", lambda handle: handle["name"])
    fake.nvmlDeviceGetUUID = record("nvmlDeviceGetUUID", lambda handle: handle["uuid"])
    fake.nvmlDeviceGetMemoryInfo = record("nvmlDeviceGetMemoryInfo", lambda handle: types.SimpleNamespace(total=handle["total"], free=0, used=0))
    fake.nvmlDeviceGetCudaComputeCapability = record("nvmlDeviceGetCudaComputeCapability", lambda handle: (9, 0))
    return fake


H200 = {"name": "NVIDIA H200", "uuid": b"GPU-3f2a6c1e-8b4d-4e57-9a0b-1c2d3e4f5a6b", "total": 150754820096}


def test_gpu_facts_mocked_nvml(monkeypatch):
    calls = []
    monkeypatch.setattr(gpu, "pynvml", _fake_pynvml(calls, [H200]))
    monkeypatch.setattr(gpu, "HAS_PYNVML", True)
    facts = gpu.gpu_facts()
    assert facts.devices == (gpu.GpuDevice(0, "NVIDIA H200", "GPU-3f2a6c1e-8b4d-4e57-9a0b-1c2d3e4f5a6b", 143771, "9.0"),)
    assert facts.states is None
    assert facts.as_dict() == {
        "available": True,
        "reason": None,
        "driver_version": "580.95.05",
        "cuda_driver_version": 13000,
        "max_cuda": "13.0",
        "devices": [{
            "index": 0,
            "name": "NVIDIA H200",
            "uuid": "GPU-3f2a6c1e-8b4d-4e57-9a0b-1c2d3e4f5a6b",
            "memory_total_mib": 143771,
            "compute_capability": "9.0",
        }],
        "pynvml_installed": True,
    }
    assert calls[0] == "nvmlInit" and calls[-1] == "nvmlShutdown"


def test_gpu_facts_mocked_nvml_without_devices(monkeypatch):
    calls = []
    monkeypatch.setattr(gpu, "pynvml", _fake_pynvml(calls, []))
    monkeypatch.setattr(gpu, "HAS_PYNVML", True)
    assert gpu.gpu_facts().as_dict() == dict(
        UNAVAILABLE, reason="NVML found no GPU device", driver_version="580.95.05", cuda_driver_version=13000, max_cuda="13.0"
    )
    assert calls[-1] == "nvmlShutdown"


def test_gpu_facts_mocked_nvml_query_failure_still_shuts_down(monkeypatch):
    calls = []
    monkeypatch.setattr(gpu, "pynvml", _fake_pynvml(calls, [H200], fail_on="nvmlDeviceGetMemoryInfo"))
    monkeypatch.setattr(gpu, "HAS_PYNVML", True)
    assert gpu.gpu_facts().as_dict() == dict(
        UNAVAILABLE, reason="NVML query failed: Unknown Error", driver_version="580.95.05", cuda_driver_version=13000, max_cuda="13.0"
    )
    assert calls[-1] == "nvmlShutdown"


def test_gpu_facts_mocked_nvml_init_failure_skips_shutdown(monkeypatch):
    calls = []
    monkeypatch.setattr(gpu, "pynvml", _fake_pynvml(calls, [H200], fail_on="nvmlInit"))
    monkeypatch.setattr(gpu, "HAS_PYNVML", True)
    assert gpu.gpu_facts().as_dict() == dict(UNAVAILABLE, reason="NVML could not be initialised: Unknown Error")
    assert calls == ["nvmlInit"]


@pytest.mark.parametrize("value, text", [(13000, "13.0"), (12080, "12.8"), (12090, "12.9"), (11040, "11.4"), (13010, "13.1")])
def test_cuda_version_text(value, text):
    assert gpu.cuda_version_text(value) == text


@pytest.mark.parametrize(
    "max_cuda, needed, verdict",
    [
        # same or newer: compatible, on both sides of the minor and the major boundary
        ("13.0", "13.0", gpu.COMPATIBLE),
        ("13.0", "12.8", gpu.COMPATIBLE),
        ("13.1", "13.0", gpu.COMPATIBLE),
        ("12.8", "12.8", gpu.COMPATIBLE),
        ("13.0", "12.8.1", gpu.COMPATIBLE),
        # same major, older minor: minor version compatibility (a warning)
        ("12.7", "12.8", gpu.MINOR_BEHIND),
        ("12.4", "12.8", gpu.MINOR_BEHIND),
        ("12.0", "12.9", gpu.MINOR_BEHIND),
        # older major: cannot run (an error)
        ("12.9", "13.0", gpu.MAJOR_BEHIND),
        ("12.9", "13", gpu.MAJOR_BEHIND),
        ("11.8", "12.1", gpu.MAJOR_BEHIND),
    ],
)
def test_driver_compatibility_follows_cudas_rules(max_cuda, needed, verdict):
    assert gpu.driver_compatibility(max_cuda, needed) == verdict


@pytest.mark.parametrize("cuda, driver", [("13.0", "580"), ("13.2", "580"), ("12.8", "525"), ("12", "525"), ("11.8", "450")])
def test_minimum_driver_for(cuda, driver):
    assert gpu.minimum_driver_for(cuda) == driver


def test_minimum_driver_for_unknown_major():
    with pytest.raises(gpu.GpuError) as error:
        gpu.minimum_driver_for("10.2")
    assert str(error.value) == "no minimum driver is known for CUDA 10.2: known majors are 11, 12, 13"


@pytest.mark.parametrize("bad", ["", "cu128", "12.x", "12.8.1.0", None, 12.8])
def test_bad_cuda_version(bad):
    with pytest.raises(gpu.GpuError) as error:
        gpu.driver_compatibility("13.0", bad)
    assert str(error.value) == "CUDA version %r is not MAJOR.MINOR: pass one such as '12.8'" % (bad,)
