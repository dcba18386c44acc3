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
import time

import pytest

from reliability_tools import FULL, ROOT, healthy_differences, kill_points, repair_args, run_child, state_rows

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._swap import swap_dir_of

SUMMARY_DIR = os.path.join(ROOT, "build", "reliability")
SCENARIOS = ("contaminated", "gutted", "truncated-nccl") if FULL else ("contaminated",)
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


def kill_and_rerun(work, info, point, original, reference):
    problems = []
    killed = run_child(work / "killed", "cuda_venv_repair", swap_args(info), crash_at=point)
    if not killed.killed:
        return {"point": point, "problems": ["not killed at %s: rc %s\n%s" % (point, killed.rc, killed.output[-2000:])]}
    now = state_rows(info.venv)
    if now == original:
        side = "old"
    elif not healthy_differences(now, reference, original):
        side = "repaired"
    else:
        side = "mixed"
        problems.append("after the kill the venv is neither the old nor the repaired one: %s" % (
            healthy_differences(now, reference, original)[:10]))
    again = run_child(work / "again", "cuda_venv_repair", swap_args(info), end=True)
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


def write_summary(scenario, points, outcomes, seconds):
    os.makedirs(SUMMARY_DIR, exist_ok=True)
    summary = {"scenario": scenario, "mode": "full" if FULL else "default", "points_reached": len(points), "points": points,
               "killed": len(outcomes), "survived": sum(1 for o in outcomes if not o["problems"]),
               "after_kill": dict((o["point"], o.get("venv_after_kill")) for o in outcomes),
               "seconds": round(seconds, 1), "failures": [o for o in outcomes if o["problems"]]}
    with open(os.path.join(SUMMARY_DIR, "swap-faults-%s.json" % scenario), "w") as handle:
        json.dump(summary, handle, indent=1)
