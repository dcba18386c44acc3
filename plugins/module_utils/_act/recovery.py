# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Journaled, reversible batches and the recovery of a batch a crash left open.

Private to the gpuops.cuda_venv collection: not a public API.

Protocol of one batch (``JournaledBatch``), each step journaled and fsync'ed:
``begin`` (names the snapshot dir) -> snapshot taken -> ``snapshot`` -> ``apply``
-> ``action``... -> ``probe`` -> ``commit`` (snapshot discarded) or restore ->
``rollback`` (snapshot discarded). The venv is modified only after ``apply``,
which follows a complete snapshot, so ``recover`` can always go back: restore a
complete snapshot, or discard an incomplete one that nothing relied on.
Callers hold the venv's lock (``VenvLock``) around all of this.
"""

from __future__ import annotations

import os
from typing import List, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import crash_point
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import sync_filesystem
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import (
    Changes,
    Snapshot,
    SnapshotError,
    discard_snapshot,
    is_complete,
)

SNAPSHOTS_DIR = "snapshots"
# Phases after which the venv may already differ from the snapshot.
MODIFYING_PHASES = ("apply", "action", "probe")
# Paths listed per kind in a result; the counts are always complete.
LISTED_PATHS = 20


class RecoveryError(CudaVenvError):
    """An interrupted batch cannot be rolled back."""


def snapshot_name(run: str, batch: int) -> str:
    return "%s-batch%d" % (run, batch)


def summarize(changes: Changes) -> dict:
    """Counts and the first paths of each kind, small enough for a module result."""
    result = {}
    for kind in Changes._fields:
        paths = getattr(changes, kind)
        result[kind] = len(paths)
        result[kind + "_paths"] = paths[:LISTED_PATHS]
    return result


class JournaledBatch:
    """One journaled batch of changes to the tree at ``root``; start it with ``JournaledBatch.begin``."""

    # In place every batch gets the full test: a later batch's failure restores only that batch, so a batch
    # must not be committed on a lighter test than the one that judges the venv.
    light_test = False
    changes_live_venv = True

    def __init__(self, root: str, state_dir: str, journal: Journal, number: int, snapshot: Snapshot) -> None:
        self.root = root
        self.state_dir = state_dir
        self.journal = journal
        self.number = number
        self.snapshot = snapshot

    @classmethod
    def begin(cls, root: str, state_dir: str, journal: Journal, number: int, **details) -> "JournaledBatch":
        """Journal ``begin``, snapshot the tree (state dir excluded), journal ``snapshot``."""
        name = snapshot_name(journal.run, number)
        journal.append("begin", batch=number, snapshot=name, **details)
        crash_point("batch.begun")
        snap_dir = os.path.join(state_dir, SNAPSHOTS_DIR, name)
        try:
            snapshot = Snapshot.take(root, snap_dir, exclude=(state_dir,))
        except SnapshotError as exc:
            discard_snapshot(snap_dir)
            journal.append("rollback", batch=number, reason="snapshot failed: %s" % exc)
            raise
        crash_point("batch.snapshot_taken")
        files = sum(1 for entry in snapshot.entries.values() if entry.type == "f")
        journal.append("snapshot", batch=number, entries=len(snapshot.entries), files=files, copied=len(snapshot.copied))
        return cls(root, state_dir, journal, number, snapshot)

    @property
    def entries(self):
        """The tree as the batch's snapshot found it."""
        return self.snapshot.entries

    def apply(self, **details) -> dict:
        """Journal that the tree is about to change; call it before the first installer command."""
        return self.journal.append("apply", batch=self.number, **details)

    def action(self, **details) -> dict:
        return self.journal.append("action", batch=self.number, **details)

    def probe(self, **details) -> dict:
        return self.journal.append("probe", batch=self.number, **details)

    def changes(self) -> Changes:
        return self.snapshot.changes(self.root)

    def commit(self, **details) -> dict:
        sync_filesystem(self.root)  # what the installers wrote is on disk before the commit says so
        record = self.journal.append("commit", batch=self.number, **details)
        crash_point("batch.committed")
        self.snapshot.discard()
        return record

    def rollback(self, reason: str, **details) -> dict:
        """Restore the snapshot, journal ``rollback`` with what was undone, discard the snapshot."""
        undone = self.snapshot.restore(self.root)
        crash_point("batch.restored")
        record = self.journal.append("rollback", batch=self.number, reason=reason, undone=summarize(undone), **details)
        crash_point("batch.rolled_back")
        self.snapshot.discard()
        return record


def recover(root: str, state_dir: str, journal: Optional[Journal] = None) -> Optional[dict]:
    """Roll back every batch a crash left open, newest first, and drop stale snapshots.

    Returns what was done, for the module's ``recovered`` result; None when nothing was pending.
    """
    journal = journal or Journal(state_dir)
    done = []  # type: List[dict]
    batch = journal.open_batch()
    while batch is not None:
        done.append(_recover_batch(root, state_dir, journal, batch))
        batch = journal.open_batch()
    stale = _discard_stale_snapshots(state_dir)
    if not done and not stale:
        return None
    result = dict(done[0]) if done else {"action": "discarded stale snapshots"}
    if len(done) > 1:
        result["earlier"] = done[1:]
    if stale:
        result["stale_snapshots"] = stale
    return result


def _recover_batch(root: str, state_dir: str, journal: Journal, batch: dict) -> dict:
    run, number, last = batch["run"], batch["batch"], batch["last_phase"]
    name = batch["records"][0].get("snapshot") or snapshot_name(run, number)
    snap_dir = os.path.join(state_dir, SNAPSHOTS_DIR, name)
    reason = "recovered interrupted run %s (batch %s, last phase %s)" % (run, number, last)
    result = {"run": run, "batch": number, "last_phase": last, "reason": reason}
    if is_complete(snap_dir):
        try:
            undone = summarize(Snapshot.load(snap_dir).restore(root))
        except SnapshotError as exc:
            raise RecoveryError(
                "rolling back interrupted run %s (batch %s) failed: %s; every run retries it until it succeeds "
                "or the journal %s is moved aside (which abandons that rollback)" % (run, number, exc, journal.path)
            ) from exc
        journal.append("rollback", run=run, batch=number, reason=reason, recovered_by=journal.run, undone=undone)
        discard_snapshot(snap_dir)
        result.update(action="restored snapshot", undone=undone)
        return result
    if last in MODIFYING_PHASES:
        raise RecoveryError(
            "venv %s was left mid-change by run %s (batch %s, last phase %s) and its snapshot %s is missing or incomplete; "
            "it cannot be rolled back: rebuild the venv" % (root, run, number, last, snap_dir)
        )
    # The crash came while the snapshot was being taken: the tree was not touched yet.
    discard_snapshot(snap_dir)
    reason += "; its snapshot was incomplete and the venv had not been changed"
    journal.append("rollback", run=run, batch=number, reason=reason, recovered_by=journal.run)
    result.update(action="discarded incomplete snapshot", reason=reason)
    return result


def _discard_stale_snapshots(state_dir: str) -> List[str]:
    """Snapshots left by a crash after commit or rollback; no open batch needs them any more."""
    parent = os.path.join(state_dir, SNAPSHOTS_DIR)
    try:
        names = sorted(os.listdir(parent))
    except FileNotFoundError:
        return []
    for name in names:
        discard_snapshot(os.path.join(parent, name))
    return names
