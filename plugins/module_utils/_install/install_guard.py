# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Refuse, before anything is installed, a plan whose wheels would overwrite another wheel's files or bring
another CUDA major than the anchor's.

Private to the gpuops.cuda_venv collection: not a public API.

pip and uv overwrite a path another installed wheel owns without a word (pypa/pip#4625; astral-sh/uv#15357): the
incident's cu13 cuDNN, cuSPARSELt, NCCL and NVSHMEM wheels wrote over their cu12 namesakes. Every wheel lists the
paths it writes in its RECORD, so the plan can know them first: each wheel the plan installs or reinstalls is
picked from the find-links folders (no index) or fetched by pip into ``VENV/.cuda_venv/downloads`` (removed again
at once), its RECORD read, and the plan walked in order:

- a removal frees the paths of the removed distribution (a planned replacement, said in the install's reason);
- a path written by a wheel is a conflict when a distribution that is still installed at that point of the plan,
  or a wheel installed earlier in the same plan, owns it with other bytes (identical bytes: same RECORD hash, or
  the file on disk hashes the same, are no conflict); a distribution never conflicts with itself (reinstall,
  upgrade);
- a new wheel whose CUDA major (name, install folder, version or dependencies: cuda_knowledge.cuda_major)
  differs from the anchor's is refused too;
- so is a wheel of ``packages`` with a CUDA extension that has no kernel for the node's GPU (wheel_kernels.py).
With ``with_dependencies``, a ``packages`` entry that is not installed yet is resolved by the installer itself
(wheel_fetch.resolve) and every wheel it brings joins the plan, pinned and checked like the rest.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import locate_entries
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import Backend, InstallerError, WheelSources
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Action, Plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_fetch import FetchError, download, resolve
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_kernels import kernel_refusals
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_paths import (
    WheelError, local_folders, pick_wheel, read_wheel, shared_objects_first, supported_tags)

DOWNLOADS = "downloads"
UV_LOCK = ".lock"  # uv locks the environment it installs into (or dry-runs against) with this file in its root
_SHOWN = 8  # paths named in a message; details carry them all


class InstallRefused(CudaVenvError):
    """The plan would overwrite files or mix CUDA majors; ``findings`` say which wheel, which paths, whose."""

    def __init__(self, message: str, findings: Sequence[F.Finding], plan: Optional[Plan] = None):
        super().__init__(message, {"refused": [f.as_dict() for f in findings]})
        self.findings = tuple(findings)
        self.plan = plan  # the plan as checked (dependencies included), when it got that far


@dataclass(frozen=True)
class InstallCheck:
    """What the check needs from the user: the wheel sources, the ``packages`` requirements, and whether a new
    ``packages`` entry brings its dependencies."""

    sources: WheelSources
    packages: Tuple[str, ...] = ()
    with_dependencies: bool = False
    gpu_archs: Tuple[str, ...] = ()  # the GPUs a declared wheel's kernels must run on (else NVML's): wheel_kernels.py


def guard_plan(obs, plan: Plan, check: Optional[InstallCheck], backend: Callable[[], Backend], state_dir: str,
               check_mode: bool, secrets: Sequence[str] = ()) -> Plan:
    """``plan`` (with resolved dependencies added, and planned replacements said in the install reasons) once
    every wheel it installs is known to overwrite nothing; raises InstallRefused (or FetchError) otherwise.

    ``backend()`` gives the installer backend; it is asked for only when the installer must resolve or fetch."""
    if check is None or not any(a.kind != "remove" for b in plan.batches for a in b.actions):
        return plan
    try:
        with _root_untouched(obs.layout.root):
            return _guard(obs, plan, check, backend, state_dir, check_mode, secrets)
    except (FetchError, InstallerError) as exc:
        raise InstallRefused("refused before any change: the paths the plan's wheels write cannot be known: %s"
                             % exc, (), plan) from None


def _guard(obs, plan: Plan, check: InstallCheck, backend: Callable[[], Backend], state_dir: str, check_mode: bool, secrets) -> Plan:
    if check.with_dependencies:
        plan = _with_dependencies(obs, plan, check, backend(), check_mode, secrets)
    wanted = [a for b in plan.batches for a in b.actions if a.kind != "remove"]
    try:
        with _download_folder(state_dir, needed=not _local_only(check.sources)) as folder:
            files = _wheel_files(obs, wanted, check.sources, backend, folder, check_mode, secrets)
            wheels = {name: _read(obs, wheel_file) for name, wheel_file in files.items()}
    except InstallRefused as exc:
        raise InstallRefused(str(exc), exc.findings, plan) from None
    findings, replaced = _walk(obs, plan, wheels)
    findings += _major_mismatches(obs, plan, wheels)
    findings += kernel_refusals(wheels, [_name_of(p) for p in check.packages], check.gpu_archs)[0]
    if findings:
        raise InstallRefused("refused before any change: %s" % " ".join(f.message for f in findings), findings, plan)
    return _with_reasons(plan, replaced, [a.name for a in wanted if a.name not in wheels])


# --- which wheel each action installs --------------------------------------------------------------------------

def _local_only(sources: WheelSources) -> bool:
    return bool(sources.no_index) and local_folders(sources.find_links) is not None


def _wheel_files(obs, actions, sources: WheelSources, backend: Callable[[], Backend], folder, check_mode, secrets) -> Dict[str, str]:
    """name -> the wheel file its install or reinstall action gets; a wheel the sources do not offer is left out:
    it cannot be installed, so it overwrites nothing (its batch is unfixable, repair)."""
    tags = supported_tags(_python_version(obs), obs.interpreter.marker_env.get("implementation_name", "cpython"))
    if _local_only(sources):
        folders = local_folders(sources.find_links)
    else:
        download(backend(), [a.requirement for a in actions], folder, obs.interpreter, check_mode, secrets)
        folders = [folder]
    files = {}
    for action in actions:
        found = pick_wheel(action.requirement, folders, tags)
        if found is not None:
            files[action.name] = found
    return files


def _read(obs, wheel_file: str):
    try:
        wheel = read_wheel(wheel_file, obs.layout.root, obs.site_packages[0], _python_version(obs))
    except WheelError as exc:
        raise InstallRefused("refused before any change: %s" % exc, ()) from None
    leaving = [p for p in wheel.problems if "leaves the venv" in p]
    if leaving:
        raise InstallRefused("refused before any change: %s would write outside the venv: %s" % (
            wheel.label, "; ".join(leaving[:3])), ())
    return wheel


def _python_version(obs) -> str:
    version = obs.interpreter.marker_env.get("python_version") if obs.interpreter.ok else None
    return version or ".".join(obs.layout.version.split(".")[:2])


class _root_untouched:  # pylint: disable=invalid-name
    """The venv root as it was, on exit: uv's dry run leaves its lock file ``VENV/.lock`` behind and (check mode) the
    download folder's state directory comes and goes; what the check created there is removed, the root's times
    put back."""

    def __init__(self, root: str):
        self.root = root
        self.lock = os.path.join(root, UV_LOCK)
        st = os.stat(root)
        self.times, self.had_lock = (st.st_atime_ns, st.st_mtime_ns), os.path.lexists(self.lock)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        if not self.had_lock and os.path.isfile(self.lock) and os.path.getsize(self.lock) == 0:
            os.unlink(self.lock)
        if os.stat(self.root).st_mtime_ns != self.times[1]:
            os.utime(self.root, ns=self.times)
        return False


class _download_folder:  # pylint: disable=invalid-name
    """A fresh folder under ``STATE/downloads`` when ``needed`` (else None); removed on exit, with ``downloads`` and
    the state directory when this run created them."""

    def __init__(self, state_dir: str, needed: bool):
        self.state_dir, self.needed = state_dir, needed
        self.created: List[str] = []
        self.folder: Optional[str] = None

    def __enter__(self):
        if not self.needed:
            return None
        for path in (self.state_dir, os.path.join(self.state_dir, DOWNLOADS)):
            if not os.path.isdir(path):
                os.mkdir(path, 0o700)
                self.created.append(path)
        self.folder = tempfile.mkdtemp(prefix="check-", dir=os.path.join(self.state_dir, DOWNLOADS))
        return self.folder

    def __exit__(self, *exc_info):
        if self.folder is None:
            return False
        shutil.rmtree(self.folder, ignore_errors=True)
        for path in reversed(self.created):
            try:
                os.rmdir(path)
            except OSError:  # another run's download is in there
                return False
        return False


# --- dependencies resolved by the installer --------------------------------------------------------------------

def _with_dependencies(obs, plan: Plan, check: InstallCheck, backend: Backend, check_mode, secrets) -> Plan:
    """Each install of a ``packages`` entry that is not installed yet, followed in its batch by the pinned installs
    of what the installer resolves for it (what the plan installs already is left as planned)."""
    installed = {d.key for d in obs.distributions}
    roots = {canonical_name(_name_of(p)) for p in check.packages}
    planned = {a.name for b in plan.batches for a in b.actions if a.kind != "remove"}

    def expand(action):
        actions = [action]
        if action.kind != "install" or action.name not in roots or action.name in installed:
            return actions
        for name, version in resolve(backend, [action.requirement], check_mode, secrets):
            if name not in planned and name not in installed:
                actions.append(Action("install", name, "%s==%s" % (name, version),
                                      "dependency of %s, resolved by %s" % (action.name, backend.name)))
                planned.add(name)
        return actions
    return _each_action(plan, expand)


def _each_action(plan: Plan, expand: Callable[[Action], List[Action]]) -> Plan:
    """The plan with each action replaced, in its batch and in order, by the actions ``expand`` makes of it."""
    return dataclasses.replace(plan, batches=tuple(
        dataclasses.replace(batch, actions=tuple(new for action in batch.actions for new in expand(action)))
        for batch in plan.batches))


def _name_of(requirement: str) -> str:
    head = requirement.strip()
    for stop in "[<>=!~;( @":
        head = head.split(stop, 1)[0]
    return head


# --- walking the plan --------------------------------------------------------------------------------------------

@dataclass
class _Owner:
    key: str
    label: str
    algorithm: Optional[str]
    digest: Optional[str]
    planned: bool  # a wheel of this plan, not an installed distribution


def _walk(obs, plan: Plan, wheels) -> Tuple[List[F.Finding], Dict[str, Dict[str, List[str]]]]:
    """(INSTALL_WOULD_OVERWRITE findings, name -> {removed owner label: freed paths}) for the plan in order."""
    installed = _installed_owners(obs, wheels)
    gone: set = set()
    added: Dict[str, _Owner] = {}  # real path -> the plan's wheel that writes it last
    findings: List[F.Finding] = []
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
            real = os.path.realpath(path.target)
            owners = [o for o in installed.get(real, ()) if o.key != wheel.key and o.key not in gone]
            earlier = added.get(real)
            if earlier is not None and earlier.key != wheel.key and earlier.key not in gone:
                owners.append(earlier)
            shown = obs.relpath(path.target)
            for owner in owners:
                if not _identical(owner, path):
                    clashes.setdefault(owner.label + (" (planned in this run)" if owner.planned else ""), []).append(shown)
            for owner in installed.get(real, ()):
                if owner.key in gone and owner.key != wheel.key:
                    replaced.setdefault(action.name, {}).setdefault(owner.label, []).append(shown)
            added[real] = _Owner(wheel.key, wheel.label, path.algorithm, path.digest, True)
        gone.discard(wheel.key)
        if clashes:
            findings.append(_overwrite_finding(action, wheel, clashes))
    return findings, replaced


def _installed_owners(obs, wheels) -> Dict[str, List[_Owner]]:
    """real path -> installed owners (with their RECORD hash) of every path the plan's wheels write."""
    targets = {os.path.realpath(p.target) for w in wheels.values() for p in w.paths}
    dists = {d.dist_info: d for t in targets for d in obs.owners_of(t)}
    owners: Dict[str, List[_Owner]] = {}
    for dist_info, rows in locate_entries(list(dists.values()), obs.layout.root).items():
        dist = dists[dist_info]
        for entry, location, _problem in rows:
            real = os.path.realpath(location) if location else None
            if real in targets:
                owners.setdefault(real, []).append(_Owner(dist.key, dist.label, entry.algorithm, entry.digest, False))
    return owners


def _identical(owner: _Owner, path) -> bool:
    """Same bytes: the owner's RECORD hash equals the wheel's, or (the owner lists none) the file on disk does."""
    if not path.digest or not path.algorithm:
        return False
    if owner.digest:
        return owner.algorithm == path.algorithm and owner.digest == path.digest
    if owner.planned:
        return False
    try:
        digest = hashlib.new(path.algorithm)
        with open(path.target, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except (OSError, ValueError):
        return False
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() == path.digest


def _overwrite_finding(action: Action, wheel, clashes: Dict[str, List[str]]) -> F.Finding:
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
    return F.Finding(F.INSTALL_WOULD_OVERWRITE, F.ERROR, wheel.label, message, fix, details)


# --- CUDA majors -------------------------------------------------------------------------------------------------

def _major_mismatches(obs, plan: Plan, wheels) -> List[F.Finding]:
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
        major, evidence = _wheel_major(wheel)
        if major is None or major == anchor_major:
            continue
        findings.append(F.Finding(
            F.INSTALL_CUDA_MAJOR_MISMATCH, F.ERROR, wheel.label,
            "%s (%s, %s) is built for CUDA %d (%s), but the anchor %s is built for CUDA %d." % (
                wheel.label, os.path.basename(wheel.file), action.reason, major, evidence, anchor_label, anchor_major),
            "Drop %s (or the packages entry that brings it), or use its CUDA %d build; a venv runs one CUDA major."
            % (wheel.name, anchor_major),
            {"wheel": os.path.basename(wheel.file), "distribution": wheel.name, "version": wheel.version,
             "requirement": action.requirement, "cuda_major": major, "evidence": evidence,
             "anchor_cuda_major": anchor_major}))
    return findings


def _wheel_major(wheel) -> Tuple[Optional[int], Optional[str]]:
    """The CUDA major of a wheel as of an installed distribution: name, install folder, version, dependencies."""
    return cuda.cuda_major(wheel.key, wheel.version, [p.record for p in wheel.paths], (), wheel.requires_dist)


def _anchor_major(obs, anchor: str, wheels) -> Tuple[str, Optional[int]]:
    """The anchor's label and CUDA major: of its wheel when the plan installs it, else as installed."""
    if anchor in wheels:
        wheel = wheels[anchor]
        return wheel.label, _wheel_major(wheel)[0]
    for dist in obs.distributions:
        if dist.key == anchor:
            return dist.label, obs.majors.get(dist.dist_info, (None, None))[0]
    return anchor, None


def _with_reasons(plan: Plan, replaced: Dict[str, Dict[str, List[str]]], unchecked: Sequence[str]) -> Plan:
    """The plan with each planned replacement, and each wheel the sources do not offer, said in its action's reason."""
    if not replaced and not unchecked:
        return plan

    def explained(action):
        freed = replaced.get(action.name) if action.kind != "remove" else None
        if freed:
            action = dataclasses.replace(action, reason=action.reason + "; replaces %s, removed before it" % "; ".join(
                "%d file(s) of %s" % (len(paths), label) for label, paths in sorted(freed.items())))
        if action.kind != "remove" and action.name in unchecked:
            action = dataclasses.replace(action, reason=action.reason + "; no wheel of it in the wheel sources: "
                                         "not checked, its batch will be unfixable")
        return [action]
    return _each_action(plan, explained)
