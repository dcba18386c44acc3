# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one reading of what can make a healthy venv slow: its kernels, its jobs' environment, its processes.

Private to the gpuops.cuda_venv collection: not a public API.

Gathered by ``observe`` (with the GPU's state, which ``gpu.gpu_facts`` reads in its NVML session) and judged by
``_decide/performance.py``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import ElfError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import Kernels, read_kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.job_env import EnvSetting, activate_settings
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.venv_processes import VenvProcess, venv_processes


@dataclass(frozen=True)
class Extension:
    """A shared object of the venv with a ``.nv_fatbin`` section (or one whose section could not be read)."""

    path: str
    kernels: Optional[Kernels]
    error: Optional[str] = None


@dataclass(frozen=True)
class PerformanceReading:
    extensions: Tuple[Extension, ...]
    gpu_states: Tuple[dict, ...]  # gpu_state.device_state of each NVML device, by index
    activate: Tuple[EnvSetting, ...]
    processes: Tuple[VenvProcess, ...]
    seconds: Dict[str, float] = field(default_factory=dict)


def read_performance(root: str, shared_objects: Iterable[str], gpu_states: Tuple[dict, ...] = (),
                     reader: Callable[[str], Optional[Kernels]] = read_kernels) -> PerformanceReading:
    """Read the kernels of ``shared_objects`` (the venv's ELF files; with ``reader``: read_kernels, or a read index's),
    the activate scripts and the processes."""
    seconds = {}
    started = time.monotonic()
    extensions = []
    for path in sorted(shared_objects):
        try:
            kernels = reader(path)
        except ElfError as exc:
            extensions.append(Extension(path, None, exc.reason))
            continue
        except OSError as exc:
            extensions.append(Extension(path, None, exc.strerror or str(exc)))
            continue
        if kernels is not None:
            extensions.append(Extension(path, kernels))
    seconds["kernels"] = time.monotonic() - started
    started = time.monotonic()
    activate = tuple(activate_settings(root))
    swap_dir = swap_dir_of(root)
    processes = tuple(venv_processes(root, (swap_dir,) if os.path.isdir(swap_dir) else ()))
    seconds["processes"] = time.monotonic() - started
    return PerformanceReading(tuple(extensions), tuple(_with_visibility(gpu_states)), activate, processes,
                              {k: round(v, 3) for k, v in seconds.items()})


def _with_visibility(gpu_states: Tuple[dict, ...], proc: str = "/proc") -> list:
    """Each state's compute processes with ``visible``: NVML gives host PIDs, which a container does not see (or sees
    as other processes); a PID absent from this /proc belongs to another PID namespace."""
    states = []
    for state in gpu_states:
        if state.get("processes") is not None:
            state = dict(state, processes=[dict(p, visible=os.path.isdir(os.path.join(proc, str(p["pid"]))))
                                           for p in state["processes"]])
        states.append(state)
    return states
