# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for fatbin: gcc-built shared objects carrying a real ``.nv_fatbin`` section in the container format."""

from __future__ import annotations

import os
import struct
import subprocess

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import ElfError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import Kernels, kernels_of, read_kernels
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import READELF, build_so, requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.support.fatbin_helpers import (
    OBJCOPY, PTX, SASS, build_fatbin_so, container_bytes, fatbin_bytes)

# Like sglang-kernel's flash_ops (as measured): sm_80 and sm_86 with flags 0x11, sm_90 with 0x100011.
FLASH_OPS = fatbin_bytes(
    [(SASS, 80, 0x11, 40), (SASS, 86, 0x11, 32), (SASS, 90, 0x100011, 56)],
    [(SASS, 80, 0x11, 8), (SASS, 86, 0x11, 8), (SASS, 90, 0x108011, 16), (PTX, 90, 0x11, 100)],
)


@requires_gcc
def test_read_kernels_of_a_gcc_built_object(tmp_path):
    path = build_fatbin_so(tmp_path / "flash_ops.abi3.so", FLASH_OPS)
    kernels = read_kernels(path)
    assert kernels == Kernels(sass=(80, 86, 90), ptx=(90,), section_size=len(FLASH_OPS), containers=2, entries=7,
                              flags={"sm_80": (0x11,), "sm_86": (0x11,), "sm_90": (0x100011, 0x108011),
                                     "compute_90": (0x11,)})
    assert kernels.as_dict() == {
        "sass": ["sm_80", "sm_86", "sm_90"], "ptx": ["compute_90"], "section_size": len(FLASH_OPS), "containers": 2,
        "entries": 7, "flags": {"compute_90": ["0x11"], "sm_80": ["0x11"], "sm_86": ["0x11"], "sm_90": ["0x100011", "0x108011"]},
        "problem": None, "elsewhere": 0, "empty": 0}


def _with_ldata(tmp_path, ldata: bytes):
    """A library like cuFFT 12.0: a stub ``.nv_fatbin`` (SASS sm_75 alone) and its kernels in ``.ldata``."""
    stub = build_fatbin_so(tmp_path / "stub.so", fatbin_bytes([(SASS, 75, 0x11, 16)]))
    (tmp_path / "ldata.bin").write_bytes(ldata)
    path = str(tmp_path / "libcufft.so.12")
    subprocess.run([OBJCOPY, "--add-section", ".ldata=%s" % (tmp_path / "ldata.bin"), "--set-section-flags",
                    ".ldata=alloc,data", stub, path], check=True, capture_output=True)
    return path


@requires_gcc
@pytest.mark.skipif(OBJCOPY is None, reason="objcopy (binutils) is not installed")
def test_kernels_a_library_keeps_in_its_large_data_sections_count(tmp_path):
    false_magic = struct.pack("<IHHQ", 0xBA55ED50, 7, 16, 64)  # the magic's bytes in data: not a container
    ldata = (b"\x01" * 4096 + false_magic + b"\x02" * 100 + container_bytes([(SASS, 90, 0x11, 64), (PTX, 90, 0x11, 32)])
             + bytes(1 << 20) + container_bytes([(SASS, 100, 0x1200011, 64)]) + b"\x03" * 333)
    kernels = read_kernels(_with_ldata(tmp_path, ldata))
    assert (kernels.sass, kernels.ptx, kernels.containers, kernels.elsewhere, kernels.problem) == (
        (75, 90, 100), (90,), 3, 2, None)


def _cubin_entry(arch: int, names: bytes) -> bytes:
    """A machine-code entry whose payload is a plain cubin: an ELF file whose section names are ``names``."""
    payload = b"\x7fELF\x02\x01\x01" + bytes(57) + names + bytes(64)
    head = bytearray(64)
    struct.pack_into("<HHIQ", head, 0, SASS, 0x0101, 64, len(payload))
    struct.pack_into("<I", head, 28, arch)
    struct.pack_into("<I", head, 40, 0x11)
    return bytes(head) + payload


@requires_gcc
def test_a_cubin_without_a_kernel_section_gives_no_architecture(tmp_path):
    """libcufftw's only entry: a 1,904-byte sm_75 cubin with .nv.info sections and no .text.<kernel> (measured)."""
    empty = _cubin_entry(75, b"\0.shstrtab\0.nv.info\0.nv.callgraph\0.nv.rel.action\0")
    kernel = _cubin_entry(80, b"\0.shstrtab\0.nv.info\0.text.cuFileCopyGpu\0.nv.info.cuFileCopyGpu\0")
    wrapper = build_fatbin_so(tmp_path / "libcufftw.so.12", struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(empty)) + empty)
    assert (read_kernels(wrapper).sass, read_kernels(wrapper).entries, read_kernels(wrapper).empty) == ((), 0, 1)
    both = empty + kernel
    library = build_fatbin_so(tmp_path / "libcufile.so.0", struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(both)) + both)
    assert (read_kernels(library).sass, read_kernels(library).entries, read_kernels(library).empty) == ((80,), 1, 1)


@requires_gcc
@pytest.mark.skipif(OBJCOPY is None, reason="objcopy (binutils) is not installed")
def test_small_data_sections_are_not_searched(tmp_path):
    """Below ELSEWHERE_MIN the data sections are not read: a library's kernels are its .nv_fatbin's (libcufile)."""
    kernels = read_kernels(_with_ldata(tmp_path, container_bytes([(SASS, 90, 0x11, 64)]) + bytes(1000)))
    assert (kernels.sass, kernels.elsewhere) == ((75,), 0)


@requires_gcc
@pytest.mark.skipif(READELF is None, reason="readelf (binutils) is not installed")
def test_the_section_read_is_the_one_readelf_lists(tmp_path):
    path = build_fatbin_so(tmp_path / "libk.so", FLASH_OPS)
    out = subprocess.run([READELF, "-W", "-S", path], capture_output=True, text=True, check=True).stdout
    row = next(line for line in out.splitlines() if ".nv_fatbin" in line).split("]", 1)[1].split()
    assert int(row[4], 16) == read_kernels(path).section_size == len(FLASH_OPS)


@requires_gcc
def test_an_object_without_the_section_has_no_kernels(tmp_path):
    assert read_kernels(build_so(tmp_path / "libc10.so", soname="libc10.so")) is None


@requires_gcc
def test_payloads_are_never_read(tmp_path):
    """Three 40 KB payloads: the reader's reads add up to the ELF and section headers and the entry headers."""
    path = build_fatbin_so(tmp_path / "libk.so", fatbin_bytes([(SASS, 75, 0x11, 40960), (SASS, 80, 0x11, 40960)],
                                                              [(PTX, 80, 0x11, 40960)]))
    reads = []
    fd = os.open(path, os.O_RDONLY)
    try:
        def read_at(offset, size):
            reads.append(size)
            return os.pread(fd, size, offset)
        kernels = kernels_of(read_at)
    finally:
        os.close(fd)
    assert (kernels.sass, kernels.ptx, kernels.entries) == ((75, 80), (80,), 3)
    assert sum(reads) < 3000 < kernels.section_size // 40


@requires_gcc
def test_a_bad_container_is_a_problem_not_a_crash(tmp_path):
    bad = bytearray(fatbin_bytes([(SASS, 80)], [(SASS, 90)]))
    second = len(container_bytes([(SASS, 80)]))
    struct.pack_into("<I", bad, second, 0xDEADBEEF)
    kernels = read_kernels(build_fatbin_so(tmp_path / "libk.so", bytes(bad)))
    assert (kernels.sass, kernels.containers) == ((80,), 1)
    assert kernels.problem == "no fatbin container at byte %d of the section (magic 0xdeadbeef)" % second


@requires_gcc
def test_an_entry_of_unknown_kind_stops_its_container(tmp_path):
    bad = bytearray(fatbin_bytes([(SASS, 80), (SASS, 86)]))
    struct.pack_into("<H", bad, 16 + 64 + 24, 7)
    kernels = read_kernels(build_fatbin_so(tmp_path / "libk.so", bytes(bad)))
    assert kernels.sass == (80,)
    assert kernels.problem == "unreadable entry at byte 104 of the section (kind 7, header 64)"


@requires_gcc
def test_a_truncated_file_is_an_elf_error(tmp_path):
    path = build_fatbin_so(tmp_path / "libk.so", FLASH_OPS)
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) // 2)
    with pytest.raises(ElfError) as err:
        read_kernels(path)
    assert str(err.value) == "%s: section headers past the end of the file" % path


def test_not_an_elf_file(tmp_path):
    path = tmp_path / "notes.so"
    path.write_bytes(b"not an ELF file at all, just text" * 3)
    with pytest.raises(ElfError) as err:
        read_kernels(path)
    assert str(err.value) == "%s: invalid ELF header" % path
