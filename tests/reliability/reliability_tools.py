"""Helpers for the reliability tests: stand-in venv clones, module runs with hooks, tree states, kill points."""

import dataclasses
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "build", "collections")
CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_child.py")
CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))
# Heavier variants (every kill point with a full recovery run, double faults, more load): opt in.
FULL = os.environ.get("CUDA_VENV_RELIABILITY", "") == "full"
# Crash points inside loops (one hit per file): killed at the first, middle and last hit of each run of hits.
LOOP_POINTS = ("snapshot.link", "swap.copy", "restore.remove", "restore.mkdir", "restore.replace", "restore.metadata")
STATE_DIR = ".cuda_venv"


def clone(info, dest):
    """A copy of a scenario's venv (``cp -a``: bytes, modes, mtimes, hard links) at ``dest/venv``.

    Scripts in bin/ keep the original's shebang; the modules run ``bin/python -m pip``, which works anywhere.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--", str(info.venv), str(dest / "venv")], check=True)
    return dataclasses.replace(info, venv=dest / "venv")


def repair_args(info, **extra):
    """Arguments of a repair of a stand-in from its wheelhouses; strategy in_place unless ``extra`` says otherwise
    (these tests prove the in-place transactions; test_swap_faults.py passes strategy swap)."""
    links = [str(info.wheelhouse)] + ([str(info.extra_wheelhouse)] if info.extra_wheelhouse else [])
    args = dict(path=str(info.venv), find_links=links, no_index=True, backend="pip", strategy="in_place")
    args.update(extra)
    return args


def child_env(extra=None):
    """A hermetic environment for module processes: no ANSIBLE_/PYTHON/PIP_/UV_ variables of this machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "PIP_", "UV_", "CUDA_VENV_"))}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PYTHONPATH": os.pathsep.join([COLLECTIONS, ROOT]),
                "PYTHONDONTWRITEBYTECODE": "1"})
    env.update(extra or {})
    return env


@dataclasses.dataclass
class ChildRun:
    """One module process: its exit status, JSON result, output, crash-point events and captured tree states."""

    rc: int
    result: dict
    output: str
    events: list
    states: dict  # label ("0003-batch.begun@1", "0042-end") -> tree state rows
    stderr: str = ""

    @property
    def killed(self):
        return self.rc == -9

    def captured(self, prefix=None):
        labels = sorted(self.states)
        return [label for label in labels if prefix is None or label.split("-", 1)[1].startswith(prefix)]


def run_child(work, module, args, crash_at=None, capture=(), end=False, check=False, fill=None, trace_lock=False,
              env=None, cwd=None, timeout=600, prefix=()):
    """Run ``module`` with ``args`` in a child process (see module_child.py); ``work`` is a fresh directory.

    ``prefix`` goes before the command (``setpriv ...``); ``capture`` names crash points where the tree is saved.
    """
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    states_dir = work / "states"
    states_dir.mkdir(exist_ok=True)
    spec = {"module": module, "args": args, "check": check, "crash_at": crash_at, "events": str(work / "events.jsonl"),
            "capture": {"root": args["path"], "dir": str(states_dir), "at": list(capture), "end": end}
            if (capture or end) else None,
            "fill": fill, "trace_lock": trace_lock}
    spec_path = work / "spec.json"
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.run(list(prefix) + [sys.executable, CHILD, str(spec_path)], cwd=str(cwd or work), env=child_env(env),
                          capture_output=True, text=True, timeout=timeout, check=False)
    return ChildRun(proc.returncode, parse_result(proc.stdout), proc.stdout + proc.stderr, read_events(work),
                    read_states(states_dir), proc.stderr)


def start_child(work, module, args, env=None, trace_lock=False, crash_at=None, events=None):
    """Like run_child, but returns the running Popen (stdout/stderr to files in ``work``).

    ``events``: the events file (default ``work/events.jsonl``); children given one file append in one order.
    """
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    spec = {"module": module, "args": args, "crash_at": crash_at, "events": str(events or work / "events.jsonl"),
            "trace_lock": trace_lock}
    spec_path = work / "spec.json"
    spec_path.write_text(json.dumps(spec))
    out = open(work / "stdout", "w")
    err = open(work / "stderr", "w")
    try:
        return subprocess.Popen([sys.executable, CHILD, str(spec_path)], cwd=str(work), env=child_env(env),
                                stdout=out, stderr=err)
    finally:
        out.close()
        err.close()


def finish_child(work, proc, timeout=600):
    proc.wait(timeout=timeout)
    work = Path(work)
    stdout, stderr = (work / "stdout").read_text(), (work / "stderr").read_text()
    return ChildRun(proc.returncode, parse_result(stdout), stdout + stderr, read_events(work), {}, stderr)


def parse_result(stdout):
    """The module's JSON result: the last line of stdout that is a JSON object."""
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return {}


def read_events(work):
    path = Path(work) / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_states(states_dir):
    states = {}
    for path in sorted(glob.glob(os.path.join(str(states_dir), "*.json"))):
        with open(path) as handle:
            states[os.path.basename(path)[:-5]] = [(row[0], tuple(row[1])) for row in json.load(handle)]
    return states


def state_rows(root):
    """tree_state of ``root`` (state dir excluded) in the rows format module_child.py writes."""
    from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_state
    return sorted((os.fsencode(k).hex(), tuple(v)) for k, v in tree_state(str(root)).items())


def kill_points(events, full=True):
    """Every crash point a run reached, as CUDA_VENV_CRASH_AT values: each phase boundary once, and for
    points inside loops the first, middle and last hit of each run of consecutive hits."""
    points = []
    runs = []
    previous = None
    for event in events:
        name = event["name"]
        if name.startswith("lock."):
            continue
        if name in LOOP_POINTS:
            if previous == name:  # the loop goes on: no other point in between
                runs[-1].append(event["n"])
            else:
                runs.append([name, event["n"]])
                points.append(("loop", len(runs) - 1))
        else:
            points.append(("point", "%s@%d" % (name, event["n"])))
        previous = name
    result = []
    for kind, value in points:
        if kind == "point":
            result.append(value)
            continue
        name, hits = runs[value][0], runs[value][1:]
        chosen = sorted({hits[0], hits[len(hits) // 2], hits[-1]}) if full else [hits[len(hits) // 2]]
        result.extend("%s@%d" % (name, n) for n in chosen)
    return result


def expected_after_recovery(run):
    """The tree a recovery must restore after ``run`` was killed: the state captured at the last batch
    boundary it passed - before a batch still open (begun, not committed), or after the last committed one."""
    labels = [label for label in run.captured() if "batch.begun" in label or "batch.committed" in label]
    assert labels, "the killed run passed no batch boundary"
    return run.states[labels[-1]]


def recovered_state(run):
    """What a recovery run left before its own first batch (or at its end when it ran none)."""
    begun = run.captured("batch.begun")
    return run.states[begun[0]] if begun else run.states[run.captured("end")[0]]


MTIME = 5  # index of mtime_ns in a tree_state value


def healthy_differences(final, reference, original):
    """Paths where ``final`` differs from the ``reference`` repaired tree: any field but the mtimes the
    installers set (an entry the reference repair left with its original mtime must keep it too)."""
    final, reference, original = dict(final), dict(reference), dict(original)
    problems = sorted(set(final) ^ set(reference))
    for key in sorted(set(final) & set(reference)):
        got, want = final[key], reference[key]
        if got[:MTIME] + got[MTIME + 1:] != want[:MTIME] + want[MTIME + 1:]:
            problems.append(key)
        elif key in original and original[key][MTIME] == want[MTIME] and got[MTIME] != want[MTIME]:
            problems.append(key)
    return [bytes.fromhex(k).decode("utf-8", "surrogateescape") for k in problems]


def state_differences(got, want):
    got, want = dict(got), dict(want)
    keys = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    return [bytes.fromhex(k).decode("utf-8", "surrogateescape") for k in keys]
