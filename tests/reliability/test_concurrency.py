"""Concurrency and load: repairs of one venv never interleave; twenty venvs repaired in parallel all end healthy."""

import json
import os
import resource
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.gpuops.cuda_venv.tests.support.local_servers import SilentServer
from reliability_tools import FULL, ROOT, finish_child, repair_args, run_child, start_child

SUMMARY = os.path.join(ROOT, "build", "reliability", "load.json")


def lock_intervals(events):
    """Check the shared event log (one O_APPEND file: one total order) and return [(pid, events inside)].

    Every crash point of a process must lie between its lock.acquired and lock.released, and no other
    process may log anything in between.
    """
    intervals, holder, inside = [], None, []
    for event in events:
        pid, name = event["pid"], event["name"]
        if name == "lock.acquired":
            assert holder is None, "pid %d took the lock while pid %s held it" % (pid, holder)
            holder, inside = pid, []
        elif name == "lock.released":
            assert holder == pid, "pid %d released a lock held by %s" % (pid, holder)
            intervals.append((pid, inside))
            holder = None
        else:
            assert holder == pid, "pid %d reached %s while pid %s held the lock" % (pid, name, holder)
            inside.append(name)
    assert holder is None
    return intervals


@pytest.mark.parametrize("strategy, finished", [("in_place", "batch.committed"), ("swap", "swap.exchanged")])
def test_four_repairs_of_one_venv_run_one_after_another(tmp_path, fresh, strategy, finished):
    """With swap, the lock the waiting runs hold open is the same inode after the exchange (the copy links it)."""
    info = fresh("contaminated")
    shared = tmp_path / "events.jsonl"
    procs = [(tmp_path / ("run%d" % n), start_child(tmp_path / ("run%d" % n), "cuda_venv_repair",
                                                    repair_args(info, lock_timeout=600, strategy=strategy),
                                                    trace_lock=True, events=shared))
             for n in range(4)]
    runs = {proc.pid: finish_child(work, proc) for work, proc in procs}
    for pid, run in runs.items():
        assert run.rc == 0, run.output[-3000:]
    intervals = lock_intervals([json.loads(line) for line in shared.read_text().splitlines() if line.strip()])
    assert sorted(pid for pid, _inside in intervals) == sorted(runs)
    # Exactly one of them had work to do (the first to get the lock); the others found the venv healthy.
    workers = [pid for pid, run in runs.items() if run.result["batches"]]
    assert len(workers) == 1 and intervals[0][0] == workers[0]
    assert finished in intervals[0][1]
    for pid, run in runs.items():
        if pid != workers[0]:
            assert run.result["changed"] is False and run.result["healthy"] is True


def test_a_second_repair_fails_at_once_naming_the_holder(tmp_path, fresh):
    info = fresh("gutted")
    shared = tmp_path / "events.jsonl"
    first = start_child(tmp_path / "first", "cuda_venv_repair", repair_args(info), trace_lock=True, events=shared)
    deadline = time.monotonic() + 300
    while not (shared.exists() and "lock.acquired" in shared.read_text()) and first.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = run_child(tmp_path / "second", "cuda_venv_repair", repair_args(info, lock_timeout=0))
    done = finish_child(tmp_path / "first", first)
    assert done.rc == 0, done.output[-3000:]
    assert second.rc != 0
    assert second.result["msg"].startswith("venv %s is being repaired by pid %d on " % (info.venv, first.pid)), second.result["msg"]
    assert "retry later or raise lock_timeout" in second.result["msg"]
    assert second.events == []  # it never reached a batch


def _orphans(venv):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as handle:
                    cmdline = handle.read()
            except OSError:
                continue
            if str(venv).encode() in cmdline and b"module_child.py" not in cmdline:
                found.append(int(pid))
    return found


def test_an_orphaned_installer_keeps_the_venv_locked(tmp_path, fresh):
    info = fresh("curand-removed")
    with SilentServer() as server:
        args = repair_args(info, find_links=[], no_index=False, index_url="http://127.0.0.1:%d/simple" % server.port,
                           installer_timeout=300)
        first = start_child(tmp_path / "first", "cuda_venv_repair", args)
        try:
            assert server.first.wait(300), "pip never reached the index"
            os.kill(first.pid, signal.SIGKILL)  # the module dies; pip, in its own session, lives on
            first.wait()
            orphans = _orphans(info.venv)
            assert orphans, "no installer outlived the module"
            second = run_child(tmp_path / "second", "cuda_venv_repair", repair_args(info, lock_timeout=0))
        finally:
            for pid in _orphans(info.venv):
                os.kill(pid, signal.SIGKILL)
    assert second.rc != 0, "the second run took the lock while the first run's installer was still running"
    assert "a process it started still holds the lock" in second.result["msg"]


SCENARIOS_FOR_LOAD = ("contaminated", "gutted", "truncated-nccl", "curand-removed")

PLAYBOOK = """\
- name: Repair many venvs at once
  hosts: venvs
  gather_facts: false
  tasks:
    - name: Repair
      gpuops.cuda_venv.cuda_venv_repair:
        path: "{{ venv }}"
        find_links: "{{ links }}"
        no_index: true
        backend: pip
      register: repaired
    - name: Diagnose again
      gpuops.cuda_venv.cuda_venv_facts:
        path: "{{ venv }}"
        gpu: false
    - name: Healthy
      ansible.builtin.assert:
        that:
          - repaired is changed
          - repaired.healthy
          - ansible_facts.cuda_venv.healthy
"""


def test_twenty_venvs_repaired_in_parallel_from_one_playbook(tmp_path, fresh):
    hosts = []
    for number in range(20):
        name = SCENARIOS_FOR_LOAD[number % len(SCENARIOS_FOR_LOAD)]
        info = fresh(name)
        links = [str(info.wheelhouse)] + ([str(info.extra_wheelhouse)] if info.extra_wheelhouse else [])
        hosts.append("venv%02d ansible_connection=local ansible_python_interpreter=%s venv=%s links='%s' scenario=%s"
                     % (number + 1, sys.executable, info.venv, json.dumps(links), name))
    (tmp_path / "inventory.ini").write_text("[venvs]\n" + "\n".join(hosts) + "\n")
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "PIP_", "UV_", "CUDA_VENV_"))}
    env.update({"PIP_CONFIG_FILE": os.devnull, "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
                "ANSIBLE_HOME": str(tmp_path / "home"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_NOCOLOR": "1",
                "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")})
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-f", "20",
                           "-i", str(tmp_path / "inventory.ini"), str(tmp_path / "play.yml")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False)
    wall = time.monotonic() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    recap = [line for line in output.splitlines() if line.startswith("venv") and "ok=" in line]
    assert len(recap) == 20
    assert all("ok=3 " in line and "changed=1 " in line and "failed=0 " in line for line in recap), recap
    os.makedirs(os.path.dirname(SUMMARY), exist_ok=True)
    with open(SUMMARY, "w") as handle:
        json.dump({"venvs": 20, "forks": 20, "scenarios": SCENARIOS_FOR_LOAD, "wall_s": round(wall, 1),
                   "cpu_s": round((cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime), 1),
                   "cores": os.cpu_count(), "mode": "full" if FULL else "default"}, handle, indent=1)
