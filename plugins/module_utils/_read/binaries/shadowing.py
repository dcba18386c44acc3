# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Libraries the venv provides that LD_LIBRARY_PATH takes over: the loader finds another copy first.

Private to the gpuops.cuda_venv collection: not a public API.

A library whose requester searches LD_LIBRARY_PATH before its own DT_RUNPATH (cuDNN's sub-libraries, loaded by
soname from ``libcudnn.so.9``) comes from a directory on LD_LIBRARY_PATH even when the venv ships it. For each such
soname this reads what tells the two copies apart: the other copy's version where its real file name carries one
(``libcudnn_graph.so.9.24.0``, as system packages install it; wheels name files by soname only) or, failing that,
where the versioned files of its family beside it agree on one (``libcudnn.so.9.24.0`` next to a plain
``libcudnn_graph.so.9``: one install's folder), and whether the two hold the same bytes (hashed only when their
sizes are equal).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.cuda_knowledge import family_prefix
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import VIA_LD_LIBRARY_PATH
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.record_hash import file_digest

_FILE_VERSION = re.compile(r"\.so\.(\d+(?:\.\d+)+)$")
_SONAME_MAJOR = re.compile(r"\.so\.(\d+)$")


@dataclass(frozen=True)
class Shadowed:
    """One soname the venv provides (``own``: its files of that name) that LD_LIBRARY_PATH supplies instead."""

    soname: str
    needed_by: str  # the object whose search found it
    at_import: bool
    resolved: str  # the file the loader takes, in ``entry``
    entry: str  # the LD_LIBRARY_PATH directory it was found in
    own: Tuple[str, ...]
    resolved_version: Optional[str]  # from the real file name or its family's files beside it; None when none tells
    same_bytes: bool
    version_from: Optional[str] = None  # the file beside it whose name gave resolved_version; None: its own name did


def find_shadowed(resolutions: Iterable[tuple], root: str, own_files: Dict[str, Tuple[str, ...]]) -> Dict[str, Shadowed]:
    """soname -> Shadowed; ``resolutions``: (requester, Resolution, at_import), import graph first;
    ``own_files``: basename -> the venv's shared objects of that name."""
    inside = os.path.realpath(root) + "/"
    found: Dict[str, Shadowed] = {}
    for requester, res, at_import in resolutions:
        if res.soname in found or res.path is None or res.error or res.via != VIA_LD_LIBRARY_PATH:
            continue
        own = tuple(p for p in own_files.get(res.soname, ()) if os.path.isfile(p))
        if not own or os.path.realpath(res.path).startswith(inside):
            continue
        version, version_from = file_version(res.path), None
        if version is None:
            version, version_from = family_version_beside(res.path, res.soname)
        found[res.soname] = Shadowed(res.soname, requester, at_import, res.path, os.path.dirname(res.path), own,
                                     version, _same_bytes(res.path, own[0]), version_from)
    return found


def file_version(path: str) -> Optional[str]:
    """The version a library's real file name carries (``libcudnn_graph.so.9.24.0`` -> ``9.24.0``), else None."""
    match = _FILE_VERSION.search(os.path.basename(os.path.realpath(path)))
    return match.group(1) if match else None


def family_version_beside(path: str, soname: str) -> Tuple[Optional[str], Optional[str]]:
    """(version, file name) from the versioned files of ``soname``'s library family in ``path``'s folder with the
    soname's major (libcudnn.so.9.24.0 for libcudnn_graph.so.9); (None, None) when there are none or they disagree."""
    prefix, major = family_prefix(soname), _SONAME_MAJOR.search(soname)
    folder = os.path.dirname(path)
    if prefix is None or major is None:
        return None, None
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None, None
    found: Dict[str, str] = {}
    for name in names:
        match = _FILE_VERSION.search(name)
        same_major = bool(match) and match.group(1).split(".")[0] == major.group(1)
        if name.startswith(prefix) and same_major and os.path.isfile(os.path.join(folder, name)):
            found.setdefault(match.group(1), name)
    if len(found) != 1:
        return None, None
    return next(iter(found.items()))


def _same_bytes(path: str, other: str) -> bool:
    try:
        if os.path.getsize(path) != os.path.getsize(other):
            return False
        return file_digest(path) == file_digest(other)
    except OSError:
        return False
