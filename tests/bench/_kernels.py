# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernels reader (``_read/binaries/fatbin.py``) on a sparse ELF file whose ``.nv_fatbin`` is as large as torch's.

torch 2.9.1's libtorch_cuda.so carries a 915 MB section. The file here has a section of that
size, written sparse: only the container and entry headers hold bytes, so it costs a few MB of disk. The figure is
the reader's own time in this process (warm page cache), the part the facts pay per such library.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import struct
import time
import zipfile
from pathlib import Path
from typing import Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import is_shared_object
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import ElfError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_kernels import wheel_kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import read_kernels

from ._measure import fixed
from ._table import Goal, Table

SECTION_MB = 915
CONTAINERS = 4000  # one per compiled .cu file: more than torch's libraries have
ARCHS = (70, 75, 80, 86, 89, 90, 100, 120)  # torch 2.9.1+cu128's SASS, one entry each per container
GOAL = Goal(max_seconds=0.3)
_ALIGN = 4096


def write_sparse_elf(path: Path, section_mb: int = SECTION_MB, containers: int = CONTAINERS) -> int:
    """A 64-bit ELF file (header, ``.nv_fatbin``, ``.shstrtab``, section headers) with a sparse section of
    ``section_mb`` MB in the real container format; returns the number of entries."""
    entry_payload = (section_mb * 1000 * 1000 // containers - 16) // len(ARCHS) - 64
    container_size = 16 + len(ARCHS) * (64 + entry_payload)
    section_size = container_size * containers
    names = b"\0.nv_fatbin\0.shstrtab\0"
    names_at = _ALIGN + section_size
    headers_at = (names_at + len(names) + 7) // 8 * 8
    with open(path, "wb") as out:
        out.write(b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8))
        out.write(struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, headers_at, 0, 64, 56, 0, 64, 3, 2))
        for number in range(containers):
            at = _ALIGN + number * container_size
            out.seek(at)
            out.write(struct.pack("<IHHQ", 0xBA55ED50, 1, 16, container_size - 16))
            for index, arch in enumerate(ARCHS):
                head = bytearray(64)
                struct.pack_into("<HHIQ", head, 0, 2, 0x0101, 64, entry_payload)
                struct.pack_into("<I", head, 28, arch)
                struct.pack_into("<I", head, 40, 0x11)
                out.seek(at + 16 + index * (64 + entry_payload))
                out.write(bytes(head))
        out.seek(names_at)
        out.write(names)
        out.seek(headers_at)
        out.write(bytes(64))
        out.write(struct.pack("<IIQQQQIIQQ", 1, 1, 2, 0, _ALIGN, section_size, 0, 0, 8, 0))
        out.write(struct.pack("<IIQQQQIIQQ", 11, 3, 0, 0, names_at, len(names), 0, 0, 1, 0))
    return containers * len(ARCHS)


def _venv_objects(venv: Path):
    return sorted(str(p) for p in venv.rglob("*") if is_shared_object(p.name) and p.is_file() and not p.is_symlink())


def _read_all(paths) -> int:
    found = 0
    for path in paths:
        try:
            found += read_kernels(path) is not None
        except (ElfError, OSError):
            continue
    return found


def run(work: Path, runs: int, log, real_venv: Optional[Path] = None) -> Table:
    path = work / "libtorch_cuda_sparse.so"
    entries = write_sparse_elf(path)
    log("bench: kernels reader on %s (%d MB sparse section, %d entries)" % (path.name, SECTION_MB, entries))
    found = read_kernels(path)  # warms the page cache for the headers
    if found is None or found.entries != entries or found.problem:
        raise RuntimeError("the kernels reader misread the synthetic file: %r" % (found,))
    seconds = []
    for _run in range(runs):
        started = time.perf_counter()
        read_kernels(path)
        seconds.append(time.perf_counter() - started)
    table = Table("Kernels reader (`_read/binaries/fatbin.py`): a %d MB `.nv_fatbin`, %d containers, %d entries" % (
        SECTION_MB, CONTAINERS, entries), notes=[
        "In-process time of `read_kernels` on a sparse file, warm page cache: what the facts add per library of "
        "torch's size. Goal from issue 30: at most 0.3 s added on the real torch venv."])
    table.add("kernels", "read the SASS and PTX architectures of a %d MB section" % SECTION_MB,
              fixed(sorted(seconds)[len(seconds) // 2], runs), goal=GOAL)
    wheel = work / "torch-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.write(path, "torch/lib/libtorch_cuda.so")
    path.unlink()
    seconds = []
    for _run in range(runs):
        started = time.perf_counter()
        wheel_kernels(str(wheel))
        seconds.append(time.perf_counter() - started)
    wheel.unlink()
    table.add("kernels-wheel", "the same file as a deflated wheel member (the repair's check of a declared wheel; the "
              "sparse file's zeros inflate faster than real code)", fixed(sorted(seconds)[len(seconds) // 2], runs))
    if real_venv is not None:
        objects = _venv_objects(real_venv)
        carriers = _read_all(objects)
        seconds = []
        for _run in range(runs):
            started = time.perf_counter()
            _read_all(objects)
            seconds.append(time.perf_counter() - started)
        table.add("kernels-real", "every shared object of the real torch venv (%d, %d with kernels), warm" % (
            len(objects), carriers), fixed(sorted(seconds)[len(seconds) // 2], runs), goal=GOAL)
    return table
