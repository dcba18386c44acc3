# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file's digest as RECORD writes it (urlsafe base64 of the hash, no padding): the one implementation the RECORD
check, the console scripts and the shadowing check share."""

from __future__ import annotations

import base64
import hashlib
from typing import Optional

CHUNK = 1024 * 1024


def file_digest(path: str, algorithm: str = "sha256", buffer: Optional[bytearray] = None) -> str:
    """urlsafe base64 digest without padding, as RECORD writes it; reads 1 MiB at a time into ``buffer``
    (a caller hashing many files passes one, to allocate it once)."""
    return record_digest(_hashed(path, algorithm, buffer))


def file_hexdigest(path: str, algorithm: str = "sha256") -> str:
    """The hex digest, as lock files and ``--hash`` options write it."""
    return _hashed(path, algorithm, None).hexdigest()


def _hashed(path: str, algorithm: str, buffer: Optional[bytearray]):
    digest = hashlib.new(algorithm)
    buffer = buffer if buffer is not None else bytearray(CHUNK)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as handle:
        while True:
            count = handle.readinto(buffer)
            if not count:
                break
            digest.update(view[:count])
    return digest


def record_digest(digest) -> str:
    """A hashlib object's digest as RECORD writes it: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(digest.digest()).decode("ascii").rstrip("=")
