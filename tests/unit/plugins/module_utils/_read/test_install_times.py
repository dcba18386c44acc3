# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for history: install times from real dist-info folders, their evidence and when they cannot be trusted."""

from __future__ import annotations

import os

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.distributions import read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.install_times import InstallStamp, iso_time, read_stamps
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist

T = 1780000000.25
NOW = T + 3600


def stamps(site):
    return {os.path.basename(k): v for k, v in read_stamps(read_distributions([str(site)]), now=NOW).items()}


def at(path, seconds):
    os.utime(path, (seconds, seconds))


def test_installer_mtime_is_the_install_time_and_a_later_record_rewrite_does_not_move_it(tmp_path):
    folder = make_dist(str(tmp_path), "torch", "2.9.1", {"torch/__init__.py": b"x = 1\n"})
    at(os.path.join(folder, "INSTALLER"), T)
    at(os.path.join(folder, "RECORD"), T + 86400 - 3600)  # a repair's RECORD trim, a day later
    at(os.path.join(folder, "METADATA"), T - 86400 * 30)  # uv: the cache's time
    name = os.path.basename(folder)
    size = sum(os.path.getsize(os.path.join(str(tmp_path), p))
               for p in ("torch/__init__.py", name + "/METADATA", name + "/INSTALLER"))
    assert stamps(tmp_path) == {"torch-2.9.1.dist-info": InstallStamp(T, "INSTALLER mtime", None, size)}


def test_without_installer_record_then_the_folder_tell_it(tmp_path):
    with_record = make_dist(str(tmp_path), "a", "1", installer=None)
    at(os.path.join(with_record, "RECORD"), T)
    bare = make_dist(str(tmp_path), "b", "1", installer=None)
    os.remove(os.path.join(bare, "RECORD"))
    at(bare, T + 5)
    found = stamps(tmp_path)
    assert (found["a-1.dist-info"].time, found["a-1.dist-info"].evidence) == (T, "RECORD mtime")
    assert (found["b-1.dist-info"].time, found["b-1.dist-info"].evidence) == (T + 5, "dist-info folder mtime")


def test_a_time_after_the_clock_is_a_jump_and_unknown(tmp_path):
    folder = make_dist(str(tmp_path), "a", "1")
    at(os.path.join(folder, "INSTALLER"), NOW + 301)
    at(os.path.join(folder, "RECORD"), NOW + 301)
    stamp = stamps(tmp_path)["a-1.dist-info"]
    assert (stamp.time, stamp.problem) == (None, "INSTALLER mtime is %s, after this host's clock (%s): a clock jumped" % (
        iso_time(NOW + 301), iso_time(NOW)))


def test_record_older_than_installer_is_out_of_order(tmp_path):
    folder = make_dist(str(tmp_path), "a", "1")
    at(os.path.join(folder, "INSTALLER"), T)
    at(os.path.join(folder, "RECORD"), T - 1.5)
    stamp = stamps(tmp_path)["a-1.dist-info"]
    assert stamp.time is None
    assert stamp.problem == ("RECORD (%s) is older than INSTALLER (%s), which installers write first: the times are "
                             "out of order" % (iso_time(T - 1.5), iso_time(T)))
    at(os.path.join(folder, "RECORD"), T - 0.5)  # within the slack: same jiffy, coarse clocks
    assert stamps(tmp_path)["a-1.dist-info"].time == T


def test_iso_time_is_utc_to_the_millisecond():
    assert iso_time(T) == "2026-05-28T20:26:40.250Z"
