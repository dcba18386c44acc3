"""meta/runtime.yml's action group through the real ansible-playbook: `module_defaults` for
group/gpuops.cuda_venv.cuda_venv in a play reaches all three modules; without it, path is missing."""

import json
import os
import subprocess
import sys

from scenario_tools import ROOT, ansible_env

GROUP = "group/gpuops.cuda_venv.cuda_venv"
MODULES = ("cuda_venv_facts", "cuda_venv_repair", "cuda_venv_benchmark")


def run_play(tmp_path, group_defaults, task_args):
    """One local play with the group's defaults and one task per module (failures registered, not raised);
    returns (rc, output, {module: result})."""
    tasks = [{"name": module, "gpuops.cuda_venv." + module: task_args[module], "register": module,
              "check_mode": True, "ignore_errors": True} for module in MODULES]
    tasks.append({"name": "show", "ansible.builtin.debug": {"msg": {m: "{{ %s }}" % m for m in MODULES}}})
    play = {"hosts": "localhost", "gather_facts": False, "tasks": tasks}
    if group_defaults is not None:
        play["module_defaults"] = {GROUP: group_defaults}
    playbook = tmp_path / "play.json"
    playbook.write_text(json.dumps([play], indent=1), encoding="utf-8")
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", "ansible_python_interpreter=" + sys.executable, str(playbook)]
    proc = subprocess.run(argv, cwd=ROOT, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=600,
                          check=False)
    output = proc.stdout + proc.stderr
    start = output.index("=> ", output.index("TASK [show]")) + 3
    shown, _end = json.JSONDecoder().raw_decode(output[start:])
    return proc.returncode, output, shown["msg"]


def test_group_defaults_reach_every_module(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    args = {"cuda_venv_facts": {"anchor": "pip", "gpu": False}, "cuda_venv_repair": {"anchor": "pip", "no_index": True},
            "cuda_venv_benchmark": {}}

    # path from the group: each module works on the venv.
    rc, output, results = run_play(tmp_path, {"path": str(venv)}, args)
    assert rc == 0, output
    assert results["cuda_venv_facts"]["ansible_facts"]["cuda_venv"]["path"] == str(venv)
    assert results["cuda_venv_facts"]["ansible_facts"]["cuda_venv"]["summary"] == "broken: 1 error(s): ANCHOR_NOT_INSTALLED"
    assert [f["code"] for f in results["cuda_venv_repair"]["findings"]] == ["ANCHOR_NOT_INSTALLED"]
    assert str(venv) in results["cuda_venv_repair"]["findings"][0]["message"]
    assert results["cuda_venv_benchmark"]["msg"] == (
        "import torch failed: ModuleNotFoundError: No module named 'torch' in %s: the venv is broken; "
        "diagnose it with gpuops.cuda_venv.cuda_venv_facts" % venv)

    # ld_library_path from the group too: each module checks it and names the bad entry.
    rc, output, results = run_play(tmp_path, {"path": str(venv), "ld_library_path": ["relative-lib"]}, args)
    assert rc == 0, output
    for module in MODULES:
        assert results[module]["failed"] is True, (module, results[module])
        assert "ld_library_path entry 'relative-lib' is not an absolute folder path" in results[module]["msg"], results


def test_without_the_group_defaults_path_is_missing(tmp_path):
    args = {"cuda_venv_facts": {"anchor": "pip", "gpu": False}, "cuda_venv_repair": {"anchor": "pip", "no_index": True},
            "cuda_venv_benchmark": {}}
    rc, output, results = run_play(tmp_path, None, args)
    assert rc == 0, output
    for module in MODULES:
        assert results[module]["failed"] is True, (module, results[module])
        assert results[module]["msg"] == "missing required arguments: path", (module, results[module])
