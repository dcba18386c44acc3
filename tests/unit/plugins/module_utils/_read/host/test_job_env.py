# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for job_env: the slow variables a real venv's activate scripts set, read back as the shells assign them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.job_env import EnvSetting, activate_settings


@pytest.fixture
def venv(tmp_path):
    root = tmp_path / "train"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    return root


def _append(path, text):
    with open(path, "a") as handle:
        handle.write(text)


def test_a_fresh_venv_sets_nothing(venv):
    assert activate_settings(str(venv)) == []


def test_each_shells_assignments(venv):
    _append(venv / "bin" / "activate", "\nexport CUDA_LAUNCH_BLOCKING=1\nNCCL_P2P_DISABLE='1'  # debugging\n"
            "export NCCL_P2P_DISABLE\nexport OTHER=1\n")
    _append(venv / "bin" / "activate.fish", '\nset -gx NVIDIA_TF32_OVERRIDE "0"\n')
    _append(venv / "bin" / "activate.csh", "\nsetenv CUDA_MODULE_LOADING EAGER\n")
    lines = len((venv / "bin" / "activate").read_text().splitlines())
    fish = len((venv / "bin" / "activate.fish").read_text().splitlines())
    csh = len((venv / "bin" / "activate.csh").read_text().splitlines())
    assert activate_settings(str(venv)) == [
        EnvSetting("bin/activate", lines - 3, "CUDA_LAUNCH_BLOCKING", "1"),
        EnvSetting("bin/activate", lines - 2, "NCCL_P2P_DISABLE", "1"),
        EnvSetting("bin/activate.fish", fish, "NVIDIA_TF32_OVERRIDE", "0"),
        EnvSetting("bin/activate.csh", csh, "CUDA_MODULE_LOADING", "EAGER"),
    ]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_value_read_is_the_one_bash_exports(venv):
    _append(venv / "bin" / "activate", "\nexport CUDA_LAUNCH_BLOCKING=\"1\"; # set by a debugging session\n")
    out = subprocess.run(["bash", "-c", ". '%s' && printf %%s \"$CUDA_LAUNCH_BLOCKING\"" % (venv / "bin" / "activate")],
                         capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]}).stdout
    assert [s.value for s in activate_settings(str(venv))] == [out] == ["1"]


def test_an_unreadable_script_is_skipped(venv):
    os.remove(venv / "bin" / "activate")
    os.mkdir(venv / "bin" / "activate")
    _append(venv / "bin" / "activate.csh", "\nsetenv NCCL_IB_DISABLE 1\n")
    assert [(s.source, s.name, s.value) for s in activate_settings(str(venv))] == [
        ("bin/activate.csh", "NCCL_IB_DISABLE", "1")]
