# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The swap run's pure parts: what a swap needs, the strategy check mode reports, the verdict on a copy."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.run import RepairOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import escaping_directory_links
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap import IN_PLACE, Strategy, open_swap
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import swap_dir_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import swap_run
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.swap_run import (
    SPARE_INODES, _close_failed, _CopyBatch, _Flow, _share_bytecode, _verification_problem, check_strategy, decide, plan_needs)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Action, Batch, DesiredState, Plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O

EMPTY = Plan(batches=(), unfixable=())


def _options(root, **kwargs):
    return RepairOptions(facts=FactsOptions(path=str(root)), desired=DesiredState(), **kwargs)


def _plan(*actions):
    return Plan((Batch(1, "t", tuple(Action(kind, name, name, "r") for kind, name in actions), ()),), ())


def test_a_swap_needs_the_copys_folders_and_the_reinstalled_wheels_files():
    """a 1: a/__init__.py (18 bytes), a/lib/x.so (15), METADATA (19), RECORD (no size); b 2: b.py, METADATA,
    RECORD. Folders: site-packages, a, a/lib and the two dist-info folders."""
    obs = O.build([O.dist("a", "1", files=["a/__init__.py", "a/lib/x.so"]), O.dist("b", "2", files=["b.py"])])
    assert plan_needs(obs, EMPTY) == (0, 5 + SPARE_INODES)
    # reinstalling a rewrites its four files; removing b writes nothing; c is not installed: its size is unknown
    assert plan_needs(obs, _plan(("reinstall", "a"), ("remove", "b"), ("install", "c"))) == (52, 5 + SPARE_INODES + 4)
    assert plan_needs(obs, _plan(("install", "A"))) == (52, 5 + SPARE_INODES + 4)  # the name as the installer spells it


def test_in_place_asked_for_is_decided_without_measuring(tmp_path):
    absent = tmp_path / "absent"
    assert decide(_options(absent), None, None, str(absent)) == Strategy(IN_PLACE, "strategy in_place was asked for")


def test_check_mode_reports_the_strategy_and_an_interrupted_swap(tmp_path):
    root = tmp_path / "venv"
    root.mkdir()
    assert check_strategy(_options(root), None, str(root), EMPTY) == {"strategy": None, "strategy_reason": "nothing to repair"}
    assert check_strategy(_options(root, swap_back=True), None, str(root), EMPTY) == {
        "strategy": "swap_back", "strategy_reason": "the newest previous generation would be swapped back in"}
    assert check_strategy(_options(root), None, str(root), _plan(("reinstall", "a"))) == {
        "strategy": IN_PLACE, "strategy_reason": "strategy in_place was asked for"}
    swap_dir = swap_dir_of(str(root))
    os.mkdir(swap_dir)
    Journal(swap_dir, run="r1").append("swap", batch=None, step="begin", copy=os.path.join(swap_dir, "next"))
    assert check_strategy(_options(root), None, str(root), EMPTY) == {
        "strategy": None, "strategy_reason": "nothing to repair",
        "pending_recovery": "an interrupted swap run will be finished or discarded first"}


def test_a_copy_is_used_only_when_its_wheels_match_and_the_live_venv_stayed_still():
    assert _verification_problem({"torch": "ok", "nvidia-nccl-cu12": "ok"}, []) is None
    assert _verification_problem({}, []) is None
    assert _verification_problem({"torch": "ok", "nvidia-nccl-cu12": "1 missing, 0 modified", "a": "0 missing, 2 modified"},
                                 ["bin/x"]) == ("the repaired copy does not match the RECORD of a (0 missing, 2 modified), "
                                                "nvidia-nccl-cu12 (1 missing, 0 modified)")
    assert _verification_problem({"torch": "ok"}, ["bin/a", "bin/b", "lib/c", "lib/d"]) == (
        "the live venv changed while its copy was repaired (4 path(s), e.g. bin/a, bin/b, lib/c)")


def test_the_copys_bytecode_tree_is_the_live_venvs(tmp_path):
    pycache = str(tmp_path / "swap" / "pycache")
    live, copy = "/venvs/train", "/venvs/.train.cuda_venv/next"
    _share_bytecode(pycache, live, copy)
    target = pycache + "/venvs/train"
    assert os.path.isdir(target) and os.readlink(pycache + "/venvs/.train.cuda_venv/next") == target
    assert os.stat(os.path.dirname(pycache)).st_mode & 0o777 == 0o700
    _share_bytecode(pycache, live, copy)  # a second batch finds it made
    assert os.readlink(pycache + "/venvs/.train.cuda_venv/next") == target


def _small_venv(tmp_path):
    root = tmp_path / "venvs" / "train"
    site = root / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "a.py").write_text("A = 1\n")
    return str(root)


def test_a_swap_that_fails_after_the_copy_discards_it_and_closes_its_journal(tmp_path):
    """The failure paths (copy made, then a batch or the verification fails): the copy is removed, the swap's
    journal ends with a "discarded" record naming the reason and is closed (kept as journal.prev.jsonl); the live
    venv is byte-identical."""
    root = _small_venv(tmp_path)
    before = tree_digest(root)
    flow = _Flow(run=None, root=root, state_dir=os.path.join(root, ".cuda_venv"))
    flow.start()
    assert flow.copy == os.path.join(swap_dir_of(root), "next")
    assert sorted(os.listdir(flow.copy)) == [".cuda_venv", "lib", "pyvenv.cfg"]  # its state dir: the lock shared
    assert open_swap(flow.journal) is not None
    _close_failed(flow, "batch 1: reinstall failed: exit code 1")
    assert not os.path.exists(flow.copy)
    assert open_swap(Journal(swap_dir_of(root))) is None and Journal(swap_dir_of(root)).records() == []
    with open(os.path.join(swap_dir_of(root), "journal.prev.jsonl")) as handle:
        steps = [(r["step"], r.get("outcome"), r.get("reason")) for r in map(json.loads, handle)]
    assert steps == [("begin", None, None), ("copied", None, None),
                     ("done", "discarded", "batch 1: reinstall failed: exit code 1")]
    assert tree_digest(root) == before
    _close_failed(flow, "again")  # a second close (the rollback already closed it) adds nothing
    with open(os.path.join(swap_dir_of(root), "journal.prev.jsonl")) as handle:
        assert len(handle.readlines()) == 3


def test_the_copy_is_scanned_only_after_a_batch_wrote_into_it(tmp_path, monkeypatch):
    """Batch 1 only removes (the copy's a.py deleted, as the uninstall does): its rewrite scans nothing. Batch 2
    installs: its symlink check reads the scan the copy was made from (the live venv's link to a folder outside is
    there, under the copy), and its rewrite scans the copy and makes the console script it wrote name the live venv.
    Batch 3 comes after a batch that wrote: its symlink check scans the copy. Each batch journals "rewritten"."""
    root = _small_venv(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(str(tmp_path / "elsewhere"), os.path.join(root, "lib", "outside"))
    flow = _Flow(run=SimpleNamespace(options=_options(root), runner=SubprocessRunner()), root=root,
                 state_dir=os.path.join(root, ".cuda_venv"))
    flow.start()
    scanned = []

    def recorded(name, real):
        def call(tree, *args, **kwargs):
            scanned.append((name, tree))
            return real(tree, *args, **kwargs)
        return call
    monkeypatch.setattr(swap_run, "rewrite_copy_paths", recorded("rewrite", swap_run.rewrite_copy_paths))
    monkeypatch.setattr(swap_run, "scan_tree", recorded("scan", swap_run.scan_tree))
    removing = _CopyBatch(flow, 1)
    os.unlink(os.path.join(flow.copy, "lib", "python3.12", "site-packages", "a.py"))
    removing.action(kind="remove", names=["a"], rc=0)
    removing.probe()
    assert scanned == []
    installing = _CopyBatch(flow, 2)
    assert installing.entries is flow.entries and escaping_directory_links(flow.copy, installing.entries) == ["lib/outside"]
    script = os.path.join(flow.copy, "bin", "tool")
    os.mkdir(os.path.dirname(script))
    with open(script, "w") as handle:
        handle.write("#!%s/bin/python\nimport a\n" % flow.copy)
    installing.action(kind="install", names=["tool"], rc=0)
    installing.probe()
    assert scanned == [("rewrite", flow.copy)]
    with open(script) as handle:
        assert handle.read() == "#!%s/bin/python\nimport a\n" % root
    assert flow.rewritten == ["bin/tool"]
    after_a_write = _CopyBatch(flow, 3)
    assert "bin/tool" in after_a_write.entries and scanned == [("rewrite", flow.copy), ("scan", flow.copy)]
    steps = [(r.get("batch"), r["step"], r.get("files")) for r in flow.journal.records() if r["step"] != "begin"]
    assert steps == [(None, "copied", None), (1, "batch", None), (1, "action", None), (None, "rewritten", 0),
                     (2, "batch", None), (2, "action", None), (None, "rewritten", 1), (3, "batch", None)]
