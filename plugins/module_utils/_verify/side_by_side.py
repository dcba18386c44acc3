# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Two venvs benchmarked side by side: a swap's verified copy against the live venv it would replace.

Private to the gpuops.cuda_venv collection: not a public API.

The runs alternate (live, copy, live, copy, ...) so that a drift of the machine (clocks, another tenant) weighs
on both sides alike; the copy's medians are judged against the live venv's in the noise band (judge.py). A live
venv that cannot be measured (the reason it is repaired) leaves nothing to compare; a copy that cannot be
measured, or is slower, keeps the live venv.
"""

from __future__ import annotations

from typing import Sequence

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.benchmark import (
    NO_GPU, BenchmarkRequest, Series, measure_once, summary, venv_python)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._verify.judge import compare, medians, spreads

COMPARED = "compared"
SKIPPED = "skipped"
LIVE_UNMEASURED = "live_unmeasured"
COPY_FAILED = "copy_failed"

# The copy is kept out when it is slower beyond the noise band: any such drop, unless the user tolerates some.
SWAP_MIN_RATIO = 1.0


def side_by_side(request: BenchmarkRequest, live_root: str, copy_root: str, copy_command: Sequence[str], runner: Runner) -> dict:
    """The report: ``status``, ``reason``, both sides' runs, the comparison, ``kept_live`` (the copy must not go in) and
    a one-line ``summary`` (why the copy is kept out, when it is)."""
    live = Series(venv_python(live_root), request.command)
    copy = Series(venv_python(copy_root), tuple(copy_command))
    live_problem = None
    for _round in range(request.repeats):
        if live_problem is None:
            live_problem = measure_once(live, request, runner)
        copy_problem = measure_once(copy, request, runner)
        if copy_problem:
            return _report(request, live, copy, COPY_FAILED, "the copy could not be benchmarked: %s" % copy_problem, kept_live=True)
        if not copy.builtin_on and not copy.command:
            break
    if live_problem:
        return _report(request, live, copy, LIVE_UNMEASURED, "the live venv could not be benchmarked (%s): nothing to compare"
                       % live_problem)
    if not copy.runs:
        return _report(request, live, copy, SKIPPED, "no GPU (%s) and no benchmark command: nothing to compare"
                       % copy.measurement.reason)
    rows, regressions = compare(copy.runs, live.runs, request.min_ratio, request.noise)
    found = _report(request, live, copy, COMPARED, None, kept_live=bool(regressions))
    found.update(comparison=[row.as_dict() for row in rows], regressions=regressions)
    if regressions:
        found["summary"] = "the repaired copy is slower than the live venv: %s" % "; ".join(regressions)
    else:
        found["summary"] = summary(found["copy"]["metrics"], copy.head(), rows, "the copy against the live venv")
    return found


def _report(request, live, copy, status, reason, kept_live=False) -> dict:
    found = {"status": status, "reason": reason, "repeats": request.repeats, "noise": request.noise, "min_ratio": request.min_ratio,
             "live": _side(live), "copy": _side(copy), "comparison": [], "regressions": [], "kept_live": kept_live}
    found["summary"] = reason
    if copy.measurement is not None and copy.measurement.status == NO_GPU and status != SKIPPED:
        found["builtin_skipped"] = copy.measurement.reason
    return found


def _side(series: Series) -> dict:
    return {"metrics": medians(series.runs), "runs": dict(series.runs), "spread": spreads(series.runs),
            "command": series.command_run}
