# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Atomic repair: a hard-linked copy of the venv beside it, exchanged with the live venv in one step.

Private to the gpuops.cuda_venv collection: not a public API.

Layout, beside the venv ``PARENT/NAME`` on the same filesystem (the swap dir, owner-only):

``PARENT/.NAME.cuda_venv/journal.jsonl``   the swap journal (``swap`` records with a ``step``)
``PARENT/.NAME.cuda_venv/next/``           the copy being repaired (after an exchange: the old venv, briefly)
``PARENT/.NAME.cuda_venv/previous/RUN/``   previous generations, newest last (``keep_previous``)
``PARENT/.NAME.cuda_venv/exchange-tmp/``   only inside the two-renames fallback of an exchange

The venv's lock stays ``NAME/.cuda_venv/lock``; the copy gets a hard link to that same inode, so every
process that opens the lock path before or after the exchange locks the same file. The swap journal
and the generations live outside the exchanged tree, so they outlive the exchange.

Steps journaled (each ``swap`` record's ``step``): ``begin`` (before the copy) ... ``exchange`` (names
the inode of the live root and of the copy's root) ... ``exchanged`` ... ``done``. A run that finds an
open swap run (no ``done``) recovers it: before ``exchange`` it discards the copy (the live venv was never
touched); after it, it looks at which inode the venv path holds and finishes or undoes nothing but the
cleanup. The venv path holds the old venv or the repaired one at every instant, except inside the
two-renames fallback (no ``renameat2``), where it is missing between two ``rename(2)`` calls.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import shutil
import stat
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import crash_point
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import fsync_dir, make_dirs
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import Entry, link_or_copy, scan_tree
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_lock import LOCK_NAME, STATE_DIR_MODE
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import (
    NEXT_DIR, PREVIOUS_DIR, previous_generations, swap_dir_of)

SWAP = "swap"
IN_PLACE = "in_place"
AUTO = "auto"
STRATEGIES = (AUTO, SWAP, IN_PLACE)
EXCHANGE_TMP = "exchange-tmp"
# Files of the venv's own state dir that the copy shares (hard links): the lock (same inode: one lock for both
# trees) and the last run's journal (history). Snapshots and caches are not copied.
SHARED_STATE_FILES = (LOCK_NAME, "journal.prev.jsonl")
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class SwapError(CudaVenvError):
    """A swap cannot be made, finished or undone."""


@dataclass(frozen=True)
class Strategy:
    """The strategy a run uses and why (the result's ``strategy`` and ``strategy_reason``)."""

    used: str
    reason: str


@dataclass(frozen=True)
class Room:
    """What a filesystem has free (statvfs, for an unprivileged user) and what a swap would need."""

    free_bytes: int
    free_inodes: int
    need_bytes: int
    need_inodes: int


def choose_strategy(requested: str, root: str, room: Optional[Room], batch: Optional[int]) -> Strategy:
    """``swap`` where it can work (or ``in_place`` with the reason); SwapError when swap was asked for and cannot."""
    if requested == IN_PLACE:
        return Strategy(IN_PLACE, "strategy in_place was asked for")
    why = why_swap_cannot_work(root, room, batch)
    if why is None:
        return Strategy(SWAP, "strategy %s: the venv is copied beside itself, repaired and exchanged atomically" % requested)
    if requested == SWAP:
        raise SwapError("strategy swap cannot work for %s: %s; use strategy in_place (or auto, which falls back)" % (root, why))
    return Strategy(IN_PLACE, "fell back to in_place: %s" % why)


def why_swap_cannot_work(root: str, room: Optional[Room], batch: Optional[int]) -> Optional[str]:
    """The first reason a swap of ``root`` cannot work, or None."""
    if batch:
        return "option batch runs one batch per run on the live venv (a swap repairs a copy in one run)"
    parent = os.path.dirname(root)
    try:
        top, above = os.lstat(root), os.stat(parent)
    except OSError as exc:
        return "cannot stat %s: %s" % (exc.filename, exc.strerror)
    if top.st_dev != above.st_dev or is_mount_point(root):
        return "the venv root %s is a mount point (rename(2) cannot move it)" % root
    if not os.access(parent, os.W_OK | os.X_OK):
        return "the parent directory %s is not writable" % parent
    if os.geteuid() != 0 and top.st_uid != os.geteuid():
        return "the venv is owned by uid %d and this run is uid %d: a copy could not keep its owners" % (top.st_uid, os.geteuid())
    swap_dir = swap_dir_of(root)
    try:
        if os.lstat(swap_dir).st_dev != top.st_dev:
            return "%s is on another filesystem than the venv: the copy would cross filesystems" % swap_dir
    except FileNotFoundError:
        pass
    except OSError as exc:
        return "cannot stat %s: %s" % (swap_dir, exc.strerror)
    if room is not None:
        if room.free_bytes < room.need_bytes:
            return "free space is short: the plan writes about %d bytes and %d are free" % (room.need_bytes, room.free_bytes)
        if room.free_inodes < room.need_inodes:
            return "free inodes are short: the copy and the plan need about %d and %d are free" % (room.need_inodes, room.free_inodes)
    return None


def is_mount_point(path: str, mountinfo: str = "/proc/self/mountinfo") -> bool:
    """True for a mount point, a bind mount from the same filesystem included (os.path.ismount misses those)."""
    if os.path.ismount(path):
        return True
    real = os.path.realpath(path)
    try:
        with open(mountinfo, "r", encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split(" ")
        # mountinfo(5): field 5 is the mount point, with space, tab, newline and backslash as octal escapes.
        if len(fields) > 4 and re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]) == real:
            return True
    return False


def measure_room(root: str, need_bytes: int, need_inodes: int) -> Room:
    st = os.statvfs(os.path.dirname(root))
    return Room(st.f_bavail * st.f_frsize, st.f_favail, need_bytes, need_inodes)


# --- the copy -------------------------------------------------------------------------------------------------------

def make_copy(root: str, dest: str, state_dir: str) -> Dict[str, Entry]:
    """Copy the tree at ``root`` to the new directory ``dest``: directories made, files hard-linked (copied where
    linking fails), symlinks, owners, modes and mtimes kept; ``state_dir`` left out but its lock shared.

    Returns the source's entries (scan_tree), which tell installer-written files (new inodes) from copied ones.
    """
    entries = scan_tree(root, (os.path.basename(state_dir),))
    special = sorted(rel for rel, entry in entries.items() if entry.type == "o")
    if special:
        raise SwapError("cannot copy %s: it holds special files (fifo, socket or device): %s" % (root, ", ".join(special[:3])))
    as_root = os.geteuid() == 0
    os.mkdir(dest, 0o700)
    for rel in sorted(entries):  # a parent sorts before its children
        entry = entries[rel]
        path = dest if rel == "." else dest + "/" + rel
        if entry.type == "d":
            if rel != ".":
                os.mkdir(path, 0o700)
        elif entry.type == "f":
            link_or_copy(root + "/" + rel, path)
            crash_point("swap.copy")
        else:
            os.symlink(entry.target, path)
        if entry.type != "f" and as_root:
            os.lchown(path, entry.uid, entry.gid)
    _share_state(state_dir, os.path.join(dest, os.path.basename(state_dir)))
    for rel in sorted(entries, key=lambda r: -1 if r == "." else r.count("/"), reverse=True):
        entry = entries[rel]
        if entry.type in ("d", "l"):
            path = dest if rel == "." else dest + "/" + rel
            if entry.type == "d":
                os.chmod(path, entry.mode)
            os.utime(path, ns=(entry.mtime_ns, entry.mtime_ns), follow_symlinks=False)
    fsync_dir(dest)
    return entries


def _share_state(state_dir: str, dest_state: str) -> None:
    os.mkdir(dest_state, STATE_DIR_MODE)
    for name in SHARED_STATE_FILES:
        try:
            os.link(os.path.join(state_dir, name), os.path.join(dest_state, name))
        except FileNotFoundError:
            continue


def live_changes(root: str, state_dir: str, entries: Dict[str, Entry]) -> List[str]:
    """Paths of the live venv that changed since it was copied (someone wrote into it, or into a shared inode)."""
    now = scan_tree(root, (os.path.basename(state_dir),))
    changed = sorted(set(now) ^ set(entries))
    for rel in sorted(set(now) & set(entries)):
        a, b = now[rel], entries[rel]
        if a.type != b.type or (a.type != "d" and (a.ino, a.size, a.mtime_ns, a.mode, a.target) != (b.ino, b.size, b.mtime_ns, b.mode, b.target)):
            changed.append(rel)
    return changed


def discard(path: str) -> None:
    """Remove a copy or a previous generation (never the live venv)."""
    if os.path.lexists(path):
        shutil.rmtree(path)


# --- the exchange ---------------------------------------------------------------------------------------------------

def _renameat2():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    function = getattr(libc, "renameat2", None)  # glibc >= 2.28
    if function is not None:
        function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
        function.restype = ctypes.c_int
    return function


def exchange_atomically(a: str, b: str) -> bool:
    """Exchange two paths with renameat2(RENAME_EXCHANGE); False where the C library, kernel or filesystem cannot."""
    function = _renameat2()
    if function is None:
        return False
    if function(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), a)


def exchange(a: str, b: str, swap_dir: str) -> str:
    """Exchange directories ``a`` and ``b``; the method used. The fallback renames ``a`` aside first (a window in
    which ``a`` is missing); ``finish_exchange`` completes an interrupted one."""
    if exchange_atomically(a, b):
        method = "renameat2"
    else:
        tmp = os.path.join(swap_dir, EXCHANGE_TMP)
        os.rename(a, tmp)
        crash_point("swap.exchange-renamed")
        os.rename(b, a)
        os.rename(tmp, b)
        method = "renames"
    for path in sorted({os.path.dirname(a), os.path.dirname(b)}):
        fsync_dir(path)
    return method


def finish_exchange(swap_dir: str, a: str, b: str) -> bool:
    """Complete an exchange the fallback left half done (``exchange-tmp`` present); True when it did something."""
    tmp = os.path.join(swap_dir, EXCHANGE_TMP)
    if not os.path.lexists(tmp):
        return False
    if not os.path.lexists(a):
        os.rename(b, a)
    os.rename(tmp, b)
    return True


# --- generations ----------------------------------------------------------------------------------------------------

def keep_generation(swap_dir: str, old: str, run: str, keep: int) -> Optional[str]:
    """Move the old venv (at ``old``) to previous/RUN and drop all but the ``keep`` newest; where it is kept."""
    if keep < 1:
        discard(old)
        kept = None
    else:
        parent = os.path.join(swap_dir, PREVIOUS_DIR)
        make_dirs(parent)
        kept = os.path.join(parent, run)
        os.rename(old, kept)
        fsync_dir(parent)
    crash_point("swap.kept")
    generations = previous_generations(swap_dir)
    for path in generations[:max(len(generations) - keep, 0)]:
        discard(path)
    return kept


# --- the journal's view -----------------------------------------------------------------------------------------------

def open_swap(journal: Journal) -> Optional[Tuple[str, List[dict]]]:
    """(run, its records) of the last swap run that has no ``done``; None when every run ended."""
    runs = {}  # type: Dict[str, List[dict]]
    for record in journal.records():
        runs.setdefault(record.get("run"), []).append(record)
    for run, records in reversed(list(runs.items())):
        if not any(r.get("step") == "done" or r.get("phase") == "done" for r in records):
            return run, records
    return None


def pending_swap(swap_dir: str) -> Optional[str]:
    """What ``recover_swap`` would do first, in words (check mode); None when a killed swap left nothing. Reads only."""
    if not os.path.isdir(swap_dir):
        return None
    pending = open_swap(Journal(swap_dir))
    if pending is not None:
        return "an interrupted swap run %s (last step %s) will be finished or undone first" % (
            pending[0], pending[1][-1].get("step"))
    nxt = os.path.join(swap_dir, NEXT_DIR)
    return "a leftover copy %s will be removed first" % nxt if os.path.lexists(nxt) else None


def recover_swap(root: str, swap_dir: str, keep: int) -> Optional[dict]:
    """Finish or undo what a killed swap run left; what was done, or None. The caller holds the venv's lock."""
    if not os.path.isdir(swap_dir):
        return None
    journal = Journal(swap_dir)
    pending = open_swap(journal)
    nxt = os.path.join(swap_dir, NEXT_DIR)
    if pending is None:
        if os.path.lexists(nxt):
            discard(nxt)
            return {"action": "removed a leftover copy", "path": nxt}
        return None
    run, records = pending
    steps = [r.get("step") for r in records]
    result = {"run": run, "last_step": steps[-1]}
    exchanged = False
    if "exchange" in steps:
        planned = [r for r in records if r.get("step") == "exchange"][-1]
        finish_exchange(swap_dir, root, planned["other"])
        exchanged = dir_inode(root) == tuple(planned["copy_inode"])
        if not exchanged and dir_inode(root) != tuple(planned["live_inode"]):
            raise SwapError("venv path %s holds neither the venv nor the copy of interrupted swap run %s; the swap "
                            "journal %s says what was planned" % (root, run, journal.path))
    if exchanged:
        kept = keep_generation(swap_dir, nxt, run, keep) if os.path.lexists(nxt) else None
        result.update(action="completed the swap: the repaired venv is in place", previous=kept)
    else:
        discard(nxt)
        result.update(action="discarded the unfinished copy: the venv was never changed")
    journal.append("swap", run=run, batch=None, step="done", recovered_by=journal.run, outcome=result["action"])
    journal.reset()
    result["reason"] = "recovered interrupted swap run %s (last step %s)" % (run, steps[-1])
    return result


def swap_back(root: str, swap_dir: str, journal: Journal) -> dict:
    """Exchange the venv with its newest previous generation, atomically where the kernel can."""
    generations = previous_generations(swap_dir)
    if not generations:
        raise SwapError("venv %s has no previous generation to swap back to (none under %s)" % (root, os.path.join(swap_dir, PREVIOUS_DIR)))
    newest = generations[-1]
    journal.append("swap", batch=None, step="exchange", kind="swap_back", other=newest, live_inode=list(dir_inode(root)),
                   copy_inode=list(dir_inode(newest)))
    method = exchange(root, newest, swap_dir)
    crash_point("swap.exchanged")
    journal.append("swap", batch=None, step="done", method=method)
    journal.reset()
    return {"swapped_back": True, "method": method, "previous": newest}


def dir_inode(path: str) -> Tuple[int, int]:
    """(st_dev, st_ino) of the folder at ``path`` (not followed), as the swap journal names the two sides of an
    exchange; (-1, -1) when no folder is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return (-1, -1)
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else (-1, -1)


def rebase(value, old: str, new: str):
    """``value`` (a result: dicts, lists, strings) with the path prefix ``old`` replaced by ``new`` in every string."""
    if isinstance(value, str):
        return value.replace(old + "/", new + "/") if old + "/" in value else (new if value == old else value)
    if isinstance(value, dict):
        return dict((k, rebase(v, old, new)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(rebase(v, old, new) for v in value)
    return value


def rebase_argv(argv: Sequence[str], old: str, new: str) -> Tuple[str, ...]:
    """A probe_command naming the live venv's files, pointed at the copy's (only arguments under ``old``)."""
    return tuple(new + a[len(old):] if a == old or a.startswith(old + "/") else a for a in argv)


def finish_missing_root(root: str) -> bool:
    """Before anything reads the venv: a venv path left missing by a killed two-renames exchange is completed
    (the journal names the other side). True when it did that. Runs before the lock (whose file is inside the
    venv); a concurrent run's rename of the same path fails and is ignored."""
    if not os.path.isabs(root) or os.path.lexists(root):
        return False
    swap_dir = swap_dir_of(root)
    if not os.path.isdir(swap_dir):
        return False
    pending = open_swap(Journal(swap_dir))
    planned = [r for r in (pending[1] if pending else []) if r.get("step") == "exchange"]
    if not planned:
        return False
    try:
        return finish_exchange(swap_dir, root, planned[-1]["other"])
    except FileNotFoundError:
        return os.path.lexists(root)
