"""A fleet converged to one lock through the real ansible-playbook (issue 39): playbooks/export.yml writes a known-good
host's venv to the controller as a pylock.toml; repair.yml --check with it shows per host what differs, repair.yml
converges each host to it, the HTML fleet page says per host that its venv matches, and a second run changes nothing."""

import os
import subprocess
import sys

from scenario_tools import ROOT, ansible_env
from test_playbooks import recap_lines, write_inventory
from tests.standin import build_scenario

from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

CACHE = os.environ.get("CUDA_VENV_STANDIN_CACHE", os.path.join(ROOT, "build", "standin-cache"))


def playbook(tmp_path, inventory, name, *args):
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
            os.path.join(ROOT, "playbooks", name)] + list(args)
    env = dict(ansible_env(tmp_path), PWD=str(tmp_path))  # run from tmp_path, as a shell there would
    proc = subprocess.run(argv, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=1800, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def pip_list(info):
    out = subprocess.run([str(info.python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PIP_CONFIG_FILE=os.devnull)).stdout
    return sorted(out.split())


def test_a_fleet_is_converged_to_the_lock_a_known_good_host_exported(tmp_path):
    good = build_scenario("healthy-cu12", tmp_path / "ct200", cache=CACHE)
    drifted = build_scenario("healthy-cu12", tmp_path / "ct201", cache=CACHE)
    other = tmp_path / "other"
    make_wheel(str(other), "mpmath", "1.4.0", {"mpmath/__init__.py": b"VERSION = '1.4.0'\n"})
    make_wheel(str(other), "extra-tool", "1.0", {"extra_tool/__init__.py": b""})
    subprocess.run([str(drifted.python), "-m", "pip", "install", "--no-deps", "--no-index", "--find-links", str(other),
                    "mpmath==1.4.0", "extra-tool==1.0"], check=True, capture_output=True,
                   env=dict(os.environ, PIP_CONFIG_FILE=os.devnull))
    inventory = write_inventory(tmp_path, {"ct200": good, "ct201": drifted}, tools_wheels=("packaging", "uv"))

    rc, output = playbook(tmp_path, inventory, "export.yml", "-l", "ct200")
    assert rc == 0, output
    lock = tmp_path / "locks" / "pylock.ct200.toml"  # ./locks of the folder ansible-playbook ran in
    assert lock.is_file() and "pylock.ct200.toml: %d package(s)" % (len(pip_list(good)) - 1) in output, output
    assert 'not-locked = ["pip==' in lock.read_text()  # the stand-in wheelhouse has no pip wheel

    rc, output = playbook(tmp_path, inventory, "repair.yml", "--check", "-e", "venv_repair_lock=%s" % lock,
                          "-e", "venv_repair_prune=all")
    assert rc == 0, output
    recap = recap_lines(output)
    assert recap["ct200"].startswith("healthy"), recap
    assert "LOCK_DRIFT" in recap["ct201"] and "would" in recap["ct201"], recap

    report = tmp_path / "report"
    rc, output = playbook(tmp_path, inventory, "repair.yml", "-e", "venv_repair_lock=%s" % lock, "-e", "venv_repair_prune=all",
                          "-e", "cuda_venv_report_dir=%s" % report)
    assert rc == 0, output
    assert pip_list(drifted) == pip_list(good)
    index = (report / "index.html").read_text()
    assert index.count('<span class="lock">matches pylock.ct200.toml</span>') >= 2, index

    rc, output = playbook(tmp_path, inventory, "repair.yml", "-e", "venv_repair_lock=%s" % lock, "-e", "venv_repair_prune=all")
    assert rc == 0, output
    assert "changed=0" in output.split("PLAY RECAP")[-1], output
