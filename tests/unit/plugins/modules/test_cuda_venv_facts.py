# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the cuda_venv_facts module's main(): real module args, the JSON it prints, its exit status."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpuops.cuda_venv.plugins.modules import cuda_venv_facts


def run_main(capsys, args):
    """main() with ``args``; returns (exit code, the result it printed)."""
    with patch_module_args(args):
        with pytest.raises(SystemExit) as caught:
            cuda_venv_facts.main()
    return caught.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    """A real venv with nothing installed (no pip either)."""
    path = tmp_path_factory.mktemp("facts") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def test_a_path_that_does_not_exist_fails_with_a_message_naming_it(capsys, tmp_path):
    path = tmp_path / "absent"
    rc, result = run_main(capsys, {"path": str(path)})
    assert rc == 1
    assert result["failed"] is True
    assert result["msg"] == "path %s does not exist" % path
    assert "ansible_facts" not in result


def test_a_directory_without_pyvenv_cfg_is_not_a_venv(capsys, tmp_path):
    rc, result = run_main(capsys, {"path": str(tmp_path)})
    assert (rc, result["msg"]) == (1, "path %s is not a venv: no pyvenv.cfg" % tmp_path)


@pytest.mark.parametrize("timeout", [0, -1])
def test_probe_timeout_must_be_positive(capsys, tmp_path, timeout):
    rc, result = run_main(capsys, {"path": str(tmp_path), "probe_timeout": timeout})
    assert (rc, result["msg"]) == (1, "probe_timeout must be positive, got %s" % float(timeout))


def test_bad_choice_is_refused_by_the_argument_spec(capsys, tmp_path):
    rc, result = run_main(capsys, {"path": str(tmp_path), "verify": "md5"})
    assert rc == 1
    assert result["msg"] == "value of verify must be one of: size, hash, got: md5"


def test_anchor_not_installed_in_a_real_venv(capsys, bare_venv):
    rc, result = run_main(capsys, {"path": str(bare_venv), "gpu": False})
    assert rc == 0
    assert result["changed"] is False
    facts = result["ansible_facts"]["cuda_venv"]
    assert facts["findings"] == [{
        "code": "ANCHOR_NOT_INSTALLED", "severity": "error", "subject": "torch",
        "message": "The anchor torch is not installed in %s; its requirement closure cannot be checked." % bare_venv,
        "fix": "Set the anchor option to the package that owns this venv's CUDA wheels."}]
    assert facts["healthy"] is False
    assert facts["summary"] == "broken: 1 error(s): ANCHOR_NOT_INSTALLED"
    assert (facts["path"], facts["anchor"], facts["distributions"]) == (str(bare_venv), "torch", [])
    assert facts["python"]["ok"] is True
    assert facts["python"]["version"] == "%d.%d.%d" % sys.version_info[:3]
    assert facts["probe"]["ran"] is True and facts["probe"]["ok"] is False
    assert facts["probe"]["error"] == "ModuleNotFoundError: No module named 'torch'"
    assert facts["gpu"] == {"available": False, "reason": "not gathered (gpu: false)"}


def test_check_mode_and_another_anchor(capsys, bare_venv):
    rc, result = run_main(capsys, {"path": str(bare_venv), "anchor": "jax", "probe": False, "gpu": False,
                                   "_ansible_check_mode": True})
    assert rc == 0 and result["changed"] is False
    facts = result["ansible_facts"]["cuda_venv"]
    assert [(f["code"], f["subject"]) for f in facts["findings"]] == [("ANCHOR_NOT_INSTALLED", "jax")]
    assert facts["probe"] == {"ran": False, "ok": None, "reason": "disabled (probe: false)"}
