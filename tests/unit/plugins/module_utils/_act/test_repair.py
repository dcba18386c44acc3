# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for repair's pure parts: what counts as a regression, installer call grouping, inventory and file state."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.journal import Journal
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Action, DesiredState
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.repair import (
    RepairOptions, _command_groups, _diff_side, _Health, _probe_pycache, _regression, file_state, inventory, repair,
    state_dir_of)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist
from ansible_collections.gpuops.cuda_venv.tests.support.tree_digest import tree_digest

MISSING = frozenset({("RECORD_MISSING_FILES", "nvidia-nccl-cu12 2.27.5"), ("SONAME_UNRESOLVED", "libnccl.so.2")})


def health(import_ok=True, import_error=None, errors=frozenset(), check_ok=None, check_error=None):
    return _Health(import_ok, import_error, frozenset(errors), check_ok, check_error)


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
    assert _regression(before, after) == reason


def _a(kind, name):
    return Action(kind, name, name if kind == "remove" else "%s==1" % name, "r")


def test_command_groups_keep_consecutive_kinds_together_in_plan_order():
    actions = [_a("remove", "a"), _a("remove", "b"), _a("reinstall", "c"), _a("reinstall", "d"), _a("install", "e"),
               _a("remove", "f")]
    assert [(kind, [a.name for a in group]) for kind, group in _command_groups(actions)] == [
        ("remove", ["a", "b"]), ("reinstall", ["c", "d"]), ("install", ["e"]), ("remove", ["f"])]


def test_command_groups_of_nothing():
    assert _command_groups([]) == []


def test_inventory_is_name_to_version_sorted():
    inv = inventory(O.contaminated())
    assert list(inv) == sorted(inv)
    assert inv == {
        "filelock": "3.20.0", "nvidia-cublas": "13.1.1.3", "nvidia-cublas-cu12": "12.8.4.1",
        "nvidia-cuda-runtime-cu12": "12.8.90", "nvidia-cudnn-cu12": "9.10.2.21", "nvidia-cudnn-cu13": "9.24.0.43",
        "nvidia-cusparselt-cu12": "0.7.1", "nvidia-cusparselt-cu13": "0.8.1", "nvidia-nccl-cu12": "2.27.5",
        "nvidia-nccl-cu13": "2.30.7", "nvidia-nvshmem-cu12": "3.3.20", "nvidia-nvshmem-cu13": "3.4.5", "torch": "2.9.1"}


def test_file_state_of_the_gutted_venv():
    assert file_state(O.gutted()) == {
        "damaged": {"nvidia-cudnn-cu12": {"missing": 2, "modified": 0},
                    "nvidia-cusparselt-cu12": {"missing": 2, "modified": 0},
                    "nvidia-nccl-cu12": {"missing": 2, "modified": 0},
                    "nvidia-nvshmem-cu12": {"missing": 3, "modified": 0}},
        "conflicts": ["nvidia/__init__.py"]}


def test_file_state_of_the_contaminated_venv():
    state = file_state(O.contaminated(modified={"nvidia-nccl-cu12": ["nvidia/nccl/lib/libnccl.so.2"]}))
    assert state["damaged"] == {"nvidia-nccl-cu12": {"missing": 0, "modified": 1}}
    assert state["conflicts"] == [
        "nvidia/__init__.py", "nvidia/cudnn/include/cudnn.h", "nvidia/cudnn/lib/libcudnn.so.9",
        "nvidia/cusparselt/include/cusparselt.h", "nvidia/cusparselt/lib/libcusparseLt.so.0",
        "nvidia/nccl/include/nccl.h", "nvidia/nccl/lib/libnccl.so.2", "nvidia/nvshmem/include/nvshmem.h",
        "nvidia/nvshmem/lib/libnvshmem_host.so.3"]


def test_file_state_of_a_healthy_venv_lists_only_the_harmless_shared_init():
    assert file_state(O.healthy()) == {"damaged": {}, "conflicts": ["nvidia/__init__.py"]}


def test_diff_side():
    text = _diff_side({"torch": "2.9.1", "nvidia-nccl-cu12": "2.27.5"},
                      {"damaged": {"nvidia-nccl-cu12": {"missing": 2, "modified": 0}}, "conflicts": ["nvidia/nccl/lib/libnccl.so.2"]})
    assert text == ("nvidia-nccl-cu12==2.27.5\ntorch==2.9.1\n# nvidia-nccl-cu12: 2 missing, 0 modified\n"
                    "# conflict: nvidia/nccl/lib/libnccl.so.2\n")


def test_state_dir_lives_in_the_venv():
    assert state_dir_of("/venvs/train") == "/venvs/train/.cuda_venv"


class _ProbeCannotStart(SubprocessRunner):
    """The real runner, except that the import probe's process cannot be started (as when fork fails)."""

    def run(self, argv, **kwargs):
        if any(str(a).startswith("pycache_prefix=") for a in argv):
            raise OSError(11, "Resource temporarily unavailable")
        return super().run(argv, **kwargs)


class _InstallerNeverCalled:
    name = "never-called"
    pass_fds = ()

    def install(self, *args, **kwargs):
        raise AssertionError("an installer ran: %r %r" % (args, kwargs))

    uninstall = install


def test_a_baseline_test_that_cannot_run_closes_the_first_batch_before_anything_changed(tmp_path):
    """The baseline probe runs while the first batch's snapshot is taken; when it raises, the batch is rolled
    back and closed, the venv is byte-identical, no installer ran and the next run has nothing to recover."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    make_dist(str(site), "jax", "0.7.2", files={"jax/__init__.py": b""}, requires=["jaxlib==0.7.2"])
    before = tree_digest(str(venv))
    options = RepairOptions(facts=FactsOptions(path=str(venv), anchor="jax"), desired=DesiredState())
    with pytest.raises(OSError, match="Resource temporarily unavailable"):
        repair(options, lambda _observed: _InstallerNeverCalled(), _ProbeCannotStart())
    assert tree_digest(str(venv)) == before
    journal = Journal(state_dir_of(str(venv)))
    assert journal.open_batch() is None
    state = state_dir_of(str(venv))
    assert sorted(os.listdir(state)) == ["journal.prev.jsonl", "lock", "snapshots"]  # no pycache, no open journal
    assert os.listdir(os.path.join(state, "snapshots")) == []
    with open(os.path.join(state, "journal.prev.jsonl")) as handle:
        records = [json.loads(line) for line in handle]
    assert [(r["phase"], r.get("reason")) for r in records] == [
        ("begin", None), ("snapshot", None), ("rollback", "the test before batch 1 did not run"), ("done", None)]


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
    assert _probe_pycache(obs, state) == (None if expected is None else os.path.join(state, expected))
