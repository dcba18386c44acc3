# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: cuda_venv_report
short_description: Turn cuda_venv facts into a report a person reads in a few seconds
version_added: "1.0.0"
description:
  - Takes the C(ansible_facts.cuda_venv) dictionary returned by M(gpuops.cuda_venv.cuda_venv_facts) and returns a
    list of lines - the verdict, then each error and warning with its fix, then a count of informational findings,
    then the neighbours kept (CUDA wheels and consumers nothing proves wrong).
options:
  _input:
    description: The C(cuda_venv) facts.
    type: dict
    required: true
  info:
    description: Include informational findings one by one instead of counting them.
    type: bool
    default: false
author:
  - gpuops.cuda_venv contributors (@gpuops)
"""

EXAMPLES = r"""
- name: Print the diagnosis
  ansible.builtin.debug:
    msg: "{{ ansible_facts.cuda_venv | gpuops.cuda_venv.cuda_venv_report }}"
"""

RETURN = r"""
_value:
  description: The report, one line per item.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

_MARK = {"error": "ERROR", "warning": "WARN ", "info": "info "}


def cuda_venv_report(facts, info=False):
    """The report lines for one venv's facts."""
    if not isinstance(facts, dict) or "findings" not in facts:
        raise AnsibleFilterError("cuda_venv_report expects the cuda_venv facts dictionary, got %s" % type(facts).__name__)
    python = facts.get("python") or {}
    probe = facts.get("probe") or {}
    lines = ["%s: %s" % (facts.get("path"), facts.get("summary"))]
    lines.append("python %s, %d distributions, anchor %s, import %s" % (
        python.get("version"), len(facts.get("distributions") or []), facts.get("anchor"),
        _probe_text(probe)))
    quiet = 0
    for finding in facts["findings"]:
        if finding["severity"] == "info" and not info:
            quiet += 1
            continue
        lines.append("%s %s [%s] %s" % (_MARK.get(finding["severity"], finding["severity"]), finding["code"],
                                        finding["subject"], finding["message"]))
        if finding.get("fix"):
            lines.append("      fix: %s" % finding["fix"])
    if quiet:
        lines.append("(%d informational finding(s) not shown: optional plugins and similar)" % quiet)
    neighbours = [n.get("distribution") for n in facts.get("neighbours") or []]
    if neighbours:
        lines.append("kept as neighbours (nothing proves them wrong): %s" % ", ".join(neighbours))
    return lines


def _probe_text(probe):
    if not probe.get("ran"):
        return "not probed (%s)" % probe.get("reason", "disabled")
    if probe.get("ok"):
        versions = probe.get("versions") or {}
        shown = ", ".join("%s %s" % (k, versions[k]) for k in ("torch", "cuda", "cudnn", "nccl") if versions.get(k))
        return "works" + (" (%s)" % shown if shown else "")
    return "FAILS: %s" % probe.get("error")


class FilterModule:
    """The collection's filters."""

    def filters(self):
        return {"cuda_venv_report": cuda_venv_report}
