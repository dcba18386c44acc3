# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for history: grouping install spans into installer runs, and "unknown" rather than a wrong claim."""

from __future__ import annotations

from dataclasses import replace

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.history import (
    HANDOVER, IDLE, OVERLAP, asked_by_name, requested_means, transactions)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.install_times import InstallStamp, iso_time
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils.observations import dist

T = 1780000000.125


def run(*items):
    """[(name, installer, start, end, requested)] -> (dists, stamps)."""
    dists, stamps = [], {}
    for name, installer, start, end, requested in items:
        one = replace(dist(name, "1.0", installer=installer), requested=requested)
        dists.append(one)
        stamps[one.dist_info] = InstallStamp(start, "every file pip wrote", None, end)
    return dists, stamps


def table(dists, stamps):
    return [(t["number"], t["time"], t["installer"], t["distributions"], t["requested"])
            for t in (x.as_dict() for x in transactions(dists, stamps))]


def test_a_run_lasts_while_something_is_written_however_long_a_wheel_takes():
    """pip: a 40 s wheel (unpacked, then byte-compiled) between two small ones is one run; a pause longer than IDLE
    after it starts the next run, whatever the size of what comes next."""
    late = T + 45 + IDLE + 0.015
    dists, stamps = run(("late", "pip", late, late + 0.5, True),
                        ("torch", "pip", T, T + 0.5, True), ("nvidia-cudnn-cu12", "pip", T + 0.5, T + 40.5, False),
                        ("filelock", "pip", T + 40.5 + IDLE, T + 45, False))
    assert table(dists, stamps) == [
        (1, "2026-05-28T20:26:40.125Z", "pip", ["torch 1.0", "nvidia-cudnn-cu12 1.0", "filelock 1.0"], ["torch 1.0"]),
        (2, iso_time(late), "pip", ["late 1.0"], ["late 1.0"])]
    assert [t.as_dict()["duration"] for t in transactions(dists, stamps)] == [45, 0.5]


def test_a_short_span_inside_a_long_one_does_not_end_the_run():
    """Mutation guarded: the idle gap measured from the previous span's end instead of the furthest end so far. A short
    wheel written inside a long one ends at T + 1; the next wheel starts 0.5 s after the long one ends (T + 10): one
    run, not a second one that never happened."""
    dists, stamps = run(("torch", "pip", T, T + 10, True), ("filelock", "pip", T + 0.5, T + 1, False),
                        ("sympy", "pip", T + 10.5, T + 11, False))
    assert [(n, sorted(names)) for n, _t, _i, names, _r in table(dists, stamps)] == [
        (1, ["filelock 1.0", "sympy 1.0", "torch 1.0"])]


def test_uv_runs_a_second_apart_are_three_runs_however_large_their_records():
    """The incident's uv history: uv links a 2.5 GB torch in a second; its own files are all it writes."""
    dists, stamps = run(("nvidia-cudnn-cu12", "uv", T, T + 0.002, True), ("torch-a", "uv", T + 0.001, T + 0.003, True),
                        ("torch-b", "uv", T + 1.1, T + 1.102, True), ("nvidia-cudnn-cu13", "uv", T + 1.101, T + 1.101, True),
                        ("torch-c", "uv", T + 2.2, T + 2.2, True))
    assert [(t[0], t[3]) for t in table(dists, stamps)] == [
        (1, ["nvidia-cudnn-cu12 1.0", "torch-a 1.0"]), (2, ["torch-b 1.0", "nvidia-cudnn-cu13 1.0"]), (3, ["torch-c 1.0"])]


def test_an_installer_change_is_a_new_run_even_without_a_pause():
    """A script's python -m venv, uv pip install, pip install back to back (the acceptance build): three runs."""
    dists, stamps = run(("setuptools", "pip", T, T + 0.4, True), ("pip", "pip", T + 0.4, T + 0.83, True),
                        ("torch", "uv", T + 1.0625, T + 1.1, True), ("triton", "uv", T + 1.07, T + 1.125, True),
                        ("nvidia-cusparselt-cu13", "pip", T + 1.5, T + 3.7, True), ("nvidia-cublas", "pip", T + 3.7, T + 9.3, False))
    result = [x.as_dict() for x in transactions(dists, stamps)]
    assert [(t["number"], t["installer"], t["distributions"], t["requested"]) for t in result] == [
        (1, "pip", ["setuptools 1.0", "pip 1.0"], ["setuptools 1.0", "pip 1.0"]),
        (2, "uv", ["torch 1.0", "triton 1.0"], ["torch 1.0", "triton 1.0"]),
        (3, "pip", ["nvidia-cusparselt-cu13 1.0", "nvidia-cublas 1.0"], ["nvidia-cusparselt-cu13 1.0"])]
    assert [(t["time"], t["duration"]) for t in result] == [
        ("2026-05-28T20:26:40.125Z", 0.83), ("2026-05-28T20:26:41.187Z", 0.062), ("2026-05-28T20:26:41.625Z", 7.8)]
    assert [t["requested_means"] for t in result] == [
        "asked for by name: pip writes REQUESTED only for what its command line named",
        "installed by uv; uv marks every distribution requested",
        "asked for by name: pip writes REQUESTED only for what its command line named"]
    assert [t["requested_by_name"] for t in result] == [True, False, True]


def test_installers_handing_over_quicker_than_a_process_starts_are_unknown():
    """One copy wrote both (it reset the times), in directory order: no run can be claimed."""
    dists, stamps = run(("a", "uv", T, T + 0.01, True), ("b", "pip", T + 0.01 + HANDOVER - 0.001, T + 0.2, True),
                        ("c", "pip", T + 60, T + 61, True))
    result = [x.as_dict() for x in transactions(dists, stamps)]
    assert [(t["number"], t["time"], t["installer"], t["distributions"]) for t in result] == [
        (1, "2026-05-28T20:27:40.125Z", "pip", ["c 1.0"]), (2, "unknown", "pip", ["b 1.0"]), (3, "unknown", "uv", ["a 1.0"])]
    assert result[1]["reason"] == result[2]["reason"] == (
        "pip wrote b 1.0 0.049 s after uv wrote a 1.0 (2026-05-28T20:26:40.184Z): quicker than a process starts, one "
        "copy wrote both (the times were reset) or two installers ran at once")
    assert "duration" not in result[1]
    dists, stamps = run(("a", "uv", T, T + 0.01, True), ("b", "pip", T + 0.01 + HANDOVER + 0.001, T + 0.2, True))
    assert [t[2] for t in table(dists, stamps)] == ["uv", "pip"]


def test_spans_of_two_installers_that_overlap_are_unknown():
    dists, stamps = run(("a", "uv", T, T + 1, True), ("b", "pip", T + 0.5, T + 2, True))
    assert [(t[1], t[2]) for t in table(dists, stamps)] == [("unknown", "pip"), ("unknown", "uv")]


def test_two_of_pips_distributions_written_at_once_are_unknown_but_uvs_are_one_run():
    """pip writes one distribution after another; uv links many at once."""
    dists, stamps = run(("a", "pip", T, T + 1, True), ("b", "pip", T + 1 - OVERLAP * 2, T + 2, False))
    [only] = [x.as_dict() for x in transactions(dists, stamps)]
    assert (only["time"], only["distributions"], only["reason"]) == ("unknown", ["a 1.0", "b 1.0"], (
        "pip wrote a 1.0 and b 1.0 at once (2026-05-28T20:26:41.085Z), and it writes one distribution after another: "
        "the times were reset (a copy?) or two of its runs ran at once"))
    dists, stamps = run(("a", "pip", T, T + 1, True), ("b", "pip", T + 1 - OVERLAP / 2, T + 2, False))
    assert [t[1] for t in table(dists, stamps)] == ["2026-05-28T20:26:40.125Z"]  # one clock tick: one run
    dists, stamps = run(("a", "uv", T, T + 1, True), ("b", "uv", T + 0.5, T + 0.6, True))
    assert [t[1] for t in table(dists, stamps)] == ["2026-05-28T20:26:40.125Z"]


def test_installers_taking_turns_more_than_twice_without_a_pause_are_unknown():
    dists, stamps = run(("a", "uv", T, T, True), ("b", "pip", T + 0.1, T + 0.1, True), ("c", "uv", T + 0.2, T + 0.2, True),
                        ("e", "pip", T + 0.5, T + 0.5, True), ("d", "pip", T + 60, T + 60, True))
    result = [x.as_dict() for x in transactions(dists, stamps)]
    assert [(t["number"], t["time"], t["installer"], t["distributions"]) for t in result] == [
        (1, "2026-05-28T20:27:40.125Z", "pip", ["d 1.0"]),
        (2, "unknown", "pip", ["b 1.0", "e 1.0"]), (3, "unknown", "uv", ["a 1.0", "c 1.0"])]
    assert result[1]["reason"] == (
        "pip and uv wrote without a pause (2026-05-28T20:26:40.125Z to 2026-05-28T20:26:40.625Z), taking turns 3 times; "
        "one run is one installer: the times were reset (a copy?) or the runs came too close to tell apart")


def test_one_whole_second_time_on_many_folders_is_unknown_but_one_jiffy_of_uv_is_a_run():
    dists, stamps = run(("a", "pip", 1780000000.0, 1780000000.0, True), ("b", "pip", 1780000000.0, 1780000000.0, False))
    [only] = [x.as_dict() for x in transactions(dists, stamps)]
    assert (only["time"], only["reason"]) == ("unknown", "2 dist-info folders carry the same whole-second time "
                                              "2026-05-28T20:26:40.000Z: set by a tool (a copy, an archive), not "
                                              "written by an installer")
    dists, stamps = run(("a", "uv", T, T, True), ("b", "uv", T, T, True))
    assert table(dists, stamps) == [(1, "2026-05-28T20:26:40.125Z", "uv", ["a 1.0", "b 1.0"], ["a 1.0", "b 1.0"])]


def test_an_untrusted_stamp_is_unknown_with_its_reason_and_no_installer_reads_unknown():
    dists, stamps = run(("a", "pip", T, T, True), ("b", None, T + 10, T + 10, False))
    stamps[dists[0].dist_info] = InstallStamp(None, "every file pip wrote", "a clock jumped")
    result = [x.as_dict() for x in transactions(dists, stamps)]
    assert [(t["time"], t["installer"], t["distributions"], t.get("reason")) for t in result] == [
        ("2026-05-28T20:26:50.125Z", "unknown", ["b 1.0"], None), ("unknown", "pip", ["a 1.0"], "a clock jumped")]
    assert result[0]["requested_means"] == "written by unknown, which may mark what it was not asked for by name"
    assert transactions([], {}) == []


def test_a_stretch_holding_a_span_out_of_order_is_unknown_as_a_whole():
    dists, stamps = run(("a", "pip", T, T + 1, True), ("b", "pip", T + 1, T + 2, True), ("c", "pip", T + 60, T + 61, True))
    stamps[dists[1].dist_info] = InstallStamp(T + 1, "every file pip wrote", "b/x.py was written after INSTALLER", T + 2)
    result = [x.as_dict() for x in transactions(dists, stamps)]
    assert [(t["number"], t["time"], t["distributions"], t.get("reason")) for t in result] == [
        (1, "2026-05-28T20:27:40.125Z", ["c 1.0"], None),
        (2, "unknown", ["a 1.0", "b 1.0"], "b/x.py was written after INSTALLER")]


def test_only_pips_requested_says_asked_for_by_name():
    assert [asked_by_name(replace(dist("a", "1", installer=i), requested=r))
            for i, r in (("pip", True), ("pip", False), ("uv", True), ("poetry", True), (None, True))] == [
        True, False, False, False, False]
    assert requested_means("uv") == "installed by uv; uv marks every distribution requested"


def test_the_handover_is_measured_from_the_furthest_end_of_the_other_installer():
    """Mutation guarded (``_at_once``): each installer's latest end replaced by a shorter span that ends before it.
    uv writes a long wheel and, in parallel, a short one; pip starts 30 ms after the long one ends: two installers
    at once, whatever ended first."""
    dists, stamps = run(("torch", "uv", T, T + 5, True), ("six", "uv", T + 0.1, T + 0.2, False),
                        ("filelock", "pip", T + 5.03, T + 5.5, True))
    found = transactions(dists, stamps)
    assert [(t.time, t.installer) for t in found] == [(None, "pip"), (None, "uv")]
    assert found[0].reason.startswith("pip wrote filelock 1.0 0.030 s after uv wrote torch 1.0 (")


def test_one_distribution_at_a_whole_second_and_two_at_two_times_are_runs_not_a_copy():
    """Mutation guarded (``_same_second``): the rule "set by a tool" needs more than one dist-info folder and one single
    time; a single wheel installed at a whole second, or two whose times differ, are an installer's runs."""
    whole = float(int(T))
    assert table(*run(("torch", "pip", whole, whole, True))) == [(1, iso_time(whole), "pip", ["torch 1.0"], ["torch 1.0"])]
    dists, stamps = run(("torch", "pip", whole, whole, True), ("six", "pip", whole + 0.4, whole + 0.4, False))
    assert table(dists, stamps) == [(1, iso_time(whole), "pip", ["torch 1.0", "six 1.0"], ["torch 1.0"])]
    dists, stamps = run(("torch", "pip", whole, whole, True), ("six", "pip", whole, whole, False))
    assert [t.time for t in transactions(dists, stamps)] == [None]


def test_two_installers_too_close_are_caught_in_either_order():
    """Mutation guarded (``_at_once``): the other installer compared by order (``>``) rather than difference: uv
    starting 30 ms after pip ended is as much "at once" as pip after uv."""
    dists, stamps = run(("torch", "pip", T, T + 5, True), ("six", "uv", T + 5.03, T + 5.5, True))
    found = transactions(dists, stamps)
    assert [(t.time, t.installer) for t in found] == [(None, "pip"), (None, "uv")]
    assert found[1].reason.startswith("uv wrote six 1.0 0.030 s after pip wrote torch 1.0 (")


def test_installers_whose_spans_overlap_are_told_with_how_far_the_second_started_before_the_first_ended():
    """Mutation guarded (``_at_once``): ``start - other_end`` in the reason made ``start % other_end``. pip started
    0.5 s before uv's last write: the reason says 0.500 s before uv finished, not the start time itself."""
    dists, stamps = run(("a", "uv", T, T + 1, True), ("b", "pip", T + 0.5, T + 2, True))
    assert {t.installer: t.reason for t in transactions(dists, stamps)} == dict.fromkeys(("pip", "uv"), (
        "pip wrote b 1.0 0.500 s before uv finished writing a 1.0 (2026-05-28T20:26:40.625Z): quicker than a process starts, one "
        "copy wrote both (the times were reset) or two installers ran at once"))


def test_an_installer_starting_the_instant_the_other_stopped_is_told_as_after_it():
    """Mutation guarded (``_at_once``): ``gap >= 0`` in the reason made ``gap > 0``. pip's first write has the time
    of uv's last: the reason says 0.000 s after uv wrote, not "-0.000 s before uv finished writing"."""
    dists, stamps = run(("a", "uv", T, T + 1, True), ("b", "pip", T + 1, T + 2, True))
    assert {t.installer: t.reason for t in transactions(dists, stamps)} == dict.fromkeys(("pip", "uv"), (
        "pip wrote b 1.0 0.000 s after uv wrote a 1.0 (2026-05-28T20:26:41.125Z): quicker than a process starts, one "
        "copy wrote both (the times were reset) or two installers ran at once"))


def test_an_installer_starting_exactly_handover_after_the_other_stopped_is_a_new_run():
    """Mutation guarded (``_at_once``): ``start - other_end < HANDOVER`` made ``<=``. The rule asks for a hand-over
    of at least HANDOVER; the gap is exactly HANDOVER only near the epoch (a clock or a tool that set the times to 0),
    where the float 0.05 is a difference of two times."""
    dists, stamps = run(("a", "uv", 0.0, 0.0, True), ("b", "pip", HANDOVER, 0.5, True))
    assert table(dists, stamps) == [(1, "1970-01-01T00:00:00.000Z", "uv", ["a 1.0"], ["a 1.0"]),
                                    (2, "1970-01-01T00:00:00.050Z", "pip", ["b 1.0"], ["b 1.0"])]


def test_two_of_pips_spans_sharing_exactly_overlap_are_one_after_the_other():
    """Mutation guarded (``_at_once``): ``start < other_end - OVERLAP`` made ``<=``. The second wheel starts exactly
    OVERLAP (one coarse clock tick) before the first ended: still one run."""
    dists, stamps = run(("a", "pip", T, T + 1, True), ("b", "pip", T + 1 - OVERLAP, T + 2, False))
    assert table(dists, stamps) == [(1, "2026-05-28T20:26:40.125Z", "pip", ["a 1.0", "b 1.0"], ["a 1.0"])]


def test_installer_names_read_from_separate_files_are_one_installer():
    """Mutations guarded: ``==`` made ``is`` in ``_by_installer`` and in ``_at_once``'s pip rule, ``!=`` made ``is not``
    in ``_at_once``'s hand-over rule. Each INSTALLER file read gives its own string: equal, not the same object."""
    first, second = [text.strip() for text in ("pip\n", "pip\n")]
    assert first == second and first is not second
    dists, stamps = run(("a", first, T, T + 1, True), ("b", second, T + 1, T + 2, False))
    assert table(dists, stamps) == [(1, "2026-05-28T20:26:40.125Z", "pip", ["a 1.0", "b 1.0"], ["a 1.0"])]
    dists, stamps = run(("a", first, T, T + 1, True), ("b", second, T + 0.5, T + 2, False))
    assert [(t.time, t.installer, t.reason) for t in transactions(dists, stamps)] == [(None, "pip", (
        "pip wrote a 1.0 and b 1.0 at once (2026-05-28T20:26:40.625Z), and it writes one distribution after another: "
        "the times were reset (a copy?) or two of its runs ran at once"))]


def test_the_handover_names_the_last_sorted_of_the_spans_that_ended_last():
    """Mutations guarded (``_at_once``): the latest end kept with ``>=`` made ``>`` (the first of two spans ending
    together is named), ``==`` or ``is`` (the latest end never moves past the first span's: pip, 30 ms after uv's
    last write, would start a second run)."""
    dists, stamps = run(("a", "uv", T, T + 1, True), ("b", "uv", T + 0.5, T + 2, True), ("c", "uv", T + 1.5, T + 2, True),
                        ("d", "pip", T + 2.03, T + 2.5, True))
    found = transactions(dists, stamps)
    assert [(t.time, t.installer, [d.label for d in t.members]) for t in found] == [
        (None, "pip", ["d 1.0"]), (None, "uv", ["a 1.0", "b 1.0", "c 1.0"])]
    assert found[0].reason.startswith("pip wrote d 1.0 0.030 s after uv wrote c 1.0 (")


def test_spans_starting_together_are_listed_by_the_one_that_ended_first():
    """Mutation guarded (``transactions``): the sort key's end (``item[1]``) made the start (``item[0]``): the name
    would order two spans that started together."""
    dists, stamps = run(("a", "uv", T, T + 2, True), ("b", "uv", T, T + 1, True))
    assert table(dists, stamps) == [(1, "2026-05-28T20:26:40.125Z", "uv", ["b 1.0", "a 1.0"], ["b 1.0", "a 1.0"])]


def test_a_distribution_without_a_stamp_or_with_neither_time_nor_problem_has_no_install_time():
    """Mutation guarded (``transactions``): ``stamp is not None and stamp.problem`` made ``or``: a missing stamp
    would be read, and a stamp with no problem would give no reason."""
    dists, stamps = run(("a", "pip", T, T, True), ("b", "pip", T, T, False))
    del stamps[dists[0].dist_info]
    stamps[dists[1].dist_info] = InstallStamp(None, "")
    assert [(t.number, t.time, t.installer, [d.label for d in t.members], t.reason) for t in transactions(dists, stamps)] == [
        (1, None, "pip", ["a 1.0", "b 1.0"], "no install time")]


def test_installers_taking_turns_are_told_from_the_first_span_s_start():
    """Mutation guarded (``_taking_turns``): the stretch's first time (``stretch[0][0]``) made the first span's end
    (``stretch[0][1]``)."""
    dists, stamps = run(("a", "uv", T, T + 0.03125, True), ("b", "pip", T + 0.125, T + 0.125, True),
                        ("c", "uv", T + 0.25, T + 0.25, True), ("e", "pip", T + 0.5, T + 0.625, True))
    assert {t.reason for t in transactions(dists, stamps)} == {
        "pip and uv wrote without a pause (2026-05-28T20:26:40.125Z to 2026-05-28T20:26:40.750Z), taking turns 3 times; "
        "one run is one installer: the times were reset (a copy?) or the runs came too close to tell apart"}
