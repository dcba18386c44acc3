# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for cuda_knowledge: CUDA majors of real wheel layouts, runtime version encodings, soname table."""

from __future__ import annotations

import ast
import fnmatch
import json
import os

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))

LINUX = '; platform_system == "Linux" and platform_machine == "x86_64"'


# --- cuda_major: the evidence order (name, install path, soname, version, dependency) -------------------------

@pytest.mark.parametrize("key, version, paths, provided, requires, expected", [
    # the -cuNN suffix wins over everything else
    ("nvidia-cudnn-cu12", "9.10.2.21", ["nvidia/cudnn/lib/libcudnn.so.9"], ["libcudnn.so.9"], ["nvidia-cublas-cu12"],
     (12, "name")),
    ("nvidia-cudnn-cu13", "9.24.0.43", ["nvidia/cudnn/lib/libcudnn.so.9"], ["libcudnn.so.9"], ["nvidia-cublas"],
     (13, "name")),
    # versioned by its own soname (12.x) yet a CUDA 13 wheel: the install folder says so
    ("nvidia-cusparse", "12.6.3.3", ["nvidia/cu13/include/cusparse.h", "nvidia/cu13/lib/libcusparse.so.12"],
     ["libcusparse.so.12"], ["nvidia-nvjitlink"], (13, "install path")),
    # the same wheel's soname alone is no evidence: libcusparse.so.12 is not a CUDA major
    ("nvidia-cusparse", "12.6.3.3", [], ["libcusparse.so.12"], [], (None, None)),
    # cuBLAS 13 at its real path, then with only its soname to go on
    ("nvidia-cublas", "13.1.1.3", ["nvidia/cu13/lib/libcublas.so.13"], ["libcublas.so.13"], ["nvidia-cuda-nvrtc"],
     (13, "install path")),
    ("nvidia-cublas", "13.1.1.3", [], ["libcublas.so.13", "libcublasLt.so.13"], [], (13, "soname libcublas.so.13")),
    # a file-less meta-package versioned by CUDA
    ("cuda-toolkit", "13.0.3", ["cuda_toolkit-13.0.3.dist-info/METADATA"], [], [], (13, "version")),
    ("cuda-toolkit", "13.0.3.0", [], [], [], (13, "version")),
    # a consumer: only its requirements tell
    ("my-kernels", "0.4.0", ["my_kernels/__init__.py"], [],
     ["numpy>=1.26", "nvidia-cuda-runtime-cu12==12.8.90" + LINUX], (12, "dependency nvidia-cuda-runtime-cu12")),
    ("my-kernels", "0.4.0", [], [], ["nvidia_cuda_runtime_cu12 (>=12.8)"], (12, "dependency nvidia-cuda-runtime-cu12")),
    ("my-kernels", "0.4.0", [], [], ["cupy-cuda12x>=13"], (12, "dependency cupy-cuda12x")),  # a known consumer
    ("my-kernels", "0.4.0", [], [], ["other-kernels-cu13"], (None, None)),  # neither nvidia-*/cuda-* nor known
    # no evidence at all
    ("numpy", "2.3.1", ["numpy/__init__.py"], [], [], (None, None)),
    # a version major only counts for families versioned by CUDA
    ("nvidia-nccl", "2.27.5", [], [], [], (None, None)),
])
def test_cuda_major(key, version, paths, provided, requires, expected):
    assert cuda.cuda_major(key, version, paths, provided, requires) == expected


@pytest.mark.parametrize("key, expected", [
    ("nvidia-cudnn-cu12", 12), ("nvidia-nccl-cu13", 13), ("cupy-cuda12x", 12), ("jax-cuda12-plugin", 12),
    ("jax-cuda13-pjrt", 13), ("tensorrt-cu12", 12),
    ("torch", None), ("nvidia-cublas", None), ("cuda-toolkit", None),
])
def test_name_major(key, expected):
    assert cuda.name_major(key) == expected


@pytest.mark.parametrize("key, expected", [("nvidia-dali-cuda120", 12), ("nvidia-dali-cuda110", 11)])
def test_name_major_reads_major_and_minor_suffixes(key, expected):
    assert cuda.name_major(key) == expected


@pytest.mark.parametrize("needed, expected", [
    (["libc.so.6", "libcudart.so.12", "libcublas.so.13"], 12),
    (["libnvJitLink.so.13"], 13),
    (["libcudnn.so.9", "libnccl.so.2", "libcusparse.so.12"], None),  # their numbers are not CUDA majors
    ([], None),
])
def test_needed_major(needed, expected):
    assert cuda.needed_major(needed) == expected


# --- runtime versions ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, version, expected", [
    ("nvidia-cudnn-cu12", "9.10.2.21", "91002"),
    ("nvidia-cudnn-cu13", "9.24.0.43", "92400"),
    ("nvidia-cudnn-cu12", "8.9.7.29", "8907"),  # cuDNN 8 encodes major*1000
    ("nvidia-nccl-cu12", "2.27.5", "2.27.5"),
    ("nvidia-nccl-cu13", "2.30.7", "2.30.7"),
    ("nvidia-nccl-cu12", "2.21", "2.21.0"),
    ("nvidia-cublas-cu12", "12.8.4.1", None),
])
def test_encode_runtime_version(key, version, expected):
    assert cuda.encode_runtime_version(key, version) == expected


# --- the colliding families and the soname table --------------------------------------------------------------

@pytest.mark.parametrize("key, partner", [
    ("nvidia-cudnn-cu12", "nvidia-cudnn-cu13"), ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12"),
    ("nvidia-cusparselt-cu12", "nvidia-cusparselt-cu13"), ("nvidia-cusparselt-cu13", "nvidia-cusparselt-cu12"),
    ("nvidia-nccl-cu12", "nvidia-nccl-cu13"), ("nvidia-nccl-cu13", "nvidia-nccl-cu12"),
    ("nvidia-nvshmem-cu12", "nvidia-nvshmem-cu13"), ("nvidia-nvshmem-cu13", "nvidia-nvshmem-cu12"),
    ("nvidia-cublas-cu12", None), ("nvidia-cublas", None), ("nvidia-cudnn-cu11", None), ("torch", None),
])
def test_colliding_partner(key, partner):
    assert cuda.colliding_partner(key) == partner


@pytest.mark.parametrize("soname, expected", [
    ("libcudart.so.12", True), ("libcudart.so.13", True), ("libcublas.so.13", True), ("libcublasLt.so.12", True),
    ("libcudnn.so.9", True), ("libcudnn_graph.so.9", True), ("libcudnn_engines_precompiled.so.9", True),
    ("libcufft.so.11", True), ("libcurand.so.10", True), ("libcusolver.so.11", True), ("libcusolverMg.so.11", True),
    ("libcusparse.so.12", True), ("libcusparseLt.so.0", True), ("libnccl.so.2", True),
    ("libnvshmem_host.so.3", True), ("libnvrtc.so.13", True),
    ("libnvJitLink.so.13", True), ("libcupti.so.12", True), ("libnvToolsExt.so.1", True),
    ("libcufile.so.0", True), ("libcufile_rdma.so.1", True), ("libcuda.so.1", True), ("libcuda.so", True),
    ("libnvidia-ml.so.1", True),
    ("libc.so.6", False), ("libm.so.6", False), ("libstdc++.so.6", False), ("libgomp.so.1", False),
    ("libtorch_cuda.so", False), ("libc10_cuda.so", False), ("libmpi.so.40", False), ("libz.so.1", False),
    ("nvshmem_bootstrap_mpi.so.3", False), ("libcudnn.so.9.txt", False), ("libcudart.a", False),
])
def test_is_cuda_soname(soname, expected):
    assert cuda.is_cuda_soname(soname) is expected


@pytest.mark.parametrize("soname", ["libnvrtc-builtins.so.13.0", "libnvrtc-builtins.alt.so.13.0", "libnvrtc.alt.so.13"])
def test_is_cuda_soname_knows_nvrtc_builtins(soname):
    assert cuda.is_cuda_soname(soname) is True


@pytest.mark.parametrize("key, expected", [
    ("nvidia-cudnn-cu12", True), ("nvidia-cublas", True), ("cuda-toolkit", True), ("cuda-bindings", True),
    ("torch", False), ("cupy-cuda12x", False), ("sgl-kernel", False),
])
def test_is_cuda_distribution(key, expected):
    assert cuda.is_cuda_distribution(key) is expected


def test_driver_sonames_are_cuda_sonames():
    assert all(cuda.is_cuda_soname(s) for s in cuda.DRIVER_SONAMES)


def _standin_torch_preload():
    """The cuda_libs list of the stand-in torch's _preload_cuda_deps (a copy of the real torch/__init__.py's)."""
    with open(os.path.join(ROOT, "tests", "standin", "payload", "torch", "__init__.py.in")) as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_preload_cuda_deps":
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and stmt.targets[0].id == "cuda_libs":
                    return tuple(ast.literal_eval(stmt.value))
    raise AssertionError("no cuda_libs in the stand-in torch's _preload_cuda_deps")


def test_torch_preload_is_torchs_own_list():
    """The same libraries in the same order as torch's _preload_cuda_deps (cublasLt before cublas)."""
    assert cuda.TORCH_PRELOAD == _standin_torch_preload()


@pytest.mark.parametrize("layout", ["torch-2.9.1-cu128.json", "torch-2.14.1-cu130.json"])
def test_every_torch_preload_glob_finds_its_library_in_the_measured_wheels(layout):
    """Each (folder, glob) matches a library the real wheels install (tests/standin/data/measured): in its own
    folder (CUDA 12) or in CUDA 13's shared nvidia/cu13 (cudnn, cusparselt, nccl, nvshmem keep their own)."""
    with open(os.path.join(ROOT, "tests", "standin", "data", "measured", layout)) as handle:
        paths = [f["path"] for dist in json.load(handle)["distributions"] for f in dist["elf_files"]]
    missing = [(folder, pattern) for folder, pattern in cuda.TORCH_PRELOAD
               if not any(fnmatch.filter(paths, "nvidia/%s/lib/%s" % (sub, pattern))
                          for sub in (folder,) + cuda.TORCH_PRELOAD_SHARED_FOLDERS)]
    assert missing == []


@pytest.mark.parametrize("soname, family, prefix", [
    ("libcudnn_graph.so.9", "cuDNN", "libcudnn"), ("libcublasLt.so.12", "cuBLAS", "libcublas"),
    ("libcusparseLt.so.0", "cuSPARSELt", "libcusparseLt."), ("libcusparse.so.12", "cuSPARSE", "libcusparse."),
    ("libtorch_cuda.so", None, None),
])
def test_a_sonames_family_and_the_prefix_its_members_share(soname, family, prefix):
    assert (cuda.library_family(soname), cuda.family_prefix(soname)) == (family, prefix)
    assert (family in cuda.ONE_BUILD_FAMILIES) == (family in ("cuDNN", "cuBLAS"))


@pytest.mark.parametrize("version, expected", [("2.9.1+cu128", "12.8"), ("2.14.1+cu130", "13.0"), ("2.9.1", None),
                                               ("2.9.1+cpu", None), ("2.9.1+cu12", None), ("1.0+cu118", "11.8")])
def test_local_cuda_version_reads_the_local_label(version, expected):
    assert cuda.local_cuda_version(version) == expected
