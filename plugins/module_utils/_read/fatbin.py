# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPU architectures a CUDA extension carries kernels for: the entries of its ``.nv_fatbin`` section.

Private to the gpuops.cuda_venv collection: not a public API.

The section holds fatbin containers one after another (FACTS.md section 11): a 16-byte header (u32 magic
0xBA55ED50, u16 version, u16 header size, u64 size of what follows), then entries, each a header (u16 kind: 1 PTX,
2 machine code (SASS); u16 version; u32 header size; u64 payload size; u32 architecture at byte 28, 90 for sm_90;
u32 flags at byte 40) and its payload. Only the headers are read, from header to header: torch's section is
915 MB and its payloads are never touched. The flags are kept as found: which bit marks an arch-specific build
(sm_90a) is not established, so nothing here claims it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.elf import ElfError, find_section

SECTION = ".nv_fatbin"
MAGIC = 0xBA55ED50
KIND_PTX = 1
KIND_SASS = 2
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQ")
_ARCH_AT = 28
_FLAGS_AT = 40
_ENTRY_READ = 48
_ALIGN = 8
_MAX_OFFSET = 1 << 62  # beyond any file; pread takes a signed 64-bit offset
_MAX_ENTRIES = 1 << 22  # far above any real library (a bound on what one bad file can cost)


@dataclass(frozen=True)
class Kernels:
    """The architectures one ``.nv_fatbin`` section holds code for; ``problem`` says where reading stopped early."""

    sass: Tuple[int, ...]  # 90 for sm_90, sorted
    ptx: Tuple[int, ...]
    section_size: int
    containers: int
    entries: int
    flags: Dict[str, Tuple[int, ...]] = field(default_factory=dict)  # "sm_90" / "compute_90" -> flag values seen
    problem: Optional[str] = None

    def as_dict(self) -> dict:
        return {"sass": [arch_name(a) for a in self.sass], "ptx": [arch_name(a, ptx=True) for a in self.ptx],
                "section_size": self.section_size, "containers": self.containers, "entries": self.entries,
                "flags": {k: ["0x%x" % v for v in vals] for k, vals in sorted(self.flags.items())},
                "problem": self.problem}


def arch_name(arch: int, ptx: bool = False) -> str:
    """90 -> "sm_90" (or "compute_90" for PTX), as nvcc and torch.cuda.get_arch_list() write them."""
    return ("compute_%d" if ptx else "sm_%d") % arch


def read_kernels(path) -> Optional[Kernels]:
    """The kernels of the ELF file ``path``; None when it has no ``.nv_fatbin``. Raises ElfError, OSError."""
    fd = os.open(os.fspath(path), os.O_RDONLY)
    try:
        return kernels_of(lambda offset, size: os.pread(fd, size, offset) if offset < _MAX_OFFSET else b"")
    except ElfError as exc:
        raise ElfError(exc.reason, os.fspath(path), exc.header) from None
    finally:
        os.close(fd)


def kernels_of(read_at: Callable[[int, int], bytes]) -> Optional[Kernels]:
    """The kernels of the ELF file ``read_at(offset, size)`` reads (a file, a wheel's member); None without a
    ``.nv_fatbin`` section."""
    span = find_section(read_at, SECTION)
    return None if span is None else _walk(read_at, span[0], span[1])


def _walk(read_at, start: int, size: int) -> Kernels:
    end = start + size
    sass, ptx, flags = set(), set(), {}
    containers = entries = 0
    problem = None
    pos = start
    while pos + _CONTAINER.size <= end and problem is None:
        magic, _version, header_size, body = _CONTAINER.unpack(_exact(read_at, pos, _CONTAINER.size))
        if magic != MAGIC:
            if pos > start and not any(_exact(read_at, pos, _CONTAINER.size)):
                pos += _ALIGN  # padding between containers
                continue
            problem = "no fatbin container at byte %d of the section (magic 0x%08x)" % (pos - start, magic)
            break
        if header_size < _CONTAINER.size:
            problem = "fatbin container at byte %d of the section has a %d-byte header" % (pos - start, header_size)
            break
        containers += 1
        entry, stop = pos + header_size, min(pos + header_size + body, end)
        while entry + _ENTRY_READ <= stop:
            head = _exact(read_at, entry, _ENTRY_READ)
            kind, _ver, entry_header, payload = _ENTRY.unpack_from(head)
            if entry_header < _FLAGS_AT + 4 or kind not in (KIND_PTX, KIND_SASS):
                problem = "unreadable entry at byte %d of the section (kind %d, header %d)" % (entry - start, kind, entry_header)
                break
            arch, = struct.unpack_from("<I", head, _ARCH_AT)
            flag, = struct.unpack_from("<I", head, _FLAGS_AT)
            (ptx if kind == KIND_PTX else sass).add(arch)
            flags.setdefault(arch_name(arch, kind == KIND_PTX), set()).add(flag)
            entries += 1
            if entries > _MAX_ENTRIES:
                problem = "more than %d entries" % _MAX_ENTRIES
                break
            entry += entry_header + payload
        pos = pos + header_size + body
    return Kernels(tuple(sorted(sass)), tuple(sorted(ptx)), size, containers, entries,
                   {k: tuple(sorted(v)) for k, v in flags.items()}, problem)


def _exact(read_at, offset: int, size: int) -> bytes:
    data = read_at(offset, size)
    if len(data) != size:
        raise ElfError("the .nv_fatbin section runs past the end of the file")
    return data
