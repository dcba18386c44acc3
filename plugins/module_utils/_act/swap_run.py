# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``swap`` strategy of a repair: converge a copy of the venv, verify it, exchange it with the live venv.

Private to the gpuops.cuda_venv collection: not a public API.

Called by ``repair`` under the venv's lock, after recovery and planning. The batches run on the copy
exactly as they run in place (``batches.run_rounds``: each batch's installer commands, then its test),
but a batch is not snapshotted: any failure discards the whole copy and the live venv was never touched.
See ``swap`` for the layout beside the venv, the journal and the recovery.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import outcome
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.batches import run_rounds
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_guard import settle_guard, with_guard
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.health import PYCACHE_DIR, Pending, baseline
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.outcome import RepairFailed, recheck_touched, still_unhealthy
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.run import Run
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import scan_tree
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import (
    IN_PLACE, NEXT_DIR, Strategy, SwapError, choose_strategy, dir_inode, discard, exchange, keep_generation, live_changes,
    make_copy, measure_room, open_swap, rebase, rebase_argv, swap_back)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap_paths import rewrite_copy_paths
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_lock import ensure_state_dir
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import crash_point
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import sync_filesystem
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Completion, Plan, complete_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.guard_state import read_guard
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations, observe, without_probe
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import STATE_DIR, state_dir_of, swap_dir_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.side_by_side import side_by_side

# Inodes beyond the copy's directories and the files the plan writes: the state dirs, journals, temporary names.
SPARE_INODES = 64


def decide(options, before, plan, root: str) -> Strategy:
    """The strategy this run uses (SwapError when swap was asked for and cannot work)."""
    if options.strategy == IN_PLACE:
        return choose_strategy(IN_PLACE, root, None, options.batch)
    need_bytes, need_inodes = plan_needs(before, plan)
    try:
        room = measure_room(root, need_bytes, need_inodes)
    except OSError:
        room = None
    return choose_strategy(options.strategy, root, room, options.batch)


def plan_needs(obs: Observations, plan):
    """(bytes, inodes) a swap needs beyond today's venv: the copy's directories and symlinks (its files are hard
    links), and every file of each wheel the plan reinstalls, as its RECORD sizes them. A wheel that is not
    installed yet has no RECORD: its size is not known before the installer fetches it and is not counted."""
    by_key = dict((dist.key, dist) for dist in obs.distributions)
    folders = set()
    for dist in obs.distributions:
        folders.update(os.path.dirname(os.path.normpath(os.path.join(dist.site_packages, e.path))) for e in dist.entries)
    need_bytes, need_inodes = 0, len(folders) + SPARE_INODES
    for batch in plan.batches:
        for action in batch.actions:
            dist = by_key.get(canonical_name(action.name))
            if action.kind != "remove" and dist is not None:
                need_bytes += sum(e.size or 0 for e in dist.entries)
                need_inodes += len(dist.entries)
    return need_bytes, need_inodes


def check_strategy(options, obs: Observations, root: str, plan) -> dict:
    """Check mode: the strategy a real run would use and why (it fails where the real run would)."""
    found = {"strategy": None, "strategy_reason": "nothing to repair"}
    if options.swap_back:
        found.update(strategy="swap_back", strategy_reason="the newest previous generation would be swapped back in")
    elif not plan.empty:
        strategy = decide(options, obs, plan, root)
        found.update(strategy=strategy.used, strategy_reason=strategy.reason)
    swap_dir = swap_dir_of(root)
    if os.path.isdir(swap_dir) and open_swap(Journal(swap_dir)) is not None:
        found["pending_recovery"] = "an interrupted swap run will be finished or discarded first"
    return found


class _CopyBatch:
    """One batch on the copy: journaled in the swap journal; a rollback discards the whole copy."""

    light_test = True  # before the plan's last batch the test may be the light one: nothing live depends on it
    changes_live_venv = False  # its commands may run while the live venv's baseline test still runs

    def __init__(self, flow, number: int):
        self.flow = flow
        self.journal = flow.journal
        self.number = number
        self.root = flow.copy
        self.wrote = False  # an installer command of this batch may have written files (one that only removes writes none)
        self.journal.append("swap", batch=number, step="batch")

    @functools.cached_property
    def entries(self):
        """The copy's tree as this batch begins, for the check for symlinks leaving the venv (asked before a batch that
        installs). While no batch has written into the copy, its symlinks are the ones the copy was made with, from the
        live venv's scan with the same targets (an uninstall only removes): that scan answers. Else it is scanned."""
        return scan_tree(self.root, (STATE_DIR,)) if self.flow.written else self.flow.entries

    def apply(self):
        return None

    def action(self, **details):
        if details.get("kind") != "remove":
            self.wrote = self.flow.written = True
        return self.journal.append("swap", batch=self.number, step="action", **details)

    def probe(self):
        """Before the batch's test: what the installers wrote that names the copy now names the live venv. A batch that
        only removed wrote no file, and the batches before it had theirs rewritten: the copy is not scanned for it."""
        self.flow.rewrite(scan=self.wrote)
        return None

    def commit(self):
        return self.journal.append("swap", batch=self.number, step="committed")

    def rollback(self, reason: str):
        discard(self.flow.copy)
        return self.journal.append("swap", batch=self.number, step="discarded", reason=reason)


class _Flow:
    """One swap repair: the copy, its journal, what it was copied from."""

    def __init__(self, run, root: str, state_dir: str):
        self.run = run
        self.root = root
        self.state_dir = state_dir
        self.swap_dir = swap_dir_of(root)
        self.copy = os.path.join(self.swap_dir, NEXT_DIR)
        self.journal = None
        self.entries = {}
        self.known = frozenset()
        self.written = False  # an installer command of a batch may have written into the copy (one that removes writes none)
        self.rewritten = []

    def start(self):
        ensure_state_dir(self.swap_dir)  # owner-only; the parent keeps its mtime
        self.journal = Journal(self.swap_dir)
        self.journal.append("swap", batch=None, step="begin", copy=self.copy)
        crash_point("swap.begun")
        discard(self.copy)  # a leftover of a run that ended before its journal began
        self.entries = make_copy(self.root, self.copy, self.state_dir)
        self.known = frozenset((e.dev, e.ino) for e in self.entries.values() if e.type == "f")
        self.journal.append("swap", batch=None, step="copied", entries=len(self.entries))
        crash_point("swap.copied")

    def rewrite(self, scan: bool = True):
        options = self.run.options
        done = rewrite_copy_paths(self.copy, self.root, self.known, os.path.join(self.copy, "bin", "python"),
                                  self.run.runner, (STATE_DIR,), options.facts.probe_timeout) if scan else []
        self.rewritten = sorted(set(self.rewritten) | set(done))
        self.journal.append("swap", step="rewritten", files=len(done))
        crash_point("swap.rewritten")

    def abandon(self, reason: str):
        """Discard the copy and close the journal; the live venv was never changed."""
        discard(self.copy)
        self.journal.append("swap", batch=None, step="done", outcome="discarded", reason=reason)
        self.journal.reset()


def converge_on_copy(run: Run, raw: Plan, completion: Completion, strategy) -> dict:
    """Copy, run the batches on the copy, verify it, exchange it with the venv; the module's result. ``raw``:
    make_plan's plan; ``completion``: the install guard's, applied with the copy's paths (``complete_plan``)."""
    flow = _Flow(run, run.layout.root, run.layout.state_dir)
    try:
        return _converge_on_copy(run, flow, raw, completion, strategy)
    finally:
        shutil.rmtree(os.path.join(flow.swap_dir, PYCACHE_DIR), ignore_errors=True)


def _converge_on_copy(run: Run, flow, raw: Plan, completion: Completion, strategy) -> dict:
    options, before = run.options, run.before
    plan = complete_plan(raw, completion)  # as the live venv would run it: what a failure reports
    root = flow.root
    live_python = run.backend.python
    # The probes' bytecode: the venv's own when it has some (the copy shares it), else a folder beside the copy
    # that the live venv's baseline test and the copy's tests share.
    pycache = os.path.join(flow.swap_dir, PYCACHE_DIR) if options.facts.pycache else None
    baseline_of, live_options = before, options
    if pycache:
        _share_bytecode(pycache, root, flow.copy)
        live_options = dataclasses.replace(options, facts=dataclasses.replace(options.facts, pycache=pycache))
        baseline_of = dataclasses.replace(before, options=dataclasses.replace(before.options, pycache=pycache))
    # The copy is judged as the venv it becomes: its console scripts name the live venv's interpreter.
    copy_options = dataclasses.replace(
        options, probe_command=rebase_argv(options.probe_command, root, flow.copy),
        facts=dataclasses.replace(options.facts, path=flow.copy, pycache=pycache, judged_as=root))

    def failed(current, message):
        result = outcome.result(run, current, plan, failed=True)
        result.update(strategy=strategy.used, strategy_reason=strategy.reason)
        return RepairFailed(message, rebase(result, flow.copy, root))

    with ThreadPoolExecutor(max_workers=1) as background:
        # The baseline test (on the live venv as found) runs while the copy is made.
        # The light test of the live venv as found; its full test only if a batch's full test must be compared.
        pending = Pending(background.submit(baseline, baseline_of, live_options, run.runner, True))
        on_copy = dataclasses.replace(run, options=copy_options, installer=run.installer.at(
            os.path.join(flow.copy, os.path.relpath(live_python, root))),
            live_health=_live_full_health(pending, baseline_of, live_options, run.runner))
        try:
            flow.start()
        except (OSError, SwapError) as exc:
            pending()
            flow.abandon("copy failed")
            raise failed(before, "cannot copy %s to %s: %s" % (root, flow.copy, getattr(exc, "strerror", None) or exc)) from exc
        try:
            copy_plan = complete_plan(raw, dataclasses.replace(completion, copy=(root, flow.copy)))
            current, plan_seen = run_rounds(on_copy, lambda batch: _CopyBatch(flow, batch.number), copy_plan, pending,
                                            flow.journal)
        except RepairFailed as exc:
            _close_failed(flow, str(exc))
            exc.result = rebase(dict(exc.result, strategy=strategy.used, strategy_reason=strategy.reason), flow.copy, root)
            raise
        except (CudaVenvError, OSError) as exc:
            flow.abandon(str(exc))
            raise failed(before, "repair of the copy %s failed: %s; the venv was not changed" % (flow.copy, exc)) from exc
    after = without_probe(current)
    verified = recheck_touched(after, run.progress.touched)
    problem = _verification_problem(verified, live_changes(root, flow.state_dir, flow.entries))
    if problem:
        flow.abandon(problem)
        raise failed(after, problem + "; the copy was discarded and the venv was not changed")
    flow.journal.append("swap", step="verified")
    crash_point("swap.verified")
    speed = _benchmark_copy(run, flow)
    if speed is not None and speed["kept_live"]:
        flow.abandon("kept the live venv: " + speed["summary"])
        kept_out = failed(before, "%s; kept the live venv, the copy was discarded" % speed["summary"])
        kept_out.result["swap_benchmark"] = speed
        raise kept_out
    verdict = diagnose(current)
    unhealthy = None if options.batch else still_unhealthy(verdict, changed=True)
    if unhealthy:
        flow.abandon(unhealthy)
        raise failed(after, unhealthy + "; the copy was discarded and the venv was not changed")
    try:  # the copy is guarded before it becomes the venv, its files naming the venv's path
        change, _same = settle_guard(options, current, flow.copy, root, verdict)
    except (CudaVenvError, OSError) as exc:
        flow.abandon("guard failed")
        raise failed(after, "cannot guard the repaired copy: %s; the copy was discarded and the venv was not changed"
                     % exc) from exc
    kept, method = _exchange(flow, options.keep_previous)
    guard = read_guard(state_dir_of(root))
    after, current = dataclasses.replace(after, guard=guard), dataclasses.replace(current, guard=guard)
    result = outcome.result(run, after, plan_seen, probe_obs=current, verified=verified)
    result.update(strategy=strategy.used, strategy_reason=strategy.reason, previous=kept, exchange=method,
                  rewritten=flow.rewritten)
    result = rebase(with_guard(result, change, current, options.diff), flow.copy, root)
    if speed is not None:
        result["swap_benchmark"] = speed  # names the copy's own paths: where it was measured
    return result


def _benchmark_copy(run, flow):
    """verify_before_swap: the verified copy and the live venv benchmarked side by side (None when not asked)."""
    request = run.options.verify_before_swap
    if request is None:
        return None
    speed = side_by_side(request, flow.root, flow.copy, rebase_argv(request.command, flow.root, flow.copy), run.runner)
    flow.journal.append("swap", step="benchmarked", status=speed["status"], kept_live=speed["kept_live"])
    return speed


def _live_full_health(pending, before, options, runner: Runner):
    """The live venv's full test (import, probe_command), run once when first asked: the baseline's own when its
    light test failed and the import judged it."""
    answer = []

    def ask():
        if not answer:
            found = pending()[1]
            answer.append(baseline(before, options, runner)[1] if found.light else found)
        return answer[0]
    return ask


def _share_bytecode(pycache: str, live: str, copy: str) -> None:
    """Point the copy's tree of ``pycache`` (a ``-X pycache_prefix`` folder) at the live venv's: the copy's files
    are hard links of the live ones (same size and mtime), so the bytecode the baseline test compiles serves the
    copy's tests, and only the first probe compiles. A file a batch replaces is recompiled (its mtime differs)."""
    ensure_state_dir(os.path.dirname(pycache))  # owner-only, before the baseline's Python creates anything in it
    target = os.path.join(pycache, live.lstrip(os.sep))
    link = os.path.join(pycache, copy.lstrip(os.sep))
    os.makedirs(target, mode=0o700, exist_ok=True)
    os.makedirs(os.path.dirname(link), mode=0o700, exist_ok=True)
    if not os.path.lexists(link):
        os.symlink(target, link)


def _close_failed(flow, reason):
    """After a batch on the copy failed (its rollback already discarded the copy)."""
    discard(flow.copy)
    if open_swap(flow.journal) is not None:
        flow.journal.append("swap", batch=None, step="done", outcome="discarded", reason=reason)
        flow.journal.reset()


def _verification_problem(verified, changed_live):
    bad = sorted("%s (%s)" % (name, verdict) for name, verdict in verified.items() if verdict != "ok")
    if bad:
        return "the repaired copy does not match the RECORD of %s" % ", ".join(bad)
    if changed_live:
        return "the live venv changed while its copy was repaired (%d path(s), e.g. %s)" % (
            len(changed_live), ", ".join(changed_live[:3]))
    return None


def _exchange(flow, keep):
    """Journal, exchange, keep the old venv as the newest previous generation, close the journal."""
    journal = flow.journal
    sync_filesystem(flow.copy)  # the copy (folders, links, what the installers wrote) is on disk before it can be the venv
    journal.append("swap", step="exchange", other=flow.copy, live_inode=list(dir_inode(flow.root)),
                   copy_inode=list(dir_inode(flow.copy)))
    crash_point("swap.before-exchange")
    method = exchange(flow.root, flow.copy, flow.swap_dir)
    crash_point("swap.exchanged")
    journal.append("swap", step="exchanged", method=method)
    kept = keep_generation(flow.swap_dir, flow.copy, journal.run, keep)
    journal.append("swap", batch=None, step="done", outcome="swapped", previous=kept)
    journal.reset()
    return kept, method


def swap_back_result(run: Run, static) -> dict:
    """``swap_back``: the newest previous generation exchanged with the venv (atomically where the kernel can)."""
    root, swap_dir = run.layout.root, run.layout.swap_dir
    done = swap_back(root, swap_dir, Journal(swap_dir))
    after = observe(static, run.runner, run.loader)
    result = outcome.result(run, after, Plan(batches=(), unfixable=()), changed=True, verified={})
    result.update(strategy="swap_back", strategy_reason="option swap_back", previous=done["previous"],
                  exchange=done["method"])
    return result
