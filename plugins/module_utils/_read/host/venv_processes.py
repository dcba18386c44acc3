# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The running processes that use a venv (``/proc/PID/maps``), the old files they still run, and their environment.

Private to the gpuops.cuda_venv collection: not a public API.

A process uses the venv when it maps a file under the venv's root (its libraries, extensions) or under one of the
venv's previous generations (the swap's folder beside it, where an exchange moves the old tree). A mapping is stale
when its file was deleted (`` (deleted)``: the kernel names a mapping by the dentry it was opened through, so a file
unlinked or renamed over by an in-place reinstall shows so), lies in a previous generation (a swap moves the old tree,
and the kernel follows it), or its path now holds another inode (replaced: a path reached through another mount).
Processes of another mount namespace (a container seen from its host) are left out: their paths are not ours. Such a process keeps running the old bytes
until it restarts (what ``needrestart`` reports for system libraries). Of its environment only the variables of
``_core/slow_env.py`` are kept. The caller's own process and its children (the import probe) are left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.slow_env import NAMES

PROC = "/proc"
DELETED = "deleted"
REPLACED = "replaced"
PREVIOUS = "previous generation"
_DELETED_SUFFIX = " (deleted)"
_CMDLINE_MAX = 400
_READ_MAX = 64 << 20


@dataclass(frozen=True)
class VenvProcess:
    """One process mapping the venv's files."""

    pid: int
    cmdline: str
    mapped: int  # distinct venv files it maps
    stale: Tuple[Tuple[str, str], ...]  # (path as the kernel names it, DELETED | REPLACED | PREVIOUS)
    environment: Tuple[Tuple[str, str], ...]  # slow_env variables in its environment: (name, value)
    environment_error: Optional[str] = None  # why its environment could not be read


def venv_processes(root: str, previous: Sequence[str] = (), proc: str = PROC) -> List[VenvProcess]:
    """Every process (but this one and its children) that maps a file under ``root`` or ``previous``, by pid."""
    prefixes = [os.path.realpath(root).rstrip("/") + "/"]
    older = [os.path.realpath(p).rstrip("/") + "/" for p in previous]
    me = os.getpid()
    namespace = _namespace(proc, "self")
    found = []
    for name in os.listdir(proc):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        maps = _read(os.path.join(proc, name, "maps"))
        if maps is None:
            continue
        files = _mapped(maps.decode("utf-8", "surrogateescape"), prefixes + older)
        if not files or _parent(proc, pid) == me or _namespace(proc, name) != namespace:
            continue
        stale = tuple(sorted((path, why) for path, why in ((p, _staleness(p, ino, older)) for p, ino in files.items()) if why))
        environment, env_error = _environment(proc, pid)
        found.append(VenvProcess(pid, _cmdline(proc, pid), len(files), stale, environment, env_error))
    return sorted(found, key=lambda p: p.pid)


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read(_READ_MAX)
    except OSError:  # gone, or another user's process
        return None


def _mapped(maps: str, prefixes: List[str]) -> Dict[str, int]:
    """path -> inode of each mapped file under one of ``prefixes``."""
    files: Dict[str, int] = {}
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith("/"):
            continue
        path = fields[5]
        if any(path.startswith(prefix) for prefix in prefixes):
            files.setdefault(path, int(fields[4]))
    return files


def _staleness(path: str, inode: int, older: List[str]) -> Optional[str]:
    if path.endswith(_DELETED_SUFFIX):
        return DELETED
    if any(path.startswith(prefix) for prefix in older):
        return PREVIOUS
    try:
        now = os.stat(path).st_ino
    except OSError:
        return DELETED
    return REPLACED if now != inode else None


def _namespace(proc: str, pid: str) -> Optional[str]:
    try:
        return os.readlink(os.path.join(proc, pid, "ns", "mnt"))
    except OSError:
        return None


def _parent(proc: str, pid: int) -> Optional[int]:
    stat = _read(os.path.join(proc, str(pid), "stat"))
    if stat is None:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # the command name in parentheses may hold spaces
    return int(fields[1]) if len(fields) > 1 else None


def _cmdline(proc: str, pid: int) -> str:
    raw = _read(os.path.join(proc, str(pid), "cmdline")) or b""
    text = " ".join(part.decode("utf-8", "replace") for part in raw.rstrip(b"\0").split(b"\0"))
    return text if len(text) <= _CMDLINE_MAX else text[:_CMDLINE_MAX] + "..."


def _environment(proc: str, pid: int) -> Tuple[Tuple[Tuple[str, str], ...], Optional[str]]:
    try:
        with open(os.path.join(proc, str(pid), "environ"), "rb") as handle:
            raw = handle.read(_READ_MAX)
    except OSError as exc:
        return (), exc.strerror or str(exc)
    found = []
    for item in raw.split(b"\0"):
        name, sep, value = item.decode("utf-8", "replace").partition("=")
        if sep and name in NAMES:
            found.append((name, value))
    return tuple(sorted(found)), None
