"""Acceptance on real wheels: the incident's uv history (issue 29), torch 2.9.1, then torch 2.14.1 (the CUDA 13
attempt), then torch 2.9.1 again (the revert), each `uv pip install` 1.5 or 2 s after the last, as a person
types them. uv links a 2.5 GB torch from its cache in about a second: the three runs must stay three.

Opt-in with the rest of the suite (``make acceptance``); the venv lives beside uv's cache and is removed after.
"""

import time

import pytest

from acceptance_fetch import GB, enabled, find_python, require_free, wheelhouse
from acceptance_venvs import TORCH, distributions, remove_tree, run, uv_executable, uv_pip

from tests.scenarios.scenario_tools import run_module

pytestmark = pytest.mark.skipif(not enabled(), reason="opt-in: real torch wheels (about 8.0 GB); run `make acceptance`")

PAUSES = (1.5, 2.0, 0.0)  # seconds after each install; more than the history's IDLE (1 s)


def label(dist_info):
    """"name version" of a dist-info folder, the name canonical."""
    name, _sep, version = dist_info.name[:-len(".dist-info")].partition("-")
    return "%s %s" % (name.lower().replace("_", "-").replace(".", "-"), version)


def canonical(labels):
    return sorted("%s %s" % (name.lower().replace("_", "-").replace(".", "-"), version)
                  for name, version in (item.split(" ", 1) for item in labels))


@pytest.fixture(scope="module")
def uv_history(runs_dir):
    """(venv, the dist-info folders each install created): a uv venv, then the three installs."""
    venv = runs_dir / "uv-history" / "venv"
    venv.parent.mkdir(parents=True)
    require_free(venv.parent, 8 * GB, "the uv history venv (its CUDA 13 wheels may not be in uv's cache yet)")
    run([uv_executable(), "venv", "--no-config", "--quiet", "--python", find_python(), venv])
    created = []
    for requirement, pause in zip((TORCH["cu12"], TORCH["cu13"], TORCH["cu12"]), PAUSES):
        before = {p.name for p in distributions(venv).values()}
        uv_pip(venv, "install", "--link-mode", "hardlink", "--no-index", "--find-links", str(wheelhouse()), *requirement)
        created.append({p.name for p in distributions(venv).values()} - before)
        time.sleep(pause)
    yield venv, created
    remove_tree(venv.parent)


def test_the_uv_incident_is_three_transactions_the_cuda_13_attempt_between_the_install_and_the_revert(uv_history):
    venv, created = uv_history
    final = {p.name: p for p in distributions(venv).values()}
    # what each install created that is still there; a folder created again later (torch-2.9.1 by the revert) and what
    # a later install replaced belong to the later one
    expected, claimed = [], set()
    for names in reversed(created):
        expected.insert(0, sorted(label(final[name]) for name in names if name in final and name not in claimed))
        claimed |= names
    home = venv.parent / "ansible"
    home.mkdir()
    rc, result, output = run_module(home, "cuda_venv_facts", {"path": str(venv), "probe": False, "gpu": False})
    assert rc == 0, output[-4000:]
    facts = result["ansible_facts"]["cuda_venv"]
    history = facts["history"]
    assert [(t["number"], t["installer"], canonical(t["distributions"])) for t in history] == [
        (n, "uv", members) for n, members in enumerate(expected, 1)], history
    assert [name.split(" ")[0] for name in expected[2]] == ["torch", "triton"]
    assert "nvidia-cudnn-cu13" in [name.split(" ")[0] for name in expected[1]]
    assert history[0]["time"] < history[1]["time"] < history[2]["time"]
    assert all(t["requested_means"] == "installed by uv; uv marks every distribution requested" for t in history)
    found = [f for f in facts["findings"] if f["code"] == "CONTAMINATION_SOURCE"]
    assert [(f["details"]["transaction"], f["details"]["installer"], f["details"]["time"]) for f in found] == [
        (2, "uv", history[1]["time"])], found
    assert [r["transaction"] for r in found[0]["details"]["replaced_later"]][:1] == [3], found
    assert "REQUESTED cannot tell" in found[0]["message"], found[0]["message"]
