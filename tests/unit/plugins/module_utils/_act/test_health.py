# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the venv's test around a batch: what counts as a regression, where the probes keep their bytecode."""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import Future

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.health import (
    Health, Known, Pending, judged, probe_pycache, regression, what_tested, with_light_test)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.run import RepairOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O

MISSING = frozenset({("RECORD_MISSING_FILES", "nvidia-nccl-cu12 2.27.5"), ("SONAME_UNRESOLVED", "libnccl.so.2")})


def health(import_ok=True, import_error=None, errors=frozenset(), check_ok=None, check_error=None, light=False):
    return Health(import_ok, import_error, frozenset(errors), check_ok, check_error, light)


@pytest.mark.parametrize("before, after, reason", [
    (health(), health(), None),
    (health(), health(False, "ImportError: libnccl.so.2: file too short"),
     "import failed: ImportError: libnccl.so.2: file too short"),
    # a venv that was already broken may stay broken between batches ...
    (health(False, "ImportError: a", MISSING), health(False, "ImportError: b", MISSING), None),
    (health(False, "ImportError: a", MISSING), health(False, "ImportError: a"), None),
    # ... but must not get new errors
    (health(False, "ImportError: a", MISSING),
     health(False, "ImportError: a", MISSING | {("FILE_OWNERSHIP_CONFLICT", "a 1 & b 1"), ("CUDA_MAJOR_MIXED", "12,13")}),
     "new error finding(s): CUDA_MAJOR_MIXED 12,13, FILE_OWNERSHIP_CONFLICT a 1 & b 1"),
    (health(None), health(None, errors=MISSING),
     "new error finding(s): RECORD_MISSING_FILES nvidia-nccl-cu12 2.27.5, SONAME_UNRESOLVED libnccl.so.2"),
    # not probed: no import verdict either way
    (health(None), health(None), None),
    (health(True), health(None), None),
    # the user's check
    (health(check_ok=True), health(check_ok=False, check_error="exit code 3: loss is nan"),
     "probe_command failed: exit code 3: loss is nan"),
    (health(check_ok=False, check_error="x"), health(check_ok=False, check_error="y"), None),
    (health(check_ok=None), health(check_ok=False, check_error="y"), None),
    # the import failure is named before the check and the findings
    (health(check_ok=True), health(False, "ImportError: z", MISSING, False, "c"), "import failed: ImportError: z"),
])
def test_regression(before, after, reason):
    assert regression(before, after) == reason


@pytest.mark.parametrize("bytecode, expected", [
    ({"torch/__pycache__/__init__.cpython-311.pyc": b"pyc"}, None),  # pip compiled it: the probes read it (-B)
    ({"torch/__init__.py": b""}, "pycache"),  # uv does not compile: the probes keep theirs in the state dir
    ({"torch/__pycache__/version.cpython-311.pyc": b"pyc"}, "pycache"),  # the package's own is what counts
    ({}, "pycache"),  # no package folder at all
])
def test_probe_pycache_reads_the_venvs_bytecode_when_the_anchor_has_some(tmp_path, bytecode, expected):
    site = tmp_path / "site-packages"
    for relative, data in bytecode.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_bytes(data)
    obs = dataclasses.replace(O.contaminated(), site_packages=(str(tmp_path / "lib64-site"), str(site)))
    state = str(tmp_path / ".cuda_venv")
    assert probe_pycache(obs, state) == (None if expected is None else os.path.join(state, expected))


def test_a_light_baseline_is_not_compared_with_a_full_test_that_failed():
    """The copy's full test failed after a light baseline: it is judged against the live venv's full test, asked
    for only then; the live venv failing the same way is no regression."""
    asked = []

    def live(answer):
        def ask():
            asked.append(answer)
            return answer
        return ask
    light_ok = health(light=True)
    failed = health(check_ok=False, check_error="exit code 3")
    assert judged(light_ok, failed, live(health(check_ok=False, check_error="exit code 3"))) is None
    assert judged(light_ok, failed, live(health(check_ok=True))) == "probe_command failed: exit code 3"
    assert len(asked) == 2
    assert judged(health(light=True), health(light=True), live(health(False, "never asked"))) is None
    assert judged(health(), health(False, "ImportError: x"), live(health(False, "never asked"))) == "import failed: ImportError: x"
    assert len(asked) == 2  # tests of one kind are compared with each other
    assert judged(light_ok, health(False, "ImportError: y")) == "import failed: ImportError: y"  # in place: no live test


def _probed(*probes):
    """``probed(loader_only)`` answering ``probes`` in turn, each an observation of the healthy venv."""
    calls = []

    def probed(loader_only):
        calls.append(loader_only)
        return dataclasses.replace(O.healthy(), probe=probes[len(calls) - 1])
    return probed, calls


def test_a_light_test_judges_only_where_it_ran_and_passed():
    light_ok = dataclasses.replace(O.probe_ok(), loader_only=True)
    light_failed = dataclasses.replace(O.probe_failed("OSError: libcudnn.so.9"), loader_only=True)
    probed, calls = _probed(light_ok)
    assert with_light_test(probed, True)[1] is True and calls == [True]
    probed, calls = _probed(light_failed, O.probe_ok())
    current, light = with_light_test(probed, True)
    assert (current.probe.ok, light, calls) == (True, False, [True, False])  # judged by the import itself
    probed, calls = _probed(O.probe_ok())  # an anchor with no compiled part is imported anyway
    assert with_light_test(probed, True)[1] is False and calls == [True]
    probed, calls = _probed(O.probe_ok())
    assert with_light_test(probed, False)[1] is False and calls == [False]


@pytest.mark.parametrize("probe, command, light, name", [
    (False, (), False, "facts"),
    (True, (), True, "facts + loader"),
    (True, (), False, "facts + import"),
    (True, ("python", "-c", "pass"), False, "facts + import + probe_command"),
])
def test_what_tested_a_batch(probe, command, light, name):
    options = RepairOptions(facts=FactsOptions(path="/venvs/train"), desired=DesiredState(), probe=probe, probe_command=command)
    assert what_tested(options, light) == name


def test_a_pending_baseline_answers_once_it_has_finished_and_a_known_one_at_once():
    future = Future()
    pending = Pending(future)
    assert pending.ready() is False
    future.set_result(("obs", health()))
    assert pending.ready() is True and pending() == ("obs", health())
    known = Known("after", health(False, "e"))
    assert known.ready() is True and known() == ("after", health(False, "e"))
