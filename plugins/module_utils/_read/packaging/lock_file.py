# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The user's lock file as the declared state: a ``pylock.toml`` (PEP 751) or a requirements file pinned with ``==``
(with ``--hash`` lines, as ``pip-compile --generate-hashes`` and ``uv pip compile --generate-hashes`` write it).

Private to the gpuops.cuda_venv collection: not a public API.

Two steps, so that a bad file fails before anything is observed or changed:
- ``parse_lock(name, text)``: the file read and validated, every error naming the file and the line (requirements)
  or the key (``packages[3].wheels[0]``, pylock): TOML syntax, PEP 751's rules (``packaging.pylock``), a package
  without a version or from a direct source (vcs, directory, archive: the repair installs by name from wheel
  sources), a requirement not pinned with ``==``, an installer option in a requirements file (the wheel sources are
  the modules' own options), hashes on some lines and not on others (pip's hash-checking mode is all or nothing);
- ``select(parsed, marker_env, python_version, extras, groups)``: the packages for the venv's own interpreter and
  platform, as the spec defines the selection (``Pylock.select``: ``requires-python``, ``environments``, each
  package's marker with the extras and dependency groups asked for, the wheel whose tags the venv installs; a
  requirements line's marker). A lock for another Python or platform is an error naming the file.
A pylock file is named ``pylock.toml`` or ``pylock.NAME.toml`` (another ``*.toml`` name is read as one too, though pip and
uv want those names); any other name is read as a requirements file.
Reading TOML needs Python >= 3.11 (``tomllib``) where the module runs, or the ``tomli`` package.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple
from urllib.parse import unquote, urlsplit

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.packaging_lib import (
    InvalidRequirement, Requirement, UndefinedComparison, UndefinedEnvironmentName)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.wheel_tags import supported_tags

PYLOCK = "pylock"
REQUIREMENTS = "requirements"
_PYLOCK_NAME = re.compile(r"^pylock\.([^.]+\.)?toml$")
_HASH = re.compile(r"--hash[=\s]+(\S+)")
_HASH_VALUE = re.compile(r"^(sha256|sha384|sha512):[0-9a-fA-F]+$")


class LockError(CudaVenvError, ValueError):
    """A lock file that cannot be the declared state (message names the file, and the line or key)."""


@dataclass(frozen=True)
class LockedWheel:
    """A wheel the lock names for a package: its file name, where it is (a URL or a path, "" when the lock does
    not say) and its hashes (``algorithm:hex``)."""

    filename: str
    location: str
    hashes: Tuple[str, ...]


@dataclass(frozen=True)
class LockedPackage:
    """One package the lock selects: the version it pins, the hashes the installer may accept (every file the lock
    names for it), the wheel selected for the venv (None: the lock names none, or a requirements file) and where in
    the file it is ("line 12", "packages[3]")."""

    name: str  # canonical
    version: str
    hashes: Tuple[str, ...]
    wheel: Optional[LockedWheel]
    where: str

    @property
    def pin(self) -> str:
        return "%s==%s" % (self.name, self.version)


@dataclass(frozen=True)
class ParsedLock:
    """A lock file read and validated, before any environment is applied."""

    name: str  # the file as the user named it: every message says it
    kind: str  # PYLOCK or REQUIREMENTS
    folder: Optional[str]  # where a pylock's relative wheel paths start; None when the file is not on this node
    pylock: object = None  # packaging.pylock.Pylock (PYLOCK)
    lines: Tuple[Tuple[int, object, Tuple[str, ...]], ...] = ()  # (line, Requirement, hashes) (REQUIREMENTS)


@dataclass(frozen=True)
class Lock:
    """The declared state a lock selects for one venv."""

    name: str
    kind: str
    packages: Tuple[LockedPackage, ...]  # sorted by name

    def pins(self) -> Tuple[Tuple[str, str], ...]:
        return tuple((p.name, p.version) for p in self.packages)

    def package(self, name: str) -> Optional[LockedPackage]:
        return next((p for p in self.packages if p.name == name), None)

    @property
    def hashed(self) -> bool:
        return bool(self.packages) and all(p.hashes for p in self.packages)

    def wheel_folders(self) -> Tuple[str, ...]:
        """The folders on this node that hold a wheel the lock names: find-links for the installs."""
        local = [p.wheel.location for p in self.packages if p.wheel is not None and p.wheel.location.startswith("/")]
        return tuple(sorted({os.path.dirname(path) for path in local if os.path.isfile(path)}))


def lock_kind(name: str) -> str:
    """PYLOCK for ``pylock.toml`` and ``pylock.NAME.toml`` (PEP 751's names) and any other ``*.toml`` (a requirements
    file is never TOML; pip and uv want PEP 751's names), REQUIREMENTS for any other name."""
    base = os.path.basename(name)
    return PYLOCK if _PYLOCK_NAME.match(base) or base.endswith(".toml") else REQUIREMENTS


def load_lock(name: str, content: Optional[str] = None) -> ParsedLock:
    """The lock the user named ``name``: its ``content`` when given (read on the controller), else the file at
    ``name`` on this node; parsed and validated (``parse_lock``)."""
    if content is not None:
        return parse_lock(name, content)
    path = os.path.abspath(os.path.expanduser(name))
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise LockError("lock %s cannot be read: %s" % (name, exc)) from None
    return parse_lock(name, text, os.path.dirname(path))


def parse_lock(name: str, text: str, folder: Optional[str] = None) -> ParsedLock:
    """``text`` (the lock the user named ``name``) read and validated; LockError naming the file and the line or
    key. ``folder``: where the file is on this node (a pylock's relative wheel paths), None when it is not here."""
    if lock_kind(name) == PYLOCK:
        return ParsedLock(name, PYLOCK, folder, pylock=_parse_pylock(name, text))
    return ParsedLock(name, REQUIREMENTS, folder, lines=_parse_requirements(name, text))


def select(parsed: ParsedLock, marker_env: dict, python_version: str, extras: Sequence[str] = (),
           groups: Optional[Sequence[str]] = None) -> Lock:
    """The packages ``parsed`` selects for the venv whose interpreter has ``marker_env`` and ``python_version``
    (``groups`` None: the lock's default groups); LockError naming the file when it is for another Python or
    platform, or asks for extras or groups it does not declare."""
    if parsed.kind == PYLOCK:
        packages = _select_pylock(parsed, marker_env, python_version, extras, groups)
    else:
        if extras or groups:
            raise LockError("lock %s: lock_extras and lock_groups need a pylock.toml (a requirements file has "
                            "neither)" % parsed.name)
        packages = _select_requirements(parsed, marker_env)
    seen = {}
    for package in packages:
        if package.name in seen:
            raise LockError("lock %s pins %s twice for this venv (%s and %s)" % (
                parsed.name, package.name, seen[package.name].where, package.where))
        seen[package.name] = package
    return Lock(parsed.name, parsed.kind, tuple(sorted(packages, key=lambda p: p.name)))


# --- pylock.toml -----------------------------------------------------------------------------------------------

def _parse_pylock(name: str, text: str):
    Pylock, PylockValidationError, _wheel, _select = _pylock()
    try:
        data = _toml().loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError: the message says the line and column
        raise LockError("lock %s is not valid TOML: %s" % (name, exc)) from None
    try:
        pylock = Pylock.from_dict(data)
    except PylockValidationError as exc:
        raise LockError("lock %s is not a valid pylock file (PEP 751): %s" % (name, exc)) from None
    for number, package in enumerate(pylock.packages):
        where = "packages[%d] (%s)" % (number, package.name)
        if package.is_direct:
            raise LockError("lock %s: %s is locked to a direct source (vcs, directory or archive): the repair installs "
                            "by name and version from the wheel sources; lock it from an index or a wheelhouse"
                            % (name, where))
        if package.version is None:
            raise LockError("lock %s: %s has no version: a declared state pins every version" % (name, where))
    return pylock


def _pylock():
    """packaging.pylock's names, imported only when a pylock is read (packaging >= 26.1, on Python >= 3.10)."""
    try:
        from packaging.pylock import PackageWheel, Pylock, PylockSelectError, PylockValidationError
    except (ImportError, TypeError):  # TypeError: its dataclasses need Python 3.10
        raise LockError("reading a pylock.toml needs packaging >= 26.1 on Python >= 3.10 where the module runs") from None
    return Pylock, PylockValidationError, PackageWheel, PylockSelectError


def _toml():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        try:
            import tomli as tomllib
        except ImportError:
            raise LockError("reading a pylock.toml needs Python >= 3.11 (tomllib) or the tomli package where the "
                            "module runs") from None
    return tomllib


def _select_pylock(parsed: ParsedLock, marker_env: dict, python_version: str, extras, groups) -> List[LockedPackage]:
    _pylock_class, _invalid, PackageWheel, PylockSelectError = _pylock()
    tags = supported_tags(python_version, marker_env.get("implementation_name", "cpython"))
    index = {id(package): number for number, package in enumerate(parsed.pylock.packages)}
    try:
        chosen = list(parsed.pylock.select(environment=marker_env, tags=tags, extras=list(extras),
                                           dependency_groups=None if groups is None else list(groups)))
    except PylockSelectError as exc:
        raise LockError("lock %s does not fit this venv (Python %s, %s): %s" % (
            parsed.name, python_version, marker_env.get("platform_machine", "?"), exc)) from None
    packages = []
    for package, dist in chosen:
        files = list(package.wheels or ()) + ([package.sdist] if package.sdist else [])
        hashes = tuple(sorted({"%s:%s" % item for f in files for item in (f.hashes or {}).items()}))
        wheel = None
        if isinstance(dist, PackageWheel):
            wheel = LockedWheel(dist.filename, _location(dist.url, dist.path, parsed.folder),
                                tuple(sorted("%s:%s" % item for item in dist.hashes.items())))
        packages.append(LockedPackage(canonical_name(package.name), str(package.version), hashes, wheel,
                                      "packages[%d]" % index[id(package)]))
    return packages


def _location(url: Optional[str], path: Optional[str], folder: Optional[str]) -> str:
    """Where a locked file is: a local path when the lock says one this node can open, else its URL (or "")."""
    if url and url.startswith("file://"):
        return unquote(urlsplit(url).path)
    if path and (os.path.isabs(path) or folder):
        return os.path.normpath(os.path.join(folder or "", path))
    return url or ""


# --- requirements files ----------------------------------------------------------------------------------------

def _parse_requirements(name: str, text: str):
    lines = []
    for number, line in _logical_lines(text):
        if line.startswith("-"):
            raise LockError("lock %s line %d: installer option %r is not read from a lock: give wheel sources with "
                            "the module's find_links, index_url and no_index" % (name, number, line.split()[0]))
        hashes = tuple(_HASH.findall(line))
        requirement_text = _HASH.sub("", line).strip()
        for value in hashes:
            if not _HASH_VALUE.match(value):
                raise LockError("lock %s line %d: hash %r is not algorithm:hex (sha256, sha384 or sha512)" % (
                    name, number, value))
        try:
            requirement = Requirement(requirement_text)
        except InvalidRequirement as exc:
            raise LockError("lock %s line %d: %r is not a requirement: %s" % (name, number, requirement_text, exc)) from None
        specs = list(requirement.specifier)
        if requirement.url or len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
            raise LockError("lock %s line %d: %r is not pinned to one version with ==: a declared state pins every "
                            "version (pip-compile or uv pip compile write such a file)" % (name, number, requirement_text))
        lines.append((number, requirement, hashes))
    hashed = [number for number, _req, hashes in lines if hashes]
    if hashed and len(hashed) != len(lines):
        bare = [number for number, _req, hashes in lines if not hashes]
        raise LockError("lock %s: lines %s have no --hash while others do; pip's hash-checking mode needs a hash on "
                        "every requirement" % (name, ", ".join(str(n) for n in bare[:8])))
    if not lines:
        raise LockError("lock %s pins no package" % name)
    return tuple(lines)


def _logical_lines(text: str):
    """(first line number, text) of each requirement: comments cut, backslash continuations joined."""
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            yield start, line
    if pending.strip():
        yield start, pending.strip()


def _select_requirements(parsed: ParsedLock, marker_env: dict) -> List[LockedPackage]:
    packages = []
    for number, requirement, hashes in parsed.lines:
        try:
            if requirement.marker is not None and not requirement.marker.evaluate(dict(marker_env, extra="")):
                continue
        except (UndefinedComparison, UndefinedEnvironmentName, TypeError, ValueError) as exc:
            raise LockError("lock %s line %d: cannot evaluate the marker of %s: %s" % (
                parsed.name, number, requirement, exc)) from None
        version = list(requirement.specifier)[0].version
        packages.append(LockedPackage(canonical_name(requirement.name), version, tuple(sorted(hashes)), None,
                                      "line %d" % number))
    return packages
