# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Environment variables known to slow CUDA work or switch off its fast paths: which values, and what they cost.

Private to the gpuops.cuda_venv collection: not a public API.

Read by ``_read/host/job_env.py`` (where a venv's jobs get them) and judged by ``_decide/performance.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Tuple


def _nonzero(value: str) -> bool:
    """NCCL and the CUDA driver read these as integers: any other than 0 switches the feature."""
    try:
        return int(value.strip()) != 0
    except ValueError:
        return False


def _one_of(*values: str) -> Callable[[str], bool]:
    return lambda value: value.strip().lower() in values


def _empty_or_none(value: str) -> bool:
    return value.strip() in ("", "-1", "none", "NoDevFiles")


@dataclass(frozen=True)
class SlowVariable:
    name: str
    slow_values: str  # how the slow values read to a person
    is_slow: Callable[[str], bool]
    cost: str


SLOW_VARIABLES: Tuple[SlowVariable, ...] = (
    SlowVariable("CUDA_LAUNCH_BLOCKING", "a number other than 0", _nonzero,
                 "every kernel launch waits for the kernel to finish, so host and GPU work never overlap (a training "
                 "step ran at 0.484 of its speed on an H200)"),
    SlowVariable("NCCL_P2P_DISABLE", "a number other than 0", _nonzero,
                 "NCCL sends GPU-to-GPU traffic through host memory instead of NVLink or PCIe peer-to-peer"),
    SlowVariable("NCCL_IB_DISABLE", "a number other than 0", _nonzero,
                 "NCCL uses TCP sockets between nodes instead of InfiniBand or RoCE"),
    SlowVariable("NCCL_SHM_DISABLE", "a number other than 0", _nonzero,
                 "NCCL stops using shared memory between the processes of one node"),
    SlowVariable("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", _one_of("1"),
                 "torch calls cudaMalloc and cudaFree (which synchronise the device) for every tensor instead of "
                 "using its caching allocator"),
    SlowVariable("TORCH_USE_CUDA_DSA", "1", _one_of("1"),
                 "device-side assertions: extra checks in every kernel of a torch built with them"),
    SlowVariable("NVIDIA_TF32_OVERRIDE", "0", _one_of("0"),
                 "TF32 is off in cuBLAS and cuDNN: float32 matmuls and convolutions run at full FP32 rate, several "
                 "times slower on Ampere and newer GPUs"),
    SlowVariable("CUDA_CACHE_DISABLE", "a number other than 0", _nonzero,
                 "the driver's JIT cache is off: PTX is compiled again at every start"),
    SlowVariable("CUDA_MODULE_LOADING", "EAGER", _one_of("eager"),
                 "every kernel of every CUDA library is loaded at start instead of on first use: a slower start and "
                 "more GPU memory"),
    SlowVariable("TORCH_NCCL_BLOCKING_WAIT", "1", _one_of("1", "true"),
                 "the host thread blocks on every collective until it completes"),
    SlowVariable("NCCL_BLOCKING_WAIT", "1", _one_of("1", "true"),
                 "the host thread blocks on every collective until it completes (older name of TORCH_NCCL_BLOCKING_WAIT)"),
    SlowVariable("CUBLAS_WORKSPACE_CONFIG", ":16:8", _one_of(":16:8"),
                 "deterministic cuBLAS with a small workspace: slower matmuls"),
    SlowVariable("CUDA_VISIBLE_DEVICES", "empty, -1 or NoDevFiles", _empty_or_none,
                 "no GPU is visible: CUDA work fails or runs on the CPU"),
)
NAMES = tuple(v.name for v in SLOW_VARIABLES)
_BY_NAME = {v.name: v for v in SLOW_VARIABLES}


def slow_variable(name: str, value: str) -> Optional[SlowVariable]:
    """The table's entry when ``name=value`` slows CUDA work, else None."""
    known = _BY_NAME.get(name)
    return known if known is not None and known.is_slow(value) else None
