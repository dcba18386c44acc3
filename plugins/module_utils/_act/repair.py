# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a repair plan batch by batch: lock, recover, snapshot, apply, test, commit or restore.

Private to the gpuops.cuda_venv collection: not a public API.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import crash_point
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import ERROR, is_healthy, summarize
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.install_guard import InstallRefused, guard_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import (
    FactsOptions, import_name, loader_config, observe, probe_venv, without_probe)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState, Plan, make_plan, predicted_inventory
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import run_check
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.record_check import check_all
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.record_trim import drop_record_entries
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.recovery import JournaledBatch, recover
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.redact import redact
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import escaping_directory_links
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import IN_PLACE, SWAP, recover_swap, swap_dir_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_lock import VenvLock
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import swap_run

STATE_DIR = ".cuda_venv"
# The probes' bytecode cache when the venv has none of its own (see _probe_pycache); removed when the run ends.
PYCACHE_DIR = "pycache"
MAX_ROUNDS = 3


class RepairFailed(CudaVenvError):
    """A batch failed and was restored; carries the partial result."""


@dataclass(frozen=True)
class RepairOptions:
    facts: FactsOptions
    desired: DesiredState
    probe: bool = True
    probe_command: Tuple[str, ...] = ()
    batch: Optional[int] = None
    lock_timeout: float = 0.0
    check_mode: bool = False
    diff: bool = False
    install_check: object = None  # install_guard.InstallCheck: every wheel's paths checked before anything is installed
    strategy: str = IN_PLACE  # auto | swap | in_place (the module's default is auto; see swap_run.py)
    keep_previous: int = 1
    swap_back: bool = False


@dataclass
class _Run:
    options: RepairOptions
    # called once, with the venv's observation, when the first batch runs: a no-op run starts no installer
    make_backend: Callable[[object], object]
    runner: object
    secrets: Tuple[str, ...]
    executed: List[dict] = field(default_factory=list)
    touched: set = field(default_factory=set)
    loader: object = None  # the node's loader configuration, read once per run
    lock_fd: Optional[int] = None  # installers inherit the lock: an orphaned one keeps the venv locked
    observed: object = None  # the venv as found: which installer made it, whether it has pip
    unfixable: List[str] = field(default_factory=list)  # batches skipped because a wheel is not in the sources
    # batches on a copy committed before the baseline test they are judged against had finished (_run_batch)
    unjudged: List[Callable[[], None]] = field(default_factory=list)
    live_health: Optional[Callable[[], object]] = None  # a swap's: the live venv's full test, run once when asked
    _backend: object = None

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


def state_dir_of(root: str) -> str:
    return os.path.join(root, STATE_DIR)


def inventory(obs) -> Dict[str, str]:
    """name -> version, as installed."""
    return dict(sorted((d.key, d.version) for d in obs.distributions))


def file_state(obs) -> Dict[str, dict]:
    """Per damaged distribution: its missing/modified counts; plus the conflicting paths."""
    state = {}
    for dist in obs.distributions:
        check = obs.file_states.get(dist.dist_info)
        if check and (check.missing or check.modified):
            state[dist.key] = {"missing": len(check.missing), "modified": len(check.modified)}
    return {"damaged": state, "conflicts": sorted(c.path for c in obs.conflicts)}


def repair(options: RepairOptions, make_backend: Callable[[], object], runner, secrets: Sequence[str] = ()) -> dict:
    """Plan, then (unless check mode) execute; returns the module's result dictionary.

    ``make_backend(observations)`` builds the installer backend; it is called only when a batch runs.
    """
    static = _static_options(options.facts)
    root = os.path.abspath(options.facts.path)
    if options.check_mode:
        obs = observe(static, runner)
        return _check_result(options, obs, root, _Run(options, make_backend, runner, tuple(secrets), observed=obs))
    state_dir = state_dir_of(root)
    run = _Run(options, make_backend, runner, tuple(secrets))
    with VenvLock(state_dir, timeout=options.lock_timeout) as lock:
        run.lock_fd = lock.fileno()
        try:
            return _converge(run, root, state_dir, static)
        finally:
            shutil.rmtree(os.path.join(state_dir, PYCACHE_DIR), ignore_errors=True)


def _converge(run, root: str, state_dir: str, static: FactsOptions) -> dict:
    """Under the lock: recover, plan, run the batches (re-planning up to MAX_ROUNDS times), report."""
    runner = run.runner
    recovered = recover(root, state_dir) or recover_swap(root, swap_dir_of(root), run.options.keep_previous)
    loader = loader_config(runner, static.ld_library_path)  # the node's loader does not change during a run
    run.loader = loader
    before = observe(static, runner, loader)
    pycache = _probe_pycache(before, state_dir)
    if pycache:
        run.options = dataclasses.replace(run.options, facts=dataclasses.replace(run.options.facts, pycache=pycache))
        before = dataclasses.replace(before, options=dataclasses.replace(before.options, pycache=pycache))
    options = run.options
    run.observed = before
    if options.swap_back:
        return swap_run.swap_back_result(run, root, static, before, recovered)
    findings = diagnose(before)
    plan = _guarded(run, before, make_plan(before, findings, options.desired), state_dir,
                    lambda checked: _result(options, before, before, checked, run, recovered))
    if plan.empty:
        result = _result(options, before, before, plan, run, recovered, changed=bool(recovered), findings=findings)
        result.update(strategy=None, strategy_reason="nothing to repair")
        return result
    if run.backend is None:  # resolve the installer before any batch: an unusable one changes nothing
        raise RepairFailed("no installer backend", _result(options, before, before, plan, run, recovered))
    if options.batch and options.batch > len(plan.batches):
        raise RepairFailed("batch %d does not exist: the plan has %d batch(es)" % (
            options.batch, len(plan.batches)), _result(options, before, before, plan, run, recovered))
    try:
        strategy = swap_run.decide(options, before, plan, root)
    except CudaVenvError as exc:
        raise RepairFailed(str(exc), dict(_result(options, before, before, plan, run, recovered), strategy=None,
                                          strategy_reason=str(exc))) from None
    if strategy.used == SWAP:
        return swap_run.converge_on_copy(run, root, state_dir, before, plan, recovered, strategy)
    journal = Journal(state_dir)
    with ThreadPoolExecutor(max_workers=1) as background:
        # The baseline test runs while the first batch's snapshot is taken: the venv is unchanged until it applies.
        pending = _Pending(background.submit(_baseline, before, options, runner))

        def begin(batch):
            return JournaledBatch.begin(root, state_dir, journal, batch.number, actions=[a.as_dict() for a in batch.actions])
        current, plan_seen = _run_rounds(run, begin, plan, pending, before, recovered, state_dir, journal)
    journal.append("done")
    journal.reset()
    after = without_probe(current)  # nothing changed since the last batch's observation
    result = _result(options, before, after, plan_seen, run, recovered, probe_obs=current)
    result.update(strategy=strategy.used, strategy_reason=strategy.reason)
    if run.unfixable:
        result["plan"]["unfixable"] = list(result["plan"]["unfixable"]) + run.unfixable
        raise RepairFailed("; ".join(run.unfixable) + ("" if options.batch else "; the other batches ran"), result)
    return result


def _guarded(run, obs, plan, state_dir, result_of, journal=None):
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


def _run_rounds(run, begin, plan, state, before, recovered, state_dir, journal):
    """The batches of the plan, then of the re-plans (at most MAX_ROUNDS, each guarded); (last observation, last plan
    run). ``journal`` is closed by a refused re-plan."""
    options = run.options
    plan_seen = plan
    for _round in range(1 if options.batch else MAX_ROUNDS):
        batches = (plan.batches[options.batch - 1],) if options.batch else plan.batches
        for batch in batches:
            outcome = _run_batch(run, begin, batch, state, before, plan, recovered)
            if outcome is not None:  # None: skipped, restored, for want of a wheel; the next batch runs
                state = _Known(*outcome)
        while run.unjudged:
            run.unjudged.pop(0)()
        current = state()[0]
        if options.batch or run.unfixable:  # another round would only meet the same missing wheels
            break
        plan = _guarded(run, current, make_plan(without_probe(current), diagnose(current), options.desired), state_dir,
                        lambda checked, now=current: _result(options, before, now, checked, run, recovered), journal)
        if plan.empty or plan.as_dict() == plan_seen.as_dict():
            break
        plan_seen = plan
    return current, plan_seen


def _probe_pycache(obs, state_dir: str) -> Optional[str]:
    """Where the probes keep their bytecode: None when the anchor's package already has some (pip compiles at
    install; the probes read it and write none, ``-B``), else a folder in the state dir (uv does not compile by
    default: only the first probe compiles, and the venv's sources get no ``__pycache__``)."""
    package = import_name(obs.options.anchor, obs.distributions)
    for site in obs.site_packages:
        cache = os.path.join(site, package, "__pycache__")
        try:
            if any(name.startswith("__init__.") and name.endswith(".pyc") for name in os.listdir(cache)):
                return None
        except OSError:
            continue
    return os.path.join(state_dir, PYCACHE_DIR)


def _baseline(before, options, runner, light: bool = False):
    """(the observation the first batch starts from, its health): the venv as found, probed when asked.

    ``light``: with the light test (a swap's copy is judged against it; the full test of the live venv is run
    only if the copy's full test needs comparing, see _judged); a failed light test is judged by the import."""
    if not options.probe:
        return before, _health(before, options, runner)
    current, light = _tested(lambda loader_only: probe_venv(before, runner, loader_only=loader_only), light)
    return current, _health(current, options, runner, run_check_command=not light)


def _tested(probed, light: bool):
    """(observation, whether the light test judged it): ``probed(loader_only)`` with the light test when asked; a
    failed light test is judged by the import itself (torch's own preload can rescue an import the light test
    cannot), and an anchor with no compiled part is imported anyway (see probe.probe_import)."""
    current = probed(light)
    light = bool(light and current.probe is not None and current.probe.loader_only)
    if light and not current.probe.ok:
        return probed(False), False
    return current, light


class _Pending:
    """(observation, health) a first batch starts from, while the baseline test still runs in the background."""

    def __init__(self, future):
        self.future = future

    def __call__(self):
        return self.future.result()

    def ready(self) -> bool:
        return self.future.done()


class _Known:
    """(observation, health) already known: what the previous batch left."""

    def __init__(self, current, baseline):
        self.answer = (current, baseline)

    def __call__(self):
        return self.answer

    def ready(self) -> bool:
        return True


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
                  _result(run.options, before, starting()[0], plan, run, recovered, failed=True))
    for kind, actions in _command_groups(batch.actions):
        trimmed = _trim_records(actions)
        if trimmed:
            _fail(run, txn, record, "batch %d: %s" % (batch.number, trimmed),
                  _result(run.options, before, starting()[0], plan, run, recovered, failed=True))
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
            _fail(run, txn, record, message, _result(run.options, before, starting()[0], plan, run, recovered, failed=True))
    txn.probe()
    crash_point("repair.before-probe")
    # A batch on a copy that is not the plan's last gets the light test (the real loader on the anchor's compiled
    # parts): the full import and probe_command follow the last batch, and any failure discards the whole copy.
    after, light = _tested(lambda loader_only: _with_probe(run.options, run.runner, run.loader, loader_only),
                           txn.light_test and batch is not plan.batches[-1])
    health = _health(after, run.options, run.runner, run_check_command=not light)
    record["test"] = _test_name(run.options, light)

    def judge():
        regression = _judged(run, starting()[1], health)
        if regression:
            _fail(run, txn, record, "batch %d: the test after it failed: %s" % (batch.number, regression),
                  _result(run.options, before, starting()[0], plan, run, recovered, failed=True))
    if txn.changes_live_venv or state.ready():
        judge()
    else:  # on a copy the next batch need not wait for the live venv's baseline: judged before the copy is used
        run.unjudged.append(judge)
    crash_point("repair.before-commit")
    txn.commit()
    record["result"] = "committed"
    return after, health


def _test_name(options, light: bool) -> str:
    """What tested a batch, as its record says: besides the facts (always), the import or the light test."""
    if not options.probe:
        return "facts"
    if light:
        return "facts + loader"
    return "facts + import" + (" + probe_command" if options.probe_command else "")


def _closing_on_failure(state, txn, number: int):
    """``state`` (_Pending or _Known, each answers the same every time), asked for when needed; if the test before
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


@dataclass(frozen=True)
class _Health:
    import_ok: Optional[bool]
    import_error: Optional[str]
    errors: frozenset
    check_ok: Optional[bool]
    check_error: Optional[str]
    light: bool = False  # judged by the light loader test (no probe_command): see _judged


def _health(obs, options, runner, run_check_command: bool = True) -> _Health:
    findings = diagnose(obs)
    errors = frozenset((f.code, f.subject) for f in findings if f.severity == ERROR)
    probe = obs.probe
    check_ok, check_error = None, None
    if options.probe_command and run_check_command:
        check = run_check(list(options.probe_command), runner, ld_library_path=options.facts.ld_library_path,
                          timeout=options.facts.probe_timeout)
        check_ok, check_error = check.ok, check.error
    return _Health(probe.ok if probe else None, probe.error if probe else None, errors, check_ok, check_error,
                   bool(probe and probe.loader_only))


def _judged(run, before: _Health, after: _Health) -> Optional[str]:
    """Why a batch made the venv worse, or None. Tests of two kinds (the light one, then the full one with
    probe_command) are not comparable: where a swap's copy fails anything after a light test, it is compared with
    the live venv's full test instead (``run.live_health``, run only then: the live venv has not changed)."""
    regression = _regression(before, after)
    if before.light != after.light and run.live_health is not None and (
            regression or after.import_ok is False or after.check_ok is False):
        regression = _regression(run.live_health(), after)
    return regression


def _regression(before: _Health, after: _Health) -> Optional[str]:
    """Why the venv got worse, or None. A venv already broken may stay broken between batches."""
    if before.import_ok and after.import_ok is False:
        return "import failed: %s" % after.import_error
    if before.check_ok and after.check_ok is False:
        return "probe_command failed: %s" % after.check_error
    new = sorted(after.errors - before.errors)
    if new:
        return "new error finding(s): %s" % ", ".join("%s %s" % item for item in new)
    return None


def _static_options(facts: FactsOptions) -> FactsOptions:
    """The user's facts options without the import probe and NVML: what planning reads."""
    return dataclasses.replace(facts, probe=False, gpu=False)


def _with_probe(options, runner, loader, loader_only: bool = False):
    """The venv read again after a batch, probed when the repair probes (never NVML); ``loader_only``: the light
    test (probe.probe_import)."""
    return observe(dataclasses.replace(options.facts, probe=options.probe, gpu=False, probe_loader_only=loader_only),
                   runner, loader)


def _check_result(options, obs, root, run) -> dict:
    findings = diagnose(obs)
    plan = _guarded(run, obs, make_plan(obs, findings, options.desired), state_dir_of(root),
                    lambda checked: {"changed": False, "plan": checked.as_dict(), "healthy": is_healthy(findings),
                                     "findings": [f.as_dict() for f in findings], "summary": summarize(findings),
                                     "batches": [], "recovered": None})
    strategy = swap_run.check_strategy(options, obs, root, plan)
    pending = Journal(state_dir_of(root)).open_batch() if os.path.isdir(state_dir_of(root)) else None
    result = {
        "changed": not plan.empty or pending is not None,
        "plan": plan.as_dict(),
        "healthy": is_healthy(findings),
        "findings": [f.as_dict() for f in findings],
        "summary": summarize(findings),
        "batches": [],
        "recovered": None,
    }
    if pending is not None:
        result["pending_recovery"] = "an interrupted run (batch %s) will be rolled back first" % pending.get("batch")
    result.update(strategy)
    if options.diff:
        result["diff"] = {"before": _diff_side(inventory(obs), file_state(obs)),
                          "after": _diff_side(predicted_inventory(inventory(obs), plan),
                                              {"damaged": {}, "conflicts": []} if not plan.empty else file_state(obs))}
    return result


def _result(options, before, after, plan: Plan, run, recovered, changed=None, failed=False, probe_obs=None,
            verified=None, findings=None) -> dict:
    """``findings``: the diagnosis of ``probe_obs`` (else ``after``) when the caller has it already."""
    if findings is None:
        findings = diagnose(probe_obs if probe_obs is not None else after)
    inv_before, inv_after = inventory(before), inventory(after)
    files_before, files_after = file_state(before), file_state(after)
    if changed is None:
        changed = inv_before != inv_after or files_before != files_after
    result = {
        "changed": bool(changed),
        "plan": plan.as_dict(),
        "batches": run.executed,
        "recovered": recovered,
        "healthy": is_healthy(findings),
        "findings": [f.as_dict() for f in findings],
        "summary": summarize(findings),
        "backend": run.backend_name,
        "verified": {} if failed else verified if verified is not None else _verify_touched(after, run.touched),
    }
    if options.diff:
        result["diff"] = {"before": _diff_side(inv_before, files_before), "after": _diff_side(inv_after, files_after)}
    return result


def _verify_touched(obs, touched) -> dict:
    """sha256 of every file of every reinstalled or installed distribution against its RECORD."""
    dists = [dist for dist in obs.distributions if dist.key in touched]
    states = check_all(dists, obs.layout.root, "hash")  # one thread per core, largest files first
    verdict = {}
    for dist in dists:
        state = states[dist.dist_info]
        verdict[dist.key] = "ok" if not (state.missing or state.modified) else "%d missing, %d modified" % (
            len(state.missing), len(state.modified))
    return verdict


def _diff_side(inv: Dict[str, str], files: dict) -> str:
    lines = [name if version is None else "%s==%s" % (name, version) for name, version in sorted(inv.items())]
    for key, counts in sorted(files["damaged"].items()):
        lines.append("# %s: %d missing, %d modified" % (key, counts["missing"], counts["modified"]))
    for path in files["conflicts"]:
        lines.append("# conflict: %s" % path)
    return "\n".join(lines) + "\n"
