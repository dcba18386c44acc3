# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for durable: real files get the bytes, mode and owner asked for, in the order that survives a power cut,
and a failure leaves the old file and no temporary name."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import re
import shutil
import stat
import tempfile
import threading
import types

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import durable
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import (
    fsync_dir, fsync_file, make_dirs, replace_file, replace_with, rewrite_file, start_writeback, sync_filesystem)

ROOT = os.geteuid() == 0
NOBODY = 65534  # the writer that is not root


def mode_of(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def fd_facts(fd):
    """What a test sees of an open descriptor: the path it is open on and its access mode."""
    access = {os.O_RDONLY: "r", os.O_WRONLY: "w", os.O_RDWR: "rw"}[fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE]
    return os.readlink("/proc/self/fd/%d" % fd), access


@pytest.fixture
def fsyncs(monkeypatch):
    """The fsyncs made, each as the fd_facts of its descriptor; the real fsync still runs."""
    seen, real_fsync = [], os.fsync

    def fsync(fd):
        seen.append(fd_facts(fd))
        real_fsync(fd)
    monkeypatch.setattr(durable.os, "fsync", fsync)
    return seen


@pytest.fixture
def no_umask():
    """Umask 0 during the test: a file or folder gets exactly the mode it is made with."""
    mask = os.umask(0)
    yield
    os.umask(mask)


def test_a_new_file_gets_the_bytes_and_mode_and_nothing_else_is_left(tmp_path):
    target = tmp_path / "state.json"
    replace_file(str(target), b'{"a": 1}', 0o640)
    assert target.read_bytes() == b'{"a": 1}' and mode_of(target) == 0o640
    assert os.listdir(str(tmp_path)) == ["state.json"]


def test_the_default_mode_is_owner_only(tmp_path):
    replace_file(str(tmp_path / "f"), b"x")
    assert mode_of(tmp_path / "f") == 0o600


def test_an_existing_file_is_replaced_by_a_new_inode_so_a_hard_link_keeps_the_old_bytes(tmp_path):
    target, cache = tmp_path / "RECORD", tmp_path / "cache-link"
    target.write_bytes(b"old\n")
    os.link(str(target), str(cache))
    replace_file(str(target), b"new\n")
    assert target.read_bytes() == b"new\n" and cache.read_bytes() == b"old\n"
    assert os.stat(str(target)).st_ino != os.stat(str(cache)).st_ino


def test_large_data_is_written_whole(tmp_path):
    data = os.urandom(3 << 20) + b"end"
    replace_file(str(tmp_path / "big"), data)
    assert (tmp_path / "big").read_bytes() == data


def test_rewrite_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "script"
    target.write_bytes(b"#!/old/python\n")
    os.chmod(str(target), 0o751)
    rewrite_file(str(target), b"#!/new/python\n")
    assert target.read_bytes() == b"#!/new/python\n" and mode_of(target) == 0o751


def test_a_setuid_bit_survives_the_owner_change_with_a_stand_in_fchown_that_clears_it(tmp_path, monkeypatch):
    """Mutation guarded: the mode set before the owner. The kernel clears setuid and setgid when a file's owner
    changes, so the mode must come after it. The stand-in fchown (changing an owner needs root) clears them as the
    kernel does, so the order is checked as any user, not only as root."""
    calls = []

    def fchown(fd, uid, gid):
        calls.append(("fchown", uid, gid))
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) & ~0o6000)
    monkeypatch.setattr(durable.os, "fchown", fchown)
    target = tmp_path / "tool"
    replace_file(str(target), b"x", 0o4755, (1234, 5678))
    assert calls == [("fchown", 1234, 5678)] and mode_of(target) == 0o4755


@pytest.mark.skipif(not ROOT, reason="changing a file's owner needs root")
def test_as_root_the_owner_is_set_and_a_setuid_bit_survives_the_chown(tmp_path):
    target = tmp_path / "tool"
    replace_file(str(target), b"x", 0o4755, (1234, 5678))
    st = os.stat(str(target))
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (1234, 5678, 0o4755)


@pytest.mark.skipif(not ROOT, reason="changing a file's owner needs root")
def test_as_root_rewrite_keeps_the_owner_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "RECORD"
    target.write_bytes(b"a,,\n")
    os.chown(str(target), 4321, 8765)
    os.chmod(str(target), 0o644)
    rewrite_file(str(target), b"b,,\n")
    st = os.stat(str(target))
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4321, 8765, 0o644)


def test_a_missing_folder_raises_and_creates_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        replace_file(str(tmp_path / "missing" / "f"), b"x")
    assert os.listdir(str(tmp_path)) == []


def as_another_user(action) -> int:
    """``action()`` in a forked child that, when this process is root, first becomes an unprivileged user (uid and gid
    65534, no supplementary groups: what setpriv --reuid --regid --clear-groups does); the child's exit status: 0 when
    the action raised PermissionError, 1 when it returned, 2 on anything else."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        code = 2
        try:
            if ROOT:
                os.setgroups([])
                os.setresgid(NOBODY, NOBODY, NOBODY)
                os.setresuid(NOBODY, NOBODY, NOBODY)
            action()
            code = 1
        except PermissionError:
            code = 0
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_read_only_folder_raises_and_leaves_the_old_file(machine_temp_dir):
    """Root writes into any folder, so as root the writer is another user; the folder's parent lets that user in."""
    folder = tempfile.mkdtemp(dir=machine_temp_dir)
    try:
        target = os.path.join(folder, "f")
        with open(target, "wb") as handle:
            handle.write(b"old")
        if ROOT:
            os.chown(folder, NOBODY, NOBODY)
            os.chown(target, NOBODY, NOBODY)
        os.chmod(folder, 0o500)
        assert as_another_user(lambda: replace_file(target, b"new")) == 0
        os.chmod(folder, 0o700)
        with open(target, "rb") as handle:
            assert handle.read() == b"old" and os.listdir(folder) == ["f"]
        assert as_another_user(lambda: replace_file(target, b"new")) == 1  # the same user writes once it may
        with open(target, "rb") as handle:
            assert handle.read() == b"new"
    finally:
        os.chmod(folder, 0o700)
        shutil.rmtree(folder)


def test_a_failed_rename_removes_the_written_temporary(tmp_path):
    """The temporary is written and fsync'ed, then the rename fails (the path is a folder that is not empty)."""
    target = tmp_path / "taken"
    target.mkdir()
    (target / "inside").write_bytes(b"keep")
    with pytest.raises(OSError):
        replace_file(str(target), b"new")
    assert sorted(os.listdir(str(tmp_path))) == ["taken"] and (target / "inside").read_bytes() == b"keep"


def test_a_failing_make_leaves_the_old_file_and_removes_what_it_made(tmp_path):
    target = tmp_path / "f"
    target.write_bytes(b"old")

    def make(name):
        with open(name, "wb") as handle:
            handle.write(b"half")
        raise OSError(28, "No space left on device")
    with pytest.raises(OSError, match="No space"):
        replace_with(str(target), make)
    assert target.read_bytes() == b"old" and os.listdir(str(tmp_path)) == ["f"]


def test_replace_with_puts_a_hard_link_or_a_symlink_in_place(tmp_path):
    blob, target, link = tmp_path / "blob", tmp_path / "file", tmp_path / "link"
    blob.write_bytes(b"snapshot bytes")
    target.write_bytes(b"damaged")
    link.write_bytes(b"not a link yet")
    replace_with(str(target), lambda name: os.link(str(blob), name))
    replace_with(str(link), lambda name: os.symlink("file", name))
    assert os.stat(str(target)).st_ino == os.stat(str(blob)).st_ino
    assert os.readlink(str(link)) == "file" and link.read_bytes() == b"snapshot bytes"
    assert sorted(os.listdir(str(tmp_path))) == ["blob", "file", "link"]


def test_a_temporary_name_another_process_holds_is_skipped_and_kept(tmp_path, monkeypatch):
    names = iter([b"\x00\x00\x00\x01", b"\x00\x00\x00\x02"])
    monkeypatch.setattr(durable.os, "urandom", lambda size: next(names))
    other = tmp_path / ".second.00000001.tmp"
    other.write_bytes(b"another process's")
    replace_file(str(tmp_path / "second"), b"2")
    assert other.read_bytes() == b"another process's" and (tmp_path / "second").read_bytes() == b"2"


def test_the_data_is_fsynced_before_the_rename_and_the_folder_after_it(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        calls.append(("fsync", os.readlink("/proc/self/fd/%d" % fd)))
        real_fsync(fd)

    def replace(src, dst):
        calls.append(("rename", os.path.basename(str(dst))))
        real_replace(src, dst)
    monkeypatch.setattr(durable.os, "fsync", fsync)
    monkeypatch.setattr(durable.os, "replace", replace)
    replace_file(str(tmp_path / "manifest.json"), b"{}")
    assert [c[0] for c in calls] == ["fsync", "rename", "fsync"]
    assert os.path.basename(calls[0][1]).startswith(".manifest.json.") and calls[0][1].endswith(".tmp")
    assert calls[1:] == [("rename", "manifest.json"), ("fsync", str(tmp_path))]


def test_without_sync_folder_the_caller_fsyncs_the_folder(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(durable, "fsync_dir", synced.append)
    replace_with(str(tmp_path / "f"), lambda name: os.symlink("x", name), sync_folder=False)
    replace_file(str(tmp_path / "g"), b"")
    assert synced == [str(tmp_path)]


def test_fsync_dir_needs_a_folder(tmp_path):
    fsync_dir(str(tmp_path))
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        fsync_dir(str(tmp_path / "f"))


def test_make_dirs_creates_the_missing_folders_and_fsyncs_each_parent_after_its_mkdir(tmp_path, monkeypatch):
    calls = []
    real_mkdir = os.mkdir

    def mkdir(path, mode=0o777):
        calls.append(("mkdir", str(path)))
        real_mkdir(path, mode)
    monkeypatch.setattr(durable.os, "mkdir", mkdir)
    monkeypatch.setattr(durable, "fsync_dir", lambda path: calls.append(("fsync", path)))
    make_dirs(str(tmp_path / "state" / "snapshots" / "run1"), 0o700)
    base = str(tmp_path)
    assert calls == [("mkdir", base + "/state"), ("fsync", base), ("mkdir", base + "/state/snapshots"), ("fsync", base + "/state"),
                     ("mkdir", base + "/state/snapshots/run1"), ("fsync", base + "/state/snapshots")]
    assert mode_of(tmp_path / "state" / "snapshots" / "run1") == 0o700 & ~_umask()
    del calls[:]
    make_dirs(str(tmp_path / "state" / "snapshots"))  # there already: nothing made, nothing synced
    assert calls == []


def test_make_dirs_below_a_file_fails_as_os_makedirs_does(tmp_path):
    (tmp_path / "venv").write_bytes(b"not a folder")
    with pytest.raises(NotADirectoryError):
        make_dirs(str(tmp_path / "venv" / ".cuda_venv"))
    assert (tmp_path / "venv").read_bytes() == b"not a folder"


def test_sync_filesystem_syncs_a_real_folder_and_names_a_missing_one(tmp_path):
    sync_filesystem(str(tmp_path))
    with pytest.raises(FileNotFoundError) as err:
        sync_filesystem(str(tmp_path / "gone"))
    assert err.value.filename == str(tmp_path / "gone")


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_fsync_file_and_fsync_dir_fsync_through_a_read_only_descriptor(tmp_path, fsyncs):
    """A file no one may write is fsync'ed all the same: the descriptor is read-only. Mutations: `_fsync(path, 0)`
    -> 1 (opened write-only) or -1 (every flag: the open fails) in fsync_file."""
    target = tmp_path / "copied.so"
    target.write_bytes(b"\x7fELF")
    os.chmod(str(target), 0o444)
    fsync_file(str(target))
    fsync_dir(str(tmp_path))
    assert fsyncs == [(str(target), "r"), (str(tmp_path), "r")]
    assert target.read_bytes() == b"\x7fELF"


def test_the_temporary_is_owner_only_while_written_under_a_name_of_8_random_hex_digits(tmp_path, monkeypatch, fsyncs, no_umask):
    """The new file is created 0o600 (no one else reads the bytes before the final mode is set), beside the path,
    named from 4 random bytes. Mutations: 0o600 -> 0o601 or 0o577 in _write_new's open; `os.urandom(4)` -> 3 or 5 in
    replace_with."""
    modes, real_write = [], os.write

    def write(fd, data):
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_write(fd, data)
    monkeypatch.setattr(durable.os, "write", write)
    replace_file(str(tmp_path / "state.json"), b"{}", 0o644)
    assert modes == [0o600] and mode_of(tmp_path / "state.json") == 0o644
    (temporary, access), folder = fsyncs
    assert os.path.dirname(temporary) == str(tmp_path) and re.fullmatch(r"\.state\.json\.[0-9a-f]{8}\.tmp", os.path.basename(temporary))
    assert access == "w" and folder == (str(tmp_path), "r")


def test_start_writeback_syncs_in_a_thread_not_waited_for_and_keeps_its_errors(tmp_path, monkeypatch):
    """The caller goes on at once; the sync runs in its own thread; a folder it cannot sync raises nowhere (the
    sync before the commit meets that error)."""
    synced, release = [], threading.Event()

    def slow_sync(path):
        release.wait(10)
        synced.append((path, threading.current_thread().name))
        raise OSError(errno.EIO, "Input/output error", path)
    monkeypatch.setattr(durable, "sync_filesystem", slow_sync)
    uncaught = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    start_writeback(str(tmp_path))
    assert synced == []  # returned before the sync ran
    (thread,) = [t for t in threading.enumerate() if t.name == "writeback"]
    release.set()
    thread.join(10)
    assert synced == [(str(tmp_path), "writeback")] and not thread.is_alive()
    assert uncaught == []  # the OSError stayed in the thread


def test_a_failing_syncfs_raises_the_errno_the_c_library_set_with_the_path_mocked(tmp_path, monkeypatch):
    """syncfs cannot be made to fail on demand here (an I/O error, a full disk): the stand-in library is the real C
    library, opened as the code opens it, whose syncfs is the real one called on a descriptor that is not open, so
    the C library itself sets errno (EBADF). Mutations: `syncfs(fd) != 0` -> `> 0` (-1 taken as success);
    `use_errno=True` -> False (ctypes would not keep the errno: OSError 0)."""
    real_cdll = ctypes.CDLL

    def library(name, use_errno=False):
        libc = real_cdll(name, use_errno=use_errno)
        return types.SimpleNamespace(syncfs=lambda fd: libc.syncfs(-1))
    monkeypatch.setattr(durable.ctypes, "CDLL", library)
    ctypes.set_errno(0)
    with pytest.raises(OSError) as err:
        sync_filesystem(str(tmp_path))
    assert (err.value.errno, err.value.strerror, err.value.filename) == (errno.EBADF, os.strerror(errno.EBADF), str(tmp_path))


def test_make_dirs_makes_owner_only_folders_by_default(tmp_path, no_umask):
    """Mutations: the default mode 0o700 -> 0o701 or 0o677 in make_dirs."""
    make_dirs(str(tmp_path / "state" / "runs"))
    assert (mode_of(tmp_path / "state"), mode_of(tmp_path / "state" / "runs")) == (0o700, 0o700)


def test_make_dirs_goes_on_below_a_folder_a_concurrent_run_made_and_leaves_its_fsync_to_that_run_mocked(tmp_path, monkeypatch):
    """Another run makes ``state/snapshots`` between this run's look and its mkdir (a stand-in mkdir makes it first,
    then the real one fails with EEXIST). Mutations: `if not os.path.isdir(folder)` -> `if os.path.isdir(folder)`
    (`not` dropped, or a second `not` added) in make_dirs; `continue` -> `break` there (the folders below not made)."""
    calls = []
    base = str(tmp_path)
    raced = base + "/state/snapshots"
    real_mkdir = os.mkdir

    def mkdir(path, mode=0o777):
        calls.append(("mkdir", path))
        if path == raced:
            real_mkdir(path, 0o755)  # the concurrent run
        real_mkdir(path, mode)
    monkeypatch.setattr(durable.os, "mkdir", mkdir)
    monkeypatch.setattr(durable, "fsync_dir", lambda path: calls.append(("fsync", path)))
    make_dirs(base + "/state/snapshots/run1", 0o700)
    assert calls == [("mkdir", base + "/state"), ("fsync", base), ("mkdir", raced),
                     ("mkdir", base + "/state/snapshots/run1"), ("fsync", raced)]
    assert os.path.isdir(base + "/state/snapshots/run1")


def test_make_dirs_fails_where_a_concurrent_run_puts_a_file_at_the_folder_mocked(tmp_path, monkeypatch):
    """A file made between the look and the mkdir (a stand-in mkdir writes it, then the real one fails with EEXIST)
    is no folder: the FileExistsError goes up. Mutations: `not` dropped or doubled in make_dirs' `if not
    os.path.isdir(folder)` (the file taken for a folder a concurrent run made)."""
    real_mkdir = os.mkdir
    taken = tmp_path / "state"

    def mkdir(path, mode=0o777):
        if path == str(taken):
            taken.write_bytes(b"not a folder")  # the concurrent run
        real_mkdir(path, mode)
    monkeypatch.setattr(durable.os, "mkdir", mkdir)
    with pytest.raises(FileExistsError):
        make_dirs(str(taken))
    assert taken.read_bytes() == b"not a folder"


@pytest.mark.skipif(not ROOT, reason="giving a file a group its writer is not in needs root")
def test_a_writer_that_is_not_root_rewrites_a_file_of_a_group_it_is_not_in_as_its_own(machine_temp_dir):
    """Only root keeps the owner: another writer never chowns, so a group it is not in is no obstacle and the new
    file is the writer's. Mutation: `os.geteuid() == 0` -> `>= 0` in rewrite_file (the chown to group 0 fails EPERM)."""
    folder = tempfile.mkdtemp(dir=machine_temp_dir)
    try:
        target = os.path.join(folder, "RECORD")
        with open(target, "wb") as handle:
            handle.write(b"a,,\n")
        os.chown(folder, NOBODY, NOBODY)
        os.chown(target, NOBODY, 0)
        os.chmod(target, 0o640)
        assert as_another_user(lambda: rewrite_file(target, b"b,,\n")) == 1
        st = os.stat(target)
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o640)
        with open(target, "rb") as handle:
            assert handle.read() == b"b,,\n" and os.listdir(folder) == ["RECORD"]
    finally:
        shutil.rmtree(folder)
