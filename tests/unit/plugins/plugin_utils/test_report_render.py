# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the report's graph model, its two drawings (built-in SVG, Graphviz dot) and its pages."""

from __future__ import annotations

import html
import re
import shutil

import pytest

from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils import _report_dot as dot
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_graph import build_graph
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_html import cudnn_versions, fleet_row, host_file
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_pages import ReportError, render_report
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_svg import draw

EVIL = '<script>alert("x")</script>'
MESSAGE = "libcudnn.so.9: cannot open shared object file: No such file or directory"


def dot_executable():
    path = shutil.which("dot")
    if path is None:
        pytest.fail("Graphviz dot is needed to test the dot drawing: apt-get install graphviz (make unit does)")
    return path


def facts(extra_soname="libfoo.so.1"):
    """A small gutted venv: torch's _C needs libtorch_cuda, which needs libcudnn (missing) and libnccl (a conflict)."""
    return {
        "path": "/v", "anchor": "torch", "summary": "broken", "python": {"version": "3.12.3"},
        "distributions": [
            {"name": "torch", "version": "2.9.1", "cuda_major": 12, "missing_count": 0},
            {"name": "nvidia-cudnn-cu12", "version": "9.10.2.21", "cuda_major": 12, "missing_count": 3},
            {"name": "nvidia-nccl-cu12", "version": "2.27.5", "cuda_major": 12, "missing_count": 0},
            {"name": "nvidia-nccl-cu13", "version": "2.30.7", "cuda_major": 13, "missing_count": 0}],
        "conflicts": [{"path": "nvidia/nccl/lib/libnccl.so.2", "owners": ["nvidia-nccl-cu12 2.27.5", "nvidia-nccl-cu13 2.30.7"],
                       "on_disk": "nvidia-nccl-cu13 2.30.7", "identical": False},
                      {"path": "nvidia/__init__.py", "owners": ["a 1", "b 1"], "on_disk": None, "identical": True}],
        "fallbacks": [{"object": "torch/lib/libtorch_cuda.so", "soname": "libcurand.so.10",
                       "resolved": "/usr/local/cuda/lib64/libcurand.so.10"}],
        "import_graph": {
            "nodes": [
                {"path": "torch/_C.so", "owners": ["torch 2.9.1"], "cuda_major": 12, "loaded": False},
                {"path": "torch/lib/libtorch_cuda.so", "owners": ["torch 2.9.1"], "cuda_major": 12, "loaded": False},
                {"path": "nvidia/nccl/lib/libnccl.so.2", "owners": ["nvidia-nccl-cu12 2.27.5", "nvidia-nccl-cu13 2.30.7"],
                 "cuda_major": 12, "loaded": False},
                {"path": "/usr/local/cuda/lib64/libcurand.so.10", "owners": [], "cuda_major": None, "loaded": False},
                {"path": "/lib/libc.so.6", "owners": [], "cuda_major": None, "loaded": True}],
            "edges": [
                {"object": "torch/_C.so", "soname": "libtorch_cuda.so", "resolved": "torch/lib/libtorch_cuda.so",
                 "via": "rpath", "error": None},
                {"object": "torch/_C.so", "soname": "libc.so.6", "resolved": "/lib/libc.so.6", "via": "cache", "error": None},
                {"object": "torch/lib/libtorch_cuda.so", "soname": "libcudnn.so.9", "resolved": None, "via": "missing",
                 "error": MESSAGE},
                {"object": "torch/lib/libtorch_cuda.so", "soname": "libnccl.so.2", "resolved": "nvidia/nccl/lib/libnccl.so.2",
                 "via": "rpath", "error": None},
                {"object": "torch/lib/libtorch_cuda.so", "soname": "libcurand.so.10",
                 "resolved": "/usr/local/cuda/lib64/libcurand.so.10", "via": "cache", "error": None},
                {"object": "torch/lib/libtorch_cuda.so", "soname": extra_soname, "resolved": None, "via": "missing",
                 "error": None}]},
        "findings": [{"code": "SONAME_UNRESOLVED", "severity": "error", "subject": "libcudnn.so.9", "message": "m",
                      "details": {"providers": ["nvidia-cudnn-cu12 9.10.2.21 (nvidia/cudnn/lib/libcudnn.so.9, missing on disk)"]}}],
        "requirements": [{"name": "nvidia-cudnn-cu12", "specifier": "==9.10.2.21"}],
        "probe": {"ran": True, "ok": True, "versions": {"torch": "2.9.1", "cudnn": 92400}},
    }


def test_graph_groups_by_wheel_marks_conflicts_and_breaks_edges():
    graph = build_graph(facts())
    assert [(n.name, n.group, n.kind, n.classes) for n in graph.nodes] == [
        ("torch/_C.so", "torch 2.9.1", "object", ("unloaded",)),
        ("torch/lib/libtorch_cuda.so", "torch 2.9.1", "object", ("unloaded",)),
        ("nvidia/nccl/lib/libnccl.so.2", "nvidia-nccl-cu13 2.30.7", "object", ("unloaded", "conflict")),
        ("/usr/local/cuda/lib64/libcurand.so.10", "(outside the venv)", "system", ("unloaded",)),
        ("libcudnn.so.9", "nvidia-cudnn-cu12 9.10.2.21", "missing", ("missing",)),
        ("libfoo.so.1", "(found nowhere)", "missing", ("missing",))]
    nccl = graph.nodes[2]
    assert nccl.lines == ("libnccl.so.2", "also claimed by nvidia-nccl-cu12")
    assert "claimed by nvidia-nccl-cu12 2.27.5 and nvidia-nccl-cu13 2.30.7; nvidia-nccl-cu13 2.30.7's bytes on disk" in nccl.tooltip
    assert "+1 system library not drawn" in graph.nodes[0].tooltip  # libc
    assert graph.nodes[4].lines == ("libcudnn.so.9", "NOT FOUND", "should come from nvidia-cudnn-cu12")
    assert [(graph.node(e.src).name, e.soname, graph.node(e.dst).name, e.broken, e.label) for e in graph.edges] == [
        ("torch/_C.so", "libtorch_cuda.so", "torch/lib/libtorch_cuda.so", False, None),
        ("torch/lib/libtorch_cuda.so", "libcudnn.so.9", "libcudnn.so.9", True, MESSAGE),
        ("torch/lib/libtorch_cuda.so", "libnccl.so.2", "nvidia/nccl/lib/libnccl.so.2", False, None),
        ("torch/lib/libtorch_cuda.so", "libcurand.so.10", "/usr/local/cuda/lib64/libcurand.so.10", False, None),
        ("torch/lib/libtorch_cuda.so", "libfoo.so.1", "libfoo.so.1", True, "libfoo.so.1: not found")]
    assert {g.id: (g.major, g.kind, g.conflicts) for g in graph.groups.values()} == {
        "torch 2.9.1": (12, "wheel", 0), "nvidia-nccl-cu13 2.30.7": (13, "wheel", 1),
        "(outside the venv)": (None, "system", 0), "nvidia-cudnn-cu12 9.10.2.21": (12, "missing-files", 0),
        "(found nowhere)": (None, "missing", 0)}


def test_facts_without_the_new_graph_keys_give_an_empty_graph():
    graph = build_graph({"import_graph": {"entry_points": [], "preloaded": {}, "objects": ["torch/_C.so"]}})
    assert (graph.nodes, graph.edges) == ([], [])


def test_builtin_drawing_draws_the_broken_edge_with_its_message():
    svg = draw(build_graph(facts()), "before", "t")
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" class="graph layered" id="before"')
    edge = svg[svg.index('<g class="edge broken" data-soname="libcudnn.so.9">'):]
    edge = edge[:edge.index("</g>")]
    assert 'stroke-dasharray="6 4"' in edge
    assert " ".join(t.split(">", 1)[1].split("</tspan>", 1)[0] for t in edge.split("<tspan")[1:]) == MESSAGE
    assert svg.count('class="node missing missing"') == 2 and svg.count('class="node object unloaded conflict"') == 1


def test_dot_drawing_draws_the_broken_edge_with_its_message():
    svg = dot.render_dot(dot.to_dot(build_graph(facts()), "after"), dot_executable(), "after")
    assert svg.startswith('<svg id="after" class="graph dot" width="')
    edge = svg[svg.index('class="edge broken"'):]
    edge = edge[:edge.index("</g>\n<!--") if "</g>\n<!--" in edge else len(edge)]
    assert 'stroke-dasharray' in edge
    texts = [t.split(">", 1)[1].split("</text>", 1)[0] for t in edge.split("<text")[1:4]]
    assert " ".join(texts) == MESSAGE


def test_texts_from_facts_are_escaped_in_both_drawings_and_the_pages():
    hostile = facts(extra_soname=EVIL)
    hostile["distributions"][0]["name"] = 'torch"><b>'
    assert EVIL not in draw(build_graph(hostile), "g", EVIL) and "<b>" not in draw(build_graph(hostile), "g", "t")
    svg = dot.render_dot(dot.to_dot(build_graph(hostile), 'x" onload="y'), dot_executable(), 'x" onload="y')
    assert EVIL not in svg and "&lt;script&gt;" in svg and 'onload="y' not in svg
    files, _rows, _note = render_report({EVIL: {"host": EVIL, "outcome": {"status": EVIL, "reason": EVIL},
                                                "before": hostile, "plan": {"batches": [], "unfixable": [EVIL]},
                                                "batches": [{"title": EVIL, "result": EVIL, "commands": [{"argv": [EVIL], "rc": 1}]}],
                                                "after": hostile}}, EVIL, "builtin")
    assert list(files) == ["host-_script_alert__x____script_.html", "index.html"]
    for text in files.values():
        assert "<script" not in text and "&lt;script&gt;" in text


def test_quoting_for_dot():
    assert dot.quote('a"b\\c\nd') == '"a\\"b\\\\c d"'
    assert dot.lines(["x", 'y"']) == '"x\\ly\\"\\l"'


def test_layouts_dot_required_failing_and_builtin(tmp_path):
    records = {"h": {"outcome": {"status": "healthy", "reason": "r"}, "before": facts()}}
    _files, _rows, note = render_report(records, "t", "auto", dot_executable())
    assert note == "Graphs laid out by Graphviz dot."
    _files, _rows, note = render_report(records, "t", "auto", "/bin/false")
    assert note == "Graphs laid out by the built-in layered layout (/bin/false -Tsvg failed (rc 1): )."
    with pytest.raises(ReportError, match=r"^/bin/false -Tsvg failed \(rc 1\)"):
        render_report(records, "t", "dot", "/bin/false")
    with pytest.raises(ReportError, match="layout must be one of auto, dot, builtin, got 'fancy'"):
        render_report(records, "t", "fancy")
    with pytest.raises(ReportError, match=r"reports\['h'\] must be a dictionary"):
        render_report({"h": ["x"]}, "t")


def test_fleet_row_cudnn_and_file_names():
    row = fleet_row("ct200", {"outcome": {"status": "repaired", "reason": "ok"}, "before": facts()})
    assert {k: row[k] for k in ("status", "cuda", "torch", "cudnn_loaded", "cudnn_pinned", "cudnn_mismatch")} == {
        "status": "repaired", "cuda": "12 + 13 (mixed)", "torch": "2.9.1", "cudnn_loaded": "9.24.0",
        "cudnn_pinned": "==9.10.2.21", "cudnn_mismatch": True}
    assert fleet_row("ct201", {})["status"] == "not run"
    assert cudnn_versions({"probe": {"versions": {"cudnn": 91002}}}) == ("9.10.2", None)
    assert cudnn_versions({"probe": {"versions": {"cudnn": 8907}}}) == ("8.9.7", None)
    taken = {"index.html": "index.html"}
    assert [host_file(h, taken) for h in ("a/b", "a_b", "a b")] == ["host-a_b.html", "host-a_b-2.html", "host-a_b-3.html"]


def test_the_fleet_page_says_per_host_whether_its_venv_matches_the_lock_or_what_drifted():
    drift = [{"distribution": "numpy", "kind": "missing", "locked": "2.3.5"},
             {"distribution": "torch", "kind": "version", "locked": "2.9.1", "installed": "2.9.0"},
             {"distribution": "sympy", "kind": "bytes", "locked": "1.14.0"},
             {"distribution": "extra-tool", "kind": "extra", "installed": "1.0"},
             {"distribution": "mpmath", "kind": "missing", "locked": "1.3.0"}]
    records = {"ct200": {"outcome": {"status": "healthy", "reason": "ok"},
                         "before": dict(facts(), lock={"name": "/srv/golden.pylock.toml", "matches": True, "drift": []})},
               "ct201": {"outcome": {"status": "needs repair", "reason": "drift"},
                         "before": dict(facts(), lock={"name": "golden.pylock.toml", "matches": False, "drift": drift})},
               "ct202": {"outcome": {"status": "healthy", "reason": "ok"}, "before": facts()}}
    assert [fleet_row(h, r)["lock"] for h, r in sorted(records.items())] == [
        "matches golden.pylock.toml",
        "differs from golden.pylock.toml: numpy missing, torch 2.9.0 (locked 2.9.1), sympy other bytes, extra-tool not "
        "locked and 1 more", ""]
    index = render_report(records, "fleet", "builtin")[0]["index.html"]
    assert '<span class="lock">matches golden.pylock.toml</span>' in index
    assert '<span class="mismatch lock-drift">differs from golden.pylock.toml: numpy missing' in index


def hundred_node_facts():
    """A venv whose import visits 100 objects of 15 wheels (CUDA 12 and 13), with two sonames found nowhere."""
    nodes, edges = [], []
    for k in range(100):
        wheel = "wheel%d 1.0" % (k % 15)
        nodes.append({"path": "pkg%d/lib/libobj%d.so" % (k % 15, k), "owners": [wheel], "cuda_major": 12 + k % 2,
                      "loaded": True})
        for parent in {k // 2, k // 3} if k else ():
            edges.append({"object": nodes[parent]["path"], "soname": "libobj%d.so" % k, "resolved": nodes[k]["path"],
                          "via": "rpath", "error": None})
    for k, soname in ((40, "libcudnn.so.9"), (77, "libnccl.so.2")):
        edges.append({"object": nodes[k]["path"], "soname": soname, "resolved": None, "via": "missing",
                      "error": "%s: cannot open shared object file: No such file or directory" % soname})
    return {"import_graph": {"nodes": nodes, "edges": edges},
            "distributions": [{"name": "wheel%d" % w, "version": "1.0", "cuda_major": 12 + w % 2} for w in range(15)]}


@pytest.mark.parametrize("layout", ["dot", "builtin"])
def test_a_hundred_node_graph_is_drawn_by_both_layouts(layout):
    record = {"outcome": {"status": "needs repair", "reason": "r"}, "before": hundred_node_facts()}
    files, _rows, note = render_report({"big": record}, "t", layout, dot_executable() if layout == "dot" else None)
    page = files["host-big.html"]
    assert note.startswith("Graphs laid out by Graphviz dot." if layout == "dot" else
                           "Graphs laid out by the built-in layered layout")
    assert page.count('class="node object') == 100 and page.count('class="node missing') == 2
    assert page.count('class="edge broken"') == 2


def history_facts():
    """facts() with its install history: the cu13 NCCL came with sglang-kernel in transaction 2."""
    result = facts()
    result["history"] = [
        {"number": 1, "time": "2026-12-01T10:00:00.000Z", "installer": "pip", "distributions": ["torch 2.9.1"],
         "requested": ["torch 2.9.1"], "requested_by_name": True},
        {"number": 4, "time": "2026-12-03T10:00:00.000Z", "installer": "uv", "distributions": ["a 1"],
         "requested": ["a 1"], "requested_by_name": False},
        {"number": 2, "time": "2026-12-02T10:00:00.000Z", "installer": "pip",
         "distributions": ["sglang-kernel 0.3.21", "nvidia-nccl-cu13 2.30.7"], "requested": ["sglang-kernel 0.3.21"],
         "requested_by_name": True},
        {"number": 3, "time": "unknown", "installer": "pip", "distributions": [EVIL], "requested": [],
         "requested_by_name": True, "reason": "a clock jumped"}]
    result["findings"].append({"code": "CONTAMINATION_SOURCE", "severity": "warning", "subject": "transaction 2",
                               "message": "from sglang-kernel", "details": {
                                   "transaction": 2, "contaminants": ["nvidia-nccl-cu13 2.30.7", "sglang-kernel 0.3.21"]}})
    return result


@pytest.mark.parametrize("layout", ["builtin", "dot"])
def test_the_history_marks_the_contaminating_transaction_and_links_its_wheels_to_the_graph(layout):
    files, _rows, _note = render_report({"h": {"host": "h", "before": history_facts()}}, "t", layout,
                                        dot_executable() if layout == "dot" else None)
    text = files["host-h.html"]
    table = text[text.index('<table class="history">'):]
    table = table[:table.index("</table>")]
    rows = table.split('<tr class="transaction')[1:]
    assert [r.split('"', 1)[0] for r in rows] == ["", "", " contaminating", ""]
    assert rows[1].endswith("<td>a 1</td></tr>")  # uv's REQUESTED (on every dist-info it installs) is not shown
    rows = [rows[0]] + rows[2:]
    # nvidia-nccl-cu13's bytes are the conflicting libnccl.so.2 box (node n2 of the "before" graph)
    assert ('<a href="#before-n2" class="contaminant">nvidia-nccl-cu13 2.30.7</a>' in rows[1])
    assert "before-n2" in [html.unescape(i) for i in re.findall(r' id="([^"]*)"', text)]  # dot writes - as &#45;
    assert '<span class="contaminant">sglang-kernel 0.3.21 <i>(requested)</i></span>' in rows[1]
    assert '<span class="badge warn">contaminating</span> from sglang-kernel' in rows[1]
    assert '<a href="#before-n0">torch 2.9.1 <i>(requested)</i></a>' in rows[0]
    assert "time unknown: a clock jumped" in rows[2] and EVIL not in text and "&lt;script&gt;" in rows[2]
    assert "Install history" not in render_report({"h": {"before": facts()}}, "t", "builtin")[0]["host-h.html"]


def test_a_host_with_several_venvs_gets_a_page_per_venv_and_host_by_venv_rows():
    broken = {"host": "a", "path": "/opt/x/.venv", "outcome": {"status": "needs repair", "reason": "broken"}, "before": facts()}
    healthy = {"host": "a", "path": "/root/" + EVIL, "outcome": {"status": "healthy", "reason": "fine"}, "before": None}
    user = {"path": "/home/u/.local/lib/python3.11/site-packages", "kind": "user", "anchor": "cupy-cuda12x",
            "anchor_version": "14.2.0", "cuda_majors": [12]}
    record = {"host": "a", "path": "", "outcome": {"status": "needs repair", "reason": "2 CUDA venv(s)"},
              "venvs": [broken, healthy], "found": [user], "notes": ["root /data does not exist"]}
    single = {"host": "b", "path": "/v", "outcome": {"status": "healthy", "reason": "ok"}, "before": facts()}
    files, rows, _note = render_report({"a": record, "b": single, "c": {}}, "fleet", "builtin")
    assert sorted(files) == ["host-a.html", "host-a__opt_x_.venv.html", "host-a__root__script_alert__x____script_.html",
                             "host-b.html", "host-c.html", "index.html"]
    assert rows[0]["venvs"] == [
        {"path": "/opt/x/.venv", "status": "needs repair", "page": "host-a__opt_x_.venv.html"},
        {"path": "/root/" + EVIL, "status": "healthy", "page": "host-a__root__script_alert__x____script_.html"},
        {"path": user["path"], "status": "not a venv", "page": None}]
    assert rows[1]["venvs"] == [{"path": "/v", "status": "healthy", "page": "host-b.html"}] and rows[2]["venvs"] == []
    index = files["index.html"]
    venv_rows = re.findall(r'<tr class="venv" data-host="([^"]*)" data-path="([^"]*)" data-status="([^"]*)">', index)
    assert venv_rows == [("a", "/opt/x/.venv", "needs repair"), ("a", "/root/" + html.escape(EVIL), "healthy"),
                         ("a", user["path"], "not a venv"), ("b", "/v", "healthy")]
    assert '<a href="host-a__opt_x_.venv.html">/opt/x/.venv</a>' in index and EVIL not in index
    assert "<td>12</td><td class=\"mono\">cupy-cuda12x 14.2.0</td>" in index
    assert "4 venv(s) on 2 host(s)." in index
    assert "root /data does not exist" in files["host-a.html"] and files["host-a.html"].count('<tr class="venv"') == 3
    assert "/opt/x/.venv" in files["host-a__opt_x_.venv.html"] and "needs repair" in files["host-a__opt_x_.venv.html"]
