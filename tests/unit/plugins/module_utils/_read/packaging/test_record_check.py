# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for record_check: RECORD verification, digests, ownership conflicts."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.record_hash import CHUNK, file_digest, record_digest
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging import record_check
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import (
    Conflict,
    FileState,
    check_all,
    find_conflicts,
    start_check_all,
)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import (
    b64_sha256,
    make_dist,
    make_wheel,
    pip,
)

CU12 = b"\x7fELF libcudnn.so.9 from cudnn-cu12 9.10.2.21"
CU13 = b"\x7fELF libcudnn.so.9 from cudnn-cu13 9.24.0.43"
SO = "nvidia/cudnn/lib/libcudnn.so.9"


@pytest.fixture
def venv(tmp_path):
    root = tmp_path / "venv"
    (root / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("version = 3.12.1\n")
    return str(root)


def site_of(venv):
    return venv + "/lib/python3.12/site-packages"


def one(venv):
    (dist,) = read_distributions([site_of(venv)])
    return dist


def meta_bytes(dist):
    return sum(e.size for e in dist.entries if e.size is not None)


def test_file_digest_reads_in_chunks(tmp_path):
    data = bytes(range(256)) * (10 * 1024 + 7)  # 2.5 MiB and a bit: several 1 MiB reads
    (tmp_path / "big").write_bytes(data)
    assert file_digest(str(tmp_path / "big")) == b64_sha256(data)
    assert file_digest(str(tmp_path / "big"), "sha512") != b64_sha256(data)


def test_clean_distribution(venv):
    make_dist(site_of(venv), "demo", "1.0", {"demo/__init__.py": b"x = 1\n", "../../../bin/demo": b"#!/bin/sh\n"})
    dist = one(venv)
    assert check_all([dist], venv) == {dist.dist_info: FileState((), (), (), 5, 0)}
    assert check_all([dist], venv, mode="hash") == {dist.dist_info: FileState((), (), (), 5, meta_bytes(dist))}


def test_missing_modified_unsafe(venv):
    site = site_of(venv)
    files = {
        "demo/__init__.py": b"x = 1\n",
        "demo/gone.py": b"gone\n",
        "demo/size.so": b"12345",
        "demo/same-size.so": b"abcde",
        "demo/dir.so": b"file",
        "demo/loop.so": b"loop",
    }
    info = make_dist(site, "demo", "1.0", files)
    with open(info + "/RECORD", "a") as handle:
        handle.write("demo/__pycache__/__init__.cpython-312.pyc,,\n")  # pip's hashless .pyc, never compiled here
        handle.write("demo/hashless.txt,,\n")
        handle.write("../../../../etc/passwd,sha256=x,1\n")
        handle.write("/etc/shadow,,\n")
    os.unlink(site + "/demo/gone.py")
    with open(site + "/demo/size.so", "wb") as handle:
        handle.write(b"123456")
    with open(site + "/demo/same-size.so", "wb") as handle:
        handle.write(b"abcdX")
    os.unlink(site + "/demo/dir.so")
    os.mkdir(site + "/demo/dir.so")
    os.unlink(site + "/demo/loop.so")
    os.symlink("loop.so", site + "/demo/loop.so")
    dist = one(venv)
    metadata = [e.size for e in dist.entries if e.path.endswith(("/METADATA", "/INSTALLER"))]
    assert check_all([dist], venv)[dist.dist_info] == FileState(
        missing=("demo/gone.py", "demo/hashless.txt"),
        modified=("demo/size.so", "demo/dir.so"),
        unsafe=("../../../../etc/passwd", "/etc/shadow"),
        checked=11,
        hashed_bytes=0,
        unreadable=("demo/loop.so",),
    )
    assert check_all([dist], venv, mode="hash")[dist.dist_info] == FileState(
        missing=("demo/gone.py", "demo/hashless.txt"),
        modified=("demo/size.so", "demo/same-size.so", "demo/dir.so"),
        unsafe=("../../../../etc/passwd", "/etc/shadow"),
        checked=11,
        hashed_bytes=len(b"x = 1\n") + len(b"abcdX") + sum(metadata),
        unreadable=("demo/loop.so",),
    )


def test_bad_mode(venv):
    make_dist(site_of(venv), "demo", "1.0")
    with pytest.raises(ValueError) as err:
        check_all([one(venv)], venv, mode="sha256")
    assert str(err.value) == "mode must be 'size' or 'hash', got 'sha256'"


def test_check_all_parallel_and_digests(venv):
    site = site_of(venv)
    make_dist(site, "a", "1", {"a/%d.so" % i: b"\x7fELF" + os.urandom(1000 + i) for i in range(20)})
    make_dist(site, "b", "2", {"b/big.so": os.urandom(3 * 1024 * 1024)})
    with open(site + "/a/7.so", "r+b") as handle:
        handle.write(b"\0")
    dists = read_distributions([site])
    digests = {}
    parallel = check_all(dists, venv, mode="hash", workers=4, digests=digests)
    assert parallel == check_all(dists, venv, mode="hash", workers=1)
    assert parallel[dists[0].dist_info].modified == ("a/7.so",)
    assert parallel[dists[1].dist_info] == FileState((), (), (), 4, meta_bytes(dists[1]))
    assert len(digests) == 20 + 1 + 4  # every hashed file once: .so files plus METADATA, INSTALLER of a and b
    assert digests[(site + "/b/big.so", "sha256")] == file_digest(site + "/b/big.so")
    # Digests handed in are reused, not recomputed: a planted one decides the result.
    planted = {(site + "/b/big.so", "sha256"): "planted"}
    assert check_all(dists, venv, mode="hash", digests=planted)[dists[1].dist_info].modified == ("b/big.so",)


def test_size_mode_hashes_the_distributions_also_hash_names_and_keeps_the_distributions_order(venv):
    """The repair's last test reads the venv in size mode and hashes what it installed beside the import."""
    site = site_of(venv)
    make_dist(site, "a", "1", {"a/lib.so": b"\x7fELF a"})
    make_dist(site, "b", "1", {"b/lib.so": b"\x7fELF b", "b/big.so": os.urandom(3 * 1024 * 1024)})
    make_dist(site, "c", "1", {"c/lib.so": b"\x7fELF c"})
    for name in ("a", "b"):  # the same size, other bytes
        with open(site + "/%s/lib.so" % name, "r+b") as handle:
            handle.write(b"\0")
    dists = read_distributions([site])
    digests = {}
    states = check_all(dists, venv, digests=digests, also_hash=frozenset({"b"}))
    assert list(states) == [d.dist_info for d in dists]
    assert states[dists[0].dist_info].modified == ()  # a: sizes only
    assert states[dists[1].dist_info] == FileState((), ("b/lib.so",), (), 5, meta_bytes(dists[1]))
    assert states[dists[2].dist_info] == check_all([dists[2]], venv)[dists[2].dist_info]
    assert sorted(digests) == sorted((site + "/" + e.path, "sha256") for e in dists[1].entries if e.digest)
    assert check_all(dists, venv, also_hash=frozenset({"b"})) == {
        **check_all(dists, venv), dists[1].dist_info: check_all([dists[1]], venv, mode="hash")[dists[1].dist_info]}


def test_conflicts(venv):
    site = site_of(venv)
    cu12 = make_dist(site, "nvidia-cudnn-cu12", "9.10.2.21", {SO: CU12, "nvidia/cudnn/include/cudnn.h": b"h12"})
    cu13 = make_dist(site, "nvidia-cudnn-cu13", "9.24.0.43", {SO: CU13, "nvidia/cudnn/include/cudnn.h": b"h13", "nvidia/cudnn/lib/x.so": b"x"})
    dists = read_distributions([site])
    owners = ("nvidia-cudnn-cu12 9.10.2.21", "nvidia-cudnn-cu13 9.24.0.43")
    assert find_conflicts(dists, venv) == [
        Conflict("nvidia/cudnn/include/cudnn.h", owners, None),
        Conflict(SO, owners, None),
    ]
    digests = {}
    states = check_all(dists, venv, mode="hash", digests=digests)
    assert states[cu12].modified == (SO, "nvidia/cudnn/include/cudnn.h")
    assert states[cu13].modified == ()
    assert find_conflicts(dists, venv, digests) == [
        Conflict("nvidia/cudnn/include/cudnn.h", owners, "nvidia-cudnn-cu13 9.24.0.43"),
        Conflict(SO, owners, "nvidia-cudnn-cu13 9.24.0.43"),
    ]
    os.unlink(site + "/" + SO)
    assert find_conflicts(dists, venv, digests)[1] == Conflict(SO, owners, "none")


def test_incident_with_real_pip(tmp_path):
    """cu13 cudnn overwrites cu12's files silently; uninstalling cu13 leaves cu12 metadata-only (FACTS 1)."""
    pytest.importorskip("pip")
    wheels = str(tmp_path / "wheels")
    os.makedirs(wheels)
    make_wheel(wheels, "nvidia-cudnn-cu12", "9.10.2.21", {SO: CU12, "nvidia/cudnn/include/cudnn.h": b"/* 12 */"})
    make_wheel(wheels, "nvidia-cudnn-cu13", "9.24.0.43", {SO: CU13, "nvidia/cudnn/include/cudnn.h": b"/* 13 */",
                                                          "nvidia/cudnn/lib/libcudnn_graph.so.9": b"\x7fELF graph"})
    venv = str(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    pip(venv, "install", "--no-index", "--find-links", wheels, "nvidia-cudnn-cu12")
    pip(venv, "install", "--no-index", "--find-links", wheels, "nvidia-cudnn-cu13")
    layout = read_layout(venv)
    cu12, cu13 = read_distributions(layout.site_packages)
    # Same sizes: only hashing sees that the cu12 wheel now runs cu13 bytes.
    assert check_all([cu12, cu13], venv, mode="size")[cu12.dist_info] == FileState((), (), (), 7, 0)
    digests = {}
    states = check_all([cu12, cu13], venv, mode="hash", digests=digests)
    assert states[cu12.dist_info].modified == ("nvidia/cudnn/include/cudnn.h", SO)
    assert states[cu13.dist_info] == FileState((), (), (), 8, meta_bytes(cu13))
    assert [(c.path, c.on_disk) for c in find_conflicts([cu12, cu13], venv, digests)] == [
        ("nvidia/cudnn/include/cudnn.h", "nvidia-cudnn-cu13 9.24.0.43"),
        (SO, "nvidia-cudnn-cu13 9.24.0.43"),
    ]
    pip(venv, "uninstall", "-y", "nvidia-cudnn-cu13")
    (cu12,) = read_distributions(layout.site_packages)
    assert check_all([cu12], venv)[cu12.dist_info].missing == ("nvidia/cudnn/include/cudnn.h", SO)
    assert find_conflicts([cu12], venv) == []


def test_a_symlinked_entry_is_checked_by_its_target_and_named_in_links(tmp_path):
    venv = str(tmp_path / "venv")
    site = venv + "/lib/python3.12/site-packages"
    os.makedirs(site)
    make_dist(site, "demo", "1.0", {"demo/libdemo.so.1": b"12345"})
    os.symlink("libdemo.so.1", site + "/demo/libdemo.so")
    with open(site + "/demo-1.0.dist-info/RECORD", "a") as handle:
        handle.write("demo/libdemo.so,,5\n")
    [dist] = read_distributions([site])
    stats, links = {}, set()
    [state] = check_all([dist], venv, stats=stats, links=links).values()
    assert (state.missing, state.modified) == ((), ())
    assert links == {site + "/demo/libdemo.so"}
    assert stats[site + "/demo/libdemo.so"].st_size == 5


def test_paths_two_distributions_list_are_judged_alike_for_each_and_stat_ed_once(venv):
    site = site_of(venv)
    files = {"demo/shared.so": b"12345", "demo/gone.so": b"gone", "demo/target.so": b"abc", "demo/link.so": b"abc"}
    make_dist(site, "first", "1.0", files)
    make_dist(site, "second", "2.0", files)
    with open(site + "/demo/shared.so", "wb") as handle:
        handle.write(b"123456")  # the size neither RECORD says
    os.unlink(site + "/demo/gone.so")
    os.unlink(site + "/demo/link.so")
    os.symlink("target.so", site + "/demo/link.so")
    dists = read_distributions([site])
    stats, links = {}, set()
    states = check_all(dists, venv, stats=stats, links=links)
    assert [(s.missing, s.modified, s.unreadable, s.checked) for s in states.values()] == [
        (("demo/gone.so",), ("demo/shared.so",), (), 7)] * 2
    assert links == {site + "/demo/link.so"}
    assert stats[site + "/demo/link.so"].st_size == 3 and stats[site + "/demo/gone.so"] is None
    assert stats[site + "/demo/shared.so"].st_size == 6
    hashed_stats = {}
    check_all(dists, venv, mode="hash", stats=hashed_stats)
    assert sorted(hashed_stats) == sorted(stats)


def test_pip_s_hashless_bytecode_is_not_looked_at_on_disk_in_either_mode(venv):
    site = site_of(venv)
    info = make_dist(site, "demo", "1.0", {"demo/__init__.py": b"x = 1\n"})
    with open(info + "/RECORD", "a") as handle:
        handle.write("demo/__pycache__/__init__.cpython-312.pyc,,\n")  # as pip writes what it compiled
        handle.write("demo/__pycache__/gone.cpython-312.pyc,,\n")
        handle.write("demo/sized.pyc,,4\n")  # a size: checked like any file
    os.makedirs(site + "/demo/__pycache__/__init__.cpython-312.pyc")  # not a file: nothing to say about a cache
    with open(site + "/demo/sized.pyc", "wb") as handle:
        handle.write(b"12345")
    dist = one(venv)
    for mode in ("size", "hash"):
        stats = {}
        state = check_all([dist], venv, mode=mode, stats=stats)[dist.dist_info]
        assert (state.missing, state.modified, state.unreadable, state.checked) == ((), ("demo/sized.pyc",), (), 7)
        assert not [path for path in stats if "__pycache__" in path]


def test_a_share_of_in_child_at_least_bytes_is_hashed_by_a_child_and_a_smaller_one_in_its_thread(venv, monkeypatch):
    site = site_of(venv)
    info = make_dist(site, "big", "1", {"big/small.so": b"\x7fELF small"})
    huge = site + "/big/huge.so"
    with open(huge, "wb") as handle:
        handle.truncate(record_check.IN_CHILD_AT_LEAST)  # a hole: no disk used
    zeros = hashlib.sha256()
    for _block in range(record_check.IN_CHILD_AT_LEAST // CHUNK):
        zeros.update(bytes(CHUNK))
    with open(info + "/RECORD", "a") as handle:
        handle.write("big/huge.so,sha256=%s,%d\n" % (record_digest(zeros), record_check.IN_CHILD_AT_LEAST))
    asked = []

    def spy(jobs):
        asked.append(list(jobs))
        return real(jobs)
    real = record_check.digests_in_child
    monkeypatch.setattr(record_check, "digests_in_child", spy)
    dist = one(venv)
    digests = {}
    states = check_all([dist], venv, mode="hash", workers=2, digests=digests)
    assert states == {dist.dist_info: FileState((), (), (), 5, meta_bytes(dist))}
    assert asked == [[(huge, "sha256")]]  # the other share (small.so, METADATA, INSTALLER) stayed in its thread
    assert digests[(huge, "sha256")] == record_digest(zeros)
    assert digests[(site + "/big/small.so", "sha256")] == b64_sha256(b"\x7fELF small")


def test_start_check_all_returns_with_every_entry_stat_ed_and_its_result_is_check_all_s(venv):
    site = site_of(venv)
    make_dist(site, "a", "1", {"a/%d.so" % i: b"\x7fELF" + os.urandom(2000 + i) for i in range(8)})
    with open(site + "/a/3.so", "r+b") as handle:
        handle.write(b"\0")
    dists = read_distributions([site])
    stats, digests = {}, {}
    pending = start_check_all(dists, venv, "hash", workers=2, digests=digests, stats=stats)
    assert sorted(stats) == sorted(site + "/" + entry.path for entry in dists[0].entries)  # RECORD's own line too
    states = pending.result()
    assert states == check_all(dists, venv, mode="hash") and pending.result() is states
    assert states[dists[0].dist_info].modified == ("a/3.so",)
    assert len(digests) == 8 + 2


def test_usable_cpus_are_the_ones_this_process_may_run_on():
    program = ("import os, sys; sys.path[:0] = sys.argv[1:]; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
               "from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import "
               "usable_cpus; print(usable_cpus())")
    done = subprocess.run([sys.executable, "-c", program] + [p for p in sys.path if p], capture_output=True, text=True,
                          check=True)
    assert done.stdout == "1\n"
    assert record_check.usable_cpus() == len(os.sched_getaffinity(0))
