# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The repair journal: exact records, torn last lines, open batches, reset."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal, JournalError, new_run_id

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def state(tmp_path):
    path = tmp_path / ".cuda_venv"
    path.mkdir()
    return path


def lines(state):
    return (state / "journal.jsonl").read_text().splitlines()


def without_time(records):
    for record in records:
        assert TIME.match(record.pop("time"))
    return records


def test_records_are_json_lines_with_run_batch_phase(state):
    journal = Journal(str(state), run="r1")
    journal.append("begin", batch=1, snapshot="r1-batch1")
    journal.append("apply", argv=["pip", "uninstall", "-y", "--", "nvidia-cudnn-cu12"])
    journal.append("done", batch=None)
    records = [json.loads(line) for line in lines(state)]
    assert without_time(records) == [
        {"run": "r1", "batch": 1, "phase": "begin", "snapshot": "r1-batch1"},
        {"run": "r1", "batch": 1, "phase": "apply", "argv": ["pip", "uninstall", "-y", "--", "nvidia-cudnn-cu12"]},
        {"run": "r1", "batch": None, "phase": "done"},
    ]
    assert journal.records() == [json.loads(line) for line in lines(state)]
    assert stat.S_IMODE(os.stat(state / "journal.jsonl").st_mode) == 0o600


def test_unknown_phase_and_begin_without_batch_are_rejected(state):
    journal = Journal(str(state), run="r1")
    with pytest.raises(JournalError) as err:
        journal.append("finish")
    assert str(err.value) == "unknown journal phase 'finish': use one of begin, snapshot, apply, action, probe, commit, rollback, done, swap"
    with pytest.raises(JournalError) as err:
        journal.append("begin")
    assert str(err.value) == "journal phase 'begin' needs an integer batch number, got None"
    assert not (state / "journal.jsonl").exists()


def test_torn_last_line_is_ignored_and_cut_by_the_next_append(state):
    journal = Journal(str(state), run="r1")
    journal.append("begin", batch=1)
    with open(state / "journal.jsonl", "ab") as handle:
        handle.write(b'{"run": "r1", "batch": 1, "pha')  # a crash in the middle of a write
    assert [record["phase"] for record in journal.records()] == ["begin"]
    assert journal.open_batch()["last_phase"] == "begin"
    journal.append("snapshot")
    assert [json.loads(line)["phase"] for line in lines(state)] == ["begin", "snapshot"]


def test_a_broken_line_before_the_last_is_an_error(state):
    (state / "journal.jsonl").write_bytes(b'{"run": "r1", "batch": 1, "phase": "begin"}\nnot json\n{"phase": "done"}\n')
    with pytest.raises(JournalError) as err:
        Journal(str(state)).records()
    assert str(err.value) == "journal %s line 2 is not a JSON record; move the file aside to start afresh" % (state / "journal.jsonl")


def test_missing_journal_has_no_records(state):
    journal = Journal(str(state))
    assert journal.records() == []
    assert journal.open_batch() is None


def test_open_batch_is_the_last_batch_neither_committed_nor_rolled_back(state):
    journal = Journal(str(state), run="r1")
    journal.append("begin", batch=1, snapshot="r1-batch1")
    journal.append("snapshot")
    journal.append("commit")
    assert journal.open_batch() is None
    journal.append("begin", batch=2, snapshot="r1-batch2")
    journal.append("snapshot")
    journal.append("apply")
    journal.append("action", argv=["pip", "install"], rc=0)
    pending = journal.open_batch()
    assert (pending["run"], pending["batch"], pending["last_phase"]) == ("r1", 2, "action")
    assert [record["phase"] for record in pending["records"]] == ["begin", "snapshot", "apply", "action"]
    journal.append("rollback", reason="probe failed")
    assert journal.open_batch() is None


def test_records_of_another_run_do_not_close_a_batch(state):
    crashed = Journal(str(state), run="r1")
    crashed.append("begin", batch=1)
    later = Journal(str(state), run="r2")
    later.append("commit", batch=1)
    assert [(b["run"], b["batch"]) for b in later.open_batches()] == [("r1", 1)]
    later.append("rollback", run="r1", batch=1, reason="recovered")
    assert later.open_batches() == []


def test_reset_keeps_the_previous_journal(state):
    journal = Journal(str(state), run="r1")
    journal.append("begin", batch=1)
    with pytest.raises(JournalError) as err:
        journal.reset()
    assert str(err.value) == "journal %s still has batch 1 of run r1 open; recover or roll it back before reset" % (state / "journal.jsonl")
    journal.append("commit")
    journal.append("done", batch=None)
    journal.reset()
    assert not (state / "journal.jsonl").exists()
    assert [json.loads(line)["phase"] for line in (state / "journal.prev.jsonl").read_text().splitlines()] == ["begin", "commit", "done"]
    assert journal.records() == []


def test_run_ids_are_distinct_and_safe_in_file_names():
    ids = set(new_run_id() for attempt in range(50))
    assert len(ids) > 1
    assert all(re.match(r"^\d{8}T\d{6}Z-\d+-[0-9a-f]{4}$", run) for run in ids)
