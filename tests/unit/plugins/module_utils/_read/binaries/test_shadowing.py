# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for shadowing: a library the venv has, found first on LD_LIBRARY_PATH, with what tells the copies apart."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import LoaderConfig, Resolution, simulate_load
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.shadowing import Shadowed, file_version, find_shadowed
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import build_so, real_load, requires_gcc

GRAPH = "libcudnn_graph.so.9"


def _tree(tmp_path, theirs=b"other build", ours=b"venv build", real_name="libcudnn_graph.so.9.24.0"):
    venv_lib = tmp_path / "venv" / "lib" / "nvidia" / "cudnn" / "lib"
    venv_lib.mkdir(parents=True)
    (venv_lib / GRAPH).write_bytes(ours)
    other = tmp_path / "opt" / "cudnn" / "lib"
    other.mkdir(parents=True)
    (other / real_name).write_bytes(theirs)
    if real_name != GRAPH:
        (other / GRAPH).symlink_to(real_name)
    return str(tmp_path / "venv"), str(venv_lib / GRAPH), str(other / GRAPH)


def test_a_venv_library_found_first_on_ld_library_path_is_shadowed_with_the_other_version(tmp_path):
    root, ours, theirs = _tree(tmp_path)
    requester = os.path.join(os.path.dirname(ours), "libcudnn_ops.so.9")
    found = find_shadowed([(requester, Resolution(GRAPH, theirs, "ld_library_path", None, ()), False)], root,
                          {GRAPH: (ours,)})
    assert found == {GRAPH: Shadowed(GRAPH, requester, False, theirs, os.path.dirname(theirs), (ours,), "9.24.0", False)}


def test_same_bytes_are_told_apart_from_another_build(tmp_path):
    root, ours, theirs = _tree(tmp_path, theirs=b"same", ours=b"same", real_name=GRAPH)
    found = find_shadowed([("x", Resolution(GRAPH, theirs, "ld_library_path", None, ()), True)], root, {GRAPH: (ours,)})
    assert (found[GRAPH].same_bytes, found[GRAPH].resolved_version) == (True, None)


def test_only_ld_library_path_over_a_copy_the_venv_has_on_disk_counts(tmp_path):
    root, ours, theirs = _tree(tmp_path)
    res = Resolution(GRAPH, theirs, "ld_library_path", None, ())
    assert find_shadowed([("x", Resolution(GRAPH, theirs, "cache", None, ()), True)], root, {GRAPH: (ours,)}) == {}
    assert find_shadowed([("x", res, True)], root, {}) == {}  # not the venv's: a system fallback
    os.unlink(ours)
    assert find_shadowed([("x", res, True)], root, {GRAPH: (ours,)}) == {}  # gone from the venv: a fallback too
    inside = Resolution(GRAPH, os.path.join(root, "lib", GRAPH), "ld_library_path", None, ())
    assert find_shadowed([("x", inside, True)], root, {GRAPH: (ours,)}) == {}


def test_file_version_from_the_real_file_name_only(tmp_path):
    _root, _ours, theirs = _tree(tmp_path)
    assert file_version(theirs) == "9.24.0"
    assert file_version("/nowhere/libcudnn_graph.so.9") is None
    assert file_version("/nowhere/libnccl.so.2.27.5") == "2.27.5"


def test_the_import_graph_s_resolution_comes_first_and_stays(tmp_path):
    root, ours, theirs = _tree(tmp_path)
    res = Resolution(GRAPH, theirs, "ld_library_path", None, ())
    first = os.path.join(os.path.dirname(ours), "libcudnn_ops.so.9")
    later = os.path.join(root, "lib", "other_ext.so")
    found = find_shadowed([(first, res, True), (later, res, False)], root, {GRAPH: (ours,)})
    assert (found[GRAPH].needed_by, found[GRAPH].at_import) == (first, True)


def _cudnn_folders(tmp_path, beside):
    """A venv's cuDNN (libcudnn.so.9, DT_RUNPATH $ORIGIN, needing libcudnn_graph.so.9) and another install's folder:
    a plain libcudnn_graph.so.9 of another build, and ``beside`` (versioned files of that install), all built by gcc."""
    venv_lib = tmp_path / "venv" / "lib" / "nvidia" / "cudnn" / "lib"
    graph = build_so(venv_lib / GRAPH, soname=GRAPH)
    cudnn = build_so(venv_lib / "libcudnn.so.9", soname="libcudnn.so.9", needed=(GRAPH,), runpath="$ORIGIN")
    other = tmp_path / "opt" / "cudnn" / "lib"
    build_so(other / GRAPH, soname=GRAPH, pad_bytes=4096)
    for name in beside:
        build_so(other / name, soname=name.split(".so.")[0] + ".so." + name.split(".so.")[1].split(".")[0])
    return str(tmp_path / "venv"), cudnn, graph, str(other)


@requires_gcc
@pytest.mark.parametrize("beside, version, version_from", [
    (["libcudnn_ops.so.9.24.0", "libcudnn.so.8.9.7"], "9.24.0", "libcudnn_ops.so.9.24.0"),  # another major says nothing
    (["libcudnn_ops.so.9.24.0", "libcudnn_cnn.so.9.24.0"], "9.24.0", "libcudnn_cnn.so.9.24.0"),
    (["libcudnn_ops.so.9.24.0", "libcudnn_cnn.so.9.10.2"], None, None),  # they disagree
    (["libnccl.so.9.24.0"], None, None),  # another family
])
def test_the_real_loader_takes_the_other_build_and_its_family_beside_it_gives_the_version(tmp_path, beside, version, version_from):
    root, cudnn, graph, other = _cudnn_folders(tmp_path, beside)
    _errors, mapped = real_load([cudnn], env={"LD_LIBRARY_PATH": other})
    assert os.path.join(other, GRAPH) in mapped and graph not in mapped
    config = LoaderConfig(ld_library_path=(other,), cache={}, default_dirs=(), lib_token="lib/x86_64-linux-gnu",
                          platform_token="x86_64")
    result = simulate_load([cudnn], config)
    found = find_shadowed(((cudnn, res, True) for res in result.resolutions[cudnn]), root, {GRAPH: (graph,)})
    assert found == {GRAPH: Shadowed(GRAPH, cudnn, True, os.path.join(other, GRAPH), other, (graph,), version, False,
                                     version_from)}
