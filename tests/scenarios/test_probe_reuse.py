"""cuda_venv_facts and the repair's plan (plan_only, the role's diagnosis) through Ansible: an unchanged venv is answered
from the last import probe; any install runs it again; check mode keeps nothing."""

import time

from conftest import CACHE
from scenario_tools import run_module
from tests.standin import build_scenario

from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_wheel, pip


def _probe(tmp_path, venv, **args):
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", dict(path=str(venv), gpu=False, **args))
    assert rc == 0, output
    return result["ansible_facts"]["cuda_venv"]["probe"]


def _next_second():
    time.sleep(1.0 - time.time() % 1.0 + 0.01)


def test_the_last_import_is_reused_until_pip_installs_something_and_always_imports_every_run(tmp_path):
    venv = build_scenario("healthy-cu12", tmp_path / "venv", cache=CACHE).venv
    _next_second()  # the venv's files are older than the run that records the import
    first = _probe(tmp_path, venv)
    assert (first["ok"], first["reused"], first["reused_from"]) == (True, False, None)
    again = _probe(tmp_path, venv)
    assert (again["reused"], again["versions"], again["loaded"]) == (True, first["versions"], first["loaded"])
    assert again["reused_from"].endswith("Z") and again["duration"] == first["duration"]
    assert _probe(tmp_path, venv, probe="always")["reused"] is False

    _pip_install_a_wheel(tmp_path, venv)
    after = _probe(tmp_path, venv)
    assert (after["ok"], after["reused"]) == (True, False)


def _plan(tmp_path, venv, check=False):
    rc, result, output = run_module(tmp_path, "cuda_venv_repair", dict(path=str(venv), plan_only=True, facts=True), check=check)
    assert rc == 0 and result["changed"] is False and result["plan"]["batches"] == [], output
    return result["ansible_facts"]["cuda_venv"]


def test_the_plan_only_diagnosis_keeps_the_index_outside_check_mode_and_imports_again_after_an_install(tmp_path):
    venv = build_scenario("healthy-cu12", tmp_path / "venv", cache=CACHE).venv
    _next_second()
    checked = _plan(tmp_path, venv, check=True)
    assert (checked["probe"]["reused"], checked["read_index"]["saved"]) == (False, False)
    assert not (venv / ".cuda_venv" / "read-index.json").exists()
    first = _plan(tmp_path, venv)
    assert (first["probe"]["ok"], first["probe"]["reused"], first["read_index"]["saved"]) == (True, False, True)
    again = _plan(tmp_path, venv)
    assert (again["probe"]["reused"], again["probe"]["loaded"], again["read_index"]["read"]) == (True, first["probe"]["loaded"], 0)
    assert _plan(tmp_path, venv, check=True)["probe"]["reused"] is True  # check mode reads the index it may not write

    _pip_install_a_wheel(tmp_path, venv)
    after = _plan(tmp_path, venv)
    assert (after["probe"]["ok"], after["probe"]["reused"]) == (True, False)


def _pip_install_a_wheel(tmp_path, venv):
    """``pip install`` of a small pure-Python wheel into the venv: a change that reaches the import."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    make_wheel(str(wheels), "harmless", "1.0", {"harmless/__init__.py": b"VALUE = 1\n"})
    pip(str(venv), "install", "--no-index", "--find-links", str(wheels), "harmless")
