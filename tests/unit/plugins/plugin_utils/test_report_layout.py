# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for _report_layout: the built-in layered layout on small graphs and on one of about a hundred nodes."""

from __future__ import annotations

import random
import time

from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_layout import _crossings, layered_layout


def overlap(a, b, pad=0.0):
    return a.x < b.x + b.w + pad and b.x < a.x + a.w + pad and a.y < b.y + b.h + pad and b.y < a.y + a.h + pad


def test_chain_goes_left_to_right_without_crossings():
    sizes = {"a": (80, 20), "b": (60, 20), "c": (40, 20)}
    layout = layered_layout(sizes, [("a", "b", None), ("b", "c", None)], {"a": "g", "b": "g", "c": "h"})
    a, b, c = (layout.boxes[k] for k in "abc")
    assert a.x + a.w < b.x and b.x + b.w < c.x
    assert layout.crossings == 0
    assert [r.points[0] for r in layout.routes] == [(a.x + a.w, a.y + 10), (b.x + b.w, b.y + 10)]
    assert [r.points[-1] for r in layout.routes] == [(b.x, b.y + 10), (c.x, c.y + 10)]
    assert sorted(g for g, _f in layout.frames) == ["g", "g", "h"]


def test_a_cycle_is_broken_by_reversing_one_edge():
    sizes = {"a": (40, 20), "b": (40, 20), "c": (40, 20)}
    layout = layered_layout(sizes, [("a", "b", None), ("b", "c", None), ("c", "a", None)], {})
    assert [r.reversed for r in layout.routes] == [False, False, True]
    assert layout.boxes["a"].x < layout.boxes["b"].x < layout.boxes["c"].x


def test_long_edges_pass_dummies_and_labels_take_room():
    sizes = {"a": (40, 20), "b": (40, 20), "c": (40, 20), "m": (40, 20)}
    edges = [("a", "b", None), ("b", "c", None), ("a", "c", None), ("b", "m", (120, 30))]
    layout = layered_layout(sizes, edges, {})
    long_route = layout.routes[2]
    assert len(long_route.points) == 4  # out of a, across b's layer (dummy: in and out), into c
    label = layout.routes[3].label
    b, m = layout.boxes["b"], layout.boxes["m"]
    assert (label.w, label.h) == (120, 30)
    assert b.x + b.w < label.x and label.x + label.w < m.x  # the label has a layer of its own between b and m
    assert not any(overlap(label, box) for box in layout.boxes.values())


def test_groups_stay_together_in_each_layer():
    sizes = {"r": (40, 20)}
    groups = {"r": "root"}
    edges = []
    for k in range(12):
        sizes["n%d" % k] = (50, 20)
        groups["n%d" % k] = "g%d" % (k % 3)
        edges.append(("r", "n%d" % k, None))
    layout = layered_layout(sizes, edges, groups)
    column = sorted(("n%d" % k for k in range(12)), key=lambda v: layout.boxes[v].y)
    runs = [groups[v] for v in column]
    assert [g for i, g in enumerate(runs) if i == 0 or runs[i - 1] != g] == sorted(set(runs), key=runs.index)
    assert len([g for g, _f in layout.frames if g.startswith("g")]) == 3  # one frame per group


def test_barycentre_ordering_removes_avoidable_crossings():
    # two parallel chains given crosswise: a1->b2, a2->b1 ordered so that they cross at first
    sizes = {v: (30, 20) for v in ("a1", "a2", "b1", "b2", "c1", "c2")}
    edges = [("a1", "b2", None), ("a2", "b1", None), ("b1", "c1", None), ("b2", "c2", None)]
    layout = layered_layout(sizes, edges, {})
    assert layout.crossings == 0
    assert _crossings([["a", "b"], ["d", "c"]], [("a", "c"), ("b", "d")]) == 1


def test_a_hundred_nodes_stay_readable_and_fast():
    rng = random.Random(13)
    sizes, groups, edges = {}, {}, []
    for k in range(100):
        sizes["v%d" % k] = (rng.randint(60, 220), rng.choice((25, 40)))
        groups["v%d" % k] = "wheel%d" % rng.randint(0, 14)
    for k in range(1, 100):
        for _parent in range(rng.randint(1, 3)):
            edges.append(("v%d" % rng.randint(0, k - 1), "v%d" % k, (150, 40) if rng.random() < 0.05 else None))
    start = time.monotonic()
    layout = layered_layout(sizes, edges, groups)
    seconds = time.monotonic() - start
    boxes = list(layout.boxes.values())
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if overlap(a, b)]
    labels = [r.label for r in layout.routes if r.label]
    assert labels and not [(a, b) for a in labels for b in boxes if overlap(a, b)]
    assert all(b.x >= 0 and b.y >= 0 and b.x + b.w <= layout.width and b.y + b.h <= layout.height for b in boxes)
    assert seconds < 5, seconds
    # same input, same picture
    assert layered_layout(sizes, edges, groups) == layout
