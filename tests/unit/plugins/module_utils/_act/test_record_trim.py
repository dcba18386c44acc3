# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for record_trim.drop_record_entries: RECORD rows cut before an installer reads them."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.record_trim import drop_record_entries

RECORD = ('evil/__init__.py,sha256=abc,6\n'
          '../../../../outside/victim.txt,,\n'
          '"link/a,b.txt",,\n'
          'evil-1.0.dist-info/RECORD,,\n')


def test_the_listed_rows_go_and_the_rest_stay_byte_for_byte(tmp_path):
    record = tmp_path / "RECORD"
    record.write_text(RECORD)
    record.chmod(0o640)
    assert drop_record_entries(str(record), ["../../../../outside/victim.txt", "link/a,b.txt"]) == 2
    assert record.read_text() == "evil/__init__.py,sha256=abc,6\nevil-1.0.dist-info/RECORD,,\n"
    assert stat.S_IMODE(record.stat().st_mode) == 0o640
    assert sorted(os.listdir(str(tmp_path))) == ["RECORD"]


def test_a_shared_inode_is_never_written(tmp_path):
    record = tmp_path / "RECORD"
    record.write_text(RECORD)
    cache = tmp_path / "cache-copy"
    os.link(str(record), str(cache))
    drop_record_entries(str(record), ["../../../../outside/victim.txt"])
    assert cache.read_text() == RECORD
    assert record.stat().st_ino != cache.stat().st_ino


def test_a_missing_record_raises_and_leaves_nothing_behind(tmp_path):
    with pytest.raises(FileNotFoundError):
        drop_record_entries(str(tmp_path / "RECORD"), ["x"])
    assert os.listdir(str(tmp_path)) == []
