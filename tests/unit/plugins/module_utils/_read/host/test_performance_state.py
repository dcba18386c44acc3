# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for performance_state: the one reading, on real files (gcc-built objects, a real venv's activate script)."""

from __future__ import annotations

import os
import subprocess
import sys

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import read_kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.job_env import EnvSetting
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.performance_state import Extension, read_performance
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import build_so, requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.support.fatbin_helpers import SASS, build_fatbin_so, fatbin_bytes


@requires_gcc
def test_kernels_of_the_objects_with_a_section_and_the_errors_of_unreadable_ones(tmp_path):
    root = tmp_path / "train"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    with open(root / "bin" / "activate", "a") as handle:
        handle.write("export NCCL_IB_DISABLE=1\n")
    kernels = build_fatbin_so(tmp_path / "libk.so", fatbin_bytes([(SASS, 90)]))
    plain = build_so(tmp_path / "libplain.so", soname="libplain.so")
    bad = tmp_path / "libbad.so"
    bad.write_bytes(b"\x7fELF")
    reading = read_performance(str(root), [str(bad), plain, kernels, str(tmp_path / "gone.so")])
    lines = len((root / "bin" / "activate").read_text().splitlines())
    assert reading.extensions == (Extension(str(tmp_path / "gone.so"), None, "No such file or directory"),
                                  Extension(str(bad), None, "file too short"), Extension(kernels, read_kernels(kernels)))
    assert reading.activate == (EnvSetting("bin/activate", lines, "NCCL_IB_DISABLE", "1"),)
    assert reading.processes == () and reading.gpu_states == ()
    assert set(reading.seconds) == {"kernels", "processes"}


def test_gpu_processes_are_marked_visible_or_not_in_this_pid_namespace():
    """NVML's PIDs are the host's: one this /proc lacks is another namespace's."""
    absent = 4194304 + 1  # above the kernel's largest pid_max: never a process here
    states = ({"processes": [{"pid": os.getpid(), "used_memory_mib": 10}, {"pid": absent, "used_memory_mib": None}]},
              {"processes": None})
    reading = read_performance("/nonexistent-venv", (), states)
    assert reading.gpu_states == ({"processes": [{"pid": os.getpid(), "used_memory_mib": 10, "visible": True},
                                                 {"pid": absent, "used_memory_mib": None, "visible": False}]},
                                  {"processes": None})
