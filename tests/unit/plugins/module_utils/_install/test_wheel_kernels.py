# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for wheel_kernels: the kernels of real wheels' gcc-built extensions, read from the compressed zip members."""

from __future__ import annotations

import os
import types
import zipfile

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_kernels import kernel_refusals, wheel_kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import read_kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.gpu import GpuDevice, GpuFacts
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import build_so, requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.support.fatbin_helpers import (
    OBJCOPY, PTX, SASS, add_fatbin_section, build_fatbin_so, fatbin_bytes)
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

FLASH = fatbin_bytes([(SASS, 80), (SASS, 86), (SASS, 90, 0x100011)], [(SASS, 80), (SASS, 86)])
JIT = fatbin_bytes([(PTX, 80)])


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


@pytest.fixture
def sglang_wheel(tmp_path):
    flash = build_fatbin_so(tmp_path / "so" / "flash_ops.abi3.so", FLASH)
    jit = build_fatbin_so(tmp_path / "so" / "jit_ops.abi3.so", JIT)
    plain = build_so(tmp_path / "so" / "libplain.so", soname="libplain.so")
    return make_wheel(str(tmp_path / "wh"), "sglang-kernel", "0.4.10", tag="cp310-abi3-manylinux2014_x86_64", files={
        "sgl_kernel/flash_ops.abi3.so": _read(flash), "sgl_kernel/jit_ops.abi3.so": _read(jit),
        "sgl_kernel/libplain.so": _read(plain), "sgl_kernel/__init__.py": b"", "sgl_kernel/broken.so": b"not ELF"},
        compression=zipfile.ZIP_DEFLATED)


def _wheels(path):
    return {"sglang-kernel": types.SimpleNamespace(file=path, name="sglang-kernel", version="0.4.10", label="sglang-kernel 0.4.10")}


@requires_gcc
def test_wheel_kernels_reads_each_extension_from_the_zip(sglang_wheel):
    found = wheel_kernels(sglang_wheel)
    assert [(name, k.sass, k.ptx, k.entries) for name, k in found] == [
        ("sgl_kernel/flash_ops.abi3.so", (80, 86, 90), (), 5), ("sgl_kernel/jit_ops.abi3.so", (), (80,), 1)]


@requires_gcc
@pytest.mark.skipif(OBJCOPY is None, reason="objcopy (binutils) is not installed")
def test_a_large_compressed_member_reads_as_the_file_does(tmp_path):
    """A 6 MB section: the member reader streams past several chunks and back to the section."""
    big = fatbin_bytes(*[[(SASS, arch, 0x11, 1 << 20), (PTX, arch, 0x11, 1 << 19)] for arch in (75, 80, 90, 100)])
    lib = add_fatbin_section(tmp_path / "libtorch_cuda.so", big)
    wheel = make_wheel(str(tmp_path / "wh"), "torch", "2.14.1", files={"torch/lib/libtorch_cuda.so": _read(lib)},
                       compression=zipfile.ZIP_DEFLATED)
    assert wheel_kernels(wheel) == [("torch/lib/libtorch_cuda.so", read_kernels(lib))]
    assert read_kernels(lib).sass == (75, 80, 90, 100) and os.path.getsize(wheel) < len(big) // 10


@requires_gcc
def test_a_declared_wheel_is_judged_on_the_kernels_read_from_its_members(sglang_wheel):
    """The rule itself (messages, PTX, machine code of the major): _decide/test_install_refusals.py."""
    findings, judged = kernel_refusals(_wheels(sglang_wheel), ["sglang-kernel"], ["9.0", "10.0"], nvml=_no_nvml)
    assert judged == ["10.0", "9.0"]
    assert [(f.code, f.subject, f.details["library"]) for f in findings] == [
        (F.INSTALL_NO_KERNEL, "sglang-kernel 0.4.10", "sgl_kernel/flash_ops.abi3.so")]
    assert findings[0].details["wheel"] == "sglang_kernel-0.4.10-cp310-abi3-manylinux2014_x86_64.whl"
    assert findings[0].details["flags"] == {"sm_80": ["0x11"], "sm_86": ["0x11"], "sm_90": ["0x100011"]}
    assert kernel_refusals(_wheels(sglang_wheel), ["sglang-kernel"], ["8.6"], nvml=_no_nvml) == ([], ["8.6"])


def _no_nvml():
    raise AssertionError("gpu_archs given: NVML is not asked")


@requires_gcc
def test_the_gpu_comes_from_nvml_and_nothing_is_read_without_one(sglang_wheel):
    v100 = GpuFacts(available=True, devices=(GpuDevice(0, "Tesla V100-SXM2-32GB", "GPU-0", 32768, "7.0"),))
    findings, judged = kernel_refusals(_wheels(sglang_wheel), ["sglang-kernel"], [], nvml=lambda: v100)
    assert judged == ["7.0"]
    assert [f.details["library"] for f in findings] == ["sgl_kernel/flash_ops.abi3.so", "sgl_kernel/jit_ops.abi3.so"]
    missing = _wheels("/nonexistent.whl")  # not opened: no GPU to judge for
    assert kernel_refusals(missing, ["sglang-kernel"], [], nvml=lambda: GpuFacts(reason="NVML found no GPU device")) == ([], None)
    assert kernel_refusals(missing, ["torch"], ["9.0"], nvml=_no_nvml) == ([], None)  # not a declared wheel of the plan
