# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from dataclasses import replace

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.guard import (
    constraints_text, guard_constraints, guard_facts, guard_findings)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.guard_edits import activate_insertions, apply
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.guard_state import GuardState
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O

CU12 = ("torch==2.9.1", "nvidia-cublas-cu12==12.8.4.1", "nvidia-cuda-runtime-cu12==12.8.90",
        "nvidia-cudnn-cu12==9.10.2.21", "nvidia-cusparselt-cu12==0.7.1", "nvidia-nccl-cu12==2.27.5",
        "nvidia-nvshmem-cu12==3.3.20",
        "nvidia-cudnn-cu13<0", "nvidia-cusparselt-cu13<0", "nvidia-nccl-cu13<0", "nvidia-nvshmem-cu13<0")
FILE = O.ROOT + "/.cuda_venv/guard/constraints.txt"
PIP_CONF = O.ROOT + "/pip.conf"
INSERTED = "# cuda_venv guard (guard: false removes this)\nconstraint = %s\n" % FILE


def state(constraints=CU12, text=None, pip_conf="[install]\n" + INSERTED):
    manifest = {"root": O.ROOT, "constraints_file": FILE, "constraints": list(constraints),
                "files": {PIP_CONF: {"kind": "pip_conf", "inserted": [INSERTED]}}}
    return GuardState(manifest=manifest, constraints_text=constraints_text(O.ROOT, constraints) if text is None else text,
                      texts={PIP_CONF: pip_conf})


def test_constraints_pin_the_anchor_and_its_cuda_closure_and_refuse_the_other_major():
    assert guard_constraints(O.healthy()) == CU12  # filelock (not CUDA) is left free


def test_no_anchor_no_constraints():
    obs = O.healthy()
    assert guard_constraints(replace(obs, distributions=[d for d in obs.distributions if d.key != "torch"])) == ()


def test_a_guard_that_holds_gives_no_finding_and_says_where_it_is_honoured():
    obs = replace(O.healthy(), guard=state())
    assert guard_findings(obs) == []
    assert guard_facts(obs.guard, obs) == {
        "active": True, "constraints": list(CU12), "constraints_file": FILE, "problems": [],
        "honoured_by": {"pip": True, "uv_activated": [], "uv_config": None}}


def test_the_activate_scripts_the_guard_wrote_as_activate_kinds_are_where_uv_honours_it():
    scripts = {"activate": ("sh", "deactivate () {\n}\n"), "activate.fish": ("fish", "function deactivate -d 'x'\nend\n"),
               "activate.csh": ("csh", "alias deactivate 'unsetenv VIRTUAL_ENV'\n")}
    guard = state()
    for name, (shell, text) in scripts.items():
        path = O.ROOT + "/bin/" + name
        insertions = activate_insertions(text, shell, FILE)
        guard.manifest["files"][path] = {"kind": "activate:" + shell, "inserted": [t for _o, t in insertions]}
        guard.texts[path] = apply(text, insertions) if shell != "csh" else text  # csh's lines were edited away
    obs = replace(O.healthy(), guard=guard)
    assert guard_facts(obs.guard, obs)["honoured_by"] == {
        "pip": True, "uv_activated": [O.ROOT + "/bin/activate", O.ROOT + "/bin/activate.fish"], "uv_config": None}


def test_an_install_round_the_guard_is_guard_stale():
    obs = replace(O.contaminated(), guard=state())
    [finding] = [f for f in diagnose(obs) if f.code == "GUARD_STALE"]
    assert (finding.severity, finding.subject) == ("warning", O.ROOT)
    assert finding.details["problems"] == [
        "nvidia-cudnn-cu13 9.24.0.43 is installed although the guard refuses it",
        "nvidia-cusparselt-cu13 0.8.1 is installed although the guard refuses it",
        "nvidia-nccl-cu13 2.30.7 is installed although the guard refuses it",
        "nvidia-nvshmem-cu13 3.4.5 is installed although the guard refuses it"]


def test_hand_edits_of_the_guard_are_guard_stale():
    obs = replace(O.healthy(), guard=state(text="torch\n", pip_conf="[install]\n"))
    assert guard_findings(obs)[0].details["problems"] == [
        "the constraints file %s was edited" % FILE, "the guard's lines in %s were edited or removed" % PIP_CONF]
    obs = replace(O.healthy(), guard=replace(state(), constraints_text=None, texts={PIP_CONF: None}))
    assert guard_findings(obs)[0].details["problems"] == [
        "the constraints file %s was removed" % FILE, "%s, which the guard edited, was removed" % PIP_CONF]
    assert guard_facts(obs.guard, obs)["honoured_by"]["pip"] is False


def test_a_moved_pin_and_an_unreadable_manifest():
    moved = [c.replace("torch==2.9.1", "torch==2.9.0") for c in CU12]
    obs = replace(O.healthy(), guard=state(constraints=moved))
    assert guard_findings(obs)[0].details["problems"] == ["torch is 2.9.1, the guard pins 2.9.0"]
    obs = replace(O.healthy(), guard=GuardState(manifest=None, problem="manifest.json cannot be read: bad"))
    assert guard_findings(obs)[0].details["problems"] == ["manifest.json cannot be read: bad"]
    assert guard_facts(obs.guard, obs)["active"] is False
