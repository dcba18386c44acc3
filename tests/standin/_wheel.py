# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a wheel (PEP 427 / binary distribution format) byte for byte reproducibly.

Test support for gpuops.cuda_venv: not part of the collection's API.

https://packaging.python.org/en/latest/specifications/binary-distribution-format/
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path
from typing import Dict, List, Tuple

from ._layout import DistSpec

ZIP_DATE = (2020, 1, 1, 0, 0, 0)
TAG = "py3-none-any"
GENERATOR = "tests.standin"
_EXTRA = re.compile(r"""\bextra\s*==\s*['"]([^'"]+)['"]""")

# path in the wheel -> (content, executable)
WheelFiles = Dict[str, Tuple[bytes, bool]]


def escape(name: str) -> str:
    """Distribution name as it appears in wheel and .dist-info names."""
    return re.sub(r"[-_.]+", "_", name).lower()


def wheel_filename(dist: DistSpec) -> str:
    return "%s-%s-%s.whl" % (escape(dist.name), dist.version, TAG)


def dist_info_dir(dist: DistSpec) -> str:
    return "%s-%s.dist-info" % (escape(dist.name), dist.version)


def metadata(dist: DistSpec) -> str:
    """METADATA (core metadata 2.1): Requires-Dist verbatim, Provides-Extra from its markers."""
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + dist.name,
        "Version: " + dist.version,
        "Summary: Stand-in for %s %s built by tests.standin; not the real project." % (dist.name, dist.version),
    ]
    extras: List[str] = []
    for req in dist.requires_dist:
        for extra in _EXTRA.findall(req):
            if extra not in extras:
                extras.append(extra)
    lines += ["Provides-Extra: " + e for e in extras]
    lines += ["Requires-Dist: " + r for r in dist.requires_dist]
    return "\n".join(lines) + "\n"


def wheel_metadata() -> str:
    return "Wheel-Version: 1.0\nGenerator: %s\nRoot-Is-Purelib: false\nTag: %s\n" % (GENERATOR, TAG)


def record_hash(data: bytes) -> str:
    """``sha256=<urlsafe base64, no padding>`` as RECORD writes it."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(dest_dir: Path, dist: DistSpec, files: WheelFiles) -> Path:
    """Write the wheel of ``dist`` holding ``files`` plus its .dist-info; return its path."""
    info = dist_info_dir(dist)
    entries = sorted(files.items())
    entries.append((info + "/METADATA", (metadata(dist).encode(), False)))
    entries.append((info + "/WHEEL", (wheel_metadata().encode(), False)))
    record = "".join("%s,%s,%d\n" % (path, record_hash(data), len(data)) for path, (data, dummy) in entries)
    record += info + "/RECORD,,\n"
    entries.append((info + "/RECORD", (record.encode(), False)))
    out = dest_dir / wheel_filename(dist)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path, (data, executable) in entries:
            member = zipfile.ZipInfo(path, date_time=ZIP_DATE)
            member.compress_type = zipfile.ZIP_DEFLATED
            member.create_system = 3
            member.external_attr = (0o100755 if executable else 0o100644) << 16
            zf.writestr(member, data)
    return out
