# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cuda_venv contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The facts module's one call, and the facts a repair's check returns: observe, diagnose, read the wheel sources
for a contamination's residue, report.

Private to the gpuops.cuda_venv collection: not a public API.

Here, among the effects, because it runs the observation (processes, the disk) and may read the wheel sources over
the network; the diagnosis and the report's shape stay pure in ``_decide``.
"""

from __future__ import annotations

from dataclasses import replace

from ansible_collections.gpuops.cuda_venv.plugins.module_utils._core.runner import Runner
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.contamination import residue_candidates, with_source_versions
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.diagnose import diagnose
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._decide.facts_report import report
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.observe import FactsOptions, observe
from ansible_collections.gpuops.cuda_venv.plugins.module_utils._read.wheel_sources import read_offers


def gather_facts(options: FactsOptions, runner: Runner) -> dict:
    """Observe, diagnose and report: the whole facts module in one call."""
    return facts_of(observe(options, runner))


def facts_of(obs) -> dict:
    """Diagnose and report one observation (the facts module's, or the repair's check with ``facts``). The wheel
    sources are read only when they are given and a CONTAMINATION_SOURCE holds residue, and only for its candidates."""
    findings = diagnose(obs)
    sources = obs.options.wheel_sources
    names = residue_candidates(obs, findings) if sources.find_links or sources.indexes() else []
    if names:
        obs = replace(obs, source_reading=read_offers(sources, names))
        findings = with_source_versions(obs, findings)
    return report(obs, findings)
