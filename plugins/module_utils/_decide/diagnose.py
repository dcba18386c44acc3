# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn observations of a venv into findings with stable codes.

Private to the gpuops.cuda_venv collection: not a public API.

Pure: reads the ``Observations`` record only. One function per finding code, each returning
a list of findings; ``diagnose`` runs them all and orders the result.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contamination_source import contamination_source
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import belonging, identical_everywhere
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.guard import guard_findings
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.lock_drift import lock_drift
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.performance import performance_findings
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.host.gpu import (
    COMPATIBLE, MINOR_BEHIND, GpuError, driver_compatibility, minimum_driver_for)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import version_satisfies
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.scope import cuda_scope, inert_paths, only_inert
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import is_loadable, is_shared_object
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

_EXAMPLES = 3
_LIBRARIES = 8


def diagnose(obs: Observations) -> List[Finding]:
    findings: List[Finding] = []
    for rule in RULES:
        findings.extend(rule(obs))
    return F.ordered(findings)


def python_unusable(obs: Observations) -> List[Finding]:
    if obs.interpreter.ok:
        return []
    return [Finding(F.PYTHON_UNUSABLE, F.ERROR, obs.layout.python,
                    "The venv's interpreter cannot run (%s); nothing can be imported from this venv."
                    % obs.interpreter.error,
                    "Recreate the venv's interpreter: python3 -m venv --upgrade %s (with the Python it was made with)."
                    % obs.layout.root)]


def dist_info_invalid(obs: Observations) -> List[Finding]:
    return [Finding(F.DIST_INFO_INVALID, F.WARNING, d.label,
                    "%s: %s." % (os.path.basename(d.dist_info), "; ".join(d.problems)),
                    "Reinstall it: pip install --force-reinstall --no-deps '%s==%s'." % (d.name, d.version),
                    {"dist_info": d.dist_info, "problems": list(d.problems)})
            for d in obs.distributions if d.problems]


def record_outside_venv(obs: Observations) -> List[Finding]:
    by_dist: Dict[str, list] = {}
    for unsafe in obs.unsafe_entries:
        by_dist.setdefault(unsafe.dist.label, []).append((unsafe.path, unsafe.problem))
    return [Finding(F.RECORD_PATH_OUTSIDE_VENV, F.ERROR, label,
                    "%s lists %d path(s) outside the venv, which are never read, deleted or written: %s."
                    % (label, len(items), "; ".join(p for _e, p in items[:_EXAMPLES])),
                    "Inspect %s's RECORD: an installer never writes such entries." % label,
                    {"entries": [e for e, _p in items]})
            for label, items in sorted(by_dist.items())]


def missing_files(obs: Observations) -> List[Finding]:
    findings = []
    scope, inert = cuda_scope(obs), inert_paths(obs)
    for dist in obs.distributions:
        state = obs.file_states.get(dist.dist_info)
        if not state or not state.missing:
            continue
        payload = [e.path for e in dist.entries if ".dist-info/" not in e.path and not e.path.endswith(".pyc")]
        total = max(len(payload), len(state.missing))
        partner = _partner_cause(obs, dist)
        message = "%s: %d of %d files listed in RECORD are missing%s: %s." % (
            dist.label, len(state.missing), total,
            " (metadata-only: only its dist-info is left)" if set(payload) <= set(state.missing) else "",
            describe_paths(state.missing))
        if partner:
            message += " %s installs the same paths; uninstalling it deletes these files." % partner
        findings.append(_record_finding(obs, F.RECORD_MISSING_FILES, dist, scope, only_inert(state.missing, inert), message,
                                        {"missing": list(state.missing), "count": len(state.missing)}))
    return findings


def modified_files(obs: Observations) -> List[Finding]:
    findings = []
    scope, inert = cuda_scope(obs), inert_paths(obs)
    on_disk = {c.path: c.on_disk for c in obs.conflicts}
    for dist in obs.distributions:
        state = obs.file_states.get(dist.dist_info)
        if not state or not state.modified:
            continue
        writers = sorted({on_disk[p] for p in state.modified if on_disk.get(p) not in (None, "none", dist.label)})
        how = "sha256" if obs.options.verify == "hash" else "size"
        message = "%s: %d file(s) differ from RECORD (%s): %s." % (
            dist.label, len(state.modified), how, describe_paths(state.modified))
        if writers:
            message += " They hold the bytes of %s." % ", ".join(writers)
        findings.append(_record_finding(obs, F.RECORD_MODIFIED_FILES, dist, scope, only_inert(state.modified, inert), message,
                                        {"modified": list(state.modified), "count": len(state.modified),
                                         "overwritten_by": writers}))
    return findings


def _record_finding(obs: Observations, code: str, dist, scope: Dict[str, str], inert: bool, message: str, details: dict) -> Finding:
    """An error for a distribution the CUDA repair reinstalls. Outside its scope, differences no other wheel made
    change nothing for CUDA: files edited in place (a hand edit, an image's own CA bundle) are info, missing files a
    warning; the repair leaves both unless asked (revert_edits). So are differences only in shared paths nothing
    loads (``inert``: FILE_OWNERSHIP_CONFLICT says whose bytes they hold)."""
    if dist.key in scope and not inert:
        return Finding(code, F.ERROR, dist.label, message, _reinstall_fix(obs, dist), details)
    if inert:
        message += " Another wheel lists them too and nothing loads them at run time: cuda_venv_repair leaves them."
    else:
        message += (" No other wheel wrote them and %s is outside the CUDA stack: if they are your own edits, "
                    "cuda_venv_repair leaves them as they are." % dist.name)
    fix = ("To revert them: pip install --force-reinstall --no-deps '%s==%s' (or cuda_venv_repair with "
           "revert_edits: true)." % (dist.name, dist.version))
    severity = F.INFO if code == F.RECORD_MODIFIED_FILES else F.WARNING
    return Finding(code, severity, dist.label, message, fix, dict(details, outside_cuda_scope=True))


def ownership_conflicts(obs: Observations) -> List[Finding]:
    groups: Dict[tuple, list] = {}
    for conflict in obs.conflicts:
        if identical_everywhere(obs, conflict):
            continue  # e.g. the empty nvidia/__init__.py every cu12 wheel ships: same bytes, no harm
        groups.setdefault(tuple(conflict.owners), []).append(conflict)
    findings = []
    for owners, conflicts in sorted(groups.items()):
        holders = sorted({c.on_disk for c in conflicts if c.on_disk and c.on_disk != "none"})
        message = "%s list the same %s in their RECORD. Uninstalling one deletes the other's files." % (
            " and ".join(owners), describe_paths([c.path for c in conflicts]))
        if holders:
            message += " The bytes on disk are %s's." % ", ".join(holders)
        details = {"owners": list(owners), "paths": [c.path for c in conflicts], "on_disk": holders}
        if any(is_loadable(c.path) for c in conflicts):
            findings.append(Finding(
                F.FILE_OWNERSHIP_CONFLICT, F.ERROR, " & ".join(owners), message,
                "Remove the wheel that does not belong first, then force-reinstall the other without deps "
                "(cuda_venv_repair does this in that order).", details))
            continue
        findings.append(Finding(
            F.FILE_OWNERSHIP_CONFLICT, F.WARNING, " & ".join(owners),
            message + " Nothing loads them at run time (no library, no module of a package): no reason to remove "
            "either.",
            "To have one owner's bytes: pip install --force-reinstall --no-deps that wheel (cuda_venv_repair with "
            "revert_edits: true reinstalls the owner whose bytes are not on disk).", dict(details, loadable=False)))
    return findings


def unresolved_sonames(obs: Observations) -> List[Finding]:
    graph = obs.import_graph
    findings = []
    needed_by: Dict[str, list] = {}
    errors: Dict[str, str] = {}
    if graph is not None:
        for path, resolutions in graph.resolutions.items():
            for res in resolutions:
                if res.path is None or res.error:
                    needed_by.setdefault(res.soname, []).append(path)
                    if res.error:
                        errors[res.soname] = res.error
    for soname, requesters in sorted(needed_by.items()):
        providers = expected_providers(obs, soname)
        message = "%s, needed by %s (loaded when %s is imported), %s." % (
            soname, ", ".join(_object_label(obs, p) for p in requesters[:_EXAMPLES]), obs.options.anchor,
            ("cannot be loaded: %s" % errors[soname]) if soname in errors else "is found nowhere")
        if providers:
            message += " It should come from %s." % "; ".join(providers)
        findings.append(Finding(F.SONAME_UNRESOLVED, F.ERROR, soname, message,
                                _provider_fix(obs, soname),
                                {"needed_by": [obs.relpath(p) for p in requesters], "providers": providers,
                                 "loaded_at_import": True}))
    optional: Dict[str, list] = {}
    for path, resolutions in obs.other_resolutions.items():
        for res in resolutions:
            if res.path is None and res.soname not in needed_by:
                optional.setdefault(res.soname, []).append(path)
    transports = {s: r for s, r in optional.items() if cuda.is_optional_transport(s)}
    if transports:
        plugins = sorted({obs.relpath(p) for requesters in transports.values() for p in requesters})
        findings.append(Finding(
            F.SONAME_UNRESOLVED, F.INFO, "optional transports",
            "%d optional transport librar%s (%s), needed by %d plugin(s) not loaded when %s is imported (%s), %s found "
            "nowhere: this machine has no such network stack; only a job that selects that transport needs them." % (
                len(transports), "y" if len(transports) == 1 else "ies", ", ".join(sorted(transports)), len(plugins),
                obs.options.anchor, ", ".join(plugins[:_EXAMPLES]) + (", ..." if len(plugins) > _EXAMPLES else ""),
                "is" if len(transports) == 1 else "are"),
            None, {"sonames": sorted(transports), "needed_by": plugins, "loaded_at_import": False}))
    for soname, requesters in sorted(optional.items()):
        if soname in transports:
            continue
        findings.append(Finding(
            F.SONAME_UNRESOLVED, F.INFO, soname,
            "%s, needed by %s (not loaded when %s is imported: an optional plugin), is found nowhere." % (
                soname, ", ".join(_object_label(obs, p) for p in requesters[:_EXAMPLES]), obs.options.anchor),
            None, {"needed_by": [obs.relpath(p) for p in requesters], "loaded_at_import": False}))
    return findings


def system_fallbacks(obs: Observations) -> List[Finding]:
    root = obs.real_path(obs.layout.root) + "/"
    listed: set = set()  # the file names the distributions list, read when first needed
    findings = []
    seen: Dict[str, tuple] = {}
    graphs = []
    if obs.import_graph is not None:
        graphs.append((obs.import_graph.resolutions, True))
    graphs.append((obs.other_resolutions, False))
    for resolutions_by_object, at_import in graphs:
        for path, resolutions in resolutions_by_object.items():
            for res in resolutions:
                if res.path is None or res.error or res.soname in seen or res.soname in obs.shadowed:
                    continue
                if obs.real_path(res.path).startswith(root):
                    continue
                if not cuda.is_cuda_soname(res.soname):
                    listed = listed or {e.path.rpartition("/")[2] for d in obs.distributions for e in d.entries}
                    if res.soname not in listed:
                        continue
                if res.soname in cuda.DRIVER_SONAMES:
                    continue
                seen[res.soname] = (path, res, at_import)
    for soname, (path, res, at_import) in sorted(seen.items()):
        providers = expected_providers(obs, soname)
        message = "%s, needed by %s, is not found in the venv and resolves to %s (via %s)%s" % (
            soname, _object_label(obs, path), res.path, res.via.replace("_", " "),
            "" if at_import else " for an object not loaded at import")
        if providers:
            message += "; the venv should provide it from %s" % "; ".join(providers)
        findings.append(Finding(F.SONAME_SYSTEM_FALLBACK, F.WARNING if at_import else F.INFO, soname,
                                message + ": a version skew waiting to happen.", _provider_fix(obs, soname),
                                {"resolved": res.path, "via": res.via, "needed_by": obs.relpath(path)}))
    return findings


def shadowed_sonames(obs: Observations) -> List[Finding]:
    """Libraries the venv has that LD_LIBRARY_PATH takes over: an error when the two are different builds (versions
    that differ, or any other bytes for a family whose members must come from one build)."""
    findings = []
    for soname, shadow in sorted(obs.shadowed.items()):
        owners = obs.owners_of(shadow.own[0])
        owner = owners[0] if owners else None
        family = cuda.library_family(soname)
        ours = "%s of %s" % (obs.relpath(shadow.own[0]), owner.label) if owner else obs.relpath(shadow.own[0])
        version = shadow.resolved_version or "version unknown"
        if shadow.version_from:
            version += ", as %s beside it says" % shadow.version_from
        message = "%s%s is in the venv (%s) but LD_LIBRARY_PATH comes first: the loader takes %s (%s) for %s%s." % (
            soname, " (%s)" % family if family else "", ours, shadow.resolved, version, _object_label(obs, shadow.needed_by),
            ", loaded at import" if shadow.at_import else "")
        differ = _versions_differ(owner.version if owner else None, shadow.resolved_version)
        if shadow.same_bytes:
            severity, message = F.INFO, message + " Both hold the same bytes: harmless while they do."
        elif differ or family in cuda.ONE_BUILD_FAMILIES:
            severity = F.ERROR
            message += " Two builds of %s in one process (%s in the venv, %s on LD_LIBRARY_PATH%s)" % (
                family or soname, owner.version if owner else "version unknown",
                shadow.resolved_version or "version unknown", "" if differ else "; their bytes differ")
            message += ": %s." % cuda.ONE_BUILD_FAMILIES.get(family, "a version skew")
        else:
            severity, message = F.WARNING, message + " The two files differ: a version skew waiting to happen."
        fix = ("Drop %s from LD_LIBRARY_PATH for this venv's processes (and from the ld_library_path option): the "
               "venv's own %s is then found through its requester's DT_RUNPATH." % (shadow.entry, soname))
        findings.append(Finding(F.SONAME_SHADOWED, severity, soname, message, fix, {
            "resolved": shadow.resolved, "resolved_version": shadow.resolved_version,
            "resolved_version_from": shadow.version_from, "ld_library_path_entry": shadow.entry,
            "venv_copy": obs.relpath(shadow.own[0]), "distribution": owner.label if owner else None,
            "needed_by": obs.relpath(shadow.needed_by), "loaded_at_import": shadow.at_import,
            "same_bytes": shadow.same_bytes}))
    return findings


def _versions_differ(ours: Optional[str], theirs: Optional[str]) -> bool:
    """True when both versions are known and differ in the components both give (9.10.2.21 vs 9.24.0)."""
    if not ours or not theirs:
        return False
    a, b = [int(p) for p in re.findall(r"\d+", ours)], [int(p) for p in re.findall(r"\d+", theirs)]
    count = min(len(a), len(b))
    return count > 0 and a[:count] != b[:count]


def mixed_majors(obs: Observations) -> List[Finding]:
    """CUDA wheels of two majors; a wheel with a build for the anchor's major among others, or the flavour such a
    wheel picks from at run time, is no mix (``contaminants.belonging``'s run-time choices)."""
    per_major: Dict[int, list] = {}
    choices = belonging(obs).run_time_choices
    for dist in obs.distributions:
        major = obs.cuda_major(dist.dist_info).major
        if dist.dist_info in choices:
            continue
        if major is not None and (cuda.is_cuda_distribution(dist.key) or dist.key == obs.options.anchor):
            per_major.setdefault(major, []).append(dist.label)
    if len(per_major) < 2:
        return []
    parts = ["CUDA %d: %s" % (m, ", ".join(sorted(labels))) for m, labels in sorted(per_major.items())]
    return [Finding(F.CUDA_MAJOR_MIXED, F.ERROR, ",".join(str(m) for m in sorted(per_major)),
                    "CUDA wheels of %d majors are installed side by side (%s)." % (len(per_major), "; ".join(parts)),
                    "Keep the major the anchor (%s) was built for; remove the others (cuda_venv_repair prune: cuda)."
                    % obs.options.anchor,
                    {str(m): sorted(labels) for m, labels in per_major.items()})]


def conflicting_pins(obs: Observations) -> List[Finding]:
    """A wheel of the declared closure, installed as the closure requires, that a kept distribution requires at
    another version: two pins that cannot both hold. One finding per wheel naming every pin; the anchor's is kept."""
    judged = belonging(obs)
    gone = {c.dist.key for c in judged.removable().values()}
    declared = {e.name for e in obs.requirements} | {obs.options.anchor}
    held = {e.name: e for e in obs.requirements if e.name and e.satisfied}
    by_key = {d.key: d for d in obs.distributions}
    pins: Dict[str, list] = {}
    for edge in judged.edges:
        parent = edge.required_by.split("[", 1)[0]
        if edge.name in held and parent not in gone and parent not in declared and parent in by_key \
                and version_satisfies(by_key[edge.name].version, edge.specifier) is False:
            pins.setdefault(edge.name, []).append("%s requires %s" % (by_key[parent].label, edge.requirement.split(";", 1)[0].strip()))
    findings = []
    for name, others in sorted(pins.items()):
        anchor_pin = held[name]
        via = anchor_pin.required_by or "the declared packages"
        message = "%s %s is installed as %s asks (%s); %s: these pins cannot both hold, and the repair keeps the " \
                  "declared one." % (name, by_key[name].version, via, anchor_pin.requirement.split(";", 1)[0].strip(),
                                     "; ".join(sorted(set(others))))
        findings.append(Finding(F.REQUIREMENT_PINS_CONFLICT, F.WARNING, name, message,
                                "Install a release of %s that allows %s %s, or remove it (cuda_venv_repair remove)." % (
                                    " / ".join(sorted({o.split(" ", 1)[0] for o in others})), name, by_key[name].version),
                                {"declared": anchor_pin.requirement.split(";", 1)[0].strip(), "required_by": via,
                                 "others": sorted(set(others))}))
    return findings


def requirement_problems(obs: Observations) -> List[Finding]:
    if obs.lock is not None:
        return []  # the requirements are the lock's pins: LOCK_DRIFT says what differs (_decide/lock_drift.py)
    findings = []
    for edge in obs.requirements:
        if edge.name == obs.options.anchor and not edge.chain:
            continue  # the anchor itself: ANCHOR_NOT_INSTALLED says it once
        via = " <- ".join(edge.chain) if edge.chain else edge.required_by
        if edge.installed is None:
            findings.append(Finding(
                F.REQUIREMENT_MISSING, F.ERROR, edge.name,
                "%s (required by %s) is not installed%s." % (
                    edge.requirement, via,
                    "; pip check does not see requirements reached through extras" if "[" in via else ""),
                "pip install --no-deps '%s'" % _pin_text(edge), {"requirement": edge.requirement, "chain": list(edge.chain)}))
        elif not edge.satisfied:
            findings.append(Finding(
                F.REQUIREMENT_VERSION_MISMATCH, F.ERROR, edge.name,
                "%s %s is installed but %s requires %s." % (edge.name, edge.installed, via, edge.requirement),
                "pip install --no-deps '%s'" % _pin_text(edge),
                {"requirement": edge.requirement, "installed": edge.installed, "chain": list(edge.chain)}))
    return findings


def unrequired_cuda(obs: Observations) -> List[Finding]:
    """CUDA wheels and consumers nothing declared requires, with evidence that they are wrong for this venv; the
    neighbours (no evidence) are listed in the facts, not here."""
    findings = []
    for contaminant in sorted(belonging(obs).contaminants.values(), key=lambda c: c.dist.key):
        dist = contaminant.dist
        message = "%s is a %s that nothing %s requires, and wrong for this venv: %s." % (
            dist.label, "CUDA consumer" if contaminant.consumer else "CUDA %s wheel" % contaminant.major,
            obs.options.anchor, contaminant.why)
        fix = "Remove it (cuda_venv_repair removes it by default, prune: cuda)."
        if contaminant.harmless:
            message += " It shares no path with the stack and requires nothing wrong: %s." % contaminant.harmless
            fix = "The repair keeps it; name it in remove (or prune: all) to remove it."
        elif contaminant.held_by:
            message += " %s require%s it, so the repair keeps it unless told otherwise." % (
                ", ".join(contaminant.held_by), "s" if len(contaminant.held_by) == 1 else "")
            fix = "Remove it with what requires it if no workload needs them (cuda_venv_repair remove: [%s])." % (
                ", ".join([dist.key] + [h.split(" ", 1)[0] for h in contaminant.held_by]))
            if contaminant.replacement:
                fix = ("Replace it by the anchor's build, which what requires it allows: declare '%s' in packages; "
                       "or %s" % (contaminant.replacement, fix[0].lower() + fix[1:]))
        findings.append(Finding(F.CUDA_DIST_UNREQUIRED, F.WARNING, dist.key, message, fix, {
            "cuda_major": contaminant.major, "evidence": [e.as_dict() for e in contaminant.evidence],
            "held_by": list(contaminant.held_by), "harmless": contaminant.harmless or None,
            "replacement": contaminant.replacement or None}))
    return findings


def duplicates(obs: Observations) -> List[Finding]:
    by_key: Dict[str, list] = {}
    for dist in obs.distributions:
        by_key.setdefault(dist.key, []).append(dist)
    return [Finding(F.DUPLICATE_DISTRIBUTION, F.ERROR, key,
                    "%d dist-info folders exist for %s: %s; pip sees only one of them." % (
                        len(items), key, ", ".join(os.path.basename(d.dist_info) for d in items)),
                    "Remove the stale dist-info folder, then force-reinstall %s without deps." % key,
                    {"dist_info": [d.dist_info for d in items]})
            for key, items in sorted(by_key.items()) if len(items) > 1]


def import_failed(obs: Observations) -> List[Finding]:
    probe = obs.probe
    if probe is None or not probe.ran or probe.ok or not _anchor_installed(obs):
        return []
    if probe.timed_out:
        reason = "timed out after %.0f s" % obs.options.probe_timeout
    elif probe.signal:
        reason = "the interpreter died with %s" % probe.signal
    else:
        reason = probe.error or "exit code %s" % probe.returncode
    unresolved = sorted({f.subject for f in unresolved_sonames(obs) if f.severity == F.ERROR})
    fix = ("Provide every missing library at once: %s (cuda_venv_repair does this)." % ", ".join(unresolved)
           if unresolved else None)
    return [Finding(F.IMPORT_FAILED, F.ERROR, obs.options.anchor, "import %s fails: %s" % (obs.options.anchor, reason),
                    fix, {"error": probe.error, "traceback": probe.traceback})]


def anchor_missing(obs: Observations) -> List[Finding]:
    if _anchor_installed(obs):
        return []
    return [Finding(F.ANCHOR_NOT_INSTALLED, F.ERROR, obs.options.anchor,
                    "The anchor %s is not installed in %s; its requirement closure cannot be checked." % (
                        obs.options.anchor, obs.layout.root),
                    "Set the anchor option to the package that owns this venv's CUDA wheels.")]


def runtime_mismatch(obs: Observations) -> List[Finding]:
    probe = obs.probe
    if probe is None or not probe.ok:
        return []
    findings = []
    required = {e.name: e for e in obs.requirements if e.installed is not None}
    holders = {c.path: c for c in obs.conflicts}
    for key, stem in sorted(cuda.RUNTIME_VERSION_KEYS.items()):
        reported = probe.versions.get(key)
        if reported in (None, "", "None"):
            continue
        wanted = [e for name, e in required.items() if name.startswith(stem)]
        for edge in wanted:
            expected = cuda.encode_runtime_version(edge.name, edge.installed)
            if expected is None or str(reported) == expected:
                continue
            culprits = [c.on_disk for c in holders.values()
                        if edge.name in " ".join(c.owners) and c.on_disk not in (None, "none") and not c.on_disk.startswith(edge.name + " ")]
            message = "%s runs %s %s but requires %s %s (%s)." % (
                obs.options.anchor, key, reported, edge.name, edge.installed, expected)
            if culprits:
                message += " Its files hold the bytes of %s." % sorted(set(culprits))[0]
            findings.append(Finding(F.RUNTIME_LIBRARY_MISMATCH, F.ERROR, key, message,
                                    "Remove the colliding wheel, then force-reinstall %s without deps." % edge.name,
                                    {"reported": str(reported), "expected": expected, "distribution": edge.name}))
    findings.extend(_loaded_from_outside(obs, probe.loaded))
    return findings


def _loaded_from_outside(obs: Observations, loaded) -> List[Finding]:
    """Libraries a wheel of the venv should provide but the process mapped from elsewhere."""
    root = os.path.realpath(obs.layout.root) + "/"
    listed = {os.path.basename(e.path) for d in obs.distributions for e in d.entries}
    findings = []
    for path in loaded:
        if path.startswith(root):
            continue
        name = os.path.basename(path)
        # the shortest listed name that is the loaded file's name or a prefix of it ending before a '.'
        parts = name.split(".")
        soname = next((c for c in (".".join(parts[:n]) for n in range(1, len(parts) + 1)) if c in listed), None)
        if soname is None or not cuda.is_cuda_soname(soname) or soname in cuda.DRIVER_SONAMES:
            continue
        findings.append(Finding(F.RUNTIME_LIBRARY_MISMATCH, F.WARNING, soname,
                                "import %s loaded %s from outside the venv instead of %s." % (
                                    obs.options.anchor, path, "; ".join(expected_providers(obs, soname))),
                                _provider_fix(obs, soname), {"loaded": path}))
    return findings


def driver_too_old(obs: Observations) -> List[Finding]:
    """CUDA's compatibility rules: a driver of the build's major but an older minor runs it (minor version
    compatibility) with limits, a warning; a driver of an older major cannot, an error."""
    gpu = obs.gpu
    if gpu is None or not gpu.available or not gpu.max_cuda:
        return []
    needed = (obs.probe.versions.get("cuda") if obs.probe and obs.probe.versions else None) or _anchor_cuda(obs)
    if not needed:
        return []
    try:
        verdict = driver_compatibility(gpu.max_cuda, str(needed))
        minimum = minimum_driver_for(str(needed))
    except GpuError:
        return []
    if verdict == COMPATIBLE:
        return []
    subject = "driver %s" % gpu.driver_version
    if verdict == MINOR_BEHIND:
        return [Finding(F.DRIVER_TOO_OLD, F.WARNING, subject,
                        "The driver supports CUDA up to %s and %s is built for CUDA %s: minor version compatibility "
                        "runs it, but what needs the newer minor may fail (PTX JIT of kernels built for %s, APIs "
                        "added after %s)." % (gpu.max_cuda, obs.options.anchor, needed, needed, gpu.max_cuda),
                        "Upgrade the host's NVIDIA driver to one that supports CUDA %s, or install a build of %s "
                        "for CUDA %s." % (needed, obs.options.anchor, gpu.max_cuda),
                        {"max_cuda": gpu.max_cuda, "needed": str(needed), "minimum_driver": minimum})]
    return [Finding(F.DRIVER_TOO_OLD, F.ERROR, subject,
                    "The driver supports CUDA up to %s but %s is built for CUDA %s: a CUDA %s build needs driver "
                    "%s or newer." % (gpu.max_cuda, obs.options.anchor, needed, str(needed).split(".", maxsplit=1)[0], minimum),
                    "Upgrade the host's NVIDIA driver (>= %s) or install a build of %s for CUDA %s." % (
                        minimum, obs.options.anchor, gpu.max_cuda),
                    {"max_cuda": gpu.max_cuda, "needed": str(needed), "minimum_driver": minimum})]


def venv_moved(obs: Observations) -> List[Finding]:
    scripts = obs.scripts
    if scripts is None or not scripts.relocated:
        return []
    paths = sorted(p for moved in scripts.relocated.values() for p in moved)
    former = " from %s" % ", ".join(scripts.former_roots) if scripts.former_roots else ""
    return [Finding(F.VENV_MOVED, F.INFO, obs.layout.root,
                    "The venv was moved%s to %s: %d console script(s) differ from RECORD only in a shebang that names "
                    "this venv's interpreter (%s); nothing is damaged." % (
                        former, obs.layout.root, len(paths), ", ".join(os.path.basename(p) for p in paths[:_EXAMPLES])),
                    None, {"scripts": paths, "former_roots": list(scripts.former_roots)})]


def script_interpreter_missing(obs: Observations) -> List[Finding]:
    scripts = obs.scripts
    if scripts is None:
        return []
    by_interpreter: Dict[str, list] = {}
    for label, path, interpreter in scripts.interpreter_missing:
        by_interpreter.setdefault(interpreter, []).append((label, path))
    python = obs.layout.python
    return [Finding(F.SCRIPT_INTERPRETER_MISSING, F.WARNING, interpreter,
                    "%d console script(s) start with #!%s, which does not exist (was the venv moved?): %s fail to "
                    "start." % (len(items), interpreter, ", ".join(p for _l, p in items[:_EXAMPLES])),
                    "Point their shebangs at this venv: sed -i '1s|^#!%s|#!%s|' %s" % (
                        interpreter, python, " ".join(os.path.join(obs.layout.root, p) for _l, p in items)),
                    {"scripts": [p for _l, p in items], "distributions": sorted({label for label, _p in items})})
            for interpreter, items in sorted(by_interpreter.items())]


def invalid_elves(obs: Observations) -> List[Finding]:
    findings = []
    for path, obj in sorted(obs.objects.items()):
        if obj.error is None:
            continue
        state = obs.file_states.get(obj.owner.dist_info)
        if state and obj.relpath in state.modified:
            continue  # already reported as a modified file, with its owner
        findings.append(Finding(F.ELF_INVALID, F.ERROR if _loaded_at_import(obs, path) else F.WARNING,
                                obs.relpath(path), "%s (%s) is not a loadable shared object: %s." % (
                                    obs.relpath(path), obj.owner.label, obj.error),
                                _reinstall_fix(obs, obj.owner)))
    return findings


RULES = (python_unusable, anchor_missing, dist_info_invalid, record_outside_venv, missing_files, modified_files,
         ownership_conflicts, duplicates, mixed_majors, requirement_problems, lock_drift, conflicting_pins,
         unresolved_sonames, system_fallbacks,
         import_failed, runtime_mismatch, unrequired_cuda, contamination_source, driver_too_old, invalid_elves, venv_moved,
         script_interpreter_missing, shadowed_sonames, guard_findings, performance_findings)


# --- helpers -------------------------------------------------------------------------------------------------

def expected_providers(obs: Observations, soname: str) -> List[str]:
    """Distributions whose RECORD lists a file named like ``soname``, with where it should be."""
    providers = []
    for dist in obs.distributions:
        for entry in dist.entries:
            if os.path.basename(entry.path) == soname:
                state = obs.file_states.get(dist.dist_info)
                missing = bool(state and entry.path in state.missing)
                providers.append("%s (%s%s)" % (dist.label, entry.path, ", missing on disk" if missing else ""))
    return providers


def _provider_fix(obs: Observations, soname: str) -> Optional[str]:
    for dist in obs.distributions:
        if any(os.path.basename(e.path) == soname for e in dist.entries):
            return _reinstall_fix(obs, dist)
    return None


def _reinstall_fix(obs: Observations, dist) -> str:
    partner = cuda.colliding_partner(dist.key)
    first = ""
    if partner and any(d.key == partner for d in obs.distributions):
        first = "pip uninstall %s first, then " % partner
    return "%spip install --force-reinstall --no-deps '%s==%s' (or run cuda_venv_repair)." % (first, dist.name, dist.version)


def _partner_cause(obs: Observations, dist) -> Optional[str]:
    partner = cuda.colliding_partner(dist.key)
    if not partner:
        return None
    present = [d.label for d in obs.distributions if d.key == partner]
    return present[0] if present else partner


def _object_label(obs: Observations, path: str) -> str:
    owners = obs.owners_of(path)
    return "%s (%s)" % (obs.relpath(path), owners[0].label) if owners else obs.relpath(path)


def _loaded_at_import(obs: Observations, path: str) -> bool:
    return obs.import_graph is not None and path in obs.import_graph.objects


def _anchor_installed(obs: Observations) -> bool:
    return any(d.key == obs.options.anchor for d in obs.distributions)


def _anchor_cuda(obs: Observations) -> Optional[str]:
    for dist in obs.distributions:
        if dist.key == obs.options.anchor and cuda.local_cuda_version(dist.version):
            return cuda.local_cuda_version(dist.version)
    return None


def _pin_text(edge) -> str:
    return edge.requirement.split(";", 1)[0].strip()


def describe_paths(paths) -> str:
    """Paths as a person reads them, the shared libraries at stake first: "22 paths, 8 of them shared libraries:
    libcudnn.so.9, libcudnn_adv.so.9, ...; the rest e.g. nvidia/cudnn/include/cudnn.h, ..."."""
    paths = list(paths)
    libraries = [p for p in paths if is_shared_object(p)]
    rest = [p for p in paths if p not in set(libraries)]
    if not libraries:
        return "%d path(s), e.g. %s" % (len(paths), ", ".join(paths[:_EXAMPLES]))
    names = sorted({os.path.basename(p) for p in libraries}, key=lambda n: (len(n), n))
    shown = ", ".join(names[:_LIBRARIES]) + (", ..." if len(names) > _LIBRARIES else "")
    if not rest:
        return "%d shared librar%s: %s" % (len(libraries), "y" if len(libraries) == 1 else "ies", shown)
    text = "%d path(s), %d of them shared libraries: %s" % (len(paths), len(libraries), shown)
    if rest:
        text += "; the rest e.g. %s" % ", ".join(rest[:_EXAMPLES])
    return text
