"""Helpers for the scenario tests: run modules through real Ansible, match findings."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ansible_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON"))}
    env.update({
        "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "ANSIBLE_NOCOLOR": "1",
    })
    return env


def run_module(tmp_path, module, args, check=False, diff=False):
    """`ansible localhost -m gpuops.cuda_venv.MODULE -a JSON`; returns (rc, result dict, stdout)."""
    tree = tmp_path / ("tree-%s-%d" % (module, len(list(tmp_path.glob("tree-*")))))
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m", "gpuops.cuda_venv." + module,
            "-a", json.dumps(args), "-t", str(tree)]
    if check:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    proc = subprocess.run(argv, cwd=ROOT, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=900)
    out = tree / "localhost"
    result = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, result, proc.stdout + proc.stderr


def codes(facts, severity=None):
    return sorted({f["code"] for f in facts["findings"] if severity is None or f["severity"] == severity})


def subjects(facts, code, severity=None):
    return sorted(f["subject"] for f in facts["findings"]
                  if f["code"] == code and (severity is None or f["severity"] == severity))


def system_provides(soname):
    """True when this machine's loader cache has ``soname`` (a system CUDA may be registered)."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    return any(line.strip().startswith(soname + " ") for line in out.splitlines())
