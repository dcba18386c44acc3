# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real dist-info folders and wheels written by hand, as pip writes them: shared by the unit, scenario and
reliability suites."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile


def b64_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode("ascii").rstrip("=")


def record_line(path: str, data: bytes) -> str:
    return "%s,sha256=%s,%d" % (path, b64_sha256(data), len(data))


def metadata_bytes(name, version, requires=()):
    text = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    text += "".join("Requires-Dist: %s\n" % req for req in requires)
    return (text + "\nA description.\n").encode("utf-8")


def make_dist(site, name, version, files=None, requires=(), installer=b"pip\n", requested=False, metadata=None, record=None):
    """Write a real dist-info into ``site`` and the files it owns ({path relative to site: bytes}).

    RECORD lists every file with sha256 and size, and itself without hash, as pip writes it.
    ``record`` (bytes) replaces the RECORD written; ``metadata`` (bytes) the METADATA.
    """
    folder = "%s-%s.dist-info" % (re.sub(r"[-_.]+", "_", name), version)
    owned = dict(files or {})
    owned[folder + "/METADATA"] = metadata_bytes(name, version, requires) if metadata is None else metadata
    if installer is not None:
        owned[folder + "/INSTALLER"] = installer
    if requested:
        owned[folder + "/REQUESTED"] = b""
    for path, data in owned.items():
        full = os.path.normpath(os.path.join(site, path))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as handle:
            handle.write(data)
    if record is None:
        record = "".join(record_line(p, d) + "\n" for p, d in owned.items()) + folder + "/RECORD,,\n"
        record = record.encode("utf-8")
    with open(os.path.join(site, folder, "RECORD"), "wb") as handle:
        handle.write(record)
    return os.path.join(site, folder)


def make_wheel(directory, name, version, files, requires=(), scripts=()):
    """Build a real wheel file with a proper RECORD; returns its path."""
    stem = "%s-%s" % (re.sub(r"[-_.]+", "_", name), version)
    info = stem + ".dist-info"
    members = dict(files)
    members[info + "/METADATA"] = metadata_bytes(name, version, requires)
    members[info + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: gpuops-test\nRoot-Is-Purelib: false\nTag: py3-none-any\n"
    if scripts:
        members[info + "/entry_points.txt"] = ("[console_scripts]\n" + "".join("%s\n" % s for s in scripts)).encode()
    record = "".join(record_line(p, d) + "\n" for p, d in members.items()) + info + "/RECORD,,\n"
    path = os.path.join(directory, stem + "-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
        archive.writestr(info + "/RECORD", record)
    return path


def pip(venv, *args):
    """The real pip of the test interpreter, installing into ``venv``."""
    subprocess.run([sys.executable, "-m", "pip", "--python", venv + "/bin/python", "--disable-pip-version-check", "-q"] + list(args),
                   check=True, capture_output=True)
