# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Draw a venv's graph as inline SVG with the built-in layered layout; the colours both drawings share.

Private to the gpuops.cuda_venv collection: not a public API. Pure: a ``Graph`` in, SVG text out; every text taken
from the facts is escaped.
"""

from __future__ import annotations

import textwrap
from html import escape
from typing import Tuple

from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_graph import Graph, Group, Node, edge_title
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_layout import Route, layered_layout

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
CHAR_W = 7.3  # 12px monospace advance
LINE_H = 15.0
LABEL_CHAR_W = 6.1  # 10px
LABEL_LINE_H = 12.0
LABEL_WRAP = 36
BROKEN = "#c92a2a"
EDGE = "#868e96"

# (fill, stroke) of a group frame by CUDA major; the pseudo-groups have their own.
_MAJORS = {12: ("#e3edff", "#2f6fd6"), 13: ("#ffead8", "#d9731a")}
_OTHER_MAJOR = ("#efe3ff", "#7a4cc2")
_NO_MAJOR = ("#f1f3f5", "#868e96")
_KINDS = {"system": ("#fff7cc", "#b08900"), "missing": ("#ffe3e3", BROKEN), "unowned": ("#f8f9fa", "#495057")}


def group_colours(group: Group) -> Tuple[str, str]:
    """(fill, stroke) of a group's frame."""
    if group.kind in _KINDS:
        return _KINDS[group.kind]
    if group.major is None:
        return _NO_MAJOR
    return _MAJORS.get(group.major, _OTHER_MAJOR)


def major_colours():
    """[(legend text, fill, stroke)] for the legend."""
    return [("CUDA 12", ) + _MAJORS[12], ("CUDA 13",) + _MAJORS[13], ("other CUDA major",) + _OTHER_MAJOR,
            ("no CUDA", ) + _NO_MAJOR, ("outside the venv",) + _KINDS["system"]]


def label_lines(text: str):
    """A loader message wrapped for an edge label."""
    return textwrap.wrap(text, LABEL_WRAP, break_long_words=True, break_on_hyphens=False) or [""]


def node_size(node: Node) -> Tuple[float, float]:
    return max(len(line) for line in node.lines) * CHAR_W + 16, len(node.lines) * LINE_H + 10


def draw(graph: Graph, graph_id: str, title: str) -> str:
    """The graph as an ``<svg>`` element, laid out by ``layered_layout``."""
    sizes = {n.id: node_size(n) for n in graph.nodes}
    labels = []
    for edge in graph.edges:
        lines = label_lines(edge.label) if edge.label else None
        labels.append(lines)
    edges = [(e.src, e.dst, (max(len(t) for t in lines) * LABEL_CHAR_W + 6, len(lines) * LABEL_LINE_H + 4) if lines else None)
             for e, lines in zip(graph.edges, labels)]
    layout = layered_layout(sizes, edges, {n.id: n.group for n in graph.nodes})
    out = ['<svg xmlns="http://www.w3.org/2000/svg" class="graph layered" id="%s" width="%d" height="%d" '
           'viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="%s">'
           % (escape(graph_id), layout.width, layout.height, layout.width, layout.height, escape(title), FONT)]
    out.append('<defs>%s%s</defs>' % (_marker(graph_id + "-arrow", EDGE), _marker(graph_id + "-arrow-broken", BROKEN)))
    for group_id, box in layout.frames:
        group = graph.groups[group_id]
        fill, stroke = group_colours(group)
        dashed = ' stroke-dasharray="5 3"' if group.kind == "missing-files" else ""
        out.append('<g class="cluster %s"><title>%s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="6" '
                   'fill="%s" stroke="%s"%s/><text x="%.1f" y="%.1f" font-size="11" fill="%s">%s</text></g>'
                   % (escape(group.kind), escape(group_tooltip(group)), box.x, box.y, box.w, box.h, fill, stroke, dashed,
                      box.x + 5, box.y + 12, stroke, escape(_fit(group.title, box.w - 10, 6.7))))
    for edge, route, lines in zip(graph.edges, layout.routes, labels):
        out.append(_edge(graph_id, graph, edge, route, lines))
    for node in graph.nodes:
        out.append(_node(graph_id, node, layout.boxes[node.id], graph.groups[node.group]))
    out.append("</svg>")
    return "".join(out)


def _marker(marker_id: str, colour: str) -> str:
    return ('<marker id="%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
            '<path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>' % (escape(marker_id), colour))


def group_tooltip(group: Group) -> str:
    text = group.title
    if group.major is not None:
        text += " (CUDA %d)" % group.major
    if group.kind == "missing-files":
        text += ": installed, but files its RECORD lists are missing"
    if group.conflicts:
        text += "; %d file(s) also claimed by another wheel" % group.conflicts
    return text


def _fit(text: str, width: float, char_w: float) -> str:
    room = max(int(width // char_w), 4)
    return text if len(text) <= room else text[:room - 1] + "\u2026"


def _edge(graph_id, graph, edge, route: Route, lines) -> str:
    pts = route.points
    path = ["M%.1f,%.1f" % pts[0]]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        dx = (x1 - x0) / 2
        path.append("C%.1f,%.1f %.1f,%.1f %.1f,%.1f" % (x0 + dx, y0, x1 - dx, y1, x1, y1))
    colour = BROKEN if edge.broken else EDGE
    marker = graph_id + ("-arrow-broken" if edge.broken else "-arrow")
    end = "marker-start" if route.reversed else "marker-end"
    style = ' stroke-dasharray="6 4" stroke-width="1.6"' if edge.broken else ' stroke-width="1"'
    title = edge_title(graph, edge)
    parts = ['<g class="edge%s" data-soname="%s"><title>%s</title><path d="%s" fill="none" stroke="%s"%s %s="url(#%s)"/>'
             % (" broken" if edge.broken else "", escape(edge.soname), escape(title), " ".join(path), colour, style, end,
                escape(marker))]
    if lines and route.label is not None:
        box = route.label
        parts.append('<text class="edge-label" font-size="10" fill="%s">' % BROKEN)
        for k, line in enumerate(lines):
            parts.append('<tspan x="%.1f" y="%.1f">%s</tspan>' % (box.x + 3, box.y + 11 + k * LABEL_LINE_H, escape(line)))
        parts.append("</text>")
    parts.append("</g>")
    return "".join(parts)


def _node(graph_id: str, node: Node, box, group: Group) -> str:
    _fill, stroke = group_colours(group)
    fill = "#ffffff"
    extra = ""
    if node.kind == "missing":
        fill, stroke, extra = "#fff0f0", BROKEN, ' stroke-dasharray="5 3" stroke-width="1.8"'
    elif "conflict" in node.classes:
        fill, stroke, extra = "#fff3bf", BROKEN, ' stroke-width="2.5"'
    opacity = ' opacity="0.6"' if "unloaded" in node.classes else ""
    parts = ['<g class="node %s" id="%s"%s><title>%s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="4" '
             'fill="%s" stroke="%s"%s/>' % (" ".join((node.kind,) + node.classes), escape(graph_id + "-" + node.id), opacity,
                                            escape(node.tooltip), box.x, box.y, box.w, box.h, fill, stroke, extra)]
    parts.append('<text font-size="12" fill="#212529">')
    for k, line in enumerate(node.lines):
        weight = ' font-weight="bold"' if k == 0 else ""
        colour = ' fill="%s"' % BROKEN if node.kind == "missing" and k == 1 else ""
        parts.append('<tspan x="%.1f" y="%.1f"%s%s>%s</tspan>' % (
            box.x + 8, box.y + 17 + k * LINE_H, weight, colour, escape(line)))
    parts.append("</text></g>")
    return "".join(parts)
