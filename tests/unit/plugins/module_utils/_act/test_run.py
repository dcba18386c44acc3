# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for run: the installer is made once, on first use, with the lock passed; a copy's installer is the same one
run by the copy's interpreter; a run's constants are frozen and a swap's run shares the live run's progress."""

from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.run import Installer, Progress, Run
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import PipBackend


def test_the_installer_is_made_once_on_first_use_with_the_lock_and_a_copys_is_the_same_run_by_its_python():
    made = []

    def make():
        made.append(1)
        return PipBackend("/venvs/train/bin/python", SubprocessRunner())
    live = Installer(make, lock_fd=7)
    on_copy = live.at("/venvs/.train.cuda_venv/next/bin/python")
    assert made == [] and live.name is None  # a run that installs nothing starts no installer
    moved = on_copy.backend()
    assert made == [1] and on_copy.backend() is moved
    assert (moved.python, moved.pass_fds) == ("/venvs/.train.cuda_venv/next/bin/python", (7,))
    assert (live.backend().python, live.backend().pass_fds, made) == ("/venvs/train/bin/python", (7,), [1])
    assert live.name == on_copy.name == "pip"


def test_a_run_is_frozen_and_its_copys_run_shares_the_progress():
    run = Run(options=None, runner=SubprocessRunner(), secrets=(), installer=Installer(lambda: None), layout=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.options = "other"  # type: ignore[misc]
    on_copy = dataclasses.replace(run, options="the copy's")
    on_copy.progress.touched.add("torch")
    assert run.progress.touched == {"torch"} and isinstance(run.progress, Progress) and run.options is None
