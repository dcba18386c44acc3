# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A layered (Sugiyama-style) layout, left to right, for when Graphviz is not installed.

Private to the gpuops.cuda_venv collection: not a public API. Pure geometry, no drawing.

The classic steps (Sugiyama, Tagawa, Toda 1981; Gansner et al. 1993 for the details dot uses):
1. cycles broken by reversing DFS back edges;
2. layers by longest path from the sources;
3. edges longer than one layer get a dummy vertex per layer crossed; an edge with a label gets a vertex of the
   label's size, so labels take room like boxes do;
4. order within layers by barycentre sweeps (down, then up), vertices of one group kept together, the order with
   the fewest crossings kept;
5. positions across layers by isotonic regression (pool adjacent violators): each vertex as near the mean of its
   neighbours as the minimum separations allow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

LAYER_GAP = 90.0  # between layers, for the edges' curves
NODE_GAP = 10.0  # between boxes of one group
GROUP_PAD = 6.0  # inside a group's frame
GROUP_TITLE = 16.0  # the frame's title line
MARGIN = 12.0
SWEEPS = 12


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True)
class Route:
    """An edge's polyline from its source to its target, and where its label goes (None: no label)."""

    points: Tuple[Tuple[float, float], ...]
    reversed: bool
    label: Optional[Box]


@dataclass(frozen=True)
class Layout:
    width: float
    height: float
    boxes: Dict[str, Box]
    routes: Tuple[Route, ...]  # in the order of the edges given
    frames: Tuple[Tuple[str, Box], ...]  # (group, frame) per run of a group's boxes in one layer
    crossings: int


@dataclass
class _Vertex:
    id: str
    w: float
    h: float
    group: Optional[str]  # None: a dummy or label vertex (never framed)
    kind: str  # node | dummy | label


def layered_layout(sizes: Dict[str, Tuple[float, float]], edges: Sequence[Tuple[str, str, Optional[Tuple[float, float]]]],
                   groups: Dict[str, str]) -> Layout:
    """Lay out boxes ``sizes`` (id -> (w, h)) joined by ``edges`` ((src, dst, label size or None)), each box in
    ``groups[id]``. Deterministic: the same input gives the same layout."""
    vertices = {v: _Vertex(v, w, h, groups.get(v), "node") for v, (w, h) in sizes.items()}
    order = list(sizes)
    arcs = [(s, d) for s, d, _label in edges]
    flipped = _back_edges(order, arcs)
    dag = [(d, s) if i in flipped else (s, d) for i, (s, d) in enumerate(arcs)]
    layer = _longest_path_layers(order, edges, flipped)
    chains: List[List[str]] = []
    for i, (s, d) in enumerate(dag):
        if s == d:
            chains.append([s, d])
            continue
        chain = [s]
        label = edges[i][2]
        span = layer[d] - layer[s]
        label_at = layer[s] + span // 2 if label else None
        for step in range(layer[s] + 1, layer[d]):
            vid = "%s#%d" % ("label" if step == label_at else "dummy", len(vertices))
            kind = "label" if step == label_at else "dummy"
            w, h = label if kind == "label" else (0.0, 2.0)
            vertices[vid] = _Vertex(vid, w, h, None, kind)
            layer[vid] = step
            order.append(vid)
            chain.append(vid)
        chain.append(d)
        chains.append(chain)
    layers = _initial_layers(order, layer)
    links = [(c[k], c[k + 1]) for c in chains for k in range(len(c) - 1)]
    layers, crossings = _order(layers, links, vertices)
    boxes, layer_x, layer_w = _place(layers, links, vertices)
    routes = tuple(_route(chains[i], i in flipped, boxes, vertices, layer, layer_x, layer_w) for i in range(len(edges)))
    frames = _frames(layers, vertices, boxes, layer_x, layer_w)
    width = max([b.x + b.w for b in boxes.values()] + [f.x + f.w for _g, f in frames] + [0.0]) + MARGIN
    height = max([b.y + b.h for b in boxes.values()] + [f.y + f.h for _g, f in frames] + [0.0]) + MARGIN
    real = {v: boxes[v] for v in sizes}
    return Layout(width, height, real, routes, tuple(frames), crossings)


def _back_edges(order: List[str], arcs: List[Tuple[str, str]]) -> set:
    """Indexes of the edges a depth-first search meets as back edges (reversing them leaves no cycle)."""
    out: Dict[str, List[Tuple[int, str]]] = {v: [] for v in order}
    for i, (s, d) in enumerate(arcs):
        out[s].append((i, d))
    state: Dict[str, int] = {}  # 1 on the stack, 2 done
    back = set()
    for root in order:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(out[root]))]
        while stack:
            vertex, successors = stack[-1]
            for i, nxt in successors:
                if state.get(nxt) == 1:
                    back.add(i)
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(out[nxt])))
                    break
            else:
                state[vertex] = 2
                stack.pop()
    return back


def _longest_path_layers(order, edges, flipped) -> Dict[str, int]:
    """Layer of each vertex: the longest path to it from a source; an edge with a label spans two layers."""
    succ: Dict[str, List[Tuple[str, int]]] = {v: [] for v in order}
    indeg = {v: 0 for v in order}
    for i, (s, d, label) in enumerate(edges):
        if s == d:
            continue
        a, b = (d, s) if i in flipped else (s, d)
        succ[a].append((b, 2 if label else 1))
        indeg[b] += 1
    layer = {v: 0 for v in order}
    ready = [v for v in order if indeg[v] == 0]
    while ready:
        vertex = ready.pop(0)
        for nxt, weight in succ[vertex]:
            layer[nxt] = max(layer[nxt], layer[vertex] + weight)
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                ready.append(nxt)
    return layer


def _initial_layers(order, layer) -> List[List[str]]:
    layers: List[List[str]] = [[] for _index in range(max(layer.values(), default=-1) + 1)]
    for v in order:
        layers[layer[v]].append(v)
    return layers


def _order(layers, links, vertices):
    """Barycentre sweeps, groups kept together; returns the best order found and its crossings."""
    preds: Dict[str, List[str]] = {v: [] for layer in layers for v in layer}
    succs: Dict[str, List[str]] = {v: [] for layer in layers for v in layer}
    for s, d in links:
        preds[d].append(s)
        succs[s].append(d)
    layers = [_sorted_layer(layer, {v: i for i, v in enumerate(layer)}, vertices) for layer in layers]
    best = [list(layer) for layer in layers]
    best_crossings = _crossings(layers, links)
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        indexes = range(1, len(layers)) if down else range(len(layers) - 2, -1, -1)
        for i in indexes:
            fixed = layers[i - 1] if down else layers[i + 1]
            pos = {v: k for k, v in enumerate(fixed)}
            neighbours = preds if down else succs
            current = {v: k for k, v in enumerate(layers[i])}
            keys = {}
            for v in layers[i]:
                near = [pos[n] for n in neighbours[v] if n in pos]
                keys[v] = sum(near) / len(near) if near else current[v]
            layers[i] = _sorted_layer(layers[i], keys, vertices)
        crossings = _crossings(layers, links)
        if crossings < best_crossings:
            best, best_crossings = [list(layer) for layer in layers], crossings
    return best, best_crossings


def _sorted_layer(layer, keys, vertices):
    """By barycentre, each group's vertices together at their mean barycentre (dummies are groups of one)."""
    members: Dict[str, List[str]] = {}
    for v in layer:
        members.setdefault(vertices[v].group or v, []).append(v)
    group_key = {g: sum(keys[v] for v in vs) / len(vs) for g, vs in members.items()}
    return sorted(layer, key=lambda v: (group_key[vertices[v].group or v], vertices[v].group or v, keys[v], v))


def _crossings(layers, links) -> int:
    """Edge crossings between adjacent layers (inversions counted with a Fenwick tree)."""
    where = {v: (i, k) for i, layer in enumerate(layers) for k, v in enumerate(layer)}
    by_layer: Dict[int, List[Tuple[int, int]]] = {}
    for s, d in links:
        (ls, ks), (_ld, kd) = where[s], where[d]
        by_layer.setdefault(ls, []).append((ks, kd))
    total = 0
    for i, pairs in by_layer.items():
        size = len(layers[i + 1]) + 1
        tree = [0] * (size + 1)
        seen = 0
        for _ks, kd in sorted(pairs):
            # count earlier pairs with a larger target position
            index, below = kd + 1, 0
            while index > 0:
                below += tree[index]
                index -= index & -index
            total += seen - below
            index = kd + 1
            while index <= size:
                tree[index] += 1
                index += index & -index
            seen += 1
    return total


def _place(layers, links, vertices):
    """Coordinates: layers left to right; within a layer, each vertex near its neighbours' mean (PAVA)."""
    layer_w = [max([vertices[v].w for v in layer] + [0.0]) for layer in layers]
    layer_x, x = [], MARGIN
    for width in layer_w:
        layer_x.append(x)
        x += width + LAYER_GAP
    gaps = [[_gap(vertices[a], vertices[b]) for a, b in zip(layer, layer[1:])] for layer in layers]
    centre: Dict[str, float] = {}
    for layer, gap in zip(layers, gaps):
        y = 0.0
        for k, v in enumerate(layer):
            if k:
                y += vertices[layer[k - 1]].h / 2 + gap[k - 1] + vertices[v].h / 2
            centre[v] = y
    neighbours: Dict[str, List[str]] = {v: [] for layer in layers for v in layer}
    for s, d in links:
        neighbours[s].append(d)
        neighbours[d].append(s)
    for _round in range(4):
        for i in list(range(len(layers))) + list(range(len(layers) - 1, -1, -1)):
            layer = layers[i]
            wanted = []
            for v in layer:
                near = [centre[n] for n in neighbours[v]]
                wanted.append(sum(near) / len(near) if near else centre[v])
            for v, y in zip(layer, _isotonic(wanted, [vertices[v].h for v in layer], gaps[i])):
                centre[v] = y
    top = min([centre[v] - vertices[v].h / 2 for v in centre] + [0.0])
    shift = MARGIN + GROUP_PAD + GROUP_TITLE - top
    boxes = {}
    for i, layer in enumerate(layers):
        for v in layer:
            vert = vertices[v]
            boxes[v] = Box(layer_x[i] + (layer_w[i] - vert.w) / 2, centre[v] - vert.h / 2 + shift, vert.w, vert.h)
    return boxes, layer_x, layer_w


def _gap(a: _Vertex, b: _Vertex) -> float:
    if a.group is not None and a.group == b.group:
        return NODE_GAP
    return NODE_GAP + (GROUP_PAD + GROUP_TITLE if b.group is not None else 0) + (GROUP_PAD if a.group is not None else 0)


def _isotonic(wanted, heights, gaps) -> List[float]:
    """Centres as near ``wanted`` as possible (least squares) keeping their order and separations."""
    offsets = [0.0]
    for k in range(1, len(wanted)):
        offsets.append(offsets[-1] + heights[k - 1] / 2 + gaps[k - 1] + heights[k] / 2)
    # z_k = y_k - offset_k must not decrease: pool adjacent violators on wanted_k - offset_k.
    blocks: List[List[float]] = []  # [mean, count]
    for value in (w - o for w, o in zip(wanted, offsets)):
        blocks.append([value, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            blocks[-1] = [(blocks[-1][0] * blocks[-1][1] + mean * count) / (blocks[-1][1] + count), blocks[-1][1] + count]
    result = []
    for mean, count in blocks:
        result.extend([mean] * int(count))
    return [z + o for z, o in zip(result, offsets)]


def _route(chain, flipped, boxes, vertices, layer, layer_x, layer_w) -> Route:
    points: List[Tuple[float, float]] = []
    label = None
    for k, v in enumerate(chain):
        box, kind = boxes[v], vertices[v].kind
        i = layer[v]
        if kind == "dummy":
            points += [(layer_x[i], box.y + box.h / 2), (layer_x[i] + layer_w[i], box.y + box.h / 2)]
        elif kind == "label":
            label = box
            points += [(layer_x[i], box.y + box.h), (layer_x[i] + layer_w[i], box.y + box.h)]
        elif k == 0:
            points.append((box.x + box.w, box.y + box.h / 2))
        else:
            points.append((box.x, box.y + box.h / 2))
    return Route(tuple(points), flipped, label)


def _frames(layers, vertices, boxes, layer_x, layer_w):
    """One frame per run of consecutive boxes of one group in a layer."""
    frames = []
    for i, layer in enumerate(layers):
        run: List[str] = []
        for v in layer + [None]:
            group = vertices[v].group if v is not None else None
            if run and (v is None or group != vertices[run[0]].group):
                first, last = boxes[run[0]], boxes[run[-1]]
                frames.append((vertices[run[0]].group, Box(layer_x[i] - GROUP_PAD, first.y - GROUP_PAD - GROUP_TITLE,
                                                           layer_w[i] + 2 * GROUP_PAD,
                                                           last.y + last.h - first.y + 2 * GROUP_PAD + GROUP_TITLE)))
                run = []
            if group is not None:
                run.append(v)
    return frames
