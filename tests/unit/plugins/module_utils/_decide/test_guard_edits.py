# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.guard_edits import (
    GuardEditError, activate_insertions, apply, pip_conf_insertions, undo, uv_config_insertions)

FILE = "/opt/venvs/train/.cuda_venv/guard/constraints.txt"
MARKED = "# cuda_venv guard (guard: false removes this)\nconstraint = %s\n"


def edited(text, insertions):
    """The edited text, after checking that removing the insertions gives ``text`` back exactly."""
    new = apply(text, insertions)
    assert undo(new, [t for _o, t in insertions]) == (text, [])
    return new


def pip_value(text):
    parser = configparser.RawConfigParser()
    parser.read_string(text)
    return parser.get("install", "constraint").split()


def test_pip_conf_made_when_there_is_none():
    assert edited("", pip_conf_insertions("", FILE)) == "[install]\n" + MARKED % FILE


def test_pip_conf_of_the_user_keeps_their_settings_and_their_global_constraint():
    text = "[global]\nindex-url = https://mirror/simple\nconstraint = /home/u/mine.txt"  # no final newline
    new = edited(text, pip_conf_insertions(text, FILE))
    assert new == text + "\n\n[install]\n" + MARKED % ("/home/u/mine.txt " + FILE)
    assert pip_value(new) == ["/home/u/mine.txt", FILE]


def test_pip_conf_install_section_without_constraint_gets_the_line_under_its_header():
    text = "[install]\nno-compile = true\n[list]\nformat = json\n"
    new = edited(text, pip_conf_insertions(text, FILE))
    assert new == "[install]\n" + MARKED % FILE + "no-compile = true\n[list]\nformat = json\n"


def test_pip_conf_constraint_of_the_user_gets_ours_as_one_more_line_of_its_value():
    text = "[install]\nconstraint = /a.txt\n    /b.txt\nno-compile = true\n"
    new = edited(text, pip_conf_insertions(text, FILE))
    assert new == "[install]\nconstraint = /a.txt\n    /b.txt\n    %s\nno-compile = true\n" % FILE
    assert pip_value(new) == ["/a.txt", "/b.txt", FILE]


def test_undo_after_the_user_edited_the_rest_removes_only_the_guard_lines():
    new = apply("[global]\ntimeout = 5\n", pip_conf_insertions("[global]\ntimeout = 5\n", FILE))
    assert undo(new.replace("timeout = 5", "timeout = 9"), [MARKED % FILE]) == ("[global]\ntimeout = 9\n\n[install]\n", [])
    assert undo("[global]\n", [MARKED % FILE]) == ("[global]\n", [MARKED % FILE])


@pytest.mark.parametrize("bad", ["[global\nx", "no section\n"])
def test_pip_conf_that_does_not_parse_is_refused(bad):
    with pytest.raises(GuardEditError, match="pip.conf cannot be parsed"):
        pip_conf_insertions(bad, FILE)


def test_a_path_pip_would_split_is_refused():
    with pytest.raises(GuardEditError, match="without spaces"):
        pip_conf_insertions("", "/opt/my venv/.cuda_venv/guard/constraints.txt")


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    """The activate scripts of a stdlib venv and of a uv venv (activate.nu too)."""
    root = tmp_path_factory.mktemp("venvs")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "std")], check=True)
    found = {("std", name): (root / "std" / "bin" / name).read_text() for name in ("activate", "activate.fish", "activate.csh")}
    uv = shutil.which("uv") or os.path.join(os.path.dirname(sys.executable), "uv")  # the tools venv pins uv
    subprocess.run([uv, "venv", "-q", str(root / "uv")], check=True)
    for name in ("activate", "activate.fish", "activate.csh", "activate.nu"):
        found[("uv", name)] = (root / "uv" / "bin" / name).read_text()
    return found


SHELLS = {"activate": "sh", "activate.fish": "fish", "activate.csh": "csh", "activate.nu": "nu"}


def test_activate_scripts_are_edited_and_come_back_exact(scripts):
    found = scripts
    for (_maker, name), text in found.items():
        new = edited(text, activate_insertions(text, SHELLS[name], FILE))
        assert new.count(FILE) >= 1 and new != text


# Each shell's run of ``SCRIPT`` (the guarded activate script), twice: print UV_CONSTRAINT, deactivate, print it or
# "unset"; between the two cycles the user unsets UV_CONSTRAINT, so a value saved by the first activate must not come
# back after the second deactivate.
_CYCLE = {
    "activate": 'source SCRIPT; echo "in=$UV_CONSTRAINT"; deactivate; echo "out=${UV_CONSTRAINT-unset}"\n',
    "activate.fish": ('source SCRIPT\necho "in=$UV_CONSTRAINT"\ndeactivate\n'
                      'if set -q UV_CONSTRAINT\n  echo "out=$UV_CONSTRAINT"\nelse\n  echo out=unset\nend\n'),
    "activate.csh": ('source SCRIPT\necho "in=$UV_CONSTRAINT"\ndeactivate\n'
                     'if ($?UV_CONSTRAINT) then\n  echo "out=$UV_CONSTRAINT"\nelse\n  echo out=unset\nendif\n'),
}
SHELL_RUNS = {
    "activate": (["bash"], _CYCLE["activate"] + "unset UV_CONSTRAINT\n" + _CYCLE["activate"]),
    "activate.fish": (["fish"], _CYCLE["activate.fish"] + "set -e UV_CONSTRAINT\n" + _CYCLE["activate.fish"]),
    "activate.csh": (["tcsh", "-f"], 'set prompt = ""\n' + _CYCLE["activate.csh"] + "unsetenv UV_CONSTRAINT\n" + _CYCLE["activate.csh"]),
}


@pytest.mark.parametrize("maker", ["std", "uv"])
@pytest.mark.parametrize("name", sorted(SHELL_RUNS))
def test_each_shell_exports_the_constraint_and_deactivate_restores_what_was_there_twice(scripts, tmp_path, maker, name):
    """The real bash, fish and tcsh (make test-tools installs the last two) source the guarded scripts of both venv
    makers, activate and deactivate twice."""
    text = scripts[(maker, name)]
    script = tmp_path / name
    script.write_text(apply(text, activate_insertions(text, SHELLS[name], FILE)))
    shell, run = SHELL_RUNS[name]
    runner = tmp_path / "run"
    runner.write_text(run.replace("SCRIPT", str(script)))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    out = subprocess.run(shell + [str(runner)], env=env, capture_output=True, text=True, check=True, cwd=str(tmp_path)).stdout
    assert out.splitlines() == ["in=%s" % FILE, "out=unset"] * 2
    out = subprocess.run(shell + [str(runner)], env=dict(env, UV_CONSTRAINT="/mine.txt"), capture_output=True, text=True,
                         check=True, cwd=str(tmp_path)).stdout
    assert out.splitlines() == ["in=/mine.txt %s" % FILE, "out=/mine.txt", "in=%s" % FILE, "out=unset"]


def test_an_activate_script_without_deactivate_is_refused():
    for shell in SHELLS.values():
        with pytest.raises(GuardEditError):
            activate_insertions("echo hello\n", shell, FILE)


def test_uv_config_block_goes_first_and_refuses_another_venv_or_the_users_own_key():
    text = '[pip]\nindex-strategy = "first-index"\n'
    new = edited(text, uv_config_insertions(text, "/opt/venvs/train", ["torch==2.9.1", "nvidia-nccl-cu13<0"]))
    assert new == ('# cuda_venv guard of /opt/venvs/train (guard: false removes it)\nconstraint-dependencies = [\n'
                   '    "torch==2.9.1",\n    "nvidia-nccl-cu13<0",\n]\n' + text)
    with pytest.raises(GuardEditError, match="holds the guard of another venv, /opt/venvs/train"):
        uv_config_insertions(new, "/opt/venvs/other", ["torch==2.14.1"])
    with pytest.raises(GuardEditError, match="sets constraint-dependencies itself"):
        uv_config_insertions('constraint-dependencies = ["x<2"]\n', "/opt/venvs/train", ["torch==2.9.1"])
