# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for runner: what clean_env leaves out, and what the real SubprocessRunner reports."""

from __future__ import annotations

import json
import sys

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner, clean_env

LEAKS = {"LD_PRELOAD": "/tmp/evil.so", "LD_LIBRARY_PATH": "/opt/other-cuda/lib64", "PYTHONPATH": "/tmp/shadow",
         "PYTHONHOME": "/tmp/home", "PYTHONSTARTUP": "/tmp/startup.py", "PYTHONNOUSERSITE": "",
         "VIRTUAL_ENV": "/tmp/other-venv", "LC_ALL": "de_DE.ISO-8859-1", "LANG": "de_DE"}


def test_clean_env_keeps_path_and_home_only_and_pins_the_locale(monkeypatch):
    for name, value in LEAKS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("HOME", "/home/alice")
    assert clean_env() == {"PATH": "/usr/bin:/bin", "HOME": "/home/alice", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    assert clean_env({"LD_LIBRARY_PATH": "/venv/lib"}) == {
        "PATH": "/usr/bin:/bin", "HOME": "/home/alice", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "LD_LIBRARY_PATH": "/venv/lib"}


def test_a_child_started_with_clean_env_sees_no_leaked_variable(monkeypatch):
    """A real child: what it finds in os.environ (the interpreter adds LC_CTYPE at most)."""
    for name, value in LEAKS.items():
        monkeypatch.setenv(name, value)
    done = SubprocessRunner(default_timeout=60).run(
        [sys.executable, "-c", "import json, os; print(json.dumps(sorted(os.environ)))"], env=clean_env())
    assert done.rc == 0, done.stderr
    assert [name for name in json.loads(done.stdout) if name != "LC_CTYPE"] == ["HOME", "LANG", "LC_ALL", "PATH"]


def test_a_command_that_cannot_start_is_rc_127_with_the_reason(tmp_path):
    missing = str(tmp_path / "no-such-installer")
    done = SubprocessRunner().run([missing, "--version"])
    assert (done.argv, done.rc, done.stdout, done.stderr, done.timed_out) == (
        (missing, "--version"), 127, "", "%s: No such file or directory" % missing, False)
    assert done.ok is False


def test_a_command_past_its_timeout_is_killed_with_its_group():
    done = SubprocessRunner().run(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.5)
    assert (done.rc, done.timed_out, done.ok) == (-9, True, False)
