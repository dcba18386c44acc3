"""SIGKILL a swap repair at every phase boundary: the venv path holds the old venv or the repaired one, never a mix.

For each scenario a first, uninterrupted swap run lists the crash points it reaches (``module_child.py``) and
gives the repaired reference tree. Then, for each point, a fresh copy of the scenario's venv is repaired with
``CUDA_VENV_CRASH_AT`` set to it (the process SIGKILLs itself there). A kill counts as survived when

- right after the kill, the venv path holds exactly the venv as it was (bytes and metadata, mtimes included) or
  the repaired venv (equal to the reference but for the mtimes the installers set);
- the next run succeeds, reports what it recovered, ends healthy on the reference tree, and leaves no copy
  (``next``) and at most ``keep_previous`` previous generations beside the venv.

The phases: the copy (``swap.copy`` per file, ``swap.copied``), the batches on the copy (``repair.after-*``,
``repair.before-probe``, ``repair.before-commit``), the rewrite of installer paths (``swap.rewritten``), the
verification (``swap.verified``), the exchange (``swap.before-exchange``, ``swap.exchanged``) and the cleanup
(``swap.kept``). Default: ``contaminated``, one kill per phase (the middle of the copy, the last installer command,
the last rewrite, then every point from the verification on); CUDA_VENV_RELIABILITY=full: every point of every
scenario (16 of ``contaminated`` took 7 minutes on 2 shared cores). Counts go to
build/reliability/swap-faults-<scenario>.json.
"""

import json
import os
import platform
import sys
import time

import pytest

from reliability_tools import FULL, ROOT, healthy_differences, kill_points, repair_args, run_child, state_rows

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of

SUMMARY_DIR = os.path.join(ROOT, "build", "reliability")
SCENARIOS = ("contaminated", "gutted", "truncated-nccl") if FULL else ("contaminated",)
REFUSE_EXCHANGE = (sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "refuse_exchange.py"))
DEFAULT_LAST = ("repair.after-reinstall", "swap.rewritten", "swap.verified", "swap.before-exchange", "swap.exchanged",
                "swap.kept")


def swap_args(info, **extra):
    return repair_args(info, strategy="swap", **extra)


def one_per_phase(points):
    """The middle hit of the copy loop, and the last hit of each of DEFAULT_LAST."""
    copies = [p for p in points if p.startswith("swap.copy@")]
    last = dict((p.split("@")[0], p) for p in points if p.split("@")[0] in DEFAULT_LAST)
    return copies[len(copies) // 2:len(copies) // 2 + 1] + [p for p in points if p in last.values()]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_swap_killed_anywhere_leaves_the_old_or_the_new_venv(tmp_path, fresh, scenario):
    started = time.monotonic()
    info = fresh(scenario)
    original = state_rows(info.venv)
    first = run_child(tmp_path / "enumerate", "cuda_venv_repair", swap_args(info), end=True)
    assert first.rc == 0 and first.result["strategy"] == "swap" and first.result["healthy"] is True, first.output
    reference = first.states[first.captured("end")[0]]
    points = kill_points(first.events)
    phases = {p.split("@")[0] for p in points}
    assert {"swap.begun", "swap.copy", "swap.copied", "swap.rewritten", "swap.verified", "swap.before-exchange",
            "swap.exchanged", "swap.kept"} <= phases, points
    selected = points if FULL else one_per_phase(points)
    outcomes = []
    for number, point in enumerate(selected):
        outcomes.append(kill_and_rerun(tmp_path / ("kill-%02d" % number), fresh(scenario), point, original, reference))
    write_summary(scenario, points, outcomes, time.monotonic() - started)
    failed = [o for o in outcomes if o["problems"]]
    assert not failed, json.dumps(failed, indent=1)[:6000]
    assert {o["venv_after_kill"] for o in outcomes} == {"old", "repaired"}  # kills on both sides of the exchange


def kill_and_rerun(work, info, point, original, reference, prefix=()):
    problems = []
    killed = run_child(work / "killed", "cuda_venv_repair", swap_args(info), crash_at=point, prefix=prefix)
    if not killed.killed:
        return {"point": point, "problems": ["not killed at %s: rc %s\n%s" % (point, killed.rc, killed.output[-2000:])]}
    side, problem = venv_side_after_kill(info.venv, point, original, reference)
    if problem:
        problems.append(problem)
    again = run_child(work / "again", "cuda_venv_repair", swap_args(info), end=True, prefix=prefix)
    if again.rc != 0:
        problems.append("the next run failed: %s" % again.output[-3000:])
    else:
        if not again.result.get("recovered"):
            problems.append("the next run reported nothing recovered")
        if again.result.get("healthy") is not True:
            problems.append("not healthy after the next run: %s" % again.result.get("summary"))
        off = healthy_differences(again.states[again.captured("end")[0]], reference, original)
        if off:
            problems.append("final tree differs from the repaired reference at %d path(s): %s" % (len(off), off[:10]))
    swap_dir = swap_dir_of(str(info.venv))
    left = sorted(os.listdir(swap_dir)) if os.path.isdir(swap_dir) else []
    if "next" in left or "exchange-tmp" in left:
        problems.append("a copy was left beside the venv: %s" % left)
    previous = os.path.join(swap_dir, "previous")
    if os.path.isdir(previous) and len(os.listdir(previous)) > 1:
        problems.append("more previous generations than keep_previous: %s" % os.listdir(previous))
    return {"point": point, "venv_after_kill": side, "recovered": again.result.get("recovered"), "problems": problems}


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp filter of refuse_exchange.py is x86_64's")
def test_where_the_kernel_refuses_the_exchange_two_renames_swap_and_a_kill_between_them_is_completed(tmp_path, fresh):
    """The real kernel answers EINVAL to renameat2(RENAME_EXCHANGE) (a seccomp filter, as a filesystem without
    exchange support does): the swap falls back to two renames; a kill before, between and after them is survived.
    Between them the venv path is missing for one rename(2), the documented window; the next run completes it."""
    info = fresh("contaminated")
    original = state_rows(info.venv)
    first = run_child(tmp_path / "enumerate", "cuda_venv_repair", swap_args(info), end=True, prefix=REFUSE_EXCHANGE)
    assert first.rc == 0 and first.result["healthy"] is True, first.output
    assert (first.result["strategy"], first.result["exchange"]) == ("swap", "renames")
    reference = first.states[first.captured("end")[0]]
    points = [p for p in kill_points(first.events)
              if p.split("@")[0] in ("swap.before-exchange", "swap.exchange-renamed", "swap.exchanged")]
    assert [p.split("@")[0] for p in points] == ["swap.before-exchange", "swap.exchange-renamed", "swap.exchanged"]
    outcomes = [kill_and_rerun(tmp_path / ("kill-%d" % n), fresh("contaminated"), point, original, reference,
                               prefix=REFUSE_EXCHANGE) for n, point in enumerate(points)]
    assert [o["problems"] for o in outcomes] == [[], [], []], json.dumps(outcomes, indent=1)[:6000]
    assert [o["venv_after_kill"] for o in outcomes] == ["old", "missing", "repaired"]


def venv_side_after_kill(venv, point, original, reference):
    """(what the venv path holds: old, repaired, missing or mixed; the problem with that, or None)."""
    if not os.path.lexists(str(venv)):  # between the two renames of the fallback exchange: the next run completes it
        wrong = point.split("@")[0] != "swap.exchange-renamed"
        return "missing", "the venv path is missing after a kill at %s" % point if wrong else None
    now = state_rows(venv)
    if now == original:
        return "old", None
    off = healthy_differences(now, reference, original)
    if not off:
        return "repaired", None
    return "mixed", "after the kill the venv is neither the old nor the repaired one: %s" % off[:10]


def write_summary(scenario, points, outcomes, seconds):
    os.makedirs(SUMMARY_DIR, exist_ok=True)
    summary = {"scenario": scenario, "mode": "full" if FULL else "default", "points_reached": len(points), "points": points,
               "killed": len(outcomes), "survived": sum(1 for o in outcomes if not o["problems"]),
               "after_kill": dict((o["point"], o.get("venv_after_kill")) for o in outcomes),
               "seconds": round(seconds, 1), "failures": [o for o in outcomes if o["problems"]]}
    with open(os.path.join(SUMMARY_DIR, "swap-faults-%s.json" % scenario), "w") as handle:
        json.dump(summary, handle, indent=1)
