"""The modules through real Ansible keep their module_utils' compiled code in the node user's cache folder
(XDG_CACHE_HOME, which scenario_tools points into the test's folder) and read it on the next run; the switch
and PYTHONDONTWRITEBYTECODE write nothing."""

import os
import re
import stat

from conftest import CACHE
from scenario_tools import run_module
from tests.standin import build_scenario


def _facts(tmp_path, venv, env=None):
    rc, result, output = run_module(tmp_path, "cuda_venv_facts", dict(path=str(venv), gpu=False), env=env)
    assert rc == 0 and result["ansible_facts"]["cuda_venv"]["healthy"] is True, output
    return result["ansible_facts"]["cuda_venv"]


def _entries(tmp_path):
    """{entry: mtime in ns} of the one interpreter folder under the cache, or None when there is no cache."""
    root = tmp_path / "xdg-cache" / "gpuops-cuda_venv"
    if not root.exists():
        return None
    [folder] = list(root.iterdir())  # the module's interpreter: its cache tag
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    return {entry.name: entry.stat().st_mtime_ns for entry in folder.iterdir()}


def test_the_facts_module_keeps_its_compiled_code_and_the_next_run_reads_it_unchanged(tmp_path):
    venv = build_scenario("healthy-cu12", tmp_path / "venv", cache=CACHE).venv
    first = _facts(tmp_path, venv)
    kept = _entries(tmp_path)
    assert len(kept) >= 30 and all(re.fullmatch(r"[0-9a-f]{64}", name) for name in kept)
    again = _facts(tmp_path, venv)
    assert _entries(tmp_path) == kept  # read, none written again
    assert (again["findings"], again["distributions"]) == (first["findings"], first["distributions"])

    rc, result, output = run_module(tmp_path, "cuda_venv_repair", dict(path=str(venv), plan_only=True))
    assert rc == 0 and result["changed"] is False, output
    after = _entries(tmp_path)
    assert set(after) > set(kept) and all(after[name] == kept[name] for name in kept)  # the repair's own modules added


def test_the_switch_and_dont_write_bytecode_leave_no_cache(tmp_path):
    venv = build_scenario("healthy-cu12", tmp_path / "venv", cache=CACHE).venv
    _facts(tmp_path, venv, env={"CUDA_VENV_BYTECODE_CACHE": "off"})
    assert _entries(tmp_path) is None
    _facts(tmp_path, venv, env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert _entries(tmp_path) is None
    assert not os.path.exists(str(tmp_path / "xdg-cache"))
