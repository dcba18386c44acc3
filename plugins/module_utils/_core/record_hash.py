# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file's digest as RECORD writes it (urlsafe base64 of the hash, no padding): the one implementation the RECORD
check, the console scripts and the shadowing check share.

Many bytes at once (hash mode on a torch venv: 5 GB) are hashed by child Pythons running this very file (serve;
record_check starts them), so that the hashing does not share the module's interpreter lock with the reading of the
rest of the venv, which runs beside it. The child reads each file 1 MiB at a time into one buffer. It does not map
the files: measured on a 2-core virtual machine, hashing a mapped file cost more CPU than read()'s copy saves (two
children over a torch venv's 5.3 GB: 2.4 s mapped, 1.9 s read).
"""

from __future__ import annotations

import base64
import errno
import functools
import hashlib
import importlib.util
import json
import os
import stat
import sys
from typing import Optional

CHUNK = 1024 * 1024  # read at a time, into one buffer


def file_digest(path: str, algorithm: str = "sha256", buffer: Optional[bytearray] = None) -> str:
    """urlsafe base64 digest without padding, as RECORD writes it; reads 1 MiB at a time into ``buffer``
    (a caller hashing many files passes one, to allocate it once)."""
    return record_digest(_hashed(path, algorithm, buffer)[0])


def file_hexdigest(path: str, algorithm: str = "sha256") -> str:
    """The hex digest, as lock files and ``--hash`` options write it."""
    return _hashed(path, algorithm, None)[0].hexdigest()


def _hashed(path: str, algorithm: str, buffer: Optional[bytearray]):
    """(the hashlib object, bytes hashed)."""
    digest = hashlib.new(algorithm)
    # non-blocking: a FIFO put where a file was (after the caller's stat) must not hang the hashing; it is refused
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb", buffering=0) as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
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
    ``replies``, in order, once its file is hashed: the digest, or "-" when the file could not be read. Flushed after
    each file of a chunk or more, so that what was done before the child ended (killed) reaches the caller."""
    buffer = bytearray(CHUNK)
    for path, algorithm in json.load(requests):
        try:
            digest, size = _hashed(path, algorithm, buffer)
        except (OSError, ValueError):
            replies.write("-\n")
            continue
        replies.write(record_digest(digest) + "\n")
        if size >= CHUNK:
            replies.flush()
    replies.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
