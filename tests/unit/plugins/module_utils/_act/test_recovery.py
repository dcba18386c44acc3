# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Batches killed with SIGKILL at every interesting point, then recovered to the pre-batch tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import ENV_VAR
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.recovery import JournaledBatch, RecoveryError, recover
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.snapshot import SnapshotError
from ansible_collections.gpuops.cuda_venv.tests.support import tree_digest as td

# One repair batch as the module runs it; CUDA_VENV_CRASH_AT picks where it dies.
DRIVER = """
import sys
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import crash_point
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.recovery import JournaledBatch, recover
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.venv_lock import VenvLock
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import modify_tree

root, state, ending = sys.argv[1:4]
with VenvLock(root):
    if ending == "recover":
        recover(root, state)
        sys.exit(0)
    batch = JournaledBatch.begin(root, state, Journal(state, run="crashed"), 1, plan=["uninstall nvidia-cudnn-cu12"])
    batch.apply()
    modify_tree(root, after_each=lambda: crash_point("driver.modify"))
    batch.action(argv=["pip", "install", "--", "x"], rc=0)
    batch.probe(ok=ending == "commit")
    if ending == "commit":
        batch.commit()
    else:
        batch.rollback("probe failed")
"""

SITE = td.SITE


@pytest.fixture
def venv(tmp_path):
    root = tmp_path / "venv"
    root.mkdir()
    td.build_sample_tree(str(root))
    (root / td.STATE_DIR_NAME).mkdir(mode=0o700)
    return str(root)


def state_of(venv):
    return os.path.join(venv, td.STATE_DIR_NAME)


def run_driver(venv, crash_at, ending="rollback"):
    env = td.child_env(**{ENV_VAR: crash_at}) if crash_at else td.child_env()
    proc = subprocess.run([sys.executable, "-c", DRIVER, venv, state_of(venv), ending], env=env, stderr=subprocess.PIPE, check=False)
    return proc.returncode, proc.stderr.decode()


def snapshots(venv):
    path = os.path.join(state_of(venv), "snapshots")
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def check_recovered(venv, before, result, last_phase, action):
    reason = "recovered interrupted run crashed (batch 1, last phase %s)" % last_phase
    if action == "discarded incomplete snapshot":
        reason += "; its snapshot was incomplete and the venv had not been changed"
    assert (result["run"], result["batch"], result["last_phase"], result["action"], result["reason"]) == ("crashed", 1, last_phase, action, reason)
    assert td.tree_state(venv) == before
    journal = Journal(state_of(venv), run="checker")
    last = journal.records()[-1]
    assert (last["run"], last["batch"], last["phase"], last["reason"], last["recovered_by"]) == ("crashed", 1, "rollback", reason, "checker")
    assert journal.open_batch() is None
    assert snapshots(venv) == []


@pytest.mark.parametrize("crash_at", ["batch.begun", "snapshot.link@1", "snapshot.link@6", "snapshot.manifest"])
def test_crash_while_taking_the_snapshot_discards_it(venv, crash_at):
    before = td.tree_state(venv)
    rc, err = run_driver(venv, crash_at)
    assert rc == -signal.SIGKILL, err
    assert snapshots(venv) == (["crashed-batch1"] if crash_at != "batch.begun" else [])
    result = recover(venv, state_of(venv), Journal(state_of(venv), run="checker"))
    check_recovered(venv, before, result, "begin", "discarded incomplete snapshot")
    assert "undone" not in result


def test_crash_after_the_snapshot_completed_restores_it(venv):
    before = td.tree_state(venv)
    rc, err = run_driver(venv, "batch.snapshot_taken")
    assert rc == -signal.SIGKILL, err
    result = recover(venv, state_of(venv), Journal(state_of(venv), run="checker"))
    check_recovered(venv, before, result, "begin", "restored snapshot")
    assert result["undone"] == {"added": 0, "added_paths": [], "removed": 0, "removed_paths": [], "modified": 0, "modified_paths": []}


@pytest.mark.parametrize("crash_at", ["driver.modify@1", "driver.modify@5", "driver.modify@11"])
def test_crash_while_applying_restores_the_snapshot(venv, crash_at):
    before = td.tree_state(venv)
    rc, err = run_driver(venv, crash_at)
    assert rc == -signal.SIGKILL, err
    assert td.tree_state(venv) != before
    result = recover(venv, state_of(venv), Journal(state_of(venv), run="checker"))
    check_recovered(venv, before, result, "apply", "restored snapshot")
    if crash_at == "driver.modify@1":
        assert result["undone"] == {
            "added": 0,
            "added_paths": [],
            "removed": 0,
            "removed_paths": [],
            "modified": 1,
            "modified_paths": [SITE + "/torch/__init__.py"],
        }


@pytest.mark.parametrize(
    "crash_at",
    [
        "restore.remove@1",
        "restore.remove@6",
        "restore.mkdir@2",
        "restore.replace@1",
        "restore.replace@4",
        "restore.metadata@1",
        "restore.metadata@5",
        "batch.restored",
    ],
)
def test_crash_while_rolling_back_finishes_the_restore(venv, crash_at):
    before = td.tree_state(venv)
    rc, err = run_driver(venv, crash_at)
    assert rc == -signal.SIGKILL, err
    result = recover(venv, state_of(venv), Journal(state_of(venv), run="checker"))
    check_recovered(venv, before, result, "probe", "restored snapshot")


def test_recovery_itself_killed_half_way_is_finished_by_the_next_one(venv):
    before = td.tree_state(venv)
    assert run_driver(venv, "driver.modify@11")[0] == -signal.SIGKILL
    rc, err = run_driver(venv, "restore.replace@2", ending="recover")
    assert rc == -signal.SIGKILL, err
    assert td.tree_state(venv) != before
    result = recover(venv, state_of(venv), Journal(state_of(venv), run="checker"))
    check_recovered(venv, before, result, "apply", "restored snapshot")


def test_crash_after_rollback_was_journaled_only_drops_the_snapshot(venv):
    before = td.tree_state(venv)
    assert run_driver(venv, "batch.rolled_back")[0] == -signal.SIGKILL
    assert snapshots(venv) == ["crashed-batch1"]
    assert td.tree_state(venv) == before
    assert recover(venv, state_of(venv)) == {"action": "discarded stale snapshots", "stale_snapshots": ["crashed-batch1"]}
    assert snapshots(venv) == []
    assert recover(venv, state_of(venv)) is None


def test_crash_after_commit_keeps_the_committed_tree(venv):
    before = td.tree_state(venv)
    assert run_driver(venv, "batch.committed", ending="commit")[0] == -signal.SIGKILL
    committed = td.tree_state(venv)
    assert committed != before and SITE + "/extra.py" in committed
    assert recover(venv, state_of(venv)) == {"action": "discarded stale snapshots", "stale_snapshots": ["crashed-batch1"]}
    assert td.tree_state(venv) == committed


def test_uninterrupted_rollback_journals_what_it_undid(venv):
    before = td.tree_state(venv)
    rc, err = run_driver(venv, None)
    assert rc == 0, err
    assert td.tree_state(venv) == before
    records = Journal(state_of(venv)).records()
    assert [record["phase"] for record in records] == ["begin", "snapshot", "apply", "action", "probe", "rollback"]
    assert records[0]["plan"] == ["uninstall nvidia-cudnn-cu12"]
    assert records[1]["files"] == 11 and records[1]["copied"] == 0
    assert (records[-1]["reason"], records[-1]["undone"]["added"], records[-1]["undone"]["removed"]) == ("probe failed", 7, 6)
    assert recover(venv, state_of(venv)) is None


def test_nothing_pending_returns_none(venv):
    assert recover(venv, state_of(venv)) is None


def test_open_batch_without_its_snapshot_cannot_be_recovered(venv):
    journal = Journal(state_of(venv), run="lost")
    journal.append("begin", batch=3, snapshot="lost-batch3")
    journal.append("snapshot")
    journal.append("apply")
    with pytest.raises(RecoveryError) as err:
        recover(venv, state_of(venv))
    assert str(err.value) == (
        "venv %s was left mid-change by run lost (batch 3, last phase apply) and its snapshot %s is missing or incomplete; "
        "it cannot be rolled back: rebuild the venv" % (venv, os.path.join(state_of(venv), "snapshots", "lost-batch3"))
    )


def test_a_damaged_snapshot_stops_recovery_with_a_way_out(venv):
    assert run_driver(venv, "driver.modify@1")[0] == -signal.SIGKILL
    with open(os.path.join(venv, "pyvenv.cfg"), "ab") as handle:
        handle.write(b"written in place\n")
    with pytest.raises(RecoveryError) as err:
        recover(venv, state_of(venv))
    assert str(err.value) == (
        "rolling back interrupted run crashed (batch 1) failed: cannot restore %s: 1 file(s) were written in place, "
        "so the snapshot lost their old bytes: pyvenv.cfg; nothing was restored; reinstall the distributions that own them; "
        "every run retries it until it succeeds or the journal %s is moved aside (which abandons that rollback)"
    ) % (venv, os.path.join(state_of(venv), "journal.jsonl"))


def test_batch_begin_failure_closes_the_batch(venv):
    # A file where the snapshots directory belongs makes taking the snapshot fail.
    with open(os.path.join(state_of(venv), "snapshots"), "w", encoding="utf-8") as handle:
        handle.write("in the way")
    journal = Journal(state_of(venv), run="r")
    with pytest.raises(SnapshotError) as err:
        JournaledBatch.begin(venv, state_of(venv), journal, 1)
    assert str(err.value).startswith("cannot snapshot %s into %s: " % (venv, os.path.join(state_of(venv), "snapshots", "r-batch1")))
    records = journal.records()
    assert [record["phase"] for record in records] == ["begin", "rollback"]
    assert records[-1]["reason"] == "snapshot failed: %s" % err.value
    assert journal.open_batch() is None


CRASH_CHILD = """
import sys
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.crash_points import crash_point
for n in range(1, 4):
    crash_point("a")
    crash_point("b")
    print(n, flush=True)
"""


@pytest.mark.parametrize(("spec", "printed"), [("", "1\n2\n3\n"), ("b", ""), ("a@2", "1\n"), ("x, b@3", "1\n2\n")])
def test_crash_point_kills_on_the_named_hit(spec, printed):
    proc = subprocess.run([sys.executable, "-c", CRASH_CHILD], env=td.child_env(**{ENV_VAR: spec}), stdout=subprocess.PIPE, check=False)
    assert (proc.returncode, proc.stdout.decode()) == ((0 if not spec else -signal.SIGKILL), printed)
