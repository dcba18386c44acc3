# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a plan's batches, in place or on a swap's copy: each batch's installer commands, its test, commit or close;
then re-plan, at most MAX_ROUNDS times.

Private to the gpuops.cuda_venv collection: not a public API.

A batch runs inside a transaction that ``begin(batch)`` opens: ``recovery.JournaledBatch`` in place (a snapshot of
the live venv, restored on failure), ``swap_run``'s batch on the copy (a failure discards the whole copy). Both
answer ``root``, ``entries``, ``journal``, ``light_test``, ``changes_live_venv``, ``apply``, ``action``, ``probe``,
``commit`` and ``rollback``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import outcome
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.health import Health, Known, health, judged, observed_after, what_tested, with_light_test
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.outcome import RepairFailed
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.record_trim import drop_record_entries
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.recovery import JournaledBatch
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import escaping_directory_links
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import crash_point
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import make_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.install_guard import InstallRefused, guard_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import Backend
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.binaries.loader import LoaderConfig
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import without_probe

MAX_ROUNDS = 3


@dataclass
class Run:
    """One repair run: its options (repair.RepairOptions), its installer, and what its batches did."""

    options: object
    # called once, with the venv's observation, when the first batch runs: a no-op run starts no installer
    make_backend: Callable[[Observations], Backend]
    runner: Runner
    secrets: Tuple[str, ...]
    executed: List[dict] = field(default_factory=list)
    touched: set = field(default_factory=set)
    loader: Optional[LoaderConfig] = None  # the node's loader configuration, read once per run
    lock_fd: Optional[int] = None  # installers inherit the lock: an orphaned one keeps the venv locked
    observed: Optional[Observations] = None  # the venv as found: which installer made it, whether it has pip
    unfixable: List[str] = field(default_factory=list)  # batches skipped because a wheel is not in the sources
    # batches on a copy committed before the baseline test they are judged against had finished (_run_batch)
    unjudged: List[Callable[[], None]] = field(default_factory=list)
    live_health: Optional[Callable[[], Health]] = None  # a swap's: the live venv's full test, run once when asked
    _backend: Optional[Backend] = None

    @property
    def backend(self):
        if self._backend is None:
            self._backend = self.make_backend(self.observed)
            if self._backend is not None and self.lock_fd is not None:
                self._backend.pass_fds = (self.lock_fd,)
        return self._backend

    @property
    def backend_name(self) -> Optional[str]:
        return getattr(self._backend, "name", None)


def guarded(run, obs, plan, state_dir, result_of, journal=None):
    """``plan`` once every wheel it installs is known to overwrite no other wheel's files (install_guard); else the
    run fails before any change of this plan, with ``result_of(plan as checked)`` and the refusal's findings."""
    try:
        return guard_plan(obs, plan, run.options.install_check, lambda: run.backend, state_dir, run.options.check_mode,
                          run.secrets)
    except InstallRefused as exc:
        if journal is not None:
            journal.append("done")
            journal.reset()
        result = result_of(exc.plan or plan)
        result.update(refused=exc.result["refused"], findings=exc.result["refused"] + result["findings"])
        raise RepairFailed(redact(str(exc), run.secrets), result) from None


def run_rounds(run, begin, plan, state, before, recovered, state_dir, journal):
    """The batches of the plan, then of the re-plans (at most MAX_ROUNDS, each guarded); (last observation, last plan
    run). ``state()``: (observation, health) the first batch starts from (health.Pending or Known). ``journal`` is
    closed by a refused re-plan."""
    options = run.options
    plan_seen = plan
    for _round in range(1 if options.batch else MAX_ROUNDS):
        batches = (plan.batches[options.batch - 1],) if options.batch else plan.batches
        for batch in batches:
            done = _run_batch(run, begin, batch, state, before, plan, recovered)
            if done is not None:  # None: skipped, restored, for want of a wheel; the next batch runs
                state = Known(*done)
        while run.unjudged:
            run.unjudged.pop(0)()
        current = state()[0]
        if options.batch or run.unfixable:  # another round would only meet the same missing wheels
            break
        plan = guarded(run, current, make_plan(without_probe(current), diagnose(current), options.desired), state_dir,
                       lambda checked, now=current: outcome.result(options, before, now, checked, run, recovered), journal)
        if plan.empty or plan.as_dict() == plan_seen.as_dict():
            break
        plan_seen = plan
    return current, plan_seen


def _run_batch(run, begin, batch, state, before, plan, recovered):
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
    run.executed.append(record)
    if any(a.kind != "remove" for a in batch.actions):
        leaving = escaping_directory_links(root, txn.entries)
        if leaving:
            _fail(run, txn, record, "batch %d: not installing: %s (a symlink leaving the venv) would let the installer "
                  "write outside it (RECORD_PATH_OUTSIDE_VENV); replace it with a folder, then run again"
                  % (batch.number, ", ".join(leaving[:3])),
                  outcome.result(run.options, before, starting()[0], plan, run, recovered, failed=True))
    for kind, actions in _command_groups(batch.actions):
        trimmed = _trim_records(actions)
        if trimmed:
            _fail(run, txn, record, "batch %d: %s" % (batch.number, trimmed),
                  outcome.result(run.options, before, starting()[0], plan, run, recovered, failed=True))
        result = _apply(run, kind, actions)
        record["commands"].append({"argv": list(result.argv), "rc": result.rc})
        txn.action(kind=kind, names=[a.name for a in actions], rc=result.rc)
        run.touched.update(a.name for a in actions if a.kind != "remove")
        crash_point("repair.after-%s" % kind)
        if not result.ok:
            message = "batch %d: %s failed: %s" % (batch.number, kind, _tail(result))
            missing = [a.requirement for a in actions if a.name in run.backend.not_found(result)]
            if missing:
                message = redact("%s; unfixable: %s not found in the wheel sources (%s)" % (
                    message, ", ".join(missing), run.backend.describe_sources()), run.secrets)
            if missing and isinstance(txn, JournaledBatch):  # in place: restore this batch, let the independent ones run
                _restore(txn, record, message)
                run.touched.difference_update(a.name for a in batch.actions)  # restored: nothing of it to verify
                run.unfixable.append(message)
                return None
            _fail(run, txn, record, message, outcome.result(run.options, before, starting()[0], plan, run, recovered, failed=True))
    txn.probe()
    crash_point("repair.before-probe")
    # A batch on a copy that is not the plan's last gets the light test (the real loader on the anchor's compiled
    # parts): the full import and probe_command follow the last batch, and any failure discards the whole copy.
    after, light = with_light_test(lambda loader_only: observed_after(run.options, run.runner, run.loader, loader_only),
                                   txn.light_test and batch is not plan.batches[-1])
    found = health(after, run.options, run.runner, run_check_command=not light)
    record["test"] = what_tested(run.options, light)

    def judge():
        regression = judged(starting()[1], found, run.live_health)
        if regression:
            _fail(run, txn, record, "batch %d: the test after it failed: %s" % (batch.number, regression),
                  outcome.result(run.options, before, starting()[0], plan, run, recovered, failed=True))
    if txn.changes_live_venv or state.ready():
        judge()
    else:  # on a copy the next batch need not wait for the live venv's baseline: judged before the copy is used
        run.unjudged.append(judge)
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
