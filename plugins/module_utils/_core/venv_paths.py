# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The paths of a venv as every layer takes them: the one confinement rule (a RECORD path never leaves the venv),
real paths resolved once per pass, a find-links entry as a local path, and ``VenvError``."""

from __future__ import annotations

import os
from typing import Optional
from urllib.parse import unquote, urlsplit

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError


class VenvError(CudaVenvError):
    """A path that cannot be read as a virtual environment."""


def local_path(link: str) -> Optional[str]:
    """A find-links entry as a local path (a plain path or a file:// URL), or None when it is a remote URL."""
    if "://" not in link:
        return link
    parts = urlsplit(link)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return unquote(parts.path)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def confine(path: str, root: str, cache: Optional[dict] = None) -> Optional[str]:
    """``path`` (relative paths are taken from ``root``) normalised, or None when it leaves ``root``.

    It leaves ``root`` when its normalised form is outside it or is ``root`` itself, or when its parent
    directory leaves it (``confine_folder``). The last component itself is not resolved: removing a symlink
    removes the link, inside the venv. ``cache`` (a dict the caller keeps for one pass over many paths)
    resolves each directory once.
    """
    root = os.path.normpath(os.path.abspath(root))
    raw = os.path.join(root, path)
    full = os.path.normpath(raw)
    if full == root or not _inside(full, root):
        return None
    return full if confine_folder(os.path.dirname(raw), root, cache) is not None else None


def confine_folder(raw: str, root: str, cache: Optional[dict] = None) -> Optional[str]:
    """The absolute folder ``raw`` (joined, not yet normalised) normalised, or None when it leaves the
    normalised absolute ``root``: its normalised form is outside it, or its real path is outside
    ``realpath(root)`` (a symlinked folder). The one confinement rule of the collection: every RECORD path
    the engine reads, deletes or lets an installer write passes through here."""
    folder = os.path.normpath(raw)
    if not _inside(folder, root):
        return None
    real_root = _realpath(root, cache)
    if not _inside(_realpath(folder, cache), real_root):
        return None
    # normpath folds 'link/..' without following 'link': the kernel follows it, so must we
    if ".." in raw.split("/") and not _inside(_realpath(raw, cache), real_root):
        return None
    return folder


def _realpath(path: str, cache: Optional[dict]) -> str:
    return os.path.realpath(path) if cache is None else real_path(path, cache)


def real_path(path: str, cache: dict) -> str:
    """os.path.realpath(path), memoised in ``cache`` (a dict kept for one pass over many paths): a folder
    already resolved costs nothing, and a path below it one lstat of its own last component."""
    found = cache.get(path)
    if found is not None:
        return found
    parent, name = os.path.split(path)
    if not parent or parent == path or not name or name in (".", "..") or os.path.normpath(path) != path \
            or os.path.islink(path):
        found = os.path.realpath(path)
    else:
        found = os.path.join(real_path(parent, cache), name)
    cache[path] = found
    return found
