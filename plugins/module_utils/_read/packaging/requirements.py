# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Walk the requirement closure of installed distributions, extras and markers included.

Private to the gpuops.cuda_venv collection: not a public API.

``pip check`` evaluates a requirement's extras only for the distribution that
declares them, so torch -> cuda-toolkit[curand] -> nvidia-curand is never
checked. This walk follows Requires-Dist through every requested extra
(https://packaging.python.org/en/latest/specifications/dependency-specifiers/).
Modules calling it check ``_core/packaging_lib.HAS_PACKAGING`` and fail with missing_required_lib('packaging').
"""

from __future__ import annotations

import functools
import os
import platform
import re
import sys
from collections import deque
from dataclasses import dataclass
from typing import Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.packaging_lib import (
    HAS_PACKAGING, PACKAGING_IMPORT_ERROR, InvalidRequirement, InvalidSpecifier, InvalidVersion, Requirement,
    SpecifierSet, UndefinedComparison, UndefinedEnvironmentName, Version)

_PY_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class RequirementEdge:
    """One requirement of the closure: who asked (``required_by``, reached through ``chain``) and what is installed.

    Roots have required_by "" and an empty chain. ``problem`` is set when the
    requirement or the installed version could not be evaluated.
    """

    requirement: str
    name: str
    extras: tuple
    specifier: str
    required_by: str
    chain: tuple
    installed: Optional[str]
    satisfied: bool
    problem: Optional[str] = None


def _need_packaging() -> None:
    if not HAS_PACKAGING:
        raise RuntimeError("the Python library 'packaging' is required on the managed node to read requirements: %s" % PACKAGING_IMPORT_ERROR)


def parse_requirement(text: str):
    """packaging Requirement for ``text``; ValueError "invalid requirement 'x': why" when it is not one."""
    _need_packaging()
    req, problem = _parsed(text)
    if problem:
        raise ValueError(problem)
    return req


@functools.lru_cache(maxsize=4096)
def _parsed(text: str):
    """(Requirement, None) or (None, why): a run's closures parse the same Requires-Dist lines again and again."""
    try:
        return Requirement(text), None
    except InvalidRequirement as exc:
        return None, "invalid requirement %r: %s" % (text, str(exc).splitlines()[0] if str(exc) else "unparseable")


def node_label(name: str, extras) -> str:
    """"torch", or "cuda-toolkit[cublas,cufft]" with sorted extras."""
    return "%s[%s]" % (name, ",".join(sorted(extras))) if extras else name


def closure(roots, dists, marker_env: dict) -> list:
    """Every requirement edge reachable from the ``roots`` requirement strings through installed distributions.

    Markers are evaluated against ``marker_env`` with ``extra`` set to '' and to
    each requested extra. Each (name, extras) is expanded once; a missing
    distribution ends its branch. Duplicate installs of one name: the first
    that satisfies the specifier is used, else the first.
    """
    _need_packaging()
    installed = {}
    for dist in dists:
        installed.setdefault(dist.key, []).append(dist)
    edges = []
    queue = deque()
    seen = set()
    for text in roots:
        _add_edge(edges, queue, text, "", (), ("",), installed, marker_env)
    while queue:
        dist, extras, chain = queue.popleft()
        if (dist.key, extras) in seen:
            continue
        seen.add((dist.key, extras))
        label = node_label(dist.key, extras)
        for text in dist.requires_dist:
            _add_edge(edges, queue, text, label, chain + (label,), ("",) + extras, installed, marker_env)
    return edges


def pinned_edges(pins, dists) -> list:
    """The declared state as the installer resolved it (``pins``: (name, version) pairs), one root edge
    ``name==version`` each, judged against what is installed: what a repair converges to when the declared anchor
    is not the installed one (its closure is the resolution's, not the installed anchor's metadata)."""
    _need_packaging()
    installed = {}
    for dist in dists:
        installed.setdefault(dist.key, []).append(dist)
    edges = []
    for name, version in pins:
        specifier = SpecifierSet("==" + version)
        dist, satisfied, problem = _pick(installed.get(name, ()), specifier)
        edges.append(RequirementEdge("%s==%s" % (name, version), name, (), str(specifier), "", (),
                                     dist.version if dist else None, satisfied, problem))
    return edges


def _add_edge(edges, queue, text, required_by, chain, extras, installed, marker_env) -> None:
    try:
        req = parse_requirement(text)
    except ValueError as exc:
        edges.append(RequirementEdge(text, "", (), "", required_by, chain, None, False, str(exc)))
        return
    # PEP 685: extras compare normalised, like names.
    name, wanted = canonical_name(req.name), tuple(sorted(canonical_name(extra) for extra in req.extras))
    try:
        if req.marker is not None and not any(req.marker.evaluate(dict(marker_env, extra=extra)) for extra in extras):
            return
    except (UndefinedComparison, UndefinedEnvironmentName, TypeError, ValueError) as exc:
        edges.append(RequirementEdge(text, name, wanted, str(req.specifier), required_by, chain, None, False,
                                     "cannot evaluate marker of %r: %s" % (text, exc)))
        return
    dist, satisfied, problem = _pick(installed.get(name, ()), req.specifier)
    edges.append(RequirementEdge(text, name, wanted, str(req.specifier), required_by, chain,
                                 dist.version if dist else None, satisfied, problem))
    if dist is not None:
        queue.append((dist, wanted, chain))


def _pick(candidates, specifier) -> tuple:
    """(dist, satisfied, problem) for the installed candidates of one name."""
    first = None
    for dist in candidates:
        ok, problem = _satisfies(dist.version, specifier)
        if ok:
            return dist, True, None
        if first is None:
            first = (dist, False, problem)
    return first or (None, False, None)


def _satisfies(version: str, specifier) -> tuple:
    try:
        parsed = Version(version)
    except InvalidVersion:
        if not str(specifier):
            return True, None
        return False, "installed version %r is not a PEP 440 version" % version
    # Installed versions are facts, not candidates: a prerelease satisfies like any version.
    return specifier.contains(parsed, prereleases=True), None


def version_satisfies(version: str, specifier: str) -> Optional[bool]:
    """Whether the installed ``version`` is inside ``specifier`` ("==2.9.1", ">=9.8,<10"); None when either cannot be
    read."""
    _need_packaging()
    try:
        ok, problem = _satisfies(version, SpecifierSet(specifier))
    except InvalidSpecifier:
        return None
    return None if problem else ok


def version_order(version: str) -> tuple:
    """A sort key of ``version`` strings: PEP 440 order, after every string that is no PEP 440 version."""
    _need_packaging()
    try:
        return (1, Version(version), "")
    except InvalidVersion:
        return (0, None, version)


def marker_environment(python=None):
    """PEP 508's marker environment of the Python running this, as packaging.markers.default_environment() builds
    it (rebuilt: a venv may not have packaging); ``python``: (python_version, python_full_version) of another
    Python, on this host's platform. The import probe runs this function's source in the venv's interpreter: it uses
    os, platform and sys only, and has no annotations (that Python may be older)."""
    if python is None:
        info = sys.implementation.version
        implementation_version = "%d.%d.%d" % (info.major, info.minor, info.micro)
        if info.releaselevel != "final":
            implementation_version += info.releaselevel[0] + str(info.serial)
        python = (".".join(platform.python_version_tuple()[:2]), platform.python_version())
    else:
        implementation_version = python[1]
    return {
        "implementation_name": sys.implementation.name,
        "implementation_version": implementation_version,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": python[1],
        "platform_python_implementation": platform.python_implementation(),
        "python_version": python[0],
        "sys_platform": sys.platform,
    }


def marker_env_fallback(python_version: str, platform_info: Optional[dict] = None) -> dict:
    """A marker environment for a venv whose interpreter cannot run.

    Python values come from ``python_version`` (pyvenv.cfg, "3.12.1"); platform
    values from this host unless given in ``platform_info``.
    """
    match = _PY_VERSION.match(python_version or "")
    if not match:
        raise ValueError("invalid python version %r: expected a version like 3.12.1 (pyvenv.cfg version)" % (python_version,))
    short = "%s.%s" % match.group(1, 2)
    env = marker_environment((short, "%s.%s" % (short, match.group(3) or "0")))
    env.update(platform_info or {})
    return env
