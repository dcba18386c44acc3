# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Draw a venv's graph with Graphviz ``dot`` when the controller has it.

Private to the gpuops.cuda_venv collection: not a public API. ``to_dot`` is pure; ``render_dot`` runs ``dot -Tsvg``
(argv list, stdin, a timeout) and returns the ``<svg>`` element, or raises ``DotError``; the caller then uses the
built-in layout. Texts go to dot as quoted DOT strings (backslashes and quotes escaped, newlines as ``\\n``);
dot escapes them for XML itself.
"""

from __future__ import annotations

import re
import subprocess
from html import escape

from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_graph import Graph, edge_title
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_svg import (
    BROKEN, EDGE, group_colours, group_tooltip, label_lines)

DOT_TIMEOUT = 120


class DotError(Exception):
    """dot is missing, failed or timed out."""


def quote(text: str) -> str:
    """A DOT double-quoted string showing ``text`` literally (line breaks: see ``lines``)."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")
    return '"%s"' % text


def lines(texts) -> str:
    """A DOT label of several lines, each left-aligned (``\\l``)."""
    body = "".join(quote(t)[1:-1] + "\\l" for t in texts)
    return '"%s"' % body


def to_dot(graph: Graph, graph_id: str) -> str:
    """The graph in the DOT language: one cluster per group, left to right."""
    out = ["digraph %s {" % quote(graph_id),
           '  graph [rankdir=LR, fontname="DejaVu Sans Mono", fontsize=10, nodesep=0.15, ranksep=0.6, '
           'newrank=true, id=%s];' % quote(graph_id + "-graph"),
           '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="DejaVu Sans Mono", '
           'fontsize=10, margin="0.08,0.04", height=0.3];',
           '  edge [color="%s", arrowsize=0.6, fontname="DejaVu Sans", fontsize=9];' % EDGE]
    for k, group in enumerate(graph.groups.values()):
        fill, stroke = group_colours(group)
        style = "rounded,filled,dashed" if group.kind == "missing-files" else "rounded,filled"
        out.append("  subgraph %s {" % quote("cluster_%d" % k))
        out.append('    graph [label=%s, labeljust=l, style="%s", fillcolor="%s", color="%s", fontcolor="%s", '
                   'id=%s, class=%s, tooltip=%s];' % (quote(group.title), style, fill, stroke, stroke,
                                                      quote("%s-c%d" % (graph_id, k)), quote(group.kind),
                                                      quote(group_tooltip(group))))
        for node in graph.nodes:
            if node.group != group.id:
                continue
            attrs = ["label=%s" % lines(node.lines), "id=%s" % quote(graph_id + "-" + node.id),
                     "class=%s" % quote(" ".join((node.kind,) + node.classes)),
                     "tooltip=%s" % quote(node.tooltip.replace("\n", "; ")), 'color="%s"' % stroke]
            if node.kind == "missing":
                attrs += ['color="%s"' % BROKEN, 'fillcolor="#fff0f0"', 'style="rounded,filled,dashed"', "penwidth=1.8",
                          'fontcolor="%s"' % BROKEN]
            elif "conflict" in node.classes:
                attrs += ['color="%s"' % BROKEN, 'fillcolor="#fff3bf"', "penwidth=2.5"]
            if "unloaded" in node.classes:
                attrs.append('fontcolor="#868e96"')
            out.append("    %s [%s];" % (quote(node.id), ", ".join(attrs)))
        out.append("  }")
    for k, edge in enumerate(graph.edges):
        attrs = ["id=%s" % quote("%s-e%d" % (graph_id, k)), "tooltip=%s" % quote(edge_title(graph, edge))]
        if edge.broken:
            attrs += ['class="broken"', 'color="%s"' % BROKEN, "style=dashed", "penwidth=1.6",
                      "label=%s" % lines(label_lines(edge.label or "")), 'fontcolor="%s"' % BROKEN]
        out.append("  %s -> %s [%s];" % (quote(edge.src), quote(edge.dst), ", ".join(attrs)))
    out.append("}")
    return "\n".join(out) + "\n"


def render_dot(text: str, executable: str, svg_id: str) -> str:
    """``dot -Tsvg`` of ``text``: the ``<svg>`` element (prolog and comments dropped), with id ``svg_id`` and the
    classes ``graph dot``."""
    try:
        proc = subprocess.run([executable, "-Tsvg"], input=text.encode("utf-8"), capture_output=True,
                              timeout=DOT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DotError("%s -Tsvg did not run: %s" % (executable, exc)) from exc
    if proc.returncode != 0:
        raise DotError("%s -Tsvg failed (rc %d): %s" % (executable, proc.returncode,
                                                        proc.stderr.decode("utf-8", "replace").strip()[-500:]))
    svg = proc.stdout.decode("utf-8", "replace")
    start = svg.find("<svg")
    if start < 0:
        raise DotError("%s -Tsvg wrote no <svg> element" % executable)
    svg = re.sub(r"<!--.*?-->", "", svg[start:], flags=re.S).strip()
    return '<svg id="%s" class="graph dot"%s' % (escape(svg_id), svg[len("<svg"):])
