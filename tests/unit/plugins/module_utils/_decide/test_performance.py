# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for performance: the kernel rule, the GPU state, environment and restart findings, and the facts' shape.

The observations are literal records (tests/unit/plugins/module_utils/observations.py) with a PerformanceReading;
the GPU states are shaped as gpu_state.device_state returns them (tested on its own through a fake pynvml)."""

from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.performance import (
    NONE, PTX, SASS, compute_capability_problems, kernel_verdict, performance_facts, performance_findings)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import Kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.job_env import EnvSetting
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.performance_state import Extension, PerformanceReading
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.venv_processes import DELETED, PREVIOUS, VenvProcess
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O

TORCH_CUDA = O.sp("torch/lib/libtorch_cuda.so")
FLASH_OPS = O.sp("sgl_kernel/flash_ops.abi3.so")
# As measured on the real wheels: torch 2.14.1+cu130 (no sm_70), sglang-kernel 0.4.10's flash_ops (sm_80, 86, 90), no PTX.
TORCH_2141 = Kernels((75, 80, 86, 90, 100, 103, 120, 121), (), 915000000, 3000, 24000, {"sm_90": (0x11,)})
FLASH = Kernels((80, 86, 90), (), 1000, 2, 6, {"sm_80": (0x11,), "sm_86": (0x11,), "sm_90": (0x100011,)})
PTX_ONLY = Kernels((), (80,), 100, 1, 1, {"compute_80": (0x11,)})


@pytest.mark.parametrize("sass, ptx, cc, verdict", [
    ((80, 86, 90), (), "8.9", (SASS, 86)),  # sm_86 runs on sm_89
    ((80, 86, 90), (), "9.0", (SASS, 90)),
    ((80, 86, 90), (), "10.0", (NONE, None)),  # another major: no SASS runs
    ((80, 86, 90), (), "12.0", (NONE, None)),
    ((75, 80), (), "7.0", (NONE, None)),  # torch 2.14.1 on a V100
    ((100,), (), "10.3", (SASS, 100)),
    ((103,), (), "10.0", (NONE, None)),  # sm_103 does not run on sm_100
    ((80,), (80,), "9.0", (PTX, 80)),  # PTX is compiled for newer GPUs
    ((), (90, 100), "9.0", (PTX, 90)),
    ((), (90,), "8.0", (NONE, None)),  # never for older ones
    ((90,), (80,), "9.0", (SASS, 90)),
])
def test_kernel_verdict(sass, ptx, cc, verdict):
    assert kernel_verdict(sass, ptx, cc) == verdict


def test_compute_capability_problems():
    assert compute_capability_problems(["8.0", "9.0", "10.3", "12.1"]) == []
    assert compute_capability_problems(["sm_90", "9", "9.0a", ""]) == [
        "gpu_archs: %r is not a compute capability such as '8.0' or '9.0'" % v for v in ("sm_90", "9", "9.0a", "")]


def _with(reading, gpu_archs=(), gpu=None, obs=None):
    obs = obs or O.healthy()
    return dataclasses.replace(obs, options=dataclasses.replace(obs.options, performance=True, gpu_archs=tuple(gpu_archs)),
                               performance=reading, gpu=gpu)


def _reading(extensions=(), states=(), activate=(), processes=()):
    return PerformanceReading(tuple(extensions), tuple(states), tuple(activate), tuple(processes), {"kernels": 0.01})


def _codes(findings):
    return [(f.code, f.severity, f.subject) for f in findings]


def test_no_kernel_for_a_declared_gpu_is_an_error_naming_the_library_and_its_archs():
    obs = _with(_reading([Extension(TORCH_CUDA, TORCH_2141), Extension(FLASH_OPS, FLASH)]), gpu_archs=("7.0", "9.0", "10.0"))
    found = performance_findings(obs)
    assert _codes(found) == [(F.KERNELS_MISSING, F.ERROR, "torch/lib/libtorch_cuda.so"),
                             (F.KERNELS_MISSING, F.ERROR, "sgl_kernel/flash_ops.abi3.so")]
    assert found[0].message == (
        "torch/lib/libtorch_cuda.so (torch 2.9.1) has no kernel for compute capability 7.0: it carries SASS for sm_75, "
        "sm_80, sm_86, sm_90, sm_100, sm_103, sm_120, sm_121, no PTX. Its CUDA code fails on that GPU (no kernel image "
        "is available for execution on the device).")
    assert found[1].details["compute_capabilities"] == ["7.0", "10.0"]
    assert found[1].details["distribution"] == "no distribution"
    assert diagnose(obs)[0].code == F.KERNELS_MISSING  # errors lead
    assert F.is_healthy(diagnose(obs)) is False


def test_ptx_only_is_a_warning_and_nvml_devices_are_the_targets():
    gpu = O.gpu("13.0", devices=[O.device("NVIDIA H200", "9.0", memory_total_mib=143771)])
    obs = _with(_reading([Extension(O.sp("cupy/_core/core.so"), PTX_ONLY), Extension(FLASH_OPS, FLASH)]), gpu=gpu)
    found = performance_findings(obs)
    assert _codes(found) == [(F.KERNELS_PTX_ONLY, F.WARNING, "cupy/_core/core.so")]
    assert "the driver compiles its kernels at first load" in found[0].message
    facts = performance_facts(obs)
    assert facts["kernels"]["targets"] == [{"compute_capability": "9.0", "source": "nvml", "gpu": "NVIDIA H200", "index": 0}]
    assert [(e["path"], e["verdicts"]) for e in facts["kernels"]["extensions"]] == [
        ("cupy/_core/core.so", {"9.0": PTX}), ("sgl_kernel/flash_ops.abi3.so", {"9.0": SASS})]


def test_ptx_only_in_a_library_of_nvidias_own_wheels_is_info():
    """cuFile 1.15 (nvidia-cufile) ships SASS up to sm_86 and PTX compute_86 by design (measured on the H200 image)."""
    cufile = O.dist("nvidia-cufile", "1.15.1.6", ["nvidia/cu13/lib/libcufile.so.0"])
    obs = _with(_reading([Extension(O.sp("nvidia/cu13/lib/libcufile.so.0"), PTX_ONLY)]), gpu_archs=("9.0",),
                obs=O.healthy(add=[cufile]))
    assert _codes(performance_findings(obs)) == [(F.KERNELS_PTX_ONLY, F.INFO, "nvidia/cu13/lib/libcufile.so.0")]


def test_gpu_archs_win_over_nvml_and_nothing_is_judged_without_either():
    gpu = O.gpu("13.0", devices=[O.device("NVIDIA H200", "9.0", memory_total_mib=143771)])
    reading = _reading([Extension(FLASH_OPS, FLASH)])
    assert _codes(performance_findings(_with(reading, gpu_archs=("12.0",), gpu=gpu))) == [
        (F.KERNELS_MISSING, F.ERROR, "sgl_kernel/flash_ops.abi3.so")]
    assert performance_findings(_with(reading)) == []


STATE = {
    "clocks_mhz": {"sm": 1200, "sm_max": 1980, "memory": 3201, "memory_max": 3201},
    "clock_event_reasons": ["sw_power_cap", "hw_thermal_slowdown"], "performance_state": 0, "temperature_c": 91,
    "power_w": {"limit": 500.0, "default_limit": 700.0, "usage": 499.0},
    "pcie": {"generation": 5, "generation_max": 5, "width": 8, "width_max": 16},
    "ecc": {"enabled": True, "uncorrected_volatile": 3, "uncorrected_aggregate": 3, "retired_pages_pending": False,
            "remapped_rows_pending": True, "remapping_failed": False},
    "persistence_mode": False, "mig_mode": {"current": True, "pending": True},
    "processes": [{"pid": 4242, "used_memory_mib": 81920, "visible": True}, {"pid": 5000, "used_memory_mib": 1024, "visible": True},
                  {"pid": 7, "used_memory_mib": 2048, "visible": False}],
    "unsupported": [],
}
HEALTHY_STATE = dict(STATE, clock_event_reasons=["gpu_idle"], power_w={"limit": 700.0, "default_limit": 700.0, "usage": 80.0},
                     pcie={"generation": 1, "generation_max": 5, "width": 16, "width_max": 16},
                     ecc={"enabled": True, "uncorrected_volatile": 0}, persistence_mode=True,
                     mig_mode={"current": False, "pending": False}, processes=[])


def _gpu_obs(state, processes=()):
    gpu = O.gpu("13.0", devices=[O.device("NVIDIA H200", "9.0", memory_total_mib=143771)])
    return _with(_reading(states=[state], processes=processes), gpu=gpu)


def test_every_slow_gpu_state_is_a_finding():
    ours = VenvProcess(4242, "python train.py", 12, (), ())
    found = performance_findings(_gpu_obs(STATE, [ours]))
    subject = "GPU 0 (NVIDIA H200)"
    assert _codes(found) == [(F.GPU_CLOCKS_THROTTLED, F.WARNING, subject), (F.GPU_POWER_LIMITED, F.WARNING, subject),
                             (F.GPU_PCIE_DEGRADED, F.WARNING, subject), (F.GPU_MEMORY_ERRORS, F.WARNING, subject),
                             (F.GPU_PERSISTENCE_OFF, F.INFO, subject), (F.GPU_MIG_ENABLED, F.INFO, subject),
                             (F.GPU_SHARED, F.WARNING, subject)]
    assert found[0].message == "GPU 0 (NVIDIA H200): its clocks are held down (hw_thermal_slowdown), SM clock 1200 of 1980 MHz."
    assert found[1].message.startswith("GPU 0 (NVIDIA H200): its power limit is 500.0 W, below the default 700.0 W")
    assert found[3].message == ("GPU 0 (NVIDIA H200): 3 uncorrected ECC error(s) since the driver loaded; row remapping "
                                "pending (until a GPU reset).")
    assert found[6].details == {"processes": [{"pid": 5000, "used_memory_mib": 1024, "visible": True}]}  # 4242: the venv's


def test_a_process_of_another_pid_namespace_is_only_info():
    state = dict(HEALTHY_STATE, pcie=dict(HEALTHY_STATE["pcie"], generation=5),
                 processes=[{"pid": 812345, "used_memory_mib": 70000, "visible": False}])
    found = performance_findings(_gpu_obs(state))
    assert _codes(found) == [(F.GPU_SHARED, F.INFO, "GPU 0 (NVIDIA H200)")]
    assert found[0].message == ("GPU 0 (NVIDIA H200): 1 compute process(es) of another PID namespace (another container, "
                                "or the host) run on it: pid 812345 (70000 MiB).")


def test_an_idle_healthy_gpu_gives_only_the_idle_link_note():
    assert _codes(performance_findings(_gpu_obs(HEALTHY_STATE))) == [(F.GPU_PCIE_DEGRADED, F.INFO, "GPU 0 (NVIDIA H200)")]
    power_cap = dict(HEALTHY_STATE, clock_event_reasons=["sw_power_cap"], pcie=STATE["pcie"] | {"width": 16})
    assert _codes(performance_findings(_gpu_obs(power_cap))) == [(F.GPU_CLOCKS_THROTTLED, F.INFO, "GPU 0 (NVIDIA H200)")]


def test_slow_environment_from_activate_and_from_a_running_job():
    reading = _reading(activate=[EnvSetting("bin/activate", 70, "CUDA_LAUNCH_BLOCKING", "1"),
                                 EnvSetting("bin/activate", 71, "CUDA_LAUNCH_BLOCKING", "0")],
                       processes=[VenvProcess(31, "python train.py", 3, (), (("NCCL_P2P_DISABLE", "1"), ("NVIDIA_TF32_OVERRIDE", "1")))])
    found = performance_findings(_with(reading))
    assert _codes(found) == [(F.ENV_SLOWS_CUDA, F.WARNING, "CUDA_LAUNCH_BLOCKING=1"),
                             (F.ENV_SLOWS_CUDA, F.WARNING, "NCCL_P2P_DISABLE=1")]
    assert found[0].message.startswith("bin/activate line 70 sets CUDA_LAUNCH_BLOCKING=1: every kernel launch waits")
    assert found[1].details == {"name": "NCCL_P2P_DISABLE", "value": "1", "pid": 31}
    env = performance_facts(_with(reading))["environment"]
    assert [r["slow"] for r in env["activate"]] == [True, False]
    assert env["processes"] == [{"pid": 31, "name": "NCCL_P2P_DISABLE", "value": "1", "slow": True},
                                {"pid": 31, "name": "NVIDIA_TF32_OVERRIDE", "value": "1", "slow": False}]


def test_restart_needed_names_pids_and_command_lines():
    stale = ((O.SITE + "/nvidia/cudnn/lib/libcudnn.so.9 (deleted)", DELETED),
             ("/venvs/.train.cuda_venv/previous/r1/lib/x.so", PREVIOUS))
    reading = _reading(processes=[VenvProcess(31, "python serve.py --port 8000", 40, stale, ()),
                                  VenvProcess(32, "python idle.py", 2, (), ())])
    obs = _with(reading)
    found = performance_findings(obs)
    assert _codes(found) == [(F.RESTART_NEEDED, F.WARNING, "pid 31")]
    assert found[0].details == {"pid": 31, "cmdline": "python serve.py --port 8000", "stale": [p for p, _w in stale]}
    facts = performance_facts(obs)
    assert facts["restart_needed"] == [{"pid": 31, "cmdline": "python serve.py --port 8000", "stale": [p for p, _w in stale],
                                        "reasons": [DELETED, PREVIOUS]}]
    assert facts["processes"] == [
        {"pid": 31, "cmdline": "python serve.py --port 8000", "mapped": 40, "stale": 2, "environment_error": None},
        {"pid": 32, "cmdline": "python idle.py", "mapped": 2, "stale": 0, "environment_error": None}]


def test_not_gathered():
    obs = O.healthy()
    assert performance_facts(obs) == {"gathered": False}
    assert performance_findings(obs) == []
