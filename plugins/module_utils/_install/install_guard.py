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
at once), its RECORD read, the files on disk its paths would replace hashed where no RECORD hash says, and the
plan walked in order by the rules of ``_decide/install_refusals.py``:

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

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.install_refusals import (
    Owner, PathOwners, major_mismatches, overwrites)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import locate_entries
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.installers import Backend, InstallerError, WheelSources
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.plan import Action, Completion, Plan, complete_plan
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_fetch import FetchError, download, resolve
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_kernels import kernel_refusals
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._install.wheel_paths import (
    WheelError, local_folders, pick_wheel, read_wheel)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_tags import supported_tags
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

DOWNLOADS = "downloads"
UV_LOCK = ".lock"  # uv locks the environment it installs into (or dry-runs against) with this file in its root


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


def guard_plan(obs: Observations, plan: Plan, check: Optional[InstallCheck], backend: Callable[[], Backend], state_dir: str,
               check_mode: bool, secrets: Sequence[str] = ()) -> Completion:
    """What completes ``plan`` (the resolved dependencies of new ``packages`` entries, the files each install
    replaces, the wheels not checked; ``plan.complete_plan`` applies it) once every wheel it installs is known to
    overwrite nothing; raises InstallRefused (or FetchError) otherwise.

    ``backend()`` gives the installer backend; it is asked for only when the installer must resolve or fetch."""
    if check is None or not any(a.kind != "remove" for b in plan.batches for a in b.actions):
        return Completion()
    try:
        with _root_untouched(obs.layout.root):
            return _guard(obs, plan, check, backend, state_dir, check_mode, secrets)
    except (FetchError, InstallerError) as exc:
        raise InstallRefused("refused before any change: the paths the plan's wheels write cannot be known: %s"
                             % exc, (), plan) from None


def _guard(obs: Observations, plan: Plan, check: InstallCheck, backend: Callable[[], Backend], state_dir: str, check_mode: bool,
           secrets) -> Completion:
    completion = Completion(dependencies=_dependencies(obs, plan, check, backend(), check_mode, secrets)
                            if check.with_dependencies else ())
    plan = complete_plan(plan, completion)
    wanted = [a for b in plan.batches for a in b.actions if a.kind != "remove"]
    try:
        with _download_folder(state_dir, needed=not _local_only(check.sources)) as folder:
            files = _wheel_files(obs, wanted, check.sources, backend, folder, check_mode, secrets)
            wheels = {name: _read(obs, wheel_file) for name, wheel_file in files.items()}
    except InstallRefused as exc:
        raise InstallRefused(str(exc), exc.findings, plan) from None
    findings, replaced = overwrites(obs, plan, wheels, _path_owners(obs, wheels))
    findings += major_mismatches(obs, plan, wheels)
    findings += kernel_refusals(wheels, [_name_of(p) for p in check.packages], check.gpu_archs)[0]
    if findings:
        raise InstallRefused("refused before any change: %s" % " ".join(f.message for f in findings), findings, plan)
    return dataclasses.replace(completion, unchecked=tuple(a.name for a in wanted if a.name not in wheels), replaced=tuple(
        (name, tuple(sorted((label, len(paths)) for label, paths in freed.items()))) for name, freed in sorted(replaced.items())))


# --- which wheel each action installs --------------------------------------------------------------------------

def _local_only(sources: WheelSources) -> bool:
    return bool(sources.no_index) and local_folders(sources.find_links) is not None


def _wheel_files(obs: Observations, actions, sources: WheelSources, backend: Callable[[], Backend], folder, check_mode, secrets) -> Dict[str, str]:
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


def _read(obs: Observations, wheel_file: str):
    try:
        wheel = read_wheel(wheel_file, obs.layout.root, obs.site_packages[0], _python_version(obs))
    except WheelError as exc:
        raise InstallRefused("refused before any change: %s" % exc, ()) from None
    leaving = [p for p in wheel.problems if "leaves the venv" in p]
    if leaving:
        raise InstallRefused("refused before any change: %s would write outside the venv: %s" % (
            wheel.label, "; ".join(leaving[:3])), ())
    return wheel


def _python_version(obs: Observations) -> str:
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

def _dependencies(obs: Observations, plan: Plan, check: InstallCheck, backend: Backend, check_mode, secrets):
    """(install name, the pinned installs of what the installer resolves for it) for each install of a ``packages``
    entry that is not installed yet; what the plan installs already is left as planned."""
    installed = {d.key for d in obs.distributions}
    roots = {canonical_name(_name_of(p)) for p in check.packages}
    planned = {a.name for b in plan.batches for a in b.actions if a.kind != "remove"}
    found = []
    for action in (a for b in plan.batches for a in b.actions):
        if action.kind != "install" or action.name not in roots or action.name in installed:
            continue
        follow = []
        for name, version in resolve(backend, [action.requirement], check_mode, secrets):
            if name not in planned and name not in installed:
                follow.append(Action("install", name, "%s==%s" % (name, version),
                                     "dependency of %s, resolved by %s" % (action.name, backend.name)))
                planned.add(name)
        if follow:
            found.append((action.name, tuple(follow)))
    return tuple(found)


def _name_of(requirement: str) -> str:
    head = requirement.strip()
    for stop in "[<>=!~;( @":
        head = head.split(stop, 1)[0]
    return head


# --- what the wheels' paths hold now (the rules: _decide/install_refusals.py) ---------------------------------

def _path_owners(obs: Observations, wheels) -> PathOwners:
    """The real path of every path the plan's wheels write, its installed owners (with their RECORD hash), and
    the wheel paths whose file on disk an installed owner without a RECORD hash holds with the wheel's bytes."""
    real = {p.target: os.path.realpath(p.target) for w in wheels.values() for p in w.paths}
    targets = set(real.values())
    dists = {d.dist_info: d for t in targets for d in obs.owners_of(t)}
    installed: Dict[str, List[Owner]] = {}
    for dist_info, rows in locate_entries(list(dists.values()), obs.layout.root).items():
        dist = dists[dist_info]
        for entry, location, _problem in rows:
            where = os.path.realpath(location) if location else None
            if where in targets:
                installed.setdefault(where, []).append(Owner(dist.key, dist.label, entry.algorithm, entry.digest, False))
    same = {path for wheel in wheels.values() for path in wheel.paths
            if _same_on_disk(path, [o for o in installed.get(real[path.target], ()) if o.key != wheel.key])}
    return PathOwners(real, installed, frozenset(same))


def _same_on_disk(path, others: Sequence[Owner]) -> bool:
    """The file on disk at the wheel path's target has the wheel's hash; asked only where another distribution
    owns it without a RECORD hash (only the file on disk then says whether the bytes differ)."""
    if not path.digest or not path.algorithm or all(o.digest for o in others):
        return False
    try:
        digest = hashlib.new(path.algorithm)
        with open(path.target, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except (OSError, ValueError):
        return False
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode() == path.digest
