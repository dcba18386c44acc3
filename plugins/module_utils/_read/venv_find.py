# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find the CUDA venvs of a host: walk roots (stat-free where the kernel gives d_type) and /proc.

Private to the gpuops.cuda_venv collection: not a public API. Standard library only: cuda_venv_find runs with the
node's own Python (3.9+), before the modules' tools venv exists.

Rules of the walk, each for speed or safety:
- Symlinks are never followed (a loop costs nothing; nothing outside a root is reached through one); a root that
  is itself a symlink is resolved once.
- Mount points of pseudo and network filesystems (from /proc/self/mountinfo) are skipped, with a note.
- A folder holding ``pyvenv.cfg`` is a venv: it is read (pyvenv.cfg, its site-packages' ``*.dist-info`` names,
  the anchor's INSTALLER, RECORD sizes) and never walked further.
- A ``site-packages`` or ``dist-packages`` folder outside a venv (``pip install --user``, a system-wide install)
  is listed the same way and never walked further.
- Anything that cannot be read, or vanishes while read, is a note, never an error.
- What the collection's repair writes is never a venv: a venv's state dir (``.cuda_venv``: its snapshots are whole
  hard-linked trees) and a swap dir (``PARENT/.NAME.cuda_venv`` beside ``PARENT/NAME``, holding the swap's journal,
  ``previous/`` or ``next/``: the generations a swap kept and the copy it repairs) are not walked, and a path inside
  one (a root given there, a process running from an old generation) is a note. A venv's previous generations are
  reported with it (``generations``: count, the newest, the bytes their RECORD files list).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.cuda_knowledge import cuda_major, local_cuda_version
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.install_times import iso_time
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.venv_layout import (
    VenvError, previous_generations, read_layout, repair_state_of, swap_dir_of, swap_dir_venv)

# Where people keep venvs: root's and users' homes (~/venvs, ~/.venv, project .venv folders, ~/.local), services
# (/opt/<service>/.venv, /srv), /usr/local (images' system-wide installs), /var/lib (services' state), and the
# /data and /workspace folders GPU images mount.
DEFAULT_ROOTS = ("/root", "/home", "/opt", "/srv", "/usr/local", "/var/lib", "/data", "/workspace")

# nvidia-* wheels that are no CUDA stack: NVML's Python bindings (pynvml) read the driver, ship no CUDA library.
NOT_CUDA = frozenset(("nvidia-ml-py",))

# Anchors in the order one is chosen when a venv has several; cupy's distribution carries the CUDA major (cupy-cuda12x).
ANCHORS = ("torch", "jax", "cupy")

PSEUDO_FILESYSTEMS = frozenset((
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "pstore", "bpf",
    "configfs", "fusectl", "mqueue", "hugetlbfs", "autofs", "binfmt_misc", "efivarfs", "rpc_pipefs", "nsfs",
    "fuse.lxcfs", "fuse.gvfsd-fuse", "fuse.portal", "selinuxfs",
))
NETWORK_FILESYSTEMS = frozenset((
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "9p", "afs", "ceph", "glusterfs", "lustre", "gpfs", "beegfs",
    "fuse.sshfs", "fuse.glusterfs", "fuse.cephfs", "fuse.s3fs", "fuse.rclone", "fuse.gcsfuse", "fuse.davfs", "davfs",
    "fuse.juicefs", "fuse.mountpoint-s3",
))

_SITE_FOLDERS = ("site-packages", "dist-packages")
_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.dist-info$")
_USER_SITE = re.compile(r"/\.local/lib/python\d+\.\d+/site-packages$")
_PYTHON_DIR = re.compile(r"/lib(?:64)?/python(\d+\.\d+)/(?:site|dist)-packages$")
_MOUNT_ESCAPE = re.compile(r"\\([0-7]{3})")
_RUN_TIME = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z-")  # a repair's run id: 20261205T162637Z-1385-6722


@dataclass
class FoundVenv:
    """A venv (or a site folder outside one) that holds a CUDA stack, as its names on disk tell it."""

    path: str
    kind: str  # "venv"; outside a venv, "user" (~/.local) or "system"
    interpreter: Optional[str]  # the venv's bin/python; for a site folder, none
    base_interpreter: Optional[str]  # pyvenv.cfg's executable, else where bin/python resolves to
    python_version: Optional[str]
    anchor: Optional[str]
    anchor_version: Optional[str]
    cuda_major: Optional[int]  # the anchor's (torch's +cuNNN, jax's and cupy's plugin names), else the one all share
    cuda_majors: List[int]  # every major the CUDA distributions' names and versions tell: two is a contamination
    installer: Optional[str]  # INSTALLER of the anchor's (else the first CUDA) distribution
    size: int  # bytes the distributions' RECORD files list
    last_install: Optional[str]  # the newest dist-info folder's mtime, UTC ISO 8601
    distributions: int
    cuda_distributions: List[str]
    processes: List[int] = field(default_factory=list)  # pids running from it now
    found_by: str = "walk"  # "walk" or "process"
    generations: Optional[dict] = None  # the previous generations a swapped repair kept: count, newest, size


@dataclass
class Found:
    venvs: List[FoundVenv] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    scanned_dirs: int = 0

    def as_dict(self) -> dict:
        return {"venvs": [asdict(v) for v in self.venvs], "notes": list(self.notes), "scanned_dirs": self.scanned_dirs}


def find_venvs(roots: Sequence[str] = DEFAULT_ROOTS, processes: bool = True, paths: Sequence[str] = (), proc: str = "/proc",
               mountinfo: str = "/proc/self/mountinfo") -> Found:
    """Every CUDA venv under ``roots`` (absolute folders) and, with ``processes``, those processes run from now;
    with ``paths`` (shell globs, fnmatch: ``*`` crosses ``/``), only those whose path matches one."""
    found = Found()
    skipped = _skipped_mounts(mountinfo, found.notes)
    seen: Dict[str, FoundVenv] = {}
    for root in _distinct_roots(roots, found.notes):
        _walk(root, skipped, found, seen)
    if processes:
        for path, pids in sorted(_process_venvs(proc).items()):
            venv = seen.get(path)
            if venv is None and path not in seen:
                venv = read_venv(path, found.notes, found_by="process")
                seen[path] = venv
                if venv is not None:
                    found.venvs.append(venv)
            if venv is not None:
                venv.processes = sorted(set(venv.processes) | pids)
    if paths:
        found.venvs = [v for v in found.venvs if any(fnmatch.fnmatchcase(v.path, glob) for glob in paths)]
    for venv in found.venvs:
        venv.generations = _generations(venv.path, found.notes) if venv.kind == "venv" else None
    found.venvs.sort(key=lambda v: v.path)
    return found


def _generations(root: str, notes: List[str]) -> Optional[dict]:
    """count, newest (the run id and when it was kept) and size of the previous generations a swap kept."""
    swap_dir = swap_dir_of(root)
    if swap_dir_venv(swap_dir) is None:
        return None
    kept = previous_generations(swap_dir)
    if not kept:
        return None
    size = 0
    for generation in kept:
        try:
            for site in read_layout(generation).site_packages:
                size += sum(_record_size(p) for _k, _v, p in _dist_infos(site, notes))
        except VenvError as exc:
            notes.append(str(exc))
    run = os.path.basename(kept[-1])
    stamp = _RUN_TIME.match(run)  # a run id starts with when the run began (UTC); else the folder's mtime
    newest = None if stamp else _mtime(kept[-1])
    when = "%s-%s-%sT%s:%s:%sZ" % stamp.groups() if stamp else (iso_time(newest) if newest is not None else None)
    return {"count": len(kept), "newest": run, "newest_time": when, "size": size}


_HAS_STRICT = True
try:
    os.path.realpath("/", strict=True)  # Python 3.10+
except TypeError:
    _HAS_STRICT = False


def _strict_realpath(path: str) -> str:
    """os.path.realpath(path, strict=True) before Python 3.10."""
    os.stat(path)  # raises ELOOP on a loop, ENOENT when missing
    return os.path.realpath(path)


def _distinct_roots(roots: Sequence[str], notes: List[str]) -> List[str]:
    """The roots resolved, those inside another root dropped; each one missing or unreadable noted."""
    resolved = []
    for root in roots:
        try:
            real = os.path.realpath(root, strict=True) if _HAS_STRICT else _strict_realpath(root)
        except FileNotFoundError:
            notes.append("root %s does not exist" % root)
            continue
        except OSError as exc:
            notes.append("root %s cannot be resolved: %s" % (root, _why(exc)))
            continue
        if not os.path.isdir(real):
            notes.append("root %s is not a folder" % root)
            continue
        resolved.append(real)
    kept: List[str] = []
    for real in sorted(set(resolved), key=len):
        if not any(real == k or real.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(real)
    return kept


def _walk(root: str, skipped: Dict[str, str], found: Found, seen: Dict[str, Optional[FoundVenv]]) -> None:
    stack = [root]
    while stack:
        folder = stack.pop()
        found.scanned_dirs += 1
        try:
            with os.scandir(folder) as entries:
                dirs = []
                is_venv = False
                for entry in entries:
                    name = entry.name
                    if name == "pyvenv.cfg":
                        is_venv = True
                        break
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            dirs.append(name)
                    except OSError:
                        continue
        except FileNotFoundError:
            if folder != root:
                found.notes.append("%s vanished while scanned" % folder)
            continue
        except OSError as exc:
            found.notes.append("cannot read %s: %s" % (folder, _why(exc)))
            continue
        if is_venv:
            _add(folder, found, seen, read_venv)
            continue
        base = folder.rstrip("/") + "/"
        for name in dirs:
            path = base + name
            fstype = skipped.get(path)
            if fstype is not None:
                found.notes.append("skipped %s (%s filesystem)" % (path, fstype))
            elif name in _SITE_FOLDERS:
                _add(path, found, seen, read_site)
            elif not (name.endswith(".cuda_venv") and swap_dir_venv(path)):  # a swap's generations: with their venv
                stack.append(path)


def _add(path: str, found: Found, seen: Dict[str, Optional[FoundVenv]], reader) -> None:
    if path in seen:
        return
    venv = reader(path, found.notes)
    seen[path] = venv
    if venv is not None:
        found.venvs.append(venv)


def read_venv(path: str, notes: List[str], found_by: str = "walk") -> Optional[FoundVenv]:
    """The venv at ``path`` when it holds a CUDA stack, else None; what cannot be read (or vanished) noted."""
    owner = repair_state_of(path)
    if owner is not None:
        notes.append("%s is repair state of the venv %s (a snapshot, a swap's copy or a previous generation), not a "
                     "venv of its own" % (path, owner))
        return None
    try:
        layout = read_layout(path)
    except VenvError as exc:
        notes.append(_vanished(path) if not os.path.lexists(path) else str(exc))
        return None
    dists: List[Tuple[str, str, str]] = []
    for site in layout.site_packages:
        dists += _dist_infos(site, notes)
    if not _has_cuda_stack(dists):
        return None
    python = os.path.join(layout.root, "bin", "python")
    base = layout.config.get("executable") or _resolved_outside(python, layout.root)
    return _describe(layout.root, "venv", python, base, layout.version, dists, found_by)


def read_site(path: str, notes: List[str]) -> Optional[FoundVenv]:
    """A site-packages folder outside any venv (``pip install --user``, a system-wide install) with a CUDA stack."""
    dists = _dist_infos(path, notes)
    if not _has_cuda_stack(dists):
        return None
    match = _PYTHON_DIR.search(path)
    kind = "user" if _USER_SITE.search(path) else "system"
    return _describe(path, kind, None, None, match.group(1) if match else None, dists, "walk")


def _dist_infos(site: str, notes: List[str]) -> List[Tuple[str, str, str]]:
    """(key, version, dist-info path) of each ``*.dist-info`` folder in ``site``: its names only."""
    found = []
    try:
        with os.scandir(site) as entries:
            for entry in entries:
                match = _DIST_INFO.match(entry.name) if entry.name.endswith(".dist-info") else None
                if match:
                    found.append((canonical_name(match.group("name")), match.group("version"), entry.path))
    except FileNotFoundError:
        notes.append(_vanished(site))
    except OSError as exc:
        notes.append("cannot read %s: %s" % (site, _why(exc)))
    return found


def _has_cuda_stack(dists: Iterable[Tuple[str, str, str]]) -> bool:
    return any(key in ("torch", "jax") or key.startswith("cupy") or _is_cuda(key) for key, _v, _p in dists)


def _describe(path, kind, python, base, version, dists, found_by) -> FoundVenv:
    anchor = _anchor(dists)
    majors = sorted({m for m in (_dist_major(key, ver) for key, ver, _p in dists) if m is not None})
    cuda = [d for d in dists if _is_cuda(d[0])]
    major = _anchor_major(anchor, dists) if anchor else None
    if major is None and len(majors) == 1:
        major = majors[0]
    first = anchor or (min(cuda) if cuda else None)
    times = [t for t in (_mtime(p) for _k, _v, p in dists) if t is not None]
    return FoundVenv(
        path=path, kind=kind, interpreter=python, base_interpreter=base, python_version=version,
        anchor=anchor[0] if anchor else None, anchor_version=anchor[1] if anchor else None,
        cuda_major=major, cuda_majors=majors, installer=_installer(first[2]) if first else None,
        size=sum(_record_size(p) for _k, _v, p in dists), last_install=iso_time(max(times)) if times else None,
        distributions=len(dists), cuda_distributions=sorted(k for k, _v, _p in cuda), found_by=found_by,
    )


def _anchor(dists) -> Optional[Tuple[str, str, str]]:
    """The first of torch, jax, cupy-* installed: (name, version, dist-info path); cupy keeps its full name."""
    for wanted in ANCHORS:
        for dist in sorted(dists):
            if dist[0] == wanted or (wanted == "cupy" and dist[0].startswith("cupy")):
                return dist
    return None


def _anchor_major(anchor, dists) -> Optional[int]:
    key, version, _path = anchor
    if key == "torch":
        cuda = local_cuda_version(version)
        return int(cuda.split(".")[0]) if cuda else None
    if key == "jax":
        plugins = [_dist_major(k, v) for k, v, _p in dists if k.startswith("jax-cuda")]
        return next((m for m in plugins if m is not None), None)
    return _dist_major(key, version)


def _is_cuda(key: str) -> bool:
    if key in NOT_CUDA:
        return False
    return key.startswith("nvidia-") or key.startswith("cuda-") or key.startswith("cupy-cuda") or key.startswith("jax-cuda")


def _dist_major(key: str, version: str) -> Optional[int]:
    return cuda_major(key, version, ())[0] if _is_cuda(key) else None


def _installer(dist_info: str) -> Optional[str]:
    try:
        with open(os.path.join(dist_info, "INSTALLER"), "rb") as handle:
            return handle.read(256).decode("utf-8", "replace").strip() or None
    except OSError:
        return None


def _record_size(dist_info: str) -> int:
    """The sum of RECORD's size column (its third)."""
    total = 0
    try:
        with open(os.path.join(dist_info, "RECORD"), "rb") as handle:
            for line in handle:
                size = line.rstrip().rpartition(b",")[2]
                if size.isdigit():
                    total += int(size)
    except OSError:
        return total
    return total


def _mtime(path: str) -> Optional[float]:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _resolved_outside(python: str, root: str) -> Optional[str]:
    real = os.path.realpath(python)
    return real if os.path.exists(real) and not real.startswith(root.rstrip("/") + "/") else None


def _skipped_mounts(mountinfo: str, notes: List[str]) -> Dict[str, str]:
    """{mount point: filesystem type} of the pseudo and network filesystems mounted now."""
    skipped = {}
    try:
        with open(mountinfo, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError as exc:
        notes.append("cannot read %s: %s; no filesystem is skipped by type" % (mountinfo, _why(exc)))
        return skipped
    for line in text.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or not rest:
            continue
        if rest[0] in PSEUDO_FILESYSTEMS or rest[0] in NETWORK_FILESYSTEMS:
            skipped[_MOUNT_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])] = rest[0]
    return skipped


def _process_venvs(proc: str) -> Dict[str, Set[int]]:
    """{venv root: pids} for the processes whose executable, first arguments or mapped files lie in a venv."""
    roots: Dict[str, Set[int]] = {}
    cache: Dict[str, Optional[str]] = {}
    try:
        pids = [int(name) for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return roots
    for pid in pids:
        for path in _process_paths(os.path.join(proc, str(pid))):
            root = _venv_of(path, cache)
            if root is not None:
                roots.setdefault(root, set()).add(pid)
    return roots


def _process_paths(base: str) -> Set[str]:
    """The paths a process runs from: its exe, its first two arguments when absolute (a venv's bin/python is a
    symlink to the base interpreter, so exe alone misses it), and its mapped files under a lib/pythonX.Y."""
    paths = set()
    try:
        paths.add(os.readlink(os.path.join(base, "exe")))
    except OSError:
        pass
    try:
        with open(os.path.join(base, "cmdline"), "rb") as handle:
            args = handle.read(16384).split(b"\0")[:2]
        paths.update(a.decode("utf-8", "replace") for a in args if a.startswith(b"/"))
    except OSError:
        pass
    try:
        with open(os.path.join(base, "maps"), "rb") as handle:
            for line in handle:
                mapped = line.split(None, 5)
                if len(mapped) == 6 and b"/lib/python" in mapped[5]:
                    paths.add(mapped[5].rstrip(b"\n").decode("utf-8", "replace"))
    except OSError:
        pass
    return paths


def _venv_of(path: str, cache: Dict[str, Optional[str]]) -> Optional[str]:
    """The venv root holding ``path`` (the nearest folder above it with pyvenv.cfg), or None."""
    folder = os.path.dirname(path)
    visited = []
    while folder and folder != "/":
        if folder in cache:
            found = cache[folder]
            break
        visited.append(folder)
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            found = folder
            break
        folder = os.path.dirname(folder)
    else:
        found = None
    for seen in visited:
        cache[seen] = found
    return found


def _vanished(path: str) -> str:
    return "%s vanished while scanned" % path


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)
