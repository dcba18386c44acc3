# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the batches' pure parts: installer call grouping, what a failed command says."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.batches import _command_groups, _tail
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import CommandResult
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Action


def _a(kind, name):
    return Action(kind, name, name if kind == "remove" else "%s==1" % name, "r")


def test_command_groups_keep_consecutive_kinds_together_in_plan_order():
    actions = [_a("remove", "a"), _a("remove", "b"), _a("reinstall", "c"), _a("reinstall", "d"), _a("install", "e"),
               _a("remove", "f")]
    assert [(kind, [a.name for a in group]) for kind, group in _command_groups(actions)] == [
        ("remove", ["a", "b"]), ("reinstall", ["c", "d"]), ("install", ["e"]), ("remove", ["f"])]


def test_command_groups_of_nothing():
    assert _command_groups([]) == []


@pytest.mark.parametrize("stdout, stderr, rc, timed_out, tail", [
    ("", "a\nb\nc\nd\nERROR: No matching distribution found for x==9\n", 1, False,
     "b | c | d | ERROR: No matching distribution found for x==9"),
    ("only stdout\n", "", 2, False, "only stdout"),
    ("", "  \n", 137, False, "exit code 137"),
    ("", "partial output", -9, True, "timed out"),
])
def test_a_failed_command_is_told_by_its_last_lines(stdout, stderr, rc, timed_out, tail):
    assert _tail(CommandResult(("pip", "install"), rc, stdout, stderr, timed_out)) == tail
