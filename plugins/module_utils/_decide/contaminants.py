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
- ``requirement_conflict``: a requirement of its own (no extra) names the anchor at a version outside its specifier
  (sglang-kernel 0.4.10 requires torch==2.14.1 beside torch 2.9.1): it is built for another anchor; the anchor counts
  at the version the declared packages pin, when they pin one. Another pin of a wheel the declared closure has (two
  frameworks pinning one NVIDIA wheel differently) is no evidence: REQUIREMENT_PINS_CONFLICT says so, both stay;
- ``ships_other_build``: it ships its own copy of a library that the anchor's import loads from another file with
  other bytes, and does not require the anchor (whichever is imported first then serves both; torchvision's bundled
  libcudart, which it loads after the torch it requires, serves only itself);
- ``requires_contaminant``: a requirement of its own names a contaminant; never said of an application the user
  installed (asked for by name, or required by nothing installed): it is kept and holds what it requires.
What is not evidence:
- another major, for a wheel that carries builds for several and picks one at run time (``multi``: torch-memory-saver's
  ``_cu12``/``_cu13`` libraries, nvidia-cutlass-dsl's ``-libs-cu12`` and ``-libs-cu13`` flavours) when one of them
  is the anchor's, nor for a flavour such a kept wheel requires;
- a shared path nothing loads at run time (``names.is_loadable``: a stray top-level ``build_backend.py``).
Without evidence it is a neighbour (torchvision requiring the installed torch, jax's plugin and cupy on the anchor's
major, a CUDA wheel they need): listed, never a warning, never removed by default. A contaminant that a kept
distribution requires (extras as asked) is ``held``: reported, not removed unless named in ``remove``; what it
requires in turn is held too. A consumer whose only evidence is another major, that shares no loadable path with
a kept distribution (paths shared with another candidate are no evidence), shadows no library and requires nothing
wrong is ``harmless`` (a CUDA 13 runtime beside a CUDA 12 torch: its GPU part cannot
load, its CPU part works): reported, kept unless named in ``remove`` or ``prune: all``.
"""

from __future__ import annotations

import os
import re
import weakref
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Set, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name, is_loadable, is_shared_object
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.history import asked_by_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import label_key
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import (
    closure, marker_env_fallback, node_label, version_satisfies)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

OTHER_MAJOR = "other_major"
COLLIDES = "collides"
REQUIREMENT_CONFLICT = "requirement_conflict"
SHIPS_OTHER_BUILD = "ships_other_build"
REQUIRES_CONTAMINANT = "requires_contaminant"
_EXAMPLES = 2
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


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
    held_by: Tuple[str, ...] = ()  # kept distributions that require it
    harmless: str = ""  # why a consumer of another major is kept: what cannot work here, which build would
    replacement: str = ""  # for a held wheel of another major: a requirement its holders and the anchor's major allow

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
    run_time_choices: Dict[str, str] = None  # dist_info -> why its other major is no mix (a multi build, a flavour)
    edges: tuple = ()  # installed_edges(obs): the plan and CONTAMINATION_SOURCE read them from here

    def removable(self) -> Dict[str, Contaminant]:
        """The contaminants ``prune: cuda`` removes: those no kept distribution holds, and no harmless one."""
        return {k: c for k, c in self.contaminants.items() if not c.held_by and not c.harmless}


_LAST: list = [None, None]  # (a weak reference to the last Observations judged, its Belonging)


def belonging(obs: Observations) -> Belonging:
    """Judge every CUDA wheel and consumer the declared closure does not require (see the module's doc). The last
    judgement is kept for the same Observations object (a diagnosis asks four times; observations are not changed
    once made, ``dataclasses.replace`` makes new ones)."""
    if _LAST[0] is not None and _LAST[0]() is obs:
        return _LAST[1]
    judged = _belonging(obs)
    _LAST[:] = [weakref.ref(obs), judged]
    return judged


def _belonging(obs: Observations) -> Belonging:
    anchor = obs.options.anchor
    by_key = {}
    for dist in obs.distributions:
        by_key.setdefault(dist.key, dist)
    if anchor not in by_key:
        return Belonging({}, (), {}, tuple(installed_edges(obs)))
    declared = {e.name for e in obs.requirements} | {anchor}
    anchor_major = anchor_cuda_major(obs)
    candidates = {}
    for dist in obs.distributions:
        if dist.key in declared:
            continue
        major = _major(obs, dist)
        consumer = dist.key in cuda.KNOWN_CUDA_CONSUMERS or (major is not None and not cuda.is_cuda_distribution(dist.key))
        if consumer or (major is not None and cuda.is_cuda_distribution(dist.key)):
            candidates[dist.dist_info] = (dist, major, consumer)
    versions = _judged_versions(obs, by_key)
    edges = installed_edges(obs)
    requires = _own_requirements(candidates, edges)
    choices = _run_time_choices(obs, candidates, anchor_major, edges, by_key)
    evidence: Dict[str, List[Evidence]] = {}
    for info, (dist, major, _consumer) in candidates.items():
        found = []
        if major is not None and anchor_major is not None and major != anchor_major and info not in choices:
            found.append(Evidence(OTHER_MAJOR, "built for CUDA %d (%s) beside a CUDA %d %s" % (
                major, _major_evidence(obs, dist), anchor_major, anchor)))
        found += _collisions(obs, dist, candidates)
        found += _requirement_conflicts([e for e in requires[info] if e.name == anchor], versions, by_key)
        if not any(e.name == anchor for e in requires[info]):  # what imports the anchor first cannot serve it
            found += _other_builds(obs, dist)
        evidence[info] = found
    required = {e.name for e in edges if e.required_by}
    applications = {info for info, (dist, _m, _c) in candidates.items()
                    if asked_by_name(dist) or dist.key not in required}
    _propagate(candidates, requires, evidence, applications, anchor_major)
    held = _held(obs, candidates, evidence, edges)
    harmless = {info: _harmless(obs, dist, major, anchor_major, evidence[info], requires[info], candidates, evidence)
                for info, (dist, major, consumer) in candidates.items() if consumer and evidence[info]}
    contaminants = {info: Contaminant(dist, major, consumer, tuple(evidence[info]), tuple(held.get(dist.key, ())),
                                      harmless.get(info) or "",
                                      _replacement(obs, dist, evidence[info], held[dist.key], anchor_major, edges)
                                      if dist.key in held else "")
                    for info, (dist, major, consumer) in candidates.items() if evidence[info]}
    neighbours = tuple(Neighbour(dist, major, consumer, _neighbour_why(obs, dist, major, consumer, requires[info], versions,
                                                                       choices.get(info)))
                       for info, (dist, major, consumer) in sorted(candidates.items(), key=lambda i: i[1][0].key)
                       if not evidence[info])
    return Belonging(contaminants, neighbours, choices, tuple(edges))


def installed_edges(obs: Observations) -> list:
    """Every requirement edge between installed distributions (markers evaluated for this venv, extras as the
    requirements ask them), but those of a distribution the declared state replaces by another version (its
    installed requirements do not survive the repair). Requirements naming nothing installed are dropped before
    parsing: parsing is most of the cost."""
    marker_env = _marker_env(obs)
    installed = {d.key for d in obs.distributions}
    leaving = replaced_by_declaration(obs)
    dists = [replace(d, requires_dist=() if d.key in leaving else
                     tuple(r for r in d.requires_dist if _named(r) in installed)) for d in obs.distributions]
    return [e for e in closure([d.name for d in dists], dists, marker_env) if e.required_by and e.name]


def replaced_by_declaration(obs: Observations) -> Set[str]:
    """The installed distributions the declared state (``options.declared``) pins at another version."""
    pins = dict(obs.options.declared)
    return {d.key for d in obs.distributions if d.key in pins and pins[d.key] != d.version}


def _builds_of(dist, objects, shared) -> Tuple[int, ...]:
    """Every CUDA major ``dist`` carries a build for (``cuda.build_majors``): its name's, its libraries' names and
    sonames, its requirements' flavours. ``objects``: its ELF objects; ``shared``: the paths another wheel also lists,
    which do not count (their bytes may be the other's)."""
    paths = [e.path for e in dist.entries if e.path not in shared]
    needed = [n for obj in objects if obj.relpath not in shared for n in obj.elf.needed]
    named = cuda.name_major(dist.key)
    return tuple(sorted(set(cuda.build_majors(paths, needed, dist.requires_dist)) | ({named} if named else set())))


def _named(requirement: str) -> str:
    match = _NAME.match(requirement)
    return canonical_name(match.group(1)) if match else ""


def _run_time_choices(obs: Observations, candidates, anchor_major, edges, by_key) -> Dict[str, str]:
    """dist_info -> why another major is no evidence against it: it carries a build for the anchor's major among
    others (``multi``), or it is the flavour of another major that such a wheel requires and picks from at run
    time."""
    if anchor_major is None:
        return {}
    choices: Dict[str, str] = {}
    multi: Dict[str, Tuple[int, ...]] = {}
    objects: Dict[str, list] = {}  # dist_info -> its ELF objects, grouped once
    for obj in obs.objects.values():
        if obj.elf is not None:
            objects.setdefault(obj.owner.dist_info, []).append(obj)
    shared: Dict[str, Set[str]] = {}  # label -> the paths another wheel also lists
    for conflict in obs.conflicts:
        for owner in conflict.owners:
            shared.setdefault(owner, set()).add(conflict.path)

    def builds(dist):
        if dist.key not in multi:
            multi[dist.key] = _builds_of(dist, objects.get(dist.dist_info, ()), shared.get(dist.label, set()))
        return multi[dist.key]
    for info, (dist, major, _consumer) in candidates.items():
        if major is None:
            continue
        majors = builds(dist)
        if anchor_major in majors and len(majors) > 1:
            choices[info] = _multi_text(obs, dist, majors, anchor_major)
    parents: Dict[str, List[str]] = {}
    for edge in edges:
        parents.setdefault(edge.name, []).append(edge.required_by.split("[", 1)[0])
    for info, (dist, major, _consumer) in candidates.items():
        if major is None or major == anchor_major or info in choices or cuda.name_major(dist.key) != major:
            continue
        for key in sorted(set(parents.get(dist.key, ()))):
            parent = by_key.get(key)
            if parent is not None and {major, anchor_major} <= set(builds(parent)):
                choices[info] = "the CUDA %d flavour of %s, which carries builds for CUDA %s and picks one at run " \
                                "time" % (major, parent.label, _majors_text(builds(parent)))
                break
    return choices


def _replacement(obs: Observations, dist, found, held_by, anchor_major, edges) -> str:
    """What the installer may put in place of a held contaminant so that its holders and the stack both hold: the
    anchor's build of a wheel versioned by its CUDA major that every holder's specifier allows
    ("cuda-python>=12.0,==13.*"); with another anchor declared, the holders' requirement alone for one that requires
    another anchor (the installer picks the version that goes with the declared one); "" when none is known."""
    holders = {label_key(label) for label in held_by}
    mine = [e for e in edges if e.name == dist.key and e.specifier]
    specs = sorted({e.specifier for e in mine if e.required_by.split("[", 1)[0] in holders})
    if _anchor_build_allowed(dist.key, specs, anchor_major):
        return dist.name + ",".join(specs + ["==%d.*" % anchor_major])
    if obs.options.declared and any(e.kind == REQUIREMENT_CONFLICT for e in found):
        return dist.name + ",".join(specs)
    return ""


def _anchor_build_allowed(key: str, specifiers, anchor_major) -> bool:
    """True when ``key`` is versioned by its CUDA major and some version of the anchor's major (A.0.0 to A.19.9)
    meets every one of ``specifiers``."""
    if anchor_major is None or not cuda.versioned_by_major(key):
        return False
    wanted = ",".join([s for s in specifiers if s] + ["==%d.*" % anchor_major])
    return any(version_satisfies("%d.%d.%d" % (anchor_major, minor, patch), wanted)
               for minor in range(20) for patch in range(10))


def _multi_text(obs: Observations, dist, majors, anchor_major) -> str:
    files = cuda.build_files([e.path for e in dist.entries], anchor_major)
    chosen = ("CUDA %d selects %s" % (anchor_major, ", ".join(os.path.basename(f) for f in files[:_EXAMPLES]))
              if files else "the build is chosen at run time")
    return "carries builds for CUDA %s (%s)" % (_majors_text(majors), chosen)


def _majors_text(majors) -> str:
    majors = [str(m) for m in majors]
    return majors[0] if len(majors) == 1 else "%s and %s" % (", ".join(majors[:-1]), majors[-1])


def _harmless(obs: Observations, dist, major, anchor_major, found, edges, candidates, evidence) -> Optional[str]:
    """Why a consumer of another major stays (None when it does not): another major is its only evidence and it
    requires no contaminant."""
    if any(e.kind != OTHER_MAJOR for e in found):
        return None
    wrong = {d.key for info, (d, _m, _c) in candidates.items() if evidence[info]}
    if any(e.name in wrong for e in edges):
        return None
    other = cuda.name_major(dist.key)
    twin = re.sub(r"%s(?=x?$|-)" % other, str(anchor_major), dist.key, count=1) if other is not None else dist.key
    instead = " (%s)" % twin if twin != dist.key else ""
    return ("its CUDA %s code cannot load beside a CUDA %s %s, its CPU code works; install its CUDA %s build%s to "
            "use the GPU" % (major, anchor_major, obs.options.anchor, anchor_major, instead))


def identical_everywhere(obs: Observations, conflict) -> bool:
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


def anchor_cuda_major(obs: Observations) -> Optional[int]:
    """The CUDA major the venv converges to: the declared anchor's when the repair declared another one
    (``options.declared``: its local version label, +cu128 -> 12, else the major most of its CUDA wheels name),
    else the installed anchor's."""
    pins = dict(obs.options.declared)
    if obs.options.anchor in pins:
        local = cuda.local_cuda_version(pins[obs.options.anchor])
        if local is not None:
            return int(local.split(".", 1)[0])
        named = [cuda.name_major(name) or _version_major(name, version) for name, version in pins.items()]
        named = [m for m in named if m is not None]
        return max(set(named), key=named.count) if named else None
    for dist in obs.distributions:
        if dist.key == obs.options.anchor:
            return _major(obs, dist)
    return None


def _version_major(key: str, version: str) -> Optional[int]:
    head = version.split(".", 1)[0]
    return int(head) if cuda.versioned_by_major(key) and head.isdigit() else None


def _major(obs: Observations, dist) -> Optional[int]:
    return obs.cuda_major(dist.dist_info).major


def _major_evidence(obs: Observations, dist) -> str:
    return "by its %s" % (obs.majors[dist.dist_info].evidence if dist.dist_info in obs.majors else "name")


def _marker_env(obs: Observations) -> dict:
    return obs.interpreter.marker_env if obs.interpreter.ok else marker_env_fallback(obs.layout.version)


def _own_requirements(candidates, edges) -> Dict[str, list]:
    """dist_info -> the candidate's own requirements (no extra) that name an installed distribution, markers evaluated
    for this venv: its edges of ``installed_edges``, whose ``installed`` is not filled (``_requirement_conflicts``
    judges versions)."""
    own: Dict[str, list] = {}
    for edge in edges:
        if not edge.problem:
            own.setdefault(edge.required_by, []).append(edge)
    return {info: own.get(dist.key, []) for info, (dist, _m, _c) in candidates.items()}


def _judged_versions(obs: Observations, by_key) -> Dict[str, str]:
    """Installed versions, the anchor's at the version the declared packages pin (the one a repair converges to);
    every one the declared state pins when the repair resolved it (``options.declared``)."""
    versions = {key: dist.version for key, dist in by_key.items()}
    versions.update(dict(obs.options.declared))
    for edge in obs.requirements:
        if edge.name == obs.options.anchor and not edge.required_by and edge.specifier.startswith("==") \
                and "," not in edge.specifier and "*" not in edge.specifier:
            versions[edge.name] = edge.specifier[2:]
    return versions


def _collisions(obs: Observations, dist, candidates) -> List[Evidence]:
    """Paths it shares with a kept distribution, with other bytes, that a process can load (identical files and
    files nothing loads harm no one)."""
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
        for owner, paths in sorted(others.items()) if any(is_loadable(p) for p in paths)]


def _requirement_conflicts(edges, versions, by_key) -> List[Evidence]:
    found = []
    for edge in edges:
        judged = versions.get(edge.name)
        if judged is not None and version_satisfies(judged, edge.specifier) is False:
            installed = by_key[edge.name].version if edge.name in by_key else None
            found.append(Evidence(REQUIREMENT_CONFLICT, "requires %s; %s %s is %s" % (
                edge.requirement.split(";", 1)[0].strip(), edge.name, judged,
                "installed" if judged == installed else "declared")))
    return found


def _other_builds(obs: Observations, dist) -> List[Evidence]:
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


def _propagate(candidates, requires, evidence, applications, anchor_major) -> None:
    """A candidate whose own requirements name a contaminant is one too (removing one leaves the other broken);
    never an application the user installed (``applications``): it stays and holds what it requires; nor one whose
    requirement the anchor's build of that wheel also meets (flashinfer's ``cuda-python>=12.0``)."""
    keys = {dist.key: info for info, (dist, _m, _c) in candidates.items()}
    changed = True
    while changed:
        changed = False
        for info, edges in requires.items():
            if evidence[info] or info in applications:
                continue
            wrong = [e for e in edges if e.name in keys and evidence[keys[e.name]]]
            bad = sorted({e.name for e in wrong if not _anchor_build_allowed(e.name, [e.specifier], anchor_major)})
            if bad:
                evidence[info].append(Evidence(REQUIRES_CONTAMINANT, "requires %s, itself a contaminant" % ", ".join(bad)))
                changed = True


def _held(obs: Observations, candidates, evidence, edges) -> Dict[str, List[str]]:
    """Contaminant key -> the kept distributions whose requirements name it, extras included only while a kept
    distribution asks for them (sglang's ``humming-kernels[cu13]`` holds nothing once sglang goes). What a held one
    requires is held by it in turn: removing it would break what stays."""
    suspects = {dist.key for info, (dist, _m, _c) in candidates.items() if evidence[info]}
    labels = {d.key: d.label for d in obs.distributions}
    askers = extra_askers(edges)
    requirers: Dict[str, Set[Tuple[str, str]]] = {}  # suspect -> (parent key, the node that requires it)
    for edge in edges:
        parent = edge.required_by.split("[", 1)[0]
        if edge.name in suspects and parent != edge.name:
            requirers.setdefault(edge.name, set()).add((parent, edge.required_by))
    held: Dict[str, List[str]] = {}

    def kept(key):
        return key not in suspects or key in held
    changed = True
    while changed:
        changed = False
        for key in sorted(suspects - set(held)):
            keepers = sorted({parent for parent, node in requirers.get(key, ()) if
                              kept(parent) and still_asked(node, askers, kept)})
            if keepers:
                held[key] = [labels[k] for k in keepers if k in labels]
                changed = True
    return held


def extra_askers(edges) -> Dict[str, Set[str]]:
    """"name[extra]" -> the keys of the distributions whose requirements ask for that extra."""
    askers: Dict[str, Set[str]] = {}
    for edge in edges:
        if edge.extras:
            askers.setdefault(node_label(edge.name, edge.extras), set()).add(edge.required_by.split("[", 1)[0])
    return askers


def still_asked(node: str, askers, kept) -> bool:
    """Whether the requirements of ``node`` ("name" or "name[extra]", an edge's ``required_by``) still apply when
    only what ``kept(key)`` keeps stays: an extra's only while a kept distribution asks for it."""
    return "[" not in node or any(kept(key) for key in askers.get(node, ()))


def _neighbour_why(obs: Observations, dist, major, consumer, edges, versions, choice=None) -> str:
    what = ("a CUDA %s consumer" % major if major is not None else "a CUDA consumer") if consumer else "a CUDA %s wheel" % major
    if choice:
        what = ("a CUDA consumer" if consumer else "a CUDA wheel") + " that " + choice if choice.startswith("carries") \
            else choice
    anchor = [e for e in edges if e.name == obs.options.anchor]
    if anchor:
        wanted = anchor[0].requirement.split(";", 1)[0].strip()
        what += " requiring %s (%s %s)" % (wanted, obs.options.anchor, versions.get(obs.options.anchor))
    return what + "; nothing on disk proves it wrong for this venv"
