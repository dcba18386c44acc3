# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPU architectures a CUDA extension carries kernels for: the entries of its ``.nv_fatbin`` section.

Private to the gpuops.cuda_venv collection: not a public API.

The section holds fatbin containers one after another (docs/CUDA_NOTES.md, Fatbin format): a 16-byte header (u32 magic
0xBA55ED50, u16 version, u16 header size, u64 size of what follows), then entries, each a header (u16 kind: 1 PTX,
2 machine code (SASS); u16 version; u32 header size; u64 payload size; u32 architecture at byte 28, 90 for sm_90;
u32 flags at byte 40) and its payload. Only the headers are read, from header to header: torch's section is
915 MB and its payloads are never touched. The flags are kept as found: which bit marks an arch-specific build
(sm_90a) is not established, so nothing here claims it.

Some libraries keep their kernels elsewhere and load them themselves: cuFFT 12.0 (CUDA 13) has a 672-byte
``.nv_fatbin`` with SASS for sm_75 alone, and 23,984 containers (SASS sm_75 to sm_120, PTX) in its 278 MB ``.ldata``
(measured on the real wheel). When a library's other data sections are far larger than its ``.nv_fatbin``
(ELSEWHERE_RATIO, at least ELSEWHERE_MIN bytes), they are searched for containers too, chunk by chunk, and what they
hold counts (``elsewhere``: the containers found there). torch's 915 MB ``.nv_fatbin`` is never the case.

A small machine-code entry that is a plain cubin (an ELF file) with no ``.text.<kernel>`` section holds no kernel:
libcufftw's only entry is such a 1,904-byte sm_75 cubin (it calls cuFFT's kernels). Such entries (``empty``) give no
architecture: a library with nothing else has no kernels to judge. Only payloads up to EMPTY_PROBE bytes are read.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import ElfError, find_sections

SECTION = ".nv_fatbin"
ELSEWHERE = (".ldata", ".lrodata", ".rodata", ".data.rel.ro", ".data")  # where libraries keep fatbins they load
ELSEWHERE_MIN = 1 << 20
ELSEWHERE_RATIO = 16
_CHUNK = 8 << 20
EMPTY_PROBE = 16 << 10
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
    elsewhere: int = 0  # containers found in other data sections (ELSEWHERE)
    empty: int = 0  # machine-code entries without a kernel (cubins with no .text.<kernel> section)

    def as_dict(self) -> dict:
        return {"sass": [arch_name(a) for a in self.sass], "ptx": [arch_name(a, ptx=True) for a in self.ptx],
                "section_size": self.section_size, "containers": self.containers, "entries": self.entries,
                "elsewhere": self.elsewhere, "empty": self.empty,
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
    spans = find_sections(read_at, (SECTION,) + ELSEWHERE)
    if SECTION not in spans:
        return None
    start, size = spans[SECTION]
    found = _Found()
    _walk(read_at, start, size, found)
    others = [spans[name] for name in ELSEWHERE if name in spans]
    if sum(s for _o, s in others) >= max(ELSEWHERE_MIN, ELSEWHERE_RATIO * size):
        containers = found.containers
        for offset, length in others:
            _search(read_at, offset, length, found)
        found.elsewhere = found.containers - containers
    return Kernels(tuple(sorted(found.sass)), tuple(sorted(found.ptx)), size, found.containers, found.entries,
                   {k: tuple(sorted(v)) for k, v in found.flags.items()}, found.problem, found.elsewhere, found.empty)


class _Found:
    """What the containers read so far hold."""

    def __init__(self):
        self.sass, self.ptx, self.flags = set(), set(), {}
        self.containers = self.entries = self.elsewhere = self.empty = 0
        self.problem: Optional[str] = None


def _walk(read_at, start: int, size: int, found: _Found) -> None:
    """The ``.nv_fatbin`` section: containers one after another (zero padding between them)."""
    end = start + size
    pos = start
    while pos + _CONTAINER.size <= end and found.problem is None:
        magic, _version, header_size, body = _CONTAINER.unpack(_exact(read_at, pos, _CONTAINER.size))
        if magic != MAGIC:
            if pos > start and not any(_exact(read_at, pos, _CONTAINER.size)):
                pos += _ALIGN  # padding between containers
                continue
            found.problem = "no fatbin container at byte %d of the section (magic 0x%08x)" % (pos - start, magic)
            break
        if header_size < _CONTAINER.size:
            found.problem = "fatbin container at byte %d of the section has a %d-byte header" % (pos - start, header_size)
            break
        found.containers += 1
        found.problem = _entries(read_at, pos + header_size, min(pos + header_size + body, end), start, found)
        pos = pos + header_size + body


def _entries(read_at, entry: int, stop: int, start: int, found: _Found) -> Optional[str]:
    """Read one container's entries into ``found``; the problem that stopped it, if any."""
    while entry + _ENTRY_READ <= stop:
        head = _exact(read_at, entry, _ENTRY_READ)
        kind, _ver, entry_header, payload = _ENTRY.unpack_from(head)
        if entry_header < _FLAGS_AT + 4 or kind not in (KIND_PTX, KIND_SASS):
            return "unreadable entry at byte %d of the section (kind %d, header %d)" % (entry - start, kind, entry_header)
        arch, = struct.unpack_from("<I", head, _ARCH_AT)
        flag, = struct.unpack_from("<I", head, _FLAGS_AT)
        if kind == KIND_SASS and payload <= EMPTY_PROBE and _kernelless(read_at(entry + entry_header, payload)):
            found.empty += 1
            entry += entry_header + payload
            continue
        (found.ptx if kind == KIND_PTX else found.sass).add(arch)
        found.flags.setdefault(arch_name(arch, kind == KIND_PTX), set()).add(flag)
        found.entries += 1
        if found.entries > _MAX_ENTRIES:
            return "more than %d entries" % _MAX_ENTRIES
        entry += entry_header + payload
    return None


def _kernelless(payload: bytes) -> bool:
    """A plain cubin (not compressed) whose section names hold no ``.text.`` (kernels live in ``.text.<name>``)."""
    return payload.startswith(b"\x7fELF") and b".text." not in payload


def _search(read_at, start: int, size: int, found: _Found) -> None:
    """Containers anywhere in a data section: each magic with a plausible header whose entries all read is one;
    anything else is data that happens to hold those bytes. The section is read a chunk at a time."""
    magic = struct.pack("<I", MAGIC)
    end = start + size
    base, chunk, pos = start, read_at(start, min(_CHUNK, size)), start
    while chunk and pos < end:
        if pos - base + _CONTAINER.size > len(chunk):  # the next header does not fit: move the window to it
            base, chunk = pos, read_at(pos, min(_CHUNK, end - pos))
            if len(chunk) < _CONTAINER.size:
                return
        hit = chunk.find(magic, pos - base)
        if hit < 0 or hit + _CONTAINER.size > len(chunk):
            pos = base + (len(chunk) - _CONTAINER.size + 1 if hit < 0 else hit)
            if hit < 0 and base + len(chunk) >= end:
                return
            continue
        at = base + hit
        _magic, version, header_size, body = _CONTAINER.unpack_from(chunk, hit)
        pos = at + 1
        if version != 1 or header_size != _CONTAINER.size or not 0 < body <= end - at - header_size:
            continue
        trial = _Found()
        if _entries(_served(chunk, base, read_at), at + header_size, at + header_size + body, start, trial) is None \
                and (trial.entries or trial.empty):
            found.sass |= trial.sass
            found.ptx |= trial.ptx
            for name, values in trial.flags.items():
                found.flags.setdefault(name, set()).update(values)
            found.containers += 1
            found.entries += trial.entries
            found.empty += trial.empty
            pos = at + header_size + body


def _served(chunk: bytes, base: int, read_at):
    """``read_at`` answered from ``chunk`` (the bytes at ``base``) where it holds the range: a library keeps thousands
    of containers in its data, and a read per entry header would be a system call each."""
    def read(offset: int, size: int) -> bytes:
        if base <= offset and offset + size <= base + len(chunk):
            return chunk[offset - base:offset - base + size]
        return read_at(offset, size)
    return read


def _exact(read_at, offset: int, size: int) -> bytes:
    data = read_at(offset, size)
    if len(data) != size:
        raise ElfError("the .nv_fatbin section runs past the end of the file")
    return data
