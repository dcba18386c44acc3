# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file's digest as RECORD writes it (urlsafe base64 of the hash, no padding): the one implementation the RECORD
check, the console scripts and the shadowing check share.

Many bytes at once (hash mode on a torch venv: 5 GB) are hashed by child Pythons running this very file (serve;
record_check starts them), so that the hashing does not share the module's interpreter lock with the reading of the
rest of the venv, which runs beside it. The child maps each file of 1 MiB or more, 64 MiB at a time, with
MAP_POPULATE: the kernel fills the window's page table in one call, so the bytes are neither copied (read()) nor
faulted in a page at a time (a plain mapping). Measured on a 2-core virtual machine, two children over a torch venv's
5.5 GB: 1.94-1.97 s populated windows, 2.23-2.27 s read (0.4-0.6 against 1.1 CPU-seconds in the kernel). A plain
mapping was slower than reading on another machine of the same kind (2.4 s against 1.9 s), faster on this one. A file
truncated while it is mapped ends the child (SIGBUS), so only a child maps; the caller hashes, by reading, what the
child did not answer. Smaller files, and every file hashed in the module's own process, are read 1 MiB at a time into
one buffer.
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

CHUNK = 1024 * 1024  # read at a time, into one buffer
MAPPED_AT_LEAST = CHUNK  # in a hashing child, a file this large is mapped rather than read
MAP_WINDOW = 64 * CHUNK  # a window at a time (a multiple of the mapping granularity)
POPULATE = getattr(mmap, "MAP_POPULATE", None)  # Linux, Python 3.10+; without it the child reads


def file_digest(path: str, algorithm: str = "sha256", buffer: Optional[bytearray] = None) -> str:
    """urlsafe base64 digest without padding, as RECORD writes it; reads 1 MiB at a time into ``buffer``
    (a caller hashing many files passes one, to allocate it once)."""
    return record_digest(_hashed(path, algorithm, buffer)[0])


def file_hexdigest(path: str, algorithm: str = "sha256") -> str:
    """The hex digest, as lock files and ``--hash`` options write it."""
    return _hashed(path, algorithm, None)[0].hexdigest()


def _hashed(path: str, algorithm: str, buffer: Optional[bytearray], mapped: bool = False):
    """(the hashlib object, bytes hashed). ``mapped``: a file of MAPPED_AT_LEAST bytes or more is hashed from
    populated windows, then read on from where they end (only where a SIGBUS may end the process: a hashing child)."""
    digest = hashlib.new(algorithm)
    # non-blocking: a FIFO put where a file was (after the caller's stat) must not hang the hashing; it is refused
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb", buffering=0) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        size = 0
        if mapped and POPULATE is not None and info.st_size >= MAPPED_AT_LEAST:
            size = _update_mapped(digest, handle.fileno(), info.st_size)
            handle.seek(size)
        buffer = buffer if buffer is not None else bytearray(CHUNK)
        data = memoryview(buffer)
        while True:
            count = handle.readinto(buffer)
            if not count:
                break
            digest.update(data[:count])
            size += count
    return digest, size


def _update_mapped(digest, fd: int, size: int) -> int:
    """Hash the first ``size`` bytes of ``fd`` a populated window at a time, each unmapped after it (the child's memory
    stays one window); the bytes hashed, short of ``size`` when a window cannot be mapped (the file shrank, a file
    system that cannot map): the caller reads on from there."""
    done = 0
    while done < size:
        length = min(MAP_WINDOW, size - done)
        try:
            window = mmap.mmap(fd, length, flags=mmap.MAP_SHARED | POPULATE, prot=mmap.PROT_READ, offset=done)
        except (OSError, ValueError):
            break
        with window:
            digest.update(window)
        done += length
    return done


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
    read. Flushed after each large file, so that what was done before the child ended (a SIGBUS, killed) reaches the
    caller."""
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
