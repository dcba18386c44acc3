# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shape observations and findings into the ``ansible_facts.cuda_venv`` dictionary (pure: the observing, and the
reading of the wheel sources, are ``_act/facts.py``'s).

Private to the gpuops.cuda_venv collection: not a public API.
"""

from __future__ import annotations

from typing import Dict, List

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import belonging, identical_everywhere
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import is_healthy, summarize
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.guard import guard_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.history import history_of
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.lock_drift import lock_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.performance import performance_facts
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations, each_resolution


def report(obs: Observations, findings) -> dict:
    return {
        "path": obs.layout.root,
        "anchor": obs.options.anchor,
        "verify": obs.options.verify,
        "python": {
            "executable": obs.interpreter.executable or obs.layout.python,
            "version": obs.interpreter.version or obs.layout.version,
            "implementation": obs.interpreter.implementation,
            "ok": obs.interpreter.ok,
            "error": obs.interpreter.error,
        },
        "site_packages": list(obs.site_packages),
        "distributions": [_distribution(obs, d) for d in obs.distributions],
        "conflicts": [{"path": c.path, "owners": list(c.owners), "on_disk": c.on_disk,
                       "identical": identical_everywhere(obs, c)} for c in obs.conflicts],
        "sonames": _sonames(obs),
        "unresolved": _unresolved(obs),
        "fallbacks": _fallbacks(obs),
        "import_graph": _import_graph(obs),
        "requirements": [_requirement(e) for e in obs.requirements],
        "probe": _probe(obs),
        "gpu": obs.gpu.as_dict() if obs.gpu is not None else {"available": False, "reason": "not gathered (gpu: false)"},
        "guard": guard_facts(obs.guard, obs),
        "history": [t.as_dict() for t in history_of(obs)],
        **_belonging(obs),
        "performance": performance_facts(obs),
        "lock": lock_facts(obs, findings),
        "read_index": obs.read_index.facts() if obs.read_index is not None else None,
        "findings": [f.as_dict() for f in findings],
        "healthy": is_healthy(findings),
        "summary": summarize(findings),
    }


def _belonging(obs: Observations) -> dict:
    """The CUDA distributions nothing declared requires: those proven wrong, with their evidence, and the neighbours."""
    judged = belonging(obs)
    return {"contaminants": [{"distribution": c.dist.label, "cuda_major": c.major,
                              "evidence": [e.as_dict() for e in c.evidence], "held_by": list(c.held_by)}
                             for c in sorted(judged.contaminants.values(), key=lambda c: c.dist.key)],
            "neighbours": [n.as_dict() for n in judged.neighbours]}


def _distribution(obs: Observations, dist) -> dict:
    state = obs.file_states.get(dist.dist_info)
    major = obs.cuda_major(dist.dist_info)
    return {
        "name": dist.name,
        "version": dist.version,
        "dist_info": dist.dist_info,
        "installer": dist.installer,
        "requested": dist.requested,
        "cuda_major": major.major,
        "cuda_major_evidence": major.evidence,
        "files": len(dist.entries),
        "missing_count": len(state.missing) if state else 0,
        "modified_count": len(state.modified) if state else 0,
        "missing": list(state.missing) if state else [],
        "modified": list(state.modified) if state else [],
        "problems": list(dist.problems),
    }


def _sonames(obs: Observations) -> Dict[str, List[dict]]:
    table: Dict[str, List[dict]] = {}
    for obj in obs.objects.values():
        if obj.elf is None or not obj.elf.soname:
            continue
        major = obs.cuda_major(obj.owner.dist_info).major
        table.setdefault(obj.elf.soname, []).append(
            {"distribution": obj.owner.label, "path": obj.relpath, "cuda_major": major})
    return {k: sorted(v, key=lambda p: (p["distribution"], p["path"])) for k, v in sorted(table.items())}


def _each_resolution(obs: Observations):
    return each_resolution(obs.import_graph, obs.other_resolutions)


def _unresolved(obs: Observations) -> List[dict]:
    rows = []
    for path, res, at_import in _each_resolution(obs):
        if res.path is None or res.error:
            owners = obs.owners_of(path)
            rows.append({"object": obs.relpath(path), "distribution": owners[0].label if owners else None,
                         "soname": res.soname, "loaded_at_import": at_import, "error": res.error})
    return sorted(rows, key=lambda r: (not r["loaded_at_import"], r["soname"], r["object"]))


def _fallbacks(obs: Observations) -> List[dict]:
    root = obs.real_path(obs.layout.root) + "/"
    rows = []
    for path, res, at_import in _each_resolution(obs):
        if res.path is None or res.error or obs.real_path(res.path).startswith(root):
            continue
        if not cuda.is_cuda_soname(res.soname):
            continue
        rows.append({"object": obs.relpath(path), "soname": res.soname, "resolved": res.path, "via": res.via,
                     "loaded_at_import": at_import})
    return sorted(rows, key=lambda r: (r["soname"], r["object"]))


def _import_graph(obs: Observations) -> dict:
    graph = obs.import_graph
    return {
        "entry_points": [obs.relpath(p) for p in obs.entry_points],
        "preloaded": dict(sorted(obs.preloaded.items())),
        "objects": [obs.relpath(p) for p in graph.order] if graph else [],
        "nodes": _graph_nodes(obs, graph) if graph else [],
        "edges": [{"object": obs.relpath(path), "soname": res.soname,
                   "resolved": obs.relpath(res.path) if res.path else None, "via": res.via, "error": res.error}
                  for path, resolutions in graph.resolutions.items() for res in resolutions] if graph else [],
    }


def _graph_nodes(obs: Observations, graph) -> List[dict]:
    """Every object the simulated import visited (the interpreter's own libraries aside), with its owners."""
    paths = list(graph.resolutions)
    paths += [res.path for resolutions in graph.resolutions.values() for res in resolutions if res.path]
    nodes, seen = [], set()
    for path in paths:
        rel = obs.relpath(path)
        if rel in seen:
            continue
        seen.add(rel)
        owners = obs.owners_of(path)
        major = obs.cuda_major(owners[0].dist_info).major if owners else None
        nodes.append({"path": rel, "owners": [d.label for d in owners], "cuda_major": major,
                      "loaded": path in graph.objects and path not in graph.unloaded})
    return nodes


def _requirement(edge) -> dict:
    return {"requirement": edge.requirement, "name": edge.name, "extras": list(edge.extras),
            "specifier": edge.specifier, "required_by": edge.required_by, "chain": list(edge.chain),
            "installed": edge.installed, "satisfied": edge.satisfied}


def _probe(obs: Observations) -> dict:
    probe = obs.probe
    if probe is None:
        reason = "disabled (probe: false)" if not obs.options.probe else "the venv's interpreter cannot run"
        return {"ran": False, "ok": None, "reason": reason}
    holders = {c.path: c.on_disk for c in obs.conflicts if c.on_disk not in (None, "none")}
    loaded = []
    for path in sorted(probe.loaded):  # /proc/self/maps lists them by address, which changes from run to run
        owners = obs.owners_of(path)
        holder = holders.get(obs.relpath(path)) if len(owners) > 1 else None
        loaded.append({"path": path, "distribution": holder or (owners[0].label if owners else None)})
    return {"ran": probe.ran, "ok": probe.ok, "error": probe.error, "traceback": probe.traceback,
            "returncode": probe.returncode, "timed_out": probe.timed_out, "signal": probe.signal,
            "loaded": loaded, "versions": dict(probe.versions), "duration": round(probe.duration, 3),
            "reused": probe.reused_from is not None, "reused_from": probe.reused_from}
