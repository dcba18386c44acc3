# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which CUDA distributions outside the anchor's closure are contaminants, and which are neighbours.

Private to the gpuops.cuda_venv collection: not a public API.

Pure: reads the ``Observations`` record only. The one rule the facts (CUDA_DIST_UNREQUIRED, CONTAMINATION_SOURCE,
``neighbours``), the plan (what ``prune: cuda`` removes) and the report use. A CUDA wheel or CUDA consumer that the
anchor's closure (and the declared packages) does not require is a contaminant only with evidence on disk that it is
wrong for this venv:
- ``other_major``: it is built for another CUDA major than the anchor;
- ``collides``: it lists paths in its RECORD that a kept distribution also lists, with other bytes;
- ``requirement_conflict``: a requirement of its own (no extra) names an installed distribution at a version outside
  its specifier (sglang-kernel 0.4.10 requires torch==2.14.1 beside torch 2.9.1); the anchor counts at the version
  the declared packages pin, when they pin one;
- ``ships_other_build``: it ships its own copy of a library that the anchor's import loads from another file with
  other bytes (whichever is imported first then serves both);
- ``requires_contaminant``: a requirement of its own names a contaminant.
Without evidence it is a neighbour (torchvision requiring the installed torch, jax's plugin and cupy on the anchor's
major, a CUDA wheel they need): listed, never a warning, never removed by default. A contaminant that a kept
distribution outside the CUDA stack requires is ``held``: reported, not removed unless named in ``remove``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import is_shared_object
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.requirements import (
    closure, marker_env_fallback, version_satisfies)

OTHER_MAJOR = "other_major"
COLLIDES = "collides"
REQUIREMENT_CONFLICT = "requirement_conflict"
SHIPS_OTHER_BUILD = "ships_other_build"
REQUIRES_CONTAMINANT = "requires_contaminant"
_EXAMPLES = 2


@dataclass(frozen=True)
class Evidence:
    """One fact on disk that proves a distribution wrong for this venv."""

    kind: str
    text: str

    def as_dict(self) -> dict:
        return {"kind": self.kind, "text": self.text}


@dataclass(frozen=True)
class Contaminant:
    dist: object  # Distribution
    major: Optional[int]
    consumer: bool
    evidence: Tuple[Evidence, ...]
    held_by: Tuple[str, ...] = ()  # kept distributions outside the CUDA stack that require it

    @property
    def why(self) -> str:
        return "; ".join(e.text for e in self.evidence)


@dataclass(frozen=True)
class Neighbour:
    dist: object  # Distribution
    major: Optional[int]
    consumer: bool
    why: str

    def as_dict(self) -> dict:
        return {"distribution": self.dist.label, "cuda_major": self.major,
                "kind": "consumer" if self.consumer else "library", "why": self.why}


@dataclass(frozen=True)
class Belonging:
    """The CUDA distributions outside the declared closure, judged: ``contaminants`` by dist_info, ``neighbours``."""

    contaminants: Dict[str, Contaminant]
    neighbours: Tuple[Neighbour, ...]

    def removable(self) -> Dict[str, Contaminant]:
        """The contaminants ``prune: cuda`` removes: those no kept distribution holds."""
        return {k: c for k, c in self.contaminants.items() if not c.held_by}


def belonging(obs) -> Belonging:
    """Judge every CUDA wheel and consumer the declared closure does not require (see the module's doc)."""
    anchor = obs.options.anchor
    by_key = {}
    for dist in obs.distributions:
        by_key.setdefault(dist.key, dist)
    if anchor not in by_key:
        return Belonging({}, ())
    declared = {e.name for e in obs.requirements} | {anchor}
    anchor_major = _major(obs, by_key[anchor])
    candidates = {}
    for dist in obs.distributions:
        if dist.key in declared:
            continue
        major = _major(obs, dist)
        consumer = dist.key in cuda.KNOWN_CUDA_CONSUMERS or (major is not None and not cuda.is_cuda_distribution(dist.key))
        if consumer or (major is not None and cuda.is_cuda_distribution(dist.key)):
            candidates[dist.dist_info] = (dist, major, consumer)
    requires = {info: _own_requirements(obs, dist) for info, (dist, _m, _c) in candidates.items()}
    versions = _judged_versions(obs, by_key)
    evidence: Dict[str, List[Evidence]] = {}
    for info, (dist, major, _consumer) in candidates.items():
        found = []
        if major is not None and anchor_major is not None and major != anchor_major:
            found.append(Evidence(OTHER_MAJOR, "built for CUDA %d (%s) beside a CUDA %d %s" % (
                major, _major_evidence(obs, dist), anchor_major, anchor)))
        found += _collisions(obs, dist, candidates)
        found += _requirement_conflicts(requires[info], versions)
        found += _other_builds(obs, dist)
        evidence[info] = found
    _propagate(candidates, requires, evidence)
    held = _held(obs, candidates, evidence, declared)
    contaminants = {info: Contaminant(dist, major, consumer, tuple(evidence[info]), tuple(held.get(dist.key, ())))
                    for info, (dist, major, consumer) in candidates.items() if evidence[info]}
    neighbours = tuple(Neighbour(dist, major, consumer, _neighbour_why(obs, dist, major, consumer, requires[info], versions))
                       for info, (dist, major, consumer) in sorted(candidates.items(), key=lambda i: i[1][0].key)
                       if not evidence[info])
    return Belonging(contaminants, neighbours)


def identical_everywhere(obs, conflict) -> bool:
    """True when every owner's RECORD lists the same hash for the path (the empty nvidia/__init__.py of
    every cu12 wheel): whoever wrote it last, the bytes are the ones each owner expects."""
    digests = set()
    for dist in obs.distributions:
        if dist.label not in conflict.owners:
            continue
        for entry in dist.entries:
            if entry.path == conflict.path:
                digests.add((entry.algorithm, entry.digest))
    if len(digests) != 1:
        return False
    _algorithm, digest = next(iter(digests))
    return digest is not None or conflict.path.endswith(".pyc")  # bytecode caches are regenerated


def _major(obs, dist) -> Optional[int]:
    return obs.majors.get(dist.dist_info, (None, None))[0]


def _major_evidence(obs, dist) -> str:
    return "by its %s" % obs.majors.get(dist.dist_info, (None, "name"))[1]


def _marker_env(obs) -> dict:
    return obs.interpreter.marker_env if obs.interpreter.ok else marker_env_fallback(obs.layout.version)


def _own_requirements(obs, dist) -> list:
    """The distribution's own requirements (no extra), markers evaluated for this venv: RequirementEdges whose
    ``installed`` is not filled (versions are judged by ``_requirement_conflicts``)."""
    return [e for e in closure(dist.requires_dist, [], _marker_env(obs)) if e.name and not e.problem]


def _judged_versions(obs, by_key) -> Dict[str, str]:
    """Installed versions, the anchor's at the version the declared packages pin (the one a repair converges to)."""
    versions = {key: dist.version for key, dist in by_key.items()}
    for edge in obs.requirements:
        if edge.name == obs.options.anchor and not edge.required_by and edge.specifier.startswith("==") \
                and "," not in edge.specifier and "*" not in edge.specifier:
            versions[edge.name] = edge.specifier[2:]
    return versions


def _collisions(obs, dist, candidates) -> List[Evidence]:
    """Paths it shares with a kept distribution, with other bytes (identical files harm no one)."""
    others: Dict[str, List[str]] = {}
    candidate_labels = {d.label for d, _m, _c in candidates.values()}
    for conflict in obs.conflicts:
        if dist.label not in conflict.owners or identical_everywhere(obs, conflict):
            continue
        for owner in conflict.owners:
            if owner != dist.label and owner not in candidate_labels:
                others.setdefault(owner, []).append(conflict.path)
    return [Evidence(COLLIDES, "installs %d path(s) that %s also installs, e.g. %s" % (
        len(paths), owner, ", ".join(sorted(paths, key=lambda p: (not is_shared_object(p), p))[:_EXAMPLES])))
        for owner, paths in sorted(others.items())]


def _requirement_conflicts(edges, versions) -> List[Evidence]:
    found = []
    for edge in edges:
        installed = versions.get(edge.name)
        if installed is not None and version_satisfies(installed, edge.specifier) is False:
            found.append(Evidence(REQUIREMENT_CONFLICT, "requires %s; %s %s is installed" % (
                edge.requirement.split(";", 1)[0].strip(), edge.name, installed)))
    return found


def _other_builds(obs, dist) -> List[Evidence]:
    """Its own copies of libraries the anchor's import loads from another file with other bytes."""
    graph = obs.import_graph
    if graph is None:
        return []
    loaded = {}
    for path in graph.objects:  # as the loader joined them ($ORIGIN/../../nvidia/...): normalised to observe's keys
        obj = obs.objects.get(os.path.normpath(path))
        if obj is not None and obj.elf is not None and obj.elf.soname and obj.owner.key != dist.key:
            loaded.setdefault(obj.elf.soname, obj)
    found = []
    for obj in obs.objects.values():
        theirs = loaded.get(obj.elf.soname) if obj.owner.dist_info == dist.dist_info and obj.elf is not None and obj.elf.soname else None
        if theirs is not None and _record_bytes(obj) != _record_bytes(theirs):
            found.append(Evidence(SHIPS_OTHER_BUILD, "ships its own %s (%s), another build than the %s that import %s "
                                  "loads (%s of %s): whichever is imported first serves both" % (
                                      obj.elf.soname, obj.relpath, obj.elf.soname, obs.options.anchor,
                                      theirs.relpath, theirs.owner.label)))
    return found


def _record_bytes(obj) -> tuple:
    """What RECORD says a file holds: (algorithm, digest, size)."""
    for entry in obj.owner.entries:
        if entry.path == obj.relpath:
            return entry.algorithm, entry.digest, entry.size
    return None, None, None


def _propagate(candidates, requires, evidence) -> None:
    """A candidate whose own requirements name a contaminant is one too (removing one leaves the other broken)."""
    keys = {dist.key: info for info, (dist, _m, _c) in candidates.items()}
    changed = True
    while changed:
        changed = False
        for info, edges in requires.items():
            if evidence[info]:
                continue
            bad = sorted({e.name for e in edges if e.name in keys and evidence[keys[e.name]]})
            if bad:
                evidence[info].append(Evidence(REQUIRES_CONTAMINANT, "requires %s, itself a contaminant" % ", ".join(bad)))
                changed = True


def _held(obs, candidates, evidence, declared) -> Dict[str, List[str]]:
    """Contaminant key -> kept distributions outside the CUDA stack whose own requirements name it."""
    suspects = {dist.key for info, (dist, _m, _c) in candidates.items() if evidence[info]}
    judged = {dist.key for dist, _m, _c in candidates.values()}
    held: Dict[str, List[str]] = {}
    for dist in obs.distributions:
        if dist.key in judged or dist.key in declared or not dist.requires_dist:
            continue
        for edge in _own_requirements(obs, dist) if _names_any(dist, suspects) else ():
            if edge.name in suspects:
                held.setdefault(edge.name, []).append(dist.label)
    return held


def _names_any(dist, keys: Set[str]) -> bool:
    text = " ".join(dist.requires_dist).lower().replace("_", "-").replace(".", "-")
    return any(key in text for key in keys)


def _neighbour_why(obs, dist, major, consumer, edges, versions) -> str:
    what = ("a CUDA %s consumer" % major if major is not None else "a CUDA consumer") if consumer else "a CUDA %s wheel" % major
    anchor = [e for e in edges if e.name == obs.options.anchor]
    if anchor:
        what += " requiring %s (%s %s)" % (anchor[0].requirement.split(";", 1)[0].strip(), obs.options.anchor,
                                          versions.get(obs.options.anchor))
    return what + "; nothing on disk proves it wrong for this venv"
