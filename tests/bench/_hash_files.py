# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A child process that only hashes a list of files with hashlib in N threads: the I/O-inclusive SHA-256 floor.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
``python -m tests.bench._hash_files LIST THREADS`` (LIST: NUL-separated paths). Each thread takes every Nth file
of the list sorted by size, so the threads get even shares of bytes; no per-file task objects.
Deliberately standalone (no import of the collection's record_check.file_digest): it is the floor the engine
is compared with, so it must not share the engine's code or import cost.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading

CHUNK = 1024 * 1024


def sha256_files(paths, out: list) -> None:
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    done = 0
    for path in paths:
        digest = hashlib.sha256()
        with open(path, "rb", buffering=0) as handle:
            while True:
                count = handle.readinto(buffer)
                if not count:
                    break
                digest.update(view[:count])
        digest.digest()
        done += 1
    out.append(done)


def main(argv) -> int:
    with open(argv[1], "rb") as handle:
        paths = [p.decode() for p in handle.read().split(b"\0") if p]
    paths.sort(key=lambda p: -os.stat(p).st_size)
    count = int(argv[2])
    out: list = []
    threads = [threading.Thread(target=sha256_files, args=(paths[n::count], out)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("%d files hashed" % sum(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
