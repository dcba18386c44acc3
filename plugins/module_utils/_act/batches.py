# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a plan's batches, in place or on a swap's copy: each batch's installer commands, its test, commit or close;
then re-plan, at most MAX_ROUNDS times.

Private to the gpuops.cuda_venv collection: not a public API.

A batch runs inside a transaction that ``begin(batch)`` opens: ``recovery.JournaledBatch`` in place (a snapshot of
the live venv, restored on failure), ``swap_run``'s batch on the copy (a failure discards the whole copy): both
are a ``BatchTransaction``.
"""

from __future__ import annotations

import csv
from typing import Callable, List, Optional, Protocol, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import outcome
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.health import Known, health, judged, observed_after, what_tested, with_light_test
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.outcome import RepairFailed
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.record_trim import drop_record_entries
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.recovery import JournaledBatch
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.run import Run
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import escaping_directory_links
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import crash_point
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import start_writeback
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Batch, Completion, Plan, complete_plan, make_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.install_guard import InstallRefused, guard_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations, without_probe

MAX_ROUNDS = 3


class BatchTransaction(Protocol):
    """What ``begin(batch)`` opens: ``recovery.JournaledBatch`` in place, ``swap_run``'s batch on the copy."""

    root: str  # the tree the batch changes: the venv, or the copy
    entries: dict  # that tree's entries as scanned when the batch began
    journal: Journal
    light_test: bool  # before the plan's last batch, the light test may judge it
    changes_live_venv: bool  # its commands change the venv jobs use: its test before comes first

    def apply(self) -> None:
        """Take the batch's snapshot (in place); nothing on a copy."""

    def action(self, **details) -> None:
        """Journal one installer command of the batch."""

    def probe(self) -> None:
        """Before the batch's test: a copy's files that name the copy are made to name the live venv."""

    def commit(self) -> None:
        """The batch passed its test: journal it, drop its snapshot."""

    def rollback(self, reason: str) -> None:
        """Restore the snapshot (in place) or discard the copy, and journal why."""


def guarded(run: Run, obs: Observations, plan: Plan, result_of, journal=None) -> Plan:
    """``plan`` as ``guard`` completes it."""
    return complete_plan(plan, guard(run, obs, plan, result_of, journal))


def guard(run: Run, obs: Observations, plan: Plan, result_of, journal=None) -> Completion:
    """What completes ``plan`` (``complete_plan``: the guard's dependency installs and reasons), once every wheel it
    installs is known to overwrite no other wheel's files (install_guard); else the run fails before any change of
    this plan, with ``result_of(plan as checked)`` and the refusal's findings."""
    try:
        return guard_plan(obs, plan, run.options.install_check, run.installer.backend, run.layout.state_dir,
                          run.options.check_mode, run.secrets)
    except InstallRefused as exc:
        if journal is not None:
            journal.append("done")
            journal.reset()
        result = result_of(exc.plan or plan)
        result.update(refused=exc.result["refused"], findings=exc.result["refused"] + result["findings"])
        raise RepairFailed(redact(str(exc), run.secrets), result) from None


def run_rounds(run: Run, begin: Callable[[Batch], BatchTransaction], plan: Plan, state, journal):
    """The batches of the plan, then of the re-plans (at most MAX_ROUNDS, each guarded); (last observation, last plan
    run). ``state()``: (observation, health) the first batch starts from (health.Pending or Known). ``journal`` is
    closed by a refused re-plan."""
    options, progress = run.options, run.progress
    plan_seen = plan
    for _round in range(1 if options.batch else MAX_ROUNDS):
        batches = (plan.batches[options.batch - 1],) if options.batch else plan.batches
        for batch in batches:
            done = _run_batch(run, begin, batch, state, plan)
            if done is not None:  # None: skipped, restored, for want of a wheel; the next batch runs
                state = Known(*done)
        while progress.unjudged:
            progress.unjudged.pop(0)()
        current = state()[0]
        if options.batch or progress.unfixable:  # another round would only meet the same missing wheels
            break
        plan = guarded(run, current, make_plan(without_probe(current), diagnose(current), options.desired),
                       lambda checked, now=current: outcome.result(run, now, checked), journal)
        if plan.empty or plan.as_dict() == plan_seen.as_dict():
            break
        plan_seen = plan
    return current, plan_seen


def _run_batch(run: Run, begin, batch: Batch, state, plan: Plan):
    """``state()``: (the observation this batch starts from, its health); asked for once the snapshot is taken.

    ``begin(batch)`` opens the batch's transaction: a snapshot of the live venv (in place), or a batch on the copy.
    """
    txn = begin(batch)
    root = txn.root
    starting = _closing_on_failure(state, txn, batch.number)
    if txn.changes_live_venv:
        starting()  # in place the venv's test comes before anything of it changes; a copy's batch runs beside it
    txn.apply()
    record = {"batch": batch.number, "title": batch.title, "commands": [], "result": None}
    run.progress.executed.append(record)
    if any(a.kind != "remove" for a in batch.actions):
        leaving = escaping_directory_links(root, txn.entries)
        if leaving:
            _fail(run, txn, record, "batch %d: not installing: %s (a symlink leaving the venv) would let the installer "
                  "write outside it (RECORD_PATH_OUTSIDE_VENV); replace it with a folder, then run again"
                  % (batch.number, ", ".join(leaving[:3])),
                  outcome.result(run, starting()[0], plan, failed=True))
    for kind, actions in _command_groups(batch.actions):
        trimmed = _trim_records(actions)
        if trimmed:
            _fail(run, txn, record, "batch %d: %s" % (batch.number, trimmed),
                  outcome.result(run, starting()[0], plan, failed=True))
        result = _apply(run, kind, actions)
        record["commands"].append({"argv": list(result.argv), "rc": result.rc})
        txn.action(kind=kind, names=[a.name for a in actions], rc=result.rc)
        run.progress.touched.update(a.name for a in actions if a.kind != "remove")
        crash_point("repair.after-%s" % kind)
        if not result.ok:
            message = "batch %d: %s failed: %s" % (batch.number, kind, _tail(result))
            missing = [a.requirement for a in actions if a.name in run.backend.not_found(result)]
            if missing:
                message = redact("%s; unfixable: %s not found in the wheel sources (%s)" % (
                    message, ", ".join(missing), run.backend.describe_sources()), run.secrets)
            if missing and isinstance(txn, JournaledBatch):  # in place: restore this batch, let the independent ones run
                _restore(txn, record, message)
                run.progress.touched.difference_update(a.name for a in batch.actions)  # restored: nothing to verify
                run.progress.unfixable.append(message)
                return None
            _fail(run, txn, record, message, outcome.result(run, starting()[0], plan, failed=True))
    start_writeback(root)  # on the disk while the batch is tested: the sync before its commit (or the exchange) is short
    txn.probe()
    crash_point("repair.before-probe")
    # A batch on a copy that is not the plan's last gets the light test (the real loader on the anchor's compiled
    # parts): the full import and probe_command follow the last batch, and any failure discards the whole copy.
    # The plan's last batch also hashes what the repair installed, beside the import (on a core it leaves idle): the
    # result's ``verified`` (outcome.recheck_touched) reuses those digests.
    last = batch is plan.batches[-1]
    hashed = tuple(sorted(run.progress.touched)) if last else ()
    after, light = with_light_test(lambda loader_only: observed_after(run.options, run.runner, run.loader, loader_only, hashed),
                                   txn.light_test and not last)
    found = health(after, run.options, run.runner, run_check_command=not light)
    record["test"] = what_tested(run.options, light)

    def judge():
        regression = judged(starting()[1], found, run.live_health)
        if regression:
            _fail(run, txn, record, "batch %d: the test after it failed: %s" % (batch.number, regression),
                  outcome.result(run, starting()[0], plan, failed=True))
    if txn.changes_live_venv or state.ready():
        judge()
    else:  # on a copy the next batch need not wait for the live venv's baseline: judged before the copy is used
        run.progress.unjudged.append(judge)
    crash_point("repair.before-commit")
    txn.commit()
    record["result"] = "committed"
    return after, found


def _closing_on_failure(state, txn, number: int):
    """``state`` (Pending or Known, each answers the same every time), asked for when needed; if the test before
    the batch could not run, the batch is closed (its snapshot restored, or the copy discarded) and the error
    raised."""
    def ask():
        try:
            return state()
        except Exception:
            _close(txn, "the test before batch %d did not run" % number)
            raise
    return ask


def _fail(run, txn, record, message, result):
    """Restore the batch's snapshot, close the journal, and raise with the partial result."""
    message = redact(message, run.secrets)
    _restore(txn, record, message)
    raise RepairFailed(message, result)


def _restore(txn, record, message):
    """Restore the batch's snapshot and close the journal; the record says why."""
    _close(txn, message)
    record["result"] = "rolled back"
    record["reason"] = message


def _close(txn, reason):
    """Roll the batch back (its snapshot restored, or the copy discarded) and close the journal."""
    txn.rollback(reason)
    txn.journal.append("done")
    txn.journal.reset()


def _command_groups(actions):
    """Consecutive actions of one kind become one installer call: removals first, as planned."""
    groups: List[Tuple[str, List]] = []
    for action in actions:
        if groups and groups[-1][0] == action.kind:
            groups[-1][1].append(action)
        else:
            groups.append((action.kind, [action]))
    return groups


def _trim_records(actions) -> Optional[str]:
    """Cut RECORD entries leaving the venv out of the RECORDs the installer is about to read; why not, or None."""
    for action in actions:
        if action.outside:
            try:
                drop_record_entries(action.record, action.outside)
            except (OSError, csv.Error) as exc:
                return "cannot cut the paths outside the venv from %s: %s" % (action.record, getattr(exc, "strerror", None) or exc)
    return None


def _apply(run, kind, actions):
    if kind == "remove":
        return run.backend.uninstall([a.requirement for a in actions])
    if kind == "reinstall":
        return run.backend.install([a.requirement for a in actions], reinstall=[a.name for a in actions], no_deps=True)
    return run.backend.install([a.requirement for a in actions], no_deps=True)


def _tail(result) -> str:
    text = (result.stderr or result.stdout or "").strip().splitlines()
    if result.timed_out:
        return "timed out"
    return " | ".join(text[-4:]) if text else "exit code %d" % result.rc
