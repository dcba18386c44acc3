# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the cuda_venv_repair module's main(): real module args, the JSON it prints, its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cuda_venv.plugins.modules import cuda_venv_repair
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest
from ansible_collections.gpuops.cuda_venv.tests.support.wheel_helpers import make_wheel

NAME_RULE = "letters, digits, '.', '_' and '-' only"
SECRET_URL = "https://u:p4ss@host.invalid/simple"
NO_INDEX_MSG = "wheel sources set no_index together with index_url or extra_index_urls: keep one of them"


def run_main(capsys, args):
    """main() with ``args``; returns (exit code, the result it printed, everything printed)."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            cuda_venv_repair.main()
    out, err = capsys.readouterr()
    return caught.value.code, json.loads(out), out + err


# --- main ---------------------------------------------------------------------------------------------------------

def test_bad_options_fail_before_anything_runs(capsys, tmp_path):
    rc, result, _printed = run_main(capsys, {"path": str(tmp_path / "absent"), "batch_size": 0, "remove": ["a;b"]})
    assert rc == 1 and result["failed"] is True
    assert result["msg"] == "batch_size must be >= 1, got 0; invalid distribution name 'a;b': " + NAME_RULE


@pytest.mark.parametrize("sources", [
    {"index_url": SECRET_URL},
    {"extra_index_urls": ["https://mirror.invalid/simple", SECRET_URL]},
], ids=["index_url", "extra_index_urls"])
def test_index_with_no_index_fails_and_never_prints_the_password(capsys, tmp_path, sources):
    rc, result, printed = run_main(capsys, dict(path=str(tmp_path), no_index=True, find_links=[str(tmp_path)], **sources))
    assert rc == 1
    assert result["msg"] == NO_INDEX_MSG
    assert "p4ss" not in printed


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    """A real venv with nothing installed (no pip either)."""
    path = tmp_path_factory.mktemp("repair") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def test_removing_a_declared_distribution_fails_with_the_plan_error(capsys, bare_venv):
    args = {"path": str(bare_venv), "remove": ["torch"], "probe": False, "index_url": SECRET_URL, "_ansible_check_mode": True}
    rc, result, printed = run_main(capsys, args)
    assert rc == 1
    assert result["msg"] == "cannot remove torch: torch requires it (it is in the declared set)"
    assert "p4ss" not in printed


@pytest.fixture(scope="module")
def jax_venv(tmp_path_factory):
    """A real venv holding a tiny 'jax' 0.7.2 whose requirement jaxlib==0.7.2 is not installed."""
    path = tmp_path_factory.mktemp("repair") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = next(path.glob("lib/python3*/site-packages"))
    make_dist(str(site), "jax", "0.7.2", files={"jax/__init__.py": b""}, requires=["jaxlib==0.7.2"])
    return path


def test_check_mode_plans_and_changes_nothing(capsys, jax_venv, tmp_path):
    before = tree_digest(str(jax_venv))
    wheels = os.path.dirname(make_wheel(str(tmp_path), "jaxlib", "0.7.2", files={"jaxlib/__init__.py": b""}))
    rc, result, _printed = run_main(capsys, {"path": str(jax_venv), "anchor": "jax", "find_links": [wheels],
                                             "no_index": True, "_ansible_check_mode": True, "_ansible_diff": True})
    assert rc == 0
    assert result["changed"] is True
    assert result["plan"] == {"batches": [{
        "batch": 1, "title": "install missing or mismatched requirements",
        "actions": [{"action": "install", "name": "jaxlib", "requirement": "jaxlib==0.7.2", "reason": "required by jax, not installed"}],
        "answers": ["REQUIREMENT_MISSING"]}], "unfixable": []}
    assert [(f["code"], f["subject"]) for f in result["findings"]] == [("REQUIREMENT_MISSING", "jaxlib")]
    assert result["diff"] == {"before": "jax==0.7.2\n", "after": "jax==0.7.2\njaxlib==0.7.2\n"}
    assert (result["batches"], result["recovered"], result["healthy"]) == ([], None, False)
    assert result["summary"] == "broken: 1 error(s): REQUIREMENT_MISSING"
    assert tree_digest(str(jax_venv)) == before  # not even a state dir


def test_check_mode_with_an_unreachable_index_plans_without_its_password(capsys, jax_venv):
    before = tree_digest(str(jax_venv), exclude=())
    uv = os.path.join(os.path.dirname(sys.executable), "uv")  # the venv has no pip: uv, and this module's pip downloads
    rc, result, printed = run_main(capsys, {"path": str(jax_venv), "anchor": "jax", "index_url": SECRET_URL,
                                            "backend": "uv", "uv_executable": uv, "installer_timeout": 60.0,
                                            "_ansible_check_mode": True})
    assert rc == 0, result
    # pip finds no jaxlib there: it cannot be installed from these sources, so it overwrites nothing
    assert [a["reason"] for b in result["plan"]["batches"] for a in b["actions"]] == [
        "required by jax, not installed; no wheel of it in the wheel sources: not checked, its batch will be unfixable"]
    assert "p4ss" not in printed
    assert tree_digest(str(jax_venv), exclude=()) == before  # the download folder and its state dir are gone
