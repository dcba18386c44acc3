# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The incident's repair: cuda_venv_repair (pip, uv) against the same fix typed by hand and against a rebuild.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.

Every run starts from a fresh copy of one built ``contaminated`` stand-in venv, restored at the same path (venv
scripts carry absolute paths). The module's work runs as ``repair.repair`` in a child Python, as the module's
main() calls it, without Ansible.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from tests.support.import_loop import MARGIN

from . import _commands as cmd
from ._exposure import ExposureTable, observe
from ._facts_suite import REUSED_GOAL, remove_state
from ._measure import BenchError, Step, measure, run_step
from ._table import Goal, Table

# In place: issue 3's goals. Swap: issue 11's (pip within 1.1x, uv within 1.5x of the fix by hand plus one import).
GOALS = {"pip": Goal(max_ratio=1.2), "uv": Goal(max_ratio=1.5)}
SWAP_GOALS = {"pip": Goal(max_ratio=1.1), "uv": Goal(max_ratio=1.5)}
NOOP_GOAL = Goal(max_seconds=1.0)
# The two tests after a batch cost seconds: always this many runs.
TEST_RUNS = 5
# Issue 11: a no-op run on a real venv, without Ansible.
REAL_NOOP_GOAL = Goal(max_seconds=0.5)


@dataclass(frozen=True)
class RepairBench:
    venv: Path  # the built contaminated venv
    links: tuple  # its wheelhouses
    uv: Optional[str]
    runs: int
    repo: str
    work: Path
    title: str = "Repair of the incident (stand-in `contaminated` venv, fresh copy each run)"
    remove: Tuple[str, ...] = cmd.CU13_WHEELS + cmd.PULLED_IN  # what the fix by hand uninstalls
    # cp -al instead of cp -a: a real venv's gigabytes as hard links (pip, uv and the module never write into an
    # existing file: they unlink or rename first, so the pristine copy stays intact)
    hardlink_copies: bool = False
    python: str = sys.executable  # the interpreter of the rebuild: the one the venv was made with
    rebuild: bool = True  # time a rebuild (the same for every broken state of one stack: measured once)
    noop_goal: Goal = NOOP_GOAL
    facts_reused: bool = False  # time the facts on the broken venv as it is, its read index kept by an earlier run
    exposure_title: str = "Imports during the repair of the incident (stand-in `contaminated` venv)"


class _Fresh:
    """Restore the pristine copy of the venv at its own path before each run."""

    def __init__(self, venv: Path, work: Path, flags: str = "-a"):
        self.venv, self.flags = venv, flags
        self.pristine = work / (venv.name + "-pristine")
        if not self.pristine.exists():
            _copy(venv, self.pristine, flags)

    def __call__(self) -> None:
        shutil.rmtree(self.venv)
        # A swap's generations beside the venv: pruning the last one would be timed in the next run.
        shutil.rmtree(self.venv.parent / (".%s.cuda_venv" % self.venv.name), ignore_errors=True)
        _copy(self.pristine, self.venv, self.flags)


def remove_copies(bench: RepairBench) -> None:
    """The venv, its pristine copy, its generations and the rebuild: disk back before the next state is built."""
    for path in (bench.venv, bench.work / (bench.venv.name + "-pristine"),
                 bench.venv.parent / (".%s.cuda_venv" % bench.venv.name), bench.work / "rebuilt"):
        shutil.rmtree(path, ignore_errors=True)


def _copy(src: Path, dest: Path, flags: str = "-a") -> None:
    subprocess.run(["cp", flags, str(src), str(dest)], check=True)


def _next_second() -> None:
    time.sleep(1.0 - time.time() % 1.0 + 0.01)


def _diagnosed(fresh, diagnosis: Step):
    """``fresh``, then the role's diagnosis on the copy a second later (a read index trusts no file changed in the
    second its run began)."""
    def prepare() -> None:
        fresh()
        _next_second()
        run_step(diagnosis)
    return prepare


def _removing(path: Path):
    def prepare() -> None:
        if path.exists():
            shutil.rmtree(path)
    return prepare


def _healthy(bench: RepairBench, venv: Path) -> str:
    """The facts engine's summary of ``venv`` (untimed): the check that a fix really fixed it."""
    _usage, tail = run_step(cmd.facts(venv, "size", "torch", bench.repo))
    return tail.strip().rpartition(": ")[2]


def _facts_reused(bench: RepairBench, table: Table, log) -> None:
    """The default facts on the broken venv as it is, unchanged since an earlier run kept its read index: the import
    probe's result and the digests of the conflicting files it loaded are reused. The index is removed after, before
    the pristine copy the repairs start from is taken."""
    log("bench: repair: pip check, and the facts with the read index of an earlier run")
    table.add("check", "pip check on the broken venv", measure(lambda: [cmd.pip_check(bench.venv)], bench.runs, warmup=True))
    reusing = cmd.facts(bench.venv, "size", "torch", bench.repo, index=True)
    for _untimed in range(2):  # the first keeps the index; what its probe wrote is racy for the second (read_index.py)
        measure(lambda: [reusing], 1)
    table.add("facts-reused", "facts, default, read index of an earlier run: the import probe's result and the loaded "
              "conflicting files' digests reused (the venv unchanged)", measure(lambda: [reusing], bench.runs), "check",
              REUSED_GOAL)
    remove_state(bench.venv)


def run(bench: RepairBench, log=print) -> Tuple[Table, ExposureTable]:
    """The timed table, and the import loop's table (one more run of each fix, in place or swapped, untimed)."""
    table = Table(bench.title)
    if bench.facts_reused:
        _facts_reused(bench, table, log)
    fresh = _Fresh(bench.venv, bench.work, "-al" if bench.hardlink_copies else "-a")
    empty = bench.work / "empty"
    empty.mkdir(exist_ok=True)
    uv_cache = str(bench.work / "uv-cache")
    exposures = ExposureTable(bench.exposure_title)
    after = {}

    def timed(key: str, what: str, steps: List[Step], prepare, anchor=None, goal=None, venv=None, label=None,
              loop_goal: Optional[int] = None, runs: Optional[int] = None) -> None:
        log("bench: repair: %s" % what)
        table.add(key, what, measure(lambda: steps, runs or bench.runs, prepare=prepare, warmup=True), anchor, goal,
                  label)
        if venv is not None:
            after[what] = _healthy(bench, venv)
        if prepare is fresh:  # a fix of the venv itself: what its users saw meanwhile
            log("bench: repair: %s, with the import loop" % what)
            exposures.rows.append(observe(key, what, bench.venv, empty, steps, prepare, loop_goal))
            after[what + ", with the import loop"] = _healthy(bench, venv)

    # The test after a batch, on the broken venv as it is (issue 11: the light test between batches on the copy).
    pycache = str(bench.work / "probe-pycache")
    timed("test-import", "the test after a batch: import torch (the full test; bytecode in a prefix folder)",
          [cmd.probe(bench.venv, str(empty), pycache, False)], None, label="the import", runs=TEST_RUNS)
    timed("test-loader", "the test after a batch: the light loader test (libtorch_global_deps.so, then torch._C)",
          [cmd.probe(bench.venv, str(empty), pycache, True)], None, "test-import", runs=TEST_RUNS)
    backends = ["pip"] + (["uv"] if bench.uv else [])
    for kind in backends:
        if kind == "pip":
            by_hand = cmd.pip_fix(bench.venv, bench.links, str(empty), bench.remove)
            rebuild = cmd.pip_rebuild(bench.work / "rebuilt", bench.links, str(empty), bench.python)
            flags = "--force-reinstall --no-deps"
        else:
            by_hand = cmd.uv_fix(bench.venv, bench.uv, bench.links, str(empty), uv_cache, bench.remove)
            rebuild = cmd.uv_rebuild(bench.work / "rebuilt", bench.uv, bench.links, str(empty), uv_cache, bench.python)
            flags = "--reinstall-package --no-deps"
        timed(kind + "-hand", "%s: the fix typed by hand (uninstall %d, reinstall 4 %s, 1 import probe)"
              % (kind, len(bench.remove), flags),
              by_hand, fresh, venv=bench.venv, label="%s by hand" % kind)
        timed(kind + "-module", "%s: cuda_venv_repair, strategy in_place (`repair.repair` in a child, no Ansible)" % kind,
              [cmd.repair(bench.venv, kind, bench.uv or "", bench.links, bench.repo, uv_cache)], fresh,
              kind + "-hand", GOALS[kind], venv=bench.venv)
        timed(kind + "-swap", "%s: cuda_venv_repair, strategy swap (copy, batches on it, exchange)" % kind,
              [cmd.repair(bench.venv, kind, bench.uv or "", bench.links, bench.repo, uv_cache, "swap")], fresh,
              kind + "-hand", SWAP_GOALS[kind], venv=bench.venv, loop_goal=0)
        # The role's order: its diagnosis (plan_only, untimed) keeps the read index, and the repair's baseline test
        # is that diagnosis's import. Files a second older than each run that reads them, as on a user's venv.
        timed(kind + "-swap-diagnosed", "%s: cuda_venv_repair, strategy swap, after the role's diagnosis (its import "
              "is the baseline)" % kind,
              [cmd.repair(bench.venv, kind, bench.uv or "", bench.links, bench.repo, uv_cache, "swap")],
              _diagnosed(fresh, cmd.repair(bench.venv, kind, bench.uv or "", bench.links, bench.repo, uv_cache,
                                           "diagnose")),
              kind + "-hand", SWAP_GOALS[kind], venv=bench.venv)
        if bench.rebuild:
            timed(kind + "-rebuild", "%s: rebuild instead (new venv, install torch==2.9.1 from the wheelhouse, "
                  "1 import probe)" % kind, rebuild, _removing(bench.work / "rebuilt"), kind + "-hand",
                  venv=bench.work / "rebuilt")
    # The venv is repaired now (the last module run): the next run of the module has nothing to do.
    noop = cmd.repair(bench.venv, "pip", "", bench.links, bench.repo, uv_cache)
    timed("noop", "no-op cuda_venv_repair on the repaired venv (pip)", [noop], None, None, bench.noop_goal)
    unhealthy = {what: summary for what, summary in after.items() if summary != "healthy"}
    if unhealthy:
        raise BenchError("these runs did not leave a healthy venv: %s" % unhealthy)
    table.notes.append("Each venv was checked healthy by the facts engine after its last run. uv commands share one "
                       "warm cache (`UV_CACHE_DIR` in the work folder); uv links from it (its default) by hand and in "
                       "the module alike. pip runs with no configuration file (`PIP_CONFIG_FILE=%s`)." % "/dev/null")
    exposures.notes.append(
        "One more run of each fix, untimed, from a fresh copy, while a loop starts `VENV/bin/python -I -c 'import torch'` "
        "from an empty folder back to back, from %g s before the fix to %g s after it. \"imported before?\": whether the "
        "venv imported before the fix; only then is a failed import the fix's doing, and only then is the goal judged."
        % (MARGIN, MARGIN))
    return table, exposures
