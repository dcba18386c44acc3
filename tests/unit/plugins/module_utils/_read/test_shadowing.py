# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for shadowing: a library the venv has, found first on LD_LIBRARY_PATH, with what tells the copies apart."""

from __future__ import annotations

import os

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.loader import Resolution
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.shadowing import Shadowed, file_version, find_shadowed

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
