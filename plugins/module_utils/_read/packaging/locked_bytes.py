# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether an installed distribution was installed from the locked bytes: its RECORD against the RECORD inside the
locked wheel, where that wheel is at hand.

Private to the gpuops.cuda_venv collection: not a public API.

An installer copies each file of a wheel and writes the wheel's own RECORD row for it (same path, same hash) into
the installed RECORD; only what it generates differs (``RECORD`` itself, ``INSTALLER``, ``REQUESTED``,
``direct_url.json``, and the ``.data`` folders' files, moved and, for scripts, rewritten). So a distribution of the
locked name and version whose installed RECORD lists another hash for one of the wheel's files, or lacks one, came
from other bytes: a local build, another index, a tampered wheel. (That the files on disk still match the installed
RECORD is the RECORD check's to say.)

The wheel at hand: the path or ``file://`` URL the lock gives for the selected wheel, else a file of the same name
in a local find-links folder (for a requirements file, any wheel of that name and version there), accepted only when
its sha256 is one the lock pins. Hashing a wheel reads it whole (the real torch 2.9.1 stack's wheels: about 5 s), so
the facts' read index keeps each wheel's digest by the file's identity, as it keeps ELF reads.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.packaging_lib import (
    InvalidVersion, InvalidWheelFilename, parse_wheel_filename)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.record_hash import file_hexdigest
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import local_path
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import (
    RECORD_LIMIT, Distribution, parse_record)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import Lock, LockedPackage
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import local_wheel_files

# Written by the installer, not copied from the wheel.
_GENERATED = ("RECORD", "RECORD.jws", "RECORD.p7s", "INSTALLER", "REQUESTED", "direct_url.json")
_EXAMPLES = 5


@dataclass(frozen=True)
class BytesCheck:
    """One locked distribution's installed RECORD against its locked wheel's. ``wheel``: the wheel compared ("" when
    none); ``differing``: the wheel's paths the installed RECORD lists with another hash, or not at all (the first
    few); ``count``: how many; ``unchecked``: why no comparison was made ("" when one was)."""

    name: str
    wheel: str = ""
    compared: int = 0
    differing: Tuple[str, ...] = ()
    count: int = 0
    unchecked: str = ""

    def as_dict(self) -> dict:
        if self.unchecked:
            return {"distribution": self.name, "unchecked": self.unchecked}
        return {"distribution": self.name, "wheel": self.wheel, "compared": self.compared, "differing": self.count,
                "examples": list(self.differing)}


def check_locked_bytes(lock: Lock, dists: Sequence[Distribution], find_links: Sequence[str],
                       sha256: Callable[[str], str] = file_hexdigest) -> Dict[str, BytesCheck]:
    """name -> BytesCheck for every locked package installed at its locked version; ``sha256``: a wheel's hex digest
    (a read index's answers it for a wheel unchanged since its last run)."""
    folders = [p for p in (local_path(link) for link in find_links) if p]
    found: Dict[str, BytesCheck] = {}
    for dist in dists:
        package = lock.package(dist.key)
        if package is None or package.version != dist.version or dist.key in found:
            continue
        found[dist.key] = _check(dist, package, folders, sha256)
    return found


def _check(dist: Distribution, package: LockedPackage, folders: List[str], sha256: Callable[[str], str]) -> BytesCheck:
    if not any(h.startswith("sha256:") for h in package.hashes):
        return BytesCheck(dist.key, unchecked="the lock pins no sha256 for it")
    candidates = _candidates(package, folders)
    if not candidates:
        return BytesCheck(dist.key, unchecked="no locked wheel at hand (the lock's location, the local find_links)")
    for wheel in candidates:
        if "sha256:" + sha256(wheel) in package.hashes:
            return _compare(dist, wheel)
    return BytesCheck(dist.key, unchecked="the wheel at hand (%s) is not the locked one: its sha256 is not the "
                                          "lock's" % candidates[0])


def _candidates(package: LockedPackage, folders: Sequence[str]) -> List[str]:
    found = []
    if package.wheel is not None and package.wheel.location and os.path.isfile(package.wheel.location):
        found.append(package.wheel.location)
    named = [path for path in local_wheel_files(folders) if _is_locked_wheel(os.path.basename(path), package)]
    return found + [path for path in named if path not in found and os.path.isfile(path)]


def _is_locked_wheel(filename: str, package: LockedPackage) -> bool:
    if package.wheel is not None:
        return filename == package.wheel.filename
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return False
    return name == package.name and str(version) == package.version


def _compare(dist: Distribution, wheel: str) -> BytesCheck:
    # imported here: only a lock's wheels are zips, and the facts of a venv without a lock need no zip reader
    import zipfile  # pylint: disable=import-outside-toplevel
    try:
        rows = _wheel_record(wheel)
    except (OSError, zipfile.BadZipFile, zlib.error, ValueError) as exc:  # gone, not a zip, corrupt, two RECORDs
        return BytesCheck(dist.key, unchecked="the locked wheel %s cannot be read: %s" % (wheel, exc))
    installed = {e.path: (e.algorithm, e.digest) for e in dist.entries}
    compared = [e for e in rows if e.digest and not _generated(e.path)]
    differing = sorted(e.path for e in compared if installed.get(e.path) != (e.algorithm, e.digest))
    return BytesCheck(dist.key, wheel, len(compared), tuple(differing[:_EXAMPLES]), len(differing))


def _wheel_record(wheel: str) -> tuple:
    import zipfile  # pylint: disable=import-outside-toplevel
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/RECORD")]
        if len(names) != 1:
            raise ValueError("it has %d .dist-info/RECORD files" % len(names))
        info = archive.getinfo(names[0])
        if info.file_size > RECORD_LIMIT:
            raise ValueError("its RECORD is larger than %d bytes" % RECORD_LIMIT)
        problems: list = []
        return parse_record(archive.read(info), problems)


def _generated(path: str) -> bool:
    first, _sep, rest = path.partition("/")
    if first.endswith(".data"):
        return True
    return first.endswith(".dist-info") and rest in _GENERATED
