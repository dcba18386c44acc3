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

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.venv_paths import VenvError

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
