# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decide the repair: an ordered list of batches, as a pure function of the facts and the desired state.

Private to the gpuops.cuda_venv collection: not a public API.

Invariants (docs/REPAIR.md):
- a colliding distribution is removed before its co-owners are reinstalled, in the same batch, and every
  surviving co-owner of a removed path is reinstalled (without deps, by name and version);
- the sole provider of a soname a kept object needs is removed only after every other batch;
- batches go safest first: removals nothing kept depends on, then collisions and damaged wheels, then
  missing requirements, then late removals;
- nothing outside the venv is deleted or written: a distribution whose RECORD lists paths leaving the venv is
  removed only after its RECORD is cut to the paths inside (the installer deletes what RECORD lists), and is
  never reinstalled (the installer would write through the same paths);
- nothing the plan removes for good is required by a distribution it keeps (checked before anything runs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.lock_drift import BYTES
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import (
    Evidence, belonging, extra_askers, identical_everywhere, still_asked)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.errors import CudaVenvError
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import VENV_SEED, canonical_name, is_loadable
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.distributions import Distribution, label_key
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.scope import cuda_scope, inert_paths, only_inert
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

PRUNE_MODES = ("cuda", "none", "all")


class PlanError(CudaVenvError):
    """The desired state contradicts itself or the venv (message names the input)."""


@dataclass(frozen=True)
class DesiredState:
    packages: Tuple[str, ...] = ()
    remove: Tuple[str, ...] = ()
    prune: str = "cuda"
    batch_size: int = 4
    revert_edits: bool = False  # also reinstall distributions outside the CUDA scope whose files differ


@dataclass(frozen=True)
class Action:
    kind: str  # remove | reinstall | install
    name: str  # canonical distribution name
    requirement: str  # what the installer gets: the name to remove, or name==version / a requirement
    reason: str
    # remove only: RECORD entries leaving the venv, dropped from ``record`` before the installer reads it
    record: Optional[str] = None
    outside: Tuple[str, ...] = ()
    evidence: Tuple[Evidence, ...] = ()  # remove by prune: what on disk proves the distribution wrong for this venv

    def as_dict(self) -> dict:
        found = {"action": self.kind, "name": self.name, "requirement": self.requirement, "reason": self.reason}
        if self.outside:
            found.update(record=self.record, outside=list(self.outside))
        if self.evidence:
            found["evidence"] = [e.as_dict() for e in self.evidence]
        return found


@dataclass(frozen=True)
class Batch:
    number: int
    title: str
    actions: Tuple[Action, ...]
    answers: Tuple[str, ...]

    def as_dict(self) -> dict:
        return {"batch": self.number, "title": self.title, "actions": [a.as_dict() for a in self.actions],
                "answers": list(self.answers)}


@dataclass(frozen=True)
class Plan:
    batches: Tuple[Batch, ...]
    unfixable: Tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.batches

    def as_dict(self) -> dict:
        return {"batches": [b.as_dict() for b in self.batches], "unfixable": list(self.unfixable)}


@dataclass(frozen=True)
class Completion:
    """What a plan learns after ``make_plan`` and before it runs, given to ``complete_plan``, the one place that
    applies it: the install guard's (the installs the installer resolves for a new ``packages`` entry, the files
    each install replaces, the wheels the sources do not offer) and a swap's (the copy its removals' RECORDs are
    read in)."""

    dependencies: Tuple[Tuple[str, Tuple[Action, ...]], ...] = ()  # (install name, the installs that follow it)
    replaced: Tuple[Tuple[str, Tuple[Tuple[str, int], ...]], ...] = ()  # (install name, ((owner label, files), ...))
    unchecked: Tuple[str, ...] = ()  # installs with no wheel in the sources: not checked, their batch unfixable
    copy: Optional[Tuple[str, str]] = None  # (live root, copy): a swap's removals trim the copy's RECORDs


def complete_plan(plan: Plan, completion: Completion) -> Plan:
    """``plan`` with ``completion`` applied: each install followed, in its batch, by the dependency installs the
    guard resolved for it; each install's reason saying what it replaces, or that no wheel of it was checked; each
    removal's RECORD named in the swap's copy (the live venv is never written by a swap)."""
    following = dict(completion.dependencies)
    replaced = dict(completion.replaced)

    def explained(action: Action) -> Action:
        if action.kind == "remove":
            if completion.copy is not None and action.record:
                live, copy = completion.copy
                if action.record.startswith(live + "/"):
                    action = replace(action, record=copy + action.record[len(live):])
            return action
        freed = replaced.get(action.name)
        if freed:
            action = replace(action, reason=action.reason + "; replaces %s, removed before it" % "; ".join(
                "%d file(s) of %s" % (count, label) for label, count in freed))
        if action.name in completion.unchecked:
            action = replace(action, reason=action.reason + "; no wheel of it in the wheel sources: not checked, "
                             "its batch will be unfixable")
        return action

    def completed(action: Action) -> List[Action]:
        follow = following.get(action.name, ()) if action.kind == "install" else ()
        return [explained(a) for a in (action,) + tuple(follow)]
    return replace(plan, batches=tuple(
        replace(batch, actions=tuple(new for action in batch.actions for new in completed(action)))
        for batch in plan.batches))


def make_plan(obs: Observations, findings: Sequence, desired: DesiredState) -> Plan:
    """The ordered batches that take the observed venv to the desired state."""
    by_key = _installed(obs)
    outside = _outside_entries(obs)
    declared = {e.name for e in obs.requirements} | {obs.options.anchor}
    removals = _removals(obs, desired, declared, by_key)
    installs, unfixable = _installs(obs)
    damaged, kept_apart = _without_kept_collisions(obs, removals, _damaged(
        obs, findings, by_key, None if desired.revert_edits else cuda_scope(obs)))
    unfixable += kept_apart
    co_owners = _co_owners(obs, set(removals) | _replacing(obs, installs, by_key), by_key)
    refused, damaged, co_owners = _never_rewritten(by_key, damaged, co_owners, outside)
    unfixable += refused
    units, replaced, installs = _units(removals, damaged, co_owners, installs, by_key, outside)
    safe, late = _split_sole_providers(obs, [k for k in sorted(removals) if k not in replaced], removals)

    batches: List[Tuple[str, List[Action], Set[str]]] = []
    anchor = obs.options.anchor
    # Another anchor declared (torch 2.9.1 over 2.14.1): it and its pins go first, while what the installed one
    # loads is still there; what only the old anchor needed goes after, when nothing loads it any more.
    new_anchor = anchor in installs and anchor in by_key
    install_batches = [("install missing or mismatched requirements", list(chunk),
                        {F.REQUIREMENT_MISSING, F.REQUIREMENT_VERSION_MISMATCH, F.SONAME_UNRESOLVED, F.LOCK_DRIFT})
                       for chunk in _chunks(sorted(installs.values(), key=lambda a: a.name != anchor), desired.batch_size)]
    if new_anchor:
        batches += install_batches
    if safe:
        batches.append(("remove contaminants nothing kept needs",
                        [_remove(by_key[k], removals[k], outside) for k in safe], {F.CUDA_DIST_UNREQUIRED, F.LOCK_DRIFT}))
    for chunk in _chunks(units, desired.batch_size):
        actions = [a for unit_removals, _follow in chunk for a in unit_removals]
        actions += [a for _removals, follow in chunk for a in follow]
        batches.append(("remove colliding wheels, then reinstall what they overwrote or deleted", actions,
                        {F.FILE_OWNERSHIP_CONFLICT, F.RECORD_MISSING_FILES, F.RECORD_MODIFIED_FILES,
                         F.CUDA_MAJOR_MIXED, F.RUNTIME_LIBRARY_MISMATCH, F.SONAME_UNRESOLVED, F.IMPORT_FAILED,
                         F.CUDA_DIST_UNREQUIRED, F.LOCK_DRIFT}))
    if not new_anchor:
        batches += install_batches
    if late:
        batches.append(("remove former sole providers, now replaced",
                        [_remove(by_key[k], removals[k], outside) for k in late], {F.CUDA_DIST_UNREQUIRED}))
    codes = {f.code for f in findings if f.severity != F.INFO}
    plan = Plan(tuple(Batch(i + 1, title, tuple(actions), tuple(sorted(answers & codes)))
                      for i, (title, actions, answers) in enumerate(batches)), tuple(unfixable))
    _refuse_broken_requirements(obs, plan, by_key)
    return plan


# --- what to remove ------------------------------------------------------------------------------------------

def _installed(obs: Observations) -> Dict[str, Distribution]:
    by_key: Dict[str, Distribution] = {}
    for dist in obs.distributions:
        by_key.setdefault(dist.key, dist)
    return by_key


def _removals(obs: Observations, desired: DesiredState, declared: Set[str], by_key) -> Dict[str, tuple]:
    """canonical name -> (why it goes, its evidence). ``prune: cuda`` removes only what ``contaminants.belonging``
    proves wrong for this venv; neighbours stay."""
    removals: Dict[str, tuple] = {}
    for name in desired.remove:
        key = canonical_name(name)
        if key in declared:
            raise PlanError("cannot remove %s: %s requires it (it is in the declared set)" % (name, obs.options.anchor))
        if key in by_key:
            removals[key] = ("listed in remove", ())
    if desired.prune == "none":
        return removals
    if desired.prune == "all":
        for key in by_key:
            if key not in declared and key not in removals and key not in VENV_SEED:
                removals[key] = ("not in the %s (prune: all)" % ("lock " + obs.lock.name if obs.lock else "declared set"), ())
        return removals
    for contaminant in belonging(obs).removable().values():
        removals.setdefault(contaminant.dist.key, ("contaminant (prune: cuda): %s" % contaminant.why, contaminant.evidence))
    return removals


def _refuse_broken_requirements(obs: Observations, plan: Plan, by_key) -> None:
    """Invariant 5: what the plan removes for good is required by nothing it keeps (every kept distribution's own
    requirements, extras as asked, not only the anchor's). PlanError naming both otherwise: nothing runs."""
    gone: Set[str] = set()
    for batch in plan.batches:
        for action in batch.actions:
            if action.kind == "remove":
                gone.add(action.name)
            else:
                gone.discard(action.name)
    edges = belonging(obs).edges
    askers = extra_askers(edges)
    cut = [e for e in edges if e.name in gone and e.required_by.split("[", 1)[0] not in gone]
    broken = sorted({(edge.required_by.split("[", 1)[0], edge.name, edge.requirement.split(";", 1)[0].strip())
                     for edge in cut if still_asked(edge.required_by, askers, lambda key: key not in gone)})
    if broken:
        raise PlanError("the repair would remove what a kept distribution requires: %s; name those in remove too, "
                        "or keep what they require" % "; ".join(
                            "%s requires %s" % (by_key[parent].label if parent in by_key else parent, requirement)
                            for parent, _name, requirement in broken))


def _outside_entries(obs: Observations) -> Dict[str, Tuple[str, ...]]:
    """canonical name -> its RECORD entries that leave the venv (RECORD_PATH_OUTSIDE_VENV)."""
    outside: Dict[str, List[str]] = {}
    for unsafe in obs.unsafe_entries:
        outside.setdefault(unsafe.dist.key, []).append(unsafe.path)
    return {key: tuple(entries) for key, entries in outside.items()}


def _never_rewritten(by_key, damaged: Dict[str, str], co_owners: Dict[str, Set[str]],
                     outside) -> Tuple[List[str], Dict[str, str], Dict[str, Set[str]]]:
    """Why wheels that need a reinstall cannot have one (their paths leave the venv), and ``damaged`` and
    ``co_owners`` without them (new values: the arguments are not changed)."""
    refused = []
    wanted = set(damaged).union(*co_owners.values()) if co_owners else set(damaged)
    for key in sorted(wanted & set(outside)):
        dist = by_key.get(key)
        label = dist.label if dist is not None else key
        refused.append("%s is not reinstalled: %d of its RECORD paths leave the venv (RECORD_PATH_OUTSIDE_VENV), "
                       "so the installer would write outside it, e.g. %s; fix those paths (a symlink leaving the "
                       "venv?), then run again" % (label, len(outside[key]), outside[key][0]))
    gone = set(refused and wanted & set(outside))
    return (refused, {k: v for k, v in damaged.items() if k not in gone},
            {k: set(kept) - gone for k, kept in co_owners.items()})


def _co_owners(obs: Observations, removals: Set[str], by_key) -> Dict[str, Set[str]]:
    """removed name -> kept names that list one of its paths (they must be reinstalled after it goes)."""
    result: Dict[str, Set[str]] = {}
    for conflict in obs.conflicts:
        keys = {label_key(label) for label in conflict.owners}
        gone = keys & set(removals)
        kept = keys - set(removals)
        for key in gone:
            result.setdefault(key, set()).update(k for k in kept if k in by_key)
    return result


def _damaged(obs: Observations, findings, by_key, scope: Optional[Dict[str, str]]) -> Dict[str, str]:
    """Kept distributions whose files are missing or modified -> reason; only those in ``scope`` (see
    scope) unless it is None: outside it, differences no other wheel made are the user's own edits."""
    damaged: Dict[str, str] = {}
    inert = inert_paths(obs) if scope is not None else set()
    for dist in obs.distributions:
        state = obs.file_states.get(dist.dist_info)
        if state is None or dist.key not in by_key or (scope is not None and dist.key not in scope):
            continue
        if only_inert(state.missing + state.modified, inert):
            continue  # a shared file nothing loads: reported, reverted only when asked (revert_edits)
        if state.missing:
            damaged[dist.key] = "%d file(s) missing (RECORD_MISSING_FILES)" % len(state.missing)
        elif state.modified:
            damaged[dist.key] = "%d file(s) modified (RECORD_MODIFIED_FILES)" % len(state.modified)
    for finding in findings:
        if finding.code == F.LOCK_DRIFT and finding.details["kind"] == BYTES:
            damaged.setdefault(finding.subject, "installed from other bytes than the locked wheel's (LOCK_DRIFT)")
        if finding.code == F.RUNTIME_LIBRARY_MISMATCH and finding.details.get("distribution"):
            key = canonical_name(finding.details["distribution"])
            damaged.setdefault(key, "runs another library version (RUNTIME_LIBRARY_MISMATCH)")
    return damaged


def _without_kept_collisions(obs: Observations, removals, damaged: Dict[str, str]) -> Tuple[Dict[str, str], List[str]]:
    """``damaged`` without the wheels that collide with a contaminant the repair keeps (a kept distribution
    requires it): reinstalling one overwrites the other, run after run. Returns (damaged, why each pair stays)."""
    kept = {c.dist.label: c for c in belonging(obs).contaminants.values() if
            c.dist.key not in removals and (c.held_by or c.harmless)}
    pairs: Dict[Tuple[str, str], List[str]] = {}
    for conflict in obs.conflicts:
        for label in conflict.owners:
            if label in kept:
                for other in conflict.owners:
                    if other != label:
                        pairs.setdefault((label, other), []).append(conflict.path)
    pairs = {pair: paths for pair, paths in pairs.items() if any(is_loadable(p) for p in paths)}
    if not pairs:
        return damaged, []
    apart = {label_key(label) for pair in pairs for label in pair}
    why = []
    for (label, other), paths in sorted(pairs.items()):
        contaminant = kept[label]
        holders = ", ".join(contaminant.held_by)
        if not contaminant.held_by:  # kept as harmless: nothing requires it
            kept_why = "%s is kept as harmless (%s)" % (contaminant.dist.name, contaminant.harmless)
            instead = "name it in remove to remove it and reinstall %s" % other
        else:
            verb = "requires" if len(contaminant.held_by) == 1 else "require"
            kept_why = "%s is kept because %s %s it" % (contaminant.dist.name, holders, verb)
            instead = ("declare '%s' in packages (the anchor's build, which %s allows)" % (contaminant.replacement, holders)
                       if contaminant.replacement else "name it in remove with %s" % holders)
        why.append("%s and %s list the same %d path(s) (e.g. %s) and %s: reinstalling either overwrites the other, so "
                   "neither is; %s" % (label, other, len(paths), sorted(paths, key=lambda p: (not is_loadable(p), p))[0],
                                       kept_why, instead))
    return {k: v for k, v in damaged.items() if k not in apart}, why


def _installs(obs: Observations) -> Tuple[Dict[str, Action], List[str]]:
    """name -> install action for unsatisfied requirements (all specifiers of one name merged); and what cannot be done."""
    specifiers: Dict[str, List[str]] = {}
    reasons: Dict[str, str] = {}
    for edge in obs.requirements:
        if edge.satisfied or not edge.name:
            continue
        specs = specifiers.setdefault(edge.name, [])
        for spec in str(edge.specifier).split(","):
            if spec.strip() and spec.strip() not in specs:
                specs.append(spec.strip())
        if edge.name not in reasons or edge.required_by:
            reasons[edge.name] = _install_reason(edge, obs.lock)
    installs: Dict[str, Action] = {}
    unfixable: List[str] = []
    for name, specs in specifiers.items():
        if name == obs.options.anchor and not specs and not any(d.key == name for d in obs.distributions):
            unfixable.append("the anchor %s is not installed: declare the version to install in packages, "
                             "for example %s==2.9.1" % (name, name))
            continue
        installs[name] = Action("install", name, name + ",".join(specs), reasons[name])
    return installs, unfixable


def _install_reason(edge, lock) -> str:
    if lock is not None:
        locked = "locked at %s by %s" % (edge.specifier.lstrip("="), lock.name)
        return "%s, %s" % (locked, "not installed" if edge.installed is None else "installed %s" % edge.installed)
    who = "required by %s" % edge.required_by if edge.required_by else "declared (anchor or packages)"
    if edge.installed is None:
        return "%s, not installed" % who
    wanted = edge.requirement.split(";", 1)[0].strip()
    return "%s installed, %s requires %s" % (edge.installed, edge.required_by or "the declared set", wanted)


def _split_sole_providers(obs: Observations, keys: List[str], removals: Dict[str, str]) -> Tuple[List[str], List[str]]:
    """Removals split into (safe now, only after everything else): invariant 3."""
    needed = _needed_sonames_by_kept(obs, removals)
    safe, late = [], []
    for key in keys:
        provided = {o.elf.soname for o in obs.objects.values()
                    if o.owner.key == key and o.elf is not None and o.elf.soname}
        sole = [s for s in provided & needed if not _provided_by_kept(obs, s, removals)]
        (late if sole else safe).append(key)
    return safe, late


def _needed_sonames_by_kept(obs: Observations, removals) -> Set[str]:
    needed: Set[str] = set()
    graph = obs.import_graph
    if graph is None:
        return needed
    for path, resolutions in graph.resolutions.items():
        owners = obs.owners_of(path)
        if owners and all(o.key in removals for o in owners):
            continue
        needed.update(r.soname for r in resolutions)
    return needed


def _provided_by_kept(obs: Observations, soname: str, removals) -> bool:
    """True when a file on disk that no removal owns provides ``soname``: it stays after the removals."""
    for path, obj in obs.objects.items():
        if obj.elf is None or obj.elf.soname != soname:
            continue
        owners = obs.owners_of(path)
        if owners and not any(o.key in removals for o in owners):
            return True
    return False


# --- grouping --------------------------------------------------------------------------------------------------

def _replacing(obs: Observations, installs: Dict[str, Action], by_key) -> Set[str]:
    """Installs of another version of an installed wheel that shares loadable paths with others (cuda-python 12.6
    over cuda-bindings 13, replaced by a CUDA 13 cuda-python): the installer's uninstall of the old one deletes
    the co-owners' files, so it is a unit: removal, the co-owners' reinstall, then the install."""
    found: Set[str] = set()
    for conflict in obs.conflicts:
        if is_loadable(conflict.path) and not identical_everywhere(obs, conflict):
            found.update({label_key(label) for label in conflict.owners} & set(installs) & set(by_key))
    return found


def _units(removals, damaged, co_owners, installs, by_key, outside):
    """Atomic units (removals, follow-ups): a colliding wheel's removal, then the reinstall of every surviving
    co-owner of its paths and the install of its declared twin, or of its own declared version (``_replacing``);
    damaged wheels alone. Returns (units, replaced, the installs no unit took); the arguments are not changed."""
    installs = dict(installs)
    units = []
    taken: Set[str] = set()
    replaced: Set[str] = set()
    swapped = sorted(k for k in co_owners if k in installs and k not in removals)
    if swapped:  # one unit: two of them may share the paths (cuda-bindings and cuda-python, both replaced)
        kept = sorted(set().union(*(co_owners[k] for k in swapped)) - set(swapped))
        follow = [_reinstall(by_key[k], damaged.get(k, "co-owner of paths %s removes" % ", ".join(swapped))) for k in kept]
        units.append((tuple(_remove(by_key[k], ("replaced by %s: the installer's uninstall would delete the paths it "
                                                "shares" % installs[k].requirement, ()), outside) for k in swapped),
                      tuple(follow) + tuple(installs.pop(k) for k in swapped)))
        taken.update(swapped + kept)
    for key in sorted(removals):
        follow = [_reinstall(by_key[k], damaged.get(k, "co-owner of paths %s removes" % key))
                  for k in sorted(co_owners.get(key, ())) if k not in taken]
        partner = cuda.colliding_partner(key)
        if partner in installs:
            follow.append(installs.pop(partner))
        if follow:
            units.append(((_remove(by_key[key], removals[key], outside),), tuple(follow)))
            taken.update(a.name for a in follow)
            replaced.add(key)
    for key in sorted(damaged):
        if key not in taken and key not in removals and key in by_key:
            units.append(((), (_reinstall(by_key[key], damaged[key]),)))
    return units, replaced, installs


def _chunks(items, size: int):
    items = list(items)
    size = max(1, size)
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _remove(dist, why: tuple, outside) -> Action:
    reason, evidence = why
    escaping = outside.get(dist.key, ())
    if not escaping:
        return Action("remove", dist.key, dist.name, reason, evidence=evidence)
    return Action("remove", dist.key, dist.name, reason + "; RECORD first cut to the paths inside the venv",
                  record=os.path.join(dist.dist_info, "RECORD"), outside=escaping, evidence=evidence)


def _reinstall(dist, reason: str) -> Action:
    return Action("reinstall", dist.key, "%s==%s" % (dist.name, dist.version), reason)


def predicted_inventory(before: Dict[str, str], plan: Plan) -> Dict[str, Optional[str]]:
    """Inventory (name -> version) after the plan, for check and diff modes."""
    after = dict(before)
    for batch in plan.batches:
        for action in batch.actions:
            if action.kind == "remove":
                after.pop(action.name, None)
            elif "==" in action.requirement:
                after[action.name] = action.requirement.split("==", 1)[1].split(",", 1)[0].rstrip(".*")
            else:
                after[action.name] = None  # whatever version the sources offer
    return dict(sorted(after.items()))
