# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Repair a venv: lock, recover, plan, then run the plan in place or on a swap's copy (or swap back).

Private to the gpuops.cuda_venv collection: not a public API.

The repair that the module's entry (_entry/repair_entry.py) runs (``repair``). In place, each batch is snapshotted (``recovery.JournaledBatch``),
applied, tested, committed or restored (``batches``); ``swap_run`` runs the same batches on a copy of the venv.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional, Sequence

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import outcome, swap_run
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.batches import guard, guarded, run_rounds
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.declared import needs_resolution, with_declared
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.facts import facts_of, keep_read_index
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_guard import lift_uv_config, put_back_uv_config, settle_guard, with_guard
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.health import PYCACHE_DIR, Pending, baseline, probe_pycache
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.outcome import RepairFailed, diff_side, file_state, inventory
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.recovery import JournaledBatch, recover
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.run import Installer, RepairOptions, Run
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import SWAP, pending_swap, recover_swap
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_lock import VenvLock
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import is_healthy, summarize
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Completion, Plan, complete_plan, make_plan, predicted_inventory
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import Backend
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions, observe, without_probe
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.performance import restart_needed
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.venv_processes import venv_processes
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import VenvLayout


def repair(options: RepairOptions, venv: VenvLayout, make_backend: Callable[[Observations], Backend], runner: Runner,
           secrets: Sequence[str] = ()) -> dict:
    """Plan, then (unless check mode) execute; returns the module's result dictionary.

    ``venv``: the layout of ``options.facts.path``, read once (_entry/repair_entry.py). ``make_backend(observations)`` builds
    the installer backend; it is called only when a batch runs.
    """
    static = _static_options(options.facts)
    if options.check_mode:
        # The plan that changes nothing reads through the read index (what a real run reads again in full, and the
        # last import's result when nothing it loaded changed); plan_only keeps it for the next one.
        indexed = dataclasses.replace(static, read_index=True)
        seen = observe(dataclasses.replace(indexed, probe=options.probe, gpu=True, performance=True) if options.report_facts
                       else indexed, runner, layout=venv)
        if options.keep_index and seen.read_index.changed:
            keep_read_index(seen)
        obs = _planned_from(seen)
        run = Run(options, runner, tuple(secrets), Installer(lambda: make_backend(obs)), venv, before=obs)
        run, obs, declared = with_declared(run, obs)
        result = _check_result(run, obs)
        if declared is not None:
            result["declared"] = declared.as_dict()
        if options.report_facts:
            result["ansible_facts"] = {"cuda_venv": facts_of(seen)}
        return result
    with VenvLock(venv.root, timeout=options.lock_timeout) as lock:
        try:
            result = _converge(options, venv, static, make_backend, runner, tuple(secrets), lock.fileno())
        finally:
            shutil.rmtree(os.path.join(venv.state_dir, PYCACHE_DIR), ignore_errors=True)
    # Processes that still run the files this run replaced (or that an earlier one did): what a role restarts.
    result["restart_needed"] = restart_needed(venv_processes(venv.root, (venv.swap_dir,)))
    return result


def _converge(options: RepairOptions, venv: VenvLayout, static: FactsOptions, make_backend, runner: Runner, secrets,
              lock_fd: int) -> dict:
    """Under the lock: recover, plan, run the batches (re-planning up to batches.MAX_ROUNDS times), report."""
    recovered = recover(venv.root, venv.state_dir) or recover_swap(venv.root, venv.swap_dir, options.keep_previous)
    if recovered or options.swap_back:
        before, findings = observe(static, runner), None  # a recovery may have put back another tree
    else:
        before, findings = _observed_first(options, static, runner, venv)
    loader = before.loader  # the node's loader does not change during a run: read once, beside the first reading
    pycache = probe_pycache(before, venv.state_dir)
    if pycache:  # the probes' bytecode folder: nothing the diagnosis reads
        options = dataclasses.replace(options, facts=dataclasses.replace(options.facts, pycache=pycache))
        before = dataclasses.replace(before, options=dataclasses.replace(before.options, pycache=pycache))
    found = before
    run = Run(options, runner, secrets, Installer(lambda: make_backend(found), lock_fd), venv, before=before,
              recovered=recovered, loader=loader)
    if options.swap_back:
        return swap_run.swap_back_result(run, static)
    run, judged, declared = with_declared(run, before)
    run = dataclasses.replace(run, before=judged)
    try:
        result = _plan_and_run(run, findings if judged is before else None)
    except RepairFailed as exc:
        if declared is not None:
            exc.result = dict(exc.result, declared=declared.as_dict())
        raise
    return result if declared is None else dict(result, declared=declared.as_dict())


def _observed_first(options: RepairOptions, static: FactsOptions, runner: Runner, venv: VenvLayout) -> tuple:
    """(the venv a real run starts from, its diagnosis or None). Read first through the read index (as the facts module
    reads it): a venv with nothing to do is answered from it, with the diagnosis that said so, and the index is kept for
    the next run. Anything to do (a batch, or a resolution by the installer) and every file is read again before
    anything is planned or changed, unless the index answered nothing (none yet, or none of it still true): that first
    reading then read every file itself."""
    quick = observe(dataclasses.replace(static, read_index=True), runner, layout=venv)
    findings = None if needs_resolution(quick, options.desired.packages) else diagnose(quick)
    if findings is None or not make_plan(quick, findings, options.desired).empty:
        if quick.read_index.reused == 0:  # its diagnosis too: the index's use is nothing a finding reads
            return dataclasses.replace(quick, options=static, read_index=None), findings
        return observe(static, runner, quick.loader, layout=venv), None
    if quick.read_index.changed:
        keep_read_index(quick)
    return quick, findings


def _plan_and_run(run: Run, findings: Optional[list] = None) -> dict:
    """``findings``: the diagnosis of ``run.before`` when the caller has it."""
    options, before, root = run.options, run.before, run.layout.root
    findings = diagnose(before) if findings is None else findings
    raw = make_plan(before, findings, options.desired)
    completion = guard(run, before, raw, lambda checked: outcome.result(run, before, checked))
    plan = complete_plan(raw, completion)
    if plan.empty:
        change, settled = settle_guard(options, before, root, root, findings)
        # the settled guard is the one field that can differ: an unchanged one leaves the diagnosis as it was
        result = outcome.result(run, settled, plan, changed=bool(run.recovered) or change.changed,
                                findings=findings if settled.guard == before.guard else None)
        before = settled
        result.update(strategy=None, strategy_reason="nothing to repair")
        result = with_guard(result, change, before, options.diff)
        unhealthy = outcome.still_unhealthy(findings, changed=False)
        if unhealthy:
            raise RepairFailed("; ".join([unhealthy] + list(plan.unfixable)), result)
        return result
    lifted = lift_uv_config(root)  # the repair's own uv runs are not held by its guard
    try:
        return _run_plan(run, raw, completion)
    except BaseException:
        put_back_uv_config(lifted)
        raise


def _run_plan(run: Run, raw: Plan, completion: Completion) -> dict:
    """``raw``: make_plan's plan; ``completion``: the guard's, applied here for the live venv (a swap applies it
    for its copy)."""
    plan = complete_plan(raw, completion)
    options, runner, before, root, state_dir = run.options, run.runner, run.before, run.layout.root, run.layout.state_dir
    if run.backend is None:  # resolve the installer before any batch: an unusable one changes nothing
        raise RepairFailed("no installer backend", outcome.result(run, before, plan))
    if options.batch and options.batch > len(plan.batches):
        raise RepairFailed("batch %d does not exist: the plan has %d batch(es)" % (
            options.batch, len(plan.batches)), outcome.result(run, before, plan))
    try:
        strategy = swap_run.decide(options, before, plan, root)
    except CudaVenvError as exc:
        raise RepairFailed(str(exc), dict(outcome.result(run, before, plan), strategy=None,
                                          strategy_reason=str(exc))) from None
    if strategy.used == SWAP:
        return swap_run.converge_on_copy(run, raw, completion, strategy)
    journal = Journal(state_dir)
    with ThreadPoolExecutor(max_workers=1) as background:
        # The baseline test runs while the first batch's snapshot is taken: the venv is unchanged until it applies.
        pending = Pending(background.submit(baseline, before, options, runner))

        def begin(batch):
            return JournaledBatch.begin(root, state_dir, journal, batch.number, actions=[a.as_dict() for a in batch.actions])
        current, plan_seen = run_rounds(run, begin, plan, pending, journal)
    journal.append("done")
    journal.reset()
    after = without_probe(current)  # nothing changed since the last batch's observation
    change, current = settle_guard(options, current, root, root, diagnose(current))
    after = dataclasses.replace(after, guard=current.guard)
    result = outcome.result(run, after, plan_seen, probe_obs=current)
    result.update(strategy=strategy.used, strategy_reason=strategy.reason)
    if options.verify_before_swap is not None:
        result["swap_benchmark"] = {"status": "skipped", "kept_live": False, "summary": "the repair ran in place (%s): no copy "
                                    "to benchmark against the live venv" % strategy.reason}
    with_guard(result, change, current, options.diff)
    unfixable = run.progress.unfixable
    if unfixable:
        result["plan"]["unfixable"] = list(result["plan"]["unfixable"]) + unfixable
        raise RepairFailed("; ".join(unfixable) + ("" if options.batch else "; the other batches ran"), result)
    unhealthy = None if options.batch else outcome.still_unhealthy(result["findings"], changed=True)
    if unhealthy:  # in place, every batch passed its test and stays: the venv is no worse than the baseline test says
        raise RepairFailed(unhealthy + "; the batches ran in place and passed their tests", result)
    return result


def _static_options(facts: FactsOptions) -> FactsOptions:
    """The user's facts options without the import probe, NVML and the performance part: what planning reads."""
    return dataclasses.replace(facts, probe=False, gpu=False, performance=False)


def _planned_from(obs: Observations) -> Observations:
    """What planning reads of ``obs``: the venv as a real run observes it, without the probe and NVML."""
    plain = without_probe(obs)
    return dataclasses.replace(plain, options=_static_options(plain.options), gpu=None)


def _check_result(run: Run, obs: Observations) -> dict:
    options, venv = run.options, run.layout
    root = venv.root
    findings = diagnose(obs)
    plan = guarded(run, obs, make_plan(obs, findings, options.desired),
                   lambda checked: {"changed": False, "plan": checked.as_dict(), "healthy": is_healthy(findings),
                                    "findings": [f.as_dict() for f in findings], "summary": summarize(findings),
                                    "batches": [], "recovered": None})
    strategy = swap_run.check_strategy(options, obs, root, plan)
    pending = Journal(venv.state_dir).open_batch() if os.path.isdir(venv.state_dir) else None
    swap_pending = pending_swap(venv.swap_dir)
    result = {
        "changed": not plan.empty or pending is not None or swap_pending is not None,
        "plan": plan.as_dict(),
        "healthy": is_healthy(findings),
        "findings": [f.as_dict() for f in findings],
        "summary": summarize(findings),
        "batches": [],
        "recovered": None,
    }
    if pending is not None:
        result["pending_recovery"] = "an interrupted run (batch %s) will be rolled back first" % pending.get("batch")
    elif swap_pending is not None:
        result["pending_recovery"] = swap_pending
    result.update(strategy)
    if options.diff:
        result["diff"] = {"before": diff_side(inventory(obs), file_state(obs)),
                          "after": diff_side(predicted_inventory(inventory(obs), plan),
                                             {"damaged": {}, "conflicts": []} if not plan.empty else file_state(obs))}
    # The guard's files as a run would leave them; with a plan, from the venv as found (its constraints may move).
    change, _obs = settle_guard(options, obs, root, root, findings if plan.empty else [], check_mode=True)
    result["changed"] = result["changed"] or change.changed
    return with_guard(result, change, obs, options.diff)
