# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for elf: gcc-built and hand-built objects, cross-checked with readelf, pyelftools and ld.so."""

from __future__ import annotations

import io
import os
import platform
import struct
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries import elf
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import (
    ElfError, ElfInfo, host_identity, read_elf, read_elf_ident)
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import (
    GCC, build_so, dynamic_offset, m32_unsupported_reason, pyelftools_dynamic, readelf_dynamic, real_load,
    requires_gcc, synthetic_elf)

HOST_CLASS, HOST_LITTLE, HOST_MACHINE = host_identity()
TORCH_RPATH = "$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/nccl/lib:$ORIGIN"


def _fields(info):
    return {"soname": info.soname, "needed": info.needed, "rpath": info.rpath, "runpath": info.runpath}


@requires_gcc
@pytest.mark.parametrize("rpath, runpath", [
    (TORCH_RPATH, None),  # --disable-new-dtags: DT_RPATH, as torch ships
    (None, "$ORIGIN:$ORIGIN/../../cublas/lib"),  # --enable-new-dtags: DT_RUNPATH, as nvidia wheels ship
    (None, None),
])
def test_read_elf_matches_readelf_and_pyelftools(tmp_path, rpath, runpath):
    path = build_so(tmp_path / "libtorch_cuda.so", soname="libtorch_cuda.so", rpath=rpath, runpath=runpath,
                    needed=("libcudnn.so.9", "libnccl.so.2", "libc10.so"))
    info = read_elf(path)
    assert info == ElfInfo(elf_class=HOST_CLASS, little_endian=HOST_LITTLE, machine=HOST_MACHINE, osabi=0,
                           elf_type=elf.ET_DYN, soname="libtorch_cuda.so",
                           needed=("libcudnn.so.9", "libnccl.so.2", "libc10.so"), rpath=rpath, runpath=runpath)
    assert _fields(info) == readelf_dynamic(path) == pyelftools_dynamic(path)


@requires_gcc
def test_read_elf_object_without_soname_or_needed(tmp_path):
    info = read_elf(build_so(tmp_path / "_C.cpython-312-x86_64-linux-gnu.so"))
    assert _fields(info) == {"soname": None, "needed": (), "rpath": None, "runpath": None}


def test_read_elf_32bit_gcc_object(tmp_path):
    reason = m32_unsupported_reason()
    if reason:
        pytest.skip(reason)
    path = build_so(tmp_path / "lib32.so", soname="lib32.so.1", needed=("libdep32.so.1",), runpath="$ORIGIN/lib",
                    m32=True)
    info = read_elf(path)
    assert (info.elf_class, info.little_endian, info.machine) == (32, True, elf.EM_386)
    assert _fields(info) == readelf_dynamic(path) == pyelftools_dynamic(path) == {
        "soname": "lib32.so.1", "needed": ("libdep32.so.1",), "rpath": None, "runpath": "$ORIGIN/lib"}


@pytest.mark.parametrize("elf_class, little_endian, machine", [
    (64, True, elf.EM_X86_64), (64, False, elf.EM_PPC64), (32, True, elf.EM_386), (32, False, 20)])
def test_read_elf_any_class_and_byte_order(tmp_path, elf_class, little_endian, machine):
    path = tmp_path / "libx.so.1"
    path.write_bytes(synthetic_elf(elf_class, little_endian, machine, soname="libx.so.1",
                                   needed=("liby.so.2", "libz.so"), rpath="$ORIGIN/a:$ORIGIN/b", runpath="/opt/x"))
    info = read_elf(path)
    assert info == ElfInfo(elf_class, little_endian, machine, 0, elf.ET_DYN, "libx.so.1", ("liby.so.2", "libz.so"),
                           "$ORIGIN/a:$ORIGIN/b", "/opt/x")
    assert _fields(info) == pyelftools_dynamic(str(path))
    assert read_elf_ident(path) == (elf_class, little_endian, machine)


def _loader_message(path):
    errors, _mapped = real_load([path])
    return errors[0]


@requires_gcc
def test_zero_byte_file_is_too_short_like_the_loader(tmp_path):
    path = tmp_path / "libnccl.so.2"
    path.write_bytes(b"")
    with pytest.raises(ElfError) as caught:
        read_elf(path)
    assert (caught.value.reason, caught.value.path, caught.value.header) == ("file too short", str(path), None)
    assert str(caught.value) == "%s: file too short" % path == _loader_message(path)


def test_short_text_file_is_too_short_and_long_one_has_invalid_header(tmp_path):
    short, long_ = tmp_path / "short.so", tmp_path / "long.so"
    short.write_text("hello\n")
    long_.write_text("this is a text file, long enough to hold a whole ELF header, but not ELF at all\n")
    with pytest.raises(ElfError, match=r": file too short$") as caught:
        read_elf(short)
    assert str(caught.value) == _loader_message(short)
    with pytest.raises(ElfError, match=r": invalid ELF header$") as caught:
        read_elf(long_)
    assert str(caught.value) == "%s: invalid ELF header" % long_ == _loader_message(long_)


@requires_gcc
def test_truncated_dynamic_section(tmp_path):
    full = build_so(tmp_path / "libfull.so", soname="libfull.so.1", needed=("liba.so.1",))
    cut = tmp_path / "libcut.so"
    cut.write_bytes(open(full, "rb").read()[:dynamic_offset(full) + 20])
    with pytest.raises(ElfError) as caught:
        read_elf(cut)
    assert str(caught.value) == "%s: truncated dynamic section" % cut
    assert caught.value.header == elf.ElfHeader(HOST_CLASS, HOST_LITTLE, HOST_MACHINE, 0, elf.ET_DYN)


@requires_gcc
def test_truncated_program_headers(tmp_path):
    full = build_so(tmp_path / "libfull.so")
    cut = tmp_path / "libcut.so"
    cut.write_bytes(open(full, "rb").read()[:100])
    with pytest.raises(ElfError, match=r"libcut\.so: cannot read file data$"):
        read_elf(cut)


@requires_gcc
def test_relocatable_object_has_no_dynamic_section(tmp_path):
    source = tmp_path / "x.c"
    source.write_text("int x(void) { return 0; }\n")
    obj = tmp_path / "x.o"
    subprocess.run([GCC, "-c", "-fPIC", "-o", str(obj), str(source)], check=True)
    with pytest.raises(ElfError) as caught:
        read_elf(obj)
    assert caught.value.reason == "object file has no dynamic section"
    assert caught.value.header.elf_type == 1  # ET_REL: the loader model reports "only ET_DYN and ET_EXEC ..."


def test_no_pt_dynamic(tmp_path):
    path = tmp_path / "static"
    path.write_bytes(synthetic_elf(elf_type=elf.ET_EXEC, dynamic=False))
    with pytest.raises(ElfError, match=r"static: object file has no dynamic section$"):
        read_elf(path)


class _CountingFile(io.RawIOBase):
    def __init__(self, raw, counter):
        super().__init__()
        self._raw, self._counter = raw, counter

    def read(self, size=-1):
        data = self._raw.read(size)
        self._counter.append(len(data))
        return data

    def seek(self, offset, whence=0):
        return self._raw.seek(offset, whence)

    def close(self):
        self._raw.close()
        super().close()


@requires_gcc
def test_reads_a_bounded_number_of_bytes(tmp_path, monkeypatch):
    needed = tuple("libcuda_dep%d.so.%d" % (i, i) for i in range(30))
    path = build_so(tmp_path / "libbig.so", soname="libbig.so.1", needed=needed, rpath=TORCH_RPATH,
                    pad_bytes=5 * 1024 * 1024)
    assert os.path.getsize(path) > 5 * 1024 * 1024
    assert dynamic_offset(path) > 5 * 1024 * 1024  # the dynamic section sits after the padding
    reads = []
    monkeypatch.setattr(elf, "open", lambda *a, **k: _CountingFile(open(*a, **k), reads), raising=False)
    info = read_elf(path)
    assert info.needed == needed and info.rpath == TORCH_RPATH
    assert 0 < sum(reads) < 64 * 1024
    reads.clear()
    assert read_elf_ident(path) == (HOST_CLASS, HOST_LITTLE, HOST_MACHINE)
    assert sum(reads) == 20


def test_osabi_and_machine_are_reported(tmp_path):
    path = tmp_path / "libarm.so"
    path.write_bytes(synthetic_elf(machine=elf.EM_AARCH64, osabi=3, soname="libarm.so"))
    info = read_elf(path)
    assert (info.machine, info.osabi, info.soname) == (elf.EM_AARCH64, 3, "libarm.so")


def test_wrong_phentsize_is_rejected(tmp_path):
    data = bytearray(synthetic_elf(soname="libx.so"))
    struct.pack_into("<H", data, 54, 40)  # e_phentsize of ELF64
    path = tmp_path / "libx.so"
    path.write_bytes(bytes(data))
    with pytest.raises(ElfError, match=r"ELF file's phentsize not the expected size$"):
        read_elf(path)


def test_read_elf_ident_errors(tmp_path):
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    text = tmp_path / "text.so"
    text.write_text("#!/bin/sh\necho this is a shell script, not ELF\n")
    with pytest.raises(ElfError, match=r"empty\.so: file too short$"):
        read_elf_ident(empty)
    with pytest.raises(ElfError, match=r"text\.so: invalid ELF header$"):
        read_elf_ident(text)


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_elf(tmp_path / "absent.so")


def test_host_identity_is_the_interpreters_own_header():
    assert host_identity() == read_elf_ident(os.path.realpath(sys.executable))
    expected_machine = {"x86_64": elf.EM_X86_64, "aarch64": elf.EM_AARCH64}.get(platform.machine())
    if expected_machine is not None:
        assert host_identity() == (64, True, expected_machine)
