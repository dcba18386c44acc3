# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for install_guard: a plan's wheels checked on a real venv before anything is installed."""

from __future__ import annotations

import subprocess

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Action, Batch, Completion, Plan, complete_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.install_guard import InstallCheck, InstallRefused, guard_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import WheelSources
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions, observe
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.support.fatbin_helpers import SASS, build_fatbin_so, fatbin_bytes
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

CU12_CUDNN = {"nvidia/cudnn/lib/libcudnn.so.9": b"\x7fELF cudnn 9.10", "nvidia/cudnn/include/cudnn.h": b"/* 9.10 */",
              "nvidia/__init__.py": b""}
CU13_CUDNN = {"nvidia/cudnn/lib/libcudnn.so.9": b"\x7fELF cudnn 9.24 (cu13)", "nvidia/cudnn/include/cudnn.h": b"/* 9.24 */",
              "nvidia/__init__.py": b""}
TORCH_REQUIRES = ["nvidia-cudnn-cu12==9.10.2.21"]


@pytest.fixture
def venv(tmp_path, empty_venv):
    """A copy of an empty real venv holding a 'torch' 2.9.1 that requires the cu12 cuDNN, and that cuDNN."""
    path = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(empty_venv), str(path)], check=True)
    site = next(path.glob("lib/python3*/site-packages"))
    make_dist(str(site), "torch", "2.9.1", files={"torch/__init__.py": b""}, requires=TORCH_REQUIRES)
    make_dist(str(site), "nvidia-cudnn-cu12", "9.10.2.21", files=CU12_CUDNN)
    return path


def observed(venv, anchor="torch"):
    return observe(FactsOptions(path=str(venv), anchor=anchor, probe=False, gpu=False), SubprocessRunner())


def plan_of(*actions):
    return Plan((Batch(1, "test", tuple(actions), ()),), ())


def install(name, requirement=None, reason="declared (anchor or packages), not installed"):
    return Action("install", name, requirement or name, reason)


def no_backend():
    raise AssertionError("no installer is needed for local wheels")


def guard(venv, plan, wheels, anchor="torch", **check):
    check = InstallCheck(WheelSources(find_links=(str(wheels),), no_index=True), **check)
    return complete_plan(plan, guard_plan(observed(venv, anchor), plan, check, no_backend, str(venv / ".cuda_venv"), check_mode=True))


def refusal(venv, plan, wheels, anchor="torch"):
    before = tree_digest(str(venv), exclude=())
    with pytest.raises(InstallRefused) as caught:
        guard(venv, plan, wheels, anchor)
    assert tree_digest(str(venv), exclude=()) == before
    return caught.value


def test_wheel_over_a_kept_wheels_files_is_refused_shared_objects_first(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    refused = refusal(venv, plan_of(install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43")), tmp_path / "wh",
                      anchor="nvidia-cudnn-cu13")  # an anchor with no CUDA major of its own: only the overwrite
    overwrite = [f for f in refused.findings if f.code == F.INSTALL_WOULD_OVERWRITE]
    assert [f.code for f in refused.findings] == [F.INSTALL_WOULD_OVERWRITE]
    finding = overwrite[0]
    assert (finding.severity, finding.subject) == (F.ERROR, "nvidia-cudnn-cu13 9.24.0.43")
    assert finding.details["paths"] == ["nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/include/cudnn.h"]
    assert finding.details["owners"] == {"nvidia-cudnn-cu12 9.10.2.21": finding.details["paths"]}  # nvidia/__init__.py: same bytes
    assert finding.details["wheel"] == "nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl"
    assert "would overwrite 2 file(s) owned by another wheel (2 of nvidia-cudnn-cu12 9.10.2.21)" in finding.message
    assert finding.fix.startswith("Drop nvidia-cudnn-cu13 (or the packages entry that brings it), or replace "
                                  "nvidia-cudnn-cu12 9.10.2.21: remove it in the same run")
    assert str(refused).startswith("refused before any change: nvidia-cudnn-cu13 9.24.0.43 (nvidia_cudnn_cu13-")
    assert refused.result["refused"] == [finding.as_dict()]


def test_another_cuda_major_than_the_anchors_is_refused(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    make_dist(str(next(venv.glob("lib/python3*/site-packages"))), "nvidia-cuda-runtime-cu12", "12.8.90")
    refused = refusal(venv, plan_of(install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43")), tmp_path / "wh")
    assert [f.code for f in refused.findings] == [F.INSTALL_WOULD_OVERWRITE, F.INSTALL_CUDA_MAJOR_MISMATCH]
    major = refused.findings[1]
    assert major.details == {"wheel": "nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl", "distribution": "nvidia-cudnn-cu13",
                             "version": "9.24.0.43", "requirement": "nvidia-cudnn-cu13==9.24.0.43", "cuda_major": 13,
                             "evidence": "name", "anchor_cuda_major": 12}
    assert "is built for CUDA 13 (name), but the anchor torch 2.9.1 is built for CUDA 12" in major.message


def test_removal_before_the_install_is_a_planned_replacement(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    plan = plan_of(Action("remove", "nvidia-cudnn-cu12", "nvidia-cudnn-cu12", "listed in remove"),
                   install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43"))
    checked = guard(venv, plan, tmp_path / "wh", anchor="nvidia-cudnn-cu13")
    assert [a.reason for a in checked.batches[0].actions] == [
        "listed in remove", "declared (anchor or packages), not installed; replaces 3 file(s) of "
        "nvidia-cudnn-cu12 9.10.2.21, removed before it"]


def test_removal_after_the_install_frees_nothing(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    plan = Plan((Batch(1, "install", (install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43"),), ()),
                 Batch(2, "late", (Action("remove", "nvidia-cudnn-cu12", "nvidia-cudnn-cu12", "late"),), ())), ())
    refused = refusal(venv, plan, tmp_path / "wh", anchor="nvidia-cudnn-cu13")
    assert [f.code for f in refused.findings] == [F.INSTALL_WOULD_OVERWRITE]


def test_identical_files_and_reinstalls_are_no_conflict(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu12", "9.10.2.21", files=CU12_CUDNN)
    make_wheel(str(tmp_path / "wh"), "nvidia-cublas-cu12", "12.8.4.1",
               files={"nvidia/__init__.py": b"", "nvidia/cublas/lib/libcublas.so.12": b"\x7fELF cublas"})
    plan = plan_of(Action("reinstall", "nvidia-cudnn-cu12", "nvidia-cudnn-cu12==9.10.2.21", "damaged"),
                   install("nvidia-cublas-cu12"))
    assert guard(venv, plan, tmp_path / "wh") == plan


def test_two_wheels_of_one_plan_writing_one_path_are_refused(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "alpha", "1.0", files={"shared/lib/libx.so.1": b"alpha"})
    make_wheel(str(tmp_path / "wh"), "beta", "1.0", files={"shared/lib/libx.so.1": b"beta"})
    refused = refusal(venv, plan_of(install("alpha"), install("beta")), tmp_path / "wh")
    assert [(f.subject, f.details["owners"]) for f in refused.findings] == [
        ("beta 1.0", {"alpha 1.0 (planned in this run)": ["shared/lib/libx.so.1"]})]


def test_a_wheel_not_in_the_find_links_is_left_to_the_installer(venv, tmp_path):
    make_wheel(str(tmp_path / "wh"), "nvidia-cudnn-cu13", "9.24.0.43", files=CU13_CUDNN)
    plan = plan_of(install("nvidia-curand-cu12", "nvidia-curand-cu12==10.3.9.90"),
                   install("nvidia-cudnn-cu13", "nvidia-cudnn-cu13==9.24.0.43"))
    refused = refusal(venv, plan, tmp_path / "wh", anchor="nvidia-cudnn-cu13")  # the wheels found are still checked
    assert [f.subject for f in refused.findings] == ["nvidia-cudnn-cu13 9.24.0.43"]
    alone = plan_of(install("nvidia-curand-cu12", "nvidia-curand-cu12==10.3.9.90"))
    checked = guard(venv, alone, tmp_path / "wh")
    assert [a.reason for a in checked.batches[0].actions] == [
        "declared (anchor or packages), not installed; no wheel of it in the wheel sources: not checked, its batch "
        "will be unfixable"]


def test_a_plan_without_installs_reads_no_wheel(venv):
    plan = plan_of(Action("remove", "nvidia-cudnn-cu12", "nvidia-cudnn-cu12", "listed in remove"))
    assert guard_plan(observed(venv), plan, InstallCheck(WheelSources(index_url="http://127.0.0.1:9/simple")),
                      no_backend, str(venv / ".cuda_venv"), check_mode=True) == Completion()


@requires_gcc
def test_a_declared_wheel_without_a_kernel_for_the_gpu_is_refused_and_nothing_changes(venv, tmp_path):
    """sglang-kernel's flash_ops (sm_80, 86, 90, as measured) declared for a node with an sm_100 GPU."""
    lib = build_fatbin_so(tmp_path / "flash_ops.abi3.so", fatbin_bytes([(SASS, 80), (SASS, 86), (SASS, 90, 0x100011)]))
    with open(lib, "rb") as handle:
        make_wheel(str(tmp_path / "wh"), "sglang-kernel", "0.4.10", files={"sgl_kernel/flash_ops.abi3.so": handle.read()})
    plan = plan_of(install("sglang-kernel", "sglang-kernel==0.4.10"))
    before = tree_digest(str(venv), exclude=())
    with pytest.raises(InstallRefused) as caught:
        guard(venv, plan, tmp_path / "wh", packages=("sglang-kernel==0.4.10",), gpu_archs=("10.0",))
    assert tree_digest(str(venv), exclude=()) == before
    assert [(f.code, f.subject, f.details["library"]) for f in caught.value.findings] == [
        (F.INSTALL_NO_KERNEL, "sglang-kernel 0.4.10", "sgl_kernel/flash_ops.abi3.so")]
    assert str(caught.value) == (
        "refused before any change: sglang-kernel 0.4.10 (sglang_kernel-0.4.10-py3-none-any.whl): "
        "sgl_kernel/flash_ops.abi3.so has no kernel for compute capability 10.0: it carries SASS for sm_80, sm_86, "
        "sm_90, no PTX.")
    assert guard(venv, plan, tmp_path / "wh", packages=("sglang-kernel==0.4.10",), gpu_archs=("9.0",)) == plan
    assert guard(venv, plan, tmp_path / "wh", gpu_archs=("10.0",)) == plan  # a dependency, not a declared wheel


def test_an_installed_file_without_a_record_hash_is_compared_by_its_bytes_on_disk(venv, tmp_path):
    files = {"shared/lib/libx.so.1": b"same bytes", "shared/include/x.h": b"old header"}
    record = "".join("%s,,\n" % path for path in files) + "xold-1.0.dist-info/METADATA,,\nxold-1.0.dist-info/RECORD,,\n"
    make_dist(str(next(venv.glob("lib/python3*/site-packages"))), "xold", "1.0", files=files, record=record.encode())
    make_wheel(str(tmp_path / "wh"), "xnew", "1.0", files={"shared/lib/libx.so.1": b"same bytes", "shared/include/x.h": b"new"})
    refused = refusal(venv, plan_of(install("xnew", "xnew==1.0")), tmp_path / "wh")
    assert [(f.code, f.details["owners"]) for f in refused.findings] == [
        (F.INSTALL_WOULD_OVERWRITE, {"xold 1.0": ["shared/include/x.h"]})]
