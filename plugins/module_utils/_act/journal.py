# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Append-only JSON-lines journal of a repair run, each record fsync'ed before it counts.

Private to the gpuops.cuda_venv collection: not a public API.

One record per line: ``{"run": id, "batch": n, "phase": p, "time": t, ...details}``.
A batch is open from its ``begin`` until its ``commit`` or ``rollback``; a run
ends with ``done`` and ``reset()``. A crash can tear the last line (a record
whose write never returned): reading ignores it and the next append cuts it off.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import List, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.durable import fsync_dir
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import JOURNAL_NAME

PREVIOUS_NAME = "journal.prev.jsonl"
PHASES = ("begin", "snapshot", "apply", "action", "probe", "commit", "rollback", "done", "swap")
CLOSING_PHASES = ("commit", "rollback")


class JournalError(CudaVenvError):
    """The journal is unreadable or was used out of order."""


def new_run_id() -> str:
    """Sortable, readable and safe in file names: 20260501T101500Z-1234-9f3a."""
    return "%s-%d-%04x" % (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), os.getpid(), random.getrandbits(16))


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Journal:
    """The journal in ``state_dir``; records appended by this object carry ``run``."""

    def __init__(self, state_dir: str, run: Optional[str] = None) -> None:
        self.state_dir = state_dir
        self.path = os.path.join(state_dir, JOURNAL_NAME)
        self.run = run or new_run_id()
        self.batch = None  # type: Optional[int]

    def append(self, phase: str, **data) -> dict:
        """Write one record and fsync it. ``batch`` defaults to the last batch this object began."""
        if phase not in PHASES:
            raise JournalError("unknown journal phase %r: use one of %s" % (phase, ", ".join(PHASES)))
        batch = data.pop("batch", self.batch)
        if phase == "begin":
            if not isinstance(batch, int):
                raise JournalError("journal phase 'begin' needs an integer batch number, got %r" % (batch,))
            self.batch = batch
        record = {"run": data.pop("run", self.run), "batch": batch, "phase": phase, "time": utc_now()}
        record.update(data)
        line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
        self._write(line)
        return record

    def records(self) -> List[dict]:
        """Every complete record, oldest first; a torn last line is ignored."""
        return _parse(self.path, _read(self.path))

    def open_batches(self) -> List[dict]:
        """Batches begun and neither committed nor rolled back, oldest first."""
        batches = {}  # type: dict
        for record in self.records():
            key = (record.get("run"), record.get("batch"))
            if record.get("phase") == "begin":
                batches.pop(key, None)
                batches[key] = {"run": key[0], "batch": key[1], "records": [record]}
            elif key in batches:
                batches[key]["records"].append(record)
                if record.get("phase") in CLOSING_PHASES:
                    del batches[key]
        for batch in batches.values():
            batch["last_phase"] = batch["records"][-1]["phase"]
        return list(batches.values())

    def open_batch(self) -> Optional[dict]:
        """The last batch begun and still open: {run, batch, last_phase, records}; None when all are closed."""
        batches = self.open_batches()
        return batches[-1] if batches else None

    def reset(self) -> None:
        """After a clean run: keep this journal as journal.prev.jsonl and start empty."""
        pending = self.open_batch()
        if pending is not None:
            raise JournalError(
                "journal %s still has batch %s of run %s open; recover or roll it back before reset" % (self.path, pending["batch"], pending["run"])
            )
        if os.path.exists(self.path):
            os.replace(self.path, os.path.join(self.state_dir, PREVIOUS_NAME))
            fsync_dir(self.state_dir)
        self.batch = None

    def _write(self, line: bytes) -> None:
        created = not os.path.exists(self.path)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            _cut_torn_tail(fd)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.state_dir)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return b""


def _parse(path: str, data: bytes) -> List[dict]:
    lines = data.split(b"\n")
    # A record counts once its newline is written; anything after the last newline is torn.
    complete = lines[:-1]
    records = []
    for number, line in enumerate(complete, 1):
        try:
            record = json.loads(line.decode("utf-8"))
        except ValueError:
            raise JournalError("journal %s line %d is not a JSON record; move the file aside to start afresh" % (path, number)) from None
        if not isinstance(record, dict):
            raise JournalError("journal %s line %d is not a JSON object; move the file aside to start afresh" % (path, number))
        records.append(record)
    return records


def _cut_torn_tail(fd: int) -> None:
    """Drop bytes after the last newline: a record whose write never finished."""
    size = os.fstat(fd).st_size
    keep = os.pread(fd, size, 0).rfind(b"\n") + 1
    if keep != size:
        os.ftruncate(fd, keep)
