# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for diagnose: every rule on Observations built from literal data (see observations.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import is_healthy
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState, make_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.scripts import ScriptCheck
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.shadowing import Shadowed
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import (
    ALL, CU12_LABELS, GUTTED_ERROR, ROOT, TORCH_CUDA, bad, build, dist, elf, found, unresolved)

CACHE = "cache"


def table(findings):
    return [(f.severity, f.code, f.subject) for f in findings]


def only(findings, code, subject=None):
    picked = [f for f in findings if f.code == code and (subject is None or f.subject == subject)]
    assert len(picked) == 1, table(findings)
    return picked[0]


# --- the incident ------------------------------------------------------------------------------------------------

def test_gutted_incident_gives_exactly_these_findings():
    assert table(diagnose(O.gutted())) == [
        ("error", "RECORD_MISSING_FILES", "nvidia-cudnn-cu12 9.10.2.21"),
        ("error", "RECORD_MISSING_FILES", "nvidia-cusparselt-cu12 0.7.1"),
        ("error", "RECORD_MISSING_FILES", "nvidia-nccl-cu12 2.27.5"),
        ("error", "RECORD_MISSING_FILES", "nvidia-nvshmem-cu12 3.3.20"),
        ("error", "SONAME_UNRESOLVED", "libcudnn.so.9"),
        ("error", "SONAME_UNRESOLVED", "libcusparseLt.so.0"),
        ("error", "SONAME_UNRESOLVED", "libnccl.so.2"),
        ("error", "SONAME_UNRESOLVED", "libnvshmem_host.so.3"),
        ("error", "IMPORT_FAILED", "torch"),
    ]


def test_gutted_wheel_is_metadata_only_and_names_the_wheel_whose_uninstall_deleted_it():
    finding = only(diagnose(O.gutted()), "RECORD_MISSING_FILES", "nvidia-nvshmem-cu12 3.3.20")
    assert finding.as_dict() == {
        "code": "RECORD_MISSING_FILES", "severity": "error", "subject": "nvidia-nvshmem-cu12 3.3.20",
        "message": "nvidia-nvshmem-cu12 3.3.20: 3 of 3 files listed in RECORD are missing (metadata-only: only its "
                   "dist-info is left): 3 path(s), 2 of them shared libraries: libnvshmem_host.so.3, "
                   "nvshmem_bootstrap_mpi.so.3; the rest e.g. nvidia/nvshmem/include/nvshmem.h. nvidia-nvshmem-cu13 "
                   "installs the same paths; uninstalling it deletes these files.",
        "fix": "pip install --force-reinstall --no-deps 'nvidia-nvshmem-cu12==3.3.20' (or run cuda_venv_repair).",
        "details": {"missing": ["nvidia/nvshmem/include/nvshmem.h", "nvidia/nvshmem/lib/libnvshmem_host.so.3",
                                "nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3"], "count": 3},
    }


def test_gutted_unresolved_soname_names_who_needs_it_and_which_wheel_should_provide_it():
    finding = only(diagnose(O.gutted()), "SONAME_UNRESOLVED", "libcudnn.so.9")
    assert finding.as_dict() == {
        "code": "SONAME_UNRESOLVED", "severity": "error", "subject": "libcudnn.so.9",
        "message": "libcudnn.so.9, needed by torch/lib/libtorch_cuda.so (torch 2.9.1) (loaded when torch is imported), "
                   "is found nowhere. It should come from nvidia-cudnn-cu12 9.10.2.21 (nvidia/cudnn/lib/libcudnn.so.9, "
                   "missing on disk).",
        "fix": "pip install --force-reinstall --no-deps 'nvidia-cudnn-cu12==9.10.2.21' (or run cuda_venv_repair).",
        "details": {"needed_by": ["torch/lib/libtorch_cuda.so"],
                    "providers": ["nvidia-cudnn-cu12 9.10.2.21 (nvidia/cudnn/lib/libcudnn.so.9, missing on disk)"],
                    "loaded_at_import": True},
    }


def test_gutted_import_failure_carries_the_exact_error_and_lists_every_missing_library_at_once():
    finding = only(diagnose(O.gutted()), "IMPORT_FAILED")
    assert finding.message == "import torch fails: " + GUTTED_ERROR
    assert finding.fix == ("Provide every missing library at once: libcudnn.so.9, libcusparseLt.so.0, libnccl.so.2, "
                           "libnvshmem_host.so.3 (cuda_venv_repair does this).")
    assert finding.details["error"] == "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    assert finding.details["traceback"].endswith(GUTTED_ERROR + "\n")


def test_partner_installed_makes_the_fix_uninstall_it_first():
    obs = O.gutted(add=[dist("nvidia-nccl-cu13", "2.30.7", ["nvidia/nccl/include/nccl_device.h"])])
    finding = only(diagnose(obs), "RECORD_MISSING_FILES", "nvidia-nccl-cu12 2.27.5")
    assert finding.fix == ("pip uninstall nvidia-nccl-cu13 first, then pip install --force-reinstall --no-deps "
                           "'nvidia-nccl-cu12==2.27.5' (or run cuda_venv_repair).")
    assert finding.message.endswith(" nvidia-nccl-cu13 2.30.7 installs the same paths; uninstalling it deletes these files.")


def test_contaminated_incident_gives_exactly_these_findings():
    assert table(diagnose(O.contaminated())) == [
        ("error", "FILE_OWNERSHIP_CONFLICT", "nvidia-cudnn-cu12 9.10.2.21 & nvidia-cudnn-cu13 9.24.0.43"),
        ("error", "FILE_OWNERSHIP_CONFLICT", "nvidia-cusparselt-cu12 0.7.1 & nvidia-cusparselt-cu13 0.8.1"),
        ("error", "FILE_OWNERSHIP_CONFLICT", "nvidia-nccl-cu12 2.27.5 & nvidia-nccl-cu13 2.30.7"),
        ("error", "FILE_OWNERSHIP_CONFLICT", "nvidia-nvshmem-cu12 3.3.20 & nvidia-nvshmem-cu13 3.4.5"),
        ("error", "CUDA_MAJOR_MIXED", "12,13"),
        ("error", "RUNTIME_LIBRARY_MISMATCH", "cudnn"),
        ("error", "RUNTIME_LIBRARY_MISMATCH", "nccl"),
        ("warning", "CUDA_DIST_UNREQUIRED", "nvidia-cublas"),
        ("warning", "CUDA_DIST_UNREQUIRED", "nvidia-cudnn-cu13"),
        ("warning", "CUDA_DIST_UNREQUIRED", "nvidia-cusparselt-cu13"),
        ("warning", "CUDA_DIST_UNREQUIRED", "nvidia-nccl-cu13"),
        ("warning", "CUDA_DIST_UNREQUIRED", "nvidia-nvshmem-cu13"),
        ("info", "SONAME_UNRESOLVED", "optional transports"),
    ]


def test_contaminated_conflict_says_whose_bytes_are_on_disk():
    finding = only(diagnose(O.contaminated()), "FILE_OWNERSHIP_CONFLICT",
                   "nvidia-nccl-cu12 2.27.5 & nvidia-nccl-cu13 2.30.7")
    assert finding.message == (
        "nvidia-nccl-cu12 2.27.5 and nvidia-nccl-cu13 2.30.7 list the same 2 path(s), 1 of them shared libraries: "
        "libnccl.so.2; the rest e.g. nvidia/nccl/include/nccl.h in their RECORD. Uninstalling one deletes the other's "
        "files. The bytes on disk are nvidia-nccl-cu13 2.30.7's.")
    assert finding.details == {"owners": ["nvidia-nccl-cu12 2.27.5", "nvidia-nccl-cu13 2.30.7"],
                               "paths": ["nvidia/nccl/include/nccl.h", "nvidia/nccl/lib/libnccl.so.2"],
                               "on_disk": ["nvidia-nccl-cu13 2.30.7"]}


def test_contaminated_majors_and_contaminants():
    findings = diagnose(O.contaminated())
    mixed = only(findings, "CUDA_MAJOR_MIXED")
    assert mixed.details == {
        "12": ["nvidia-cublas-cu12 12.8.4.1", "nvidia-cuda-runtime-cu12 12.8.90", "nvidia-cudnn-cu12 9.10.2.21",
               "nvidia-cusparselt-cu12 0.7.1", "nvidia-nccl-cu12 2.27.5", "nvidia-nvshmem-cu12 3.3.20", "torch 2.9.1"],
        "13": ["nvidia-cublas 13.1.1.3", "nvidia-cudnn-cu13 9.24.0.43", "nvidia-cusparselt-cu13 0.8.1",
               "nvidia-nccl-cu13 2.30.7", "nvidia-nvshmem-cu13 3.4.5"]}
    cudnn = only(findings, "CUDA_DIST_UNREQUIRED", "nvidia-cudnn-cu13")
    assert cudnn.message == (
        "nvidia-cudnn-cu13 9.24.0.43 is a CUDA 13 wheel that nothing torch requires, and wrong for this venv: built for "
        "CUDA 13 (by its name) beside a CUDA 12 torch; installs 2 path(s) that nvidia-cudnn-cu12 9.10.2.21 also "
        "installs, e.g. nvidia/cudnn/lib/libcudnn.so.9, nvidia/cudnn/include/cudnn.h.")
    assert [e["kind"] for e in cudnn.details["evidence"]] == ["other_major", "collides"]
    assert only(findings, "CUDA_DIST_UNREQUIRED", "nvidia-cublas").message == (
        "nvidia-cublas 13.1.1.3 is a CUDA 13 wheel that nothing torch requires, and wrong for this venv: built for "
        "CUDA 13 (by its install path) beside a CUDA 12 torch.")


# --- runtime versions and the driver ----------------------------------------------------------------------------

def test_runtime_library_mismatch_from_the_probe_versions():
    findings = diagnose(O.healthy(probe=O.probe_ok({"torch": "2.9.1", "cuda": "12.8", "cudnn": 92400, "nccl": "2.27.5"})))
    assert table(findings) == [("error", "RUNTIME_LIBRARY_MISMATCH", "cudnn"), ("info", "SONAME_UNRESOLVED", "optional transports")]
    assert findings[0].as_dict() == {
        "code": "RUNTIME_LIBRARY_MISMATCH", "severity": "error", "subject": "cudnn",
        "message": "torch runs cudnn 92400 but requires nvidia-cudnn-cu12 9.10.2.21 (91002).",
        "fix": "Remove the colliding wheel, then force-reinstall nvidia-cudnn-cu12 without deps.",
        "details": {"reported": "92400", "expected": "91002", "distribution": "nvidia-cudnn-cu12"},
    }


@pytest.mark.parametrize("versions", [
    {"cudnn": 91002, "nccl": "2.27.5"},
    {"cudnn": None, "nccl": ""},  # a CPU process or a read that failed: nothing to compare
    {},
])
def test_matching_or_unknown_runtime_versions_are_no_finding(versions):
    assert table(diagnose(O.healthy(probe=O.probe_ok(versions)))) == [("info", "SONAME_UNRESOLVED", "optional transports")]


def test_library_loaded_from_outside_the_venv_is_a_warning():
    loaded = ["nvidia/cudnn/lib/libcudnn.so.9", "/usr/local/cuda-12.8/lib64/libcudart.so.12.8.90",
              "/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06", "/lib/x86_64-linux-gnu/libm.so.6"]
    probe = O.probe_ok({"cudnn": 91002}, loaded=loaded)
    finding = only(diagnose(O.healthy(probe=probe)), "RUNTIME_LIBRARY_MISMATCH")
    assert (finding.severity, finding.subject) == ("warning", "libcudart.so.12")
    assert finding.message == ("import torch loaded /usr/local/cuda-12.8/lib64/libcudart.so.12.8.90 from outside the venv "
                               "instead of nvidia-cuda-runtime-cu12 12.8.90 (nvidia/cuda_runtime/lib/libcudart.so.12).")
    assert finding.details == {"loaded": "/usr/local/cuda-12.8/lib64/libcudart.so.12.8.90"}


def test_driver_too_old_across_majors_is_an_error():
    obs = O.healthy(probe=O.probe_ok({"torch": "2.14.1", "cuda": "13.0"}), gpu=O.gpu("12.9", driver="575.51.03"))
    finding = only(diagnose(obs), "DRIVER_TOO_OLD")
    assert finding.as_dict() == {
        "code": "DRIVER_TOO_OLD", "severity": "error", "subject": "driver 575.51.03",
        "message": "The driver supports CUDA up to 12.9 but torch is built for CUDA 13.0: a CUDA 13 build needs driver "
                   "580 or newer.",
        "fix": "Upgrade the host's NVIDIA driver (>= 580) or install a build of torch for CUDA 12.9.",
        "details": {"max_cuda": "12.9", "needed": "13.0", "minimum_driver": "580"},
    }


def test_driver_too_old_within_a_major_is_a_warning():
    obs = O.healthy(probe=O.probe_ok({"torch": "2.9.1", "cuda": "12.8"}), gpu=O.gpu("12.7", driver="565.57.01"))
    finding = only(diagnose(obs), "DRIVER_TOO_OLD")
    assert finding.as_dict() == {
        "code": "DRIVER_TOO_OLD", "severity": "warning", "subject": "driver 565.57.01",
        "message": "The driver supports CUDA up to 12.7 and torch is built for CUDA 12.8: minor version compatibility "
                   "runs it, but what needs the newer minor may fail (PTX JIT of kernels built for 12.8, APIs added "
                   "after 12.7).",
        "fix": "Upgrade the host's NVIDIA driver to one that supports CUDA 12.8, or install a build of torch for CUDA 12.7.",
        "details": {"max_cuda": "12.7", "needed": "12.8", "minimum_driver": "525"},
    }
    assert is_healthy(diagnose(obs))


def test_driver_too_old_from_the_anchor_version_when_the_probe_has_no_cuda_version():
    obs = build([dist("torch", "2.14.1+cu130", ["torch/__init__.py"])], gpu=O.gpu("12.4"))
    assert only(diagnose(obs), "DRIVER_TOO_OLD").message == \
        "The driver supports CUDA up to 12.4 but torch is built for CUDA 13.0: a CUDA 13 build needs driver 580 or newer."


@pytest.mark.parametrize("gpu", [None, O.NO_GPU, O.gpu("13.0"), O.gpu("13.1"), replace(O.gpu("12.4"), max_cuda=None)],
                         ids=["not-gathered", "unavailable", "equal", "newer", "no-max-cuda"])
def test_no_driver_finding(gpu):
    obs = O.healthy(probe=O.probe_ok({"cuda": "13.0"}), gpu=gpu)
    assert "DRIVER_TOO_OLD" not in [f.code for f in diagnose(obs)]


def test_no_driver_finding_for_a_cpu_build():
    obs = build([dist("torch", "2.9.1+cpu", ["torch/__init__.py"])], probe=O.probe_ok({"cuda": None}), gpu=O.gpu("12.4"))
    assert table(diagnose(obs)) == []


# --- the anchor --------------------------------------------------------------------------------------------------

def test_anchor_not_installed_says_it_once():
    obs = build(O.cu12_support(), probe=O.probe_failed("ModuleNotFoundError: No module named 'torch'"))
    assert [e.name for e in obs.requirements] == ["torch"]  # the closure holds the missing anchor itself
    findings = diagnose(obs)
    assert table(findings) == [("error", "ANCHOR_NOT_INSTALLED", "torch")]
    assert findings[0].as_dict() == {
        "code": "ANCHOR_NOT_INSTALLED", "severity": "error", "subject": "torch",
        "message": "The anchor torch is not installed in %s; its requirement closure cannot be checked." % ROOT,
        "fix": "Set the anchor option to the package that owns this venv's CUDA wheels.",
    }


def test_anchor_required_through_a_root_is_still_a_requirement():
    obs = build([dist("vllm", "0.11.0", ["vllm/__init__.py"], ["torch==2.9.1"])], anchor="vllm")
    assert table(diagnose(obs)) == [("error", "REQUIREMENT_MISSING", "torch")]


# --- shared objects and the loader -----------------------------------------------------------------------------

def test_healthy_venv_only_reports_the_optional_plugin_as_info():
    findings = diagnose(O.healthy())
    assert table(findings) == [("info", "SONAME_UNRESOLVED", "optional transports")]
    assert findings[0].as_dict() == {
        "code": "SONAME_UNRESOLVED", "severity": "info", "subject": "optional transports",
        "message": "1 optional transport library (libmpi.so.40), needed by 1 plugin(s) not loaded when torch is imported "
                   "(nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3), is found nowhere: this machine has no such network "
                   "stack; only a job that selects that transport needs them.",
        "details": {"sonames": ["libmpi.so.40"], "needed_by": ["nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3"],
                    "loaded_at_import": False},
    }


def test_optional_transports_make_one_line_and_other_optional_sonames_their_own():
    plugins = {"nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3": [unresolved("libmpi.so.40"), unresolved("libpmix.so.2")],
               "nvidia/nvshmem/lib/nvshmem_transport_ucx.so.3": [unresolved("libucp.so.0"), unresolved("libucs.so.0")],
               "nvidia/cufile/lib/libcufile_rdma.so.1": [unresolved("libibverbs.so.1"), unresolved("libmlx5.so.1")],
               "nvidia/cusolver/lib/libcusolverMg.so.11": [unresolved("libcuda.so.1")]}
    findings = diagnose(O.healthy(other=plugins, probe=None))
    assert table(findings) == [("info", "SONAME_UNRESOLVED", "libcuda.so.1"),
                               ("info", "SONAME_UNRESOLVED", "optional transports")]
    assert findings[1].details["sonames"] == ["libibverbs.so.1", "libmlx5.so.1", "libmpi.so.40", "libpmix.so.2",
                                              "libucp.so.0", "libucs.so.0"]
    assert len(findings[1].details["needed_by"]) == 3


def test_a_soname_unresolved_at_import_is_an_error_and_not_repeated_as_info():
    graph = O.torch_graph({"libnccl.so.2": unresolved("libnccl.so.2")})
    other = {"nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3": [unresolved("libmpi.so.40"), unresolved("libnccl.so.2")]}
    findings = diagnose(O.healthy(import_graph=graph, other=other, probe=None))
    assert table(findings) == [("error", "SONAME_UNRESOLVED", "libnccl.so.2"), ("info", "SONAME_UNRESOLVED", "optional transports")]
    assert findings[0].message == (
        "libnccl.so.2, needed by torch/lib/libtorch_cuda.so (torch 2.9.1) (loaded when torch is imported), is found "
        "nowhere. It should come from nvidia-nccl-cu12 2.27.5 (nvidia/nccl/lib/libnccl.so.2).")


def test_a_bad_file_found_for_a_soname_is_unresolved_with_the_loaders_message():
    error = "%s/nvidia/nccl/lib/libnccl.so.2: file too short" % O.SITE
    graph = O.torch_graph({"libnccl.so.2": bad("libnccl.so.2", "nvidia/nccl/lib/libnccl.so.2", error)})
    finding = only(diagnose(O.healthy(import_graph=graph, probe=None)), "SONAME_UNRESOLVED", "libnccl.so.2")
    assert finding.severity == "error"
    assert finding.message == (
        "libnccl.so.2, needed by torch/lib/libtorch_cuda.so (torch 2.9.1) (loaded when torch is imported), cannot be "
        "loaded: %s. It should come from nvidia-nccl-cu12 2.27.5 (nvidia/nccl/lib/libnccl.so.2)." % error)


def _fallback_graph():
    graph = O.torch_graph()
    graph[TORCH_CUDA] = graph[TORCH_CUDA] + [
        found("libcurand.so.10", "/usr/local/cuda-12.8/targets/x86_64-linux/lib/libcurand.so.10", CACHE),
        found("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", CACHE),  # the driver: always the host's
        found("libgomp.so.1", "/usr/lib/x86_64-linux-gnu/libgomp.so.1", CACHE),
    ]
    return graph


def _nccl_on_ld_library_path():
    """Gone from the venv, found on LD_LIBRARY_PATH: a soname a wheel of the venv should provide."""
    graph = O.torch_graph({"libnccl.so.2": found("libnccl.so.2", "/opt/nccl/lib/libnccl.so.2", "ld_library_path")})
    return O.healthy(import_graph=graph, missing={"nvidia-nccl-cu12": ALL})


def _cudart_fallback_of_a_plugin():
    other = {"nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3": [
        found("libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so.12", CACHE)]}
    return O.healthy(other=other)


def test_fallback_outside_the_venv_is_a_warning_only_for_cuda_sonames():
    findings = diagnose(O.healthy(import_graph=_fallback_graph()))  # libm.so.6 and libc.so.6 come from the cache too
    assert table(findings) == [("warning", "SONAME_SYSTEM_FALLBACK", "libcurand.so.10"),
                               ("info", "SONAME_UNRESOLVED", "optional transports")]
    assert findings[0].fix is None  # no wheel of the venv lists it
    assert findings[0].details == {"resolved": "/usr/local/cuda-12.8/targets/x86_64-linux/lib/libcurand.so.10",
                                   "via": "cache", "needed_by": "torch/lib/libtorch_cuda.so"}


def test_fallback_of_a_soname_a_wheel_should_provide():
    finding = only(diagnose(_nccl_on_ld_library_path()), "SONAME_SYSTEM_FALLBACK")
    assert (finding.severity, finding.subject) == ("warning", "libnccl.so.2")
    assert finding.fix == "pip install --force-reinstall --no-deps 'nvidia-nccl-cu12==2.27.5' (or run cuda_venv_repair)."
    assert finding.details["via"] == "ld_library_path"


def test_fallback_for_an_object_not_loaded_at_import_is_info():
    finding = only(diagnose(_cudart_fallback_of_a_plugin()), "SONAME_SYSTEM_FALLBACK")
    assert (finding.severity, finding.subject) == ("info", "libcudart.so.12")
    assert "(via cache) for an object not loaded at import" in finding.message


@pytest.mark.parametrize("make, message", [
    (lambda: O.healthy(import_graph=_fallback_graph()),
     "libcurand.so.10, needed by torch/lib/libtorch_cuda.so (torch 2.9.1), is not found in the venv and resolves to "
     "/usr/local/cuda-12.8/targets/x86_64-linux/lib/libcurand.so.10 (via cache): a version skew waiting to happen."),
    (_nccl_on_ld_library_path,
     "libnccl.so.2, needed by torch/lib/libtorch_cuda.so (torch 2.9.1), is not found in the venv and resolves to "
     "/opt/nccl/lib/libnccl.so.2 (via ld library path); the venv should provide it from nvidia-nccl-cu12 2.27.5 "
     "(nvidia/nccl/lib/libnccl.so.2, missing on disk): a version skew waiting to happen."),
    (_cudart_fallback_of_a_plugin,
     "libcudart.so.12, needed by nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3 (nvidia-nvshmem-cu12 3.3.20), is not "
     "found in the venv and resolves to /usr/local/cuda/lib64/libcudart.so.12 (via cache) for an object not loaded at "
     "import; the venv should provide it from nvidia-cuda-runtime-cu12 12.8.90 (nvidia/cuda_runtime/lib/libcudart.so.12): "
     "a version skew waiting to happen."),
], ids=["cache", "ld-library-path-with-provider", "not-at-import"])
def test_fallback_message_is_one_sentence(make, message):
    assert only(diagnose(make()), "SONAME_SYSTEM_FALLBACK").message == message


def test_invalid_elf_is_an_error_when_loaded_at_import_and_a_warning_otherwise():
    elves = dict(O.stack_elves(), **{TORCH_CUDA: "invalid ELF header",
                                     "nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3": "file too short"})
    findings = diagnose(O.healthy(elves=elves, other={}, probe=None))
    assert table(findings) == [("error", "ELF_INVALID", "torch/lib/libtorch_cuda.so"),
                               ("warning", "ELF_INVALID", "nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3")]
    assert findings[0].message == "torch/lib/libtorch_cuda.so (torch 2.9.1) is not a loadable shared object: invalid ELF header."
    assert findings[0].fix == "pip install --force-reinstall --no-deps 'torch==2.9.1' (or run cuda_venv_repair)."


def test_invalid_elf_already_reported_as_modified_is_not_repeated():
    elves = dict(O.stack_elves(), **{"nvidia/nccl/lib/libnccl.so.2": "file too short"})
    obs = O.healthy(elves=elves, probe=None, modified={"nvidia-nccl-cu12": ["nvidia/nccl/lib/libnccl.so.2"]})
    assert table(diagnose(obs)) == [("error", "RECORD_MODIFIED_FILES", "nvidia-nccl-cu12 2.27.5"),
                                    ("info", "SONAME_UNRESOLVED", "optional transports")]


# --- files and ownership ------------------------------------------------------------------------------------------

def test_modified_files_in_hash_mode_name_the_overwriter():
    obs = O.contaminated(verify="hash", modified={label: ["nvidia/%s/lib/%s" % (fam, lib)]
                                                  for label, (fam, _a, _b, lib) in zip(CU12_LABELS, O.FAMILIES)})
    finding = only(diagnose(obs), "RECORD_MODIFIED_FILES", "nvidia-cudnn-cu12 9.10.2.21")
    assert finding.message == ("nvidia-cudnn-cu12 9.10.2.21: 1 file(s) differ from RECORD (sha256): 1 shared library: "
                               "libcudnn.so.9. They hold the bytes of nvidia-cudnn-cu13 9.24.0.43.")
    assert finding.fix == ("pip uninstall nvidia-cudnn-cu13 first, then pip install --force-reinstall --no-deps "
                           "'nvidia-cudnn-cu12==9.10.2.21' (or run cuda_venv_repair).")
    assert finding.details == {"modified": ["nvidia/cudnn/lib/libcudnn.so.9"], "count": 1,
                               "overwritten_by": ["nvidia-cudnn-cu13 9.24.0.43"]}


def test_modified_file_in_size_mode():
    obs = O.healthy(modified={"nvidia-nccl-cu12": ["nvidia/nccl/lib/libnccl.so.2"]}, probe=None)
    assert only(diagnose(obs), "RECORD_MODIFIED_FILES").message == (
        "nvidia-nccl-cu12 2.27.5: 1 file(s) differ from RECORD (size): 1 shared library: libnccl.so.2.")


def test_duplicate_distribution():
    dists = [dist("torch", "2.9.1", ["torch/__init__.py"]), dist("torch", "2.8.0", ["torch/version.py"])]
    finding = only(diagnose(build(dists)), "DUPLICATE_DISTRIBUTION")
    assert finding.message == ("2 dist-info folders exist for torch: torch-2.8.0.dist-info, torch-2.9.1.dist-info; "
                               "pip sees only one of them.")
    assert finding.details == {"dist_info": [O.SITE + "/torch-2.8.0.dist-info", O.SITE + "/torch-2.9.1.dist-info"]}


def test_invalid_dist_info_and_record_paths_outside_the_venv():
    dists = [dist("torch", "2.9.1", ["torch/__init__.py"]),
             dist("badcsv", "1.0", ["badcsv.py"], problems=("RECORD line 1: bad CSV: unexpected end of data",)),
             dist("escape", "1.0", ["../../../../../etc/passwd"])]
    obs = build(dists, unsafe=[("escape", "../../../../../etc/passwd", "RECORD entry '../../../../../etc/passwd' leaves the venv")])
    findings = diagnose(obs)
    assert table(findings) == [("error", "RECORD_PATH_OUTSIDE_VENV", "escape 1.0"), ("warning", "DIST_INFO_INVALID", "badcsv 1.0")]
    assert findings[0].message == ("escape 1.0 lists 1 path(s) outside the venv, which are never read, deleted or written: "
                                   "RECORD entry '../../../../../etc/passwd' leaves the venv.")
    assert findings[1].message == "badcsv-1.0.dist-info: RECORD line 1: bad CSV: unexpected end of data."
    assert findings[1].fix == "Reinstall it: pip install --force-reinstall --no-deps 'badcsv==1.0'."


def test_unusable_interpreter():
    obs = build([dist("torch", "2.9.1", ["torch/__init__.py"])], interp=O.interpreter(False, "[Errno 2] No such file or directory"))
    finding = only(diagnose(obs), "PYTHON_UNUSABLE")
    assert finding.subject == O.PYTHON
    assert finding.message == ("The venv's interpreter cannot run ([Errno 2] No such file or directory); nothing can be "
                               "imported from this venv.")


# --- requirements -------------------------------------------------------------------------------------------------

TOOLKIT = O.TOOLKIT_13


def test_requirement_missing_through_extras_says_pip_check_misses_it():
    torch = dist("torch", "2.14.1", ["torch/__init__.py"], ['cuda-toolkit[cublas,curand]==13.0.3; platform_system == "Linux"'])
    cublas = dist("nvidia-cublas", "13.1.1.3", ["nvidia/cu13/lib/libcublas.so.13"])
    finding = only(diagnose(build([torch, TOOLKIT, cublas])), "REQUIREMENT_MISSING")
    assert finding.as_dict() == {
        "code": "REQUIREMENT_MISSING", "severity": "error", "subject": "nvidia-curand",
        "message": 'nvidia-curand==10.4.0.35.*; extra == "curand" (required by torch <- cuda-toolkit[cublas,curand]) is '
                   "not installed; pip check does not see requirements reached through extras.",
        "fix": "pip install --no-deps 'nvidia-curand==10.4.0.35.*'",
        "details": {"requirement": 'nvidia-curand==10.4.0.35.*; extra == "curand"',
                    "chain": ["torch", "cuda-toolkit[cublas,curand]"]},
    }


def test_requirement_version_mismatch():
    torch = dist("torch", "2.9.1", ["torch/__init__.py"], ["nvidia-nccl-cu12==2.27.5" + O.LINUX])
    nccl = dist("nvidia-nccl-cu12", "2.26.2", ["nvidia/nccl/lib/libnccl.so.2"])
    finding = only(diagnose(build([torch, nccl])), "REQUIREMENT_VERSION_MISMATCH")
    assert finding.message == "nvidia-nccl-cu12 2.26.2 is installed but torch requires nvidia-nccl-cu12==2.27.5" + O.LINUX + "."
    assert finding.fix == "pip install --no-deps 'nvidia-nccl-cu12==2.27.5'"


def test_a_consumer_on_the_anchors_major_whose_requirements_hold_is_a_neighbour_not_a_finding():
    vision = dist("torchvision", "0.24.1", ["torchvision/_C.so"], ["numpy", "torch (==2.9.1)"])
    plugin = dist("jax-cuda12-plugin", "0.10.2", ["jax_plugins/xla_cuda12/__init__.py"],
                  ["jax-cuda12-pjrt==0.10.2", 'nvidia-cudnn-cu12<10.0,>=9.8; sys_platform == "linux" and extra == "with-cuda"'])
    obs = O.healthy(add=[vision, plugin], probe=None, other={}, elves={"torchvision/_C.so": elf(None, ["libcudart.so.12"])})
    assert [f for f in diagnose(obs) if f.code in ("CUDA_DIST_UNREQUIRED", "CONTAMINATION_SOURCE")] == []


def test_a_consumer_requiring_another_anchor_is_a_warning_naming_the_evidence():
    kernel = dist("sglang-kernel", "0.4.10", ["sglang_kernel/__init__.py"], ["torch==2.14.1"])
    finding = only(diagnose(O.healthy(add=[kernel], probe=None, other={})), "CUDA_DIST_UNREQUIRED")
    assert (finding.severity, finding.subject) == ("warning", "sglang-kernel")
    assert finding.message == ("sglang-kernel 0.4.10 is a CUDA consumer that nothing torch requires, and wrong for this "
                               "venv: requires torch==2.14.1; torch 2.9.1 is installed.")
    assert finding.details == {"cuda_major": None, "held_by": [], "harmless": None, "replacement": None,
                               "evidence": [{"kind": "requirement_conflict",
                                             "text": "requires torch==2.14.1; torch 2.9.1 is installed"}]}


def test_import_failed_by_timeout_and_by_signal():
    timed_out = O.healthy(probe=O.probe_failed(None, returncode=None, timed_out=True), probe_timeout=30.0)
    assert only(diagnose(timed_out), "IMPORT_FAILED").message == "import torch fails: timed out after 30 s"
    killed = O.healthy(probe=O.probe_failed(None, returncode=-11, signal="SIGSEGV"))
    assert only(diagnose(killed), "IMPORT_FAILED").message == "import torch fails: the interpreter died with SIGSEGV"
    assert only(diagnose(killed), "IMPORT_FAILED").fix is None  # nothing unresolved to name


def test_probe_that_did_not_run_is_no_finding():
    obs = O.healthy(probe=replace(O.probe_failed("x"), ran=False))
    assert "IMPORT_FAILED" not in [f.code for f in diagnose(obs)]


def test_a_moved_venv_is_info_naming_where_it_was_and_its_rewritten_scripts():
    obs = O.healthy()
    torch = next(d for d in obs.distributions if d.key == "torch")
    scripts = ScriptCheck({torch.dist_info: (ROOT + "/bin/torchrun", ROOT + "/bin/torchfrtrace")}, (), ("/old/train",))
    finding = only(diagnose(replace(obs, scripts=scripts)), "VENV_MOVED")
    assert (finding.severity, finding.subject, finding.fix) == ("info", ROOT, None)
    assert finding.message == ("The venv was moved from /old/train to /venvs/train: 2 console script(s) differ from RECORD "
                               "only in a shebang that names this venv's interpreter (torchfrtrace, torchrun); nothing "
                               "is damaged.")
    assert finding.details == {"scripts": [ROOT + "/bin/torchfrtrace", ROOT + "/bin/torchrun"], "former_roots": ["/old/train"]}


def test_diagnose_is_pure():
    obs = O.contaminated()
    before = repr(obs)
    assert table(diagnose(obs)) == table(diagnose(obs))
    assert repr(obs) == before


MIXED_CUDNN = ("a mixed cuDNN fails with SUBLIBRARY_VERSION_MISMATCH at the first convolution or falls back silently to "
               "slower kernels.")


@pytest.mark.parametrize("version, beside, same, severity, tail", [
    ("9.24.0", None, False, "error", " Two builds of cuDNN in one process (9.10.2.21 in the venv, 9.24.0 on LD_LIBRARY_PATH): "
     + MIXED_CUDNN),
    ("9.24.0", "libcudnn_ops.so.9.24.0", False, "error", " Two builds of cuDNN in one process (9.10.2.21 in the venv, 9.24.0 "
     "on LD_LIBRARY_PATH): " + MIXED_CUDNN),
    (None, None, False, "error", " Two builds of cuDNN in one process (9.10.2.21 in the venv, version unknown on "
     "LD_LIBRARY_PATH; their bytes differ): " + MIXED_CUDNN),
    ("9.10.2", None, False, "error", " Two builds of cuDNN in one process (9.10.2.21 in the venv, 9.10.2 on LD_LIBRARY_PATH; "
     "their bytes differ): " + MIXED_CUDNN),
    (None, None, True, "info", " Both hold the same bytes: harmless while they do."),
])
def test_a_venv_library_taken_over_by_ld_library_path_is_an_error_when_builds_differ(version, beside, same, severity, tail):
    ours = O.sp("nvidia/cudnn/lib/libcudnn.so.9")
    theirs = "/opt/cudnn/lib/libcudnn.so.9"
    shadow = Shadowed("libcudnn.so.9", O.sp("torch/lib/libtorch_cuda.so"), True, theirs, "/opt/cudnn/lib", (ours,),
                      version, same, beside)
    findings = [f for f in diagnose(replace(O.healthy(), shadowed={"libcudnn.so.9": shadow}))
                if f.code in ("SONAME_SHADOWED", "SONAME_SYSTEM_FALLBACK")]
    assert table(findings) == [(severity, "SONAME_SHADOWED", "libcudnn.so.9")]
    assert findings[0].message == (
        "libcudnn.so.9 (cuDNN) is in the venv (nvidia/cudnn/lib/libcudnn.so.9 of nvidia-cudnn-cu12 9.10.2.21) but "
        "LD_LIBRARY_PATH comes first: the loader takes /opt/cudnn/lib/libcudnn.so.9 (%s%s) for torch/lib/libtorch_cuda.so "
        "(torch 2.9.1), loaded at import.%s" % (version or "version unknown", ", as %s beside it says" % beside if beside else "",
                                                tail))
    assert findings[0].fix.startswith("Drop /opt/cudnn/lib from LD_LIBRARY_PATH for this venv's processes")
    assert (findings[0].details["resolved_version"], findings[0].details["resolved_version_from"]) == (version, beside)


@pytest.mark.parametrize("soname, path, version, severity, tail", [
    # cuBLAS and cuBLASLt come from one build: other bytes of either are an error, versions known or not.
    ("libcublas.so.12", "nvidia/cublas/lib/libcublas.so.12", None, "error", " Two builds of cuBLAS in one process "
     "(12.8.4.1 in the venv, version unknown on LD_LIBRARY_PATH; their bytes differ): libcublas calls into the libcublasLt "
     "of its own release; another build of either breaks the pair."),
    # NCCL has one library: other bytes without another version are a warning, another version an error.
    ("libnccl.so.2", "nvidia/nccl/lib/libnccl.so.2", None, "warning", " The two files differ: a version skew waiting to happen."),
    ("libnccl.so.2", "nvidia/nccl/lib/libnccl.so.2", "2.30.7", "error", " Two builds of NCCL in one process (2.27.5 in the "
     "venv, 2.30.7 on LD_LIBRARY_PATH): a version skew."),
])
def test_only_families_built_as_one_make_other_bytes_an_error(soname, path, version, severity, tail):
    shadow = Shadowed(soname, O.sp("torch/lib/libtorch_cuda.so"), True, "/opt/cuda/lib/" + soname, "/opt/cuda/lib",
                      (O.sp(path),), version, False)
    [finding] = [f for f in diagnose(replace(O.healthy(), shadowed={soname: shadow})) if f.code == "SONAME_SHADOWED"]
    assert (finding.severity, finding.subject) == (severity, soname)
    assert finding.message.endswith(", loaded at import." + tail)


def test_two_kept_distributions_pinning_one_wheel_differently_is_one_finding_naming_both_pins():
    """torch 2.9.1 pins nvidia-cudnn-cu12==9.10.2.21 (installed); a framework the repair keeps pins 9.8.0.87."""
    framework = dist("my-framework", "1.0", ["my_framework/__init__.py"], ["nvidia-cudnn-cu12==9.8.0.87", "numpy"])
    findings = [f for f in diagnose(O.healthy(add=[framework], probe=None, other={}))
                if f.code == "REQUIREMENT_PINS_CONFLICT"]
    assert [(f.severity, f.subject, f.details) for f in findings] == [("warning", "nvidia-cudnn-cu12", {
        "declared": "nvidia-cudnn-cu12==9.10.2.21", "required_by": "torch",
        "others": ["my-framework 1.0 requires nvidia-cudnn-cu12==9.8.0.87"]})]
    assert findings[0].message == (
        "nvidia-cudnn-cu12 9.10.2.21 is installed as torch asks (nvidia-cudnn-cu12==9.10.2.21); my-framework 1.0 "
        "requires nvidia-cudnn-cu12==9.8.0.87: these pins cannot both hold, and the repair keeps the declared one.")
    assert make_plan(O.healthy(add=[framework], probe=None, other={}), findings, DesiredState()).empty
