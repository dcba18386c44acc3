# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the cuda_venv_report filter: exact lines for small facts, and its refusal of other input."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.cuda_venv.plugins.filter.cuda_venv_report import FilterModule, cuda_venv_report
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.facts_report import report
from ansible_collections.gpuops.cuda_venv.tests.unit.plugins.module_utils import observations as O

BROKEN = {
    "path": "/venvs/train",
    "anchor": "torch",
    "summary": "broken: 1 error(s): SONAME_UNRESOLVED; 1 warning(s): CUDA_DIST_UNREQUIRED",
    "python": {"version": "3.12.3"},
    "distributions": [{"name": "torch"}, {"name": "nvidia-nccl-cu12"}, {"name": "sgl-kernel"}],
    "probe": {"ran": True, "ok": False, "error": "ImportError: libnccl.so.2: cannot open shared object file"},
    "findings": [
        {"code": "SONAME_UNRESOLVED", "severity": "error", "subject": "libnccl.so.2", "message": "libnccl.so.2 is found nowhere.",
         "fix": "pip install --force-reinstall --no-deps 'nvidia-nccl-cu12==2.27.5'"},
        {"code": "CUDA_DIST_UNREQUIRED", "severity": "warning", "subject": "sgl-kernel",
         "message": "sgl-kernel 0.3.9 is a CUDA consumer that nothing torch requires."},
        {"code": "SONAME_UNRESOLVED", "severity": "info", "subject": "libmpi.so.40", "message": "libmpi.so.40 is optional."},
        {"code": "SONAME_UNRESOLVED", "severity": "info", "subject": "libfabric.so.1", "message": "libfabric.so.1 is optional."},
    ],
}


def test_report_lines():
    assert cuda_venv_report(BROKEN) == [
        "/venvs/train: broken: 1 error(s): SONAME_UNRESOLVED; 1 warning(s): CUDA_DIST_UNREQUIRED",
        "python 3.12.3, 3 distributions, anchor torch, import FAILS: ImportError: libnccl.so.2: cannot open shared object file",
        "ERROR SONAME_UNRESOLVED [libnccl.so.2] libnccl.so.2 is found nowhere.",
        "      fix: pip install --force-reinstall --no-deps 'nvidia-nccl-cu12==2.27.5'",
        "WARN  CUDA_DIST_UNREQUIRED [sgl-kernel] sgl-kernel 0.3.9 is a CUDA consumer that nothing torch requires.",
        "(2 informational finding(s) not shown: optional plugins and similar)",
    ]


def test_report_names_the_neighbours_it_keeps():
    facts = dict(BROKEN, neighbours=[{"distribution": "torchvision 0.24.1"}, {"distribution": "cupy-cuda12x 14.2.0"}])
    assert cuda_venv_report(facts)[-1] == ("kept as neighbours (nothing proves them wrong): torchvision 0.24.1, "
                                           "cupy-cuda12x 14.2.0")
    assert cuda_venv_report(dict(BROKEN, neighbours=[]))[-1].startswith("(2 informational")


def test_report_lines_with_info():
    assert cuda_venv_report(BROKEN, info=True)[-2:] == [
        "info  SONAME_UNRESOLVED [libmpi.so.40] libmpi.so.40 is optional.",
        "info  SONAME_UNRESOLVED [libfabric.so.1] libfabric.so.1 is optional.",
    ]


@pytest.mark.parametrize("probe, text", [
    ({"ran": True, "ok": True, "versions": {"torch": "2.9.1", "cuda": "12.8", "cudnn": 91002, "nccl": "2.27.5", "x": "1"}},
     "works (torch 2.9.1, cuda 12.8, cudnn 91002, nccl 2.27.5)"),
    ({"ran": True, "ok": True, "versions": {"torch": "2.9.1", "cuda": None}}, "works (torch 2.9.1)"),
    ({"ran": True, "ok": True, "versions": {}}, "works"),
    ({"ran": False, "ok": None, "reason": "disabled (probe: false)"}, "not probed (disabled (probe: false))"),
    ({}, "not probed (disabled)"),
])
def test_probe_text(probe, text):
    facts = dict(BROKEN, probe=probe, findings=[], summary="healthy")
    assert cuda_venv_report(facts) == ["/venvs/train: healthy", "python 3.12.3, 3 distributions, anchor torch, import " + text]


def test_report_of_real_facts():
    obs = O.gutted()
    lines = cuda_venv_report(report(obs, diagnose(obs)))
    assert lines[:2] == [
        "/venvs/train: broken: 9 error(s): RECORD_MISSING_FILES, SONAME_UNRESOLVED, IMPORT_FAILED",
        "python 3.12.3, 8 distributions, anchor torch, import FAILS: ImportError: libcudnn.so.9: cannot open shared "
        "object file: No such file or directory"]
    assert lines[-2:] == [
        "ERROR IMPORT_FAILED [torch] import torch fails: ImportError: libcudnn.so.9: cannot open shared object file: "
        "No such file or directory",
        "      fix: Provide every missing library at once: libcudnn.so.9, libcusparseLt.so.0, libnccl.so.2, "
        "libnvshmem_host.so.3 (cuda_venv_repair does this)."]
    assert len(lines) == 2 + 2 * 9


@pytest.mark.parametrize("value, name", [(None, "NoneType"), ("healthy", "str"), ([], "list"), ({"path": "/v"}, "dict")])
def test_anything_but_the_facts_dictionary_is_refused(value, name):
    with pytest.raises(AnsibleFilterError) as caught:
        cuda_venv_report(value)
    assert caught.value.message == "cuda_venv_report expects the cuda_venv facts dictionary, got %s" % name


def test_filter_is_registered():
    assert FilterModule().filters() == {"cuda_venv_report": cuda_venv_report}
