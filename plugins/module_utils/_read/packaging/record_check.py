# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verify installed files against RECORD (exists, size, hash) and find paths owned twice.

Private to the gpuops.cuda_venv collection: not a public API.

pip and uv never check RECORD after install (pypa/pip#4705); this is the
``conda doctor`` missing-files / altered-files check for wheels.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.record_hash import CHUNK, child_program, file_digest
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import locate_entries

MODES = ("size", "hash")


@dataclass(frozen=True)
class FileState:
    """What one distribution's RECORD says against the disk; paths as written in RECORD.

    ``checked`` counts entries looked at on disk (every entry that stays in the
    venv); ``unreadable`` holds entries that exist but could not be stat'ed or read.
    """

    missing: tuple
    modified: tuple
    unsafe: tuple
    checked: int
    hashed_bytes: int
    unreadable: tuple = ()


@dataclass(frozen=True)
class Conflict:
    """A path listed in the RECORD of two or more distributions.

    ``on_disk``: label of the owner whose RECORD hash matches the bytes on disk
    (the first in owner order when several do), "none" when the file is
    missing, None when unknown (no digest computed, or no owner matches).
    """

    path: str
    owners: tuple
    on_disk: Optional[str]


def check_all(dists, venv_root: str, mode: str = "size", workers: Optional[int] = None, digests: Optional[dict] = None,
              locations: Optional[dict] = None, stats: Optional[dict] = None, links: Optional[set] = None,
              also_hash: frozenset = frozenset()) -> dict:
    """{dist_info: FileState} for every distribution.

    ``size`` mode only stats files (one thread). ``hash`` mode also hashes every
    file whose size matches, in ``workers`` shares (default: the CPUs this process
    may run on), largest first: each share in a thread, or, when it holds
    IN_CHILD_AT_LEAST bytes, in a child Python the thread waits for
    (digests_in_child). Pass a dict as
    ``digests`` to receive {(abs_path, algorithm): digest}; digests already in
    it are reused, and find_conflicts() can reuse them too. ``locations``: what
    locate_entries() returned for ``dists``, when the caller has it. Pass a dict as ``stats`` to receive
    {abs_path: os.stat_result, None (absent) or OSError} of every entry (the install times read them), and a set as
    ``links`` to receive the entries that are symlinks (each file is lstat'ed, and stat'ed again only when it is one).
    ``also_hash``: keys of distributions hashed in ``size`` mode too (the repair's installed ones, beside its last test).
    """
    return start_check_all(dists, venv_root, mode, workers, digests, locations, stats, links, also_hash).result()


def start_check_all(dists, venv_root: str, mode: str = "size", workers: Optional[int] = None,
                    digests: Optional[dict] = None, locations: Optional[dict] = None, stats: Optional[dict] = None,
                    links: Optional[set] = None, also_hash: frozenset = frozenset()) -> "PendingCheck":
    """check_all, returning once every entry is stat'ed (``stats`` and ``links`` filled): the hashing goes on in its
    threads while the caller reads on; PendingCheck.result() waits for it, fills ``digests`` and gives the states."""
    if mode not in MODES:
        raise ValueError("mode must be 'size' or 'hash', got %r" % (mode,))
    digests = {} if digests is None else digests
    stats = {} if stats is None else stats
    links = set() if links is None else links
    locations = locations if locations is not None else locate_entries(dists, venv_root)
    if mode == "hash":
        hashed, sized = dists, {}
    else:
        hashed = [dist for dist in dists if dist.key in also_hash]
        sized = {dist.dist_info: _size_state(locations[dist.dist_info], stats, links) for dist in dists
                 if dist.key not in also_hash}
    if not hashed:
        return PendingCheck(dists, sized)
    _stat_all({dist.dist_info: locations[dist.dist_info] for dist in hashed}, stats, links)
    plans = [(dist, [_plan(entry, loc, "hash", stats) for entry, loc, _problem in locations[dist.dist_info]])
             for dist in hashed]
    wanted = {(loc, entry.algorithm): stats[loc].st_size for _dist, rows in plans for entry, loc, status in rows if status == "hash"}
    if mode == "size" and workers is None:  # hashing beside other work (the repair's import test): a CPU left to it
        workers = max(1, usable_cpus() - 1)
    return PendingCheck(dists, sized, _Hashing(wanted, digests, workers), plans, stats)


class PendingCheck:
    """start_check_all's answer: the states at once (size mode), or once the hashing is done."""

    def __init__(self, dists, known: dict, hashing: Optional["_Hashing"] = None, plans=None, stats=None):
        self._dists, self._known, self._hashing, self._plans, self._stats = dists, known, hashing, plans, stats
        self._states: Optional[dict] = None if hashing is not None else known

    def result(self) -> dict:
        """{dist_info: FileState} in ``dists`` order; waits for the hashing (once)."""
        if self._states is None:
            failed = self._hashing.wait()
            found = dict(self._known)
            found.update((dist.dist_info, _state(rows, self._stats, self._hashing.digests, failed))
                         for dist, rows in self._plans)
            self._states = {dist.dist_info: found[dist.dist_info] for dist in self._dists}
        return self._states


def _size_state(rows: list, stats: dict, links: set) -> FileState:
    """One distribution's FileState in ``size`` mode, its entries stat'ed into ``stats`` on the way: a regular file
    of RECORD's size (nearly every entry of an unchanged venv) is decided here, any other through _plan. One tight
    loop: it is most of the facts' cost on an unchanged venv."""
    lstat, regular = os.lstat, stat.S_IFREG
    unusual = []
    for row in rows:
        loc = row[1]
        if row[0].size is None and _bytecode_cache(row[0]):
            continue  # skipped, as _plan says
        if loc is not None and loc not in stats:
            try:
                found = lstat(loc)
            except OSError:
                found = None  # _stat_all tells missing from unreadable
            if found is not None and found.st_mode & 0o170000 == regular:
                stats[loc] = found
                if row[0].size is None or found.st_size == row[0].size:
                    continue  # the common entry: nothing else to look at
        unusual.append(row)
    _stat_all({None: unusual}, stats, links)  # a symlink, a folder, a missing or unreadable entry
    unusual = [_plan(entry, loc, "size", stats) for entry, loc, _problem in unusual]
    state = _state(unusual, stats, {}, set())
    return replace(state, checked=len(rows) - len(state.unsafe))  # the common entries were checked too


def _stat_all(locations: dict, stats: dict, links: set) -> None:
    """Fill ``stats`` for every located entry: lstat, and stat again only a symlink (into ``links``)."""
    lstat, is_link = os.lstat, stat.S_ISLNK
    for rows in locations.values():
        for entry, loc, _problem in rows:
            if loc is None or loc in stats or (entry.size is None and _bytecode_cache(entry)):
                continue
            try:
                found = lstat(loc)
                if is_link(found.st_mode):
                    links.add(loc)
                    found = os.stat(loc)
                stats[loc] = found
            except (FileNotFoundError, NotADirectoryError):
                stats[loc] = None
            except OSError as exc:
                stats[loc] = exc


def _plan(entry, loc: Optional[str], mode: str, stats: dict) -> tuple:
    """(entry, abs path, status) with status unsafe, missing, skipped, unreadable, modified, hash or ok."""
    if loc is None:
        return entry, None, "unsafe"
    if _bytecode_cache(entry):
        return entry, loc, "skipped"
    found = stats[loc]
    if found is None:
        return entry, loc, "missing"
    if isinstance(found, OSError):
        return entry, loc, "unreadable"
    if not stat.S_ISREG(found.st_mode) or (entry.size is not None and found.st_size != entry.size):
        return entry, loc, "modified"
    if mode == "hash" and entry.digest and entry.algorithm in hashlib.algorithms_available:
        return entry, loc, "hash"
    return entry, loc, "ok"


def _bytecode_cache(entry) -> bool:
    """pip records the .pyc files it compiled with neither hash nor size: a cache that Python rebuilds, so whether one
    is there, or what it holds, breaks nothing (conda doctor skips them too); such an entry is not looked at on disk.
    Other hashless entries (RECORD itself, INSTALLER from some tools) must exist."""
    return entry.digest is None and entry.size is None and entry.path.endswith(".pyc")


IN_CHILD_AT_LEAST = 256 * 1024 * 1024  # a share this large is hashed in a child Python (its own interpreter lock)


class _Hashing:
    """Hash ``wanted`` ({(path, algorithm): size}) into ``digests``, started at once: each worker thread takes a share
    of about equal bytes (largest files first, each to the least loaded worker), hashed in the thread with one buffer,
    or by a child Python when the share holds IN_CHILD_AT_LEAST bytes; whatever the child did not answer (it could
    not start, or it ended: killed, or a SIGBUS from a file truncated while mapped) the thread hashes by reading.
    wait() fills ``digests``."""

    def __init__(self, wanted: dict, digests: dict, workers: Optional[int]):
        self.digests = digests
        jobs = sorted((key for key in wanted if key not in digests), key=lambda key: (-wanted[key], key))
        count = max(1, min(workers or usable_cpus(), len(jobs)))
        self.shares = [[] for _worker in range(count)]
        loads = [0] * count
        for job in jobs:
            least = loads.index(min(loads))
            self.shares[least].append(job)
            loads[least] += wanted[job] + 4096  # opening a file costs about as much as reading 4 KiB
        self.pool = ThreadPoolExecutor(max_workers=count) if jobs else None
        self.futures = [self.pool.submit(_digest_share, share, load >= IN_CHILD_AT_LEAST)
                        for share, load in zip(self.shares, loads)] if jobs else []

    def wait(self) -> set:
        """The jobs that could not be read, once every share is done; ``digests`` filled with the others."""
        failed: set = set()
        for share, future in zip(self.shares, self.futures):
            for job, result in zip(share, future.result()):
                if result is None:
                    failed.add(job)
                else:
                    self.digests[job] = result
        if self.pool is not None:
            self.pool.shutdown()
        return failed


def hash_files(wanted: dict, digests: dict, workers: Optional[int] = None) -> set:
    """Hash ``wanted`` ({(abs path, algorithm): size}) into ``digests`` on ``workers`` CPUs (default: every usable one),
    as hash mode does; the keys that could not be read. Keys already in ``digests`` are not hashed again."""
    return _Hashing(wanted, digests, workers).wait()


def usable_cpus() -> int:
    """The CPUs this process may run on (an LXC container's cpuset), else the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def digests_in_child(jobs: list) -> list:
    """The RECORD digests of ``jobs`` ([(path, algorithm)]) from a child Python (this interpreter, isolated: ``-I
    -S``) running record_hash.py (its serve), large files mapped: in job order, each a digest or None (the child could
    not read that file). Shorter than ``jobs`` when the child could not start or ended early (killed, or a SIGBUS from
    a file truncated while mapped); the rest is the caller's."""
    program = child_program()
    if program is None or not sys.executable or not jobs:
        return []
    done = SubprocessRunner().run([sys.executable, "-I", "-S", "-c", program], data=json.dumps(jobs))
    lines = done.stdout.split("\n")[:-1]  # what follows the last newline is empty, or a line the child did not end
    return [None if line == "-" else line for line in lines[:len(jobs)]]


def _digest_share(jobs: list, in_child: bool) -> list:
    found = digests_in_child(jobs) if in_child else []
    buffer = bytearray(CHUNK)
    for path, algorithm in jobs[len(found):]:
        try:
            found.append(file_digest(path, algorithm, buffer))
        except OSError:
            found.append(None)
    return found


def _state(rows: list, stats: dict, digests: dict, failed: set) -> FileState:
    found = {"missing": [], "modified": [], "unsafe": [], "unreadable": []}
    checked = hashed = 0
    for entry, loc, status in rows:
        if status == "hash":
            key = (loc, entry.algorithm)
            if key in failed:
                status = "unreadable"
            else:
                hashed += stats[loc].st_size
                status = "ok" if digests[key] == entry.digest else "modified"
        if status != "unsafe":
            checked += 1
        if status in found:
            found[status].append(entry.path)
    return FileState(
        missing=tuple(found["missing"]),
        modified=tuple(found["modified"]),
        unsafe=tuple(found["unsafe"]),
        checked=checked,
        hashed_bytes=hashed,
        unreadable=tuple(found["unreadable"]),
    )


def listed_paths(dists, locations: dict) -> tuple:
    """({abs path: (dist, entry) of the first distribution listing it}, {abs path: [(dist, entry), ...]} of the paths
    two or more distributions list, one pair per distribution, in ``dists`` order). ``locations``: locate_entries()'s.
    One pass: the conflicts, the owner index and the install times share it."""
    first: dict = {}
    shared: dict = {}
    for dist in dists:
        for entry, loc, _problem in locations.get(dist.dist_info, ()):
            if loc is None:
                continue
            found = first.setdefault(loc, (dist, entry))
            if found[0] is not dist:
                pairs = shared.setdefault(loc, [found])
                if all(other is not dist for other, _entry in pairs):
                    pairs.append((dist, entry))
    return first, shared


def find_conflicts(dists, venv_root: str, digests: Optional[dict] = None, locations: Optional[dict] = None,
                   shared: Optional[dict] = None) -> list:
    """Paths listed in two or more RECORDs, sorted by path; ``digests`` as filled by check_all(); ``shared``: the
    second half of listed_paths(), when the caller has it."""
    conflicts = []
    if shared is None:
        shared = listed_paths(dists, locations if locations is not None else locate_entries(dists, venv_root))[1]
    owned = shared
    for loc in sorted(owned):
        pairs = owned[loc]
        conflicts.append(Conflict(
            path=pairs[0][1].path,
            owners=tuple(dist.label for dist, _entry in pairs),
            on_disk=_on_disk(loc, pairs, digests or {}),
        ))
    return conflicts


def _on_disk(loc: str, pairs: list, digests: dict) -> Optional[str]:
    if not os.path.exists(loc):
        return "none"
    for dist, entry in pairs:
        if entry.digest is not None and digests.get((loc, entry.algorithm)) == entry.digest:
            return dist.label
    return None
