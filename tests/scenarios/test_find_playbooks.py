"""Every CUDA venv of a host (issue 32): playbooks/facts.yml finds and diagnoses them in one pass per host, the HTML
report's fleet page shows host x venv in headless Chromium, and repair.yml repairs only what venv_repair_paths selects.

Host `a` holds, under its root, a healthy stand-in venv (`opt/api/venv`), a gutted one (`srv/train/venv`), a plain venv
without CUDA and a `pip install --user` of cupy; host `b` holds no CUDA venv. Neither names a venv_repair_path.
"""

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from browser_tools import dump_dom, parse
from scenario_tools import ROOT, ansible_env, run_module
from test_playbooks import CACHE, write_inventory
from test_report_browser import keep
from tests.standin import build_scenario

from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest

FIND = "Find the CUDA venvs on the node"


def run(tmp_path, playbook, inventory, *args):
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
            os.path.join(ROOT, "playbooks", playbook)] + list(args)
    proc = subprocess.run(argv, cwd=ROOT, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=1800, check=False)
    output = proc.stdout + proc.stderr
    if "TASK [Say per host what happened]" not in output:  # every host failed before the recap: Ansible ends the run
        return proc.returncode, output, None
    start = output.index("=> ", output.index("TASK [Say per host what happened]")) + 3
    message, _end = json.JSONDecoder().raw_decode(output[start:])
    return proc.returncode, output, dict(line.split(": ", 1) for line in message["msg"])


@pytest.fixture
def hosts(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    gutted = build_scenario("gutted", a / "srv" / "train", cache=CACHE)
    healthy = build_scenario("healthy-cu12", a / "opt" / "api", cache=CACHE)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(a / "srv" / "plain")], check=True)
    make_dist(str(a / "home" / "u" / ".local" / "lib" / "python3.11" / "site-packages"), "cupy-cuda12x", "14.2.0")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(b / "opt" / "plain")], check=True)
    inventory = write_inventory(tmp_path, {"a": gutted, "b": gutted})
    with open(inventory, encoding="utf-8") as handle:
        data = json.load(handle)
    for name, root in (("a", a), ("b", b)):
        host = data["all"]["hosts"][name]
        del host["venv_repair_path"]
        host.update(venv_repair_find_roots=[str(root)], venv_repair_find_processes=False)
    with open(inventory, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    return inventory, gutted, healthy


@pytest.mark.slow
def test_facts_finds_every_venv_and_the_fleet_page_shows_host_by_venv(tmp_path, hosts):
    inventory, gutted, healthy = hosts
    report = tmp_path / "report"
    before = tree_digest(str(gutted.venv)), tree_digest(str(healthy.venv))
    rc, output, recap = run(tmp_path, "facts.yml", inventory, "-e", "cuda_venv_report_dir=%s" % report)
    assert rc == 0, output
    # the worst status is the host's, though the healthy venv comes first
    assert recap == {"a": "needs repair - 2 CUDA venv(s): %s healthy; %s needs repair" % (healthy.venv, gutted.venv),
                     "b": "no CUDA venv - no CUDA venv found"}
    assert output.count("TASK [gpuops.cuda_venv.venv_repair : %s]" % FIND) == 1  # one search per host, one pass
    assert (tree_digest(str(gutted.venv)), tree_digest(str(healthy.venv))) == before

    kept = keep(report, "find-venvs")
    profile = tmp_path / "chromium"
    fleet = parse(dump_dom(os.path.join(kept, "index.html"), profile))
    rows = [(r.attrs["data-host"], r.attrs["data-path"], r.attrs["data-status"])
            for r in fleet.find_all("tr", classes=("venv",))]
    user_site = str(tmp_path / "a" / "home" / "u" / ".local" / "lib" / "python3.11" / "site-packages")
    assert rows == [("a", str(healthy.venv), "healthy"), ("a", str(gutted.venv), "needs repair"), ("a", user_site, "not a venv")]
    assert {r.attrs["data-host"]: r.attrs["data-status"] for r in fleet.find_all("tr", classes=("host",))} == \
        {"a": "needs repair", "b": "no CUDA venv"}
    venv_rows = fleet.find_all("tr", classes=("venv",))
    assert [d.text() for d in venv_rows[1].find_all("td")][3:5] == ["12 + 13 (mixed)", "torch 2.9.1"]
    assert [d.text() for d in venv_rows[0].find_all("td")][3:5] == ["12", "torch 2.9.1"]
    assert venv_rows[2].find_all("a") == [] and venv_rows[2].find_all("td")[3].text() == "12"
    for row, path, status in zip(venv_rows[:2], (healthy.venv, gutted.venv), ("healthy", "needs repair")):
        [link] = row.find_all("a")
        assert link.text() == str(path)
        page = parse(dump_dom(os.path.join(kept, link.attrs["href"]), profile))
        assert [e.text() for e in page.find_all("span") if e.attrs.get("id") == "status"] == [status]
        assert str(path) in page.text()
        codes = {r.attrs["data-code"] for r in page.find_all("tr", classes=("finding",))}
        assert ("RECORD_MISSING_FILES" in codes) is (status == "needs repair")
    host_page = parse(dump_dom(os.path.join(kept, "host-a.html"), profile))
    assert len(host_page.find_all("tr", classes=("venv",))) == 3


@pytest.mark.slow
def test_repair_takes_only_the_venvs_named(tmp_path, hosts):
    inventory, gutted, healthy = hosts
    healthy_before = tree_digest(str(healthy.venv))
    gutted_before = tree_digest(str(gutted.venv))
    rc, output, recap = run(tmp_path, "repair.yml", inventory, "-l", "a")
    assert rc == 2 and recap["a"].startswith("failed - "), output
    assert "venv_repair_path must be the absolute path of the venv's root" in recap["a"]
    assert tree_digest(str(gutted.venv)) == gutted_before

    rc, output, recap = run(tmp_path, "repair.yml", inventory, "-l", "a", "-e",
                            json.dumps({"venv_repair_paths": [str(tmp_path / "a" / "srv" / "*")], "venv_repair_benchmark": False}))
    assert rc == 0, output
    assert recap["a"].startswith("swapped - 1 CUDA venv(s): %s swapped" % gutted.venv), recap
    assert tree_digest(str(healthy.venv)) == healthy_before


@pytest.mark.slow
def test_after_a_swapped_repair_the_find_entry_lists_the_venv_once_with_its_generations(tmp_path, hosts):
    """The generation the swap kept (a whole venv, the broken one) is neither listed nor diagnosed (issue 43)."""
    inventory, gutted, healthy = hosts
    rc, output, recap = run(tmp_path, "repair.yml", inventory, "-l", "a", "-e", json.dumps(
        {"venv_repair_paths": [str(gutted.venv)], "venv_repair_benchmark": False, "venv_repair_keep_previous": 2}))
    assert rc == 0 and recap["a"].startswith("swapped - "), output
    rc, output, recap = run(tmp_path, "facts.yml", inventory, "-l", "a")
    assert rc == 0, output
    assert recap == {"a": "healthy - 2 CUDA venv(s): %s healthy; %s healthy" % (healthy.venv, gutted.venv)}, recap
    rc, result, output = run_module(tmp_path, "cuda_venv_find", {"roots": [str(gutted.venv.parent)], "processes": False})
    assert rc == 0, output
    [venv] = result["venvs"]
    assert venv["path"] == str(gutted.venv) and venv["generations"]["count"] == 1 and venv["generations"]["size"] > 0


@pytest.mark.slow
def test_the_entry_point_handed_over_to_checks_its_spec(tmp_path):
    (tmp_path / "wheels").mkdir()
    inventory = write_inventory(tmp_path, {"b": SimpleNamespace(venv=tmp_path / "v", wheelhouse=tmp_path / "wheels",
                                                                extra_wheelhouse=None)})
    rc, output, recap = run(tmp_path, "repair.yml", inventory, "-e", "venv_repair_strategy=sideways")
    assert rc == 2 and recap is None, output
    assert "value of venv_repair_strategy must be one of: auto, swap, in_place, got: sideways" in output
