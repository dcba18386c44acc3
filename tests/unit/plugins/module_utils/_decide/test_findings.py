# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for findings: the stable codes, the result shape, ordering and the one-line summary."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding

DESIGN_CODES = [
    "RECORD_MISSING_FILES", "RECORD_MODIFIED_FILES", "FILE_OWNERSHIP_CONFLICT", "SONAME_UNRESOLVED",
    "SONAME_SYSTEM_FALLBACK", "CUDA_MAJOR_MIXED", "REQUIREMENT_MISSING", "REQUIREMENT_VERSION_MISMATCH",
    "CUDA_DIST_UNREQUIRED", "DUPLICATE_DISTRIBUTION", "IMPORT_FAILED", "RUNTIME_LIBRARY_MISMATCH", "DRIVER_TOO_OLD",
]
ADDED_CODES = ["ANCHOR_NOT_INSTALLED", "DIST_INFO_INVALID", "RECORD_PATH_OUTSIDE_VENV", "ELF_INVALID", "PYTHON_UNUSABLE",
               "VENV_MOVED", "SCRIPT_INTERPRETER_MISSING", "SONAME_SHADOWED", "GUARD_STALE", "CONTAMINATION_SOURCE",
               "INSTALL_WOULD_OVERWRITE", "INSTALL_CUDA_MAJOR_MISMATCH"]
PERFORMANCE_CODES = ["KERNELS_MISSING", "KERNELS_PTX_ONLY", "GPU_CLOCKS_THROTTLED", "GPU_POWER_LIMITED", "GPU_PCIE_DEGRADED",
                     "GPU_MEMORY_ERRORS", "GPU_PERSISTENCE_OFF", "GPU_MIG_ENABLED", "GPU_SHARED", "ENV_SLOWS_CUDA",
                     "RESTART_NEEDED", "INSTALL_NO_KERNEL"]
SERVING_CODES = ["REQUIREMENT_PINS_CONFLICT"]


def test_codes_are_the_designed_ones_then_the_added_ones():
    assert list(F.CODES) == DESIGN_CODES + ADDED_CODES + PERFORMANCE_CODES + SERVING_CODES
    assert all(getattr(F, code) == code for code in F.CODES)


def test_every_code_is_documented_in_findings_md():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "..", "..", "..", "docs", "FINDINGS.md")
    if not os.path.exists(path):
        pytest.skip("docs/FINDINGS.md is not in this tree")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert [c for c in F.CODES if not re.search(r"\b%s\b" % c, text)] == []


def test_as_dict_leaves_out_empty_fix_and_details():
    finding = Finding(F.IMPORT_FAILED, F.ERROR, "torch", "import torch fails: ImportError: x")
    assert finding.as_dict() == {"code": "IMPORT_FAILED", "severity": "error", "subject": "torch",
                                 "message": "import torch fails: ImportError: x"}


def test_as_dict_with_fix_and_details():
    finding = Finding(F.RECORD_MISSING_FILES, F.ERROR, "nvidia-nccl-cu12 2.27.5", "1 of 2 files are missing.",
                      "pip install --force-reinstall --no-deps 'nvidia-nccl-cu12==2.27.5'", {"count": 1})
    assert finding.as_dict() == {
        "code": "RECORD_MISSING_FILES", "severity": "error", "subject": "nvidia-nccl-cu12 2.27.5",
        "message": "1 of 2 files are missing.", "fix": "pip install --force-reinstall --no-deps 'nvidia-nccl-cu12==2.27.5'",
        "details": {"count": 1}}


def test_findings_are_frozen():
    finding = Finding(F.IMPORT_FAILED, F.ERROR, "torch", "m")
    with pytest.raises(AttributeError):
        finding.code = F.DRIVER_TOO_OLD


def _f(code, severity, subject):
    return Finding(code, severity, subject, "%s %s" % (code, subject))


def test_ordered_errors_then_warnings_then_info_by_code_order_then_subject():
    findings = [
        _f(F.SONAME_UNRESOLVED, F.INFO, "libmpi.so.40"),
        _f(F.CUDA_DIST_UNREQUIRED, F.WARNING, "sgl-kernel"),
        _f(F.IMPORT_FAILED, F.ERROR, "torch"),
        _f(F.SONAME_UNRESOLVED, F.ERROR, "libnccl.so.2"),
        _f(F.SONAME_UNRESOLVED, F.ERROR, "libcudnn.so.9"),
        _f(F.RECORD_MISSING_FILES, F.ERROR, "nvidia-nccl-cu12 2.27.5"),
        _f(F.SONAME_SYSTEM_FALLBACK, F.WARNING, "libcurand.so.10"),
        _f(F.PYTHON_UNUSABLE, F.ERROR, "/v/bin/python"),
    ]
    assert [(f.severity, f.code, f.subject) for f in F.ordered(findings)] == [
        ("error", "RECORD_MISSING_FILES", "nvidia-nccl-cu12 2.27.5"),
        ("error", "SONAME_UNRESOLVED", "libcudnn.so.9"),
        ("error", "SONAME_UNRESOLVED", "libnccl.so.2"),
        ("error", "IMPORT_FAILED", "torch"),
        ("error", "PYTHON_UNUSABLE", "/v/bin/python"),
        ("warning", "SONAME_SYSTEM_FALLBACK", "libcurand.so.10"),
        ("warning", "CUDA_DIST_UNREQUIRED", "sgl-kernel"),
        ("info", "SONAME_UNRESOLVED", "libmpi.so.40"),
    ]


def test_is_healthy_ignores_warnings_and_info():
    assert F.is_healthy([]) is True
    assert F.is_healthy([_f(F.CUDA_DIST_UNREQUIRED, F.WARNING, "x"), _f(F.SONAME_UNRESOLVED, F.INFO, "y")]) is True
    assert F.is_healthy([_f(F.SONAME_UNRESOLVED, F.INFO, "y"), _f(F.IMPORT_FAILED, F.ERROR, "torch")]) is False


@pytest.mark.parametrize("findings, summary", [
    ([], "healthy"),
    ([_f(F.SONAME_UNRESOLVED, F.INFO, "libmpi.so.40")], "healthy"),
    ([_f(F.CUDA_DIST_UNREQUIRED, F.WARNING, "a"), _f(F.CUDA_DIST_UNREQUIRED, F.WARNING, "b")],
     "healthy: 2 warning(s): CUDA_DIST_UNREQUIRED"),
    ([_f(F.RECORD_MISSING_FILES, F.ERROR, "a"), _f(F.RECORD_MISSING_FILES, F.ERROR, "b"),
      _f(F.SONAME_UNRESOLVED, F.ERROR, "libcudnn.so.9"), _f(F.IMPORT_FAILED, F.ERROR, "torch")],
     "broken: 4 error(s): RECORD_MISSING_FILES, SONAME_UNRESOLVED, IMPORT_FAILED"),
    ([_f(F.IMPORT_FAILED, F.ERROR, "torch"), _f(F.SONAME_SYSTEM_FALLBACK, F.WARNING, "libcurand.so.10"),
      _f(F.SONAME_UNRESOLVED, F.INFO, "libmpi.so.40")],
     "broken: 1 error(s): IMPORT_FAILED; 1 warning(s): SONAME_SYSTEM_FALLBACK"),
])
def test_summarize(findings, summary):
    assert F.summarize(findings) == summary


def test_summarize_takes_a_generator():
    assert F.summarize(f for f in [_f(F.IMPORT_FAILED, F.ERROR, "torch")]) == "broken: 1 error(s): IMPORT_FAILED"
