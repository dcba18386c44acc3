# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for repair through its entry: a baseline test that cannot run changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.outcome import RepairFailed
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.repair import RepairOptions, repair
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_lock import state_dir_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest


class _FakeRunnerProbeRaises(SubprocessRunner):
    """A fake: the real runner, except that running the import probe raises OSError. The real SubprocessRunner
    turns a process that cannot start into rc 127; this stands for an OSError anywhere around the probe (its
    temporary folder, its pipes), which the engine must survive the same way."""

    def run(self, argv, **kwargs):
        if any(str(a).startswith("pycache_prefix=") for a in argv):
            raise OSError(11, "Resource temporarily unavailable")
        return super().run(argv, **kwargs)


class _InstallerNeverCalled:
    name = "never-called"
    pass_fds = ()

    def install(self, *args, **kwargs):
        raise AssertionError("an installer ran: %r %r" % (args, kwargs))

    uninstall = install


def test_a_baseline_test_that_raises_closes_the_first_batch_before_anything_changed_fake_runner(tmp_path):
    """The baseline probe runs while the first batch's snapshot is taken; when it raises, the batch is rolled
    back and closed, the venv is byte-identical, no installer ran and the next run has nothing to recover."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    make_dist(str(site), "jax", "0.7.2", files={"jax/__init__.py": b""}, requires=["jaxlib==0.7.2"])
    before = tree_digest(str(venv))
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState())
    with pytest.raises(OSError, match="Resource temporarily unavailable"):
        repair(options, lambda _observed: _InstallerNeverCalled(), _FakeRunnerProbeRaises())
    assert tree_digest(str(venv)) == before
    journal = Journal(state_dir_of(str(venv)))
    assert journal.open_batch() is None
    state = state_dir_of(str(venv))
    assert sorted(os.listdir(state)) == ["journal.prev.jsonl", "lock", "snapshots"]  # no pycache, no open journal
    assert os.listdir(os.path.join(state, "snapshots")) == []
    with open(os.path.join(state, "journal.prev.jsonl")) as handle:
        records = [json.loads(line) for line in handle]
    assert [(r["phase"], r.get("reason")) for r in records] == [
        ("begin", None), ("snapshot", None), ("rollback", "the test before batch 1 did not run"), ("done", None)]


def _jax_venv(tmp_path):
    """A small real venv whose jax needs jaxlib==0.7.2, not installed: a plan of one batch (install jaxlib)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    make_dist(str(site), "jax", "0.7.2", files={"jax/__init__.py": b""}, requires=["jaxlib==0.7.2"])
    return venv


@pytest.mark.parametrize("batch", [2, 7])
def test_a_batch_the_plan_does_not_have_fails_before_anything_changed(tmp_path, batch):
    venv = _jax_venv(tmp_path)
    before = tree_digest(str(venv))
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState(), batch=batch)
    with pytest.raises(RepairFailed) as caught:
        repair(options, lambda _observed: _InstallerNeverCalled(), SubprocessRunner())
    assert str(caught.value) == "batch %d does not exist: the plan has 1 batch(es)" % batch
    assert [[a["name"] for a in b["actions"]] for b in caught.value.result["plan"]["batches"]] == [["jaxlib"]]
    assert caught.value.result["batches"] == [] and caught.value.result["changed"] is False
    assert tree_digest(str(venv)) == before
    assert sorted(os.listdir(state_dir_of(str(venv)))) == ["lock"]  # no journal: no batch began


def test_no_installer_backend_fails_before_anything_changed(tmp_path):
    venv = _jax_venv(tmp_path)
    before = tree_digest(str(venv))
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState())
    with pytest.raises(RepairFailed) as caught:
        repair(options, lambda _observed: None, SubprocessRunner())
    assert str(caught.value) == "no installer backend"
    assert caught.value.result["batches"] == [] and caught.value.result["changed"] is False
    assert tree_digest(str(venv)) == before
