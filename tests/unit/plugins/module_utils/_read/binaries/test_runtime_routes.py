# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for runtime_routes: libraries found through the anchor's import and through cuda-pathfinder, on real ELF
files compiled here, checked against the real loader where a real process decides."""

from __future__ import annotations

import os

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import locate_entries, read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import read_elf
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import LoaderConfig, simulate_load
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import SharedObject
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.runtime_routes import resolve_others
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import build_so, real_load, requires_gcc

MARKERS = {"python_version": "3.12", "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
           "os_name": "posix", "implementation_name": "cpython", "python_full_version": "3.12.3",
           "platform_python_implementation": "CPython", "platform_release": "", "platform_version": "",
           "implementation_version": "3.12.3"}
CONFIG = LoaderConfig(ld_library_path=(), cache={}, default_dirs=(), lib_token="lib/x86_64-linux-gnu",
                      platform_token="x86_64")


def _site(tmp_path):
    """A site-packages with torch, torchvision and cupy laid out as the real ones link."""
    site = str(tmp_path / "site-packages")
    libs = {
        "torch/lib/libtorch.so": dict(soname="libtorch.so", needed=("libcudart.so.12",), rpath="$ORIGIN/../../nvidia/cuda_runtime/lib"),
        "torch/_C.so": dict(needed=("libtorch.so",), rpath="$ORIGIN/lib"),
        "nvidia/cuda_runtime/lib/libcudart.so.12": dict(soname="libcudart.so.12"),
        "nvidia/cublas/lib/libcublas.so.12": dict(soname="libcublas.so.12"),
        "torchvision/_C.so": dict(needed=("libtorch.so", "libcudart.so.12")),  # no search path reaches torch/lib
        "cupy/_core/core.so": dict(needed=("libcublas.so.12",)),  # no search path: cuda-pathfinder loads it
        "loner/ext.so": dict(needed=("libcublas.so.12",)),  # requires neither torch nor the pathfinder
        # torchaudio 2.11 lists no torch requirement, but an object needing libtorch.so loads only after torch's import
        "audio211/_ext.so": dict(needed=("libtorch.so", "libcudart.so.12")),
        # torchaudio's Python code loads its own libtorchaudio.so by full path before the extension that needs it
        "torchaudio/lib/libtorchaudio.so": dict(soname="libtorchaudio.so"),
        "torchaudio/lib/_torchaudio.so": dict(needed=("libtorchaudio.so", "libtorch.so")),
    }
    data = {}
    for rel, args in libs.items():
        path = build_so(os.path.join(site, rel), **args)
        with open(path, "rb") as handle:
            data[rel] = handle.read()
    owners = {"torch": ("2.9.1", ["torch/lib/libtorch.so", "torch/_C.so"], ["nvidia-cuda-runtime-cu12"]),
              "nvidia-cuda-runtime-cu12": ("12.8.90", ["nvidia/cuda_runtime/lib/libcudart.so.12"], []),
              "nvidia-cublas-cu12": ("12.8.4.1", ["nvidia/cublas/lib/libcublas.so.12"], []),
              "torchvision": ("0.24.1", ["torchvision/_C.so"], ["numpy", "torch (==2.9.1)"]),
              "cupy-cuda12x": ("14.2.0", ["cupy/_core/core.so"],
                               ["cuda-pathfinder==1.*,>=1.3.4", 'cuda-toolkit[cublas]==12.*; extra == "ctk"']),
              "loner": ("1.0", ["loner/ext.so"], ['torch; extra == "gpu"']),
              "audio211": ("2.11.0", ["audio211/_ext.so"], []),
              "torchaudio": ("2.9.1", ["torchaudio/lib/libtorchaudio.so", "torchaudio/lib/_torchaudio.so"], ["torch==2.9.1"])}
    for name, (version, files, requires) in owners.items():
        make_dist(site, name, version, {rel: data[rel] for rel in files}, requires)
    return site


@requires_gcc
def test_the_anchors_import_and_cuda_pathfinder_resolve_what_their_users_need(tmp_path):
    site = _site(tmp_path)
    dists = read_distributions((site,))
    locations = locate_entries(dists, str(tmp_path))
    objects = {path: SharedObject(path, entry.path, dist, read_elf(path), None)
               for dist in dists for entry, path, _problem in locations[dist.dist_info] if path.endswith(".so") or ".so." in path}
    graph = simulate_load([os.path.join(site, "torch/_C.so")], CONFIG)
    routes = resolve_others(objects, graph, CONFIG, "torch", MARKERS)
    table = {os.path.relpath(path, site): [(r.soname, os.path.relpath(r.path, site) if r.path else None, r.via)
                                           for r in results] for path, results in routes.items()}
    assert table == {
        "torchvision/_C.so": [("libtorch.so", "torch/lib/libtorch.so", "anchor_import"),
                              ("libcudart.so.12", "nvidia/cuda_runtime/lib/libcudart.so.12", "anchor_import")],
        "cupy/_core/core.so": [("libcublas.so.12", "nvidia/cublas/lib/libcublas.so.12", "cuda_pathfinder")],
        "loner/ext.so": [("libcublas.so.12", None, "missing")],
        "audio211/_ext.so": [("libtorch.so", "torch/lib/libtorch.so", "anchor_import"),
                             ("libcudart.so.12", "nvidia/cuda_runtime/lib/libcudart.so.12", "anchor_import")],
        "nvidia/cublas/lib/libcublas.so.12": [],
        "torchaudio/lib/libtorchaudio.so": [],
        "torchaudio/lib/_torchaudio.so": [("libtorchaudio.so", "torchaudio/lib/libtorchaudio.so", "own_package"),
                                          ("libtorch.so", "torch/lib/libtorch.so", "anchor_import")],
    }


@requires_gcc
def test_the_real_loader_agrees_torchvision_loads_only_after_torch(tmp_path):
    site = _site(tmp_path)
    vision, torch_c = os.path.join(site, "torchvision/_C.so"), os.path.join(site, "torch/_C.so")
    errors, _mapped = real_load([vision])
    assert errors and "libtorch.so: cannot open shared object file" in errors[0]
    errors, mapped = real_load([torch_c, vision])
    assert errors == []
    assert os.path.realpath(os.path.join(site, "torch/lib/libtorch.so")) in {os.path.realpath(p) for p in mapped}
