# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for observe: the import name, torch's preload (real gcc-built objects), entry points, and who owns a path in
a venv read from disk."""

from __future__ import annotations

import base64
import dataclasses
import gc
import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.facts import keep_read_index
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import LoadResult, build_config
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging import record_check
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import ProbeResult
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read import read_index
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.read_index import load_index
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import VenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read import observe as observe_module
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import (
    FactsOptions, _entry_points, add_probe, import_name, observe, probe_venv, torch_preload, without_probe)
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import build_so, requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import ROOT, SITE, dist

# --- import_name -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("anchor, dists, expected", [
    ("torch", [dist("torch", "2.9.1", ["functorch/__init__.py", "torch/__init__.py", "torch/lib/__init__.py"])], "torch"),
    ("ansible-core", [dist("ansible-core", "2.21.5", ["ansible/__init__.py", "ansible_test/__init__.py"])], "ansible"),
    ("flash-attn", [dist("flash_attn", "2.8.3", ["hopper/__init__.py", "flash_attn/__init__.py"])], "flash_attn"),
    ("Pillow", [dist("pillow", "11.3.0", ["PIL/__init__.py", "PIL/Image.py"])], "PIL"),
    ("onnxruntime_gpu", [dist("onnxruntime-gpu", "1.23.0", ["onnxruntime/__init__.py"])], "onnxruntime"),
    # no package: a top-level module, a data folder, only nested packages
    ("six", [dist("six", "1.17.0", ["six.py"])], "six"),
    ("odd-pkg", [dist("odd-pkg", "1.0", ["odd_pkg-1.0.data/scripts/__init__.py", "deep/er/__init__.py"])], "odd_pkg"),
    # not installed: the anchor as a module name
    ("sgl-kernel", [dist("torch", "2.9.1", ["torch/__init__.py"])], "sgl_kernel"),
    ("sgl-kernel", [], "sgl_kernel"),
])
def test_import_name(anchor, dists, expected):
    assert import_name(anchor, dists) == expected


# --- torch's preload ---------------------------------------------------------------------------------------------

def _lib(base, folder, name, soname=True):
    return build_so(os.path.join(str(base), "nvidia", folder, "lib", name), soname=name if soname else None)


@requires_gcc
def test_torch_preload_takes_the_first_loadable_match_over_sys_path_in_torchs_order(tmp_path):
    early, late = tmp_path / "early", tmp_path / "site-packages"
    expected = [
        ("libcublasLt.so.12", _lib(late, "cublas", "libcublasLt.so.12")),
        ("libcublas.so.12", _lib(late, "cublas", "libcublas.so.12")),
        ("libcudnn.so.9", _lib(early, "cudnn", "libcudnn.so.9")),  # the first sys.path entry wins ...
        ("libcurand.so.10", _lib(late, "cu13", "libcurand.so.10")),  # CUDA 13 keeps every library in nvidia/cu13/lib
        ("libnccl.so.2", _lib(late, "nccl", "libnccl.so.2")),
        ("libnvshmem_host.so.3", _lib(late, "nvshmem", "libnvshmem_host.so.3", soname=False)),  # no SONAME: its name
    ]
    _lib(late, "cudnn", "libcudnn.so.9")  # ... over this one
    (early / "nvidia" / "nccl" / "lib").mkdir(parents=True)
    (early / "nvidia" / "nccl" / "lib" / "libnccl.so.2").write_bytes(b"")  # not loadable (0 bytes): skipped
    (late / "nvidia" / "cusparselt" / "lib").mkdir(parents=True)  # a folder without the library
    (late / "nvidia" / "cufile" / "lib").mkdir(parents=True)
    (late / "nvidia" / "cufile" / "lib" / "libcufile.so.0.txt").write_text("x")  # does not match the glob
    assert list(torch_preload([str(early), str(tmp_path / "absent"), str(late)]).items()) == expected


@requires_gcc
def test_torch_preload_reads_through_the_read_index_when_given_one(tmp_path):
    site = tmp_path / "site-packages"
    expected = {"libcudnn.so.9": _lib(site, "cudnn", "libcudnn.so.9"), "libnccl.so.2": _lib(site, "nccl", "libnccl.so.2")}
    (site / "nvidia" / "cublas" / "lib").mkdir(parents=True)
    (site / "nvidia" / "cublas" / "lib" / "libcublas.so.12").write_bytes(b"")  # not loadable: it fails, and is not kept
    index = load_index(str(tmp_path), str(tmp_path))
    assert torch_preload([str(site)], index.elf) == expected
    assert (index.read, sorted(json.loads(index.as_json())["elf"])) == (2, sorted(expected.values()))


@requires_gcc
def test_torch_preload_searches_the_current_directory_for_an_empty_sys_path_entry(tmp_path, monkeypatch):
    """Why the probe runs from an empty directory: python -c puts '' first on sys.path."""
    _lib(tmp_path, "cu13", "libcudart.so.13")
    monkeypatch.chdir(str(tmp_path))
    assert torch_preload(["", str(tmp_path / "absent")]) == {"libcudart.so.13": "./nvidia/cu13/lib/libcudart.so.13"}


def test_torch_preload_of_a_venv_without_nvidia_wheels(tmp_path):
    assert torch_preload([str(tmp_path)]) == {}


# --- entry points --------------------------------------------------------------------------------------------------

def _touch(base, *paths):
    for path in paths:
        full = os.path.join(str(base), path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as handle:
            handle.write(b"\x7fELF")
    return [os.path.join(str(base), p) for p in paths]


def test_torch_entry_points_are_global_deps_then_c_per_site_packages(tmp_path):
    lib, lib64 = tmp_path / "lib", tmp_path / "lib64"
    first = _touch(lib, "torch/lib/libtorch_global_deps.so", "torch/_C.cpython-312-x86_64-linux-gnu.so")
    _touch(lib, "torch/lib/libtorch_cuda.so", "torch/_C_flatbuffer.py", "functorch/_C.cpython-312-x86_64-linux-gnu.so")
    second = _touch(lib64, "torch/_C.cpython-312-x86_64-linux-gnu.so")
    assert _entry_points("torch", "torch", (str(lib), str(lib64))) == tuple(first + second)


def test_other_anchors_load_their_package_extensions(tmp_path):
    expected = _touch(tmp_path, "sgl_kernel/common_ops.abi3.so", "sgl_kernel/flash_ops.cpython-312-x86_64-linux-gnu.so")
    _touch(tmp_path, "sgl_kernel/sub/nested.so", "sgl_kernel/__init__.py", "other/x.so")
    os.makedirs(str(tmp_path / "sgl_kernel" / "folder.so"))
    assert _entry_points("sgl-kernel", "sgl_kernel", (str(tmp_path),)) == tuple(expected)


def test_no_entry_points(tmp_path):
    assert _entry_points("torch", "torch", (str(tmp_path),)) == ()
    assert _entry_points("jax", "jax", (str(tmp_path),)) == ()


# --- Observations helpers ------------------------------------------------------------------------------------------

def test_relpath_is_relative_to_site_packages_then_the_venv_else_absolute():
    obs = O.healthy()
    assert obs.relpath(SITE + "/nvidia/nccl/lib/libnccl.so.2") == "nvidia/nccl/lib/libnccl.so.2"
    assert obs.relpath(ROOT + "/bin/python") == "bin/python"
    assert obs.relpath("/usr/lib/x86_64-linux-gnu/libm.so.6") == "/usr/lib/x86_64-linux-gnu/libm.so.6"
    assert obs.relpath(ROOT + "-other/lib/x.so") == ROOT + "-other/lib/x.so"


def test_owners_of_a_path():
    obs = O.contaminated()
    assert [d.label for d in obs.owners_of(SITE + "/nvidia/nccl/lib/libnccl.so.2")] == [
        "nvidia-nccl-cu12 2.27.5", "nvidia-nccl-cu13 2.30.7"]
    assert [d.label for d in obs.owners_of(SITE + "/nvidia/nccl/../nccl/lib/libnccl.so.2")] == [
        "nvidia-nccl-cu12 2.27.5", "nvidia-nccl-cu13 2.30.7"]  # compared by real path
    assert obs.owners_of("/usr/lib/x86_64-linux-gnu/libm.so.6") == []


# --- who owns a path, read from disk -----------------------------------------------------------------------------

SO = "nvidia/cudnn/lib/libcudnn.so.9"


def _disk_venv(base):
    """A venv folder without an interpreter: observe() reads its site-packages only."""
    root = os.path.join(str(base), "venv")
    os.makedirs(os.path.join(root, "lib", "python3.12", "site-packages"))
    with open(os.path.join(root, "pyvenv.cfg"), "w") as handle:
        handle.write("version = 3.12.1\n")
    return root


def _observe(venv):
    return observe(FactsOptions(path=venv, probe=False, gpu=False), SubprocessRunner(), loader=build_config())


def test_owner_index_lists_every_owner_of_a_path_in_distribution_order(tmp_path):
    venv = _disk_venv(tmp_path)
    site = venv + "/lib/python3.12/site-packages"
    cu12 = make_dist(site, "nvidia-cudnn-cu12", "9.10.2.21", {SO: b"cu12", "nvidia/cudnn/include/cudnn.h": b"h12"})
    cu13 = make_dist(site, "nvidia-cudnn-cu13", "9.24.0.43", {SO: b"cu13", "nvidia/cudnn/include/cudnn.h": b"h13",
                                                              "nvidia/cudnn/lib/x.so": b"x"})
    obs = _observe(venv)
    assert [d.dist_info for d in obs.owners_of(site + "/" + SO)] == [cu12, cu13]
    assert [d.dist_info for d in obs.owners_of(site + "/nvidia/cudnn/lib/x.so")] == [cu13]
    assert len(obs.owner_index) == 2 + 1 + 2 * 3  # shared, cu13 only, METADATA/INSTALLER/RECORD of each
    assert obs.owners_of(site + "/nvidia/cudnn/lib/none.so") == [] and site + "/" + SO in obs.owner_index


def test_owner_index_of_a_venv_behind_a_symlink_answers_for_both_paths(tmp_path):
    venv = _disk_venv(tmp_path)
    make_dist(venv + "/lib/python3.12/site-packages", "demo", "1.0", {"demo/lib.so": b"so"})
    link = str(tmp_path / "link")
    os.symlink(venv, link)
    obs = _observe(link)
    assert [d.label for d in obs.owners_of(link + "/lib/python3.12/site-packages/demo/lib.so")] == ["demo 1.0"]
    assert [d.label for d in obs.owners_of(venv + "/lib/python3.12/site-packages/demo/lib.so")] == ["demo 1.0"]


def test_hash_distributions_are_hashed_whatever_verify_says_and_their_digests_kept(tmp_path):
    venv = _disk_venv(tmp_path)
    site = venv + "/lib/python3.12/site-packages"
    make_dist(site, "nvidia-nccl-cu12", "2.27.5", {"nvidia/nccl/lib/libnccl.so.2": b"\x7fELF nccl"})
    make_dist(site, "demo", "1.0", {"demo/lib.so": b"\x7fELF demo"})
    for path in ("nvidia/nccl/lib/libnccl.so.2", "demo/lib.so"):
        with open(os.path.join(site, path), "r+b") as handle:
            handle.write(b"\0")  # the same size, other bytes
    options = FactsOptions(path=venv, probe=False, gpu=False, hash_distributions=("nvidia-nccl-cu12",))
    obs = observe(options, SubprocessRunner(), loader=build_config())
    states = {d.key: obs.file_states[d.dist_info] for d in obs.distributions}
    assert states["nvidia-nccl-cu12"].modified == ("nvidia/nccl/lib/libnccl.so.2",)
    assert states["demo"].modified == ()  # verify size: not hashed
    assert {path for path, _algorithm in obs.digests} == {
        os.path.join(site, e.path) for d in obs.distributions if d.key == "nvidia-nccl-cu12" for e in d.entries if e.digest}


def test_the_conflicting_files_the_probe_loaded_are_hashed_on_every_cpu_to_say_whose_bytes_they_are(tmp_path, monkeypatch):
    venv = _disk_venv(tmp_path)
    site = venv + "/lib/python3.12/site-packages"
    nccl, unloaded = "nvidia/nccl/lib/libnccl.so.2", "nvidia/nccl/include/nccl.h"
    make_dist(site, "nvidia-cudnn-cu12", "9.10.2.21", {SO: b"cu12", nccl: b"nccl12", unloaded: b"h12"})
    make_dist(site, "nvidia-cudnn-cu13", "9.24.0.43", {SO: b"cu13", nccl: b"nccl13", unloaded: b"h13"})
    obs = _observe(venv)  # written last: the cu13 bytes are on disk
    assert {c.path: c.on_disk for c in obs.conflicts} == {SO: None, nccl: None, unloaded: None}  # verify size: unknown
    shares = []

    def spy(jobs, in_child):
        shares.append(sorted(jobs))
        return real(jobs, in_child)
    real = record_check._digest_share
    monkeypatch.setattr(record_check, "_digest_share", spy)
    monkeypatch.setattr(record_check, "usable_cpus", lambda: 2)
    loaded = tuple(os.path.join(site, path) for path in (SO, nccl))
    probed = add_probe(obs, ProbeResult(True, True, None, None, 0, False, None, loaded, {}, 0.1))
    assert {c.path: c.on_disk for c in probed.conflicts} == {
        SO: "nvidia-cudnn-cu13 9.24.0.43", nccl: "nvidia-cudnn-cu13 9.24.0.43", unloaded: None}
    assert sorted(shares) == [[(path, "sha256")] for path in sorted(loaded)]  # one file per CPU, the header not hashed
    assert probed.static_conflicts == obs.conflicts


def test_the_loaded_conflicting_files_are_hashed_once_their_digests_answered_by_the_read_index_until_one_changes(
        tmp_path, monkeypatch):
    venv = _disk_venv(tmp_path)
    site = venv + "/lib/python3.12/site-packages"
    nccl = "nvidia/nccl/lib/libnccl.so.2"
    make_dist(site, "nvidia-cudnn-cu12", "9.10.2.21", {SO: b"cu12", nccl: b"nccl12"})
    make_dist(site, "nvidia-cudnn-cu13", "9.24.0.43", {SO: b"cu13", nccl: b"nccl13"})  # written last: its bytes
    loaded = tuple(os.path.join(site, path) for path in (SO, nccl))
    shares = []

    def spy(jobs, in_child):
        shares.extend(path for path, _algorithm in jobs)
        return real(jobs, in_child)
    real = record_check._digest_share
    monkeypatch.setattr(record_check, "_digest_share", spy)

    def facts_run():
        obs = observe(FactsOptions(path=venv, probe=False, gpu=False, read_index=True), SubprocessRunner(),
                      loader=build_config())
        probed = add_probe(obs, ProbeResult(True, True, None, None, 0, False, None, loaded, {}, 0.1))
        keep_read_index(probed)
        return {c.path: c.on_disk for c in probed.conflicts}
    time.sleep(1.0 - time.time() % 1.0 + 0.01)  # the venv's files are older than the facts runs
    cu13 = {SO: "nvidia-cudnn-cu13 9.24.0.43", nccl: "nvidia-cudnn-cu13 9.24.0.43"}
    assert (facts_run(), sorted(shares)) == (cu13, sorted(loaded))
    shares.clear()
    assert (facts_run(), shares) == (cu13, [])  # both answered from the index
    with open(os.path.join(site, SO), "r+b") as handle:  # cu12's bytes put back in place: a new mtime and ctime
        handle.write(b"cu12")
    assert (facts_run(), shares) == (dict(cu13, **{SO: "nvidia-cudnn-cu12 9.10.2.21"}), [loaded[0]])


def test_the_conflicting_files_the_simulated_load_maps_are_hashed_ahead_on_the_cpus_the_probe_leaves(tmp_path, monkeypatch):
    venv = _disk_venv(tmp_path)
    site = venv + "/lib/python3.12/site-packages"
    nccl, unmapped = "nvidia/nccl/lib/libnccl.so.2", "nvidia/nccl/lib/libnccl-net.so"
    make_dist(site, "nvidia-cudnn-cu12", "9.10.2.21", {SO: b"cu12", nccl: b"nccl12", unmapped: b"net12"})
    make_dist(site, "nvidia-cudnn-cu13", "9.24.0.43", {SO: b"cu13", nccl: b"nccl13", unmapped: b"net13"})
    mapped = [os.path.join(site, path) for path in (SO, nccl)]
    graph = LoadResult(order=mapped + ["/usr/lib/libc.so.6"], objects={}, resolutions={}, errors=[])
    obs = dataclasses.replace(_observe(venv), import_graph=graph)
    workers = []

    def spy(wanted, digests, count=None):
        workers.append(count)
        return real(wanted, digests, count)
    real = read_index.hash_files
    monkeypatch.setattr(read_index, "hash_files", spy)
    monkeypatch.setattr(observe_module, "usable_cpus", lambda: 4)
    ahead = observe_module._digests_ahead(obs, obs.read_index or read_index.DirectReader())
    assert sorted(path for path, _algorithm in ahead) == sorted(mapped) and workers == [3]


def test_observe_takes_the_digests_ahead_while_its_probe_runs_and_hands_them_to_add_probe(tmp_path, monkeypatch):
    """A real venv whose anchor takes 0.5 s to import: the reading ends while the probe runs."""
    root = str(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    make_dist(read_layout(root).site_packages[0], "mini", "1.0", {"mini/__init__.py": b"import time\ntime.sleep(0.5)\n"})
    calls, handed = [], []
    real_ahead, real_add = observe_module._digests_ahead, observe_module.add_probe

    def ahead(obs, reader):
        calls.append(obs.probe)
        return dict(real_ahead(obs, reader), marker="taken ahead")

    def add(obs, probe, index=None, ahead=None):
        handed.append(ahead)
        return real_add(obs, probe, index, ahead)
    monkeypatch.setattr(observe_module, "_digests_ahead", ahead)
    monkeypatch.setattr(observe_module, "add_probe", add)
    probed = observe(FactsOptions(path=root, anchor="mini", gpu=False), SubprocessRunner(), loader=build_config())
    assert probed.probe.ok and calls == [None] and handed == [{"marker": "taken ahead"}]


def test_only_the_digests_taken_ahead_of_files_the_probe_loaded_count_and_those_are_not_hashed_again(tmp_path, monkeypatch):
    venv = _disk_venv(tmp_path)
    site = venv + "/lib/python3.12/site-packages"
    nccl = "nvidia/nccl/lib/libnccl.so.2"
    make_dist(site, "nvidia-cudnn-cu12", "9.10.2.21", {SO: b"cu12", nccl: b"nccl12"})
    make_dist(site, "nvidia-cudnn-cu13", "9.24.0.43", {SO: b"cu13", nccl: b"nccl13"})
    obs = _observe(venv)
    so, nccl_path = os.path.join(site, SO), os.path.join(site, nccl)

    def digest_of(data):
        return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")
    # taken ahead: the cu12 bytes of both (as if read before a reinstall); the probe loaded only SO
    ahead = {(so, "sha256"): digest_of(b"cu12"), (nccl_path, "sha256"): digest_of(b"nccl12")}
    hashed = []
    monkeypatch.setattr(record_check, "_digest_share", lambda jobs, in_child: hashed.extend(jobs) or [None] * len(jobs))
    probed = add_probe(obs, ProbeResult(True, True, None, None, 0, False, None, (so,), {}, 0.1), ahead=ahead)
    assert {c.path: c.on_disk for c in probed.conflicts} == {SO: "nvidia-cudnn-cu12 9.10.2.21", nccl: None}
    assert hashed == []


def test_a_layout_already_read_is_taken_and_one_of_another_path_is_not(tmp_path):
    """The repair reads pyvenv.cfg once: observe() takes that layout and does not parse the file again."""
    venv = _disk_venv(tmp_path)
    other = _disk_venv(tmp_path / "other")
    layout = read_layout(venv)
    os.remove(os.path.join(venv, "pyvenv.cfg"))
    options = FactsOptions(path=venv, probe=False, gpu=False)
    obs = observe(options, SubprocessRunner(), loader=build_config(), layout=layout)
    assert obs.layout is layout and obs.layout.version == "3.12.1"
    with pytest.raises(VenvError, match="^path %s is not a venv: no pyvenv.cfg$" % venv):
        observe(options, SubprocessRunner(), loader=build_config(), layout=read_layout(other))


def test_owner_index_resolves_an_entry_that_is_itself_a_symlink(tmp_path):
    venv = _disk_venv(tmp_path)
    site = venv + "/lib/python3.12/site-packages"
    make_dist(site, "demo", "1.0", {"demo/lib/libdemo.so.1": b"so", "outside/libother.so": b"other"})
    os.symlink("../../outside/libother.so", site + "/demo/lib/libother.so")
    with open(site + "/demo-1.0.dist-info/RECORD", "a") as handle:
        handle.write("demo/lib/libother.so,,\n")
    obs = _observe(venv)
    # the listed link is indexed where it points, as the loader reports the file it maps; demo lists that file twice
    # (the link and its target) and is still one owner of it
    assert [d.label for d in obs.owners_of(site + "/outside/libother.so")] == ["demo 1.0"]
    assert site + "/demo/lib/libother.so" not in obs.owner_index
    assert site + "/demo/lib/libdemo.so.1" in obs.owner_index


def test_the_cycle_collector_is_off_while_the_venv_is_read_and_set_back_after(tmp_path, monkeypatch):
    venv = _disk_venv(tmp_path)
    make_dist(venv + "/lib/python3.12/site-packages", "demo", "1.0", {"demo/__init__.py": b""})
    seen = []
    real_locate = observe_module.locate_entries
    monkeypatch.setattr(observe_module, "locate_entries", lambda *a, **k: seen.append(gc.isenabled()) or real_locate(*a, **k))
    try:
        _observe(venv)
        assert (seen, gc.isenabled()) == ([False], True)
        gc.disable()  # a caller's own setting is kept
        _observe(venv)
        assert (seen, gc.isenabled()) == ([False, False], False)
    finally:
        gc.enable()


# --- typed records ------------------------------------------------------------------------------------------------

def test_cuda_majors_and_unsafe_entries_are_records():
    obs = O.build([dist("nvidia-cudnn-cu12", "9.10.2.21", ["nvidia/cudnn/lib/libcudnn.so.9"]), dist("six", "1.17.0", ["six.py"])],
                  unsafe=[("six", "../../../../etc/passwd", "RECORD entry '../../../../etc/passwd' leaves the venv")])
    cudnn, six = obs.distributions
    assert obs.majors[cudnn.dist_info] == observe_module.CudaMajor(12, "name")
    assert obs.cuda_major(six.dist_info) == observe_module.NO_CUDA_MAJOR == observe_module.CudaMajor(None, None)
    assert obs.cuda_major("/nowhere.dist-info").major is None
    entry = obs.unsafe_entries[0]
    assert (entry.dist, entry.path, entry.problem) == (six, "../../../../etc/passwd", "RECORD entry '../../../../etc/passwd' leaves the venv")


def test_the_gpu_states_go_to_the_performance_reading_and_not_to_the_gpu_facts_fake_nvml(tmp_path, monkeypatch):
    state = {"processes": [], "unsupported": []}
    facts = O.gpu("13.0", devices=[O.device("NVIDIA H200", "9.0")])
    asked = []

    def gpu_facts(with_state=False):
        asked.append(with_state)
        return dataclasses.replace(facts, states=(state,) if with_state else None)

    monkeypatch.setattr(observe_module, "gpu_facts", gpu_facts)
    venv = _disk_venv(tmp_path)
    obs = observe(FactsOptions(path=venv, probe=False, performance=True), SubprocessRunner(), loader=build_config())
    assert asked == [True] and obs.gpu == facts and obs.gpu.states is None
    assert [s["processes"] for s in obs.performance.gpu_states] == [[]]
    obs = observe(FactsOptions(path=venv, probe=False), SubprocessRunner(), loader=build_config())
    assert asked == [True, False] and obs.gpu == facts and obs.performance is None


def test_the_repairs_baseline_reuses_the_import_a_facts_run_kept_and_runs_it_when_an_install_changed_the_venv(tmp_path):
    """A real venv (its own interpreter) with a package ``mini``: the facts run keeps its import with the read index;
    the repair's baseline (probe_venv with reuse) answers from it while nothing changed, and imports again after a
    distribution is added to site-packages."""
    root = str(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    site = read_layout(root).site_packages[0]
    make_dist(site, "mini", "1.0", {"mini/__init__.py": b"VALUE = 1\n"})
    time.sleep(1.0 - time.time() % 1.0 + 0.01)  # the venv's files are older than the facts run
    options = FactsOptions(path=root, anchor="mini", gpu=False, read_index=True)
    facts = observe(options, SubprocessRunner(), loader=build_config())
    assert facts.probe.ok and facts.probe.reused_from is None
    keep_read_index(facts)
    plain = without_probe(observe(dataclasses.replace(options, probe=False, read_index=False), SubprocessRunner(),
                                  loader=build_config()))
    reused = probe_venv(plain, SubprocessRunner(), reuse=True).probe
    assert reused.ok and reused.reused_from is not None and reused.loaded == facts.probe.loaded
    make_dist(site, "other", "1.0", {"other/__init__.py": b""})
    assert probe_venv(plain, SubprocessRunner(), reuse=True).probe.reused_from is None
