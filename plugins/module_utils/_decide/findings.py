# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Findings: the stable codes users and tests match on.

Private to the gpuops.cuda_venv collection: not a public API.
docs/FINDINGS.md explains each code, how it arises and how to fix it by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, List, Optional

ERROR = "error"
WARNING = "warning"
INFO = "info"
_RANK = {ERROR: 0, WARNING: 1, INFO: 2}

# The codes of the collection's first design (docs/FINDINGS.md explains every code).
RECORD_MISSING_FILES = "RECORD_MISSING_FILES"
RECORD_MODIFIED_FILES = "RECORD_MODIFIED_FILES"
FILE_OWNERSHIP_CONFLICT = "FILE_OWNERSHIP_CONFLICT"
SONAME_UNRESOLVED = "SONAME_UNRESOLVED"
SONAME_SYSTEM_FALLBACK = "SONAME_SYSTEM_FALLBACK"
CUDA_MAJOR_MIXED = "CUDA_MAJOR_MIXED"
REQUIREMENT_MISSING = "REQUIREMENT_MISSING"
REQUIREMENT_VERSION_MISMATCH = "REQUIREMENT_VERSION_MISMATCH"
CUDA_DIST_UNREQUIRED = "CUDA_DIST_UNREQUIRED"
DUPLICATE_DISTRIBUTION = "DUPLICATE_DISTRIBUTION"
IMPORT_FAILED = "IMPORT_FAILED"
RUNTIME_LIBRARY_MISMATCH = "RUNTIME_LIBRARY_MISMATCH"
DRIVER_TOO_OLD = "DRIVER_TOO_OLD"
# Codes this collection adds for bad input found on disk.
ANCHOR_NOT_INSTALLED = "ANCHOR_NOT_INSTALLED"
DIST_INFO_INVALID = "DIST_INFO_INVALID"
RECORD_PATH_OUTSIDE_VENV = "RECORD_PATH_OUTSIDE_VENV"
ELF_INVALID = "ELF_INVALID"
PYTHON_UNUSABLE = "PYTHON_UNUSABLE"
# Console scripts of a moved venv.
VENV_MOVED = "VENV_MOVED"
SCRIPT_INTERPRETER_MISSING = "SCRIPT_INTERPRETER_MISSING"
SONAME_SHADOWED = "SONAME_SHADOWED"
# The install guard (_decide/guard.py) no longer matches the venv or its own files.
GUARD_STALE = "GUARD_STALE"
# Where contaminants came from: the install history (_decide/history.py, _decide/contamination_source.py).
CONTAMINATION_SOURCE = "CONTAMINATION_SOURCE"
# Codes of a repair refused before any change (_decide/install_refusals.py, asked by _install/install_guard.py): what
# the plan would install, not what is installed.
INSTALL_WOULD_OVERWRITE = "INSTALL_WOULD_OVERWRITE"
INSTALL_CUDA_MAJOR_MISMATCH = "INSTALL_CUDA_MAJOR_MISMATCH"
# Why a healthy venv is slow (_decide/performance.py): kernels, the GPU's state, the jobs' environment, old processes.
KERNELS_MISSING = "KERNELS_MISSING"
KERNELS_PTX_ONLY = "KERNELS_PTX_ONLY"
GPU_CLOCKS_THROTTLED = "GPU_CLOCKS_THROTTLED"
GPU_POWER_LIMITED = "GPU_POWER_LIMITED"
GPU_PCIE_DEGRADED = "GPU_PCIE_DEGRADED"
GPU_MEMORY_ERRORS = "GPU_MEMORY_ERRORS"
GPU_PERSISTENCE_OFF = "GPU_PERSISTENCE_OFF"
GPU_MIG_ENABLED = "GPU_MIG_ENABLED"
GPU_SHARED = "GPU_SHARED"
ENV_SLOWS_CUDA = "ENV_SLOWS_CUDA"
RESTART_NEEDED = "RESTART_NEEDED"
INSTALL_NO_KERNEL = "INSTALL_NO_KERNEL"
# Two kept distributions pinning one wheel to versions that cannot both hold (the anchor's is kept).
REQUIREMENT_PINS_CONFLICT = "REQUIREMENT_PINS_CONFLICT"
# Where the venv differs from the user's lock (_decide/lock_drift.py): missing, version, bytes, extra.
LOCK_DRIFT = "LOCK_DRIFT"

CODES = (
    RECORD_MISSING_FILES, RECORD_MODIFIED_FILES, FILE_OWNERSHIP_CONFLICT, SONAME_UNRESOLVED,
    SONAME_SYSTEM_FALLBACK, CUDA_MAJOR_MIXED, REQUIREMENT_MISSING, REQUIREMENT_VERSION_MISMATCH,
    CUDA_DIST_UNREQUIRED, DUPLICATE_DISTRIBUTION, IMPORT_FAILED, RUNTIME_LIBRARY_MISMATCH, DRIVER_TOO_OLD,
    ANCHOR_NOT_INSTALLED, DIST_INFO_INVALID, RECORD_PATH_OUTSIDE_VENV, ELF_INVALID, PYTHON_UNUSABLE,
    VENV_MOVED, SCRIPT_INTERPRETER_MISSING, SONAME_SHADOWED, GUARD_STALE, CONTAMINATION_SOURCE,
    INSTALL_WOULD_OVERWRITE, INSTALL_CUDA_MAJOR_MISMATCH,
    KERNELS_MISSING, KERNELS_PTX_ONLY, GPU_CLOCKS_THROTTLED, GPU_POWER_LIMITED, GPU_PCIE_DEGRADED, GPU_MEMORY_ERRORS,
    GPU_PERSISTENCE_OFF, GPU_MIG_ENABLED, GPU_SHARED, ENV_SLOWS_CUDA, RESTART_NEEDED, INSTALL_NO_KERNEL,
    REQUIREMENT_PINS_CONFLICT, LOCK_DRIFT,
)

# The _decide module (file stem) whose rule decides each code; docs/DEVELOPMENT.md points here.
DECIDED_IN = {
    RECORD_MISSING_FILES: "diagnose",
    RECORD_MODIFIED_FILES: "diagnose",
    FILE_OWNERSHIP_CONFLICT: "diagnose",
    SONAME_UNRESOLVED: "diagnose",
    SONAME_SYSTEM_FALLBACK: "diagnose",
    CUDA_MAJOR_MIXED: "diagnose",
    REQUIREMENT_MISSING: "diagnose",
    REQUIREMENT_VERSION_MISMATCH: "diagnose",
    CUDA_DIST_UNREQUIRED: "diagnose",
    DUPLICATE_DISTRIBUTION: "diagnose",
    IMPORT_FAILED: "diagnose",
    RUNTIME_LIBRARY_MISMATCH: "diagnose",
    DRIVER_TOO_OLD: "diagnose",
    ANCHOR_NOT_INSTALLED: "diagnose",
    DIST_INFO_INVALID: "diagnose",
    RECORD_PATH_OUTSIDE_VENV: "diagnose",
    ELF_INVALID: "diagnose",
    PYTHON_UNUSABLE: "diagnose",
    VENV_MOVED: "diagnose",
    SCRIPT_INTERPRETER_MISSING: "diagnose",
    SONAME_SHADOWED: "diagnose",
    GUARD_STALE: "guard",
    CONTAMINATION_SOURCE: "contamination_source",
    INSTALL_WOULD_OVERWRITE: "install_refusals",
    INSTALL_CUDA_MAJOR_MISMATCH: "install_refusals",
    KERNELS_MISSING: "performance",
    KERNELS_PTX_ONLY: "performance",
    GPU_CLOCKS_THROTTLED: "performance",
    GPU_POWER_LIMITED: "performance",
    GPU_PCIE_DEGRADED: "performance",
    GPU_MEMORY_ERRORS: "performance",
    GPU_PERSISTENCE_OFF: "performance",
    GPU_MIG_ENABLED: "performance",
    GPU_SHARED: "performance",
    ENV_SLOWS_CUDA: "performance",
    RESTART_NEEDED: "performance",
    INSTALL_NO_KERNEL: "install_refusals",
    REQUIREMENT_PINS_CONFLICT: "diagnose",
    LOCK_DRIFT: "lock_drift",
}


@dataclass(frozen=True)
class Finding:
    """One thing wrong (or worth knowing) about the venv."""

    code: str
    severity: str
    subject: str
    message: str
    fix: Optional[str] = None
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        result = {"code": self.code, "severity": self.severity, "subject": self.subject, "message": self.message}
        if self.fix:
            result["fix"] = self.fix
        if self.details:
            result["details"] = self.details
        return result


def ordered(findings: Iterable[Finding]) -> List[Finding]:
    """Errors first, then warnings, then info; stable within a severity."""
    return sorted(findings, key=lambda f: (_RANK[f.severity], CODES.index(f.code), f.subject))


def is_healthy(findings: Iterable[Finding]) -> bool:
    return not any(f.severity == ERROR for f in findings)


def summarize(findings: Iterable[Finding]) -> str:
    """One line: 'healthy' or the count per severity and the codes of the errors."""
    findings = list(findings)
    errors = [f for f in findings if f.severity == ERROR]
    warnings = [f for f in findings if f.severity == WARNING]
    if not errors:
        return "healthy" + (": %d warning(s): %s" % (len(warnings), _codes(warnings)) if warnings else "")
    text = "broken: %d error(s): %s" % (len(errors), _codes(errors))
    if warnings:
        text += "; %d warning(s): %s" % (len(warnings), _codes(warnings))
    return text


def _codes(findings: List[Finding]) -> str:
    seen = []
    for finding in findings:
        if finding.code not in seen:
            seen.append(finding.code)
    return ", ".join(seen)
