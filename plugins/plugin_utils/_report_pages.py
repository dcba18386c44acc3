# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole report: every host's page and the fleet's index, each graph drawn by dot or the built-in layout.

Private to the gpuops.cuda_venv collection: not a public API. Returns file names and texts; writing them is the
action plugin's job.
"""

from __future__ import annotations

import shutil
from typing import Dict, List, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils import _report_dot as dot
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_graph import build_graph
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_html import (
    fleet_page, fleet_row, host_file, host_page, venv_rows, venvs_page)
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_svg import draw

INDEX = "index.html"
LAYOUTS = ("auto", "dot", "builtin")


class ReportError(Exception):
    """Bad input: the message names it."""


class Drawer:
    """Draws graphs with ``dot`` when it runs, else with the built-in layout; says which it used and why."""

    def __init__(self, layout: str, dot_executable: Optional[str]) -> None:
        if layout not in LAYOUTS:
            raise ReportError("layout must be one of %s, got %r" % (", ".join(LAYOUTS), layout))
        self.dot = None if layout == "builtin" else (dot_executable or shutil.which("dot"))
        if self.dot is None and layout == "dot":
            raise ReportError("layout dot: Graphviz's dot is not on PATH (apt-get install graphviz), "
                              "or use layout auto or builtin")
        self.strict = layout == "dot"
        self.why = "layout builtin asked for" if layout == "builtin" else "Graphviz dot is not installed"
        self.used: List[str] = []

    def __call__(self, facts: dict, graph_id: str, title: str) -> str:
        graph = build_graph(facts)
        if self.dot is not None:
            try:
                svg = dot.render_dot(dot.to_dot(graph, graph_id), self.dot, graph_id)
                self.used.append("dot")
                return svg
            except dot.DotError as exc:
                if self.strict:
                    raise ReportError(str(exc)) from exc
                self.why = str(exc)
        self.used.append("builtin")
        return draw(graph, graph_id, title)

    def note(self) -> str:
        """One sentence: which layout drew the graphs, and why not dot."""
        if not self.used:
            return "No graphs drawn."
        if "builtin" not in self.used:
            return "Graphs laid out by Graphviz dot."
        return "Graphs laid out by the built-in layered layout (%s)." % self.why


def render_report(reports: Dict[str, dict], title: str, layout: str = "auto",
                  dot_executable: Optional[str] = None) -> Tuple[Dict[str, str], List[dict], str]:
    """({file name: HTML}, fleet rows, layout note) for ``reports`` ({host: record}; an empty record: not run)."""
    if not isinstance(reports, dict):
        raise ReportError("reports must be a dictionary of host -> record, got %s" % type(reports).__name__)
    for host, record in reports.items():
        if record is not None and not isinstance(record, dict):
            raise ReportError("reports[%r] must be a dictionary (the host's venv_repair_evidence), got %s"
                              % (host, type(record).__name__))
    drawer = Drawer(layout, dot_executable)
    files: Dict[str, str] = {}
    taken: Dict[str, str] = {INDEX: INDEX}
    rows = []
    venvs: List[dict] = []
    for host in sorted(reports, key=str):
        record = reports[host] or {}
        name = host_file(str(host), taken)
        if isinstance(record.get("venvs"), list):  # the venvs found on the host: a page each, and one listing them
            pages = {}
            for venv in record["venvs"]:
                if isinstance(venv, dict) and venv.get("path"):
                    page = host_file("%s %s" % (host, venv["path"]), taken)
                    files[page] = host_page(str(host), venv, drawer, INDEX)
                    pages[str(venv["path"])] = page
            found = venv_rows(str(host), record, pages)
            files[name] = venvs_page(str(host), record, found, INDEX)
        else:
            files[name] = host_page(str(host), record, drawer, INDEX)
            found = venv_rows(str(host), record, {str(record.get("path") or ""): name})
        venvs += found
        rows.append((dict(fleet_row(str(host), record), venvs=[{k: v[k] for k in ("path", "status", "page")} for v in found]),
                     name))
    note = drawer.note()
    files[INDEX] = fleet_page(rows, title, note, venvs)
    return files, [dict(row, page=name) for row, name in rows], note
