# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for facts: the facts module's one call reads the wheel sources for a contamination's residue, and only then."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import replace

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.facts import facts_of, gather_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import SubprocessRunner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.facts_report import report
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.install_times import InstallStamp
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_sources import WheelSources
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_dist, make_wheel
from ansible_collections.gpuops.cuda_venv.tests.support.elf_helpers import build_so, requires_gcc
from ansible_collections.gpuops.cuda_venv.tests.support.fatbin_helpers import SASS, build_fatbin_so, fatbin_bytes
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O

T = 1780000000.125
CU13 = ("nvidia-cudnn-cu13", "nvidia-cublas", "nvidia-nccl-cu13", "nvidia-nvshmem-cu13", "nvidia-cusparselt-cu13")


def contaminated_then_reverted(*find_links):
    """The CUDA 13 wheels written by pip a minute after the rest, torch by uv a minute later: all of them residue;
    ``find_links``: the wheel sources."""
    obs = O.contaminated()
    dists = [replace(d, installer="uv" if d.key == "torch" else "pip", requested=d.key == "torch") for d in obs.distributions]
    offset = {key: 60 for key in CU13}
    offset["torch"] = 120
    stamps = {d.dist_info: InstallStamp(T + offset.get(d.key, 0), "INSTALLER mtime") for d in dists}
    sources = WheelSources(find_links=tuple(find_links), no_index=True)
    return replace(obs, distributions=dists, stamps=stamps, options=replace(obs.options, wheel_sources=sources))


def source_details(facts):
    [finding] = [f for f in facts["findings"] if f["code"] == "CONTAMINATION_SOURCE"]
    return finding["details"]["source_versions"], finding["details"]["source_failures"]


def test_the_wheel_sources_are_read_for_the_residue_and_name_the_version_that_requires_it(tmp_path):
    (tmp_path / "wh").mkdir()
    make_wheel(str(tmp_path / "wh"), "torch", "2.14.1", {}, requires=["nvidia-nccl-cu13==2.30.7"])
    gone = str(tmp_path / "gone")
    versions, failures = source_details(facts_of(contaminated_then_reverted(gone, str(tmp_path / "wh"))))
    assert versions == [{"name": "torch", "version": "2.14.1", "source": str(tmp_path / "wh"),
                         "requires": ["nvidia-nccl-cu13==2.30.7"], "reaches": ["nvidia-nccl-cu13 2.30.7"]}]
    assert failures == [{"source": gone, "error": "[Errno 2] No such file or directory: '%s'" % gone}]


def test_without_sources_or_without_residue_the_sources_are_never_asked(tmp_path, monkeypatch):
    def never(sources, names):
        raise AssertionError("read_offers(%r, %r)" % (sources, names))
    monkeypatch.setattr(facts, "read_offers", never)
    obs = contaminated_then_reverted()
    assert source_details(facts_of(obs)) == ([], [])
    healthy = replace(O.healthy(), options=replace(O.healthy().options, wheel_sources=WheelSources(find_links=(str(tmp_path),))))
    assert facts_of(healthy) == report(healthy, diagnose(healthy))


# --- the read index ----------------------------------------------------------------------------------------------

def _disk_venv(base):
    """A venv folder without an interpreter, holding a CUDA extension and a library (gcc-built) in one wheel."""
    root = os.path.join(str(base), "venv")
    site = os.path.join(root, "lib", "python3.12", "site-packages")
    os.makedirs(site)
    with open(os.path.join(root, "pyvenv.cfg"), "w") as handle:
        handle.write("version = 3.12.1\n")
    ext = build_fatbin_so(base / "build" / "ext.so", fatbin_bytes([(SASS, 90, 0x11, 64)]), soname="ext.so")
    lib = build_so(base / "build" / "libkern.so.1", soname="libkern.so.1", needed=["libm.so.6"])
    with open(ext, "rb") as one, open(lib, "rb") as other:
        make_dist(site, "kern", "1.0", {"kern/ext.so": one.read(), "kern/libkern.so.1": other.read()})
    return root


def _gather(root, keep=True):
    options = FactsOptions(path=root, probe=False, gpu=False, performance=True, read_index=True, gpu_archs=("9.0",))
    return gather_facts(options, SubprocessRunner(), keep_index=keep)


def _stable(facts):
    return {k: v for k, v in facts.items() if k not in ("read_index", "performance")}, facts["performance"]["kernels"]


@requires_gcc
def test_the_read_index_is_kept_and_the_next_run_reuses_it_with_the_same_facts(tmp_path):
    root = _disk_venv(tmp_path)
    time.sleep(1.0 - time.time() % 1.0 + 0.01)  # the files are older than the index's second: none is racy
    first = _gather(root)
    # the two objects' dynamic sections and kernels, the libm.so.6 the loader found for libkern, and kern's dist-info
    assert first["read_index"] == {"reused": 0, "read": 6, "ignored": None, "saved": True, "note": None}
    state = os.path.join(root, ".cuda_venv")
    assert (stat.S_IMODE(os.stat(state).st_mode), stat.S_IMODE(os.stat(state + "/read-index.json").st_mode)) == (0o700, 0o600)
    second = _gather(root)
    assert second["read_index"] == {"reused": 6, "read": 0, "ignored": None, "saved": False, "note": None}
    assert _stable(second) == _stable(first)
    assert [e["sass"] for e in second["performance"]["kernels"]["extensions"]] == [["sm_90"]]


@requires_gcc
def test_check_mode_uses_no_state_folder_and_an_unwritable_one_is_a_note(tmp_path):
    root = _disk_venv(tmp_path)
    assert _gather(root, keep=False)["read_index"]["saved"] is False
    assert not os.path.lexists(os.path.join(root, ".cuda_venv"))
    with open(os.path.join(root, ".cuda_venv"), "w") as handle:
        handle.write("not a folder")
    facts = _gather(root)["read_index"]
    assert (facts["saved"], facts["note"]) == (False, "not kept in %s/.cuda_venv/read-index.json: Not a directory" % root)


@requires_gcc
@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_a_venv_of_another_user_gets_no_state_folder_from_the_facts_but_an_existing_one_is_used(tmp_path):
    root = _disk_venv(tmp_path)
    os.chown(root, 4321, 4321)
    facts = _gather(root)["read_index"]
    assert (facts["saved"], facts["note"]) == (
        False, "not kept: %s has no state folder and belongs to uid 4321, who alone creates it" % root)
    assert not os.path.lexists(os.path.join(root, ".cuda_venv"))
    os.mkdir(os.path.join(root, ".cuda_venv"), 0o700)
    os.chown(os.path.join(root, ".cuda_venv"), 4321, 4321)
    assert _gather(root)["read_index"]["saved"] is True
