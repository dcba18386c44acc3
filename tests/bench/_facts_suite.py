# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One venv, one table: the facts engine (default and hash) against pip list, pip check and SHA-256 over its files.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from . import _commands as cmd
from ._files import FileSet, record_files
from ._measure import Measurement, Step, fixed, measure
from ._sha import cores, measure_throughput
from ._table import Goal, Table

DEFAULT_GOAL = Goal(max_ratio=0.5)  # default facts in at most half the time of pip check
HASH_GOAL = Goal(max_ratio=1.5)  # hash mode within 1.5x of the SHA-256 limit with every core
HISTORY_GOAL = Goal(max_ratio=1.1)  # facts with the install history within 1.1x of facts without it (issue 20)
UNCHANGED_GOAL = Goal(max_seconds=0.2)  # an unchanged venv diagnosed again, without the probe, with the read index (issue 32)
REUSED_GOAL = Goal(max_ratio=0.5)  # the default facts on an unchanged venv, the probe reused: at most half of pip check (issue 38)


@dataclass(frozen=True)
class FactsBench:
    """What to measure on one venv."""

    title: str
    venv: Path
    anchor: str  # the facts' anchor distribution
    runs: int
    repo: str  # working directory of the engine's children (imports tests.bench)
    work: Path  # where the file list goes
    extra_rows: tuple = ()  # (key, what, [Step, ...], anchor key or None, Goal or None)
    probe_floor: Optional[str] = None  # an import statement timed alone: the probe's own cost


def run(bench: FactsBench, log=print) -> Tuple[Table, FileSet]:
    files = record_files(bench.venv, bench.work / (bench.venv.parent.name + ".files"))
    jobs = cores()

    def timed(what: str, steps: List[Step]) -> Measurement:
        log("bench: %s: %s" % (bench.title, what))
        return measure(lambda: steps, bench.runs)

    # One untimed pass reads every file and every dist-info: the page cache is warm for every row alike.
    log("bench: %s: warming the page cache" % bench.title)
    measure(lambda: [cmd.hash_reader(files, jobs, bench.repo), cmd.pip_check(bench.venv)], 1)
    table = Table(bench.title)
    table.add("list", "pip list", timed("pip list", [cmd.pip_list(bench.venv)]))
    table.add("check", "pip check", timed("pip check", [cmd.pip_check(bench.venv)]))
    table.add("facts", "facts, default (size + import probe)",
              timed("facts default", [cmd.facts(bench.venv, "size", bench.anchor, bench.repo)]), "check", DEFAULT_GOAL)
    if bench.probe_floor:
        costs = bench.work / (bench.venv.parent.name + ".history-cost")
        costs.unlink(missing_ok=True)
        static = timed("facts no probe", [cmd.facts(bench.venv, "size", bench.anchor, bench.repo, probe=False,
                                                    history_cost=costs)])
        table.add("static", "facts, size, `probe: false` (the engine's own work)", static, "check")
        history = statistics.median(float(line.split()[1]) for line in costs.read_text().splitlines())
        table.add("nohistory", "facts, size, `probe: false`, less the history step (%.1f ms, timed in each run)"
                  % (history * 1000), fixed(static.median - history, bench.runs), label="no history")
        table.add("history", "facts, size, `probe: false`, with the history (the runs above)", static, "nohistory",
                  HISTORY_GOAL)
        _indexed_rows(bench, table, timed)
        table.add("floor", "the probe's import alone (`python -c '%s'`)" % bench.probe_floor,
                  timed("import", [cmd.python_c(bench.venv, bench.probe_floor, str(bench.work))]), "check")
    for key, what, steps, anchor, goal in bench.extra_rows:
        table.add(key, what, timed(what, steps), anchor, goal)
    throughput = measure_throughput()
    table.add("limit", "SHA-256 limit (bytes / hashlib rate on %d cores)" % jobs,
              fixed(throughput.limit_seconds(files.total_bytes), bench.runs), label="SHA-256 limit")
    table.add("reader", "hashlib over the files, %d threads, nothing else" % jobs,
              timed("hashlib reader", [cmd.hash_reader(files, jobs, bench.repo)]), "limit")
    table.add("sha256sum", "sha256sum over the files (xargs -P %d)" % jobs,
              timed("sha256sum", [cmd.sha256sum(files, jobs)]), "limit")
    table.add("hash", "facts, hash (sha256 of every file + import probe)",
              timed("facts hash", [cmd.facts(bench.venv, "hash", bench.anchor, bench.repo)]), "limit", HASH_GOAL)
    if bench.probe_floor:
        table.add("hash-static", "facts, hash, `probe: false` (the engine's hashing, no import beside it)",
                  timed("facts hash no probe", [cmd.facts(bench.venv, "hash", bench.anchor, bench.repo, probe=False)]),
                  "limit")
        hash_reusing = cmd.facts(bench.venv, "hash", bench.anchor, bench.repo, index=True)
        measure(lambda: [hash_reusing], 1)  # keeps the index and the import probe's result
        table.add("hash-reused", "facts, hash, read index of an earlier run: the import probe's result reused (the venv "
                  "unchanged; the module's default options but `verify`)",
                  timed("facts hash, probe reused", [hash_reusing]), "limit", HASH_GOAL)
        remove_state(bench.venv)
    table.notes.append("Anchor `%s`; %s; %s." % (bench.anchor, files.describe(), throughput.describe()))
    return table, files


def _indexed_rows(bench: FactsBench, table: Table, timed) -> None:
    """Facts without the probe on the unchanged venv with the read index (kept by one untimed run first): the child's
    wall time against the same facts without the index, and the engine's own time in it (interpreter start and
    imports aside), which the goal is about."""
    costs = bench.work / (bench.venv.parent.name + ".indexed-cost")
    costs.unlink(missing_ok=True)
    step = cmd.facts(bench.venv, "size", bench.anchor, bench.repo, probe=False, history_cost=costs, index=True)
    measure(lambda: [step], 1)
    costs.unlink()
    indexed = timed("facts no probe, read index", [step])
    table.add("indexed", "facts, size, `probe: false`, read index of an earlier run (the venv unchanged)", indexed, "static")
    engine = statistics.median(float(line.split()[0]) for line in costs.read_text().splitlines())
    table.add("indexed-engine", "the same, the engine's own time in the child (observe, diagnose, report)",
              fixed(engine, bench.runs), goal=UNCHANGED_GOAL)
    reusing = cmd.facts(bench.venv, "size", bench.anchor, bench.repo, index=True)
    measure(lambda: [reusing], 1)  # keeps the import probe's result with the index
    table.add("reused", "facts, default (`probe: true`), read index of an earlier run: the import probe's result reused "
              "(the venv unchanged)", timed("facts default, probe reused", [reusing]), "check", REUSED_GOAL)
    remove_state(bench.venv)


def remove_state(venv: Path) -> None:
    """The state folder the indexed runs made (no other bench row reads an index)."""
    state = venv / ".cuda_venv"
    (state / "read-index.json").unlink(missing_ok=True)
    try:
        state.rmdir()
    except OSError:
        pass  # it held more than the index before: not the bench's
