# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The picture of one venv's import: the shared objects it loads, grouped by the wheel that provides them.

Private to the gpuops.cuda_venv collection: not a public API. Pure: ``cuda_venv_facts`` in, a ``Graph`` out.

Nodes are the venv's shared objects the simulated import visited, the CUDA libraries it found only outside the venv
(``fallbacks``), and one node per soname found nowhere (placed in the group of the wheel that should provide it).
An edge is one DT_NEEDED entry; a broken one (not found, or a bad file) carries the loader's message. The system's
own libraries (libc, libstdc++ ...) are left out of the picture and counted in each node's tooltip.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

MISSING_GROUP = "(found nowhere)"
SYSTEM_GROUP = "(outside the venv)"
UNOWNED_GROUP = "(in no RECORD)"


@dataclass(frozen=True)
class Node:
    """A box: ``lines`` of text, the ``group`` (wheel label) it is drawn in, ``kind`` object|missing|system;
    ``name`` is the object's path (or the missing soname)."""

    id: str
    name: str
    lines: Tuple[str, ...]
    group: str
    kind: str
    tooltip: str
    classes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Edge:
    """``src`` needs a soname that ``dst`` answers; ``label`` is the loader's message when ``broken``."""

    src: str
    dst: str
    soname: str
    broken: bool = False
    label: Optional[str] = None


@dataclass(frozen=True)
class Group:
    """A wheel (or one of the pseudo-groups): its title and CUDA major (None: none or unknown)."""

    id: str
    title: str
    major: Optional[int]
    kind: str  # wheel | missing-files | missing | system | unowned
    conflicts: int = 0


@dataclass
class Graph:
    nodes: List[Node] = field(default_factory=list)
    edges: List[Edge] = field(default_factory=list)
    groups: Dict[str, Group] = field(default_factory=dict)

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)


def build_graph(facts: dict) -> Graph:
    """The graph of ``facts`` (the ``cuda_venv`` facts dictionary) as the report draws it."""
    imports = facts.get("import_graph") or {}
    dists = {"%s %s" % (d.get("name"), d.get("version")): d for d in facts.get("distributions") or []}
    conflicts = {c["path"]: c for c in facts.get("conflicts") or [] if not c.get("identical")}
    fallbacks = {f["resolved"] for f in facts.get("fallbacks") or []}
    providers = _expected_providers(facts)
    graph = Graph()
    shown: Dict[str, str] = {}  # path -> node id
    hidden: Dict[str, int] = {}  # path -> system libraries it needs, not drawn
    for edge in imports.get("edges") or []:
        resolved = edge.get("resolved")
        if resolved and not edge.get("error") and os.path.isabs(resolved) and resolved not in fallbacks:
            hidden[edge["object"]] = hidden.get(edge["object"], 0) + 1
    for node in imports.get("nodes") or []:
        path = node["path"]
        if os.path.isabs(path) and path not in fallbacks:
            continue
        node_id = "n%d" % len(shown)
        shown[path] = node_id
        graph.nodes.append(_object_node(node_id, node, conflicts.get(path), hidden.get(path, 0), dists, graph))
    missing: Dict[str, str] = {}
    seen = set()
    for edge in imports.get("edges") or []:
        src = shown.get(edge["object"])
        if src is None:
            continue
        error = edge.get("error")
        resolved = edge.get("resolved")
        if resolved is None or error:
            message = error or "%s: not found" % edge["soname"]
            if resolved in shown:
                dst = shown[resolved]
            else:
                dst = missing.get(edge["soname"])
                if dst is None:
                    dst = missing[edge["soname"]] = "m%d" % len(missing)
                    graph.nodes.append(_missing_node(dst, edge["soname"], providers.get(edge["soname"]), dists, graph))
            key = (src, dst, edge["soname"])
            if key not in seen:
                seen.add(key)
                graph.edges.append(Edge(src, dst, edge["soname"], broken=True, label=message))
        elif resolved in shown:
            key = (src, shown[resolved], edge["soname"])
            if key not in seen and shown[resolved] != src:
                seen.add(key)
                graph.edges.append(Edge(src, shown[resolved], edge["soname"]))
    return graph


def _object_node(node_id, node, conflict, hidden, dists, graph) -> Node:
    path = node["path"]
    owners = list(node.get("owners") or [])
    classes = [] if node.get("loaded", True) else ["unloaded"]
    lines = [os.path.basename(path)]
    tooltip = [path]
    if os.path.isabs(path):
        group = _group(graph, SYSTEM_GROUP, "outside the venv (loader cache, LD_LIBRARY_PATH, system dirs)",
                       None, "system")
        kind = "system"
        tooltip.append("a CUDA library found only outside the venv: version skew waiting to happen")
    else:
        kind = "object"
        holder = (conflict or {}).get("on_disk")
        label = holder if holder in owners else (owners[0] if owners else None)
        if label is None:
            group = _group(graph, UNOWNED_GROUP, "listed in no RECORD", None, "unowned")
        else:
            dist = dists.get(label) or {}
            group = _group(graph, label, label, dist.get("cuda_major"), _wheel_kind(dist))
        tooltip.append("owned by " + (", ".join(owners) if owners else "no distribution"))
        if conflict:
            others = [o for o in conflict.get("owners") or [] if o != label]
            classes.append("conflict")
            lines.append("also claimed by " + ", ".join(_name_of(o) for o in others))
            holder_text = ("%s's bytes on disk" % holder) if holder and holder not in ("none",) else "whose bytes: unknown"
            tooltip.append("claimed by %s; %s" % (" and ".join(conflict.get("owners") or []), holder_text))
            graph.groups[group] = _count_conflict(graph.groups[group])
    if not node.get("loaded", True):
        tooltip.append("unloaded again: the dlopen that brought it in failed")
    if hidden:
        tooltip.append("+%d system librar%s not drawn" % (hidden, "y" if hidden == 1 else "ies"))
    return Node(node_id, path, tuple(lines), group, kind, "\n".join(tooltip), tuple(classes))


def _missing_node(node_id, soname, provider, dists, graph) -> Node:
    lines = [soname, "NOT FOUND"]
    if provider:
        dist = dists.get(provider) or {}
        group = _group(graph, provider, provider, dist.get("cuda_major"), _wheel_kind(dist))
        lines.append("should come from " + _name_of(provider))
        tooltip = "%s is found nowhere; it should come from %s" % (soname, provider)
    else:
        group = _group(graph, MISSING_GROUP, "found nowhere", None, "missing")
        tooltip = "%s is found nowhere, and no installed wheel lists it" % soname
    return Node(node_id, soname, tuple(lines), group, "missing", tooltip, ("missing",))


def edge_title(graph: Graph, edge: Edge) -> str:
    """What an edge says on hover: who needs which soname, and what the loader made of it."""
    src, dst = graph.node(edge.src), graph.node(edge.dst)
    return "%s needs %s: %s" % (src.name, edge.soname, edge.label if edge.broken else "found " + dst.name)


def _group(graph: Graph, group_id: str, title: str, major, kind: str) -> str:
    if group_id not in graph.groups:
        graph.groups[group_id] = Group(group_id, title, major, kind)
    return group_id


def _count_conflict(group: Group) -> Group:
    return Group(group.id, group.title, group.major, group.kind, group.conflicts + 1)


def _wheel_kind(dist: dict) -> str:
    return "missing-files" if dist.get("missing_count") else "wheel"


def _name_of(label: str) -> str:
    return label.split(" ", 1)[0]


_PROVIDER = re.compile(r"^(\S+ \S+)")


def _expected_providers(facts: dict) -> Dict[str, str]:
    """soname -> the distribution label the diagnosis says should provide it (first one named)."""
    table: Dict[str, str] = {}
    for finding in facts.get("findings") or []:
        if finding.get("code") != "SONAME_UNRESOLVED":
            continue
        for provider in (finding.get("details") or {}).get("providers") or []:
            match = _PROVIDER.match(provider)
            if match:
                table.setdefault(finding["subject"], match.group(1))
                break
    return table
