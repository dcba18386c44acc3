# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for repair through its entry: a baseline test that cannot run changes nothing."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import batches
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.outcome import RepairFailed
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.repair import repair
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.run import RepairOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import NEXT_DIR
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import read_layout, state_dir_of, swap_dir_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.facts import gather_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.probe import IMPORT_SCRIPT
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read import read_index
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.read_index import index_path
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import CommandResult, SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging import record_check
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
        repair(options, read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), _FakeRunnerProbeRaises())
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
        repair(options, read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), SubprocessRunner())
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
        repair(options, read_layout(str(venv)), lambda _observed: None, SubprocessRunner())
    assert str(caught.value) == "no installer backend"
    assert caught.value.result["batches"] == [] and caught.value.result["changed"] is False
    assert tree_digest(str(venv)) == before


class _CountingRunner(SubprocessRunner):
    """The real runner, counting the import probes it runs (IMPORT_SCRIPT's argv)."""

    def __init__(self):
        super().__init__()
        self.probes = 0

    def run(self, argv, **kwargs):
        self.probes += IMPORT_SCRIPT in argv
        return super().run(argv, **kwargs)


def test_check_mode_with_facts_diagnoses_once_for_the_facts_and_the_plan(tmp_path):
    """report_facts: one reading, one import probe; the facts are the facts module's, the plan a real run's."""
    venv = _jax_venv(tmp_path)
    before = tree_digest(str(venv))
    runner = _CountingRunner()
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState(), check_mode=True,
                            report_facts=True)
    result = repair(options, read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), runner)
    assert runner.probes == 1
    facts = result["ansible_facts"]["cuda_venv"]
    module_facts = gather_facts(FactsOptions(path=str(venv), anchor="jax", performance=True, read_index=True), SubprocessRunner(),
                                keep_index=False)
    assert facts["probe"].pop("duration") > 0 and module_facts["probe"].pop("duration") > 0  # the only differences
    assert set(facts["performance"].pop("seconds")) == set(module_facts["performance"].pop("seconds")) == {"kernels", "processes"}
    assert facts == module_facts
    assert facts["probe"]["ok"] is True and facts["gpu"] is not None
    assert [[a["name"] for a in b["actions"]] for b in result["plan"]["batches"]] == [["jaxlib"]]
    plain = repair(dataclasses.replace(options, report_facts=False), read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), runner)
    assert runner.probes == 1 and "ansible_facts" not in plain  # without facts: no probe at all
    assert {k: v for k, v in result.items() if k != "ansible_facts"} == plain
    assert tree_digest(str(venv)) == before and not os.path.exists(state_dir_of(str(venv)))


def test_plan_only_keeps_the_read_index_and_the_next_plan_answers_the_import_from_it(tmp_path):
    """keep_index (plan_only): the first plan imports and writes the index; the next, on the unchanged venv, reuses the
    import and every file; a .pth file added to site-packages makes it import again. Check mode alone writes nothing."""
    venv = _jax_venv(tmp_path)
    time.sleep(1.0 - time.time() % 1.0 + 0.01)  # the venv's files are older than the run that writes the index
    before = tree_digest(str(venv))
    runner = _CountingRunner()
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState(), check_mode=True,
                            report_facts=True)
    checked = repair(options, read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), runner)
    assert checked["ansible_facts"]["cuda_venv"]["read_index"]["saved"] is False
    assert not os.path.exists(state_dir_of(str(venv)))
    planning = dataclasses.replace(options, keep_index=True)
    first = repair(planning, read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), runner)
    assert runner.probes == 2 and first["ansible_facts"]["cuda_venv"]["read_index"]["saved"] is True
    assert os.path.isfile(index_path(state_dir_of(str(venv))))
    again = repair(planning, read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), runner)
    facts = again["ansible_facts"]["cuda_venv"]
    assert runner.probes == 2 and facts["probe"]["reused"] is True and facts["read_index"]["read"] == 0
    assert {k: v for k, v in again.items() if k != "ansible_facts"} == {k: v for k, v in first.items() if k != "ansible_facts"}
    assert [[a["name"] for a in b["actions"]] for b in again["plan"]["batches"]] == [["jaxlib"]]
    assert tree_digest(str(venv)) == before  # the venv outside its state folder
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "extra.pth").write_text("/nowhere\n")
    third = repair(planning, read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), runner)
    assert runner.probes == 3 and third["ansible_facts"]["cuda_venv"]["probe"]["reused"] is False


def _healthy_jax_venv(tmp_path):
    """_jax_venv with its jaxlib==0.7.2 installed: nothing to repair. Its files are older than the next run."""
    venv = _jax_venv(tmp_path)
    make_dist(str(next(venv.glob("lib/python3*/site-packages"))), "jaxlib", "0.7.2", files={"jaxlib/__init__.py": b""})
    time.sleep(1.0 - time.time() % 1.0 + 0.01)
    return venv


def _real_run(venv):
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState())
    return repair(options, read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), SubprocessRunner())


def test_a_real_run_with_nothing_to_do_keeps_the_read_index_and_the_next_reads_no_file_again(tmp_path):
    venv = _healthy_jax_venv(tmp_path)
    before = tree_digest(str(venv))
    first = _real_run(venv)
    assert (first["changed"], first["healthy"], first["plan"]["batches"]) == (False, True, [])
    index = index_path(state_dir_of(str(venv)))
    kept = os.stat(index)
    assert sorted(json.load(open(index))["dists"]) == sorted(str(p) for p in venv.glob("lib/python3*/site-packages/*.dist-info"))
    assert _real_run(venv) == first
    again = os.stat(index)
    assert (again.st_ino, again.st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)  # nothing read: nothing to write again
    assert tree_digest(str(venv)) == before


def test_a_real_run_whose_read_index_shows_work_reads_every_file_again_before_it_plans(tmp_path):
    """The index says jaxlib is 0.7.1 (jax needs ==0.7.2): a batch, so the run reads the files, finds 0.7.2 and
    changes nothing (mutation: the plan made from the index's answers; its installer would run)."""
    venv = _healthy_jax_venv(tmp_path)
    _real_run(venv)
    index = index_path(state_dir_of(str(venv)))
    data = json.load(open(index))
    entry = next(v for k, v in data["dists"].items() if k.endswith("jaxlib-0.7.2.dist-info"))
    entry[1]["version"] = "0.7.1"
    with open(index, "w") as handle:
        json.dump(data, handle)
    before = tree_digest(str(venv))
    result = _real_run(venv)
    assert (result["changed"], result["healthy"], result["plan"]["batches"], result["batches"]) == (False, True, [], [])
    assert tree_digest(str(venv)) == before


def _counting_dist_info_reads(monkeypatch) -> list:
    """The dist-info folders read from disk, with or without the read index, in the order read."""
    reads = []
    real = read_index.read_dist_info

    def counted(path, site):
        reads.append(os.path.basename(path))
        return real(path, site)
    monkeypatch.setattr(read_index, "read_dist_info", counted)
    monkeypatch.setattr(read_index.DirectReader, "dist_info", staticmethod(counted))
    return reads


@pytest.mark.parametrize("indexed", [False, True])
def test_a_real_run_with_work_reads_each_file_once_when_the_read_index_answered_nothing(tmp_path, monkeypatch, indexed):
    """A batch to run (jaxlib==0.7.2 missing): without a read index, the first reading read every file itself and
    is the one planned from; with an index that answered (kept by a check-mode run), every file is read again.
    The run stops before changing anything (no installer backend). Mutation: the second reading always taken."""
    venv = _jax_venv(tmp_path)
    time.sleep(1.0 - time.time() % 1.0 + 0.01)  # older than the runs below: the index may answer
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState())
    if indexed:
        repair(dataclasses.replace(options, check_mode=True, keep_index=True), read_layout(str(venv)), lambda _observed: None,
               SubprocessRunner())
    reads = _counting_dist_info_reads(monkeypatch)
    with pytest.raises(RepairFailed) as caught:
        repair(options, read_layout(str(venv)), lambda _observed: None, SubprocessRunner())
    assert str(caught.value) == "no installer backend"
    assert reads == ["jax-0.7.2.dist-info"]
    assert caught.value.result["batches"] == [] and caught.value.result["changed"] is False


def test_check_mode_names_what_a_killed_swap_left_as_a_pending_recovery(tmp_path):
    venv = _jax_venv(tmp_path)
    leftover = os.path.join(swap_dir_of(str(venv)), NEXT_DIR)
    os.makedirs(leftover)
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState(), check_mode=True)
    result = repair(options, read_layout(str(venv)), lambda _observed: _InstallerNeverCalled(), SubprocessRunner())
    assert result["pending_recovery"] == "a leftover copy %s will be removed first" % leftover
    assert result["changed"] is True and os.path.isdir(leftover)


class _FakeInstallerWritingDists:
    """A fake of an installer (pip or uv): install writes each requirement's distribution with make_dist."""

    name = "fake"
    pass_fds = ()

    def __init__(self, site):
        self.site = site

    def install(self, requirements, **_kwargs):
        for requirement in requirements:
            name, _sep, version = requirement.partition("==")
            make_dist(self.site, name, version, files={"%s/__init__.py" % name: b"installed = True\n"})
        return CommandResult(("fake", "install") + tuple(requirements), 0, "", "")

    def uninstall(self, requirements):
        raise AssertionError("nothing to uninstall: %r" % (requirements,))


def test_the_last_batch_s_test_hashes_what_it_installed_and_verified_takes_those_digests_fake_installer(tmp_path,
                                                                                                        monkeypatch):
    """The plan's last batch is tested with the wheels the repair installed hashed beside the import; the result's
    verified reuses those digests: each installed file is hashed once (mutation: no hashed to observed_after, and
    the test asks for nothing)."""
    venv = _jax_venv(tmp_path)
    site = str(next(venv.glob("lib/python3*/site-packages")))
    asked, hashed = [], []
    real_observed_after, real_digest = batches.observed_after, record_check.file_digest
    monkeypatch.setattr(batches, "observed_after", lambda *args: asked.append(args[4]) or real_observed_after(*args))
    monkeypatch.setattr(record_check, "file_digest", lambda path, *args: hashed.append(path) or real_digest(path, *args))
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState())
    result = repair(options, read_layout(str(venv)), lambda _observed: _FakeInstallerWritingDists(site),
                    SubprocessRunner())
    assert [b["result"] for b in result["batches"]] == ["committed"]
    assert asked == [("jaxlib",)]
    assert result["verified"] == {"jaxlib": "ok"}
    jaxlib = [p for p in hashed if "/jaxlib" in p]
    assert sorted(jaxlib) == sorted(set(jaxlib)) and len(jaxlib) == 3  # __init__.py, METADATA, INSTALLER: once each
