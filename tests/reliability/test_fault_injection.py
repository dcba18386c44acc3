"""SIGKILL a repair at every phase boundary it reaches, run it again, and compare the whole tree.

For each incident scenario a first, uninterrupted run lists the crash points the repair reaches
(``module_child.py`` logs every ``crash_point`` call; see plugins/module_utils/_core/crash_points.py) and gives
the healthy reference tree. Then, for each point, a fresh copy of the scenario's venv is repaired with
``CUDA_VENV_CRASH_AT`` set to it (the process SIGKILLs itself there) and repaired again without it.

A kill counts as recovered when
- the next run succeeds and reports what it recovered,
- the tree it recovered (before its own first batch) equals, bytes and metadata (mode, owner, size,
  mtime, symlink target, hard-link groups), the tree at the killed run's last batch boundary: before
  the batch that was open, or after the last committed one;
- the tree it ends with equals the healthy reference, except for the mtimes installers set.

Default: a few points per scenario (the ones where the venv is mid-change). CUDA_VENV_RELIABILITY=full:
every point, each followed by a complete run, plus double faults (the recovery itself killed).
Counts and timings go to build/reliability/fault-injection-<scenario>.json.
"""

import json
import os
import sys
import time

import pytest

from reliability_tools import (FULL, ROOT, expected_after_recovery, healthy_differences, kill_points, recovered_state,
                               repair_args, run_child, state_differences, state_rows)

SUMMARY_DIR = os.path.join(ROOT, "build", "reliability")
# Default run: where the venv is mid-change (after an installer command, before the commit).
DEFAULT_NAMES = ("repair.after-remove", "repair.after-reinstall", "repair.after-install", "repair.before-commit")
DEFAULT_ROLLBACK_NAMES = ("restore.replace", "restore.metadata")
# The recovery run itself killed while it restores (full mode only).
SECOND_FAULTS = ("restore.remove@1", "restore.mkdir@1", "restore.replace@1", "restore.metadata@1")
SECOND_FAULT_AFTER = ("repair.after-remove", "repair.after-reinstall", "repair.after-install")


def failing_check(counter, passes):
    """A probe_command that passes ``passes`` times (the baseline, then batches), then fails."""
    code = ("import os, sys; p = sys.argv[1]; n = len(open(p).read()) if os.path.exists(p) else 0; "
            "open(p, 'a').write('x'); sys.exit('check failed on call %d' % (n + 1) if n >= int(sys.argv[2]) else 0)")
    return [sys.executable, "-c", code, str(counter), str(passes)]


VARIANTS = {
    "contaminated": dict(scenario="contaminated", rollback=False),
    "gutted": dict(scenario="gutted", rollback=False),
    "truncated-nccl": dict(scenario="truncated-nccl", rollback=False),
    # The probe_command fails after batch 2: the kills land inside the rollback (restore.* points).
    "contaminated-rollback": dict(scenario="contaminated", rollback=True),
}


def last_of_each(points, names):
    chosen = {}
    for point in points:
        name = point.split("@")[0]
        if name in names:
            chosen[name] = point
    return [p for p in points if p in chosen.values()]


def middle_of_each(points, names):
    chosen = []
    for name in names:
        hits = [p for p in points if p.split("@")[0] == name]
        if hits:
            chosen.append(hits[len(hits) // 2])
    return chosen


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_kill_point_recovers_to_before_or_healthy(tmp_path, fresh, variant):
    spec = VARIANTS[variant]
    started = time.monotonic()
    capture = ("batch.begun", "batch.committed")

    def args_for(info, work_name):
        if spec["rollback"]:
            return repair_args(info, probe_command=failing_check(tmp_path / (work_name + ".count"), 2))
        return repair_args(info)

    # 1. The uninterrupted run: the kill points, and (plain variants) the healthy reference.
    info = fresh(spec["scenario"])
    original = state_rows(info.venv)
    first = run_child(tmp_path / "enumerate", "cuda_venv_repair", args_for(info, "enumerate"), capture=capture, end=True)
    if spec["rollback"]:
        assert first.rc != 0 and "probe_command failed" in first.result["msg"], first.output
        assert first.result["batches"][-1]["result"] == "rolled back"
    else:
        assert first.rc == 0 and first.result["healthy"] is True, first.output
    points = kill_points(first.events)
    assert points and all("@" in p for p in points)
    if FULL:
        selected = points
    elif spec["rollback"]:
        selected = middle_of_each(points, DEFAULT_ROLLBACK_NAMES)
    else:
        selected = last_of_each(points, DEFAULT_NAMES)
    assert selected, points
    reference = None
    if not spec["rollback"]:
        reference = first.states[first.captured("end")[0]]
    elif FULL:
        plain = fresh(spec["scenario"])
        ref_run = run_child(tmp_path / "reference", "cuda_venv_repair", repair_args(plain), end=True)
        assert ref_run.rc == 0, ref_run.output
        reference = ref_run.states[ref_run.captured("end")[0]]

    # 2. One kill per point, then the next run.
    outcomes = []
    for number, point in enumerate(selected):
        complete = FULL or number == len(selected) - 1
        outcomes.append(kill_and_recover(tmp_path / ("kill-%02d" % number), fresh(spec["scenario"]), point, args_for,
                                         original, reference if complete else None))
    second = []
    if FULL and not spec["rollback"]:
        for number, point in enumerate(p for p in selected if p.split("@")[0] in SECOND_FAULT_AFTER):
            for fault in SECOND_FAULTS:
                second.append(kill_twice_and_recover(tmp_path / ("double-%02d-%s" % (number, fault)),
                                                     fresh(spec["scenario"]), point, fault, args_for, original, reference))
    second = [s for s in second if s is not None]
    write_summary(variant, points, outcomes, second, time.monotonic() - started)
    failed = [o for o in outcomes + second if o["problems"]]
    assert not failed, json.dumps(failed, indent=1)[:6000]
    assert len(outcomes) == len(selected)


def kill_and_recover(work, info, point, args_for, original, reference):
    """Kill a run at ``point``, run again; what went wrong (empty when recovered)."""
    problems = []
    assert state_rows(info.venv) == original  # every copy starts from the same tree
    killed = run_child(work / "killed", "cuda_venv_repair", args_for(info, str(work.name)), crash_at=point,
                       capture=("batch.begun", "batch.committed"))
    if not killed.killed or not killed.events or "%s@%d" % (killed.events[-1]["name"], killed.events[-1]["n"]) != point:
        return {"point": point, "problems": ["the run was not killed at %s: rc %s\n%s" % (point, killed.rc, killed.output[-2000:])]}
    expected = expected_after_recovery(killed)
    problems += check_recovery(work / "again", info, expected, original, reference)
    return {"point": point, "problems": problems}


def kill_twice_and_recover(work, info, point, fault, args_for, original, reference):
    """Kill a run at ``point``, kill the next one at ``fault`` (while it recovers), run a third time.

    None when the recovery never reaches ``fault`` (nothing of that kind to restore)."""
    killed = run_child(work / "killed", "cuda_venv_repair", args_for(info, str(work.name)), crash_at=point,
                       capture=("batch.begun", "batch.committed"))
    if not killed.killed:
        return {"point": "%s then %s" % (point, fault), "problems": ["first run not killed: %s" % killed.output[-2000:]]}
    expected = expected_after_recovery(killed)
    again = run_child(work / "again-killed", "cuda_venv_repair", repair_args(info), crash_at=fault)
    if not again.killed:
        return None
    return {"point": "%s then %s" % (point, fault),
            "problems": check_recovery(work / "third", info, expected, original, reference)}


def check_recovery(work, info, expected, original, reference):
    """Run the repair again (to the end when ``reference`` is given, else only through its recovery)."""
    problems = []
    stop = None if reference is not None else "batch.begun@1"
    again = run_child(work, "cuda_venv_repair", repair_args(info), crash_at=stop, capture=("batch.begun",), end=True)
    if reference is not None and again.rc != 0:
        problems.append("the next run failed: %s" % again.output[-3000:])
    if again.rc == 0 and not again.result.get("recovered"):
        problems.append("the next run reported nothing recovered")
    if not again.captured():
        return problems + ["the next run left no tree state: rc %s\n%s" % (again.rc, again.output[-2000:])]
    wrong = state_differences(recovered_state(again), expected)
    if wrong:
        problems.append("recovered tree differs from the batch boundary at %d path(s): %s" % (len(wrong), wrong[:10]))
    if reference is not None and again.rc == 0:
        if again.result.get("healthy") is not True:
            problems.append("not healthy after the next run: %s" % again.result.get("summary"))
        final = again.states[again.captured("end")[0]]
        off = healthy_differences(final, reference, original)
        if off:
            problems.append("final tree differs from the healthy reference at %d path(s): %s" % (len(off), off[:10]))
    return problems


def write_summary(variant, points, outcomes, second, seconds):
    os.makedirs(SUMMARY_DIR, exist_ok=True)
    summary = {
        "variant": variant, "mode": "full" if FULL else "default", "points_reached": len(points), "points": points,
        "killed": len(outcomes), "recovered": sum(1 for o in outcomes if not o["problems"]),
        "double_faults": len(second), "double_faults_recovered": sum(1 for o in second if not o["problems"]),
        "seconds": round(seconds, 1),
        "failures": [o for o in outcomes + second if o["problems"]],
    }
    with open(os.path.join(SUMMARY_DIR, "fault-injection-%s.json" % variant), "w") as handle:
        json.dump(summary, handle, indent=1)


def test_the_harness_sees_a_venv_that_was_not_restored(tmp_path, fresh):
    """The comparison is not vacuous: with the journal gone, the next run cannot know about the open batch,
    and the tree it starts from is not the one before that batch."""
    info = fresh("truncated-nccl")
    killed = run_child(tmp_path / "killed", "cuda_venv_repair", repair_args(info), crash_at="repair.after-reinstall@1",
                       capture=("batch.begun", "batch.committed"))
    assert killed.killed
    os.unlink(os.path.join(str(info.venv), ".cuda_venv", "journal.jsonl"))
    problems = check_recovery(tmp_path / "again", info, expected_after_recovery(killed), state_rows(info.venv), None)
    assert problems and problems[0].startswith("recovered tree differs from the batch boundary at "), problems
