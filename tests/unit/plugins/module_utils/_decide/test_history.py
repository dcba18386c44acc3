# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for history: grouping dist-info times into installer runs, and "unknown" rather than a wrong claim."""

from __future__ import annotations

from dataclasses import replace

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.history import GAP, RATE, transactions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.install_times import InstallStamp
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import dist

T = 1780000000.125


def run(*items):
    """[(name, installer, time, size, requested)] -> (dists, stamps)."""
    dists, stamps = [], {}
    for name, installer, when, size, requested in items:
        one = replace(dist(name, "1.0", installer=installer), requested=requested)
        dists.append(one)
        stamps[one.dist_info] = InstallStamp(when, "INSTALLER mtime", None, size)
    return dists, stamps


def table(dists, stamps):
    return [(t["number"], t["time"], t["installer"], t["distributions"], t["requested"])
            for t in (x.as_dict() for x in transactions(dists, stamps))]


def test_runs_split_on_gaps_longer_than_their_bytes_take_and_come_oldest_first():
    big = 50 * RATE  # a 500 MB wheel: 50 s to unpack at the pessimistic rate
    dists, stamps = run(("late", "pip", T + 100, 0, True),
                        ("torch", "pip", T, 0, True), ("nvidia-cudnn-cu12", "pip", T + 40, big, False),
                        ("filelock", "pip", T + 40 + GAP, 0, False))
    assert table(dists, stamps) == [
        (1, "2026-05-28T20:26:40.125Z", "pip", ["torch 1.0", "nvidia-cudnn-cu12 1.0", "filelock 1.0"], ["torch 1.0"]),
        (2, "2026-05-28T20:28:20.125Z", "pip", ["late 1.0"], ["late 1.0"])]
    assert transactions(dists, stamps)[0].as_dict()["duration"] == 40 + GAP
    dists, stamps = run(("a", "pip", T, 0, True), ("b", "pip", T + GAP + 0.01, 0, True))
    assert [t[0] for t in table(dists, stamps)] == [1, 2]


def test_an_installer_change_beyond_the_gap_is_a_new_transaction():
    dists, stamps = run(("a", "uv", T, 0, True), ("b", "uv", T + 0.002, 0, True), ("c", "pip", T + 5, 0, True))
    assert [(t[2], t[3]) for t in table(dists, stamps)] == [("uv", ["a 1.0", "b 1.0"]), ("pip", ["c 1.0"])]


def test_installers_taking_turns_within_one_window_are_runs_up_to_three_stretches():
    """The real acceptance build (tests/acceptance): python -m venv (ensurepip), uv 0.2 s later, pip 2.5 s after uv
    with a 234 MB wheel first: one window, three runs."""
    big = 234 * 1024 * 1024
    dists, stamps = run(("setuptools", "pip", T, 0, True), ("pip", "pip", T + 0.83, 0, True),
                        ("torch", "uv", T + 1.0625, 0, True), ("triton", "uv", T + 1.125, 0, True),
                        ("nvidia-cusparselt-cu13", "pip", T + 3.7, big, True), ("nvidia-cublas", "pip", T + 9.3, 2 * big, False))
    assert [(t[0], t[2], t[3], t[4]) for t in table(dists, stamps)] == [
        (1, "pip", ["setuptools 1.0", "pip 1.0"], ["setuptools 1.0", "pip 1.0"]),
        (2, "uv", ["torch 1.0", "triton 1.0"], ["torch 1.0", "triton 1.0"]),
        (3, "pip", ["nvidia-cusparselt-cu13 1.0", "nvidia-cublas 1.0"], ["nvidia-cusparselt-cu13 1.0"])]
    assert [t[1] for t in table(dists, stamps)] == [
        "2026-05-28T20:26:40.125Z", "2026-05-28T20:26:41.187Z", "2026-05-28T20:26:43.825Z"]


def test_installers_taking_turns_more_often_within_one_window_are_unknown_not_runs():
    dists, stamps = run(("a", "uv", T, 0, True), ("b", "pip", T + 0.1, 0, True), ("c", "uv", T + 0.2, 0, True),
                        ("e", "pip", T + 0.5, 0, True), ("d", "pip", T + 60, 0, True))
    result = [x.as_dict() for x in transactions(dists, stamps)]
    assert [(t["number"], t["time"], t["installer"], t["distributions"]) for t in result] == [
        (1, "2026-05-28T20:27:40.125Z", "pip", ["d 1.0"]),
        (2, "unknown", "pip", ["b 1.0", "e 1.0"]), (3, "unknown", "uv", ["a 1.0", "c 1.0"])]
    assert result[1]["reason"] == (
        "pip and uv wrote dist-info folders within one window (2026-05-28T20:26:40.125Z to 2026-05-28T20:26:40.625Z), "
        "taking turns 3 times; one run is one installer: the times were reset (a copy?) or the runs came too close to "
        "tell apart")
    assert "duration" not in result[1]


def test_one_whole_second_time_on_many_folders_is_unknown_but_one_jiffy_of_uv_is_a_run():
    dists, stamps = run(("a", "pip", 1780000000.0, 0, True), ("b", "pip", 1780000000.0, 0, False))
    [only] = [x.as_dict() for x in transactions(dists, stamps)]
    assert (only["time"], only["reason"]) == ("unknown", "2 dist-info folders carry the same whole-second time "
                                              "2026-05-28T20:26:40.000Z: set by a tool (a copy, an archive), not "
                                              "written by an installer")
    dists, stamps = run(("a", "uv", T, 0, True), ("b", "uv", T, 0, True))
    assert table(dists, stamps) == [(1, "2026-05-28T20:26:40.125Z", "uv", ["a 1.0", "b 1.0"], ["a 1.0", "b 1.0"])]


def test_an_untrusted_stamp_is_unknown_with_its_reason_and_no_installer_reads_unknown():
    dists, stamps = run(("a", "pip", T, 0, True), ("b", None, T + 10, 0, False))
    stamps[dists[0].dist_info] = InstallStamp(None, "INSTALLER mtime", "a clock jumped")
    result = [x.as_dict() for x in transactions(dists, stamps)]
    assert [(t["time"], t["installer"], t["distributions"], t.get("reason")) for t in result] == [
        ("2026-05-28T20:26:50.125Z", "unknown", ["b 1.0"], None), ("unknown", "pip", ["a 1.0"], "a clock jumped")]
    assert transactions([], {}) == []
