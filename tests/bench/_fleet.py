# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role as users run it: ``playbooks/repair.yml`` over a fleet of containers of a fake Proxmox node through the
real community.proxmox.proxmox_pct_remote connection (pass one repairs, pass two finds every venv healthy), and over
one healthy real venv with ``-c local`` against the facts module run ad hoc.

Benchmark support for gpuops.cuda_venv: not part of the collection's API.

The fleet reuses the proxmox Molecule scenario: its inventory (ct200 and ct201, each a broken venv) plus
``FLEET - 2`` more containers holding a healthy stand-in venv, and its create.yml and destroy.yml (the node, the
rootfs cached in build/fake-proxmox, the venvs built inside the containers).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

from . import _commands as cmd
from ._measure import BenchError, fixed, measure, measure_in_turn, Measurement, Sample, Step
from ._table import Goal, Table

FLEET = 12
FORKS = 6
NOOP_GOAL_S = 1.0  # seconds per host of the no-op pass (issue 38; 4 s in issue 23)
NOOP_RUNS = 3  # no-op passes measured: one alone swings by 0.1-0.3 s per host on two shared cores
FACTS_VS_PIP_CHECK = 0.5  # the facts task over pip check's, both through Ansible, a no-op task subtracted (issue 38)
REAL_ROLE_GOAL = 1.5  # repair.yml on a healthy real venv, against the facts module ad hoc
HEALTHY_SCENARIO = "healthy-cu12"
SCENARIO = Path("extensions/molecule/proxmox")
PLAY_TIMEOUT = 3600


def fleet_prerequisites() -> Optional[str]:
    """Why the fake node cannot run here, or None (root for its namespaces, debootstrap, sshd: make molecule's)."""
    missing = [name for name, ok in (("root", os.geteuid() == 0), ("debootstrap", shutil.which("debootstrap")),
                                     ("lxc", shutil.which("lxc-attach")),
                                     ("sshd", os.path.exists("/usr/sbin/sshd"))) if not ok]
    return "needs %s (as make molecule)" % ", ".join(missing) if missing else None


def _ansible_env(repo: Path, home: Path, extra: Optional[dict] = None) -> dict:
    """This environment (the installers' configuration included) without ANSIBLE_*, with the repository's ansible.cfg."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON"))}
    env.update({"ANSIBLE_CONFIG": str(repo / "ansible.cfg"), "ANSIBLE_HOME": str(home / "ansible-home"),
                "ANSIBLE_LOCAL_TEMP": str(home / "ansible-tmp"), "ANSIBLE_NOCOLOR": "1",
                "XDG_CACHE_HOME": str(home / "xdg-cache")})  # the modules' compiled code on a local node
    env.update(extra or {})
    return env


def _playbook(repo: Path, env: dict, inventories, playbook: str, *args) -> Tuple[float, Dict[str, dict], str]:
    """Run ansible-playbook; (wall seconds, PLAY RECAP counts by host, output). BenchError when it fails."""
    argv = [str(Path(sys.executable).parent / "ansible-playbook")]
    for inventory in inventories:
        argv += ["-i", str(inventory)]
    argv += [playbook] + list(args)
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=str(repo), env=env, capture_output=True, text=True, timeout=PLAY_TIMEOUT, check=False)
    seconds = time.monotonic() - started
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise BenchError("rc %d from %s\n%s" % (proc.returncode, " ".join(argv), output[-4000:]))
    return seconds, play_stats(output), output


def play_stats(output: str) -> Dict[str, dict]:
    """{host: {"ok": n, "changed": n, ...}} from Ansible's last PLAY RECAP."""
    stats = {}
    for host, counts in re.findall(r"^(\S+)\s+: (ok=.*)$", output.split("PLAY RECAP")[-1], re.MULTILINE):
        stats[host] = {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", counts)}
    return stats


def fleet(repo: Path, work: Path, log: Callable[[str], None]) -> Table:
    """The fleet table: pass one and pass two of repair.yml over FLEET containers, seconds per host."""
    table = Table("Fleet: playbooks/repair.yml over %d containers of a fake Proxmox node (proxmox_pct_remote)" % FLEET)
    why = fleet_prerequisites()
    if why:
        table.notes.append("Not measured: the fake node %s." % why)
        return table
    eph = work / "fleet"
    (eph / "home").mkdir(parents=True)
    extra = eph / "fleet-hosts.yml"
    hosts = {"ct%d" % vmid: {"proxmox_vmid": vmid, "standin_scenario": HEALTHY_SCENARIO} for vmid in range(202, 200 + FLEET)}
    extra.write_text(json.dumps({"containers": {"hosts": hosts}}, indent=1), encoding="utf-8")
    inventories = (repo / SCENARIO / "inventory" / "hosts.yml", extra)
    env = _ansible_env(repo, eph, {
        "HOME": str(eph / "home"), "ANSIBLE_PARAMIKO_LOOK_FOR_KEYS": "false", "ANSIBLE_HOST_KEY_CHECKING": "true",
        "ANSIBLE_TASK_TIMEOUT": "600", "MOLECULE_PROJECT_DIRECTORY": str(repo), "MOLECULE_EPHEMERAL_DIRECTORY": str(eph)})
    log("bench: fleet: starting the fake node and building %d venvs in its containers" % FLEET)
    seconds, _stats, _out = _playbook(repo, env, inventories, str(SCENARIO / "create.yml"), "-f", str(FORKS))
    table.notes.append("create.yml (node, %d venvs built inside their containers): %.0f s, not counted." % (FLEET, seconds))
    try:
        literal = _literal_connection(eph, ["ct200", "ct201"] + sorted(hosts))
        passes = []
        for number in range(1, 2 + NOOP_RUNS):
            log("bench: fleet: repair.yml pass %d" % number)
            passes.append(_playbook(repo, env, inventories + (literal,), "playbooks/repair.yml", "-f", str(FORKS)))
    finally:
        _playbook(repo, env, inventories, str(SCENARIO / "destroy.yml"))
    (first, _first_stats, _first_out), noops = passes[0], passes[1:]
    for _seconds, stats, output in noops:
        changed_again = sorted(host for host, counts in stats.items() if counts.get("changed") or counts.get("failed"))
        if changed_again:
            raise BenchError("a fleet pass after the first changed or failed on %s (it must be a no-op)\n%s" % (
                ", ".join(changed_again), output[-4000:]))
    table.add("one", "pass one: ct200 and ct201 repaired, %d healthy venvs guarded; s per host" % (FLEET - 2),
              fixed(first / FLEET, 1))
    table.add("two", "pass two and after: every venv healthy, changed=0 on all %d; s per host" % FLEET,
              Measurement(tuple(Sample(seconds / FLEET, 0) for seconds, _stats, _output in noops)),
              goal=Goal(max_seconds=NOOP_GOAL_S))
    table.notes.append("Forks %d; wall time pass one %.0f s, the no-op passes %s s; the node's port and key given as "
                       "values (a real inventory's), not looked up." % (
                           FORKS, first, ", ".join("%.1f" % seconds for seconds, _stats, _output in noops)))
    return table


def _literal_connection(eph: Path, names) -> Path:
    """An inventory that gives every host the fake node's port and key as values, as a real inventory does
    (inventory/proxmox), in place of the scenario's lookups, which Ansible would template again for each task and host
    (about 0.1 s per host of a pass on this machine)."""
    state = eph / "fake-proxmox"
    values = {"ansible_port": int((state / "port").read_text(encoding="utf-8").strip()),
              "ansible_private_key_file": str(state / "client_key"), "fake_proxmox_state": str(state)}
    path = eph / "fleet-connection.yml"
    path.write_text(json.dumps({"containers": {"hosts": {name: values for name in names}}}, indent=1), encoding="utf-8")
    return path


def real_role(repo: Path, venv: Path, work: Path, runs: int, log: Callable[[str], None]) -> Table:
    """repair.yml and facts.yml with ``-c local`` on the healthy real venv, against the facts module ad hoc.

    The real venv is the bench's cache: the role runs with venv_repair_guard false, so that a healthy venv is left
    byte-for-byte as it is (a check-mode pass first makes sure there is nothing to repair)."""
    home = work / "real-role"
    (home / "empty-wheelhouse").mkdir(parents=True)
    inventory = home / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"realvenv": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "venv_repair_path": str(venv), "venv_repair_find_links": [str(home / "empty-wheelhouse")],
        "venv_repair_no_index": True, "venv_repair_tools_no_index": False, "venv_repair_tools_find_links": [],
        "venv_repair_tools_venv": str(home / "tools"), "venv_repair_guard": False}}}}), encoding="utf-8")
    env = _ansible_env(repo, home)
    log("bench: real role: a check-mode pass (the tools venv is made here)")
    _seconds, _stats, output = _playbook(repo, env, (inventory,), "playbooks/repair.yml", "--check")
    if "healthy before - " not in output:
        raise BenchError("the real venv is not healthy for the role: not running repair.yml on the bench's cache\n%s"
                         % output[-4000:])
    before = sorted(os.listdir(str(venv)))

    def playbook(name):
        argv = (str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "playbooks/%s" % name)
        return [Step(argv, env, str(repo))]
    table = Table("The role on the healthy real venv (-c local): one diagnosis per pass")
    # in turn: the no-op task is subtracted from the other two
    adhoc, noop, pip_check = measure_in_turn(
        [lambda: [cmd.ansible_facts(venv, str(repo), home)],
         lambda: [cmd.ansible_adhoc("ansible.builtin.ping", "", str(repo), home)],
         lambda: [cmd.ansible_adhoc("ansible.builtin.command", "%s -m pip check" % (venv / "bin" / "python"), str(repo), home)]],
        runs, warmup=True)
    table.add("adhoc", "cuda_venv_facts ad hoc (`ansible localhost -m ... -a path=`)", adhoc, label="facts ad hoc")
    uncached = cmd.ansible_facts(venv, str(repo), home)
    uncached = dataclasses.replace(uncached, env=dict(uncached.env, CUDA_VENV_BYTECODE_CACHE="off"))
    table.add("adhoc-compiled", "cuda_venv_facts ad hoc, `CUDA_VENV_BYTECODE_CACHE=off` (module_utils compiled every run)",
              measure(lambda: [uncached], runs, warmup=True), anchor="adhoc")
    table.add("noop", "a no-op task ad hoc (`-m ansible.builtin.ping`)", noop)
    table.add("pipcheck", "`pip check` ad hoc (`-m ansible.builtin.command`)", pip_check)
    table.add("pipcheck-own", "`pip check` through Ansible, the no-op task subtracted",
              fixed(max(pip_check.median - noop.median, 0.001), runs))
    table.add("facts-own", "cuda_venv_facts through Ansible (default options), the no-op task subtracted",
              fixed(max(table.row("adhoc").measurement.median - noop.median, 0.0), runs), anchor="pipcheck-own",
              goal=Goal(max_ratio=FACTS_VS_PIP_CHECK))
    table.add("facts", "playbooks/facts.yml", measure(lambda: playbook("facts.yml"), runs), anchor="adhoc")
    table.add("repair", "playbooks/repair.yml (healthy: one diagnosis, the recap)",
              measure(lambda: playbook("repair.yml"), runs), anchor="adhoc", goal=Goal(max_ratio=REAL_ROLE_GOAL))
    if sorted(os.listdir(str(venv))) != before:
        raise BenchError("repair.yml changed the real venv's top level: %s" % sorted(set(os.listdir(str(venv))) ^ set(before)))
    return table
