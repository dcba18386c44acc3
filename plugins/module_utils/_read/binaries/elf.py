# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read what the dynamic loader reads from an ELF file: identity, SONAME, NEEDED, RPATH, RUNPATH.

Private to the gpuops.cuda_venv collection: not a public API.

Modelled on pypa/packaging's ``_elffile.py``. Only the ELF header, the program
headers, the PT_DYNAMIC segment and the few strings it points at are read, with
small bounded reads (never the whole string table, never the whole file): a
multi-gigabyte CUDA library costs a few kilobytes.
Spec: https://refspecs.linuxfoundation.org/elf/gabi4+/contents.html
Error wording follows glibc's ``open_verify`` (elf/dl-load.c) where it has one.
"""

from __future__ import annotations

import os
import platform
import struct
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError

ELFCLASS32 = 1
ELFCLASS64 = 2
ELFDATA2LSB = 1
ELFDATA2MSB = 2
ET_EXEC = 2
ET_DYN = 3
EM_386 = 3
EM_PPC64 = 21
EM_S390 = 22
EM_X86_64 = 62
EM_AARCH64 = 183
PT_LOAD = 1
PT_DYNAMIC = 2
DT_NULL = 0
DT_NEEDED = 1
DT_STRTAB = 5
DT_STRSZ = 10
DT_SONAME = 14
DT_RPATH = 15
DT_RUNPATH = 29

_MAGIC = b"\x7fELF"
_EI_NIDENT = 16
# Bounds on what one file may cost; real objects are far below them.
_MAX_PHNUM = 4096
_DYN_CHUNK = 4096
_MAX_DYN_ENTRIES = 65536
_STR_CHUNK = 512
_MAX_STRING = 65536

# Per class: (header after e_ident, one program header, one dynamic entry).
# Header fields: e_type e_machine e_version e_entry e_phoff e_shoff e_flags
# e_ehsize e_phentsize e_phnum e_shentsize e_shnum e_shstrndx.
_LAYOUT = {
    32: ("HHIIIIIHHHHHH", "IIIIIIII", "iI"),
    64: ("HHIQQQIHHHHHH", "IIQQQQQQ", "qQ"),
}
# Where p_type, p_offset, p_vaddr and p_filesz sit in a program header.
_PHDR_FIELDS = {32: (0, 1, 2, 4), 64: (0, 2, 3, 5)}


class ElfError(CudaVenvError):
    """A file the loader would refuse; ``str()`` reads like the loader's message.

    ``reason`` is the bare message ("file too short"), ``path`` the file, and
    ``header`` the parsed ``ElfHeader`` when the failure came after the header
    (the loader model uses it to skip wrong-class files as ld.so does).
    """

    def __init__(self, reason: str, path: Optional[str] = None, header: Optional["ElfHeader"] = None) -> None:
        super().__init__("%s: %s" % (path, reason) if path else reason)
        self.reason = reason
        self.path = path
        self.header = header


@dataclass(frozen=True)
class ElfHeader:
    """The identity fields of an ELF header."""

    elf_class: int
    little_endian: bool
    machine: int
    osabi: int
    elf_type: int


@dataclass(frozen=True)
class ElfInfo:
    """What the dynamic loader uses from one object (strings exactly as stored)."""

    elf_class: int
    little_endian: bool
    machine: int
    osabi: int
    elf_type: int
    soname: Optional[str]
    needed: tuple
    rpath: Optional[str]
    runpath: Optional[str]


_MAX_OFFSET = 1 << 62  # beyond any file; lseek takes a signed 64-bit offset


def _read_at(f, offset: int, size: int) -> bytes:
    """Read up to ``size`` bytes at ``offset``; shorter only at end of file (or past it: no file is that large)."""
    if offset >= _MAX_OFFSET:
        return b""
    f.seek(offset)
    parts = []
    while size > 0:
        chunk = f.read(size)
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _parse_ident(data: bytes) -> Tuple[int, str]:
    """Return (elf_class as 32|64, struct byte-order prefix) or raise the loader's message."""
    if len(data) < _EI_NIDENT:
        raise ElfError("file too short")
    if data[:4] != _MAGIC:
        raise ElfError("invalid ELF header")
    if data[4] not in (ELFCLASS32, ELFCLASS64):
        raise ElfError("invalid ELF class: %d" % data[4])
    if data[5] not in (ELFDATA2LSB, ELFDATA2MSB):
        raise ElfError("invalid ELF data encoding: %d" % data[5])
    return (32 if data[4] == ELFCLASS32 else 64), ("<" if data[5] == ELFDATA2LSB else ">")


def _parse_header(data: bytes):
    """Parse the ELF header; return (ElfHeader, e_phoff, e_phentsize, e_phnum, byte order)."""
    # glibc reads sizeof(Elf64_Ehdr) and calls anything shorter "file too short";
    # a complete 52-byte ELF32 header is still accepted.
    if len(data) < 52 or (len(data) < 64 and data[:5] != _MAGIC + bytes([ELFCLASS32])):
        raise ElfError("file too short")
    elf_class, order = _parse_ident(data)
    fields = struct.unpack_from(order + _LAYOUT[elf_class][0], data, _EI_NIDENT)
    e_type, e_machine, e_version, e_phoff = fields[0], fields[1], fields[2], fields[4]
    e_phentsize, e_phnum = fields[8], fields[9]
    header = ElfHeader(elf_class, order == "<", e_machine, data[7], e_type)
    if data[6] != 1:
        raise ElfError("ELF file version ident does not match current one", header=header)
    if e_version != 1:
        raise ElfError("ELF file version does not match current one", header=header)
    if e_phnum and e_phentsize != struct.calcsize(order + _LAYOUT[elf_class][1]):
        raise ElfError("ELF file's phentsize not the expected size", header=header)
    if e_phnum > _MAX_PHNUM:
        raise ElfError("too many program headers: %d" % e_phnum, header=header)
    return header, e_phoff, e_phentsize, e_phnum, order


def _read_segments(f, header: ElfHeader, phoff: int, phentsize: int, phnum: int, order: str):
    """Return (PT_LOAD list of (offset, vaddr, filesz), PT_DYNAMIC (offset, filesz) or None)."""
    data = _read_at(f, phoff, phentsize * phnum)
    if len(data) != phentsize * phnum:
        raise ElfError("cannot read file data", header=header)
    fmt = order + _LAYOUT[header.elf_class][1]
    i_type, i_offset, i_vaddr, i_filesz = _PHDR_FIELDS[header.elf_class]
    loads, dynamic = [], None
    for entry in struct.iter_unpack(fmt, data):
        if entry[i_type] == PT_LOAD:
            loads.append((entry[i_offset], entry[i_vaddr], entry[i_filesz]))
        elif entry[i_type] == PT_DYNAMIC and dynamic is None:
            dynamic = (entry[i_offset], entry[i_filesz])
    return loads, dynamic


def _read_dynamic(f, header: ElfHeader, offset: int, filesz: int, order: str) -> list:
    """Return the (tag, value) entries of PT_DYNAMIC up to DT_NULL, reading in small chunks."""
    entry = struct.Struct(order + _LAYOUT[header.elf_class][2])
    count = min(filesz // entry.size, _MAX_DYN_ENTRIES)
    per_read = _DYN_CHUNK // entry.size
    entries = []
    for first in range(0, count, per_read):
        want = min(per_read, count - first)
        data = _read_at(f, offset + first * entry.size, want * entry.size)
        got = len(data) // entry.size
        for tag, value in entry.iter_unpack(data[:got * entry.size]):
            if tag == DT_NULL:
                return entries
            entries.append((tag, value))
        if got < want:
            raise ElfError("truncated dynamic section", header=header)
    return entries


def _vaddr_to_offset(loads: list, vaddr: int) -> Optional[int]:
    for p_offset, p_vaddr, p_filesz in loads:
        if p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
    return None


def _read_strings(f, header: ElfHeader, base: int, size: Optional[int], offsets: set) -> Dict[int, str]:
    """Read NUL-terminated strings at ``base + offset``; nearby strings share one small read."""
    found = {}
    window_start, window = -1, b""
    for off in sorted(offsets):
        if size is not None and off >= size:
            raise ElfError("string offset %d outside the dynamic string table" % off, header=header)
        parts, pos = [], off
        while True:
            if not window_start <= pos < window_start + len(window):
                if size is not None and pos >= size:
                    raise ElfError("unterminated string in the dynamic string table", header=header)
                limit = _STR_CHUNK if size is None else min(_STR_CHUNK, size - pos)
                window_start, window = pos, _read_at(f, base + pos, limit)
                if not window:
                    raise ElfError("truncated dynamic string table", header=header)
            chunk = window[pos - window_start:]
            end = chunk.find(b"\0")
            if end >= 0:
                parts.append(chunk[:end])
                break
            parts.append(chunk)
            pos += len(chunk)
            if pos - off > _MAX_STRING:
                raise ElfError("unterminated string in the dynamic string table", header=header)
        found[off] = os.fsdecode(b"".join(parts))
    return found


def _read_elf(f) -> ElfInfo:
    header, phoff, phentsize, phnum, order = _parse_header(_read_at(f, 0, 64))
    loads, dynamic = _read_segments(f, header, phoff, phentsize, phnum, order)
    if dynamic is None or dynamic[1] == 0:
        raise ElfError("object file has no dynamic section", header=header)
    entries = _read_dynamic(f, header, dynamic[0], dynamic[1], order)
    tags = {}
    for tag, value in entries:
        tags.setdefault(tag, value)
    wanted = [value for tag, value in entries if tag == DT_NEEDED]
    wanted += [tags[tag] for tag in (DT_SONAME, DT_RPATH, DT_RUNPATH) if tag in tags]
    strings = {}
    if wanted:
        if DT_STRTAB not in tags:
            raise ElfError("dynamic section has no DT_STRTAB", header=header)
        base = _vaddr_to_offset(loads, tags[DT_STRTAB])
        if base is None:
            raise ElfError("DT_STRTAB address 0x%x is in no PT_LOAD segment" % tags[DT_STRTAB], header=header)
        strings = _read_strings(f, header, base, tags.get(DT_STRSZ), set(wanted))

    def text(tag: int) -> Optional[str]:
        return strings[tags[tag]] if tag in tags else None

    return ElfInfo(
        elf_class=header.elf_class,
        little_endian=header.little_endian,
        machine=header.machine,
        osabi=header.osabi,
        elf_type=header.elf_type,
        soname=text(DT_SONAME),
        needed=tuple(strings[value] for tag, value in entries if tag == DT_NEEDED),
        rpath=text(DT_RPATH),
        runpath=text(DT_RUNPATH),
    )


# A section header's name, type, offset and size, per class (the other fields are not needed).
_SHDR = {32: ("IIIIIIIIII", 0, 1, 4, 5), 64: ("IIQQQQIIQQ", 0, 1, 4, 5)}
_MAX_SHNUM = 65536
_MAX_SHSTRTAB = 1 << 20
SHT_NOBITS = 8


def find_section(read_at, name: str) -> Optional[Tuple[int, int]]:
    """(file offset, size) of the section called ``name``, or None when the file has none; raise ElfError.

    ``read_at(offset, size)`` returns the bytes there (shorter only at the end): a file or a wheel's member.
    Reads the ELF header, the section header table and the section name table only.
    """
    return find_sections(read_at, (name,)).get(name)


def find_sections(read_at, names) -> Dict[str, Tuple[int, int]]:
    """{name: (file offset, size)} of the sections called one of ``names`` that hold bytes in the file (the first of
    each name); as find_section."""
    data = read_at(0, 64)
    header, _phoff, _phentsize, _phnum, order = _parse_header(data)
    fields = struct.unpack_from(order + _LAYOUT[header.elf_class][0], data, _EI_NIDENT)
    shoff, shentsize, shnum, shstrndx = fields[5], fields[10], fields[11], fields[12]
    fmt, i_name, i_type, i_offset, i_size = _SHDR[header.elf_class]
    entry = struct.Struct(order + fmt)
    if not shoff:
        return {}
    if shentsize != entry.size:
        raise ElfError("ELF file's shentsize not the expected size", header=header)
    if shnum == 0 or shstrndx == 0xFFFF:  # extended numbering: the real values sit in section 0
        first = entry.unpack(_exact(read_at, shoff, entry.size, header))
        shnum = shnum or first[i_size]
        shstrndx = first[6] if shstrndx == 0xFFFF else shstrndx
    if shnum > _MAX_SHNUM or shstrndx >= shnum:
        raise ElfError("bad section header table (%d sections, names in %d)" % (shnum, shstrndx), header=header)
    raw = _exact(read_at, shoff, shnum * entry.size, header)
    table = [entry.unpack_from(raw, i * entry.size) for i in range(shnum)]
    wanted_names, names = tuple(names), table[shstrndx]
    if names[i_size] > _MAX_SHSTRTAB:
        raise ElfError("section name table of %d bytes" % names[i_size], header=header)
    strings = _exact(read_at, names[i_offset], names[i_size], header)
    found: Dict[str, Tuple[int, int]] = {}
    for wanted in wanted_names:
        key = wanted.encode("ascii") + b"\0"
        for section in table:
            start = section[i_name]
            if strings[start:start + len(key)] == key and section[i_type] != SHT_NOBITS:
                found[wanted] = (section[i_offset], section[i_size])
                break
    return found


def _exact(read_at, offset: int, size: int, header: ElfHeader) -> bytes:
    data = read_at(offset, size)
    if len(data) != size:
        raise ElfError("section headers past the end of the file", header=header)
    return data


def read_elf(path) -> ElfInfo:
    """Read the loader-relevant facts of ``path``; raise ElfError (OSError passes through)."""
    path = os.fspath(path)
    with open(path, "rb", buffering=0) as f:
        try:
            return _read_elf(f)
        except ElfError as exc:
            raise ElfError(exc.reason, path, exc.header) from None


def read_elf_ident(path) -> Tuple[int, bool, int]:
    """Cheap header check: (elf_class as 32|64, little_endian, machine); raise ElfError."""
    path = os.fspath(path)
    with open(path, "rb", buffering=0) as f:
        data = _read_at(f, 0, 20)
    try:
        elf_class, order = _parse_ident(data)
        if len(data) < 20:
            raise ElfError("file too short")
    except ElfError as exc:
        raise ElfError(exc.reason, path) from None
    return elf_class, order == "<", struct.unpack_from(order + "H", data, 18)[0]


# What ``platform.machine()`` reports, when the interpreter's own file cannot be read.
_MACHINES = {"x86_64": EM_X86_64, "amd64": EM_X86_64, "aarch64": EM_AARCH64, "arm64": EM_AARCH64,
             "i386": EM_386, "i686": EM_386, "ppc64le": EM_PPC64, "ppc64": EM_PPC64, "s390x": EM_S390}


@lru_cache(maxsize=None)
def host_identity() -> Tuple[int, bool, int]:
    """(elf_class, little_endian, machine) of the running interpreter, from its own ELF header."""
    try:
        return read_elf_ident(sys.executable)
    except (OSError, ElfError):
        machine = _MACHINES.get(platform.machine().lower(), 0)
        return struct.calcsize("P") * 8, sys.byteorder == "little", machine
