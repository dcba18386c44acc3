# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""VenvLock between real processes: busy at once, waiting, crashed holders, inherited descriptors."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_lock import LockBusy, LockError, VenvLock, read_holder
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import child_env

HOLDER = """
import subprocess, sys
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_lock import VenvLock
lock = VenvLock(sys.argv[1]).acquire()
if sys.argv[2] == "spawn":  # an installer that inherits the lock, as the runner should start it
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, pass_fds=(lock.fileno(),))
    print(child.pid, flush=True)
print("held", flush=True)
sys.stdin.readline()
lock.release()
"""


@pytest.fixture
def venv(tmp_path):
    return str(tmp_path / "venv")


@pytest.fixture
def state(venv):
    return os.path.join(venv, ".cuda_venv")


@pytest.fixture
def holder(venv):
    """Start a process holding the lock; yields it (stdin line releases it)."""
    procs = []

    def start(mode="plain"):
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, venv, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env(), universal_newlines=True
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_lock_writes_holder_and_clears_it_on_release(venv, state):
    with VenvLock(venv) as lock:
        assert lock.held
        holder = read_holder(os.path.join(state, "lock"))
        assert sorted(holder) == ["host", "pid", "since"]
        assert (holder["pid"], holder["host"]) == (os.getpid(), socket.gethostname())
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", holder["since"])
    assert not lock.held
    assert read_holder(os.path.join(state, "lock")) == {}
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(state, "lock")).st_mode) == 0o600


def test_second_process_gets_lock_busy_at_once(venv, state, holder):
    proc = holder()
    assert proc.stdout.readline() == "held\n"
    since = read_holder(os.path.join(state, "lock"))["since"]
    with pytest.raises(LockBusy) as err:
        VenvLock(venv).acquire()
    assert str(err.value) == "venv %s is being repaired by pid %d on %s since %s; retry later or raise lock_timeout" % (
        venv,
        proc.pid,
        socket.gethostname(),
        since,
    )
    assert err.value.holder["pid"] == proc.pid


def test_with_a_timeout_the_lock_is_taken_once_the_holder_releases(venv, holder):
    proc = holder()
    assert proc.stdout.readline() == "held\n"
    naps = []

    def sleep(seconds):  # the first wait lets the holder go; waiting is then deterministic
        naps.append(seconds)
        proc.stdin.write("release\n")
        proc.stdin.flush()
        proc.wait()

    with VenvLock(venv, timeout=30, sleep=sleep) as lock:
        assert read_holder(lock.path)["pid"] == os.getpid()
    assert naps == [0.1]


def test_timeout_expires_with_lock_busy_naming_the_wait(venv, holder):
    proc = holder()
    assert proc.stdout.readline() == "held\n"
    with pytest.raises(LockBusy) as err:
        VenvLock(venv, timeout=0.3, poll=0.05).acquire()
    assert re.search(r"; waited [0-9.]+s; retry later or raise lock_timeout$", str(err.value))


def test_a_killed_holder_leaves_no_stale_lock(venv, state, holder):
    proc = holder()
    assert proc.stdout.readline() == "held\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert read_holder(os.path.join(state, "lock"))["pid"] == proc.pid  # its record is still there
    with VenvLock(venv) as lock:
        assert read_holder(lock.path)["pid"] == os.getpid()


def test_an_installer_that_inherited_the_lock_keeps_it_after_its_parent_dies(venv, holder):
    proc = holder("spawn")
    installer = int(proc.stdout.readline())
    assert proc.stdout.readline() == "held\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with pytest.raises(LockBusy) as err:
        VenvLock(venv).acquire()
    assert "by pid %d on %s since " % (proc.pid, socket.gethostname()) in str(err.value)
    assert "(that pid has exited; a process it started still holds the lock)" in str(err.value)
    os.kill(installer, signal.SIGKILL)
    # An exited process holds no descriptors, reaped or not; the poll only covers the kill's delivery.
    with VenvLock(venv, timeout=30, poll=0.01):
        pass


def test_unknown_holder_and_misuse(venv, state):
    os.makedirs(state)
    with open(os.path.join(state, "lock"), "w", encoding="utf-8") as handle:
        handle.write('{"pid": 1')  # half-written record
    assert read_holder(os.path.join(state, "lock")) == {}
    first = VenvLock(venv).acquire()
    try:
        with pytest.raises(ValueError):
            first.acquire()
        with open(first.path, "w", encoding="utf-8") as handle:
            json.dump([], handle)
        with pytest.raises(LockBusy) as err:
            VenvLock(venv).acquire()
        assert str(err.value) == "venv %s is being repaired by an unknown process; retry later or raise lock_timeout" % venv
    finally:
        first.release()
    first.release()  # releasing twice is harmless
    with pytest.raises(ValueError):
        first.fileno()


def test_a_lock_that_cannot_be_created_names_the_path(tmp_path):
    venv = tmp_path / "venv"
    venv.write_text("not a directory")
    state = str(venv / ".cuda_venv")
    with pytest.raises(LockError) as err:
        VenvLock(str(venv)).acquire()
    assert str(err.value) == "cannot create the lock %s/lock for venv %s: Not a directory; run as the venv's owner" % (state, venv)
