# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's pages: one per host (graph, findings, plan, batches, before and after) and the fleet's index.

Private to the gpuops.cuda_venv collection: not a public API. Pure: records in, HTML text out. A host's record is
what the venv_repair role leaves in ``venv_repair_evidence``: ``host``, ``path``, ``outcome`` (``status``,
``reason``), ``before`` and ``after`` (``cuda_venv`` facts or null), ``plan`` (the repair module's plan or null) and
``batches`` (what each batch ran and its result). Every text taken from a record is HTML-escaped; the pages load
nothing from anywhere (inline CSS and SVG, no script).
"""

from __future__ import annotations

import os
import re
from html import escape
from typing import Callable, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_graph import build_graph
from ansible_collections.gpuops.cuda_venv.plugins.plugin_utils._report_svg import BROKEN, major_colours

# status -> CSS class of its badge
_STATUS = {"healthy": "ok", "healthy before": "ok", "repaired": "ok", "swapped": "ok", "fell back to in place": "ok",
           "would repair": "warn", "needs repair": "warn",
           "rolled back": "bad", "failed": "bad", "cannot repair": "bad"}
NOT_RUN = "not run"

CSS = """
body{font:14px/1.45 "DejaVu Sans",Arial,sans-serif;color:#212529;margin:24px;background:#fff}
h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dee2e6}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px}th,td{border:1px solid #dee2e6;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f1f3f5}
code,.mono{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:bold;color:#fff;background:#868e96;
white-space:nowrap}
.badge.ok{background:#2b8a3e}.badge.warn{background:#e67700}.badge.bad{background:#c92a2a}
.sev-error{color:#c92a2a;font-weight:bold}.sev-warning{color:#e67700;font-weight:bold}.sev-info{color:#495057}
.mismatch{color:#c92a2a;font-weight:bold}.muted{color:#868e96}
.graph-wrap{overflow:auto;border:1px solid #dee2e6;max-height:85vh;background:#fff}
.fit:checked~.graph-wrap svg.graph{max-width:100%;height:auto}.fit-label{font-size:12px;color:#495057}
tr.contaminating td{background:#fff4e6}.contaminant{color:#c92a2a;font-weight:bold}
.legend span{display:inline-block;margin-right:14px}.swatch{display:inline-block;width:14px;height:10px;
border:1.5px solid;margin-right:4px;vertical-align:middle}
"""


def page(title: str, body: str) -> str:
    """A complete, self-contained HTML document."""
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>%s</title><style>%s</style></head><body>%s</body></html>\n' % (escape(title), CSS, body))


def host_file(host: str, taken: Dict[str, str]) -> str:
    """A file name for the host's page, unique among ``taken`` (host -> file), made of safe characters only."""
    base = "host-" + (re.sub(r"[^A-Za-z0-9._-]", "_", host) or "_")
    name, k = base + ".html", 2
    while name in taken.values():
        name, k = "%s-%d.html" % (base, k), k + 1
    taken[host] = name
    return name


# ------------------------------------------------------------------------------------------------------ the fleet

def fleet_row(host: str, record: dict) -> dict:
    """What the fleet page says of one host."""
    outcome = record.get("outcome") or {}
    facts = record.get("after") or record.get("before") or {}
    status = outcome.get("status") or NOT_RUN
    loaded, pinned = cudnn_versions(facts)
    return {"host": host, "status": status, "reason": outcome.get("reason") or "unreachable, or the rollout stopped before it",
            "cuda": cuda_majors(facts), "torch": anchor_version(facts), "cudnn_loaded": loaded, "cudnn_pinned": pinned,
            "cudnn_mismatch": bool(loaded and pinned and not pinned.lstrip("=~<>!").startswith(loaded)),
            "summary": facts.get("summary"), "before": (record.get("before") or {}).get("summary"),
            "lock": lock_state(facts)}


def venv_rows(host: str, record: dict, pages: Dict[str, str]) -> List[dict]:
    """The fleet page's host x venv rows of one host: each venv it diagnosed or repaired (``record["venvs"]``, or the
    record itself when it names one ``path``), linked to its page (``pages``: path -> file), then each site folder
    cuda_venv_find listed that is not a venv (``record["found"]``), which nothing diagnoses."""
    venvs = record.get("venvs") if isinstance(record.get("venvs"), list) else ([record] if record.get("path") else [])
    rows = []
    for venv in venvs:
        if not isinstance(venv, dict):
            continue
        path = str(venv.get("path") or "")
        row = dict(fleet_row(host, venv), path=path, page=pages.get(path))
        facts = venv.get("after") or venv.get("before") or {}
        row["anchor"] = " ".join(x for x in (str(facts.get("anchor") or ""), anchor_version(facts)) if x)
        rows.append(row)
    for found in record.get("found") or []:
        if isinstance(found, dict) and found.get("kind") not in (None, "venv"):
            majors = found.get("cuda_majors") or []
            rows.append({"host": host, "path": str(found.get("path")), "page": None, "status": "not a venv",
                         "reason": "a %s site-packages: the diagnosis reads venvs only" % found.get("kind"),
                         "cuda": " + ".join(str(m) for m in majors) + (" (mixed)" if len(majors) > 1 else ""),
                         "anchor": " ".join(str(x) for x in (found.get("anchor"), found.get("anchor_version")) if x),
                         "cudnn_loaded": None, "cudnn_pinned": None, "cudnn_mismatch": False})
    return rows


def _venv_table(rows: List[dict], table_id: str) -> str:
    """Host x venv: each venv's outcome, CUDA, anchor, cuDNN and why, its path linking to its page."""
    body = ['<table id="%s"><tr><th>host</th><th>venv</th><th>outcome</th><th>CUDA</th><th>anchor</th>'
            '<th>cuDNN loaded / pinned</th><th>lock</th><th>why</th></tr>' % escape(table_id)]
    for row in rows:
        path = escape(row["path"])
        cell = '<a href="%s">%s</a>' % (escape(row["page"]), path) if row.get("page") else path
        body.append('<tr class="venv" data-host="%s" data-path="%s" data-status="%s"><td>%s</td><td class="mono">%s</td>'
                    '<td><span class="badge %s">%s</span></td><td>%s</td><td class="mono">%s</td><td>%s</td><td>%s</td>'
                    '<td>%s</td></tr>' % (escape(row["host"]), path, escape(row["status"]), escape(row["host"]), cell,
                                          _STATUS.get(row["status"], ""), escape(row["status"]), escape(row["cuda"] or "-"),
                                          escape(row["anchor"] or "-"), _cudnn_cell(row) if row.get("page") else "-",
                                          _lock_cell(row), escape(row["reason"])))
    body.append("</table>")
    return "".join(body)


def venvs_page(host: str, record: dict, rows: List[dict], fleet_file: str) -> str:
    """The page of a host whose CUDA venvs were found: its venvs (each linking to its page) and what the finding noted."""
    outcome = record.get("outcome") or {}
    status = outcome.get("status") or NOT_RUN
    body = ['<p><a href="%s">&larr; fleet</a></p>' % escape(fleet_file),
            '<h1>%s <span class="badge %s" id="status">%s</span></h1>' % (escape(host), _STATUS.get(status, ""), escape(status)),
            '<p id="reason">%s</p>' % escape(outcome.get("reason") or "no result from this host"),
            '<h2>CUDA venvs</h2>', _venv_table(rows, "venvs")]
    notes = [str(n) for n in record.get("notes") or []]
    if notes:
        body.append('<h2>Notes of the search</h2><ul id="notes">%s</ul>' % "".join("<li>%s</li>" % escape(n) for n in notes))
    return page("%s: %s" % (host, status), "".join(body))


def fleet_page(rows: List[Tuple[dict, str]], title: str, layout_note: str, venvs: Optional[List[dict]] = None) -> str:
    """The index: one row per host (``rows``: (fleet_row, page file)), linking to each host's page; then host x venv
    (``venvs``: venv_rows of every host), each venv linking to its own page."""
    counts: Dict[str, int] = {}
    for row, _file in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    body = ['<h1>%s</h1>' % escape(title),
            '<p>%d host(s): %s. %s</p>' % (
                len(rows), ", ".join("%d %s" % (n, escape(s)) for s, n in sorted(counts.items())), escape(layout_note)),
            '<table id="fleet"><tr><th>host</th><th>outcome</th><th>CUDA</th><th>torch</th>'
            '<th>cuDNN loaded / pinned</th><th>lock</th><th>why</th><th>diagnosis before</th></tr>']
    for row, file in rows:
        cudnn = _cudnn_cell(row)
        body.append('<tr class="host" data-host="%s" data-status="%s"><td><a href="%s">%s</a></td>'
                    '<td><span class="badge %s">%s</span></td><td>%s</td><td class="mono">%s</td><td>%s</td>'
                    '<td>%s</td><td>%s</td><td>%s</td></tr>' % (
                        escape(row["host"]), escape(row["status"]), escape(file), escape(row["host"]),
                        _STATUS.get(row["status"], ""), escape(row["status"]), escape(row["cuda"] or "-"),
                        escape(row["torch"] or "-"), cudnn, _lock_cell(row), escape(row["reason"]),
                        escape(row["before"] or "-")))
    body.append("</table>")
    if venvs:
        body.append('<h2>Venvs</h2><p>%d venv(s) on %d host(s).</p>%s' % (
            len(venvs), len({v["host"] for v in venvs}), _venv_table(venvs, "fleet-venvs")))
    return page(title, "".join(body))


def _cudnn_cell(row) -> str:
    loaded = row["cudnn_loaded"] or "none (the import fails)"
    pinned = row["cudnn_pinned"] or "-"
    css = ' class="mismatch" title="the process runs another cuDNN than torch pins"' if row["cudnn_mismatch"] else ""
    return '<span%s>%s / %s</span>' % (css, escape(loaded), escape(pinned))


def _lock_cell(row) -> str:
    text = row.get("lock") or "-"
    css = ' class="mismatch lock-drift"' if text.startswith("differs") else ' class="lock"'
    return '<span%s>%s</span>' % (css, escape(text))


def lock_state(facts: dict) -> str:
    """'' without a lock; 'matches NAME'; or 'differs from NAME: numpy missing, torch 2.9.0 (locked 2.9.1), ...'."""
    lock = facts.get("lock")
    if not isinstance(lock, dict):
        return ""
    name = os.path.basename(str(lock.get("name") or "the lock"))
    if lock.get("matches"):
        return "matches %s" % name
    words = []
    for drift in lock.get("drift") or []:
        kind = drift.get("kind")
        what = {"missing": "missing", "extra": "not locked", "bytes": "other bytes"}.get(kind)
        words.append("%s %s" % (drift.get("distribution"), what or "%s (locked %s)" % (drift.get("installed"), drift.get("locked"))))
    more = " and %d more" % (len(words) - 4) if len(words) > 4 else ""
    return "differs from %s: %s%s" % (name, ", ".join(words[:4]), more)


def cuda_majors(facts: dict) -> str:
    """'12', or '12 + 13 (mixed)': the CUDA majors of the venv's CUDA wheels."""
    majors = sorted({d["cuda_major"] for d in facts.get("distributions") or [] if isinstance(d.get("cuda_major"), int)})
    if not majors:
        return ""
    text = " + ".join(str(m) for m in majors)
    return text + " (mixed)" if len(majors) > 1 else text


def anchor_version(facts: dict) -> str:
    anchor = (facts.get("anchor") or "").lower().replace("_", "-")
    for dist in facts.get("distributions") or []:
        if str(dist.get("name", "")).lower().replace("_", "-") == anchor:
            return str(dist.get("version"))
    return ""


def cudnn_versions(facts: dict) -> Tuple[Optional[str], Optional[str]]:
    """(the cuDNN the import loaded, as 9.10.2; the specifier the anchor's closure pins, as ==9.10.2.21)."""
    code = ((facts.get("probe") or {}).get("versions") or {}).get("cudnn")
    loaded = None
    if isinstance(code, int) and code > 0:
        # cuDNN >= 9 encodes major*10000 + minor*100 + patch; 8.x major*1000 + minor*100 + patch
        loaded = ("%d.%d.%d" % (code // 10000, code % 10000 // 100, code % 100) if code >= 90000
                  else "%d.%d.%d" % (code // 1000, code % 1000 // 100, code % 100))
    pinned = None
    for req in facts.get("requirements") or []:
        if str(req.get("name", "")).lower().startswith("nvidia-cudnn") and req.get("specifier"):
            pinned = req["specifier"]
            break
    return loaded, pinned


# ------------------------------------------------------------------------------------------------------- one host

def host_page(host: str, record: dict, draw_graph: Callable[[dict, str, str], str], fleet_file: str) -> str:
    """One host's page. ``draw_graph(facts, graph_id, title)`` returns the graph's ``<svg>`` element."""
    outcome = record.get("outcome") or {}
    status = outcome.get("status") or NOT_RUN
    body = ['<p><a href="%s">&larr; fleet</a></p>' % escape(fleet_file),
            '<h1>%s <span class="badge %s" id="status">%s</span></h1>' % (
                escape(host), _STATUS.get(status, ""), escape(status)),
            '<p class="mono">%s</p><p id="reason">%s</p>' % (
                escape(record.get("path") or ""), escape(outcome.get("reason") or "no result from this host"))]
    before, after = record.get("before"), record.get("after")
    if before and after:
        body.append("<h2>Before and after</h2>%s" % _compare(before, after))
    if before:
        heading = "Before the repair" if after else "Diagnosis"
        body.append('<h2 id="before">%s</h2>%s' % (heading, _venv_section(before, "before", draw_graph)))
    if record.get("plan") is not None:
        body.append('<h2 id="plan">Plan</h2>%s' % _plan(record["plan"]))
    if record.get("batches"):
        body.append('<h2 id="batches">Batches run</h2>%s' % _batches(record["batches"]))
    if after:
        body.append('<h2 id="after">After the repair</h2>%s' % _venv_section(after, "after", draw_graph))
    return page("%s: %s" % (host, status), "".join(body))


def _compare(before: dict, after: dict) -> str:
    rows = [("verdict", before.get("summary"), after.get("summary")),
            ("import", _probe_text(before), _probe_text(after)),
            ("CUDA", cuda_majors(before), cuda_majors(after)),
            ("cuDNN loaded / pinned", _cudnn_text(before), _cudnn_text(after)),
            ("findings (error/warning)", _counts(before), _counts(after)),
            ("paths claimed by two wheels", str(len(_real_conflicts(before))), str(len(_real_conflicts(after))))]
    return '<table id="compare"><tr><th></th><th>before</th><th>after</th></tr>%s</table>' % "".join(
        "<tr><th>%s</th><td>%s</td><td>%s</td></tr>" % (escape(a), escape(str(b)), escape(str(c))) for a, b, c in rows)


def _cudnn_text(facts: dict) -> str:
    loaded, pinned = cudnn_versions(facts)
    return "%s / %s" % (loaded or "none", pinned or "-")


def _counts(facts: dict) -> str:
    findings = facts.get("findings") or []
    return "%d / %d" % (sum(f.get("severity") == "error" for f in findings),
                        sum(f.get("severity") == "warning" for f in findings))


def _probe_text(facts: dict) -> str:
    probe = facts.get("probe") or {}
    if not probe.get("ran"):
        return "not probed"
    if probe.get("ok"):
        versions = probe.get("versions") or {}
        return "works (%s)" % ", ".join("%s %s" % (k, versions[k]) for k in ("torch", "cuda", "cudnn", "nccl") if versions.get(k))
    return "fails: %s" % probe.get("error")


def _real_conflicts(facts: dict) -> List[dict]:
    return [c for c in facts.get("conflicts") or [] if not c.get("identical")]


def _venv_section(facts: dict, graph_id: str, draw_graph) -> str:
    parts = ['<p><b>%s</b></p><p>python %s, anchor %s, import: <span class="%s">%s</span></p>' % (
        escape(str(facts.get("summary") or "")), escape(str((facts.get("python") or {}).get("version") or "?")),
        escape(str(facts.get("anchor") or "?")), "" if (facts.get("probe") or {}).get("ok") else "sev-error",
        escape(_probe_text(facts)))]
    # Fitted to the page's width by default; unticked, drawn at full size with scroll bars (CSS only, no script).
    parts.append('<h3>What importing %s loads</h3>%s<div><input type="checkbox" class="fit" id="%s-fit" checked>'
                 '<label class="fit-label" for="%s-fit"> fit to the page\'s width</label><div class="graph-wrap">%s'
                 '</div></div>' % (escape(str(facts.get("anchor") or "the anchor")), _legend(), escape(graph_id), escape(graph_id),
                                   draw_graph(facts, graph_id, "import graph " + graph_id)))
    parts.append("<h3>Findings</h3>%s" % _findings(facts.get("findings") or []))
    if facts.get("history"):
        parts.append('<h3>Install history</h3>%s' % _history(facts, graph_id))
    conflicts = _real_conflicts(facts)
    harmless = len(facts.get("conflicts") or []) - len(conflicts)
    if conflicts:
        parts.append('<h3>Files claimed by two wheels</h3><table class="conflicts"><tr><th>path</th><th>owners</th>'
                     '<th>bytes on disk</th></tr>%s</table>' % "".join(
                         '<tr><td class="mono">%s</td><td>%s</td><td>%s</td></tr>' % (
                             escape(c["path"]), escape(", ".join(c.get("owners") or [])),
                             escape(c.get("on_disk") or "unknown")) for c in conflicts))
    if harmless:
        parts.append('<p class="muted">%d more path(s) claimed by several wheels with identical bytes (such as the '
                     'empty nvidia/__init__.py): harmless.</p>' % harmless)
    return "".join(parts)


def _history(facts: dict, graph_id: str) -> str:
    """The transactions oldest first; those CONTAMINATION_SOURCE names marked, with its message, and their
    contaminants linked to their wheel's first box in the graph (when the import reaches it)."""
    sources: Dict[int, dict] = {}
    for finding in facts.get("findings") or []:
        details = finding.get("details") or {}
        if finding.get("code") == "CONTAMINATION_SOURCE" and isinstance(details.get("transaction"), int):
            sources[details["transaction"]] = finding
    boxes: Dict[str, str] = {}
    for node in build_graph(facts).nodes:
        boxes.setdefault(node.group, "%s-%s" % (graph_id, node.id))
    rows = []
    for transaction in facts.get("history") or []:
        number = transaction.get("number")
        source = sources.get(number)
        bad = set((source or {}).get("details", {}).get("contaminants") or [])
        # only where REQUESTED marks what was asked for by name (pip's; uv writes it into every dist-info)
        requested = set(transaction.get("requested") or []) if transaction.get("requested_by_name") else set()
        wheels = []
        for label in transaction.get("distributions") or []:
            text = escape(str(label)) + (" <i>(requested)</i>" if label in requested else "")
            css = ' class="contaminant"' if label in bad else ""
            if label in boxes:
                text = '<a href="#%s"%s>%s</a>' % (escape(boxes[label]), css, text)
            elif css:
                text = "<span%s>%s</span>" % (css, text)
            wheels.append(text)
        mark = ""
        if source:
            mark = '<br><span class="badge warn">contaminating</span> %s' % escape(str(source.get("message")))
        elif transaction.get("reason"):
            mark = '<br><span class="muted">time unknown: %s</span>' % escape(str(transaction["reason"]))
        rows.append('<tr class="transaction%s" id="%s-t%s"><td>%s</td><td class="mono">%s</td><td>%s</td>'
                    '<td>%s%s</td></tr>' % (
                        " contaminating" if source else "", escape(graph_id), escape(str(number)), escape(str(number)),
                        escape(str(transaction.get("time"))), escape(str(transaction.get("installer"))),
                        ", ".join(wheels), mark))
    return ('<table class="history"><tr><th>#</th><th>time (UTC)</th><th>installer</th><th>distributions</th></tr>%s'
            '</table>' % "".join(rows))


def _legend() -> str:
    items = ['<span><i class="swatch" style="background:%s;border-color:%s"></i>%s</span>' % (fill, stroke, escape(text))
             for text, fill, stroke in major_colours()]
    items.append('<span><svg width="34" height="10"><path d="M0,5 L34,5" stroke="%s" stroke-dasharray="6 4" '
                 'stroke-width="1.6"/></svg> broken: the loader\'s message</span>' % BROKEN)
    items.append('<span><i class="swatch" style="background:#fff0f0;border-color:%s;border-style:dashed"></i>'
                 'found nowhere (in the wheel that should provide it)</span>' % BROKEN)
    items.append('<span><i class="swatch" style="background:#fff3bf;border-color:%s"></i>claimed by two wheels</span>'
                 % BROKEN)
    items.append('<span class="muted">faded: unloaded again when the import failed; dashed frame: a wheel whose '
                 'files are missing; hover for details</span>')
    return '<p class="legend">%s</p>' % "".join(items)


def _findings(findings: List[dict]) -> str:
    if not findings:
        return "<p>none</p>"
    rows = []
    for f in findings:
        severity = str(f.get("severity"))
        rows.append('<tr class="finding" data-code="%s"><td class="sev-%s">%s</td><td class="mono">%s</td>'
                    '<td class="mono">%s</td><td>%s%s</td></tr>' % (
                        escape(str(f.get("code"))), escape(severity), escape(severity), escape(str(f.get("code"))),
                        escape(str(f.get("subject"))), escape(str(f.get("message"))),
                        ('<br><span class="muted">fix: %s</span>' % escape(f["fix"])) if f.get("fix") else ""))
    return ('<table class="findings"><tr><th>severity</th><th>code</th><th>subject</th><th>message</th></tr>%s</table>'
            % "".join(rows))


def _plan(plan: dict) -> str:
    batches = plan.get("batches") or []
    parts = []
    if not batches:
        parts.append("<p>nothing to do: the venv already has its declared set</p>")
    else:
        rows = []
        for batch in batches:
            actions = "<br>".join('<span class="mono">%s %s</span> <span class="muted">%s</span>' % (
                escape(str(a.get("action"))), escape(str(a.get("requirement"))), escape(str(a.get("reason") or "")))
                for a in batch.get("actions") or [])
            rows.append("<tr><td>%s</td><td>%s</td><td>%s</td><td class=\"mono\">%s</td></tr>" % (
                escape(str(batch.get("batch"))), escape(str(batch.get("title"))), actions,
                escape(", ".join(batch.get("answers") or []))))
        parts.append('<table class="plan"><tr><th>batch</th><th>title</th><th>actions</th><th>answers</th></tr>%s'
                     '</table>' % "".join(rows))
    for item in plan.get("unfixable") or []:
        parts.append('<p class="sev-error">cannot fix: %s</p>' % escape(str(item)))
    return "".join(parts)


def _batches(records: List[dict]) -> str:
    rows = []
    for k, record in enumerate(records, 1):
        result = str(record.get("result"))
        commands = "<br>".join('<span class="mono">rc %s: %s</span>' % (
            escape(str(c.get("rc"))), escape(" ".join(str(a) for a in c.get("argv") or [])))
            for c in record.get("commands") or [])
        rows.append('<tr class="batch" data-result="%s"><td>%d</td><td>%s</td><td><span class="badge %s">%s</span>%s</td>'
                    '<td>%s</td></tr>' % (escape(result), k, escape(str(record.get("title"))),
                                          "ok" if result == "committed" else "bad", escape(result),
                                          ("<br>" + escape(str(record["reason"]))) if record.get("reason") else "",
                                          commands))
    return ('<table class="batches"><tr><th>step</th><th>batch</th><th>result</th><th>commands</th></tr>%s</table>'
            % "".join(rows))
