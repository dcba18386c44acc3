# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a file is replaced: a new name in the same folder, made, fsync'ed, renamed, folder fsync'ed.

Private to the gpuops.cuda_venv collection: not a public API.

After a crash or a power cut the path holds the old content or the new one, never a mix and never an empty
file: the data reaches the disk before the rename that commits it, and the rename before the call returns.
The file is never written in place, so an inode it shared (a hard link into an installer's cache, a copy's
link to the live venv) keeps its bytes. A failed call leaves the path as it was and no temporary name behind.
The append-only journal and the swap's exchange are the two durable writes that do not go through here
(see _act/journal.py, _act/swap.py).
"""

from __future__ import annotations

import ctypes
import os
import stat
import threading
from typing import Callable, Optional, Tuple

# Tries at a free temporary name (tempfile.TMP_MAX): another process would have to take 10000 random names.
_TRIES = 10000


def fsync_dir(path: str) -> None:
    """Make a folder's entries (a create, rename or unlink in it) durable."""
    _fsync(path, os.O_DIRECTORY)


def fsync_file(path: str) -> None:
    """Make the bytes of a file written without fsync (a copy by shutil) durable."""
    _fsync(path, 0)


def _fsync(path: str, flags: int) -> None:
    fd = os.open(path, os.O_RDONLY | flags | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: str, mode: int = 0o700) -> None:
    """Create the folder ``path`` and its missing parents, each new folder's entry made durable in its parent."""
    path = os.path.abspath(path)
    missing = []
    while not os.path.lexists(path):  # a file in the way fails the mkdir below it (ENOTDIR), as os.makedirs does
        missing.append(path)
        path = os.path.dirname(path)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise
            continue  # made by a concurrent run: its maker makes it durable
        fsync_dir(os.path.dirname(folder))


def sync_filesystem(path: str) -> None:
    """Put on disk every write to the filesystem holding ``path`` (syncfs(2); sync(2) where the C library lacks it).

    For a tree that installers wrote without fsync (they never do), before the journal record that makes it the
    venv: a batch's ``commit`` in place, a swap's ``exchange``."""
    syncfs = getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)  # glibc >= 2.14
    if syncfs is None:
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
    finally:
        os.close(fd)


def start_writeback(path: str) -> None:
    """sync_filesystem(path) in a thread not waited for: what the installers wrote goes to the disk while the caller
    tests it, and the sync_filesystem that must come before the commit (or the exchange) finds less left to write.
    Never a substitute for that call: nothing waits for this one, and an error here is left for that one to meet."""
    threading.Thread(target=_sync_quietly, args=(path,), name="writeback", daemon=True).start()


def _sync_quietly(path: str) -> None:
    try:
        sync_filesystem(path)
    except OSError:
        pass


def replace_file(path: str, data: bytes, mode: int = 0o600, owner: Optional[Tuple[int, int]] = None) -> None:
    """Make ``path`` hold ``data`` with permission bits ``mode`` (and ``owner`` (uid, gid) when given).

    Raises OSError when the folder cannot take the temporary file or the rename; ``path`` is then unchanged
    and no temporary file is left behind.
    """
    replace_with(path, lambda temporary: _write_new(temporary, data, mode, owner))


def rewrite_file(path: str, data: bytes) -> None:
    """Make the existing file ``path`` hold ``data``, keeping its permission bits (and, as root, its owner)."""
    st = os.stat(path)
    replace_file(path, data, stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid) if os.geteuid() == 0 else None)


def replace_with(path: str, make: Callable[[str], object], sync_folder: bool = True) -> None:
    """Make ``path`` the entry ``make(new_name)`` creates beside it (a written file, a hard link, a symlink).

    ``make`` must fsync any bytes it writes, and fail with FileExistsError where ``new_name`` is taken (it then
    gets another). ``sync_folder=False``: the caller renames many entries into few folders and fsyncs each of
    them (``fsync_dir``) before it records that they are done. Raises OSError with ``path`` unchanged and the
    new name removed.
    """
    folder, name = os.path.split(os.path.abspath(path))
    for _attempt in range(_TRIES):
        temporary = os.path.join(folder, ".%s.%s.tmp" % (name, os.urandom(4).hex()))
        try:
            make(temporary)
        except FileExistsError:
            if os.path.lexists(temporary):
                continue  # another process's name: not made here, not removed
            raise
        except BaseException:
            _remove(temporary)
            raise
        break
    else:
        raise FileExistsError("no free temporary name beside %s after %d tries" % (path, _TRIES))
    try:
        os.replace(temporary, path)
    except BaseException:
        _remove(temporary)
        raise
    if sync_folder:
        fsync_dir(folder)


def _write_new(path: str, data: bytes, mode: int, owner: Optional[Tuple[int, int]]) -> None:
    """Create ``path`` (never an existing one), write ``data``, set owner then mode (chown clears setuid), fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if owner is not None:
            os.fchown(fd, owner[0], owner[1])
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
