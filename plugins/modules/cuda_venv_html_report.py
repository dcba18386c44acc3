#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# Documentation only: the work is done on the controller by the action plugin of the same name
# (plugins/action/cuda_venv_html_report.py), which never runs anything on the managed node.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_venv_html_report
short_description: Write an HTML report of CUDA venvs and of the fleet, on the controller
version_added: "1.0.0"
description:
  - Writes one self-contained HTML page per host (inline CSS and SVG; no script, no network) and an C(index.html) with
    one row per host, into a folder on the controller.
  - A host's page draws the graph of the shared objects importing the anchor loads, grouped by the wheel that provides
    each and coloured by CUDA major; a soname found nowhere is drawn as a dashed red box in the wheel that should
    provide it, and the edge to it as a dashed red line carrying the loader's message; a file claimed by two wheels
    is marked with both owners and whose bytes are on disk. Then the findings, the plan, what each batch ran and its
    result, and the same again after a repair, with a before/after table.
  - The fleet page lists every host with its outcome (healthy, repaired, rolled back, failed ...), the CUDA major of
    its wheels, torch's version, and the cuDNN the import loads against the one torch pins.
  - Graphs are laid out by Graphviz C(dot) when the controller has it, and by a built-in layered layout otherwise.
  - Runs entirely on the controller; the managed hosts are not contacted.
author:
  - gpuops.cuda_venv contributors (@gpuops)
extends_documentation_fragment:
  - gpuops.cuda_venv.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
options:
  dest:
    description:
      - Absolute path of the report folder on the controller; created when missing. Files of earlier reports that
        this one does not write are left as they are.
    type: path
    required: true
  reports:
    description:
      - Host name to the host's record, as the C(venv_repair) role leaves it in C(venv_repair_evidence) (C(host),
        C(path), C(outcome), C(before), C(plan), C(batches), C(after)). An empty record stands for a host that did not
        run (unreachable, or the rollout stopped before it).
      - A record with C(venvs) (the role's entry point C(find)) is a host with several venvs - C(venvs) holds one such
        record per venv (each gets its own page), C(found) what M(gpuops.cuda_venv.cuda_venv_find) listed (site folders
        that are not venvs are shown, not diagnosed) and C(notes) its notes; the host's page lists its venvs.
    type: dict
    required: true
  title:
    description: The fleet page's title.
    type: str
    default: CUDA venvs
  layout:
    description:
      - C(auto) uses Graphviz C(dot) when it is on C(PATH) (or given in O(dot)) and the built-in layout when it is not
        or when it fails; C(dot) fails without it; C(builtin) never runs it.
    type: str
    choices: [auto, dot, builtin]
    default: auto
  dot:
    description: The C(dot) executable to use instead of the one on C(PATH).
    type: path
notes:
  - Every text taken from the facts is HTML-escaped.
seealso:
  - module: gpuops.cuda_venv.cuda_venv_facts
  - module: gpuops.cuda_venv.cuda_venv_repair
"""

EXAMPLES = r"""
- name: Write the report of every host of the play
  gpuops.cuda_venv.cuda_venv_html_report:
    dest: /srv/reports/cuda-venvs
    reports: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars)
                 | map(attribute='venv_repair_evidence', default={}))) }}"
  run_once: true
"""

RETURN = r"""
dest:
  description: The report folder.
  returned: always
  type: str
index:
  description: The fleet page's path.
  returned: always
  type: str
  sample: /srv/reports/cuda-venvs/index.html
pages:
  description: The file names written (or that would be), the fleet page last.
  returned: always
  type: list
  elements: str
hosts:
  description:
    - One row per host as the fleet page shows it - C(host), C(status), C(reason), C(cuda), C(torch), C(cudnn_loaded),
      C(cudnn_pinned), C(cudnn_mismatch), C(summary) (the latest diagnosis), C(before) (the first one) and C(page);
      C(venvs) - the host's rows of the fleet page's host x venv table, each C(path), C(status) and C(page) (null for a
      site folder that is not a venv).
  returned: always
  type: list
  elements: dict
layout:
  description: Which layout drew the graphs, and why not dot when it did not.
  returned: always
  type: str
  sample: Graphs laid out by Graphviz dot.
"""
