# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_guard import GuardError, GuardOptions, settle, settle_guard
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O

SH = "deactivate () {\n    unset VIRTUAL_ENV\n}\nexport VIRTUAL_ENV=x\n"
ON = GuardOptions(enabled=True)
OFF = GuardOptions(enabled=False)


@pytest.fixture
def venv(tmp_path):
    root = tmp_path / "venv"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "activate").write_text(SH)
    os.chmod(str(root / "bin" / "activate"), 0o640)
    (root / "pip.conf").write_text("[global]\nfind-links = /srv/wheels\n")
    return root


def files_of(root):
    return {rel: (root / rel).read_bytes() for rel in ("pip.conf", "bin/activate") if (root / rel).exists()}


def test_guard_written_then_unchanged_then_removed_exactly(venv):
    root, obs = str(venv), O.healthy()
    before = files_of(venv)
    link = venv.parent / "pip.conf.link"
    os.link(str(venv / "pip.conf"), str(link))  # pip.conf a hard link: its other name keeps its bytes
    change = settle(ON, obs, root, root)
    folder = root + "/.cuda_venv/guard"
    assert sorted(change.as_dict()["changed"]) == [folder + "/constraints.txt", folder + "/manifest.json",
                                                   root + "/bin/activate", root + "/pip.conf"]
    assert link.read_bytes() == before["pip.conf"]
    assert oct(os.stat(root + "/bin/activate").st_mode & 0o777) == "0o640"
    manifest = json.loads((venv / ".cuda_venv/guard/manifest.json").read_text())
    assert manifest["constraints"][0] == "torch==2.9.1"
    assert manifest["files"][root + "/pip.conf"]["original"] == before["pip.conf"].decode()
    assert (venv / ".cuda_venv/guard/constraints.txt").read_text().endswith("nvidia-nvshmem-cu13<0\n")
    assert settle(ON, obs, root, root).changed is False
    removed = settle(OFF, obs, root, root)
    assert removed.changed and files_of(venv) == before
    assert not (venv / ".cuda_venv/guard").exists()
    assert settle(OFF, obs, root, root).changed is False


def test_check_mode_writes_nothing_and_shows_the_diffs(venv):
    root = str(venv)
    before = files_of(venv)
    change = settle(ON, O.healthy(), root, root, check_mode=True)
    assert change.changed and files_of(venv) == before and not (venv / ".cuda_venv").exists()
    diffs = dict((d["after_header"], d) for d in change.diff())
    assert diffs[root + "/pip.conf"]["before"] == before["pip.conf"].decode()
    assert "constraint = %s/.cuda_venv/guard/constraints.txt" % root in diffs[root + "/pip.conf"]["after"]


def test_a_file_the_user_edited_since_keeps_their_edit_when_the_guard_comes_off(venv):
    root, obs = str(venv), O.healthy()
    settle(ON, obs, root, root)
    text = (venv / "pip.conf").read_text().replace("/srv/wheels", "/srv/other")
    (venv / "pip.conf").write_text(text)
    settle(OFF, obs, root, root)
    assert (venv / "pip.conf").read_text() == "[global]\nfind-links = /srv/other\n"


def test_lines_lost_after_a_killed_run_are_put_back_once(venv):
    root, obs = str(venv), O.healthy()
    settle(ON, obs, root, root)
    guarded = files_of(venv)
    (venv / "pip.conf").write_text("[global]\nfind-links = /srv/wheels\n")  # as if killed before pip.conf was written
    assert settle(ON, obs, root, root).as_dict()["changed"] == [root + "/pip.conf"]
    assert files_of(venv) == guarded


def test_a_swap_copy_is_guarded_with_the_venvs_own_paths(venv, tmp_path):
    root = str(venv)
    copy = tmp_path / "copy"
    (copy / "bin").mkdir(parents=True)
    (copy / "bin" / "activate").write_text(SH)
    change = settle(ON, O.healthy(), str(copy), root)
    assert (venv / "pip.conf").read_text() == "[global]\nfind-links = /srv/wheels\n"  # the live venv untouched
    assert "constraint = %s/.cuda_venv/guard/constraints.txt" % root in (copy / "pip.conf").read_text()
    assert (copy / ".cuda_venv/guard/constraints.txt").exists()
    manifest = json.loads((copy / ".cuda_venv/guard/manifest.json").read_text())
    assert sorted(manifest["files"]) == [root + "/bin/activate", root + "/pip.conf"]
    assert str(copy / "pip.conf") in change.as_dict()["changed"]


def test_an_unhealthy_venv_is_not_guarded_and_a_bad_pip_conf_fails_naming_it(venv):
    root = str(venv)
    obs = O.gutted()
    change, _obs = settle_guard(type("Options", (), {"guard": ON})(), obs, root, root, diagnose(obs))
    assert change.as_dict() == {"changed": [], "skipped": ["the venv is not healthy: the guard was left as it was"]}
    (venv / "pip.conf").write_text("no section\n")
    with pytest.raises(GuardError, match="cannot guard %s: %s/pip.conf: pip.conf cannot be parsed" % (root, root)):
        settle(ON, O.healthy(), root, root)
    assert not (venv / ".cuda_venv").exists()
