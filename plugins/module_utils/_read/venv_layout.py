# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a virtual environment's layout from disk: pyvenv.cfg, interpreter, site-packages.

Private to the gpuops.cuda_venv collection: not a public API.

Nothing here runs the venv's interpreter: a broken venv must still be readable.
pyvenv.cfg is parsed the way CPython's ``site.py`` does (``key = value``, keys
lower-cased); see https://docs.python.org/3/library/venv.html.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from typing import List, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError

STATE_DIR = ".cuda_venv"  # the venv's own state (lock, journal, snapshots, guard), written by the repair
JOURNAL_NAME = "journal.jsonl"  # a repair's journal, in the state dir and in the swap dir
NEXT_DIR = "next"  # the swap dir's copy being repaired
PREVIOUS_DIR = "previous"  # the swap dir's previous generations, one folder per run
_SWAP_DIR = re.compile(r"^\.(.+)\.cuda_venv$")
# pyvenv.cfg is a few hundred bytes; anything much larger is not one.
_CFG_LIMIT = 64 * 1024
_VERSION = re.compile(r"^(\d+\.\d+(?:\.\d+)?)")


def state_dir_of(root: str) -> str:
    """The venv's state dir, ``<root>/.cuda_venv``."""
    return os.path.join(root, STATE_DIR)


def swap_dir_of(root: str) -> str:
    """Where a swap keeps its copy and the previous generations: ``<parent>/.<name>.cuda_venv``, beside the venv."""
    parent, name = os.path.split(os.path.abspath(root).rstrip("/"))
    return os.path.join(parent, ".%s.cuda_venv" % name)


def swap_dir_venv(path: str) -> Optional[str]:
    """The venv whose swap dir ``path`` is, else None: ``PARENT/.NAME.cuda_venv`` beside a folder ``PARENT/NAME``,
    holding what a swap leaves (its journal, ``previous/``, ``next/``). The name alone is not enough."""
    parent, name = os.path.split(os.path.abspath(path).rstrip("/"))
    match = _SWAP_DIR.match(name)
    venv = os.path.join(parent, match.group(1)) if match else None
    if venv is None or not os.path.isdir(venv):
        return None
    return venv if any(os.path.lexists(os.path.join(path, part)) for part in (JOURNAL_NAME, PREVIOUS_DIR, NEXT_DIR)) else None


def previous_generations(swap_dir: str) -> List[str]:
    """Previous generations, oldest first (their names are run ids, which sort by time)."""
    parent = os.path.join(swap_dir, PREVIOUS_DIR)
    try:
        return [os.path.join(parent, name) for name in sorted(os.listdir(parent))]
    except FileNotFoundError:
        return []


def repair_state_of(path: str) -> Optional[str]:
    """The venv whose repair state ``path`` is in (its state dir, a snapshot, a swap's copy or previous generation),
    else None: what the repair writes is never a venv of its own."""
    folder = os.path.abspath(path).rstrip("/")
    while folder and folder != os.sep:
        parent, name = os.path.split(folder)
        if name == STATE_DIR and os.path.isfile(os.path.join(parent, "pyvenv.cfg")):
            return parent
        venv = swap_dir_venv(folder) if name.endswith(".cuda_venv") else None
        if venv is not None:
            return venv
        folder = parent
    return None


class VenvError(CudaVenvError):
    """A path that cannot be read as a virtual environment."""


@dataclass(frozen=True)
class VenvLayout:
    """Where a venv keeps its interpreter, packages and the repair's state: the venv resolved once (read_layout),
    taken by every layer that needs one of its paths."""

    root: str
    python: str
    config: dict
    version: Optional[str]
    include_system_site_packages: bool
    site_packages: tuple

    @property
    def state_dir(self) -> str:
        return state_dir_of(self.root)

    @property
    def swap_dir(self) -> str:
        return swap_dir_of(self.root)


def read_layout(path: str) -> VenvLayout:
    """Read the venv at the absolute ``path``; raise VenvError naming the path when it is not one."""
    if not isinstance(path, str) or not os.path.isabs(path):
        raise VenvError("path must be absolute: %s" % (path,))
    root = os.path.normpath(path)
    if not os.path.lexists(root):
        raise VenvError("path %s does not exist" % root)
    if not os.path.isdir(root):
        raise VenvError("path %s is not a directory" % root)
    cfg_path = os.path.join(root, "pyvenv.cfg")
    if not os.path.lexists(cfg_path):
        raise VenvError("path %s is not a venv: no pyvenv.cfg" % root)
    config = _read_config(root, cfg_path)
    return VenvLayout(
        root=root,
        python=os.path.join(root, "bin", "python"),
        config=config,
        version=_version(config),
        include_system_site_packages=config.get("include-system-site-packages", "").lower() == "true",
        site_packages=_site_packages(root),
    )


def _read_config(root: str, cfg_path: str) -> dict:
    try:
        with open(cfg_path, "rb") as handle:
            raw = handle.read(_CFG_LIMIT + 1)
    except OSError as exc:
        raise VenvError("path %s is not a venv: cannot read pyvenv.cfg: %s" % (root, exc.strerror or exc)) from None
    if len(raw) > _CFG_LIMIT:
        raise VenvError("path %s is not a venv: pyvenv.cfg is larger than 64 KiB" % root)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise VenvError("path %s is not a venv: pyvenv.cfg is not UTF-8" % root) from None
    config = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            config[key.strip().lower()] = value.strip()
    return config


def _version(config: dict) -> Optional[str]:
    """``version`` (venv) or ``version_info`` (virtualenv, uv), cut to X.Y[.Z]: "3.12.1.final.0" -> "3.12.1"."""
    for key in ("version", "version_info"):
        match = _VERSION.match(config.get(key, ""))
        if match:
            return match.group(1)
    return None


def _site_packages(root: str) -> tuple:
    """Existing lib*/python3.*/site-packages dirs; lib64 is often a symlink to lib, so keep one per realpath."""
    found = []
    seen = set()
    for lib in ("lib", "lib64"):
        for candidate in sorted(glob.glob(os.path.join(glob.escape(root), lib, "python3.*", "site-packages"))):
            real = os.path.realpath(candidate)
            if os.path.isdir(candidate) and real not in seen:
                seen.add(real)
                found.append(candidate)
    return tuple(found)


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
