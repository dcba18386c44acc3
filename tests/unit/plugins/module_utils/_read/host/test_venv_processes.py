# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for venv_processes: a real venv's python holding a gcc-built library (ctypes), read through the real /proc;
the library is then replaced, deleted, or its venv moved to a previous generation."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.venv_processes import (
    DELETED, PREVIOUS, VenvProcess, venv_processes)
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import build_so, requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.support.venv_holder import HOLD, start_holder, stop_holders


@pytest.fixture
def venv(tmp_path):
    root = tmp_path / "train"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = subprocess.run([str(root / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    library = build_so(os.path.join(site, "kernels", "libkernels.so"), soname="libkernels.so")
    return str(root), library


@pytest.fixture
def holder():
    """start(root, library, env) -> (pid, cmdline): the venv's python holding ``library`` as a daemon; killed after."""
    started = []
    yield lambda root, library, env: start_holder(os.path.join(root, "bin", "python"), library, env, started)
    stop_holders(started)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_LAUNCH_BLOCKING", "NCCL_P2P_DISABLE")}
    env.update(extra)
    return env


def _ours(root, pid, previous=()):
    return [p for p in venv_processes(root, previous) if p.pid == pid]


@requires_gcc
def test_a_process_on_the_venv_with_its_slow_environment(venv, holder):
    root, library = venv
    pid, cmdline = holder(root, library, _env(CUDA_LAUNCH_BLOCKING="1", NCCL_P2P_DISABLE="0", HOME="/nowhere"))
    assert _ours(root, pid) == [VenvProcess(pid, cmdline, 1, (), (("CUDA_LAUNCH_BLOCKING", "1"), ("NCCL_P2P_DISABLE", "0")))]


@requires_gcc
def test_a_library_replaced_by_a_reinstall_is_deleted(venv, holder):
    root, library = venv
    pid, _cmdline = holder(root, library, _env())
    fresh = library + ".new"
    shutil.copyfile(library, fresh)
    os.replace(fresh, library)  # what pip and uv do: the kernel names the mapping's old dentry "... (deleted)"
    assert _ours(root, pid)[0].stale == ((library + " (deleted)", DELETED),)


@requires_gcc
def test_a_deleted_library_needs_a_restart(venv, holder):
    root, library = venv
    pid, _cmdline = holder(root, library, _env())
    os.unlink(library)
    assert _ours(root, pid)[0].stale == ((library + " (deleted)", DELETED),)


@requires_gcc
def test_a_process_on_a_previous_generation_after_a_swap(venv, holder):
    root, library = venv
    pid, _cmdline = holder(root, library, _env())
    swap_dir = swap_dir_of(root)
    os.makedirs(os.path.join(swap_dir, "previous"))
    old = os.path.join(swap_dir, "previous", "run1")
    os.rename(root, old)  # the swap moves the old tree beside the venv; a new one takes the path
    shutil.copytree(old, root, symlinks=True)
    moved = old + library[len(root):]
    assert _ours(root, pid, (swap_dir,))[0].stale == ((moved, PREVIOUS),)
    assert _ours(root, pid) == []  # without the swap's folder it maps nothing of the venv


def test_this_process_and_its_children_are_left_out(venv):
    root, library = venv
    child = subprocess.Popen([os.path.join(root, "bin", "python"), "-c", HOLD, library, os.devnull])
    try:
        time.sleep(0.3)
        assert [p.pid for p in venv_processes(root)] == []
    finally:
        child.kill()
        child.wait()
