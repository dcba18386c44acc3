# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for read_index: what was read from gcc-built ELF files is reused only for the same file, never for a racy
one, and an index that is corrupt, foreign or of another format is ignored, saying why."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import shutil
import time

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.collection import VERSION
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import read_dist_info, read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.elf import ElfError, read_elf
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.fatbin import read_kernels
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read import read_index
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import ProbeResult
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.read_index import index_path, load_index
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import build_so, requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.support.fatbin_helpers import PTX, SASS, build_fatbin_so, fatbin_bytes

ROOT = "/srv/venv"
KERNELS = fatbin_bytes([(SASS, 80, 0x11, 40), (SASS, 90, 0x100011, 56), (PTX, 90, 0x11, 100)])


def _next_second():
    """Sleep into the next wall-clock second: a run that begins after this reuses what was changed before."""
    time.sleep(1.0 - time.time() % 1.0 + 0.01)


def _keep(state, index):
    with open(index_path(str(state)), "wb") as handle:
        handle.write(index.as_json())


@pytest.fixture()
def objects(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    lib = build_so(tmp_path / "libone.so.1", soname="libone.so.1", needed=["libm.so.6"], runpath="$ORIGIN")
    ext = build_fatbin_so(tmp_path / "ext.so", KERNELS, soname="ext.so")
    return state, lib, ext


@requires_gcc
def test_an_unchanged_file_is_answered_from_the_index_as_its_reader_answers(objects):
    state, lib, ext = objects
    _next_second()  # the files are older than the run
    first = load_index(str(state), ROOT)
    assert (first.elf(lib), first.kernels(ext), first.kernels(lib)) == (read_elf(lib), read_kernels(ext), None)
    assert (first.read, first.reused, first.changed) == (3, 0, True)
    _keep(state, first)
    again = load_index(str(state), ROOT)
    answers = (again.elf(lib), again.kernels(ext), again.kernels(lib))
    assert answers == (read_elf(lib), read_kernels(ext), None)
    assert (answers[0].soname, answers[0].needed, answers[0].runpath, answers[1].sass) == (
        "libone.so.1", ("libm.so.6",), "$ORIGIN", (80, 90))
    assert again.facts() == {"reused": 3, "read": 0, "ignored": None, "saved": False, "note": None}
    assert not again.changed


def test_a_locked_wheels_sha256_is_answered_from_the_index_until_the_wheel_changes(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK wheel bytes")
    _next_second()
    first = load_index(str(state), ROOT)
    assert first.wheel_sha256(str(wheel)) == hashlib.sha256(b"PK wheel bytes").hexdigest()
    _keep(state, first)
    again = load_index(str(state), ROOT)
    assert (again.wheel_sha256(str(wheel)), again.read, again.reused) == (hashlib.sha256(b"PK wheel bytes").hexdigest(), 0, 1)
    replaced = tmp_path / "new.whl"
    replaced.write_bytes(b"PK other bytes")
    os.replace(replaced, wheel)
    third = load_index(str(state), ROOT)
    assert (third.wheel_sha256(str(wheel)), third.read) == (hashlib.sha256(b"PK other bytes").hexdigest(), 1)


def _record_digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def test_a_conflicting_files_digest_is_answered_from_the_index_until_the_file_changes(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    lib, header = tmp_path / "libcudnn.so.9", tmp_path / "cudnn.h"
    lib.write_bytes(b"cu13 bytes")
    header.write_bytes(b"h13")
    wanted = {(str(lib), "sha256"): 10, (str(header), "sha256"): 3}
    _next_second()
    first, digests = load_index(str(state), ROOT), {}
    assert first.record_digests(wanted, digests) == set()
    assert digests == {(str(lib), "sha256"): _record_digest(b"cu13 bytes"), (str(header), "sha256"): _record_digest(b"h13")}
    assert (first.read, first.reused, first.changed) == (2, 0, True)
    _keep(state, first)
    again, digests = load_index(str(state), ROOT), {}
    again.record_digests(wanted, digests)
    assert (digests[(str(lib), "sha256")], again.read, again.reused, again.changed) == (_record_digest(b"cu13 bytes"), 0, 2, False)
    replaced = tmp_path / "new.so"
    replaced.write_bytes(b"cu12 bytes")  # an installer's rename: a new inode, the same size
    os.replace(replaced, lib)
    third, digests = load_index(str(state), ROOT), {}
    third.record_digests(wanted, digests)
    assert (digests[(str(lib), "sha256")], third.read, third.reused) == (_record_digest(b"cu12 bytes"), 1, 1)


def test_a_digest_of_another_algorithm_a_racy_file_or_an_unreadable_one_is_never_answered_from_the_index(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    old, racy, gone = tmp_path / "old.so", tmp_path / "racy.so", tmp_path / "gone.so"
    for path in (old, racy, gone):
        path.write_bytes(b"bytes")
    _next_second()
    first = load_index(str(state), ROOT)  # the run begins
    os.utime(racy)  # changed in the second the run began: a later write in it could keep mtime and ctime
    wanted = {(str(old), "sha256"): 5, (str(racy), "sha256"): 5, (str(gone), "sha256"): 5}
    gone.unlink()
    assert first.record_digests(wanted, {}) == {(str(gone), "sha256")}
    _keep(state, first)
    if int(os.stat(racy).st_ctime) != first._started_ns // 10 ** 9:
        pytest.fail("the test machine took a second between two calls: the racy case was not made")
    with open(index_path(str(state)), encoding="utf-8") as handle:
        assert set(json.load(handle)["digests"]) == {str(old), str(racy)}  # the unreadable one is not kept
    again, digests = load_index(str(state), ROOT), {}
    again.record_digests({(str(old), "sha512"): 5, (str(racy), "sha256"): 5}, digests)
    assert (again.read, again.reused) == (2, 0)
    assert digests[(str(old), "sha512")] == base64.urlsafe_b64encode(hashlib.sha512(b"bytes").digest()).decode().rstrip("=")


@requires_gcc
def test_a_file_replaced_or_changed_in_place_is_read_again(objects, tmp_path):
    state, lib, ext = objects
    first = load_index(str(state), ROOT)
    first.elf(lib)
    first.kernels(ext)
    _next_second()
    _keep(state, first)
    other = build_so(tmp_path / "other" / "libone.so.1", soname="libone.so.2")
    os.replace(other, lib)  # an installer's rename: a new inode
    with open(ext, "r+b") as handle:  # an edit in place: the same inode, a new mtime and ctime
        head = handle.read(4)
        handle.seek(0)
        handle.write(head)
    again = load_index(str(state), ROOT)
    assert again.elf(lib).soname == "libone.so.2"
    assert again.kernels(ext) == read_kernels(ext)
    assert (again.read, again.reused) == (2, 0)


@requires_gcc
def test_a_file_changed_in_the_second_the_run_began_or_later_is_read_again(objects):
    state, lib, ext = objects
    _next_second()
    first = load_index(str(state), ROOT)  # the run begins
    os.utime(lib)  # changed in the second the run began: a later write in it could keep mtime and ctime
    first.elf(lib)
    _next_second()
    os.utime(ext)  # changed while the run went on, a second later
    first.kernels(ext)
    _keep(state, first)
    if int(os.stat(lib).st_ctime) != first._started_ns // 10 ** 9:
        pytest.fail("the test machine took a second between two calls: the racy case was not made")
    again = load_index(str(state), ROOT)
    assert (again.elf(lib), again.kernels(ext)) == (read_elf(lib), read_kernels(ext))
    assert (again.read, again.reused) == (2, 0)


@requires_gcc
def test_a_file_rewritten_in_place_at_its_size_with_its_old_mtime_put_back_is_read_again(objects):
    """Mutation guarded: the identity without ctime (or without size and ctime). ``cp -p``, ``rsync -t --inplace`` or
    ``touch -r`` write other bytes into the same inode at the same size and put the old mtime back; only ctime,
    which cannot be set back, tells."""
    state, _lib, ext = objects
    first = load_index(str(state), ROOT)
    assert first.kernels(ext).sass == (80, 90)
    _next_second()
    _keep(state, first)
    before = os.stat(ext)
    other = fatbin_bytes([(SASS, 86, 0x11, 40), (SASS, 90, 0x100011, 56), (PTX, 90, 0x11, 100)])
    assert len(other) == len(KERNELS)
    with open(ext, "r+b") as handle:
        data = handle.read()
        handle.seek(data.index(KERNELS))
        handle.write(other)
    os.utime(ext, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(ext)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    again = load_index(str(state), ROOT)
    assert again.kernels(ext).sass == (86, 90) and (again.read, again.reused) == (1, 0)


@requires_gcc
def test_a_file_whose_ctime_is_in_the_runs_second_is_racy_though_its_mtime_is_old(objects):
    """Mutation guarded: the racy rule without ctime. A hard link from uv's cache or ``tar`` leaves an old mtime and a
    ctime of now: a write later in that second could keep both, so the entry is read again."""
    state, lib, _ext = objects
    _next_second()
    first = load_index(str(state), ROOT)  # the run begins
    os.utime(lib, (time.time() - 3600, time.time() - 3600))  # an old mtime; the ctime is now, in the run's second
    first.elf(lib)
    _keep(state, first)
    stamp = os.stat(lib)
    if int(stamp.st_ctime) != first._started_ns // 10 ** 9:
        pytest.fail("the test machine took a second between two calls: the racy case was not made")
    assert stamp.st_mtime < first._started_ns / 10 ** 9 - 1000
    again = load_index(str(state), ROOT)
    assert again.elf(lib) == read_elf(lib) and (again.read, again.reused) == (1, 0)


@requires_gcc
def test_a_file_older_than_the_run_that_wrote_the_index_is_reused(objects):
    state, lib, _ext = objects
    _next_second()
    first = load_index(str(state), ROOT)
    first.elf(lib)
    _keep(state, first)  # in the second the run began: only files changed in it, or later, are racy
    again = load_index(str(state), ROOT)
    assert again.elf(lib) == read_elf(lib)
    assert (again.read, again.reused) == (0, 1)


@requires_gcc
def test_an_invalid_file_is_never_kept_and_fails_every_time(objects, tmp_path):
    state, _lib, _ext = objects
    text = tmp_path / "libtext.so"
    text.write_bytes(b"/* GNU ld script */\nINPUT ( libc.so.6 )\n" * 4)
    index = load_index(str(state), ROOT)
    for _attempt in range(2):
        with pytest.raises(ElfError, match="invalid ELF header"):
            index.elf(str(text))
    assert json.loads(index.as_json())["elf"] == {}


def _index(**fields):
    """An index's bytes: a valid empty one of this version for /srv/venv, with ``fields`` changed (None: left out)."""
    data = dict({"format": 6, "version": VERSION, "root": ROOT, "started_ns": 1, "elf": {}, "kernels": {}, "dists": {}, "wheels": {},
                 "digests": {}}, **fields)
    return json.dumps({k: v for k, v in data.items() if v is not None}).encode()


@pytest.mark.parametrize("content, why", [
    (b"{not json", "unreadable or not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    (b'{"format": 0}', "another format than 6"),
    (b'[]', "another format than 6"),
    (b'{"format": 1, "root": "/srv/venv", "written_ns": 1, "elf": {}, "kernels": {}}', "another format than 6"),
    (b'{"format": 2, "root": "/srv/venv", "started_ns": 1, "elf": {}, "kernels": {}}', "another format than 6"),
    (b'{"format": 3, "root": "/srv/venv", "started_ns": 1, "elf": {}, "kernels": {}, "dists": {}}', "another format than 6"),
    (_index(format=4), "another format than 6"),
    (_index(format=5), "another format than 6"),
    (_index(version="0.9.0"), "written by another version of the collection (0.9.0)"),
    (_index(version=None), "written by another version of the collection (None)"),
    (_index(root="/srv/other"), "written for another venv (/srv/other)"),
    (_index(started_ns=None), "no time its run began"),
    (_index(elf={"/a.so": [[[1, 2, 3, 4]], [2]]}), "a corrupt elf entry for /a.so"),
    (_index(elf={"/a.so": [[None], [2]]}), "a corrupt elf entry for /a.so"),
    (_index(kernels={"/a.so": [[[1, 2, 3, 4, 5]], {"sass": 1}]}), "a corrupt kernels entry for /a.so"),
    (_index(dists={"/s/a-1.dist-info": [[[1, 2, 3, 4, 5], None], {"name": "a"}]}), "a corrupt dists entry for /s/a-1.dist-info"),
    (_index(wheels={"/wh/a-1-py3-none-any.whl": [[[1, 2, 3, 4, 5]], "not-a-digest"]}),
     "a corrupt wheels entry for /wh/a-1-py3-none-any.whl"),
    (_index(wheels=None), "no wheels entries"),
    (_index(digests={"/s/x.so": [[[1, 2, 3, 4, 5]], ["sha256", "not base64!"]]}), "a corrupt digests entry for /s/x.so"),
    (_index(digests={"/s/x.so": [[[1, 2, 3, 4, 5]], ["sha256"]]}), "a corrupt digests entry for /s/x.so"),
    (_index(digests=None), "no digests entries"),
    (_index(kernels=None), "no kernels entries"),
    (_index(dists=None), "no dists entries"),
])
def test_a_corrupt_foreign_or_other_format_index_is_ignored_saying_why(tmp_path, content, why):
    (tmp_path / "read-index.json").write_bytes(content)
    index = load_index(str(tmp_path), ROOT)
    assert index.ignored == why
    assert json.loads(index.as_json())["elf"] == {}


@requires_gcc
def test_a_copied_state_folder_is_another_venvs(objects, tmp_path):
    state, lib, _ext = objects
    first = load_index(str(state), ROOT)
    first.elf(lib)
    _next_second()
    _keep(state, first)
    copy = tmp_path / "copy"
    shutil.copytree(str(state), str(copy))
    assert load_index(str(copy), "/srv/copy").ignored == "written for another venv (%s)" % ROOT


@pytest.fixture()
def dist_infos(tmp_path):
    """Two dist-infos as pip writes them, one with a quoted RECORD path, a hashless .pyc and a RECORD problem."""
    state, site = tmp_path / "state", str(tmp_path / "site")
    state.mkdir()
    os.makedirs(site)
    demo = make_dist(site, "Demo_Pkg", "1.0", {"demo/a.py": b"x = 1\n", "demo/__init__.py": b""},
                     requires=["numpy>=1.0", 'extra-thing; extra == "x"'], requested=True)
    with open(demo + "/RECORD", "a") as handle:
        handle.write('demo/__pycache__/__init__.cpython-312.pyc,,\n"demo/q,x.py",,\nbad,line,with,four\n')
    other = make_dist(site, "other", "2.0", {"other.py": b"y = 2\n"}, installer=None)
    return state, site, demo, other


def test_an_unchanged_dist_info_is_answered_from_the_index_as_read_dist_info_reads_it(dist_infos):
    state, site, demo, other = dist_infos
    _next_second()
    first = load_index(str(state), ROOT)
    assert read_distributions([site], first.dist_info) == read_distributions([site])
    _keep(state, first)
    again = load_index(str(state), ROOT)
    answered = read_distributions([site], again.dist_info)
    assert answered == read_distributions([site])
    assert (again.reused, again.read, again.changed) == (2, 0, False)
    assert answered[0].problems[0] == "RECORD line 9: 4 fields, expected 3" and answered[0].requested
    assert [e.path for e in answered[0].entries][-3:-1] == ["demo/__pycache__/__init__.cpython-312.pyc", "demo/q,x.py"]


@pytest.mark.parametrize("change", ["REQUESTED removed", "direct_url.json added", "RECORD rewritten", "INSTALLER written"])
def test_a_dist_info_whose_files_changed_is_read_again(dist_infos, change):
    state, site, demo, other = dist_infos
    _next_second()
    first = load_index(str(state), ROOT)
    read_distributions([site], first.dist_info)
    _keep(state, first)
    _next_second()
    if change == "REQUESTED removed":
        os.unlink(demo + "/REQUESTED")
    elif change == "direct_url.json added":
        with open(demo + "/direct_url.json", "w") as handle:
            handle.write("{}")
    elif change == "RECORD rewritten":
        with open(demo + "/RECORD", "r+") as handle:  # in place, the same size: only mtime and ctime tell
            text = handle.read()
            handle.seek(0)
            handle.write(text.replace("demo/a.py", "demo/b.py"))
    else:
        with open(other + "/INSTALLER", "w") as handle:
            handle.write("uv\n")
    again = load_index(str(state), ROOT)
    assert read_distributions([site], again.dist_info) == read_distributions([site])
    assert (again.reused, again.read) == (1, 1)


def test_a_dist_info_changed_in_the_second_its_run_began_is_read_again(dist_infos):
    state, site, demo, _other = dist_infos
    _next_second()
    first = load_index(str(state), ROOT)
    os.utime(demo + "/METADATA")
    read_distributions([site], first.dist_info)
    _keep(state, first)
    again = load_index(str(state), ROOT)
    assert (again.dist_info(demo, site), again.reused, again.read) == (read_dist_info(demo, site), 0, 1)


@requires_gcc
def test_a_file_changed_in_the_second_its_index_run_began_is_racy_even_before_that_instant_fixed_clock(objects, monkeypatch):
    """Mutation guarded: the racy window not rounded down to the second. The file's times come from the kernel's
    coarse clock, which lags ``time.time_ns()``: a file written in the run's second, before the instant the run
    began, could be written again in that second with the same times. The run's clock is fixed one nanosecond after
    the file's newest time, in the same second, so the case does not depend on the two clocks."""
    state, lib, _ext = objects
    stamp = os.stat(lib)
    while max(stamp.st_mtime_ns, stamp.st_ctime_ns) % 10 ** 9 == 10 ** 9 - 1:  # one more would be the next second
        os.utime(lib)  # a new mtime and ctime
        stamp = os.stat(lib)
    newest = max(stamp.st_mtime_ns, stamp.st_ctime_ns)
    monkeypatch.setattr(read_index.time, "time_ns", lambda: newest + 1)
    first = load_index(str(state), ROOT)
    monkeypatch.undo()
    first.elf(lib)
    _keep(state, first)
    again = load_index(str(state), ROOT)
    assert again.elf(lib) == read_elf(lib) and (again.read, again.reused) == (1, 0)


@requires_gcc
def test_a_file_of_another_size_with_its_recorded_inode_and_times_is_read_again_stand_in_stat(objects, monkeypatch):
    """Mutation guarded: the identity without the size. Where ctime follows mtime (some network file systems), a
    rewrite that puts the old mtime back leaves inode and times as recorded: only the size tells. A stand-in
    ``os.stat`` (no local file system can make this case) answers the recorded inode and times with the new size."""
    state, _lib, ext = objects
    _next_second()
    first = load_index(str(state), ROOT)
    assert first.kernels(ext).sass == (80, 90)
    _keep(state, first)
    recorded = os.stat(ext)
    with open(ext, "ab") as handle:
        handle.write(b"\0" * 4096)  # another size; the stand-in stat says nothing else changed
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        found = real_stat(path, *args, **kwargs)
        if path != ext:
            return found
        fields = list(recorded)
        fields[6] = found.st_size
        return os.stat_result(fields, {"st_mtime_ns": recorded.st_mtime_ns, "st_ctime_ns": recorded.st_ctime_ns,
                                       "st_atime_ns": recorded.st_atime_ns})
    monkeypatch.setattr(read_index.os, "stat", stat)
    again = load_index(str(state), ROOT)
    assert again.kernels(ext).sass == (80, 90) and (again.read, again.reused) == (1, 0)


# --- the import probe, answered from the last one (a stand-in probe: what it loaded are real files here) ------------

def _stand_in_probe(loaded, sources=(), **changes):
    fields = dict(ran=True, ok=True, error=None, traceback=None, returncode=0, timed_out=False, signal=None,
                  loaded=tuple(loaded), versions={"torch": "2.9.1", "cudnn": 91002}, duration=1.5, sources=tuple(sources))
    fields.update(changes)
    return ProbeResult(**fields)


@pytest.fixture()
def probed(tmp_path):
    """(state dir, key, the paths given, a library and a module the stand-in probe loaded, the runs made)."""
    state = tmp_path / "state"
    state.mkdir()
    python, lib, module = tmp_path / "python3", tmp_path / "libtorch.so", tmp_path / "torch_init.py"
    for path in (python, lib, module):
        path.write_bytes(b"v1")
    key = {"anchor": "torch", "python": str(python), "ld_library_path": [], "loader_only": False,
           "driver": ["NVRM version: 580.95.05", ["nvidia0"]]}
    runs = []

    def run():
        runs.append(1)
        return _stand_in_probe([str(lib)], [str(module)])
    _next_second()  # the files are older than the run that records the probe
    first = load_index(str(state), ROOT)
    assert first.probe(key, [str(python)], run).reused_from is None
    _keep(state, first)
    return state, key, [str(python)], lib, module, run, runs


def _again(state, key, paths, run):
    return load_index(str(state), ROOT).probe(key, paths, run)


def test_an_unchanged_venv_is_answered_from_the_last_probe_saying_when_it_ran(probed):
    state, key, paths, _lib, _module, run, runs = probed
    again = _again(state, key, paths, run)
    assert len(runs) == 1 and again.reused_from is not None and again.reused_from.endswith("Z")
    assert again == dataclasses.replace(_stand_in_probe(*[list(again.loaded), list(again.sources)]), reused_from=again.reused_from)


@pytest.mark.parametrize("change", ["library", "module", "interpreter"])
def test_a_file_the_import_depended_on_replaced_runs_the_probe_again(probed, change):
    state, key, paths, lib, module, run, runs = probed
    target = {"library": lib, "module": module, "interpreter": paths[0]}[change]
    os.rename(str(_write(str(target) + ".new", b"v2")), str(target))  # as installers do: a new inode
    assert _again(state, key, paths, run).reused_from is None and len(runs) == 2


@pytest.mark.parametrize("field, value", [("ld_library_path", ["/opt/cuda/lib64"]),
                                          ("driver", ["NVRM version: 590.10", ["nvidia0"]]), ("anchor", "jax")])
def test_another_loading_variable_driver_or_anchor_runs_the_probe_again(probed, field, value):
    state, key, paths, _lib, _module, run, runs = probed
    assert _again(state, dict(key, **{field: value}), paths, run).reused_from is None and len(runs) == 2


def test_a_file_changed_in_the_second_the_probe_was_recorded_is_never_trusted(probed):
    state, key, paths, lib, _module, run, runs = probed
    _next_second()
    index = load_index(str(state), ROOT)
    os.rename(str(_write(str(lib) + ".new", b"v3")), str(lib))  # changed in the second this run began
    assert index.probe(key, paths, run).reused_from is None
    _keep(state, index)
    assert _again(state, key, paths, run).reused_from is None and len(runs) == 3  # racy: not trusted


def test_an_index_whose_run_began_at_the_epoch_trusts_no_probe_even_one_whose_files_are_all_absent(tmp_path):
    """Mutation caught: ``default=0`` made ``default=-1`` in _newest. The identity of files that are all absent has no
    newest time (0); a clock at 0 when the index's run began (a started_ns of 0, a valid index) makes the racy second
    0, and 0 is not before it: the probe runs again. With -1 it would be answered from the index."""
    state = tmp_path / "state"
    state.mkdir()
    absent = [str(tmp_path / "absent-python"), str(tmp_path / "absent.pth")]
    runs = []

    def run():
        runs.append(1)
        return _stand_in_probe([])
    first = load_index(str(state), ROOT)
    first.probe({"anchor": "torch"}, absent, run)
    data = json.loads(first.as_json())
    assert data["probe"]["identity"] == [None, None]
    _write(index_path(str(state)), json.dumps(dict(data, started_ns=0)).encode())
    assert load_index(str(state), ROOT).probe({"anchor": "torch"}, absent, run).reused_from is None and len(runs) == 2


def test_a_probe_that_timed_out_is_never_kept(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    index = load_index(str(state), ROOT)
    index.probe({"anchor": "torch"}, [], lambda: _stand_in_probe([], ok=False, timed_out=True))
    assert json.loads(index.as_json())["probe"] is None


def test_probe_always_runs_it_and_keeps_the_new_result(probed):
    state, key, paths, _lib, _module, run, runs = probed
    index = load_index(str(state), ROOT)
    assert index.probe(key, paths, run, reuse=False).reused_from is None and len(runs) == 2


def _write(path, data):
    with open(path, "wb") as handle:
        handle.write(data)
    return path


@pytest.mark.parametrize("probe", [None, {"key": {}}, {"key": {}, "at": "x", "paths": ["/a"], "identity": [], "value": {}},
                                   {"key": {}, "at": "x", "paths": ["/a"], "identity": [[1, 2]], "value": {}},
                                   {"key": {}, "at": "x", "paths": [], "identity": [], "value": {"ran": True}}])
def test_a_recorded_probe_that_is_not_one_is_run_again(tmp_path, probe):
    state = tmp_path / "state"
    state.mkdir()
    data = {"format": 6, "version": VERSION, "root": ROOT, "started_ns": 1, "elf": {}, "kernels": {}, "dists": {}, "wheels": {}, "digests": {},
            "probe": probe}
    (state / "read-index.json").write_text(json.dumps(data), encoding="utf-8")
    runs = []
    index = load_index(str(state), ROOT)
    assert index.ignored is None
    index.probe({}, [], lambda: runs.append(1) or _stand_in_probe([]))
    assert runs == [1]


# --- mutation survivors of the read index's rules (make mutate, area read_index) --------------------------------------

HEX = "b" * 64


def _wheel_file(tmp_path):
    path = tmp_path / "wh" / "demo-1.0-py3-none-any.whl"
    path.parent.mkdir()
    path.write_bytes(b"wheel bytes")
    return str(path), hashlib.sha256(b"wheel bytes").hexdigest()


@pytest.mark.parametrize("identity", [[], [[1, 2, 3, 4]], [None]], ids=["empty", "a short stamp", "no stamp of its own"])
def test_an_identity_that_is_not_one_makes_the_index_corrupt(tmp_path, identity):
    """Mutations caught: each ``and`` of _valid_identity made ``or`` (the entry's value is valid, so only the
    identity's check can refuse it)."""
    (tmp_path / "read-index.json").write_bytes(_index(wheels={"/wh/a-1-py3-none-any.whl": [identity, HEX]}))
    assert load_index(str(tmp_path), ROOT).ignored == "a corrupt wheels entry for /wh/a-1-py3-none-any.whl"


def test_a_recorded_identity_that_sorts_above_the_files_is_not_its_own(tmp_path):
    """Mutation caught: ``entry[0] == identity`` to ``>=`` in _answer (a file whose mtime was put back before the one
    recorded compares lower, and would be answered from the stale entry). The index's run is dated after the file, so
    only the identity decides."""
    state = tmp_path / "state"
    state.mkdir()
    wheel, digest = _wheel_file(tmp_path)
    st = os.stat(wheel)
    later = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns + 1, st.st_ctime_ns]
    future = time.time_ns() + 3600 * 10 ** 9
    (state / "read-index.json").write_bytes(_index(started_ns=future, wheels={wheel: [[later], HEX]}))
    index = load_index(str(state), ROOT)
    assert index.ignored is None
    assert (index.wheel_sha256(wheel), index.read, index.reused) == (digest, 1, 0)
    # the same entry with the file's own identity is answered from the index: the test above is the identity's doing
    own = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    (state / "read-index.json").write_bytes(_index(started_ns=future, wheels={wheel: [[own], HEX]}))
    index = load_index(str(state), ROOT)
    assert (index.wheel_sha256(wheel), index.read, index.reused) == (HEX, 0, 1)


def test_a_file_changed_exactly_at_the_second_the_index_run_began_is_racy_fixed_clock(tmp_path, monkeypatch):
    """Mutation caught: ``_newest(identity) < self._racy_from`` to ``<=`` in _answer. A stand-in identity (mtime and
    ctime on the whole second the index's run began: no file system clock can be made to land there) for a fixed
    clock."""
    state = tmp_path / "state"
    state.mkdir()
    wheel, digest = _wheel_file(tmp_path)
    second = 1_700_000_000 * 10 ** 9
    stamp = [1, 2, 11, second, second]
    monkeypatch.setattr(read_index, "_identity", lambda path, inside: [stamp])
    for started, answer in ((second, digest), (second + 10 ** 9, HEX)):
        (state / "read-index.json").write_bytes(_index(started_ns=started, wheels={wheel: [[stamp], HEX]}))
        assert load_index(str(state), ROOT).wheel_sha256(wheel) == answer


def test_a_file_with_an_mtime_in_the_future_is_never_answered_from_the_index(tmp_path):
    """Mutations caught: ``stamp[3]`` (mtime) to ``stamp[2]`` or ``stamp[4]`` in _newest (only ctime would count, and
    a file dated ahead, by a skewed clock or ``touch -d``, would be trusted though it may change within its own
    second)."""
    state = tmp_path / "state"
    state.mkdir()
    wheel, digest = _wheel_file(tmp_path)
    ahead = time.time_ns() + 24 * 3600 * 10 ** 9
    os.utime(wheel, ns=(ahead, ahead))
    _next_second()
    first = load_index(str(state), ROOT)
    assert first.wheel_sha256(wheel) == digest
    _keep(state, first)
    _next_second()
    again = load_index(str(state), ROOT)
    assert (again.wheel_sha256(wheel), again.read, again.reused) == (digest, 1, 0)


@requires_gcc
def test_an_entry_answered_from_the_index_is_kept_for_the_run_after(objects):
    """Mutations caught: ``[identity, entry[1]]`` to ``entry[0]`` or ``entry[2]`` in _answer (the kept entry would hold
    the identity, or the decoded value that JSON cannot write, instead of the stored one)."""
    state, lib, _ext = objects
    _next_second()
    first = load_index(str(state), ROOT)
    first.elf(lib)
    _keep(state, first)
    for _run in range(2):
        again = load_index(str(state), ROOT)
        assert again.ignored is None and again.elf(lib) == read_elf(lib) and (again.read, again.reused) == (0, 1)
        _keep(state, again)


def test_a_dist_info_file_after_an_absent_one_still_counts(tmp_path):
    """Mutation caught: ``continue`` to ``break`` in _identity (the files after an absent INSTALLER would be left out
    of the identity: REQUESTED rewritten in place would go unseen)."""
    state, site = tmp_path / "state", str(tmp_path / "site")
    state.mkdir()
    os.makedirs(site)
    solo = make_dist(site, "solo", "1.0", {"solo.py": b"z = 3\n"}, installer=None, requested=True)
    _next_second()
    first = load_index(str(state), ROOT)
    read_distributions([site], first.dist_info)
    _keep(state, first)
    _next_second()
    with open(solo + "/REQUESTED", "w") as handle:  # in place: the folder's own stamp does not change
        handle.write("asked for again\n")
    again = load_index(str(state), ROOT)
    assert read_distributions([site], again.dist_info) == read_distributions([site])
    assert (again.read, again.reused) == (1, 0)


def test_a_dist_info_file_that_cannot_be_stated_is_read_as_without_an_index(tmp_path):
    """Mutation caught: ``except OSError`` taken out of _identity (RECORD as a symbolic link to itself: ``stat``
    raises ELOOP, and the index must let read_dist_info say what is wrong instead of raising)."""
    state, site = tmp_path / "state", str(tmp_path / "site")
    state.mkdir()
    os.makedirs(site)
    loop = make_dist(site, "loop", "1.0", {"loop.py": b"w = 4\n"})
    os.remove(loop + "/RECORD")
    os.symlink(loop + "/RECORD", loop + "/RECORD")
    index = load_index(str(state), ROOT)
    assert index.dist_info(loop, site) == read_dist_info(loop, site)
    assert (index.read, index.reused) == (0, 0)
