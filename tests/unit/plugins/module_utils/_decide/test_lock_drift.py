# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for lock_drift (LOCK_DRIFT and the facts' lock section) and for the plan a lock makes, from literal
Observations: the stand-in torch 2.9.1 venv against a lock that differs from it in every way."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.lock_drift import lock_drift, lock_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import DesiredState, PlanError, make_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.lock_file import Lock, LockedPackage
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.locked_bytes import BytesCheck
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import pinned_edges
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O

HASH = ("sha256:" + "a" * 64,)


def locked(obs, pins, checks=()):
    """``obs`` judged against a lock of ``pins`` ({name: version}), as observe() makes it."""
    lock = Lock("pylock.toml", "pylock", tuple(LockedPackage(n, v, HASH, None, "packages[%d]" % i)
                                               for i, (n, v) in enumerate(sorted(pins.items()))))
    return replace(obs, lock=lock, requirements=pinned_edges(lock.pins(), obs.distributions),
                   lock_bytes={c.name: c for c in checks})


def installed(obs):
    return {d.key: d.version for d in obs.distributions}


def test_a_venv_equal_to_its_lock_has_no_drift_and_matches():
    obs = O.healthy()
    judged = locked(obs, installed(obs), [BytesCheck("torch", "/wh/torch.whl", 4, (), 0)])
    findings = diagnose(judged)
    assert [f for f in findings if f.code == F.LOCK_DRIFT] == [] and F.is_healthy(findings)
    assert lock_facts(judged, findings) == {
        "name": "pylock.toml", "kind": "pylock", "packages": len(installed(obs)), "hashed": True, "matches": True,
        "drift": [], "bytes": [{"distribution": "torch", "wheel": "/wh/torch.whl", "compared": 4, "differing": 0,
                                "examples": []}]}
    assert make_plan(judged, findings, DesiredState(prune="all")).empty


def drifted(left_out=("extra-tool", "pip")):
    obs = O.healthy(add=[O.dist("pip", "24.0", ["pip/__init__.py"]), O.dist("extra-tool", "1.0", ["extra_tool/__init__.py"])])
    # cublas locked below the installed version, the CUDA runtime above it: a drift either way (!= mutated to > misses one)
    pins = dict(installed(obs), **{"nvidia-cublas-cu12": "12.8.3.14", "numpy": "2.3.5", "nvidia-cuda-runtime-cu12": "12.9.79"})
    for name in left_out:
        del pins[name]
    return locked(obs, pins, [BytesCheck("filelock", "/wh/filelock-3.20.0-py3-none-any.whl", 3,
                                         ("filelock/__init__.py",), 1)])


def test_every_kind_is_one_finding_per_distribution_and_extra_is_only_a_warning():
    judged = drifted()
    found = [(f.severity, f.subject, f.details["kind"]) for f in lock_drift(judged)]
    assert found == [("error", "filelock", "bytes"), ("error", "numpy", "missing"),
                     ("error", "nvidia-cublas-cu12", "version"), ("error", "nvidia-cuda-runtime-cu12", "version"),
                     ("warning", "extra-tool", "extra")]
    by_subject = {f.subject: f for f in lock_drift(judged)}
    assert by_subject["nvidia-cublas-cu12"].message == (
        "nvidia-cublas-cu12 is locked at 12.8.3.14 and installed at 12.8.4.1.")
    assert by_subject["filelock"].details == {"kind": "bytes", "locked": "3.20.0", "wheel":
                                              "/wh/filelock-3.20.0-py3-none-any.whl", "differing": 1,
                                              "examples": ["filelock/__init__.py"]}
    findings = diagnose(judged)
    assert not {F.REQUIREMENT_MISSING, F.REQUIREMENT_VERSION_MISMATCH} & {f.code for f in findings}
    assert F.is_healthy(findings) is False
    assert {f.code for f in findings} - {F.LOCK_DRIFT}  # others beside it (IMPORT_FAILED...), left out of the drift
    facts = lock_facts(judged, findings + [F.Finding(F.IMPORT_FAILED, F.ERROR, "torch", "import torch fails")])
    assert facts["matches"] is False and [(d["distribution"], d["kind"]) for d in facts["drift"]] == [
        ("filelock", "bytes"), ("numpy", "missing"), ("nvidia-cublas-cu12", "version"),
        ("nvidia-cuda-runtime-cu12", "version"), ("extra-tool", "extra")]


def test_the_plan_installs_the_locked_versions_reinstalls_the_other_bytes_and_prunes_only_when_asked():
    judged = drifted()
    findings = diagnose(judged)
    kept = make_plan(judged, findings, DesiredState())
    actions = [(a.kind, a.requirement, a.reason) for b in kept.batches for a in b.actions]
    assert ("reinstall", "filelock==3.20.0", "installed from other bytes than the locked wheel's (LOCK_DRIFT)") in actions
    assert ("install", "numpy==2.3.5", "locked at 2.3.5 by pylock.toml, not installed") in actions
    assert ("install", "nvidia-cublas-cu12==12.8.3.14", "locked at 12.8.3.14 by pylock.toml, installed 12.8.4.1") in actions
    assert ("install", "nvidia-cuda-runtime-cu12==12.9.79", "locked at 12.9.79 by pylock.toml, installed 12.8.90") in actions
    assert [a for a in actions if a[0] == "remove"] == []  # extra-tool: no CUDA evidence against it, kept
    pruned = make_plan(judged, findings, DesiredState(prune="all"))
    removals = [(a.name, a.reason) for b in pruned.batches for a in b.actions if a.kind == "remove"]
    assert removals == [("extra-tool", "not in the lock pylock.toml (prune: all)")]  # pip: never pruned
    assert all(F.LOCK_DRIFT in b.answers for b in pruned.batches)


def test_a_lock_that_leaves_out_what_a_kept_distribution_requires_is_refused_before_anything_runs():
    judged = drifted(left_out=("extra-tool", "pip", "nvidia-nvshmem-cu12"))
    with pytest.raises(PlanError) as caught:
        make_plan(judged, diagnose(judged), DesiredState(prune="all"))
    assert str(caught.value) == ("the repair would remove what a kept distribution requires: torch 2.9.1 requires "
                                 "nvidia-nvshmem-cu12==3.3.20; name those in remove too, or keep what they require")


def test_versions_are_compared_by_value_and_the_first_differing_file_is_the_example():
    """Mutations caught: ``dist.version != package.version`` to ``is not`` (a version read from a file is another
    object than the lock's equal one), ``check.differing[0]`` to ``[1]``/``[-1]`` in the bytes message."""
    obs = O.healthy()
    pins = {name: "".join(list(version)) for name, version in installed(obs).items()}  # equal strings, new objects
    assert all(pins[n] is not v for n, v in installed(obs).items() if len(v) > 1)
    judged = locked(obs, pins, [BytesCheck("torch", "/wh/torch.whl", 4, ("torch/a.py", "torch/b.py", "torch/c.py"), 3)])
    [finding] = lock_drift(judged)
    assert (finding.subject, finding.details["kind"]) == ("torch", "bytes")
    assert "(e.g. torch/a.py)" in finding.message
