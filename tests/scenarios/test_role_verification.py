"""The venv_repair role's verification through the real ansible-playbook: a benchmark with the user's own command,
repeated and judged in the noise band, before and after a repair; verify_before_swap keeping the live venv when the
repaired copy is slower; the restart handler topic a play hooks its own service restart to."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from scenario_tools import ROOT, ansible_env
from test_playbooks import CACHE, run_playbook, write_inventory
from tests.standin import build_scenario
from tests.standin._layout import DistSpec
from tests.standin._wheel import write_wheel

from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest

TOOL = DistSpec(name="cuda-venv-tool", version="1.0", requires_dist=(), elf_files=(), python_files=(), data_files=())
# The user's workload: tokens/s read from a file the tool's wheel ships (100), inside the venv that runs it.
STEP = ("import os, cuda_venv_tool\n"
        "print('tokens/s: %d' % int(open(os.path.join(os.path.dirname(cuda_venv_tool.__file__), 'speed.txt')).read()))\n")
NO_GPU = "torch.cuda.is_available() is False (torch 2.9.1+cu128, CUDA 12.8)"


def tool_venv(tmp_path, name, wheels, live_speed):
    """A healthy stand-in venv with the tool installed and its speed.txt edited by hand to ``live_speed`` (another size:
    the repair reinstalls the wheel's 100)."""
    info = build_scenario("healthy-cu12", tmp_path / name, cache=CACHE)
    subprocess.run([str(info.venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", "--find-links",
                    str(wheels), "cuda-venv-tool==1.0"], check=True, env=dict(os.environ, PIP_CONFIG_FILE=os.devnull))
    speed = next(info.venv.glob("lib/python3.*/site-packages")) / "cuda_venv_tool" / "speed.txt"
    speed.write_text(live_speed, encoding="utf-8")
    return info, speed


@pytest.mark.slow
def test_role_benchmarks_with_the_users_command_and_keeps_the_live_venv_when_the_copy_is_slower(tmp_path):
    wheels = tmp_path / "tool-wheels"
    wheels.mkdir()
    write_wheel(wheels, TOOL, {"cuda_venv_tool/__init__.py": (b"", False), "cuda_venv_tool/speed.txt": (b"100\n", False)})
    step = tmp_path / "step.py"
    step.write_text(STEP, encoding="utf-8")
    hosts, speeds, host_vars = {}, {}, {}
    for name, live_speed in (("slower", "1000\n"), ("asfast", "0100\n")):
        hosts[name], speeds[name] = tool_venv(tmp_path, name, wheels, live_speed)
        host_vars[name] = {
            "venv_repair_packages": ["cuda-venv-tool==1.0"], "venv_repair_revert_edits": True,
            "venv_repair_find_links": [str(hosts[name].wheelhouse), str(wheels)], "venv_repair_strategy": "swap",
            "venv_repair_verify_before_swap": True,
            "venv_repair_benchmark_options": {"command": [str(hosts[name].venv / "bin" / "python"), str(step)],
                                              "command_regex": r"tokens/s: (\d+)"}}
    inventory = write_inventory(tmp_path, hosts, host_vars=host_vars)
    digest = tree_digest(str(hosts["slower"].venv))
    rc, output, recap, _stats = run_playbook(tmp_path, inventory)
    assert rc == 2, output
    assert recap["slower"] == (
        "failed - Repair a copy of the venv and swap it in, batches planned: 1: the repaired copy is slower than the live venv: "
        "command_throughput 100.0 is 0.100 of the baseline 1000.0: 90.0% slower (min_ratio 1, noise band 2.0%); kept the live "
        "venv, the copy was discarded"), output
    assert tree_digest(str(hosts["slower"].venv)) == digest
    assert recap["asfast"].startswith("swapped - 1 batch(es) on a copy ("), output
    assert speeds["asfast"].read_text(encoding="utf-8") == "100\n"
    assert ("before the swap, built-in benchmark skipped (%s): command_throughput 100.0 /s (1.000x baseline, within noise, "
            "band 2.0%%); the copy against the live venv" % NO_GPU) in output
    assert '"command_throughput: before 100, after 100 (medians of 3 runs), ratio 1.000, noise band 2.0%: within noise"' in output


def test_a_play_hooks_its_service_restart_to_the_restart_topic_fake_facts(tmp_path):
    """Until the facts report processes on replaced libraries here, the facts are given (fake): after a repair, one
    host has such a process and one none; a third was not repaired (its diagnosis names one). The role's step that
    records the outcome (tasks/outcome.yml) keeps and names them; the play's own handler listens to the role's topic."""
    needed = [{"pid": 4242, "cmdline": "/opt/venvs/train/bin/python train.py", "files": ["/opt/venvs/train/lib/libx.so (deleted)"]}]
    diagnosis = {"plan": {"batches": []}, "ansible_facts": {"cuda_venv": {"summary": "healthy", "performance": {}}}}
    hosts = {"stale": {"facts_after": {"ansible_facts": {"cuda_venv": {"performance": {"restart_needed": needed}}}}},
             "fresh": {"facts_after": {"ansible_facts": {"cuda_venv": {}}}},
             # no repair ran (no facts after it): the diagnosis's processes
             "unrepaired": {"facts_after": {}, "diagnosis": {"plan": {"batches": []}, "ansible_facts": {"cuda_venv": {
                 "summary": "healthy", "performance": {"restart_needed": [dict(needed[0], pid=77)]}}}}}}
    common = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "venv_repair_path": "/opt/venvs/train",
              "diagnosis": diagnosis}
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": common, "hosts": hosts}}), encoding="utf-8")
    include = {"name": "gpuops.cuda_venv.venv_repair", "tasks_from": "outcome.yml"}
    restart = {"dest": str(tmp_path) + "/restarted-{{ inventory_hostname }}.json", "mode": "0644",
               "content": "{{ venv_repair_restart_needed | map(attribute='pid') | list | to_json }}"}
    play = {"name": "Repair and restart", "hosts": "all", "gather_facts": False,
            "tasks": [{"name": "Record the outcome", "ansible.builtin.include_role": include,
                       "vars": {"__venv_repair_after": "{{ facts_after }}", "__venv_repair_plan": "{{ diagnosis }}",
                                "__venv_repair_done": []}}],
            "handlers": [{"name": "Restart the trainer", "listen": "cuda venv restart needed", "ansible.builtin.copy": restart}]}
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([play]), encoding="utf-8")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory), str(playbook)],
                          cwd=ROOT, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=600, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert json.loads((tmp_path / "restarted-stale.json").read_text(encoding="utf-8")) == [4242]
    assert json.loads((tmp_path / "restarted-unrepaired.json").read_text(encoding="utf-8")) == [77]
    assert not (tmp_path / "restarted-fresh.json").exists()
    assert ("1 process(es) still map replaced libraries of /opt/venvs/train; restart them to run the repaired venv: 4242"
            in output), output
    assert '"4242: /opt/venvs/train/bin/python train.py"' in output
