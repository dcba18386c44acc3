# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which wheels of a plan are refused before anything is installed: INSTALL_WOULD_OVERWRITE,
INSTALL_CUDA_MAJOR_MISMATCH and INSTALL_NO_KERNEL.

Private to the gpuops.cuda_venv collection: not a public API.

Pure: reads only what it is given: the ``Observations`` record, the plan, the wheels the install guard read
(name -> WheelContents: file, name, key, version, label, requires_dist, paths), what it read of the paths they write
(``PathOwners``: real paths, installed owners, bytes already on disk) and the kernels of each declared wheel's
members. ``_install/install_guard.py`` and ``_install/wheel_kernels.py`` open the wheels, read RECORDs, hash files
and read the kernels, then ask here. The rules:

- the plan is walked in order: a removal frees the paths of the removed distribution (a planned replacement); a path
  written by a wheel is a conflict when a distribution that is still installed at that point of the plan, or a
  wheel installed earlier in the same plan, owns it with other bytes (identical bytes: same RECORD hash, or the file
  on disk hashes the same, are no conflict); a distribution never conflicts with itself (reinstall, upgrade);
- a new wheel whose CUDA major (name, install folder, version or dependencies: cuda_knowledge.cuda_major) differs
  from the anchor's is refused;
- so is a declared wheel with a shared object that has no kernel for one of the GPUs (``performance.kernel_verdict``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name, is_shared_object
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.performance import NONE, archs_text, kernel_verdict
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Action, Plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

_SHOWN = 8  # paths named in a message; details carry them all


@dataclass(frozen=True)
class Owner:
    """Who writes a path: an installed distribution (with its RECORD row's hash) or a wheel of the plan."""

    key: str
    label: str
    algorithm: Optional[str]
    digest: Optional[str]
    planned: bool  # a wheel of this plan, not an installed distribution


@dataclass(frozen=True)
class PathOwners:
    """What the install guard read about the paths the plan's wheels write."""

    real: Dict[str, str]  # each wheel path's target -> its real path
    installed: Dict[str, List[Owner]]  # real path -> the installed distributions whose RECORD lists it
    same_on_disk: FrozenSet = frozenset()  # wheel paths (WheelPath) whose file on disk already hashes as the wheel's


def shared_objects_first(paths: Sequence[str]) -> List[str]:
    """Shared objects (names.is_shared_object: what a loader maps) first, then the rest; each part sorted."""
    return sorted(paths, key=lambda p: (not is_shared_object(p), p))


# --- files another wheel owns --------------------------------------------------------------------------------

def overwrites(obs: Observations, plan: Plan, wheels, owners: PathOwners) -> Tuple[List[Finding], Dict[str, Dict[str, List[str]]]]:
    """(INSTALL_WOULD_OVERWRITE findings, name -> {removed owner label: freed paths}) for the plan in order."""
    installed = owners.installed
    gone: set = set()
    added: Dict[str, Owner] = {}  # real path -> the plan's wheel that writes it last
    findings: List[Finding] = []
    replaced: Dict[str, Dict[str, List[str]]] = {}
    for action in (a for b in plan.batches for a in b.actions):
        if action.kind == "remove":
            gone.add(action.name)
            continue
        if action.name not in wheels:
            continue
        wheel = wheels[action.name]
        clashes: Dict[str, List[str]] = {}
        for path in wheel.paths:
            real = owners.real[path.target]
            holders = [o for o in installed.get(real, ()) if o.key != wheel.key and o.key not in gone]
            earlier = added.get(real)
            if earlier is not None and earlier.key != wheel.key and earlier.key not in gone:
                holders.append(earlier)
            shown = obs.relpath(path.target)
            for owner in holders:
                if not _identical(owner, path, owners.same_on_disk):
                    clashes.setdefault(owner.label + (" (planned in this run)" if owner.planned else ""), []).append(shown)
            for owner in installed.get(real, ()):
                if owner.key in gone and owner.key != wheel.key:
                    replaced.setdefault(action.name, {}).setdefault(owner.label, []).append(shown)
            added[real] = Owner(wheel.key, wheel.label, path.algorithm, path.digest, True)
        gone.discard(wheel.key)
        if clashes:
            findings.append(overwrite_finding(action, wheel, clashes))
    return findings, replaced


def _identical(owner: Owner, path, same_on_disk) -> bool:
    """Same bytes: the owner's RECORD hash equals the wheel's, or (the owner lists none) the file on disk does."""
    if not path.digest or not path.algorithm:
        return False
    if owner.digest:
        return owner.algorithm == path.algorithm and owner.digest == path.digest
    if owner.planned:
        return False
    return path in same_on_disk


def overwrite_finding(action: Action, wheel, clashes: Dict[str, List[str]]) -> Finding:
    """INSTALL_WOULD_OVERWRITE for ``wheel`` (installed by ``action``): ``clashes`` is owner label -> the paths shown."""
    paths = shared_objects_first(sorted({p for ps in clashes.values() for p in ps}))
    whose = "; ".join("%d of %s" % (len(ps), label) for label, ps in sorted(clashes.items()))
    labels = sorted(clashes)
    message = "%s (%s, %s) would overwrite %d file(s) owned by another wheel (%s): %s%s." % (
        wheel.label, os.path.basename(wheel.file), action.reason, len(paths), whose, ", ".join(paths[:_SHOWN]),
        " and %d more" % (len(paths) - _SHOWN) if len(paths) > _SHOWN else "")
    fix = ("Drop %s (or the packages entry that brings it), or replace %s: remove it in the same run (remove:, "
           "when nothing declared requires it), so that its files are freed before %s writes them."
           % (wheel.name, " and ".join(label.split(" (planned")[0] for label in labels), wheel.name))
    details = {"wheel": os.path.basename(wheel.file), "distribution": wheel.name, "version": wheel.version,
               "requirement": action.requirement, "paths": paths,
               "owners": {label: shared_objects_first(ps) for label, ps in sorted(clashes.items())}}
    return Finding(F.INSTALL_WOULD_OVERWRITE, F.ERROR, wheel.label, message, fix, details)


# --- CUDA majors -------------------------------------------------------------------------------------------------

def major_mismatches(obs: Observations, plan: Plan, wheels) -> List[Finding]:
    """INSTALL_CUDA_MAJOR_MISMATCH for each new wheel built for another CUDA major than the anchor."""
    anchor = canonical_name(obs.options.anchor)
    anchor_label, anchor_major = _anchor_major(obs, anchor, wheels)
    if anchor_major is None:
        return []
    findings = []
    for action in (a for b in plan.batches for a in b.actions if a.kind == "install" and a.name != anchor):
        if action.name not in wheels:
            continue
        wheel = wheels[action.name]
        major, evidence = wheel_major(wheel)
        if major is None or major == anchor_major:
            continue
        findings.append(Finding(
            F.INSTALL_CUDA_MAJOR_MISMATCH, F.ERROR, wheel.label,
            "%s (%s, %s) is built for CUDA %d (%s), but the anchor %s is built for CUDA %d." % (
                wheel.label, os.path.basename(wheel.file), action.reason, major, evidence, anchor_label, anchor_major),
            "Drop %s (or the packages entry that brings it), or use its CUDA %d build; a venv runs one CUDA major."
            % (wheel.name, anchor_major),
            {"wheel": os.path.basename(wheel.file), "distribution": wheel.name, "version": wheel.version,
             "requirement": action.requirement, "cuda_major": major, "evidence": evidence,
             "anchor_cuda_major": anchor_major}))
    return findings


def wheel_major(wheel) -> Tuple[Optional[int], Optional[str]]:
    """The CUDA major of a wheel as of an installed distribution: name, install folder, version, dependencies."""
    return cuda.cuda_major(wheel.key, wheel.version, [p.record for p in wheel.paths], (), wheel.requires_dist)


def _anchor_major(obs: Observations, anchor: str, wheels) -> Tuple[str, Optional[int]]:
    """The anchor's label and CUDA major: of its wheel when the plan installs it, else as installed."""
    if anchor in wheels:
        wheel = wheels[anchor]
        return wheel.label, wheel_major(wheel)[0]
    for dist in obs.distributions:
        if dist.key == anchor:
            return dist.label, obs.cuda_major(dist.dist_info).major
    return anchor, None


# --- kernels for the GPU -----------------------------------------------------------------------------------------

def declared_wheels(wheels, declared: Sequence[str]) -> list:
    """The wheels (name -> WheelContents) of the ``declared`` requirements' names, by name: those judged for kernels."""
    names = {canonical_name(n) for n in declared}
    return [wheels[n] for n in sorted(names) if n in wheels]


def no_kernel_findings(carried, targets: Sequence[str]) -> List[Finding]:
    """INSTALL_NO_KERNEL for each shared object of ``carried`` ((wheel, [(member, Kernels)]) per declared wheel) that
    has no kernel for one of the compute capabilities ``targets``."""
    findings = []
    for wheel, members in carried:
        for member, kernels in members:
            missing = [cc for cc in targets if kernel_verdict(kernels.sass, kernels.ptx, cc)[0] == NONE]
            if missing:
                findings.append(Finding(
                    F.INSTALL_NO_KERNEL, F.ERROR, wheel.label,
                    "%s (%s): %s has no kernel for compute capability %s: it carries %s." % (
                        wheel.label, os.path.basename(wheel.file), member, ", ".join(missing),
                        archs_text(kernels.sass, kernels.ptx)),
                    "Declare a build of %s made for this GPU (or drop it): installed, its CUDA code would fail with "
                    "\"no kernel image is available for execution on the device\"." % wheel.name,
                    {"wheel": os.path.basename(wheel.file), "distribution": wheel.name, "version": wheel.version,
                     "library": member, "compute_capabilities": missing, **kernels.as_dict()}))
    return findings
