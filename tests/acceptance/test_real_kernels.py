"""Acceptance on real wheels: the kernels reader (``_read/binaries/fatbin.py``) and the install check (``_install/wheel_kernels.py``)
against what was measured (docs/FINDINGS.md, KERNELS_MISSING) on torch 2.9.1+cu128, torch 2.14.1+cu130 and sglang-kernel 0.4.10.

Opt-in, with the wheelhouse of ``make acceptance`` (the wheels are read from their zip members; no venv is built).
"""

import glob
import os

import pytest

from acceptance_fetch import enabled, wheelhouse

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_kernels import kernel_refusals, wheel_kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_paths import read_wheel

pytestmark = pytest.mark.skipif(not enabled(), reason="opt-in: real torch wheels (about 8.0 GB); run `make acceptance`")


def _wheel(pattern):
    found = sorted(glob.glob(os.path.join(str(wheelhouse()), pattern)))
    if not found:
        pytest.fail("no %s in the wheelhouse %s: run make acceptance's fetch first" % (pattern, wheelhouse()))
    return found[0]


def _kernels(pattern):
    return dict(wheel_kernels(_wheel(pattern)))


def test_torch_2_9_1_carries_sm_70_to_sm_120_and_no_ptx():
    torch_cuda = _kernels("torch-2.9.1-*.whl")["torch/lib/libtorch_cuda.so"]
    assert torch_cuda.sass == (70, 75, 80, 86, 89, 90, 100, 120) and torch_cuda.ptx == ()
    assert torch_cuda.problem is None and torch_cuda.section_size > 900 * 1000 * 1000


def test_torch_2_14_1_has_no_sm_70_and_is_refused_for_a_v100():
    torch_cuda = _kernels("torch-2.14.1-*.whl")["torch/lib/libtorch_cuda.so"]
    # the measured figures name the one sm_121 entry; the section also holds one sm_89 entry, as 2.9.1's does
    # (counted again by an independent readelf + struct scan: 475 sm_75 ... 1 sm_89, 1 sm_121).
    assert torch_cuda.sass == (75, 80, 86, 89, 90, 100, 103, 120, 121) and torch_cuda.ptx == ()
    path = _wheel("torch-2.14.1-*.whl")
    wheel = read_wheel(path, "/venv", "/venv/lib/python3.12/site-packages", "3.12")
    findings, judged = kernel_refusals({"torch": wheel}, ["torch"], ["7.0"])
    assert judged == ["7.0"]
    assert "torch/lib/libtorch_cuda.so" in [f.details["library"] for f in findings]
    assert {f.code for f in findings} == {F.INSTALL_NO_KERNEL}
    assert kernel_refusals({"torch": wheel}, ["torch"], ["9.0"])[0] == []


def test_sglang_kernel_0_4_10_flash_ops_and_flashmla_ops():
    found = _kernels("sglang_kernel-0.4.10-*.whl")
    flash = [k for name, k in found.items() if os.path.basename(name).startswith("flash_ops")]
    flashmla = [k for name, k in found.items() if os.path.basename(name).startswith("flashmla_ops")]
    assert [(k.sass, k.ptx) for k in flash] == [((80, 86, 90), ())]
    assert [(k.sass, k.ptx) for k in flashmla] == [((90, 100, 103), ())]
    assert all(not k.ptx for k in found.values())
    assert 0x100011 in flash[0].flags["sm_90"] and flash[0].flags["sm_80"] == (0x11,)
