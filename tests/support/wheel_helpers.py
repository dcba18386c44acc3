# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test helper: write a small real wheel (PEP 427 zip with METADATA, WHEEL and a RECORD of sha256 and sizes)."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import zipfile

from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import metadata_bytes


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(folder, name, version, files=None, requires=(), tag="py3-none-any", entry_points=None, record=None,
               compression=zipfile.ZIP_STORED):
    """Write ``NAME-VERSION-TAG.whl`` into ``folder`` holding ``files`` ({path in the wheel: bytes}); return its path.

    ``record`` (bytes) replaces the RECORD written; ``compression``: ZIP_DEFLATED as real wheels are."""
    escaped = re.sub(r"[-_.]+", "_", name)
    info = "%s-%s.dist-info" % (escaped, version)
    members = dict(files or {})
    members[info + "/METADATA"] = metadata_bytes(name, version, requires)
    members[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: %s\n" % tag).encode()
    if entry_points is not None:
        members[info + "/entry_points.txt"] = entry_points
    rows = "".join("%s,%s,%d\n" % (path, record_hash(data), len(data)) for path, data in members.items())
    members[info + "/RECORD"] = record if record is not None else (rows + info + "/RECORD,,\n").encode()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "%s-%s-%s.whl" % (escaped, version, tag))
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path
