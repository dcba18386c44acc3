# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for facts: the facts module's one call reads the wheel sources for a contamination's residue, and only then."""

from __future__ import annotations

from dataclasses import replace

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act import facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._act.facts import facts_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.facts_report import report
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.install_times import InstallStamp
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.wheel_sources import WheelSources
from ansible_collections.gpuops.cuda_venv.tests.support.dist_helpers import make_wheel
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
