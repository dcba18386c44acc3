# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Refuse, before anything is installed, a declared wheel whose CUDA extensions have no kernel for the node's GPU.

Private to the gpuops.cuda_venv collection: not a public API.

The install guard (install_guard.py) has each wheel of the plan as a file; here every shared object inside a wheel
of ``packages`` is read as the facts read an installed one (``_read/binaries/fatbin.py``: the ``.nv_fatbin`` headers only),
straight from the zip member, and judged (``_decide/install_refusals.py``, by the facts' own rule
``_decide/performance.kernel_verdict``) for each of ``gpu_archs``, or else each GPU NVML reports. torch 2.14.1+cu130
declared on a V100 (compute capability 7.0) is refused: its libraries carry no sm_70 and no PTX (docs/FINDINGS.md,
KERNELS_MISSING).

A wheel member is compressed: a forward read decompresses up to the offset (never keeping it), a read behind the
stream restarts it; the two chunks streamed last before a read are kept with it, so that the section names just before
the section headers cost no second pass. A large library costs about two decompressions of itself.
"""

from __future__ import annotations

import zipfile
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import is_shared_object
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.install_refusals import declared_wheels, no_kernel_findings
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import ElfError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import Kernels, kernels_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.gpu import gpu_facts

_CHUNK = 1 << 20


class _MemberReader:
    """``read_at(offset, size)`` over one zip member, streaming forward."""

    def __init__(self, archive: zipfile.ZipFile, name: str):
        self.archive, self.name = archive, name
        self.stream = None
        self.pos = 0
        # What the last read returned, with up to two chunks streamed past just before it.
        self.window, self.window_start = b"", 0

    def __call__(self, offset: int, size: int) -> bytes:
        if self.window_start <= offset and offset + size <= self.window_start + len(self.window):
            return self.window[offset - self.window_start:offset - self.window_start + size]
        if self.stream is None or offset < self.pos:
            if self.stream is not None:
                self.stream.close()
            self.stream, self.pos = self.archive.open(self.name), 0
        before, last = b"", b""  # references while skipping; joined once below
        while self.pos < offset:
            chunk = self.stream.read(min(_CHUNK, offset - self.pos))
            if not chunk:
                return b""
            before, last = last, chunk
            self.pos += len(chunk)
        data = self.stream.read(size)
        self.window, self.window_start = before + last + data, self.pos - len(before) - len(last)
        self.pos += len(data)
        return data

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


def wheel_kernels(wheel_file: str) -> List[Tuple[str, Kernels]]:
    """(member, Kernels) of each shared object of the wheel that has a ``.nv_fatbin``; one that is no readable ELF
    file is skipped (the install guard refuses no wheel for that)."""
    found = []
    with zipfile.ZipFile(wheel_file) as archive:
        for name in archive.namelist():
            if not is_shared_object(name):
                continue
            reader = _MemberReader(archive, name)
            try:
                kernels = kernels_of(reader)
            except ElfError:
                continue
            finally:
                reader.close()
            if kernels is not None and kernels.entries:
                found.append((name, kernels))
    return found


def kernel_refusals(wheels: Dict[str, object], declared: Sequence[str], gpu_archs: Sequence[str],
                    nvml: Callable[[], object] = gpu_facts) -> Tuple[List[F.Finding], Optional[List[str]]]:
    """(INSTALL_NO_KERNEL findings, the compute capabilities judged) for the wheels (name -> WheelContents) of the
    ``declared`` requirements' names. The GPUs are ``gpu_archs`` or, when that is empty, NVML's; None judged: no GPU
    known, no wheel read, nothing refused."""
    chosen = declared_wheels(wheels, declared)
    if not chosen:
        return [], None
    targets = list(gpu_archs) or [d.compute_capability for d in nvml().devices if d.compute_capability]
    if not targets:
        return [], None
    carried = [(wheel, wheel_kernels(wheel.file)) for wheel in chosen]
    return no_kernel_findings(carried, targets), sorted(set(targets))
