# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wheel tags a venv's interpreter installs, best first: which wheel of a folder an installer picks (the install
guard) and which wheel of a lock is selected for the venv (``lock_file``).

Private to the gpuops.cuda_venv collection: not a public API.

Spec: https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/.
"""

from __future__ import annotations

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.packaging_lib import tags as _tags


def supported_tags(python_version: str, implementation: str = "cpython") -> list:
    """The venv interpreter's wheel tags, best first (platforms: this node's, which runs the venv)."""
    major, minor = (int(p) for p in python_version.split(".")[:2])
    platforms = list(_tags.platform_tags())
    short = {"cpython": "cp", "pypy": "pp"}.get(implementation, implementation[:2])
    if short == "cp":
        found = list(_tags.cpython_tags((major, minor), platforms=platforms))
    else:
        found = list(_tags.generic_tags("%s%d%d" % (short, major, minor), platforms=platforms))
    return found + [t for t in _tags.compatible_tags((major, minor), "%s%d%d" % (short, major, minor), platforms)
                    if t not in found]
