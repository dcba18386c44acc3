# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for install_refusals: the rules that refuse a plan's wheels, on what the install guard read (no file is
opened here; tests/unit/plugins/module_utils/_install/ reads real wheels and venvs)."""

from __future__ import annotations

import types

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.install_refusals import (
    Owner, PathOwners, declared_wheels, major_mismatches, no_kernel_findings, overwrites, shared_objects_first)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Action, Batch, Plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_paths import WheelContents, WheelPath
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import Kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import NO_CUDA_MAJOR, CudaMajor

SITE = "/v/lib/python3.12/site-packages/"
REASON = "declared (anchor or packages), not installed"
CU12 = Owner("nvidia-cudnn-cu12", "nvidia-cudnn-cu12 9.10.2.21", "sha256", "cu12", False)


def wheel(name, version, paths, requires=()):
    """A wheel as read: ``paths`` are (path in site-packages, sha256 digest or None)."""
    return WheelContents(
        file="/wh/%s-%s-py3-none-any.whl" % (name.replace("-", "_"), version), name=name, key=name, version=version,
        requires_dist=tuple(requires), problems=(),
        paths=tuple(WheelPath(SITE + p, "%s,sha256=%s,1" % (p, d), "sha256" if d else None, d) for p, d in paths))


CUDNN13 = wheel("nvidia-cudnn-cu13", "9.24.0.43", [("nvidia/cudnn/lib/libcudnn.so.9", "cu13"),
                                                   ("nvidia/cudnn/include/cudnn.h", "h13"), ("nvidia/__init__.py", "empty")])


def obs(anchor="torch", distributions=(), majors=None):
    """What the rules read of an observation: ``majors`` is {dist_info: (major, evidence)}."""
    known = {info: CudaMajor(*pair) for info, pair in (majors or {}).items()}
    return types.SimpleNamespace(
        relpath=lambda path: path[len(SITE):] if path.startswith(SITE) else path,
        options=types.SimpleNamespace(anchor=anchor), distributions=list(distributions), majors=known,
        cuda_major=lambda info: known.get(info, NO_CUDA_MAJOR))


def read(wheels, installed, same_on_disk=()):
    """What the guard read: real paths are the targets; ``installed`` is {path in site-packages: [Owner]}."""
    return PathOwners({p.target: p.target for w in wheels for p in w.paths},
                      {SITE + p: list(o) for p, o in installed.items()}, frozenset(same_on_disk))


def plan_of(*actions):
    return Plan((Batch(1, "test", tuple(actions), ()),), ())


def install(w, kind="install"):
    return Action(kind, w.key, "%s==%s" % (w.name, w.version), REASON)


CU12_OWNS = {"nvidia/cudnn/lib/libcudnn.so.9": [CU12], "nvidia/cudnn/include/cudnn.h": [CU12],
             "nvidia/__init__.py": [Owner(CU12.key, CU12.label, "sha256", "empty", False)]}


# --- INSTALL_WOULD_OVERWRITE ----------------------------------------------------------------------------------

def test_a_wheel_over_an_installed_wheels_other_bytes_is_refused_shared_objects_first():
    findings, replaced = overwrites(obs(), plan_of(install(CUDNN13)), {CUDNN13.key: CUDNN13}, read([CUDNN13], CU12_OWNS))
    assert replaced == {}
    assert [(f.code, f.severity, f.subject) for f in findings] == [
        (F.INSTALL_WOULD_OVERWRITE, F.ERROR, "nvidia-cudnn-cu13 9.24.0.43")]
    assert findings[0].message == (
        "nvidia-cudnn-cu13 9.24.0.43 (nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl, %s) would overwrite 2 file(s) owned "
        "by another wheel (2 of nvidia-cudnn-cu12 9.10.2.21): nvidia/cudnn/lib/libcudnn.so.9, nvidia/cudnn/include/cudnn.h."
        % REASON)
    assert findings[0].fix == (
        "Drop nvidia-cudnn-cu13 (or the packages entry that brings it), or replace nvidia-cudnn-cu12 9.10.2.21: remove it "
        "in the same run (remove:, when nothing declared requires it), so that its files are freed before "
        "nvidia-cudnn-cu13 writes them.")
    paths = ["nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/include/cudnn.h"]  # nvidia/__init__.py: same RECORD hash
    assert findings[0].details == {
        "wheel": "nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl", "distribution": "nvidia-cudnn-cu13",
        "version": "9.24.0.43", "requirement": "nvidia-cudnn-cu13==9.24.0.43", "paths": paths,
        "owners": {"nvidia-cudnn-cu12 9.10.2.21": paths}}


def test_an_owner_without_a_record_hash_is_judged_by_the_bytes_on_disk():
    unhashed = Owner(CU12.key, CU12.label, None, None, False)
    owns = {"nvidia/cudnn/lib/libcudnn.so.9": [unhashed], "nvidia/cudnn/include/cudnn.h": [unhashed]}
    same = [p for p in CUDNN13.paths if p.record.startswith("nvidia/cudnn/include/")]
    findings, _replaced = overwrites(obs(), plan_of(install(CUDNN13)), {CUDNN13.key: CUDNN13}, read([CUDNN13], owns, same))
    assert findings[0].details["paths"] == ["nvidia/cudnn/lib/libcudnn.so.9"]


def test_a_removal_before_the_install_is_a_planned_replacement_and_after_it_frees_nothing():
    remove = Action("remove", CU12.key, CU12.key, "listed in remove")
    wheels, owners = {CUDNN13.key: CUDNN13}, read([CUDNN13], CU12_OWNS)
    findings, replaced = overwrites(obs(), plan_of(remove, install(CUDNN13)), wheels, owners)
    assert findings == []
    assert replaced == {"nvidia-cudnn-cu13": {"nvidia-cudnn-cu12 9.10.2.21": [
        "nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/include/cudnn.h", "nvidia/__init__.py"]}}
    late = Plan((Batch(1, "install", (install(CUDNN13),), ()), Batch(2, "late", (remove,), ())), ())
    assert [f.code for f in overwrites(obs(), late, wheels, owners)[0]] == [F.INSTALL_WOULD_OVERWRITE]


def test_a_distribution_never_conflicts_with_itself_and_a_wheel_not_read_is_left_out():
    cudnn12 = wheel("nvidia-cudnn-cu12", "9.10.2.21", [("nvidia/cudnn/lib/libcudnn.so.9", "other build")])
    plan = plan_of(install(cudnn12, kind="reinstall"), Action("install", "nvidia-curand-cu12", "nvidia-curand-cu12", REASON))
    assert overwrites(obs(), plan, {cudnn12.key: cudnn12}, read([cudnn12], CU12_OWNS)) == ([], {})


def test_two_wheels_of_one_plan_writing_one_path_are_refused():
    alpha, beta = (wheel(n, "1.0", [("shared/lib/libx.so.1", n)]) for n in ("alpha", "beta"))
    findings, _replaced = overwrites(obs(), plan_of(install(alpha), install(beta)), {"alpha": alpha, "beta": beta},
                                     read([alpha, beta], {}))
    assert [(f.subject, f.details["owners"]) for f in findings] == [
        ("beta 1.0", {"alpha 1.0 (planned in this run)": ["shared/lib/libx.so.1"]})]
    assert "or replace alpha 1.0: remove it in the same run" in findings[0].fix
    assert "(1 of alpha 1.0 (planned in this run))" in findings[0].message


def test_a_message_names_eight_paths_and_the_details_all():
    many = wheel("many", "1.0", [("pkg/f%02d.py" % i, "new") for i in range(10)] + [("pkg/libz.so", "new")])
    owner = Owner("old", "old 1.0", "sha256", "old", False)
    findings, _replaced = overwrites(obs(), plan_of(install(many)), {"many": many},
                                     read([many], {p.record.split(",")[0]: [owner] for p in many.paths}))
    shown = ["pkg/libz.so"] + ["pkg/f%02d.py" % i for i in range(7)]
    assert findings[0].message.endswith("(11 of old 1.0): %s and 3 more." % ", ".join(shown))
    assert findings[0].details["paths"][:8] == shown and len(findings[0].details["paths"]) == 11


def test_shared_objects_come_first():
    assert shared_objects_first(["a/b.h", "lib/libz.so", "lib/libcudnn.so.9", "x.py", "m/_C.abi3.so"]) == [
        "lib/libcudnn.so.9", "lib/libz.so", "m/_C.abi3.so", "a/b.h", "x.py"]


# --- INSTALL_CUDA_MAJOR_MISMATCH ------------------------------------------------------------------------------

TORCH = types.SimpleNamespace(key="torch", label="torch 2.9.1", dist_info=SITE + "torch-2.9.1.dist-info")


def test_a_new_wheel_of_another_cuda_major_than_the_installed_anchor_is_refused():
    installed = obs(distributions=[TORCH], majors={TORCH.dist_info: (12, "dependency nvidia-cudnn-cu12")})
    findings = major_mismatches(installed, plan_of(install(CUDNN13)), {CUDNN13.key: CUDNN13})
    assert [(f.code, f.severity, f.subject) for f in findings] == [
        (F.INSTALL_CUDA_MAJOR_MISMATCH, F.ERROR, "nvidia-cudnn-cu13 9.24.0.43")]
    assert findings[0].message == (
        "nvidia-cudnn-cu13 9.24.0.43 (nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl, %s) is built for CUDA 13 (name), "
        "but the anchor torch 2.9.1 is built for CUDA 12." % REASON)
    assert findings[0].fix == ("Drop nvidia-cudnn-cu13 (or the packages entry that brings it), or use its CUDA 12 build; "
                               "a venv runs one CUDA major.")
    assert findings[0].details == {
        "wheel": "nvidia_cudnn_cu13-9.24.0.43-py3-none-any.whl", "distribution": "nvidia-cudnn-cu13",
        "version": "9.24.0.43", "requirement": "nvidia-cudnn-cu13==9.24.0.43", "cuda_major": 13, "evidence": "name",
        "anchor_cuda_major": 12}


def test_the_anchors_wheel_in_the_plan_sets_the_major_and_only_new_installs_are_judged():
    torch13 = wheel("torch", "2.10.0", [("torch/__init__.py", "t")], requires=["nvidia-cudnn-cu13==9.24.0.43"])
    cublas12 = wheel("nvidia-cublas-cu12", "12.8.4.1", [("nvidia/cublas/lib/libcublas.so.12", "b")])
    wheels = {"torch": torch13, CUDNN13.key: CUDNN13, cublas12.key: cublas12}
    installed = obs(distributions=[TORCH], majors={TORCH.dist_info: (12, "name")})
    findings = major_mismatches(installed, plan_of(install(torch13), install(CUDNN13), install(cublas12)), wheels)
    assert [(f.subject, f.details["cuda_major"], f.details["anchor_cuda_major"]) for f in findings] == [
        ("nvidia-cublas-cu12 12.8.4.1", 12, 13)]
    assert "but the anchor torch 2.10.0 is built for CUDA 13." in findings[0].message
    assert major_mismatches(installed, plan_of(install(cublas12, kind="reinstall")), wheels) == []


def test_no_anchor_major_no_refusal():
    assert major_mismatches(obs(), plan_of(install(CUDNN13)), {CUDNN13.key: CUDNN13}) == []  # anchor not installed
    installed = obs(distributions=[TORCH], majors={TORCH.dist_info: (None, None)})
    assert major_mismatches(installed, plan_of(install(CUDNN13)), {CUDNN13.key: CUDNN13}) == []


# --- INSTALL_NO_KERNEL ----------------------------------------------------------------------------------------

SGLANG = wheel("sglang-kernel", "0.4.10", [("sgl_kernel/flash_ops.abi3.so", "f")])
FLASH = Kernels(sass=(80, 86, 90), ptx=(), section_size=4096, containers=2, entries=5,
                flags={"sm_80": (0x11,), "sm_86": (0x11,), "sm_90": (0x100011,)})
JIT = Kernels(sass=(), ptx=(80,), section_size=512, containers=1, entries=1, flags={"compute_80": (0x11,)})


def test_only_the_declared_wheels_are_judged_by_canonical_name():
    wheels = {"sglang-kernel": SGLANG, "torch": CUDNN13}
    assert declared_wheels(wheels, ["Sglang_Kernel", "flashinfer-python"]) == [SGLANG]
    assert declared_wheels(wheels, []) == []


def test_a_library_with_no_kernel_for_a_gpu_is_refused():
    carried = [(SGLANG, [("sgl_kernel/flash_ops.abi3.so", FLASH), ("sgl_kernel/jit_ops.abi3.so", JIT)])]
    findings = no_kernel_findings(carried, ["9.0", "10.0"])
    assert [(f.code, f.severity, f.subject) for f in findings] == [
        (F.INSTALL_NO_KERNEL, F.ERROR, "sglang-kernel 0.4.10")]
    assert findings[0].message == (
        "sglang-kernel 0.4.10 (sglang_kernel-0.4.10-py3-none-any.whl): sgl_kernel/flash_ops.abi3.so has no kernel for "
        "compute capability 10.0: it carries SASS for sm_80, sm_86, sm_90, no PTX.")
    assert findings[0].fix == (
        "Declare a build of sglang-kernel made for this GPU (or drop it): installed, its CUDA code would fail with "
        "\"no kernel image is available for execution on the device\".")
    assert findings[0].details == {
        "wheel": "sglang_kernel-0.4.10-py3-none-any.whl", "distribution": "sglang-kernel", "version": "0.4.10",
        "library": "sgl_kernel/flash_ops.abi3.so", "compute_capabilities": ["10.0"], **FLASH.as_dict()}


def test_ptx_for_an_older_gpu_or_machine_code_of_the_major_is_no_refusal_and_each_library_is_judged():
    carried = [(SGLANG, [("sgl_kernel/flash_ops.abi3.so", FLASH), ("sgl_kernel/jit_ops.abi3.so", JIT)])]
    assert no_kernel_findings(carried, ["8.6", "8.9"]) == []
    v100 = no_kernel_findings(carried, ["7.0"])
    assert [(f.details["library"], f.details["compute_capabilities"]) for f in v100] == [
        ("sgl_kernel/flash_ops.abi3.so", ["7.0"]), ("sgl_kernel/jit_ops.abi3.so", ["7.0"])]
    assert v100[1].message.endswith("it carries SASS for no architecture and PTX for compute_80.")
