# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""LOCK_DRIFT: where the venv differs from the user's lock (``lock``), one finding per distribution and kind.

Private to the gpuops.cuda_venv collection: not a public API.

Kinds (``details.kind``):
- ``missing`` (error): locked, not installed;
- ``version`` (error): installed at another version than the locked one;
- ``bytes`` (error): the locked version, installed from other bytes than the locked wheel's (its RECORD against
  the wheel's: ``_read/packaging/locked_bytes.py``);
- ``extra`` (warning): installed, not in the lock. The repair removes it only with ``prune: all`` (as ``uv pip
  sync`` would) or when the CUDA-stack rules prove it wrong (``prune: cuda``): a warning keeps the venv healthy.
The build basics a venv is made with (pip, setuptools, wheel, uv) are never extra: locks leave them out.
"""

from __future__ import annotations

from typing import List

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import VENV_SEED
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

MISSING, VERSION, BYTES, EXTRA = "missing", "version", "bytes", "extra"


def lock_drift(obs: Observations) -> List[Finding]:
    lock = obs.lock
    if lock is None:
        return []
    installed = {}
    for dist in obs.distributions:
        installed.setdefault(dist.key, dist)
    findings = []
    for package in lock.packages:
        dist = installed.get(package.name)
        fix = "pip install --no-deps --require-hashes -r %s (or cuda_venv_repair with lock)" % lock.name
        if dist is None:
            findings.append(_drift(MISSING, F.ERROR, package.name, "%s is locked at %s (%s %s) and not installed." % (
                package.name, package.version, lock.name, package.where), fix, locked=package.version))
        elif dist.version != package.version:
            findings.append(_drift(VERSION, F.ERROR, package.name, "%s is locked at %s and installed at %s." % (
                package.name, package.version, dist.version), fix, locked=package.version, installed=dist.version))
        else:
            check = obs.lock_bytes.get(package.name)
            if check is not None and check.count:
                findings.append(_drift(BYTES, F.ERROR, package.name, (
                    "%s %s is the locked version, installed from other bytes: %d of the %d files of the locked wheel "
                    "%s have another hash in its RECORD (e.g. %s): a local build, another index or a changed wheel."
                ) % (package.name, dist.version, check.count, check.compared, check.wheel, check.differing[0]),
                    "pip install --force-reinstall --no-deps --require-hashes -r %s" % lock.name,
                    locked=package.version, wheel=check.wheel, differing=check.count, examples=list(check.differing)))
    for key, dist in sorted(installed.items()):
        if lock.package(key) is None and key not in VENV_SEED:
            findings.append(_drift(EXTRA, F.WARNING, key, "%s %s is installed and not in the lock %s." % (
                dist.name, dist.version, lock.name), "cuda_venv_repair with lock and prune: all removes it, as uv pip "
                "sync would", installed=dist.version))
    return findings


def _drift(kind: str, severity: str, name: str, message: str, fix: str, **details) -> Finding:
    return Finding(F.LOCK_DRIFT, severity, name, message, fix, dict(kind=kind, **details))


def lock_facts(obs: Observations, findings) -> dict:
    """The facts' ``lock``: which lock, how many packages it selects for this venv, whether the venv matches it (no
    LOCK_DRIFT at all), each drift, and each locked wheel's bytes comparison. None without a lock."""
    lock = obs.lock
    if lock is None:
        return None
    drift = [dict(f.details, distribution=f.subject) for f in findings if f.code == F.LOCK_DRIFT]
    return {"name": lock.name, "kind": lock.kind, "packages": len(lock.packages), "hashed": lock.hashed,
            "matches": not drift, "drift": drift,
            "bytes": [check.as_dict() for _name, check in sorted(obs.lock_bytes.items())]}
