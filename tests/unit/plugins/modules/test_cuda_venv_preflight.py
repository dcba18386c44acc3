# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the cuda_venv_preflight module's main(): real module args, real folders, real HTTP servers on loopback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.preflight import TOOLS_MARKER
from ansible_collections.gpuops.cuda_venv.plugins.modules import cuda_venv_preflight
from ansible_collections.gpuops.cuda_venv.tests.support.local_servers import AuthIndex, SilentServer
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest


def run_main(capsys, args):
    """main() with ``args``; returns (exit code, the result it printed)."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            cuda_venv_preflight.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def venvs(tmp_path_factory):
    """Two real venvs: one with pip, one without."""
    root = tmp_path_factory.mktemp("preflight")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "bare")], check=True)
    subprocess.run([sys.executable, "-m", "venv", str(root / "with-pip")], check=True)
    return root


def test_a_venv_its_pip_and_its_local_wheelhouses(capsys, venvs, tmp_path):
    (tmp_path / "wheels").mkdir()
    (tmp_path / "a-file").write_text("")
    links = [str(tmp_path / "wheels"), "file://localhost%s" % (tmp_path / "wheels"), "file://%s" % (tmp_path / "gone"),
             "file://localhost%s" % (tmp_path / "gone"), str(tmp_path / "a-file"), str(tmp_path / "absent")]
    rc, result = run_main(capsys, {"path": str(venvs / "bare"), "find_links": links})
    assert rc == 0 and result["changed"] is False
    assert (result["venv"], result["venv_has_pip"]) == (True, False)
    assert result["missing_wheelhouses"] == links[2:]  # file://localhost/ is a local path too, never a URL source
    assert (result["silent_sources"], result["tools_marker"], result["tools_installed"]) == ([], None, None)
    rc, result = run_main(capsys, {"path": str(venvs / "with-pip"), "find_links": links, "check_sources": False})
    assert (result["venv"], result["venv_has_pip"], result["missing_wheelhouses"]) == (True, True, [])


def test_a_folder_without_pyvenv_cfg_is_reported_not_failed(capsys, tmp_path):
    rc, result = run_main(capsys, {"path": str(tmp_path)})
    assert (rc, result["venv"], result["venv_has_pip"]) == (0, False, False)


def test_a_relative_path_is_refused(capsys):
    rc, result = run_main(capsys, {"path": "venvs/train"})
    assert (rc, result["msg"]) == (1, "path must be the absolute path of the venv's root, got 'venvs/train'")


def test_url_sources_answer_or_are_named_with_why_credentials_masked(capsys, venvs, tmp_path):
    (tmp_path / "wheels").mkdir()
    with AuthIndex([tmp_path / "wheels"], "user", "s3cret") as index, SilentServer() as silent:
        good = "http://user:s3cret@127.0.0.1:%d/simple/" % index.port
        refused = "http://user:wrong@127.0.0.1:%d/simple/" % index.port
        hanging = "http://127.0.0.1:%d/simple/" % silent.port
        rc, result = run_main(capsys, {"path": str(venvs / "bare"), "index_url": good, "url_timeout": 2,
                                       "extra_index_urls": [refused], "find_links": [hanging]})
    assert rc == 0
    assert result["silent_sources"][0] == "http://***@127.0.0.1:%d/simple/ (HTTP 401)" % index.port
    assert result["silent_sources"][1].startswith("%s (" % hanging) and "timed out" in result["silent_sources"][1]
    assert len(result["silent_sources"]) == 2
    assert "s3cret" not in json.dumps(result) and "wrong" not in json.dumps(result)


def test_the_tools_venv_marker_is_read_only_beside_a_usable_python(capsys, venvs, tmp_path):
    tools = tmp_path / "tools"
    rc, result = run_main(capsys, {"path": str(venvs / "bare"), "tools_venv": str(tools)})
    assert (result["tools_marker"], result["tools_installed"]) == (str(tools / TOOLS_MARKER), None)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tools)], check=True)
    rc, result = run_main(capsys, {"path": str(venvs / "bare"), "tools_venv": str(tools)})
    assert result["tools_installed"] is None  # no marker yet: the role fills the venv
    (tools / TOOLS_MARKER).write_text('packaging>=22; python_version >= "3.10"\n\nuv>=0.4.23\n', encoding="utf-8")
    before = tree_digest(str(tools))
    rc, result = run_main(capsys, {"path": str(venvs / "bare"), "tools_venv": str(tools)})
    assert result["tools_installed"] == ['packaging>=22; python_version >= "3.10"', "uv>=0.4.23"]
    assert tree_digest(str(tools)) == before
    (tools / "bin" / "python").unlink()  # its interpreter gone (the node's Python upgraded): not ready
    rc, result = run_main(capsys, {"path": str(venvs / "bare"), "tools_venv": str(tools)})
    assert result["tools_installed"] is None
