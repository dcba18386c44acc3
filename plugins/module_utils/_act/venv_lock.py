# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One repair at a time per venv: an flock on ``<venv>/.cuda_venv/lock``.

Private to the gpuops.cuda_venv collection: not a public API.

The kernel drops an flock when the last descriptor of its open file goes away,
so a crashed holder leaves no stale lock. Pass ``lock.fileno()`` to installer
subprocesses (``pass_fds``): if the holder is killed while pip still runs, the
orphaned pip keeps the venv locked until it exits, and the next run cannot
restore the venv underneath it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from typing import Callable, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import make_dirs
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import state_dir_of

LOCK_NAME = "lock"
STATE_DIR_MODE = 0o700


class LockError(CudaVenvError):
    """The venv's lock cannot be taken."""


class LockBusy(LockError):
    """Another process holds the venv's lock."""

    def __init__(self, venv: str, holder: dict, waited: float = 0.0) -> None:
        self.venv = venv
        self.holder = holder
        self.waited = waited
        waited_text = "; waited %gs" % waited if waited else ""
        super().__init__("venv %s is being repaired by %s%s; retry later or raise lock_timeout" % (venv, describe_holder(holder), waited_text))


def describe_holder(holder: dict) -> str:
    """'pid 123 on host h since 2026-...' from the lock file's record, tolerating a partial one."""
    pid = holder.get("pid")
    if not isinstance(pid, int):
        return "an unknown process"
    text = "pid %d" % pid
    host = holder.get("host")
    if host:
        text += " on %s" % host
    if holder.get("since"):
        text += " since %s" % holder["since"]
    if host == os.uname().nodename and not _alive(pid):
        text += " (that pid has exited; a process it started still holds the lock)"
    return text


def ensure_state_dir(state_dir: str) -> str:
    """Create the state dir (owner-only: the journal may name index URLs) and return it.

    Creating it changes its parent's mtime: the parent (the venv root; for the swap folder, the venv's own
    parent) gets its mtime back, so a repair that ends rolled back leaves the venv's metadata as it found it.
    """
    if os.path.isdir(state_dir):
        return state_dir
    parent = os.path.dirname(os.path.abspath(state_dir))
    before = os.stat(parent) if os.path.isdir(parent) else None
    make_dirs(state_dir, STATE_DIR_MODE)
    if before is not None:
        os.utime(parent, ns=(before.st_atime_ns, before.st_mtime_ns))
    return state_dir


class VenvLock:
    """Context manager: exclusive flock on ``<venv>/.cuda_venv/lock`` of the venv root ``venv`` (named in messages).

    ``timeout`` 0 fails at once with LockBusy; otherwise poll until the deadline.
    """

    def __init__(
        self,
        venv: str,
        timeout: float = 0.0,
        poll: float = 0.1,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.state_dir = state_dir_of(venv)
        self.path = os.path.join(self.state_dir, LOCK_NAME)
        self.timeout = timeout
        self.venv = venv
        self.poll = poll
        self._sleep = sleep
        self._fd: Optional[int] = None

    def __enter__(self) -> "VenvLock":
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()

    def fileno(self) -> int:
        if self._fd is None:
            raise ValueError("lock %s is not held" % self.path)
        return self._fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> "VenvLock":
        if self._fd is not None:
            raise ValueError("lock %s is already held by this object" % self.path)
        try:
            ensure_state_dir(self.state_dir)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise LockError("cannot create the lock %s for venv %s: %s; run as the venv's owner" % (self.path, self.venv, exc.strerror or exc)) from exc
        start = time.monotonic()
        try:
            while not _try_flock(fd):
                waited = time.monotonic() - start
                if waited >= self.timeout:
                    raise LockBusy(self.venv, read_holder(self.path), round(waited, 1) if self.timeout else 0.0)
                self._sleep(min(self.poll, self.timeout - waited))
            _write_holder(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        """Clear the holder record and unlock; a no-op when not held."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def read_holder(path: str) -> dict:
    """The holder record in the lock file; {} when empty or half-written."""
    try:
        with open(path, "r", encoding="utf-8") as handle:
            data = json.loads(handle.read() or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _write_holder(fd: int) -> None:
    record = {
        "pid": os.getpid(),
        "host": os.uname().nodename,  # socket.gethostname()'s answer, without importing socket
        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record, sort_keys=True) + "\n").encode("utf-8"), 0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
