# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for install_times: the span each install wrote, from real dist-info folders, and when it cannot be trusted."""

from __future__ import annotations

import os

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import locate_entries, read_distributions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.install_times import (
    FUTURE_SLACK, InstallStamp, iso_time, read_stamps)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.record_check import check_all
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist

T = 1780000000.25
NOW = T + 3600
OWN = ("INSTALLER", "RECORD", "REQUESTED")


def stamps(site, stats=None):
    dists = read_distributions([str(site)])
    return {os.path.basename(k): v for k, v in read_stamps(dists, locate_entries(dists, str(site)), stats, now=NOW).items()}


def at(path, seconds):
    os.utime(path, (seconds, seconds))


def installed(site, name, installer, files, start, end):
    """A dist-info written by ``installer``: its files at ``start`` (``files``: {path: bytes}), its own at ``end``."""
    folder = make_dist(str(site), name, "1.0", files, installer=(installer + "\n").encode(), requested=True)
    for path in files:
        at(os.path.join(str(site), path), start)
    at(os.path.join(folder, "METADATA"), start)
    for own in OWN:
        at(os.path.join(folder, own), end)
    at(folder, end)
    return folder


def test_pip_spans_its_first_to_its_last_file_uv_only_what_it_writes_itself(tmp_path):
    installed(tmp_path, "torch", "pip", {"torch/__init__.py": b"x = 1\n", "torch/lib/big.so": b"\0" * 4096}, T, T + 40)
    at(str(tmp_path / "torch" / "lib" / "big.so"), T + 30)
    # uv: the files it links keep the cache's time, an earlier run's
    installed(tmp_path, "triton", "uv", {"triton/__init__.py": b"y = 2\n"}, T - 86400, T + 50)
    assert stamps(tmp_path) == {"torch-1.0.dist-info": InstallStamp(T, "every file pip wrote", None, T + 40),
                                "triton-1.0.dist-info": InstallStamp(T + 50, "the files uv writes into its dist-info",
                                                                     None, T + 50)}


def test_files_that_may_be_another_writers_do_not_count(tmp_path):
    """A .pyc (Python rewrites it), a size other than RECORD's, a time after the install's end (a hand edit), a path
    a distribution installed later lists too (uv linked it from a cache filled before): none moves pip's start."""
    files = {"a/__init__.py": b"x = 1\n", "a/__pycache__/__init__.cpython-311.pyc": b"pyc", "nvidia/__init__.py": b"",
             "a/edited.py": b"1234", "a/later.py": b"5678"}
    folder = installed(tmp_path, "a", "pip", files, T + 10, T + 20)
    installed(tmp_path, "b", "uv", {"nvidia/__init__.py": b"", "b/__init__.py": b""}, T + 5, T + 110)
    at(str(tmp_path / "a" / "__pycache__" / "__init__.cpython-311.pyc"), T)
    at(str(tmp_path / "nvidia" / "__init__.py"), T + 5)
    with open(str(tmp_path / "a" / "edited.py"), "wb") as handle:
        handle.write(b"12345")
    at(str(tmp_path / "a" / "edited.py"), T + 2)
    at(str(tmp_path / "a" / "later.py"), T + 3600 - 60)
    at(folder, T + 20)
    found = stamps(tmp_path)
    assert (found["a-1.0.dist-info"].time, found["a-1.0.dist-info"].end) == (T + 10, T + 20)
    assert (found["b-1.0.dist-info"].time, found["b-1.0.dist-info"].end) == (T + 110, T + 110)


def test_a_path_two_records_list_counts_for_the_one_installed_last(tmp_path):
    """The cu12 four force-reinstalled over the cu13 four: the shared libraries are the cu12 install's writes."""
    installed(tmp_path, "cu13", "pip", {"nvidia/cudnn/lib/libcudnn.so.9": b"13", "cu13/x.py": b""}, T + 100, T + 110)
    installed(tmp_path, "cu12", "pip", {"nvidia/cudnn/lib/libcudnn.so.9": b"12", "cu12/x.py": b""}, T + 202, T + 210)
    at(str(tmp_path / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"), T + 195)  # the first file the cu12 install wrote
    found = stamps(tmp_path)
    assert (found["cu12-1.0.dist-info"].time, found["cu13-1.0.dist-info"].time) == (T + 195, T + 100)


def test_the_record_checks_stats_are_reused_not_read_again(tmp_path):
    installed(tmp_path, "a", "pip", {"a/__init__.py": b"x = 1\n"}, T, T + 1)
    dists = read_distributions([str(tmp_path)])
    locations = locate_entries(dists, str(tmp_path))
    stats: dict = {}
    check_all(dists, str(tmp_path), "size", locations=locations, stats=stats)
    listed = set(stats)
    at(str(tmp_path / "a" / "__init__.py"), T - 500)  # after the RECORD check: what it read stands
    [stamp] = read_stamps(dists, locations, stats, now=NOW).values()
    assert stamp.time == T
    assert set(stats) - listed == {dists[0].dist_info, os.path.join(dists[0].dist_info, "direct_url.json"),
                                   os.path.join(dists[0].dist_info, "uv_cache.json")}  # the folder and the unlisted


def test_without_installer_record_then_the_folder_tell_it(tmp_path):
    with_record = make_dist(str(tmp_path), "a", "1", installer=None)
    for name in ("METADATA", "RECORD"):
        at(os.path.join(with_record, name), T)
    at(with_record, T + 1)
    bare = make_dist(str(tmp_path), "b", "1", installer=None)
    os.remove(os.path.join(bare, "RECORD"))
    at(bare, T + 5)
    found = stamps(tmp_path)
    assert (found["a-1.dist-info"].time, found["a-1.dist-info"].end) == (T, T + 1)
    assert (found["b-1.dist-info"].time, found["b-1.dist-info"].end) == (T + 5, T + 5)


def test_a_time_after_the_clock_beyond_the_slack_is_a_jump_and_unknown(tmp_path):
    folder = installed(tmp_path, "a", "pip", {"a/__init__.py": b""}, NOW + FUTURE_SLACK + 1, NOW + FUTURE_SLACK + 1)
    stamp = stamps(tmp_path)["a-1.0.dist-info"]
    assert (stamp.time, stamp.problem) == (None, "the install's last write (every file pip wrote) is at %s, "
                                           "after this host's clock (%s): a clock jumped" % (iso_time(NOW + FUTURE_SLACK + 1), iso_time(NOW)))
    # another host's clock a minute ahead (a venv written over NFS): trusted
    for path in [folder, os.path.join(folder, "METADATA"), str(tmp_path / "a" / "__init__.py")] + [
            os.path.join(folder, own) for own in OWN]:
        at(path, NOW + 60)
    assert stamps(tmp_path)["a-1.0.dist-info"] == InstallStamp(NOW + 60, "every file pip wrote", None, NOW + 60)


def test_record_older_than_installer_is_out_of_order(tmp_path):
    folder = make_dist(str(tmp_path), "a", "1")
    for path in (folder, os.path.join(folder, "METADATA"), os.path.join(folder, "INSTALLER")):
        at(path, T)
    at(os.path.join(folder, "RECORD"), T - 1.5)
    stamp = stamps(tmp_path)["a-1.dist-info"]
    assert (stamp.time, stamp.end) == (T - 1.5, T)  # kept: the history marks its stretch unknown
    assert stamp.problem == ("RECORD (%s) is older than INSTALLER (%s), which installers write first: the times are "
                             "out of order" % (iso_time(T - 1.5), iso_time(T)))
    at(os.path.join(folder, "RECORD"), T - 0.5)  # within the slack: same jiffy, coarse clocks
    assert stamps(tmp_path)["a-1.dist-info"].problem is None


def test_a_package_file_written_after_installer_within_a_second_is_a_copys_order(tmp_path):
    """pip writes INSTALLER after every file; ``cp -r`` writes a package folder after its dist-info as often as not."""
    installed(tmp_path, "a", "pip", {"a/__init__.py": b"x = 1\n"}, T, T + 1)
    at(str(tmp_path / "a" / "__init__.py"), T + 1.3)
    stamp = stamps(tmp_path)["a-1.0.dist-info"]
    assert (stamp.time, stamp.end, stamp.problem) == (T, T + 1, (
        "a/__init__.py was written after INSTALLER (%s), which pip writes after every file: the times are out of "
        "order (a copy reset them?)" % iso_time(T + 1)))
    at(str(tmp_path / "a" / "__init__.py"), T + 1.005)  # the same coarse clock tick as INSTALLER
    assert stamps(tmp_path)["a-1.0.dist-info"].problem is None
    at(str(tmp_path / "a" / "__init__.py"), T + 600)  # a hand edit, long after: not the install's, no disorder
    assert stamps(tmp_path)["a-1.0.dist-info"] == InstallStamp(T, "every file pip wrote", None, T + 1)


def test_iso_time_is_utc_to_the_millisecond():
    assert iso_time(T) == "2026-05-28T20:26:40.250Z"
