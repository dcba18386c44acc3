# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a file is replaced: a temporary file in the same folder, written, fsync'ed, renamed, folder fsync'ed.

Private to the gpuops.cuda_venv collection: not a public API.

After a crash or a power cut the path holds the old content or the new one, never a mix and never an empty
file: the data reaches the disk before the rename that commits it, and the rename before the call returns.
The file is never written in place, so an inode it shared (a hard link into an installer's cache, a copy's
link to the live venv) keeps its bytes. The append-only journal and the swap's exchange are the two
durable writes that do not go through here (see _act/journal.py, _act/swap.py).
"""

from __future__ import annotations

import os
import tempfile
from typing import Optional, Tuple


def fsync_dir(path: str) -> None:
    """Make a folder's entries (a create, rename or unlink in it) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: str, data: bytes, mode: int = 0o600, owner: Optional[Tuple[int, int]] = None) -> None:
    """Make ``path`` hold ``data`` with permission bits ``mode`` (and ``owner`` (uid, gid) when given).

    Raises OSError when the folder cannot take the temporary file or the rename; ``path`` is then unchanged
    and no temporary file is left behind.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
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
        os.replace(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise
    fsync_dir(folder)
