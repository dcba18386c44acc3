# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which distributions contaminate the venv, and where they came from (CONTAMINATION_SOURCE).

Private to the gpuops.cuda_venv collection: not a public API.

Pure: reads the ``Observations`` record only. The contaminants are those ``contaminants.py`` proves wrong for this
venv (CUDA_DIST_UNREQUIRED, with their evidence). Their source: the transaction that wrote them (``history.py``) and the root, the distribution
nothing installed requires whose requirements reach them; when nothing installed requires them, the residue of
an install undone later, with what was installed after them and what a requested distribution still asks for,
and, where the wheel sources were read (``obs.source_reading``: the facts module reads them only for a residue,
``residue_candidates``), which version they offer of an installed distribution requires the residue.
Never reads an index itself.
"""

from __future__ import annotations

from collections import deque
from typing import Dict, List

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core import cuda_knowledge as cuda
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contaminants import belonging
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.names import canonical_name
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide import findings as F
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.findings import Finding
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.history import (
    UNKNOWN, asked_by_name, history_of, requested_means, transaction_of)
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.packaging.requirements import closure, marker_env_fallback, version_order
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import Observations

_EXAMPLES = 4
_CANDIDATES = 8  # names asked of the wheel sources, at most


def contaminants(obs: Observations) -> Dict[str, tuple]:
    """{dist_info: (dist, why)}: the distributions ``contaminants.belonging`` proves wrong for this venv."""
    return {info: (c.dist, c.why) for info, c in belonging(obs).contaminants.items()}


def contamination_source(obs: Observations) -> List[Finding]:
    """One CONTAMINATION_SOURCE per transaction holding contaminants."""
    history = history_of(obs)
    found = contaminants(obs)
    if not found or not history:
        return []
    edges = belonging(obs).edges
    groups: Dict[int, list] = {}
    for dist, _why in found.values():
        transaction = transaction_of(history, dist)
        if transaction is not None:
            groups.setdefault(transaction.number, []).append(dist)
    return [_finding(obs, history, history[number - 1], sorted(dists, key=lambda d: d.key), edges)
            for number, dists in sorted(groups.items())]


def residue_candidates(obs: Observations, findings) -> List[str]:
    """The names whose other versions the wheel sources are asked about: where a CONTAMINATION_SOURCE holds residue,
    the anchor and the distributions replaced after it (at most _CANDIDATES); none without residue."""
    names = []
    for finding in findings:
        if finding.code == F.CONTAMINATION_SOURCE and finding.details["residue"]:
            names += [obs.options.anchor] + [canonical_name(r["distribution"].split(" ", 1)[0])
                                             for r in finding.details["replaced_later"]]
    return list(dict.fromkeys(names))[:_CANDIDATES]


def with_source_versions(obs: Observations, findings) -> List[Finding]:
    """``findings`` with each CONTAMINATION_SOURCE made again from ``obs``, which now holds the sources' reading."""
    fresh = {f.subject: f for f in contamination_source(obs)}
    return [fresh.get(f.subject, f) if f.code == F.CONTAMINATION_SOURCE else f for f in findings]


def _marker_env(obs: Observations) -> dict:
    return obs.interpreter.marker_env if obs.interpreter.ok else marker_env_fallback(obs.layout.version)


def _finding(obs: Observations, history, transaction, dists, edges) -> Finding:
    by_key = {d.key: d for d in obs.distributions}
    when = _when(transaction)
    known = transaction.time is not None
    details = {"transaction": transaction.number, "time": when, "installer": transaction.installer,
               "contaminants": [d.label for d in dists], "roots": [], "candidates": [], "residue": [],
               "replaced_later": [], "unsatisfied": [], "source_versions": [], "source_failures": []}
    message = "%d contaminant(s) (%s) were installed by %s %s (transaction %d)" % (
        len(dists), _examples([d.label for d in dists]), transaction.installer, _at(when), transaction.number)
    if not known:
        message += ", whose time is unknown (%s): the history cannot tell which install brought them" % transaction.reason
    reached: Dict[str, list] = {}  # root key -> [(contaminant, chain)]
    residue = []
    for dist in dists:
        roots = _roots(dist, edges, by_key)
        for root, chain in roots:
            reached.setdefault(root.key, []).append((dist, chain))
        if not roots:
            residue.append(dist)
    for key, items in sorted(reached.items()):
        root = by_key[key]
        root_tx = transaction_of(history, root)
        how, installer, at = _how(root), root_tx.installer if root_tx else UNKNOWN, _at(_when(root_tx))
        chain = max((c for _d, c in items), key=len)
        details["roots"].append({"distribution": root.label, "requested": how == "requested", "installer": installer,
                                 "time": _when(root_tx), "transaction": root_tx.number if root_tx else None,
                                 "reaches": [d.label for d, _c in items], "chain": chain})
        if not known:
            details["candidates"].append(root.label)
            message += ". A candidate for %s: %s, %s with %s %s%s" % (
                _examples([d.label for d, _c in items]), root.label, how, installer, at,
                ", which requires " + " -> ".join(chain) if chain else ", asked for by name")
        elif chain:
            message += ". %s: their root is %s, %s with %s %s, which requires %s" % (
                _examples([d.label for d, _c in items]), root.label, how, installer, at, " -> ".join(chain))
        else:
            message += ". %s: %s with %s %s, asked for by name" % (root.label, how, installer, at)
    if residue:
        later = _replaced_later(obs, history, transaction)
        asks = _unsatisfied(edges, by_key)
        details["residue"] = [d.label for d in residue]
        details["replaced_later"] = [{"distribution": d.label, "time": _when(t), "transaction": t.number} for d, t in later]
        details["unsatisfied"] = [{"distribution": d.label, "requirement": e.requirement, "installed": e.installed}
                                  for d, e in asks]
        message += (". The other %d (%s): nothing installed today requires them" % (
            len(residue), _examples([d.label for d in residue])) if reached else ". Nothing installed today requires them")
        unmarked = sorted({d.installer or UNKNOWN for d in residue if d.requested and not asked_by_name(d)})
        if unmarked:
            message += ": asked for by name or the residue of an install that was undone (%s: REQUESTED cannot tell)" % (
                "; ".join(requested_means(i) for i in unmarked))
        else:
            message += ": the residue of an install that was undone"
        if obs.source_reading is not None:
            offered = _source_versions(obs, residue, by_key)
            details["source_versions"] = [{"name": o.name, "version": o.version, "source": o.source, "requires": direct,
                                           "reaches": [by_key[k].label for k in sorted(reached)]}
                                          for o, direct, reached in offered]
            details["source_failures"] = [{"source": s, "error": e} for s, e in obs.source_reading.failures]
            for offer, direct, reached in offered:
                message += "; %s %s in %s requires %s (reaching %d of them; %s is installed now)" % (
                    offer.name, offer.version, offer.source, _examples(direct), len(reached), by_key[offer.name].label)
            for source, error in obs.source_reading.failures:
                message += "; the wheel source %s could not be read (%s)" % (source, error)
        if later:
            message += "; distributions that were gone or replaced later: %s" % ", ".join(_written_later(later, edges))
        for dist, edge in asks[:_EXAMPLES]:
            tx = transaction_of(history, dist)
            message += "; %s, %s with %s %s, requires %s (installed: %s %s)" % (
                dist.label, _how(dist), tx.installer if tx else UNKNOWN, _at(_when(tx)), edge.requirement,
                edge.name, edge.installed)
    return Finding(F.CONTAMINATION_SOURCE, F.WARNING, "transaction %d" % transaction.number, message + ".",
                   "Remove them if no workload of this venv needs them (cuda_venv_repair with prune: cuda), and "
                   "keep their root from pulling them in again (a constraint on %s)." % obs.options.anchor, details)


def _roots(dist, edges, by_key) -> List[tuple]:
    """(root, chain of requirements) for each distribution required by nothing installed whose requirements reach
    ``dist``. A CUDA library does not pull itself in: a root is asked for by name (pip's REQUESTED: uv marks every
    distribution it installs) or is no CUDA library (a consumer, an application)."""
    required_by: Dict[str, list] = {}
    for edge in edges:
        required_by.setdefault(edge.name, []).append(edge)
    roots: Dict[str, tuple] = {}
    queue, seen = deque([(dist.key, [])]), {dist.key}
    while queue:
        key, chain = queue.popleft()
        node = by_key.get(key)
        if not required_by.get(key):
            if node is not None and key not in roots and _can_be_root(node, chain):
                roots[key] = (node, chain)
            continue
        for edge in required_by[key]:
            parent = edge.required_by.split("[", 1)[0]
            if parent not in seen:
                seen.add(parent)
                queue.append((parent, [edge.requirement.split(";", 1)[0].strip()] + chain))
    return list(roots.values())


def _can_be_root(dist, chain) -> bool:
    return asked_by_name(dist) or (bool(chain) and not cuda.is_cuda_distribution(dist.key))


def _replaced_later(obs: Observations, history, transaction) -> List[tuple]:
    """(dist, its transaction) for the anchor's closure installed after ``transaction``."""
    if transaction.time is None:
        return []
    wanted = {e.name for e in obs.requirements} | {obs.options.anchor}
    later = []
    for dist in obs.distributions:
        tx = transaction_of(history, dist)
        if dist.key in wanted and tx is not None and tx.time is not None and tx.time > transaction.time:
            later.append((dist, tx))
    return sorted(later, key=lambda item: (item[0].key != obs.options.anchor, item[1].number, item[0].key))


def _written_later(later, edges) -> List[str]:
    """How the anchor's closure came to be written by later runs: reinstalled by name ("torch 2.9.1 reinstalled at
    T"), or put in place by a run that installed something requiring them ("torch 2.14.1, ... put in place at T by
    the uv run that installed sglang 0.5.23 (transaction 2)")."""
    required = {e.name for e in edges}
    parts, by_run = [], {}
    for dist, transaction in later[:_EXAMPLES]:
        roots = [d.label for d in transaction.members if d.key not in required]
        if not roots or dist.label in roots:
            parts.append("%s reinstalled %s" % (dist.label, _at(_when(transaction))))
        else:
            by_run.setdefault(transaction.number, (transaction, roots, []))[2].append(dist.label)
    for transaction, roots, labels in by_run.values():
        parts.append("%s put in place %s by the %s run that installed %s (transaction %d)" % (
            ", ".join(labels), _at(_when(transaction)), transaction.installer, _examples(roots), transaction.number))
    return parts


def _source_versions(obs: Observations, residue, by_key) -> List[tuple]:
    """(offer, its requirements naming the residue, the residue keys it reaches) for each installed distribution of
    which the wheel sources offer another version whose requirements (extras included) reach the residue: the
    version reaching most of it, then the highest."""
    keys = {d.key for d in residue}
    marker_env = _marker_env(obs)
    best: Dict[str, tuple] = {}
    for offer in obs.source_reading.offers:
        installed = by_key.get(offer.name)
        if installed is None or offer.requires is None or offer.version == installed.version:
            continue
        edges = closure(offer.requires, residue, marker_env)
        reached = {e.name for e in edges if e.name in keys and e.satisfied}
        if not reached:
            continue
        direct = [e.requirement.split(";", 1)[0].strip() for e in edges if not e.required_by and e.name in reached]
        rank = (len(reached), version_order(offer.version))
        if offer.name not in best or rank > best[offer.name][0]:
            best[offer.name] = (rank, (offer, direct, reached))
    return [item for _rank, item in sorted(best.values(), key=lambda b: (b[1][0].name != obs.options.anchor, b[1][0].name))]


def _unsatisfied(edges, by_key) -> List[tuple]:
    """(dist, edge): a requirement of a requested distribution that what is installed does not satisfy."""
    found = []
    for edge in edges:
        dist = by_key.get(edge.required_by.split("[", 1)[0])
        if dist is not None and dist.requested and edge.installed is not None and not edge.satisfied:
            found.append((dist, edge))
    return found


def _how(dist) -> str:
    return "requested" if asked_by_name(dist) else "installed"


def _when(transaction) -> str:
    if transaction is None or transaction.time is None:
        return UNKNOWN
    return transaction.as_dict()["time"]


def _at(when: str) -> str:
    return "at an unknown time" if when == UNKNOWN else "at %s" % when


def _examples(labels) -> str:
    return ", ".join(labels[:_EXAMPLES]) + (", ..." if len(labels) > _EXAMPLES else "")
