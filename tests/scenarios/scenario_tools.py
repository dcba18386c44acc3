"""Helpers for the scenario tests: run modules through real Ansible, match findings."""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ansible_env(tmp_path):
    # Hermetic installers: no PIP_* from this machine, no pip configuration files (PIP_CONFIG_FILE=os.devnull).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "PIP_", "UV_"))}
    env.update({
        "PIP_CONFIG_FILE": os.devnull,
        "ANSIBLE_CONFIG": os.path.join(ROOT, "ansible.cfg"),
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),  # the modules' compiled code (bytecode_cache), not in this home
    })
    return env


def run_module(tmp_path, module, args, check=False, diff=False, env=None, timeout=900):
    """`ansible localhost -m gpuops.cuda_venv.MODULE -a JSON`; returns (rc, result dict, output). ``env``: variables
    set (or, with None values, removed) on top of ansible_env(); ``timeout``: seconds the command may take.

    The ad-hoc command's own callback prints `localhost | STATUS => {json}` (after any diff).
    """
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m", "gpuops.cuda_venv." + module,
            "-a", json.dumps(args)]
    if check:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    environ = ansible_env(tmp_path)
    for key, value in (env or {}).items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = value
    proc = subprocess.run(argv, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=timeout, check=False)
    return proc.returncode, _result_of(proc.stdout), proc.stdout + proc.stderr


def _result_of(stdout):
    match = re.search(r"^localhost \| [A-Z!]+ => ", stdout, re.MULTILINE)
    if not match:
        return {}
    result, _end = json.JSONDecoder().raw_decode(stdout[match.end():])
    return result


def codes(facts, severity=None):
    return sorted({f["code"] for f in facts["findings"] if severity is None or f["severity"] == severity})


def subjects(facts, code, severity=None):
    return sorted(f["subject"] for f in facts["findings"]
                  if f["code"] == code and (severity is None or f["severity"] == severity))


def system_provides(soname):
    """True when this machine's loader cache has ``soname`` (a system CUDA may be registered)."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    return any(line.strip().startswith(soname + " ") for line in out.splitlines())
