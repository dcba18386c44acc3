# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file's digest as RECORD writes it (urlsafe base64 of the hash, no padding): the one implementation the RECORD
check, the console scripts and the shadowing check share.

Many bytes at once (hash mode on a torch venv: 5 GB) are hashed by child Pythons running this very file (serve;
record_check starts them). The child maps each large file instead of reading it: read() copies every byte once more
(on a torch venv, 0.5 of hash mode's 4.4 CPU-seconds). Mapping is safe only in a child: a file truncated while it is
mapped ends its process with SIGBUS. The caller then hashes, by reading, what the child did not answer.
"""

from __future__ import annotations

import base64
import errno
import functools
import hashlib
import importlib.util
import json
import mmap
import os
import stat
import sys
from typing import Optional

CHUNK = 1024 * 1024
MAPPED_AT_LEAST = CHUNK  # in a hashing child, a file this large is mapped rather than read
MAP_WINDOW = 64 * CHUNK  # and hashed this many bytes at a time


def file_digest(path: str, algorithm: str = "sha256", buffer: Optional[bytearray] = None) -> str:
    """urlsafe base64 digest without padding, as RECORD writes it; reads 1 MiB at a time into ``buffer``
    (a caller hashing many files passes one, to allocate it once)."""
    return record_digest(_hashed(path, algorithm, buffer)[0])


def file_hexdigest(path: str, algorithm: str = "sha256") -> str:
    """The hex digest, as lock files and ``--hash`` options write it."""
    return _hashed(path, algorithm, None)[0].hexdigest()


def _hashed(path: str, algorithm: str, buffer: Optional[bytearray], mapped: bool = False):
    """(the hashlib object, bytes hashed). ``mapped``: a file of MAPPED_AT_LEAST bytes or more is mapped, not read
    (only where a SIGBUS may end the process: a hashing child)."""
    digest = hashlib.new(algorithm)
    # non-blocking: a FIFO put where a file was (after the caller's stat) must not hang the hashing; it is refused
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb", buffering=0) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if mapped and info.st_size >= MAPPED_AT_LEAST:
            try:
                view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError):  # a file system that cannot map: read it
                view = None
            if view is not None:
                with view:
                    _update_in_windows(digest, view)
                    return digest, len(view)
        buffer = buffer if buffer is not None else bytearray(CHUNK)
        data = memoryview(buffer)
        size = 0
        while True:
            count = handle.readinto(buffer)
            if not count:
                break
            digest.update(data[:count])
            size += count
    return digest, size


def _update_in_windows(digest, view: mmap.mmap) -> None:
    """Hash a mapped file a window at a time, each window's pages let go of after it (MADV_DONTNEED on a shared
    read-only mapping drops the page table entries, not the cached file): the child's memory stays one window."""
    with memoryview(view) as whole:
        for start in range(0, len(whole), MAP_WINDOW):
            with whole[start:start + MAP_WINDOW] as part:
                digest.update(part)
            if hasattr(mmap, "MADV_DONTNEED"):
                view.madvise(mmap.MADV_DONTNEED, start, min(MAP_WINDOW, len(whole) - start))


def record_digest(digest) -> str:
    """A hashlib object's digest as RECORD writes it: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(digest.digest()).decode("ascii").rstrip("=")


@functools.lru_cache(maxsize=None)
def child_program() -> Optional[str]:
    """This file's text, the program of a child that hashes (serve): read once from the module's loader (a file, the
    zip Ansible sends, the compiled-code cache's loader, ansible-core's collection loader); None when the loader cannot
    give it."""
    spec = globals().get("__spec__")
    try:
        text = spec.loader.get_source(spec.name)
    except (AttributeError, ImportError, OSError, ValueError):
        return None
    # ansible-core's collection loader (ansible-test units, the controller) gives the file's bytes
    return importlib.util.decode_source(text) if isinstance(text, bytes) else text


def serve(requests, replies) -> None:
    """A hashing child's work: ``requests`` holds a JSON list of [path, algorithm]; a line per job goes to
    ``replies``, in order, once its file is hashed (large files mapped): the digest, or "-" when the file could not be
    read. Flushed after each large file, so that what was done before a SIGBUS reaches the caller."""
    buffer = bytearray(CHUNK)
    for path, algorithm in json.load(requests):
        try:
            digest, size = _hashed(path, algorithm, buffer, mapped=True)
        except (OSError, ValueError):
            replies.write("-\n")
            continue
        replies.write(record_digest(digest) + "\n")
        if size >= MAPPED_AT_LEAST:
            replies.flush()
    replies.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
